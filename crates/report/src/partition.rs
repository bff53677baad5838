//! The `partition` report: each group's cost, and the closure with only
//! the kept groups.

use serde::{Deserialize, Serialize};

use super::refs::append_problems;
use super::table::{Align, Cell, Paint, Table};
use super::{Report, TextOptions};
use nix_heft_analysis::plan::partition::Partition;
use nix_heft_format::store_path::name_of;
use nix_heft_graph::{Graph, NodeId};
use nix_heft_types::problem::Problem;
use nix_heft_types::units::iec;

/// One group of a partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupReport {
    /// The captured value.
    pub key: String,
    /// Files and symlinks in it.
    pub files: usize,
    /// Of those, the links that stay when it is dropped (they point into a
    /// path the other files still reference).
    #[serde(default)]
    pub kept_anyway: usize,
    /// NAR bytes it takes in the path.
    pub own_size: u64,
    /// Bytes that leave the roots' closure without it.
    pub added: u64,
    /// Every reference its files hold.
    pub references: Vec<String>,
    /// References held only by its files.
    pub exclusive_references: Vec<String>,
}

/// The `partition` report; also its `--json` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionReport {
    /// The path partitioned.
    pub path: String,
    /// The regex.
    pub by: String,
    /// The roots whose closure is measured.
    pub roots: Vec<String>,
    /// Groups, largest `added` first.
    pub groups: Vec<GroupReport>,
    /// Files and symlinks in no group (always kept).
    pub ungrouped: usize,
    /// Closure of the roots now.
    pub closure_before: u64,
    /// The groups kept with `--keep`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep: Option<Vec<String>>,
    /// Closure of the roots with only the kept groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closure_after_keep: Option<u64>,
    /// The path's NAR size with only the kept groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nar_size_after_keep: Option<u64>,
    /// The path's references with only the kept groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub references_after_keep: Option<Vec<String>>,
    /// With `--keep`: files of the other groups that stay all the same,
    /// and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_anyway: Vec<KeptAnywayReport>,
    /// With `--trace`: the groups with a file the traced workload used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traced_groups: Option<Vec<String>>,
    /// Files or paths that could not be read.
    pub problems: Vec<Problem>,
}

/// A file that matched a group not kept but stays: a link into a path that
/// stays referenced, which the per-target build links as before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptAnywayReport {
    /// The link, relative to the path.
    pub file: String,
    /// The group it matched.
    pub group: String,
    /// The store path it links into.
    pub links_into: String,
    /// The first few remaining files that hold `links_into` (why it stays).
    pub needed_by: Vec<NeededBy>,
    /// How many remaining files hold it in all.
    pub needed_by_count: usize,
    /// The same, in one line.
    pub reason: String,
}

/// A file that keeps a path in the closure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeededBy {
    /// Relative to the partitioned path.
    pub file: String,
    /// Its group; `None` when it is in no group.
    pub group: Option<String>,
}

/// How many of the files that hold a kept link's target the report names.
const NEEDED_BY_SHOWN: usize = 3;

/// "A (gfx90a), B (no group) and 2 more files".
fn needed_text(needed_by: &[NeededBy], total: usize) -> String {
    let named: Vec<String> = needed_by
        .iter()
        .map(|n| format!("{} ({})", n.file, n.group.as_deref().unwrap_or("no group")))
        .collect();
    let more = total.saturating_sub(named.len());
    format!(
        "{}{}",
        named.join(", "),
        if more > 0 {
            format!(" and {more} more file{}", if more == 1 { "" } else { "s" })
        } else {
            String::new()
        }
    )
}

impl PartitionReport {
    /// Assembles the report.
    pub fn new(
        g: &Graph,
        path: NodeId,
        by: &str,
        keep: Option<Vec<String>>,
        roots: &[NodeId],
        p: Partition,
        problems: Vec<Problem>,
    ) -> PartitionReport {
        PartitionReport {
            path: g.path(path).to_string(),
            by: by.to_string(),
            roots: roots.iter().map(|&r| g.path(r).to_string()).collect(),
            groups: p
                .groups
                .iter()
                .map(|gr| GroupReport {
                    key: gr.key.clone(),
                    files: gr.files.len(),
                    kept_anyway: gr.kept_anyway.len(),
                    own_size: gr.own_size,
                    added: gr.added,
                    references: gr.refs.iter().map(|&r| g.path(r).to_string()).collect(),
                    exclusive_references: gr
                        .exclusive_refs
                        .iter()
                        .map(|&r| g.path(r).to_string())
                        .collect(),
                })
                .collect(),
            ungrouped: p.ungrouped,
            closure_before: p.before,
            keep: p.kept.clone().or(keep),
            closure_after_keep: p.after_keep,
            nar_size_after_keep: p.kept_nar_size,
            references_after_keep: p
                .kept_refs
                .map(|r| r.iter().map(|&v| g.path(v).to_string()).collect()),
            kept_anyway: p
                .kept_anyway
                .iter()
                .map(|k| {
                    let into = g.path(k.into).to_string();
                    let needed_by: Vec<NeededBy> = k
                        .needed_by
                        .iter()
                        .take(NEEDED_BY_SHOWN)
                        .map(|(f, gr)| NeededBy {
                            file: String::from_utf8_lossy(f).into_owned(),
                            group: gr.clone(),
                        })
                        .collect();
                    KeptAnywayReport {
                        file: String::from_utf8_lossy(&k.file).into_owned(),
                        group: k.group.clone(),
                        reason: format!(
                            "links into {}, which stays: needed by {}",
                            name_of(&into),
                            needed_text(&needed_by, k.needed_by.len())
                        ),
                        links_into: into,
                        needed_by,
                        needed_by_count: k.needed_by.len(),
                    }
                })
                .collect(),
            traced_groups: None,
            problems,
        }
    }
}

