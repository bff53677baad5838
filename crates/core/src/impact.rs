//! The closure impact of a change to a package set: for every attribute a
//! change touches, its closure before and after, the difference, and why
//! (issue 32).
//!
//! Each side is a map of attributes to what they evaluated to
//! ([`crate::attrs::Outcome`]) and the store its outputs are looked up in
//! (the base usually a binary cache, the head the local store). The run:
//! 1. each side's outputs are asked for at once ([`PathMetadata::are_valid`]:
//!    one database read, or narinfos in parallel, each kept for step 2); an
//!    attribute is *built* on a side when every output is there;
//! 2. one graph per side over the union of the built attributes' outputs
//!    ([`Graph::load`]): closures of hundreds of attributes share most
//!    paths, so each narinfo is read once and the cost follows the union;
//! 3. every attribute's closure size, added and removed paths, largest
//!    changes with the referrers inside its closure and the forbidden
//!    paths it reaches, in one pass per 64 attributes
//!    ([`crate::graph::diff_groups_with`]);
//! 4. the paths new in several attributes said once ([`SharedCause`]);
//! 5. only the edges those largest changes and shared causes hang on are
//!    read, once per side for all attributes ([`crate::pipeline::classified`]),
//!    and each change's strongest holder is named from that evidence;
//! 6. `check`'s size and name rules applied to every attribute.
//!
//! Nothing is built or substituted: an attribute whose outputs a side lacks
//! is [`Status::NotBuilt`], never guessed.

use std::collections::{BTreeMap, HashMap};

use globset::GlobMatcher;

use crate::attrs::Outcome;
use crate::check::Growth;
use crate::classify::Classified;
use crate::graph::{Detail, Graph, NodeId, Picked, ReadRequest, diff_groups_with, request};
use crate::pipeline::{Progress, classified};
use crate::source::StoreSource;
use crate::store_path::StorePath;

/// One side of the comparison: where its outputs are, and what each
/// attribute evaluated to (an attribute missing from the map does not
/// exist on this side).
pub struct SideInput<'a> {
    /// The store (or stores) the side's outputs are looked up in.
    pub src: &'a dyn StoreSource,
    /// Attribute path → its outputs, or why it has none.
    pub attrs: &'a BTreeMap<String, Outcome>,
}

/// Which side of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    /// The base (before the change).
    Before,
    /// The head (after the change).
    After,
}

impl Side {
    /// `before` or `after`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Before => "before",
            Side::After => "after",
        }
    }
}

/// `check`'s rules as they apply to each attribute.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// `--max-closure`: the head closure's size.
    pub max_closure: Option<u64>,
    /// `--max-growth`: growth over the attribute's own base closure.
    pub max_growth: Option<Growth>,
    /// `--forbid`: globs a head closure's path names must not match.
    pub forbid: Vec<(String, GlobMatcher)>,
}

/// What to compute.
pub struct Request<'a> {
    /// The attributes, in any order (the report sorts them).
    pub attrs: &'a [String],
    /// How many of each attribute's added and removed paths to explain.
    pub top: usize,
    /// The rules to apply to every attribute.
    pub rules: &'a Rules,
    /// Read the evidence (the holding files) for each explained added
    /// path and shared cause, from the head; without it the chains are
    /// still given.
    pub evidence: bool,
    /// Read the base's evidence too, for the explained removed paths: from
    /// a binary cache that means downloading the NARs of their referrers,
    /// for paths that are gone anyway, so it is asked for, not default.
    pub removed_evidence: bool,
}

/// One side of one attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrSide {
    /// Output name → out path.
    pub outputs: BTreeMap<String, StorePath>,
    /// Whether the side's store holds every output.
    pub built: bool,
    /// The outputs the store lacks.
    pub missing: Vec<String>,
    /// Closure size of all the outputs together, when built.
    pub closure_size: Option<u64>,
}

/// What happened to an attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Its closure grew.
    Grown,
    /// Its closure shrank.
    Shrunk,
    /// Same closure size (the paths may differ).
    Unchanged,
    /// Only in the head.
    Added,
    /// Only in the base.
    Removed,
    /// A side that has the attribute lacks its outputs (both sides when
    /// both do): nothing is guessed.
    NotBuilt(Vec<Side>),
    /// It failed on a side (evaluation, or a build nixpkgs-review
    /// reported): the side and the message.
    Failed(Side, String),
}

