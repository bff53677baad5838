//! Which referrers `advise` must read: the graph-first bound of the HTTP
//! cache issue, made tight with a file tree where one costs no NAR.
//!
//! The graph alone bounds any action on a referrer `v` by its added size
//! ([`nix_heft_graph::bounds::max_savings`]), `v`'s own bytes included. Of
//! that bound, the part below `v` (what cutting *all* of `v`'s references
//! would save) no tree can shrink. The part that is `v` itself only a split
//! or a partition can remove, and only the files they move: the nixpkgs
//! preset's `include/`, `lib/cmake`, `share/doc` …, or the files named after
//! a GPU target. A 350 MiB library whose references stay anyway and that has
//! no such files can save nothing, and its NAR need never be downloaded.
//! Its tree comes from a NAR listing (`.ls`) or the disk; where a source has
//! neither, the path is read in full and the same bound applied after, so
//! every source gives the same advice with the same flags.

use std::collections::{BTreeMap, HashSet};

use regex::bytes::Regex;

use super::split::{assign, nixpkgs_preset};
use nix_heft_format::nar::tree::{FileTree, TreeEntry, TreeNode};
use nix_heft_graph::{Graph, NodeId, ReadRequest};

/// What the pruning knows of one referrer before reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstCut {
    /// No action on it can reach the threshold: skip it, with its bound.
    Skip(u64),
    /// Its references alone may reach the threshold: read it.
    Read,
    /// Only its own files could reach the threshold: its tree decides.
    NeedsTree,
}

/// The decision from the graph alone, with `added` from
/// [`nix_heft_graph::bounds::max_savings`].
pub fn first_cut(g: &Graph, added: &[u64], v: NodeId, min: u64) -> FirstCut {
    let bound = added[v as usize];
    if bound < min {
        FirstCut::Skip(bound)
    } else if references_part(g, added, v) >= min {
        FirstCut::Read
    } else {
        FirstCut::NeedsTree
    }
}

/// What cutting every reference of `v` saves at most: the paths only `v`
/// keeps, without `v` itself (the bound the HTTP cache issue names).
pub fn references_part(g: &Graph, added: &[u64], v: NodeId) -> u64 {
    added[v as usize].saturating_sub(g.nar_size(v))
}

/// The bound on any action on `v` once its tree is known: the references'
/// part plus the most a split or a partition could remove of `v` itself.
pub fn with_tree(g: &Graph, added: &[u64], v: NodeId, tree: &FileTree) -> u64 {
    let own = g.nar_size(v);
    references_part(g, added, v).saturating_add(own_part(own, tree).min(own))
}

/// The most a split (nixpkgs preset, propagated inputs moved to `dev`) or a
/// per-target partition (every target's files dropped) removes of a path
/// of NAR size `nar` with this tree.
pub fn own_part(nar: u64, tree: &FileTree) -> u64 {
    let split = match assign(tree, &nixpkgs_preset(), true) {
        Ok(a) => {
            let out: Vec<TreeEntry> = tree
                .entries
                .iter()
                .filter(|e| a.files[0].contains(&e.path))
                .cloned()
                .collect();
            nar.saturating_sub(FileTree::from_entries(out).nar_size())
        }
        // A tree the preset cannot be applied to is never split by advise
        // either; stay on the safe side all the same.
        Err(_) => nar,
    };
    let patterns: Vec<Regex> = super::advise::TARGET_PATTERNS
        .iter()
        .map(|(p, _)| Regex::new(p).expect("static pattern"))
        .collect();
    let grouped = |e: &TreeEntry| {
        let hit = |s: &[u8]| patterns.iter().any(|re| re.is_match(s));
        match &e.node {
            TreeNode::Directory => false,
            TreeNode::Regular { .. } => hit(&e.path),
            TreeNode::Symlink { target } => hit(&e.path) || hit(target),
        }
    };
    let ungrouped: Vec<TreeEntry> = tree
        .entries
        .iter()
        .filter(|e| !grouped(e))
        .cloned()
        .collect();
    let partition = if ungrouped.len() == tree.entries.len() {
        0
    } else {
        nar.saturating_sub(FileTree::from_entries(ungrouped).nar_size())
    };
    split.max(partition)
}

