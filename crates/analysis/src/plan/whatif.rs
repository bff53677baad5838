//! A graph with edits on top, for "what would the closure be if ...".
//!
//! Edits never touch the loaded [`Graph`]: replaced reference lists, changed
//! NAR sizes and added nodes live in small maps beside it, so trying many
//! actions costs only their own size.

use std::collections::HashMap;

use nix_heft_graph::{Graph, NodeId};

/// A [`Graph`] plus edits.
#[derive(Debug, Clone)]
pub struct WhatIf<'g> {
    g: &'g Graph,
    extra_nar: Vec<u64>,
    extra_refs: Vec<Vec<NodeId>>,
    refs: HashMap<NodeId, Vec<NodeId>>,
    nar: HashMap<NodeId, u64>,
}

impl<'g> WhatIf<'g> {
    /// No edits yet.
    pub fn new(g: &'g Graph) -> Self {
        WhatIf {
            g,
            extra_nar: Vec::new(),
            extra_refs: Vec::new(),
            refs: HashMap::new(),
            nar: HashMap::new(),
        }
    }
    /// Adds a node (a simulated output) and returns its id.
    pub fn add_node(&mut self, nar_size: u64) -> NodeId {
        self.extra_nar.push(nar_size);
        self.extra_refs.push(Vec::new());
        (self.g.len() + self.extra_nar.len() - 1) as NodeId
    }
    /// Replaces the references of `v` (self references are ignored).
    pub fn set_refs(&mut self, v: NodeId, refs: Vec<NodeId>) {
        let refs: Vec<NodeId> = refs.into_iter().filter(|&r| r != v).collect();
        if (v as usize) < self.g.len() {
            self.refs.insert(v, refs);
        } else {
            self.extra_refs[v as usize - self.g.len()] = refs;
        }
    }
    /// Removes one edge.
    pub fn remove_edge(&mut self, from: NodeId, to: NodeId) {
        let mut r = self.references(from).to_vec();
        r.retain(|&x| x != to);
        self.set_refs(from, r);
    }
    /// Changes the NAR size of an existing node.
    pub fn set_nar(&mut self, v: NodeId, size: u64) {
        if (v as usize) < self.g.len() {
            self.nar.insert(v, size);
        } else {
            self.extra_nar[v as usize - self.g.len()] = size;
        }
    }
    /// Current references of `v`.
    pub fn references(&self, v: NodeId) -> &[NodeId] {
        if (v as usize) >= self.g.len() {
            return &self.extra_refs[v as usize - self.g.len()];
        }
        self.refs
            .get(&v)
            .map(Vec::as_slice)
            .unwrap_or_else(|| self.g.references(v))
    }
    /// Current NAR size of `v`.
    pub fn nar_size(&self, v: NodeId) -> u64 {
        if (v as usize) >= self.g.len() {
            return self.extra_nar[v as usize - self.g.len()];
        }
        self.nar
            .get(&v)
            .copied()
            .unwrap_or_else(|| self.g.nar_size(v))
    }
    /// Ids of the closure of `roots` under the edits.
    pub fn closure(&self, roots: &[NodeId]) -> Vec<NodeId> {
        let total = self.g.len() + self.extra_nar.len();
        let mut seen = vec![false; total];
        let mut stack: Vec<NodeId> = Vec::new();
        let mut out = Vec::new();
        for &r in roots {
            if !std::mem::replace(&mut seen[r as usize], true) {
                stack.push(r);
            }
        }
        while let Some(v) = stack.pop() {
            out.push(v);
            for &w in self.references(v) {
                if !std::mem::replace(&mut seen[w as usize], true) {
                    stack.push(w);
                }
            }
        }
        out
    }
    /// Closure size of `roots` under the edits.
    pub fn closure_size(&self, roots: &[NodeId]) -> u64 {
        self.closure(roots).iter().map(|&v| self.nar_size(v)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix_heft_graph::testgraph::random_dag;

    #[test]
    fn unedited_equals_graph_and_edits_apply() {
        let g = random_dag(7, 100, 2);
        let w = WhatIf::new(&g);
        assert_eq!(
            w.closure_size(g.roots()),
            g.size_of(&g.closure_of(g.roots()))
        );
        let mut w2 = w.clone();
        let r = g.roots()[0];
        w2.set_refs(r, vec![]);
        let only_other = g.size_of(&g.closure_of(&[g.roots()[1]]));
        let with_r = g.size_of(
            &g.closure_of(&[g.roots()[1]])
                .iter()
                .enumerate()
                .map(|(i, &m)| m || i == r as usize)
                .collect::<Vec<_>>(),
        );
        assert_eq!(w2.closure_size(g.roots()), with_r);
        assert!(w2.closure_size(&[g.roots()[1]]) == only_other);
        let n = w2.add_node(5);
        w2.set_refs(r, vec![n]);
        assert_eq!(w2.closure_size(&[r]), g.nar_size(r) + 5);
    }
}
