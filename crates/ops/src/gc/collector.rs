//! The collector's view once read: the graph, the liveness graph and its
//! dominator tree, and what each root holds; every figure `roots` gives
//! comes from here, and the browser keeps it to ask what marked roots free
//! together.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::found::Found;
use super::liveness::Liveness;
use super::{Dead, Figure, Root, RootsRequest, Totals, WhyRoot, WhyRoots, disk, groups, names};
use nix_heft_graph::{Dominators, Graph, NodeId};
use nix_heft_store::gc::disk::DiskUse;
use nix_heft_store::gc::roots::Profile;

/// See the module documentation.
pub struct Collector {
    pub(super) g: Graph,
    live: Liveness,
    dom: Dominators,
    /// Paths and NAR bytes of every node's dominator subtree.
    counts: Vec<u64>,
    bytes: Vec<u64>,
    /// The same over bytes on disk, with `--disk`.
    disk_sub: Option<Vec<u64>>,
    pub(super) disk: Option<disk::Weights>,
    /// The components of the liveness graph, for groups (made once).
    comps: OnceLock<(Vec<NodeId>, Vec<u32>)>,
    /// Root node of each store path (`u32::MAX`: none).
    target_of: Vec<u32>,
    /// How many roots hold each root node.
    holders: Vec<u32>,
    /// Per root, in the analysis's order: its root node and whether it can
    /// be removed.
    root_node: Vec<u32>,
    removable: Vec<bool>,
    profiles: Vec<Profile>,
    store_arg: Option<String>,
    /// Most links a group's commands name (a table shows a few).
    max_links: Option<usize>,
}

impl Collector {
    pub(super) fn new(
        g: Graph,
        keep_outputs: Vec<(NodeId, NodeId)>,
        keep_derivations: Vec<(NodeId, NodeId)>,
        roots: &[Found],
        profiles: Vec<Profile>,
        req: &RootsRequest,
    ) -> Collector {
        let n = g.len();
        let mut targets: Vec<NodeId> = roots.iter().map(|r| r.node).collect();
        targets.sort_unstable();
        targets.dedup();
        let mut target_of = vec![u32::MAX; n];
        for (k, &t) in targets.iter().enumerate() {
            target_of[t as usize] = k as u32;
        }
        let mut holders = vec![0u32; targets.len()];
        for r in roots {
            holders[target_of[r.node as usize] as usize] += 1;
        }
        let live = Liveness::new(&g, keep_outputs, keep_derivations, targets);
        let dom = Dominators::compute_flow(&live);
        let nodes = live.paths + live.targets.len();
        let counts = dom.subtree_sums((0..nodes).map(|v| u64::from(v < n)).collect());
        let bytes = dom.subtree_sums(
            (0..nodes)
                .map(|v| if v < n { g.nar_size(v as NodeId) } else { 0 })
                .collect(),
        );
        Collector {
            g,
            live,
            dom,
            counts,
            bytes,
            disk_sub: None,
            disk: None,
            comps: OnceLock::new(),
            target_of,
            holders,
            root_node: Vec::new(),
            removable: Vec::new(),
            profiles,
            store_arg: req.store_arg.clone(),
            max_links: match req.detail {
                super::Listing::All => None,
                super::Listing::Top(_) => Some(super::TEXT_LINKS),
            },
        }
    }

    fn nodes(&self) -> usize {
        self.live.paths + self.live.targets.len()
    }

    /// Counts bytes on disk from `usage` (by entry of the store directory,
    /// `entry_node` the valid path of each, `dead_entry` the invalid ones
    /// the collector deletes).
    pub(super) fn weigh_disk(
        &mut self,
        entry_node: &[Option<NodeId>],
        dead_entry: &[bool],
        usage: DiskUse,
    ) {
        let w = disk::attribute(&self.dom, self.nodes(), entry_node, dead_entry, usage);
        self.disk_sub = Some(self.dom.subtree_sums(w.node.clone()));
        self.disk = Some(w);
    }

    /// What removing every root of root node `k` frees.
    fn node_figure(&self, k: usize) -> Figure {
        let v = self.live.root_node(k) as usize;
        Figure {
            paths: self.counts[v],
            nar_bytes: self.bytes[v],
            disk_bytes: self.disk_sub.as_ref().map(|d| d[v]),
        }
    }

