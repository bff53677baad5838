//! Ranked advice: actions that shrink a closure, each with the saving the
//! what-if engine computes by applying it to the graph (never an estimate),
//! the evidence it rests on, how safe it is, and the nixpkgs snippet that
//! applies it.
//!
//! One function per kind of action, in the file named after the kind
//! ([`ActionKind`]): each looks at one edge or one path and returns its
//! action, built by `Advisor::action` (the one way to make an
//! [`Action`]: the kind, the package, what it cuts, the saving, the
//! safety; the kind adds its reason, evidence and snippet). [`advise`]
//! asks each kind in turn, then settles what every cut removes and ranks
//! the actions. A new kind is a new file with one function and one call
//! in [`advise`].

mod bin_output;
mod dead_runpath;
mod partition_targets;
mod remove_references_to;
pub(crate) mod snippet;
mod split_outputs;
mod strip_debug;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::whatif::WhatIf;
use nix_heft_graph::{Graph, NodeId};
use nix_heft_scan::classify::Classified;
use nix_heft_scan::classify::verdict::judge;
use nix_heft_types::evidence::{Evidence, Kind, Verdict};
use nix_heft_types::problem::{Problem, ProblemKind};
// A path's full name (`rocblas-5.7.1-dev`) in messages: the output or
// `-source` suffix tells apart paths of one package.
use nix_heft_format::store_path::{OutputKind, name_of as full_name};
use nix_heft_trace::file::TraceSet;

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
    /// Files (relative to `package`) the action rests on (the first few
    /// when there are many: `evidence_files` says how many).
    pub evidence: Vec<String>,
    /// How many files the action rests on in all (`evidence` may name
    /// only some of a symlink farm's hundreds).
    #[serde(default)]
    pub evidence_files: usize,
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
    /// For `partition-targets`: every target found, as its files name it
    /// (not in JSON; `--targets` is checked against it).
    #[serde(skip)]
    pub targets_found: Vec<String>,
    /// For `partition-targets`: where `keeps` came from (not in JSON; the
    /// plan's note says it).
    #[serde(skip)]
    pub keeps_from: Option<KeepSource>,
}

/// Where a partition's kept targets come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepSource {
    /// The targets given with `--targets`.
    Given,
    /// The targets whose files a trace used.
    Trace,
    /// The costliest single target: nothing said which to keep.
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

/// What every kind of action looks at: the graph, the classified evidence,
/// the traces and targets given, and the roots' closure size that savings
/// are taken from.
struct Advisor<'a> {
    g: &'a Graph,
    c: &'a Classified,
    traces: Option<&'a TraceSet>,
    targets: Option<&'a [String]>,
    total: u64,
    /// The outputs each split candidate's package already has.
    existing: &'a ExistingOutputs,
}

/// Which referrers' consumers must be read, known from a read of the
/// referrers alone (see [`consumers_needed`]).
#[derive(Debug, Clone, Default)]
pub struct ConsumerNeeds {
    /// Referrers with an action that needs their consumers' holds into
    /// them and could reach the threshold.
    pub needed: BTreeSet<NodeId>,
    /// Actions left unsimulated because they cannot reach the threshold
    /// whatever the consumers hold: referrer, kind, the most it could save.
    pub below: Vec<(NodeId, ActionKind, u64)>,
}

/// The referrers read whose consumers' holds into them some action needs,
/// from `c`, the classified read of the referrers alone (consumers left out
/// by the pruning unread). A split re-points each consumer at the outputs
/// its holds point into; `bin-output` asks whether consumers link only the
/// libraries. Neither needs them when it cannot reach `min` even if every
/// unread consumer kept only `out` (the split simulated so: the most it
/// could save), or if every reference held only from `bin/` were cut along
/// with those files. Reading a consumer is reading its NAR, and a consumer
/// left out by the pruning can be the largest path of the closure (a GPU
/// library linking the runtime that a small header split would re-point).
pub fn consumers_needed(g: &Graph, c: &Classified, min: u64) -> ConsumerNeeds {
    let cx = Advisor {
        g,
        c,
        traces: None,
        targets: None,
        total: WhatIf::new(g).closure_size(g.roots()),
        existing: &ExistingOutputs::new(),
    };
    let mut out = ConsumerNeeds::default();
    for p in split_candidates(g, c) {
        let mut w = WhatIf::new(g);
        let preset = crate::plan::split::nixpkgs_preset();
        match crate::plan::split::simulate(g, c, &mut w, p, &preset, true, &[]) {
            Ok(_) => {
                let most = cx.total.saturating_sub(w.closure_size(g.roots()));
                if most >= min {
                    out.needed.insert(p);
                } else {
                    out.below.push((p, ActionKind::SplitOutputs, most));
                }
            }
            // The full run says why it cannot be simulated.
            Err(_) => {
                out.needed.insert(p);
            }
        }
    }
    for &p in c.paths.keys() {
        if let Some(most) = bin_output::bound(&cx, p) {
            if most >= min {
                out.needed.insert(p);
            } else {
                out.below.push((p, ActionKind::BinOutput, most));
            }
        }
    }
    out
}

