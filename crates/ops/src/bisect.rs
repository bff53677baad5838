//! `bisect` (issue 42): the first commit that made an attribute's closure
//! bad by a rule, found from a binary cache and evaluation alone, never
//! building.
//!
//! 1. **Cached bisection.** A binary search over the commits a cache may
//!    hold (those of `--revs-file`, else every first-parent commit of the
//!    range): each probe evaluates the attribute at the commit and reads its
//!    closure from the stores. A commit whose outputs the stores lack, or
//!    that does not evaluate, is skipped as `git bisect skip` skips: the
//!    probe moves to its nearest neighbours inside the interval, alternating
//!    after, before. It ends with a cached good commit and a cached bad one
//!    with nothing readable between them.
//! 2. **Between them, by derivation.** The paths the bad closure gained are
//!    known from the cache (the largest new package, or the forbidden path).
//!    Each commit of the gap is instantiated into a temporary chroot store
//!    (`nix-instantiate --eval-store`: the `.drv` files land there, never in
//!    the user's store), and its build graph read: the first commit after
//!    which the new package is in the attribute's build graph for good is
//!    the culprit. Its derivation is compared with its parent's as `diff
//!    --derivation` compares them (the root causes).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use nix_heft_analysis::diff::derivation::DrvComparison;
use nix_heft_analysis::rules::{ClosureRules, Forbidden, Growth, RuleText};
use nix_heft_eval::attrs::side::evaluate_side;
use nix_heft_eval::attrs::{Evaluator, Outcome};
use nix_heft_eval::eval_store::EvalStore;
use nix_heft_eval::history::{CommitInfo, Range, Targets, build_at, build_graph_outputs, commits};
use nix_heft_eval::installable::Options;
use nix_heft_format::derivation::Derivation;
use nix_heft_format::store_path::StorePath;
use nix_heft_graph::Graph;
use nix_heft_store::source::StoreSource;

/// Changes explained between the cached pair, as `history --top`'s
/// default.
const EXPLAINED: usize = 5;

/// What makes a commit bad.
#[derive(Debug, Clone)]
pub enum Rule {
    /// Its closure is larger than this.
    MaxClosure(u64),
    /// It grew more than this over the good commit's closure.
    MaxGrowth(Growth),
    /// A forbidden path is in it: a name a glob matches, or a store path
    /// given whole (one taken from `diff`, say).
    Forbid(Vec<Forbidden>),
}

impl Rule {
    /// The one rule `text` writes (a store path under `store_dir` forbids
    /// that path), and it in words for the report.
    pub fn of(text: RuleText, store_dir: &str) -> crate::Result<(Rule, String)> {
        let rules = ClosureRules::parse(text, store_dir)?;
        let given = |s: Option<&str>| s.unwrap_or_default().to_string();
        Ok(
            match (rules.max_closure, rules.max_growth, rules.forbid.is_empty()) {
                (Some(limit), None, true) => (
                    Rule::MaxClosure(limit),
                    format!("closure larger than {}", given(text.max_closure)),
                ),
                (None, Some(growth), true) => (
                    Rule::MaxGrowth(growth),
                    format!(
                        "closure grown more than {} over the good commit's",
                        given(text.max_growth)
                    ),
                ),
                (None, None, false) => (
                    Rule::Forbid(rules.forbid),
                    format!("closure holds {}", text.forbid.join(" or ")),
                ),
                _ => {
                    return Err(crate::Error::NoRule);
                }
            },
        )
    }
}

/// What to search.
pub struct Request<'a> {
    /// The git checkout.
    pub repo: PathBuf,
    /// The attribute (dotted path).
    pub attr: &'a str,
    /// A commit good by the rule.
    pub good: String,
    /// A later commit bad by it (good must be its ancestor).
    pub bad: String,
    /// The rule.
    pub rule: Rule,
    /// The commits a cache holds: probed in the cached bisection (others
    /// are not).
    pub revs_file: Option<PathBuf>,
    /// How each commit is evaluated.
    pub evaluator: &'a Evaluator,
    /// `--file`, `--arg`, `--argstr`.
    pub options: &'a Options,
    /// `--build`: build the first candidate and its parent in the user's
    /// store (`/`), and read their closures from it, opened read-only.
    pub build: bool,
}

