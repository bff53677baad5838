//! Store sources: where path metadata (NAR size, references) comes from.
//!
//! nix-heft never links to libnixstore (nix-du's history shows that costs a
//! release per Nix version); it reads what Nix writes: the SQLite database of
//! a local or chroot store, the `.narinfo` files of a binary cache, or the
//! JSON that `nix path-info --json` prints.

mod binary_cache;
mod http_cache;
pub mod listing;
mod local;
pub mod local_cache;
pub mod netrc;

pub mod narinfo;
mod path_info_json;
pub mod signature;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

pub use binary_cache::BinaryCache;
pub use http_cache::HttpCache;
pub use local::LocalStore;
pub use path_info_json::PathInfoJson;

use crate::error::{Error, Result};
use crate::nar::hash::{HashHandle, HashingReader, NarHash};
use crate::store_path::StorePath;

/// The default store directory.
pub const DEFAULT_STORE_DIR: &str = "/nix/store";

/// Largest narinfo (or `nix-cache-info`) read. Nix writes a few hundred
/// bytes plus about 60 per reference, so 100,000 references take 6 MiB;
/// anything past this is not a narinfo, and is refused before it is read
/// whole.
pub const MAX_NARINFO: u64 = 16 << 20;

/// Largest NAR listing (`<hash>.ls`) read. Listings take about 60 bytes per
/// entry (cache.nixos.org's largest are a few MiB), and parsing one into a
/// JSON value costs about 19 times its size in memory (measured: a 15 MiB
/// listing of 270,000 entries, 293 MiB); a larger listing is not read and
/// the tree comes from the NAR, whose reader needs about 80 bytes per entry.
pub const MAX_LISTING: u64 = 16 << 20;

/// Reads a small metadata file (a narinfo or listing) of at most `max`
/// bytes; a larger one is an error naming the file and the limit, reached
/// without reading it whole. `NotFound` is passed through for callers that
/// treat it as absence.
pub(crate) fn read_capped(file: &Path, max: u64, what: &str) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let f = std::fs::File::open(file)?;
    if f.metadata()?.len() > max {
        return Err(std::io::Error::other(too_large(what, max)));
    }
    let mut out = Vec::new();
    f.take(max + 1).read_to_end(&mut out)?;
    if out.len() as u64 > max {
        return Err(std::io::Error::other(too_large(what, max)));
    }
    Ok(out)
}

/// "larger than the 16 MiB limit for a narinfo", for the error messages of
/// [`read_capped`] and the HTTP cache.
pub(crate) fn too_large(what: &str, max: u64) -> String {
    format!(
        "larger than the {} limit for {what}; refusing to read it",
        crate::units::iec(max)
    )
}

/// What a source knows about one valid path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathInfo {
    /// The path itself.
    pub path: StorePath,
    /// Size of its NAR serialisation, as Nix registers it.
    pub nar_size: u64,
    /// Registered references, possibly including the path itself.
    pub references: Vec<StorePath>,
}

