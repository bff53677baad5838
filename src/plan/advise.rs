//! Ranked advice: actions that shrink a closure, each with the saving the
//! what-if engine computes by applying it to the graph (never an estimate),
//! the evidence it rests on, how safe it is, and the nixpkgs snippet that
//! applies it.

use std::collections::{BTreeMap, BTreeSet};

use regex::bytes::Regex;
use serde::{Deserialize, Serialize};

use super::split::{nixpkgs_preset, simulate};
use super::whatif::WhatIf;
use crate::classify::Classified;
use crate::classify::verdict::judge;
use crate::evidence::{Evidence, Kind, Verdict};
use crate::graph::{Graph, NodeId};
use crate::problem::{Problem, ProblemKind};
use crate::store_path::OutputKind;
use crate::trace::file::TraceSet;

/// How safe an action is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Safety {
    /// Nothing at run time uses what it removes.
    Safe,
    /// Probably fine; run the program to be sure.
    CheckAtRuntime,
    /// Removes something a program uses at run time.
    BreaksRuntime,
}

impl Safety {
    /// The name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Safety::Safe => "safe",
            Safety::CheckAtRuntime => "check-at-runtime",
            Safety::BreaksRuntime => "breaks-runtime",
        }
    }
}

/// What kind of action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionKind {
    /// Drop a RUNPATH entry that serves nothing.
    DeadRunpath,
    /// Strip debug information or .comment that holds the reference.
    StripDebug,
    /// Split build-time and documentation files into other outputs.
    SplitOutputs,
    /// Remove a reference held only by a string in an ELF file.
    RemoveReferencesTo,
    /// Build only the targets you need (GPU targets).
    PartitionTargets,
    /// Route programs into a `bin` output (not simulated).
    BinOutput,
}

impl ActionKind {
    /// The name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::DeadRunpath => "dead-runpath",
            ActionKind::StripDebug => "strip-debug",
            ActionKind::SplitOutputs => "split-outputs",
            ActionKind::RemoveReferencesTo => "remove-references-to",
            ActionKind::PartitionTargets => "partition-targets",
            ActionKind::BinOutput => "bin-output",
        }
    }
}

/// One piece of advice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// The kind of action.
    pub kind: ActionKind,
    /// The store path whose package the action changes.
    pub package: String,
    /// The references of `package` it cuts.
    pub cuts: Vec<String>,
    /// The paths that leave the roots' closure: those of `cuts` that
    /// nothing else keeps (with their own dependencies counted in `saving`).
    pub removes: Vec<String>,
    /// Cut references that stay in the closure, each with what keeps it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stays: Vec<Stay>,
    /// Bytes the roots' closure loses, computed by applying the action to
    /// the graph; `None` for actions that cannot be simulated.
    pub saving: Option<u64>,
    /// `saving` as a percentage of the roots' closure.
    pub saving_percent: Option<f64>,
    /// How safe it is.
    pub safety: Safety,
    /// Why, in one line.
    pub reason: String,
    /// Files (relative to `package`) the action rests on.
    pub evidence: Vec<String>,
    /// The nixpkgs code that applies it.
    pub snippet: String,
    /// False for kinds the what-if engine cannot simulate.
    pub simulated: bool,
    /// For `partition-targets`: the targets the saving keeps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keeps: Vec<String>,
    /// For `partition-targets`: the regex that names the targets (not in
    /// JSON; the plan applies the partition again with it).
    #[serde(skip)]
    pub pattern: Option<&'static str>,
}

/// Where a partition's kept targets come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeepSource {
    Given,
    Trace,
    Costliest,
}

/// A cut reference that stays in the closure, and the chain that keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stay {
    /// The path that stays.
    pub path: String,
    /// The strongest remaining chain from a root to it; empty when it is a
    /// root itself.
    pub kept_by: Vec<String>,
    /// The verdict of that chain's weakest edge.
    pub verdict: Verdict,
    /// Referrers on that chain that were not read (`advise`'s pruning left
    /// them out): their holds, and so the verdict, are not known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_examined: Vec<String>,
}

/// Known per-target layouts: a regex whose match names a target, the
/// nixpkgs knob that selects targets.
pub(crate) const TARGET_PATTERNS: &[(&str, &str)] = &[
    ("gfx[0-9]+[a-z]?", "gpuTargets"),
    ("sm_[0-9]+", "cudaCapabilities"),
];

