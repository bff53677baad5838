//! The `check` report: whether every rule holds, and each violation with
//! its explanation, as text, JSON, GitHub workflow annotations or a
//! markdown summary for a pull-request comment.

use serde::{Deserialize, Serialize};

use super::{Report, TextOptions, review};
use nix_heft_analysis::check::{Baseline, Rule, Violation};
use nix_heft_format::store_path::name_of;
use nix_heft_types::problem::Problem;
use nix_heft_types::units::{iec, iec_delta};

pub use super::review::Format;

/// The whole report; also the `--json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    /// True when every rule holds.
    pub ok: bool,
    /// The roots checked.
    pub roots: Vec<String>,
    /// Their closure size.
    pub closure_size: u64,
    /// The baseline of `--max-growth`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
    /// The rules, as given.
    pub rules: Vec<String>,
    /// Every broken rule.
    pub violations: Vec<Violation>,
    /// What could not be read.
    pub problems: Vec<Problem>,
}

/// Paths, actions and edges named per annotation.
const ANNOTATED: usize = 2;

impl CheckReport {
    /// The display names of every path the report shows ([`super::Names`]).
    fn names(&self) -> super::Names {
        super::Names::new(self.paths())
    }

    /// Every path the report shows.
    fn paths(&self) -> Vec<&str> {
        let label = self
            .baseline
            .iter()
            .flat_map(|b| b.label.split(", "))
            .filter(|p| p.contains('/'));
        let mut paths: Vec<&str> = self.roots.iter().map(String::as_str).chain(label).collect();
        for v in &self.violations {
            paths.extend(v.chain.iter().flatten().map(String::as_str));
            for e in v.evidence.iter().flatten() {
                paths.push(&e.referrer);
                paths.push(&e.reference);
            }
            for c in &v.contributors {
                paths.push(&c.path);
                paths.extend(c.referrer.as_deref());
            }
            paths.extend(v.actions.iter().map(|a| a.action.package.as_str()));
        }
        paths
    }

    /// A violation's detail with its store paths by their display names,
    /// as `diff` shows them (the JSON keeps the whole paths).
    fn detail(&self, v: &Violation, names: &super::Names) -> String {
        // The paths a detail names: the violation's own and the baseline's.
        let mut paths: Vec<&str> = self
            .baseline
            .iter()
            .flat_map(|b| b.label.split(", "))
            .collect();
        paths.extend(v.chain.iter().flatten().map(String::as_str));
        for e in v.evidence.iter().flatten() {
            paths.push(&e.referrer);
            paths.push(&e.reference);
        }
        // Longest first, so that no path is replaced inside a longer one.
        paths.sort_by_key(|p| std::cmp::Reverse(p.len()));
        paths.dedup();
        let mut d = v.detail.clone();
        for p in paths {
            if p.contains('/') && d.contains(p) {
                d = d.replace(p, names.get(p));
            }
        }
        d
    }

    /// What tells a violation from the others of its rule, in a few words:
    /// `docs hold on rocsparse-5.7.1` for a forbidden verdict, the path for
    /// a forbidden one, the detail for a budget.
    fn subject(&self, v: &Violation, names: &super::Names) -> String {
        let edge = v.evidence.as_deref().and_then(|e| e.last());
        match (v.rule, edge) {
            (Rule::ForbidVerdict, Some(e)) => {
                let verdict = e
                    .evidence
                    .iter()
                    .map(|x| x.verdict)
                    .min()
                    .or_else(|| e.groups.iter().map(|g| g.verdict).min())
                    .map_or("forbidden", |x| x.as_str());
                format!(
                    "{verdict} hold on {} (from {})",
                    names.get(&e.reference),
                    names.get(&e.referrer)
                )
            }
            (Rule::Forbid, _) => match v.chain.as_deref().and_then(|c| c.last()) {
                Some(p) => names.get(p).to_string(),
                None => self.detail(v, names),
            },
            _ => self.detail(v, names),
        }
    }

    /// The explanation lines of one violation, without the headline;
    /// evidence grouped, or every hold listed below its edge with
    /// `every` (`--evidence`).
    fn explain(v: &Violation, names: &super::Names, every: Option<&TextOptions>) -> Vec<String> {
        Self::explain_up_to(v, names, every, usize::MAX)
    }