/// A place nix-heft can read store metadata from.
pub trait StoreSource: Send + Sync {
    /// The logical store directory, e.g. `/nix/store` (also for chroot stores).
    fn store_dir(&self) -> &str;
    /// A short human description, used in messages ("chroot store /mnt").
    fn describe(&self) -> String;
    /// Metadata of one path, or `None` if the source does not hold it.
    fn path_info(&self, path: &StorePath) -> Result<Option<PathInfo>>;
    /// Whether the source holds `path`; cheaper than [`StoreSource::path_info`]
    /// where a source can answer without reading references.
    fn is_valid(&self, path: &StorePath) -> Result<bool> {
        Ok(self.path_info(path)?.is_some())
    }
    /// Paths that reference `path` directly, if the source can say without
    /// reading everything (the local store's `Refs` index can).
    fn referrers(&self, _path: &StorePath) -> Result<Option<Vec<StorePath>>> {
        Ok(None)
    }
    /// When the path was registered (seconds since the epoch), where the
    /// source records it (the local store's `registrationTime`); shown to
    /// tell candidates of an ambiguous name apart.
    fn registration_time(&self, _path: &StorePath) -> Result<Option<i64>> {
        Ok(None)
    }
    /// Every valid path the source holds; used to match names and globs.
    fn all_paths(&self) -> Result<Vec<StorePath>>;
    /// The closure of `roots`: every path reachable through references, each
    /// once, the roots first. Sources override this when they can do better
    /// than one `path_info` call per path.
    fn closure(&self, roots: &[StorePath]) -> Result<RawClosure> {
        closure_by_path_info(self, roots)
    }
    /// Where the files of `path` can be read on this machine, if the source
    /// has file contents on disk (local and chroot stores).
    fn real_path(&self, _path: &StorePath) -> Option<PathBuf> {
        None
    }
    /// The uncompressed NAR serialisation of `path`, for sources that hold
    /// NARs rather than files (binary caches); `None` when the source has no
    /// file contents at all.
    fn nar(&self, _path: &StorePath) -> Result<Option<Box<dyn std::io::Read + Send>>> {
        Ok(None)
    }
    /// [`StoreSource::nar`], with the compressed file hashed on its way in
    /// when the source knows what it must be (a narinfo's `FileHash` and
    /// `FileSize`): the read stage checks it once the whole NAR is read.
    fn nar_checked(&self, path: &StorePath) -> Result<Option<CheckedNar>> {
        Ok(self.nar(path)?.map(|r| (r, None)))
    }
    /// The file tree of `path` from a NAR listing (`<hash>.ls`), for caches
    /// that keep one: the tree without downloading or decompressing the
    /// NAR. `None` when there is none (the NAR then gives the tree).
    fn listing(&self, _path: &StorePath) -> Result<Option<crate::nar::tree::FileTree>> {
        Ok(None)
    }
    /// Where scan results of `path` may be kept across runs, with the
    /// path's NAR hash to key them by: sources that download NARs keep
    /// them so a rerun downloads none. `None`: not kept.
    fn scan_cache(&self, _path: &StorePath) -> Option<(local_cache::LocalCache, String)> {
        None
    }
    /// The hash the NAR of `path` must have (the narinfo's `NarHash`), for
    /// sources whose NARs can be damaged on their way: the read stage
    /// checks it while streaming. `None`: nothing to check against.
    fn expected_nar_hash(&self, _path: &StorePath) -> Option<String> {
        None
    }
    /// For sources that download: how many NARs and how many bytes (as
    /// sent, compressed) have been fetched so far, for progress display.
    fn fetched(&self) -> Option<(u64, u64)> {
        None
    }
    /// Non-fatal problems met while opening or reading (printed by the CLI).
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A NAR stream, and the check of the compressed file it is read from.
pub type CheckedNar = (Box<dyn std::io::Read + Send>, Option<FileCheck>);

/// The compressed file of a NAR, hashed and counted while the decompressor
/// reads it, and what its narinfo says it must be.
pub struct FileCheck {
    /// The file or URL, for messages.
    file: String,
    /// `FileHash`, when it is a SHA-256 hash (Nix writes no other).
    hash: Option<NarHash>,
    /// `FileSize`.
    size: Option<u64>,
    handle: HashHandle,
}

impl FileCheck {
    /// Wraps `r` (the compressed bytes of `file`) so they are hashed as they
    /// pass, when `info` gives a `FileHash` or `FileSize` to check them
    /// against; otherwise `r` as it is.
    pub fn wrap(
        r: Box<dyn std::io::Read + Send>,
        file: &str,
        info: &narinfo::NarInfo,
    ) -> (Box<dyn std::io::Read + Send>, Option<FileCheck>) {
        // Another algorithm is no sign of damage; the size is still checked.
        let hash = info
            .file_hash
            .as_deref()
            .and_then(|h| NarHash::parse(h).ok());
        if hash.is_none() && info.file_size.is_none() {
            return (r, None);
        }
        let (reader, handle) = HashingReader::new(r);
        let check = FileCheck {
            file: file.to_string(),
            hash,
            size: info.file_size,
            handle,
        };
        (Box::new(reader), Some(check))
    }

    /// Once the NAR has been read to its end (and the reader dropped): what
    /// is wrong with the compressed file, or `None` when it is what the
    /// narinfo says, or when it was not read to its end (then nothing can
    /// be said of the whole file).
    pub fn mismatch(self) -> Option<String> {
        if !self.handle.reached_end() {
            return None;
        }
        let (got, n) = self.handle.finish();
        let size_ok = self.size.is_none_or(|s| s == n);
        let hash_ok = self.hash.is_none_or(|h| h == got);
        if size_ok && hash_ok {
            return None;
        }
        let mut said = Vec::new();
        if let Some(s) = self.size {
            said.push(format!("FileSize {s}"));
        }
        if let Some(h) = self.hash {
            said.push(format!("FileHash {}", h.to_nix32()));
        }
        Some(format!(
            "compressed file mismatch: the narinfo says {}, but {} has {n} bytes hashing to {}; nothing read from it is used",
            said.join(" and "),
            self.file,
            got.to_nix32()
        ))
    }
}

/// A closure as read from a source: paths with dense indices, their NAR
/// sizes, and each path's references as indices into `paths` (self
/// references included, as Nix registers them).
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

