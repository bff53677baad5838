//! The reference graph of a closure: dense `u32` ids, compressed adjacency
//! in both directions, and the per-path sizes computed over it.
//!
//! Self references are kept as a flag, not an edge: Nix registers them (a
//! path that mentions its own hash), but they change no closure and would
//! only make every traversal check for them.

#![warn(missing_docs)]

pub mod bounds;
pub mod chains;
mod closure_size;
mod dominators;
pub mod error;
mod per_root;
pub mod request;
mod sizes;

use std::collections::{HashMap, HashSet};

pub use closure_size::{closure_sizes, closures_of, dependents};
pub use dominators::{Dominators, Flow, added_sizes};
pub use per_root::{
    Chooser, Detail, GroupDiff, Picked, closure_sizes_of_groups, diff_groups, diff_groups_with,
};
pub use request::ReadRequest;
pub use sizes::Sizes;

pub use error::{Error, Result};
use nix_heft_format::store_path::StorePath;
use nix_heft_store::source::{PathMetadata, RawClosure};

/// Dense id of a path in a [`Graph`].
pub type NodeId = u32;

/// A closed set of store paths and the references between them.
#[derive(Debug, Clone)]
pub struct Graph {
    paths: Vec<StorePath>,
    nar_sizes: Vec<u64>,
    ref_offsets: Vec<u32>,
    refs: Vec<NodeId>,
    rev_offsets: Vec<u32>,
    rev: Vec<NodeId>,
    self_ref: Vec<bool>,
    roots: Vec<NodeId>,
}

/// The reverse of a graph in compressed adjacency (`targets[offsets[v] ..
/// offsets[v + 1]]` are `v`'s edges): for each node, the nodes with an edge
/// to it, ascending, as offsets and targets again. The graph's referrers
/// and the collector's predecessors are both made by it.
pub fn transpose(offsets: &[u32], targets: &[NodeId]) -> (Vec<u32>, Vec<NodeId>) {
    let n = offsets.len().saturating_sub(1);
    let mut rev_offsets = vec![0u32; n + 1];
    for &w in targets {
        rev_offsets[w as usize + 1] += 1;
    }
    for i in 0..n {
        rev_offsets[i + 1] += rev_offsets[i];
    }
    let mut fill = rev_offsets[..n].to_vec();
    let mut rev = vec![0; targets.len()];
    for v in 0..n {
        for &w in &targets[offsets[v] as usize..offsets[v + 1] as usize] {
            rev[fill[w as usize] as usize] = v as NodeId;
            fill[w as usize] += 1;
        }
    }
    (rev_offsets, rev)
}

impl Graph {
    /// Reads the closure of `roots` from `src`.
    ///
    /// A root given more than once counts once, at its first position: the
    /// sources list each path of a closure once, so [`Graph::roots`] would
    /// otherwise name paths that are not roots, or ids past the end.
    ///
    /// Fails with [`Error::ClosureTooLarge`] when the NAR sizes add up to
    /// more than a `u64` holds (see [`Graph::try_from_raw`]).
    pub fn load(src: &dyn PathMetadata, roots: &[StorePath]) -> Result<Graph> {
        let mut seen: HashSet<&StorePath> = HashSet::with_capacity(roots.len());
        let roots: Vec<StorePath> = roots.iter().filter(|r| seen.insert(*r)).cloned().collect();
        let raw = src.closure(&roots)?;
        debug_assert!(
            raw.paths.len() >= roots.len() && raw.paths[..roots.len()] == roots[..],
            "{} put the roots first",
            src.describe()
        );
        Graph::try_from_raw(raw.canonical(roots.len()), roots.len())
    }