impl Status {
    /// The status as the JSON spells it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Grown => "grown",
            Status::Shrunk => "shrunk",
            Status::Unchanged => "unchanged",
            Status::Added => "added",
            Status::Removed => "removed",
            Status::NotBuilt(_) => "not-built",
            Status::Failed(..) => "failed",
        }
    }

    /// Order of the report's sections.
    fn rank(&self) -> u8 {
        match self {
            Status::Grown => 0,
            Status::Shrunk => 1,
            Status::Added => 2,
            Status::Removed => 3,
            Status::Unchanged => 4,
            Status::NotBuilt(_) => 5,
            Status::Failed(..) => 6,
        }
    }
}

/// One explained change: a path an attribute gained (in the head graph) or
/// lost (in the base graph).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The path, in its side's graph.
    pub node: NodeId,
    /// The path of the attribute's closure that holds it (the strongest
    /// hold when evidence was read); `None` for one of the attribute's own
    /// outputs.
    pub referrer: Option<NodeId>,
    /// From one of the attribute's outputs down to the path, through
    /// `referrer`.
    pub chain: Vec<NodeId>,
    /// Whether the path is a [`SharedCause`] (said once for all).
    pub shared: bool,
}

/// A rule an attribute breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Broken {
    /// Its head closure is larger than the limit.
    MaxClosure {
        /// Head closure size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// It grew by more than the limit over its base closure.
    MaxGrowth {
        /// Bytes grown.
        growth: u64,
        /// The limit, in bytes, over this attribute's base.
        limit: u64,
    },
    /// Its head closure holds a path whose name matches a forbidden glob.
    Forbid {
        /// The glob.
        pattern: String,
        /// The path, in the head graph.
        node: NodeId,
    },
}

/// One attribute's row.
#[derive(Debug, Clone)]
pub struct AttrImpact {
    /// The dotted attribute path.
    pub attr: String,
    /// The base side, `None` when the attribute is not there (or failed).
    pub before: Option<AttrSide>,
    /// The head side.
    pub after: Option<AttrSide>,
    /// What happened.
    pub status: Status,
    /// The largest added paths, explained (at most [`Request::top`]).
    pub added: Vec<Change>,
    /// The largest removed paths, explained.
    pub removed: Vec<Change>,
    /// All added paths: how many, and their NAR size together.
    pub added_count: usize,
    /// NAR size of all added paths.
    pub added_size: u64,
    /// All removed paths: how many.
    pub removed_count: usize,
    /// NAR size of all removed paths.
    pub removed_size: u64,
    /// The rules it breaks.
    pub broken: Vec<Broken>,
}

impl AttrImpact {
    /// Head closure minus base closure, when both are known.
    pub fn delta(&self) -> Option<i128> {
        let b = self.before.as_ref()?.closure_size?;
        let a = self.after.as_ref()?.closure_size?;
        Some(a as i128 - b as i128)
    }
}

/// A path that is new in several attributes, said once for all of them.
#[derive(Debug, Clone)]
pub struct SharedCause {
    /// The path, in the head graph.
    pub node: NodeId,
    /// The attributes it is new in (indices into [`Impact::rows`]).
    pub rows: Vec<usize>,
    /// Its strongest holder in the head graph.
    pub referrer: Option<NodeId>,
    /// The row whose attribute has it as an output, when one does (a
    /// rebuilt library is new in its dependents and is their cause).
    pub output_of: Option<usize>,
}

/// The impact of a change on every attribute asked for.
pub struct Impact {
    /// The union of the base side's built closures.
    pub before: Graph,
    /// The union of the head side's built closures.
    pub after: Graph,
    /// One row per attribute, in report order: grown (largest first),
    /// shrunk, added, removed, unchanged, not built, failed.
    pub rows: Vec<AttrImpact>,
    /// Paths new in two or more attributes, largest first.
    pub shared: Vec<SharedCause>,
    /// The base evidence read for the explained removals.
    pub before_evidence: Classified,
    /// The head evidence read for the explained additions.
    pub after_evidence: Classified,
}

impl Impact {
    /// How many rows have each status (by [`Status::as_str`]).
    pub fn totals(&self) -> BTreeMap<&'static str, usize> {
        let mut t = BTreeMap::new();
        for r in &self.rows {
            *t.entry(r.status.as_str()).or_insert(0) += 1;
        }
        t
    }
}

