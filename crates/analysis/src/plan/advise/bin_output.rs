//! `bin-output`: references held only by programs in `bin/` (or
//! `libexec/`) of a package whose consumers link only its libraries; a
//! `bin` output would carry them. Not simulated: which files a consumer
//! needs from `bin/` is decided at install time, not by references.

use super::{Action, ActionKind, Advisor, Safety, files_of};
use crate::plan::whatif::WhatIf;
use nix_heft_format::nar::tree::{FileTree, TreeEntry};
use nix_heft_graph::NodeId;
use nix_heft_types::evidence::Kind;

/// The action for `p`, when some references are held only from `bin/` or
/// `libexec/` and some consumer holds `p` only through RUNPATH or NEEDED
/// entries.
pub(super) fn action(cx: &Advisor, p: NodeId) -> Option<Action> {
    let (g, c) = (cx.g, cx.c);
    let pe = &c.paths[&p];
    let bin_only = bin_only(cx, p);
    let lib_consumers = g.referrers(p).iter().any(|&r| {
        c.paths
            .get(&r)
            .and_then(|rp| rp.by_reference.get(&p))
            .is_some_and(|evs| {
                evs.iter()
                    .all(|e| matches!(e.kind, Kind::ElfRunpath | Kind::ElfNeeded))
            })
    });
    if bin_only.is_empty() || !lib_consumers {
        return None;
    }
    Some(Action {
        reason:
            "only programs in bin/ hold these references, and consumers link only its libraries"
                .into(),
        evidence: bin_only
            .iter()
            .flat_map(|t| files_of(&pe.by_reference[t]))
            .collect(),
        snippet: format!(
            "outputs = {};  # not simulated: install-time routing of bin/",
            super::snippet::list(&["bin", "out"])
        ),
        ..cx.action(
            ActionKind::BinOutput,
            p,
            bin_only.iter().map(|&t| g.path(t).to_string()).collect(),
            None,
            Safety::CheckAtRuntime,
        )
    })
}

/// The references of `p` held only from `bin/` or `libexec/`.
fn bin_only(cx: &Advisor, p: NodeId) -> Vec<NodeId> {
    cx.c.paths[&p]
        .by_reference
        .iter()
        .filter(|(t, evs)| {
            **t != p && !evs.is_empty() && evs.iter().all(|e| in_bin(e.file.as_bytes()))
        })
        .map(|(t, _)| *t)
        .collect()
}

fn in_bin(file: &[u8]) -> bool {
    file.starts_with(b"bin/") || file.starts_with(b"libexec/")
}

/// The most a `bin` output of `p` could save, before its consumers are
/// read (`None` when `p` has no reference held only from `bin/`): the
/// references held only from there cut, and the files there gone with
/// them (its tree when known, else all of `p`).
pub(super) fn bound(cx: &Advisor, p: NodeId) -> Option<u64> {
    let (g, c) = (cx.g, cx.c);
    let cut = bin_only(cx, p);
    if cut.is_empty() {
        return None;
    }
    let mut w = WhatIf::new(g);
    for &t in &cut {
        w.remove_edge(p, t);
    }
    let refs = cx.total.saturating_sub(w.closure_size(g.roots()));
    let own = match c.trees.get(&p) {
        Some(t) => {
            let rest: Vec<TreeEntry> = t
                .entries
                .iter()
                .filter(|e| !in_bin(&e.path) && e.path != b"bin" && e.path != b"libexec")
                .cloned()
                .collect();
            t.nar_size()
                .saturating_sub(FileTree::from_entries(rest).nar_size())
        }
        None => g.nar_size(p),
    };
    Some(refs.saturating_add(own))
}
