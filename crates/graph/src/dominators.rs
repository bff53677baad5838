//! Dominator tree of a closure and the "added size" it gives.
//!
//! A path's **added size** is the number of bytes that would leave the
//! closure of the roots if that path were no longer kept: the path itself
//! plus everything reachable only through it. That is exactly the summed NAR
//! size of its subtree in the dominator tree of the graph, rooted at a
//! virtual node that references all roots. (nix-tree calls this "added
//! size"; it is *not* the closure size minus shared paths of one sibling.)
//!
//! The tree is computed with the iterative algorithm of Cooper, Harvey and
//! Kennedy ("A Simple, Fast Dominance Algorithm", 2001) over a reverse
//! postorder. Store graphs are acyclic (Nix refuses reference cycles between
//! paths), and on a DAG in reverse postorder every predecessor is final
//! before its successor is visited, so one pass suffices; a second pass runs
//! only when the depth-first search met a back edge. Each pass costs the
//! edges times the length of the dominator-tree walks, which is shallow in
//! store graphs, so the whole computation is near-linear. Written here
//! rather than taken from petgraph because it runs on this module's
//! compressed adjacency directly, without copying the graph into another
//! representation.

use super::{Graph, NodeId};

const UNDEF: u32 = u32::MAX;

/// A directed graph as the dominator computation walks it: nodes
/// `0..node_count()`, the nodes a virtual root points to (`starts`), and
/// each node's successors and predecessors. [`Graph`] is one (its roots
/// and references); the collector's liveness graph (`nix_heft_ops::gc`, with root
/// nodes and `keep-outputs`/`keep-derivations` edges) is another.
pub trait Flow {
    /// Number of nodes.
    fn node_count(&self) -> usize;
    /// The nodes the virtual root points to.
    fn starts(&self) -> &[NodeId];
    /// The nodes `v` points to.
    fn successors(&self, v: NodeId) -> &[NodeId];
    /// The nodes that point to `v` (the virtual root not included).
    fn predecessors(&self, v: NodeId) -> &[NodeId];
}

impl Flow for Graph {
    fn node_count(&self) -> usize {
        self.len()
    }
    fn starts(&self) -> &[NodeId] {
        self.roots()
    }
    fn successors(&self, v: NodeId) -> &[NodeId] {
        self.references(v)
    }
    fn predecessors(&self, v: NodeId) -> &[NodeId] {
        self.referrers(v)
    }
}

/// The dominator tree of a graph under a virtual root over its roots.
#[derive(Debug, Clone)]
pub struct Dominators {
    /// Immediate dominator of each node; `None` for a root's virtual parent
    /// (and for a node the virtual root does not reach).
    idom: Vec<Option<NodeId>>,
    /// Reachable nodes in depth-first postorder (dominated before
    /// dominator).
    postorder: Vec<NodeId>,
    /// Whether the virtual root reaches each node.
    reached: Vec<bool>,
}

impl Dominators {
    /// Computes the tree of a closure. Precondition: every node is
    /// reachable from a root (true of any graph loaded as a closure).
    pub fn compute(g: &Graph) -> Dominators {
        Dominators::compute_flow(g)
    }

    /// Computes the tree of any [`Flow`]; nodes the starts do not reach
    /// are left out of it ([`Dominators::is_reached`] says which).
    pub fn compute_flow(g: &impl Flow) -> Dominators {
        let n = g.node_count();
        let vroot = n as u32; // virtual root's id
        // Iterative DFS from the virtual root, recording postorder numbers.
        let mut po_num = vec![UNDEF; n + 1];
        let mut postorder: Vec<u32> = Vec::with_capacity(n + 1);
        let mut on_stack = vec![false; n + 1];
        let mut visited = vec![false; n + 1];
        let mut cyclic = false;
        let succ = |v: u32| -> &[NodeId] {
            if v == vroot {
                g.starts()
            } else {
                g.successors(v)
            }
        };
        let mut stack: Vec<(u32, usize)> = vec![(vroot, 0)];
        visited[vroot as usize] = true;
        on_stack[vroot as usize] = true;
        while let Some(&mut (v, ref mut i)) = stack.last_mut() {
            let s = succ(v);
            if *i < s.len() {
                let w = s[*i];
                *i += 1;
                if !visited[w as usize] {
                    visited[w as usize] = true;
                    on_stack[w as usize] = true;
                    stack.push((w, 0));
                } else if on_stack[w as usize] {
                    cyclic = true;
                }
            } else {
                on_stack[v as usize] = false;
                po_num[v as usize] = postorder.len() as u32;
                postorder.push(v);
                stack.pop();
            }
        }
        drop(on_stack);
        let mut is_root = vec![false; n];
        for &r in g.starts() {
            is_root[r as usize] = true;
        }
        let mut idom = vec![UNDEF; n + 1];
        idom[vroot as usize] = vroot;
        let intersect = |idom: &[u32], mut a: u32, mut b: u32| -> u32 {
            while a != b {
                while po_num[a as usize] < po_num[b as usize] {
                    a = idom[a as usize];
                }
                while po_num[b as usize] < po_num[a as usize] {
                    b = idom[b as usize];
                }
            }
            a
        };
        loop {
            let mut changed = false;
            for &b in postorder.iter().rev() {
                if b == vroot {
                    continue;
                }
                let mut new = if is_root[b as usize] { vroot } else { UNDEF };
                for &p in g.predecessors(b) {
                    if idom[p as usize] == UNDEF {
                        continue;
                    }
                    new = if new == UNDEF {
                        p
                    } else {
                        intersect(&idom, p, new)
                    };
                }
                if idom[b as usize] != new {
                    idom[b as usize] = new;
                    changed = true;
                }
            }
            if !cyclic || !changed {
                break;
            }
        }
        postorder.pop(); // the virtual root finishes last
        visited.truncate(n);
        Dominators {
            idom: idom[..n]
                .iter()
                .map(|&d| (d != vroot && d != UNDEF).then_some(d))
                .collect(),
            postorder,
            reached: visited,
        }
    }

