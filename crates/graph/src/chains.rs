//! Chains of references from a root to a dependency: how many there are
//! (exactly, as a `u128` that saturates), the shortest, or all of them up
//! to [`MAX_CHAINS`]. Store graphs are acyclic, but a path-info JSON file
//! need not be, so every chain counted or listed is a simple path.

use std::collections::{BTreeSet, VecDeque};

use super::request::ReadRequest;
use super::{Graph, NodeId};

/// Most chains listed with `--all`; the count is still exact.
pub const MAX_CHAINS: usize = 10_000;

/// Chains from `root` to any of `deps` (a chain stops at the first
/// dependency it reaches): the count of all of them and either the shortest
/// or all (up to [`MAX_CHAINS`]).
pub fn chains(g: &Graph, root: NodeId, deps: &[NodeId], all: bool) -> (u128, Vec<Vec<NodeId>>) {
    let n = g.len();
    let mut is_dep = vec![false; n];
    for &d in deps {
        is_dep[d as usize] = true;
    }
    // Count by memoised DFS. Store graphs are acyclic, but a path-info
    // JSON file need not be: an edge back into the current DFS path is
    // ignored, so each chain counted is a simple path.
    let mut count: Vec<Option<u128>> = vec![None; n];
    let mut on_path = vec![false; n];
    let mut stack = vec![(root, false)];
    while let Some((v, done)) = stack.pop() {
        if count[v as usize].is_some() {
            continue;
        }
        if is_dep[v as usize] {
            count[v as usize] = Some(1);
        } else if done {
            on_path[v as usize] = false;
            let c = g
                .references(v)
                .iter()
                .map(|&w| count[w as usize].unwrap_or(0))
                .fold(0u128, |a, b| a.saturating_add(b));
            count[v as usize] = Some(c);
        } else if !on_path[v as usize] {
            on_path[v as usize] = true;
            stack.push((v, true));
            for &w in g.references(v) {
                if count[w as usize].is_none() && !on_path[w as usize] {
                    stack.push((w, false));
                }
            }
        }
    }
    let total = count[root as usize].unwrap_or(0);
    if total == 0 {
        return (0, Vec::new());
    }
    if !all {
        // Breadth-first for the shortest chain.
        let mut prev: Vec<Option<NodeId>> = vec![None; n];
        let mut seen = vec![false; n];
        let mut q = VecDeque::from([root]);
        seen[root as usize] = true;
        while let Some(v) = q.pop_front() {
            if is_dep[v as usize] {
                return (total, vec![walk_back(&prev, v)]);
            }
            for &w in g.references(v) {
                if !std::mem::replace(&mut seen[w as usize], true) {
                    prev[w as usize] = Some(v);
                    q.push_back(w);
                }
            }
        }
        return (total, Vec::new());
    }
    let mut out = Vec::new();
    enumerate(g, &is_dep, &count, root, &mut out);
    out.sort_by_key(|c| c.len());
    (total, out)
}

/// Lists simple paths from `root` to a dependency, depth first, without
/// recursion (a long chain in a hand-made JSON must not overflow the
/// stack): each frame is a node and the index of its next reference.
fn enumerate(
    g: &Graph,
    is_dep: &[bool],
    count: &[Option<u128>],
    root: NodeId,
    out: &mut Vec<Vec<NodeId>>,
) {
    let mut path: Vec<NodeId> = vec![root];
    let mut on_path = vec![false; g.len()];
    on_path[root as usize] = true;
    let mut next: Vec<usize> = vec![0];
    while let Some(&v) = path.last() {
        if out.len() >= MAX_CHAINS {
            return;
        }
        if is_dep[v as usize] {
            out.push(path.clone());
            on_path[v as usize] = false;
            path.pop();
            next.pop();
            continue;
        }
        let i = next.last_mut().expect("one index per node on the path");
        let refs = g.references(v);
        let mut pushed = None;
        while *i < refs.len() {
            let w = refs[*i];
            *i += 1;
            if count[w as usize].unwrap_or(0) > 0 && !on_path[w as usize] {
                pushed = Some(w);
                break;
            }
        }
        match pushed {
            Some(w) => {
                on_path[w as usize] = true;
                path.push(w);
                next.push(0);
            }
            None => {
                on_path[v as usize] = false;
                path.pop();
                next.pop();
            }
        }
    }
}