    /// Builds the graph from a closure whose first `root_count` paths are the
    /// roots, after checking that the sum of all NAR sizes fits in a `u64`.
    ///
    /// That one check makes every size the graph module computes exact: a
    /// closure size, an added size or [`Graph::size_of`] is a sum over a
    /// subset of the paths, so it is at most the checked total and cannot
    /// wrap. Precondition: every reference index is in range.
    pub fn try_from_raw(raw: RawClosure, root_count: usize) -> Result<Graph> {
        let total: u128 = raw.nar_sizes.iter().map(|&s| s as u128).sum();
        if total > u64::MAX as u128 {
            let (largest, &largest_size) = raw
                .nar_sizes
                .iter()
                .enumerate()
                .max_by_key(|&(_, s)| *s)
                .expect("a non-zero total has a path");
            let mut roots: Vec<String> = raw.paths[..root_count.min(raw.paths.len())]
                .iter()
                .take(3)
                .map(|p| p.to_string())
                .collect();
            if root_count > 3 {
                roots.push(format!("and {} more roots", root_count - 3));
            }
            return Err(Error::ClosureTooLarge {
                roots: roots.join(", "),
                total,
                largest_path: raw.paths[largest].to_string(),
                largest_size,
            });
        }
        Ok(Graph::from_raw(raw, root_count))
    }

    /// Builds the graph from a closure whose first `root_count` paths are the
    /// roots. Preconditions: every reference index is in range, and the NAR
    /// sizes add up to at most `u64::MAX` (sizes are then exact; use
    /// [`Graph::try_from_raw`] for data that has not been checked).
    ///
    /// # Panics
    ///
    /// When the NAR sizes add up to more than `u64::MAX`, rather than let
    /// every size computed from the graph wrap silently.
    pub fn from_raw(raw: RawClosure, root_count: usize) -> Graph {
        assert!(
            raw.nar_sizes
                .iter()
                .try_fold(0u64, |a, &s| a.checked_add(s))
                .is_some(),
            "NAR sizes add up to more than u64::MAX; use Graph::try_from_raw"
        );
        let n = raw.paths.len();
        let mut ref_offsets = Vec::with_capacity(n + 1);
        let mut refs = Vec::new();
        let mut self_ref = vec![false; n];
        ref_offsets.push(0);
        for (i, rs) in raw.references.iter().enumerate() {
            let start = refs.len();
            for &r in rs {
                if r as usize == i {
                    self_ref[i] = true;
                } else {
                    refs.push(r);
                }
            }
            // Sources may list a reference twice (a JSON file edited by
            // hand); an edge is an edge once.
            refs[start..].sort_unstable();
            let mut w = start;
            for k in start..refs.len() {
                if k == start || refs[k] != refs[w - 1] {
                    refs[w] = refs[k];
                    w += 1;
                }
            }
            refs.truncate(w);
            ref_offsets.push(refs.len() as u32);
        }
        let (rev_offsets, rev) = transpose(&ref_offsets, &refs);
        Graph {
            paths: raw.paths,
            nar_sizes: raw.nar_sizes,
            ref_offsets,
            refs,
            rev_offsets,
            rev,
            self_ref,
            roots: (0..root_count as NodeId).collect(),
        }
    }

    /// A graph over every path of a store read at once (the collector's
    /// view, `nix_heft_ops::gc`): references given as compressed adjacency
    /// (`refs[ref_offsets[i]..ref_offsets[i + 1]]`, ascending, each once,
    /// self references left out, so none is flagged), and `roots` among
    /// the paths (none: every path is a candidate). Fails, as
    /// [`Graph::try_from_raw`] does, when the NAR sizes add up to more
    /// than a `u64` holds.
    pub fn from_adjacency(
        paths: Vec<StorePath>,
        nar_sizes: Vec<u64>,
        ref_offsets: Vec<u32>,
        refs: Vec<NodeId>,
        roots: Vec<NodeId>,
    ) -> Result<Graph> {
        let total: u128 = nar_sizes.iter().map(|&s| s as u128).sum();
        if total > u64::MAX as u128 {
            let (largest, &largest_size) = nar_sizes
                .iter()
                .enumerate()
                .max_by_key(|&(_, s)| *s)
                .expect("a non-zero total has a path");
            return Err(Error::ClosureTooLarge {
                roots: "every path of the store".into(),
                total,
                largest_path: paths[largest].to_string(),
                largest_size,
            });
        }
        let n = paths.len();
        let (rev_offsets, rev) = transpose(&ref_offsets, &refs);
        Ok(Graph {
            paths,
            nar_sizes,
            ref_offsets,
            refs,
            rev_offsets,
            rev,
            self_ref: vec![false; n],
            roots,
        })
    }

