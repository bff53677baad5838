//! The `diff` report: what changed between two closures, per package and
//! per path, and for every path that appeared or left the edge and files
//! that explain it.

use serde::{Deserialize, Serialize};

use super::table::{Align, Table};
use super::{Report, TextOptions, plural, review};
use nix_heft_core::classify::Classified;
use nix_heft_core::diff::{ClosureDiff, Drag, EdgeChange, PathChange};
use nix_heft_core::graph::Graph;
use nix_heft_types::evidence::{Evidence, EvidenceGroup};
use nix_heft_types::problem::Problem;
use nix_heft_types::units::{iec, iec_delta};

/// How a changed path's referrer relates to it, as `diff --json` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Edge {
    /// AFTER: the edge appeared.
    New,
    /// BEFORE: the edge vanished.
    Gone,
    /// The same packages are linked on the other side too: only a hash or
    /// version changed.
    Renamed,
    /// The path is a root.
    Root,
}

impl Edge {
    /// The name `diff --json` gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Edge::New => "new",
            Edge::Gone => "gone",
            Edge::Renamed => "renamed",
            Edge::Root => "root",
        }
    }
}

/// Why a path appeared or left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Why {
    /// The path on the same side that references it; `null` for a root.
    pub referrer: Option<String>,
    /// `new` (AFTER: the edge appeared), `gone` (BEFORE: the edge vanished),
    /// `renamed` (the same packages are linked on the other side too: only
    /// a hash or version changed), or `root`.
    pub edge: Edge,
    /// The paths of the same package on the other side that it replaces or
    /// that replace it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub renamed: Vec<String>,
    /// The referrer's holds of the reference (read only for `new` and
    /// `gone` edges).
    pub evidence: Vec<Evidence>,
    /// The same holds grouped by kind, verdict and directory, with the
    /// holding files' sizes: what the text, markdown and GitHub formats
    /// show.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<EvidenceGroup>,
    /// True when the source has no file contents for the referrer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unavailable: bool,
    /// For a path that left together with its referrer (every referrer's
    /// package is gone too): the referrer it left with. `null` when a
    /// referrer stayed and only the edge vanished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_with: Option<String>,
    /// With `left_with`: the chain that held the path, from the nearest
    /// path that stayed (or the old root) down to the path itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_chain: Vec<String>,
    /// For an added path: the chain from AFTER's root down to it, through
    /// the referrer given for each path on the way (the strongest hold),
    /// ending at the path itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<String>,
}

/// A path that appeared or left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedPath {
    /// The store path.
    pub path: String,
    /// Its NAR size.
    pub nar_size: u64,
    /// The edge that explains it.
    pub why: Why,
    /// With `diff --derivation`: the paths of its side's closure
    /// reachable from it that the other side lacks (itself included),
    /// the order of the list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drags: Option<Drag>,
}

/// One package's transition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Package {
    /// Package name without version or output.
    pub name: String,
    /// Versions before (`""` for a path without version).
    pub versions_before: Vec<String>,
    /// Versions after.
    pub versions_after: Vec<String>,
    /// Size change in bytes.
    pub size_delta: i128,
    /// `1.2 → 1.3`, `∅ → 2.0`, or `(rebuilt)` when only hashes changed.
    pub transition: String,
}

/// The whole report; also the `--json` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffReport {
    /// BEFORE's roots.
    pub before: Vec<String>,
    /// AFTER's roots.
    pub after: Vec<String>,
    /// Closure size of BEFORE.
    pub closure_size_before: u64,
    /// Closure size of AFTER.
    pub closure_size_after: u64,
    /// Paths in BEFORE's closure.
    pub paths_before: usize,
    /// Paths in AFTER's closure.
    pub paths_after: usize,
    /// Changed packages, largest absolute size change first.
    pub packages: Vec<Package>,
    /// Paths new in AFTER's closure, largest first.
    pub added: Vec<ChangedPath>,
    /// Paths that left, largest first.
    pub removed: Vec<ChangedPath>,
    /// What could not be read on either side.
    pub problems: Vec<Problem>,
    /// With `diff --derivation`: why the derivations differ
    /// (`root_causes`, `derivation_changes`).
    #[serde(flatten)]
    pub derivations: Option<super::drv_diff::DrvDiffReport>,
}

/// Nix's way of listing a version set: `∅` for none, `ε` for the empty
/// version.
fn show_versions(v: &[String]) -> String {
    if v.is_empty() {
        return "∅".into();
    }
    v.iter()
        .map(|s| if s.is_empty() { "ε" } else { s.as_str() })
        .collect::<Vec<_>>()
        .join(", ")
}

