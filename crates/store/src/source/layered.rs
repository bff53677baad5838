//! Several stores read as one, as Nix reads its substituters: a path's
//! metadata and contents come from the first store, in the order given,
//! that holds it (`--store A --store B`, `--substituters 'A B'`).
//!
//! Each store keeps its own caches and counters; this layer only remembers
//! which store answered for each path, so that the path's NAR, listing and
//! kept reads all come from that one store (each NAR fetched at most once,
//! from the store whose narinfo vouches for it) and reports can say where
//! a path came from ([`PathMetadata::provenance`]).
//!
//! A narinfo a cache gives but the run's signature policy refuses is, as in
//! Nix's substitution (`PathSubstitutionGoal::tryNext`), no answer: the
//! next store is asked, and the refusal is a warning when another store
//! answers, the error when none does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{
    Nar, PathContents, PathInfo, PathMetadata, Provenance, RawClosure, RunLog, StoreSource,
};
use crate::error::{Error, Result};
use crate::local_cache::LocalCache;
use nix_heft_format::nar::tree::FileTree;
use nix_heft_format::store_path::StorePath;

/// One store of a [`Layered`] source and the name reports give it.
pub struct Layer {
    /// The store, opened with the run's shared [`RunLog`].
    pub source: Box<dyn StoreSource>,
    /// How provenance names it when the store does not name itself (a
    /// local or chroot store: `local`, `local?root=/mnt`): the `--store`
    /// string as given.
    pub label: String,
}

/// Stores asked in order; see the module docs.
pub struct Layered {
    layers: Vec<Layer>,
    store_dir: String,
    /// Which layer answered for each path looked up so far, and what it
    /// said.
    answered: Mutex<HashMap<StorePath, (usize, PathInfo)>>,
    pool: rayon::ThreadPool,
    log: Arc<RunLog>,
    /// Per layer: a refusal of one of its narinfos was warned about (one
    /// warning per store, not one per path).
    warned: Vec<std::sync::atomic::AtomicBool>,
}

impl Layered {
    /// The stores of `layers`, asked in that order; they must share one
    /// store directory (a path means the same thing in each) and `log`
    /// (the one they were opened with).
    pub fn new(layers: Vec<Layer>, log: Arc<RunLog>, lookups: usize) -> Result<Self> {
        let first = layers
            .first()
            .ok_or_else(|| Error::Usage("no store to read".into()))?;
        let store_dir = first.source.store_dir().to_string();
        if let Some(other) = layers.iter().find(|l| l.source.store_dir() != store_dir) {
            return Err(Error::UnsupportedStore {
                spec: other.label.clone(),
                reason: format!(
                    "its store directory is {}, but {} has {store_dir}: stores read together must \
                     share one",
                    other.source.store_dir(),
                    first.source.describe()
                ),
            });
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(lookups.max(1))
            .thread_name(|i| format!("nix-heft-layers-{i}"))
            .build()
            .map_err(|source| crate::error::Error::Threads {
                what: "the stores' lookups".into(),
                source,
            })?;
        Ok(Layered {
            warned: layers.iter().map(|_| Default::default()).collect(),
            layers,
            store_dir,
            answered: Mutex::new(HashMap::new()),
            pool,
            log,
        })
    }

    /// The stores, in the order they are asked.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// The layer that holds `path` (asking the stores in order if it was
    /// not looked up yet), with its metadata.
    fn find(&self, path: &StorePath) -> Result<Option<(usize, PathInfo)>> {
        if let Some(known) = self
            .answered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
        {
            return Ok(Some(known.clone()));
        }
        let mut refused: Vec<(usize, Error)> = Vec::new();
        for (i, layer) in self.layers.iter().enumerate() {
            match layer.source.path_info(path) {
                Ok(Some(info)) => {
                    for (j, e) in &refused {
                        if !self.warned[*j].swap(true, std::sync::atomic::Ordering::Relaxed) {
                            self.log.warn(format!(
                                "{e}; {path} is taken from {} instead, and so is every other \
                                 path {} gives no trusted narinfo for",
                                layer.source.describe(),
                                self.layers[*j].source.describe()
                            ));
                        }
                    }
                    self.answered
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(path.clone(), (i, info.clone()));
                    return Ok(Some((i, info)));
                }
                Ok(None) => {}
                Err(e @ Error::UntrustedNarinfo(_)) => refused.push((i, e)),
                Err(e) => return Err(e),
            }
        }
        match refused.into_iter().next() {
            Some((_, e)) => Err(e),
            None => Ok(None),
        }
    }

    /// When the first store is closed under references (a local store),
    /// the part of the closure it holds, read in one call (one database
    /// snapshot, its own fast path) and remembered as its answers: every
    /// path reachable from a root it holds is in it, and it is asked
    /// first. The level-by-level walk then finds those paths known.
    fn first_layer_closure(&self, roots: &[StorePath]) -> Result<()> {
        let first = &self.layers[0].source;
        if !first.closure_closed() {
            return Ok(());
        }
        let mut held = Vec::new();
        for r in roots {
            if first.is_valid(r)? {
                held.push(r.clone());
            }
        }
        if held.is_empty() {
            return Ok(());
        }
        let raw = first.closure(&held)?;
        let mut answered = self.answered.lock().unwrap_or_else(|e| e.into_inner());
        for (k, p) in raw.paths.iter().enumerate() {
            let info = PathInfo {
                path: p.clone(),
                nar_size: raw.nar_sizes[k],
                references: raw.references[k]
                    .iter()
                    .map(|&r| raw.paths[r as usize].clone())
                    .collect(),
            };
            answered.insert(p.clone(), (0, info));
        }
        Ok(())
    }

    /// The store that answered for `path`, once it is known.
    fn holder(&self, path: &StorePath) -> Result<Option<&dyn StoreSource>> {
        Ok(self
            .find(path)?
            .map(|(i, _)| self.layers[i].source.as_ref()))
    }
}

impl PathMetadata for Layered {
    fn store_dir(&self) -> &str {
        &self.store_dir
    }

