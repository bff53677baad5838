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
//! bound reference removals only. [`crate::plan::prune`] tightens the own
//! part with `v`'s file tree where one costs no NAR.

use super::{Graph, dominators};

/// For each node, the most any action on it can save (see the module
/// documentation): its added size with respect to the graph's roots.
pub fn max_savings(g: &Graph) -> Vec<u64> {
    dominators::added_sizes(g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::NodeId;
    use crate::graph::testgraph::random_dag;

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
