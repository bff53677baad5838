//! The graph Nix's collector decides liveness on, and what it gives.
//!
//! Nix 2.8's `collectGarbage` deletes a path when no root reaches it,
//! where a path reaches its references, a live derivation its outputs with
//! `keep-outputs` (`computeFSClosure`'s `includeOutputs`, by
//! `DerivationOutputs`), and a live output its deriver with
//! `keep-derivations` (`includeDerivers`, the deriver recorded for it and
//! listing it as an output, as the collector's reverse walk requires). Its
//! walk goes backwards from each candidate; the same set is reached forwards
//! from the roots, which is what this graph does: nodes `0..paths` are the
//! store paths, then one node per path some root holds (all the roots of
//! that path together), which a virtual root points to.
//!
//! From it, at once for every root ([`nix_heft_graph::Dominators`]): a path is
//! freed by removing one root node exactly when that node dominates it, so
//! a node's dominator subtree is what removing every root of its path
//! frees; nodes no start reaches are dead now. For a *group* of roots
//! (removing several together), the root nodes all of whose roots are in
//! the group go, and a path is freed when it is reached from those but from
//! no root node that stays: 64 groups at a time, one bit each, pushed along
//! the edges in topological order of the strongly connected components
//! (`keep-outputs` with `keep-derivations` makes a cycle of every output and
//! its derivation).

use nix_heft_graph::{Flow, Graph, NodeId};

const UNDEF: u32 = u32::MAX;

/// How one node reaches the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EdgeKind {
    /// A root holds the path.
    Root,
    /// A registered reference.
    Reference,
    /// A live derivation keeps its output (`keep-outputs`).
    KeepOutputs,
    /// A live output keeps its derivation (`keep-derivations`).
    KeepDerivations,
}

/// The liveness graph (see the module documentation).
pub struct Liveness {
    /// Store paths are nodes `0..paths`.
    pub paths: usize,
    /// The root nodes (`paths..`), in order.
    starts: Vec<NodeId>,
    /// The store path each root node holds.
    pub targets: Vec<NodeId>,
    succ_off: Vec<u32>,
    succ: Vec<NodeId>,
    pred_off: Vec<u32>,
    pred: Vec<NodeId>,
    /// The `keep-outputs` edges, sorted, to tell a chain's edges apart
    /// (an edge that is neither a reference nor one of these is a
    /// `keep-derivations` edge).
    keep_outputs: Vec<(NodeId, NodeId)>,
}

impl Flow for Liveness {
    fn node_count(&self) -> usize {
        self.paths + self.targets.len()
    }
    fn starts(&self) -> &[NodeId] {
        &self.starts
    }
    fn successors(&self, v: NodeId) -> &[NodeId] {
        &self.succ[self.succ_off[v as usize] as usize..self.succ_off[v as usize + 1] as usize]
    }
    fn predecessors(&self, v: NodeId) -> &[NodeId] {
        &self.pred[self.pred_off[v as usize] as usize..self.pred_off[v as usize + 1] as usize]
    }
}

impl Liveness {
    /// The graph over `g`'s paths with the `keep-outputs` edges
    /// (`derivation → output`) and `keep-derivations` edges (`output →
    /// derivation`) given, and one root node per path of `targets`.
    pub fn new(
        g: &Graph,
        mut keep_outputs: Vec<(NodeId, NodeId)>,
        mut keep_derivations: Vec<(NodeId, NodeId)>,
        targets: Vec<NodeId>,
    ) -> Liveness {
        keep_outputs.sort_unstable();
        keep_outputs.dedup();
        keep_derivations.sort_unstable();
        keep_derivations.dedup();
        let paths = g.len();
        let n = paths + targets.len();
        // Extra edges of each path, merged with its references.
        let mut extra: Vec<(NodeId, NodeId)> = keep_outputs
            .iter()
            .chain(&keep_derivations)
            .copied()
            .filter(|(a, b)| a != b)
            .collect();
        extra.sort_unstable();
        let mut succ_off = Vec::with_capacity(n + 1);
        let mut succ = Vec::with_capacity(g.edge_count() + extra.len() + targets.len());
        succ_off.push(0u32);
        let mut e = 0;
        for v in 0..paths as NodeId {
            let start = succ.len();
            succ.extend_from_slice(g.references(v));
            let mut added = false;
            while e < extra.len() && extra[e].0 == v {
                succ.push(extra[e].1);
                e += 1;
                added = true;
            }
            if added {
                succ[start..].sort_unstable();
                let mut w = start;
                for k in start..succ.len() {
                    if k == start || succ[k] != succ[w - 1] {
                        succ[w] = succ[k];
                        w += 1;
                    }
                }
                succ.truncate(w);
            }
            succ_off.push(succ.len() as u32);
        }
        for &t in &targets {
            succ.push(t);
            succ_off.push(succ.len() as u32);
        }
        let (pred_off, pred) = nix_heft_graph::transpose(&succ_off, &succ);
        Liveness {
            paths,
            starts: (paths as NodeId..n as NodeId).collect(),
            targets,
            succ_off,
            succ,
            pred_off,
            pred,
            keep_outputs,
        }
    }