    /// Number of paths.
    pub fn len(&self) -> usize {
        self.paths.len()
    }
    /// True when the graph holds no path.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
    /// Number of edges (self references not counted).
    pub fn edge_count(&self) -> usize {
        self.refs.len()
    }
    /// The roots the graph was loaded for.
    pub fn roots(&self) -> &[NodeId] {
        &self.roots
    }
    /// The store path of `v`.
    pub fn path(&self, v: NodeId) -> &StorePath {
        &self.paths[v as usize]
    }
    /// All paths, indexed by id.
    pub fn paths(&self) -> &[StorePath] {
        &self.paths
    }
    /// NAR size of `v`.
    pub fn nar_size(&self, v: NodeId) -> u64 {
        self.nar_sizes[v as usize]
    }
    /// Paths `v` references (without itself), sorted by id.
    pub fn references(&self, v: NodeId) -> &[NodeId] {
        &self.refs[self.ref_offsets[v as usize] as usize..self.ref_offsets[v as usize + 1] as usize]
    }
    /// Paths that reference `v` (without itself).
    pub fn referrers(&self, v: NodeId) -> &[NodeId] {
        &self.rev[self.rev_offsets[v as usize] as usize..self.rev_offsets[v as usize + 1] as usize]
    }
    /// Whether `v` references itself.
    pub fn references_self(&self, v: NodeId) -> bool {
        self.self_ref[v as usize]
    }
    /// A map from store path to id (built on demand; only look-ups by path
    /// need it).
    pub fn index(&self) -> HashMap<&StorePath, NodeId> {
        self.paths
            .iter()
            .enumerate()
            .map(|(i, p)| (p, i as NodeId))
            .collect()
    }

    /// Marks the closure of `starts`.
    pub fn closure_of(&self, starts: &[NodeId]) -> Vec<bool> {
        let mut seen = vec![false; self.len()];
        let mut stack: Vec<NodeId> = Vec::new();
        for &s in starts {
            if !std::mem::replace(&mut seen[s as usize], true) {
                stack.push(s);
            }
        }
        while let Some(v) = stack.pop() {
            for &w in self.references(v) {
                if !std::mem::replace(&mut seen[w as usize], true) {
                    stack.push(w);
                }
            }
        }
        seen
    }

    /// The closure of `starts` as a graph of its own, with `starts` as its
    /// roots (each once, in order), and for each of its ids the id it has
    /// in `self`. What a question about one path's own closure (advise with
    /// that path as the root) sees of a larger graph.
    pub fn rooted_at(&self, starts: &[NodeId]) -> (Graph, Vec<NodeId>) {
        let mut new_id = vec![NodeId::MAX; self.len()];
        let mut old: Vec<NodeId> = Vec::new();
        for &s in starts {
            if new_id[s as usize] == NodeId::MAX {
                new_id[s as usize] = old.len() as NodeId;
                old.push(s);
            }
        }
        let root_count = old.len();
        // Breadth first from the roots; every id is assigned when first met.
        let mut next = 0;
        while next < old.len() {
            let v = old[next];
            next += 1;
            for &w in self.references(v) {
                if new_id[w as usize] == NodeId::MAX {
                    new_id[w as usize] = old.len() as NodeId;
                    old.push(w);
                }
            }
        }
        let mut raw = RawClosure::default();
        for &v in &old {
            raw.push(self.path(v).clone(), self.nar_size(v));
        }
        for (i, &v) in old.iter().enumerate() {
            raw.references[i] = self
                .references(v)
                .iter()
                .map(|&w| new_id[w as usize])
                .collect();
            if self.references_self(v) {
                raw.references[i].push(i as NodeId);
            }
        }
        // A subset of a checked graph's paths: its sizes sum within u64.
        (Graph::from_raw(raw, root_count), old)
    }