impl DiffReport {
    /// Assembles the report from the comparison and the evidence read on
    /// each side.
    pub fn new(
        before: &Graph,
        after: &Graph,
        d: ClosureDiff,
        read_before: Classified,
        read_after: Classified,
    ) -> DiffReport {
        let changed = |this: &Graph, other: &Graph, c: &Classified, pc: &PathChange, new: bool| {
            let (edge, evidence, groups, unavailable) = match (pc.referrer, pc.edge) {
                (None, _) => (Edge::Root, Vec::new(), Vec::new(), false),
                (Some(_), EdgeChange::Renamed) => (Edge::Renamed, Vec::new(), Vec::new(), false),
                (Some(r), EdgeChange::Changed) => (
                    if new { Edge::New } else { Edge::Gone },
                    c.evidence(r, pc.node).to_vec(),
                    c.groups(r, pc.node),
                    c.paths.get(&r).is_none_or(|p| !p.available),
                ),
            };
            ChangedPath {
                path: this.path(pc.node).to_string(),
                nar_size: this.nar_size(pc.node),
                why: Why {
                    referrer: pc.referrer.map(|r| this.path(r).to_string()),
                    edge,
                    renamed: pc
                        .counterparts
                        .iter()
                        .map(|&o| other.path(o).to_string())
                        .collect(),
                    evidence,
                    groups,
                    unavailable,
                    left_with: if pc.left_with.is_empty() {
                        None
                    } else {
                        pc.referrer.map(|r| this.path(r).to_string())
                    },
                    left_chain: pc
                        .left_with
                        .iter()
                        .map(|&n| this.path(n).to_string())
                        .collect(),
                    // A root's chain is itself: nothing to say.
                    chain: if pc.chain.len() > 1 {
                        pc.chain.iter().map(|&n| this.path(n).to_string()).collect()
                    } else {
                        Vec::new()
                    },
                },
                drags: pc.drags,
            }
        };
        let added = d
            .added
            .iter()
            .map(|pc| changed(after, before, &read_after, pc, true))
            .collect();
        let removed = d
            .removed
            .iter()
            .map(|pc| changed(before, after, &read_before, pc, false))
            .collect();
        let packages = d
            .packages
            .into_iter()
            .map(|p| Package {
                transition: if p.rebuilt {
                    "(rebuilt)".into()
                } else {
                    format!(
                        "{} → {}",
                        show_versions(&p.versions_before),
                        show_versions(&p.versions_after)
                    )
                },
                name: p.name,
                versions_before: p.versions_before,
                versions_after: p.versions_after,
                size_delta: p.size_delta,
            })
            .collect();
        let mut problems = read_before.problems;
        problems.extend(read_after.problems);
        DiffReport {
            before: before
                .roots()
                .iter()
                .map(|&r| before.path(r).to_string())
                .collect(),
            after: after
                .roots()
                .iter()
                .map(|&r| after.path(r).to_string())
                .collect(),
            closure_size_before: d.closure_size_before,
            closure_size_after: d.closure_size_after,
            paths_before: d.paths_before,
            paths_after: d.paths_after,
            packages,
            added,
            removed,
            problems,
            derivations: None,
        }
    }
}

impl ChangedPath {
    /// The referrer's holds in words: `from bin/app (elf-runpath,
    /// runtime)`, or why there are none.
    fn held(&self, code: fn(&str) -> String) -> String {
        if self.why.unavailable {
            "(no file contents in this source)".to_string()
        } else if self.why.evidence.is_empty() {
            "(registered, but no occurrence found)".to_string()
        } else {
            format!(
                "from {}",
                review::groups_phrase(
                    &review::groups_of(&self.why.groups, &self.why.evidence),
                    code
                )
            )
        }
    }

    /// Why it came or went, after its name and size: `is new: app-1.0
    /// references it from bin/app (elf-runpath, runtime)`. `name` shows a
    /// store path, `code` a file (plain for text, a code span for
    /// markdown).
    pub fn explain(
        &self,
        new: bool,
        name: &dyn Fn(&str) -> String,
        code: fn(&str) -> String,
    ) -> String {
        let c = self;
        match (c.why.referrer.as_deref(), c.why.edge) {
            (None, _) => {
                if new {
                    "is a root".to_string()
                } else {
                    "was a root".to_string()
                }
            }
            (Some(r), Edge::Renamed) => {
                let was: Vec<String> = c.why.renamed.iter().map(|p| name(p)).collect();
                let verb = if new { "replaces" } else { "replaced by" };
                if was.is_empty() {
                    format!("{} references it as before", name(r))
                } else {
                    format!(
                        "{verb} {}: {} references it as before",
                        was.join(", "),
                        name(r)
                    )
                }
            }
            (Some(_), _) if !new && c.why.left_with.is_some() => {
                let chain: Vec<String> = c.why.left_chain.iter().map(|p| name(p)).collect();
                format!(
                    "left with {} ({})",
                    name(c.why.left_with.as_deref().unwrap_or_default()),
                    chain.join(" → ")
                )
            }
            (Some(r), _) => {
                let held = self.held(code);
                if new {
                    format!("is new: {} references it {held}", name(r))
                } else {
                    format!("left: {} no longer references it (before, {held})", name(r))
                }
            }
        }
    }
}

/// How to see what a cut markdown report left out.
const SEE_ALL: &str = "`nix-heft diff --format text BEFORE AFTER` lists everything \
                       (`--evidence` every hold); a CI job can keep it as an artifact.";

