//! [`RawClosure`], the closure a source reads (paths, NAR sizes,
//! references by index), and the two ways of reading one through
//! [`PathMetadata::path_info`]: path by path, or as a work queue of
//! lookups in parallel.

use std::collections::{HashMap, HashSet};

use super::{PathInfo, PathMetadata};
use crate::error::{Error, Result};
use nix_heft_format::store_path::StorePath;

/// A closure as read from a source: paths with dense indices, their NAR
/// sizes, and each path's references as indices (self references
/// included, as Nix registers them).
///
/// Built with [`RawClosure::push`] and [`RawClosure::add_reference`] (or by
/// a source's [`PathMetadata::closure`]), it keeps these invariants, which
/// `nix_heft_graph::Graph::try_from_raw` relies on:
///
/// - every path has one NAR size and one list of references;
/// - every reference is the index of a path of the closure;
/// - each path is there once (the caller's part: [`RawClosure::push`] takes
///   a path not pushed before);
/// - the roots come first, in the order given (the graph is told how many).
///
/// A reference may point to a path pushed after its referrer, so a closure
/// can be built in any order: all paths first, then their references.
#[derive(Debug, Default, Clone)]
pub struct RawClosure {
    /// The paths; the roots come first, in the order given.
    pub paths: Vec<StorePath>,
    /// NAR size of each path.
    pub nar_sizes: Vec<u64>,
    /// References of each path, as indices into `paths`.
    pub references: Vec<Vec<u32>>,
}

impl RawClosure {
    /// Indexes a closed set of path infos (every reference among them).
    pub(crate) fn from_infos(infos: Vec<PathInfo>, store: &str) -> Result<Self> {
        let index: HashMap<&StorePath, u32> = infos
            .iter()
            .enumerate()
            .map(|(i, info)| (&info.path, i as u32))
            .collect();
        let mut references = Vec::with_capacity(infos.len());
        for info in &infos {
            let refs = info
                .references
                .iter()
                .map(|r| {
                    index
                        .get(r)
                        .copied()
                        .ok_or_else(|| Error::DanglingReference {
                            referrer: info.path.to_string(),
                            reference: r.to_string(),
                            store: store.to_string(),
                        })
                })
                .collect::<Result<Vec<u32>>>()?;
            references.push(refs);
        }
        drop(index);
        Ok(RawClosure {
            nar_sizes: infos.iter().map(|i| i.nar_size).collect(),
            paths: infos.into_iter().map(|i| i.path).collect(),
            references,
        })
    }

    /// Renumbers the paths after the first `root_count` in store-path
    /// order, so that ids, and every order that follows from them (chains,
    /// edges), are the same whichever source the closure came from: a local
    /// store lists references in database order, a narinfo by name.
    pub fn canonical(self, root_count: usize) -> RawClosure {
        use rayon::prelude::*;
        let n = self.paths.len();
        let mut order: Vec<u32> = (0..n as u32).collect();
        // Each path is there once, so an unstable sort gives one order; on
        // every core, as a whole store's half a million names take a while.
        order[root_count.min(n)..]
            .par_sort_unstable_by(|&a, &b| self.paths[a as usize].cmp(&self.paths[b as usize]));
        let mut new_id = vec![0u32; n];
        for (new, &old) in order.iter().enumerate() {
            new_id[old as usize] = new as u32;
        }
        let references: Vec<Vec<u32>> = order
            .par_iter()
            .map(|&old| {
                let mut r: Vec<u32> = self.references[old as usize]
                    .iter()
                    .map(|&x| new_id[x as usize])
                    .collect();
                r.sort_unstable();
                r
            })
            .collect();
        let nar_sizes = order.iter().map(|&o| self.nar_sizes[o as usize]).collect();
        let mut paths: Vec<Option<StorePath>> = self.paths.into_iter().map(Some).collect();
        RawClosure {
            paths: order
                .iter()
                .map(|&o| paths[o as usize].take().expect("each once"))
                .collect(),
            nar_sizes,
            references,
        }
    }

