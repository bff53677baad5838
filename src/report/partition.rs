//! The `partition` report: each group's cost, and the closure with only
//! the kept groups.

use serde::{Deserialize, Serialize};

use super::refs::append_problems;
use super::table::{Align, Table};
use super::{Report, TextOptions};
use crate::graph::{Graph, NodeId};
use crate::plan::partition::Partition;
use crate::problem::Problem;
use crate::units::iec;

/// One group of a partition.
/// One group of a partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupReport {
    /// The captured value.
    pub key: String,
    /// Files and symlinks in it.
    pub files: usize,
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
    /// With `--trace`: the groups with a file the traced workload used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traced_groups: Option<Vec<String>>,
    /// Files or paths that could not be read.
    pub problems: Vec<Problem>,
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
        let mut t = Table::new(&[
            ("GROUP", Align::Left),
            ("FILES", Align::Right),
            ("OWN", Align::Right),
            ("ADDS", Align::Right),
            ("ONLY IT REFERENCES", Align::Left),
        ]);
        t.wrap(4);
        for gr in &self.groups {
            t.row(vec![
                gr.key.clone(),
                gr.files.to_string(),
                iec(gr.own_size),
                iec(gr.added),
                gr.exclusive_references
                    .iter()
                    .map(|r| name(r))
                    .collect::<Vec<_>>()
                    .join(" "),
            ]);
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
        append_problems(&mut out, &self.problems, opts.width);
        out
    }
}