/// Changes shown open at the top of the markdown, largest first.
const TOP: usize = 5;

/// Changes annotated one by one in `--format github`: with the summary
/// before and the count of the rest after, ten notices, what GitHub shows
/// per step.
const ANNOTATED: usize = review::ANNOTATIONS_PER_LEVEL - 2;

/// Paths added through one referrer for one reason are one line from this
/// many on.
const COLLAPSE_AT: usize = 3;

/// Paths added (or gone) through one referrer for one reason (the same
/// kinds, verdicts and directories of holds): one line in every format.
#[derive(Debug, Clone)]
struct PathGroup<'a> {
    /// Added (AFTER's paths) or gone (BEFORE's).
    new: bool,
    /// The paths, largest first.
    members: Vec<&'a ChangedPath>,
    /// What their names share, as a glob (`tensile-gfx*`), when they
    /// share a telling start.
    pattern: Option<String>,
}

/// One line of the review: a change, or paths added together.
enum Entry<'a> {
    /// A path new in AFTER.
    Added(&'a ChangedPath),
    /// Paths added, or gone, for one reason through one referrer.
    Group(PathGroup<'a>),
    /// A path that replaces paths of its package (rebuilt, or another
    /// version), and those it replaces.
    Changed(&'a ChangedPath, Vec<&'a ChangedPath>),
    /// A path that left.
    Removed(&'a ChangedPath),
}

impl Entry<'_> {
    /// What it does to the closure, in bytes.
    fn impact(&self) -> i128 {
        match self {
            Entry::Added(c) => c.nar_size as i128,
            Entry::Group(g) => {
                let sum: i128 = g.members.iter().map(|c| c.nar_size as i128).sum();
                if g.new { sum } else { -sum }
            }
            Entry::Changed(c, old) => {
                c.nar_size as i128 - old.iter().map(|o| o.nar_size as i128).sum::<i128>()
            }
            Entry::Removed(c) => -(c.nar_size as i128),
        }
    }

    /// How many paths of the lists it stands for.
    fn paths(&self) -> usize {
        match self {
            Entry::Group(g) => g.members.len(),
            _ => 1,
        }
    }

    /// The chain from the root to its referrer (the path itself left
    /// out), when longer than the referrer alone.
    fn chain_above(&self) -> &[String] {
        let chain = match self {
            Entry::Added(c) | Entry::Changed(c, _) => &c.why.chain,
            Entry::Group(g) => &g.members[0].why.chain,
            // BEFORE's chains are not kept: what left says `left with`.
            Entry::Removed(_) => return &[],
        };
        match chain.len() {
            0..=2 => &[],
            n => &chain[..n - 1],
        }
    }
}

/// The referrer and the reason (kinds, verdicts, directories of its holds)
/// of a path added through a new edge (or gone with a vanished one, its
/// referrer staying): paths that share it are one line.
type ReasonKey = (String, Vec<(&'static str, &'static str, String)>);

fn reason_key(c: &ChangedPath) -> Option<ReasonKey> {
    if !matches!(c.why.edge, Edge::New | Edge::Gone)
        || c.why.unavailable
        || c.why.left_with.is_some()
        || !c.why.renamed.is_empty()
    {
        return None;
    }
    let r = c.why.referrer.clone()?;
    let groups = review::groups_of(&c.why.groups, &c.why.evidence);
    if groups.is_empty() {
        return None;
    }
    let mut k: Vec<_> = groups
        .iter()
        .map(|g| (g.kind.as_str(), g.verdict.as_str(), g.dir.clone()))
        .collect();
    k.sort();
    Some((r, k))
}

/// The glob that names a group's paths: their names' common start, ending
/// before a number (`tensile-gfx*` for `tensile-gfx900-5.7.1` and
/// `tensile-gfx1100-5.7.1`); `None` when they share too little.
fn common_pattern(paths: &[&ChangedPath]) -> Option<String> {
    let names: Vec<&str> = paths
        .iter()
        .map(|c| nix_heft_format::store_path::name_of(&c.path))
        .collect();
    let first = *names.first()?;
    let mut n = first.len();
    for s in &names[1..] {
        n = first
            .char_indices()
            .zip(s.chars())
            .take_while(|((_, a), b)| a == b)
            .map(|((i, a), _)| i + a.len_utf8())
            .last()
            .unwrap_or(0)
            .min(n);
    }
    let p = first[..n].trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    (p.chars().count() >= 3).then(|| format!("{p}*"))
}

/// `list` (one side's paths) as lines: the paths that share a referrer and
/// a reason ([`COLLAPSE_AT`] or more) one group at the first one's place,
/// the others alone.
fn grouped<'a>(list: &[&'a ChangedPath], new: bool) -> Vec<Entry<'a>> {
    use std::collections::HashMap;
    let mut count: HashMap<ReasonKey, usize> = HashMap::new();
    for c in list {
        if let Some(k) = reason_key(c) {
            *count.entry(k).or_default() += 1;
        }
    }
    let mut out: Vec<Entry> = Vec::new();
    let mut at: HashMap<ReasonKey, usize> = HashMap::new();
    for &c in list {
        match reason_key(c).filter(|k| count.get(k).is_some_and(|&n| n >= COLLAPSE_AT)) {
            Some(k) => match at.get(&k) {
                Some(&i) => {
                    if let Entry::Group(g) = &mut out[i] {
                        g.members.push(c);
                    }
                }
                None => {
                    at.insert(k, out.len());
                    out.push(Entry::Group(PathGroup {
                        new,
                        members: vec![c],
                        pattern: None,
                    }));
                }
            },
            None if new => out.push(Entry::Added(c)),
            None => out.push(Entry::Removed(c)),
        }
    }
    for e in &mut out {
        if let Entry::Group(g) = e {
            g.pattern = common_pattern(&g.members);
        }
    }
    out
}

