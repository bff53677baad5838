//! The closure impact of a change to a package set: for every attribute a
//! change touches, its closure before and after, the difference, and why
//! (issues 32 and 38).
//!
//! Each side is a map of attributes to what they evaluated to
//! ([`nix_heft_eval::attrs::Outcome`]), what a nixpkgs-review directory says of
//! those it did not build ([`Note`]), and the store its outputs are looked
//! up in (the base usually a binary cache, the head the local store). The
//! run:
//! 1. each side's outputs are asked for at once ([`PathMetadata::path_infos`]:
//!    one database read, or narinfos in parallel, each kept for step 2); an
//!    attribute is *built* on a side when every output is there;
//! 2. one graph per side over the union of the built attributes' outputs
//!    ([`Graph::load`]): closures of hundreds of attributes share most
//!    paths, so each narinfo is read once and the cost follows the union;
//! 3. every attribute's closure size, added and removed paths, the paths
//!    that explain its largest changes with the referrers inside its
//!    closure, and the forbidden paths it reaches, in one pass per 64
//!    attributes ([`nix_heft_graph::diff_groups_with`]);
//! 4. each attribute's added and removed paths paired by package as
//!    `nix store diff-closures` pairs them ([`units`]): a rebuilt or bumped
//!    path counts by its net change, and the changes add up to the
//!    attribute's closure change;
//! 5. the changes found in several attributes said once ([`SharedCause`]);
//! 6. only the edges the explained changes and shared causes hang on are
//!    read, once per side for all attributes ([`crate::pipeline::classified`]),
//!    and each change's strongest holder is named from that evidence;
//! 7. `check`'s size and name rules, and Hydra's output limit, applied to
//!    every attribute.
//!
//! Nothing is built or substituted: an attribute whose outputs a side lacks
//! is [`Status::NotBuilt`], never guessed. [`prepare`] evaluates the sides
//! (and reads a nixpkgs-review directory) into what [`impact`] takes.

use std::collections::{BTreeMap, HashMap};

use crate::pipeline::{Progress, classified};
use nix_heft_analysis::rules::{ClosureRules, RuleText};
use nix_heft_eval::attrs::Outcome;
use nix_heft_format::store_path::StorePath;
use nix_heft_graph::{Detail, Graph, NodeId, Picked, ReadRequest, diff_groups_with, request};
use nix_heft_scan::classify::Classified;
use nix_heft_store::source::StoreSource;

pub mod jump;
pub mod prepare;
pub mod review;
pub mod units;

pub use prepare::{Prepared, Sides, prepare};

/// What a nixpkgs-review directory says of an attribute it did not build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// Its build failed there.
    BuildFailed,
    /// It was skipped as broken (marked broken, or it did not evaluate).
    SkippedBroken,
    /// It is on nixpkgs-review's list of attributes never built.
    Skipped,
}

/// One side of the comparison: where its outputs are, and what each
/// attribute evaluated to (an attribute in neither map does not exist on
/// this side).
pub struct SideInput<'a> {
    /// The store (or stores) the side's outputs are looked up in.
    pub src: &'a dyn StoreSource,
    /// Attribute path → its outputs, or why it has none.
    pub attrs: &'a BTreeMap<String, Outcome>,
    /// Attributes a nixpkgs-review directory lists but did not build.
    pub notes: &'a BTreeMap<String, Note>,
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

/// The closure rules as they apply to each attribute (the head closure's
/// size, its growth over the attribute's own base closure, the paths it
/// must not hold), and Hydra's limit.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// `--max-closure`, `--max-growth`, `--forbid`.
    pub closure: ClosureRules,
    /// `--max-output`: the NAR sizes of the attribute's own outputs
    /// together, as Hydra's `max_output_size` measures one build.
    pub max_output: Option<u64>,
}

impl Rules {
    /// The rules as written (see [`ClosureRules::parse`]), and
    /// `--max-output`, a size.
    pub fn parse(
        text: RuleText,
        max_output: Option<&str>,
        store_dir: &str,
    ) -> crate::Result<Rules> {
        Ok(Rules {
            closure: ClosureRules::parse(text, store_dir)?,
            max_output: max_output
                .map(nix_heft_types::units::parse_size)
                .transpose()?,
        })
    }

