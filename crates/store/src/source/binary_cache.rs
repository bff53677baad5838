//! A binary cache: `nix-cache-info`, one `<hash>.narinfo` per path,
//! `<hash>.ls` listings where the cache writes them, NARs under the URL
//! each narinfo names, the same over every [`Transport`] (a directory,
//! `file://`, or `http://`/`https://`), as Nix's one `BinaryCacheStore`
//! sits over each store's `getFile`.
//!
//! Only the narinfos of the requested closure are read: a cache may hold
//! millions, and the file name (the hash part) finds each one directly.
//! Every narinfo passes the run's signature policy before it is used, and
//! is remembered for the run with the key that signed it; a file that two
//! threads want at once is fetched once.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::narinfo::NarInfo;
use super::signature::SigPolicy;
use super::transport::file::FileTransport;
use super::transport::http::HttpTransport;
use super::transport::{Meta, Transport};
use super::{
    DEFAULT_STORE_DIR, FileCheck, Nar, OpenOptions, PathContents, PathInfo, PathMetadata,
    Provenance, RawClosure, RunLog, StoreSource,
};
use crate::error::{Error, Result};
use crate::local_cache::LocalCache;
use nix_heft_format::nar::tree::FileTree;
use nix_heft_format::store_path::StorePath;
use nix_heft_types::error::io_err;

/// A binary cache over a `Transport` (its file or HTTP transport).
pub struct BinaryCache {
    transport: Box<dyn Transport>,
    store_dir: String,
    /// Narinfos parsed (and their signatures checked) so far, with the
    /// trusted key that signed each: loading the closure, opening a NAR and
    /// checking its hash each need one, and the file is fetched only once.
    narinfos: Mutex<HashMap<StorePath, (NarInfo, Option<String>)>>,
    /// One lock per file being fetched (`HASH.narinfo`, `HASH.ls`): two
    /// threads wanting the same file at once (the closure's queue and a
    /// plan asking for a path's size, or two plans wanting one listing)
    /// make one request, the second waiting for the first's answer.
    fetching: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// Paths whose listing the cache does not have: asked once a run
    /// (many caches write none; the NAR has the tree).
    no_listing: Mutex<HashSet<StorePath>>,
    /// `Priority` of its `nix-cache-info`.
    priority: Option<u64>,
    /// Which narinfos are accepted; `None` checks nothing.
    signatures: Option<Arc<SigPolicy>>,
    /// The run's log: the warning of an unsigned narinfo accepted goes
    /// here (download counters are the transport's).
    log: Arc<RunLog>,
}

impl BinaryCache {
    /// Opens the cache directory `dir` (`file://DIR`), which must hold
    /// `nix-cache-info`.
    pub fn open_dir(dir: &Path, opts: &OpenOptions) -> Result<Self> {
        Self::over(Box::new(FileTransport::new(dir)), opts)
    }

    /// Opens the HTTP cache at `spec` (`http://host/path`, query ignored):
    /// fetches `nix-cache-info` and checks its `StoreDir`.
    pub fn open_http(spec: &str, opts: &OpenOptions) -> Result<Self> {
        Self::over(Box::new(HttpTransport::open(spec, opts)?), opts)
    }

    /// The cache that `transport` gets the files of, once its
    /// `nix-cache-info` is read.
    fn over(mut transport: Box<dyn Transport>, opts: &OpenOptions) -> Result<Self> {
        let info = transport.cache_info()?;
        let info = String::from_utf8_lossy(&info);
        let store_dir = info
            .lines()
            .find_map(|l| l.strip_prefix("StoreDir:"))
            .map(str::trim);
        if let Some(dir) =
            store_dir.filter(|d| transport.default_store_dir_only() && *d != DEFAULT_STORE_DIR)
        {
            return Err(Error::UnsupportedStore {
                spec: transport.url().to_string(),
                reason: format!(
                    "the cache is for the store directory {dir}, not {DEFAULT_STORE_DIR}"
                ),
            });
        }
        let store_dir = store_dir.unwrap_or(DEFAULT_STORE_DIR).to_string();
        transport.opened(&opts.log);
        Ok(BinaryCache {
            store_dir,
            narinfos: Mutex::default(),
            fetching: Mutex::default(),
            no_listing: Mutex::default(),
            priority: super::cache_priority(&info),
            signatures: opts.signatures.clone(),
            log: Arc::clone(&opts.log),
            transport,
        })
    }

    /// The full narinfo of `path`, or `None` if the cache has none.
    pub fn narinfo(&self, path: &StorePath) -> Result<Option<NarInfo>> {
        Ok(self.checked_narinfo(path)?.map(|(n, _)| n))
    }

    /// The name of `path`'s narinfo in the cache.
    fn narinfo_rel(path: &StorePath) -> String {
        format!("{}.narinfo", path.hash_part())
    }

