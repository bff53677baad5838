//! The `why` report: the chains from a root to a dependency, and for each
//! edge on them the files that hold it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::refs::{append_problems, name};
use crate::graph::{Graph, NodeId};
use crate::scan::{Evidence, Problem, ScanRequest, ScanResult};

/// Most chains listed with `--all`; the count is still exact.
pub const MAX_CHAINS: usize = 10_000;

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
    /// [`MAX_CHAINS`]).
    pub chains: Vec<Vec<String>>,
    /// Every edge on the chains shown, with evidence.
    pub edges: Vec<WhyEdge>,
    /// Files or paths that could not be read.
    pub problems: Vec<Problem>,
}

/// Chains from `root` to any of `deps` (a chain stops at the first
/// dependency it reaches): the count of all of them and either the shortest
/// or all (up to [`MAX_CHAINS`]).
pub fn chains(g: &Graph, root: NodeId, deps: &[NodeId], all: bool) -> (u128, Vec<Vec<NodeId>>) {
    let n = g.len();
    let mut is_dep = vec![false; n];
    for &d in deps {
        is_dep[d as usize] = true;
    }
    // Count by memoised DFS. Store graphs are acyclic, but a path-info
    // JSON file need not be: an edge back into the current DFS path is
    // ignored, so each chain counted is a simple path.
    let mut count: Vec<Option<u128>> = vec![None; n];
    let mut on_path = vec![false; n];
    let mut stack = vec![(root, false)];
    while let Some((v, done)) = stack.pop() {
        if count[v as usize].is_some() {
            continue;
        }
        if is_dep[v as usize] {
            count[v as usize] = Some(1);
        } else if done {
            on_path[v as usize] = false;
            let c = g
                .references(v)
                .iter()
                .map(|&w| count[w as usize].unwrap_or(0))
                .fold(0u128, |a, b| a.saturating_add(b));
            count[v as usize] = Some(c);
        } else if !on_path[v as usize] {
            on_path[v as usize] = true;
            stack.push((v, true));
            for &w in g.references(v) {
                if count[w as usize].is_none() && !on_path[w as usize] {
                    stack.push((w, false));
                }
            }
        }
    }
    let total = count[root as usize].unwrap_or(0);
    if total == 0 {
        return (0, Vec::new());
    }
    if !all {
        // Breadth-first for the shortest chain.
        let mut prev: Vec<Option<NodeId>> = vec![None; n];
        let mut seen = vec![false; n];
        let mut q = VecDeque::from([root]);
        seen[root as usize] = true;
        while let Some(v) = q.pop_front() {
            if is_dep[v as usize] {
                let mut chain = vec![v];
                let mut cur = v;
                while let Some(p) = prev[cur as usize] {
                    chain.push(p);
                    cur = p;
                }
                chain.reverse();
                return (total, vec![chain]);
            }
            for &w in g.references(v) {
                if !std::mem::replace(&mut seen[w as usize], true) {
                    prev[w as usize] = Some(v);
                    q.push_back(w);
                }
            }
        }
        return (total, Vec::new());
    }
    let mut out = Vec::new();
    let mut path = vec![root];
    enumerate(g, &is_dep, &count, &mut path, &mut out);
    out.sort_by_key(|c| c.len());
    (total, out)
}

fn enumerate(
    g: &Graph,
    is_dep: &[bool],
    count: &[Option<u128>],
    path: &mut Vec<NodeId>,
    out: &mut Vec<Vec<NodeId>>,
) {
    let v = *path.last().expect("non-empty");
    if out.len() >= MAX_CHAINS {
        return;
    }
    if is_dep[v as usize] {
        out.push(path.clone());
        return;
    }
    for &w in g.references(v) {
        if count[w as usize].unwrap_or(0) > 0 && !path.contains(&w) {
            path.push(w);
            enumerate(g, is_dep, count, path, out);
            path.pop();
        }
    }
}

/// Scan requests covering every edge of `chains`.
pub fn requests_for(chains: &[Vec<NodeId>]) -> Vec<ScanRequest> {
    let mut by: BTreeMap<NodeId, BTreeSet<NodeId>> = BTreeMap::new();
    for c in chains {
        for w in c.windows(2) {
            by.entry(w[0]).or_default().insert(w[1]);
        }
    }
    by.into_iter()
        .map(|(referrer, t)| ScanRequest {
            referrer,
            targets: t.into_iter().collect(),
        })
        .collect()
}

impl WhyReport {
    /// Assembles the report from chains and their scan.
    pub fn new(
        g: &Graph,
        root: NodeId,
        dep: &str,
        deps: &[NodeId],
        (chain_count, chains): (u128, Vec<Vec<NodeId>>),
        scan: ScanResult,
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

    /// The terminal rendering: each chain, then each edge's evidence grouped
    /// by file.
    pub fn render(&self) -> String {
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
                    i += 1;
                }
            }
        }
        append_problems(&mut out, &self.problems);
        out
    }
}
