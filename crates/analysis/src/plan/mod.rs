//! The plan stage: simulated output splits, partitions and advice, computed
//! from the graph, the file trees and the classified evidence of existing
//! store paths, without rebuilding and without touching the store. Only
//! plans live here: comparing closures is [`crate::diff`], explaining
//! holds is [`crate::explain`].

pub mod advise;
pub mod joint;
pub mod partition;
pub mod prune;
pub mod split;
pub mod whatif;

/// The file tree of `path` from the read, or an error saying the source
/// has no file contents for it, which `purpose` (a split, a partition)
/// needs.
pub(crate) fn tree_of<'c>(
    g: &nix_heft_graph::Graph,
    c: &'c nix_heft_scan::classify::Classified,
    path: nix_heft_graph::NodeId,
    purpose: &str,
) -> crate::Result<&'c nix_heft_format::nar::tree::FileTree> {
    c.trees.get(&path).ok_or_else(|| crate::Error::NoContents {
        path: g.path(path).to_string(),
        purpose: purpose.to_string(),
    })
}