/// How many shared causes to find, at most.
const SHARED_CAUSES: usize = 10;

/// One side's attributes looked up in its store: each requested
/// attribute's [`AttrSide`] (or its failure), and the built outputs, the
/// roots of the side's graph.
struct Looked {
    sides: Vec<Option<Result<AttrSide, String>>>,
    roots: Vec<StorePath>,
}

fn look_up(side: &SideInput, attrs: &[String]) -> crate::Result<Looked> {
    let mut wanted: Vec<StorePath> = Vec::new();
    for a in attrs {
        if let Some(Outcome::Evaluated { outputs, .. }) = side.attrs.get(a) {
            wanted.extend(outputs.values().cloned());
        }
    }
    wanted.sort();
    wanted.dedup();
    // `path_infos`, not `are_valid`: a binary cache asks for them in
    // parallel and keeps each for the graph's load.
    let valid = side
        .src
        .path_infos(&wanted)?
        .into_iter()
        .map(|i| i.is_some());
    let present: HashMap<&StorePath, bool> = wanted.iter().zip(valid).collect();
    let mut roots = Vec::new();
    let sides = attrs
        .iter()
        .map(|a| match side.attrs.get(a)? {
            Outcome::Failed(m) => Some(Err(m.clone())),
            Outcome::Evaluated { outputs, .. } => {
                let missing: Vec<String> = outputs
                    .iter()
                    .filter(|(_, p)| !present.get(p).copied().unwrap_or(false))
                    .map(|(o, _)| o.clone())
                    .collect();
                let built = missing.is_empty() && !outputs.is_empty();
                if built {
                    roots.extend(outputs.values().cloned());
                }
                Some(Ok(AttrSide {
                    outputs: outputs.clone(),
                    built,
                    missing,
                    closure_size: None,
                }))
            }
        })
        .collect();
    roots.sort();
    roots.dedup();
    Ok(Looked { sides, roots })
}

