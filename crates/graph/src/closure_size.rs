//! Closure size of every path: the sum of NAR sizes of everything it
//! references, directly or not, itself included — what `nix path-info -S`
//! prints.
//!
//! Closure sizes do not compose (children share descendants), so each path
//! needs its own traversal; the work is in making those cheap. Two things do
//! it:
//!
//! * **Hubs.** Store graphs have a core that nearly every closure contains
//!   (glibc, gcc's runtime, bash, zlib ...). A set `H` of up to [`MAX_HUBS`]
//!   popular paths, closed downwards (every reference of a hub is a hub), gets
//!   a precomputed bitset of its closure within `H`. A traversal from any path
//!   then walks only non-hub paths and ORs in the bitset of each hub it meets;
//!   because `H` is closed downwards, nothing outside `H` is ever missed.
//! * **Cheap visited sets.** One visited array per thread, reset in O(1) by
//!   bumping an epoch number instead of clearing; rayon spreads the paths
//!   over all cores.
//!
//! Memory: the hub bitsets take `|H|²/8` bytes (at most 512 KiB), plus one
//! visited array and one `|H|`-bit accumulator per thread.

use rayon::prelude::*;

use super::{Graph, NodeId};

/// Largest hub set; `MAX_HUBS` bits per hub bitset.
pub const MAX_HUBS: usize = 2048;
const WORDS: usize = MAX_HUBS / 64;

/// For every path, how many of `starts` hold it in their closure (a start
/// holds itself): the survey's `dependents`. Starts are taken 64 at a
/// time, each a bit of one word per path, and the words pushed down the
/// references in topological order, so the work is `|starts| / 64` passes
/// over the edges instead of one traversal per start.
pub fn dependents(g: &Graph, starts: &[NodeId]) -> Vec<u64> {
    let n = g.len();
    let order = topological_order(g);
    let mut starts = starts.to_vec();
    starts.sort_unstable();
    starts.dedup();
    let mut counts = vec![0u64; n];
    let mut bits = vec![0u64; n];
    for chunk in starts.chunks(64) {
        bits.iter_mut().for_each(|b| *b = 0);
        for (i, &s) in chunk.iter().enumerate() {
            bits[s as usize] |= 1 << i;
        }
        push_down(g, &order, &mut bits);
        for (c, b) in counts.iter_mut().zip(&bits) {
            *c += u64::from(b.count_ones());
        }
    }
    counts
}

/// Every path, referrers before their references (Kahn's order over
/// in-degrees): the order in which bits set on some paths reach all of
/// their closure in one pass ([`push_down`]). Store graphs are acyclic
/// apart from self references, which the graph keeps as flags.
pub(super) fn topological_order(g: &Graph) -> Vec<NodeId> {
    let n = g.len();
    let mut indeg: Vec<u32> = (0..n as NodeId)
        .map(|v| g.referrers(v).len() as u32)
        .collect();
    let mut order: Vec<NodeId> = (0..n as NodeId)
        .filter(|&v| indeg[v as usize] == 0)
        .collect();
    let mut next = 0;
    while next < order.len() {
        let v = order[next];
        next += 1;
        for &w in g.references(v) {
            indeg[w as usize] -= 1;
            if indeg[w as usize] == 0 {
                order.push(w);
            }
        }
    }
    order
}

/// ORs each path's word into its references', in `order` (from
/// [`topological_order`]): afterwards bit `i` is set on exactly the closure
/// of the paths that had bit `i` set, for 64 sets at once. Paths with no
/// bit set cost one load, so a pass is linear in the paths plus the edges
/// leaving marked paths.
pub(super) fn push_down(g: &Graph, order: &[NodeId], bits: &mut [u64]) {
    for &v in order {
        let b = bits[v as usize];
        if b != 0 {
            for &w in g.references(v) {
                bits[w as usize] |= b;
            }
        }
    }
}

/// Closure size of every path in `g`, indexed by id.
pub fn closure_sizes(g: &Graph) -> Vec<u64> {
    match all_closures(g) {
        Some(all) => all.into_iter().map(|(_, b)| b).collect(),
        None => {
            let all: Vec<NodeId> = (0..g.len() as NodeId).collect();
            walk_closures(g, &all).into_iter().map(|(_, b)| b).collect()
        }
    }
}