    /// The root node of the `k`th target.
    pub fn root_node(&self, k: usize) -> NodeId {
        (self.paths + k) as NodeId
    }

    /// How `from` reaches `to` (an edge of this graph).
    pub fn edge_kind(&self, g: &Graph, from: NodeId, to: NodeId) -> EdgeKind {
        if from as usize >= self.paths {
            EdgeKind::Root
        } else if g.references(from).binary_search(&to).is_ok() {
            EdgeKind::Reference
        } else if self.keep_outputs.binary_search(&(from, to)).is_ok() {
            EdgeKind::KeepOutputs
        } else {
            EdgeKind::KeepDerivations
        }
    }

    /// Every node in topological order of the strongly connected
    /// components (a component's nodes together, every component after
    /// those that reach it), and each node's component: Tarjan's
    /// algorithm, iteratively.
    pub fn components(&self) -> (Vec<NodeId>, Vec<u32>) {
        let n = self.node_count();
        let mut index = vec![UNDEF; n];
        let mut low = vec![0u32; n];
        let mut comp = vec![UNDEF; n];
        let mut on_stack = vec![false; n];
        let mut stack: Vec<NodeId> = Vec::new();
        let mut emitted: Vec<NodeId> = Vec::with_capacity(n);
        let mut counter = 0u32;
        let mut comps = 0u32;
        let mut frames: Vec<(NodeId, usize)> = Vec::new();
        for s in 0..n as NodeId {
            if index[s as usize] != UNDEF {
                continue;
            }
            index[s as usize] = counter;
            low[s as usize] = counter;
            counter += 1;
            stack.push(s);
            on_stack[s as usize] = true;
            frames.push((s, 0));
            while let Some(&mut (v, ref mut i)) = frames.last_mut() {
                let succ = self.successors(v);
                if *i < succ.len() {
                    let w = succ[*i];
                    *i += 1;
                    if index[w as usize] == UNDEF {
                        index[w as usize] = counter;
                        low[w as usize] = counter;
                        counter += 1;
                        stack.push(w);
                        on_stack[w as usize] = true;
                        frames.push((w, 0));
                    } else if on_stack[w as usize] {
                        low[v as usize] = low[v as usize].min(index[w as usize]);
                    }
                    continue;
                }
                frames.pop();
                if low[v as usize] == index[v as usize] {
                    loop {
                        let w = stack.pop().expect("v is on the stack");
                        on_stack[w as usize] = false;
                        comp[w as usize] = comps;
                        emitted.push(w);
                        if w == v {
                            break;
                        }
                    }
                    comps += 1;
                }
                if let Some(&(p, _)) = frames.last() {
                    low[p as usize] = low[p as usize].min(low[v as usize]);
                }
            }
        }
        // Tarjan emits a component after every component it reaches.
        emitted.reverse();
        (emitted, comp)
    }

    /// For a batch of up to 64 groups: `removed[k]` has bit `i` set when
    /// group `i` takes every root of root node `k`. Returns, per node, the
    /// groups that free it (reached from a removed root node and from no
    /// root node that stays).
    pub fn freed_by_groups(&self, order: &[NodeId], comp: &[u32], removed: &[u64]) -> Vec<u64> {
        let n = self.node_count();
        let all: u64 = removed.iter().fold(0, |a, &b| a | b);
        let mut reach_in = vec![0u64; n];
        let mut reach_out = vec![0u64; n];
        for (k, &r) in removed.iter().enumerate() {
            let v = self.root_node(k) as usize;
            reach_in[v] = r;
            reach_out[v] = all & !r;
        }
        let mut i = 0;
        while i < order.len() {
            let c = comp[order[i] as usize];
            let mut j = i;
            let (mut a, mut b) = (0u64, 0u64);
            while j < order.len() && comp[order[j] as usize] == c {
                a |= reach_in[order[j] as usize];
                b |= reach_out[order[j] as usize];
                j += 1;
            }
            if a | b != 0 {
                for &v in &order[i..j] {
                    reach_in[v as usize] = a;
                    reach_out[v as usize] = b;
                    for &w in self.successors(v) {
                        reach_in[w as usize] |= a;
                        reach_out[w as usize] |= b;
                    }
                }
            }
            i = j;
        }
        reach_in
            .into_iter()
            .zip(reach_out)
            .map(|(a, b)| a & !b)
            .collect()
    }