/// Each attribute's group of root ids in `g` (empty when not built there).
fn groups(g: &Graph, sides: &[Option<Result<AttrSide, String>>]) -> Vec<Vec<NodeId>> {
    let index = g.index();
    sides
        .iter()
        .map(|s| match s {
            Some(Ok(s)) if s.built => s
                .outputs
                .values()
                .filter_map(|p| index.get(p).copied())
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// The impact of the change from `before` to `after` on `req.attrs`.
/// Errors are those of reading a side's metadata (a store that cannot be
/// read, a corrupt narinfo); a path that cannot be read for evidence is a
/// problem in the evidence, as everywhere.
pub fn impact(
    before: SideInput,
    after: SideInput,
    req: &Request,
    progress: (&dyn Progress, &dyn Progress),
) -> crate::Result<Impact> {
    let (lb, la) = rayon::join(
        || look_up(&before, req.attrs),
        || look_up(&after, req.attrs),
    );
    let (mut lb, mut la) = (lb?, la?);
    let (bg, ag) = rayon::join(
        || Graph::load(before.src, &lb.roots),
        || Graph::load(after.src, &la.roots),
    );
    let (bg, ag) = (bg?, ag?);
    let head_targets: Vec<(String, NodeId)> = req
        .rules
        .forbid
        .iter()
        .flat_map(|(pat, m)| {
            crate::roots::matching_in_closure(&ag, m)
                .into_iter()
                .map(move |v| (pat.clone(), v))
        })
        .collect();
    let detail = Detail {
        top: req.top,
        head_targets: head_targets.iter().map(|(_, v)| *v).collect(),
    };
    let diffs = diff_groups_with(
        &bg,
        &groups(&bg, &lb.sides),
        &ag,
        &groups(&ag, &la.sides),
        &detail,
    );

    let mut rows: Vec<AttrImpact> = Vec::with_capacity(req.attrs.len());
    let mut picked: Vec<(Vec<Picked>, Vec<Picked>)> = Vec::with_capacity(req.attrs.len());
    let mut shared_in: BTreeMap<NodeId, Vec<usize>> = BTreeMap::new();
    for (i, (attr, d)) in req.attrs.iter().zip(diffs).enumerate() {
        let mut b = lb.sides[i].take();
        let mut a = la.sides[i].take();
        for (s, size) in [(&mut b, d.before), (&mut a, d.after)] {
            if let Some(Ok(s)) = s
                && s.built
            {
                s.closure_size = Some(size);
            }
        }
        let status = status_of(&b, &a);
        let compared = matches!(
            status,
            Status::Grown | Status::Shrunk | Status::Unchanged | Status::Added | Status::Removed
        );
        let (added_top, removed_top) = if compared {
            (d.added_top, d.removed_top)
        } else {
            (Vec::new(), Vec::new())
        };
        let before = b.and_then(Result::ok);
        let after = a.and_then(Result::ok);
        let mut broken = Vec::new();
        if compared && let Some(after_size) = after.as_ref().and_then(|s| s.closure_size) {
            if let Some(limit) = req.rules.max_closure
                && after_size > limit
            {
                broken.push(Broken::MaxClosure {
                    size: after_size,
                    limit,
                });
            }
            if let (Some(g), Some(before_size)) = (
                req.rules.max_growth,
                before.as_ref().and_then(|s| s.closure_size),
            ) {
                let limit = g.limit(before_size);
                let growth = after_size.saturating_sub(before_size);
                if growth > limit {
                    broken.push(Broken::MaxGrowth { growth, limit });
                }
            }
            for (pat, v) in &head_targets {
                if d.reached.contains(v) {
                    broken.push(Broken::Forbid {
                        pattern: pat.clone(),
                        node: *v,
                    });
                }
            }
        }
        let (added_count, removed_count) = if compared {
            (d.added.len(), d.removed.len())
        } else {
            (0, 0)
        };
        rows.push(AttrImpact {
            attr: attr.clone(),
            before,
            after,
            status,
            added: Vec::new(),
            removed: Vec::new(),
            added_count,
            added_size: if compared { d.added_size } else { 0 },
            removed_count,
            removed_size: if compared { d.removed_size } else { 0 },
            broken,
        });
        // Shared causes count only rows with both sides built: a new
        // attribute's whole closure is "added" and would drown the causes.
        if both_built(&rows[i]) {
            for &v in &d.added {
                shared_in.entry(v).or_default().push(i);
            }
        }
        picked.push((added_top, removed_top));
    }

    let mut shared: Vec<SharedCause> = shared_in
        .into_iter()
        .filter(|(_, rows)| rows.len() >= 2)
        .map(|(node, rows)| SharedCause {
            node,
            rows,
            referrer: None,
            output_of: None,
        })
        .collect();
    shared.sort_by(|x, y| {
        ag.nar_size(y.node)
            .cmp(&ag.nar_size(x.node))
            .then_with(|| y.rows.len().cmp(&x.rows.len()))
            .then_with(|| ag.path(x.node).cmp(ag.path(y.node)))
    });
    shared.truncate(SHARED_CAUSES);
    // A shared cause's holders: its referrers anywhere in the head graph,
    // nearest the roots first (the strongest is chosen from the evidence).
    let depth = crate::graph::chains::depths_from_roots(&ag);
    let shared_candidates: Vec<Vec<NodeId>> = shared
        .iter()
        .map(|s| {
            let mut r: Vec<NodeId> = ag
                .referrers(s.node)
                .iter()
                .copied()
                .filter(|&r| r != s.node)
                .collect();
            r.sort_by(|x, y| {
                depth[*x as usize]
                    .cmp(&depth[*y as usize])
                    .then_with(|| ag.path(*x).cmp(ag.path(*y)))
            });
            r.dedup();
            r
        })
        .collect();

    let (before_evidence, after_evidence) = if req.evidence {
        let mut wb = ReadRequest::new();
        let mut wa = ReadRequest::new();
        for (added, removed) in &picked {
            request::want(&mut wa, edges(added));
            if req.removed_evidence {
                request::want(&mut wb, edges(removed));
            }
        }
        request::want(
            &mut wa,
            shared
                .iter()
                .zip(&shared_candidates)
                .flat_map(|(s, rs)| rs.iter().map(|&r| (r, s.node))),
        );
        rayon::join(
            || classified(before.src, &bg, &wb, None, progress.0),
            || classified(after.src, &ag, &wa, None, progress.1),
        )
    } else {
        (Classified::default(), Classified::default())
    };

    let is_shared: std::collections::HashSet<NodeId> = shared.iter().map(|s| s.node).collect();
    for (s, rs) in shared.iter_mut().zip(&shared_candidates) {
        s.referrer = crate::explain::strongest_referrer(&after_evidence, s.node, rs);
    }
    for (row, (added, removed)) in rows.iter_mut().zip(picked) {
        row.added = explained(&after_evidence, added, Some(&is_shared));
        row.removed = explained(&before_evidence, removed, None);
    }
    rows.sort_by(|x, y| {
        x.status
            .rank()
            .cmp(&y.status.rank())
            .then_with(|| {
                let mag = |r: &AttrImpact| r.delta().map_or(0, i128::unsigned_abs);
                mag(y).cmp(&mag(x))
            })
            .then_with(|| x.attr.cmp(&y.attr))
    });
    // Rows moved: the shared causes' row indices follow them.
    let at: HashMap<&str, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.attr.as_str(), i))
        .collect();
    for s in &mut shared {
        let mut moved: Vec<usize> = s
            .rows
            .iter()
            .filter_map(|&i| at.get(req.attrs[i].as_str()).copied())
            .collect();
        moved.sort_unstable();
        s.rows = moved;
        let path = ag.path(s.node);
        s.output_of = rows.iter().position(|r| {
            r.after
                .as_ref()
                .is_some_and(|a| a.outputs.values().any(|p| p == path))
        });
    }
    Ok(Impact {
        before: bg,
        after: ag,
        rows,
        shared,
        before_evidence,
        after_evidence,
    })
}

/// Whether both sides of a row were built and compared.
fn both_built(r: &AttrImpact) -> bool {
    let built = |s: &Option<AttrSide>| s.as_ref().is_some_and(|s| s.built);
    built(&r.before) && built(&r.after)
}

/// Every edge a picked change hangs on: each candidate referrer to it.
fn edges(picked: &[Picked]) -> impl Iterator<Item = (NodeId, NodeId)> + '_ {
    picked
        .iter()
        .flat_map(|p| p.referrers.iter().map(move |(r, _)| (*r, p.node)))
}

