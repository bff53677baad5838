//! `split-outputs`: build-time and documentation files of `out` that hold
//! references, moved to other outputs with nixpkgs' multiple-outputs
//! preset; simulated with the split planner.

use super::{Action, ActionKind, Advisor, Safety, files_of, full_name};
use crate::plan::split::{Existing, Move, nixpkgs_preset, simulate};
use crate::plan::whatif::WhatIf;
use nix_heft_graph::NodeId;
use nix_heft_types::problem::Problem;

/// The action splitting `p`, whose build or documentation files hold some
/// reference; `None`, with a problem, when the split cannot be simulated.
/// The simulation's own problems join `problems` too.
pub(super) fn action(cx: &Advisor, p: NodeId, problems: &mut Vec<Problem>) -> Option<Action> {
    let g = cx.g;
    let mut w = WhatIf::new(g);
    let existing = cx.existing.get(&p).map_or(&[][..], Vec::as_slice);
    let preset = nixpkgs_preset();
    let sim = match simulate(g, cx.c, &mut w, p, &preset, true, existing) {
        Ok(sim) => sim,
        Err(e) => {
            problems.push(cx.not_simulated(ActionKind::SplitOutputs, p, e));
            return None;
        }
    };
    problems.extend(sim.problems.iter().cloned());
    let saving = cx.total.saturating_sub(w.closure_size(g.roots()));
    let mut removed: Vec<String> = g
        .references(p)
        .iter()
        .filter(|&&r| !sim.outputs[0].references.contains(&r))
        .map(|&r| g.path(r).to_string())
        .collect();
    removed.sort_by(|a, b| full_name(a).cmp(full_name(b)));
    let moved_runtime: Vec<&(String, usize)> = sim
        .consumers
        .iter()
        .flat_map(|c| &c.moved_runtime)
        .collect();
    let names: Vec<&str> = sim.outputs.iter().map(|o| o.name.as_str()).collect();
    let evidence: Vec<String> = cx.c.paths[&p]
        .by_reference
        .iter()
        .filter(|(t, _)| removed.contains(&g.path(**t).to_string()))
        .flat_map(|(_, evs)| files_of(evs))
        .collect();
    // Files the split moves out of `out` that a trace used.
    let moved_traced: Vec<String> = cx
        .traces
        .map(|t| {
            let pp = g.path(p).as_str();
            sim.outputs
                .iter()
                .skip(1)
                .flat_map(|o| o.tree.entries.iter())
                .filter_map(|e| {
                    let rel = String::from_utf8_lossy(&e.path).into_owned();
                    t.used_by(pp, &rel)
                        .map(|tf| format!("{rel} (trace {})", tf.display()))
                })
                .collect()
        })
        .unwrap_or_default();
    // The references are named in the action's heading (its cuts), by the
    // report's display names.
    let held = "the references cut";
    let has = if existing.is_empty() {
        String::new()
    } else {
        format!(
            "; the package already has {} (moved files join it)",
            existing
                .iter()
                .map(|e| format!(
                    "output '{}' ({}, {})",
                    e.output,
                    full_name(&e.path),
                    e.found_by.describe()
                ))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let action = Action {
        reason: if moved_runtime.is_empty() {
            format!("build-time/documentation files hold {held}; consumers use only `out`{has}")
        } else {
            format!(
                "build-time/documentation files hold {held}, but consumers use {} at run time",
                moved_runtime
                    .iter()
                    .map(|(f, _)| f.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
        evidence,
        snippet: snippet(&names, existing, &preset, &sim.unmatched),
        ..cx.action(
            ActionKind::SplitOutputs,
            p,
            removed,
            Some(saving),
            if moved_runtime.is_empty() {
                Safety::Safe
            } else {
                Safety::BreaksRuntime
            },
        )
    };
    Some(super::rank_down(
        action,
        (!moved_traced.is_empty()).then(|| {
            format!(
                "it moves files the traced workload used: {}",
                moved_traced.join(", ")
            )
        }),
    ))
}

/// What to paste: a package without the outputs gets them declared (the
/// multiple-outputs hook then moves the files); files bound for an output
/// the package already has are moved there by hand, since the hook left
/// them in `out` although that output exists (a `postInstall` with
/// `moveToOutput`; the propagated-build-inputs file the hook writes itself
/// is left out). `names` are the simulated outputs, `out` first.
fn snippet(names: &[&str], existing: &[Existing], preset: &[Move], unmatched: &[String]) -> String {
    if existing.is_empty() {
        return format!(
            "outputs = {};  # the multiple-outputs hook moves include, lib/cmake, lib/pkgconfig, share/doc ...",
            super::snippet::list(names)
        );
    }
    let has = |o: &str| o == "out" || existing.iter().any(|e| e.output == o);
    let mut parts = Vec::new();
    let new: Vec<&str> = names.iter().copied().filter(|o| !has(o)).collect();
    if !new.is_empty() {
        // Every output it has, then the new ones.
        let mut all: Vec<&str> = vec!["out"];
        for e in existing {
            if !all.contains(&e.output.as_str()) {
                all.push(&e.output);
            }
        }
        all.extend(&new);
        parts.push(format!(
            "outputs = {};  # adds {}; the multiple-outputs hook moves their files",
            super::snippet::list(&all),
            new.join(", ")
        ));
    }
    let lines: Vec<String> = preset
        .iter()
        .filter(|m| {
            has(&m.output)
                && m.output != "out"
                && names.contains(&m.output.as_str())
                && !unmatched.contains(&m.pattern)
                && m.pattern != "nix-support/propagated-build-inputs"
        })
        .map(|m| {
            // Quoted as nixpkgs writes it (`moveToOutput "lib/cmake"
            // "$dev"`): the hook expands the glob itself.
            let pattern = if m.pattern.contains(['$', '`', '"', '\\', '!']) {
                nix_heft_format::quote::single_quoted(&m.pattern)
            } else {
                format!("\"{}\"", m.pattern)
            };
            format!("moveToOutput {pattern} \"${}\"", m.output)
        })
        .collect();
    if !lines.is_empty() {
        parts.push(super::snippet::shell_hook("postInstall", &lines));
    }
    parts.join("\n")
}