    /// The narinfo of `path` once its signatures passed the run's policy,
    /// with the trusted key that signed it; an error when it is refused.
    /// From this run, the local cache (a transport that keeps one), or the
    /// cache itself.
    ///
    /// The local cache keeps a narinfo as the cache sent it, `Sig:` lines
    /// and all, and it is checked again on every use with this run's keys:
    /// one kept while signatures were not required is not trusted later
    /// unless it verifies then, and changing the trusted keys takes effect
    /// at once, for kept entries too.
    fn checked_narinfo(&self, path: &StorePath) -> Result<Option<(NarInfo, Option<String>)>> {
        let known = || {
            self.narinfos
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(path)
                .cloned()
        };
        if let Some(n) = known() {
            return Ok(Some(n));
        }
        let rel = Self::narinfo_rel(path);
        let lock = self.fetch_lock(rel.clone());
        let _fetching = lock.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = known() {
            return Ok(Some(n));
        }
        let file = self.transport.locate(&rel);
        let check = |info: &NarInfo| match &self.signatures {
            Some(p) => p.check(info, self.transport.url(), &self.log),
            None => Ok(None),
        };
        // A kept narinfo parsed when it was written; one that does not
        // parse now, or is not trusted now, is fetched again (the cache
        // may have been fixed or re-signed since), never an error itself.
        let kept = self
            .transport
            .local()
            .and_then(|l| l.get(path, "narinfo"))
            .and_then(|bytes| NarInfo::parse_for(bytes, &self.store_dir, path, &file).ok())
            .flatten()
            .and_then(|info| check(&info).ok().map(|k| (info, k)));
        let (info, signed_by) = match kept {
            Some(n) => n,
            None => {
                let Some(bytes) = self.transport.get(&rel, Meta::Narinfo)? else {
                    return Ok(None);
                };
                let local = self.transport.local();
                // Kept as sent only by a transport that keeps files: the
                // bytes are parsed in place otherwise.
                let (text, kept_bytes) = match local {
                    Some(_) => (bytes.clone(), Some(bytes)),
                    None => (bytes, None),
                };
                let Some(info) = NarInfo::parse_for(text, &self.store_dir, path, &file)? else {
                    return Ok(None);
                };
                let signed_by = check(&info)?;
                if let (Some(l), Some(b)) = (local, kept_bytes) {
                    l.put(path, "narinfo", &b);
                }
                (info, signed_by)
            }
        };
        let n = (info, signed_by);
        self.narinfos
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.clone(), n.clone());
        Ok(Some(n))
    }

    /// The lock held while `file` is fetched (see `fetching`).
    fn fetch_lock(&self, file: String) -> Arc<Mutex<()>> {
        let mut locks = self.fetching.lock().unwrap_or_else(|e| e.into_inner());
        locks.entry(file).or_default().clone()
    }

    /// `f` on the transport's threads, when it has its own (requests in
    /// flight are then bounded by them), else on the caller's.
    fn on_pool<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match self.transport.pool() {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }

    /// The NAR of `path`, decompressed; with `check`, the compressed file
    /// is hashed on its way in, for [`FileCheck`].
    fn open_nar(&self, path: &StorePath, check: bool) -> Result<Option<Nar>> {
        let Some(info) = self.narinfo(path)? else {
            return Ok(None);
        };
        let body = self
            .transport
            .nar(path, &Self::narinfo_rel(path), &info.url)?;
        let name = body.name.display().to_string();
        let (r, file_check) = match check {
            true => FileCheck::wrap(body.reader, &name, &info),
            false => (body.reader, None),
        };
        // A local file is read in system calls, so it is buffered, above
        // the check (which then sees the file in large reads, as it always
        // has); a download arrives in chunks already.
        let r: Box<dyn std::io::Read + Send> = match body.downloaded {
            true => r,
            false => Box::new(std::io::BufReader::with_capacity(1 << 16, r)),
        };
        let nar = nix_heft_format::nar::decompress(&info.compression, r).map_err(|source| {
            Error::BadNar {
                file: body.name.clone(),
                source,
            }
        })?;
        Ok(Some(Nar {
            reader: nar,
            file_check,
            downloaded: body.downloaded,
        }))
    }
}

impl PathMetadata for BinaryCache {
    fn store_dir(&self) -> &str {
        &self.store_dir
    }

    fn describe(&self) -> String {
        // The URL its refusals and provenance name, so that one message
        // never names this cache two ways (a relative `file://DIR` and its
        // absolute URL).
        format!("binary cache {}", self.transport.url())
    }

    fn has_provenance(&self) -> bool {
        true
    }

    fn provenance(&self, path: &StorePath) -> Option<Provenance> {
        let known = self.narinfos.lock().unwrap_or_else(|e| e.into_inner());
        known.get(path).map(|(info, signed_by)| Provenance {
            store: self.transport.url().to_string(),
            signed_by: signed_by.clone(),
            content_addressed: signed_by.is_none() && super::signature::content_addressed(info),
        })
    }

