//! What-if planning: simulated output splits, partitions and advice, computed from the files of existing store paths without rebuilding.

pub mod advise;
pub mod partition;
pub mod split;
pub mod tree;
pub mod whatif;

/// The file tree of `path`, or an error saying the source has no file
/// contents, which `purpose` (a split, a partition) needs.
pub(crate) fn read_tree(
    src: &dyn crate::source::StoreSource,
    g: &crate::graph::Graph,
    path: crate::graph::NodeId,
    purpose: &str,
) -> crate::Result<tree::FileTree> {
    tree::FileTree::read(src, g.path(path))?.ok_or_else(|| crate::Error::UnsupportedStore {
        spec: src.describe(),
        reason: format!(
            "it has no file contents for {}, which {purpose} needs",
            g.path(path)
        ),
    })
}