/// Which nodes lie on some chain from `roots` to a dependency (a chain
/// stops at the first dependency it reaches): reachable from a root
/// without passing through a dependency, and able to reach one.
pub fn on_some_chain(g: &Graph, roots: &[NodeId], is_dep: &[bool]) -> Vec<bool> {
    reaching_deps(g, roots.to_vec(), is_dep)
}

/// The paths reachable from `seeds` (each marked reached) without passing
/// through a dependency, that can reach one without passing through
/// another, and the dependencies so reached: a walk forwards that stops at
/// dependencies, then one backwards from the dependencies reached through
/// paths the first walk reached.
fn reaching_deps(g: &Graph, seeds: Vec<NodeId>, is_dep: &[bool]) -> Vec<bool> {
    let n = g.len();
    let mut fwd = vec![false; n];
    for &s in &seeds {
        fwd[s as usize] = true;
    }
    let mut stack = seeds;
    while let Some(v) = stack.pop() {
        if is_dep[v as usize] {
            continue;
        }
        for &w in g.references(v) {
            if !std::mem::replace(&mut fwd[w as usize], true) {
                stack.push(w);
            }
        }
    }
    let mut back = vec![false; n];
    let mut stack: Vec<NodeId> = (0..n as NodeId)
        .filter(|&v| is_dep[v as usize] && fwd[v as usize])
        .collect();
    for &d in &stack {
        back[d as usize] = true;
    }
    while let Some(v) = stack.pop() {
        for &u in g.referrers(v) {
            if fwd[u as usize]
                && !is_dep[u as usize]
                && !std::mem::replace(&mut back[u as usize], true)
            {
                stack.push(u);
            }
        }
    }
    back
}

/// The edges of every chain from `roots` to a dependency: what `why` reads
/// to rank chains by the verdicts of their edges.
pub fn edges_of_all_chains(g: &Graph, roots: &[NodeId], is_dep: &[bool]) -> ReadRequest {
    let on = on_some_chain(g, roots, is_dep);
    (0..g.len() as NodeId)
        .filter(|&v| on[v as usize] && !is_dep[v as usize])
        .map(|v| {
            let t: Vec<NodeId> = g
                .references(v)
                .iter()
                .copied()
                .filter(|&w| on[w as usize])
                .collect();
            (v, t)
        })
        .filter(|(_, t)| !t.is_empty())
        .collect()
}

/// The edges of every chain from one dependency to another: from each of
/// `deps` (marked in `is_dep`) to the next dependency it reaches, not
/// through a third. With [`edges_of_all_chains`] these are every edge of
/// every chain from the roots to a dependency that passes through others:
/// what `why` reads to explain a match reached only through another match.
pub fn edges_between_deps(g: &Graph, deps: &[NodeId], is_dep: &[bool]) -> ReadRequest {
    let n = g.len();
    // From what the dependencies reference (not the dependencies
    // themselves, which would stop the walk at once).
    let mut seeds: Vec<NodeId> = deps
        .iter()
        .flat_map(|&d| g.references(d).iter().copied())
        .collect();
    seeds.sort_unstable();
    seeds.dedup();
    let back = reaching_deps(g, seeds, is_dep);
    let mut from: Vec<NodeId> = deps.to_vec();
    from.extend((0..n as NodeId).filter(|&v| back[v as usize] && !is_dep[v as usize]));
    from.sort_unstable();
    from.dedup();
    from.into_iter()
        .map(|v| {
            let t: Vec<NodeId> = g
                .references(v)
                .iter()
                .copied()
                .filter(|&w| back[w as usize] && w != v)
                .collect();
            (v, t)
        })
        .filter(|(_, t)| !t.is_empty())
        .collect()
}

