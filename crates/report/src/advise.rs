//! The `advise` report: ranked actions with savings, evidence, safety and
//! snippets.

use serde::{Deserialize, Serialize};

use super::{Report, TextOptions};
use nix_heft_analysis::plan::advise::Action;
use nix_heft_format::StorePath;
use nix_heft_graph::{Graph, NodeId};
use nix_heft_ops::pipeline::{Advised, ReadFor};

use nix_heft_types::problem::Problem;

/// The `advise` report; also its `--json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdviceReport {
    /// The roots.
    pub roots: Vec<String>,
    /// Their closure size now.
    pub closure_size: u64,
    /// Actions, biggest saving first (unsimulated ones last).
    pub actions: Vec<Action>,
    /// Every non-breaking action applied together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<nix_heft_analysis::plan::joint::Plan>,
    /// The `--min-saving` threshold in bytes: referrers whose bound is
    /// below it were not read.
    pub min_saving: u64,
    /// Referrers not read because no action on them could save
    /// `min_saving` ([`nix_heft_graph::bounds`]), largest bound first.
    pub not_examined: Vec<NotExamined>,
    /// Actions on referrers read that were not simulated because even
    /// with every unread consumer keeping only `out` they could not save
    /// `min_saving` (their consumers were not read for them).
    #[serde(default)]
    pub not_simulated: Vec<NotSimulated>,
    /// Every path read, with the question that needed it.
    #[serde(default)]
    pub reads: Vec<PathRead>,
    /// Files or paths that could not be read.
    pub problems: Vec<Problem>,
}

/// A referrer `advise` did not read, with the most any action on it could
/// save.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotExamined {
    /// The store path.
    pub referrer: String,
    /// Upper bound on any saving from changing it, in bytes.
    pub max_saving: u64,
}

/// An action not simulated: see [`AdviceReport::not_simulated`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotSimulated {
    /// The referrer it would change.
    pub referrer: String,
    /// The kind of action.
    pub action: String,
    /// The most it could save, in bytes.
    pub max_saving: u64,
}

/// One path `advise` read and why (see `nix_heft_ops::pipeline::PathRead`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathRead {
    /// The store path.
    pub path: String,
    /// `references` (a referrer examined: the evidence for its own
    /// references), `bound-tree` (a referrer whose bound needed its file
    /// tree where the source has no listing: its NAR), `holds-into` (a consumer: its holds into the referrers
    /// in `of`, for a split of them) or `runpath-tree` (a directory that
    /// RUNPATH entries of the referrers in `of` name: its file names).
    pub question: String,
    /// The referrers the question is about (empty for `references`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub of: Vec<String>,
}

impl AdviceReport {
    /// The report of `advise` on `roots` (their closure `closure_size`)
    /// from what the pipeline found, its paths named.
    pub fn new(
        g: &Graph,
        roots: &[StorePath],
        closure_size: u64,
        min_saving: u64,
        advised: Advised,
    ) -> AdviceReport {
        let name = |v: NodeId| g.path(v).to_string();
        AdviceReport {
            roots: roots.iter().map(|r| r.to_string()).collect(),
            closure_size,
            actions: advised.actions,
            plan: Some(advised.plan),
            min_saving,
            not_examined: advised
                .not_examined
                .into_iter()
                .map(|(v, max_saving)| NotExamined {
                    referrer: name(v),
                    max_saving,
                })
                .collect(),
            not_simulated: advised
                .not_simulated
                .into_iter()
                .map(|(v, kind, max_saving)| NotSimulated {
                    referrer: name(v),
                    action: kind.as_str().to_string(),
                    max_saving,
                })
                .collect(),
            reads: advised
                .reads
                .into_iter()
                .map(|(v, why)| {
                    let (question, of) = match why {
                        ReadFor::References => ("references", Vec::new()),
                        ReadFor::BoundTree => ("bound-tree", Vec::new()),
                        ReadFor::HoldsInto(of) => ("holds-into", of),
                        ReadFor::RunpathTree(of) => ("runpath-tree", of),
                    };
                    PathRead {
                        path: name(v),
                        question: question.to_string(),
                        of: of.into_iter().map(name).collect(),
                    }
                })
                .collect(),
            problems: advised.problems,
        }
    }
}

