//! The `diff` report: what changed between two closures, per package and
//! per path, and for every path that appeared or left the edge and files
//! that explain it.

use serde::{Deserialize, Serialize};

use super::table::{Align, Table};
use super::{Report, TextOptions, review};
use crate::classify::Classified;
use crate::diff::{ClosureDiff, Drag, EdgeChange, PathChange};
use crate::evidence::{Evidence, EvidenceGroup};
use crate::graph::Graph;
use crate::problem::Problem;
use crate::units::{iec, iec_delta};

/// Why a path appeared or left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Why {
    /// The path on the same side that references it; `null` for a root.
    pub referrer: Option<String>,
    /// `new` (AFTER: the edge appeared), `gone` (BEFORE: the edge vanished),
    /// `renamed` (the same packages are linked on the other side too: only
    /// a hash or version changed), or `root`.
    pub edge: String,
    /// The paths of the same package on the other side that it replaces or
    /// that replace it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub renamed: Vec<String>,
    /// The referrer's holds of the reference (read only for `new` and
    /// `gone` edges).
    pub evidence: Vec<Evidence>,
    /// The same holds grouped by kind, verdict and directory, with the
    /// holding files' sizes: what the text, markdown and GitHub formats
    /// show.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<EvidenceGroup>,
    /// True when the source has no file contents for the referrer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unavailable: bool,
    /// For a path that left together with its referrer (every referrer's
    /// package is gone too): the referrer it left with. `null` when a
    /// referrer stayed and only the edge vanished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_with: Option<String>,
    /// With `left_with`: the chain that held the path, from the nearest
    /// path that stayed (or the old root) down to the path itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_chain: Vec<String>,
}

/// A path that appeared or left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedPath {
    /// The store path.
    pub path: String,
    /// Its NAR size.
    pub nar_size: u64,
    /// The edge that explains it.
    pub why: Why,
    /// With `diff --derivation`: the paths of its side's closure
    /// reachable from it that the other side lacks (itself included),
    /// the order of the list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drags: Option<Drag>,
}

/// One package's transition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Package {
    /// Package name without version or output.
    pub name: String,
    /// Versions before (`""` for a path without version).
    pub versions_before: Vec<String>,
    /// Versions after.
    pub versions_after: Vec<String>,
    /// Size change in bytes.
    pub size_delta: i128,
    /// `1.2 → 1.3`, `∅ → 2.0`, or `(rebuilt)` when only hashes changed.
    pub transition: String,
}

/// The whole report; also the `--json` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffReport {
    /// BEFORE's roots.
    pub before: Vec<String>,
    /// AFTER's roots.
    pub after: Vec<String>,
    /// Closure size of BEFORE.
    pub closure_size_before: u64,
    /// Closure size of AFTER.
    pub closure_size_after: u64,
    /// Paths in BEFORE's closure.
    pub paths_before: usize,
    /// Paths in AFTER's closure.
    pub paths_after: usize,
    /// Changed packages, largest absolute size change first.
    pub packages: Vec<Package>,
    /// Paths new in AFTER's closure, largest first.
    pub added: Vec<ChangedPath>,
    /// Paths that left, largest first.
    pub removed: Vec<ChangedPath>,
    /// What could not be read on either side.
    pub problems: Vec<Problem>,
    /// With `diff --derivation`: why the derivations differ
    /// (`root_causes`, `derivation_changes`).
    #[serde(flatten)]
    pub derivations: Option<super::drv_diff::DrvDiffReport>,
}

/// Nix's way of listing a version set: `∅` for none, `ε` for the empty
/// version.
fn show_versions(v: &[String]) -> String {
    if v.is_empty() {
        return "∅".into();
    }
    v.iter()
        .map(|s| if s.is_empty() { "ε" } else { s.as_str() })
        .collect::<Vec<_>>()
        .join(", ")
}

