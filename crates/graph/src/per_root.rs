//! Closure sizes, and the paths added and removed between two graphs, for
//! many *groups* of roots at once: an attribute of a package set is a group
//! (its outputs' ids), and one graph holds the union of every attribute's
//! closure (issue 32).
//!
//! The closures of hundreds of attributes share most of their paths, so a
//! traversal per attribute would cost the sum of the closures. Instead the
//! groups are taken 64 at a time, group `i` of a batch a bit `i` of one
//! word per path, and the words are pushed down the references in
//! topological order, as [`super::dependents`] does for its starts: a batch
//! costs one pass over the union's paths and the edges leaving marked
//! paths. Batches are independent and run on all cores.
//!
//! Sizes are sums over one closure, a subset of the graph's paths, so they
//! are at most the graph's total NAR size, which construction checked fits
//! in a `u64` (see [`super::Graph::try_from_raw`]): exact, never wrapped.

use rayon::prelude::*;

use super::chains::depths_from_roots;
use super::closure_size::{push_down, topological_order};
use super::{Graph, NodeId};

/// Groups per batch: the bits of the word each path carries.
const BATCH: usize = 64;

/// Closure size of every group: for group `i`, the sum of the NAR sizes of
/// the paths reachable from any of `groups[i]` (the roots included), each
/// counted once however many roots reach it — what `nix path-info -S`
/// prints for a single root, extended to an attribute's several outputs.
///
/// A group may be empty (its size is 0), groups may share roots, and a
/// root may be in no group. Ids past the end of `g` name no path and are
/// ignored rather than trusted.
pub fn closure_sizes_of_groups(g: &Graph, groups: &[Vec<NodeId>]) -> Vec<u64> {
    let order = topological_order(g);
    let batches: Vec<Vec<u64>> = groups
        .par_chunks(BATCH)
        .map_init(
            || vec![0u64; g.len()],
            |bits, batch| {
                marks(g, &order, batch, bits);
                sums(g, bits, batch.len())
            },
        )
        .collect();
    batches.concat()
}

/// One group's closure on both sides of a change, and the store paths that
/// differ between them: what an attribute's row in an impact report needs
/// before any reason is looked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupDiff {
    /// Closure size of the group in the base graph (0 for a group absent
    /// there).
    pub before: u64,
    /// Closure size of the group in the head graph.
    pub after: u64,
    /// Ids in the head graph of the paths in the group's head closure whose
    /// store path is not in its base closure, ascending.
    pub added: Vec<NodeId>,
    /// Ids in the base graph of the paths in the group's base closure whose
    /// store path is not in its head closure, ascending.
    pub removed: Vec<NodeId>,
    /// Total NAR size of `added`.
    pub added_size: u64,
    /// Total NAR size of `removed`.
    pub removed_size: u64,
    /// The largest of `added` (at most [`Detail::top`]), with the head
    /// paths in the group's head closure that reference each.
    pub added_top: Vec<Picked>,
    /// The largest of `removed`, with their referrers in the base closure.
    pub removed_top: Vec<Picked>,
    /// Those of [`Detail::head_targets`] in the group's head closure.
    pub reached: Vec<NodeId>,
}

/// What [`diff_groups_with`] finds beside the sizes and the changed paths:
/// what a report needs to explain each group's largest changes, found
/// while the group's closure is marked, so that no later pass walks it
/// again.
#[derive(Debug, Clone, Default)]
pub struct Detail {
    /// How many of each group's added and removed paths to pick, largest
    /// first.
    pub top: usize,
    /// Head paths to look for in each group's head closure (the paths a
    /// `--forbid` glob names).
    pub head_targets: Vec<NodeId>,
    /// Which added and removed paths to pick, instead of the `top`
    /// largest: given the base graph and the group's removed paths, the
    /// head graph and its added paths, and `top`.
    pub choose: Option<Chooser>,
}

/// Picks the paths a group's changes are explained by (see
/// [`Detail::choose`]): `(added, removed)`, ids of the head and the base
/// graph, each from the lists given.
pub type Chooser = fn(&Graph, &[NodeId], &Graph, &[NodeId], usize) -> (Vec<NodeId>, Vec<NodeId>);

