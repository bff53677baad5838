//! Store sources: where path metadata (NAR size, references) and file
//! contents come from.
//!
//! nix-heft never links to libnixstore (nix-du's history shows that costs a
//! release per Nix version); it reads what Nix writes: the SQLite database of
//! a local or chroot store, the `.narinfo` files of a binary cache, or the
//! JSON that `nix path-info --json` prints.
//!
//! A source answers two questions, one trait each: what a path is
//! ([`PathMetadata`]: NAR size, references, closures) and what it contains
//! ([`PathContents`]: files on disk, a NAR, a listing). What a run observes
//! of it (warnings, download counts) is no question asked of the source:
//! it writes them to the shared [`RunLog`] it was opened with.

mod binary_cache;
pub mod build_graph;
mod closure;
mod layered;
pub(crate) mod local;
mod run_log;
mod transport;

pub mod narinfo;
mod path_info_json;
pub mod signature;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use binary_cache::BinaryCache;
pub use closure::RawClosure;
pub(crate) use closure::closure_by_queue;
pub use layered::{Layer, Layered};
pub use local::LocalStore;
pub use path_info_json::PathInfoJson;
pub use run_log::{Downloads, RunLog};
pub use transport::http::http_connections;

use crate::error::{Error, Result};
use crate::local_cache::LocalCache;
use nix_heft_format::nar::hash::{HashHandle, HashingReader, NarHash};
use nix_heft_format::nar::tree::FileTree;
use nix_heft_format::store_path::StorePath;

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
        nix_heft_types::units::iec(max)
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

/// Where a path's metadata came from ([`PathMetadata::provenance`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Provenance {
    /// The store that answered, as its URL (`https://cache.nixos.org`,
    /// `file:///srv/cache`).
    pub store: String,
    /// The trusted key whose signature of the narinfo verified; `None`
    /// when it was accepted unsigned (`--no-require-sigs`), is
    /// `content_addressed`, or the store needs none.
    pub signed_by: Option<String>,
    /// Trusted unsigned because its `CA` field proves its store path, as
    /// Nix trusts it (`source::signature::content_addressed`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub content_addressed: bool,
}

impl Provenance {
    /// `STORE` or `STORE (signed by KEY)`, `(content-addressed)`, or `(no
    /// trusted signature)` for a narinfo accepted without one: how text
    /// output shows it.
    pub fn label(&self) -> String {
        match &self.signed_by {
            Some(k) => format!("{} (signed by {k})", self.store),
            None if self.content_addressed => format!("{} (content-addressed)", self.store),
            None if self.store.contains("://") => format!("{} (no trusted signature)", self.store),
            None => self.store.clone(),
        }
    }
}