/// A size change with its sign.
fn signed(size: &dyn Fn(u64) -> String, d: i128) -> String {
    let sign = if d < 0 { "-" } else { "+" };
    format!(
        "{sign}{}",
        size(u64::try_from(d.unsigned_abs()).unwrap_or(u64::MAX))
    )
}

impl DiffReport {
    /// Display names for every path the report shows (a hash where two
    /// share a name).
    fn names(&self) -> super::Names {
        super::Names::new(
            self.before
                .iter()
                .chain(&self.after)
                .chain(self.added.iter().chain(&self.removed).flat_map(|c| {
                    std::iter::once(&c.path)
                        .chain(&c.why.referrer)
                        .chain(&c.why.renamed)
                        .chain(&c.why.left_with)
                        .chain(&c.why.left_chain)
                        .chain(&c.why.chain)
                }))
                .map(String::as_str),
        )
    }

    /// Paths new in AFTER (not replacing any), paths changed (rebuilt or
    /// another version: they replace paths of their package) and paths
    /// gone without a replacement.
    pub fn counts(&self) -> (usize, usize, usize) {
        let changed = self
            .added
            .iter()
            .filter(|c| !c.why.renamed.is_empty())
            .count();
        let removed = self
            .removed
            .iter()
            .filter(|c| c.why.renamed.is_empty())
            .count();
        (self.added.len() - changed, changed, removed)
    }

    /// Closure before → after (Δ), paths added, changed and removed: the
    /// one line every format starts with.
    fn summary(&self) -> String {
        let (added, changed, removed) = self.counts();
        format!(
            "closure {} → {} ({}): {} added, {changed} changed, {removed} removed",
            iec(self.closure_size_before),
            iec(self.closure_size_after),
            iec_delta(self.closure_size_after as i128 - self.closure_size_before as i128),
            plural(added, "path"),
        )
    }

    /// `old A → new B`: the roots, labelled, as `name` shows them.
    fn roots_line(&self, name: &dyn Fn(&str) -> String) -> String {
        let roots = |r: &[String]| r.iter().map(|p| name(p)).collect::<Vec<_>>().join(", ");
        format!("old {} → new {}", roots(&self.before), roots(&self.after))
    }

    /// Packages by size impact, largest first.
    fn packages_by_impact(&self) -> Vec<&Package> {
        let mut p: Vec<&Package> = self.packages.iter().collect();
        p.sort_by(|a, b| {
            b.size_delta
                .unsigned_abs()
                .cmp(&a.size_delta.unsigned_abs())
        });
        p
    }

    /// The paths added for one reason through one referrer
    /// (`COLLAPSE_AT` or more), each group with its line in words (paths
    /// shown by `name`), largest group first: the one line every format
    /// gives them (the HTML page's too).
    pub fn added_groups(&self, name: &dyn Fn(&str) -> String) -> Vec<(Vec<String>, String)> {
        self.entries()
            .0
            .into_iter()
            .filter_map(|e| {
                let Entry::Group(g) = &e else {
                    return None;
                };
                if !g.new {
                    return None;
                }
                let paths = g.members.iter().map(|c| c.path.clone()).collect();
                Some((paths, self.entry_line(&e, name, review::plain, &iec)))
            })
            .collect()
    }

    /// The three lists as lines: added (single paths and groups), changed,
    /// removed; each by size impact, or in the lists' order when ranked by
    /// drag (`diff --derivation`).
    fn entries(&self) -> (Vec<Entry<'_>>, Vec<Entry<'_>>, Vec<Entry<'_>>) {
        use std::collections::HashMap;
        let removed_by: HashMap<&str, &ChangedPath> =
            self.removed.iter().map(|c| (c.path.as_str(), c)).collect();
        let mut changed = Vec::new();
        let mut added = Vec::new();
        for c in &self.added {
            if c.why.renamed.is_empty() {
                added.push(c);
            } else {
                let old = c
                    .why
                    .renamed
                    .iter()
                    .filter_map(|p| removed_by.get(p.as_str()).copied())
                    .collect();
                changed.push(Entry::Changed(c, old));
            }
        }
        let removed: Vec<&ChangedPath> = self
            .removed
            .iter()
            .filter(|c| c.why.renamed.is_empty())
            .collect();
        let mut added = grouped(&added, true);
        let mut removed = grouped(&removed, false);
        let ranked = self
            .added
            .iter()
            .chain(&self.removed)
            .any(|c| c.drags.is_some());
        if !ranked {
            for list in [&mut added, &mut changed, &mut removed] {
                list.sort_by_key(|e| std::cmp::Reverse(e.impact().unsigned_abs()));
            }
        }
        (added, changed, removed)
    }