/// The outputs packages already have, by the node of the path a split
/// would be simulated on (see [`split_candidates`]).
pub type ExistingOutputs = BTreeMap<NodeId, Vec<crate::plan::split::Existing>>;

/// The referrers whose build-time or documentation files hold some
/// reference, outside outputs already split off (`-dev`, `-doc` ...):
/// where advise simulates a split, and so whose existing outputs the
/// caller looks up for [`advise_with`].
pub fn split_candidates(g: &Graph, c: &Classified) -> BTreeSet<NodeId> {
    let mut out = BTreeSet::new();
    for (&from, pe) in &c.paths {
        if OutputKind::of(g.path(from).name()).is_dev_or_docs() {
            continue;
        }
        let held = pe.by_reference.iter().any(|(&to, evs)| {
            to != from
                && evs
                    .iter()
                    .map(|e| judge(e).0)
                    .min()
                    .is_some_and(|v| matches!(v, Verdict::Build | Verdict::Docs))
        });
        if held {
            out.insert(from);
        }
    }
    out
}

impl Advisor<'_> {
    /// `saving` as a percentage of the roots' closure.
    fn percent(&self, saving: u64) -> f64 {
        if self.total > 0 {
            saving as f64 * 100.0 / self.total as f64
        } else {
            0.0
        }
    }

    /// What the roots' closure loses without the edge `from` → `to`.
    fn saving_without_edge(&self, from: NodeId, to: NodeId) -> u64 {
        let mut w = WhatIf::new(self.g);
        w.remove_edge(from, to);
        self.total.saturating_sub(w.closure_size(self.g.roots()))
    }

    /// The problem left when an action of `kind` on `p` could not be
    /// simulated (`why`): it is reported, not dropped silently.
    fn not_simulated(&self, kind: ActionKind, p: NodeId, why: impl std::fmt::Display) -> Problem {
        Problem::new(
            self.g.path(p).as_str(),
            ProblemKind::Simulation,
            format!("the {} action could not be simulated: {why}", kind.as_str()),
        )
    }

    /// An action of `kind` on `package` that cuts `cuts`, saving `saving`
    /// (`None` for a kind the what-if engine cannot simulate): the one way
    /// an [`Action`] is built. Each kind adds its reason, evidence and
    /// snippet (and partitions their targets) with struct update syntax;
    /// what the cuts remove and what keeps the rest are settled once all
    /// actions are known.
    fn action(
        &self,
        kind: ActionKind,
        package: NodeId,
        cuts: Vec<String>,
        saving: Option<u64>,
        safety: Safety,
    ) -> Action {
        Action {
            kind,
            package: self.g.path(package).to_string(),
            cuts,
            removes: Vec::new(),
            stays: Vec::new(),
            saving,
            saving_percent: saving.map(|s| self.percent(s)),
            safety,
            reason: String::new(),
            evidence: Vec::new(),
            evidence_files: 0,
            snippet: String::new(),
            simulated: saving.is_some(),
            keeps: Vec::new(),
            pattern: None,
            targets_found: Vec::new(),
            keeps_from: None,
        }
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
    c: &Classified,
    traces: Option<&TraceSet>,
    targets: Option<&[String]>,
) -> (Vec<Action>, Vec<Problem>) {
    advise_with(g, c, traces, targets, &ExistingOutputs::new())
}

/// [`advise`], knowing the outputs the split candidates' packages already
/// have: moved files join an existing output, and the snippet moves them
/// into it rather than declaring outputs the package has.
pub fn advise_with(
    g: &Graph,
    c: &Classified,
    traces: Option<&TraceSet>,
    targets: Option<&[String]>,
    existing: &ExistingOutputs,
) -> (Vec<Action>, Vec<Problem>) {
    advise_pruned(g, c, traces, targets, existing, None)
}

