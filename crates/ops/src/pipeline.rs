//! The stages after the graph, run in order for a command: read (each
//! requested path once) → classify → the traces applied → the "no file
//! contents" problem added, and for the commands that show advice, advise
//! → the joint plan.
//!
//! This is the one place that sequence is written: every command of the
//! CLI, the terminal browser's background thread and the survey's map step
//! call it. It sits above `read`, `classify`, `trace` and `plan` and below
//! the commands; it prints nothing (progress goes through [`Progress`],
//! the source's warnings stay with the caller).

use std::collections::{BTreeMap, BTreeSet, HashSet};

pub mod refused;

use nix_heft_analysis::check::{Baseline, Rules, Violation};
use nix_heft_analysis::plan::advise::{Action, ActionKind};
use nix_heft_analysis::plan::joint::Plan;
use nix_heft_analysis::plan::prune::Pruning;
use nix_heft_graph::{Graph, NodeId, ReadRequest, request};
use nix_heft_scan::classify::{Classified, classify};
use nix_heft_store::source::StoreSource;
use nix_heft_trace::file::TraceSet;
use nix_heft_types::problem::{Problem, ProblemKind};

/// What a read reports while it runs; the CLI draws a progress bar from it.
/// Any `Fn(u64) + Sync` closure is one that counts bytes only.
pub trait Progress: Sync {
    /// The read begins: `paths` paths to scan, `bytes` of NAR in all (the
    /// paths read for their tree alone are not counted).
    fn start(&self, _paths: usize, _bytes: u64) {}
    /// `bytes` more content bytes were read.
    fn advance(&self, bytes: u64);
    /// The read is over (classification follows): the CLI clears its bar
    /// and prints the source's warnings here.
    fn finish(&self) {}
}

impl<F: Fn(u64) + Sync> Progress for F {
    fn advance(&self, bytes: u64) {
        self(bytes)
    }
}

/// The NAR bytes a read of `wants` scans: what a progress bar's total is.
/// Paths asked for their tree alone are listed, not scanned, and left out.
pub fn bytes_to_scan(g: &Graph, wants: &ReadRequest) -> u64 {
    wants
        .iter()
        .filter(|(_, t)| !t.is_empty())
        .map(|(&v, _)| g.nar_size(v))
        .sum()
}

/// Reads each path `wants` names once, classifies the holds, applies the
/// traces (when given) and adds a [`ProblemKind::NoContents`] problem when
/// the source had no file contents for some path: a source without them
/// gives edges and chains but no evidence, which is a partial answer,
/// never a clean one.
pub fn classified(
    src: &dyn StoreSource,
    g: &Graph,
    wants: &ReadRequest,
    traces: Option<&TraceSet>,
    progress: &dyn Progress,
) -> Classified {
    let scanned = wants.values().filter(|t| !t.is_empty()).count();
    progress.start(scanned, bytes_to_scan(g, wants));
    let reads = nix_heft_scan::read::read(src, g, wants, &|n| progress.advance(n));
    progress.finish();
    judged(src, g, reads, traces)
}

/// The reads classified, the traces applied, and the "no file contents"
/// problem added (see [`classified`]).
fn judged(
    src: &dyn StoreSource,
    g: &Graph,
    reads: nix_heft_scan::read::Reads,
    traces: Option<&TraceSet>,
) -> Classified {
    let mut c = classify(g, reads);
    let blind = c.paths.values().filter(|p| !p.available).count();
    if blind > 0 {
        c.problems.push(Problem::new(
            src.describe(),
            ProblemKind::NoContents,
            format!(
                "has no file contents: {blind} of {} paths could not be examined; \
                 read a store or a binary cache for evidence",
                c.paths.len()
            ),
        ));
    }
    if let Some(t) = traces {
        nix_heft_scan::classify::traced::apply(g, &mut c, t);
    }
    c
}

/// Whether any path of `c` had file contents: without any, advise has
/// nothing to judge.
pub fn readable(c: &Classified) -> bool {
    c.paths.values().any(|p| p.available)
}

