//! `nix-heft history`'s report: a closure size per commit and attribute, a
//! sparkline of each, and the jumps explained as `impact` explains a
//! change.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::drv_diff::DrvDiffReport;
use crate::impact::{ImpactMeta, ImpactReport, SideMeta};
use crate::review::{self, Reviewed};
use crate::table::{Align, Table};
use crate::{Report, TextOptions, plural};
use nix_heft_ops::history::{Cell, History};
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

/// The characters a jump's derivation section may take in markdown: the
/// root causes fit, the derivations that only followed them are cut.
const DERIVATION_MARKDOWN: usize = 4000;

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
    /// The two commits' derivations compared, as `diff --derivation`
    /// reports them: the root causes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub derivation: Option<DrvDiffReport>,
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
    /// Instantiations for the jumps' derivations.
    pub instantiations: usize,
    /// The stores read.
    pub stores: Vec<String>,
    /// The jump threshold, as given.
    pub min_jump: String,
    /// A commit's link, `{commit}` for its hash (markdown and the page).
    #[serde(skip)]
    pub commit_url: Option<String>,
    /// The HTML page written, when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    /// What could not be read.
    pub problems: Vec<Problem>,
}

/// What the caller knows beside the [`History`].
pub struct HistoryMeta {
    /// The stores the outputs were looked up in.
    pub stores: Vec<String>,
    /// The jump threshold, as given.
    pub min_jump: String,
    /// The evaluating tool.
    pub evaluator: String,
}

/// A commit's hash as the reports show it: its first 10 characters (git's
/// `--abbrev=10`, unambiguous in nixpkgs).
pub(crate) fn short(id: &str) -> &str {
    &id[..id.len().min(10)]
}

