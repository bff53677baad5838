//! `nix-heft history`'s report: a closure size per commit and attribute, a
//! sparkline of each, and the jumps explained as `impact` explains a
//! change.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::impact::{Context as ImpactContext, ImpactReport, SideMeta};
use crate::review::{self, Reviewed};
use crate::table::{Align, Table};
use crate::{Report, TextOptions, plural};
use nix_heft_core::history::{Cell, History};
use nix_heft_types::problem::Problem;
use nix_heft_types::units::{iec, iec_delta};

/// One attribute at one commit.
#[derive(Debug, Clone, Serialize)]
pub struct CellRow {
    /// `read`, `not-in-cache` or `eval-failed`.
    pub status: &'static str,
    /// Output name → out path, when it evaluated.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs: BTreeMap<String, String>,
    /// Closure size of all its outputs together, when read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closure_size: Option<u64>,
    /// Paths in that closure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closure_paths: Option<u64>,
    /// Change since the attribute's previous read commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<i128>,
    /// The outputs the stores lack.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Nix's message, when it did not evaluate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One commit.
#[derive(Debug, Clone, Serialize)]
pub struct CommitRow {
    /// The full hash.
    pub commit: String,
    /// Committer date (ISO 8601).
    pub date: String,
    /// The first line of its message.
    pub subject: String,
    /// Attribute → its cell.
    pub attrs: BTreeMap<String, CellRow>,
}

/// A jump, explained.
#[derive(Debug, Clone, Serialize)]
pub struct JumpRow {
    /// The attribute.
    pub attr: String,
    /// The earlier read commit.
    pub from: String,
    /// The later one.
    pub to: String,
    /// Closure size after minus before.
    pub delta: i128,
    /// The change between the two commits, as `impact` reports it.
    pub impact: ImpactReport,
}

/// `history`'s report.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryReport {
    /// The attributes, in the order asked.
    pub attributes: Vec<String>,
    /// The commits read, oldest first.
    pub commits: Vec<CommitRow>,
    /// The jumps, in commit order.
    pub jumps: Vec<JumpRow>,
    /// Commits in the range before sampling.
    pub commits_in_range: usize,
    /// Evaluations run.
    pub evaluations: usize,
    /// The stores read.
    pub stores: Vec<String>,
    /// The jump threshold, as given.
    pub min_jump: String,
    /// What could not be read.
    pub problems: Vec<Problem>,
}

/// What the caller knows beside the [`History`].
pub struct Context {
    /// The stores the outputs were looked up in.
    pub stores: Vec<String>,
    /// The jump threshold, as given.
    pub min_jump: String,
    /// The evaluating tool.
    pub evaluator: String,
}

fn short(id: &str) -> &str {
    &id[..id.len().min(10)]
}

impl HistoryReport {
    /// The report of `h`.
    pub fn new(h: &History, ctx: &Context) -> HistoryReport {
        let commits: Vec<CommitRow> = h
            .rows
            .iter()
            .map(|r| CommitRow {
                commit: r.commit.id.clone(),
                date: r.commit.date.clone(),
                subject: r.commit.subject.clone(),
                attrs: r
                    .cells
                    .iter()
                    .map(|(a, c)| (a.clone(), cell_row(c)))
                    .collect(),
            })
            .collect();
        let mut problems = Vec::new();
        let jumps = h
            .jumps
            .iter()
            .map(|j| {
                let side = |i: usize| SideMeta {
                    side: h.rows[i].commit.id.clone(),
                    commit: Some(h.rows[i].commit.id.clone()),
                    dirty: false,
                    stores: ctx.stores.clone(),
                };
                let impact = ImpactReport::new(
                    &j.impact,
                    &ImpactContext {
                        before: side(j.from),
                        after: side(j.to),
                        evaluator: ctx.evaluator.clone(),
                        build: &|_, _| String::new(),
                        notes: Vec::new(),
                    },
                    Vec::new(),
                );
                problems.extend(impact.problems.iter().cloned());
                JumpRow {
                    attr: j.attr.clone(),
                    from: h.rows[j.from].commit.id.clone(),
                    to: h.rows[j.to].commit.id.clone(),
                    delta: j.delta,
                    impact,
                }
            })
            .collect();
        HistoryReport {
            attributes: h.attrs.clone(),
            commits,
            jumps,
            commits_in_range: h.commits_in_range,
            evaluations: h.evaluations,
            stores: ctx.stores.clone(),
            min_jump: ctx.min_jump.clone(),
            problems,
        }
    }

