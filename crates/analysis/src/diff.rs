//! Comparing two closures, each in its own [`Graph`] (they may come from
//! different sources): which paths appeared and left, each package's
//! version transition grouped the way `nix store diff-closures` groups
//! them, and for every appeared or vanished path the one edge that explains
//! it. Which edges need evidence follows from that: only the referrers of
//! edges that appeared (in AFTER) or vanished (from BEFORE) are read.
//!
//! A reference that is only renamed (the same package under a new hash or
//! version: `libfoo-1.0` → `libfoo-1.1`, or a rebuild) is matched through
//! its package key, so an update is reported as one transition and not as
//! an unrelated add and remove, and its edge needs no evidence.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use nix_heft_format::store_path::split_name_like_diff_closures;
use nix_heft_graph::{Graph, NodeId, ReadRequest};
use nix_heft_scan::classify::Classified;

pub mod derivation;

/// How `nix store diff-closures` names a path's package: (package,
/// version, output), `""` for a missing version or output. Nix's reading
/// of names, not nixpkgs' output names, so both tools group alike (see
/// [`split_name_like_diff_closures`]).
fn group_of(name: &str) -> (&str, &str, &str) {
    let n = split_name_like_diff_closures(name);
    (n.name, n.version.unwrap_or(""), n.output.unwrap_or(""))
}

/// One side of a comparison: a graph and, per node, its package key (an
/// index into the comparison's shared key table) and its distance from the
/// roots.
struct Side<'g> {
    g: &'g Graph,
    key: Vec<u32>,
    depth: Vec<u32>,
}

impl<'g> Side<'g> {
    fn new(g: &'g Graph, keys: &mut HashMap<(String, String), u32>) -> Side<'g> {
        let key = g
            .paths()
            .iter()
            .map(|p| {
                let (pkg, _, out) = group_of(p.name());
                let n = keys.len() as u32;
                *keys.entry((pkg.to_string(), out.to_string())).or_insert(n)
            })
            .collect();
        let depth = nix_heft_graph::chains::depths_from_roots(g);
        Side { g, key, depth }
    }

    /// Every edge into a path whose package key is in `targets`, as a pair
    /// of package keys: the only pairs the other side will ask about.
    fn key_edges(&self, targets: &HashSet<u32>) -> HashSet<(u32, u32)> {
        let mut s = HashSet::new();
        for w in 0..self.g.len() as NodeId {
            let kw = self.key[w as usize];
            if targets.contains(&kw) {
                for &v in self.g.referrers(w) {
                    s.insert((self.key[v as usize], kw));
                }
            }
        }
        s
    }
}

/// How an edge into an appeared (or out of a vanished) path relates to the
/// other side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeChange {
    /// The edge is new (AFTER) or gone (BEFORE) between these packages:
    /// its referrer's files say why.
    Changed,
    /// The same two packages are linked on the other side too; only a hash
    /// or version changed.
    Renamed,
}

/// Why one path appeared in AFTER's closure (or left BEFORE's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathChange {
    /// The path, in its own side's graph.
    pub node: NodeId,
    /// The referrer on the same side that pulls it in (nearest the roots,
    /// preferring a package present on both sides, until
    /// [`ClosureDiff::prefer_strongest`] picks the strongest hold among
    /// `candidates`); `None` for a root.
    pub referrer: Option<NodeId>,
    /// When the edge from `referrer` is [`EdgeChange::Changed`]: every
    /// referrer whose edge is changed too, in the same order of
    /// preference, the referrer first. Their edges are read, so that a dead
    /// or build-only hold is not given as the reason when another referrer
    /// holds the path at run time.
    pub candidates: Vec<NodeId>,
    /// Whether that edge is new or gone, or only renamed.
    pub edge: EdgeChange,
    /// The paths of the same package on the other side that it replaces
    /// (or that replace it), in the other side's graph.
    pub counterparts: Vec<NodeId>,
    /// For a path that left because its referrers left too (every BEFORE
    /// referrer is of a package absent from AFTER): the chain that held it,
    /// from the nearest path whose package stayed (or a root) down to the
    /// path itself. Empty when a referrer stayed and only the edge vanished,
    /// or for an added path. Without it, "clr no longer references comgr"
    /// would be said of a clr that is gone altogether.
    pub left_with: Vec<NodeId>,
    /// What the change drags in, once [`ClosureDiff::rank_by_drag`] has
    /// run; `None` before.
    pub drags: Option<Drag>,
    /// For an added path: the chain from AFTER's root down to it, ending
    /// at it, through the referrer chosen for each changed path on the way
    /// (kept in step with `referrer` by [`diff`] and
    /// [`ClosureDiff::prefer_strongest`]); a root's chain is itself. Empty
    /// for a removed path.
    pub chain: Vec<NodeId>,
}

