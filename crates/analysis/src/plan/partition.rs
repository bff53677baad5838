//! Simulating a per-target partition of one store path: group its files by
//! a regex capture in their path or symlink target (`gfx[0-9a-z]+`), and see
//! what each group costs and what is left when only some groups are kept —
//! the "build Tensile per GPU target and join the chosen ones" idea of the
//! ROCm discussion, sized before anyone writes it.
//!
//! A per-target build does not drop files one by one: a farm such as
//! rocblas' `lib/rocblas/library` links every file of each path it is
//! given (`ln -s $path/lib/rocblas/library/*`), so a path that stays linked
//! stays linked whole. A symlink of a dropped group into another store path
//! that the kept files still reference (the `*_fallback_gfx900.hsaco` links
//! into a fallbacks path that the kept target's own fallback kernel needs)
//! is therefore kept, as the real rebuild keeps it; it costs only the link.
//! Regular files named for a dropped target are dropped: a build for other
//! targets never writes them.

use std::collections::{BTreeMap, BTreeSet};

use regex::bytes::Regex;

use super::whatif::WhatIf;
use crate::error::Result;
use nix_heft_format::nar::tree::{FileTree, TreeEntry, TreeNode};
use nix_heft_graph::{Graph, NodeId};
use nix_heft_scan::classify::Classified;
use nix_heft_types::evidence::{Evidence, Kind};

/// One group of files.
#[derive(Debug, Clone)]
pub struct Group {
    /// The captured value (`gfx90a`).
    pub key: String,
    /// Entries (files and symlinks) in the group.
    pub files: Vec<Vec<u8>>,
    /// Those of `files` that stay when the group is dropped: links into a
    /// path the other files still reference.
    pub kept_anyway: Vec<Vec<u8>>,
    /// NAR bytes the group's entries take in the path (those it drops).
    pub own_size: u64,
    /// Every reference the group's files hold.
    pub refs: BTreeSet<NodeId>,
    /// References held only by this group's files.
    pub exclusive_refs: BTreeSet<NodeId>,
    /// Bytes that leave the closure of the roots without this group.
    pub added: u64,
}

/// The result of a partition.
#[derive(Debug, Clone)]
pub struct Partition {
    /// Groups, largest `added` first.
    pub groups: Vec<Group>,
    /// Entries in no group.
    pub ungrouped: usize,
    /// Closure of the roots as it is.
    pub before: u64,
    /// Closure of the roots with only the kept groups, if `--keep` was given.
    pub after_keep: Option<u64>,
    /// The groups kept, as the path names them (`--keep` matches without
    /// regard to case).
    pub kept: Option<Vec<String>>,
    /// NAR size of the path with only the kept groups.
    pub kept_nar_size: Option<u64>,
    /// References the path keeps with only the kept groups.
    pub kept_refs: Option<BTreeSet<NodeId>>,
    /// Files of the groups not kept that stay all the same, and why.
    pub kept_anyway: Vec<KeptLink>,
}

/// A file that matched a group that is dropped but stays: a symlink into a
/// store path that the path's remaining files still reference, so the
/// per-target build links that path as before, this file included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptLink {
    /// The link, relative to the path.
    pub file: Vec<u8>,
    /// The group its name or target matched.
    pub group: String,
    /// The store path it links into.
    pub into: NodeId,
    /// The remaining files that hold `into` (the reason it stays), each
    /// with its group (`None`: in no group), in NAR order.
    pub needed_by: Vec<(Vec<u8>, Option<String>)>,
}

fn group_of(re: &Regex, e: &TreeEntry) -> Option<String> {
    let cap = |s: &[u8]| {
        re.captures(s).map(|c| {
            let m = c
                .get(1)
                .or_else(|| c.get(0))
                .expect("group 0 always matches");
            String::from_utf8_lossy(m.as_bytes()).into_owned()
        })
    };
    match &e.node {
        TreeNode::Directory => None,
        TreeNode::Regular { .. } => cap(&e.path),
        TreeNode::Symlink { target } => cap(&e.path).or_else(|| cap(target)),
    }
}

/// The path's NAR size and references (itself included when a remaining
/// file mentions it, as Nix registers it) without the entries in `drop`.
fn without(
    tree: &FileTree,
    evidence: &BTreeMap<NodeId, Vec<Evidence>>,
    drop: &BTreeSet<&[u8]>,
) -> (u64, BTreeSet<NodeId>) {
    let kept: Vec<TreeEntry> = tree
        .entries
        .iter()
        .filter(|e| !drop.contains(e.path.as_slice()))
        .cloned()
        .collect();
    let refs = evidence
        .iter()
        .filter(|(_, evs)| evs.iter().any(|ev| !drop.contains(ev.file_raw.as_slice())))
        .map(|(t, _)| *t)
        .collect();
    (FileTree::from_entries(kept).nar_size(), refs)
}

