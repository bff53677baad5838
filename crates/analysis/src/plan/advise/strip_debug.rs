//! `strip-debug`: a reference only debug information or `.comment` holds;
//! separate debug info (or stripping) removes it.

use super::{Action, ActionKind, Advisor, Safety, files_of};
use nix_heft_graph::NodeId;
use nix_heft_types::evidence::Evidence;

/// The action for the dead edge `from` → `to` whose holds `evs` are not a
/// RUNPATH entry.
pub(super) fn action(cx: &Advisor, from: NodeId, to: NodeId, evs: &[Evidence]) -> Action {
    let dep = cx.g.path(to).to_string();
    Action {
        // The cut is named in the action's heading, by the report's
        // display names: the reason does not repeat it.
        reason: "the reference is only in debug information or .comment".to_string(),
        snippet: "separateDebugInfo = true;  # or: dontStrip = false;".to_string(),
        evidence: files_of(evs),
        ..cx.action(
            ActionKind::StripDebug,
            from,
            vec![dep],
            Some(cx.saving_without_edge(from, to)),
            Safety::Safe,
        )
    }
}
