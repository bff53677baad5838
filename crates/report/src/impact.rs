//! `impact`'s report: every attribute a change touches, its closure before
//! and after, and why, as text, JSON, a pull-request comment (markdown)
//! and GitHub workflow commands. Built from [`nix_heft_core::impact::Impact`]
//! and what only the caller knows (how each side was given, the command
//! that would build a missing side).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::classify::Classified;
use crate::evidence::EvidenceGroup;
use crate::graph::{Graph, NodeId};
use crate::names::Names;
use crate::problem::Problem;
use crate::review::{self, Annotation, Fitter, MARKER, NixFile};
use crate::table::{Align, Table};
use crate::units::{iec, iec_delta};
use crate::{Report, TextOptions};
use nix_heft_core::impact::{AttrImpact, AttrSide, Broken, Change, Impact, Side, Status};

/// How a side was given.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SideMeta {
    /// As the user gave it (a revision, a directory, a flake ref, a
    /// nixpkgs-review directory).
    pub side: String,
    /// The commit, for a git revision.
    pub commit: Option<String>,
    /// The stores its outputs were looked up in.
    pub stores: Vec<String>,
}

/// One side of one attribute.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SideRow {
    /// Output name → out path.
    pub outputs: BTreeMap<String, String>,
    /// Whether the side's store holds every output.
    pub built: bool,
    /// Closure size of all outputs together, when built.
    pub closure_size: Option<u64>,
}

/// One explained added or removed path.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ChangeRow {
    /// The store path.
    pub path: String,
    /// Its NAR size.
    pub nar_size: u64,
    /// From one of the attribute's outputs down to the path.
    pub chain: Vec<String>,
    /// The path that holds it (its strongest hold), if not an output.
    pub referrer: Option<String>,
    /// The files of `referrer` that hold the reference.
    pub holds: Vec<String>,
    /// Those holds grouped by kind and directory, with verdicts.
    pub groups: Vec<EvidenceGroup>,
    /// Whether it is one of the shared causes, said once.
    pub shared: bool,
}

/// A rule an attribute breaks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Violation {
    /// `max-growth`, `max-closure` or `forbid`.
    pub rule: String,
    /// In words.
    pub message: String,
}

/// One attribute's row.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct AttrRow {
    /// The dotted attribute path.
    pub attr: String,
    /// grown, shrunk, unchanged, added, removed, not-built or failed.
    pub status: String,
    /// The base side, when the attribute is there.
    pub before: Option<SideRow>,
    /// The head side.
    pub after: Option<SideRow>,
    /// Head closure minus base closure, when both are known.
    pub delta: Option<i128>,
    /// Which side lacks its outputs: before, after or both.
    pub not_built: Option<String>,
    /// The command that would build the missing side.
    pub build: Option<String>,
    /// Why it failed, and on which side.
    pub failed: Option<String>,
    /// The largest added paths, explained.
    pub added: Vec<ChangeRow>,
    /// The largest removed paths, explained.
    pub removed: Vec<ChangeRow>,
    /// How many paths were added.
    pub added_count: usize,
    /// Their NAR size together.
    pub added_size: u64,
    /// How many paths were removed.
    pub removed_count: usize,
    /// Their NAR size together.
    pub removed_size: u64,
    /// The rules it breaks.
    pub violations: Vec<Violation>,
}

/// A path new in several attributes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SharedRow {
    /// The store path.
    pub path: String,
    /// Its NAR size.
    pub nar_size: u64,
    /// In how many attributes it is new.
    pub count: usize,
    /// Those attributes.
    pub attributes: Vec<String>,
    /// Its strongest holder.
    pub referrer: Option<String>,
    /// The files of `referrer` that hold it.
    pub holds: Vec<String>,
    /// Those holds grouped.
    pub groups: Vec<EvidenceGroup>,
    /// The attribute it is an output of, when it is one.
    pub output_of: Option<String>,
}

