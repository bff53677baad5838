//! The `why` report: the chains from a root to a dependency, and for each
//! edge on them the files that hold it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::refs::append_problems;
use super::{Report, TextOptions};
use crate::classify::Classified;
use crate::evidence::Evidence;
use crate::graph::{Graph, NodeId};
use crate::problem::Problem;
use crate::store_path::name_of as name;

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
    /// The chains shown: the shortest, or all with `--all` (up to
    /// [`crate::graph::chains::MAX_CHAINS`]).
    pub chains: Vec<Vec<String>>,
    /// Every edge on the chains shown, with evidence.
    pub edges: Vec<WhyEdge>,
    /// Files or paths that could not be read.
    pub problems: Vec<Problem>,
}

impl WhyReport {
    /// Assembles the report from chains and their scan.
    pub fn new(
        g: &Graph,
        root: NodeId,
        dep: &str,
        deps: &[NodeId],
        (chain_count, chains): (u128, Vec<Vec<NodeId>>),
        scan: Classified,
    ) -> WhyReport {
        let mut edges = Vec::new();
        let mut seen = BTreeSet::new();
        for c in &chains {
            for w in c.windows(2) {
                if seen.insert((w[0], w[1])) {
                    let pe = scan.paths.get(&w[0]);
                    edges.push(WhyEdge {
                        referrer: g.path(w[0]).to_string(),
                        reference: g.path(w[1]).to_string(),
                        unavailable: pe.is_none_or(|p| !p.available),
                        evidence: pe
                            .and_then(|p| p.by_reference.get(&w[1]))
                            .cloned()
                            .unwrap_or_default(),
                    });
                }
            }
        }
        WhyReport {
            root: g.path(root).to_string(),
            dep: dep.to_string(),
            deps: deps.iter().map(|&d| g.path(d).to_string()).collect(),
            chain_count,
            chains: chains
                .iter()
                .map(|c| c.iter().map(|&v| g.path(v).to_string()).collect())
                .collect(),
            edges,
            problems: scan.problems,
        }
    }
}

impl Report for WhyReport {
    fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The terminal rendering: each chain, then each edge's evidence grouped
    /// by file.
    fn render_text(&self, _: &TextOptions) -> String {
        let mut out = String::new();
        if self.chains.is_empty() {
            out.push_str(&format!("{} does not depend on {}\n", self.root, self.dep));
            return out;
        }
        out.push_str(&format!(
            "{} chain(s) from {} to {}; showing {}\n\n",
            self.chain_count,
            name(&self.root),
            self.dep,
            if self.chains.len() == 1 {
                "the shortest".to_string()
            } else {
                format!("{}", self.chains.len())
            }
        ));
        for c in &self.chains {
            let names: Vec<&str> = c.iter().map(|p| name(p)).collect();
            out.push_str(&format!("  {}\n", names.join(" → ")));
        }
        for e in &self.edges {
            out.push_str(&format!("\n{} → {}\n", name(&e.referrer), e.reference));
            if e.unavailable {
                out.push_str("  (no file contents in this source: evidence unavailable)\n");
                continue;
            }
            if e.evidence.is_empty() {
                out.push_str("  (registered, but no occurrence found)\n");
            }
            let mut i = 0;
            while i < e.evidence.len() {
                let file = &e.evidence[i].file;
                out.push_str(&format!("  {}\n", if file.is_empty() { "." } else { file }));
                while i < e.evidence.len() && &e.evidence[i].file == file {
                    let ev = &e.evidence[i];
                    let mut tag = ev.kind.as_str().to_string();
                    if let Some(l) = ev.line {
                        tag.push_str(&format!(" line {l}"));
                    }
                    if ev.dead {
                        tag.push_str(" DEAD");
                    } else if !ev.serves.is_empty() {
                        tag.push_str(&format!(" serves {}", ev.serves.join(",")));
                    }
                    out.push_str(&format!("    {tag} @{}: {}\n", ev.offset, ev.context));
                    if let Some(n) = &ev.note {
                        out.push_str(&format!("      note: {n}\n"));
                    }
                    match ev.traced {
                        Some(crate::evidence::Traced::Used) => {
                            out.push_str(&format!("      traced: {}\n", ev.reason));
                        }
                        Some(crate::evidence::Traced::NotUsed) => {
                            out.push_str("      traced: not used (never touched in the trace)\n");
                        }
                        None => {}
                    }
                    i += 1;
                }
            }
        }
        append_problems(&mut out, &self.problems);
        out
    }
}