/// What a probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark {
    /// Good by the rule.
    Good,
    /// Bad by it.
    Bad,
    /// Not decided: not in the cache, or it does not evaluate (the reason).
    Skip(String),
}

/// One commit probed in the cached bisection.
#[derive(Debug, Clone)]
pub struct Probe {
    /// Index into [`Bisect::commits`].
    pub commit: usize,
    /// What it was.
    pub verdict: Mark,
    /// Its closure size, when read.
    pub closure_size: Option<u64>,
}

/// A commit of the gap that could be the culprit.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Index into [`Bisect::commits`].
    pub commit: usize,
    /// Why: it brings the new package into the build graph, or it changed
    /// the attribute's derivation, or it does not evaluate (so it cannot
    /// be ruled out).
    pub why: String,
    /// Its derivation compared with its first parent's (`diff
    /// --derivation`'s root causes), when both instantiate.
    pub derivation: Option<DrvComparison>,
}

/// One commit built to confirm the answer.
#[derive(Debug, Clone)]
pub struct Built {
    /// Index into [`Bisect::commits`].
    pub commit: usize,
    /// The rule's verdict on the built closure and its size, or why there
    /// is none (the build failed).
    pub outcome: Result<(Mark, u64), String>,
}

/// `--build`: the first bad commit and its parent built, each judged by
/// the rule from the store it was built in.
#[derive(Debug, Clone)]
pub struct Confirmation {
    /// The first candidate's first parent.
    pub parent: Built,
    /// The first candidate.
    pub culprit: Built,
    /// The parent built good and the candidate built bad.
    pub agrees: bool,
    /// How long the two builds and reads took.
    pub elapsed: std::time::Duration,
}

/// What [`bisect`] found.
pub struct Bisect {
    /// The attribute.
    pub attr: String,
    /// Every first-parent commit from good to bad, oldest first.
    pub commits: Vec<CommitInfo>,
    /// The cached bisection's probes, in the order made (good and bad
    /// first).
    pub probes: Vec<Probe>,
    /// The last cached commit found good (an index into `commits`).
    pub cached_good: usize,
    /// The first cached commit found bad after it.
    pub cached_bad: usize,
    /// The path the bad closure gained that the culprit brings in.
    pub target: Option<StorePath>,
    /// The candidates, the culprit first.
    pub candidates: Vec<Candidate>,
    /// Whether the first candidate is the one commit that explains the
    /// jump (else the candidates are listed, none sure).
    pub found: bool,
    /// Evaluations run in the cached bisection.
    pub evaluations: usize,
    /// Instantiations run between the cached pair.
    pub instantiations: usize,
    /// How long the search took, from listing the commits to the end.
    pub elapsed: std::time::Duration,
    /// Whether the probes were limited to a list of cached commits.
    pub listed: bool,
    /// The builds that confirm it, when asked for.
    pub confirmation: Option<Confirmation>,
    /// The narinfos and NARs the stores downloaded for the search.
    pub downloads: (u64, u64),
    /// The change between the cached pair, explained as `impact` explains
    /// one (one row).
    pub explanation: Option<crate::impact::Impact>,
}

fn verdict_of(g: &Graph, rule: &Rule, good_size: Option<u64>) -> Mark {
    let size = g.total_size();
    let bad = match rule {
        Rule::MaxClosure(limit) => size > *limit,
        Rule::MaxGrowth(growth) => {
            let base = good_size.unwrap_or(size);
            size > base && size - base > growth.limit(base)
        }
        Rule::Forbid(forbid) => g
            .paths()
            .iter()
            .any(|p| forbid.iter().any(|f| f.matches(p))),
    };
    if bad { Mark::Bad } else { Mark::Good }
}