/// Everything read and judged: what `report` and `browse` show.
#[derive(Debug, Default)]
pub struct Examined {
    /// The classified evidence of every edge.
    pub classified: Classified,
    /// False when the source had no file contents at all (no advice then).
    pub readable: bool,
    /// advise's actions, ranked.
    pub actions: Vec<Action>,
    /// What could not be read, classified or simulated, in that order.
    pub problems: Vec<Problem>,
}

impl Examined {
    /// advise's joint plan of the actions (every non-breaking one applied
    /// together), `None` when nothing was readable; the plan's problems
    /// join [`Examined::problems`].
    pub fn joint_plan(&mut self, g: &Graph) -> Option<Plan> {
        if !self.readable {
            return None;
        }
        let (plan, problems) = nix_heft_analysis::plan::joint::plan(
            g,
            &self.classified,
            &self.actions,
            Default::default(),
        );
        self.problems.extend(problems);
        Some(plan)
    }
}

/// advise's actions from the classified evidence, knowing the outputs the
/// split candidates' packages already have (their sibling store paths in
/// `src`: the same deriver, else the name), so that moved files join an
/// existing `dev` and the snippet fits what the package has. A source that
/// fails to say leaves a problem, and the advice as if no output existed.
fn advice(
    src: &dyn StoreSource,
    g: &Graph,
    c: &Classified,
    traces: Option<&TraceSet>,
    targets: Option<&[String]>,
    consumers_read: Option<&BTreeSet<NodeId>>,
) -> (Vec<Action>, Vec<Problem>) {
    let mut problems = Vec::new();
    let mut candidates = nix_heft_analysis::plan::advise::split_candidates(g, c);
    if let Some(read) = consumers_read {
        candidates.retain(|v| read.contains(v));
    }
    let paths: Vec<nix_heft_format::StorePath> =
        candidates.iter().map(|&v| g.path(v).clone()).collect();
    let mut existing = nix_heft_analysis::plan::advise::ExistingOutputs::new();
    if !paths.is_empty() {
        match crate::roots::sibling_outputs_many(src, &paths) {
            Ok(found) => {
                let index = g.index();
                for (&v, p) in candidates.iter().zip(&paths) {
                    if let Some(sibs) = found.get(p) {
                        existing.insert(
                            v,
                            sibs.iter()
                                .map(|s| nix_heft_analysis::plan::split::Existing {
                                    output: s.output.clone(),
                                    path: s.path.to_string(),
                                    node: index.get(&s.path).copied(),
                                    found_by: s.found_by,
                                })
                                .collect(),
                        );
                    }
                }
            }
            Err(e) => problems.push(Problem::new(
                g.path(candidates.iter().copied().next().unwrap_or_default())
                    .as_str(),
                ProblemKind::Simulation,
                format!(
                    "{} could not say which outputs the packages already have ({e}); splits \
                     are advised as if they had only `out`",
                    src.describe()
                ),
            )),
        }
    }
    let (actions, p) = nix_heft_analysis::plan::advise::advise_pruned(
        g,
        c,
        traces,
        targets,
        &existing,
        consumers_read,
    );
    problems.extend(p);
    (actions, problems)
}

/// Every edge of `g` read and classified (traces applied), and advised
/// when the source had file contents.
pub fn examine(
    src: &dyn StoreSource,
    g: &Graph,
    traces: Option<&TraceSet>,
    progress: &dyn Progress,
) -> Examined {
    let c = classified(src, g, &request::all_edges(g), traces, progress);
    let readable = readable(&c);
    let (actions, sim_problems) = if readable {
        advice(src, g, &c, traces, None, None)
    } else {
        (Vec::new(), Vec::new())
    };
    let mut problems = c.problems.clone();
    problems.extend(sim_problems);
    Examined {
        classified: c,
        readable,
        actions,
        problems,
    }
}

/// Every edge of a build graph (`--derivation`: the `.drv` entries) read
/// and classified, without advice: a build input is not a reference to
/// drop.
pub fn examine_build_graph(src: &dyn StoreSource, g: &Graph, progress: &dyn Progress) -> Examined {
    let c = classified(src, g, &request::all_edges(g), None, progress);
    Examined {
        readable: readable(&c),
        problems: c.problems.clone(),
        classified: c,
        actions: Vec::new(),
    }
}