/// What a store says a path is: its metadata (NAR size, references), which
/// paths it holds, and closures over them. `Graph::load` and `roots` need
/// only this.
///
/// A source implements [`PathMetadata::store_dir`],
/// [`PathMetadata::describe`], [`PathMetadata::path_info`] and
/// [`PathMetadata::all_paths`]; the rest have defaults built on those,
/// which a source overrides when it can answer better (the local store's
/// `Refs` index, a cache's parallel narinfo requests).
pub trait PathMetadata: Send + Sync {
    /// The logical store directory, e.g. `/nix/store` (also for chroot stores).
    fn store_dir(&self) -> &str;
    /// A short human description, used in messages ("chroot store /mnt").
    fn describe(&self) -> String;
    /// Metadata of one path, or `None` if the source does not hold it.
    fn path_info(&self, path: &StorePath) -> Result<Option<PathInfo>>;
    /// [`PathMetadata::path_info`] of each of `paths`, in order. Sources
    /// override it where one call for many is cheaper (the local store:
    /// one database read for all, not one each).
    fn path_infos(&self, paths: &[StorePath]) -> Result<Vec<Option<PathInfo>>> {
        paths.iter().map(|p| self.path_info(p)).collect()
    }
    /// [`PathMetadata::is_valid`] of each of `paths`, in order; overridden
    /// as [`PathMetadata::path_infos`] is.
    fn are_valid(&self, paths: &[StorePath]) -> Result<Vec<bool>> {
        paths.iter().map(|p| self.is_valid(p)).collect()
    }
    /// Whether the source holds `path`; cheaper than [`PathMetadata::path_info`]
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
    /// The valid paths built by the same derivation as `path` (its sibling
    /// outputs, `path` included), where the source records derivers (the
    /// local store's `deriver` column); `None` when it cannot say, or when
    /// no deriver is recorded for `path`.
    fn same_deriver(&self, path: &StorePath) -> Result<Option<Vec<StorePath>>> {
        Ok(self
            .same_deriver_many(std::slice::from_ref(path))?
            .and_then(|mut m| m.remove(path)))
    }
    /// [`PathMetadata::same_deriver`] for many paths at once (one scan of
    /// the local store's database rather than one per path); paths without
    /// a recorded deriver are absent from the map.
    fn same_deriver_many(
        &self,
        _paths: &[StorePath],
    ) -> Result<Option<std::collections::HashMap<StorePath, Vec<StorePath>>>> {
        Ok(None)
    }
    /// The derivation that built `path`, where the source records it (the
    /// local store's `deriver` column, a narinfo's `Deriver` line): what
    /// `nix path-info --derivation` maps an output to. `None` when the
    /// source does not hold `path` or records no deriver for it (a path
    /// added rather than built). The `.drv` named need not be valid.
    fn deriver(&self, _path: &StorePath) -> Result<Option<StorePath>> {
        Ok(None)
    }
    /// The valid derivations that list `path` as an output, whether or not
    /// `path` is valid (Nix's `LocalStore::queryValidDerivers`, over the
    /// local store's `DerivationOutputs` table): how an output that a
    /// failed build left unregistered, which has no recorded deriver,
    /// finds its derivation. Empty where the source does not know.
    fn valid_derivers(&self, _path: &StorePath) -> Result<Vec<StorePath>> {
        Ok(Vec::new())
    }
    /// Where the metadata of `path` came from and what vouches for it, once
    /// the source has answered for it: binary caches name themselves and
    /// the trusted key that signed its narinfo. `None` from sources that
    /// are their own authority (a local store's database, a path-info
    /// file), which Nix trusts as they are.
    fn provenance(&self, _path: &StorePath) -> Option<Provenance> {
        None
    }
    /// Whether [`PathMetadata::provenance`] can say anything at all, so
    /// that a report over a store that cannot (a local store) skips
    /// looking.
    fn has_provenance(&self) -> bool {
        false
    }
    /// Whether every reference of a path the source holds is a path it
    /// holds: true of a store's database (Nix registers a path only after
    /// its references), not of a binary cache, which may lack some. A
    /// layered source then reads such a store's part of a closure in one
    /// [`PathMetadata::closure`] call.
    fn closure_closed(&self) -> bool {
        false
    }
    /// Every valid path the source holds; used to match names and globs.
    fn all_paths(&self) -> Result<Vec<StorePath>>;
    /// The closure of `roots`: every path reachable through references, each
    /// once, the roots first. Sources override this when they can do better
    /// than one `path_info` call per path.
    fn closure(&self, roots: &[StorePath]) -> Result<RawClosure> {
        closure::closure_by_path_info(self, roots)
    }
}