    /// One line per attribute: its sizes over the commits as a sparkline
    /// (`·` where a commit was not read), with the smallest and largest.
    fn sparklines(&self, fmt: &dyn Fn(u64) -> String) -> Vec<String> {
        const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
        self.attributes
            .iter()
            .map(|a| {
                let sizes: Vec<Option<u64>> = self
                    .commits
                    .iter()
                    .map(|c| c.attrs.get(a).and_then(|x| x.closure_size))
                    .collect();
                let read: Vec<u64> = sizes.iter().flatten().copied().collect();
                let (Some(&lo), Some(&hi)) = (read.iter().min(), read.iter().max()) else {
                    return format!("{a}: no commit read");
                };
                let line: String = sizes
                    .iter()
                    .map(|s| match s {
                        None => '·',
                        Some(_) if hi == lo => BARS[0],
                        Some(s) => {
                            BARS[(((s - lo) as u128 * 7 + (hi - lo) as u128 / 2)
                                / (hi - lo) as u128) as usize]
                        }
                    })
                    .collect();
                format!(
                    "{a}  {line}  {} .. {} ({} of {} read)",
                    fmt(lo),
                    fmt(hi),
                    read.len(),
                    plural(sizes.len(), "commit")
                )
            })
            .collect()
    }

    fn cell_text(
        c: &CellRow,
        fmt: &dyn Fn(u64) -> String,
        delta: &dyn Fn(i128) -> String,
    ) -> String {
        match c.status {
            "read" => {
                let size = fmt(c.closure_size.unwrap_or(0));
                match c.delta {
                    Some(d) if d != 0 => format!("{size} ({})", delta(d)),
                    _ => size,
                }
            }
            // Which outputs, when only some are missing.
            "not-in-cache" if c.missing.len() < c.outputs.len() => {
                format!("not in the cache ({})", c.missing.join(", "))
            }
            "not-in-cache" => "not in the cache".to_string(),
            _ => "evaluation failed".to_string(),
        }
    }

    /// Nix's first `error:` line of a cell that did not evaluate (its
    /// trace and position are in the JSON).
    fn first_error(c: &CellRow) -> String {
        let msg = c.error.as_deref().unwrap_or("");
        let line = msg
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("error:"))
            .or_else(|| msg.lines().next())
            .unwrap_or("");
        line.strip_prefix("error:")
            .unwrap_or(line)
            .trim()
            .to_string()
    }

    /// Why cells did not evaluate, a line for each run of consecutive
    /// commits with the same message: "app at 13 commits (c081 .. c093):
    /// attribute 'libcoreX' missing".
    fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for a in &self.attributes {
            let mut run: Option<(String, usize, usize)> = None;
            let mut flush = |run: &mut Option<(String, usize, usize)>| {
                if let Some((msg, first, last)) = run.take() {
                    let at = if first == last {
                        format!("at {}", short(&self.commits[first].commit))
                    } else {
                        format!(
                            "at {} commits ({} .. {})",
                            last - first + 1,
                            short(&self.commits[first].commit),
                            short(&self.commits[last].commit)
                        )
                    };
                    out.push(format!("{a} {at}: {msg}"));
                }
            };
            for (i, c) in self.commits.iter().enumerate() {
                match c.attrs.get(a).filter(|x| x.status == "eval-failed") {
                    Some(x) => {
                        let msg = Self::first_error(x);
                        match &mut run {
                            Some((m, _, last)) if *m == msg && *last + 1 == i => *last = i,
                            _ => {
                                flush(&mut run);
                                run = Some((msg, i, i));
                            }
                        }
                    }
                    None => flush(&mut run),
                }
            }
            flush(&mut run);
        }
        out
    }

    fn headline(&self) -> String {
        let mut s = format!(
            "history of {} over {}",
            self.attributes.join(", "),
            plural(self.commits.len(), "commit")
        );
        if self.commits_in_range > self.commits.len() {
            s.push_str(&format!(" (sampled from {})", self.commits_in_range));
        }
        s.push_str(&format!(
            ", read from {} ({})",
            self.stores.join(", "),
            plural(self.evaluations, "evaluation")
        ));
        s
    }
}

fn cell_row(c: &Cell) -> CellRow {
    let outputs = |o: &BTreeMap<String, nix_heft_format::StorePath>| {
        o.iter().map(|(k, v)| (k.clone(), v.to_string())).collect()
    };
    match c {
        Cell::Read {
            outputs: o,
            closure_size,
            closure_paths,
            delta,
        } => CellRow {
            status: "read",
            outputs: outputs(o),
            closure_size: Some(*closure_size),
            closure_paths: Some(*closure_paths),
            delta: *delta,
            missing: Vec::new(),
            error: None,
        },
        Cell::NotInCache {
            outputs: o,
            missing,
        } => CellRow {
            status: "not-in-cache",
            outputs: outputs(o),
            closure_size: None,
            closure_paths: None,
            delta: None,
            missing: missing.clone(),
            error: None,
        },
        Cell::EvalFailed(m) => CellRow {
            status: "eval-failed",
            outputs: BTreeMap::new(),
            closure_size: None,
            closure_paths: None,
            delta: None,
            missing: Vec::new(),
            error: Some(m.clone()),
        },
    }
}