/// How much of its closure's evidence a page reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageReading {
    /// Nothing (`--no-evidence`): sizes and references only.
    Nothing,
    /// A build graph's `.drv` entries, without advice.
    BuildGraph,
    /// Every edge read and advised, with the joint plan's saving.
    Examined,
}

/// A page's evidence: what `report` and `report --diff` show of AFTER.
#[derive(Debug, Default)]
pub struct PageEvidence {
    /// Every edge's evidence, when read.
    pub classified: Option<Classified>,
    /// advise's actions, ranked.
    pub actions: Vec<Action>,
    /// What advise's joint plan saves (every non-breaking action applied
    /// together, each path counted once), when advised.
    pub plan_saving: Option<u64>,
    /// What could not be read, classified or simulated.
    pub problems: Vec<Problem>,
}

/// The evidence of `g` a page shows, read as `reading` says.
pub fn page_evidence(
    src: &dyn StoreSource,
    g: &Graph,
    reading: PageReading,
    traces: Option<&TraceSet>,
    progress: &dyn Progress,
) -> PageEvidence {
    match reading {
        PageReading::Nothing => PageEvidence::default(),
        PageReading::BuildGraph => {
            let c = classified(src, g, &request::all_edges(g), traces, progress);
            PageEvidence {
                problems: c.problems.clone(),
                classified: Some(c),
                ..Default::default()
            }
        }
        PageReading::Examined => {
            let mut ex = examine(src, g, traces, progress);
            let plan_saving = ex
                .joint_plan(g)
                .map(|plan| plan.closure_before.saturating_sub(plan.closure_after));
            PageEvidence {
                classified: Some(ex.classified),
                actions: ex.actions,
                plan_saving,
                problems: ex.problems,
            }
        }
    }
}

/// What `advise` is asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct AdviseRequest<'a> {
    /// Read only referrers where some action could save at least this many
    /// bytes (the bound from the graph, tightened by cheap trees); `0`
    /// reads everything.
    pub min_saving: u64,
    /// The GPU targets the plan's partitions keep (`--targets`).
    pub targets: Option<&'a [String]>,
    /// Traces: proven run-time holds, and which targets a workload used.
    pub traces: Option<&'a TraceSet>,
}

/// `advise`'s answer.
#[derive(Debug)]
pub struct Advised {
    /// The actions, ranked, none on a referrer left unexamined.
    pub actions: Vec<Action>,
    /// The joint plan.
    pub plan: Plan,
    /// The referrers not read because no action on them could reach
    /// `min_saving`, with that bound, largest first.
    pub not_examined: Vec<(NodeId, u64)>,
    /// Actions on referrers read that were not simulated because they
    /// could not reach `min_saving` whatever the consumers hold (so the
    /// consumers were not read for them), with that bound, largest first.
    pub not_simulated: Vec<(NodeId, ActionKind, u64)>,
    /// Every path read, with the question that needed it, by path.
    pub reads: Vec<(NodeId, ReadFor)>,
    /// What could not be read, classified, simulated or planned.
    pub problems: Vec<Problem>,
}

/// Why `advise` read a path: no path is read unless some question about
/// it needs its bytes or its file names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadFor {
    /// A referrer examined: the evidence for its own references.
    References,
    /// A referrer whose bound needed its file tree, from a source with no
    /// listing of it: its NAR. Judged by that bound, it was not examined.
    BoundTree,
    /// A consumer of these referrers, left out by the pruning: its holds
    /// into them, which a simulated split of them (or `bin-output`) needs.
    HoldsInto(Vec<NodeId>),
    /// The file names of a directory these referrers' RUNPATH entries
    /// name: which libraries each entry serves (a listing where the source
    /// has one).
    RunpathTree(Vec<NodeId>),
}

