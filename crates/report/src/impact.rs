//! `impact`'s report: every attribute a change touches, its closure before
//! and after, and why, as text, JSON, a pull-request comment (markdown)
//! and GitHub workflow commands. Built from [`nix_heft_ops::impact::Impact`]
//! and what only the caller knows (how each side was given, the command
//! that would build a missing side).
//!
//! Each change is a package's paths added and removed in one attribute's
//! closure, paired as `nix store diff-closures` pairs them and counted by
//! its net change ("`curl` 8.5.0 → 8.6.0 (+19.5 KiB)"); an attribute's
//! listed changes and its "more" line add up to its Δ. Every line of a list
//! starts with a code span, a word or a bold name, never `+` or `-`, which
//! GitHub would read as a nested list.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::names::Names;
use crate::plural;
use crate::review::{self, Annotation, Fitter, MARKER, NixFile};
use crate::table::{Align, Table};
use crate::{Report, TextOptions};
use nix_heft_graph::{Graph, NodeId};
use nix_heft_ops::impact::{AttrImpact, AttrSide, Broken, Change, Impact, Side, Status};
use nix_heft_scan::classify::Classified;
use nix_heft_types::evidence::EvidenceGroup;
use nix_heft_types::problem::Problem;
use nix_heft_types::units::{iec, iec_delta};

/// How a side was given.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SideMeta {
    /// As the user gave it (a revision, a directory, a flake ref, a
    /// nixpkgs-review directory).
    pub side: String,
    /// The commit, for a git revision or a directory of a checkout.
    pub commit: Option<String>,
    /// A directory side whose checkout has uncommitted changes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dirty: bool,
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

/// One change of an attribute's closure: one package's paths added and
/// removed, by their net change, explained by its largest path.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ChangeRow {
    /// `new` (paths added only), `gone` (removed only), `version` (the
    /// versions differ) or `rebuilt` (same versions, new hashes).
    pub kind: String,
    /// The package, as `nix store diff-closures` names it.
    pub package: String,
    /// Its added paths.
    pub added: Vec<String>,
    /// Its removed paths.
    pub removed: Vec<String>,
    /// Versions before (of the removed paths).
    pub versions_before: Vec<String>,
    /// Versions after.
    pub versions_after: Vec<String>,
    /// Added NAR sizes minus removed ones.
    pub net: i128,
    /// From one of the attribute's outputs down to the explained path (the
    /// largest added, else the largest removed).
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
    /// `max-growth`, `max-closure`, `forbid` or `max-output`.
    pub rule: String,
    /// In words.
    pub message: String,
}

/// One attribute's row.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct AttrRow {
    /// The dotted attribute path.
    pub attr: String,
    /// broken, grown, shrunk, added, removed, unchanged, fixed,
    /// build-failed, skipped-broken, skipped, eval-failed or not-built.
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
    /// Why it has no closure on a side: Nix's message (broken, fixed,
    /// eval-failed) or nixpkgs-review's word.
    pub failed: Option<String>,
    /// The changes of largest net change, explained.
    pub changes: Vec<ChangeRow>,
    /// How many changes there are in all.
    pub changes_count: usize,
    /// The net change of those not listed (with the listed ones', the
    /// delta).
    pub rest_net: i128,
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

/// A change found in several attributes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SharedRow {
    /// The change (its chain from the first attribute).
    #[serde(flatten)]
    pub change: ChangeRow,
    /// In how many attributes it is.
    pub count: usize,
    /// Those attributes.
    pub attributes: Vec<String>,
    /// The attribute it is an output of, when it is one.
    pub output_of: Option<String>,
    /// Whether its holder was read (the largest ten).
    pub explained: bool,
}

/// Attributes per status.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Totals {
    /// Evaluate at the base, not at the head.
    pub broken: usize,
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
    /// Fail at the base, evaluate at the head.
    pub fixed: usize,
    /// Failed to build in nixpkgs-review.
    pub build_failed: usize,
    /// Skipped as broken by nixpkgs-review.
    pub skipped_broken: usize,
    /// Skipped by nixpkgs-review.
    pub skipped: usize,
    /// Fail to evaluate on both sides.
    pub eval_failed: usize,
    /// A side's outputs missing.
    pub not_built: usize,
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
    /// One row per attribute: broken by the change, grown (largest first),
    /// shrunk, added, removed, unchanged, fixed, nixpkgs-review's failed
    /// and skipped, failing on both sides, not built.
    pub attributes: Vec<AttrRow>,
    /// Changes found in several attributes, largest first: all of them.
    pub shared_causes: Vec<SharedRow>,
    /// Attributes per status.
    pub totals: Totals,
    /// Notes on how the run read its sides (the base read from the local
    /// store, nixpkgs-review entries it could not tell apart).
    pub notes: Vec<String>,
    /// What could not be read.
    pub problems: Vec<Problem>,
}

