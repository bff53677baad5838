//! A binary cache directory (`file:///path`): `nix-cache-info`, one
//! `<hash>.narinfo` per path, NARs under `nar/`.
//!
//! Only the narinfos of the requested closure are read: a cache may hold
//! millions, and the file name (the hash part) finds each one directly.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use super::narinfo::NarInfo;
use super::signature::SigPolicy;
use super::{
    DEFAULT_STORE_DIR, FileCheck, MAX_LISTING, MAX_NARINFO, Nar, OpenOptions, PathContents,
    PathInfo, PathMetadata, Provenance, RawClosure, RunLog, StoreSource, read_capped,
};
use crate::error::{Error, Result, io_err};
use crate::nar::tree::FileTree;
use crate::store_path::{HASH_LEN, StorePath};

type Narinfos = std::sync::Mutex<std::collections::HashMap<StorePath, (NarInfo, Option<String>)>>;

/// A `file://` binary cache.
pub struct BinaryCache {
    dir: PathBuf,
    store_dir: String,
    /// Narinfos parsed (and their signatures checked) so far, with the
    /// trusted key that signed each: loading the closure, opening a NAR and
    /// checking its hash each need one, and the file is read only once.
    narinfos: Narinfos,
    /// `Priority` of its `nix-cache-info`.
    priority: Option<u64>,
    /// Which narinfos are accepted; `None` checks nothing.
    signatures: Option<Arc<SigPolicy>>,
    /// The run's log (a directory downloads nothing, and a narinfo it
    /// cannot read is an error; only the warning of an unsigned narinfo
    /// accepted goes here).
    log: Arc<RunLog>,
}