/// The closure of each of `nodes`: how many paths it holds and their
/// summed NAR size (what `nix path-info -S` prints), in the order given.
/// Many paths of a graph are answered from every path's closure at once
/// ([`all_closures`]); a few of a large graph by a walk from each.
pub fn closures_of(g: &Graph, nodes: &[NodeId]) -> Vec<(u64, u64)> {
    // Below about one path in 16 the walks touch less than the whole
    // graph's pass; measured on bench/gen_store.py's stores.
    if nodes.len() * 16 >= g.len()
        && let Some(all) = all_closures(g)
    {
        return nodes.iter().map(|&v| all[v as usize]).collect();
    }
    walk_closures(g, nodes)
}

/// Words of the bits of one group of paths in [`all_closures`]: 256 paths
/// a group. Wider groups share more of their ancestors (on
/// bench/gen_store.py's 500,000 paths, 256 touch 0.53 times as many paths
/// and edges as 64 do, 512 0.39 times) but cost more a path touched.
const WIDE: usize = 4;
const GROUP: usize = WIDE * 64;

/// Every path's closure (paths, summed NAR size), indexed by id; `None`
/// when the graph has a cycle (a hand-edited path-info file), which only
/// the walks handle.
///
/// Closures do not compose, so the sizes are sums over sets: bit `i` of a
/// set of bits on a path says that the `i`th of [`GROUP`] chosen paths is in its closure.
/// The bits start on those paths themselves and are pushed up to their
/// referrers in order of height (a path is higher than everything it
/// refers to), touching only their ancestors; each path then adds
/// the NAR sizes of its bits (a table look-up a byte). The work
/// is the ancestors of each group, so the groups are paths
/// that share ancestors: neighbours in a depth-first order of the
/// references. Groups are spread over all cores, each with its own words
/// and sums, added up at the end.
fn all_closures(g: &Graph) -> Option<Vec<(u64, u64)>> {
    let n = g.len();
    let order = topological_order(g);
    if order.len() != n {
        return None;
    }
    // Height: 0 for a path with no references, else one above the highest
    // reference; referrers are strictly higher than their references.
    let mut height = vec![0u32; n];
    for &v in order.iter().rev() {
        height[v as usize] = g
            .references(v)
            .iter()
            .map(|&w| height[w as usize] + 1)
            .max()
            .unwrap_or(0);
    }
    let levels = height.iter().copied().max().map_or(0, |h| h as usize + 1);
    let groups = grouping_order(g, &order);
    // Renumbered in that order, so that the words a group touches lie
    // near each other in memory: `pos[v]` is `v`'s new number; referrers
    // in compressed rows of new numbers; NAR sizes and heights by new
    // number.
    let mut pos = vec![0 as NodeId; n];
    for (i, &v) in groups.iter().enumerate() {
        pos[v as usize] = i as NodeId;
    }
    let mut up_offsets = Vec::with_capacity(n + 1);
    let mut up: Vec<NodeId> = Vec::with_capacity(g.edge_count());
    up_offsets.push(0usize);
    for &v in &groups {
        up.extend(g.referrers(v).iter().map(|&p| pos[p as usize]));
        up_offsets.push(up.len());
    }
    let nar: Vec<u64> = groups.iter().map(|&v| g.nar_size(v)).collect();
    let level: Vec<u32> = groups.iter().map(|&v| height[v as usize]).collect();
    let threads = rayon::current_num_threads().max(1);
    let group_count = n.div_ceil(GROUP);
    let parts: Vec<(Vec<u64>, Vec<u64>)> = (0..threads)
        .into_par_iter()
        .map(|t| {
            let mut count = vec![0u64; n];
            let mut sum = vec![0u64; n];
            let mut word = vec![[0u64; WIDE]; n];
            let mut bucket: Vec<Vec<NodeId>> = vec![Vec::new(); levels];
            let mut touched: Vec<NodeId> = Vec::new();
            // table[k][b]: the NAR sizes of the bits of byte value `b` in
            // byte `k` of the group's bits.
            let mut table = vec![[0u64; 256]; GROUP / 8];
            for c in (t..group_count).step_by(threads) {
                let group = c * GROUP..((c + 1) * GROUP).min(n);
                for (k, t) in table.iter_mut().enumerate() {
                    for b in 1..256usize {
                        let i = group.start + k * 8 + b.trailing_zeros() as usize;
                        let own = if i < group.end { nar[i] } else { 0 };
                        t[b] = t[b & (b - 1)] + own;
                    }
                }
                let mut lowest = levels;
                // Paths queued and not yet taken: the pass ends with the
                // last, not at the graph's top level (a deep graph has
                // many levels above a group's ancestors).
                let mut queued = 0usize;
                for (i, v) in group.clone().enumerate() {
                    word[v][i / 64] = 1 << (i % 64);
                    let h = level[v] as usize;
                    bucket[h].push(v as NodeId);
                    queued += 1;
                    lowest = lowest.min(h);
                }
                for h in lowest..levels {
                    if queued == 0 {
                        break;
                    }
                    let mut at = std::mem::take(&mut bucket[h]);
                    queued -= at.len();
                    for &u in &at {
                        let u = u as usize;
                        let w = word[u];
                        touched.push(u as NodeId);
                        let mut bytes = 0u64;
                        let mut c = 0u64;
                        for (x, tables) in w.iter().zip(table.chunks_exact(8)) {
                            c += u64::from(x.count_ones());
                            if *x != 0 {
                                for (&b, t) in x.to_le_bytes().iter().zip(tables) {
                                    bytes += t[b as usize];
                                }
                            }
                        }
                        count[u] += c;
                        sum[u] += bytes;
                        for &p in &up[up_offsets[u]..up_offsets[u + 1]] {
                            let pw = &mut word[p as usize];
                            if *pw == [0; WIDE] {
                                bucket[level[p as usize] as usize].push(p);
                                queued += 1;
                            }
                            for (a, b) in pw.iter_mut().zip(&w) {
                                *a |= b;
                            }
                        }
                    }
                    at.clear();
                    bucket[h] = at;
                }
                for &u in &touched {
                    word[u as usize] = [0; WIDE];
                }
                touched.clear();
            }
            (count, sum)
        })
        .collect();
    let mut out = vec![(0u64, 0u64); n];
    for (count, sum) in parts {
        for (i, &v) in groups.iter().enumerate() {
            let o = &mut out[v as usize];
            o.0 += count[i];
            o.1 += sum[i];
        }
    }
    Some(out)
}

