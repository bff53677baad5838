//! A binary cache directory (`file:///path`): its files are read where
//! they are, and a narinfo's NAR URL must resolve inside the directory.

use std::path::{Path, PathBuf};

use super::{Meta, NarBody, Transport};
use crate::error::{Error, Result};
use crate::source::read_capped;
use nix_heft_format::store_path::{HASH_LEN, StorePath};
use nix_heft_types::error::io_err;

/// The files of a `file://` cache.
pub(crate) struct FileTransport {
    /// The directory as given (messages about its files name it so).
    dir: PathBuf,
    /// The cache as a `file://` URL, absolute also when opened by a
    /// relative directory.
    url: String,
}

impl FileTransport {
    /// The cache at `dir`; nothing is read yet.
    pub(crate) fn new(dir: &Path) -> Self {
        let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        FileTransport {
            dir: dir.to_path_buf(),
            url: format!("file://{}", abs.display()),
        }
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
            Err(e) => Err(io_err(&joined)(e).into()),
        }
    }
}

impl Transport for FileTransport {
    fn url(&self) -> &str {
        &self.url
    }

    fn locate(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    fn cache_info(&self) -> Result<Vec<u8>> {
        let file = self.locate("nix-cache-info");
        read_capped(&file, Meta::CacheInfo.max(), Meta::CacheInfo.what()).map_err(|e| {
            Error::UnsupportedStore {
                spec: format!("file://{}", self.dir.display()),
                reason: format!("cannot read {}: {e}", file.display()),
            }
        })
    }

    fn get(&self, rel: &str, kind: Meta) -> Result<Option<Vec<u8>>> {
        let file = self.locate(rel);
        match read_capped(&file, kind.max(), kind.what()) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err(&file)(e).into()),
        }
    }

    fn nar(&self, _path: &StorePath, narinfo: &str, url: &str) -> Result<NarBody> {
        let file = self.nar_file(&self.locate(narinfo), url)?;
        let f = std::fs::File::open(&file).map_err(io_err(&file))?;
        Ok(NarBody {
            reader: Box::new(f),
            name: file,
            downloaded: false,
        })
    }

    /// The directory's `HASH.narinfo` files (a cache may hold millions:
    /// only names and globs need this).
    fn list(&self) -> Option<Result<Vec<String>>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) => return Some(Err(io_err(&self.dir)(e).into())),
        };
        Some(Ok(entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| {
                n.strip_suffix(".narinfo")
                    .is_some_and(|stem| stem.len() == HASH_LEN)
            })
            .collect()))
    }

    fn missing(&self, path: &StorePath, referrer: &StorePath, narinfo: &str) -> Error {
        Error::MissingNarinfo {
            path: format!("{path} (referenced by {referrer})"),
            cache: self.dir.clone(),
            file: self.locate(narinfo),
        }
    }
}
