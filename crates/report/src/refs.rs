//! The `refs` report: for every reference edge of a closure, what holds it.

use serde::{Deserialize, Serialize};

use super::table::{Align, Cell, Paint, Table};
use super::{Report, TextOptions};
use nix_heft_format::store_path::name_of;
use nix_heft_graph::{Graph, NodeId};
use nix_heft_scan::classify::Classified;
use nix_heft_types::problem::Problem;

/// One edge with its evidence summarised (computed by `explain`).
use nix_heft_analysis::explain::EdgeSummary;
use nix_heft_analysis::explain::summarise;

/// The whole report; also the `--json` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefsReport {
    /// The roots.
    pub roots: Vec<String>,
    /// Every edge of the closure (self references included).
    pub edges: Vec<EdgeSummary>,
    /// Files or paths that could not be read.
    pub problems: Vec<Problem>,
}

impl RefsReport {
    /// Builds the report from a scan of every edge.
    pub fn new(g: &Graph, scan: Classified, keep_evidence: bool) -> RefsReport {
        let mut edges = Vec::new();
        for v in 0..g.len() as NodeId {
            let mut targets = g.references(v).to_vec();
            if g.references_self(v) {
                targets.push(v);
            }
            targets.sort_by(|a, b| g.path(*a).name().cmp(g.path(*b).name()));
            for t in targets {
                edges.push(summarise(g, &scan, v, t, keep_evidence));
            }
        }
        edges.sort_by(|a, b| {
            (name_of(&a.referrer), name_of(&a.reference))
                .cmp(&(name_of(&b.referrer), name_of(&b.reference)))
        });
        RefsReport {
            roots: g.roots().iter().map(|&r| g.path(r).to_string()).collect(),
            edges,
            problems: scan.problems,
        }
    }
}

impl Report for RefsReport {
    fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The terminal rendering: one row per edge with its holds and verdict;
    /// with `--evidence`, every occurrence under the table.
    fn render_text(&self, opts: &TextOptions) -> String {
        let mut t = Table::new(&[
            ("REFERRER", Align::Left),
            ("REFERENCE", Align::Left),
            ("HELD BY", Align::Left),
            ("VERDICT", Align::Left),
            ("FILES", Align::Left),
        ]);
        t.keep(0).keep(1).wrap(2).wrap(3);
        let names = super::Names::new(
            self.roots
                .iter()
                .chain(self.edges.iter().flat_map(|e| [&e.referrer, &e.reference]))
                .map(String::as_str),
        );
        for e in &self.edges {
            let held = if e.unavailable {
                "unavailable (no file contents in this source)".to_string()
            } else if let Some(p) = &e.unreadable {
                format!("unreadable: {p}")
            } else if e.kinds.is_empty() {
                "NOT FOUND".to_string()
            } else {
                let mut s: Vec<String> = e
                    .kinds
                    .iter()
                    .map(|(k, n)| format!("{} x{n}", k.as_str()))
                    .collect();
                if e.dead {
                    s.push("(dead)".into());
                }
                match e.traced {
                    Some(nix_heft_types::evidence::Traced::Used) => s.push("(traced: used)".into()),
                    Some(nix_heft_types::evidence::Traced::NotUsed) => {
                        s.push("(traced: not used)".into())
                    }
                    None => {}
                }
                s.join(", ")
            };
            let verdict = match (e.verdict, &e.reason) {
                (Some(v), Some(r)) => Cell::new(format!("{}: {r}", v.as_str()), Paint::Verdict(v)),
                (Some(v), None) => Cell::new(v.as_str(), Paint::Verdict(v)),
                _ => Cell::new("-", Paint::Plain),
            };
            let files = match e.files.len() {
                0 => String::new(),
                1..=3 => e.files.join(" "),
                n => format!(
                    "{} {} {} (+{} more)",
                    e.files[0],
                    e.files[1],
                    e.files[2],
                    n - 3
                ),
            };
            t.cells(vec![
                Cell::name(&names, &e.referrer),
                Cell::name(&names, &e.reference),
                Cell::new(held, Paint::Plain),
                verdict,
                Cell::new(files, Paint::Plain),
            ]);
        }
        let mut out = t.render_fit(opts.width, opts.style);
        for e in &self.edges {
            let Some(evs) = e.evidence.as_ref().filter(|v| !v.is_empty()) else {
                continue;
            };
            out.push('\n');
            out.push_str(&opts.style.paths(&super::style::fit_line(
                &format!("{} → {}", names.get(&e.referrer), e.reference),
                opts.width,
            )));
            out.push('\n');
            out.push_str(&super::evidence_lines(
                evs,
                &[],
                &TextOptions {
                    every_line: true,
                    ..*opts
                },
            ));
        }
        append_problems(&mut out, &self.problems, opts.width);
        out
    }
}

/// Lists problems under a table, each wrapped to `width` when given.
pub(crate) fn append_problems(out: &mut String, problems: &[Problem], width: Option<usize>) {
    if problems.is_empty() {
        return;
    }
    out.push_str(&format!(
        "\n{} problem(s); the result is partial:\n",
        problems.len()
    ));
    for p in problems {
        out.push_str(&super::style::wrap_hanging(
            &p.display(),
            width,
            "  ",
            "    ",
        ));
    }
}
