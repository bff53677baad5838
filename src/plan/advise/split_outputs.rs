//! `split-outputs`: build-time and documentation files of `out` that hold
//! references, moved to other outputs with nixpkgs' multiple-outputs
//! preset; simulated with the split planner.

use super::{Action, ActionKind, Advisor, Safety, files_of, full_name};
use crate::graph::NodeId;
use crate::plan::split::{nixpkgs_preset, simulate};
use crate::plan::whatif::WhatIf;
use crate::problem::Problem;

/// The action splitting `p`, whose build or documentation files hold some
/// reference; `None`, with a problem, when the split cannot be simulated.
/// The simulation's own problems join `problems` too.
pub(super) fn action(cx: &Advisor, p: NodeId, problems: &mut Vec<Problem>) -> Option<Action> {
    let g = cx.g;
    let mut w = WhatIf::new(g);
    let sim = match simulate(g, cx.c, &mut w, p, &nixpkgs_preset(), true) {
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
    let action = Action {
        reason: if moved_runtime.is_empty() {
            format!("build-time/documentation files hold {held}; consumers use only `out`")
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
        snippet: format!(
            "outputs = {};  # the multiple-outputs hook moves include, lib/cmake, lib/pkgconfig, share/doc ...",
            super::snippet::list(&names)
        ),
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
