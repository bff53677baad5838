//! `remove-references-to`: a reference held only by strings in ELF data
//! (an error message, or a path the program opens); nixpkgs'
//! `remove-references-to` erases it, which is safe only if nothing opens it.

use super::{Action, ActionKind, Advisor, Safety, files_of, out_paths, pkg_name};
use nix_heft_graph::NodeId;
use nix_heft_types::evidence::{Evidence, Kind};

/// Whether an edge of unknown verdict is held only by strings in ELF data.
pub(super) fn applies(evs: &[Evidence]) -> bool {
    evs.iter()
        .all(|e| matches!(e.kind, Kind::ElfString | Kind::ElfOther))
}

/// The action for the edge `from` → `to` that [`applies`] to.
pub(super) fn action(cx: &Advisor, from: NodeId, to: NodeId, evs: &[Evidence]) -> Action {
    let dep = cx.g.path(to).to_string();
    let files = files_of(evs);
    Action {
        reason: "the reference is held only by strings in ELF data (an error message, or a path the program opens)".to_string(),
        snippet: format!(
            "nativeBuildInputs = [ removeReferencesTo ];\npostFixup = ''\n  remove-references-to -t ${{{}}} {}\n'';",
            // `${…}` is Nix's: it puts the dependency's store path into the
            // shell line, so it is written here, not escaped by a helper.
            super::snippet::package(pkg_name(&dep)),
            super::snippet::indented(&out_paths(&files))
        ),
        evidence: files,
        ..cx.action(
            ActionKind::RemoveReferencesTo,
            from,
            vec![dep],
            Some(cx.saving_without_edge(from, to)),
            Safety::CheckAtRuntime,
        )
    }
}
