//! `dead-runpath`: a RUNPATH entry that provides none of the libraries its
//! file needs or dlopen()s; `patchelf --shrink-rpath` drops it.

use super::{Action, ActionKind, Advisor, Safety, files_of, out_paths};
use crate::evidence::Evidence;
use crate::graph::NodeId;

/// The action for the dead edge `from` → `to` whose holds `evs` include a
/// RUNPATH entry.
pub(super) fn action(cx: &Advisor, from: NodeId, to: NodeId, evs: &[Evidence]) -> Action {
    let files = files_of(evs);
    let saving = cx.saving_without_edge(from, to);
    Action {
        reason: format!(
            "RUNPATH entry {}/lib provides none of the libraries {} needs or dlopen()s",
            cx.g.path(to),
            files.join(", ")
        ),
        snippet: super::snippet::shell_hook(
            "postFixup",
            &[format!("patchelf --shrink-rpath {}", out_paths(&files))],
        ),
        evidence: files,
        ..cx.action(
            ActionKind::DeadRunpath,
            from,
            vec![cx.g.path(to).to_string()],
            Some(saving),
            Safety::Safe,
        )
    }
}
