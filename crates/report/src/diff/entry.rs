//! The review's lines, one per change in every format: a path added,
//! changed (it replaces paths of its package) or removed, or a group of
//! paths added or gone for one reason through one referrer.

use super::{ChangedPath, DiffReport, Edge, review};
use nix_heft_types::evidence::EvidenceGroup;

/// Paths added through one referrer for one reason are one line from this
/// many on.
const COLLAPSE_AT: usize = 3;

/// Paths added (or gone) through one referrer for one reason (the same
/// kinds, verdicts and directories of holds): one line in every format.
#[derive(Debug, Clone)]
pub(super) struct PathGroup<'a> {
    /// Added (AFTER's paths) or gone (BEFORE's).
    pub(super) new: bool,
    /// The paths, largest first.
    pub(super) members: Vec<&'a ChangedPath>,
    /// What their names share, as a glob (`tensile-gfx*`), when they
    /// share a telling start.
    pub(super) pattern: Option<String>,
}

/// One line of the review: a change, or paths added together.
pub(super) enum Entry<'a> {
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
    pub(super) fn impact(&self) -> i128 {
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
    pub(super) fn paths(&self) -> usize {
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
    /// The three lists as lines: added (single paths and groups), changed,
    /// removed; each by size impact, or in the lists' order when ranked by
    /// drag (`diff --derivation`).
    pub(super) fn entries(&self) -> (Vec<Entry<'_>>, Vec<Entry<'_>>, Vec<Entry<'_>>) {
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
    pub(super) fn entry_line(
        &self,
        e: &Entry,
        name: &dyn Fn(&str) -> String,
        code: fn(&str) -> String,
        size: &dyn Fn(u64) -> String,
    ) -> String {
        match e {
            Entry::Added(c) => format!(
                "{} (+{}{}) {}",
                name(&c.path),
                size(c.nar_size),
                drags_note(c, true, size),
                c.explain(true, name, code)
            ),
            Entry::Removed(c) => format!(
                "{} (-{}{}) {}",
                name(&c.path),
                size(c.nar_size),
                drags_note(c, false, size),
                c.explain(false, name, code)
            ),
            Entry::Group(g) => group_line(g, name, code, size),
            Entry::Changed(c, old) => changed_line(c, old, e.impact(), name, code, size),
        }
    }

    /// The chain above an entry, `; chain: A → B → it`, or nothing.
    pub(super) fn chain_note(e: &Entry, name: &dyn Fn(&str) -> String) -> String {
        let above = e.chain_above();
        if above.is_empty() {
            return String::new();
        }
        let shown: Vec<String> = above.iter().map(|p| name(p)).collect();
        let it = if e.paths() > 1 { "them" } else { "it" };
        format!("; chain: {} → {it}", shown.join(" → "))
    }
}

/// What a change drags in (`diff --derivation`), after its size:
/// `; drags in 3 path(s), 1.0 MiB`, or nothing.
fn drags_note(c: &ChangedPath, new: bool, size: &dyn Fn(u64) -> String) -> String {
    match c.drags {
        Some(d) if new => format!("; drags in {} path(s), {}", d.paths, size(d.bytes)),
        Some(d) => format!("; {} path(s), {} gone with it", d.paths, size(d.bytes)),
        None => String::new(),
    }
}

/// Paths added or gone together: how many (and their glob), their bytes,
/// the referrer and the holds they share.
fn group_line(
    g: &PathGroup,
    name: &dyn Fn(&str) -> String,
    code: fn(&str) -> String,
    size: &dyn Fn(u64) -> String,
) -> String {
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
        .map(|x| shared_hold(x, &each, code))
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
    let r = name(g.members[0].why.referrer.as_deref().unwrap_or_default());
    let verb = if links {
        "links to them"
    } else {
        "references them"
    };
    if g.new {
        format!(
            "{what} (+{}) are new: {r} {verb}, {}{more}",
            size(total),
            parts.join("; ")
        )
    } else {
        format!(
            "{what} (-{}) left: {r} no longer {verb} (before, {}{more})",
            size(total),
            parts.join("; ")
        )
    }
}

/// One group of holds `x` (kind, verdict, directory) as the members of a
/// group share it, with the range of their counts: `12 symlink holds
/// each in lib/, runtime`, `2–4 …`.
fn shared_hold(x: &EvidenceGroup, each: &[Vec<EvidenceGroup>], code: fn(&str) -> String) -> String {
    let holds: Vec<usize> = each
        .iter()
        .filter_map(|gs| {
            gs.iter()
                .find(|y| y.kind == x.kind && y.verdict == x.verdict && y.dir == x.dir)
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
}

/// A path that replaces paths of its package (`d` the bytes it changes):
/// a rebuild of one build, or what it replaces, then who references it.
fn changed_line(
    c: &ChangedPath,
    old: &[&ChangedPath],
    d: i128,
    name: &dyn Fn(&str) -> String,
    code: fn(&str) -> String,
    size: &dyn Fn(u64) -> String,
) -> String {
    let same = old.len() == 1
        && nix_heft_format::store_path::name_of(&old[0].path)
            == nix_heft_format::store_path::name_of(&c.path);
    // Both builds by their display names (the hash tells them apart), the
    // old one said to be old.
    let head = if same {
        format!(
            "{} ({}{}) is a rebuild of {}",
            name(&c.path),
            signed(size, d),
            drags_note(c, true, size),
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
            drags_note(c, true, size),
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