/// `advise` on the closure of `g`'s roots, reading in two rounds. First the
/// referrers [`Pruning`] cannot settle from the graph and cheap trees, with
/// all their references; the rest are judged once their trees came with
/// the read. Then, of the consumers the pruning left out, only those whose
/// holds an action on a referrer read needs
/// ([`nix_heft_analysis::plan::advise::consumers_needed`]: a split re-points them, and
/// must be able to reach `min_saving` for that to matter). Then advise's
/// actions on the examined referrers and their joint plan.
///
/// Fails with [`crate::Error::NothingToAdvise`] when the source had no file
/// contents at all, and with a usage error for a target no partition keeps.
pub fn advise(
    src: &dyn StoreSource,
    g: &Graph,
    req: &AdviseRequest,
    progress: &dyn Progress,
) -> crate::Result<Advised> {
    let all = request::all_edges(g);
    let mut pruning = Pruning::new(g, &all, req.min_saving);
    // Trees that cost no NAR (listings, the disk) settle what they can
    // before anything is downloaded.
    pruning.settle(
        g,
        &nix_heft_scan::read::cheap_trees(src, g, pruning.pending()),
    );
    let wants = pruning.to_read(all);
    let scanned = wants.values().filter(|t| !t.is_empty()).count();
    let mut total = bytes_to_scan(g, &wants);
    progress.start(scanned, total);
    let advance = |n| progress.advance(n);
    let mut reads = nix_heft_scan::read::read(src, g, &wants, &advance);
    // A referrer whose tree came only with its NAR is judged now, by the
    // same bound: every source gives the same advice.
    let first = judged(src, g, reads.clone(), req.traces);
    pruning.settle(g, &first.trees);
    let examined: BTreeSet<NodeId> = pruning.to_read(wants.clone()).into_keys().collect();
    let needs = nix_heft_analysis::plan::advise::consumers_needed(g, &first, req.min_saving);
    let needed: BTreeSet<NodeId> = needs
        .needed
        .iter()
        .copied()
        .filter(|v| examined.contains(v))
        .collect();
    drop(first);
    let mut consumers = ReadRequest::new();
    request::want(
        &mut consumers,
        needed.iter().flat_map(|&v| {
            g.referrers(v)
                .iter()
                .filter(|c| !wants.contains_key(c))
                .map(move |&c| (c, v))
        }),
    );
    if !consumers.is_empty() {
        total += bytes_to_scan(g, &consumers);
        progress.start(scanned + consumers.len(), total);
        nix_heft_scan::read::read_more(src, g, &consumers, &advance, &mut reads);
    }
    progress.finish();
    let read_for = reasons(&wants, &examined, &consumers, &reads);
    let c = judged(src, g, reads, req.traces);
    if !c.paths.is_empty() && !readable(&c) {
        return Err(crate::Error::NothingToAdvise {
            store: src.describe(),
        });
    }
    let not_examined = pruning.not_examined();
    let (mut actions, sim_problems) = advice(src, g, &c, req.traces, req.targets, Some(&needed));
    // A referrer read but then judged by its tree, or a consumer read only
    // for its holds, stays unexamined: no advice on it (none could reach
    // the threshold anyway).
    let skipped: HashSet<String> = not_examined
        .iter()
        .map(|&(v, _)| g.path(v).to_string())
        .collect();
    actions.retain(|a| !skipped.contains(&a.package));
    let note = nix_heft_analysis::plan::joint::targets_note(&actions, req.targets, req.traces)?;
    let (plan, plan_problems) = nix_heft_analysis::plan::joint::plan(g, &c, &actions, note);
    let mut problems = c.problems;
    problems.extend(sim_problems);
    problems.extend(plan_problems);
    let mut not_simulated: Vec<(NodeId, ActionKind, u64)> = needs
        .below
        .into_iter()
        .filter(|(v, _, _)| examined.contains(v))
        .collect();
    not_simulated.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    Ok(Advised {
        actions,
        plan,
        not_examined,
        not_simulated,
        reads: read_for,
        problems,
    })
}