    fn path_info(&self, path: &StorePath) -> Result<Option<PathInfo>> {
        Ok(self.narinfo(path)?.map(|n| PathInfo {
            path: n.store_path,
            nar_size: n.nar_size,
            references: n.references,
        }))
    }

    fn deriver(&self, path: &StorePath) -> Result<Option<StorePath>> {
        // A narinfo names its deriver by base name.
        match self.narinfo(path)?.and_then(|n| n.deriver) {
            Some(base) => Ok(Some(StorePath::parse(
                &self.store_dir,
                &format!("{}/{base}", self.store_dir),
            )?)),
            None => Ok(None),
        }
    }

    /// Reads every narinfo's `StorePath` line; only needed to match names.
    /// A cache that cannot be listed (over HTTP; fetching every narinfo of
    /// cache.nixos.org is not an option) matches no name.
    fn all_paths(&self) -> Result<Vec<StorePath>> {
        let Some(listed) = self.transport.list() else {
            return Err(Error::Usage(format!(
                "{} cannot be listed, so a name or glob matches nothing there; \
                 give a store path ({}/HASH-NAME) instead",
                self.describe(),
                self.store_dir
            )));
        };
        listed?
            .par_iter()
            .map(|rel| {
                let file = self.transport.locate(rel);
                // Listed a moment ago: gone now is an error, as any other.
                let text = self.transport.get(rel, Meta::Narinfo)?.ok_or_else(|| {
                    io_err(&file)(std::io::Error::from(std::io::ErrorKind::NotFound))
                })?;
                let text = String::from_utf8_lossy(&text);
                let line = text
                    .lines()
                    .find_map(|l| l.strip_prefix("StorePath: "))
                    .ok_or_else(|| Error::BadNarinfo {
                        file: file.clone(),
                        reason: "no StorePath field".into(),
                    })?;
                StorePath::parse(&self.store_dir, line).map_err(|e| Error::BadNarinfo {
                    file: file.clone(),
                    reason: e.to_string(),
                })
            })
            .collect()
    }

    /// The narinfos read or requested in parallel (on the transport's
    /// pool, as a closure's are): the build graph asks for every output's
    /// size at once, and one request after another would take minutes.
    fn path_infos(&self, paths: &[StorePath]) -> Result<Vec<Option<PathInfo>>> {
        self.on_pool(|| paths.par_iter().map(|p| self.path_info(p)).collect())
    }

    /// A work queue of narinfo reads in parallel (see
    /// `closure_by_queue`), on the transport's pool: the cost is
    /// file opens or round trips, which overlap well.
    fn closure(&self, roots: &[StorePath]) -> Result<RawClosure> {
        self.on_pool(|| {
            super::closure_by_queue(
                roots,
                &self.describe(),
                |p| self.path_info(p),
                |p, referrer| self.transport.missing(p, referrer, &Self::narinfo_rel(p)),
            )
        })
    }
}

impl PathContents for BinaryCache {
    fn expected_nar_hash(&self, path: &StorePath) -> Option<String> {
        self.narinfo(path).ok().flatten().map(|i| i.nar_hash)
    }

    fn nar(&self, path: &StorePath, check_file: bool) -> Result<Option<Nar>> {
        self.open_nar(path, check_file)
    }

    fn listing(&self, path: &StorePath) -> Result<Option<FileTree>> {
        let local = self.transport.local();
        let kept = || {
            local
                .and_then(|l| l.get(path, "ls"))
                .and_then(|bytes| nix_heft_format::listing::parse(&bytes).ok())
        };
        if let Some(t) = kept() {
            return Ok(Some(t));
        }
        let rel = format!("{}.ls", path.hash_part());
        let lock = self.fetch_lock(rel.clone());
        let _fetching = lock.lock().unwrap_or_else(|e| e.into_inner());
        let absent = || {
            self.no_listing
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(path)
        };
        if absent() {
            return Ok(None);
        }
        if let Some(t) = kept() {
            return Ok(Some(t));
        }
        let Some(bytes) = self.transport.get(&rel, Meta::Listing)? else {
            self.no_listing
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(path.clone());
            return Ok(None);
        };
        // A listing that does not parse is no loss: the NAR has it all.
        match nix_heft_format::listing::parse(&bytes) {
            Ok(t) => {
                if let Some(l) = local {
                    l.put(path, "ls", &bytes);
                }
                Ok(Some(t))
            }
            Err(_) => Ok(None),
        }
    }

    fn kept_reads(&self, _path: &StorePath) -> Option<&LocalCache> {
        self.transport.local()
    }
}

impl StoreSource for BinaryCache {
    fn log(&self) -> &RunLog {
        &self.log
    }

    fn priority(&self) -> Option<u64> {
        self.priority
    }
}
