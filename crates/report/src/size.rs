//! The `size` report: closure, self and added size of every path in the
//! closure of the roots, as [`Sizes`] computed them.

use nix_heft_analysis::check::Baseline;
use serde::{Deserialize, Serialize};

use super::table::{Align, Table};
use super::{Report, TextOptions};
use nix_heft_graph::{Graph, NodeId, Sizes};
use nix_heft_types::units::iec;

/// Sizes of one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathSizes {
    /// The store path.
    pub path: String,
    /// Its own NAR size (what `nix path-info -s` prints).
    pub nar_size: u64,
    /// Its closure size (what `nix path-info -S` prints).
    pub closure_size: u64,
    /// Bytes that leave the roots' closure if this path is no longer kept.
    pub added_size: u64,
    /// Registered references (itself included when it refers to itself, as
    /// Nix lists them); present with `--references`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub references: Option<Vec<String>>,
}

/// What to show in a [`SizeReport`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SizeOptions {
    /// Table order.
    pub sort: SortKey,
    /// Keep only the first N paths.
    pub top: Option<usize>,
    /// Include each path's references.
    pub references: bool,
}

/// The whole report; also the `--json` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeReport {
    /// The roots, as store paths.
    pub roots: Vec<String>,
    /// Size of the roots' combined closure.
    pub closure_size: u64,
    /// Number of paths in it.
    pub path_count: usize,
    /// One entry per path (all of them, or the first `--top`).
    pub paths: Vec<PathSizes>,
    /// The build graph (`--derivation`) only: derivations with outputs of
    /// unknown size (valid in no store asked), counted with the outputs
    /// that are known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_outputs: Vec<UnknownOutputs>,
}

impl SizeReport {
    /// A saved `nix-heft size --json` read back as `check`'s baseline.
    pub fn read_baseline(file: &std::path::Path) -> nix_heft_types::Result<Baseline> {
        let text = std::fs::read(file).map_err(nix_heft_types::error::io_err(file))?;
        let r: SizeReport =
            serde_json::from_slice(&text).map_err(|e| nix_heft_types::Error::BadBaseline {
                file: file.to_path_buf(),
                reason: format!("not the output of `nix-heft size --json`: {e}"),
            })?;
        Ok(Baseline::from_sizes(
            file.display().to_string(),
            r.closure_size,
            r.path_count,
            r.paths.into_iter().map(|p| p.path),
        ))
    }
}

/// A derivation whose outputs' sizes are not all known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnknownOutputs {
    /// The `.drv` path.
    pub derivation: String,
    /// The outputs of unknown size: `name` or `name path`.
    pub outputs: Vec<String>,
}

impl UnknownOutputs {
    /// The derivations of `g` among `unknown` (what the build-graph source
    /// found of no known size: `DerivationSource::unknown`, computed
    /// before this stage, which never reaches back into a store), in
    /// path order (those read for another graph, such as a diff's other
    /// side, left out).
    /// Each output comes labelled (`OutputSize::label`: `name path`, or
    /// `name`).
    pub fn of(
        unknown: Vec<(nix_heft_format::store_path::StorePath, Vec<String>)>,
        g: &nix_heft_graph::Graph,
    ) -> Vec<UnknownOutputs> {
        let index = g.index();
        unknown
            .into_iter()
            .filter(|(d, _)| index.contains_key(d))
            .map(|(d, outs)| UnknownOutputs {
                derivation: d.to_string(),
                outputs: outs,
            })
            .collect()
    }
}

/// Sort orders of the table; all but `Name` put the largest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    /// Added size.
    #[default]
    Added,
    /// Own NAR size.
    SelfSize,
    /// Closure size.
    Closure,
    /// Package name, then path.
    Name,
}