fn files_of(evs: &[Evidence]) -> Vec<String> {
    let mut v: Vec<String> = evs.iter().map(|e| e.file.clone()).collect();
    v.sort();
    v.dedup();
    v
}

/// `$out/a $out/b`: files of the package as a builder's shell names them.
fn out_paths(files: &[String]) -> String {
    files
        .iter()
        .map(|f| format!("$out/{f}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The attribute-like package name (`rocblas`), for nixpkgs snippets.
fn pkg_name(p: &str) -> &str {
    crate::store_path::package_name(full_name(p))
}

/// The path's full name (`rocblas-5.7.1-dev`), for messages: the output
/// or `-source` suffix tells apart paths of one package.
use crate::store_path::name_of as full_name;

/// Which cut references leave the closure (`removes`) and what keeps the
/// others (`stays`): `package` without its edges to `cuts`, as every action
/// here leaves it.
fn settle(
    g: &Graph,
    c: &Classified,
    index: &std::collections::HashMap<&crate::StorePath, NodeId>,
    a: &mut Action,
) {
    let Some(&from) = crate::StorePath::parse(g.path(0).store_dir(), &a.package)
        .ok()
        .as_ref()
        .and_then(|p| index.get(p))
    else {
        return;
    };
    let cut: Vec<NodeId> = a
        .cuts
        .iter()
        .filter_map(|p| crate::StorePath::parse(g.path(0).store_dir(), p).ok())
        .filter_map(|p| index.get(&p).copied())
        .collect();
    let mut w = WhatIf::new(g);
    for &t in &cut {
        w.remove_edge(from, t);
    }
    let mut after = vec![false; g.len()];
    for v in w.closure(g.roots()) {
        if (v as usize) < after.len() {
            after[v as usize] = true;
        }
    }
    a.removes.clear();
    a.stays.clear();
    for &t in &cut {
        if !after[t as usize] {
            a.removes.push(g.path(t).to_string());
            continue;
        }
        let kept = crate::explain::keeper(g, c, g.roots(), t, (from, t));
        let not_examined = kept.as_ref().map_or_else(Vec::new, |k| {
            // Every node of the chain but the last refers to the next; one
            // that was not scanned at all gave no holds to judge.
            k.chain[..k.chain.len().saturating_sub(1)]
                .iter()
                .filter(|v| !c.paths.contains_key(v))
                .map(|&v| g.path(v).to_string())
                .collect()
        });
        a.stays.push(Stay {
            not_examined,
            path: g.path(t).to_string(),
            kept_by: kept
                .as_ref()
                .map(|k| k.chain.iter().map(|&v| g.path(v).to_string()).collect())
                .unwrap_or_default(),
            verdict: kept.map_or(Verdict::Runtime, |k| k.verdict),
        });
    }
}

/// The first hold in `evs` that a trace proved used, as "why" text.
fn traced_use(evs: &[Evidence]) -> Option<String> {
    evs.iter()
        .find(|e| e.traced == Some(crate::evidence::Traced::Used))
        .map(|e| format!("{}: {}", e.file, e.reason))
}

/// Ranks an action down to breaks-runtime when a trace shows it removes
/// something the workload used.
fn rank_down(a: &mut Action, proof: Option<String>) {
    if let Some(p) = proof {
        a.safety = Safety::BreaksRuntime;
        a.reason = format!("{}; but the trace proves it is used: {p}", a.reason);
    }
}

/// Computes ranked advice for the graph's roots from the classified
/// evidence of every edge. Candidates come from the inferred verdicts;
/// with `traces`, an action that would move or drop something a traced
/// workload used is ranked down to breaks-runtime (naming the trace), and
/// a per-target partition keeps the targets the trace used. Actions that
/// could not be simulated are not dropped: each leaves a problem.
pub fn advise(
    g: &Graph,
    scan: &Classified,
    traces: Option<&TraceSet>,
    targets: Option<&[String]>,
) -> (Vec<Action>, Vec<Problem>) {
    let mut problems = Vec::new();
    let roots = g.roots();
    let base = WhatIf::new(g);
    let total = base.closure_size(roots);
    let pct = |s: u64| {
        if total > 0 {
            s as f64 * 100.0 / total as f64
        } else {
            0.0
        }
    };
    let saving_of = |edits: &dyn Fn(&mut WhatIf<'_>)| -> u64 {
        let mut w = WhatIf::new(g);
        edits(&mut w);
        total.saturating_sub(w.closure_size(roots))
    };
    let mut actions = Vec::new();
    let mut split_candidates: BTreeSet<NodeId> = BTreeSet::new();
    for (&from, pe) in &scan.paths {
        for (&to, evs) in &pe.by_reference {
            if to == from || evs.is_empty() {
                continue;
            }
            let verdicts: Vec<Verdict> = evs.iter().map(|e| judge(e).0).collect();
            let edge = verdicts.iter().min().copied().expect("non-empty");
            let dep = g.path(to).to_string();
            let pkg = g.path(from).to_string();
            match edge {
                Verdict::Dead => {
                    let runpath = evs.iter().any(|e| e.kind == Kind::ElfRunpath);
                    let saving = saving_of(&|w| w.remove_edge(from, to));
                    let files = files_of(evs);
                    let proof = traced_use(evs);
                    let mut action = if runpath {
                        Action {
                            kind: ActionKind::DeadRunpath,
                            cuts: vec![dep.clone()],
                            removes: Vec::new(),
                            stays: Vec::new(),
                            saving: Some(saving),
                            saving_percent: Some(pct(saving)),
                            safety: Safety::Safe,
                            reason: format!(
                                "RUNPATH entry {}/lib provides none of the libraries {} needs or dlopen()s",
                                g.path(to),
                                files.join(", ")
                            ),
                            snippet: format!(
                                "postFixup = ''\n  patchelf --shrink-rpath {}\n'';",
                                out_paths(&files)
                            ),
                            evidence: files,
                            package: pkg,
                            simulated: true,
                            keeps: Vec::new(),
                            pattern: None,
                        }
                    } else {
                        Action {
                            kind: ActionKind::StripDebug,
                            cuts: vec![dep.clone()],
                            removes: Vec::new(),
                            stays: Vec::new(),
                            saving: Some(saving),
                            saving_percent: Some(pct(saving)),
                            safety: Safety::Safe,
                            reason: format!(
                                "{} is only mentioned in debug information or .comment",
                                full_name(&dep)
                            ),
                            snippet: "separateDebugInfo = true;  # or: dontStrip = false;"
                                .to_string(),
                            evidence: files,
                            package: pkg,
                            simulated: true,
                            keeps: Vec::new(),
                            pattern: None,
                        }
                    };
                    rank_down(&mut action, proof);
                    actions.push(action);
                }
                // An output that is already split off (`-dev`, `-doc` ...)
                // is where such files belong.
                Verdict::Build | Verdict::Docs
                    if !OutputKind::of(g.path(from).name()).is_dev_or_docs() =>
                {
                    split_candidates.insert(from);
                }
                Verdict::Unknown
                    if evs
                        .iter()
                        .all(|e| matches!(e.kind, Kind::ElfString | Kind::ElfOther)) =>
                {
                    let saving = saving_of(&|w| w.remove_edge(from, to));
                    let files = files_of(evs);
                    let mut action = Action {
                        kind: ActionKind::RemoveReferencesTo,
                        cuts: vec![dep.clone()],
                        removes: Vec::new(),
                        stays: Vec::new(),
                        saving: Some(saving),
                        saving_percent: Some(pct(saving)),
                        safety: Safety::CheckAtRuntime,
                        reason: format!(
                            "{} is held only by strings in ELF data (an error message, or a path the program opens)",
                            full_name(&dep)
                        ),
                        snippet: format!(
                            "nativeBuildInputs = [ removeReferencesTo ];\npostFixup = ''\n  remove-references-to -t ${{{}}} {}\n'';",
                            pkg_name(&dep),
                            out_paths(&files)
                        ),
                        evidence: files,
                        package: pkg,
                        simulated: true,
                        keeps: Vec::new(),
                        pattern: None,
                    };
                    rank_down(&mut action, traced_use(evs));
                    actions.push(action);
                }
                _ => {}
            }
        }
    }
    // Output splits, simulated with the nixpkgs preset.
    for &p in &split_candidates {
        let mut w = WhatIf::new(g);
        let sim = match simulate(g, scan, &mut w, p, &nixpkgs_preset(), true) {
            Ok(sim) => sim,
            Err(e) => {
                problems.push(Problem::new(
                    g.path(p).as_str(),
                    ProblemKind::Simulation,
                    format!("the split-outputs action could not be simulated: {e}"),
                ));
                continue;
            }
        };
        problems.extend(sim.problems.iter().cloned());
        let saving = total.saturating_sub(w.closure_size(roots));
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
        let evidence: Vec<String> = scan.paths[&p]
            .by_reference
            .iter()
            .filter(|(t, _)| removed.contains(&g.path(**t).to_string()))
            .flat_map(|(_, evs)| files_of(evs))
            .collect();
        // Files the split moves out of `out` that a trace used.
        let moved_traced: Vec<String> = traces
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
        let mut action = Action {
            kind: ActionKind::SplitOutputs,
            package: g.path(p).to_string(),
            cuts: removed.clone(),
            removes: Vec::new(),
            stays: Vec::new(),
            saving: Some(saving),
            saving_percent: Some(pct(saving)),
            safety: if moved_runtime.is_empty() {
                Safety::Safe
            } else {
                Safety::BreaksRuntime
            },
            reason: if moved_runtime.is_empty() {
                format!(
                    "build-time/documentation files hold {}; consumers use only `out`",
                    removed
                        .iter()
                        .map(|r| full_name(r))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else {
                format!(
                    "build-time/documentation files hold {}, but consumers use {} at run time",
                    removed
                        .iter()
                        .map(|r| full_name(r))
                        .collect::<Vec<_>>()
                        .join(", "),
                    moved_runtime
                        .iter()
                        .map(|(f, _)| f.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            evidence,
            snippet: format!(
                "outputs = [ {} ];  # the multiple-outputs hook moves include, lib/cmake, lib/pkgconfig, share/doc ...",
                names
                    .iter()
                    .map(|n| format!("\"{n}\""))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            simulated: true,
            keeps: Vec::new(),
            pattern: None,
        };
        rank_down(
            &mut action,
            (!moved_traced.is_empty()).then(|| {
                format!(
                    "it moves files the traced workload used: {}",
                    moved_traced.join(", ")
                )
            }),
        );
        actions.push(action);
    }
    // Per-target partitions: files or symlink targets named after targets.
    for (&p, pe) in &scan.paths {
        for &(pat, knob) in TARGET_PATTERNS {
            let re = Regex::new(pat).expect("static pattern");
            let mut by_target: BTreeMap<String, BTreeSet<NodeId>> = BTreeMap::new();
            // Only run-time files count: a target list in a build file is
            // not a per-target layout.
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
                        if traces.is_some_and(|tr| {
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
                continue;
            }
            let keys: Vec<String> = by_target.keys().cloned().collect();
            // Keeping the target that costs most is the least a user saves.
            let tree = match super::tree_of(g, scan, p, "a partition") {
                Ok(t) => t,
                Err(e) => {
                    problems.push(Problem::new(
                        g.path(p).as_str(),
                        ProblemKind::Simulation,
                        format!("the partition-targets action could not be simulated: {e}"),
                    ));
                    continue;
                }
            };
            let try_keep = |keep: Vec<String>| {
                super::partition::partition_of(
                    g,
                    p,
                    tree,
                    &pe.by_reference,
                    pat,
                    Some(&keep),
                    roots,
                )
                .ok()
                .and_then(|r| Some((keep, total.saturating_sub(r.after_keep?), r.kept_refs?)))
            };
            // The targets to keep: those given (--targets), else those the
            // trace used, else the costliest single target (the least a
            // user saves).
            let given: Vec<String> = targets
                .map(|t| t.iter().filter(|k| keys.contains(k)).cloned().collect())
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
                        .min_by_key(|(_, s, _)| *s),
                    KeepSource::Costliest,
                )
            };
            let from_trace = source == KeepSource::Trace;
            let Some((kept_list, saving, kept_refs)) = choice else {
                continue;
            };
            let kept = kept_list.join("\", \"");
            let removes: Vec<String> = g
                .references(p)
                .iter()
                .filter(|r| !kept_refs.contains(r))
                .map(|&r| g.path(r).to_string())
                .collect();
            actions.push(Action {
                kind: ActionKind::PartitionTargets,
                package: g.path(p).to_string(),
                cuts: removes,
                removes: Vec::new(),
                stays: Vec::new(),
                saving: Some(saving),
                saving_percent: Some(pct(saving)),
                safety: Safety::CheckAtRuntime,
                reason: format!(
                    "{} holds files for {} targets ({}); they are used at run time, so build only the targets you need instead of moving them{}",
                    full_name(g.path(p).as_str()),
                    keys.len(),
                    keys.join(", "),
                    if from_trace {
                        format!(
                            "; the traced workload used only {} (trace {})",
                            traced_keys.iter().cloned().collect::<Vec<_>>().join(", "),
                            traces.map(|t| t.names()).unwrap_or_default()
                        )
                    } else {
                        String::new()
                    }
                ),
                evidence: all_files.into_iter().take(8).collect(),
                snippet: if source == KeepSource::Given {
                    format!(
                        "{}.override {{ {knob} = [ \"{kept}\" ]; }}  # the targets given with --targets",
                        pkg_name(g.path(p).as_str())
                    )
                } else if from_trace {
                    format!(
                        "{}.override {{ {knob} = [ \"{kept}\" ]; }}  # the targets the trace ({}) used",
                        pkg_name(g.path(p).as_str()),
                        traces.map(|t| t.names()).unwrap_or_default()
                    )
                } else {
                    format!(
                        "{}.override {{ {knob} = [ \"{kept}\" ]; }}  # saving shown keeps {kept}, the costliest target; fewer or cheaper targets save more",
                        pkg_name(g.path(p).as_str())
                    )
                },
                simulated: true,
                keeps: kept_list.clone(),
                pattern: Some(pat),
            });
        }
    }
    // A `bin` output cannot be simulated: which files a consumer needs from
    // bin/ is decided at install time, not by references.
    for (&p, pe) in &scan.paths {
        let bin_only: Vec<NodeId> = pe
            .by_reference
            .iter()
            .filter(|(t, evs)| {
                **t != p
                    && !evs.is_empty()
                    && evs
                        .iter()
                        .all(|e| e.file.starts_with("bin/") || e.file.starts_with("libexec/"))
            })
            .map(|(t, _)| *t)
            .collect();
        let lib_consumers = g.referrers(p).iter().any(|&c| {
            scan.paths
                .get(&c)
                .and_then(|cp| cp.by_reference.get(&p))
                .is_some_and(|evs| {
                    evs.iter()
                        .all(|e| matches!(e.kind, Kind::ElfRunpath | Kind::ElfNeeded))
                })
        });
        if !bin_only.is_empty() && lib_consumers {
            actions.push(Action {
                kind: ActionKind::BinOutput,
                package: g.path(p).to_string(),
                cuts: bin_only.iter().map(|&t| g.path(t).to_string()).collect(),
                removes: Vec::new(),
                stays: Vec::new(),
                saving: None,
                saving_percent: None,
                safety: Safety::CheckAtRuntime,
                reason: "only programs in bin/ hold these references, and consumers link only its libraries".into(),
                evidence: bin_only.iter().flat_map(|t| files_of(&pe.by_reference[t])).collect(),
                snippet: "outputs = [ \"bin\" \"out\" ];  # not simulated: install-time routing of bin/".into(),
                simulated: false,
                keeps: Vec::new(),
                pattern: None,
            });
        }
    }
    let index = g.index();
    for a in &mut actions {
        a.cuts
            .sort_by(|x, y| full_name(x).cmp(full_name(y)).then_with(|| x.cmp(y)));
        a.evidence.sort();
        a.evidence.dedup();
        settle(g, scan, &index, a);
    }
    // Nothing to cut means nothing to do (a partition whose groups all
    // point into the same paths, a split that leaves every reference).
    actions.retain(|a| !a.cuts.is_empty());
    // Largest saving first; what would break the traced workload last.
    actions.sort_by(|a, b| {
        (a.safety == Safety::BreaksRuntime)
            .cmp(&(b.safety == Safety::BreaksRuntime))
            .then_with(|| b.saving.unwrap_or(0).cmp(&a.saving.unwrap_or(0)))
            .then_with(|| a.package.cmp(&b.package))
    });
    (actions, problems)
}
