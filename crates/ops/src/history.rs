//! A closure's history (issue 42): for each commit of a range, the
//! attributes' out paths by evaluation (never building) and their closure
//! sizes from the stores given (a binary cache holds what its builders
//! evaluated and built), and each jump between two commits read explained
//! as `impact` explains a change.
//!
//! The run:
//! 1. the commits ([`nix_heft_eval::history::commits`], then an even
//!    sample);
//! 2. each commit checked out in a temporary worktree and its attributes
//!    evaluated ([`evaluate_side`]), commits spread over the cores;
//! 3. every distinct output of every commit asked for at once
//!    ([`PathMetadata::path_infos`](nix_heft_store::source::PathMetadata)):
//!    a commit's attribute is *read* when every output is there, else "not
//!    in the cache";
//! 4. one graph over the union of the read outputs ([`Graph::load`]): the
//!    commits' closures share most paths, so each path's metadata is read
//!    once for the whole range;
//! 5. each read cell's closure size, and its change since the attribute's
//!    previous read commit;
//! 6. each change of at least the jump threshold explained by
//!    [`crate::impact::impact`] between the two commits (the packages added
//!    and removed, the chain to each and the file that holds it).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use rayon::prelude::*;

use crate::impact::{self, Impact};
use nix_heft_analysis::rules::Growth;
use nix_heft_eval::attrs::side::evaluate_side;
use nix_heft_eval::attrs::{Evaluator, Outcome};
use nix_heft_eval::eval_store::EvalStore;
use nix_heft_eval::history::{CommitInfo, Range, Targets, commits, sample};
use nix_heft_eval::installable::Options;
use nix_heft_format::store_path::StorePath;
use nix_heft_graph::{Graph, NodeId};
use nix_heft_store::source::StoreSource;

/// What to read.
pub struct Request<'a> {
    /// The git checkout.
    pub repo: PathBuf,
    /// Which of its commits.
    pub range: Range,
    /// At most this many of them, evenly spaced (the first and last kept).
    pub samples: Option<usize>,
    /// The attributes (dotted paths), each a column.
    pub attrs: &'a [String],
    /// How each commit is evaluated.
    pub evaluator: &'a Evaluator,
    /// `--file`, `--arg`, `--argstr` and the rest, as for `impact`.
    pub options: &'a Options,
    /// A change of at least this (over the earlier closure) is a jump.
    pub min_jump: Growth,
    /// Changes explained per jump.
    pub top: usize,
    /// Read the holding files of each jump's explained paths.
    pub evidence: bool,
}

/// One attribute at one commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    /// Every output is in the stores: its closure.
    Read {
        /// Output name → out path.
        outputs: BTreeMap<String, StorePath>,
        /// Closure size of all the outputs together (`nix path-info -S`).
        closure_size: u64,
        /// Paths in that closure.
        closure_paths: u64,
        /// Change since the attribute's previous read commit.
        delta: Option<i128>,
    },
    /// It evaluated, but the stores lack some outputs.
    NotInCache {
        /// Output name → out path.
        outputs: BTreeMap<String, StorePath>,
        /// The outputs the stores lack.
        missing: Vec<String>,
    },
    /// It did not evaluate (or the commit did not): Nix's message.
    EvalFailed(String),
}

/// One commit read.
#[derive(Debug, Clone)]
pub struct Row {
    /// The commit.
    pub commit: CommitInfo,
    /// Attribute → its cell.
    pub cells: BTreeMap<String, Cell>,
}

/// A change between two read commits of one attribute, explained.
pub struct Jump {
    /// The attribute.
    pub attr: String,
    /// The earlier read commit (an index into [`History::rows`]).
    pub from: usize,
    /// The later one.
    pub to: usize,
    /// Closure size after minus before.
    pub delta: i128,
    /// The change explained, as `impact` explains one (one row).
    pub impact: Impact,
    /// The two commits' derivations compared (`diff --derivation`'s root
    /// causes), when both instantiate.
    pub derivation: Option<nix_heft_analysis::diff::derivation::DrvComparison>,
}

/// What [`history`] found.
pub struct History {
    /// The attributes, in the order asked.
    pub attrs: Vec<String>,
    /// The commits read, oldest first.
    pub rows: Vec<Row>,
    /// Every jump, in commit order.
    pub jumps: Vec<Jump>,
    /// How many commits the range held before sampling.
    pub commits_in_range: usize,
    /// Evaluations run (one per commit).
    pub evaluations: usize,
    /// Instantiations for the jumps' derivations (one per commit and
    /// attribute a jump starts or ends at).
    pub instantiations: usize,
}