    /// Whether any rule is given: the run is a gate.
    pub fn any(&self) -> bool {
        !self.closure.is_empty() || self.max_output.is_some()
    }
}

/// A gate that measured nothing: rules were given, and no attribute's
/// closure could be measured. It does not pass.
#[derive(Debug, thiserror::Error)]
#[error(
    "the rules were applied to nothing: {}, none measured (built on a side it exists on); build \
     them, or give the stores that hold them",
    if *.attrs == 0 { "no attribute to compare".to_string() } else { format!("{} attribute(s)", .attrs) }
)]
pub struct NothingMeasured {
    /// The attributes compared.
    pub attrs: usize,
}

/// The attributes named: `attrs`, then `file`'s lines (`#` comments),
/// each once; `None` when none is named (the change decides).
pub fn named_attrs(
    attrs: &[String],
    file: Option<&std::path::Path>,
) -> crate::Result<Option<Vec<String>>> {
    let mut all = attrs.to_vec();
    if let Some(f) = file {
        let text = std::fs::read_to_string(f).map_err(nix_heft_types::error::io_err(f))?;
        all.extend(
            text.lines()
                .map(|l| l.split('#').next().unwrap_or("").trim())
                .filter(|l| !l.is_empty())
                .map(String::from),
        );
        if all.is_empty() {
            return Err(crate::Error::EmptyAttrFile);
        }
    }
    if all.is_empty() {
        return Ok(None);
    }
    let mut seen = std::collections::BTreeSet::new();
    all.retain(|a| seen.insert(a.clone()));
    Ok(Some(all))
}

/// What to compute.
pub struct Request<'a> {
    /// The attributes, in any order (the report sorts them).
    pub attrs: &'a [String],
    /// How many of each attribute's changes to explain.
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
    /// NAR size of each output, when built.
    pub output_sizes: BTreeMap<String, u64>,
}

/// What happened to an attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// It evaluates at the base but not at the head (or it is new and does
    /// not evaluate): broken by this change. Nix's message.
    EvalBroken(String),
    /// Its closure grew.
    Grown,
    /// Its closure shrank.
    Shrunk,
    /// Only in the head.
    Added,
    /// Only in the base.
    Removed,
    /// Same closure size (the paths may differ).
    Unchanged,
    /// It fails to evaluate at the base and evaluates at the head: fixed
    /// by this change. The base's message.
    EvalFixed(String),
    /// Its build failed in nixpkgs-review.
    BuildFailed,
    /// nixpkgs-review skipped it as broken.
    SkippedBroken,
    /// nixpkgs-review skipped it (its list of attributes never built).
    Skipped,
    /// It fails to evaluate on both sides (asked for by name). The head's
    /// message.
    EvalFailed(String),
    /// A side that has the attribute lacks its outputs (both sides when
    /// both do): nothing is guessed.
    NotBuilt(Vec<Side>),
}

impl Status {
    /// The status as the JSON spells it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::EvalBroken(_) => "broken",
            Status::Grown => "grown",
            Status::Shrunk => "shrunk",
            Status::Added => "added",
            Status::Removed => "removed",
            Status::Unchanged => "unchanged",
            Status::EvalFixed(_) => "fixed",
            Status::BuildFailed => "build-failed",
            Status::SkippedBroken => "skipped-broken",
            Status::Skipped => "skipped",
            Status::EvalFailed(_) => "eval-failed",
            Status::NotBuilt(_) => "not-built",
        }
    }

    /// Order of the report's sections: what breaks evaluation first.
    fn rank(&self) -> u8 {
        match self {
            Status::EvalBroken(_) => 0,
            Status::Grown => 1,
            Status::Shrunk => 2,
            Status::Added => 3,
            Status::Removed => 4,
            Status::Unchanged => 5,
            Status::EvalFixed(_) => 6,
            Status::BuildFailed => 7,
            Status::SkippedBroken => 8,
            Status::Skipped => 9,
            Status::EvalFailed(_) => 10,
            Status::NotBuilt(_) => 11,
        }
    }

    /// Whether both sides' closures (or the one side's, for an added or
    /// removed attribute) were measured.
    pub fn compared(&self) -> bool {
        matches!(
            self,
            Status::Grown | Status::Shrunk | Status::Unchanged | Status::Added | Status::Removed
        )
    }
}