impl DiffReport {
    /// Assembles the report from the comparison and the evidence read on
    /// each side.
    pub fn new(
        before: &Graph,
        after: &Graph,
        d: ClosureDiff,
        read_before: Classified,
        read_after: Classified,
    ) -> DiffReport {
        let changed = |this: &Graph, other: &Graph, c: &Classified, pc: &PathChange, new: bool| {
            let (edge, evidence, groups, unavailable) = match (pc.referrer, pc.edge) {
                (None, _) => ("root", Vec::new(), Vec::new(), false),
                (Some(_), EdgeChange::Renamed) => ("renamed", Vec::new(), Vec::new(), false),
                (Some(r), EdgeChange::Changed) => (
                    if new { "new" } else { "gone" },
                    c.evidence(r, pc.node).to_vec(),
                    c.groups(r, pc.node),
                    c.paths.get(&r).is_none_or(|p| !p.available),
                ),
            };
            ChangedPath {
                path: this.path(pc.node).to_string(),
                nar_size: this.nar_size(pc.node),
                why: Why {
                    referrer: pc.referrer.map(|r| this.path(r).to_string()),
                    edge: edge.to_string(),
                    renamed: pc
                        .counterparts
                        .iter()
                        .map(|&o| other.path(o).to_string())
                        .collect(),
                    evidence,
                    groups,
                    unavailable,
                    left_with: if pc.left_with.is_empty() {
                        None
                    } else {
                        pc.referrer.map(|r| this.path(r).to_string())
                    },
                    left_chain: pc
                        .left_with
                        .iter()
                        .map(|&n| this.path(n).to_string())
                        .collect(),
                },
                drags: pc.drags,
            }
        };
        let added = d
            .added
            .iter()
            .map(|pc| changed(after, before, &read_after, pc, true))
            .collect();
        let removed = d
            .removed
            .iter()
            .map(|pc| changed(before, after, &read_before, pc, false))
            .collect();
        let packages = d
            .packages
            .into_iter()
            .map(|p| Package {
                transition: if p.rebuilt {
                    "(rebuilt)".into()
                } else {
                    format!(
                        "{} → {}",
                        show_versions(&p.versions_before),
                        show_versions(&p.versions_after)
                    )
                },
                name: p.name,
                versions_before: p.versions_before,
                versions_after: p.versions_after,
                size_delta: p.size_delta,
            })
            .collect();
        let mut problems = read_before.problems;
        problems.extend(read_after.problems);
        DiffReport {
            before: before
                .roots()
                .iter()
                .map(|&r| before.path(r).to_string())
                .collect(),
            after: after
                .roots()
                .iter()
                .map(|&r| after.path(r).to_string())
                .collect(),
            closure_size_before: d.closure_size_before,
            closure_size_after: d.closure_size_after,
            paths_before: d.paths_before,
            paths_after: d.paths_after,
            packages,
            added,
            removed,
            problems,
            derivations: None,
        }
    }
}

impl ChangedPath {
    /// Why it came or went, after its name and size: `is new: app-1.0
    /// references it from bin/app (elf-runpath, runtime)`. `name` shows a
    /// store path, `code` a file (plain for text, a code span for
    /// markdown).
    pub fn explain(
        &self,
        new: bool,
        name: &dyn Fn(&str) -> String,
        code: fn(&str) -> String,
    ) -> String {
        let c = self;
        match (c.why.referrer.as_deref(), c.why.edge.as_str()) {
            (None, _) => {
                if new {
                    "is a root".to_string()
                } else {
                    "was a root".to_string()
                }
            }
            (Some(r), "renamed") => {
                let was: Vec<String> = c.why.renamed.iter().map(|p| name(p)).collect();
                let verb = if new { "replaces" } else { "replaced by" };
                if was.is_empty() {
                    format!("{} references it as before", name(r))
                } else {
                    format!(
                        "{verb} {}: {} references it as before",
                        was.join(", "),
                        name(r)
                    )
                }
            }
            (Some(_), _) if !new && c.why.left_with.is_some() => {
                let chain: Vec<String> = c.why.left_chain.iter().map(|p| name(p)).collect();
                format!(
                    "left with {} ({})",
                    name(c.why.left_with.as_deref().unwrap_or_default()),
                    chain.join(" → ")
                )
            }
            (Some(r), _) => {
                let held = if c.why.unavailable {
                    "(no file contents in this source)".to_string()
                } else if c.why.evidence.is_empty() {
                    "(registered, but no occurrence found)".to_string()
                } else {
                    format!(
                        "from {}",
                        review::groups_phrase(
                            &review::groups_of(&c.why.groups, &c.why.evidence),
                            code
                        )
                    )
                };
                if new {
                    format!("is new: {} references it {held}", name(r))
                } else {
                    format!("left: {} no longer references it (before, {held})", name(r))
                }
            }
        }
    }
}