/// A commit read: the attribute's closure and its outputs.
type Read = (Graph, BTreeMap<String, StorePath>);

/// The attribute's closure at `commit`, or why there is none.
fn read_at(
    src: &dyn StoreSource,
    req: &Request,
    at: &At,
    commit: &CommitInfo,
) -> crate::Result<Result<Read, String>> {
    let spec = at.targets.side_at(&req.repo, &commit.id);
    let name = &at.targets.names[0];
    let outputs = match evaluate_side(
        &spec,
        req.evaluator,
        Some(std::slice::from_ref(name)),
        &at.options,
    ) {
        Err(e) => return Ok(Err(format!("does not evaluate: {e}"))),
        Ok(side) => match side.eval.attrs.get(name) {
            Some(Outcome::Evaluated { outputs, .. }) => outputs.clone(),
            Some(Outcome::Failed(m)) => {
                return Ok(Err(format!(
                    "does not evaluate: {}",
                    nix_heft_format::nix_error::headline(m)
                )));
            }
            None => return Ok(Err(format!("has no attribute {}", req.attr))),
        },
    };
    let roots: Vec<StorePath> = outputs.values().cloned().collect();
    let infos = src.path_infos(&roots)?;
    let missing: Vec<&String> = outputs
        .keys()
        .zip(&infos)
        .filter(|(_, i)| i.is_none())
        .map(|(o, _)| o)
        .collect();
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
        return Ok(Err(format!("not in the cache ({})", names.join(", "))));
    }
    Ok(Ok((Graph::load(src, &roots)?, outputs)))
}

/// How the attribute is read at each commit, and the scratch store the
/// evaluations write into (a flake's sources; the gap's `.drv` files).
struct At {
    targets: Targets,
    options: Options,
    store: EvalStore,
}

/// The good (or bad) commit is not what the command line says: a usage
/// error, as `git bisect` refuses a good commit that is bad.
fn not_as_said(side: &str, commit: &str, what: &str) -> crate::Error {
    crate::Error::NotAsSaid {
        side: side.to_string(),
        commit: commit.to_string(),
        what: what.to_string(),
    }
}