    /// One entry in words. `name` shows a store path, `code` a file or a
    /// glob (plain, or a markdown code span), `size` a size.
    fn entry_line(
        &self,
        e: &Entry,
        name: &dyn Fn(&str) -> String,
        code: fn(&str) -> String,
        size: &dyn Fn(u64) -> String,
    ) -> String {
        let drags = |c: &ChangedPath, new: bool| match c.drags {
            Some(d) if new => format!("; drags in {} path(s), {}", d.paths, size(d.bytes)),
            Some(d) => format!("; {} path(s), {} gone with it", d.paths, size(d.bytes)),
            None => String::new(),
        };
        match e {
            Entry::Added(c) => format!(
                "{} (+{}{}) {}",
                name(&c.path),
                size(c.nar_size),
                drags(c, true),
                c.explain(true, name, code)
            ),
            Entry::Removed(c) => format!(
                "{} (-{}{}) {}",
                name(&c.path),
                size(c.nar_size),
                drags(c, false),
                c.explain(false, name, code)
            ),
            Entry::Group(g) => {
                let first = g.members[0];
                let what = match &g.pattern {
                    Some(p) => format!("{} {} paths", g.members.len(), code(p)),
                    None => format!("{} paths", g.members.len()),
                };
                let each: Vec<Vec<EvidenceGroup>> = g
                    .members
                    .iter()
                    .map(|c| review::groups_of(&c.why.groups, &c.why.evidence))
                    .collect();
                let links = each.iter().flatten().all(|x| x.kind.as_str() == "symlink");
                let parts: Vec<String> = each[0]
                    .iter()
                    .take(review::SHOWN_GROUPS)
                    .map(|x| {
                        let holds: Vec<usize> = each
                            .iter()
                            .filter_map(|gs| {
                                gs.iter()
                                    .find(|y| {
                                        y.kind == x.kind && y.verdict == x.verdict && y.dir == x.dir
                                    })
                                    .map(|y| y.holds)
                            })
                            .collect();
                        let (lo, hi) = (
                            holds.iter().min().copied().unwrap_or(0),
                            holds.iter().max().copied().unwrap_or(0),
                        );
                        let n = if lo == hi {
                            lo.to_string()
                        } else {
                            format!("{lo}–{hi}")
                        };
                        let dir = if x.dir.is_empty() {
                            "./".to_string()
                        } else {
                            format!("{}/", x.dir)
                        };
                        format!(
                            "{n} {} hold{} each in {}, {}",
                            x.kind.as_str(),
                            if hi == 1 { "" } else { "s" },
                            code(&dir),
                            x.verdict.as_str()
                        )
                    })
                    .collect();
                let mut more = String::new();
                if each[0].len() > review::SHOWN_GROUPS {
                    more = format!(
                        "; and {} more groups (--evidence lists all)",
                        each[0].len() - review::SHOWN_GROUPS
                    );
                }
                let total: u64 = g
                    .members
                    .iter()
                    .map(|c| c.nar_size)
                    .fold(0, u64::saturating_add);
                let r = name(first.why.referrer.as_deref().unwrap_or_default());
                if g.new {
                    format!(
                        "{what} (+{}) are new: {r} {}, {}{more}",
                        size(total),
                        if links {
                            "links to them"
                        } else {
                            "references them"
                        },
                        parts.join("; ")
                    )
                } else {
                    format!(
                        "{what} (-{}) left: {r} no longer {} (before, {}{more})",
                        size(total),
                        if links {
                            "links to them"
                        } else {
                            "references them"
                        },
                        parts.join("; ")
                    )
                }
            }
            Entry::Changed(c, old) => {
                let d = e.impact();
                let same = old.len() == 1
                    && nix_heft_format::store_path::name_of(&old[0].path)
                        == nix_heft_format::store_path::name_of(&c.path);
                // Both builds by their display names (the hash tells them
                // apart), the old one said to be old.
                let head = if same {
                    format!(
                        "{} ({}{}) is a rebuild of {}",
                        name(&c.path),
                        signed(size, d),
                        drags(c, true),
                        name(&old[0].path)
                    )
                } else {
                    let was: Vec<String> = if old.is_empty() {
                        c.why.renamed.iter().map(|p| name(p)).collect()
                    } else {
                        old.iter().map(|o| name(&o.path)).collect()
                    };
                    format!(
                        "{} ({}{}) replaces {}",
                        name(&c.path),
                        signed(size, d),
                        drags(c, true),
                        was.join(", ")
                    )
                };
                let why = match (c.why.referrer.as_deref(), c.why.edge) {
                    (None, _) => "the root".to_string(),
                    (Some(r), Edge::Renamed) => format!("{} references it as before", name(r)),
                    (Some(r), _) => format!("{} now references it {}", name(r), c.held(code)),
                };
                format!("{head}: {why}")
            }
        }
    }