/// What a store path contains, for the read stage: files on disk, a NAR,
/// or a NAR listing of its tree, and what its NAR must hash to.
///
/// Every method defaults to "not here", so a source without file contents
/// (path-info JSON) implements none, and one with files on disk implements
/// [`PathContents::real_path`] and [`PathContents::nar`] (the NAR that
/// `--verify` checks).
pub trait PathContents: Send + Sync {
    /// Where the files of `path` can be read on this machine, if the source
    /// has file contents on disk (local and chroot stores).
    fn real_path(&self, _path: &StorePath) -> Option<PathBuf> {
        None
    }
    /// The uncompressed NAR serialisation of `path`; `None` when the source
    /// has no file contents at all. With `check_file`, the compressed file
    /// is hashed on its way in when the source knows what it must be (a
    /// narinfo's `FileHash` and `FileSize`): [`Nar::file_check`], which the
    /// read stage checks once the whole NAR is read.
    fn nar(&self, _path: &StorePath, _check_file: bool) -> Result<Option<Nar>> {
        Ok(None)
    }
    /// The file tree of `path` from a NAR listing (`<hash>.ls`), for caches
    /// that keep one: the tree without downloading or decompressing the
    /// NAR. `None` when there is none (the NAR then gives the tree).
    fn listing(&self, _path: &StorePath) -> Result<Option<FileTree>> {
        Ok(None)
    }
    /// The hash the NAR of `path` must have (the narinfo's `NarHash`, or
    /// the database's with `--verify`), for sources whose NARs can be
    /// damaged on their way: the read stage checks it while streaming.
    /// `None`: nothing to check against.
    fn expected_nar_hash(&self, _path: &StorePath) -> Option<String> {
        None
    }
    /// The local cache where reads of `path` are kept across runs, keyed
    /// by its [`PathContents::expected_nar_hash`] (so a source returning
    /// one must know that hash): sources that download NARs keep them so a
    /// rerun downloads none. `None`: not kept.
    fn kept_reads(&self, _path: &StorePath) -> Option<&LocalCache> {
        None
    }
}

/// A store as `--store` opens it: what its paths are, what they contain,
/// and the [`RunLog`] it writes its warnings and download counts to.
///
/// Stages take the narrowest trait they need (`&dyn PathMetadata`,
/// `&dyn PathContents`); a `&dyn StoreSource` is passed to either as it is.
pub trait StoreSource: PathMetadata + PathContents {
    /// The log this source writes to (given when it was opened, see
    /// [`OpenOptions::log`]).
    fn log(&self) -> &RunLog;
    /// The `Priority` of a binary cache's `nix-cache-info` (lower is asked
    /// first), by which `--substituters auto` orders caches as Nix does;
    /// `None` for stores without one.
    fn priority(&self) -> Option<u64> {
        None
    }
}

/// The `Priority:` of a `nix-cache-info` text, if it has a valid one.
pub(crate) fn cache_priority(info: &str) -> Option<u64> {
    info.lines()
        .find_map(|l| l.strip_prefix("Priority:"))
        .and_then(|v| v.trim().parse().ok())
}

/// A path's NAR as a source serves it.
pub struct Nar {
    /// The uncompressed NAR stream.
    pub reader: Box<dyn std::io::Read + Send>,
    /// The check of the compressed file it is read from, when asked for and
    /// the source knows what that file must be.
    pub file_check: Option<FileCheck>,
    /// Fetched over a network: a NAR that breaks off mid-body or arrives
    /// damaged is worth fetching again; a local one is read once.
    pub downloaded: bool,
}

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
    /// Which narinfos of binary caches are accepted (trusted keys, whether
    /// a signature is required), shared by every cache of the run. `None`
    /// checks nothing: a library caller that wants Nix's rules passes the
    /// policy the command line builds from nix.conf.
    pub signatures: Option<Arc<signature::SigPolicy>>,
    /// Requests an HTTP cache has in flight at once (`--http-connections`,
    /// else nix.conf's `http-connections`; 0 is Nix's "no limit", capped
    /// at 256); `None`: 128. Each is a connection kept alive and a thread.
    pub http_connections: Option<usize>,
    /// The log the source writes its warnings and download counts to. The
    /// default is a log of its own; a clone of these options shares it, so
    /// a source opened over several stores hands each the same one.
    pub log: Arc<RunLog>,
}

