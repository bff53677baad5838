//! Explanations from verdicts, a stage after classify and before plan: for
//! each dependency the best chain that holds it (the one whose weakest edge
//! is strongest: a runtime chain beats a shorter dead one), and what keeps
//! a path in the closure once one of its holds is gone. Graph and
//! classified evidence in, chains out; used by `why`, `browse`'s why view
//! and advice whose cut references stay.

use nix_heft_graph::chains::best_chain;
use nix_heft_graph::{Graph, NodeId};
use nix_heft_scan::classify::Classified;
use nix_heft_types::evidence::Verdict;

/// Order of verdicts as ranks, strongest first; an edge without evidence
/// (unread, unreadable, or registered but not found) counts as `unknown`.
fn rank(c: &Classified, from: NodeId, to: NodeId) -> u8 {
    c.evidence(from, to)
        .iter()
        .map(|e| e.verdict)
        .min()
        .unwrap_or(Verdict::Unknown) as u8
}

fn verdict_of(rank: u8) -> Verdict {
    [
        Verdict::Runtime,
        Verdict::Unknown,
        Verdict::Build,
        Verdict::Docs,
        Verdict::Dead,
    ][rank as usize]
}

/// A chain with the verdict of its weakest edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explained {
    /// The dependency explained.
    pub dep: NodeId,
    /// Root first, dependency last.
    pub chain: Vec<NodeId>,
    /// The weakest edge's verdict (`runtime` for a chain of one node).
    pub verdict: Verdict,
    /// For a dependency every chain to which passes through another of
    /// the dependencies asked about: the last of those on `chain` (the one
    /// it is reached through, explained in its own right). `None` when a
    /// chain reaches it directly.
    pub through: Option<NodeId>,
}

/// The best chain from `roots` to each of `deps`: one that passes through
/// no other dependency where there is one (chains stop at the first
/// dependency they reach), else the best of all, with the dependency it
/// is reached through ([`Explained::through`]). Every dependency that the
/// roots reach is explained.
pub fn best_chains(g: &Graph, c: &Classified, roots: &[NodeId], deps: &[NodeId]) -> Vec<Explained> {
    let mut stop = vec![false; g.len()];
    for &d in deps {
        stop[d as usize] = true;
    }
    let free = vec![false; g.len()];
    let r = |a, b| rank(c, a, b);
    deps.iter()
        .filter_map(|&d| {
            if let Some((chain, worst)) = best_chain(g, roots, d, &stop, &r, None) {
                return Some(Explained {
                    dep: d,
                    chain,
                    verdict: verdict_of(worst),
                    through: None,
                });
            }
            let (chain, worst) = best_chain(g, roots, d, &free, &r, None)?;
            let through = chain[..chain.len() - 1]
                .iter()
                .rev()
                .copied()
                .find(|&v| stop[v as usize] && !roots.contains(&v));
            Some(Explained {
                dep: d,
                chain,
                verdict: verdict_of(worst),
                through,
            })
        })
        .collect()
}

/// The weakest verdict along `chain`.
pub fn chain_verdict(c: &Classified, chain: &[NodeId]) -> Verdict {
    verdict_of(
        chain
            .windows(2)
            .map(|e| rank(c, e[0], e[1]))
            .max()
            .unwrap_or(0),
    )
}

/// Each path's strongest hold over the edges into it that were read (the
/// strongest verdict of any one edge's holds), `None` where no read edge
/// holds it: how strongly the closure keeps each path, as the page colours
/// it. An edge's own verdict is its strongest hold, as `refs` gives it.
pub fn holding(g: &Graph, c: &Classified) -> Vec<Option<Verdict>> {
    let mut out: Vec<Option<Verdict>> = vec![None; g.len()];
    for (&from, pe) in &c.paths {
        if !pe.available {
            continue;
        }
        for &to in g.references(from) {
            if let Some(v) = c.evidence(from, to).iter().map(|e| e.verdict).min() {
                let h = &mut out[to as usize];
                *h = Some(h.map_or(v, |h| h.min(v)));
            }
        }
    }
    out
}

/// Of `referrers` of `dep`, given in the caller's order of preference, the
/// one whose hold is strongest (runtime first, a dead or build-only hold
/// last); the first of those on a tie. The reason a path is present is
/// never an edge that would not keep it when another one does.
pub fn strongest_referrer(c: &Classified, dep: NodeId, referrers: &[NodeId]) -> Option<NodeId> {
    referrers.iter().copied().min_by_key(|&r| rank(c, r, dep))
}

/// What keeps `dep` in the closure of `roots` without the edge `skip`: the
/// best remaining chain, or `None` when nothing else holds it.
pub fn keeper(
    g: &Graph,
    c: &Classified,
    roots: &[NodeId],
    dep: NodeId,
    skip: (NodeId, NodeId),
) -> Option<Explained> {
    let stop = vec![false; g.len()];
    let r = |a, b| rank(c, a, b);
    best_chain(g, roots, dep, &stop, &r, Some(skip)).map(|(chain, worst)| Explained {
        dep,
        chain,
        verdict: verdict_of(worst),
        through: None,
    })
}