/// Attributes per status.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Totals {
    /// Closure grew.
    pub grown: usize,
    /// Closure shrank.
    pub shrunk: usize,
    /// Same size.
    pub unchanged: usize,
    /// Only in the head.
    pub added: usize,
    /// Only in the base.
    pub removed: usize,
    /// A side's outputs missing.
    pub not_built: usize,
    /// Failed on a side.
    pub failed: usize,
}

/// `impact`'s report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImpactReport {
    /// The base.
    pub before: SideMeta,
    /// The head.
    pub after: SideMeta,
    /// The tool that evaluated the attributes (`nix-env`, `nix-eval-jobs`,
    /// or `nixpkgs-review` for a head read from its directory).
    pub evaluator: String,
    /// One row per attribute: grown (largest first), shrunk, added,
    /// removed, unchanged, not built, failed.
    pub attributes: Vec<AttrRow>,
    /// Paths new in several attributes, largest first.
    pub shared_causes: Vec<SharedRow>,
    /// Attributes per status.
    pub totals: Totals,
    /// What could not be read.
    pub problems: Vec<Problem>,
}

/// What the caller knows beside the [`Impact`].
pub struct Context<'a> {
    /// The base as given.
    pub before: SideMeta,
    /// The head as given.
    pub after: SideMeta,
    /// The evaluating tool.
    pub evaluator: String,
    /// For an attribute not built on a side: the command that builds it.
    pub build: &'a dyn Fn(&str, Side) -> String,
}

fn side_row(s: &AttrSide) -> SideRow {
    SideRow {
        outputs: s
            .outputs
            .iter()
            .map(|(o, p)| (o.clone(), p.to_string()))
            .collect(),
        built: s.built,
        closure_size: s.closure_size,
    }
}

/// The files and groups behind the edge `r → v` in `c`.
fn holds(c: &Classified, r: Option<NodeId>, v: NodeId) -> (Vec<String>, Vec<EvidenceGroup>) {
    let Some(r) = r else {
        return (Vec::new(), Vec::new());
    };
    let mut files: Vec<String> = c.evidence(r, v).iter().map(|e| e.file.clone()).collect();
    files.sort();
    files.dedup();
    (files, c.groups(r, v))
}

fn change_row(g: &Graph, c: &Classified, ch: &Change) -> ChangeRow {
    let (holds, groups) = holds(c, ch.referrer, ch.node);
    ChangeRow {
        path: g.path(ch.node).to_string(),
        nar_size: g.nar_size(ch.node),
        chain: ch.chain.iter().map(|&v| g.path(v).to_string()).collect(),
        referrer: ch.referrer.map(|r| g.path(r).to_string()),
        holds,
        groups,
        shared: ch.shared,
    }
}

fn violation(ag: &Graph, b: &Broken) -> Violation {
    match b {
        Broken::MaxClosure { size, limit } => Violation {
            rule: "max-closure".into(),
            message: format!(
                "closure {} is over the limit of {}",
                iec(*size),
                iec(*limit)
            ),
        },
        Broken::MaxGrowth { growth, limit } => Violation {
            rule: "max-growth".into(),
            message: format!(
                "grew by {}, over the limit of {}",
                iec(*growth),
                iec(*limit)
            ),
        },
        Broken::Forbid { pattern, node } => Violation {
            rule: "forbid".into(),
            message: format!("{} matches the forbidden '{pattern}'", ag.path(*node)),
        },
    }
}

