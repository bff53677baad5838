//! The `why` report: the chains from a root to a dependency, and for each
//! edge on them the files that hold it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::refs::append_problems;
use super::{Report, TextOptions};
use nix_heft_analysis::explain::Explained;
use nix_heft_graph::{Graph, NodeId};
use nix_heft_scan::classify::Classified;
use nix_heft_types::evidence::{Evidence, EvidenceGroup, Verdict};
use nix_heft_types::problem::Problem;

/// One edge on a chain with its evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhyEdge {
    /// Holder of the reference.
    pub referrer: String,
    /// The referenced path.
    pub reference: String,
    /// True when the source has no file contents for the referrer.
    #[serde(default)]
    pub unavailable: bool,
    /// Every occurrence.
    pub evidence: Vec<Evidence>,
    /// The occurrences grouped by kind, verdict and directory, with the
    /// holding files' bytes ([`nix_heft_types::evidence::group`]), as every
    /// command shows evidence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<EvidenceGroup>,
}

/// The best chain to one matched dependency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BestChain {
    /// The dependency.
    pub dep: String,
    /// Root first, dependency last.
    pub chain: Vec<String>,
    /// The verdict of the chain's weakest edge.
    pub verdict: Verdict,
    /// When every chain to `dep` passes through another matched
    /// dependency: the last such on `chain`, which is explained by its own
    /// entry (the text says "reached only through" it in one line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through: Option<String>,
}

/// The whole report; also the `--json` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhyReport {
    /// The root.
    pub root: String,
    /// The dependency as asked (a path, name or glob).
    pub dep: String,
    /// The closure paths the dependency argument matched.
    pub deps: Vec<String>,
    /// How many chains lead from the root to a matched dependency in all.
    pub chain_count: u128,
    /// For each matched dependency, its best chain: the one whose weakest
    /// edge is strongest (runtime first), then the shortest.
    pub best: Vec<BestChain>,
    /// The chains shown: the best one per dependency, or all with `--all`
    /// (up to [`nix_heft_graph::chains::MAX_CHAINS`], strongest first).
    pub chains: Vec<Vec<String>>,
    /// Every edge on the chains shown, with evidence.
    pub edges: Vec<WhyEdge>,
    /// Files or paths that could not be read.
    pub problems: Vec<Problem>,
    /// Whether the graph is the build graph (`--derivation`): its edges
    /// are build inputs, so no chain is expected to be run-time and the
    /// text does not speak of run time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub build_graph: bool,
}

impl WhyReport {
    /// Assembles the report from the chains and the classified reads of
    /// their edges.
    pub fn new(
        g: &Graph,
        root: NodeId,
        dep: &str,
        deps: &[NodeId],
        (chain_count, chains): (u128, Vec<Vec<NodeId>>),
        best: Vec<Explained>,
        c: Classified,
    ) -> WhyReport {
        let mut edges = Vec::new();
        let mut seen = BTreeSet::new();
        for ch in &chains {
            for w in ch.windows(2) {
                if seen.insert((w[0], w[1])) {
                    let pe = c.paths.get(&w[0]);
                    edges.push(WhyEdge {
                        referrer: g.path(w[0]).to_string(),
                        reference: g.path(w[1]).to_string(),
                        unavailable: pe.is_none_or(|p| !p.available),
                        evidence: c.evidence(w[0], w[1]).to_vec(),
                        groups: c.groups(w[0], w[1]),
                    });
                }
            }
        }
        let names = |ch: &[NodeId]| ch.iter().map(|&v| g.path(v).to_string()).collect();
        let mut best = best;
        best.sort_by(|a, b| g.path(a.dep).name().cmp(g.path(b.dep).name()));
        let mut chains = chains;
        let direct: Vec<&Explained> = best.iter().filter(|b| b.through.is_none()).collect();
        if chains.len() == direct.len() {
            chains = direct.iter().map(|b| b.chain.clone()).collect();
        }
        WhyReport {
            root: g.path(root).to_string(),
            dep: dep.to_string(),
            deps: deps.iter().map(|&d| g.path(d).to_string()).collect(),
            chain_count,
            best: best
                .iter()
                .map(|b| BestChain {
                    dep: g.path(b.dep).to_string(),
                    chain: names(&b.chain),
                    verdict: b.verdict,
                    through: b.through.map(|t| g.path(t).to_string()),
                })
                .collect(),
            chains: chains.iter().map(|ch| names(ch)).collect(),
            edges,
            problems: c.problems,
            build_graph: false,
        }
    }

    /// The matches explained by a chain shown (not reached only through
    /// another match).
    fn direct(&self) -> usize {
        self.best.iter().filter(|b| b.through.is_none()).count()
    }

    /// The weakest verdict of a shown chain, from the edges' evidence.
    fn chain_verdict(&self, chain: &[String]) -> Verdict {
        chain
            .windows(2)
            .map(|w| {
                self.edges
                    .iter()
                    .find(|e| e.referrer == w[0] && e.reference == w[1])
                    .and_then(|e| e.evidence.iter().map(|x| x.verdict).min())
                    .unwrap_or(Verdict::Unknown)
            })
            .max()
            .unwrap_or(Verdict::Runtime)
    }
}

