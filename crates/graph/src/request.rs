//! What the read stage is asked to read: which edges a question needs
//! evidence for (every edge for `refs` and `advise`, the edges of some
//! chains for `why`, a path and its consumers for `split`). The read stage
//! reads exactly these. Not the graph's edges, which [`Graph`] holds.

use std::collections::{BTreeMap, BTreeSet};

use super::{Graph, NodeId};

/// A request to the read stage: for each referrer to read, the references
/// whose holds to find (self included where it refers to itself). An empty
/// list asks for the referrer's tree alone.
pub type ReadRequest = BTreeMap<NodeId, Vec<NodeId>>;

/// Every edge of the graph, self references included: what `refs` and
/// `advise` read.
pub fn all_edges(g: &Graph) -> ReadRequest {
    (0..g.len() as NodeId)
        .filter_map(|v| {
            let t = references_of(g, v);
            (!t.is_empty()).then_some((v, t))
        })
        .collect()
}

/// Every reference of `v`, itself included when it refers to itself.
pub fn references_of(g: &Graph, v: NodeId) -> Vec<NodeId> {
    let mut t = g.references(v).to_vec();
    if g.references_self(v) {
        t.push(v);
    }
    t
}

/// Adds the edges `from → to` to `wants`.
pub fn want(wants: &mut ReadRequest, edges: impl IntoIterator<Item = (NodeId, NodeId)>) {
    let mut sets: BTreeMap<NodeId, BTreeSet<NodeId>> = BTreeMap::new();
    for (k, v) in std::mem::take(wants) {
        sets.entry(k).or_default().extend(v);
    }
    for (f, t) in edges {
        sets.entry(f).or_default().insert(t);
    }
    *wants = sets
        .into_iter()
        .map(|(k, v)| (k, v.into_iter().collect()))
        .collect();
}