/// The store path each symlink of `tree` points into (not `path` itself),
/// from the symlink holds the read found.
fn links_into<'t>(
    tree: &'t FileTree,
    evidence: &BTreeMap<NodeId, Vec<Evidence>>,
    path: NodeId,
) -> BTreeMap<&'t [u8], NodeId> {
    let by_file: BTreeMap<&[u8], NodeId> = evidence
        .iter()
        .filter(|(t, _)| **t != path)
        .flat_map(|(t, evs)| {
            evs.iter()
                .filter(|ev| ev.kind == Kind::Symlink)
                .map(move |ev| (ev.file_raw.as_slice(), *t))
        })
        .collect();
    tree.entries
        .iter()
        .filter(|e| matches!(e.node, TreeNode::Symlink { .. }))
        .filter_map(|e| {
            by_file
                .get(e.path.as_slice())
                .map(|&t| (e.path.as_slice(), t))
        })
        .collect()
}

/// What a partition drops and what it keeps of the entries it would drop:
/// (entries that go, links that stay with the path each points into).
type Settled<'a> = (BTreeSet<&'a [u8]>, Vec<(&'a [u8], NodeId)>);

/// Of the entries `candidates` a partition would drop, those that stay (a
/// link into a path the remaining entries still reference), and the rest,
/// which go.
fn settle<'a>(
    evidence: &BTreeMap<NodeId, Vec<Evidence>>,
    links: &BTreeMap<&[u8], NodeId>,
    candidates: BTreeSet<&'a [u8]>,
) -> Settled<'a> {
    let still_held = |t: NodeId| {
        evidence.get(&t).is_some_and(|evs| {
            evs.iter()
                .any(|ev| !candidates.contains(ev.file_raw.as_slice()))
        })
    };
    let stay: Vec<(&[u8], NodeId)> = candidates
        .iter()
        .filter_map(|&f| links.get(f).map(|&t| (f, t)))
        .filter(|&(_, t)| still_held(t))
        .collect();
    // Keeping them adds no reference (each points into a path already
    // held), so one pass is the whole answer.
    let drop = candidates
        .into_iter()
        .filter(|f| !stay.iter().any(|(s, _)| s == f))
        .collect();
    (drop, stay)
}

/// Partitions `path` by `pattern`; `keep` names the groups to keep.
pub fn partition(
    g: &Graph,
    c: &Classified,
    path: NodeId,
    pattern: &str,
    keep: Option<&[String]>,
    roots: &[NodeId],
) -> Result<Partition> {
    let tree = super::tree_of(g, c, path, "a partition")?;
    let empty = BTreeMap::new();
    let evidence = c.paths.get(&path).map_or(&empty, |p| &p.by_reference);
    partition_of(g, path, tree, evidence, pattern, keep, roots)
}