impl Report for WhyReport {
    fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The terminal rendering: the chains with their verdicts, what keeps a
    /// dependency whose shown chain is not run-time, then each edge's
    /// evidence, grouped.
    fn render_text(&self, opts: &TextOptions) -> String {
        let st = opts.style;
        let mut out = String::new();
        let names = super::Names::new(
            [&self.root]
                .into_iter()
                .chain(&self.deps)
                .chain(self.chains.iter().flatten())
                .chain(self.best.iter().flat_map(|b| &b.chain))
                .chain(self.edges.iter().flat_map(|e| [&e.referrer, &e.reference]))
                .map(String::as_str),
        );
        let name = |p: &'_ str| -> String { names.get(p).to_string() };
        if self.chains.is_empty() {
            out.push_str(&format!("{} does not depend on {}\n", self.root, self.dep));
            return out;
        }
        let what = if self.deps.len() == 1 {
            name(&self.deps[0])
        } else {
            format!("{} paths matching '{}'", self.deps.len(), self.dep)
        };
        let through: Vec<&BestChain> = self.best.iter().filter(|b| b.through.is_some()).collect();
        let mut header = format!(
            "{} chain(s) from {} to {what}; showing {}",
            self.chain_count,
            name(&self.root),
            if self.chains.len() == self.direct() {
                if self.deps.len() == 1 && self.build_graph {
                    "the strongest (by verdict, then shortest)".to_string()
                } else if self.deps.len() == 1 {
                    "the strongest (runtime first, then shortest)".to_string()
                } else {
                    "the strongest to each".to_string()
                }
            } else {
                format!("{}, strongest first", self.chains.len())
            }
        );
        if !through.is_empty() {
            header.push_str(&format!(
                "; {} reached only through another match",
                through.len()
            ));
        }
        out.push_str(&super::style::wrap_hanging(&header, opts.width, "", "  "));
        out.push('\n');
        for c in &self.chains {
            let v = self.chain_verdict(c);
            let shown: Vec<String> = c.iter().map(|p| name(p)).collect();
            let line = format!("[{}] {}", v.as_str(), shown.join(" → "));
            let line = super::style::wrap_hanging(&line, opts.width, "  ", "      ");
            out.push_str(&st.verdict(v, &line));
            // A chain that is not run-time: say what keeps its end alive.
            let dep = c.last().expect("chains are never empty");
            if v != Verdict::Runtime
                && let Some(b) = self.best.iter().find(|b| &b.dep == dep)
            {
                let via: Vec<String> = b.chain[1..b.chain.len() - 1]
                    .iter()
                    .map(|p| name(p))
                    .collect();
                let note = if self.build_graph {
                    // Every edge of the build graph is a build input: a
                    // build chain is what it should be, and nothing here
                    // is about run time.
                    if b.verdict == Verdict::Build {
                        continue;
                    }
                    format!(
                        "{}: the strongest chain is {}",
                        name(dep),
                        b.verdict.as_str()
                    )
                } else if b.verdict == Verdict::Runtime {
                    format!(
                        "{} stays: runtime via {}",
                        name(dep),
                        if via.is_empty() {
                            "a direct reference".to_string()
                        } else {
                            via.join(" → ")
                        }
                    )
                } else {
                    format!(
                        "{} has no run-time chain; the strongest is {}",
                        name(dep),
                        b.verdict.as_str()
                    )
                };
                out.push_str(&super::style::wrap(&note, opts.width, "    "));
            }
        }
        // Each match reached only through another: one line naming it,
        // in order of their chains' length, so that the match it is
        // reached through is most often explained above it.
        let mut through = through;
        through.sort_by_key(|b| (b.chain.len(), names.get(&b.dep).to_string()));
        let mut explained: Vec<&str> = self
            .best
            .iter()
            .filter(|b| b.through.is_none())
            .map(|b| b.dep.as_str())
            .collect();
        for b in &through {
            let via = b.through.as_deref().unwrap_or_default();
            let place = if explained.contains(&via) {
                "above"
            } else {
                "below"
            };
            let line = format!(
                "[{}] {}: reached only through {} ({place})",
                b.verdict.as_str(),
                name(&b.dep),
                name(via)
            );
            let line = super::style::wrap_hanging(&line, opts.width, "  ", "      ");
            out.push_str(&st.verdict(b.verdict, &line));
            explained.push(&b.dep);
        }
        for e in &self.edges {
            out.push('\n');
            out.push_str(&st.paths(&super::style::fit_line(
                &format!("{} → {}", name(&e.referrer), e.reference),
                opts.width,
            )));
            out.push('\n');
            if e.unavailable {
                out.push_str("  (no file contents in this source: evidence unavailable)\n");
                continue;
            }
            if e.evidence.is_empty() {
                match self
                    .problems
                    .iter()
                    .find(|p| p.path == e.referrer && p.file.is_none())
                {
                    Some(p) => out.push_str(&format!("  unreadable: {}\n", p.message)),
                    None => out.push_str("  (registered, but no occurrence found)\n"),
                }
            }
            out.push_str(&super::evidence_lines(&e.evidence, &e.groups, opts));
        }
        append_problems(&mut out, &self.problems, opts.width);
        out
    }
}