    /// The chain above an entry, `; chain: A → B → it`, or nothing.
    fn chain_note(e: &Entry, name: &dyn Fn(&str) -> String) -> String {
        let above = e.chain_above();
        if above.is_empty() {
            return String::new();
        }
        let shown: Vec<String> = above.iter().map(|p| name(p)).collect();
        let it = if e.paths() > 1 { "them" } else { "it" };
        format!("; chain: {} → {it}", shown.join(" → "))
    }

    /// Markdown for a pull-request comment or a job summary: [`MARKER`],
    /// the summary as a heading, the roots labelled old and new, the
    /// largest changes open with what pulls each in (the chain, the
    /// grouped holds), then in closed `<details>` the packages by size
    /// impact and the rest of the added, changed and removed paths. At
    /// most `limit` characters: the largest changes first, the other parts
    /// sharing the room left (added paths twice as much), a part that needs
    /// less leaving its share to the rest; what was cut is said, with the
    /// limit in force.
    ///
    /// [`MARKER`]: review::MARKER
    fn render_markdown_within(&self, limit: usize) -> String {
        let names = self.names();
        let name = |p: &str| review::code(names.get(p));
        let (added, changed, removed) = self.entries();
        let line = |e: &Entry| {
            review::clip(
                &format!(
                    "{}{}",
                    self.entry_line(e, &name, review::code, &iec),
                    Self::chain_note(e, &name)
                ),
                2000,
            )
        };
        // The largest changes of the three lists, open.
        let mut all: Vec<(usize, usize)> = Vec::new();
        for (k, list) in [&added, &changed, &removed].into_iter().enumerate() {
            all.extend((0..list.len()).map(|i| (k, i)));
        }
        let lists = [&added, &changed, &removed];
        all.sort_by_key(|&(k, i)| std::cmp::Reverse(lists[k][i].impact().unsigned_abs()));
        let top: Vec<(usize, usize)> = all.into_iter().take(TOP).collect();
        let top_items: Vec<String> = top
            .iter()
            .map(|&(k, i)| format!("- {}\n", line(&lists[k][i])))
            .collect();
        let rest = |k: usize| -> Vec<&Entry> {
            lists[k]
                .iter()
                .enumerate()
                .filter(|(i, _)| !top.contains(&(k, *i)))
                .map(|(_, e)| e)
                .collect()
        };
        let rows: Vec<String> = self
            .packages_by_impact()
            .iter()
            .map(|p| {
                review::clip(
                    &format!(
                        "| {} | {} | {} |\n",
                        review::md(&p.name),
                        review::md(&p.transition),
                        iec_delta(p.size_delta)
                    ),
                    600,
                )
            })
            .collect();
        // The closed parts: (head, items, what, weight).
        let mut parts: Vec<(String, Vec<String>, String, usize)> = Vec::new();
        if !rows.is_empty() {
            parts.push((
                format!(
                    "\n<details><summary>{} changed, by size impact</summary>\n\n\
                     | package | versions | size Δ |\n| --- | --- | ---: |\n",
                    plural(rows.len(), "package")
                ),
                rows,
                "changed packages".into(),
                1,
            ));
        }
        let others = !top.is_empty();
        for (k, what, weight) in [(0, "added", 2), (1, "changed", 1), (2, "removed", 1)] {
            let es = rest(k);
            if es.is_empty() {
                continue;
            }
            let n: usize = es.iter().map(|e| e.paths()).sum();
            let bytes: i128 = es.iter().map(|e| e.impact()).sum();
            let other = if others && es.len() < lists[k].len() {
                "more "
            } else {
                ""
            };
            let kind = if k == 1 {
                ", rebuilt or another version"
            } else {
                ""
            };
            parts.push((
                format!(
                    "\n<details><summary>{n} {other}path{} {what}{kind}: {}</summary>\n\n",
                    if n == 1 { "" } else { "s" },
                    iec_delta(bytes)
                ),
                es.iter().map(|e| format!("- {}\n", line(e))).collect(),
                format!("{what} paths"),
                weight,
            ));
        }
        let problems: Vec<String> = self
            .problems
            .iter()
            .map(|p| format!("- {}\n", review::clip(&review::md(&p.display()), 500)))
            .collect();
        let mut cuts: Vec<(&str, usize)> = vec![("largest changes", top_items.len())];
        cuts.extend(parts.iter().map(|p| (p.2.as_str(), p.1.len())));
        cuts.push(("problems", problems.len()));
        let head = format!(
            "{}\n### nix-heft diff: {}\n\n{}: {} → {} paths, {} changed\n",
            review::MARKER,
            self.summary(),
            self.roots_line(&name),
            self.paths_before,
            self.paths_after,
            plural(self.packages.len(), "package")
        );
        let total: usize = lists.iter().map(|l| l.len()).sum();
        let top_head = if top_items.len() == total {
            "\n**Changes**, largest first:\n\n".to_string()
        } else {
            format!("\n**Largest changes** of {total}, by size (the rest below):\n\n")
        };
        let needs: Vec<(usize, usize, usize)> = parts
            .iter()
            .map(|(head, items, _, w)| {
                let fixed = head.chars().count() + "\n</details>\n".len();
                let first = items.first().map_or(0, |i| i.chars().count());
                let all: usize = items.iter().map(|i| i.chars().count()).sum();
                (fixed + first, fixed + all, *w)
            })
            .collect();
        review::fit(limit, &cuts, SEE_ALL, |f| {
            f.force(&head);
            if !self.problems.is_empty() {
                f.push(&format!(
                    "\n⚠️ partial read: {} problem(s), listed at the end as room allows\n",
                    self.problems.len()
                ));
            }
            if !top_items.is_empty() {
                f.list(&top_head, &top_items, "", "largest changes");
            }
            // The problems get what is left: the head says the read was
            // partial.
            let shares = review::shares(f.room(), &needs);
            for ((head, items, what, _), share) in parts.iter().zip(shares) {
                f.list_within(head, items, "\n</details>\n", what, share);
            }
            if !problems.is_empty() {
                let head = format!("\n⚠️ partial read, {} problem(s):\n\n", self.problems.len());
                f.list(&head, &problems, "", "problems");
            }
        })
    }