/// `advise`'s pruning of a whole closure, in the order it learns: the
/// graph ([`Pruning::new`]), then the trees that cost no NAR, then the trees
/// the read brought ([`Pruning::settle`] for both). Pure: the caller fetches
/// the trees.
#[derive(Debug, Clone)]
pub struct Pruning {
    /// Per path, the graph's bound on any action
    /// ([`nix_heft_graph::bounds::max_savings`]).
    added: Vec<u64>,
    /// The threshold (`--min-saving` in bytes).
    min: u64,
    /// Referrers no action on which can reach the threshold, with their
    /// bounds.
    skipped: Vec<(NodeId, u64)>,
    /// Referrers whose bound waits for their tree.
    pending: Vec<NodeId>,
}

impl Pruning {
    /// The first cut of every referrer of `wants`, from the graph alone.
    pub fn new(g: &Graph, wants: &ReadRequest, min: u64) -> Pruning {
        let added = nix_heft_graph::bounds::max_savings(g);
        let mut skipped = Vec::new();
        let mut pending = Vec::new();
        for &v in wants.keys() {
            match first_cut(g, &added, v, min) {
                FirstCut::Skip(b) => skipped.push((v, b)),
                FirstCut::Read => {}
                FirstCut::NeedsTree => pending.push(v),
            }
        }
        Pruning {
            added,
            min,
            skipped,
            pending,
        }
    }

    /// The referrers whose bound waits for a tree.
    pub fn pending(&self) -> &[NodeId] {
        &self.pending
    }

    /// Judges each pending referrer whose tree `trees` holds by
    /// [`with_tree`]; the others stay pending.
    pub fn settle(&mut self, g: &Graph, trees: &BTreeMap<NodeId, FileTree>) {
        let (added, min, skipped) = (&self.added, self.min, &mut self.skipped);
        self.pending.retain(|&v| match trees.get(&v) {
            Some(t) => {
                let b = with_tree(g, added, v, t);
                if b < min {
                    skipped.push((v, b));
                }
                false
            }
            None => true,
        });
    }

    /// `wants` without the skipped referrers.
    pub fn to_read(&self, mut wants: ReadRequest) -> ReadRequest {
        let skipped: HashSet<NodeId> = self.skipped.iter().map(|&(v, _)| v).collect();
        wants.retain(|v, _| !skipped.contains(v));
        wants
    }

    /// The skipped referrers with their bounds, largest bound first (then
    /// by id, so the order never depends on how they were found).
    pub fn not_examined(&self) -> Vec<(NodeId, u64)> {
        let mut s = self.skipped.clone();
        s.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(path: &str, size: u64) -> TreeEntry {
        TreeEntry {
            path: path.as_bytes().to_vec(),
            node: TreeNode::Regular {
                size,
                executable: false,
            },
        }
    }
    fn dir(path: &str) -> TreeEntry {
        TreeEntry {
            path: path.as_bytes().to_vec(),
            node: TreeNode::Directory,
        }
    }

    #[test]
    fn a_tree_with_nothing_to_move_has_no_own_part() {
        let t = FileTree::from_entries(vec![dir(""), dir("lib"), reg("lib/libbig.so", 300 << 20)]);
        assert_eq!(own_part(t.nar_size(), &t), 0);
    }

    #[test]
    fn headers_and_target_files_are_the_own_part() {
        let t = FileTree::from_entries(vec![
            dir(""),
            dir("include"),
            reg("include/a.h", 5000),
            dir("lib"),
            reg("lib/libbig.so", 300_000),
        ]);
        let nar = t.nar_size();
        let without =
            FileTree::from_entries(vec![dir(""), dir("lib"), reg("lib/libbig.so", 300_000)]);
        assert_eq!(own_part(nar, &t), nar - without.nar_size());
        let t = FileTree::from_entries(vec![
            dir(""),
            dir("lib"),
            reg("lib/Kernels_gfx90a.co", 70_000),
            reg("lib/Kernels_gfx1100.co", 90_000),
            reg("lib/libbig.so", 300_000),
        ]);
        let nar = t.nar_size();
        let without =
            FileTree::from_entries(vec![dir(""), dir("lib"), reg("lib/libbig.so", 300_000)]);
        assert_eq!(own_part(nar, &t), nar - without.nar_size());
    }
}