    /// The immediate dominator of `v`, or `None` when only the virtual root
    /// dominates it (a root, or a path shared by several roots' closures),
    /// or when it is not reached.
    pub fn idom(&self, v: NodeId) -> Option<NodeId> {
        self.idom[v as usize]
    }

    /// Whether the starts reach `v` (always, for a closure's graph).
    pub fn is_reached(&self, v: NodeId) -> bool {
        self.reached[v as usize]
    }

    /// The reached nodes, each after every node it dominates.
    pub fn postorder(&self) -> &[NodeId] {
        &self.postorder
    }

    /// Summed NAR size of every node's dominator subtree.
    ///
    /// The additions cannot overflow: each partial sum covers distinct
    /// nodes of one subtree, so it is at most the sum over the whole graph,
    /// which [`Graph::try_from_raw`] checked fits in a `u64`.
    pub fn subtree_sizes(&self, g: &Graph) -> Vec<u64> {
        let own: Vec<u64> = (0..g.len() as NodeId).map(|v| g.nar_size(v)).collect();
        self.subtree_sums(own)
    }

    /// Every node's dominator subtree summed over `weights` (one per
    /// node, taken as the accumulator); a node not reached keeps its own.
    /// The caller bounds the total so that no sum wraps.
    pub fn subtree_sums(&self, mut weights: Vec<u64>) -> Vec<u64> {
        for &v in &self.postorder {
            if let Some(d) = self.idom[v as usize] {
                weights[d as usize] += weights[v as usize];
            }
        }
        weights
    }
}

/// Added size of every path with respect to the graph's roots (see the
/// module documentation).
pub fn added_sizes(g: &Graph) -> Vec<u64> {
    Dominators::compute(g).subtree_sizes(g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testgraph::random_dag;

    /// Added size by definition: closure of the roots minus the closure of
    /// the roots in the graph with `v` removed.
    fn naive_added(g: &Graph, v: NodeId) -> u64 {
        let all = g.size_of(&g.closure_of(g.roots()));
        let mut seen = vec![false; g.len()];
        seen[v as usize] = true; // removed: never entered
        let mut stack: Vec<NodeId> = g.roots().iter().copied().filter(|&r| r != v).collect();
        for &r in &stack {
            seen[r as usize] = true;
        }
        while let Some(u) = stack.pop() {
            for &w in g.references(u) {
                if !std::mem::replace(&mut seen[w as usize], true) {
                    stack.push(w);
                }
            }
        }
        seen[v as usize] = false;
        all - g.size_of(&seen)
    }

    #[test]
    fn matches_definition_on_random_dags() {
        for seed in 0..30 {
            let roots = 1 + (seed as usize % 4);
            let g = random_dag(seed, 150, roots);
            let added = added_sizes(&g);
            for v in 0..g.len() as NodeId {
                assert_eq!(
                    added[v as usize],
                    naive_added(&g, v),
                    "seed {seed} node {v}"
                );
            }
            // The roots' added sizes never exceed the whole closure, and a
            // single root's equals it.
            if roots == 1 {
                assert_eq!(added[0], g.size_of(&g.closure_of(g.roots())));
            }
        }
    }
}
