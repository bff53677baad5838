//! `partition-targets`: a path holding run-time files for several targets
//! (GPU architectures), of which a user needs few; building only those
//! (`gpuTargets`, `cudaCapabilities`) is simulated as a partition that
//! keeps them.

use std::collections::{BTreeMap, BTreeSet};

use regex::bytes::Regex;

use super::{Action, ActionKind, Advisor, KeepSource, Safety, full_name, pkg_name};
use crate::plan::partition::KeptLink;
use nix_heft_graph::NodeId;
use nix_heft_types::evidence::{Kind, Verdict};
use nix_heft_types::problem::Problem;

/// The action partitioning `p` by the targets `pattern` names (selected by
/// the nixpkgs knob `knob`): `None` when its run-time files name fewer
/// than two targets or no partition keeps a target; with a problem when
/// the source has no tree of `p`.
pub(super) fn action(
    cx: &Advisor,
    p: NodeId,
    pattern: &'static str,
    knob: &str,
    problems: &mut Vec<Problem>,
) -> Option<Action> {
    let g = cx.g;
    let pe = &cx.c.paths[&p];
    let re = Regex::new(pattern).expect("static pattern");
    let mut by_target: BTreeMap<String, BTreeSet<NodeId>> = BTreeMap::new();
    // Only run-time files count: a target list in a build file is not a
    // per-target layout.
    let mut all_files = BTreeSet::new();
    // Targets whose files the traces used.
    let mut traced_keys: BTreeSet<String> = BTreeSet::new();
    for (&t, evs) in &pe.by_reference {
        for ev in evs.iter().filter(|e| e.verdict == Verdict::Runtime) {
            let hay = format!(
                "{} {}",
                ev.file,
                if ev.kind == Kind::Symlink {
                    &ev.context
                } else {
                    ""
                }
            );
            if let Some(m) = re.find(hay.as_bytes()) {
                let key = String::from_utf8_lossy(m.as_bytes()).into_owned();
                if cx.traces.is_some_and(|tr| {
                    tr.file(g.path(p).as_str(), &ev.file)
                        .is_some_and(|f| f.used())
                }) {
                    traced_keys.insert(key.clone());
                }
                by_target.entry(key).or_default().insert(t);
                all_files.insert(ev.file.clone());
            }
        }
    }
    if by_target.len() < 2 {
        return None;
    }
    let keys: Vec<String> = by_target.keys().cloned().collect();
    let tree = match crate::plan::tree_of(g, cx.c, p, "a partition") {
        Ok(t) => t,
        Err(e) => {
            problems.push(cx.not_simulated(ActionKind::PartitionTargets, p, e));
            return None;
        }
    };
    let try_keep = |keep: Vec<String>| {
        crate::plan::partition::partition_of(
            g,
            p,
            tree,
            &pe.by_reference,
            pattern,
            Some(&keep),
            g.roots(),
        )
        .ok()
        .and_then(|r| {
            Some((
                keep,
                cx.total.saturating_sub(r.after_keep?),
                r.kept_refs?,
                r.kept_anyway,
            ))
        })
    };
    // The targets to keep: those given (--targets), else those the trace
    // used, else the costliest single target (the least a user saves).
    // `--targets` ignores case (`GFX90A`), as `partition --keep` does; the
    // snippet names each target as its files do.
    let given: Vec<String> = cx
        .targets
        .map(|t| {
            t.iter()
                .filter_map(|want| keys.iter().find(|k| k.eq_ignore_ascii_case(want)))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let (choice, source) = if !given.is_empty() {
        (try_keep(given), KeepSource::Given)
    } else if !traced_keys.is_empty() {
        (
            try_keep(traced_keys.iter().cloned().collect()),
            KeepSource::Trace,
        )
    } else {
        (
            keys.iter()
                .filter_map(|k| try_keep(vec![k.clone()]))
                .min_by_key(|(_, s, _, _)| *s),
            KeepSource::Costliest,
        )
    };
    let (kept_list, saving, kept_refs, kept_anyway) = choice?;
    // Links of other targets into a path that stays (a shared fallbacks
    // path the kept targets need): the per-target build links that path
    // whole, so they stay, and the saving counts them.
    let stays_note = kept_links_note(g, &kept_anyway);
    // The targets as the snippet's Nix list, and as the comment names them.
    let kept_nix = super::snippet::list(&kept_list);
    let kept = kept_list.join(", ");
    let trace_names = || cx.traces.map(|t| t.names()).unwrap_or_default();
    let pkg = super::snippet::package(pkg_name(g.path(p).as_str()));
    let cuts: Vec<String> = g
        .references(p)
        .iter()
        .filter(|r| !kept_refs.contains(r))
        .map(|&r| g.path(r).to_string())
        .collect();
    Some(Action {
        reason: format!(
            "the package holds files for {} targets ({}); they are used at run time, so build only the targets you need instead of moving them{}{}",
            keys.len(),
            keys.join(", "),
            if source == KeepSource::Trace {
                format!(
                    "; the traced workload used only {} (trace {})",
                    traced_keys.iter().cloned().collect::<Vec<_>>().join(", "),
                    trace_names()
                )
            } else {
                String::new()
            },
            stays_note
        ),
        evidence_files: all_files.len(),
        evidence: all_files.into_iter().take(8).collect(),
        snippet: match source {
            KeepSource::Given => format!(
                "{pkg}.override {{ {knob} = {kept_nix}; }}  # the targets given with --targets"
            ),
            KeepSource::Trace => format!(
                "{pkg}.override {{ {knob} = {kept_nix}; }}  # the targets the trace ({}) used",
                trace_names()
            ),
            KeepSource::Costliest => format!(
                "{pkg}.override {{ {knob} = {kept_nix}; }}  # saving shown keeps {kept}, the costliest target; fewer or cheaper targets save more"
            ),
        },
        keeps: kept_list,
        pattern: Some(pattern),
        targets_found: keys,
        keeps_from: Some(source),
        ..cx.action(
            ActionKind::PartitionTargets,
            p,
            cuts,
            Some(saving),
            Safety::CheckAtRuntime,
        )
    })
}

/// "; 2 links of other targets stay (gfx1030, gfx900): they point into
/// rocblas-tensile-fallbacks-6.0.2, which stays: needed by 1 file of gfx90a
/// and 2 files in no group", one clause per path the kept links point
/// into; empty when none stays. Files are counted, not named: their names
/// are long, and `partition --keep` lists them.
fn kept_links_note(g: &nix_heft_graph::Graph, kept: &[KeptLink]) -> String {
    let mut by_into: BTreeMap<NodeId, Vec<&KeptLink>> = BTreeMap::new();
    for k in kept {
        by_into.entry(k.into).or_default().push(k);
    }
    let files = |n: usize| format!("{n} file{}", if n == 1 { "" } else { "s" });
    by_into
        .iter()
        .map(|(&into, ks)| {
            let groups: BTreeSet<&str> = ks.iter().map(|k| k.group.as_str()).collect();
            // The holders by group, the kept targets' first (as `needed_by`
            // lists them), those in no group last.
            let mut holders: Vec<(Option<&str>, usize)> = Vec::new();
            for (_, gr) in &ks[0].needed_by {
                let gr = gr.as_deref();
                match holders.iter_mut().find(|(h, _)| *h == gr) {
                    Some((_, n)) => *n += 1,
                    None => holders.push((gr, 1)),
                }
            }
            let needed: Vec<String> = holders
                .iter()
                .map(|(gr, n)| match gr {
                    Some(gr) => format!("{} of {gr}", files(*n)),
                    None => format!("{} in no group", files(*n)),
                })
                .collect();
            format!(
                "; {} link{} of other targets stay{} ({}): {} into {}, which stays: needed by {}",
                ks.len(),
                if ks.len() == 1 { "" } else { "s" },
                if ks.len() == 1 { "s" } else { "" },
                groups.into_iter().collect::<Vec<_>>().join(", "),
                if ks.len() == 1 {
                    "it points"
                } else {
                    "they point"
                },
                full_name(g.path(into).as_str()),
                match needed.split_last() {
                    Some((last, rest)) if !rest.is_empty() =>
                        format!("{} and {last}", rest.join(", ")),
                    _ => needed.join(""),
                }
            )
        })
        .collect()
}