    /// Adds `path`, which must not be in the closure yet, with its NAR size
    /// and no references; returns its index.
    pub fn push(&mut self, path: StorePath, nar_size: u64) -> u32 {
        self.paths.push(path);
        self.nar_sizes.push(nar_size);
        self.references.push(Vec::new());
        (self.paths.len() - 1) as u32
    }

    /// Adds a reference from the path at index `referrer` to the one at
    /// `reference` (both returned by [`RawClosure::push`]); a path may
    /// refer to itself.
    ///
    /// # Panics
    ///
    /// When either index is not a path of the closure: a misuse of the API,
    /// which would otherwise give a graph with edges to nowhere.
    pub fn add_reference(&mut self, referrer: u32, reference: u32) {
        assert!(
            (reference as usize) < self.paths.len(),
            "reference {reference} of {referrer} is not in a closure of {} paths",
            self.paths.len()
        );
        self.references[referrer as usize].push(reference);
    }

    /// The paths, by index.
    pub fn paths(&self) -> &[StorePath] {
        &self.paths
    }

    /// How many paths the closure holds.
    pub fn len(&self) -> usize {
        self.paths.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

/// Breadth-first closure through [`PathMetadata::path_info`].
pub(crate) fn closure_by_path_info<S: PathMetadata + ?Sized>(
    src: &S,
    roots: &[StorePath],
) -> Result<RawClosure> {
    let mut queued: HashSet<StorePath> = HashSet::new();
    let mut infos: Vec<PathInfo> = Vec::new();
    for r in roots {
        if queued.insert(r.clone()) {
            infos.push(src.path_info(r)?.ok_or_else(|| Error::MissingPath {
                path: r.to_string(),
                store: src.describe(),
            })?);
        }
    }
    let mut next = 0;
    while next < infos.len() {
        for i in 0..infos[next].references.len() {
            let r = &infos[next].references[i];
            if queued.insert(r.clone()) {
                let info = src.path_info(r)?.ok_or_else(|| Error::DanglingReference {
                    referrer: infos[next].path.to_string(),
                    reference: r.to_string(),
                    store: src.describe(),
                })?;
                infos.push(info);
            }
        }
        next += 1;
    }
    RawClosure::from_infos(infos, &src.describe())
}

/// The closure as a work queue: each path's references are looked up as
/// soon as its own lookup returns, on the rayon pool the caller runs in,
/// whose threads bound the lookups in flight (binary caches: each lookup
/// is a file open or an HTTP request, and they overlap well). No level
/// waits for its slowest lookup before the next starts, so a closure costs
/// about max(depth, paths / threads) round trips, not the sum over levels
/// of each level's slowest one.
///
/// The result does not depend on the order answers arrive in: paths are
/// ordered breadth-first from the roots once all are known, as a
/// level-by-level walk orders them, and a path the source lacks is
/// reported with the referrer that walk would name. `missing(path,
/// referrer)` is that error; a missing root is [`Error::MissingPath`]. On
/// a lookup error no new lookup starts, and the first error is returned.
pub(crate) fn closure_by_queue(
    roots: &[StorePath],
    describe: &str,
    lookup: impl Fn(&StorePath) -> Result<Option<PathInfo>> + Sync,
    missing: impl Fn(&StorePath, &StorePath) -> Error,
) -> Result<RawClosure> {
    use std::sync::Mutex;
    /// What the lookups found so far.
    #[derive(Default)]
    struct Found {
        queued: HashSet<StorePath>,
        infos: HashMap<StorePath, PathInfo>,
        absent: HashSet<StorePath>,
        error: Option<Error>,
    }
    fn visit<'s, F>(s: &rayon::Scope<'s>, p: StorePath, found: &'s Mutex<Found>, lookup: &'s F)
    where
        F: Fn(&StorePath) -> Result<Option<PathInfo>> + Sync,
    {
        if found.lock().expect("no panics while held").error.is_some() {
            return;
        }
        let got = lookup(&p);
        let mut f = found.lock().expect("no panics while held");
        match got {
            Ok(Some(info)) => {
                for r in &info.references {
                    if f.queued.insert(r.clone()) {
                        let r = r.clone();
                        s.spawn(move |s| visit(s, r, found, lookup));
                    }
                }
                f.infos.insert(p, info);
            }
            Ok(None) => {
                f.absent.insert(p);
            }
            Err(e) => {
                f.error.get_or_insert(e);
            }
        }
    }
    let found = Mutex::new(Found::default());
    let mut root_list: Vec<StorePath> = Vec::new();
    {
        let mut f = found.lock().expect("not shared yet");
        for r in roots {
            if f.queued.insert(r.clone()) {
                root_list.push(r.clone());
            }
        }
    }
    rayon::scope(|s| {
        for r in &root_list {
            let (r, found, lookup) = (r.clone(), &found, &lookup);
            s.spawn(move |s| visit(s, r, found, lookup));
        }
    });
    let Found {
        mut infos,
        absent,
        error,
        ..
    } = found.into_inner().expect("no panics while held");
    if let Some(e) = error {
        return Err(e);
    }
    // Breadth-first from the roots over what was found: the order, and the
    // first missing path with its referrer, of a level-by-level walk.
    let mut order: Vec<PathInfo> = Vec::with_capacity(infos.len());
    let mut seen: HashSet<StorePath> = HashSet::new();
    for r in &root_list {
        seen.insert(r.clone());
        if absent.contains(r) {
            return Err(Error::MissingPath {
                path: r.to_string(),
                store: describe.to_string(),
            });
        }
        order.push(infos.remove(r).expect("every root was looked up"));
    }
    let mut next = 0;
    while next < order.len() {
        for i in 0..order[next].references.len() {
            let r = &order[next].references[i];
            if !seen.insert(r.clone()) {
                continue;
            }
            if absent.contains(r) {
                return Err(missing(r, &order[next].path));
            }
            let info = infos.remove(r).expect("every reference was looked up");
            order.push(info);
        }
        next += 1;
    }
    RawClosure::from_infos(order, describe)
}

/// Breadth-first closure, one level at a time, each level looked up with
/// one call of `lookup_many` (the paths in order, their infos in the same
/// order): sources whose lookups cost most per call, not per path (the
/// build graph's, one database read per level). Errors as
/// [`closure_by_queue`]'s: a missing root is [`Error::MissingPath`], a
/// missing reference [`Error::DanglingReference`].
pub(crate) fn closure_by_batches(
    roots: &[StorePath],
    describe: &str,
    lookup_many: impl Fn(&[StorePath]) -> Result<Vec<Option<PathInfo>>>,
) -> Result<RawClosure> {
    let mut queued: HashSet<StorePath> = HashSet::new();
    let mut level: Vec<(Option<usize>, StorePath)> = Vec::new();
    for r in roots {
        if queued.insert(r.clone()) {
            level.push((None, r.clone()));
        }
    }
    let mut infos: Vec<PathInfo> = Vec::new();
    while !level.is_empty() {
        let paths: Vec<StorePath> = level.iter().map(|(_, p)| p.clone()).collect();
        let read = lookup_many(&paths)?;
        debug_assert_eq!(read.len(), paths.len(), "one info per path");
        let mut next = Vec::new();
        for ((from, p), info) in level.into_iter().zip(read) {
            let info = info.ok_or_else(|| match from {
                None => Error::MissingPath {
                    path: p.to_string(),
                    store: describe.to_string(),
                },
                Some(f) => Error::DanglingReference {
                    referrer: infos[f].path.to_string(),
                    reference: p.to_string(),
                    store: describe.to_string(),
                },
            })?;
            for r in &info.references {
                if queued.insert(r.clone()) {
                    next.push((Some(infos.len()), r.clone()));
                }
            }
            infos.push(info);
        }
        level = next;
    }
    RawClosure::from_infos(infos, describe)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Path `i` of a synthetic store.
    fn path(i: u32) -> StorePath {
        let mut bytes = [0u8; 20];
        bytes[..4].copy_from_slice(&i.to_le_bytes());
        let hash = nix_heft_format::nixbase32::encode(&bytes);
        StorePath::parse("/nix/store", &format!("/nix/store/{hash}-p{i}")).unwrap()
    }

    /// A layered graph of `n` paths: each refers to a few of the later
    /// ones (and some to themselves), so levels have many paths each.
    fn graph(n: u32) -> HashMap<StorePath, PathInfo> {
        (0..n)
            .map(|i| {
                let mut references: Vec<StorePath> = [i * 7 + 1, i * 3 + 2, i + 5]
                    .into_iter()
                    .filter(|&r| r < n)
                    .map(path)
                    .collect();
                if i % 5 == 0 {
                    references.push(path(i));
                }
                let info = PathInfo {
                    path: path(i),
                    nar_size: u64::from(i) * 10,
                    references,
                };
                (path(i), info)
            })
            .collect()
    }

    /// A level-by-level walk, one lookup at a time: the order the work
    /// queue must give whatever order answers arrive in.
    fn by_levels(
        roots: &[StorePath],
        g: &HashMap<StorePath, PathInfo>,
    ) -> std::result::Result<Vec<StorePath>, String> {
        let mut seen: HashSet<StorePath> = roots.iter().cloned().collect();
        let mut level: Vec<(Option<StorePath>, StorePath)> =
            roots.iter().map(|r| (None, r.clone())).collect();
        let mut out = Vec::new();
        while !level.is_empty() {
            let mut next = Vec::new();
            for (from, p) in level {
                let info = g.get(&p).ok_or_else(|| match &from {
                    None => format!("root {p}"),
                    Some(f) => format!("{p} from {f}"),
                })?;
                for r in &info.references {
                    if seen.insert(r.clone()) {
                        next.push((Some(p.clone()), r.clone()));
                    }
                }
                out.push(p);
            }
            level = next;
        }
        Ok(out)
    }

    fn queue(
        roots: &[StorePath],
        g: &HashMap<StorePath, PathInfo>,
        threads: usize,
    ) -> std::result::Result<Vec<StorePath>, String> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            closure_by_queue(
                roots,
                "test",
                |p| {
                    // Answers arrive in an order unrelated to the levels.
                    let h = p.hash_part().as_bytes()[0] as u64;
                    std::thread::sleep(std::time::Duration::from_micros(h * 37 % 900));
                    Ok(g.get(p).cloned())
                },
                |p, referrer| Error::Usage(format!("{p} from {referrer}")),
            )
        })
        .map(|c| c.paths().to_vec())
        .map_err(|e| match e {
            Error::MissingPath { path, .. } => format!("root {path}"),
            Error::Usage(m) => m,
            e => e.to_string(),
        })
    }

    #[test]
    fn the_work_queue_gives_the_level_order() {
        let g = graph(600);
        let roots = [path(0), path(2), path(0)];
        let want = by_levels(&roots[..2], &g).unwrap();
        assert!(want.len() > 400, "{}", want.len());
        for threads in [1, 4, 32] {
            assert_eq!(queue(&roots, &g, threads), Ok(want.clone()), "{threads}");
        }
    }

    #[test]
    fn a_missing_path_is_named_with_the_level_order_referrer() {
        let mut g = graph(300);
        // Referred to by several paths at different depths.
        g.remove(&path(40));
        let roots = [path(0)];
        let want = by_levels(&roots, &g).unwrap_err();
        assert!(want.starts_with(path(40).as_str()), "{want}");
        for threads in [1, 8, 32] {
            assert_eq!(queue(&roots, &g, threads), Err(want.clone()));
        }
        assert_eq!(queue(&[path(40)], &g, 4), Err(format!("root {}", path(40))));
    }
}