/// The part of one side's closure that a changed path drags in: the paths
/// reachable from it (itself included) that the other side lacks. A path
/// on both sides has the same references on both, so nothing below it is
/// new and the walk stays among the changed paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Drag {
    /// How many such paths.
    pub paths: usize,
    /// Their NAR sizes summed (in the build graph: the outputs' sizes
    /// where known).
    pub bytes: u64,
}

/// One package's change, grouped like `nix store diff-closures`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageChange {
    /// Package name (`rocblas`), without version or output name.
    pub name: String,
    /// Versions present before (`""` for none), sorted.
    pub versions_before: Vec<String>,
    /// Versions present after.
    pub versions_after: Vec<String>,
    /// Sum of its paths' NAR sizes after minus before.
    pub size_delta: i128,
    /// The versions are the same but some paths changed hash.
    pub rebuilt: bool,
}

/// The whole comparison.
#[derive(Debug, Clone)]
pub struct ClosureDiff {
    /// Paths in AFTER's closure and not in BEFORE's (AFTER ids), largest
    /// first.
    pub added: Vec<PathChange>,
    /// Paths in BEFORE's closure and not in AFTER's (BEFORE ids).
    pub removed: Vec<PathChange>,
    /// Changed packages, largest absolute size change first.
    pub packages: Vec<PackageChange>,
    /// Closure size before.
    pub closure_size_before: u64,
    /// Closure size after.
    pub closure_size_after: u64,
    /// Number of paths before.
    pub paths_before: usize,
    /// Number of paths after.
    pub paths_after: usize,
}

impl ClosureDiff {
    /// The evidence to read on each side: the edge behind every appeared
    /// path (AFTER) and every vanished one (BEFORE), where that edge is new
    /// or gone; renamed edges and roots need none.
    pub fn wants(&self) -> (ReadRequest, ReadRequest) {
        let side = |changes: &[PathChange]| {
            let mut e = ReadRequest::new();
            nix_heft_graph::request::want(
                &mut e,
                changes
                    .iter()
                    .filter(|c| c.edge == EdgeChange::Changed)
                    .flat_map(|c| c.candidates.iter().map(|&r| (r, c.node))),
            );
            e
        };
        (side(&self.removed), side(&self.added))
    }

    /// Once [`ClosureDiff::wants`] is read: each changed path's referrer
    /// becomes the candidate whose hold is strongest (runtime first, then
    /// the order of preference), as `why` ranks holds, so "comgr references
    /// rocm-llvm at run time" is said rather than a dead RUNPATH entry of
    /// the root that also points there. The added paths' chains follow the
    /// new referrers (`after_graph` is AFTER's graph).
    pub fn prefer_strongest(
        &mut self,
        after_graph: &Graph,
        before: &Classified,
        after: &Classified,
    ) {
        for (changes, c) in [(&mut self.removed, before), (&mut self.added, after)] {
            for ch in changes.iter_mut() {
                if ch.candidates.len() > 1 {
                    ch.referrer = crate::explain::strongest_referrer(c, ch.node, &ch.candidates);
                }
            }
        }
        set_chains(after_graph, &mut self.added);
    }
}

