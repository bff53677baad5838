//! The `diff` report: what changed between two closures, per package and
//! per path, and for every path that appeared or left the edge and files
//! that explain it.

use serde::{Deserialize, Serialize};

use super::table::{Align, Table};
use super::{Report, TextOptions};
use crate::classify::Classified;
use crate::diff::{ClosureDiff, Drag, EdgeChange, PathChange};
use crate::evidence::Evidence;
use crate::graph::Graph;
use crate::problem::Problem;
use crate::store_path::name_of;
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
            let (edge, evidence, unavailable) = match (pc.referrer, pc.edge) {
                (None, _) => ("root", Vec::new(), false),
                (Some(_), EdgeChange::Renamed) => ("renamed", Vec::new(), false),
                (Some(r), EdgeChange::Changed) => (
                    if new { "new" } else { "gone" },
                    c.evidence(r, pc.node).to_vec(),
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
        }
    }
}

/// `share/doc/x/README (text, docs), lib/libx.so (elf-runpath, runtime)`:
/// each file once, with its holds' kinds and verdicts.
pub(crate) fn files_of(evidence: &[Evidence]) -> String {
    let mut files: Vec<(String, Vec<String>)> = Vec::new();
    for e in evidence {
        let file = if e.file.is_empty() { "." } else { &e.file };
        let tag = format!("{}, {}", e.kind.as_str(), e.verdict.as_str());
        match files.iter_mut().find(|(f, _)| f == file) {
            Some((_, tags)) if !tags.contains(&tag) => tags.push(tag),
            Some(_) => {}
            None => files.push((file.to_string(), vec![tag])),
        }
    }
    files
        .iter()
        .map(|(f, t)| format!("{f} ({})", t.join("; ")))
        .collect::<Vec<_>>()
        .join(", ")
}

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
        // BEFORE and AFTER often share a name: the hash tells them apart.
        let names = super::display_names(self.before.iter().chain(&self.after).map(String::as_str));
        let roots = |r: &[String]| {
            r.iter()
                .map(|p| names[p].as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = format!(
            "{} → {}\npaths {} → {}, closure {} → {} ({})\n",
            roots(&self.before),
            roots(&self.after),
            self.paths_before,
            self.paths_after,
            size(self.closure_size_before),
            size(self.closure_size_after),
            iec_delta(delta)
        );
        if self.packages.is_empty() {
            out.push_str("\nno package changed\n");
        } else {
            let mut t = Table::new(&[
                ("PACKAGE", Align::Left),
                ("VERSIONS", Align::Left),
                ("SIZE Δ", Align::Right),
            ]);
            for p in &self.packages {
                t.row(vec![
                    p.name.clone(),
                    p.transition.clone(),
                    iec_delta(p.size_delta),
                ]);
            }
            out.push('\n');
            out.push_str(&t.render());
        }
        let line = |out: &mut String, c: &ChangedPath, new: bool| {
            let name = name_of(&c.path);
            let sign = if new { "+" } else { "-" };
            let what = match (c.why.referrer.as_deref(), c.why.edge.as_str()) {
                (None, _) => {
                    if new {
                        "is a root".to_string()
                    } else {
                        "was a root".to_string()
                    }
                }
                (Some(r), "renamed") => {
                    let was: Vec<&str> = c.why.renamed.iter().map(|p| name_of(p)).collect();
                    let verb = if new { "replaces" } else { "replaced by" };
                    if was.is_empty() {
                        format!("{} references it as before", name_of(r))
                    } else {
                        format!(
                            "{verb} {}: {} references it as before",
                            was.join(", "),
                            name_of(r)
                        )
                    }
                }
                (Some(_), _) if !new && c.why.left_with.is_some() => {
                    let chain: Vec<&str> = c.why.left_chain.iter().map(|p| name_of(p)).collect();
                    format!(
                        "left with {} ({})",
                        name_of(c.why.left_with.as_deref().unwrap_or_default()),
                        chain.join(" → ")
                    )
                }
                (Some(r), _) => {
                    let held = if c.why.unavailable {
                        "(no file contents in this source)".to_string()
                    } else if c.why.evidence.is_empty() {
                        "(registered, but no occurrence found)".to_string()
                    } else {
                        format!("from {}", files_of(&c.why.evidence))
                    };
                    if new {
                        format!("is new: {} references it {held}", name_of(r))
                    } else {
                        format!(
                            "left: {} no longer references it (before, {held})",
                            name_of(r)
                        )
                    }
                }
            };
            let drags = match c.drags {
                Some(d) if new => format!("; drags in {} path(s), {}", d.paths, size(d.bytes)),
                Some(d) => format!("; {} path(s), {} gone with it", d.paths, size(d.bytes)),
                None => String::new(),
            };
            out.push_str(&format!(
                "  {name} ({sign}{}{drags}) {what}\n",
                size(c.nar_size)
            ));
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
        super::refs::append_problems(&mut out, &self.problems);
        out
    }
}