/// One changed path of a group, and how the group's closure holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Picked {
    /// The path (in its side's graph).
    pub node: NodeId,
    /// Each path of the group's closure that references it (itself
    /// excluded), nearest the roots first, then by store path; with the
    /// chain from one of the group's roots down to that referrer, the
    /// referrer last. Empty when the path is one of the group's roots.
    pub referrers: Vec<(NodeId, Vec<NodeId>)>,
}

/// For every group, its closure in `base` and in `head` and the paths
/// added and removed between them, compared by store path (the same store
/// path on both sides is the same content, whichever graph it sits in).
///
/// Group `i` is `base_groups[i]` on the base side and `head_groups[i]` on
/// the head side; when one list is shorter, its missing groups are empty,
/// which is what an attribute that exists on one side only is. The result
/// has one entry per group of the longer list. As in
/// [`closure_sizes_of_groups`], ids past the end of their graph are
/// ignored.
///
/// The cost is one pass over each graph per 64 groups, plus the size of
/// the answer: paths shared by both closures of a group are never listed.
pub fn diff_groups(
    base: &Graph,
    base_groups: &[Vec<NodeId>],
    head: &Graph,
    head_groups: &[Vec<NodeId>],
) -> Vec<GroupDiff> {
    diff_groups_with(base, base_groups, head, head_groups, &Detail::default())
}

/// [`diff_groups`], and for each group what `detail` asks: its largest
/// changes with the referrers and chains that hold them, and which target
/// paths its head closure reaches. The chains are found while each batch
/// of closures is marked, by walking up from a referrer through the
/// referrers inside the group's closure (nearest the graph's roots
/// first), so the extra cost is the length of the chains, not a closure.
pub fn diff_groups_with(
    base: &Graph,
    base_groups: &[Vec<NodeId>],
    head: &Graph,
    head_groups: &[Vec<NodeId>],
    detail: &Detail,
) -> Vec<GroupDiff> {
    let count = base_groups.len().max(head_groups.len());
    let base_order = topological_order(base);
    let head_order = topological_order(head);
    let (base_depth, head_depth) = if detail.top > 0 {
        (depths_from_roots(base), depths_from_roots(head))
    } else {
        (Vec::new(), Vec::new())
    };
    // Each side's ids of the other side's store paths, `NodeId::MAX` where
    // the path is not in the other graph at all.
    let (head_in_base, base_in_head) = {
        let base_index = base.index();
        let mut head_in_base = vec![NodeId::MAX; head.len()];
        let mut base_in_head = vec![NodeId::MAX; base.len()];
        for (h, p) in head.paths().iter().enumerate() {
            if let Some(&b) = base_index.get(p) {
                head_in_base[h] = b;
                base_in_head[b as usize] = h as NodeId;
            }
        }
        (head_in_base, base_in_head)
    };
    let batches: Vec<Vec<GroupDiff>> = (0..count.div_ceil(BATCH))
        .into_par_iter()
        .map_init(
            || (vec![0u64; base.len()], vec![0u64; head.len()]),
            |(base_bits, head_bits), c| {
                let lo = c * BATCH;
                let hi = (lo + BATCH).min(count);
                let k = hi - lo;
                marks(base, &base_order, window(base_groups, lo, hi), base_bits);
                marks(head, &head_order, window(head_groups, lo, hi), head_bits);
                let mut out: Vec<GroupDiff> = sums(base, base_bits, k)
                    .into_iter()
                    .zip(sums(head, head_bits, k))
                    .map(|(before, after)| GroupDiff {
                        before,
                        after,
                        ..GroupDiff::default()
                    })
                    .collect();
                // Ascending ids, each pushed once per group it is new in.
                for (v, &mine) in head_bits.iter().enumerate() {
                    let new = only_here(mine, head_in_base[v], base_bits);
                    for_each_bit(new, |i| out[i].added.push(v as NodeId));
                }
                for (v, &mine) in base_bits.iter().enumerate() {
                    let gone = only_here(mine, base_in_head[v], head_bits);
                    for_each_bit(gone, |i| out[i].removed.push(v as NodeId));
                }
                for (i, d) in out.iter_mut().enumerate() {
                    let bit = 1u64 << i;
                    d.added_size = d.added.iter().map(|&v| head.nar_size(v)).sum();
                    d.removed_size = d.removed.iter().map(|&v| base.nar_size(v)).sum();
                    if detail.top > 0 {
                        let hg = window(head_groups, lo, hi).get(i).map_or(&[][..], |v| v);
                        let bg = window(base_groups, lo, hi).get(i).map_or(&[][..], |v| v);
                        let (added, removed) = match detail.choose {
                            Some(choose) => choose(base, &d.removed, head, &d.added, detail.top),
                            None => (
                                largest(head, &d.added, detail.top),
                                largest(base, &d.removed, detail.top),
                            ),
                        };
                        d.added_top = pick(head, &head_depth, hg, head_bits, bit, added);
                        d.removed_top = pick(base, &base_depth, bg, base_bits, bit, removed);
                    }
                    d.reached = detail
                        .head_targets
                        .iter()
                        .copied()
                        .filter(|&t| head_bits.get(t as usize).is_some_and(|b| b & bit != 0))
                        .collect();
                }
                out
            },
        )
        .collect();
    batches.concat()
}