/// How to see what a cut markdown report left out.
const SEE_ALL: &str = "`nix-heft diff --format text BEFORE AFTER` lists everything \
                       (`--evidence` every hold); a CI job can keep it as an artifact.";

/// Characters kept free for the end of a markdown report and its note on
/// what was cut.
const RESERVE: usize = 1500;

/// Paths shown with an annotation each in `--format github`.
const ANNOTATED_PATHS: usize = 8;

impl DiffReport {
    /// Display names for every path the report shows (a hash where two
    /// share a name).
    fn names(&self) -> super::Names {
        super::Names::new(
            self.before
                .iter()
                .chain(&self.after)
                .chain(self.added.iter().chain(&self.removed).flat_map(|c| {
                    std::iter::once(&c.path)
                        .chain(&c.why.referrer)
                        .chain(&c.why.renamed)
                        .chain(&c.why.left_with)
                        .chain(&c.why.left_chain)
                }))
                .map(String::as_str),
        )
    }

    /// Closure before → after (Δ), paths added and removed: the one line
    /// every format starts with.
    fn summary(&self) -> String {
        format!(
            "closure {} → {} ({}), {} added, {} removed",
            iec(self.closure_size_before),
            iec(self.closure_size_after),
            iec_delta(self.closure_size_after as i128 - self.closure_size_before as i128),
            plural(self.added.len(), "path"),
            self.removed.len()
        )
    }

    /// Packages by size impact, largest first.
    fn packages_by_impact(&self) -> Vec<&Package> {
        let mut p: Vec<&Package> = self.packages.iter().collect();
        p.sort_by(|a, b| {
            b.size_delta
                .unsigned_abs()
                .cmp(&a.size_delta.unsigned_abs())
        });
        p
    }

    /// Markdown for a pull-request comment or a job summary: [`MARKER`],
    /// the summary as a heading, the packages by size impact, each added
    /// and removed path with what pulled it in or held it (long lists in
    /// `<details>`); at most `limit` characters, cutting removed paths,
    /// then added paths, then packages, and saying what was cut.
    ///
    /// [`MARKER`]: review::MARKER
    fn render_markdown_within(&self, limit: usize) -> String {
        let names = self.names();
        let name = |p: &str| review::code(names.get(p));
        let roots = |r: &[String]| r.iter().map(|p| name(p)).collect::<Vec<_>>().join(", ");
        let mut f = review::Fitter::new(limit, RESERVE);
        f.force(&format!(
            "{}\n### nix-heft diff: {}\n\n{} → {}: {} → {} paths, {} packages changed\n",
            review::MARKER,
            self.summary(),
            roots(&self.before),
            roots(&self.after),
            self.paths_before,
            self.paths_after,
            self.packages.len()
        ));
        if !self.problems.is_empty() {
            f.push(&format!(
                "\n⚠️ partial read: {} problem(s), listed at the end as room allows\n",
                self.problems.len()
            ));
        }
        let rows: Vec<String> = self
            .packages_by_impact()
            .iter()
            .map(|p| {
                review::clip(
                    &format!(
                        "| {} | {} | {} |\n",
                        review::md(&p.name),
                        review::md(&p.transition),
                        iec_delta(p.size_delta)
                    ),
                    600,
                )
            })
            .collect();
        let table = "| package | versions | size Δ |\n| --- | --- | ---: |\n";
        let (head, tail) = if rows.len() > OPEN_AT {
            (
                format!(
                    "\n<details><summary>{} packages changed, by size impact</summary>\n\n{table}",
                    rows.len()
                ),
                "\n</details>\n".to_string(),
            )
        } else {
            (format!("\n{table}"), String::new())
        };
        if !rows.is_empty() {
            // Packages are the overview: a third of the room at most, so
            // that the paths behind them show too.
            let third = f.room() / 3;
            f.list_within(&head, &rows, &tail, "changed packages", third);
        }
        for (list, new) in [(&self.added, true), (&self.removed, false)] {
            if list.is_empty() {
                continue;
            }
            let total: u64 = list.iter().map(|c| c.nar_size).fold(0, u64::saturating_add);
            let sign = if new { "+" } else { "-" };
            let items: Vec<String> = list
                .iter()
                .map(|c| {
                    review::clip(
                        &format!(
                            "- {} ({sign}{}) {}\n",
                            name(&c.path),
                            iec(c.nar_size),
                            c.explain(new, &name, review::code)
                        ),
                        2000,
                    )
                })
                .collect();
            let what = if new { "added" } else { "removed" };
            let head = format!(
                "\n<details{}><summary>{} {what} ({sign}{})</summary>\n\n",
                if items.len() <= OPEN_AT { " open" } else { "" },
                plural(items.len(), "path"),
                iec(total)
            );
            // Room for the removed paths: what is new matters more.
            let keep = if new { f.room() / 4 } else { 0 };
            f.list_within(
                &head,
                &items,
                "\n</details>\n",
                &format!("{what} paths"),
                f.room().saturating_sub(keep),
            );
        }
        if !self.problems.is_empty() {
            let items: Vec<String> = self
                .problems
                .iter()
                .map(|p| format!("- {}\n", review::clip(&review::md(&p.display()), 500)))
                .collect();
            let head = format!("\n⚠️ partial read, {} problem(s):\n\n", self.problems.len());
            f.list(&head, &items, "", "problems");
        }
        f.finish(SEE_ALL)
    }