/// One change of an attribute's closure: the added and removed paths of
/// one package (see [`units`]), explained by its largest path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The package, as `nix store diff-closures` names it.
    pub package: String,
    /// Its paths new in the attribute's closure (head graph), largest
    /// first.
    pub added: Vec<NodeId>,
    /// Its paths gone from it (base graph), largest first.
    pub removed: Vec<NodeId>,
    /// Versions of the added paths (diff-closures' reading, `""` for
    /// none), sorted.
    pub versions_after: Vec<String>,
    /// Versions of the removed paths.
    pub versions_before: Vec<String>,
    /// Added NAR sizes minus removed ones.
    pub net: i128,
    /// The path of the attribute's closure that holds the explained path
    /// (the largest added one, else the largest removed one; the strongest
    /// hold when evidence was read), in that path's graph; `None` for one
    /// of the attribute's own outputs.
    pub referrer: Option<NodeId>,
    /// From one of the attribute's outputs down to the explained path,
    /// through `referrer`.
    pub chain: Vec<NodeId>,
    /// Whether the chain is in the head graph (else the base's).
    pub in_head: bool,
    /// The [`SharedCause`] it is, said once for all (an index into
    /// [`Impact::shared`]).
    pub shared: Option<usize>,
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
    /// Its head closure holds a forbidden path (a name glob matched, or the
    /// store path given).
    Forbid {
        /// The glob.
        pattern: String,
        /// The path, in the head graph.
        node: NodeId,
    },
    /// Its outputs together are larger than Hydra's limit (`--max-output`).
    MaxOutput {
        /// The NAR sizes of its outputs together.
        size: u64,
        /// The limit.
        limit: u64,
        /// Each output and its NAR size, largest first.
        outputs: Vec<(String, u64)>,
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
    /// The changes of largest net change, explained (at most
    /// [`Request::top`]).
    pub changes: Vec<Change>,
    /// How many changes there are in all.
    pub changes_count: usize,
    /// The net change of those not in `changes`: with theirs, the delta.
    pub rest_net: i128,
    /// All added paths: how many.
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

/// A change found in several attributes (the same paths added and
/// removed), said once for all of them.
#[derive(Debug, Clone)]
pub struct SharedCause {
    /// The change (its `shared` is `None`; its chain is from the first of
    /// `rows`).
    pub change: Change,
    /// The attributes it is in (indices into [`Impact::rows`]).
    pub rows: Vec<usize>,
    /// The row whose attribute has its added path as an output, when one
    /// does (a rebuilt library is new in its dependents and is their
    /// cause).
    pub output_of: Option<usize>,
    /// Whether its holder was read (the [`SHARED_EXPLAINED`] largest).
    pub explained: bool,
}

/// The impact of a change on every attribute asked for.
pub struct Impact {
    /// The union of the base side's built closures.
    pub before: Graph,
    /// The union of the head side's built closures.
    pub after: Graph,
    /// One row per attribute, in report order: broken by the change,
    /// grown (largest first), shrunk, added, removed, unchanged, fixed,
    /// nixpkgs-review's failed and skipped, failing on both sides, not
    /// built.
    pub rows: Vec<AttrImpact>,
    /// Changes found in two or more attributes, largest net change first:
    /// all of them (the report says how many it shows).
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

    /// Whether any attribute was measured: compared, or its head closure
    /// known. A gate that measured nothing has nothing to pass.
    pub fn measured(&self) -> bool {
        self.rows.iter().any(|r| {
            r.status.compared() || r.after.as_ref().is_some_and(|a| a.closure_size.is_some())
        })
    }

    /// Whether `rules`, when given, measured something; a gate that
    /// measured nothing does not pass.
    pub fn gate(&self, rules: &Rules) -> Result<(), NothingMeasured> {
        if rules.any() && !self.measured() {
            return Err(NothingMeasured {
                attrs: self.rows.len(),
            });
        }
        Ok(())
    }
}

/// How many shared causes get their holder read and named; the rest are
/// listed with their size and attributes.
pub const SHARED_EXPLAINED: usize = 10;

/// What one side says of one attribute, looked up in its store.
#[derive(Debug, Clone)]
enum Got {
    Side(AttrSide),
    Failed(String),
    Note(Note),
}

/// One side's attributes looked up in its store: each requested
/// attribute's [`Got`], and the built outputs, the roots of the side's
/// graph.
struct Looked {
    sides: Vec<Option<Got>>,
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
    let infos = side.src.path_infos(&wanted)?;
    let present: HashMap<&StorePath, u64> = wanted
        .iter()
        .zip(infos)
        .filter_map(|(p, i)| Some((p, i?.nar_size)))
        .collect();
    let mut roots = Vec::new();
    let sides = attrs
        .iter()
        .map(|a| {
            if let Some(n) = side.notes.get(a) {
                return Some(Got::Note(n.clone()));
            }
            match side.attrs.get(a)? {
                Outcome::Failed(m) => Some(Got::Failed(m.clone())),
                Outcome::Evaluated { outputs, .. } => {
                    let missing: Vec<String> = outputs
                        .iter()
                        .filter(|(_, p)| !present.contains_key(p))
                        .map(|(o, _)| o.clone())
                        .collect();
                    let built = missing.is_empty() && !outputs.is_empty();
                    if built {
                        roots.extend(outputs.values().cloned());
                    }
                    Some(Got::Side(AttrSide {
                        outputs: outputs.clone(),
                        built,
                        missing,
                        closure_size: None,
                        output_sizes: outputs
                            .iter()
                            .filter_map(|(o, p)| Some((o.clone(), *present.get(p)?)))
                            .collect(),
                    }))
                }
            }
        })
        .collect();
    roots.sort();
    roots.dedup();
    Ok(Looked { sides, roots })
}

/// Each attribute's group of root ids in `g` (empty when not built there).
fn groups(g: &Graph, sides: &[Option<Got>]) -> Vec<Vec<NodeId>> {
    let index = g.index();
    sides
        .iter()
        .map(|s| match s {
            Some(Got::Side(s)) if s.built => s
                .outputs
                .values()
                .filter_map(|p| index.get(p).copied())
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// The units of one row with the picked paths that explain the first
/// `top`, their chains not yet chosen.
struct RowChanges {
    units: Vec<units::Unit>,
    added_picked: Vec<Picked>,
    removed_picked: Vec<Picked>,
}

/// A unit of change and the rows it is in.
type SharedUnit = (units::Unit, Vec<usize>);

/// What a unit of change is known by: its added and removed paths, sorted.
type UnitKey = (Vec<NodeId>, Vec<NodeId>);

/// Shared causes: the same paths added and removed in two or more rows
/// with both sides built (a new attribute's whole closure is "added" and
/// would drown the causes), largest first, and where each unit's cause
/// is in that list.
fn shared_units(
    rows: &[AttrImpact],
    found: &[RowChanges],
) -> (Vec<SharedUnit>, HashMap<UnitKey, usize>) {
    let mut shared_in: BTreeMap<UnitKey, Vec<usize>> = BTreeMap::new();
    for (i, f) in found.iter().enumerate() {
        if both_built(&rows[i]) {
            for u in &f.units {
                shared_in.entry(unit_key(u)).or_default().push(i);
            }
        }
    }
    let mut shared: Vec<(units::Unit, Vec<usize>)> = Vec::new();
    for (i, f) in found.iter().enumerate() {
        for u in &f.units {
            if let Some(rs) = shared_in.get(&unit_key(u))
                && rs.len() >= 2
                && rs[0] == i
            {
                shared.push((u.clone(), rs.clone()));
            }
        }
    }
    shared.sort_by(|x, y| {
        y.0.net
            .unsigned_abs()
            .cmp(&x.0.net.unsigned_abs())
            .then_with(|| y.1.len().cmp(&x.1.len()))
            .then_with(|| x.0.package.cmp(&y.0.package))
    });
    let shared_at: HashMap<UnitKey, usize> = shared
        .iter()
        .enumerate()
        .map(|(k, (u, _))| (unit_key(u), k))
        .collect();
    (shared, shared_at)
}

/// A shared cause's holders, for the first [`SHARED_EXPLAINED`]: the
/// referrers of its explained path anywhere in its graph, nearest the
/// roots first (the strongest is chosen from the evidence).
fn shared_holders(shared: &[SharedUnit], bg: &Graph, ag: &Graph) -> Vec<Vec<NodeId>> {
    let (bdepth, adepth) = (
        nix_heft_graph::chains::depths_from_roots(bg),
        nix_heft_graph::chains::depths_from_roots(ag),
    );
    shared
        .iter()
        .take(SHARED_EXPLAINED)
        .map(|(u, _)| {
            let (v, in_head) = u.explained_by();
            let (g, depth) = if in_head {
                (ag, &adepth)
            } else {
                (bg, &bdepth)
            };
            let mut r: Vec<NodeId> = g.referrers(v).iter().copied().filter(|&r| r != v).collect();
            r.sort_by(|x, y| {
                depth[*x as usize]
                    .cmp(&depth[*y as usize])
                    .then_with(|| g.path(*x).cmp(g.path(*y)))
            });
            r.dedup();
            r
        })
        .collect()
}

/// The rules one row breaks: the head closure's size and growth and the
/// forbidden paths it reaches, when both sides were compared; Hydra's
/// limit on the head's outputs whenever it was built.
fn broken_rules(
    rules: &Rules,
    compared: bool,
    before: Option<&AttrSide>,
    after: Option<&AttrSide>,
    head_targets: &[(String, NodeId)],
    reached: &[NodeId],
) -> Vec<Broken> {
    let mut broken = Vec::new();
    if compared && let Some(after_size) = after.and_then(|s| s.closure_size) {
        if let Some(limit) = rules.closure.max_closure
            && after_size > limit
        {
            broken.push(Broken::MaxClosure {
                size: after_size,
                limit,
            });
        }
        if let (Some(g), Some(before_size)) = (
            rules.closure.max_growth,
            before.and_then(|s| s.closure_size),
        ) {
            let limit = g.limit(before_size);
            let growth = after_size.saturating_sub(before_size);
            if growth > limit {
                broken.push(Broken::MaxGrowth { growth, limit });
            }
        }
        for (pat, v) in head_targets {
            if reached.contains(v) {
                broken.push(Broken::Forbid {
                    pattern: pat.clone(),
                    node: *v,
                });
            }
        }
    }
    // Hydra's limit is on the build's outputs, whatever the rest of
    // the row: an attribute built at the head is measured.
    if let (Some(limit), Some(a)) = (rules.max_output, after)
        && a.built
    {
        let size: u64 = a.output_sizes.values().sum();
        if size > limit {
            let mut outputs: Vec<(String, u64)> = a
                .output_sizes
                .iter()
                .map(|(o, s)| (o.clone(), *s))
                .collect();
            outputs.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
            broken.push(Broken::MaxOutput {
                size,
                limit,
                outputs,
            });
        }
    }
    broken
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
    let head_targets = req.rules.closure.forbidden_in(&ag);
    let detail = Detail {
        top: req.top,
        head_targets: head_targets.iter().map(|(_, v)| *v).collect(),
        choose: Some(units::choose),
    };
    let diffs = diff_groups_with(
        &bg,
        &groups(&bg, &lb.sides),
        &ag,
        &groups(&ag, &la.sides),
        &detail,
    );

    let mut rows: Vec<AttrImpact> = Vec::with_capacity(req.attrs.len());
    let mut found: Vec<RowChanges> = Vec::with_capacity(req.attrs.len());
    for (i, (attr, d)) in req.attrs.iter().zip(diffs).enumerate() {
        let mut b = lb.sides[i].take();
        let mut a = la.sides[i].take();
        for (s, size) in [(&mut b, d.before), (&mut a, d.after)] {
            if let Some(Got::Side(s)) = s
                && s.built
            {
                s.closure_size = Some(size);
            }
        }
        let status = status_of(&b, &a);
        let compared = status.compared();
        let side = |g: Option<Got>| match g {
            Some(Got::Side(s)) => Some(s),
            _ => None,
        };
        let before = side(b);
        let after = side(a);
        let broken = broken_rules(
            req.rules,
            compared,
            before.as_ref(),
            after.as_ref(),
            &head_targets,
            &d.reached,
        );
        let (us, added_picked, removed_picked) = if compared {
            (
                units::units(&bg, &d.removed, &ag, &d.added),
                d.added_top,
                d.removed_top,
            )
        } else {
            (Vec::new(), Vec::new(), Vec::new())
        };
        rows.push(AttrImpact {
            attr: attr.clone(),
            before,
            after,
            status,
            changes: Vec::new(),
            changes_count: us.len(),
            rest_net: us.iter().skip(req.top).map(|u| u.net).sum(),
            added_count: if compared { d.added.len() } else { 0 },
            added_size: if compared { d.added_size } else { 0 },
            removed_count: if compared { d.removed.len() } else { 0 },
            removed_size: if compared { d.removed_size } else { 0 },
            broken,
        });
        found.push(RowChanges {
            units: us,
            added_picked,
            removed_picked,
        });
    }

    let (shared, shared_at) = shared_units(&rows, &found);
    let shared_candidates = shared_holders(&shared, &bg, &ag);

    let (before_evidence, after_evidence) = if req.evidence {
        let mut wb = ReadRequest::new();
        let mut wa = ReadRequest::new();
        for f in &found {
            request::want(&mut wa, edges(&f.added_picked));
            if req.removed_evidence {
                request::want(&mut wb, edges(&f.removed_picked));
            }
        }
        for ((u, _), rs) in shared.iter().zip(&shared_candidates) {
            let (v, in_head) = u.explained_by();
            if in_head {
                request::want(&mut wa, rs.iter().map(|&r| (r, v)));
            } else if req.removed_evidence {
                request::want(&mut wb, rs.iter().map(|&r| (r, v)));
            }
        }
        rayon::join(
            || classified(before.src, &bg, &wb, None, progress.0),
            || classified(after.src, &ag, &wa, None, progress.1),
        )
    } else {
        (Classified::default(), Classified::default())
    };

    for (row, f) in rows.iter_mut().zip(found) {
        row.changes = f
            .units
            .iter()
            .take(req.top)
            .map(|u| {
                let (v, in_head) = u.explained_by();
                let (picked, evidence) = if in_head {
                    (&f.added_picked, &after_evidence)
                } else {
                    (&f.removed_picked, &before_evidence)
                };
                let p = picked.iter().find(|p| p.node == v);
                let mut c = change(u, &bg, &ag, p, evidence);
                c.shared = shared_at.get(&unit_key(u)).copied();
                c
            })
            .collect();
    }
    let mut shared_causes: Vec<SharedCause> = shared
        .into_iter()
        .enumerate()
        .map(|(k, (u, rs))| {
            let mut c = change(&u, &bg, &ag, None, &after_evidence);
            let explained = k < shared_candidates.len();
            if explained {
                let (v, in_head) = u.explained_by();
                let evidence = if in_head {
                    &after_evidence
                } else {
                    &before_evidence
                };
                c.referrer = nix_heft_analysis::explain::strongest_referrer(
                    evidence,
                    v,
                    &shared_candidates[k],
                );
            }
            SharedCause {
                change: c,
                rows: rs,
                output_of: None,
                explained,
            }
        })
        .collect();

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
    for s in &mut shared_causes {
        let mut moved: Vec<usize> = s
            .rows
            .iter()
            .filter_map(|&i| at.get(req.attrs[i].as_str()).copied())
            .collect();
        moved.sort_unstable();
        s.rows = moved;
        s.output_of = s.change.added.first().and_then(|&v| {
            let path = ag.path(v);
            rows.iter().position(|r| {
                r.after
                    .as_ref()
                    .is_some_and(|a| a.outputs.values().any(|p| p == path))
            })
        });
    }
    Ok(Impact {
        before: bg,
        after: ag,
        rows,
        shared: shared_causes,
        before_evidence,
        after_evidence,
    })
}

/// What makes two rows' changes the same change: the same paths added
/// and removed.
fn unit_key(u: &units::Unit) -> UnitKey {
    let mut a = u.added.clone();
    let mut r = u.removed.clone();
    a.sort_unstable();
    r.sort_unstable();
    (a, r)
}

/// A unit as a [`Change`], explained through `picked` (its explained
/// path's referrers and chains in the row's closure) and `evidence`.
fn change(
    u: &units::Unit,
    bg: &Graph,
    ag: &Graph,
    picked: Option<&Picked>,
    evidence: &Classified,
) -> Change {
    let (v, in_head) = u.explained_by();
    let (referrer, mut chain) = match picked {
        Some(p) => {
            let candidates: Vec<NodeId> = p.referrers.iter().map(|(r, _)| *r).collect();
            let referrer =
                nix_heft_analysis::explain::strongest_referrer(evidence, p.node, &candidates);
            let chain = referrer
                .and_then(|r| p.referrers.iter().find(|(x, _)| *x == r))
                .map(|(_, chain)| chain.clone())
                .unwrap_or_default();
            (referrer, chain)
        }
        None => (None, Vec::new()),
    };
    chain.push(v);
    Change {
        package: u.package.clone(),
        versions_after: units::versions(ag, &u.added),
        versions_before: units::versions(bg, &u.removed),
        added: u.added.clone(),
        removed: u.removed.clone(),
        net: u.net,
        referrer,
        chain,
        in_head,
        shared: None,
    }
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

/// What happened to an attribute, from its two sides.
fn status_of(b: &Option<Got>, a: &Option<Got>) -> Status {
    match (b, a) {
        (Some(Got::Failed(_)), Some(Got::Failed(m))) => return Status::EvalFailed(m.clone()),
        (Some(Got::Side(_)) | None, Some(Got::Failed(m))) => {
            return Status::EvalBroken(m.clone());
        }
        (Some(Got::Note(_)), Some(Got::Failed(m))) => return Status::EvalBroken(m.clone()),
        (_, Some(Got::Note(n))) => {
            return match n {
                Note::BuildFailed => Status::BuildFailed,
                Note::SkippedBroken => Status::SkippedBroken,
                Note::Skipped => Status::Skipped,
            };
        }
        (Some(Got::Failed(m)), Some(Got::Side(_))) => return Status::EvalFixed(m.clone()),
        _ => {}
    }
    let unbuilt: Vec<Side> = [(b, Side::Before), (a, Side::After)]
        .into_iter()
        .filter(|(s, _)| matches!(s, Some(Got::Side(s)) if !s.built))
        .map(|(_, side)| side)
        .collect();
    if !unbuilt.is_empty() {
        return Status::NotBuilt(unbuilt);
    }
    match (b, a) {
        (None, None) => Status::EvalFailed("no such attribute on either side".into()),
        (None, Some(_)) => Status::Added,
        (Some(_), None) => Status::Removed,
        (Some(Got::Side(b)), Some(Got::Side(a))) => match a.closure_size.cmp(&b.closure_size) {
            std::cmp::Ordering::Greater => Status::Grown,
            std::cmp::Ordering::Less => Status::Shrunk,
            std::cmp::Ordering::Equal => Status::Unchanged,
        },
        // A note or a failure on the head returned above; the base has
        // neither notes nor anything but sides and failures.
        _ => Status::EvalFailed("no such attribute on either side".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side() -> Got {
        Got::Side(AttrSide {
            outputs: BTreeMap::new(),
            built: true,
            missing: Vec::new(),
            closure_size: Some(1),
            output_sizes: BTreeMap::new(),
        })
    }

    #[test]
    fn evaluation_failures_say_which_way() {
        let f = |m: &str| Some(Got::Failed(m.into()));
        assert_eq!(
            status_of(&Some(side()), &f("x")),
            Status::EvalBroken("x".into())
        );
        assert_eq!(status_of(&None, &f("x")), Status::EvalBroken("x".into()));
        assert_eq!(
            status_of(&f("b"), &Some(side())),
            Status::EvalFixed("b".into())
        );
        assert_eq!(status_of(&f("b"), &f("a")), Status::EvalFailed("a".into()));
        assert_eq!(status_of(&f("b"), &None), Status::Removed);
        assert_eq!(
            status_of(&Some(side()), &Some(Got::Note(Note::SkippedBroken))),
            Status::SkippedBroken
        );
        assert_eq!(status_of(&Some(side()), &None), Status::Removed);
        assert!(Status::EvalBroken(String::new()).rank() < Status::Grown.rank());
    }
}