/// The picked changes with their strongest holder (the first candidate on
/// a tie, nearest the roots) and the chain through it.
fn explained(
    c: &Classified,
    picked: Vec<Picked>,
    shared: Option<&std::collections::HashSet<NodeId>>,
) -> Vec<Change> {
    picked
        .into_iter()
        .map(|p| {
            let candidates: Vec<NodeId> = p.referrers.iter().map(|(r, _)| *r).collect();
            let referrer = crate::explain::strongest_referrer(c, p.node, &candidates);
            let mut chain = referrer
                .and_then(|r| p.referrers.iter().find(|(x, _)| *x == r))
                .map(|(_, chain)| chain.clone())
                .unwrap_or_default();
            chain.push(p.node);
            Change {
                node: p.node,
                referrer,
                chain,
                shared: shared.is_some_and(|s| s.contains(&p.node)),
            }
        })
        .collect()
}

/// What happened to an attribute, from its two sides.
fn status_of(b: &Option<Result<AttrSide, String>>, a: &Option<Result<AttrSide, String>>) -> Status {
    if let Some(Err(m)) = b {
        return Status::Failed(Side::Before, m.clone());
    }
    if let Some(Err(m)) = a {
        return Status::Failed(Side::After, m.clone());
    }
    let unbuilt: Vec<Side> = [(b, Side::Before), (a, Side::After)]
        .into_iter()
        .filter(|(s, _)| matches!(s, Some(Ok(s)) if !s.built))
        .map(|(_, side)| side)
        .collect();
    if !unbuilt.is_empty() {
        return Status::NotBuilt(unbuilt);
    }
    match (b, a) {
        (None, None) => Status::Failed(Side::After, "no such attribute on either side".into()),
        (None, Some(_)) => Status::Added,
        (Some(_), None) => Status::Removed,
        (Some(Ok(b)), Some(Ok(a))) => match a.closure_size.cmp(&b.closure_size) {
            std::cmp::Ordering::Greater => Status::Grown,
            std::cmp::Ordering::Less => Status::Shrunk,
            std::cmp::Ordering::Equal => Status::Unchanged,
        },
        _ => unreachable!("failures returned above"),
    }
}