    /// Sum of NAR sizes over a marked set. Cannot overflow: construction
    /// checked that the sum over all paths fits in a `u64`.
    pub fn size_of(&self, set: &[bool]) -> u64 {
        set.iter()
            .zip(&self.nar_sizes)
            .filter(|(m, _)| **m)
            .map(|(_, s)| s)
            .sum()
    }

    /// Sum of every path's NAR size: the closure of the roots.
    pub fn total_size(&self) -> u64 {
        self.nar_sizes.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix_heft_store::source::PathInfoJson;

    /// The transpose holds exactly the edges reversed, each node's
    /// referrers ascending, on a graph with a node without edges, a node
    /// every other refers to, and an edge list out of order.
    #[test]
    fn transpose_reverses_every_edge_and_sorts_referrers() {
        // 0 → {1, 3}; 1 → {3}; 2 → {}; 3 → {}; 4 → {0, 3, 1}.
        let offsets = [0u32, 2, 3, 3, 3, 6];
        let targets: [NodeId; 6] = [1, 3, 3, 0, 3, 1];
        let (ro, rt) = transpose(&offsets, &targets);
        assert_eq!(ro, vec![0, 1, 3, 3, 6, 6]);
        assert_eq!(rt, vec![4, 0, 4, 0, 1, 4]);
        let mut want: Vec<(NodeId, NodeId)> = Vec::new();
        for v in 0..5 {
            for &w in &targets[offsets[v] as usize..offsets[v + 1] as usize] {
                want.push((w, v as NodeId));
            }
        }
        want.sort();
        let mut got: Vec<(NodeId, NodeId)> = Vec::new();
        for w in 0..5 {
            for &v in &rt[ro[w] as usize..ro[w + 1] as usize] {
                got.push((w as NodeId, v));
            }
        }
        assert_eq!(got, want);
        assert_eq!(transpose(&[0], &[]), (vec![0], vec![]));
    }

    /// `/nix/store/<hash>-<name>` with a hash made of one repeated base-32
    /// character.
    fn sp(c: char, name: &str) -> String {
        format!("/nix/store/{}-{name}", c.to_string().repeat(32))
    }

    /// A path-info JSON file (Nix's array shape) of `(path, narSize,
    /// references)`.
    fn json_source(
        entries: &[(&str, serde_json::Value, &[&str])],
    ) -> (tempfile::TempDir, PathInfoJson) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("closure.json");
        let v: Vec<serde_json::Value> = entries
            .iter()
            .map(|(p, n, r)| serde_json::json!({"path": p, "narSize": n, "references": r}))
            .collect();
        std::fs::write(&file, serde_json::to_vec(&v).unwrap()).unwrap();
        let src = PathInfoJson::open(&file, Default::default()).unwrap();
        (dir, src)
    }

    fn parse(s: &str) -> StorePath {
        StorePath::parse("/nix/store", s).unwrap()
    }

    #[test]
    fn duplicate_roots_count_once_in_first_seen_order() {
        let (a, b, c) = (sp('a', "a"), sp('b', "b"), sp('c', "c"));
        let (_dir, src) = json_source(&[
            (&a, 10.into(), &[&b]),
            (&b, 20.into(), &[]),
            (&c, 40.into(), &[&c]),
        ]);
        let roots = [&b, &a, &b, &c, &a, &c].map(|s| parse(s));
        let g = Graph::load(&src, &roots).unwrap();
        assert_eq!(g.len(), 3);
        let root_paths: Vec<&str> = g.roots().iter().map(|&r| g.path(r).as_str()).collect();
        assert_eq!(root_paths, [b.as_str(), a.as_str(), c.as_str()]);
        // Sizes over the deduplicated roots: `b` is shared by the roots `a`
        // and `b`, so it is its own added size; each root owns itself.
        let closure = closure_sizes(&g);
        let added = added_sizes(&g);
        let by_name = |n: &str| g.paths().iter().position(|p| p.name() == n).unwrap();
        assert_eq!(closure[by_name("a")], 30);
        assert_eq!(closure[by_name("b")], 20);
        assert_eq!(closure[by_name("c")], 40);
        assert_eq!(added[by_name("a")], 10);
        assert_eq!(added[by_name("b")], 20);
        assert_eq!(added[by_name("c")], 40);
        assert_eq!(g.size_of(&g.closure_of(g.roots())), 70);
    }