/// The `top` largest of `changed`, ties by store path.
fn largest(g: &Graph, changed: &[NodeId], top: usize) -> Vec<NodeId> {
    let mut largest = changed.to_vec();
    largest.sort_by(|&x, &y| {
        g.nar_size(y)
            .cmp(&g.nar_size(x))
            .then_with(|| g.path(x).cmp(g.path(y)))
    });
    largest.truncate(top);
    largest
}

/// Each of `chosen` (ids of `g`, which `bits` marks with `bit` for the
/// group) with its referrers in the group's closure and the chain down to
/// each (see [`Picked`]).
fn pick(
    g: &Graph,
    depth: &[u32],
    group: &[NodeId],
    bits: &[u64],
    bit: u64,
    chosen: Vec<NodeId>,
) -> Vec<Picked> {
    let inside = |v: NodeId| bits.get(v as usize).is_some_and(|b| b & bit != 0);
    let largest = chosen;
    let nearest = |x: &NodeId, y: &NodeId| {
        depth
            .get(*x as usize)
            .cmp(&depth.get(*y as usize))
            .then_with(|| g.path(*x).cmp(g.path(*y)))
    };
    largest
        .into_iter()
        .map(|v| {
            if group.contains(&v) {
                return Picked {
                    node: v,
                    referrers: Vec::new(),
                };
            }
            let mut refs: Vec<NodeId> = g
                .referrers(v)
                .iter()
                .copied()
                .filter(|&r| r != v && inside(r))
                .collect();
            refs.sort_by(nearest);
            refs.dedup();
            let referrers = refs
                .into_iter()
                .map(|r| {
                    // Up through referrers inside the closure until one of
                    // the group's roots: every path of the closure but its
                    // roots has such a referrer. A store graph has no cycle
                    // but self-references, which are skipped; the seen set
                    // only guards against a graph that breaks that rule.
                    let mut chain = vec![r];
                    let mut seen = std::collections::HashSet::from([r]);
                    let mut cur = r;
                    while !group.contains(&cur) {
                        let up = g
                            .referrers(cur)
                            .iter()
                            .copied()
                            .filter(|&u| u != cur && inside(u) && !seen.contains(&u))
                            .min_by(nearest);
                        match up {
                            Some(u) => {
                                seen.insert(u);
                                chain.push(u);
                                cur = u;
                            }
                            None => break,
                        }
                    }
                    chain.reverse();
                    (r, chain)
                })
                .collect();
            Picked { node: v, referrers }
        })
        .collect()
}

/// The groups `lo..hi` of a list that may end before `hi`: the groups past
/// its end are empty, so the batch is shorter and the missing bits stay 0.
fn window(groups: &[Vec<NodeId>], lo: usize, hi: usize) -> &[Vec<NodeId>] {
    &groups[lo.min(groups.len())..hi.min(groups.len())]
}

/// The groups of `mine` (a path's word on its side) whose closure on the
/// other side lacks the path: all of them when the other graph does not
/// hold the path (`other == NodeId::MAX`).
fn only_here(mine: u64, other: NodeId, other_bits: &[u64]) -> u64 {
    match other_bits.get(other as usize) {
        Some(&theirs) => mine & !theirs,
        None => mine,
    }
}