    /// [`CheckReport::explain`] with at most `few` paths, actions and
    /// edges each, the rest counted: for an annotation.
    fn explain_up_to(
        v: &Violation,
        names: &super::Names,
        every: Option<&TextOptions>,
        few: usize,
    ) -> Vec<String> {
        let name_of = |p: &'_ str| names.get(p).to_string();
        let mut out = Vec::new();
        let more = |out: &mut Vec<String>, n: usize, what: &str| {
            if n > few {
                out.push(format!("  and {} more {what}", n - few));
            }
        };
        let held = |out: &mut Vec<String>, evs: &[nix_heft_types::evidence::Evidence]| {
            if let Some(opts) = every {
                for l in super::evidence_lines(evs, &[], opts).lines() {
                    out.push(format!("  {l}"));
                }
            }
        };
        if v.contributors.iter().any(|c| c.nar_size.is_some()) {
            // Growth over a baseline whose paths are known: what is new, as
            // `diff` lists it, each with what pulled it in.
            out.push("paths added since the baseline, largest first:".to_string());
            for c in v.contributors.iter().take(few) {
                let why = match &c.referrer {
                    None => "a root".to_string(),
                    Some(r) if c.evidence.is_empty() => format!("pulled in by {}", name_of(r)),
                    Some(r) => format!(
                        "pulled in by {} from {}",
                        name_of(r),
                        review::groups_phrase(
                            &review::groups_of(&c.groups, &c.evidence),
                            review::plain
                        )
                    ),
                };
                out.push(format!(
                    "  {:>10}  {}  {why}",
                    iec(c.nar_size.unwrap_or(0)),
                    name_of(&c.path)
                ));
                held(&mut out, &c.evidence);
            }
            more(&mut out, v.contributors.len(), "paths");
        } else if !v.contributors.is_empty() {
            out.push("top contributors by added size:".to_string());
            for c in v.contributors.iter().take(few) {
                out.push(format!("  {:>10}  {}", iec(c.added_size), name_of(&c.path)));
            }
            more(&mut out, v.contributors.len(), "paths");
        }
        if !v.actions.is_empty() {
            out.push("single actions from advise (savings overlap, do not add up):".to_string());
            for a in v.actions.iter().take(few) {
                let saving = a.action.saving.map(iec).unwrap_or_default();
                out.push(format!(
                    "  saves {saving}{}: {} in {} — {}",
                    if a.enough_alone { ", enough alone" } else { "" },
                    serde_json::to_value(a.action.kind)
                        .ok()
                        .and_then(|k| k.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    name_of(&a.action.package),
                    a.action.reason
                ));
            }
            more(&mut out, v.actions.len(), "actions");
        }
        if let Some(n) = &v.note {
            out.push(format!("note: {n}"));
        }
        if let Some(chain) = &v.chain {
            let shown: Vec<String> = chain.iter().map(|p| name_of(p)).collect();
            out.push(format!("chain: {}", shown.join(" → ")));
        }
        let edges = v.evidence.as_deref().unwrap_or_default();
        for e in edges.iter().take(few) {
            let shown = if e.unavailable {
                "(no file contents in this source)".to_string()
            } else if e.evidence.is_empty() {
                "(registered, but no occurrence found)".to_string()
            } else {
                review::groups_phrase(&review::groups_of(&e.groups, &e.evidence), review::plain)
            };
            out.push(format!(
                "{} → {}: {shown}",
                name_of(&e.referrer),
                name_of(&e.reference)
            ));
            held(&mut out, &e.evidence);
        }
        more(&mut out, edges.len(), "edges");
        out
    }

    fn roots_shown(&self, names: &super::Names) -> String {
        short(&self.roots.join(", "), names)
    }

    /// GitHub Actions workflow commands, within what GitHub shows per step
    /// (ten of each level): one `::error` per violation (its detail and the
    /// first lines of its explanation), in the gate's order (budgets, then
    /// forbidden paths, then forbidden verdicts); past ten, the violations
    /// of one rule become one annotation with a line per violation saying
    /// what differs; a `::warning` for a partial read, a `::notice` when all
    /// holds. `at` is the package's Nix file, for `file=`/`line=`.
    fn render_github_at(&self, at: Option<&review::NixFile>) -> String {
        let names = self.names();
        let mut anns = Vec::new();
        let collapse = self.violations.len() > review::ANNOTATIONS_PER_LEVEL;
        let mut done: Vec<&str> = Vec::new();
        let mut by_rule: std::collections::HashMap<&str, Vec<&Violation>> =
            std::collections::HashMap::new();
        for v in &self.violations {
            by_rule.entry(v.rule.as_str()).or_default().push(v);
        }
        for v in &self.violations {
            let of_rule: &[&Violation] = by_rule.get(v.rule.as_str()).map_or(&[], Vec::as_slice);
            if collapse && of_rule.len() > 1 {
                if done.contains(&v.rule.as_str()) {
                    continue;
                }
                done.push(v.rule.as_str());
                let mut lines = vec![format!(
                    "{} violations of {} (the job summary and `--format text` explain each):",
                    of_rule.len(),
                    v.rule
                )];
                lines.extend(of_rule.iter().map(|w| self.subject(w, &names)));
                anns.push(review::Annotation {
                    level: "error",
                    title: format!("nix-heft check: {} ({} violations)", v.rule, of_rule.len()),
                    lines,
                });
                continue;
            }
            let mut lines = vec![self.detail(v, &names)];
            lines.extend(Self::explain_up_to(v, &names, None, ANNOTATED));
            let title = if of_rule.len() > 1 {
                format!("nix-heft check: {}: {}", v.rule, self.subject(v, &names))
            } else {
                format!("nix-heft check: {}", v.rule)
            };
            anns.push(review::Annotation {
                level: "error",
                title: review::clip(&title, 200),
                lines,
            });
        }
        if !self.problems.is_empty() {
            anns.push(review::Annotation {
                level: "warning",
                title: "nix-heft check: partial read".into(),
                lines: self.problems.iter().map(|p| p.display()).collect(),
            });
        }
        if self.ok {
            anns.push(review::Annotation {
                level: "notice",
                title: "nix-heft check".into(),
                lines: vec![format!(
                    "closure of {} is {}; every rule holds",
                    self.roots_shown(&names),
                    iec(self.closure_size)
                )],
            });
        }
        review::cap(
            anns,
            "nix-heft check",
            "the job summary and `nix-heft check --format text` list them",
        )
        .iter()
        .map(|a| a.render(at))
        .collect()
    }

    /// A markdown summary for a pull-request comment or job summary:
    /// [`review::MARKER`], the verdict, the closure (before and after with
    /// a baseline), the violations, each one's explanation in
    /// `<details>`; at most `limit` characters, cutting the explanations'
    /// tails first and saying so.
    fn render_markdown_within(&self, limit: usize) -> String {
        let cell = |s: &str| review::clip(&s.replace('|', "\\|").replace('\n', " "), 1000);
        let names = self.names();
        let mut head = format!(
            "{}\n### nix-heft check: {}\n\n",
            review::MARKER,
            if self.ok {
                "✅ every rule holds".to_string()
            } else {
                format!("❌ {} violation(s)", self.violations.len())
            }
        );
        head.push_str("| | closure |\n| --- | ---: |\n");
        if let Some(b) = &self.baseline {
            head.push_str(&format!(
                "| before ({}) | {} |\n",
                cell(&short(&b.label, &names)),
                iec(b.closure_size)
            ));
        }
        head.push_str(&format!(
            "| {} ({}) | {} |\n",
            if self.baseline.is_some() {
                "after"
            } else {
                "now"
            },
            cell(&self.roots_shown(&names)),
            iec(self.closure_size)
        ));
        if let Some(b) = &self.baseline {
            head.push_str(&format!(
                "| change | {} |\n",
                iec_delta(self.closure_size as i128 - b.closure_size as i128)
            ));
        }
        if !self.rules.is_empty() {
            head.push_str(&format!(
                "\nRules: {}\n",
                self.rules
                    .iter()
                    .map(|r| review::code(r))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !self.problems.is_empty() {
            head.push_str(&format!(
                "\n⚠️ partial read: {} problem(s), listed at the end as room allows\n",
                self.problems.len()
            ));
        }
        let explained: Vec<Vec<String>> = self
            .violations
            .iter()
            .map(|v| {
                // A fence inside a line would end the code block early.
                Self::explain(v, &names, None)
                    .into_iter()
                    .map(|l| format!("{}\n", review::clip(&l.replace("```", "` ` `"), 2000)))
                    .collect()
            })
            .collect();
        let whats: Vec<String> = (1..=self.violations.len())
            .map(|i| format!("lines explaining violation {i}"))
            .collect();
        let mut parts: Vec<(&str, usize)> = vec![("violations", self.violations.len())];
        parts.extend(
            whats
                .iter()
                .zip(&explained)
                .map(|(w, l)| (w.as_str(), l.len())),
        );
        parts.push(("problems", self.problems.len()));
        let how = "`nix-heft check --format text` (with `--evidence` for every hold) shows all of \
                   it; a CI job can keep it as an artifact.";
        let rows: Vec<String> = self
            .violations
            .iter()
            .map(|v| {
                format!(
                    "| `{}` | {} |\n",
                    v.rule,
                    cell(&review::md(&self.detail(v, &names)))
                )
            })
            .collect();
        // Several violations of one rule: each summary says which one it
        // is.
        let mut per_rule: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for v in &self.violations {
            *per_rule.entry(v.rule.as_str()).or_default() += 1;
        }
        let heads: Vec<String> = self
            .violations
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let several = per_rule.get(v.rule.as_str()).is_some_and(|&n| n > 1);
                format!(
                    "\n<details><summary>{}. {}{}</summary>\n\n```\n",
                    i + 1,
                    v.rule,
                    if several {
                        format!(": {}", review::md(&self.subject(v, &names)))
                    } else {
                        String::new()
                    }
                )
            })
            .collect();
        let problems: Vec<String> = self
            .problems
            .iter()
            .map(|p| format!("- {}\n", cell(&review::md(&p.display()))))
            .collect();
        review::fit(limit, &parts, how, |f| {
            f.force(&head);
            if !rows.is_empty() {
                f.list(
                    "\n| rule | violation |\n| --- | --- |\n",
                    &rows,
                    "",
                    "violations",
                );
            }
            for ((h, lines), what) in heads.iter().zip(&explained).zip(&whats) {
                if !lines.is_empty() {
                    f.list(h, lines, "```\n</details>\n", what);
                }
            }
            if !problems.is_empty() {
                let head = format!("\n⚠️ partial read, {} problem(s):\n\n", self.problems.len());
                f.list(&head, &problems, "", "problems");
            }
        })
    }
}

/// Store paths in a comma-separated list by their display names (other
/// items, such as a file name, as they are).
fn short(list: &str, names: &super::Names) -> String {
    list.split(", ")
        .map(|p| {
            if p.contains('/') && name_of(p).len() < p.len() {
                names.get(p).to_string()
            } else {
                p.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Report for CheckReport {
    fn problems(&self) -> &[Problem] {
        &self.problems
    }

    fn render_text(&self, opts: &TextOptions) -> String {
        use super::style::wrap_hanging;
        let names = self.names();
        let mut head = format!(
            "closure of {}: {}",
            self.roots_shown(&names),
            iec(self.closure_size)
        );
        if let Some(b) = &self.baseline {
            head.push_str(&format!(
                " (baseline {}: {}, {})",
                short(&b.label, &names),
                iec(b.closure_size),
                iec_delta(self.closure_size as i128 - b.closure_size as i128)
            ));
        }
        let mut out = wrap_hanging(&head, opts.width, "", "  ");
        if self.ok {
            out.push_str(&wrap_hanging(
                &format!("ok: every rule holds ({})", self.rules.join(", ")),
                opts.width,
                "",
                "  ",
            ));
        } else {
            out.push_str(&format!("{} violation(s):\n", self.violations.len()));
            for v in &self.violations {
                out.push('\n');
                out.push_str(&wrap_hanging(
                    &format!("[{}] {}", v.rule, self.detail(v, &names)),
                    opts.width,
                    "",
                    "  ",
                ));
                for l in Self::explain(v, &names, opts.every_line.then_some(opts)) {
                    // Keep each line's own indent; continuation lines
                    // deeper.
                    let text = l.trim_start();
                    let lead = format!("  {}", &l[..l.len() - text.len()]);
                    out.push_str(&opts.style.paths(&wrap_hanging(
                        text,
                        opts.width,
                        &lead,
                        &format!("{lead}    "),
                    )));
                }
            }
        }
        super::refs::append_problems(&mut out, &self.problems, opts.width);
        out
    }
}

impl review::Reviewed for CheckReport {
    fn render_markdown(&self, limit: usize) -> String {
        self.render_markdown_within(limit)
    }
    fn render_github(&self, at: Option<&review::NixFile>) -> String {
        self.render_github_at(at)
    }
}