/// Every path once, in an order where neighbours share ancestors: a
/// depth-first preorder down the references from the paths nothing refers
/// to (`order` begins with them), so that a package's own dependencies
/// come together.
fn grouping_order(g: &Graph, order: &[NodeId]) -> Vec<NodeId> {
    let n = g.len();
    let mut seen = vec![false; n];
    let mut out = Vec::with_capacity(n);
    let mut stack: Vec<NodeId> = Vec::new();
    for &s in order {
        if seen[s as usize] {
            continue;
        }
        seen[s as usize] = true;
        stack.push(s);
        while let Some(u) = stack.pop() {
            out.push(u);
            for &w in g.references(u).iter().rev() {
                if !seen[w as usize] {
                    seen[w as usize] = true;
                    stack.push(w);
                }
            }
        }
    }
    out
}

/// [`closures_of`] by a walk from each path, which the hubs shorten.
fn walk_closures(g: &Graph, nodes: &[NodeId]) -> Vec<(u64, u64)> {
    let n = g.len();
    let hubs = Hubs::choose(g);
    let k = hubs.members.len();
    let words = k.div_ceil(64).max(1);
    nodes
        .par_iter()
        .with_min_len(256)
        .map_init(
            || (vec![0u32; n], 0u32, Vec::<NodeId>::new(), vec![0u64; words]),
            |(stamp, epoch, stack, acc), &v| {
                if let Some(h) = hubs.slot(v) {
                    return (hubs.closure_count[h], hubs.closure_size[h]);
                }
                *epoch += 1;
                let e = *epoch;
                acc.iter_mut().for_each(|w| *w = 0);
                stamp[v as usize] = e;
                stack.push(v);
                // Each path is added once (stamped), hubs only through the
                // disjoint bitset, so `sum` stays below the graph's total NAR
                // size, which construction checked fits in a u64.
                let mut sum = 0u64;
                let mut count = 0u64;
                while let Some(u) = stack.pop() {
                    sum += g.nar_size(u);
                    count += 1;
                    for &w in g.references(u) {
                        if stamp[w as usize] != e {
                            stamp[w as usize] = e;
                            match hubs.slot(w) {
                                Some(h) => {
                                    for (a, b) in acc.iter_mut().zip(hubs.bits(h)) {
                                        *a |= b;
                                    }
                                }
                                None => stack.push(w),
                            }
                        }
                    }
                }
                let hub_count: u64 = acc.iter().map(|w| u64::from(w.count_ones())).sum();
                (count + hub_count, sum + hubs.sum_bits(acc))
            },
        )
        .collect()
}