/// Why each path in `reads` was read (see [`ReadFor`]): the referrers
/// asked for, the consumers asked for their holds, the RUNPATH targets
/// read for their trees.
fn reasons(
    referrers: &ReadRequest,
    examined: &BTreeSet<NodeId>,
    consumers: &ReadRequest,
    reads: &nix_heft_scan::read::Reads,
) -> Vec<(NodeId, ReadFor)> {
    let mut runpath_of: BTreeMap<NodeId, BTreeSet<NodeId>> = BTreeMap::new();
    for (&from, pr) in &reads.paths {
        for h in &pr.holds {
            if let nix_heft_scan::read::Site::Elf {
                hold: nix_heft_format::elf::ElfHold::Runpath { .. },
                ..
            } = h.site
            {
                runpath_of.entry(h.target).or_default().insert(from);
            }
        }
    }
    reads
        .paths
        .keys()
        .map(|&v| {
            let why = if examined.contains(&v) {
                ReadFor::References
            } else if referrers.contains_key(&v) {
                ReadFor::BoundTree
            } else if let Some(of) = consumers.get(&v) {
                ReadFor::HoldsInto(of.clone())
            } else {
                let of = runpath_of.get(&v).into_iter().flatten().copied().collect();
                ReadFor::RunpathTree(of)
            };
            (v, why)
        })
        .collect()
}

/// The gate's answer.
#[derive(Debug)]
pub struct Checked {
    /// The closure size of the roots.
    pub closure_size: u64,
    /// Every broken rule.
    pub violations: Vec<Violation>,
    /// What could not be read, checked, simulated or planned.
    pub problems: Vec<Problem>,
}

/// `check`: the gate's rules over the closure of `g`'s roots. Only the
/// edges the rules need are read ([`nix_heft_analysis::check::prepare`]), and advise
/// runs only when a budget is broken, to say what would bring it back.
pub fn check(
    src: &dyn StoreSource,
    g: &Graph,
    rules: &Rules,
    baseline: Option<&Baseline>,
    progress: &dyn Progress,
) -> Checked {
    let forbidden = rules.closure.forbidden_in(g);
    let prepared = nix_heft_analysis::check::prepare(g, rules, baseline, &forbidden);
    let c = if prepared.wants.is_empty() {
        Classified::default()
    } else {
        classified(src, g, &prepared.wants, None, progress)
    };
    let mut problems = c.problems.clone();
    problems.extend(nix_heft_analysis::check::unchecked(g, &c, &prepared));
    let (actions, plan) = if prepared.needs_advice {
        let (a, p) = advice(src, g, &c, None, None, None);
        problems.extend(p);
        let (plan, pp) = nix_heft_analysis::plan::joint::plan(g, &c, &a, Default::default());
        problems.extend(pp);
        (a, Some(plan))
    } else {
        (Vec::new(), None)
    };
    let violations =
        nix_heft_analysis::check::check(g, &c, rules, baseline, &prepared, &actions, plan.as_ref());
    Checked {
        closure_size: prepared.closure_size,
        violations,
        problems,
    }
}

/// Why a root keeps some dependencies: what `why` shows.
pub struct Why {
    /// How many chains lead from the root to the dependencies.
    pub count: u128,
    /// The chains shown: every one (`all`, weakest verdict first), else
    /// the best chain of each dependency not reached through another.
    pub shown: Vec<Vec<NodeId>>,
    /// The best chain of each dependency, with what keeps it.
    pub best: Vec<nix_heft_analysis::explain::Explained>,
    /// The evidence of every edge on some chain.
    pub classified: Classified,
}

