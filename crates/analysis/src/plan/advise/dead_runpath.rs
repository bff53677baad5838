//! `dead-runpath`: a RUNPATH entry that provides none of the libraries its
//! file needs or dlopen()s. The edit drops that entry alone
//! (`patchelf --set-rpath` with the others, as the file has them):
//! `patchelf --shrink-rpath` would also drop entries that serve only
//! dlopen()ed libraries, which it cannot see.

use std::collections::{BTreeMap, BTreeSet};

use super::{Action, ActionKind, Advisor, Safety, files_of, snippet};
use nix_heft_graph::NodeId;
use nix_heft_types::evidence::{Evidence, Kind};

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
    // Per file, the RUNPATH the builder finds, with the dead entries
    // dropped by name, hash left open: a pasted store path would name the
    // old build of the dependency (after any rebuild of it the entry would
    // no longer match, and a hash outside the inputs would not even be
    // registered as a reference), while `*/<32 chars>-unused-1.0/lib`
    // matches the entry whatever its hash. Every other entry stays as the
    // file has it then, including those that serve only dlopen().
    let mut lines: Vec<String> = Vec::new();
    for (file, (rp, dead)) in &runpaths {
        let patterns: Vec<String> = dead
            .iter()
            .filter_map(|&i| rp.get(i))
            .map(|d| entry_pattern(d))
            .collect();
        if patterns.is_empty() {
            continue;
        }
        // Short lines: code in a snippet is never wrapped, and one dead
        // entry a line keeps it within 80 columns.
        lines.push(format!("f={}", snippet::out_file(file)));
        lines.push("IFS=: read -ra entries <<< \"$(patchelf --print-rpath \"$f\")\"".to_string());
        lines.push("runpath=".to_string());
        lines.push("for d in \"${entries[@]}\"; do".to_string());
        lines.push("  case \"$d\" in".to_string());
        for p in &patterns {
            lines.push(format!("    {p}) ;;"));
        }
        lines.push("    *) runpath=\"${runpath:+$runpath:}$d\" ;;".to_string());
        lines.push("  esac".to_string());
        lines.push("done".to_string());
        lines.push("patchelf --set-rpath \"$runpath\" \"$f\"".to_string());
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

/// A `case` pattern matching the RUNPATH entry `d` whatever its store
/// hash: `/nix/store/<hash>-unused-1.0/lib` becomes
/// `*/????????????????????????????????'-unused-1.0/lib'` (the literal part
/// quoted, so a `*` or `[` in a name is not a pattern). An entry outside
/// the store (`$ORIGIN/../lib`) is matched as it is.
fn entry_pattern(d: &str) -> String {
    let hashed = d.rsplit_once("/nix/store/").and_then(|(_, rest)| {
        let (hash, tail) = rest.split_at_checked(nix_heft_format::store_path::HASH_LEN)?;
        (tail.starts_with('-') && hash.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(tail)
    });
    match hashed {
        Some(tail) => format!(
            "*/{}{}",
            "?".repeat(nix_heft_format::store_path::HASH_LEN),
            nix_heft_format::quote::single_quoted(tail)
        ),
        None => nix_heft_format::quote::single_quoted(d),
    }
}