    /// "the stores A, B (asked in this order)": what a missing path's
    /// error names, every store that was asked.
    fn describe(&self) -> String {
        let all: Vec<String> = self.layers.iter().map(|l| l.source.describe()).collect();
        format!("any of the stores {} (asked in this order)", all.join(", "))
    }

    fn path_info(&self, path: &StorePath) -> Result<Option<PathInfo>> {
        Ok(self.find(path)?.map(|(_, info)| info))
    }

    fn registration_time(&self, path: &StorePath) -> Result<Option<i64>> {
        match self.holder(path)? {
            Some(s) => s.registration_time(path),
            None => Ok(None),
        }
    }

    fn deriver(&self, path: &StorePath) -> Result<Option<StorePath>> {
        match self.holder(path)? {
            Some(s) => s.deriver(path),
            None => Ok(None),
        }
    }

    fn valid_derivers(&self, path: &StorePath) -> Result<Vec<StorePath>> {
        for l in &self.layers {
            let d = l.source.valid_derivers(path)?;
            if !d.is_empty() {
                return Ok(d);
            }
        }
        Ok(Vec::new())
    }

    fn has_provenance(&self) -> bool {
        true
    }

    fn provenance(&self, path: &StorePath) -> Option<Provenance> {
        let i = self
            .answered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)?
            .0;
        let layer = &self.layers[i];
        // A local store vouches for itself; it is still named, so that a
        // report over several stores says where each path came from.
        Some(layer.source.provenance(path).unwrap_or_else(|| Provenance {
            store: layer.label.clone(),
            signed_by: None,
            content_addressed: false,
        }))
    }

