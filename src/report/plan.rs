//! Reports of the what-if commands: `split` and `partition`.

use serde::{Deserialize, Serialize};

use super::refs::{append_problems, name};
use super::table::{Align, Table};
use crate::graph::{Graph, NodeId};
use crate::plan::partition::Partition;
use crate::plan::split::{Move, Simulation};
use crate::plan::whatif::WhatIf;
use crate::scan::Problem;
use crate::units::iec;

/// One simulated output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputReport {
    /// Output name (`out`, `dev` ...).
    pub name: String,
    /// Number of entries (files, symlinks, directories).
    pub entries: usize,
    /// The files and symlinks it would hold (relative paths).
    pub files: Vec<String>,
    /// NAR size it would have.
    pub nar_size: u64,
    /// Closure size it would have.
    pub closure_size: u64,
    /// What it would reference: store paths, and `output:NAME` for another
    /// output of the split.
    pub references: Vec<String>,
}

/// A root's closure before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootImpact {
    /// The root.
    pub root: String,
    /// Closure size now.
    pub before: u64,
    /// Closure size after the change.
    pub after: u64,
}

/// What one direct consumer of the split path would keep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerReport {
    /// The consumer.
    pub consumer: String,
    /// Outputs it keeps referencing.
    pub keeps: Vec<String>,
    /// Files it uses at run time that would leave `out`, with their output.
    pub runtime_files_moved: Vec<(String, String)>,
}

/// The `split` report; also its `--json` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitReport {
    /// The path split.
    pub path: String,
    /// The moves applied, in order.
    pub moves: Vec<Move>,
    /// The outputs, `out` first.
    pub outputs: Vec<OutputReport>,
    /// Each root's closure before and after.
    pub roots: Vec<RootImpact>,
    /// Each direct consumer.
    pub consumers: Vec<ConsumerReport>,
    /// Consumers that would lose a file they use at run time.
    pub warnings: Vec<String>,
    /// Files or paths that could not be read.
    pub problems: Vec<Problem>,
}

impl SplitReport {
    /// Assembles the report.
    pub fn new(
        g: &Graph,
        w: &WhatIf<'_>,
        path: NodeId,
        moves: Vec<Move>,
        sim: Simulation,
        roots: &[NodeId],
    ) -> SplitReport {
        let outputs = sim
            .outputs
            .iter()
            .zip(&sim.output_closures)
            .map(|(o, &c)| {
                let mut references: Vec<String> = o
                    .references
                    .iter()
                    .map(|&r| g.path(r).to_string())
                    .collect();
                references.extend(
                    o.output_refs
                        .iter()
                        .map(|&j| format!("output:{}", sim.outputs[j].name)),
                );
                OutputReport {
                    name: o.name.clone(),
                    entries: o.tree.entries.len(),
                    files: o
                        .tree
                        .entries
                        .iter()
                        .filter(|e| !matches!(e.node, crate::plan::tree::TreeNode::Directory))
                        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
                        .collect(),
                    nar_size: o.nar_size,
                    closure_size: c,
                    references,
                }
            })
            .collect();
        let base = WhatIf::new(g);
        let mut warnings = Vec::new();
        let consumers = sim
            .consumers
            .iter()
            .map(|cons| {
                let (c, keeps, moved) = (&cons.node, &cons.keeps, &cons.moved_runtime);
                for (f, o) in moved {
                    warnings.push(format!(
                        "{} uses {f} at run time; after the split it needs output '{}'",
                        g.path(*c),
                        sim.outputs[*o].name
                    ));
                }
                ConsumerReport {
                    consumer: g.path(*c).to_string(),
                    keeps: keeps.iter().map(|&o| sim.outputs[o].name.clone()).collect(),
                    runtime_files_moved: moved
                        .iter()
                        .map(|(f, o)| (f.clone(), sim.outputs[*o].name.clone()))
                        .collect(),
                }
            })
            .collect();
        SplitReport {
            path: g.path(path).to_string(),
            moves,
            outputs,
            roots: roots
                .iter()
                .map(|&r| RootImpact {
                    root: g.path(r).to_string(),
                    before: base.closure_size(&[r]),
                    after: w.closure_size(&[r]),
                })
                .collect(),
            consumers,
            warnings,
            problems: sim.problems,
        }
    }