/// Reads the closure history of `req.attrs` from `src`.
pub fn history(
    src: &dyn StoreSource,
    req: &Request,
    step: &dyn Fn(Option<String>),
) -> crate::Result<History> {
    let all = commits(&req.repo, &req.range)?;
    let commits_in_range = all.len();
    let picked = match req.samples {
        Some(n) => sample(all, n),
        None => all,
    };
    let targets = Targets::of(req.attrs)?;
    step(Some(format!(
        "evaluating {} at {} commits",
        req.attrs.join(", "),
        picked.len()
    )));
    let (scratch, options) = targets
        .scratch_store(req.evaluator, req.options)
        .map_err(nix_heft_eval::history::HistoryError::from)?;
    let evaluated = evaluate_each(&picked, &targets, req, &options);
    step(Some("reading the closures".into()));

    let g = load_closures(src, &evaluated)?;
    let (rows, jumps_at) = rows_and_jumps(req, picked, &evaluated, g.as_ref());

    let mut jumps = Vec::with_capacity(jumps_at.len());
    if !jumps_at.is_empty() {
        step(Some(format!("explaining {} jump(s)", jumps_at.len())));
    }
    for (attr, from, to, delta) in jumps_at {
        let impact = impact::jump::explain(
            src,
            &evaluated[from],
            &evaluated[to],
            &attr,
            req.top,
            req.evidence,
        )?;
        jumps.push(Jump {
            attr,
            from,
            to,
            delta,
            impact,
            derivation: None,
        });
    }
    let instantiations = compare_derivations(
        req,
        &targets,
        &options,
        scratch.as_ref(),
        &rows,
        &mut jumps,
        step,
    )?;
    step(None);
    Ok(History {
        attrs: req.attrs.to_vec(),
        rows,
        jumps,
        commits_in_range,
        evaluations: evaluated.len(),
        instantiations,
    })
}

/// Each commit's attributes evaluated, keyed by the attributes as given
/// (`.#app`). Each evaluation is a Nix process of its own: as many at
/// once as there are cores.
fn evaluate_each(
    picked: &[CommitInfo],
    targets: &Targets,
    req: &Request,
    options: &Options,
) -> Vec<BTreeMap<String, Outcome>> {
    picked
        .par_iter()
        .map(|c| {
            let spec = targets.side_at(&req.repo, &c.id);
            match evaluate_side(&spec, req.evaluator, Some(&targets.names), options) {
                // Keyed by the attributes as given (`.#app`).
                Ok(side) => req
                    .attrs
                    .iter()
                    .zip(&targets.names)
                    .filter_map(|(given, name)| {
                        side.eval
                            .attrs
                            .get(name)
                            .map(|o| (given.clone(), o.clone()))
                    })
                    .collect(),
                // The commit as a whole does not evaluate (a syntax error,
                // a throw at the top): every attribute failed with it.
                Err(e) => req
                    .attrs
                    .iter()
                    .map(|a| (a.clone(), Outcome::Failed(e.to_string())))
                    .collect(),
            }
        })
        .collect()
}

/// The one graph of every output evaluated that `src` holds (asked at
/// once: a binary cache fetches them in parallel and keeps each for the
/// graph's load); none when it holds none.
fn load_closures(
    src: &dyn StoreSource,
    evaluated: &[BTreeMap<String, Outcome>],
) -> crate::Result<Option<Graph>> {
    let mut wanted: BTreeSet<StorePath> = BTreeSet::new();
    for ev in evaluated {
        for o in ev.values() {
            if let Outcome::Evaluated { outputs, .. } = o {
                wanted.extend(outputs.values().cloned());
            }
        }
    }
    let wanted: Vec<StorePath> = wanted.into_iter().collect();
    // Asked at once: a binary cache fetches them in parallel and keeps each
    // for the graph's load.
    let infos = src.path_infos(&wanted)?;
    let present: Vec<StorePath> = wanted
        .iter()
        .zip(&infos)
        .filter(|(_, i)| i.is_some())
        .map(|(p, _)| p.clone())
        .collect();
    Ok(if present.is_empty() {
        None
    } else {
        Some(Graph::load(src, &present)?)
    })
}

/// A jump found between two rows: (attribute, from row, to row, bytes).
type JumpAt = (String, usize, usize, i128);

