//! Bytes on disk, as the collector frees them: every inode once; one with
//! several names (a store optimised by `nix-store --optimise`, whose
//! `.links` holds one more) freed only when every name outside `.links`
//! goes, and never when a name is elsewhere.
//!
//! For every root at once the dominator tree still answers: an inode whose
//! live names are all in paths one root node dominates goes with that
//! node, so its bytes count at the nearest node dominating all of them
//! (their common ancestor in the tree; none under the virtual root, when
//! several roots share it). Groups test each shared inode's live names
//! against their bits.

use std::collections::HashMap;

use nix_heft_graph::{Dominators, NodeId};
use nix_heft_store::gc::disk::DiskUse;

/// The on-disk weights of the liveness graph's nodes.
pub(super) struct Weights {
    /// Per node: its own bytes and those of the shared inodes whose live
    /// names it is the nearest common dominator of (dominator subtree
    /// sums of this are what each root node frees).
    pub node: Vec<u64>,
    /// Per node: its own bytes (directories, symlinks, files with one
    /// name).
    pub own: Vec<u64>,
    /// Inodes with several names, some live: bytes and the nodes of the
    /// live paths that name them.
    pub shared: Vec<(u64, Vec<NodeId>)>,
    /// What the collector frees now: dead paths, dead entries, inodes
    /// only they name, unused `.links` entries.
    pub dead: u64,
    /// `.links` entries with no other name.
    pub unused_links: usize,
    /// Every inode of the store once.
    pub total: u64,
    /// Inodes with a name neither in the store's entries nor in `.links`.
    pub outside: u64,
}

/// Attributes `usage` (by entry of the store directory, `entry_node` the
/// valid path of each, `dead_entry` the invalid ones the collector
/// deletes) to the nodes of a liveness graph of `nodes` nodes.
pub(super) fn attribute(
    dom: &Dominators,
    nodes: usize,
    entry_node: &[Option<NodeId>],
    dead_entry: &[bool],
    usage: DiskUse,
) -> Weights {
    let mut w = Weights {
        node: vec![0; nodes],
        own: vec![0; nodes],
        shared: Vec::new(),
        dead: usage.links_garbage.1,
        unused_links: usage.links_garbage.0,
        total: usage.links_garbage.1,
        outside: 0,
    };
    // An entry is live (a reached path), dead (an unreached path, or an
    // invalid entry the collector deletes) or kept (an invalid entry a
    // temporary root names).
    enum State {
        Live(NodeId),
        Dead,
        Kept,
    }
    let state = |e: usize| match entry_node[e] {
        Some(v) if dom.is_reached(v) => State::Live(v),
        Some(_) => State::Dead,
        None if dead_entry[e] => State::Dead,
        None => State::Kept,
    };
    for (e, &own) in usage.own.iter().enumerate() {
        w.total += own;
        match state(e) {
            State::Live(v) => {
                w.own[v as usize] += own;
                w.node[v as usize] += own;
            }
            State::Dead => w.dead += own,
            State::Kept => {}
        }
    }
    let depth = depths(dom, nodes);
    let mut names: HashMap<(u64, u64), (u64, u64, Vec<u32>)> = HashMap::new();
    for s in usage.shared {
        let e = names.entry(s.key).or_insert((s.bytes, s.nlink, Vec::new()));
        e.2.push(s.holder);
    }
    for (key, (bytes, nlink, holders)) in names {
        w.total += bytes;
        let met = holders.len() as u64 + u64::from(usage.in_links.contains_key(&key));
        if met < nlink {
            w.outside += bytes;
            continue;
        }
        let mut live: Vec<NodeId> = Vec::new();
        let mut kept = false;
        for &h in &holders {
            match state(h as usize) {
                State::Live(v) => live.push(v),
                State::Dead => {}
                State::Kept => kept = true,
            }
        }
        if kept {
            continue;
        }
        live.sort_unstable();
        live.dedup();
        if live.is_empty() {
            w.dead += bytes;
            continue;
        }
        if let Some(a) = live
            .iter()
            .skip(1)
            .try_fold(live[0], |a, &b| common(dom, &depth, a, b))
        {
            w.node[a as usize] += bytes;
        }
        w.shared.push((bytes, live));
    }
    w
}

/// Depth of every reached node in the dominator tree (1 under the virtual
/// root).
fn depths(dom: &Dominators, nodes: usize) -> Vec<u32> {
    let mut d = vec![0u32; nodes];
    for &v in dom.postorder().iter().rev() {
        d[v as usize] = dom.idom(v).map_or(1, |p| d[p as usize] + 1);
    }
    d
}

/// The nearest common dominator of `a` and `b`, `None` when it is the
/// virtual root.
fn common(dom: &Dominators, depth: &[u32], mut a: NodeId, mut b: NodeId) -> Option<NodeId> {
    while a != b {
        if depth[a as usize] >= depth[b as usize] {
            a = dom.idom(a)?;
        } else {
            b = dom.idom(b)?;
        }
    }
    Some(a)
}
