//! [`RawClosure`], the closure a source reads (paths, NAR sizes,
//! references by index), and the two ways of reading one through
//! [`PathMetadata::path_info`]: path by path, or a level of the graph at a
//! time in parallel.

use std::collections::{HashMap, HashSet};

use super::{PathInfo, PathMetadata};
use crate::error::{Error, Result};
use crate::store_path::StorePath;

/// A closure as read from a source: paths with dense indices, their NAR
/// sizes, and each path's references as indices (self references
/// included, as Nix registers them).
///
/// Built with [`RawClosure::push`] and [`RawClosure::add_reference`] (or by
/// a source's [`PathMetadata::closure`]), it keeps these invariants, which
/// [`crate::graph::Graph::try_from_raw`] relies on:
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
    pub(crate) paths: Vec<StorePath>,
    /// NAR size of each path.
    pub(crate) nar_sizes: Vec<u64>,
    /// References of each path, as indices into `paths`.
    pub(crate) references: Vec<Vec<u32>>,
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
        let n = self.paths.len();
        let mut order: Vec<u32> = (0..n as u32).collect();
        order[root_count.min(n)..]
            .sort_by(|&a, &b| self.paths[a as usize].cmp(&self.paths[b as usize]));
        let mut new_id = vec![0u32; n];
        for (new, &old) in order.iter().enumerate() {
            new_id[old as usize] = new as u32;
        }
        let mut paths: Vec<Option<StorePath>> = self.paths.into_iter().map(Some).collect();
        let mut refs: Vec<Option<Vec<u32>>> = self.references.into_iter().map(Some).collect();
        let mut out = RawClosure::default();
        for &old in &order {
            let o = old as usize;
            out.paths.push(paths[o].take().expect("each once"));
            out.nar_sizes.push(self.nar_sizes[o]);
            let mut r: Vec<u32> = refs[o]
                .take()
                .expect("each once")
                .into_iter()
                .map(|x| new_id[x as usize])
                .collect();
            r.sort_unstable();
            out.references.push(r);
        }
        out
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

/// Breadth-first closure, one level at a time, each level's lookups in
/// parallel (on the rayon pool the caller runs in): binary caches, where
/// each lookup is a file open or an HTTP request and they overlap well.
/// `missing(path, referrer)` is the error for a referenced path that
/// `lookup` does not find; a missing root is [`Error::MissingPath`].
pub(crate) fn closure_by_levels(
    roots: &[StorePath],
    describe: &str,
    lookup: impl Fn(&StorePath) -> Result<Option<PathInfo>> + Sync,
    missing: impl Fn(&StorePath, &StorePath) -> Error,
) -> Result<RawClosure> {
    use rayon::prelude::*;
    let mut queued: HashSet<StorePath> = HashSet::new();
    let mut level: Vec<(Option<usize>, StorePath)> = Vec::new();
    for r in roots {
        if queued.insert(r.clone()) {
            level.push((None, r.clone()));
        }
    }
    let mut infos: Vec<PathInfo> = Vec::new();
    while !level.is_empty() {
        let read: Vec<(Option<usize>, StorePath, Option<PathInfo>)> = level
            .into_par_iter()
            .map(|(from, p)| Ok((from, p.clone(), lookup(&p)?)))
            .collect::<Result<_>>()?;
        let mut next = Vec::new();
        for (from, p, info) in read {
            let info = info.ok_or_else(|| match from {
                None => Error::MissingPath {
                    path: p.to_string(),
                    store: describe.to_string(),
                },
                Some(f) => missing(&p, &infos[f].path),
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

/// Breadth-first closure, one level at a time, each level looked up with
/// one call of `lookup_many` (the paths in order, their infos in the same
/// order): sources whose lookups cost most per call, not per path (the
/// build graph's, one database read per level). Errors as
/// [`closure_by_levels`]'s: a missing root is [`Error::MissingPath`], a
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