    /// GitHub workflow commands, within what GitHub shows per step (ten
    /// notices): a notice with the summary and the largest package
    /// changes, one per largest change (paths added together as one) with
    /// what pulls it in, then one that counts the rest and says where they
    /// are; a warning for a partial read. `at` is the package's Nix file.
    fn render_github_at(&self, at: Option<&review::NixFile>) -> String {
        let names = self.names();
        let name = |p: &str| names.get(p).to_string();
        let mut lines = vec![self.summary(), self.roots_line(&name)];
        for p in self.packages_by_impact().iter().take(4) {
            lines.push(format!(
                "{} {} ({})",
                p.name,
                p.transition,
                iec_delta(p.size_delta)
            ));
        }
        if self.packages.len() > 4 {
            lines.push(format!(
                "and {} more packages changed",
                self.packages.len() - 4
            ));
        }
        let mut out = review::Annotation {
            level: "notice",
            title: "nix-heft diff".into(),
            lines,
        }
        .render(at);
        let (added, changed, removed) = self.entries();
        let mut all: Vec<&Entry> = added
            .iter()
            .chain(&changed)
            .chain(&removed)
            // Roots are in the summary already.
            .filter(
                |e| !matches!(e, Entry::Added(c) | Entry::Removed(c) if c.why.referrer.is_none()),
            )
            .collect();
        all.sort_by_key(|e| std::cmp::Reverse(e.impact().unsigned_abs()));
        for e in all.iter().take(ANNOTATED) {
            let mut lines = vec![self.entry_line(e, &name, review::plain, &iec)];
            let chain = Self::chain_note(e, &name);
            if let Some(c) = chain.strip_prefix("; ") {
                lines.push(c.to_string());
            }
            if let Entry::Group(g) = e {
                let sign = if g.new { "+" } else { "-" };
                let all: Vec<String> = g
                    .members
                    .iter()
                    .map(|c| format!("{} ({sign}{})", name(&c.path), iec(c.nar_size)))
                    .collect();
                lines.push(format!("paths: {}", all.join(", ")));
            }
            let title = match e {
                Entry::Group(g) => format!(
                    "nix-heft diff: {} {}paths {}",
                    g.members.len(),
                    g.pattern
                        .as_deref()
                        .map(|p| format!("{p} "))
                        .unwrap_or_default(),
                    if g.new { "added" } else { "removed" }
                ),
                Entry::Added(c) => format!("nix-heft diff: {} added", name(&c.path)),
                Entry::Changed(c, _) => format!("nix-heft diff: {} changed", name(&c.path)),
                Entry::Removed(c) => format!("nix-heft diff: {} removed", name(&c.path)),
            };
            out.push_str(
                &review::Annotation {
                    level: "notice",
                    title: format!("{title} ({})", iec_delta(e.impact())),
                    lines,
                }
                .render(at),
            );
        }
        if all.len() > ANNOTATED {
            let rest = &all[ANNOTATED..];
            out.push_str(
                &review::Annotation {
                    level: "notice",
                    title: "nix-heft diff: more changes".into(),
                    lines: vec![format!(
                        "{} more changes ({} paths, {}): the job summary lists them, \
                         `nix-heft diff --format text` all of them",
                        rest.len(),
                        rest.iter().map(|e| e.paths()).sum::<usize>(),
                        iec_delta(rest.iter().map(|e| e.impact()).sum())
                    )],
                }
                .render(at),
            );
        }
        if !self.problems.is_empty() {
            out.push_str(
                &review::Annotation {
                    level: "warning",
                    title: "nix-heft diff: partial read".into(),
                    lines: self.problems.iter().map(|p| p.display()).collect(),
                }
                .render(at),
            );
        }
        out
    }
}