/// Finds the first bad commit of `req` from `src`; `step` says what it is
/// doing (for a spinner).
pub fn bisect(
    src: &dyn StoreSource,
    req: &Request,
    step: &dyn Fn(Option<String>),
) -> crate::Result<Bisect> {
    let started = std::time::Instant::now();
    let targets = Targets::of(&[req.attr.to_string()])?;
    let (scratch, options) = targets
        .scratch_store(req.evaluator, req.options)
        .map_err(nix_heft_eval::history::HistoryError::from)?;
    let store = match scratch {
        Some(s) => s,
        None => EvalStore::new(&req.evaluator.nix_instantiate())
            .map_err(nix_heft_eval::history::HistoryError::from)?,
    };
    let at = At {
        targets,
        options,
        store,
    };
    let commits = commits(
        &req.repo,
        &Range::Revs {
            from: req.good.clone(),
            to: req.bad.clone(),
        },
    )?;
    let last = commits.len() - 1;
    // The commits the cached bisection may probe, as indices into commits.
    let probeable: Vec<usize> = match &req.revs_file {
        None => (0..=last).collect(),
        Some(f) => {
            let listed = commits_listed(&req.repo, f)?;
            let mut v: Vec<usize> = (1..last)
                .filter(|&i| listed.contains(&commits[i].id))
                .collect();
            if v.is_empty() {
                return Err(crate::Error::NoCommitListed { file: f.clone() });
            }
            v.insert(0, 0);
            v.push(last);
            v
        }
    };
    let mut probes: Vec<Probe> = Vec::new();
    let mut evaluations = 0;
    let mut reads: HashMap<usize, Read> = HashMap::new();
    let mut probe = |i: usize,
                     good_size: Option<u64>,
                     step_msg: String|
     -> crate::Result<(Mark, Option<u64>)> {
        step(Some(step_msg));
        evaluations += 1;
        let (verdict, size) = match read_at(src, req, &at, &commits[i])? {
            Err(why) => (Mark::Skip(why), None),
            Ok((r, outputs)) => {
                let v = verdict_of(&r, &req.rule, good_size);
                let size = r.total_size();
                reads.insert(i, (r, outputs));
                (v, Some(size))
            }
        };
        probes.push(Probe {
            commit: i,
            verdict: verdict.clone(),
            closure_size: size,
        });
        Ok((verdict, size))
    };
    let short = |i: usize| short_id(&commits[i].id);
    let (first, good_size) = probe(0, None, format!("reading the good commit {}", short(0)))?;
    match first {
        Mark::Good => {}
        Mark::Bad => return Err(not_as_said("good", &req.good, "bad by the rule")),
        Mark::Skip(why) => return Err(not_as_said("good", &req.good, &why)),
    }
    match probe(
        last,
        good_size,
        format!("reading the bad commit {}", short(last)),
    )?
    .0
    {
        Mark::Bad => {}
        Mark::Good => return Err(not_as_said("bad", &req.bad, "good by the rule")),
        Mark::Skip(why) => return Err(not_as_said("bad", &req.bad, &why)),
    }

    // Positions in `probeable`: lo good, hi bad, `skipped` undecided.
    let (mut lo, mut hi) = (0usize, probeable.len() - 1);
    let mut skipped: BTreeSet<usize> = BTreeSet::new();
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        // The middle, else its nearest neighbours not yet skipped,
        // alternating after and before: broken commits come in runs, and
        // a neighbour halves the interval nearly as well.
        let order = (0..hi - lo).flat_map(|d| [mid + d, mid.wrapping_sub(d)]);
        let next = order
            .filter(|&p| p > lo && p < hi)
            .find(|p| !skipped.contains(p));
        let Some(p) = next else { break };
        let i = probeable[p];
        let msg = format!(
            "bisecting: {} commits left, probing {}",
            probeable[hi] - probeable[lo] - 1,
            short(i)
        );
        match probe(i, good_size, msg)?.0 {
            Mark::Good => lo = p,
            Mark::Bad => hi = p,
            Mark::Skip(_) => {
                skipped.insert(p);
            }
        }
    }
    let (gi, bi) = (probeable[lo], probeable[hi]);

    // What the bad closure gained: the forbidden path, else the largest
    // path of a package the good closure did not have.
    let target = match (reads.get(&gi), reads.get(&bi)) {
        (Some((g, _)), Some((b, _))) => target_path(g, b, &req.rule),
        _ => None,
    };
    // The jump between the cached pair explained as `history` explains
    // one: the packages added and removed, the chain to each and the file
    // that holds it, read from the cache.
    let explanation = match (reads.get(&gi), reads.get(&bi)) {
        (Some((_, before)), Some((_, after))) => {
            step(Some("explaining the jump between the cached pair".into()));
            let side = |o: &BTreeMap<String, StorePath>| {
                BTreeMap::from([(
                    req.attr.to_string(),
                    Outcome::Evaluated {
                        drv_path: None,
                        outputs: o.clone(),
                    },
                )])
            };
            let (b, a) = (side(before), side(after));
            Some(crate::impact::jump::explain(
                src, &b, &a, req.attr, EXPLAINED, true,
            )?)
        }
        _ => None,
    };
    let (candidates, found, instantiations) =
        candidates_between(req, &at, &commits, (gi, bi), target.as_ref(), step)?;
    // What was built is read from the store Nix built it in, read-only.
    let local = if req.build {
        Some(nix_heft_store::source::LocalStore::open(
            Path::new("/"),
            Default::default(),
        )?)
    } else {
        None
    };
    let confirmation = match (&local, candidates.first()) {
        (Some(local), Some(first)) if first.commit > 0 => Some(confirm(
            local,
            req,
            &at,
            &commits,
            first.commit,
            good_size,
            step,
        )?),
        _ => None,
    };
    step(None);
    Ok(Bisect {
        explanation,
        confirmation,
        attr: req.attr.to_string(),
        commits,
        probes,
        cached_good: gi,
        cached_bad: bi,
        target,
        candidates,
        found,
        evaluations,
        instantiations,
        elapsed: started.elapsed(),
        listed: req.revs_file.is_some(),
        downloads: src.log().downloads().iter().fold((0, 0), |(n, a), d| {
            use std::sync::atomic::Ordering::Relaxed;
            (n + d.narinfos.load(Relaxed), a + d.nars.load(Relaxed))
        }),
    })
}