/// Where `src` keeps its files on this machine (its store directory, or a
/// chroot store's directory under its root), or `None` for a store without
/// files on disk (a binary cache, path-info JSON). Any path shows it, valid
/// or not: a `.drv` name that no store holds is asked.
pub fn files_dir(src: &dyn StoreSource) -> Option<PathBuf> {
    let probe = StorePath::parse(
        src.store_dir(),
        &format!("{}/{}-x.drv", src.store_dir(), "0".repeat(32)),
    )
    .ok()?;
    src.real_path(&probe)
        .and_then(|p| p.parent().map(Path::to_path_buf))
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

/// [`open`] with options; `http://` and `https://` open a [`BinaryCache`]
/// over HTTP.
pub fn open_with(spec: Option<&str>, opts: &OpenOptions) -> Result<Box<dyn StoreSource>> {
    let Some(spec) = spec else {
        return open_local_root(Path::new("/"), opts);
    };
    let log = Arc::clone(&opts.log);
    let unsupported = |reason: &str| Error::UnsupportedStore {
        spec: spec.to_string(),
        reason: reason.to_string(),
    };
    let p = match Spelled::of(spec) {
        Spelled::File { path, .. } => {
            return Ok(Box::new(BinaryCache::open_dir(Path::new(path), opts)?));
        }
        Spelled::Url {
            scheme: "http" | "https",
        } => {
            return Ok(Box::new(BinaryCache::open_http(spec, opts)?));
        }
        Spelled::Url { scheme: "s3" } => {
            return Err(unsupported(
                "s3:// caches are not supported yet; for a public bucket, use its HTTPS endpoint",
            ));
        }
        Spelled::Local { query } => return open_local_root(&local_scheme_root(query), opts),
        Spelled::Url { .. } => {
            return Err(unsupported(
                "only local and chroot stores, file://, http:// and https:// binary caches and path-info JSON files can be read",
            ));
        }
        Spelled::Path(p) => Path::new(p),
    };
    let meta = std::fs::metadata(p).map_err(|e| Error::UnsupportedStore {
        spec: spec.to_string(),
        reason: e.to_string(),
    })?;
    if meta.is_dir() {
        if p.join("nix-cache-info").is_file() {
            return Ok(Box::new(BinaryCache::open_dir(p, opts)?));
        }
        if p.join("nix/var/nix/db/db.sqlite").exists() {
            return open_local_root(p, opts);
        }
        return Err(unsupported(
            "the directory holds neither nix-cache-info (binary cache) nor nix/var/nix/db/db.sqlite (chroot store)",
        ));
    }
    Ok(Box::new(PathInfoJson::open(p, log)?))
}

/// The root directory of a `local`/`auto`/`daemon`/`unix` store URL:
/// its `root=` parameter, else `/`.
fn local_scheme_root(query: Option<&str>) -> PathBuf {
    PathBuf::from(
        query
            .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("root=")))
            .unwrap_or("/"),
    )
}

/// The root directory of the local or chroot store `spec` names (in
/// [`open_with`]'s grammar; `None` is the local store), or `None` when it
/// names another kind of store: what needs a store's files and state
/// directory, not only its paths (the collector's view, `roots`), opens
/// it with [`LocalStore::open`].
pub fn local_root(spec: Option<&str>) -> Option<PathBuf> {
    let Some(spec) = spec else {
        return Some(PathBuf::from("/"));
    };
    match Spelled::of(spec) {
        Spelled::Local { query } => Some(local_scheme_root(query)),
        Spelled::File { .. } | Spelled::Url { .. } => None,
        Spelled::Path(p) => {
            let p = Path::new(p);
            (p.is_dir() && p.join("nix/var/nix/db/db.sqlite").exists()).then(|| p.to_path_buf())
        }
    }
}