impl Report for PartitionReport {
    fn problems(&self) -> &[Problem] {
        &self.problems
    }

    fn render_text(&self, opts: &TextOptions) -> String {
        let names = super::Names::new(
            [&self.path]
                .into_iter()
                .chain(&self.roots)
                .chain(self.groups.iter().flat_map(|g| &g.exclusive_references))
                .map(String::as_str),
        );
        let name = |p: &'_ str| names.get(p).to_string();
        let header = format!(
            "{} by /{}/: {} groups, {} entries in no group; closure of {}: {}",
            name(&self.path),
            self.by,
            self.groups.len(),
            self.ungrouped,
            self.roots
                .iter()
                .map(|r| name(r))
                .collect::<Vec<_>>()
                .join(", "),
            iec(self.closure_before)
        );
        let mut out = opts
            .style
            .paths(&super::style::wrap_hanging(&header, opts.width, "", "  "));
        out.push('\n');
        // A KEPT column only when a group has links that stay (a farm with
        // a shared path); other partitions keep the table as it was.
        let with_kept = self.groups.iter().any(|g| g.kept_anyway > 0);
        let mut cols = vec![("GROUP", Align::Left), ("FILES", Align::Right)];
        if with_kept {
            cols.push(("KEPT", Align::Right));
        }
        cols.extend([
            ("OWN", Align::Right),
            ("ADDS", Align::Right),
            ("ONLY IT REFERENCES", Align::Left),
        ]);
        let mut t = Table::new(&cols);
        // The last column (what only the group references) wraps.
        t.wrap(cols.len() - 1);
        for gr in &self.groups {
            let mut row = vec![gr.key.clone(), gr.files.to_string()];
            if with_kept {
                row.push(gr.kept_anyway.to_string());
            }
            row.extend([
                iec(gr.own_size),
                iec(gr.added),
                gr.exclusive_references
                    .iter()
                    .map(|r| name(r))
                    .collect::<Vec<_>>()
                    .join(" "),
            ]);
            t.row(row);
        }
        out.push_str(&t.render_fit(opts.width, opts.style));
        if let Some(tg) = &self.traced_groups {
            let untouched: Vec<&str> = self
                .groups
                .iter()
                .map(|g| g.key.as_str())
                .filter(|k| !tg.iter().any(|t| t == k))
                .collect();
            out.push('\n');
            out.push_str(&super::style::wrap_hanging(
                &format!(
                    "the trace used: {}; never used: {}",
                    if tg.is_empty() {
                        "none".to_string()
                    } else {
                        tg.join(", ")
                    },
                    if untouched.is_empty() {
                        "none".to_string()
                    } else {
                        untouched.join(", ")
                    }
                ),
                opts.width,
                "",
                "  ",
            ));
        }
        if let (Some(k), Some(after)) = (&self.keep, self.closure_after_keep) {
            let saved = self.closure_before.saturating_sub(after);
            out.push('\n');
            out.push_str(&super::style::wrap_hanging(
                &format!(
                    "keeping only {}: closure would be {} → {} (saves {}, {:.1}%)",
                    k.join(","),
                    iec(self.closure_before),
                    iec(after),
                    iec(saved),
                    if self.closure_before > 0 {
                        saved as f64 * 100.0 / self.closure_before as f64
                    } else {
                        0.0
                    }
                ),
                opts.width,
                "",
                "  ",
            ));
        }
        if with_kept && self.keep.is_none() {
            out.push('\n');
            out.push_str(&super::style::wrap_hanging(
                "KEPT: links of the group that stay when it is dropped: they point into a path \
                 the other files still reference, which a per-target build links as before",
                opts.width,
                "",
                "  ",
            ));
        }
        // The kept links, by the path they point into: why each stays.
        let mut by_into: Vec<(&str, Vec<&KeptAnywayReport>)> = Vec::new();
        for k in &self.kept_anyway {
            match by_into.iter_mut().find(|(i, _)| *i == k.links_into) {
                Some((_, v)) => v.push(k),
                None => by_into.push((&k.links_into, vec![k])),
            }
        }
        for (into, ks) in &by_into {
            let n = ks.len();
            out.push('\n');
            out.push_str(&super::style::wrap_hanging(
                &format!(
                    "kept although they match the pattern: {n} link{} into {}, which stays: \
                     the files that stay need it; a link into a path that stays costs only the link",
                    if n == 1 { "" } else { "s" },
                    name(into),
                ),
                opts.width,
                "",
                "  ",
            ));
            let mut t = Table::new(&[
                ("  GROUP", Align::Left),
                ("", Align::Left),
                ("FILE", Align::Left),
            ]);
            let row = |t: &mut Table, group: &str, what: &str, file: &str| {
                t.cells(vec![
                    Cell::from(format!("  {group}")),
                    Cell::from(what.to_string()),
                    Cell::new(file, Paint::Path),
                ])
            };
            for k in ks {
                row(&mut t, &k.group, "kept", &k.file);
            }
            let first = ks[0];
            for nb in &first.needed_by {
                row(
                    &mut t,
                    nb.group.as_deref().unwrap_or("no group"),
                    "needs it",
                    &nb.file,
                );
            }
            let more = first.needed_by_count.saturating_sub(first.needed_by.len());
            if more > 0 {
                row(
                    &mut t,
                    "",
                    "needs it",
                    &format!("and {more} more file{}", if more == 1 { "" } else { "s" }),
                );
            }
            out.push_str(&t.render_fit(opts.width, opts.style));
        }
        append_problems(&mut out, &self.problems, opts.width);
        out
    }
}