impl Report for DiffReport {
    fn problems(&self) -> &[Problem] {
        &self.problems
    }

    fn render_text(&self, opts: &TextOptions) -> String {
        let size = |b: u64| {
            if opts.exact_bytes {
                b.to_string()
            } else {
                iec(b)
            }
        };
        let delta = self.closure_size_after as i128 - self.closure_size_before as i128;
        // BEFORE and AFTER often share names: the hash tells them apart,
        // wherever a name is shown twice.
        let names = self.names();
        let name_of = |p: &'_ str| names.get(p).to_string();
        let (n_added, n_changed, n_removed) = self.counts();
        let mut out = super::style::wrap_hanging(&self.roots_line(&name_of), opts.width, "", "  ");
        out.push_str(&super::style::wrap_hanging(
            &format!(
                "paths {} → {}, closure {} → {} ({}): {n_added} added, {n_changed} changed, \
                 {n_removed} removed",
                self.paths_before,
                self.paths_after,
                size(self.closure_size_before),
                size(self.closure_size_after),
                iec_delta(delta)
            ),
            opts.width,
            "",
            "  ",
        ));
        if self.packages.is_empty() {
            out.push_str("\nno package changed\n");
        } else {
            let mut t = Table::new(&[
                ("PACKAGE", Align::Left),
                ("VERSIONS", Align::Left),
                ("SIZE Δ", Align::Right),
            ]);
            t.keep(0).wrap(1);
            for p in &self.packages {
                t.row(vec![
                    p.name.clone(),
                    p.transition.clone(),
                    iec_delta(p.size_delta),
                ]);
            }
            out.push('\n');
            out.push_str(&t.render_fit(opts.width, opts.style));
        }
        let (added, changed, removed) = self.entries();
        let every = |out: &mut String, c: &ChangedPath, indent: &str| {
            if opts.every_line && !c.why.evidence.is_empty() {
                for l in super::evidence_lines(&c.why.evidence, &c.why.groups, opts).lines() {
                    out.push_str(&format!("{indent}{l}\n"));
                }
            }
        };
        let line = |out: &mut String, e: &Entry| {
            let text = self.entry_line(e, &name_of, review::plain, &size);
            out.push_str(&opts.style.paths(&super::style::wrap_hanging(
                &text, opts.width, "  ", "      ",
            )));
            match e {
                Entry::Added(c) | Entry::Removed(c) | Entry::Changed(c, _) => every(out, c, "    "),
                // Every path of a group with `--evidence`; the line alone
                // says it otherwise.
                Entry::Group(g) if opts.every_line => {
                    for c in &g.members {
                        out.push_str(&opts.style.paths(&format!(
                            "    {} ({}{})\n",
                            name_of(&c.path),
                            if g.new { "+" } else { "-" },
                            size(c.nar_size)
                        )));
                        every(out, c, "      ");
                    }
                }
                Entry::Group(_) => {}
            }
        };
        // Ranked by drag (diff --derivation), the order says so.
        let ranked = self
            .added
            .iter()
            .chain(&self.removed)
            .any(|c| c.drags.is_some());
        let (order, order_removed) = if ranked {
            (", by what each drags in", ", by what went with each")
        } else {
            ("", "")
        };
        for (list, n, what, ord) in [
            (&added, n_added, "added", order),
            (
                &changed,
                n_changed,
                "changed (rebuilt or another version)",
                order,
            ),
            (&removed, n_removed, "removed", order_removed),
        ] {
            if list.is_empty() {
                continue;
            }
            out.push_str(&format!("\n{n} path(s) {what}{ord}:\n"));
            for e in list {
                line(&mut out, e);
            }
        }
        if let Some(d) = &self.derivations {
            out.push_str(&d.render_text(opts));
        }
        super::refs::append_problems(&mut out, &self.problems, opts.width);
        out
    }
}

impl review::Reviewed for DiffReport {
    fn render_markdown(&self, limit: usize) -> String {
        // `--derivation`'s section after the closure's, within one limit:
        // what the closure's part leaves, or up to half of the limit (the
        // closure's part then cut to the rest, keeping its reserve).
        let Some(d) = &self.derivations else {
            return self.render_markdown_within(limit);
        };
        let closure = self.render_markdown_within(limit);
        let free = limit.saturating_sub(closure.chars().count());
        // The closure's part keeps at least this much: its headline, the
        // largest changes and the note on what was cut.
        const CLOSURE_MIN: usize = 3000;
        let room = free.max((limit / 2).min(limit.saturating_sub(CLOSURE_MIN)));
        if room < 500 {
            return closure;
        }
        let own = d.render_markdown(room);
        let n = own.chars().count();
        let mut out = if n <= free {
            closure
        } else {
            self.render_markdown_within(limit - n)
        };
        out.push_str(&own);
        out
    }
    fn render_github(&self, at: Option<&review::NixFile>) -> String {
        let mut out = self.render_github_at(at);
        if let Some(d) = &self.derivations {
            out.push_str(&d.render_github(at));
        }
        out
    }
}
