//! The sizes of every path of a closure that the `size` table and the
//! `report` page show, computed here once so that the report stage only
//! formats them.

use super::{Dominators, Graph, NodeId, closure_sizes};

/// Closure size, added size and immediate dominator of every path of a
/// graph with respect to its roots, and the roots' combined closure size.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// Closure size of each path, by id (what `nix path-info -S` prints).
    pub closure: Vec<u64>,
    /// Added size of each path, by id: the bytes that leave the roots'
    /// closure when it is no longer kept (its dominator subtree).
    pub added: Vec<u64>,
    /// The roots' combined closure size.
    pub total: u64,
    dominators: Dominators,
}

impl Sizes {
    /// Computes every size over `g` ([`closure_sizes`], [`Dominators`]).
    /// The dominator tree (one core) is built while the closure sizes
    /// (every core) are counted.
    pub fn compute(g: &Graph) -> Sizes {
        let ((dominators, total), closure) = rayon::join(
            || {
                let d = Dominators::compute(g);
                (d, g.size_of(&g.closure_of(g.roots())))
            },
            || closure_sizes(g),
        );
        Sizes {
            closure,
            added: dominators.subtree_sizes(g),
            total,
            dominators,
        }
    }

    /// The immediate dominator of `v`, `None` under the virtual root over
    /// all roots (a root, or a path several roots' closures share).
    pub fn idom(&self, v: NodeId) -> Option<NodeId> {
        self.dominators.idom(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::added_sizes;
    use crate::testgraph::random_dag;

    #[test]
    fn agree_with_the_graph_functions() {
        for seed in 0..5 {
            let g = random_dag(seed, 120, 1 + seed as usize % 3);
            let s = Sizes::compute(&g);
            assert_eq!(s.closure, closure_sizes(&g));
            assert_eq!(s.added, added_sizes(&g));
            let all: u64 = (0..g.len() as NodeId).map(|v| g.nar_size(v)).sum();
            assert_eq!(s.total, all);
        }
    }
}