/// Why `root` keeps `deps`: every edge on some chain read and classified,
/// so that chains are ranked by their holds' verdicts.
pub fn why(
    src: &dyn StoreSource,
    g: &Graph,
    root: NodeId,
    deps: &[NodeId],
    all: bool,
    traces: Option<&TraceSet>,
    progress: &dyn Progress,
) -> Why {
    use nix_heft_graph::chains;
    let mut is_dep = vec![false; g.len()];
    for &d in deps {
        is_dep[d as usize] = true;
    }
    let mut wants = chains::edges_of_all_chains(g, &[root], &is_dep);
    // A match that every chain reaches through another match is explained
    // too, by its best chain through them: the edges between matches are
    // read as well (only when there is such a match).
    let direct = chains::on_some_chain(g, &[root], &is_dep);
    if deps.iter().any(|&d| !direct[d as usize]) {
        let between = chains::edges_between_deps(g, deps, &is_dep);
        nix_heft_graph::request::want(
            &mut wants,
            between
                .into_iter()
                .flat_map(|(f, ts)| ts.into_iter().map(move |t| (f, t))),
        );
    }
    let c = classified(src, g, &wants, traces, progress);
    let best = nix_heft_analysis::explain::best_chains(g, &c, &[root], deps);
    let (count, mut shown) = chains::chains(g, root, deps, all);
    if all {
        shown.sort_by_key(|ch| (nix_heft_analysis::explain::chain_verdict(&c, ch), ch.len()));
    } else {
        // A match reached only through another is a line of its own,
        // not a chain shown (the chain shown to the other covers it).
        shown = best
            .iter()
            .filter(|b| b.through.is_none())
            .map(|b| b.chain.clone())
            .collect();
    }
    Why {
        count,
        shown,
        best,
        classified: c,
    }
}

/// What `partition` is asked.
pub struct PartitionRequest<'a> {
    /// The closure, with PATH and the roots in it.
    pub graph: &'a Graph,
    /// The path to partition.
    pub path: NodeId,
    /// The regex whose first group names each file's group.
    pub by: &'a str,
    /// The groups to keep (`--keep`), if any.
    pub keep: Option<&'a [String]>,
    /// The roots whose closures are compared.
    pub roots: &'a [NodeId],
    /// Run-time traces: the groups the workload used.
    pub traces: Option<&'a TraceSet>,
}

/// A partition simulated.
pub struct Partitioned {
    /// The groups, and the closures with only the kept ones.
    pub partition: nix_heft_analysis::plan::partition::Partition,
    /// The groups with a file the traces used, with traces.
    pub traced_groups: Option<Vec<String>>,
    /// What could not be read.
    pub problems: Vec<Problem>,
}

/// `partition`: PATH's own holds read, its files grouped, and with traces
/// the groups a workload used (a link in a farm counts: the trace records
/// the use on it too).
pub fn partition(
    src: &dyn StoreSource,
    req: PartitionRequest,
    progress: &dyn Progress,
) -> crate::Result<Partitioned> {
    let (g, p) = (req.graph, req.path);
    let wants: ReadRequest = [(p, request::references_of(g, p))].into_iter().collect();
    let c = classified(src, g, &wants, req.traces, progress);
    let partition =
        nix_heft_analysis::plan::partition::partition(g, &c, p, req.by, req.keep, req.roots)?;
    let traced_groups = req.traces.map(|t| {
        partition
            .groups
            .iter()
            .filter(|gr| {
                gr.files.iter().any(|f| {
                    t.file(g.path(p).as_str(), &String::from_utf8_lossy(f))
                        .is_some_and(|ft| ft.used())
                })
            })
            .map(|gr| gr.key.clone())
            .collect()
    });
    Ok(Partitioned {
        partition,
        traced_groups,
        problems: c.problems,
    })
}

/// nix-diff's question over two build graphs read from `drvs`: what
/// differs inside each changed derivation, down to the root causes, each
/// weighed by the NAR sizes its outputs are known to have.
pub fn derivation_diff(
    before: &[nix_heft_format::StorePath],
    after: &[nix_heft_format::StorePath],
    drvs: &nix_heft_store::source::build_graph::DerivationSource,
) -> nix_heft_analysis::diff::derivation::DrvComparison {
    let bytes = drvs
        .outputs()
        .into_iter()
        .filter_map(|(d, outs)| {
            let known: Vec<u64> = outs.iter().filter_map(|o| o.nar_size).collect();
            (!known.is_empty()).then(|| (d, known.iter().sum()))
        })
        .collect();
    nix_heft_analysis::diff::derivation::compare(before, after, &drvs.parsed(), &bytes)
}