impl HistoryReport {
    /// The report of `h`.
    pub fn new(h: &History, ctx: &HistoryMeta) -> HistoryReport {
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
                    &ImpactMeta {
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
                    derivation: j.derivation.as_ref().map(DrvDiffReport::new),
                }
            })
            .collect();
        HistoryReport {
            attributes: h.attrs.clone(),
            commits,
            jumps,
            commits_in_range: h.commits_in_range,
            evaluations: h.evaluations,
            instantiations: h.instantiations,
            stores: ctx.stores.clone(),
            min_jump: ctx.min_jump.clone(),
            commit_url: None,
            page: None,
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
                        let msg =
                            nix_heft_format::nix_error::headline(x.error.as_deref().unwrap_or(""))
                                .to_string();
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
            ", read from {} ({}",
            self.stores.join(", "),
            plural(self.evaluations, "evaluation")
        ));
        if self.instantiations > 0 {
            s.push_str(&format!(
                ", {}",
                plural(self.instantiations, "instantiation")
            ));
        }
        s.push(')');
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
            if let Some(d) = &j.derivation {
                let inner = TextOptions {
                    width: opts.width.map(|w| w.saturating_sub(2).max(40)),
                    ..*opts
                };
                for l in d
                    .render_text(&inner)
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                {
                    out.push_str(&format!("  {l}\n"));
                }
            }
        }
        if let Some(p) = &self.page {
            out.push_str(&format!("\nwrote {p}\n"));
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
            let commit = match &self.commit_url {
                Some(t) => format!(
                    "[`{}`]({})",
                    short(&c.commit),
                    t.replace("{commit}", &c.commit)
                ),
                None => format!("`{}`", short(&c.commit)),
            };
            out.push_str(&format!(
                "| {} | {commit} | {} |",
                c.date.get(..10).unwrap_or(&c.date),
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
            if let Some(d) = &j.derivation {
                out.push_str(&d.render_markdown(DERIVATION_MARKDOWN));
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

impl HistoryReport {
    /// A self-contained page: per attribute a chart of its closure size
    /// over the commits (an SVG drawn here, no script: each commit read a
    /// point linked to the commit, with its date, subject and size as its
    /// title; the others marks on the axis), its jumps explained, and a
    /// table of every commit as the accessible view. `commit_url` turns a
    /// hash into a link (`{commit}` replaced).
    pub fn render_html(&self, commit_url: Option<&str>) -> String {
        use crate::html::html_escape as esc;
        const TEMPLATE: &str = include_str!("../../../assets/report/history.html");
        const CSS: &str = include_str!("../../../assets/report/report.css");
        const W: f64 = 1000.0;
        const H: f64 = 260.0;
        const PAD: f64 = 40.0;
        // Room on the left for the size labels.
        const LEFT: f64 = 100.0;
        let link = |id: &str| commit_url.map(|t| t.replace("{commit}", id));
        let n = self.commits.len().max(1);
        let x = |i: usize| {
            if n == 1 {
                W / 2.0
            } else {
                LEFT + (W - LEFT - PAD) * i as f64 / (n - 1) as f64
            }
        };
        let mut body = String::new();
        for a in &self.attributes {
            let sizes: Vec<Option<u64>> = self
                .commits
                .iter()
                .map(|c| c.attrs.get(a).and_then(|x| x.closure_size))
                .collect();
            let read: Vec<u64> = sizes.iter().flatten().copied().collect();
            let lo = read.iter().copied().min().unwrap_or(0);
            let hi = read.iter().copied().max().unwrap_or(0);
            let y = |s: u64| {
                if hi == lo {
                    H / 2.0
                } else {
                    H - PAD - (H - 2.0 * PAD) * (s - lo) as f64 / (hi - lo) as f64
                }
            };
            let jump_to: Vec<&str> = self
                .jumps
                .iter()
                .filter(|j| &j.attr == a)
                .map(|j| j.to.as_str())
                .collect();
            body.push_str(&format!(
                "<section aria-labelledby=\"h-{id}\">\n<h2 id=\"h-{id}\">{name}</h2>\n\
                 <svg class=\"chart\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"closure size of {name} over {n} commits, {lo_s} to {hi_s}\">\n\
                 <line class=\"axis\" x1=\"{LEFT}\" y1=\"{ax}\" x2=\"{x2}\" y2=\"{ax}\"/>\n\
                 <text x=\"2\" y=\"{yt}\">{hi_s}</text><text x=\"2\" y=\"{yb}\">{lo_s}</text>\n",
                id = esc(a).replace(['.', ' '], "-"),
                name = esc(a),
                lo_s = iec(lo),
                hi_s = iec(hi),
                ax = H - PAD / 2.0,
                x2 = W - PAD,
                yt = PAD,
                yb = H - PAD,
            ));
            let points: Vec<String> = sizes
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.map(|s| format!("{:.1},{:.1}", x(i), y(s))))
                .collect();
            if points.len() > 1 {
                body.push_str(&format!(
                    "<polyline class=\"line\" points=\"{}\"/>\n",
                    points.join(" ")
                ));
            }
            for (i, c) in self.commits.iter().enumerate() {
                let Some(cell) = c.attrs.get(a) else { continue };
                let title = esc(&format!(
                    "{} {} {}: {}",
                    c.date.get(..10).unwrap_or(&c.date),
                    short(&c.commit),
                    c.subject,
                    Self::cell_text(cell, &iec, &iec_delta)
                ));
                let mark = match cell.closure_size {
                    Some(s) => format!(
                        "<circle class=\"{}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\"><title>{title}</title></circle>",
                        if jump_to.contains(&c.commit.as_str()) {
                            "point jump"
                        } else {
                            "point"
                        },
                        x(i),
                        y(s)
                    ),
                    None => format!(
                        "<line class=\"{}\" x1=\"{x:.1}\" y1=\"{y1}\" x2=\"{x:.1}\" y2=\"{y2}\"><title>{title}</title></line>",
                        if cell.status == "eval-failed" {
                            "failed"
                        } else {
                            "unread"
                        },
                        x = x(i),
                        y1 = H - PAD / 2.0 - 4.0,
                        y2 = H - PAD / 2.0 + 4.0,
                    ),
                };
                match (cell.closure_size, link(&c.commit)) {
                    (Some(_), Some(url)) => body.push_str(&format!(
                        "<a href=\"{}\" aria-label=\"{title}\">{mark}</a>\n",
                        esc(&url)
                    )),
                    _ => {
                        body.push_str(&mark);
                        body.push('\n');
                    }
                }
            }
            body.push_str("</svg>\n");
            let jumps: Vec<&JumpRow> = self.jumps.iter().filter(|j| &j.attr == a).collect();
            if !jumps.is_empty() {
                body.push_str("<h3>Jumps</h3>\n<ol class=\"jumps\">\n");
                for j in jumps {
                    body.push_str(&format!(
                        "<li><strong>{}</strong> between {} and {}<ul>\n",
                        esc(&iec_delta(j.delta)),
                        commit_cell(&j.from, &link),
                        commit_cell(&j.to, &link)
                    ));
                    if let Some(row) = j.impact.attributes.first() {
                        for l in j.impact.explained_lines(row, review::plain) {
                            body.push_str(&format!("<li>{}</li>\n", esc(&l)));
                        }
                    }
                    if let Some(d) = &j.derivation {
                        body.push_str(&format!(
                            "<li class=\"derivation\"><pre>{}</pre></li>\n",
                            esc(d.render_text(&TextOptions::default()).trim())
                        ));
                    }
                    body.push_str("</ul></li>\n");
                }
                body.push_str("</ol>\n");
            }
            body.push_str("</section>\n");
        }
        body.push_str("<h2>Commits</h2>\n<table class=\"commits\">\n<thead><tr><th>date</th><th>commit</th><th>subject</th>");
        for a in &self.attributes {
            body.push_str(&format!("<th>{}</th>", esc(a)));
        }
        body.push_str("</tr></thead>\n<tbody>\n");
        for c in &self.commits {
            body.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td>",
                esc(c.date.get(..10).unwrap_or(&c.date)),
                commit_cell(&c.commit, &link),
                esc(&c.subject)
            ));
            for a in &self.attributes {
                let text = c
                    .attrs
                    .get(a)
                    .map(|x| Self::cell_text(x, &iec, &iec_delta))
                    .unwrap_or_default();
                body.push_str(&format!("<td class=\"size\">{}</td>", esc(&text)));
            }
            body.push_str("</tr>\n");
        }
        body.push_str("</tbody>\n</table>\n");
        TEMPLATE
            .replace("{{TITLE}}", &esc(&self.attributes.join(", ")))
            .replace("{{CSS}}", CSS)
            .replace("{{SUMMARY}}", &esc(&self.headline()))
            .replacen("{{BODY}}", &body, 1)
    }
}

/// A commit's short hash, linked when a URL template is known.
fn commit_cell(id: &str, link: &dyn Fn(&str) -> Option<String>) -> String {
    use crate::html::html_escape as esc;
    match link(id) {
        Some(url) => format!(
            "<a href=\"{}\"><code>{}</code></a>",
            esc(&url),
            esc(short(id))
        ),
        None => format!("<code>{}</code>", esc(short(id))),
    }
}