/// Sets each of `changes`' chain (one side's, in `g`): from a root down to
/// the path, ending at it, through the referrer this comparison chose for
/// each changed path, and above a path on both sides through the referrer
/// nearest the roots. What a reader wants beside a new path: how the root
/// gets to it (`llama → ggml → rocblas → tensile-gfx942`).
fn set_chains(g: &Graph, changes: &mut [PathChange]) {
    let chosen: HashMap<NodeId, Option<NodeId>> =
        changes.iter().map(|c| (c.node, c.referrer)).collect();
    let depth = nix_heft_graph::chains::depths_from_roots(g);
    let roots: HashSet<NodeId> = g.roots().iter().copied().collect();
    for c in changes.iter_mut() {
        let mut chain = vec![c.node];
        let mut seen: HashSet<NodeId> = HashSet::from([c.node]);
        let mut cur = c.node;
        while !roots.contains(&cur) {
            let up = match chosen.get(&cur) {
                Some(r) => *r,
                None => g.referrers(cur).iter().copied().min_by(|x, y| {
                    depth[*x as usize]
                        .cmp(&depth[*y as usize])
                        .then_with(|| g.path(*x).cmp(g.path(*y)))
                }),
            };
            // A closure has no cycles but self-references: a referrer seen
            // already would loop, so the chain ends.
            match up {
                Some(u) if seen.insert(u) => {
                    chain.push(u);
                    cur = u;
                }
                _ => break,
            }
        }
        chain.reverse();
        c.chain = chain;
    }
}

impl ClosureDiff {
    /// Ranks the added and removed paths by what each drags in ([`Drag`]:
    /// bytes, then paths, then by path), the order `diff --derivation`
    /// gives the changed inputs in: the change that pulls most of the
    /// build closure along comes first, as nix-diff's reader wants.
    pub fn rank_by_drag(&mut self, before: &Graph, after: &Graph) {
        for (changes, g) in [(&mut self.added, after), (&mut self.removed, before)] {
            let drags = drags(g, &added_ids(changes));
            for c in changes.iter_mut() {
                c.drags = drags.get(&c.node).copied();
            }
            changes.sort_by(|x, y| {
                let (dx, dy) = (x.drags.unwrap_or_default(), y.drags.unwrap_or_default());
                dy.bytes
                    .cmp(&dx.bytes)
                    .then_with(|| dy.paths.cmp(&dx.paths))
                    .then_with(|| g.path(x.node).cmp(g.path(y.node)))
            });
        }
    }
}

/// For each of `changed` (the paths of `g` the other side lacks): the
/// changed paths reachable from it through changed paths. One walk per
/// path over the changed part only, with a stamp array instead of a fresh
/// visited set each time: O(changed × their edges), and the changed part
/// is what a reader reads anyway.
fn drags(g: &Graph, changed: &[NodeId]) -> HashMap<NodeId, Drag> {
    let mut is_changed = vec![false; g.len()];
    for &v in changed {
        is_changed[v as usize] = true;
    }
    let mut stamp = vec![u32::MAX; g.len()];
    let mut stack = Vec::new();
    let mut out = HashMap::with_capacity(changed.len());
    for (i, &v) in changed.iter().enumerate() {
        let mark = i as u32;
        let mut d = Drag::default();
        stamp[v as usize] = mark;
        stack.push(v);
        while let Some(w) = stack.pop() {
            d.paths += 1;
            d.bytes = d.bytes.saturating_add(g.nar_size(w));
            for &r in g.references(w) {
                if is_changed[r as usize] && stamp[r as usize] != mark {
                    stamp[r as usize] = mark;
                    stack.push(r);
                }
            }
        }
        out.insert(v, d);
    }
    out
}

/// Compares the closures of `before`'s roots and `after`'s roots.
pub fn diff(before: &Graph, after: &Graph) -> ClosureDiff {
    let mut keys = HashMap::new();
    let b = Side::new(before, &mut keys);
    let a = Side::new(after, &mut keys);
    let b_index = before.index();
    let a_index = after.index();
    let added: Vec<NodeId> = (0..after.len() as NodeId)
        .filter(|v| !b_index.contains_key(after.path(*v)))
        .collect();
    let removed: Vec<NodeId> = (0..before.len() as NodeId)
        .filter(|v| !a_index.contains_key(before.path(*v)))
        .collect();
    let keys_of = |side: &Side, ids: &[NodeId]| -> HashSet<u32> {
        ids.iter().map(|&v| side.key[v as usize]).collect()
    };
    let b_edges = b.key_edges(&keys_of(&a, &added));
    let a_edges = a.key_edges(&keys_of(&b, &removed));
    let mut added = explain(&a, &b, &added, &b_edges, &removed, false);
    let mut removed = explain(&b, &a, &removed, &a_edges, &added_ids(&added), true);
    set_chains(after, &mut added);
    added.sort_by(|x, y| order(after, x, y));
    removed.sort_by(|x, y| order(before, x, y));
    ClosureDiff {
        packages: packages(before, after),
        added,
        removed,
        closure_size_before: before.total_size(),
        closure_size_after: after.total_size(),
        paths_before: before.len(),
        paths_after: after.len(),
    }
}

