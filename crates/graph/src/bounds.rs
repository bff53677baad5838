//! Upper bounds, from the graph alone, on what any action on one referrer
//! can save: what lets `advise` read only the referrers that could matter.
//!
//! Every action `advise` proposes changes one package `v`: it removes some
//! of `v`'s references (a dead RUNPATH, a string, debug info) or moves some
//! of `v`'s files into outputs the roots do not keep (a split, a partition
//! of GPU targets). Either way, every path the roots reach without passing
//! through `v` stays in the closure, because those routes do not touch `v`.
//! So no action on `v` can save more than the paths that *every* route
//! from the roots to them passes through `v`, which is `v`'s added size
//! (its dominator subtree), `v` included. `v`'s own size belongs in the bound
//! because a split or partition removes part of `v` itself; leaving it
//! out (the closure difference if all of `v`'s references were gone) would
//! bound reference removals only. `nix_heft_analysis::plan::prune` tightens the own
//! part with `v`'s file tree where one costs no NAR.

use super::{Graph, NodeId, dominators};

/// For each node, the most any action on it can save (see the module
/// documentation): its added size with respect to the graph's roots.
pub fn max_savings(g: &Graph) -> Vec<u64> {
    dominators::added_sizes(g)
}

/// For each reference `t` of `v` (itself included when it refers to
/// itself, then with 0), what cutting the edge `v → t` alone saves from
/// `v`'s own closure: the survey's per-edge `saving_max`, and what advise
/// finds for a one-edge action with `v` as the root.
///
/// It is the same bound as [`max_savings`], taken in `v`'s closure with
/// `v` as the root. Store graphs are acyclic (self references aside), so
/// another referrer `u` of `t` inside that closure is reached from `v`
/// without passing through `t`: `t` stays, and the cut saves nothing.
/// Otherwise the edge is `t`'s only way in, and what leaves is exactly
/// what `t` dominates, its added size.
pub fn edge_savings(g: &Graph, v: NodeId) -> Vec<(NodeId, u64)> {
    let (sub, old) = g.rooted_at(&[v]);
    let added = max_savings(&sub);
    let mut out: Vec<(NodeId, u64)> = sub
        .references(0)
        .iter()
        .map(|&t| {
            let only_way_in = sub.referrers(t) == [0];
            (
                old[t as usize],
                if only_way_in { added[t as usize] } else { 0 },
            )
        })
        .collect();
    if g.references_self(v) {
        out.push((v, 0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NodeId;
    use crate::testgraph::random_dag;

    /// The closure of the roots when `v` keeps only `keep` of its own size
    /// and none of its references: the most extreme action on `v`.
    fn after_gutting(g: &Graph, v: NodeId) -> u64 {
        let mut seen = vec![false; g.len()];
        let mut stack: Vec<NodeId> = g.roots().to_vec();
        for &r in &stack {
            seen[r as usize] = true;
        }
        while let Some(u) = stack.pop() {
            if u == v {
                continue;
            }
            for &w in g.references(u) {
                if !std::mem::replace(&mut seen[w as usize], true) {
                    stack.push(w);
                }
            }
        }
        let mut size = g.size_of(&seen);
        if seen[v as usize] {
            size -= g.nar_size(v);
        }
        size
    }

    /// `v`'s closure size without the edge `v → t`, by traversal.
    fn closure_without_edge(g: &Graph, v: NodeId, t: NodeId) -> u64 {
        let mut seen = vec![false; g.len()];
        seen[v as usize] = true;
        let mut stack = vec![v];
        while let Some(u) = stack.pop() {
            for &w in g.references(u) {
                if (u, w) != (v, t) && !std::mem::replace(&mut seen[w as usize], true) {
                    stack.push(w);
                }
            }
        }
        g.size_of(&seen)
    }

    #[test]
    fn edge_savings_are_what_cutting_the_edge_saves() {
        for seed in 0..30 {
            let g = random_dag(seed, 90, 1 + seed as usize % 3);
            for v in 0..g.len() as NodeId {
                let own = g.size_of(&g.closure_of(&[v]));
                let got = edge_savings(&g, v);
                let mut want: Vec<NodeId> = g.references(v).to_vec();
                if g.references_self(v) {
                    want.push(v);
                }
                assert_eq!(
                    got.iter().map(|&(t, _)| t).collect::<Vec<_>>(),
                    want,
                    "seed {seed} node {v}"
                );
                for (t, saving) in got {
                    let expect = if t == v {
                        0
                    } else {
                        own - closure_without_edge(&g, v, t)
                    };
                    assert_eq!(saving, expect, "seed {seed} edge {v} -> {t}");
                }
            }
        }
    }

    #[test]
    fn bounds_every_action_on_random_dags() {
        for seed in 0..30 {
            let g = random_dag(seed, 120, 1 + seed as usize % 3);
            let all = g.size_of(&g.closure_of(g.roots()));
            let b = max_savings(&g);
            for v in 0..g.len() as NodeId {
                // Emptying v entirely and cutting all its references is
                // what no action exceeds; the bound is exactly that.
                assert_eq!(
                    b[v as usize],
                    all - after_gutting(&g, v),
                    "seed {seed} node {v}"
                );
            }
        }
    }
}