/// [`partition`] from a tree and evidence already read (`advise` tries
/// several `keep` values on the same path).
pub fn partition_of(
    g: &Graph,
    path: NodeId,
    tree: &FileTree,
    evidence: &BTreeMap<NodeId, Vec<Evidence>>,
    pattern: &str,
    keep: Option<&[String]>,
    roots: &[NodeId],
) -> Result<Partition> {
    let re = Regex::new(pattern).map_err(|e| nix_heft_types::Error::BadPattern {
        pattern: pattern.to_string(),
        reason: e.to_string(),
    })?;
    let mut by_key: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
    let mut group_by_file: BTreeMap<&[u8], String> = BTreeMap::new();
    let mut ungrouped = 0;
    for e in &tree.entries {
        match group_of(&re, e) {
            Some(k) => {
                group_by_file.insert(&e.path, k.clone());
                by_key.entry(k).or_default().push(e.path.clone());
            }
            None if !matches!(e.node, TreeNode::Directory) => ungrouped += 1,
            None => {}
        }
    }
    let links = links_into(tree, evidence, path);
    let full_nar = tree.nar_size();
    let base = WhatIf::new(g);
    let before = base.closure_size(roots);
    let apply = |drop: &BTreeSet<&[u8]>| -> (u64, u64, BTreeSet<NodeId>) {
        let (nar, refs) = without(tree, evidence, drop);
        let mut w = WhatIf::new(g);
        w.set_nar(path, nar);
        w.set_refs(path, refs.iter().copied().collect());
        (w.closure_size(roots), nar, refs)
    };
    let mut groups: Vec<Group> = by_key
        .iter()
        .map(|(key, files)| {
            let matched: BTreeSet<&[u8]> = files.iter().map(Vec::as_slice).collect();
            let (drop, stay) = settle(evidence, &links, matched.clone());
            let (after, nar, refs_without) = apply(&drop);
            let all_refs: BTreeSet<NodeId> =
                evidence.keys().copied().filter(|&t| t != path).collect();
            Group {
                key: key.clone(),
                files: files.clone(),
                kept_anyway: stay.iter().map(|(f, _)| f.to_vec()).collect(),
                own_size: full_nar - nar,
                refs: evidence
                    .iter()
                    .filter(|(_, evs)| {
                        evs.iter()
                            .any(|ev| matched.contains(ev.file_raw.as_slice()))
                    })
                    .map(|(t, _)| *t)
                    .collect(),
                exclusive_refs: all_refs.difference(&refs_without).copied().collect(),
                added: before - after,
            }
        })
        .collect();
    groups.sort_by(|a, b| b.added.cmp(&a.added).then_with(|| a.key.cmp(&b.key)));
    let mut kept = None;
    let mut kept_anyway = Vec::new();
    let (after_keep, kept_nar_size, kept_refs) = match keep {
        Some(wanted) => {
            // Group names are matched case-insensitively (`gfx90A` is gfx90a).
            let mut k: Vec<String> = Vec::new();
            for want in wanted {
                match by_key.keys().find(|key| key.eq_ignore_ascii_case(want)) {
                    Some(key) => k.push(key.clone()),
                    None => {
                        let near = |key: &String| {
                            strsim::damerau_levenshtein(&key.to_lowercase(), &want.to_lowercase())
                                <= (want.len() / 3).max(2)
                        };
                        return Err(nix_heft_types::Error::NoMatch {
                            pattern: want.clone(),
                            store: format!("the groups of {} by '{pattern}'", g.path(path)),
                            closest: None,
                            candidates: by_key.keys().filter(|key| near(key)).cloned().collect(),
                        }
                        .into());
                    }
                }
            }
            let candidates: BTreeSet<&[u8]> = by_key
                .iter()
                .filter(|(key, _)| !k.contains(key))
                .flat_map(|(_, f)| f.iter().map(Vec::as_slice))
                .collect();
            let (drop, stay) = settle(evidence, &links, candidates);
            let (after, nar, refs) = apply(&drop);
            // What holds each path a kept link points into: the files that
            // stay for their own sake (not the kept links themselves).
            let held_by = |t: NodeId| -> Vec<(Vec<u8>, Option<String>)> {
                let holders: BTreeSet<&[u8]> = evidence
                    .get(&t)
                    .into_iter()
                    .flatten()
                    .map(|ev| ev.file_raw.as_slice())
                    .filter(|f| !drop.contains(f) && !stay.iter().any(|(s, _)| s == f))
                    .collect();
                // The kept groups' own files first: they are why a
                // per-target build still links the path.
                let mut by: Vec<(Vec<u8>, Option<String>)> = tree
                    .entries
                    .iter()
                    .filter(|e| holders.contains(e.path.as_slice()))
                    .map(|e| {
                        (
                            e.path.clone(),
                            group_by_file.get(e.path.as_slice()).cloned(),
                        )
                    })
                    .collect();
                by.sort_by_key(|(_, gr)| gr.is_none());
                by
            };
            kept_anyway = stay
                .iter()
                .map(|&(f, t)| KeptLink {
                    file: f.to_vec(),
                    group: group_by_file.get(f).cloned().unwrap_or_default(),
                    into: t,
                    needed_by: held_by(t),
                })
                .collect();
            kept = Some(k);
            (Some(after), Some(nar), Some(refs))
        }
        None => (None, None, None),
    };
    Ok(Partition {
        groups,
        ungrouped,
        before,
        after_keep,
        kept,
        kept_nar_size,
        kept_refs,
        kept_anyway,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(file: &str) -> Evidence {
        Evidence::new(file.as_bytes(), Kind::Symlink, 0, String::new())
    }

    /// A dropped link into a path a remaining file holds stays; a dropped
    /// link into a path only dropped files hold goes, and so does a file
    /// that is no link.
    #[test]
    fn links_into_a_path_still_held_stay() {
        let (shared, only) = (1, 2);
        let evidence: BTreeMap<NodeId, Vec<Evidence>> = [
            (shared, vec![link("kept_fallback"), link("fallback_gfx900")]),
            (only, vec![link("kernels_gfx900")]),
        ]
        .into_iter()
        .collect();
        let links: BTreeMap<&[u8], NodeId> = [
            (&b"kept_fallback"[..], shared),
            (&b"fallback_gfx900"[..], shared),
            (&b"kernels_gfx900"[..], only),
        ]
        .into_iter()
        .collect();
        let candidates: BTreeSet<&[u8]> = [
            &b"fallback_gfx900"[..],
            b"kernels_gfx900",
            b"arch_gfx900.txt",
        ]
        .into_iter()
        .collect();
        let (drop, stay) = settle(&evidence, &links, candidates);
        assert_eq!(stay, vec![(&b"fallback_gfx900"[..], shared)]);
        assert_eq!(
            drop,
            [&b"arch_gfx900.txt"[..], b"kernels_gfx900"]
                .into_iter()
                .collect()
        );
        // Once the only other holder goes too, the link goes with it.
        let all: BTreeSet<&[u8]> = [&b"fallback_gfx900"[..], b"kept_fallback"]
            .into_iter()
            .collect();
        let (drop, stay) = settle(&evidence, &links, all.clone());
        assert!(stay.is_empty());
        assert_eq!(drop, all);
    }
}