    /// GitHub workflow commands: a notice with the summary and the largest
    /// package changes, one per largest added path (what pulled it in), a
    /// count of the rest, a warning for a partial read; `at` is the
    /// package's Nix file.
    fn render_github_at(&self, at: Option<&review::NixFile>) -> String {
        let names = self.names();
        let name = |p: &str| names.get(p).to_string();
        let mut lines = vec![self.summary()];
        for p in self.packages_by_impact().iter().take(4) {
            lines.push(format!(
                "{} {} ({})",
                p.name,
                p.transition,
                iec_delta(p.size_delta)
            ));
        }
        if self.packages.len() > 4 {
            lines.push(format!(
                "and {} more packages changed",
                self.packages.len() - 4
            ));
        }
        let mut out = review::Annotation {
            level: "notice",
            title: "nix-heft diff".into(),
            lines,
        }
        .render(at);
        // Roots are in the summary already.
        let annotated: Vec<&ChangedPath> = self
            .added
            .iter()
            .filter(|c| c.why.referrer.is_some())
            .collect();
        for c in annotated.iter().take(ANNOTATED_PATHS) {
            let mut lines = vec![format!(
                "{} (+{}) {}",
                name(&c.path),
                iec(c.nar_size),
                c.explain(true, &name, review::plain)
            )];
            // One line per group, so the box stays readable.
            let groups = review::groups_of(&c.why.groups, &c.why.evidence);
            if groups.len() > 1 {
                lines = vec![format!(
                    "{} (+{}) is new: {} references it from:",
                    name(&c.path),
                    iec(c.nar_size),
                    c.why.referrer.as_deref().map(name).unwrap_or_default()
                )];
                for g in groups.iter().take(review::SHOWN_GROUPS) {
                    lines.push(format!("  {}", review::group_phrase(g, review::plain)));
                }
                if groups.len() > review::SHOWN_GROUPS {
                    lines.push(format!(
                        "  and {} more groups (--evidence lists all)",
                        groups.len() - review::SHOWN_GROUPS
                    ));
                }
            }
            out.push_str(
                &review::Annotation {
                    level: "notice",
                    title: format!(
                        "nix-heft diff: {} added (+{})",
                        name(&c.path),
                        iec(c.nar_size)
                    ),
                    lines,
                }
                .render(at),
            );
        }
        if annotated.len() > ANNOTATED_PATHS {
            out.push_str(
                &review::Annotation {
                    level: "notice",
                    title: "nix-heft diff: more paths added".into(),
                    lines: vec![format!(
                        "{} more paths added; the job summary and `nix-heft diff --format text` list them",
                        annotated.len() - ANNOTATED_PATHS
                    )],
                }
                .render(at),
            );
        }
        if !self.problems.is_empty() {
            out.push_str(
                &review::Annotation {
                    level: "warning",
                    title: "nix-heft diff: partial read".into(),
                    lines: self.problems.iter().map(|p| p.display()).collect(),
                }
                .render(at),
            );
        }
        out
    }
}

