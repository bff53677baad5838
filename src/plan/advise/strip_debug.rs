//! `strip-debug`: a reference only debug information or `.comment` holds;
//! separate debug info (or stripping) removes it.

use super::{Action, ActionKind, Advisor, Safety, files_of, full_name};
use crate::evidence::Evidence;
use crate::graph::NodeId;

/// The action for the dead edge `from` → `to` whose holds `evs` are not a
/// RUNPATH entry.
pub(super) fn action(cx: &Advisor, from: NodeId, to: NodeId, evs: &[Evidence]) -> Action {
    let dep = cx.g.path(to).to_string();
    Action {
        reason: format!(
            "{} is only mentioned in debug information or .comment",
            full_name(&dep)
        ),
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
