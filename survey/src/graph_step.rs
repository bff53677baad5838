//! The graph step, on the coordinator: per path its closure size and how
//! many surveyed roots hold it (`dependents`); per edge `saving_max`, what
//! cutting that edge alone saves from the referrer's own closure. Per-root
//! savings of every edge would be billions of rows on a channel, so they
//! stay per edge. The graph functions are the library's, shared with
//! `advise` (`nix_heft_graph::bounds`).

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringBuilder, UInt64Builder};
use datafusion::arrow::error::ArrowError;
use nix_heft_graph::{Graph, NodeId, bounds};
use rayon::prelude::*;

use crate::schema;

/// `(graph_paths, graph_edges)`: the columns the graph step adds.
pub fn graph_step(g: &Graph) -> Result<(RecordBatch, RecordBatch), ArrowError> {
    let closure = nix_heft_graph::closure_sizes(g);
    let dependents = nix_heft_graph::dependents(g, g.roots());
    let mut path = StringBuilder::new();
    let mut cs = UInt64Builder::new();
    let mut deps = UInt64Builder::new();
    for v in 0..g.len() {
        path.append_value(g.path(v as NodeId).as_str());
        cs.append_value(closure[v]);
        deps.append_value(dependents[v]);
    }
    let paths = RecordBatch::try_new(
        schema::graph_paths(),
        vec![
            Arc::new(path.finish()),
            Arc::new(cs.finish()),
            Arc::new(deps.finish()),
        ],
    )?;
    // One dominator tree per referrer, over its own closure: independent,
    // so spread over the cores.
    let savings: Vec<Vec<(NodeId, u64)>> = (0..g.len() as NodeId)
        .into_par_iter()
        .map(|v| bounds::edge_savings(g, v))
        .collect();
    let mut referrer = StringBuilder::new();
    let mut reference = StringBuilder::new();
    let mut saving = UInt64Builder::new();
    for (v, es) in savings.iter().enumerate() {
        for &(t, s) in es {
            referrer.append_value(g.path(v as NodeId).as_str());
            reference.append_value(g.path(t).as_str());
            saving.append_value(s);
        }
    }
    let edges = RecordBatch::try_new(
        schema::graph_edges(),
        vec![
            Arc::new(referrer.finish()),
            Arc::new(reference.finish()),
            Arc::new(saving.finish()),
        ],
    )?;
    Ok((paths, edges))
}