/// A downward-closed set of popular paths with their closures as bitsets.
struct Hubs {
    /// Hub slot of each node, `u32::MAX` for none.
    slot_of: Vec<u32>,
    /// Node of each slot.
    members: Vec<NodeId>,
    /// `WORDS`-word bitset per slot (only the first `words` used).
    bits: Vec<u64>,
    words: usize,
    /// Closure size of each hub.
    closure_size: Vec<u64>,
    /// Paths in the closure of each hub.
    closure_count: Vec<u64>,
    nar: Vec<u64>,
}

impl Hubs {
    fn choose(g: &Graph) -> Hubs {
        let n = g.len();
        let mut slot_of = vec![u32::MAX; n];
        let mut members: Vec<NodeId> = Vec::new();
        // Most-referenced first: their closures are the ones that recur.
        let mut by_indegree: Vec<NodeId> = (0..n as NodeId)
            .filter(|&v| g.referrers(v).len() > 1)
            .collect();
        by_indegree.sort_by_key(|&v| std::cmp::Reverse(g.referrers(v).len()));
        let mut pending: Vec<NodeId> = Vec::new();
        let mut stack: Vec<NodeId> = Vec::new();
        for &cand in by_indegree.iter().take(4 * MAX_HUBS) {
            if slot_of[cand as usize] != u32::MAX {
                continue;
            }
            // The candidate with every descendant not yet a hub, if they fit.
            pending.clear();
            stack.clear();
            stack.push(cand);
            let mut seen_local = std::collections::HashSet::new();
            seen_local.insert(cand);
            let mut fits = true;
            while let Some(u) = stack.pop() {
                pending.push(u);
                if members.len() + pending.len() > MAX_HUBS {
                    fits = false;
                    break;
                }
                for &w in g.references(u) {
                    if slot_of[w as usize] == u32::MAX && seen_local.insert(w) {
                        stack.push(w);
                    }
                }
            }
            if fits {
                for &u in &pending {
                    slot_of[u as usize] = members.len() as u32;
                    members.push(u);
                }
            }
        }
        let k = members.len();
        let words = k.div_ceil(64).max(1);
        let mut bits = vec![0u64; k * words];
        // Fill children before parents: a depth-first postorder over hubs.
        let mut done = vec![false; k];
        let mut order: Vec<usize> = Vec::with_capacity(k);
        let mut st: Vec<(usize, bool)> = Vec::new();
        for s in 0..k {
            st.push((s, false));
            while let Some((h, expanded)) = st.pop() {
                if expanded {
                    order.push(h);
                    continue;
                }
                if done[h] {
                    continue;
                }
                done[h] = true;
                st.push((h, true));
                for &w in g.references(members[h]) {
                    let c = slot_of[w as usize] as usize;
                    if !done[c] {
                        st.push((c, false));
                    }
                }
            }
        }
        for &h in &order {
            bits[h * words + h / 64] |= 1 << (h % 64);
            for &w in g.references(members[h]) {
                let c = slot_of[w as usize] as usize;
                for i in 0..words {
                    let x = bits[c * words + i];
                    bits[h * words + i] |= x;
                }
            }
        }
        let nar: Vec<u64> = members.iter().map(|&v| g.nar_size(v)).collect();
        let mut hubs = Hubs {
            slot_of,
            members,
            bits,
            words,
            closure_size: Vec::new(),
            closure_count: Vec::new(),
            nar,
        };
        hubs.closure_size = (0..k).map(|h| hubs.sum_bits(hubs.bits(h))).collect();
        hubs.closure_count = (0..k)
            .map(|h| hubs.bits(h).iter().map(|w| u64::from(w.count_ones())).sum())
            .collect();
        hubs
    }