/// Sets bit `i` of `bits[v]` for every path `v` in the closure of
/// `batch[i]` (at most [`BATCH`] groups).
fn marks(g: &Graph, order: &[NodeId], batch: &[Vec<NodeId>], bits: &mut [u64]) {
    debug_assert!(batch.len() <= BATCH);
    bits.iter_mut().for_each(|b| *b = 0);
    for (i, group) in batch.iter().enumerate() {
        for &r in group {
            if let Some(b) = bits.get_mut(r as usize) {
                *b |= 1 << i;
            }
        }
    }
    push_down(g, order, bits);
}

/// Closure size of each of the `k` groups whose closures `bits` marks.
///
/// A path in every group's closure (the shared core: glibc, bash, ...) is
/// added once to a common sum rather than once per bit, so the work is per
/// path plus per bit of the paths the groups do not all share.
fn sums(g: &Graph, bits: &[u64], k: usize) -> Vec<u64> {
    let all = if k >= BATCH {
        u64::MAX
    } else {
        (1u64 << k) - 1
    };
    // Each sum is over distinct paths of one closure: at most the graph's
    // checked total, so `+` cannot overflow.
    let mut common = 0u64;
    let mut own = [0u64; BATCH];
    for (v, &b) in bits.iter().enumerate() {
        if b == 0 {
            continue;
        }
        let size = g.nar_size(v as NodeId);
        if b == all {
            common += size;
        } else {
            for_each_bit(b, |i| own[i] += size);
        }
    }
    own[..k].iter().map(|s| s + common).collect()
}

