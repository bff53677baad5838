//! The `split` report: each simulated output, each root's closure before
//! and after, and what each consumer keeps.

use serde::{Deserialize, Serialize};

use super::refs::append_problems;
use super::table::{Align, Table};
use super::{Report, TextOptions};
use nix_heft_analysis::plan::split::{Move, SplitPlan};
use nix_heft_graph::{Graph, NodeId};
use nix_heft_types::problem::Problem;
use nix_heft_types::units::iec;

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
    /// The existing output of the package the moved files join (its store
    /// path), `None` for `out` and for an output the split creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub existing: Option<String>,
    /// How that existing output was found (`deriver`, or `name`: assumed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_by: Option<nix_heft_analysis::plan::split::FoundBy>,
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
        path: NodeId,
        moves: Vec<Move>,
        plan: SplitPlan,
        problems: Vec<Problem>,
    ) -> SplitReport {
        let SplitPlan { sim, roots } = plan;
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
                references.sort_by(|a, b| {
                    let name = nix_heft_format::store_path::name_of;
                    name(a).cmp(name(b)).then_with(|| a.cmp(b))
                });
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
                        .filter(|e| {
                            !matches!(e.node, nix_heft_format::nar::tree::TreeNode::Directory)
                        })
                        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
                        .collect(),
                    nar_size: o.nar_size,
                    closure_size: c,
                    references,
                    existing: o.existing.map(|(n, _)| g.path(n).to_string()),
                    found_by: o.existing.map(|(_, f)| f),
                }
            })
            .collect();
        let mut warnings = sim.breaks.clone();
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
                .map(|r| RootImpact {
                    root: g.path(r.root).to_string(),
                    before: r.before,
                    after: r.after,
                })
                .collect(),
            consumers,
            warnings,
            problems,
        }
    }
}

impl Report for SplitReport {
    fn problems(&self) -> &[Problem] {
        &self.problems
    }

    fn render_text(&self, opts: &TextOptions) -> String {
        use super::table::Cell;
        let names = super::Names::new(
            [&self.path]
                .into_iter()
                .chain(self.outputs.iter().flat_map(|o| &o.references))
                .chain(self.roots.iter().map(|r| &r.root))
                .chain(self.consumers.iter().map(|c| &c.consumer))
                .map(String::as_str)
                .filter(|p| !p.starts_with("output:")),
        );
        let mut out = opts.style.paths(&super::style::fit_line(
            &format!("split of {}", self.path),
            opts.width,
        ));
        out.push_str("\n\n");
        let mut t = Table::new(&[
            ("OUTPUT", Align::Left),
            ("ENTRIES", Align::Right),
            ("NAR", Align::Right),
            ("CLOSURE", Align::Right),
            ("REFERENCES", Align::Left),
        ]);
        t.wrap(4);
        for o in &self.outputs {
            t.row(vec![
                o.name.clone(),
                o.entries.to_string(),
                iec(o.nar_size),
                iec(o.closure_size),
                o.references
                    .iter()
                    .map(|r| names.get(r).to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
            ]);
        }
        out.push_str(&t.render_fit(opts.width, opts.style));
        for o in &self.outputs {
            if let (Some(e), Some(f)) = (&o.existing, o.found_by) {
                out.push_str(&super::style::wrap_hanging(
                    &format!(
                        "{}: the package already has this output ({e}, {}): the moved files \
                         join its files, as moveToOutput into it does",
                        o.name,
                        f.describe()
                    ),
                    opts.width,
                    "",
                    "  ",
                ));
            }
        }
        render_roots(&mut out, &self.roots, &names, opts);
        if !self.consumers.is_empty() {
            out.push('\n');
            let mut t = Table::new(&[("CONSUMER", Align::Left), ("KEEPS", Align::Left)]);
            t.keep(0).wrap(1);
            for c in &self.consumers {
                t.cells(vec![
                    Cell::name(&names, &c.consumer),
                    Cell::from(c.keeps.join(",")),
                ]);
            }
            out.push_str(&t.render_fit(opts.width, opts.style));
        }
        for w in &self.warnings {
            out.push_str(&super::style::wrap_hanging(
                &format!("warning: {w}"),
                opts.width,
                "",
                "  ",
            ));
        }
        append_problems(&mut out, &self.problems, opts.width);
        out
    }
}

fn render_roots(out: &mut String, roots: &[RootImpact], names: &super::Names, opts: &TextOptions) {
    use super::table::Cell;
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
        t.cells(vec![
            Cell::name(names, &r.root),
            Cell::from(iec(r.before)),
            Cell::from(iec(r.after)),
            Cell::from(if saved >= 0 {
                format!("{} ({pct:.1}%)", iec(saved as u64))
            } else {
                format!("-{} ({pct:.1}%)", iec((-saved) as u64))
            }),
        ]);
    }
    out.push_str(&t.render_fit(opts.width, opts.style));
}
