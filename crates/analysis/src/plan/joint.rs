//! advise's plan: every non-breaking, simulated action applied *together*
//! in one what-if, in the order a maintainer would apply them (the lowest
//! package in the graph first). Savings overlap, so the joint closure is
//! not the sum of the actions' savings; each action's share is what the
//! plan would lose without it.
//!
//! A package whose dependency changes is rebuilt (its inputs, so its hash,
//! change): in the what-if it stays one node, now pointing at the changed
//! dependency, so `closure_after` counts the rebuilt package once at its own
//! size and the original leaves. The plan lists each such rebuild.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use super::advise::{Action, ActionKind, KeepSource, Safety};
use super::split::{nixpkgs_preset, simulate};
use super::whatif::WhatIf;
use nix_heft_graph::{Graph, NodeId};
use nix_heft_scan::classify::Classified;
use nix_heft_types::problem::{Problem, ProblemKind};

/// One action in the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanStep {
    /// The action's kind.
    pub kind: ActionKind,
    /// The package it changes.
    pub package: String,
    /// The references it cuts.
    pub removes: Vec<String>,
    /// Its saving applied alone.
    pub saving_alone: u64,
    /// Its share of the joint saving: what the plan's closure grows by
    /// without it.
    pub share: u64,
    /// The nixpkgs code.
    pub snippet: String,
}

/// A package rebuilt because a dependency changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rebuild {
    /// The package.
    pub path: String,
    /// The changed packages it depends on (directly or not).
    pub because: Vec<String>,
}

/// The plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The roots' closure now.
    pub closure_before: u64,
    /// The roots' closure with every step applied.
    pub closure_after: u64,
    /// The steps, in the order to apply them.
    pub actions: Vec<PlanStep>,
    /// Packages rebuilt because a dependency changed.
    pub rebuilds: Vec<Rebuild>,
    /// Which GPU targets the plan keeps, and why those.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<String>,
    /// What the user should know about the plan's choices (a trace that
    /// says nothing about which targets are used); also on stderr.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Depth of every node: 0 for a path with no references, else one more
/// than its deepest reference (cycles, which Nix forbids but a self
/// reference is, are cut).
fn heights(g: &Graph) -> Vec<u32> {
    let n = g.len();
    let mut h = vec![0u32; n];
    let mut state = vec![0u8; n]; // 0 new, 1 on stack, 2 done
    for start in 0..n {
        if state[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        state[start] = 1;
        while let Some(&mut (v, ref mut i)) = stack.last_mut() {
            let refs = g.references(NodeId::try_from(v).unwrap_or_default());
            if *i < refs.len() {
                let w = refs[*i] as usize;
                *i += 1;
                if state[w] == 0 {
                    state[w] = 1;
                    stack.push((w, 0));
                }
            } else {
                let best = refs
                    .iter()
                    .filter(|&&w| state[w as usize] == 2 && w as usize != v)
                    .map(|&w| h[w as usize].saturating_add(1))
                    .max()
                    .unwrap_or(0);
                h[v] = best;
                state[v] = 2;
                stack.pop();
            }
        }
    }
    h
}

/// Applies one action to `w`.
fn apply(
    g: &Graph,
    c: &Classified,
    w: &mut WhatIf<'_>,
    index: &HashMap<&str, NodeId>,
    a: &Action,
) -> crate::Result<()> {
    let Some(&p) = index.get(a.package.as_str()) else {
        return Ok(());
    };
    match a.kind {
        ActionKind::DeadRunpath | ActionKind::StripDebug | ActionKind::RemoveReferencesTo => {
            for r in &a.removes {
                if let Some(&t) = index.get(r.as_str()) {
                    w.remove_edge(p, t);
                }
            }
        }
        ActionKind::SplitOutputs => {
            simulate(g, c, w, p, &nixpkgs_preset(), true, &[])?;
        }
        ActionKind::PartitionTargets => {
            let (Some(pat), false) = (a.pattern, a.keeps.is_empty()) else {
                return Ok(());
            };
            let tree = super::tree_of(g, c, p, "a partition")?;
            let empty = BTreeMap::new();
            let ev = c.paths.get(&p).map_or(&empty, |x| &x.by_reference);
            let part =
                super::partition::partition_of(g, p, tree, ev, pat, Some(&a.keeps), g.roots())?;
            let (Some(kept_nar), Some(kept_refs)) = (part.kept_nar_size, part.kept_refs) else {
                return Ok(());
            };
            // Applied on top of whatever came before on this path (a split
            // keeps the per-target files in `out`): drop what the
            // partition drops.
            let dropped_bytes = tree.nar_size().saturating_sub(kept_nar);
            let dropped: BTreeSet<NodeId> = g
                .references(p)
                .iter()
                .copied()
                .filter(|r| !kept_refs.contains(r) && *r != p)
                .collect();
            w.set_nar(p, w.nar_size(p).saturating_sub(dropped_bytes));
            let refs: Vec<NodeId> = w
                .references(p)
                .iter()
                .copied()
                .filter(|r| !dropped.contains(r))
                .collect();
            w.set_refs(p, refs);
        }
        ActionKind::BinOutput => {}
    }
    Ok(())
}

/// Applies `steps` in order to a fresh what-if and returns the roots'
/// closure size.
fn joint(
    g: &Graph,
    c: &Classified,
    index: &HashMap<&str, NodeId>,
    steps: &[&Action],
    problems: &mut Vec<Problem>,
) -> u64 {
    let mut w = WhatIf::new(g);
    for a in steps {
        if let Err(e) = apply(g, c, &mut w, index, a) {
            problems.push(Problem::new(
                a.package.as_str(),
                ProblemKind::Simulation,
                format!("the plan could not apply this action: {e}"),
            ));
        }
    }
    w.closure_size(g.roots())
}

/// The plan's note on GPU targets, and warnings about them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetsNote {
    /// Which targets the plan's partitions keep, and why those; `None`
    /// when advise found no partition.
    pub note: Option<String>,
    /// What the user should know about that choice (a trace that says
    /// nothing about targets).
    pub warnings: Vec<String>,
}