    /// Terminal rendering.
    pub fn render(&self) -> String {
        let mut out = format!("split of {}\n\n", self.path);
        let mut t = Table::new(&[
            ("OUTPUT", Align::Left),
            ("ENTRIES", Align::Right),
            ("NAR", Align::Right),
            ("CLOSURE", Align::Right),
            ("REFERENCES", Align::Left),
        ]);
        for o in &self.outputs {
            t.row(vec![
                o.name.clone(),
                o.entries.to_string(),
                iec(o.nar_size),
                iec(o.closure_size),
                o.references
                    .iter()
                    .map(|r| name(r).to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
            ]);
        }
        out.push_str(&t.render());
        render_roots(&mut out, &self.roots);
        if !self.consumers.is_empty() {
            out.push('\n');
            let mut t = Table::new(&[("CONSUMER", Align::Left), ("KEEPS", Align::Left)]);
            for c in &self.consumers {
                t.row(vec![name(&c.consumer).to_string(), c.keeps.join(",")]);
            }
            out.push_str(&t.render());
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        append_problems(&mut out, &self.problems);
        out
    }
}

fn render_roots(out: &mut String, roots: &[RootImpact]) {
    if roots.is_empty() {
        return;
    }
    out.push('\n');
    let mut t = Table::new(&[
        ("ROOT", Align::Left),
        ("BEFORE", Align::Right),
        ("AFTER", Align::Right),
        ("SAVED", Align::Right),
    ]);
    for r in roots {
        let saved = r.before as i128 - r.after as i128;
        let pct = if r.before > 0 {
            saved as f64 * 100.0 / r.before as f64
        } else {
            0.0
        };
        t.row(vec![
            name(&r.root).to_string(),
            iec(r.before),
            iec(r.after),
            if saved >= 0 {
                format!("{} ({pct:.1}%)", iec(saved as u64))
            } else {
                format!("-{} ({pct:.1}%)", iec((-saved) as u64))
            },
        ]);
    }
    out.push_str(&t.render());
}

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
            keep,
            closure_after_keep: p.after_keep,
            nar_size_after_keep: p.kept_nar_size,
            references_after_keep: p
                .kept_refs
                .map(|r| r.iter().map(|&v| g.path(v).to_string()).collect()),
            problems: p.problems,
        }
    }

    /// Terminal rendering.
    pub fn render(&self) -> String {
        let mut out = format!(
            "{} by /{}/: {} groups, {} entries in no group; closure of {} now {}\n\n",
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
        let mut t = Table::new(&[
            ("GROUP", Align::Left),
            ("FILES", Align::Right),
            ("OWN", Align::Right),
            ("ADDS", Align::Right),
            ("ONLY IT REFERENCES", Align::Left),
        ]);
        for gr in &self.groups {
            t.row(vec![
                gr.key.clone(),
                gr.files.to_string(),
                iec(gr.own_size),
                iec(gr.added),
                gr.exclusive_references
                    .iter()
                    .map(|r| name(r).to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
            ]);
        }
        out.push_str(&t.render());
        if let (Some(k), Some(after)) = (&self.keep, self.closure_after_keep) {
            let saved = self.closure_before.saturating_sub(after);
            out.push_str(&format!(
                "\nkeeping only {}: closure {} → {} (saves {}, {:.1}%)\n",
                k.join(","),
                iec(self.closure_before),
                iec(after),
                iec(saved),
                if self.closure_before > 0 {
                    saved as f64 * 100.0 / self.closure_before as f64
                } else {
                    0.0
                }
            ));
        }
        append_problems(&mut out, &self.problems);
        out
    }
}