impl Report for AdviceReport {
    fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// Each action that saves something in full, biggest first; those that
    /// save nothing folded into one "also" line each (in full with
    /// `--all`), saying what keeps the path.
    fn render_text(&self, opts: &TextOptions) -> String {
        use super::style::{wrap, wrap_hanging};
        use nix_heft_types::units::iec;
        let st = opts.style;
        let plan_paths = self.plan.iter().flat_map(|p| {
            p.actions.iter().map(|s| &s.package).chain(
                p.rebuilds
                    .iter()
                    .flat_map(|r| std::iter::once(&r.path).chain(&r.because)),
            )
        });
        let names = super::Names::new(
            self.roots
                .iter()
                .chain(
                    self.actions
                        .iter()
                        .flat_map(|a| a.cuts.iter().chain([&a.package])),
                )
                .chain(self.actions.iter().flat_map(|a| {
                    a.stays
                        .iter()
                        .flat_map(|s| s.kept_by.iter().chain([&s.path]))
                }))
                .chain(
                    self.actions
                        .iter()
                        .flat_map(|a| a.stays.iter().flat_map(|s| &s.not_examined)),
                )
                .chain(plan_paths)
                .map(String::as_str),
        );
        fn shown<'a>(names: &'a super::Names, p: &'a str) -> &'a str {
            names.get(p)
        }
        let pkg_name = |p: &'_ String| -> String { shown(&names, p).to_string() };
        let folded = |a: &Action| a.saving == Some(0) && !opts.every_line;
        let full: Vec<&Action> = self.actions.iter().filter(|a| !folded(a)).collect();
        let mut out = wrap_hanging(
            &format!(
                "closure of {}: {}; {} action(s)",
                self.roots
                    .iter()
                    .map(&pkg_name)
                    .collect::<Vec<_>>()
                    .join(", "),
                st.size(&iec(self.closure_size)),
                full.len()
            ),
            opts.width,
            "",
            "  ",
        );
        let stays_line = |a: &Action| -> Vec<String> {
            a.stays
                .iter()
                .map(|s| {
                    let via: Vec<String> = s
                        .kept_by
                        .iter()
                        .skip(1)
                        .take(s.kept_by.len().saturating_sub(2))
                        .map(&pkg_name)
                        .collect();
                    let via = if via.is_empty() {
                        "a root".to_string()
                    } else {
                        via.join(" → ")
                    };
                    if s.not_examined.is_empty() {
                        format!(
                            "{} stays: {} via {via}",
                            pkg_name(&s.path),
                            s.verdict.as_str()
                        )
                    } else {
                        // A verdict of holds nobody read would mislead;
                        // say how to have them read.
                        format!(
                            "{} stays: via {via} (not read: {}; --min-saving 0 reads everything)",
                            pkg_name(&s.path),
                            s.not_examined
                                .iter()
                                .map(&pkg_name)
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }
                })
                .collect()
        };
        for (i, a) in full.iter().enumerate() {
            let saving = match (a.saving, a.saving_percent) {
                (Some(s), Some(p)) => format!("saves {} ({p:.1}%)", st.size(&iec(s))),
                _ => "saving not simulated".to_string(),
            };
            let cuts: Vec<String> = a.cuts.iter().map(&pkg_name).collect();
            // Many cuts (a partition's targets): counted in the heading,
            // named on a line of their own, what they share said once.
            let many = cuts.len() > MANY_CUTS;
            let heading = format!(
                "{}. [{}] {} in {} — {saving}, {}",
                i + 1,
                a.kind.as_str(),
                if many {
                    format!("{} references", cuts.len())
                } else {
                    cuts.join(", ")
                },
                pkg_name(&a.package),
                a.safety.as_str(),
            );
            out.push('\n');
            out.push_str(&st.paths(&wrap_hanging(&heading, opts.width, "", "   ")));
            if many {
                out.push_str(&st.paths(&wrap_hanging(
                    &format!("cuts: {}", brace_list(&cuts)),
                    opts.width,
                    "   ",
                    "     ",
                )));
            }
            out.push_str(&wrap(&a.reason, opts.width, "   "));
            for line in stays_line(a) {
                out.push_str(&wrap(&line, opts.width, "   "));
            }
            if !a.evidence.is_empty() {
                let shown: Vec<&str> = a.evidence.iter().take(4).map(String::as_str).collect();
                let total = a.evidence_files.max(a.evidence.len());
                let line = if total > shown.len() {
                    format!("evidence: {total} files, e.g. {}", shown.join(", "))
                } else {
                    format!("evidence: {}", shown.join(", "))
                };
                out.push_str(&wrap_hanging(&line, opts.width, "   ", "     "));
            }
            out.push_str(&snippet_lines(&a.snippet, opts.width, "   | "));
        }
        let also: Vec<&Action> = self.actions.iter().filter(|a| folded(a)).collect();
        if !also.is_empty() {
            out.push_str("\nalso, saving nothing (the paths stay; --all shows them in full):\n");
            for a in also {
                let cuts: Vec<String> = a.cuts.iter().map(&pkg_name).collect();
                let line = format!(
                    "[{}] {} in {}: {}",
                    a.kind.as_str(),
                    brace_list(&cuts),
                    pkg_name(&a.package),
                    stays_line(a).join("; ")
                );
                out.push_str(&wrap_hanging(&line, opts.width, "  ", "    "));
            }
        }
        if let Some(plan) = self.plan.as_ref().filter(|p| !p.actions.is_empty()) {
            let saved = plan.closure_before.saturating_sub(plan.closure_after);
            out.push('\n');
            out.push_str(&wrap_hanging(
                &format!(
                    "plan: every non-breaking action together, lowest package first: closure {} → {} (saves {})",
                    iec(plan.closure_before),
                    iec(plan.closure_after),
                    st.size(&iec(saved))
                ),
                opts.width,
                "",
                "  ",
            ));
            if let Some(t) = &plan.targets {
                out.push_str(&wrap_hanging(
                    &format!("targets: {t}"),
                    opts.width,
                    "  ",
                    "    ",
                ));
            }
            for (i, step) in plan.actions.iter().enumerate() {
                out.push_str(&wrap_hanging(
                    &format!(
                        "{}. [{}] {}: share {} (alone {})",
                        i + 1,
                        step.kind.as_str(),
                        pkg_name(&step.package),
                        iec(step.share),
                        iec(step.saving_alone)
                    ),
                    opts.width,
                    "  ",
                    "     ",
                ));
                out.push_str(&snippet_lines(&step.snippet, opts.width, "     | "));
            }
            for r in &plan.rebuilds {
                let line = format!(
                    "rebuilt: {} (depends on {})",
                    pkg_name(&r.path),
                    r.because
                        .iter()
                        .map(&pkg_name)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                out.push_str(&wrap_hanging(&line, opts.width, "  ", "    "));
            }
        }
        if !self.not_examined.is_empty() {
            let line = format!(
                "{} referrer(s) not examined: no action on them could save {} \
                 (--min-saving 0 reads everything)",
                self.not_examined.len(),
                iec(self.min_saving)
            );
            out.push('\n');
            out.push_str(&wrap_hanging(&line, opts.width, "", "  "));
        }
        if !self.not_simulated.is_empty() {
            let line = format!(
                "{} action(s) not simulated: none could save {} even if every consumer kept \
                 only out, so their consumers were not read",
                self.not_simulated.len(),
                iec(self.min_saving)
            );
            if self.not_examined.is_empty() {
                out.push('\n');
            }
            out.push_str(&wrap_hanging(&line, opts.width, "", "  "));
        }
        super::refs::append_problems(&mut out, &self.problems, opts.width);
        out
    }
}

/// More cuts than this are counted in an action's heading and listed on a
/// line of their own.
const MANY_CUTS: usize = 3;

/// Names as a list, those sharing their first and last words written once
/// with the words that differ in braces
/// (`rocblas-tensile-{gfx1030,gfx90a}-5.7.1`); names with a hash are
/// listed as they are.
fn brace_list(names: &[String]) -> String {
    let plain: Vec<Vec<&str>> = names
        .iter()
        .filter(|n| !n.contains(' '))
        .map(|n| n.split('-').collect())
        .collect();
    if plain.len() < MANY_CUTS || plain.len() < names.len() {
        return names.join(", ");
    }
    let first = &plain[0];
    let p = (0..first.len())
        .take_while(|&k| plain.iter().all(|w| w.len() > k && w[k] == first[k]))
        .count();
    let q = (0..first.len() - p)
        .take_while(|&k| {
            plain
                .iter()
                .all(|w| w.len() > p + k && w[w.len() - 1 - k] == first[first.len() - 1 - k])
        })
        .count();
    if p + q == 0 || plain.iter().any(|w| w.len() <= p + q) {
        return names.join(", ");
    }
    let mids: Vec<String> = plain.iter().map(|w| w[p..w.len() - q].join("-")).collect();
    let mut out = first[..p].join("-");
    if p > 0 {
        out.push('-');
    }
    out.push_str(&format!("{{{}}}", mids.join(", ")));
    if q > 0 {
        out.push('-');
        out.push_str(&first[first.len() - q..].join("-"));
    }
    out
}

/// A snippet's lines behind `prefix`. Code is never wrapped: a trailing
/// comment that makes a line too wide goes on a line of its own above it,
/// so the code fits and stays pasteable.
fn snippet_lines(snippet: &str, width: Option<usize>, prefix: &str) -> String {
    let mut out = String::new();
    for l in snippet.lines() {
        match l.split_once("  # ") {
            Some((code, comment)) if width.is_some_and(|w| l.len() + prefix.len() > w) => {
                out.push_str(&super::style::wrap_hanging(
                    &format!("# {comment}"),
                    width,
                    prefix,
                    &format!("{prefix}# "),
                ));
                out.push_str(&format!("{prefix}{code}\n"));
            }
            _ => out.push_str(&format!("{prefix}{l}\n")),
        }
    }
    out
}