impl BinaryCache {
    /// Opens the cache at `dir`, which must hold `nix-cache-info`.
    pub fn open(dir: &Path, opts: &OpenOptions) -> Result<Self> {
        let info_file = dir.join("nix-cache-info");
        let info = read_capped(&info_file, MAX_NARINFO, "nix-cache-info")
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| Error::UnsupportedStore {
                spec: format!("file://{}", dir.display()),
                reason: format!("cannot read {}: {e}", info_file.display()),
            })?;
        let store_dir = info
            .lines()
            .find_map(|l| l.strip_prefix("StoreDir:"))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| DEFAULT_STORE_DIR.to_string());
        Ok(BinaryCache {
            dir: dir.to_path_buf(),
            store_dir,
            narinfos: Default::default(),
            priority: super::cache_priority(&info),
            signatures: opts.signatures.clone(),
            log: Arc::clone(&opts.log),
        })
    }

    /// The narinfo file that would describe `path`.
    fn narinfo_file(&self, path: &StorePath) -> PathBuf {
        self.dir.join(format!("{}.narinfo", path.hash_part()))
    }

    /// The full narinfo of `path`, or `None` if the cache has none.
    pub fn narinfo(&self, path: &StorePath) -> Result<Option<NarInfo>> {
        Ok(self.checked_narinfo(path)?.map(|(n, _)| n))
    }

    /// The narinfo of `path` once its signatures passed the run's policy,
    /// with the trusted key that signed it; an error when it is refused.
    fn checked_narinfo(&self, path: &StorePath) -> Result<Option<(NarInfo, Option<String>)>> {
        if let Some(n) = self
            .narinfos
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
        {
            return Ok(Some(n.clone()));
        }
        let file = self.narinfo_file(path);
        let text = match read_capped(&file, MAX_NARINFO, "a narinfo") {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(&file)(e)),
        };
        let Some(info) = NarInfo::parse_for(text, &self.store_dir, path, &file)? else {
            return Ok(None);
        };
        let signed_by = match &self.signatures {
            Some(p) => p.check(&info, &self.url(), &self.log)?,
            None => None,
        };
        let n = (info, signed_by);
        self.narinfos
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.clone(), n.clone());
        Ok(Some(n))
    }

    /// The cache as a `file://` URL (absolute, also when opened by a
    /// relative directory).
    fn url(&self) -> String {
        let abs = std::path::absolute(&self.dir).unwrap_or_else(|_| self.dir.clone());
        format!("file://{}", abs.display())
    }

    /// The NAR of `path`, decompressed; with `check`, the compressed file
    /// is hashed on its way in, for [`FileCheck`].
    fn open_nar(&self, path: &StorePath, check: bool) -> Result<Option<Nar>> {
        let Some(info) = self.narinfo(path)? else {
            return Ok(None);
        };
        let file = self.nar_file(&self.narinfo_file(path), &info.url)?;
        let f = std::fs::File::open(&file).map_err(io_err(&file))?;
        let (f, file_check) = match check {
            true => FileCheck::wrap(Box::new(f), &file.display().to_string(), &info),
            false => (Box::new(f) as Box<dyn std::io::Read + Send>, None),
        };
        let r = crate::nar::decompress(
            &info.compression,
            std::io::BufReader::with_capacity(1 << 16, f),
        )
        .map_err(|source| Error::BadNar {
            file: file.clone(),
            source,
        })?;
        Ok(Some(Nar {
            reader: r,
            file_check,
            downloaded: false,
        }))
    }

    /// The cache's root directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file a narinfo's `URL` names, confined to the cache directory.
    ///
    /// A narinfo is data from whoever wrote the cache, and its `URL` is
    /// relative to the cache root; joined unchecked, `../../etc/shadow` or
    /// `/etc/shadow` would make nix-heft read (and report excerpts of) any
    /// file on the machine. So the URL must be relative with no `..`
    /// component, and, once symlinks are resolved, the file must still lie
    /// inside the cache directory. The resolved path is returned, so the file
    /// checked is the file opened.
    fn nar_file(&self, narinfo: &Path, url: &str) -> Result<PathBuf> {
        use std::path::Component;
        let refuse = |reason: String| Error::NarUrlOutsideCache {
            narinfo: narinfo.to_path_buf(),
            url: url.to_string(),
            reason,
            cache: self.dir.clone(),
        };
        if url.is_empty() {
            return Err(refuse("is empty".into()));
        }
        for c in Path::new(url).components() {
            match c {
                Component::Normal(_) | Component::CurDir => {}
                Component::ParentDir => return Err(refuse("has a '..' component".into())),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(refuse("is an absolute path".into()));
                }
            }
        }
        let joined = self.dir.join(url);
        let cache = self.dir.canonicalize().map_err(io_err(&self.dir))?;
        match joined.canonicalize() {
            Ok(real) if real.starts_with(&cache) => Ok(real),
            Ok(real) => Err(refuse(format!(
                "resolves through a symlink to {}",
                real.display()
            ))),
            // Absent (or a dangling symlink): nothing outside is read;
            // opening it reports the missing file by name.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(joined),
            Err(e) => Err(io_err(&joined)(e)),
        }
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
        format!("binary cache {}", self.url())
    }

    fn has_provenance(&self) -> bool {
        true
    }

    fn provenance(&self, path: &StorePath) -> Option<Provenance> {
        let known = self.narinfos.lock().unwrap_or_else(|e| e.into_inner());
        known.get(path).map(|(info, signed_by)| Provenance {
            store: self.url(),
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
            Some(base) => {
                StorePath::parse(&self.store_dir, &format!("{}/{base}", self.store_dir)).map(Some)
            }
            None => Ok(None),
        }
    }

    /// Reads every narinfo's `StorePath` line; only needed to match names.
    fn all_paths(&self) -> Result<Vec<StorePath>> {
        let entries: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map_err(io_err(&self.dir))?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.extension().is_some_and(|x| x == "narinfo")
                    && p.file_stem().is_some_and(|s| s.len() == HASH_LEN)
            })
            .collect();
        entries
            .par_iter()
            .map(|file| {
                let text = read_capped(file, MAX_NARINFO, "a narinfo").map_err(io_err(file))?;
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

    /// The narinfos read in parallel.
    fn path_infos(&self, paths: &[StorePath]) -> Result<Vec<Option<PathInfo>>> {
        use rayon::prelude::*;
        paths.par_iter().map(|p| self.path_info(p)).collect()
    }

    /// A work queue of narinfo reads in parallel (see
    /// [`super::closure_by_queue`]): the cost is file opens, which overlap
    /// well.
    fn closure(&self, roots: &[StorePath]) -> Result<RawClosure> {
        super::closure_by_queue(
            roots,
            &self.describe(),
            |p| self.path_info(p),
            |p, referrer| Error::MissingNarinfo {
                path: format!("{p} (referenced by {referrer})"),
                cache: self.dir.clone(),
                file: self.narinfo_file(p),
            },
        )
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
        let file = self.dir.join(format!("{}.ls", path.hash_part()));
        match read_capped(&file, MAX_LISTING, "a NAR listing") {
            // A listing that does not parse is no loss: the NAR has it all.
            Ok(bytes) => Ok(super::listing::parse(&bytes).ok()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err(&file)(e)),
        }
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
