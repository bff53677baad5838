//! The `trace` report: which paths of the workload's closure it touched
//! (files and bytes used or looked at, against the path's size), and which
//! it never touched.

use serde::{Deserialize, Serialize};

use super::refs::append_problems;
use super::table::{Align, Table};
use super::{Report, TextOptions};
use nix_heft_graph::Graph;
use nix_heft_trace::file::{PathTrace, TraceFile};
use nix_heft_types::problem::Problem;
use nix_heft_types::units::iec;

/// One store path of the closure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TracedPath {
    /// The store path.
    pub path: String,
    /// Files used (opened, executed, mapped).
    pub files_used: usize,
    /// Files only looked at (stat, access, readlink, listing, failed).
    pub files_looked_at: usize,
    /// Bytes of the distinct regular files used.
    pub bytes_used: u64,
    /// Bytes of the distinct regular files touched (used or looked at).
    pub bytes_touched: u64,
    /// The path's NAR size (0 when the store does not hold it).
    pub nar_size: u64,
}

/// The `trace` report; also its `--json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceReport {
    /// Where the trace was written.
    pub trace_file: String,
    /// The traced command.
    pub command: Vec<String>,
    /// Exit code of the first process, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that killed it, when one did.
    pub signal: Option<String>,
    /// False when the trace stopped early.
    pub complete: bool,
    /// Processes and threads traced.
    pub processes: u64,
    /// Paths that were used or looked at, most bytes touched first.
    pub touched: Vec<TracedPath>,
    /// Paths of the closure of the touched paths that were never touched.
    pub untouched: Vec<TracedPath>,
    /// Closure of the touched paths, in bytes.
    pub closure_size: u64,
    /// Touched store paths the store does not hold, and similar.
    pub problems: Vec<Problem>,
}

impl TraceReport {
    /// Assembles the report from the trace and the graph of the touched
    /// paths' closure as [`Graph::load`] reads it (`None` when the store
    /// could not be read): every path of the graph counts as in that
    /// closure, and the closure size is their sum.
    pub fn new(
        trace_file: &str,
        t: &TraceFile,
        g: Option<&Graph>,
        problems: Vec<Problem>,
    ) -> TraceReport {
        let index: std::collections::HashMap<&str, nix_heft_graph::NodeId> = g
            .map(|g| {
                g.index()
                    .into_iter()
                    .map(|(p, v)| (p.as_str(), v))
                    .collect()
            })
            .unwrap_or_default();
        let size_of = |p: &str| match (g, index.get(p)) {
            (Some(g), Some(&v)) => g.nar_size(v),
            _ => 0,
        };
        let row = |p: &str, pt: &PathTrace| TracedPath {
            path: p.to_string(),
            files_used: pt.files.values().filter(|f| f.used()).count(),
            files_looked_at: pt.files.values().filter(|f| !f.used()).count(),
            bytes_used: pt.bytes_used(),
            bytes_touched: pt.bytes_touched(),
            nar_size: size_of(p),
        };
        let mut touched: Vec<TracedPath> = t.paths.iter().map(|(p, pt)| row(p, pt)).collect();
        touched.sort_by(|a, b| {
            (b.bytes_used, b.bytes_touched)
                .cmp(&(a.bytes_used, a.bytes_touched))
                .then_with(|| a.path.cmp(&b.path))
        });
        let mut untouched = Vec::new();
        let closure_size = g.map_or(0, |g| g.total_size());
        if let Some(g) = g {
            // `g` is the touched paths' closure (`Graph::load` reads
            // nothing else), so each of its paths is in it.
            for (v, p) in (0..).zip(g.paths()) {
                if !t.paths.contains_key(p.as_str()) {
                    untouched.push(TracedPath {
                        path: p.to_string(),
                        files_used: 0,
                        files_looked_at: 0,
                        bytes_used: 0,
                        bytes_touched: 0,
                        nar_size: g.nar_size(v),
                    });
                }
            }
        }
        untouched.sort_by(|a, b| {
            b.nar_size
                .cmp(&a.nar_size)
                .then_with(|| a.path.cmp(&b.path))
        });
        TraceReport {
            trace_file: trace_file.to_string(),
            command: t.command.clone(),
            exit_code: t.exit.code,
            signal: t.exit.signal.clone(),
            complete: t.complete,
            processes: t.processes,
            touched,
            untouched,
            closure_size,
            problems,
        }
    }
}

impl Report for TraceReport {
    fn problems(&self) -> &[Problem] {
        &self.problems
    }

    fn render_text(&self, opts: &TextOptions) -> String {
        let ending = match (&self.exit_code, &self.signal) {
            (Some(c), _) => format!("exited with code {c}"),
            (None, Some(s)) => format!("killed by {s}"),
            (None, None) => "still running when the trace ended".to_string(),
        };
        use super::table::Cell;
        let names = super::Names::new(
            self.touched
                .iter()
                .map(|p| p.path.as_str())
                .chain(self.untouched.iter().map(|p| p.path.as_str())),
        );
        let mut out = super::style::wrap_hanging(
            &format!(
                "traced {} ({} process{}, {ending}){}; trace written to {}",
                self.command.first().map(String::as_str).unwrap_or(""),
                self.processes,
                if self.processes == 1 { "" } else { "es" },
                if self.complete { "" } else { ", partial trace" },
                self.trace_file
            ),
            opts.width,
            "",
            "  ",
        );
        out.push('\n');
        let mut t = Table::new(&[
            ("PATH", Align::Left),
            ("USED", Align::Right),
            ("LOOKED", Align::Right),
            ("BYTES USED", Align::Right),
            ("TOUCHED", Align::Right),
            ("OF", Align::Right),
        ]);
        t.keep(0);
        for p in &self.touched {
            t.cells(vec![
                Cell::name(&names, &p.path),
                Cell::from(p.files_used.to_string()),
                Cell::from(p.files_looked_at.to_string()),
                Cell::from(iec(p.bytes_used)),
                Cell::from(iec(p.bytes_touched)),
                Cell::from(if p.nar_size > 0 {
                    iec(p.nar_size)
                } else {
                    "?".into()
                }),
            ]);
        }
        out.push_str(&t.render_fit(opts.width, opts.style));
        if !self.untouched.is_empty() {
            let bytes: u64 = self.untouched.iter().map(|p| p.nar_size).sum();
            out.push('\n');
            out.push_str(&super::style::wrap_hanging(
                &format!(
                    "never touched ({} of {} paths, {} of the closure's {}):",
                    self.untouched.len(),
                    self.untouched.len() + self.touched.len(),
                    iec(bytes),
                    iec(self.closure_size)
                ),
                opts.width,
                "",
                "  ",
            ));
            let mut t = Table::new(&[("PATH", Align::Left), ("SIZE", Align::Right)]);
            t.keep(0);
            for p in &self.untouched {
                t.cells(vec![
                    Cell::name(&names, &p.path),
                    Cell::from(iec(p.nar_size)),
                ]);
            }
            out.push_str(&t.render_fit(opts.width, opts.style));
        }
        append_problems(&mut out, &self.problems, opts.width);
        out
    }
}
