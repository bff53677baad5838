//! `nix-heft bisect`'s report: the first bad commit, how it was found (the
//! probes, the cached pair, the candidates between them) and what it
//! cost.

use serde::Serialize;

use crate::drv_diff::DrvDiffReport;
use crate::history::short;
use crate::impact::{ImpactMeta, ImpactReport, SideMeta};
use crate::review::{self, Reviewed};
use crate::{Report, TextOptions, plural};
use nix_heft_ops::bisect::{Bisect, Mark};
use nix_heft_types::problem::{Problem, ProblemKind};
use nix_heft_types::units::iec;

/// A commit as the report names it.
#[derive(Debug, Clone, Serialize)]
pub struct CommitRef {
    /// The full hash.
    pub commit: String,
    /// Committer date (ISO 8601).
    pub date: String,
    /// The first line of its message.
    pub subject: String,
}

/// One probe of the cached bisection.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeRow {
    /// The commit.
    #[serde(flatten)]
    pub commit: CommitRef,
    /// `good`, `bad` or `skipped`.
    pub verdict: &'static str,
    /// Why it was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its closure size, when read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closure_size: Option<u64>,
}

/// A commit that could be the first bad one.
#[derive(Debug, Clone, Serialize)]
pub struct CandidateRow {
    /// The commit.
    #[serde(flatten)]
    pub commit: CommitRef,
    /// Why it is a candidate.
    pub why: String,
    /// Its derivation against its parent's: the root causes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub derivation: Option<DrvDiffReport>,
}