    /// Every root's figures: alone, and with the others of its path.
    pub(super) fn figure_roots(&self, roots: &mut [Found]) {
        use rayon::prelude::*;
        roots.par_iter_mut().with_min_len(4096).for_each(|r| {
            let k = self.target_of[r.node as usize] as usize;
            let all = self.node_figure(k);
            let n = self.holders[k];
            r.root.same_path_roots = n;
            r.root.freed_with_same_path = all;
            r.root.freed = if n == 1 {
                all
            } else {
                Figure {
                    disk_bytes: all.disk_bytes.map(|_| 0),
                    ..Figure::default()
                }
            };
        });
    }

    /// Takes the roots' final order (the analysis's indices).
    pub(super) fn index_roots(&mut self, roots: &[Found]) {
        self.root_node = roots
            .iter()
            .map(|r| self.target_of[r.node as usize])
            .collect();
        self.removable = roots.iter().map(|r| r.removable).collect();
    }

    /// The paths each root frees alone: its root node's dominator subtree.
    pub(super) fn list_freed(&self, roots: &mut [Found]) {
        let n = self.g.len();
        let mut top = vec![u32::MAX; self.nodes()];
        for &v in self.dom.postorder().iter().rev() {
            top[v as usize] = match self.dom.idom(v) {
                None => v,
                Some(d) => top[d as usize],
            };
        }
        let mut by_top: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
        for v in 0..n as NodeId {
            if self.dom.is_reached(v) && top[v as usize] as usize >= n {
                by_top.entry(top[v as usize]).or_default().push(v);
            }
        }
        for r in roots.iter_mut().filter(|r| r.root.same_path_roots == 1) {
            let k = self.target_of[r.node as usize] as usize;
            r.root.freed_paths = by_top
                .get(&self.live.root_node(k))
                .map(|vs| names(&self.g, vs))
                .unwrap_or_default()
                .into_boxed_slice();
        }
    }

    /// Closures and commands of the `roots` at `which` (the rows shown).
    pub(super) fn detail(&self, roots: &mut [Found], which: &[usize]) {
        super::closures(&self.g, roots, which);
        let ctx = self.context();
        for &i in which {
            let r = &mut roots[i];
            if r.removable {
                r.root.command = groups::remove_commands(&ctx, &[&r.root])
                    .0
                    .into_iter()
                    .next()
                    .map(Box::from);
            }
        }
    }

