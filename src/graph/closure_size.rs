//! Closure size of every path: the sum of NAR sizes of everything it
//! references, directly or not, itself included — what `nix path-info -S`
//! prints.
//!
//! Closure sizes do not compose (children share descendants), so each path
//! gets its own traversal. It is made cheap rather than avoided: one visited
//! array per thread, reset in O(1) by bumping an epoch number instead of
//! clearing, and rayon spreads the paths over all cores.

use rayon::prelude::*;

use super::{Graph, NodeId};

/// Closure size of every path in `g`, indexed by id.
pub fn closure_sizes(g: &Graph) -> Vec<u64> {
    let n = g.len();
    (0..n as NodeId)
        .into_par_iter()
        .with_min_len(256)
        .map_init(
            || (vec![0u32; n], 0u32, Vec::<NodeId>::new()),
            |(stamp, epoch, stack), v| {
                *epoch += 1;
                let e = *epoch;
                stamp[v as usize] = e;
                stack.push(v);
                let mut sum = 0u64;
                while let Some(u) = stack.pop() {
                    sum += g.nar_size(u);
                    for &w in g.references(u) {
                        if stamp[w as usize] != e {
                            stamp[w as usize] = e;
                            stack.push(w);
                        }
                    }
                }
                sum
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::testgraph::random_dag;

    #[test]
    fn matches_naive_closure() {
        for seed in 0..20 {
            let g = random_dag(seed, 200, 3);
            let sizes = closure_sizes(&g);
            for v in 0..g.len() as NodeId {
                let naive = g.size_of(&g.closure_of(&[v]));
                assert_eq!(sizes[v as usize], naive, "seed {seed} node {v}");
            }
        }
    }
}