/// One commit built by `--build`.
#[derive(Debug, Clone, Serialize)]
pub struct BuiltRow {
    /// The commit.
    #[serde(flatten)]
    pub commit: CommitRef,
    /// `good` or `bad` by the rule, as built.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<&'static str>,
    /// The built closure's size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closure_size: Option<u64>,
    /// Why there is no verdict (the build failed: Nix's last lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `--build`'s confirmation.
#[derive(Debug, Clone, Serialize)]
pub struct ConfirmationRow {
    /// The first bad commit's parent, built.
    pub last_good: BuiltRow,
    /// The first bad commit, built.
    pub first_bad: BuiltRow,
    /// The parent built good and the commit built bad.
    pub agrees: bool,
    /// Seconds the builds and reads took.
    pub seconds: f64,
}

/// What the search cost.
#[derive(Debug, Clone, Serialize)]
pub struct Costs {
    /// First-parent commits from good to bad.
    pub commits: usize,
    /// Evaluations of the cached bisection (each a commit's outputs).
    pub evaluations: usize,
    /// Instantiations between the cached pair (each a commit's `.drv`s).
    pub instantiations: usize,
    /// narinfos fetched from the caches.
    pub narinfos: u64,
    /// NARs fetched.
    pub nars: u64,
    /// Wall-clock seconds the search took.
    pub seconds: f64,
}

/// `bisect`'s report.
#[derive(Debug, Clone, Serialize)]
pub struct BisectReport {
    /// The attribute.
    pub attr: String,
    /// The rule, as given.
    pub rule: String,
    /// The first bad commit, when one commit explains the change.
    pub first_bad: Option<CommitRef>,
    /// Its first parent.
    pub last_good: Option<CommitRef>,
    /// The last cached commit found good.
    pub cached_good: CommitRef,
    /// Its closure size.
    pub cached_good_size: Option<u64>,
    /// The first cached commit found bad after it.
    pub cached_bad: CommitRef,
    /// Its closure size.
    pub cached_bad_size: Option<u64>,
    /// The path the bad closure gained that the first bad commit brings.
    pub target: Option<String>,
    /// The candidates, the first bad commit first.
    pub candidates: Vec<CandidateRow>,
    /// The probes, in the order made.
    pub probes: Vec<ProbeRow>,
    /// What it cost.
    pub costs: Costs,
    /// Advice on the search itself.
    pub notes: Vec<String>,
    /// The change between the cached pair, as `impact` reports it: the
    /// packages added and removed, the chain to each and the file that
    /// holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<ImpactReport>,
    /// `--build`: the first candidate and its parent built and judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<ConfirmationRow>,
    /// What could not be decided.
    pub problems: Vec<Problem>,
}

impl BisectReport {
    /// The report of `b`; `rule` as given, the download counters of the
    /// run (narinfos, NARs).
    /// `stores` and `evaluator` name what was read, as `history`'s.
    pub fn new(b: &Bisect, rule: &str, stores: &[String], evaluator: &str) -> BisectReport {
        let c = |i: usize| CommitRef {
            commit: b.commits[i].id.clone(),
            date: b.commits[i].date.clone(),
            subject: b.commits[i].subject.clone(),
        };
        let size_of = |i: usize| {
            b.probes
                .iter()
                .find(|p| p.commit == i)
                .and_then(|p| p.closure_size)
        };
        let first = b.candidates.first().filter(|_| b.found);
        let mut problems = Vec::new();
        if !b.found {
            problems.push(Problem::new(
                b.attr.clone(),
                ProblemKind::Undecided,
                "no one commit between the cached pair explains the change: the candidates are listed",
            ));
        }
        let verdict_name = |v: &Mark| match v {
            Mark::Good => "good",
            Mark::Bad => "bad",
            Mark::Skip(_) => "skipped",
        };
        let built = |x: &nix_heft_ops::bisect::Built| match &x.outcome {
            Ok((v, size)) => BuiltRow {
                commit: c(x.commit),
                verdict: Some(verdict_name(v)),
                closure_size: Some(*size),
                error: None,
            },
            Err(e) => BuiltRow {
                commit: c(x.commit),
                verdict: None,
                closure_size: None,
                error: Some(e.clone()),
            },
        };
        let confirmation = b.confirmation.as_ref().map(|k| ConfirmationRow {
            last_good: built(&k.parent),
            first_bad: built(&k.culprit),
            agrees: k.agrees,
            seconds: k.elapsed.as_secs_f64(),
        });
        if confirmation.as_ref().is_some_and(|k| !k.agrees) {
            problems.push(Problem::new(
                b.attr.clone(),
                ProblemKind::Undecided,
                "building does not confirm the first bad commit: the parent must build good and \
                 the commit bad by the rule",
            ));
        }
        let uncached = b
            .probes
            .iter()
            .filter(|p| matches!(&p.verdict, Mark::Skip(r) if r.starts_with("not in the cache")))
            .count();
        let mut notes = Vec::new();
        // Each uncached probe is an evaluation spent: with the list of the
        // commits the cache holds, none would be.
        if !b.listed && uncached > 2 {
            notes.push(format!(
                "{uncached} of {} probes were not in the cache: --revs-file with the commits \
                 it holds (the channel bumps, the evaluations of its builders) probes only those",
                b.probes.len()
            ));
        }
        let explanation = b.explanation.as_ref().map(|imp| {
            let side = |i: usize| SideMeta {
                side: b.commits[i].id.clone(),
                commit: Some(b.commits[i].id.clone()),
                dirty: false,
                stores: stores.to_vec(),
            };
            let r = ImpactReport::new(
                imp,
                &ImpactMeta {
                    before: side(b.cached_good),
                    after: side(b.cached_bad),
                    evaluator: evaluator.to_string(),
                    build: &|_, _| String::new(),
                    notes: Vec::new(),
                },
                Vec::new(),
            );
            problems.extend(r.problems.iter().cloned());
            r
        });
        BisectReport {
            explanation,
            confirmation,
            notes,
            attr: b.attr.clone(),
            rule: rule.to_string(),
            first_bad: first.map(|x| c(x.commit)),
            last_good: first.map(|x| c(x.commit - 1)),
            cached_good: c(b.cached_good),
            cached_good_size: size_of(b.cached_good),
            cached_bad: c(b.cached_bad),
            cached_bad_size: size_of(b.cached_bad),
            target: b.target.as_ref().map(|t| t.to_string()),
            candidates: b
                .candidates
                .iter()
                .map(|x| CandidateRow {
                    commit: c(x.commit),
                    why: x.why.clone(),
                    derivation: x.derivation.as_ref().map(DrvDiffReport::new),
                })
                .collect(),
            probes: b
                .probes
                .iter()
                .map(|p| {
                    let reason = match &p.verdict {
                        Mark::Skip(r) => Some(r.clone()),
                        _ => None,
                    };
                    let verdict = verdict_name(&p.verdict);
                    ProbeRow {
                        commit: c(p.commit),
                        verdict,
                        reason,
                        closure_size: p.closure_size,
                    }
                })
                .collect(),
            costs: Costs {
                commits: b.commits.len(),
                evaluations: b.evaluations,
                instantiations: b.instantiations,
                narinfos: b.downloads.0,
                nars: b.downloads.1,
                seconds: b.elapsed.as_secs_f64(),
            },
            problems,
        }
    }

    fn named(c: &CommitRef) -> String {
        format!(
            "{} {} ({})",
            short(&c.commit),
            c.subject,
            c.date.get(..10).unwrap_or(&c.date)
        )
    }