    /// What commands need to know of the store.
    pub(super) fn context(&self) -> groups::Context<'_> {
        groups::Context {
            store_arg: self.store_arg.as_deref(),
            max_links: self.max_links,
            profiles: &self.profiles,
        }
    }

    /// What removing each of `groups` (roots by the analysis's indices)
    /// frees together, with the paths when `list`: the root nodes all of
    /// whose roots are in a group go, 64 groups a pass.
    pub fn figures(&self, groups: &[&[usize]], list: bool) -> Vec<(Figure, Vec<String>)> {
        let n = self.g.len();
        let mut out: Vec<(Figure, Vec<String>)> = Vec::with_capacity(groups.len());
        if groups.is_empty() {
            return out;
        }
        let (order, comp) = self.comps.get_or_init(|| self.live.components());
        let disk = self.disk.as_ref();
        use rayon::prelude::*;
        let batches: Vec<Vec<(Figure, Vec<String>)>> = groups
            .par_chunks(64)
            .map(|batch| {
                let mut removed = vec![0u64; self.live.targets.len()];
                for (i, members) in batch.iter().enumerate() {
                    let mut count: HashMap<u32, u32> = HashMap::new();
                    for &m in members.iter() {
                        *count.entry(self.root_node[m]).or_default() += 1;
                    }
                    for (k, c) in count {
                        if c == self.holders[k as usize] {
                            removed[k as usize] |= 1 << i;
                        }
                    }
                }
                let freed = self.live.freed_by_groups(order, comp, &removed);
                let mut figs = vec![
                    Figure {
                        disk_bytes: disk.map(|_| 0),
                        ..Figure::default()
                    };
                    batch.len()
                ];
                let mut lists: Vec<Vec<NodeId>> = vec![Vec::new(); batch.len()];
                for (v, &bits) in freed.iter().enumerate().take(n) {
                    let mut bits = bits;
                    while bits != 0 {
                        let i = bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        figs[i].paths += 1;
                        figs[i].nar_bytes += self.g.nar_size(v as NodeId);
                        if let (Some(d), Some(b)) = (disk, figs[i].disk_bytes.as_mut()) {
                            *b += d.own[v];
                        }
                        if list {
                            lists[i].push(v as NodeId);
                        }
                    }
                }
                if let Some(d) = disk {
                    for (bytes, holders) in &d.shared {
                        let mut bits = holders.iter().fold(u64::MAX, |a, &h| a & freed[h as usize]);
                        while bits != 0 {
                            let i = bits.trailing_zeros() as usize;
                            bits &= bits - 1;
                            if let Some(b) = figs[i].disk_bytes.as_mut() {
                                *b += bytes;
                            }
                        }
                    }
                }
                figs.into_iter()
                    .zip(lists)
                    .map(|(f, l)| (f, names(&self.g, &l)))
                    .collect()
            })
            .collect();
        out.extend(batches.into_iter().flatten());
        out
    }

    /// What removing `members` (the analysis's indices) frees together.
    pub fn joint(&self, members: &[usize]) -> Figure {
        self.figures(&[members], false)
            .pop()
            .map(|(f, _)| f)
            .unwrap_or_default()
    }

    /// The commands that remove `members` of `roots` (the analysis's
    /// roots), those that cannot be removed (processes) left out.
    pub fn commands(&self, roots: &[Root], members: &[usize]) -> Vec<String> {
        // Each root once, as `remove_commands` takes them.
        let mut members = members.to_vec();
        members.sort_unstable();
        members.dedup();
        let rs: Vec<&Root> = members
            .iter()
            .filter(|&&m| self.removable.get(m).copied().unwrap_or(false))
            .filter_map(|&m| roots.get(m))
            .collect();
        // Every one: the browser prints them all.
        let ctx = groups::Context {
            max_links: None,
            ..self.context()
        };
        groups::remove_commands(&ctx, &rs).0
    }

    /// The roots that keep `target`, each with a shortest chain, and the
    /// group of the removable ones (added to `defs`).
    pub(super) fn why(
        &self,
        roots: &[Found],
        target: NodeId,
        defs: &mut Vec<groups::Def>,
    ) -> WhyRoots {
        let (g, live) = (&self.g, &self.live);
        let next = live.toward(target);
        let mut reaching: Vec<(usize, Vec<(String, super::EdgeKind)>)> = Vec::new();
        for k in 0..live.targets.len() {
            let rn = live.root_node(k);
            if next[rn as usize] == u32::MAX {
                continue;
            }
            let mut chain = Vec::new();
            let mut v = rn;
            while v != target {
                let w = next[v as usize];
                chain.push((g.path(w).to_string(), live.edge_kind(g, v, w)));
                v = w;
            }
            reaching.push((k, chain));
        }
        reaching.sort_by_key(|(_, c)| c.len());
        // The roots of each root node that reaches it, in the analysis's
        // order (asked here only: a table of every root node's roots would
        // cost a vector a node on a million roots).
        let mut slot = vec![u32::MAX; live.targets.len()];
        for (j, (k, _)) in reaching.iter().enumerate() {
            slot[*k] = j as u32;
        }
        let mut roots_of: Vec<Vec<usize>> = vec![Vec::new(); reaching.len()];
        for (i, &k) in self.root_node.iter().enumerate() {
            if let Some(rs) = roots_of.get_mut(slot[k as usize] as usize) {
                rs.push(i);
            }
        }
        let mut out = Vec::new();
        let mut members = Vec::new();
        let mut all_removable = true;
        for ((_, chain), rs) in reaching.into_iter().zip(roots_of) {
            for i in rs {
                out.push(WhyRoot {
                    root: i,
                    chain: chain.clone(),
                });
                if roots[i].removable {
                    members.push(i);
                } else {
                    all_removable = false;
                }
            }
        }
        let group = (!members.is_empty()).then(|| {
            defs.push(groups::keeping(
                &self.context(),
                roots,
                &members,
                g.path(target).as_str(),
            ));
            defs.len() - 1
        });
        WhyRoots {
            path: g.path(target).to_string(),
            roots: out,
            freed_by_group: group.is_some() && all_removable,
            group,
        }
    }

    /// The store's totals and what is dead now (its paths when `list`).
    pub(super) fn totals(&self, list: bool) -> (Totals, Dead) {
        let mut dead = Dead::default();
        let mut totals = Totals::default();
        for v in 0..self.g.len() as NodeId {
            let s = self.g.nar_size(v);
            totals.valid.paths += 1;
            totals.valid.nar_bytes += s;
            if self.dom.is_reached(v) {
                totals.live.paths += 1;
                totals.live.nar_bytes += s;
            } else {
                dead.figure.paths += 1;
                dead.figure.nar_bytes += s;
                if list {
                    dead.paths.push(self.g.path(v).to_string());
                }
            }
        }
        if let Some(d) = &self.disk {
            dead.figure.disk_bytes = Some(d.dead);
            dead.unused_links = d.unused_links;
            totals.valid.disk_bytes = Some(d.total);
            totals.live.disk_bytes = Some(d.total.saturating_sub(d.dead));
        }
        (totals, dead)
    }
}