/// What the caller knows beside the [`Impact`].
pub struct ImpactMeta<'a> {
    /// The base as given.
    pub before: SideMeta,
    /// The head as given.
    pub after: SideMeta,
    /// The evaluating tool.
    pub evaluator: String,
    /// For an attribute not built on a side: the command that builds it.
    pub build: &'a dyn Fn(&str, Side) -> String,
    /// Notes to show with the report.
    pub notes: Vec<String>,
}

/// The notes shown with the report: where the base's outputs were read
/// when no store was given for them (`given_before_stores` false), and
/// which of nixpkgs-review's broken attributes could not be told from
/// removed ones (`undecided`).
pub fn notes(
    found: &Impact,
    given_before_stores: bool,
    before_stores: &[String],
    undecided: &[String],
) -> Vec<String> {
    let mut notes = Vec::new();
    if !given_before_stores {
        let unbuilt = found
            .rows
            .iter()
            .filter(|r| matches!(&r.status, Status::NotBuilt(s) if s.contains(&Side::Before)))
            .count();
        notes.push(if unbuilt > 0 {
            format!(
                "the base's outputs were read from {} (no --before-store), which lacks those of \
                 {unbuilt} attribute(s): pass --before-store with the cache that holds them \
                 (https://cache.nixos.org for nixpkgs)",
                before_stores.join(", ")
            )
        } else {
            format!(
                "the base's outputs were read from {} (no --before-store)",
                before_stores.join(", ")
            )
        });
    }
    if !undecided.is_empty() {
        notes.push(format!(
            "nixpkgs-review lists {} as broken, which it also writes for an attribute missing \
             from its checkout; its report names no commit this repository has, so broken and \
             removed cannot be told apart: pass --after to evaluate the head",
            undecided.join(", ")
        ));
    }
    notes
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

fn change_row(impact: &Impact, ch: &Change) -> ChangeRow {
    let (g, c) = if ch.in_head {
        (&impact.after, &impact.after_evidence)
    } else {
        (&impact.before, &impact.before_evidence)
    };
    let node = *ch.chain.last().expect("a change's chain ends at its path");
    let (holds, groups) = holds(c, ch.referrer, node);
    let kind = match (ch.added.is_empty(), ch.removed.is_empty()) {
        (false, true) => "new",
        (true, false) => "gone",
        _ if ch.versions_before != ch.versions_after => "version",
        _ => "rebuilt",
    };
    ChangeRow {
        kind: kind.into(),
        package: ch.package.clone(),
        added: ch
            .added
            .iter()
            .map(|&v| impact.after.path(v).to_string())
            .collect(),
        removed: ch
            .removed
            .iter()
            .map(|&v| impact.before.path(v).to_string())
            .collect(),
        versions_before: ch.versions_before.clone(),
        versions_after: ch.versions_after.clone(),
        net: ch.net,
        chain: ch.chain.iter().map(|&v| g.path(v).to_string()).collect(),
        referrer: ch.referrer.map(|r| g.path(r).to_string()),
        holds,
        groups,
        shared: ch.shared.is_some(),
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
        Broken::MaxOutput {
            size,
            limit,
            outputs,
        } => Violation {
            rule: "max-output".into(),
            message: format!(
                "its outputs are {} together ({}), over the limit of {}: Hydra refuses a build whose outputs pass its max_output_size, and the cache would not have it",
                iec(*size),
                outputs
                    .iter()
                    .map(|(o, s)| format!("{o} {}", iec(*s)))
                    .collect::<Vec<_>>()
                    .join(", "),
                iec(*limit)
            ),
        },
    }
}

/// A status in words.
fn status_words(status: &str) -> &str {
    match status {
        "broken" => "broken by this change",
        "fixed" => "fixed by this change",
        "build-failed" => "build failed in nixpkgs-review",
        "skipped-broken" => "skipped as broken by nixpkgs-review",
        "skipped" => "skipped by nixpkgs-review",
        "eval-failed" => "fails to evaluate before and after",
        "not-built" => "not built",
        s => s,
    }
}

impl ImpactReport {
    /// The report of `impact`, with `ctx` and the problems of the run.
    pub fn new(impact: &Impact, ctx: &ImpactMeta, mut problems: Vec<Problem>) -> ImpactReport {
        let ag = &impact.after;
        let mut totals = Totals::default();
        let attributes: Vec<AttrRow> = impact
            .rows
            .iter()
            .map(|r| {
                let t = match r.status {
                    Status::EvalBroken(_) => &mut totals.broken,
                    Status::Grown => &mut totals.grown,
                    Status::Shrunk => &mut totals.shrunk,
                    Status::Unchanged => &mut totals.unchanged,
                    Status::Added => &mut totals.added,
                    Status::Removed => &mut totals.removed,
                    Status::EvalFixed(_) => &mut totals.fixed,
                    Status::BuildFailed => &mut totals.build_failed,
                    Status::SkippedBroken => &mut totals.skipped_broken,
                    Status::Skipped => &mut totals.skipped,
                    Status::EvalFailed(_) => &mut totals.eval_failed,
                    Status::NotBuilt(_) => &mut totals.not_built,
                };
                *t += 1;
                attr_row(r, ag, impact, ctx)
            })
            .collect();
        let shared_causes = impact
            .shared
            .iter()
            .map(|s| SharedRow {
                change: change_row(impact, &s.change),
                count: s.rows.len(),
                attributes: s
                    .rows
                    .iter()
                    .map(|&i| impact.rows[i].attr.clone())
                    .collect(),
                output_of: s.output_of.map(|i| impact.rows[i].attr.clone()),
                explained: s.explained,
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
            notes: ctx.notes.clone(),
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
            for c in &a.changes {
                paths.extend(c.added.iter().map(String::as_str));
                paths.extend(c.removed.iter().map(String::as_str));
                paths.extend(c.chain.iter().map(String::as_str));
            }
        }
        for s in &self.shared_causes {
            paths.extend(s.change.added.iter().map(String::as_str));
            paths.extend(s.change.removed.iter().map(String::as_str));
            paths.extend(s.change.referrer.as_deref());
        }
        Names::new(paths)
    }

    /// "abc123def456 → 0123456789ab: 21 attributes": each side by its
    /// commit when it has one (the revision named too when it is not the
    /// commit itself), else as given.
    fn headline(&self) -> String {
        let side = |m: &SideMeta| {
            let dirty = if m.dirty {
                " with uncommitted changes"
            } else {
                ""
            };
            match &m.commit {
                Some(c) if m.side.len() >= 7 && c.starts_with(&m.side) => {
                    format!("{c}{dirty}")
                }
                // A directory (`.`) or a nixpkgs-review directory: the
                // commit says which.
                Some(c) if is_path_like(&m.side) => format!("{c}{dirty}"),
                Some(c) => format!("{} ({}){dirty}", m.side, c.get(..12).unwrap_or(c)),
                None => m.side.clone(),
            }
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
            (t.broken, "broken by this change"),
            (t.grown, "grown"),
            (t.shrunk, "shrunk"),
            (t.unchanged, "unchanged"),
            (t.added, "added"),
            (t.removed, "removed"),
            (t.fixed, "fixed by this change"),
            (t.build_failed, "build failed in nixpkgs-review"),
            (t.skipped_broken, "skipped as broken"),
            (t.skipped, "skipped"),
            (t.eval_failed, "failing before and after"),
            (t.not_built, "not built"),
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

    /// "`libver` 1.0 → 1.1 (+0 B)", "`bigdata-2.0` is new (+3.0 MiB)",
    /// "`libsplit-2.3 (45ph3yig)` rebuilt (-29.7 KiB)".
    fn change_head(
        c: &ChangeRow,
        name: &dyn Fn(&str) -> String,
        code: fn(&str) -> String,
    ) -> String {
        let one = |paths: &[String]| match paths {
            [p] => name(p),
            _ => code(&c.package),
        };
        let versions = |v: &[String]| {
            let shown: Vec<&str> = v
                .iter()
                .map(|s| if s.is_empty() { "∅" } else { s.as_str() })
                .collect();
            shown.join(", ")
        };
        let net = iec_delta(c.net);
        match c.kind.as_str() {
            "new" => format!("{} is new ({net})", one(&c.added)),
            "gone" => format!("{} is gone ({net})", one(&c.removed)),
            "version" => format!(
                "{} {} → {} ({net})",
                code(&c.package),
                versions(&c.versions_before),
                versions(&c.versions_after)
            ),
            _ => format!("{} rebuilt ({net})", one(&c.added)),
        }
    }

    /// The change's chain and holding files: ": `a` → `b`; `a` holds it
    /// in `share/doc/README` (text, docs)", or ": the attribute's own
    /// output".
    fn change_why(
        c: &ChangeRow,
        name: &dyn Fn(&str) -> String,
        code: fn(&str) -> String,
    ) -> String {
        match &c.referrer {
            None if c.chain.len() <= 1 => ": the attribute's own output".into(),
            None => {
                let chain: Vec<String> = c.chain.iter().map(|p| name(p)).collect();
                format!(": {}", chain.join(" → "))
            }
            Some(r) => {
                let chain: Vec<String> = c.chain.iter().map(|p| name(p)).collect();
                let mut out = format!(": {}", chain.join(" → "));
                if !c.groups.is_empty() {
                    out.push_str(&format!(
                        "; {} {} it in {}",
                        name(r),
                        if c.kind == "gone" { "held" } else { "holds" },
                        review::groups_phrase(&c.groups, code)
                    ));
                }
                out
            }
        }
    }

    /// One change of an attribute, as a line: a shared one pointing to
    /// the shared causes (`standalone`: spelled out, for an annotation).
    fn change_phrase(
        &self,
        c: &ChangeRow,
        name: &dyn Fn(&str) -> String,
        code: fn(&str) -> String,
        standalone: bool,
    ) -> String {
        let mut out = Self::change_head(c, name, code);
        if c.shared && !standalone {
            out.push_str(": shared with other attributes (said once, above)");
        } else if c.shared {
            match self.shared_of(c) {
                Some(s) => out.push_str(&Self::shared_why(s, name, code)),
                None => out.push_str(&Self::change_why(c, name, code)),
            }
        } else {
            out.push_str(&Self::change_why(c, name, code));
        }
        out
    }

    /// The shared cause a row's change is.
    fn shared_of(&self, c: &ChangeRow) -> Option<&SharedRow> {
        self.shared_causes
            .iter()
            .find(|s| s.change.added == c.added && s.change.removed == c.removed)
    }

    /// ", in 10 attributes, through `libcore-1.0`: `share/doc/README`
    /// (text, docs)".
    fn shared_why(
        s: &SharedRow,
        name: &dyn Fn(&str) -> String,
        code: fn(&str) -> String,
    ) -> String {
        let mut out = format!(" in {}", plural(s.count, "attribute"));
        if let Some(a) = &s.output_of {
            out.push_str(&format!(": the output of {}", code(a)));
        } else if let Some(r) = &s.change.referrer {
            let how = if s.change.kind == "gone" {
                "held by"
            } else {
                "through"
            };
            out.push_str(&format!(", {how} {}", name(r)));
            if !s.change.groups.is_empty() {
                out.push_str(&format!(
                    ": {}",
                    review::groups_phrase(&s.change.groups, code)
                ));
            }
        } else if !s.explained {
            out.push_str(" (its holder is not read: only the largest ten are)");
        }
        out
    }

    fn shared_phrase(
        &self,
        s: &SharedRow,
        name: &dyn Fn(&str) -> String,
        code: fn(&str) -> String,
    ) -> String {
        format!(
            "{}{}",
            Self::change_head(&s.change, name, code),
            Self::shared_why(s, name, code)
        )
    }

    /// The line after an attribute's listed changes, so that they add up
    /// to its Δ: "and 3 more changes (+1.2 KiB together)".
    fn more_line(a: &AttrRow) -> Option<String> {
        let more = a.changes_count.saturating_sub(a.changes.len());
        (more > 0).then(|| {
            format!(
                "and {} ({} together; `--top {}` lists them)",
                plural(more, "more change"),
                iec_delta(a.rest_net),
                a.changes_count
            )
        })
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

/// Whether a side as given names a path (a directory, `.`), not a
/// revision or a flake.
fn is_path_like(s: &str) -> bool {
    s == "."
        || s.starts_with('/')
        || s.starts_with("./")
        || s.starts_with("../")
        || s.starts_with("nixpkgs-review ")
}

fn attr_row(r: &AttrImpact, ag: &Graph, impact: &Impact, ctx: &ImpactMeta) -> AttrRow {
    let unbuilt: Vec<Side> = match &r.status {
        Status::NotBuilt(sides) => sides.clone(),
        // Fixed by this change but not built at the head: how to build it.
        Status::EvalFixed(_) if r.after.as_ref().is_some_and(|a| !a.built) => vec![Side::After],
        _ => Vec::new(),
    };
    let (not_built, build) = if unbuilt.is_empty() {
        (None, None)
    } else {
        let which = if unbuilt.len() == 2 {
            "both".to_string()
        } else {
            unbuilt[0].as_str().to_string()
        };
        let cmds: Vec<String> = unbuilt.iter().map(|&s| (ctx.build)(&r.attr, s)).collect();
        (Some(which), Some(cmds.join("; ")))
    };
    // Nix's own message where it failed; the status says which way.
    let failed = match &r.status {
        Status::EvalBroken(m) | Status::EvalFixed(m) | Status::EvalFailed(m) => Some(m.clone()),
        Status::BuildFailed => Some("its build failed in nixpkgs-review (logs/ has the log)".into()),
        Status::SkippedBroken => Some(
            "nixpkgs-review skipped it as broken (marked broken, or it does not evaluate at its checkout)"
                .into(),
        ),
        Status::Skipped => Some("nixpkgs-review skipped it (its list of attributes it never builds)".into()),
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
        changes: r.changes.iter().map(|c| change_row(impact, c)).collect(),
        changes_count: r.changes_count,
        rest_net: r.rest_net,
        added_count: r.added_count,
        added_size: r.added_size,
        removed_count: r.removed_count,
        removed_size: r.removed_size,
        violations: r.broken.iter().map(|b| violation(ag, b)).collect(),
    }
}

/// What makes two rows' stories the same: status, delta, shared causes.
type StoryKey = (String, Option<i128>, Vec<String>);

/// Rows whose whole change is told by the shared causes: every change a
/// shared cause or the row's own output rebuilt, no rule broken. Rows
/// with the same status, delta and shared causes are one story, told
/// once.
fn story_key(a: &AttrRow) -> Option<StoryKey> {
    let all_shown = a.changes_count == a.changes.len();
    let own = |c: &ChangeRow| c.referrer.is_none() && c.chain.len() <= 1;
    let told = a.violations.is_empty()
        && all_shown
        && a.changes.iter().any(|c| c.shared)
        && a.changes.iter().all(|c| c.shared || own(c));
    told.then(|| {
        let mut shared: Vec<String> = a
            .changes
            .iter()
            .filter(|c| c.shared)
            .map(|c| format!("{:?}{:?}", c.added, c.removed))
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
        if a.changes.is_empty() && a.violations.is_empty() && !detail {
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
        .changes
        .iter()
        .filter(|c| c.shared)
        .map(|c| match c.added.first().or(c.removed.first()) {
            Some(p) => name(p),
            None => c.package.clone(),
        })
        .collect();
    let own = first.changes.iter().any(|c| !c.shared);
    format!(
        "{} ({} attributes, {}{} each): only the shared causes above ({}){}",
        names.join(", "),
        rows.len(),
        status_words(&first.status),
        first
            .delta
            .map(|d| format!(" {}", iec_delta(d)))
            .unwrap_or_default(),
        shared.join(", "),
        if own {
            ", and each its own output, rebuilt"
        } else {
            ""
        }
    )
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

/// Shared causes the text lists before saying how many more there are.
const TEXT_SHARED: usize = 10;

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
        let wrap = |l: &str, first: &str, rest: &str| {
            crate::style::wrap_hanging(l, opts.width, first, rest)
        };
        let mut out = format!("{}\n{}\n", self.headline(), self.totals_line());
        for n in &self.notes {
            out.push_str(&wrap(&format!("note: {n}"), "", "  "));
        }
        let broken: Vec<&AttrRow> = self
            .attributes
            .iter()
            .filter(|a| a.status == "broken")
            .collect();
        if !broken.is_empty() {
            out.push_str("\nBroken by this change (evaluate at the base, not at the head):\n");
            for a in &broken {
                out.push_str(&wrap(
                    &format!("{}: {}", a.attr, Self::detail_line(a).unwrap_or_default()),
                    "  ",
                    "      ",
                ));
            }
        }
        if !self.shared_causes.is_empty() {
            out.push_str("\nNew in several attributes (said once):\n");
            for s in self.shared_causes.iter().take(TEXT_SHARED) {
                out.push_str(&wrap(
                    &self.shared_phrase(s, &name, review::plain),
                    "  ",
                    "      ",
                ));
            }
            if self.shared_causes.len() > TEXT_SHARED {
                out.push_str(&wrap(
                    &format!(
                        "and {} shared by several attributes (--json lists them all)",
                        plural(self.shared_causes.len() - TEXT_SHARED, "more change")
                    ),
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
                    out.push_str(&wrap(
                        &format!("{}.", same_story(&rows, &name, |a| a.to_string())),
                        "",
                        "  ",
                    ));
                    continue;
                }
            };
            if a.status == "broken" {
                continue;
            }
            let mut lines = Vec::new();
            for v in &a.violations {
                lines.push(format!("✗ {}: {}", v.rule, v.message));
            }
            for c in &a.changes {
                lines.push(self.change_phrase(c, &name, review::plain, false));
            }
            lines.extend(Self::more_line(a));
            lines.extend(Self::detail_line(a));
            if lines.is_empty() {
                continue;
            }
            out.push_str(&format!("\n{} ({}", a.attr, status_words(&a.status)));
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
                out.push_str(&wrap(&l, "  ", "      "));
            }
        }
        out
    }

    fn problems(&self) -> &[Problem] {
        &self.problems
    }
}

impl review::Reviewed for ImpactReport {
    fn render_markdown(&self, limit: usize) -> String {
        let names = self.names();
        let name = |p: &str| review::code(names.get(p));
        let how = "`nix-heft impact` with the same sides prints all of it (`--format text`, or `--json`).";
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
        let broken: Vec<String> = self
            .attributes
            .iter()
            .filter(|a| a.status == "broken")
            .map(|a| {
                format!(
                    "- **{}**: {}\n",
                    review::md(&a.attr),
                    review::clip(&review::md(&Self::detail_line(a).unwrap_or_default()), 1500)
                )
            })
            .collect();
        let stories: Vec<String> = told(&self.attributes, false)
            .into_iter()
            .filter(|t| !matches!(t, Told::One(a) if a.status == "broken"))
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
                    "\n**{}** ({}{}):\n\n",
                    review::md(&a.attr),
                    status_words(&a.status),
                    a.delta
                        .map(|d| format!(" {}", iec_delta(d)))
                        .unwrap_or_default()
                );
                for v in &a.violations {
                    s.push_str(&format!("- ❌ `{}`: {}\n", v.rule, review::md(&v.message)));
                }
                for c in &a.changes {
                    s.push_str(&format!(
                        "- {}\n",
                        review::clip(&self.change_phrase(c, &name, review::code, false), 1500)
                    ));
                }
                if let Some(m) = Self::more_line(a) {
                    s.push_str(&format!("- {m}\n"));
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
            .filter(|a| a.status != "broken")
            .filter_map(|a| {
                Self::detail_line(a).map(|d| {
                    let d = match (&a.not_built, &a.build) {
                        (Some(side), Some(cmd)) if a.status == "not-built" => {
                            format!("not built ({side}): `{cmd}`")
                        }
                        (Some(side), Some(cmd)) => {
                            format!("{}; not built ({side}): `{cmd}`", review::md(&d))
                        }
                        _ => review::md(&d),
                    };
                    let how = if a.status == "not-built" {
                        String::new()
                    } else {
                        format!(" ({})", status_words(&a.status))
                    };
                    format!(
                        "- **{}**{how}: {}\n",
                        review::md(&a.attr),
                        review::clip(&d, 1500)
                    )
                })
            })
            .collect();
        let breaking = self
            .attributes
            .iter()
            .filter(|a| !a.violations.is_empty())
            .count();
        let table_head = format!(
            "\n<details><summary>{} by closure change</summary>\n\n\
             | attribute | status | before | after | Δ |\n| --- | --- | ---: | ---: | ---: |\n",
            plural(rows.len(), "attribute")
        );
        let table_len = table_head.chars().count()
            + rows.iter().map(|r| r.chars().count()).sum::<usize>()
            + "\n</details>\n".len();
        let missing_len: usize = missing.iter().map(|r| r.chars().count()).sum::<usize>() + 40;
        review::fit(
            limit,
            &[
                ("attributes broken by this change", broken.len()),
                ("shared causes", shared.len()),
                ("explained attributes", stories.len()),
                ("attributes in the table", rows.len()),
                ("not built, failed or skipped", missing.len()),
            ],
            how,
            |f: &mut Fitter| {
                let mut verdict = String::new();
                if !broken.is_empty() {
                    verdict.push_str(&format!(
                        "❌ **{} broken by this change**: {} at the base, not at the head.\n\n",
                        plural(broken.len(), "attribute"),
                        if broken.len() == 1 {
                            "it evaluates"
                        } else {
                            "they evaluate"
                        }
                    ));
                }
                if breaking > 0 {
                    verdict.push_str(&format!(
                        "❌ {} a rule.\n\n",
                        if breaking == 1 {
                            "1 attribute breaks".to_string()
                        } else {
                            format!("{breaking} attributes break")
                        }
                    ));
                }
                f.force(&format!(
                    "{MARKER}\n### Closure impact: {}\n\n{verdict}{}.\n",
                    review::md(&self.headline()),
                    self.totals_line()
                ));
                for n in &self.notes {
                    f.push(&format!("\n> {}\n", review::md(n)));
                }
                if !broken.is_empty() {
                    f.list(
                        "\n**Broken by this change** (evaluate at the base, not at the head):\n\n",
                        &broken,
                        "",
                        "attributes broken by this change",
                    );
                }
                if !shared.is_empty() {
                    // Said once for many attributes: before their stories,
                    // but never all of the room.
                    let room = f.room();
                    f.list_within(
                        "\n**New in several attributes** (said once):\n\n",
                        &shared,
                        "",
                        "shared causes",
                        room.saturating_sub(table_len + missing_len).max(room / 2),
                    );
                }
                // The stories take what the table and the list of what was
                // not built leave, so that every attribute stays listed.
                let room = f.room().saturating_sub(table_len + missing_len);
                f.list_within(
                    "",
                    &stories,
                    "",
                    "explained attributes",
                    room.max(f.room() / 2),
                );
                f.list(
                    &table_head,
                    &rows,
                    "\n</details>\n",
                    "attributes in the table",
                );
                f.list(
                    "\n**Not built, failed or skipped:**\n\n",
                    &missing,
                    "",
                    "not built, failed or skipped",
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
        let names = self.names();
        let name = |p: &str| names.get(p).to_string();
        let mut anns = Vec::new();
        for a in self.attributes.iter().filter(|a| a.status == "broken") {
            anns.push(Annotation {
                level: "error",
                title: format!("nix-heft impact: {} is broken by this change", a.attr),
                lines: vec![Self::detail_line(a).unwrap_or_default()],
            });
        }
        for a in &self.attributes {
            for v in &a.violations {
                anns.push(Annotation {
                    level: "error",
                    title: format!("nix-heft impact: {} breaks {}", a.attr, v.rule),
                    lines: vec![v.message.clone()],
                });
            }
        }
        // Each annotation stands alone: a shared change is spelled out
        // with its holder and files, never "above".
        for a in self.attributes.iter().filter(|a| a.status == "grown") {
            let mut lines = vec![format!(
                "{} → {} ({})",
                size_of(&a.before, &iec),
                size_of(&a.after, &iec),
                delta_of(a, false)
            )];
            lines.extend(
                a.changes
                    .iter()
                    .map(|c| self.change_phrase(c, &name, review::plain, true)),
            );
            lines.extend(Self::more_line(a).map(|l| l.replace('`', "")));
            anns.push(Annotation {
                level: "warning",
                title: format!("nix-heft impact: {} grew", a.attr),
                lines,
            });
        }
        for a in self.attributes.iter().filter(|a| a.status != "broken") {
            if let Some(d) = Self::detail_line(a) {
                anns.push(Annotation {
                    level: "notice",
                    title: format!("nix-heft impact: {} {}", a.attr, status_words(&a.status)),
                    lines: vec![d],
                });
            }
        }
        let anns = review::cap(anns, "nix-heft impact", "the job summary");
        anns.iter().map(|a| a.render(at)).collect()
    }
}

/// `impact --list`: the attributes that would be compared, one a line
/// (what a CI job builds before comparing them); `{"attrs": [...]}` as
/// JSON.
#[derive(Debug, Clone, Serialize)]
pub struct AttrList {
    /// The attributes, in the order they are compared.
    pub attrs: Vec<String>,
}

impl Report for AttrList {
    fn render_text(&self, _: &TextOptions) -> String {
        self.attrs.iter().map(|a| format!("{a}\n")).collect()
    }
}

impl ImpactReport {
    /// The lines that explain attribute `a`'s change (each package's net
    /// change, the chain and the holding file), in text (`code` =
    /// [`review::plain`]) or markdown ([`review::code`]): what `history`
    /// says of a jump.
    pub(crate) fn explained_lines(&self, a: &AttrRow, code: fn(&str) -> String) -> Vec<String> {
        let names = self.names();
        let name = |p: &str| names.get(p).to_string();
        let mut lines: Vec<String> = a
            .changes
            .iter()
            .map(|c| self.change_phrase(c, &name, code, true))
            .collect();
        lines.extend(Self::more_line(a));
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::Reviewed;

    /// A report of `n` attributes, each grown by a new path of its own.
    fn report(n: usize) -> ImpactReport {
        let attributes: Vec<AttrRow> = (0..n)
            .map(|i| {
                let path = format!("/nix/store/{:032}-dep{i}-1.0", i).replace('0', "a");
                let own = format!("/nix/store/{:032}-pkg{i}-1.0", i).replace('0', "b");
                AttrRow {
                    attr: format!("pkg{i}"),
                    status: "grown".into(),
                    before: Some(SideRow {
                        outputs: BTreeMap::new(),
                        built: true,
                        closure_size: Some(1000),
                    }),
                    after: Some(SideRow {
                        outputs: BTreeMap::new(),
                        built: true,
                        closure_size: Some(1000 + 4096 * (n - i) as u64),
                    }),
                    delta: Some(4096 * (n - i) as i128),
                    not_built: None,
                    build: None,
                    failed: None,
                    changes: vec![ChangeRow {
                        kind: "new".into(),
                        package: format!("dep{i}"),
                        added: vec![path.clone()],
                        removed: Vec::new(),
                        versions_before: Vec::new(),
                        versions_after: vec!["1.0".into()],
                        net: 4096 * (n - i) as i128,
                        chain: vec![own.clone(), path],
                        referrer: Some(own),
                        holds: vec!["share/doc/README".into()],
                        groups: Vec::new(),
                        shared: false,
                    }],
                    changes_count: 1,
                    rest_net: 0,
                    added_count: 1,
                    added_size: 4096,
                    removed_count: 0,
                    removed_size: 0,
                    violations: Vec::new(),
                }
            })
            .collect();
        ImpactReport {
            before: SideMeta::default(),
            after: SideMeta::default(),
            evaluator: "nix-env".into(),
            totals: Totals {
                grown: n,
                ..Totals::default()
            },
            attributes,
            shared_causes: Vec::new(),
            notes: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// Every story fits a comment that has the room: none is left out
    /// for a fixed count (ten were, silently); when the room runs out, the
    /// cut is said with how many are left out.
    #[test]
    fn a_comment_shows_every_story_it_can_fit() {
        let r = report(40);
        let md = r.render_markdown(crate::review::COMMENT_LIMIT);
        for i in 0..40 {
            assert_eq!(
                md.matches(&format!("\n**pkg{i}** (grown")).count(),
                1,
                "pkg{i}"
            );
        }
        assert!(!md.contains("Cut to fit"), "{md}");
        let small = r.render_markdown(4000);
        assert!(small.chars().count() <= 4000);
        let shown = (0..40)
            .filter(|i| small.contains(&format!("\n**pkg{i}** (grown")))
            .count();
        assert!(shown > 0 && shown < 40, "{shown}");
        assert!(
            small.contains(&format!("{} of 40 explained attributes", 40 - shown)),
            "{small}"
        );
    }

    /// No list line starts with `+` or `-` after its bullet: GitHub would
    /// read a nested list.
    #[test]
    fn list_lines_never_start_with_a_sign() {
        let md = report(3).render_markdown(crate::review::COMMENT_LIMIT);
        for l in md.lines().filter(|l| l.starts_with("- ")) {
            assert!(!l[2..].starts_with(['+', '-', '*']), "{l}");
        }
    }
}