    /// The nodes that reach `target`, each with the next node on a
    /// shortest way from it to `target` (`UNDEF` for `target` itself and
    /// for nodes that do not reach it): a breadth-first walk backwards.
    pub fn toward(&self, target: NodeId) -> Vec<u32> {
        let mut next = vec![UNDEF; self.node_count()];
        let mut queue = std::collections::VecDeque::from([target]);
        let mut seen = vec![false; self.node_count()];
        seen[target as usize] = true;
        while let Some(v) = queue.pop_front() {
            for &p in self.predecessors(v) {
                if !std::mem::replace(&mut seen[p as usize], true) {
                    next[p as usize] = v;
                    queue.push_back(p);
                }
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix_heft_graph::Dominators;
    use nix_heft_graph::testgraph::{SplitMix, random_dag};

    /// What removing the root nodes in `gone` frees, by definition: the
    /// nodes reached from the starts minus those reached from the starts
    /// that stay.
    fn naive_freed(l: &Liveness, gone: &[bool]) -> Vec<bool> {
        let reach = |starts: Vec<NodeId>| {
            let mut seen = vec![false; l.node_count()];
            let mut stack = starts;
            for &s in &stack {
                seen[s as usize] = true;
            }
            while let Some(v) = stack.pop() {
                for &w in l.successors(v) {
                    if !std::mem::replace(&mut seen[w as usize], true) {
                        stack.push(w);
                    }
                }
            }
            seen
        };
        let all = reach(l.starts().to_vec());
        let stay = reach(
            l.starts()
                .iter()
                .copied()
                .filter(|&s| !gone[s as usize - l.paths])
                .collect(),
        );
        all.iter().zip(&stay).map(|(a, b)| *a && !*b).collect()
    }

    /// A random store graph with a few keep edges (cycles included) and
    /// root nodes on random paths.
    fn random_liveness(seed: u64) -> (Graph, Liveness) {
        let g = random_dag(seed, 120, 1);
        let mut rng = SplitMix(seed ^ 0xfeed);
        let n = g.len() as u64;
        let mut ko = Vec::new();
        let mut kd = Vec::new();
        for _ in 0..8 {
            let (a, b) = (rng.below(n) as NodeId, rng.below(n) as NodeId);
            ko.push((a, b));
            kd.push((b, a));
        }
        let targets: Vec<NodeId> = (0..10).map(|_| rng.below(n) as NodeId).collect();
        let mut t = targets.clone();
        t.sort_unstable();
        t.dedup();
        let l = Liveness::new(&g, ko, kd, t);
        (g, l)
    }

    #[test]
    fn dominator_subtrees_are_what_one_root_node_frees() {
        for seed in 0..40 {
            let (_g, l) = random_liveness(seed);
            let d = Dominators::compute_flow(&l);
            let counts = d.subtree_sums(
                (0..l.node_count())
                    .map(|v| u64::from(v < l.paths))
                    .collect(),
            );
            for k in 0..l.targets.len() {
                let mut gone = vec![false; l.targets.len()];
                gone[k] = true;
                let want = naive_freed(&l, &gone)[..l.paths]
                    .iter()
                    .filter(|&&b| b)
                    .count() as u64;
                assert_eq!(
                    counts[l.root_node(k) as usize],
                    want,
                    "seed {seed} root {k}"
                );
            }
        }
    }

    #[test]
    fn group_bits_are_what_removing_groups_frees() {
        for seed in 0..40 {
            let (_g, l) = random_liveness(seed);
            let (order, comp) = l.components();
            assert_eq!(order.len(), l.node_count());
            let mut rng = SplitMix(seed);
            let groups: Vec<Vec<bool>> = (0..20)
                .map(|_| (0..l.targets.len()).map(|_| rng.below(3) == 0).collect())
                .collect();
            let removed: Vec<u64> = (0..l.targets.len())
                .map(|k| {
                    groups
                        .iter()
                        .enumerate()
                        .filter(|(_, g)| g[k])
                        .fold(0, |a, (i, _)| a | 1 << i)
                })
                .collect();
            let freed = l.freed_by_groups(&order, &comp, &removed);
            for (i, gone) in groups.iter().enumerate() {
                let want = naive_freed(&l, gone);
                for v in 0..l.paths {
                    assert_eq!(
                        freed[v] >> i & 1 == 1,
                        want[v],
                        "seed {seed} group {i} node {v}"
                    );
                }
            }
        }
    }

    #[test]
    fn components_come_in_topological_order() {
        for seed in 0..20 {
            let (_g, l) = random_liveness(seed);
            let (order, comp) = l.components();
            let mut pos = vec![0; l.node_count()];
            for (i, &v) in order.iter().enumerate() {
                pos[v as usize] = i;
            }
            for v in 0..l.node_count() as NodeId {
                for &w in l.successors(v) {
                    assert!(
                        comp[v as usize] == comp[w as usize] || pos[v as usize] < pos[w as usize],
                        "seed {seed}: {v} -> {w}"
                    );
                }
            }
        }
    }
}
