//! `dead-runpath`: a RUNPATH entry that provides none of the libraries its
//! file needs or dlopen()s. The edit drops that entry alone
//! (`patchelf --set-rpath` with the others, as the file has them):
//! `patchelf --shrink-rpath` would also drop entries that serve only
//! dlopen()ed libraries, which it cannot see.

use std::collections::{BTreeMap, BTreeSet};

use super::{Action, ActionKind, Advisor, Safety, files_of, snippet};
use crate::evidence::{Evidence, Kind};
use crate::graph::NodeId;

/// The action for the dead edge `from` → `to` whose holds `evs` include a
/// RUNPATH entry.
pub(super) fn action(cx: &Advisor, from: NodeId, to: NodeId, evs: &[Evidence]) -> Action {
    let files = files_of(evs);
    let saving = cx.saving_without_edge(from, to);
    // Per file: its RUNPATH and its dead entries, this edge's and those of
    // the file's other dead holds (other actions): every snippet for the
    // file then writes the same RUNPATH, so pasting several of them (as the
    // plan does) never puts back an entry another one dropped.
    let mut runpaths: BTreeMap<&str, (&[String], BTreeSet<usize>)> = BTreeMap::new();
    for e in evs.iter().filter(|e| e.kind == Kind::ElfRunpath && e.dead) {
        if let Some((rp, i)) = &e.runpath {
            runpaths
                .entry(e.file.as_str())
                .or_insert_with(|| (rp.as_slice(), BTreeSet::new()))
                .1
                .insert(*i);
        }
    }
    let mut others: BTreeSet<&str> = BTreeSet::new();
    let all = cx.c.paths[&from].by_reference.iter();
    for e in all.filter(|(t, _)| **t != to).flat_map(|(_, evs)| evs) {
        if let (Kind::ElfRunpath, true, Some((_, i))) = (e.kind, e.dead, &e.runpath)
            && let Some((rp, dead)) = runpaths.get_mut(e.file.as_str())
            && dead.insert(*i)
        {
            others.insert(rp[*i].as_str());
        }
    }
    // One entry a line (`runpath+=':…'`): store paths are long, and code in
    // a snippet is never wrapped, so this keeps it readable at 80 columns.
    let mut lines: Vec<String> = Vec::new();
    for (file, (rp, dead)) in &runpaths {
        let keep: Vec<&String> = rp
            .iter()
            .enumerate()
            .filter(|(i, _)| !dead.contains(i))
            .map(|(_, d)| d)
            .collect();
        let Some((first, rest)) = keep.split_first() else {
            lines.push(format!(
                "patchelf --remove-rpath {}",
                snippet::out_file(file)
            ));
            continue;
        };
        lines.push(format!("runpath={}", snippet::single_quoted(first)));
        for d in rest {
            lines.push(format!(
                "runpath+={}",
                snippet::single_quoted(&format!(":{d}"))
            ));
        }
        lines.push(format!(
            "patchelf --set-rpath \"$runpath\" {}",
            snippet::out_file(file)
        ));
    }
    Action {
        reason: format!(
            "RUNPATH entry {}/lib provides none of the libraries {} needs or dlopen()s; \
             the edit drops dead entries only (`patchelf --shrink-rpath` would also drop entries that \
             serve only dlopen()ed libraries). nixpkgs' fixup already runs \
             `patchelf --shrink-rpath` unless `dontPatchELF` is set: a dead entry left \
             usually means `dontPatchELF`, an RPATH added after fixup, or a DT_RPATH{}",
            cx.g.path(to),
            files.join(", "),
            if others.is_empty() {
                String::new()
            } else {
                format!(
                    "; the edit also drops the other dead entries of the same files ({})",
                    others.into_iter().collect::<Vec<_>>().join(", ")
                )
            }
        ),
        snippet: snippet::shell_hook("postFixup", &lines),
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