/// A row a commit, each attribute's cell read from `g`, and the jumps
/// between consecutive reads at least `req.min_jump` apart, as
/// (attribute, from row, to row, bytes).
fn rows_and_jumps(
    req: &Request,
    picked: Vec<CommitInfo>,
    evaluated: &[BTreeMap<String, Outcome>],
    g: Option<&Graph>,
) -> (Vec<Row>, Vec<JumpAt>) {
    let index: HashMap<&StorePath, NodeId> = g.as_ref().map(|g| g.index()).unwrap_or_default();

    let mut rows: Vec<Row> = Vec::with_capacity(picked.len());
    let mut last_read: HashMap<&str, (usize, u64)> = HashMap::new();
    let mut jumps_at: Vec<JumpAt> = Vec::new();
    for (i, (commit, ev)) in picked.into_iter().zip(evaluated).enumerate() {
        let mut cells = BTreeMap::new();
        for attr in req.attrs {
            let cell = match ev.get(attr) {
                None => Cell::EvalFailed(format!("attribute '{attr}' is not there")),
                Some(Outcome::Failed(m)) => Cell::EvalFailed(m.clone()),
                Some(Outcome::Evaluated { outputs, .. }) => {
                    let nodes: Vec<Option<NodeId>> =
                        outputs.values().map(|p| index.get(p).copied()).collect();
                    match (&g, nodes.iter().copied().collect::<Option<Vec<NodeId>>>()) {
                        (Some(g), Some(nodes)) => {
                            let set = g.closure_of(&nodes);
                            let size = g.size_of(&set);
                            let delta = last_read
                                .get(attr.as_str())
                                .map(|&(_, before)| size as i128 - before as i128);
                            if let (Some(d), Some(&(from, before))) =
                                (delta, last_read.get(attr.as_str()))
                                && d != 0
                                && d.unsigned_abs() >= u128::from(req.min_jump.limit(before))
                            {
                                jumps_at.push((attr.clone(), from, i, d));
                            }
                            last_read.insert(attr.as_str(), (i, size));
                            Cell::Read {
                                outputs: outputs.clone(),
                                closure_size: size,
                                closure_paths: set.iter().filter(|&&b| b).count() as u64,
                                delta,
                            }
                        }
                        _ => Cell::NotInCache {
                            outputs: outputs.clone(),
                            missing: outputs
                                .keys()
                                .zip(&nodes)
                                .filter(|(_, n)| n.is_none())
                                .map(|(o, _)| o.clone())
                                .collect(),
                        },
                    }
                }
            };
            cells.insert(attr.clone(), cell);
        }
        rows.push(Row { commit, cells });
    }
    (rows, jumps_at)
}

/// Each jump's two commits instantiated into a scratch store (the
/// `.drv` files never touch the user's) and their derivations compared;
/// how many instantiations that took.
fn compare_derivations(
    req: &Request,
    targets: &Targets,
    options: &Options,
    scratch: Option<&EvalStore>,
    rows: &[Row],
    jumps: &mut [Jump],
    step: &dyn Fn(Option<String>),
) -> crate::Result<usize> {
    // Compared as `diff --derivation` compares them: which input changed,
    // down to the variable. A commit shared by two jumps is instantiated
    // once.
    let mut wanted: BTreeSet<(usize, String)> = BTreeSet::new();
    for j in jumps.iter() {
        wanted.insert((j.from, j.attr.clone()));
        wanted.insert((j.to, j.attr.clone()));
    }
    let own;
    let drv_root: Option<&std::path::Path> = match scratch {
        _ if wanted.is_empty() => None,
        Some(s) => Some(s.root()),
        None => {
            own = EvalStore::new(&req.evaluator.nix_instantiate())
                .map_err(nix_heft_eval::history::HistoryError::from)?;
            Some(own.root())
        }
    };
    let mut instantiations = 0;
    if let Some(root) = drv_root {
        step(Some(format!(
            "instantiating {} commit(s) for the jumps' derivations",
            wanted.len()
        )));
        let name_of: HashMap<&String, &String> = req.attrs.iter().zip(&targets.names).collect();
        let wanted: Vec<(usize, String)> = wanted.into_iter().collect();
        let at: Vec<(&str, &str)> = wanted
            .iter()
            .map(|(i, attr)| {
                let name = name_of.get(attr).map_or(attr.as_str(), |n| n.as_str());
                (rows[*i].commit.id.as_str(), name)
            })
            .collect();
        let drvs = impact::jump::instantiate_each(
            &req.repo,
            &at,
            targets.flake,
            req.evaluator,
            options,
            root,
        )?;
        instantiations = drvs.len();
        let drvs: HashMap<(usize, String), Result<StorePath, String>> =
            wanted.into_iter().zip(drvs).collect();
        let mut parsed = HashMap::new();
        for j in jumps.iter_mut() {
            let (Some(Ok(b)), Some(Ok(a))) = (
                drvs.get(&(j.from, j.attr.clone())),
                drvs.get(&(j.to, j.attr.clone())),
            ) else {
                continue;
            };
            j.derivation = Some(impact::jump::derivation_change(
                root,
                b,
                a,
                &mut parsed,
                &req.options.store_dir,
            ));
        }
    }
    Ok(instantiations)
}