/// How a store spec is written, in [`open_with`]'s grammar: the one
/// reading of it, for opening a store and for naming it elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spelled<'a> {
    /// `local`, `auto`, `daemon` or `unix`, with the query after `?`.
    Local { query: Option<&'a str> },
    /// `file://PATH`, with the query after `?`.
    File {
        path: &'a str,
        query: Option<&'a str>,
    },
    /// Another URL (`scheme://…`).
    Url { scheme: &'a str },
    /// A path: a chroot store, a binary cache directory or a path-info
    /// JSON file.
    Path(&'a str),
}

impl<'a> Spelled<'a> {
    fn of(spec: &'a str) -> Spelled<'a> {
        let (scheme_part, query) = match spec.split_once('?') {
            Some((a, b)) => (a, Some(b)),
            None => (spec, None),
        };
        if let Some(path) = scheme_part.strip_prefix("file://") {
            return Spelled::File { path, query };
        }
        if matches!(scheme_part, "local" | "auto" | "daemon" | "unix") {
            return Spelled::Local { query };
        }
        if let Some((scheme, _)) = scheme_part.split_once("://") {
            return Spelled::Url { scheme };
        }
        Spelled::Path(spec)
    }
}

/// `spec` written so that it names the same store from any directory: a
/// relative path, `file://` path or `root=` made absolute from the
/// working directory; the rest as given.
pub fn absolute_spec(spec: &str) -> String {
    let abs = |p: &str| {
        std::path::absolute(p)
            .map(|a| a.display().to_string())
            .unwrap_or_else(|_| p.to_string())
    };
    let with_query = |q: Option<&str>| q.map(|q| format!("?{q}")).unwrap_or_default();
    match Spelled::of(spec) {
        Spelled::File { path, query } if !path.is_empty() && !path.starts_with('/') => {
            format!("file://{}{}", abs(path), with_query(query))
        }
        Spelled::Local { query: Some(q) } => {
            let (name, _) = spec.split_once('?').unwrap_or((spec, ""));
            let q: Vec<String> = q
                .split('&')
                .map(|kv| match kv.strip_prefix("root=") {
                    Some(r) if !r.is_empty() && !r.starts_with('/') => format!("root={}", abs(r)),
                    _ => kv.to_string(),
                })
                .collect();
            format!("{name}?{}", q.join("&"))
        }
        Spelled::Path(p) => abs(p),
        _ => spec.to_string(),
    }
}

fn open_local_root(root: &Path, opts: &OpenOptions) -> Result<Box<dyn StoreSource>> {
    let db = root.join("nix/var/nix/db/db.sqlite");
    if std::fs::symlink_metadata(&db).is_err() {
        return Err(Error::NoLocalStore(db));
    }
    Ok(Box::new(
        LocalStore::open(root, Arc::clone(&opts.log))?.with_verify(opts.verify),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One reading of a spec: what `absolute_spec` keeps or makes
    /// absolute is what `open_with` opens (`unix` was once taken for a
    /// relative path there and a local store here).
    #[test]
    fn absolute_specs_name_the_same_store_from_anywhere() {
        let cwd = std::env::current_dir().unwrap().display().to_string();
        for (spec, want) in [
            ("local", "local".to_string()),
            ("auto", "auto".to_string()),
            ("daemon", "daemon".to_string()),
            ("unix", "unix".to_string()),
            ("unix?root=/mnt", "unix?root=/mnt".to_string()),
            (
                "local?root=rel/x&a=1",
                format!("local?root={cwd}/rel/x&a=1"),
            ),
            ("file:///abs/c", "file:///abs/c".to_string()),
            (
                "file://rel/c?trusted=1",
                format!("file://{cwd}/rel/c?trusted=1"),
            ),
            (
                "https://cache.example/x",
                "https://cache.example/x".to_string(),
            ),
            ("s3://bucket", "s3://bucket".to_string()),
            ("rel/dir", format!("{cwd}/rel/dir")),
            ("/abs/dir", "/abs/dir".to_string()),
        ] {
            let got = absolute_spec(spec);
            assert_eq!(got, want, "{spec}");
            assert_eq!(
                std::mem::discriminant(&Spelled::of(&got)),
                std::mem::discriminant(&Spelled::of(spec)),
                "{spec}"
            );
        }
        assert_eq!(
            local_root(Some("unix?root=/mnt")),
            Some(PathBuf::from("/mnt"))
        );
        assert_eq!(local_root(Some("file:///x")), None);
    }
}