    #[test]
    fn nar_sizes_beyond_u64_are_an_error_not_a_wrapped_sum() {
        let (a, b) = (sp('a', "a"), sp('b', "b"));
        let (_dir, src) = json_source(&[(&a, u64::MAX.into(), &[&b]), (&b, u64::MAX.into(), &[])]);
        let e = Graph::load(&src, &[parse(&a)]).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, Error::ClosureTooLarge { .. }), "{msg}");
        assert!(
            msg.contains("larger than 16 EiB") && msg.contains(&a),
            "{msg}"
        );
        assert!(msg.contains(&(2 * u64::MAX as u128).to_string()), "{msg}");
        // Each alone fits: the check is on the sum, not on each size.
        let g = Graph::load(&src, &[parse(&b)]).unwrap();
        assert_eq!(closure_sizes(&g), [u64::MAX]);
        assert_eq!(added_sizes(&g), [u64::MAX]);
        // Exactly u64::MAX in total is still exact.
        let (_dir, src) = json_source(&[(&a, (u64::MAX - 1).into(), &[&b]), (&b, 1.into(), &[])]);
        let g = Graph::load(&src, &[parse(&a)]).unwrap();
        assert_eq!(closure_sizes(&g)[0], u64::MAX);
        assert_eq!(added_sizes(&g)[0], u64::MAX);
    }

    #[test]
    #[should_panic(expected = "more than u64::MAX")]
    fn unchecked_constructor_panics_rather_than_wraps() {
        let mut raw = RawClosure::default();
        raw.push(parse(&sp('a', "a")), u64::MAX);
        raw.push(parse(&sp('b', "b")), 1);
        Graph::from_raw(raw, 2);
    }
}

#[cfg(any(test, feature = "testutil"))]
#[doc(hidden)]
pub mod testgraph {
    //! Seeded random DAGs for property tests (no external RNG crate needed
    //! for a generator this small: SplitMix64 is enough and reproducible).
    use super::*;

    pub struct SplitMix(pub u64);
    impl SplitMix {
        #[allow(clippy::should_implement_trait)] // a seeded generator for tests, not an iterator
        pub fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        pub fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// A random DAG on `n` nodes where node i references only nodes > i;
    /// the first `roots` nodes are roots, and every node is reachable.
    pub fn random_dag(seed: u64, n: usize, roots: usize) -> Graph {
        let mut rng = SplitMix(seed);
        let h = "0123456789abcdfghijklmnpqrsvwxyz";
        let mut raw = RawClosure::default();
        for i in 0..n {
            let mut hash = String::new();
            let mut x = i as u64 + 1;
            for _ in 0..32 {
                hash.push(h.as_bytes()[(x % 32) as usize] as char);
                x /= 32;
            }
            let p = StorePath::parse("/nix/store", &format!("/nix/store/{hash}-p{i}")).unwrap();
            raw.push(p, 1 + rng.below(1000));
        }
        for i in 0..n {
            let deg = rng.below(4);
            for _ in 0..deg {
                if i + 1 < n {
                    let t = i + 1 + rng.below((n - i - 1) as u64) as usize;
                    raw.references[i].push(t as u32);
                }
            }
            if rng.below(5) == 0 {
                raw.references[i].push(i as u32); // self reference
            }
        }
        // Make every non-root reachable: link it from some earlier node.
        for i in roots..n {
            let from = rng.below(i as u64) as usize;
            raw.references[from].push(i as u32);
        }
        Graph::from_raw(raw, roots)
    }
}