impl Report for HistoryReport {
    fn render_text(&self, opts: &TextOptions) -> String {
        let fmt = |b: u64| {
            if opts.exact_bytes {
                b.to_string()
            } else {
                iec(b)
            }
        };
        let delta = |d: i128| {
            if opts.exact_bytes {
                format!("{d:+}")
            } else {
                iec_delta(d)
            }
        };
        let wrap = |l: &str, first: &str, rest: &str| {
            crate::style::wrap_hanging(l, opts.width, first, rest)
        };
        let mut out = wrap(&self.headline(), "", "  ");
        for l in self.sparklines(&fmt) {
            out.push_str(&l);
            out.push('\n');
        }
        let mut header: Vec<(&str, Align)> = vec![
            ("DATE", Align::Left),
            ("COMMIT", Align::Left),
            ("SUBJECT", Align::Left),
        ];
        header.extend(self.attributes.iter().map(|a| (a.as_str(), Align::Right)));
        let mut t = Table::new(&header);
        t.wrap(2).keep(0).keep(1);
        for c in &self.commits {
            let mut cells = vec![
                c.date.get(..10).unwrap_or(&c.date).to_string(),
                short(&c.commit).to_string(),
                c.subject.clone(),
            ];
            cells.extend(self.attributes.iter().map(|a| {
                c.attrs
                    .get(a)
                    .map(|x| Self::cell_text(x, &fmt, &delta))
                    .unwrap_or_default()
            }));
            t.row(cells);
        }
        out.push('\n');
        out.push_str(&t.render_fit(opts.width, opts.style));
        let failures = self.failures();
        if !failures.is_empty() {
            out.push_str("\nevaluation failed:\n");
            for l in failures {
                out.push_str(&wrap(&l, "  ", "      "));
            }
        }
        if self.jumps.is_empty() {
            out.push_str(&format!("\nno jump of at least {}\n", self.min_jump));
        }
        for j in &self.jumps {
            out.push_str(&format!(
                "\n{}: {} between {} and {}:\n",
                j.attr,
                delta(j.delta),
                short(&j.from),
                short(&j.to)
            ));
            if let Some(a) = j.impact.attributes.first() {
                for l in j.impact.explained_lines(a, review::plain) {
                    out.push_str(&wrap(&l, "  ", "      "));
                }
            }
        }
        out
    }

    fn problems(&self) -> &[Problem] {
        &self.problems
    }
}

impl Reviewed for HistoryReport {
    fn render_markdown(&self, limit: usize) -> String {
        let fmt = |b: u64| iec(b);
        let mut out = format!(
            "{}\n### {}\n\n",
            review::MARKER,
            review::md(&self.headline())
        );
        for l in self.sparklines(&fmt) {
            out.push_str(&format!("`{}`  \n", l.replace('`', "'")));
        }
        out.push_str("\n| date | commit | subject |");
        for a in &self.attributes {
            out.push_str(&format!(" {} |", review::md(a)));
        }
        out.push_str("\n| --- | --- | --- |");
        for _ in &self.attributes {
            out.push_str(" ---: |");
        }
        out.push('\n');
        for c in &self.commits {
            out.push_str(&format!(
                "| {} | `{}` | {} |",
                c.date.get(..10).unwrap_or(&c.date),
                short(&c.commit),
                review::md(&c.subject).replace('|', "\\|")
            ));
            for a in &self.attributes {
                let text = c
                    .attrs
                    .get(a)
                    .map(|x| Self::cell_text(x, &fmt, &iec_delta))
                    .unwrap_or_default();
                out.push_str(&format!(" {} |", review::md(&text).replace('|', "\\|")));
            }
            out.push('\n');
        }
        let failures = self.failures();
        if !failures.is_empty() {
            out.push_str("\nEvaluation failed:\n\n");
            for l in failures {
                out.push_str(&format!("- {}\n", review::md(&l)));
            }
        }
        for j in &self.jumps {
            out.push_str(&format!(
                "\n**{}**: {} between `{}` and `{}`\n\n",
                review::md(&j.attr),
                iec_delta(j.delta),
                short(&j.from),
                short(&j.to)
            ));
            if let Some(a) = j.impact.attributes.first() {
                for l in j.impact.explained_lines(a, review::code) {
                    out.push_str(&format!("- {l}\n"));
                }
            }
        }
        if out.chars().count() > limit {
            let cut: String = out.chars().take(limit.saturating_sub(120)).collect();
            let cut = &cut[..cut.rfind('\n').unwrap_or(cut.len())];
            out = format!(
                "{cut}\n\n… cut at {limit} characters (--markdown-limit); --json has every commit\n"
            );
        }
        out
    }

    fn render_github(&self, _at: Option<&review::NixFile>) -> String {
        self.jumps
            .iter()
            .map(|j| {
                format!(
                    "::notice title=nix-heft history::{} {} between {} and {}\n",
                    j.attr,
                    iec_delta(j.delta),
                    short(&j.from),
                    short(&j.to)
                )
            })
            .collect()
    }
}