fn added_ids(c: &[PathChange]) -> Vec<NodeId> {
    c.iter().map(|c| c.node).collect()
}

/// Largest first, then by path.
fn order(g: &Graph, x: &PathChange, y: &PathChange) -> std::cmp::Ordering {
    g.nar_size(y.node)
        .cmp(&g.nar_size(x.node))
        .then_with(|| g.path(x.node).cmp(g.path(y.node)))
}

/// For each changed path of `this` side: its referrer and whether the edge
/// from it exists between the same packages on the `other` side.
fn explain(
    this: &Side,
    other: &Side,
    changed: &[NodeId],
    other_edges: &HashSet<(u32, u32)>,
    other_changed: &[NodeId],
    chains: bool,
) -> Vec<PathChange> {
    let other_keys: HashSet<u32> = other.key.iter().copied().collect();
    // A path "left" in the sense that matters to a reader when its package
    // is gone from the other side; a rebuilt referrer (same package, new
    // hash) stayed.
    let gone = |r: NodeId| !other_keys.contains(&this.key[r as usize]);
    let mut by_key: HashMap<u32, Vec<NodeId>> = HashMap::new();
    for &v in other_changed {
        by_key.entry(other.key[v as usize]).or_default().push(v);
    }
    let roots: HashSet<NodeId> = this.g.roots().iter().copied().collect();
    changed
        .iter()
        .map(|&v| {
            let kv = this.key[v as usize];
            let mut counterparts = by_key.get(&kv).cloned().unwrap_or_default();
            counterparts.sort_by(|x, y| other.g.path(*x).cmp(other.g.path(*y)));
            if roots.contains(&v) {
                return PathChange {
                    node: v,
                    referrer: None,
                    candidates: Vec::new(),
                    edge: EdgeChange::Changed,
                    counterparts,
                    left_with: Vec::new(),
                    drags: None,
                    chain: Vec::new(),
                };
            }
            // Prefer a referrer whose package is on both sides (the package
            // that gained or lost the reference), then the one nearest the
            // roots, then by path for a stable answer.
            let mut ordered = this.g.referrers(v).to_vec();
            ordered.sort_by(|x, y| {
                let rank = |r: NodeId| {
                    (
                        !other_keys.contains(&this.key[r as usize]),
                        this.depth[r as usize],
                    )
                };
                rank(*x)
                    .cmp(&rank(*y))
                    .then_with(|| this.g.path(*x).cmp(this.g.path(*y)))
            });
            let renamed = |r: NodeId| other_edges.contains(&(this.key[r as usize], kv));
            let referrer = ordered.first().copied();
            let edge = match referrer {
                Some(r) if renamed(r) => EdgeChange::Renamed,
                _ => EdgeChange::Changed,
            };
            let candidates = match edge {
                EdgeChange::Renamed => Vec::new(),
                EdgeChange::Changed => ordered.into_iter().filter(|&r| !renamed(r)).collect(),
            };
            let left_with = match referrer {
                Some(_) if chains && this.g.referrers(v).iter().all(|&r| gone(r)) => {
                    chain_to_stayed(this, v, &gone, &roots)
                }
                _ => Vec::new(),
            };
            PathChange {
                node: v,
                referrer,
                candidates,
                edge,
                counterparts,
                left_with,
                drags: None,
                chain: Vec::new(),
            }
        })
        .collect()
}