impl ImpactReport {
    /// The report of `impact`, with `ctx` and the problems of the run.
    pub fn new(impact: &Impact, ctx: &Context, mut problems: Vec<Problem>) -> ImpactReport {
        let (bg, ag) = (&impact.before, &impact.after);
        let mut totals = Totals::default();
        let attributes: Vec<AttrRow> = impact
            .rows
            .iter()
            .map(|r| {
                match r.status {
                    Status::Grown => totals.grown += 1,
                    Status::Shrunk => totals.shrunk += 1,
                    Status::Unchanged => totals.unchanged += 1,
                    Status::Added => totals.added += 1,
                    Status::Removed => totals.removed += 1,
                    Status::NotBuilt(_) => totals.not_built += 1,
                    Status::Failed(..) => totals.failed += 1,
                }
                attr_row(r, bg, ag, impact, ctx)
            })
            .collect();
        let shared_causes = impact
            .shared
            .iter()
            .map(|s| {
                let (holds, groups) = holds(&impact.after_evidence, s.referrer, s.node);
                SharedRow {
                    path: ag.path(s.node).to_string(),
                    nar_size: ag.nar_size(s.node),
                    count: s.rows.len(),
                    attributes: s
                        .rows
                        .iter()
                        .map(|&i| impact.rows[i].attr.clone())
                        .collect(),
                    referrer: s.referrer.map(|r| ag.path(r).to_string()),
                    holds,
                    groups,
                    output_of: s.output_of.map(|i| impact.rows[i].attr.clone()),
                }
            })
            .collect();
        problems.extend(impact.before_evidence.problems.iter().cloned());
        problems.extend(impact.after_evidence.problems.iter().cloned());
        ImpactReport {
            before: ctx.before.clone(),
            after: ctx.after.clone(),
            evaluator: ctx.evaluator.clone(),
            attributes,
            shared_causes,
            totals,
            problems,
        }
    }

    /// Whether an attribute breaks a rule.
    pub fn broken(&self) -> bool {
        self.attributes.iter().any(|a| !a.violations.is_empty())
    }

    fn names(&self) -> Names {
        let mut paths: Vec<&str> = Vec::new();
        for a in &self.attributes {
            for c in a.added.iter().chain(&a.removed) {
                paths.push(&c.path);
                paths.extend(c.chain.iter().map(String::as_str));
            }
        }
        for s in &self.shared_causes {
            paths.push(&s.path);
            paths.extend(s.referrer.as_deref());
        }
        Names::new(paths)
    }

    fn headline(&self) -> String {
        let side = |m: &SideMeta| match &m.commit {
            Some(c) if !m.side.starts_with(c.get(..7).unwrap_or(c)) => {
                format!("{} ({})", m.side, c.get(..12).unwrap_or(c))
            }
            _ => m.side.clone(),
        };
        format!(
            "{} → {}: {}",
            side(&self.before),
            side(&self.after),
            plural(self.attributes.len(), "attribute")
        )
    }

