//! What Nix's garbage collector sees of a local or chroot store, read as
//! Nix 2.8 reads it (`libstore/gc.cc`), never written:
//!
//! - [`WholeStore`]: every valid path with its NAR size and references,
//!   and the derivation links the collector follows with `keep-outputs`
//!   and `keep-derivations`, from one read of the database
//!   ([`whole::read`]);
//! - [`roots`]: the roots, as `findRoots` finds them (the `gcroots` and
//!   `profiles` trees, direct and indirect links, stale links), the
//!   run-time roots of `findRuntimeRoots` (`/proc`) and the temporary roots
//!   of live Nix processes (`temproots/`);
//! - [`disk`]: what the store directory holds on disk (the entries the
//!   collector walks, valid or not) and, for the on-disk figure, every
//!   inode of every path and of `.links`.
//!
//! The liveness walk itself (which paths a root keeps) is the core crate's
//! (`nix_heft_ops::gc`); this module only reads.

pub mod disk;
pub mod roots;
pub mod whole;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use nix_heft_format::store_path::StorePath;

/// Where a store keeps its state (`nix/var/nix` under its root): the
/// database, `gcroots/`, `profiles/`, `temproots/`. Nix 2.8's `stateDir`
/// for a store opened with a root directory; `NIX_STATE_DIR` is not read,
/// as the database's location is not (the store's root decides both).
pub fn state_dir(root: &Path) -> PathBuf {
    root.join("nix/var/nix")
}

/// Where a store's paths are on this machine: `/nix/store` under its root.
pub fn real_store_dir(root: &Path) -> PathBuf {
    root.join("nix/store")
}

/// Every valid path of a store, by dense index, and the edges the
/// collector follows between them.
#[derive(Debug, Default)]
pub struct WholeStore {
    /// The valid paths (`ValidPaths`), in the database's id order.
    pub paths: Vec<StorePath>,
    /// `narSize` of each path (NULL read as 0, as Nix reads it).
    pub nar_sizes: Vec<u64>,
    /// References of path `i`: `refs[ref_offsets[i]..ref_offsets[i + 1]]`,
    /// ascending, each once, a path's reference to itself left out (it
    /// keeps nothing else alive).
    pub ref_offsets: Vec<u32>,
    /// See [`WholeStore::ref_offsets`].
    pub refs: Vec<u32>,
    /// `(derivation, output)` for each row of `DerivationOutputs` whose
    /// derivation and output are both valid: what `keep-outputs` keeps of
    /// a live derivation (`queryPartialDerivationOutputMap`, and its
    /// reverse `queryValidDerivers`). Empty unless derivers were asked for.
    pub drv_outputs: Vec<(u32, u32)>,
    /// `(output, derivation)` for the rows of [`WholeStore::drv_outputs`]
    /// whose output also names that derivation as its `deriver`: what
    /// `keep-derivations` keeps of a live output (the collector's walk
    /// requires both). Empty unless derivers were asked for.
    pub output_derivers: Vec<(u32, u32)>,
    /// The paths by hash part (see [`WholeStore::find`]).
    pub index: PathIndex,
}

/// Valid paths by hash part, to look paths up by their text without
/// holding a second copy of it (the index outlives the paths' move into a
/// graph: give it the paths to check against).
#[derive(Debug, Default)]
pub struct PathIndex {
    /// By hash part. foldhash, not the standard SipHash: the keys are
    /// random already, and with a million and a half roots looked up the
    /// hashing showed in profiles (the lookups and the locations' set took
    /// 1.3 s of CPU with SipHash, 0.9 s with foldhash; `perf record`).
    by_hash: HashMap<[u8; 32], u32, foldhash::fast::RandomState>,
}

impl PathIndex {
    /// Indexes `paths` by hash part.
    pub fn new(paths: &[StorePath]) -> PathIndex {
        PathIndex {
            by_hash: paths
                .iter()
                .enumerate()
                .filter_map(|(i, p)| hash_key(p.hash_part()).map(|k| (k, i as u32)))
                .collect(),
        }
    }

    /// The index in `paths` (those indexed) of the path written `path`
    /// (`/nix/store/<hash>-<name>` exactly), as Nix's `isValidPath` asks.
    pub fn find(&self, paths: &[StorePath], path: &str) -> Option<u32> {
        let base = path.strip_prefix(crate::source::DEFAULT_STORE_DIR)?;
        self.find_base(paths, base.strip_prefix('/')?)
    }

    /// [`PathIndex::find`] of `/nix/store/<base>`, not written out.
    pub fn find_base(&self, paths: &[StorePath], base: &str) -> Option<u32> {
        let i = self.find_hash(base.get(..32)?)?;
        let p = paths.get(i as usize)?.as_str();
        let rest = p.strip_prefix(crate::source::DEFAULT_STORE_DIR)?;
        (rest.strip_prefix('/')? == base).then_some(i)
    }

    /// The index of the path whose hash part is `hash` (how the collector
    /// matches temporary roots: by hash part, so that a build's `.lock`
    /// and `.chroot` neighbours count too).
    pub fn find_hash(&self, hash: &str) -> Option<u32> {
        self.by_hash.get(&hash_key(hash)?).copied()
    }
}

impl WholeStore {
    /// Number of valid paths.
    pub fn len(&self) -> usize {
        self.paths.len()
    }

    /// True when the store holds no valid path.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// The references of path `i` (itself excluded).
    pub fn references(&self, i: u32) -> &[u32] {
        &self.refs[self.ref_offsets[i as usize] as usize..self.ref_offsets[i as usize + 1] as usize]
    }

    /// The index of the valid path written `path`.
    pub fn find(&self, path: &str) -> Option<u32> {
        self.index.find(&self.paths, path)
    }
}

/// A 32-character hash part as a map key.
fn hash_key(hash: &str) -> Option<[u8; 32]> {
    hash.as_bytes().try_into().ok()
}