/// The chain that held `v`: from `v` up through its nearest referrer (by
/// distance from the roots) until a path whose package stayed or a root,
/// returned root side first and ending at `v`. Depth falls by one at each
/// step, so the walk ends.
fn chain_to_stayed(
    this: &Side,
    v: NodeId,
    gone: &dyn Fn(NodeId) -> bool,
    roots: &HashSet<NodeId>,
) -> Vec<NodeId> {
    let mut chain = vec![v];
    let mut cur = v;
    while !roots.contains(&cur) {
        let Some(up) = this.g.referrers(cur).iter().copied().min_by(|x, y| {
            this.depth[*x as usize]
                .cmp(&this.depth[*y as usize])
                .then_with(|| this.g.path(*x).cmp(this.g.path(*y)))
        }) else {
            break;
        };
        chain.push(up);
        if !gone(up) {
            break;
        }
        cur = up;
    }
    chain.reverse();
    chain
}

/// Per package: the versions and sizes on both sides, like
/// `nix store diff-closures`, keeping every package whose paths changed.
fn packages(before: &Graph, after: &Graph) -> Vec<PackageChange> {
    #[derive(Default)]
    struct Acc {
        before: BTreeMap<String, BTreeSet<String>>,
        after: BTreeMap<String, BTreeSet<String>>,
        size_before: u128,
        size_after: u128,
    }
    let mut by: BTreeMap<String, Acc> = BTreeMap::new();
    for (g, is_after) in [(before, false), (after, true)] {
        for v in 0..g.len() as NodeId {
            let p = g.path(v);
            let (pkg, version, _) = group_of(p.name());
            let acc = by.entry(pkg.to_string()).or_default();
            let (versions, size) = if is_after {
                (&mut acc.after, &mut acc.size_after)
            } else {
                (&mut acc.before, &mut acc.size_before)
            };
            versions
                .entry(version.to_string())
                .or_default()
                .insert(p.to_string());
            *size += g.nar_size(v) as u128;
        }
    }
    let mut out: Vec<PackageChange> = by
        .into_iter()
        .filter_map(|(name, acc)| {
            let paths = |m: &BTreeMap<String, BTreeSet<String>>| -> BTreeSet<String> {
                m.values().flatten().cloned().collect()
            };
            if paths(&acc.before) == paths(&acc.after) {
                return None;
            }
            let vb: Vec<String> = acc.before.keys().cloned().collect();
            let va: Vec<String> = acc.after.keys().cloned().collect();
            Some(PackageChange {
                rebuilt: vb == va,
                versions_before: vb,
                versions_after: va,
                // Both sums are at most u64::MAX (each graph checked its
                // total), so the difference fits an i128.
                size_delta: acc.size_after as i128 - acc.size_before as i128,
                name,
            })
        })
        .collect();
    out.sort_by(|x, y| {
        y.size_delta
            .unsigned_abs()
            .cmp(&x.size_delta.unsigned_abs())
            .then_with(|| x.name.cmp(&y.name))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix_heft_format::store_path::StorePath;
    use nix_heft_store::source::RawClosure;

    fn graph(nodes: &[(&str, u64, &[usize])], roots: usize) -> Graph {
        let mut raw = RawClosure::default();
        for (name, size, _) in nodes {
            raw.push(
                StorePath::parse("/nix/store", &format!("/nix/store/{name}")).unwrap(),
                *size,
            );
        }
        for (i, (_, _, refs)) in nodes.iter().enumerate() {
            raw.references[i] = refs.iter().map(|&r| r as u32).collect();
        }
        Graph::from_raw(raw, roots)
    }

    const H1: &str = "11111111111111111111111111111111";
    const H2: &str = "22222222222222222222222222222222";
    const H3: &str = "33333333333333333333333333333333";

    #[test]
    fn each_added_path_has_its_chain_from_a_root_through_the_chosen_referrers() {
        use nix_heft_graph::testgraph::random_dag;
        for (nb, na) in [(45, 60), (30, 80), (10, 40)] {
            let before = random_dag(3, nb, 2);
            let after = random_dag(4, na, 3);
            let mut d = diff(&before, &after);
            d.prefer_strongest(&after, &Classified::default(), &Classified::default());
            assert!(!d.added.is_empty());
            let chosen: HashMap<NodeId, Option<NodeId>> =
                d.added.iter().map(|c| (c.node, c.referrer)).collect();
            for c in &d.added {
                assert_eq!(c.chain.last(), Some(&c.node));
                assert!(after.roots().contains(&c.chain[0]), "{:?}", c.chain);
                for w in c.chain.windows(2) {
                    // Each step is an edge of AFTER, and a changed path's
                    // step is the referrer the comparison chose.
                    assert!(after.references(w[0]).contains(&w[1]));
                    if let Some(r) = chosen.get(&w[1]) {
                        assert_eq!(*r, Some(w[0]));
                    }
                }
            }
            assert!(d.removed.iter().all(|c| c.chain.is_empty()));
        }
    }

    #[test]
    fn changes_rank_by_what_they_drag_in() {
        // top → {a, b, shared}; a → a-dep; b alone. AFTER changes a (and
        // so its dependency) and b: a drags in 2 new paths, b one, though
        // b alone is larger than a.
        let n = |h: &str, name: &str| format!("{h}-{name}");
        let before = graph(
            &[
                (&n(H1, "top.drv"), 1, &[1, 2, 3]),
                (&n(H1, "a.drv"), 1, &[4]),
                (&n(H1, "b.drv"), 5, &[]),
                (&n(H1, "shared.drv"), 100, &[]),
                (&n(H1, "a-dep.drv"), 1, &[]),
            ],
            1,
        );
        let after = graph(
            &[
                (&n(H2, "top.drv"), 1, &[1, 2, 3]),
                (&n(H2, "a.drv"), 2, &[4]),
                (&n(H2, "b.drv"), 6, &[]),
                (&n(H1, "shared.drv"), 100, &[]),
                (&n(H2, "a-dep.drv"), 7, &[]),
            ],
            1,
        );
        let mut d = diff(&before, &after);
        d.rank_by_drag(&before, &after);
        let order: Vec<(NodeId, Drag)> =
            d.added.iter().map(|c| (c.node, c.drags.unwrap())).collect();
        let drag = |paths, bytes| Drag { paths, bytes };
        assert_eq!(
            order,
            [
                (0, drag(4, 16)),
                (1, drag(2, 9)),
                (4, drag(1, 7)),
                (2, drag(1, 6)),
            ]
        );
        // The shared input is in neither list; BEFORE's side alike.
        assert!(d.removed.iter().all(|c| c.node != 3));
        assert_eq!(d.removed[0].drags, Some(drag(4, 8)));
    }

    #[test]
    fn renamed_references_are_followed_and_new_edges_explained() {
        let app1 = format!("{H1}-app-1.0");
        let app2 = format!("{H2}-app-1.0");
        let lib1 = format!("{H1}-lib-1.0");
        let lib2 = format!("{H2}-lib-1.1");
        let old = format!("{H3}-old-1");
        let new = format!("{H3}-new-2");
        let before = graph(
            &[(&app1, 10, &[1, 2]), (&lib1, 100, &[]), (&old, 50, &[])],
            1,
        );
        let after = graph(
            &[(&app2, 10, &[1, 2]), (&lib2, 120, &[]), (&new, 70, &[])],
            1,
        );
        let d = diff(&before, &after);
        assert_eq!(d.closure_size_before, 160);
        assert_eq!(d.closure_size_after, 200);
        let lib = d.added.iter().find(|c| c.node == 1).unwrap();
        assert_eq!(lib.edge, EdgeChange::Renamed);
        assert_eq!(lib.counterparts, vec![1]);
        let newc = d.added.iter().find(|c| c.node == 2).unwrap();
        assert_eq!(newc.edge, EdgeChange::Changed);
        assert_eq!(newc.referrer, Some(0));
        let oldc = d.removed.iter().find(|c| c.node == 2).unwrap();
        assert_eq!(oldc.edge, EdgeChange::Changed);
        let (wb, wa) = d.wants();
        assert_eq!(wb, ReadRequest::from([(0, vec![2])]));
        assert_eq!(wa, ReadRequest::from([(0, vec![2])]));
        let names: Vec<&str> = d.packages.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["new", "old", "lib", "app"]);
        let app = d.packages.iter().find(|p| p.name == "app").unwrap();
        assert!(app.rebuilt && app.size_delta == 0);
        let lib = d.packages.iter().find(|p| p.name == "lib").unwrap();
        assert_eq!(
            (lib.versions_before.clone(), lib.versions_after.clone()),
            (vec!["1.0".to_string()], vec!["1.1".to_string()])
        );
        assert_eq!(lib.size_delta, 20);
    }
}