impl SizeReport {
    /// The table of `g`'s paths with their `sizes` (computed by the graph
    /// stage, [`Sizes::compute`]), sorted and cut as `opts` says.
    pub fn new(g: &Graph, sizes: &Sizes, opts: SizeOptions) -> SizeReport {
        let sort = opts.sort;
        let (closure, added) = (&sizes.closure, &sizes.added);
        let mut ids: Vec<NodeId> = (0..g.len() as NodeId).collect();
        let key = |v: &NodeId| -> u64 {
            let v = *v as usize;
            match sort {
                SortKey::Added => added[v],
                SortKey::SelfSize => g.nar_size(v as NodeId),
                SortKey::Closure | SortKey::Name => closure[v],
            }
        };
        if sort == SortKey::Name {
            ids.sort_by(|a, b| {
                let (pa, pb) = (g.path(*a), g.path(*b));
                pa.name().cmp(pb.name()).then_with(|| pa.cmp(pb))
            });
        } else {
            // Ties broken by path so the output is stable across runs.
            ids.sort_by(|a, b| key(b).cmp(&key(a)).then_with(|| g.path(*a).cmp(g.path(*b))));
        }
        if let Some(t) = opts.top {
            ids.truncate(t);
        }
        SizeReport {
            roots: g.roots().iter().map(|&r| g.path(r).to_string()).collect(),
            closure_size: sizes.total,
            path_count: g.len(),
            paths: ids
                .into_iter()
                .map(|v| PathSizes {
                    path: g.path(v).to_string(),
                    nar_size: g.nar_size(v),
                    closure_size: closure[v as usize],
                    added_size: added[v as usize],
                    references: opts.references.then(|| {
                        let mut r: Vec<String> = g
                            .references(v)
                            .iter()
                            .map(|&w| g.path(w).to_string())
                            .collect();
                        if g.references_self(v) {
                            r.push(g.path(v).to_string());
                        }
                        r.sort();
                        r
                    }),
                })
                .collect(),
            unknown_outputs: Vec::new(),
        }
    }
}

impl Report for SizeReport {
    /// The terminal rendering: a summary line, then the table.
    fn render_text(&self, opts: &TextOptions) -> String {
        let exact_bytes = opts.exact_bytes;
        let fmt = |b: u64| if exact_bytes { b.to_string() } else { iec(b) };
        let header = format!(
            "closure of {}: {} in {} paths",
            match self.roots.len() {
                1 => self.roots[0].clone(),
                n => format!("{n} roots"),
            },
            fmt(self.closure_size),
            self.path_count
        );
        let mut out = opts
            .style
            .paths(&super::style::wrap_hanging(&header, opts.width, "", "  "));
        out.push('\n');
        let with_refs = self.paths.iter().any(|p| p.references.is_some());
        let mut cols = vec![
            ("SELF", Align::Right),
            ("CLOSURE", Align::Right),
            ("ADDED", Align::Right),
        ];
        if with_refs {
            cols.push(("REFS", Align::Right));
        }
        cols.push(("PATH", Align::Left));
        let mut t = Table::new(&cols);
        let names = super::Names::new(
            self.roots
                .iter()
                .chain(self.paths.iter().map(|p| &p.path))
                .map(String::as_str),
        );
        for p in &self.paths {
            use super::table::{Cell, Paint};
            let mut row = vec![
                Cell::new(fmt(p.nar_size), Paint::Plain),
                Cell::new(fmt(p.closure_size), Paint::Plain),
                Cell::new(fmt(p.added_size), Paint::Size),
            ];
            if let Some(r) = &p.references {
                row.push(Cell::new(r.len().to_string(), Paint::Plain));
            }
            row.push(Cell::store_path(&names, &p.path));
            t.cells(row);
        }
        out.push_str(&t.render_fit(opts.width, opts.style));
        if self.paths.len() < self.path_count {
            out.push_str(&format!(
                "({} of {} paths shown)\n",
                self.paths.len(),
                self.path_count
            ));
        }
        if !self.unknown_outputs.is_empty() {
            out.push_str(&format!(
                "{} derivation(s) with outputs of unknown size (valid in no store this run read; \
                 counted as 0):\n",
                self.unknown_outputs.len()
            ));
            for u in &self.unknown_outputs {
                out.push_str(&format!("  {}: {}\n", u.derivation, u.outputs.join(", ")));
            }
        }
        out
    }
}