/// The commits between the cached good `gi` and bad `bi` that could have
/// made the closure bad, the culprit first: each instantiated into the
/// scratch store, the first whose build graph has `target` (what the bad
/// closure gained) named, with its derivation's change; then the others
/// that change the attribute's derivation. Whether the first is sure, and
/// how many instantiations that took.
fn candidates_between(
    req: &Request,
    at: &At,
    commits: &[CommitInfo],
    (gi, bi): (usize, usize),
    target: Option<&StorePath>,
    step: &dyn Fn(Option<String>),
) -> crate::Result<(Vec<Candidate>, bool, usize)> {
    let short = |i: usize| short_id(&commits[i].id);
    let mut candidates = Vec::new();
    let mut instantiations = 0;
    let mut found = false;
    if bi == gi + 1 {
        candidates.push(Candidate {
            commit: bi,
            why: "the first commit after the last good one".into(),
            derivation: None,
        });
        found = true;
    } else {
        step(Some(format!(
            "instantiating {} commits between {} and {}",
            bi - gi + 1,
            short(gi),
            short(bi)
        )));
        let store = &at.store;
        // The store was made before (`EvalStore::new`): all at once.
        let each: Vec<(&str, &str)> = (gi..=bi)
            .map(|i| (commits[i].id.as_str(), at.targets.names[0].as_str()))
            .collect();
        let drv_of = crate::impact::jump::instantiate_each(
            &req.repo,
            &each,
            at.targets.flake,
            req.evaluator,
            &at.options,
            store.root(),
        )?;
        instantiations = drv_of.len();
        let mut parsed: HashMap<StorePath, Derivation> = HashMap::new();
        let has: Vec<Option<bool>> = drv_of
            .iter()
            .map(|d| {
                let d = d.as_ref().ok()?;
                let outs =
                    build_graph_outputs(store.root(), d, &mut parsed, &req.options.store_dir);
                Some(match target {
                    Some(t) => outs.iter().any(|o| o.name() == t.name()),
                    None => false,
                })
            })
            .collect();
        // The culprit: right after the last commit known not to have the
        // new package, the first that has it; the commits between them
        // that do not instantiate could be it too.
        let at_gap = |k: usize| gi + k;
        let last_without = has.iter().rposition(|h| *h == Some(false));
        if target.is_some()
            && let Some(lw) = last_without
            && let Some(first_with) = (lw + 1..has.len()).find(|&k| has[k] == Some(true))
        {
            let unknown: Vec<usize> = (lw + 1..first_with).collect();
            for &k in &unknown {
                candidates.push(Candidate {
                    commit: at_gap(k),
                    why: format!(
                        "does not instantiate ({}), so it cannot be ruled out",
                        nix_heft_format::nix_error::headline(
                            drv_of[k].as_ref().err().map_or("", |s| s.as_str())
                        )
                    ),
                    derivation: None,
                });
            }
            let name = target.map(|t| t.name().to_string()).unwrap_or_default();
            let derivation = match (&drv_of[first_with - 1], &drv_of[first_with]) {
                (Ok(b), Ok(a)) => Some(crate::impact::jump::derivation_change(
                    store.root(),
                    b,
                    a,
                    &mut parsed,
                    &req.options.store_dir,
                )),
                _ => None,
            };
            candidates.insert(
                0,
                Candidate {
                    commit: at_gap(first_with),
                    why: format!("brings {name} into {}'s build graph", req.attr),
                    derivation,
                },
            );
            found = unknown.is_empty();
        }
        // Every other change of the attribute's derivation in the gap, in
        // order: what else could have made the closure grow.
        for k in 1..drv_of.len() {
            if candidates.iter().any(|c| c.commit == at_gap(k)) {
                continue;
            }
            if let (Ok(b), Ok(a)) = (&drv_of[k - 1], &drv_of[k])
                && b != a
            {
                candidates.push(Candidate {
                    commit: at_gap(k),
                    why: format!("changes {}'s derivation", req.attr),
                    derivation: None,
                });
            }
        }
        if target.is_none() {
            found = false;
        }
    }
    Ok((candidates, found, instantiations))
}

