//! The `diff` report: what changed between two closures, per package and
//! per path, and for every path that appeared or left the edge and files
//! that explain it. The structs here are the JSON (`--json`, through
//! serde); each other format is a file: `text`, `markdown` (a PR comment
//! or job summary within a limit), `github` (workflow annotations), all
//! over `entry`, the review's lines that every format shares.

use serde::{Deserialize, Serialize};

use super::{Report, TextOptions, plural, review};
use nix_heft_analysis::diff::{ClosureDiff, Drag, EdgeChange, PathChange};
use nix_heft_graph::Graph;
use nix_heft_scan::classify::Classified;
use nix_heft_types::evidence::{Evidence, EvidenceGroup};
use nix_heft_types::problem::Problem;
use nix_heft_types::units::{iec, iec_delta};

mod entry;
mod github;
mod markdown;
mod text;

use entry::Entry;

/// How a changed path's referrer relates to it, as `diff --json` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Edge {
    /// AFTER: the edge appeared.
    New,
    /// BEFORE: the edge vanished.
    Gone,
    /// The same packages are linked on the other side too: only a hash or
    /// version changed.
    Renamed,
    /// The path is a root.
    Root,
}

impl Edge {
    /// The name `diff --json` gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Edge::New => "new",
            Edge::Gone => "gone",
            Edge::Renamed => "renamed",
            Edge::Root => "root",
        }
    }
}

/// Why a path appeared or left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Why {
    /// The path on the same side that references it; `null` for a root.
    pub referrer: Option<String>,
    /// `new` (AFTER: the edge appeared), `gone` (BEFORE: the edge vanished),
    /// `renamed` (the same packages are linked on the other side too: only
    /// a hash or version changed), or `root`.
    pub edge: Edge,
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
    /// For an added path: the chain from AFTER's root down to it, through
    /// the referrer given for each path on the way (the strongest hold),
    /// ending at the path itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<String>,
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
        let added = d
            .added
            .iter()
            .map(|pc| changed_path(after, before, &read_after, pc, true))
            .collect();
        let removed = d
            .removed
            .iter()
            .map(|pc| changed_path(before, after, &read_before, pc, false))
            .collect();
        let packages = d.packages.into_iter().map(package).collect();
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

/// One changed path of `this` side (`other` the other side), with what
/// `c` read of the edge that explains it.
fn changed_path(
    this: &Graph,
    other: &Graph,
    c: &Classified,
    pc: &PathChange,
    new: bool,
) -> ChangedPath {
    let (edge, evidence, groups, unavailable) = match (pc.referrer, pc.edge) {
        (None, _) => (Edge::Root, Vec::new(), Vec::new(), false),
        (Some(_), EdgeChange::Renamed) => (Edge::Renamed, Vec::new(), Vec::new(), false),
        (Some(r), EdgeChange::Changed) => (
            if new { Edge::New } else { Edge::Gone },
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
            edge,
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
            // A root's chain is itself: nothing to say.
            chain: if pc.chain.len() > 1 {
                pc.chain.iter().map(|&n| this.path(n).to_string()).collect()
            } else {
                Vec::new()
            },
        },
        drags: pc.drags,
    }
}

/// A package's transition in words.
fn package(p: nix_heft_analysis::diff::PackageChange) -> Package {
    Package {
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
    }
}

impl ChangedPath {
    /// The referrer's holds in words: `from bin/app (elf-runpath,
    /// runtime)`, or why there are none.
    fn held(&self, code: fn(&str) -> String) -> String {
        if self.why.unavailable {
            "(no file contents in this source)".to_string()
        } else if self.why.evidence.is_empty() {
            "(registered, but no occurrence found)".to_string()
        } else {
            format!(
                "from {}",
                review::groups_phrase(
                    &review::groups_of(&self.why.groups, &self.why.evidence),
                    code
                )
            )
        }
    }

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
        match (c.why.referrer.as_deref(), c.why.edge) {
            (None, _) => {
                if new {
                    "is a root".to_string()
                } else {
                    "was a root".to_string()
                }
            }
            (Some(r), Edge::Renamed) => {
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
                let held = self.held(code);
                if new {
                    format!("is new: {} references it {held}", name(r))
                } else {
                    format!("left: {} no longer references it (before, {held})", name(r))
                }
            }
        }
    }
}

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
                        .chain(&c.why.chain)
                }))
                .map(String::as_str),
        )
    }

    /// Paths new in AFTER (not replacing any), paths changed (rebuilt or
    /// another version: they replace paths of their package) and paths
    /// gone without a replacement.
    pub fn counts(&self) -> (usize, usize, usize) {
        let changed = self
            .added
            .iter()
            .filter(|c| !c.why.renamed.is_empty())
            .count();
        let removed = self
            .removed
            .iter()
            .filter(|c| c.why.renamed.is_empty())
            .count();
        (self.added.len() - changed, changed, removed)
    }

    /// Closure before → after (Δ), paths added, changed and removed: the
    /// one line every format starts with.
    fn summary(&self) -> String {
        let (added, changed, removed) = self.counts();
        format!(
            "closure {} → {} ({}): {} added, {changed} changed, {removed} removed",
            iec(self.closure_size_before),
            iec(self.closure_size_after),
            iec_delta(self.closure_size_after as i128 - self.closure_size_before as i128),
            plural(added, "path"),
        )
    }

    /// `old A → new B`: the roots, labelled, as `name` shows them.
    fn roots_line(&self, name: &dyn Fn(&str) -> String) -> String {
        let roots = |r: &[String]| r.iter().map(|p| name(p)).collect::<Vec<_>>().join(", ");
        format!("old {} → new {}", roots(&self.before), roots(&self.after))
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

    /// The paths added for one reason through one referrer
    /// (`COLLAPSE_AT` or more), each group with its line in words (paths
    /// shown by `name`), largest group first: the one line every format
    /// gives them (the HTML page's too).
    pub fn added_groups(&self, name: &dyn Fn(&str) -> String) -> Vec<(Vec<String>, String)> {
        self.entries()
            .0
            .into_iter()
            .filter_map(|e| {
                let Entry::Group(g) = &e else {
                    return None;
                };
                if !g.new {
                    return None;
                }
                let paths = g.members.iter().map(|c| c.path.clone()).collect();
                Some((paths, self.entry_line(&e, name, review::plain, &iec)))
            })
            .collect()
    }
}

impl Report for DiffReport {
    fn problems(&self) -> &[Problem] {
        &self.problems
    }

    fn render_text(&self, opts: &TextOptions) -> String {
        self.text(opts)
    }
}

impl review::Reviewed for DiffReport {
    fn render_markdown(&self, limit: usize) -> String {
        self.markdown(limit)
    }

    fn render_github(&self, at: Option<&review::NixFile>) -> String {
        self.github(at)
    }
}