/// Calls `f` with the index of every set bit of `w`, lowest first.
fn for_each_bit(mut w: u64, mut f: impl FnMut(usize)) {
    while w != 0 {
        f(w.trailing_zeros() as usize);
        w &= w - 1;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::testgraph::{SplitMix, random_dag};
    use nix_heft_format::store_path::StorePath;
    use nix_heft_store::source::RawClosure;

    /// The naive answer: one traversal per group.
    fn naive_size(g: &Graph, group: &[NodeId]) -> u64 {
        g.size_of(&g.closure_of(group))
    }

    fn naive_paths<'g>(g: &'g Graph, group: &[NodeId]) -> HashSet<&'g StorePath> {
        let marked = g.closure_of(group);
        (0..g.len())
            .filter(|&v| marked[v])
            .map(|v| g.path(v as NodeId))
            .collect()
    }

    /// `count` groups over the graph's roots, with what the real data has:
    /// empty groups, groups sharing roots, a root named twice in a group,
    /// a non-root (an output another attribute depends on), and the last
    /// root in no group.
    fn random_groups(rng: &mut SplitMix, g: &Graph, count: usize) -> Vec<Vec<NodeId>> {
        let usable = g.roots().len() as u64 - 1;
        (0..count)
            .map(|_| match rng.below(10) {
                0 => Vec::new(),
                1 if g.len() > g.roots().len() => {
                    let non_roots = (g.len() - g.roots().len()) as u64;
                    vec![(g.roots().len() as u64 + rng.below(non_roots)) as NodeId]
                }
                2 => {
                    let r = rng.below(usable) as NodeId;
                    vec![r, r]
                }
                _ => (0..1 + rng.below(3))
                    .map(|_| rng.below(usable) as NodeId)
                    .collect(),
            })
            .collect()
    }

    #[test]
    fn group_sizes_match_one_traversal_per_group() {
        for (seed, n, roots, count) in [
            (0, 2, 2, 3),
            (1, 60, 10, 64),
            (2, 200, 20, 65),
            (3, 400, 30, 150),
            (4, 1500, 40, 300),
        ] {
            let g = random_dag(seed, n, roots);
            let mut rng = SplitMix(seed + 1000);
            let mut groups = random_groups(&mut rng, &g, count);
            // At least one empty group, whatever the draw, mid-batch.
            groups[count / 2].clear();
            let got = closure_sizes_of_groups(&g, &groups);
            assert_eq!(got.len(), groups.len());
            let last = *g.roots().last().unwrap();
            for (i, group) in groups.iter().enumerate() {
                assert_eq!(got[i], naive_size(&g, group), "seed {seed} group {i}");
                if group.is_empty() {
                    assert_eq!(got[i], 0);
                }
                assert!(!group.contains(&last), "seed {seed} group {i}");
            }
        }
    }

    #[test]
    fn no_groups_and_ids_past_the_end() {
        let g = random_dag(7, 50, 5);
        assert!(closure_sizes_of_groups(&g, &[]).is_empty());
        let past = g.len() as NodeId;
        let got = closure_sizes_of_groups(&g, &[vec![past], vec![0, past, NodeId::MAX]]);
        assert_eq!(got, [0, naive_size(&g, &[0])]);
    }

    fn sp(name: &str) -> StorePath {
        // A distinct valid hash per name: its bytes folded into base 32.
        let alphabet = b"0123456789abcdfghijklmnpqrsvwxyz";
        let mut x: u64 = name
            .bytes()
            .fold(7, |h, b| h.wrapping_mul(31) ^ u64::from(b));
        let hash: String = (0..32)
            .map(|_| {
                let c = alphabet[(x % 32) as usize] as char;
                x = (x / 32) ^ x.rotate_left(7);
                c
            })
            .collect();
        StorePath::parse("/nix/store", &format!("/nix/store/{hash}-{name}")).unwrap()
    }

    /// A graph of `(name, nar size, references by name)`, the first
    /// `roots` entries its roots.
    fn graph(entries: &[(&str, u64, &[&str])], roots: usize) -> Graph {
        let mut raw = RawClosure::default();
        for (name, size, _) in entries {
            raw.push(sp(name), *size);
        }
        for (i, (_, _, refs)) in entries.iter().enumerate() {
            raw.references[i] = refs
                .iter()
                .map(|r| entries.iter().position(|e| e.0 == *r).unwrap() as NodeId)
                .collect();
        }
        Graph::from_raw(raw, roots)
    }

    #[test]
    fn sizes_near_u64_max_are_exact() {
        let big = u64::MAX - 10;
        let g = graph(&[("a", big, &["b"]), ("c", 6, &["b"]), ("b", 4, &[])], 2);
        let (a, c) = (0, 1);
        let groups: Vec<Vec<NodeId>> = (0..70)
            .map(|i| match i % 4 {
                0 => vec![a],
                1 => vec![c],
                2 => vec![a, c],
                _ => vec![],
            })
            .collect();
        let got = closure_sizes_of_groups(&g, &groups);
        for (i, s) in got.iter().enumerate() {
            let want = [big + 4, 10, u64::MAX, 0][i % 4];
            assert_eq!(*s, want, "group {i}");
        }
        // Every group the same, so every path takes the shared-sum branch.
        let same = vec![vec![a, c]; 70];
        assert_eq!(closure_sizes_of_groups(&g, &same), vec![u64::MAX; 70]);
    }

    fn names(g: &Graph, ids: &[NodeId]) -> Vec<String> {
        ids.iter().map(|&v| g.path(v).name().to_string()).collect()
    }

    #[test]
    fn added_and_removed_by_store_path() {
        // hello is rebuilt against the same glibc; app swaps libfoo for
        // libbar; `gone` is only in base, `extra` only in head and takes
        // libfoo with it.
        let base = graph(
            &[
                ("hello-1", 10, &["glibc"]),
                ("app-1", 20, &["glibc", "libfoo"]),
                ("gone", 30, &["libfoo"]),
                ("glibc", 1000, &[]),
                ("libfoo", 200, &[]),
            ],
            3,
        );
        let head = graph(
            &[
                ("extra", 40, &["libfoo"]),
                ("hello-2", 11, &["glibc"]),
                ("app-2", 21, &["glibc", "libbar"]),
                ("libfoo", 200, &[]),
                ("libbar", 500, &[]),
                ("glibc", 1000, &[]),
            ],
            3,
        );
        // Base lists three attributes, head four: `extra`'s base side is
        // past the end of base's list, `gone`'s head side is empty.
        let base_groups = vec![vec![0], vec![1], vec![2]];
        let head_groups = vec![vec![1], vec![2], vec![], vec![0]];
        let d = diff_groups(&base, &base_groups, &head, &head_groups);
        assert_eq!(d.len(), 4);
        let row = |i: usize| {
            (
                d[i].before,
                d[i].after,
                names(&head, &d[i].added),
                names(&base, &d[i].removed),
            )
        };
        assert_eq!(
            row(0),
            (1010, 1011, vec!["hello-2".into()], vec!["hello-1".into()])
        );
        assert_eq!(
            row(1),
            (
                1220,
                1521,
                vec!["app-2".into(), "libbar".into()],
                vec!["app-1".into(), "libfoo".into()],
            )
        );
        assert_eq!(
            row(2),
            (230, 0, vec![], vec!["gone".into(), "libfoo".into()])
        );
        assert_eq!(
            row(3),
            (0, 240, vec!["extra".into(), "libfoo".into()], vec![])
        );
    }

    #[test]
    fn largest_changes_come_with_referrers_and_chains_inside_the_group() {
        // app-2 reaches libbar through mid (and directly); other's closure
        // also holds libbar, through a referrer app-2's closure lacks.
        let base = graph(&[("app-1", 10, &["glibc"]), ("glibc", 1000, &[])], 1);
        let head = graph(
            &[
                ("app-2", 21, &["glibc", "mid", "libbar"]),
                ("other", 5, &["side"]),
                ("mid", 7, &["libbar"]),
                ("side", 3, &["libbar"]),
                ("libbar", 500, &["libbar"]),
                ("glibc", 1000, &[]),
            ],
            2,
        );
        let libbar = 4;
        let detail = Detail {
            top: 2,
            head_targets: vec![3, libbar],
            choose: None,
        };
        let d = diff_groups_with(&base, &[vec![0]], &head, &[vec![0]], &detail);
        assert_eq!(d.len(), 1);
        let d = &d[0];
        assert_eq!(names(&head, &d.added), ["app-2", "mid", "libbar"]);
        assert_eq!(d.added_size, 21 + 7 + 500);
        assert_eq!(d.removed_size, 10);
        // Largest first, at most two; the root has no referrer.
        assert_eq!(
            names(
                &head,
                &d.added_top.iter().map(|p| p.node).collect::<Vec<_>>()
            ),
            ["libbar", "app-2"]
        );
        assert!(d.added_top[1].referrers.is_empty());
        // libbar's referrers inside app-2's closure only (not side, not
        // itself), the root first (nearest), each with its chain.
        let refs: Vec<(String, Vec<String>)> = d.added_top[0]
            .referrers
            .iter()
            .map(|(r, chain)| (head.path(*r).name().to_string(), names(&head, chain)))
            .collect();
        assert_eq!(
            refs,
            [
                ("app-2".to_string(), vec!["app-2".to_string()]),
                (
                    "mid".to_string(),
                    vec!["app-2".to_string(), "mid".to_string()]
                ),
            ]
        );
        assert_eq!(
            names(
                &base,
                &d.removed_top.iter().map(|p| p.node).collect::<Vec<_>>()
            ),
            ["app-1"]
        );
        // side is not in app-2's closure; libbar is.
        assert_eq!(d.reached, [libbar]);
    }

    #[test]
    fn diff_matches_naive_sets_on_random_graphs() {
        // random_dag names node i the same in every graph, so two seeds give
        // two closures over mostly the same store paths with other edges.
        for (seed, n, count) in [(10, 120, 40), (11, 300, 64), (12, 500, 130)] {
            let base = random_dag(seed, n, 20);
            let head = random_dag(seed + 100, n + seed as usize, 25);
            let mut rng = SplitMix(seed);
            let base_groups = random_groups(&mut rng, &base, count);
            let head_groups = random_groups(&mut rng, &head, count + 3);
            let d = diff_groups(&base, &base_groups, &head, &head_groups);
            assert_eq!(d.len(), count + 3);
            for (i, got) in d.iter().enumerate() {
                let bg: &[NodeId] = base_groups.get(i).map_or(&[], |v| v);
                let hg = &head_groups[i];
                let (bp, hp) = (naive_paths(&base, bg), naive_paths(&head, hg));
                assert_eq!(got.before, naive_size(&base, bg), "seed {seed} group {i}");
                assert_eq!(got.after, naive_size(&head, hg), "seed {seed} group {i}");
                let added: Vec<NodeId> = (0..head.len() as NodeId)
                    .filter(|&v| hp.contains(head.path(v)) && !bp.contains(head.path(v)))
                    .collect();
                let removed: Vec<NodeId> = (0..base.len() as NodeId)
                    .filter(|&v| bp.contains(base.path(v)) && !hp.contains(base.path(v)))
                    .collect();
                assert_eq!(got.added, added, "seed {seed} group {i}");
                assert_eq!(got.removed, removed, "seed {seed} group {i}");
            }
            assert!(
                d.iter()
                    .any(|x| !x.added.is_empty() && !x.removed.is_empty())
            );
        }
    }
}