    fn slot(&self, v: NodeId) -> Option<usize> {
        let s = self.slot_of[v as usize];
        (s != u32::MAX).then_some(s as usize)
    }

    fn bits(&self, h: usize) -> &[u64] {
        &self.bits[h * self.words..(h + 1) * self.words]
    }

    /// Sum of the hubs' NAR sizes in `set`; a subset of the graph, so it
    /// cannot overflow (see [`super::Graph::try_from_raw`]).
    fn sum_bits(&self, set: &[u64]) -> u64 {
        let mut sum = 0;
        for (i, &w) in set.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                let b = w.trailing_zeros() as usize;
                sum += self.nar[i * 64 + b];
                w &= w - 1;
            }
        }
        sum
    }
}

const _: () = assert!(WORDS * 64 == MAX_HUBS);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testgraph::random_dag;

    #[test]
    fn dependents_count_the_closures_holding_each_path() {
        for seed in 0..20 {
            // More than 64 starts, so several words are used.
            let g = random_dag(seed, 150, 2);
            let starts: Vec<NodeId> = (0..g.len() as NodeId).filter(|v| v % 2 == 0).collect();
            let closures: Vec<Vec<bool>> = starts.iter().map(|&s| g.closure_of(&[s])).collect();
            let got = dependents(&g, &starts);
            for v in 0..g.len() {
                let want = closures.iter().filter(|c| c[v]).count() as u64;
                assert_eq!(got[v], want, "seed {seed} node {v}");
            }
        }
    }

    #[test]
    fn the_pass_over_all_paths_equals_the_walks() {
        for (seed, n, roots) in [
            (7, 1, 1),
            (8, 255, 2),
            (9, 257, 3),
            (10, 700, 4),
            (11, 4000, 3),
        ] {
            let g = random_dag(seed, n, roots);
            let all: Vec<NodeId> = (0..g.len() as NodeId).collect();
            assert_eq!(
                all_closures(&g).unwrap(),
                walk_closures(&g, &all),
                "seed {seed}"
            );
        }
    }

    /// A chain deeper than a group, and a wide fan: heights far above a
    /// group's ancestors end the pass early without missing any.
    #[test]
    fn deep_and_wide_graphs_agree_with_the_walks() {
        use crate::RawClosure;
        use nix_heft_format::store_path::StorePath;
        let path = |i: usize| {
            StorePath::parse("/nix/store", &format!("/nix/store/{i:0>32}-p{i}")).unwrap()
        };
        for (n, fan) in [(1000usize, false), (700, true)] {
            let mut raw = RawClosure::default();
            for i in 0..n {
                raw.push(path(i), 8 * (i as u64 + 1));
            }
            for i in 0..n - 1 {
                if fan {
                    raw.references[0].push(i as u32 + 1);
                } else {
                    raw.references[i].push(i as u32 + 1);
                }
            }
            let g = Graph::from_raw(raw, 1);
            let all: Vec<NodeId> = (0..g.len() as NodeId).collect();
            assert_eq!(all_closures(&g).unwrap(), walk_closures(&g, &all), "{n}");
        }
    }

    #[test]
    fn matches_naive_closure() {
        // Sizes from 50 to 5000 nodes, so that some graphs have fewer nodes
        // than MAX_HUBS and some more (the hub set is then partial).
        for (seed, n) in [(0, 50), (1, 200), (2, 200), (3, 1000), (4, 3000), (5, 5000)] {
            let g = random_dag(seed, n, 3);
            let sizes = closure_sizes(&g);
            let all: Vec<NodeId> = (0..g.len() as NodeId).rev().collect();
            let closures = closures_of(&g, &all);
            for (k, &v) in all.iter().enumerate() {
                let set = g.closure_of(&[v]);
                let naive = g.size_of(&set);
                assert_eq!(sizes[v as usize], naive, "seed {seed} node {v}");
                let count = set.iter().filter(|&&b| b).count() as u64;
                assert_eq!(closures[k], (count, naive), "seed {seed} node {v}");
            }
        }
    }
}