/// `1 path`, `2 paths`.
fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("{n} {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Lists longer than this go into a closed `<details>`.
const OPEN_AT: usize = 10;

impl Report for DiffReport {
    fn problems(&self) -> &[Problem] {
        &self.problems
    }

    fn render_text(&self, opts: &TextOptions) -> String {
        let size = |b: u64| {
            if opts.exact_bytes {
                b.to_string()
            } else {
                iec(b)
            }
        };
        let delta = self.closure_size_after as i128 - self.closure_size_before as i128;
        // BEFORE and AFTER often share names: the hash tells them apart,
        // wherever a name is shown twice.
        let names = self.names();
        let name_of = |p: &'_ str| names.get(p).to_string();
        let roots = |r: &[String]| {
            r.iter()
                .map(|p| names.get(p))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = super::style::wrap_hanging(
            &format!("{} → {}", roots(&self.before), roots(&self.after)),
            opts.width,
            "",
            "  ",
        );
        out.push_str(&super::style::wrap_hanging(
            &format!(
                "paths {} → {}, closure {} → {} ({})",
                self.paths_before,
                self.paths_after,
                size(self.closure_size_before),
                size(self.closure_size_after),
                iec_delta(delta)
            ),
            opts.width,
            "",
            "  ",
        ));
        if self.packages.is_empty() {
            out.push_str("\nno package changed\n");
        } else {
            let mut t = Table::new(&[
                ("PACKAGE", Align::Left),
                ("VERSIONS", Align::Left),
                ("SIZE Δ", Align::Right),
            ]);
            t.keep(0).wrap(1);
            for p in &self.packages {
                t.row(vec![
                    p.name.clone(),
                    p.transition.clone(),
                    iec_delta(p.size_delta),
                ]);
            }
            out.push('\n');
            out.push_str(&t.render_fit(opts.width, opts.style));
        }
        let line = |out: &mut String, c: &ChangedPath, new: bool| {
            let name = name_of(&c.path);
            let sign = if new { "+" } else { "-" };
            let what = c.explain(new, &|p| name_of(p).to_string(), review::plain);
            let drags = match c.drags {
                Some(d) if new => format!("; drags in {} path(s), {}", d.paths, size(d.bytes)),
                Some(d) => format!("; {} path(s), {} gone with it", d.paths, size(d.bytes)),
                None => String::new(),
            };
            out.push_str(&opts.style.paths(&super::style::wrap_hanging(
                &format!("{name} ({sign}{}{drags}) {what}", size(c.nar_size)),
                opts.width,
                "  ",
                "      ",
            )));
            if opts.every_line && !c.why.evidence.is_empty() {
                for l in super::evidence_lines(&c.why.evidence, &c.why.groups, opts).lines() {
                    out.push_str(&format!("    {l}\n"));
                }
            }
        };
        // Ranked by drag (diff --derivation), the order says so.
        let ranked = self
            .added
            .iter()
            .chain(&self.removed)
            .any(|c| c.drags.is_some());
        let (order, order_removed) = if ranked {
            (", by what each drags in", ", by what went with each")
        } else {
            ("", "")
        };
        if !self.added.is_empty() {
            out.push_str(&format!("\n{} path(s) added{order}:\n", self.added.len()));
            for c in &self.added {
                line(&mut out, c, true);
            }
        }
        if !self.removed.is_empty() {
            out.push_str(&format!(
                "\n{} path(s) removed{order_removed}:\n",
                self.removed.len()
            ));
            for c in &self.removed {
                line(&mut out, c, false);
            }
        }
        if let Some(d) = &self.derivations {
            out.push_str(&d.render_text(opts));
        }
        super::refs::append_problems(&mut out, &self.problems, opts.width);
        out
    }
}

impl review::Reviewed for DiffReport {
    fn render_markdown(&self, limit: usize) -> String {
        // `--derivation`'s section after the closure's, within one limit:
        // what the closure's part leaves, or up to half of the limit (the
        // closure's part then cut to the rest, keeping its reserve).
        let Some(d) = &self.derivations else {
            return self.render_markdown_within(limit);
        };
        let closure = self.render_markdown_within(limit);
        let free = limit.saturating_sub(closure.chars().count());
        let room = free.max((limit / 2).min(limit.saturating_sub(2 * RESERVE)));
        if room < 500 {
            return closure;
        }
        let own = d.render_markdown(room);
        let n = own.chars().count();
        let mut out = if n <= free {
            closure
        } else {
            self.render_markdown_within(limit - n)
        };
        out.push_str(&own);
        out
    }
    fn render_github(&self, at: Option<&review::NixFile>) -> String {
        let mut out = self.render_github_at(at);
        if let Some(d) = &self.derivations {
            out.push_str(&d.render_github(at));
        }
        out
    }
}