/// The edges of every chain from the graph's roots to any of `targets`,
/// chains free to pass through other targets: the edges between paths
/// that can reach a target. What the gate reads to give each forbidden
/// path its strongest chain, one pass for all of them.
pub fn edges_toward(g: &Graph, targets: &[NodeId]) -> ReadRequest {
    let mut back = vec![false; g.len()];
    let mut stack: Vec<NodeId> = Vec::new();
    for &t in targets {
        if !std::mem::replace(&mut back[t as usize], true) {
            stack.push(t);
        }
    }
    while let Some(v) = stack.pop() {
        for &u in g.referrers(v) {
            if !std::mem::replace(&mut back[u as usize], true) {
                stack.push(u);
            }
        }
    }
    (0..g.len() as NodeId)
        .filter(|&v| back[v as usize])
        .map(|v| {
            let t: Vec<NodeId> = g
                .references(v)
                .iter()
                .copied()
                .filter(|&w| back[w as usize] && w != v)
                .collect();
            (v, t)
        })
        .filter(|(_, t)| !t.is_empty())
        .collect()
}

/// The best chain from any of `roots` to `dep`: the one whose weakest edge
/// is strongest (lowest `rank`, e.g. a verdict's order: runtime before
/// dead), the shortest among those. Chains do not pass through another node
/// of `stop` (other dependencies), and never use the edge `skip`. Returns
/// the chain and its weakest rank.
pub fn best_chain(
    g: &Graph,
    roots: &[NodeId],
    dep: NodeId,
    stop: &[bool],
    rank: &dyn Fn(NodeId, NodeId) -> u8,
    skip: Option<(NodeId, NodeId)>,
) -> Option<(Vec<NodeId>, u8)> {
    let levels: BTreeSet<u8> = {
        // Only ranks that occur can change the answer.
        let mut l = BTreeSet::new();
        let on = {
            let mut is_dep = stop.to_vec();
            is_dep[dep as usize] = true;
            on_some_chain(g, roots, &is_dep)
        };
        for v in 0..g.len() as NodeId {
            if on[v as usize] {
                for &w in g.references(v) {
                    if on[w as usize] {
                        l.insert(rank(v, w));
                    }
                }
            }
        }
        l
    };
    for &level in &levels {
        let mut prev: Vec<Option<NodeId>> = vec![None; g.len()];
        let mut seen = vec![false; g.len()];
        let mut q: VecDeque<NodeId> = VecDeque::new();
        for &r in roots {
            if !std::mem::replace(&mut seen[r as usize], true) {
                q.push_back(r);
            }
        }
        while let Some(v) = q.pop_front() {
            if v == dep {
                let chain = walk_back(&prev, v);
                let worst = chain
                    .windows(2)
                    .map(|e| rank(e[0], e[1]))
                    .max()
                    .unwrap_or(0);
                return Some((chain, worst));
            }
            if stop[v as usize] && !roots.contains(&v) {
                continue;
            }
            for &w in g.references(v) {
                if Some((v, w)) == skip || rank(v, w) > level {
                    continue;
                }
                if !std::mem::replace(&mut seen[w as usize], true) {
                    prev[w as usize] = Some(v);
                    q.push_back(w);
                }
            }
        }
    }
    None
}

/// The chain a breadth-first search reached `v` by, root first.
fn walk_back(prev: &[Option<NodeId>], v: NodeId) -> Vec<NodeId> {
    let mut chain = vec![v];
    let mut cur = v;
    while let Some(p) = prev[cur as usize] {
        chain.push(p);
        cur = p;
    }
    chain.reverse();
    chain
}

/// Breadth-first distance of every path from the nearest root
/// (`u32::MAX` for a path no root reaches): "the referrer that pulls a path
/// in" is the one nearest the roots, in `diff` and in the gate alike.
pub fn depths_from_roots(g: &Graph) -> Vec<u32> {
    let mut depth = vec![u32::MAX; g.len()];
    let mut q = VecDeque::new();
    for &r in g.roots() {
        depth[r as usize] = 0;
        q.push_back(r);
    }
    while let Some(v) = q.pop_front() {
        let d = depth[v as usize].saturating_add(1);
        for &w in g.references(v) {
            if depth[w as usize] == u32::MAX {
                depth[w as usize] = d;
                q.push_back(w);
            }
        }
    }
    depth
}