/// Which GPU targets the plan's partitions keep, as the plan's note says it:
/// the `--targets` asked for (matched ignoring case, named as the files
/// name them), else the targets the traces used, else the costliest single
/// target.
///
/// A target asked for that no partition has is a usage error listing the
/// targets the partitions found: the plan would silently keep others. A
/// trace that used no per-target file of a partition is warned about: it
/// says nothing about which targets are used, yet the plan looks as if it
/// did.
pub fn targets_note(
    actions: &[Action],
    targets: Option<&[String]>,
    traces: Option<&nix_heft_trace::file::TraceSet>,
) -> crate::Result<TargetsNote> {
    let partitions: Vec<&Action> = actions
        .iter()
        .filter(|a| a.kind == ActionKind::PartitionTargets)
        .collect();
    // Each partition's targets found, with the package that has them.
    let found = || {
        partitions
            .iter()
            .map(|a| {
                format!(
                    "{} in {}",
                    a.targets_found.join(", "),
                    nix_heft_format::store_path::name_of(&a.package)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    if let Some(t) = targets {
        for want in t {
            let has = partitions
                .iter()
                .any(|a| a.targets_found.iter().any(|k| k.eq_ignore_ascii_case(want)));
            if !has {
                return Err(crate::Error::NoSuchTarget {
                    target: want.to_string(),
                    found: (!partitions.is_empty()).then(found),
                });
            }
        }
    }
    let mut warnings = Vec::new();
    if targets.is_none()
        && let Some(tr) = traces
    {
        for a in &partitions {
            if a.keeps_from != Some(KeepSource::Trace) {
                warnings.push(format!(
                    "the trace ({}) used no per-target file of {}: it says nothing about which targets are used; the plan keeps {}, the costliest single target; give --targets to choose",
                    tr.names(),
                    nix_heft_format::store_path::name_of(&a.package),
                    a.keeps.join(", ")
                ));
            }
        }
    }
    let note = if partitions.is_empty() {
        None
    } else if targets.is_some() {
        // Named as the files name them, each once, in the order given.
        let mut kept: Vec<&str> = Vec::new();
        for k in partitions.iter().flat_map(|a| &a.keeps) {
            if !kept.contains(&k.as_str()) {
                kept.push(k);
            }
        }
        Some(format!("keeps {} (--targets)", kept.join(", ")))
    } else if let Some(tr) = traces
        && partitions
            .iter()
            .any(|a| a.keeps_from == Some(KeepSource::Trace))
    {
        Some(format!("keeps the targets the trace used ({})", tr.names()))
    } else {
        Some(format!(
            "keeps {}, the costliest single target; give --targets to choose",
            partitions
                .iter()
                .map(|a| a.keeps.join(","))
                .collect::<Vec<_>>()
                .join("; ")
        ))
    };
    Ok(TargetsNote { note, warnings })
}

/// The plan of `actions` (as `advise` ranked them) for the graph's roots.
/// `targets` says which targets partitions keep, for the plan's note.
pub fn plan(
    g: &Graph,
    c: &Classified,
    actions: &[Action],
    targets_note: TargetsNote,
) -> (Plan, Vec<Problem>) {
    let mut problems = Vec::new();
    let index: HashMap<&str, NodeId> = g
        .index()
        .into_iter()
        .map(|(p, v)| (p.as_str(), v))
        .collect();
    let h = heights(g);
    let rank = |a: &Action| -> (u32, u8) {
        let height = index.get(a.package.as_str()).map_or(0, |&v| h[v as usize]);
        // On one package: split first (it rebuilds the outputs from the
        // files), then the partition and the edge removals on `out`.
        let k = match a.kind {
            ActionKind::SplitOutputs => 0,
            ActionKind::PartitionTargets => 1,
            _ => 2,
        };
        (height, k)
    };
    let mut steps: Vec<&Action> = actions
        .iter()
        .filter(|a| a.simulated && a.safety != Safety::BreaksRuntime)
        .collect();
    steps.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then_with(|| a.package.cmp(&b.package))
    });
    let before = WhatIf::new(g).closure_size(g.roots());
    let after = joint(g, c, &index, &steps, &mut problems);
    let mut out_steps = Vec::new();
    for i in 0..steps.len() {
        let without: Vec<&Action> = steps
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, a)| *a)
            .collect();
        let mut ignored = Vec::new();
        let after_without = joint(g, c, &index, &without, &mut ignored);
        let a = steps[i];
        out_steps.push(PlanStep {
            kind: a.kind,
            package: a.package.clone(),
            removes: a.removes.clone(),
            saving_alone: a.saving.unwrap_or(0),
            share: after_without.saturating_sub(after),
            snippet: a.snippet.clone(),
        });
    }
    // Rebuilds: every path of the closure that reaches a changed package,
    // other than the changed packages themselves.
    let changed: BTreeSet<NodeId> = steps
        .iter()
        .filter_map(|a| index.get(a.package.as_str()).copied())
        .collect();
    let in_closure = g.closure_of(g.roots());
    let mut because: BTreeMap<NodeId, BTreeSet<NodeId>> = BTreeMap::new();
    for &ch in &changed {
        let mut stack: Vec<NodeId> = g.referrers(ch).to_vec();
        let mut seen: BTreeSet<NodeId> = BTreeSet::new();
        while let Some(v) = stack.pop() {
            if !seen.insert(v) || !in_closure[v as usize] {
                continue;
            }
            if !changed.contains(&v) {
                because.entry(v).or_default().insert(ch);
            }
            stack.extend(g.referrers(v).iter().copied());
        }
    }
    let mut rebuilds: Vec<Rebuild> = because
        .into_iter()
        .map(|(v, by)| {
            // By path, not node id: ids depend on the store read.
            let mut because: Vec<String> = by.iter().map(|&b| g.path(b).to_string()).collect();
            because.sort();
            Rebuild {
                path: g.path(v).to_string(),
                because,
            }
        })
        .collect();
    // Lowest first, then by path (node ids depend on the store read).
    rebuilds.sort_by_key(|r| {
        (
            index.get(r.path.as_str()).map_or(0, |&v| h[v as usize]),
            r.path.clone(),
        )
    });
    (
        Plan {
            closure_before: before,
            closure_after: after,
            actions: out_steps,
            rebuilds,
            targets: targets_note.note,
            warnings: targets_note.warnings,
        },
        problems,
    )
}