    /// The report's lines, each with whether it may be wrapped (a
    /// derivation diff comes fitted already).
    fn lines(&self, opts: &TextOptions, code: fn(&str) -> String) -> Vec<(String, bool)> {
        let size = |s: Option<u64>| s.map_or_else(|| "?".to_string(), iec);
        let short = |c: &CommitRef| short(&c.commit).to_string();
        let mut out: Vec<(String, bool)> = Vec::new();
        match (&self.first_bad, &self.last_good) {
            (Some(bad), Some(good)) => {
                out.push((format!("first bad commit: {}", Self::named(bad)), true));
                out.push((format!("last good commit: {}", Self::named(good)), true));
            }
            _ => out.push((
                format!(
                    "no single first bad commit of {} between the cached pair; candidates below",
                    code(&self.attr)
                ),
                true,
            )),
        }
        if let Some(k) = &self.confirmation {
            let one = |r: &BuiltRow| match (&r.verdict, &r.error) {
                (Some(v), _) => {
                    format!("{} built {v} ({})", short(&r.commit), size(r.closure_size))
                }
                (None, e) => format!(
                    "{} did not build: {}",
                    short(&r.commit),
                    e.as_deref().unwrap_or("").replace('\n', " / ")
                ),
            };
            out.push((
                format!(
                    "{}: {}, {} ({:.1} s)",
                    if k.agrees {
                        "confirmed by building"
                    } else {
                        "NOT confirmed by building"
                    },
                    one(&k.last_good),
                    one(&k.first_bad),
                    k.seconds
                ),
                true,
            ));
        }
        out.push((
            format!(
                "cached pair: {} good ({}), {} bad ({})",
                short(&self.cached_good),
                size(self.cached_good_size),
                short(&self.cached_bad),
                size(self.cached_bad_size)
            ),
            true,
        ));
        if let Some(t) = &self.target {
            out.push((format!("the bad closure gained {}", code(t)), true));
        }
        if let Some(e) = &self.explanation
            && let Some(a) = e.attributes.first()
        {
            out.push(("between the cached pair:".into(), true));
            for l in e.explained_lines(a, code) {
                out.push((format!("  {l}"), true));
            }
        }
        if !self.candidates.is_empty() {
            out.push(("candidates:".into(), true));
            let inner = TextOptions {
                width: opts.width.map(|w| w.saturating_sub(4).max(40)),
                ..*opts
            };
            for c in &self.candidates {
                out.push((format!("  {}: {}", Self::named(&c.commit), c.why), true));
                if let Some(d) = &c.derivation {
                    for l in d
                        .render_text(&inner)
                        .lines()
                        .filter(|l| !l.trim().is_empty())
                    {
                        out.push((format!("    {l}"), false));
                    }
                }
            }
        }
        out.push(("probes:".into(), true));
        for p in &self.probes {
            let what = match (&p.reason, p.verdict) {
                (Some(r), _) => format!("skipped: {r}"),
                (None, v) => format!("{v} ({})", size(p.closure_size)),
            };
            out.push((format!("  {} {what}", short(&p.commit)), true));
        }
        for n in &self.notes {
            out.push((format!("note: {n}"), true));
        }
        out.push((
            format!(
                "cost: {} (the binary search over {}), {} (between the cached pair), {} and {} \
                 fetched, {:.1} s; {}",
                plural(self.costs.evaluations, "evaluation"),
                plural(self.costs.commits, "commit"),
                plural(self.costs.instantiations, "instantiation"),
                plural(self.costs.narinfos as usize, "narinfo"),
                plural(self.costs.nars as usize, "NAR"),
                self.costs.seconds,
                if self.confirmation.is_some() {
                    "2 commits built (--build)"
                } else {
                    "nothing built"
                }
            ),
            true,
        ));
        out
    }
}

impl Report for BisectReport {
    fn render_text(&self, opts: &TextOptions) -> String {
        let mut s = String::new();
        for (l, wrap) in self.lines(opts, review::plain) {
            if wrap {
                s.push_str(&crate::style::wrap_hanging(&l, opts.width, "", "      "));
            } else {
                s.push_str(&l);
                s.push('\n');
            }
        }
        s
    }

    fn problems(&self) -> &[Problem] {
        &self.problems
    }
}

impl Reviewed for BisectReport {
    fn render_markdown(&self, _limit: usize) -> String {
        let mut s = format!(
            "{}\n### bisect of {}\n\n```\n",
            review::MARKER,
            review::md(&self.attr)
        );
        for (l, _) in self.lines(&TextOptions::default(), review::plain) {
            s.push_str(&l.replace("```", "'''"));
            s.push('\n');
        }
        s.push_str("```\n");
        s
    }

    fn render_github(&self, _at: Option<&review::NixFile>) -> String {
        match &self.first_bad {
            Some(c) => format!(
                "::notice title=nix-heft bisect::first bad commit of {}: {}\n",
                self.attr,
                Self::named(c)
            ),
            None => String::new(),
        }
    }
}