/// What `split` is asked.
pub struct SplitRequest<'a> {
    /// The closure, with PATH and the roots in it.
    pub graph: Graph,
    /// The path to split.
    pub path: NodeId,
    /// The roots whose closures are compared.
    pub roots: Vec<NodeId>,
    /// Every move, in order (a preset's, then the command line's).
    pub moves: Vec<nix_heft_analysis::plan::split::Move>,
    /// Of them, those named one by one (`--move`): each that matches no
    /// file is a warning.
    pub named: &'a [nix_heft_analysis::plan::split::Move],
    /// Whether `dev` propagates `out`, as nixpkgs' multiple outputs do.
    pub propagate: bool,
    /// Run-time traces, for the verdicts.
    pub traces: Option<&'a TraceSet>,
}

/// A split simulated.
pub struct Split {
    /// The closure the plan's ids are in: the request's, or, when the
    /// package has an output no root reaches (an existing `dev`), that
    /// graph with it added as a root.
    pub graph: Graph,
    /// The path split, in `graph`.
    pub path: NodeId,
    /// The moves, as requested.
    pub moves: Vec<nix_heft_analysis::plan::split::Move>,
    /// The plan.
    pub plan: nix_heft_analysis::plan::split::SplitPlan,
    /// What could not be read or simulated.
    pub problems: Vec<Problem>,
    /// A warning for each named move that matched no file.
    pub warnings: Vec<String>,
}

/// `split`: the outputs the package already has are found (moved files
/// join them, so their files and holds are read too, and the graph gains
/// those no root reaches); PATH's own holds, its consumers' holds into it
/// and the existing outputs' holds are read; the split is simulated.
pub fn split(
    src: &dyn StoreSource,
    req: SplitRequest,
    progress: &dyn Progress,
) -> crate::Result<Split> {
    use nix_heft_analysis::plan::split::Existing;
    use nix_heft_graph::request::{references_of, want};
    let SplitRequest {
        graph: mut g,
        mut path,
        mut roots,
        moves,
        named,
        propagate,
        traces,
    } = req;
    let siblings = crate::roots::sibling_outputs(src, g.path(path))?;
    // Each sibling's node, from one index of the graph (a closure-sized
    // map: built once, and once again only if the graph is reloaded).
    let index = g.index();
    let mut nodes: Vec<Option<NodeId>> = siblings
        .iter()
        .map(|s| index.get(&s.path).copied())
        .collect();
    drop(index);
    if nodes.iter().any(Option::is_none) {
        let p = g.path(path).clone();
        let rs: Vec<nix_heft_format::StorePath> =
            roots.iter().map(|&r| g.path(r).clone()).collect();
        let mut all: Vec<nix_heft_format::StorePath> =
            g.roots().iter().map(|&r| g.path(r).clone()).collect();
        for x in std::iter::once(&p).chain(siblings.iter().map(|s| &s.path)) {
            if !all.contains(x) {
                all.push(x.clone());
            }
        }
        g = Graph::load(src, &all)?;
        let index = g.index();
        path = index[&p];
        roots = rs.iter().map(|r| index[r]).collect();
        nodes = siblings
            .iter()
            .map(|s| index.get(&s.path).copied())
            .collect();
    }
    let existing: Vec<Existing> = siblings
        .iter()
        .zip(nodes)
        .map(|(s, node)| Existing {
            output: s.output.clone(),
            path: s.path.to_string(),
            node,
            found_by: s.found_by,
        })
        .collect();
    let mut wants: ReadRequest = [(path, references_of(&g, path))].into_iter().collect();
    want(&mut wants, g.referrers(path).iter().map(|&c| (c, path)));
    for n in existing.iter().filter_map(|e| e.node) {
        want(&mut wants, references_of(&g, n).into_iter().map(|t| (n, t)));
    }
    let c = classified(src, &g, &wants, traces, progress);
    let plan =
        nix_heft_analysis::plan::split::split(&g, &c, path, &moves, propagate, &roots, &existing)?;
    let mut problems = c.problems.clone();
    problems.extend(plan.sim.problems.iter().cloned());
    let warnings = named
        .iter()
        .filter(|m| plan.sim.unmatched.contains(&m.pattern))
        .map(|m| {
            format!(
                "--move '{}={}' matched no file of {}",
                m.pattern,
                m.output,
                g.path(path)
            )
        })
        .collect();
    Ok(Split {
        graph: g,
        path,
        moves,
        plan,
        problems,
        warnings,
    })
}