    /// The paths of every store that can list its paths (an HTTP cache
    /// cannot, and is left out: a name matches only what the others hold);
    /// the first store's error when none can.
    fn all_paths(&self) -> Result<Vec<StorePath>> {
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut first_err = None;
        let mut listed = false;
        for l in &self.layers {
            match l.source.all_paths() {
                Ok(ps) => {
                    listed = true;
                    out.extend(ps.into_iter().filter(|p| seen.insert(p.clone())));
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match (listed, first_err) {
            (false, Some(e)) => Err(e),
            _ => Ok(out),
        }
    }

    /// A work queue of lookups (`closure_by_queue`; `lookups` of
    /// them in flight, as many as one HTTP cache makes on its own): each
    /// path is asked of the first store, and only a miss of the next, as
    /// soon as its referrer's answer arrives.
    fn closure(&self, roots: &[StorePath]) -> Result<RawClosure> {
        let describe = self.describe();
        self.first_layer_closure(roots)?;
        self.pool.install(|| {
            super::closure_by_queue(
                roots,
                &describe,
                |p| self.path_info(p),
                |p, referrer| Error::DanglingReference {
                    referrer: referrer.to_string(),
                    reference: p.to_string(),
                    store: describe.clone(),
                },
            )
        })
    }
}

impl PathContents for Layered {
    fn real_path(&self, path: &StorePath) -> Option<std::path::PathBuf> {
        self.holder(path).ok().flatten()?.real_path(path)
    }

    fn nar(&self, path: &StorePath, check_file: bool) -> Result<Option<Nar>> {
        match self.holder(path)? {
            Some(s) => s.nar(path, check_file),
            None => Ok(None),
        }
    }

    fn listing(&self, path: &StorePath) -> Result<Option<FileTree>> {
        match self.holder(path)? {
            Some(s) => s.listing(path),
            None => Ok(None),
        }
    }

    fn expected_nar_hash(&self, path: &StorePath) -> Option<String> {
        self.holder(path).ok().flatten()?.expected_nar_hash(path)
    }

    /// The answering store's local cache: kept reads stay per cache URL.
    fn kept_reads(&self, path: &StorePath) -> Option<&LocalCache> {
        self.holder(path).ok().flatten()?.kept_reads(path)
    }
}

impl StoreSource for Layered {
    fn log(&self) -> &RunLog {
        &self.log
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::source::PathInfoJson;

    const A: &str = "/nix/store/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-a";
    const B: &str = "/nix/store/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb-b";
    const C: &str = "/nix/store/cccccccccccccccccccccccccccccccc-c";

    /// A path-info JSON store of `entries` (path, NAR size, references).
    fn json_layer(label: &str, entries: &[(&str, u64, &[&str])]) -> Layer {
        let v: Vec<serde_json::Value> = entries
            .iter()
            .map(|(p, n, r)| serde_json::json!({"path": p, "narSize": n, "references": r}))
            .collect();
        let source = PathInfoJson::from_bytes(
            serde_json::to_string(&v).unwrap().as_bytes(),
            Path::new(label),
            Default::default(),
        )
        .unwrap();
        Layer {
            source: Box::new(source),
            label: label.to_string(),
        }
    }

    fn sp(p: &str) -> StorePath {
        StorePath::parse("/nix/store", p).unwrap()
    }

    #[test]
    fn each_path_comes_from_the_first_store_that_holds_it() {
        // B is in both: the first answers, with its own size.
        let l = Layered::new(
            vec![
                json_layer("first", &[(A, 10, &[B]), (B, 20, &[C])]),
                json_layer("second", &[(B, 99, &[]), (C, 30, &[])]),
            ],
            Default::default(),
            4,
        )
        .unwrap();
        let raw = l.closure(&[sp(A)]).unwrap();
        assert_eq!(raw.len(), 3);
        assert_eq!(raw.nar_sizes, [10, 20, 30]);
        let from = |p: &str| l.provenance(&sp(p)).unwrap().store;
        assert_eq!(
            (from(A), from(B), from(C)),
            ("first".into(), "first".into(), "second".into())
        );
        let mut all = l.all_paths().unwrap();
        all.sort();
        assert_eq!(all, [sp(A), sp(B), sp(C)]);
    }

    #[test]
    fn a_path_in_no_store_names_every_store() {
        let l = Layered::new(
            vec![
                json_layer("first.json", &[(A, 10, &[B])]),
                json_layer("second.json", &[]),
            ],
            Default::default(),
            4,
        )
        .unwrap();
        let e = l.closure(&[sp(A)]).unwrap_err().to_string();
        assert!(e.contains("first.json") && e.contains("second.json"), "{e}");
        assert!(e.contains(B) && e.contains(A), "{e}");
        let e = l.closure(&[sp(C)]).unwrap_err().to_string();
        assert!(e.contains("first.json") && e.contains("second.json"), "{e}");
        assert!(Layered::new(Vec::new(), Default::default(), 4).is_err());
    }
}