/// [`advise_with`] after a pruned read: the actions that need consumers'
/// holds (`split-outputs`, `bin-output`) only on the referrers in
/// `consumers_read` (`None`: on every referrer).
pub fn advise_pruned(
    g: &Graph,
    c: &Classified,
    traces: Option<&TraceSet>,
    targets: Option<&[String]>,
    existing: &ExistingOutputs,
    consumers_read: Option<&BTreeSet<NodeId>>,
) -> (Vec<Action>, Vec<Problem>) {
    let cx = Advisor {
        g,
        c,
        traces,
        targets,
        total: WhatIf::new(g).closure_size(g.roots()),
        existing,
    };
    let known = |p: &NodeId| consumers_read.is_none_or(|s| s.contains(p));
    let mut problems = Vec::new();
    let mut actions = Vec::new();
    // Edges first, by their weakest hold's verdict; referrers whose build
    // or documentation files hold something are split candidates.
    for (&from, pe) in &c.paths {
        for (&to, evs) in &pe.by_reference {
            if to == from || evs.is_empty() {
                continue;
            }
            let edge = evs.iter().map(|e| judge(e).0).min().expect("non-empty");
            let action = match edge {
                Verdict::Dead if evs.iter().any(|e| e.kind == Kind::ElfRunpath) => {
                    dead_runpath::action(&cx, from, to, evs)
                }
                Verdict::Dead => strip_debug::action(&cx, from, to, evs),
                Verdict::Unknown if remove_references_to::applies(evs) => {
                    remove_references_to::action(&cx, from, to, evs)
                }
                _ => continue,
            };
            actions.push(rank_down(action, traced_use(evs)));
        }
    }
    for p in split_candidates(g, c).into_iter().filter(known) {
        actions.extend(split_outputs::action(&cx, p, &mut problems));
    }
    for &p in c.paths.keys() {
        for &(pattern, knob) in TARGET_PATTERNS {
            actions.extend(partition_targets::action(
                &cx,
                p,
                pattern,
                knob,
                &mut problems,
            ));
        }
    }
    for p in c.paths.keys().filter(|p| known(p)) {
        actions.extend(bin_output::action(&cx, *p));
    }
    (rank(&cx, actions), problems)
}

/// Settles every action (sorted cuts and evidence, what leaves and what
/// stays), drops those that cut nothing and ranks the rest.
fn rank(cx: &Advisor, mut actions: Vec<Action>) -> Vec<Action> {
    let index = cx.g.index();
    for a in &mut actions {
        a.cuts
            .sort_by(|x, y| full_name(x).cmp(full_name(y)).then_with(|| x.cmp(y)));
        a.evidence.sort();
        a.evidence.dedup();
        a.evidence_files = a.evidence_files.max(a.evidence.len());
        settle(cx.g, cx.c, &index, a);
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
    actions
}

/// The files holding `evs`, sorted, each once.
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
        .map(|f| snippet::out_file(f))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The attribute-like package name (`rocblas`), for nixpkgs snippets.
fn pkg_name(p: &str) -> &str {
    nix_heft_format::store_path::package_name(full_name(p))
}

/// Which cut references leave the closure (`removes`) and what keeps the
/// others (`stays`): `package` without its edges to `cuts`, as every action
/// here leaves it.
fn settle(
    g: &Graph,
    c: &Classified,
    index: &std::collections::HashMap<&nix_heft_format::StorePath, NodeId>,
    a: &mut Action,
) {
    let Some(&from) = nix_heft_format::StorePath::parse(g.path(0).store_dir(), &a.package)
        .ok()
        .as_ref()
        .and_then(|p| index.get(p))
    else {
        return;
    };
    let cut: Vec<NodeId> = a
        .cuts
        .iter()
        .filter_map(|p| nix_heft_format::StorePath::parse(g.path(0).store_dir(), p).ok())
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
        .find(|e| e.traced == Some(nix_heft_types::evidence::Traced::Used))
        .map(|e| format!("{}: {}", e.file, e.reason))
}

/// Ranks an action down to breaks-runtime when a trace shows it removes
/// something the workload used (`proof` says what).
fn rank_down(mut a: Action, proof: Option<String>) -> Action {
    if let Some(p) = proof {
        a.safety = Safety::BreaksRuntime;
        a.reason = format!("{}; but the trace proves it is used: {p}", a.reason);
    }
    a
}