/// A commit's hash as the steps name it: its first 10 characters.
fn short_id(id: &str) -> &str {
    &id[..10.min(id.len())]
}

/// Builds the first candidate and its first parent in the user's store
/// and judges each built closure by the rule, read from `local`.
fn confirm(
    local: &dyn StoreSource,
    req: &Request,
    at: &At,
    commits: &[CommitInfo],
    culprit: usize,
    good_size: Option<u64>,
    step: &dyn Fn(Option<String>),
) -> crate::Result<Confirmation> {
    let started = std::time::Instant::now();
    let build = |i: usize| -> crate::Result<Built> {
        let c = &commits[i];
        step(Some(format!(
            "building {} at {}",
            req.attr,
            &c.id[..10.min(c.id.len())]
        )));
        let outcome = match build_at(
            &req.repo,
            &c.id,
            &at.targets,
            &at.targets.names[0],
            req.options,
        )
        .map_err(nix_heft_eval::history::HistoryError::from)?
        {
            Err(log) => Err(format!("the build failed: {log}")),
            Ok(()) => match read_at(local, req, at, c)? {
                Err(why) => Err(why),
                Ok((g, _)) => Ok((verdict_of(&g, &req.rule, good_size), g.total_size())),
            },
        };
        Ok(Built { commit: i, outcome })
    };
    let parent = build(culprit - 1)?;
    let culprit = build(culprit)?;
    let agrees = matches!(parent.outcome, Ok((Mark::Good, _)))
        && matches!(culprit.outcome, Ok((Mark::Bad, _)));
    Ok(Confirmation {
        parent,
        culprit,
        agrees,
        elapsed: started.elapsed(),
    })
}

/// The path the bad closure gained that explains it: the largest
/// forbidden one, else the largest path of a package the good closure did
/// not have, else the largest new path.
fn target_path(good: &Graph, bad: &Graph, rule: &Rule) -> Option<StorePath> {
    let g = bad;
    let in_good: std::collections::HashSet<&StorePath> = good.paths().iter().collect();
    let names_good: std::collections::HashSet<&str> =
        good.paths().iter().map(|p| p.name()).collect();
    let by_size = |mut v: Vec<u32>| {
        v.sort_by_key(|&n| (std::cmp::Reverse(g.nar_size(n)), g.path(n).clone()));
        v.first().map(|&n| g.path(n).clone())
    };
    if let Rule::Forbid(forbid) = rule {
        let hits: Vec<u32> = (0..g.len() as u32)
            .filter(|&n| forbid.iter().any(|f| f.matches(g.path(n))))
            .collect();
        return by_size(hits);
    }
    let added: Vec<u32> = (0..g.len() as u32)
        .filter(|&n| !in_good.contains(g.path(n)))
        .collect();
    let new_packages: Vec<u32> = added
        .iter()
        .copied()
        .filter(|&n| !names_good.contains(g.path(n).name()))
        .collect();
    by_size(new_packages).or_else(|| by_size(added))
}

/// The commits a revision file names, as full hashes.
fn commits_listed(repo: &Path, file: &Path) -> crate::Result<BTreeSet<String>> {
    Ok(commits(repo, &Range::File(file.to_path_buf()))?
        .into_iter()
        .map(|c| c.id)
        .collect())
}