/// One edge with its evidence summarised.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EdgeSummary {
    /// The path that holds the reference.
    pub referrer: String,
    /// The referenced path.
    pub reference: String,
    /// True when the source has no file contents for the referrer (a
    /// path-info JSON file), so nothing could be looked at.
    pub unavailable: bool,
    /// Number of occurrences by kind.
    pub kinds: std::collections::BTreeMap<nix_heft_types::evidence::Kind, usize>,
    /// Files holding it, in order, each once.
    pub files: Vec<String>,
    /// True when every occurrence is a dead RUNPATH entry.
    pub dead: bool,
    /// The strongest verdict of its evidence (`None` when none was found).
    pub verdict: Option<nix_heft_types::evidence::Verdict>,
    /// The reason of the evidence that gives that verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why the referrer's files could not be read, when they could not: a
    /// missing hold then means nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// With `--trace`: `used` when the workload used any of its holds,
    /// `not used` when some hold's file was never touched and none was used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traced: Option<nix_heft_types::evidence::Traced>,
    /// Every occurrence (with `--evidence`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Vec<nix_heft_types::evidence::Evidence>>,
}

/// Summarises one edge's evidence: what `refs` shows of it, and what the
/// survey aggregates (a computation, so it lives here, not in `report`).
pub fn summarise(
    g: &Graph,
    scan: &Classified,
    from: NodeId,
    to: NodeId,
    keep: bool,
) -> EdgeSummary {
    let pe = scan.paths.get(&from);
    let ev: &[nix_heft_types::evidence::Evidence] = pe
        .and_then(|p| p.by_reference.get(&to))
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut kinds = std::collections::BTreeMap::new();
    let mut files: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for e in ev {
        *kinds.entry(e.kind).or_insert(0) += 1;
        if seen.insert(e.file.as_str()) {
            files.push(e.file.clone());
        }
    }
    let strongest = ev.iter().min_by_key(|e| e.verdict);
    let referrer = g.path(from).as_str();
    let unreadable = scan
        .problems
        .iter()
        .find(|p| p.path == referrer && p.file.is_none())
        .map(|p| p.message.clone());
    EdgeSummary {
        reason: strongest.map(|e| e.reason.clone()),
        unreadable,
        referrer: g.path(from).to_string(),
        reference: g.path(to).to_string(),
        unavailable: pe.is_none_or(|p| !p.available),
        dead: !ev.is_empty() && ev.iter().all(|e| e.dead),
        verdict: ev.iter().map(|e| e.verdict).min(),
        traced: ev.iter().filter_map(|e| e.traced).min(),
        kinds,
        files,
        evidence: keep.then(|| ev.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix_heft_scan::classify::PathEvidence;
    use nix_heft_types::evidence::{Evidence, Kind};

    fn ev(verdict: Verdict) -> Evidence {
        let mut e = Evidence::new(b"f", Kind::Text, 0, String::new());
        e.verdict = verdict;
        e
    }

    #[test]
    fn holding_is_the_strongest_read_hold_into_each_path() {
        let g = nix_heft_graph::testgraph::random_dag(1, 5, 1);
        let mut c = Classified::default();
        let edges: Vec<(NodeId, NodeId)> = (0..g.len() as NodeId)
            .flat_map(|v| g.references(v).iter().map(move |&t| (v, t)))
            .filter(|(v, t)| v != t)
            .collect();
        assert!(edges.len() >= 2, "{edges:?}");
        // The first edge held at build time and docs, the second at run
        // time, the rest dead; one referrer's contents unavailable.
        let verdicts = [
            vec![Verdict::Docs, Verdict::Build],
            vec![Verdict::Runtime, Verdict::Dead],
        ];
        for (k, &(from, to)) in edges.iter().enumerate() {
            let evs = verdicts
                .get(k)
                .cloned()
                .unwrap_or_else(|| vec![Verdict::Dead]);
            c.paths
                .entry(from)
                .or_insert_with(|| PathEvidence {
                    by_reference: Default::default(),
                    available: true,
                })
                .by_reference
                .insert(to, evs.into_iter().map(ev).collect());
        }
        let h = holding(&g, &c);
        for t in 0..g.len() as NodeId {
            let want = edges
                .iter()
                .filter(|e| e.1 == t)
                .map(|e| {
                    c.evidence(e.0, e.1)
                        .iter()
                        .map(|x| x.verdict)
                        .min()
                        .unwrap()
                })
                .min();
            assert_eq!(h[t as usize], want, "{t}");
        }
        // An unavailable referrer's edges count for nothing.
        let (from, to) = edges[1];
        c.paths.get_mut(&from).unwrap().available = false;
        let h = holding(&g, &c);
        assert_ne!(h[to as usize], Some(Verdict::Runtime));
    }
}