/// The closure of the store paths a trace touched, in `src`, for the
/// trace's sizes and never-touched paths; each touched path `src` does not
/// hold is a problem. No graph when the closure cannot be read.
pub fn traced_closure(
    src: &dyn StoreSource,
    trace: &nix_heft_trace::file::TraceFile,
) -> (Option<Graph>, Vec<Problem>) {
    let mut roots = Vec::new();
    let mut problems = Vec::new();
    for p in trace.paths.keys() {
        match nix_heft_format::StorePath::parse(src.store_dir(), p) {
            Ok(sp) if src.is_valid(&sp).unwrap_or(false) => roots.push(sp),
            _ => problems.push(Problem::new(
                p.clone(),
                ProblemKind::Unreadable,
                format!("touched, but not a valid path in {}", src.describe()),
            )),
        }
    }
    (Graph::load(src, &roots).ok(), problems)
}

/// Two closures compared, as `diff` and `report --diff` show them.
pub struct Compared {
    /// What changed between the two graphs, the strongest holder of each
    /// change named.
    pub diff: nix_heft_analysis::diff::ClosureDiff,
    /// BEFORE's evidence: the edges that held the paths that left.
    pub before: Classified,
    /// AFTER's evidence: the edges that brought the new paths in (or every
    /// edge, when the caller read them all).
    pub after: Classified,
}

/// How [`compare`] reads.
#[derive(Default)]
pub struct CompareOptions {
    /// Rank the changed paths by drag (the build graph: which changed input
    /// brings most of the new build closure along, nix-diff's question).
    pub rank_by_drag: bool,
    /// Read no evidence at all (the page without evidence): the diff alone.
    pub no_evidence: bool,
    /// AFTER's evidence when the caller has read it already (every edge,
    /// for a page): AFTER is then not read again, and the read's problems
    /// stay the caller's (the comparison does not repeat them).
    pub after_read: Option<Classified>,
}

/// Where each path of `g` came from, as `src` says (the cache or store of
/// a layered source), in `g`'s order.
pub fn origins(src: &dyn StoreSource, g: &Graph) -> Vec<Option<String>> {
    g.paths()
        .iter()
        .map(|p| src.provenance(p).map(|o| o.label()))
        .collect()
}

/// The two sides' closures, loaded at once (they are independent).
pub fn load_pair(
    before: (&dyn StoreSource, &[nix_heft_format::StorePath]),
    after: (&dyn StoreSource, &[nix_heft_format::StorePath]),
) -> (crate::Result<Graph>, crate::Result<Graph>) {
    let (b, a) = rayon::join(
        || Graph::load(before.0, before.1),
        || Graph::load(after.0, after.1),
    );
    (b.map_err(Into::into), a.map_err(Into::into))
}

/// Two closures compared: the diff, then each side read for the edges that
/// explain what came (AFTER's new edges) and went (BEFORE's vanished ones),
/// and each change's strongest holder named from that evidence; the one
/// sequence `diff` and `report --diff` share.
pub fn compare(
    (bsrc, bg): (&dyn StoreSource, &Graph),
    (asrc, ag): (&dyn StoreSource, &Graph),
    opts: CompareOptions,
    progress: (&dyn Progress, &dyn Progress),
) -> Compared {
    let mut d = nix_heft_analysis::diff::diff(bg, ag);
    if opts.rank_by_drag {
        d.rank_by_drag(bg, ag);
    }
    let (wb, wa) = d.wants();
    let before = if opts.no_evidence {
        Classified::default()
    } else {
        classified(bsrc, bg, &wb, None, progress.0)
    };
    let after = match opts.after_read {
        Some(c) => Classified {
            problems: Vec::new(),
            ..c
        },
        None if opts.no_evidence => Classified::default(),
        None => classified(asrc, ag, &wa, None, progress.1),
    };
    d.prefer_strongest(ag, &before, &after);
    Compared {
        diff: d,
        before,
        after,
    }
}
