//! `bin-output`: references held only by programs in `bin/` (or
//! `libexec/`) of a package whose consumers link only its libraries; a
//! `bin` output would carry them. Not simulated: which files a consumer
//! needs from `bin/` is decided at install time, not by references.

use super::{Action, ActionKind, Advisor, Safety, files_of};
use crate::evidence::Kind;
use crate::graph::NodeId;

/// The action for `p`, when some references are held only from `bin/` or
/// `libexec/` and some consumer holds `p` only through RUNPATH or NEEDED
/// entries.
pub(super) fn action(cx: &Advisor, p: NodeId) -> Option<Action> {
    let (g, c) = (cx.g, cx.c);
    let pe = &c.paths[&p];
    let bin_only: Vec<NodeId> = pe
        .by_reference
        .iter()
        .filter(|(t, evs)| {
            **t != p
                && !evs.is_empty()
                && evs
                    .iter()
                    .all(|e| e.file.starts_with("bin/") || e.file.starts_with("libexec/"))
        })
        .map(|(t, _)| *t)
        .collect();
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