    /// Adds a path not yet present and returns its index.
    pub(crate) fn push(&mut self, path: StorePath, nar_size: u64) -> u32 {
        self.paths.push(path);
        self.nar_sizes.push(nar_size);
        self.references.push(Vec::new());
        (self.paths.len() - 1) as u32
    }
}

/// Breadth-first closure through [`StoreSource::path_info`].
pub(crate) fn closure_by_path_info<S: StoreSource + ?Sized>(
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

/// How to open a source, beyond its `--store` string.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// A netrc file with credentials for HTTP caches (`--netrc-file`);
    /// otherwise nix.conf's `netrc-file`, then `~/.netrc`.
    pub netrc_file: Option<PathBuf>,
    /// Ignore what the local cache holds (fetch again, then store anew).
    pub refresh: bool,
    /// Check local store paths against the hashes their database records
    /// (`--verify`; binary caches are always checked).
    pub verify: bool,
}

/// Opens the source named by a `--store` argument, or the local store at
/// `/` when `spec` is `None`.
///
/// Accepted forms, as Nix users write them: `local`, `auto`, `daemon` (the
/// local store), `local?root=/mnt` or a directory holding
/// `nix/var/nix/db/db.sqlite` (a chroot store), `file:///path` or a directory
/// holding `nix-cache-info` (a binary cache), and a file holding
/// `nix path-info --json` output.
pub fn open(spec: Option<&str>) -> Result<Box<dyn StoreSource>> {
    open_with(spec, &OpenOptions::default())
}

/// [`open`] with options; `http://` and `https://` open an [`HttpCache`].
pub fn open_with(spec: Option<&str>, opts: &OpenOptions) -> Result<Box<dyn StoreSource>> {
    let Some(spec) = spec else {
        return open_local_root(Path::new("/"), opts.verify);
    };
    let unsupported = |reason: &str| Error::UnsupportedStore {
        spec: spec.to_string(),
        reason: reason.to_string(),
    };
    let (scheme_part, query) = match spec.split_once('?') {
        Some((a, b)) => (a, Some(b)),
        None => (spec, None),
    };
    if let Some(rest) = scheme_part.strip_prefix("file://") {
        return Ok(Box::new(BinaryCache::open(Path::new(rest))?));
    }
    if scheme_part.starts_with("http://") || scheme_part.starts_with("https://") {
        return Ok(Box::new(HttpCache::open(spec, opts)?));
    }
    if scheme_part.starts_with("s3://") {
        return Err(unsupported(
            "s3:// caches are not supported yet; for a public bucket, use its HTTPS endpoint \
             (--store https://BUCKET.s3.REGION.amazonaws.com)",
        ));
    }
    if matches!(scheme_part, "local" | "auto" | "daemon" | "unix") {
        let root = query
            .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("root=")))
            .unwrap_or("/");
        return open_local_root(Path::new(root), opts.verify);
    }
    if scheme_part.contains("://") {
        return Err(unsupported(
            "only local and chroot stores, file://, http:// and https:// binary caches and path-info JSON files can be read",
        ));
    }
    let p = Path::new(spec);
    let meta = std::fs::metadata(p).map_err(|e| Error::UnsupportedStore {
        spec: spec.to_string(),
        reason: e.to_string(),
    })?;
    if meta.is_dir() {
        if p.join("nix-cache-info").is_file() {
            return Ok(Box::new(BinaryCache::open(p)?));
        }
        if p.join("nix/var/nix/db/db.sqlite").exists() {
            return open_local_root(p, opts.verify);
        }
        return Err(unsupported(
            "the directory holds neither nix-cache-info (binary cache) nor nix/var/nix/db/db.sqlite (chroot store)",
        ));
    }
    Ok(Box::new(PathInfoJson::open(p)?))
}

fn open_local_root(root: &Path, verify: bool) -> Result<Box<dyn StoreSource>> {
    let db = root.join("nix/var/nix/db/db.sqlite");
    if std::fs::symlink_metadata(&db).is_err() {
        return Err(Error::NoLocalStore(db));
    }
    Ok(Box::new(LocalStore::open(root)?.with_verify(verify)))
}