    fn totals_line(&self) -> String {
        let t = &self.totals;
        let parts: Vec<String> = [
            (t.grown, "grown"),
            (t.shrunk, "shrunk"),
            (t.unchanged, "unchanged"),
            (t.added, "added"),
            (t.removed, "removed"),
            (t.not_built, "not built"),
            (t.failed, "failed"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{n} {w}"))
        .collect();
        if parts.is_empty() {
            "nothing to compare".into()
        } else {
            parts.join(", ")
        }
    }

    /// "libcore-1.0 (+4.0 MiB) is new in 11 attributes, through
    /// libcore-1.0's share/doc/README (…)".
    fn shared_phrase(
        &self,
        s: &SharedRow,
        name: &dyn Fn(&str) -> String,
        code: fn(&str) -> String,
    ) -> String {
        let mut out = format!(
            "{} (+{}) is new in {}",
            name(&s.path),
            iec(s.nar_size),
            plural(s.count, "attribute")
        );
        if let Some(a) = &s.output_of {
            out.push_str(&format!(": the output of {a}, rebuilt"));
        } else if let Some(r) = &s.referrer {
            out.push_str(&format!(", through {}", name(r)));
            if !s.groups.is_empty() {
                out.push_str(&format!(": {}", review::groups_phrase(&s.groups, code)));
            }
        }
        out
    }

    fn change_phrase(
        &self,
        c: &ChangeRow,
        sign: char,
        name: &dyn Fn(&str) -> String,
        code: fn(&str) -> String,
    ) -> String {
        let mut out = format!("{sign} {} ({})", name(&c.path), iec(c.nar_size));
        if c.shared {
            out.push_str(": a shared cause (above)");
            return out;
        }
        match &c.referrer {
            None => out.push_str(": the attribute's own output"),
            Some(r) => {
                let chain: Vec<String> = c.chain.iter().map(|p| name(p)).collect();
                out.push_str(&format!(": {}", chain.join(" → ")));
                if !c.groups.is_empty() {
                    out.push_str(&format!(
                        "; {} holds it in {}",
                        name(r),
                        review::groups_phrase(&c.groups, code)
                    ));
                }
            }
        }
        out
    }

    fn detail_line(a: &AttrRow) -> Option<String> {
        if let Some(f) = &a.failed {
            // The first line: Nix's own message; the JSON has all of it.
            return Some(f.lines().next().unwrap_or("").to_string());
        }
        if let Some(side) = &a.not_built {
            let cmd = a.build.as_deref().unwrap_or("");
            return Some(format!("not built ({side}): {cmd}"));
        }
        None
    }
}

fn attr_row(r: &AttrImpact, bg: &Graph, ag: &Graph, impact: &Impact, ctx: &Context) -> AttrRow {
    let (not_built, build) = match &r.status {
        Status::NotBuilt(sides) => {
            let which = if sides.len() == 2 {
                "both".to_string()
            } else {
                sides[0].as_str().to_string()
            };
            let cmds: Vec<String> = sides.iter().map(|&s| (ctx.build)(&r.attr, s)).collect();
            (Some(which), Some(cmds.join("; ")))
        }
        _ => (None, None),
    };
    let failed = match &r.status {
        Status::Failed(side, m) => Some(format!("failed ({}): {m}", side.as_str())),
        _ => None,
    };
    AttrRow {
        attr: r.attr.clone(),
        status: r.status.as_str().into(),
        before: r.before.as_ref().map(side_row),
        after: r.after.as_ref().map(side_row),
        delta: r.delta(),
        not_built,
        build,
        failed,
        added: r
            .added
            .iter()
            .map(|c| change_row(ag, &impact.after_evidence, c))
            .collect(),
        removed: r
            .removed
            .iter()
            .map(|c| change_row(bg, &impact.before_evidence, c))
            .collect(),
        added_count: r.added_count,
        added_size: r.added_size,
        removed_count: r.removed_count,
        removed_size: r.removed_size,
        violations: r.broken.iter().map(|b| violation(ag, b)).collect(),
    }
}

/// The name part of a store path (after the hash), to match a rebuilt
/// path with its old version.
fn name_part(path: &str) -> &str {
    let base = path.rsplit('/').next().unwrap_or(path);
    let name = base.split_once('-').map_or(base, |(_, n)| n);
    // The package without its version, as `nix store diff-closures`
    // groups: libver-1.0 is the old version of libver-1.1.
    crate::store_path::split_name_like_diff_closures(name).name
}

/// What makes two rows' stories the same: status, delta, shared causes.
type StoryKey = (String, Option<i128>, Vec<String>);

/// Rows whose whole change is told by the shared causes: every added path
/// a shared cause or the row's own output, every removed path its own old
/// output or the old version of an added one, no rule broken. Rows with the
/// same status, delta and shared causes are one story, told once.
fn story_key(a: &AttrRow) -> Option<StoryKey> {
    let all_shown = a.added_count == a.added.len() && a.removed_count == a.removed.len();
    let told = a.violations.is_empty()
        && all_shown
        && a.added.iter().any(|c| c.shared)
        && a.added.iter().all(|c| c.shared || c.referrer.is_none())
        && a.removed.iter().all(|r| {
            r.referrer.is_none()
                || a.added
                    .iter()
                    .any(|c| name_part(&c.path) == name_part(&r.path))
        });
    told.then(|| {
        let mut shared: Vec<String> = a
            .added
            .iter()
            .filter(|c| c.shared)
            .map(|c| c.path.clone())
            .collect();
        shared.sort();
        (a.status.clone(), a.delta, shared)
    })
}

/// An entry of the per-attribute part: one attribute, or several whose
/// story is the same.
enum Told<'a> {
    One(&'a AttrRow),
    Same(Vec<&'a AttrRow>),
}

/// The attributes with something to say, in report order, those with the
/// same story (see [`story_key`]) together at the place of the first.
/// With `details`, a row not built or failed is an entry too.
fn told(attributes: &[AttrRow], details: bool) -> Vec<Told<'_>> {
    let mut groups: BTreeMap<StoryKey, Vec<&AttrRow>> = BTreeMap::new();
    for a in attributes {
        if let Some(k) = story_key(a) {
            groups.entry(k).or_default().push(a);
        }
    }
    let mut out = Vec::new();
    let mut done = std::collections::BTreeSet::new();
    for a in attributes {
        let detail = details && (a.failed.is_some() || a.not_built.is_some());
        if a.added.is_empty() && a.removed.is_empty() && a.violations.is_empty() && !detail {
            continue;
        }
        match story_key(a) {
            Some(k) if groups[&k].len() > 1 => {
                if done.insert(k.clone()) {
                    out.push(Told::Same(groups[&k].clone()));
                }
            }
            _ => out.push(Told::One(a)),
        }
    }
    out
}

/// "app01, app02 (2 attributes, grown +3.0 MiB each): only the shared
/// causes above (…), and each its own output, rebuilt."
fn same_story(
    rows: &[&AttrRow],
    name: &dyn Fn(&str) -> String,
    attr: fn(&str) -> String,
) -> String {
    let names: Vec<String> = rows.iter().map(|a| attr(&a.attr)).collect();
    let first = rows[0];
    let shared: Vec<String> = first
        .added
        .iter()
        .filter(|c| c.shared)
        .map(|c| name(&c.path))
        .collect();
    format!(
        "{} ({} attributes, {}{} each): only the shared causes above ({}), and each its own output, rebuilt",
        names.join(", "),
        rows.len(),
        first.status,
        first
            .delta
            .map(|d| format!(" {}", iec_delta(d)))
            .unwrap_or_default(),
        shared.join(", ")
    )
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn size_of(s: &Option<SideRow>, fmt: &dyn Fn(u64) -> String) -> String {
    match s {
        None => "∅".into(),
        Some(s) => s.closure_size.map_or_else(|| "not built".into(), fmt),
    }
}

fn delta_of(a: &AttrRow, exact: bool) -> String {
    match a.delta {
        Some(d) if exact => format!("{d:+}"),
        Some(d) => iec_delta(d),
        None => String::new(),
    }
}

impl Report for ImpactReport {
    fn render_text(&self, opts: &TextOptions) -> String {
        let names = self.names();
        let name = |p: &str| names.get(p).to_string();
        let fmt = |b: u64| {
            if opts.exact_bytes {
                b.to_string()
            } else {
                iec(b)
            }
        };
        let mut out = format!("{}\n{}\n", self.headline(), self.totals_line());
        if !self.shared_causes.is_empty() {
            out.push_str("\nNew in several attributes (said once):\n");
            for s in &self.shared_causes {
                out.push_str(&crate::style::wrap_hanging(
                    &self.shared_phrase(s, &name, review::plain),
                    opts.width,
                    "  ",
                    "      ",
                ));
            }
        }
        if !self.attributes.is_empty() {
            let mut t = Table::new(&[
                ("ATTRIBUTE", Align::Left),
                ("STATUS", Align::Left),
                ("BEFORE", Align::Right),
                ("AFTER", Align::Right),
                ("Δ", Align::Right),
            ]);
            for a in &self.attributes {
                t.row(vec![
                    a.attr.clone(),
                    a.status.clone(),
                    size_of(&a.before, &fmt),
                    size_of(&a.after, &fmt),
                    delta_of(a, opts.exact_bytes),
                ]);
            }
            out.push('\n');
            out.push_str(&t.render_fit(opts.width, opts.style));
        }
        for t in told(&self.attributes, true) {
            let a = match t {
                Told::One(a) => a,
                Told::Same(rows) => {
                    out.push('\n');
                    out.push_str(&crate::style::wrap_hanging(
                        &format!("{}.", same_story(&rows, &name, |a| a.to_string())),
                        opts.width,
                        "",
                        "  ",
                    ));
                    continue;
                }
            };
            let mut lines = Vec::new();
            for c in &a.added {
                lines.push(self.change_phrase(c, '+', &name, review::plain));
            }
            if a.added_count > a.added.len() {
                lines.push(format!(
                    "+ {} more added",
                    plural(a.added_count - a.added.len(), "path")
                ));
            }
            for c in &a.removed {
                lines.push(self.change_phrase(c, '-', &name, review::plain));
            }
            if a.removed_count > a.removed.len() {
                lines.push(format!(
                    "- {} more removed",
                    plural(a.removed_count - a.removed.len(), "path")
                ));
            }
            lines.extend(Self::detail_line(a));
            for v in &a.violations {
                lines.push(format!("✗ {}: {}", v.rule, v.message));
            }
            // Unchanged rows with nothing to say stay in the table only.
            if lines.is_empty() || (a.status == "unchanged" && a.violations.is_empty()) {
                continue;
            }
            out.push_str(&format!("\n{} ({}", a.attr, a.status));
            if let Some(d) = a.delta {
                out.push_str(&format!(
                    " {}",
                    if opts.exact_bytes {
                        format!("{d:+}")
                    } else {
                        iec_delta(d)
                    }
                ));
            }
            out.push_str("):\n");
            for l in lines {
                out.push_str(&crate::style::wrap_hanging(&l, opts.width, "  ", "      "));
            }
        }
        out
    }

    fn problems(&self) -> &[Problem] {
        &self.problems
    }
}

/// Attributes shown open in a comment; the rest sit in a closed table.
const OPEN: usize = 10;

impl review::Reviewed for ImpactReport {
    fn render_markdown(&self, limit: usize) -> String {
        let names = self.names();
        let name = |p: &str| review::code(names.get(p));
        let how = "Run `nix-heft impact` with the same sides for all of it.";
        let rows: Vec<String> = self
            .attributes
            .iter()
            .map(|a| {
                review::clip(
                    &format!(
                        "| {} | {} | {} | {} | {} |\n",
                        review::md(&a.attr),
                        a.status,
                        size_of(&a.before, &iec),
                        size_of(&a.after, &iec),
                        delta_of(a, false)
                    ),
                    600,
                )
            })
            .collect();
        let open: Vec<String> = told(&self.attributes, false)
            .into_iter()
            .take(OPEN)
            .map(|t| {
                let a = match t {
                    Told::One(a) => a,
                    Told::Same(rows) => {
                        return format!(
                            "\n{}.\n",
                            review::clip(
                                &same_story(&rows, &name, |a| format!("**{}**", review::md(a))),
                                3000
                            )
                        );
                    }
                };
                let mut s = format!(
                    "\n**{}** ({}{}):\n",
                    review::md(&a.attr),
                    a.status,
                    a.delta
                        .map(|d| format!(" {}", iec_delta(d)))
                        .unwrap_or_default()
                );
                for v in &a.violations {
                    s.push_str(&format!("- ❌ `{}`: {}\n", v.rule, review::md(&v.message)));
                }
                for c in &a.added {
                    s.push_str(&format!(
                        "- {}\n",
                        review::clip(&self.change_phrase(c, '+', &name, review::code), 1500)
                    ));
                }
                if a.added_count > a.added.len() {
                    s.push_str(&format!(
                        "- and {} more added\n",
                        plural(a.added_count - a.added.len(), "path")
                    ));
                }
                for c in &a.removed {
                    s.push_str(&format!(
                        "- {}\n",
                        review::clip(&self.change_phrase(c, '−', &name, review::code), 1500)
                    ));
                }
                if a.removed_count > a.removed.len() {
                    s.push_str(&format!(
                        "- and {} more removed\n",
                        plural(a.removed_count - a.removed.len(), "path")
                    ));
                }
                s
            })
            .collect();
        let shared: Vec<String> = self
            .shared_causes
            .iter()
            .map(|s| {
                format!(
                    "- {}\n",
                    review::clip(&self.shared_phrase(s, &name, review::code), 1500)
                )
            })
            .collect();
        let missing: Vec<String> = self
            .attributes
            .iter()
            .filter_map(|a| {
                Self::detail_line(a).map(|d| {
                    let d = match (&a.not_built, &a.build) {
                        (Some(side), Some(cmd)) => format!("not built ({side}): `{cmd}`"),
                        _ => review::md(&d),
                    };
                    format!(
                        "- **{}**: {}\n",
                        review::md(&a.attr),
                        review::clip(&d, 1500)
                    )
                })
            })
            .collect();
        let broken = self
            .attributes
            .iter()
            .filter(|a| !a.violations.is_empty())
            .count();
        review::fit(
            limit,
            &[
                ("shared causes", shared.len()),
                ("explained attributes", open.len()),
                ("attributes in the table", rows.len()),
                ("not built or failed", missing.len()),
            ],
            how,
            |f: &mut Fitter| {
                let verdict = if broken > 0 {
                    format!("❌ {} break a rule. ", plural(broken, "attribute"))
                } else {
                    String::new()
                };
                f.force(&format!(
                    "{MARKER}\n### Closure impact: {}\n\n{verdict}{}.\n",
                    review::md(&self.headline()),
                    self.totals_line()
                ));
                if !shared.is_empty() {
                    f.list(
                        "\n**New in several attributes** (said once):\n\n",
                        &shared,
                        "",
                        "shared causes",
                    );
                }
                f.list("", &open, "", "explained attributes");
                f.list(
                    &format!(
                        "\n<details><summary>{} by closure change</summary>\n\n\
                         | attribute | status | before | after | Δ |\n| --- | --- | ---: | ---: | ---: |\n",
                        plural(rows.len(), "attribute")
                    ),
                    &rows,
                    "\n</details>\n",
                    "attributes in the table",
                );
                f.list(
                    "\n**Not built or failed:**\n\n",
                    &missing,
                    "",
                    "not built or failed",
                );
                if !self.problems.is_empty() {
                    f.push(&format!(
                        "\n⚠️ {} could not be read; the evidence is partial.\n",
                        plural(self.problems.len(), "path")
                    ));
                }
            },
        )
    }

    fn render_github(&self, at: Option<&NixFile>) -> String {
        let mut anns = Vec::new();
        for a in &self.attributes {
            for v in &a.violations {
                anns.push(Annotation {
                    level: "error",
                    title: format!("nix-heft impact: {} breaks {}", a.attr, v.rule),
                    lines: vec![v.message.clone()],
                });
            }
        }
        let names = self.names();
        let name = |p: &str| names.get(p).to_string();
        for a in self.attributes.iter().filter(|a| a.status == "grown") {
            let mut lines = vec![format!(
                "{} → {} ({})",
                size_of(&a.before, &iec),
                size_of(&a.after, &iec),
                delta_of(a, false)
            )];
            lines.extend(
                a.added
                    .iter()
                    .map(|c| self.change_phrase(c, '+', &name, review::plain)),
            );
            anns.push(Annotation {
                level: "warning",
                title: format!("nix-heft impact: {} grew", a.attr),
                lines,
            });
        }
        for a in &self.attributes {
            if let Some(d) = Self::detail_line(a) {
                anns.push(Annotation {
                    level: "notice",
                    title: format!("nix-heft impact: {}", a.attr),
                    lines: vec![d],
                });
            }
        }
        let anns = review::cap(anns, "nix-heft impact", "the job summary");
        anns.iter().map(|a| a.render(at)).collect()
    }
}
