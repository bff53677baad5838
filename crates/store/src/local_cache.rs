//! The local cache on disk: what HTTP caches sent (narinfos, NAR listings)
//! and what the read stage found in downloaded NARs (keyed by NAR hash too,
//! see `read::kept`), under `$XDG_CACHE_HOME/nix-heft` (default
//! `~/.cache/nix-heft`). It is no store source: sources and the read stage
//! keep entries in it, per cache URL.
//!
//! Layout: `v<FORMAT>/<escaped cache URL>/<store path base name>.<kind>`,
//! so entries are keyed by nix-heft's cache format version, the cache URL
//! and the store path. A store path's narinfo and listing never change in a
//! cache (they describe immutable contents), so entries need no expiry;
//! `--refresh` fetches them again and overwrites them.
//!
//! Writes go to a temporary file in the same directory and are renamed into
//! place, so a reader (another run at the same time) sees a whole entry or
//! none, and a run killed mid-write leaves only a temporary file, which is
//! never read as an entry (and is removed once an hour old). Every entry
//! also starts with a line holding its length and SHA-256: a file cut short
//! or changed by anything else (a full disk, a crash of the machine before
//! the data reached it, a hand edit) fails the check and is fetched again,
//! never trusted. The cache is bounded (`NIX_HEFT_CACHE_MAX`, bytes, default 1 GiB):
//! when it grows past the bound, the least recently written entries are
//! removed. Removing the directory clears it.

use std::io::Write;
use std::path::{Path, PathBuf};

use nix_heft_format::store_path::StorePath;

/// Bumped whenever the layout or the meaning of an entry changes (2: the
/// checked header line).
pub const FORMAT: u32 = 2;

/// The start of every entry's header line: `nix-heft-cache <len> <sha256>`.
const MAGIC: &[u8] = b"nix-heft-cache ";

/// Temporary files of writes not (yet) renamed into place start so.
const TEMP_PREFIX: &str = ".tmp";

/// A temporary file older than this is left over from a killed run.
const STALE_TEMP: std::time::Duration = std::time::Duration::from_secs(3600);

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `body` behind its header line.
fn seal(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 96);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(format!("{} {}\n", body.len(), sha256_hex(body)).as_bytes());
    out.extend_from_slice(body);
    out
}

/// The body of a sealed entry, if its header is whole and it matches.
fn unseal(mut file: Vec<u8>) -> Option<Vec<u8>> {
    let rest = file.strip_prefix(MAGIC)?;
    let nl = rest.iter().position(|&b| b == b'\n')?;
    let head = std::str::from_utf8(&rest[..nl]).ok()?;
    let (len, hash) = head.split_once(' ')?;
    let len: usize = len.parse().ok()?;
    let hash = hash.to_string();
    let start = MAGIC.len() + nl + 1;
    if file.len() - start != len {
        return None;
    }
    let body = file.split_off(start);
    (sha256_hex(&body) == hash).then_some(body)
}

/// Default size bound, in bytes.
pub const DEFAULT_MAX: u64 = 1 << 30;

/// One HTTP cache's entries in the local cache.
#[derive(Debug, Clone)]
pub struct LocalCache {
    dir: Option<PathBuf>,
    refresh: bool,
}

/// Where the local cache lives: `$XDG_CACHE_HOME/nix-heft`, else
/// `~/.cache/nix-heft`; `None` without either variable.
pub fn root() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|d| d.join("nix-heft"))
}

/// `url` as one file name, injectively: ASCII letters, digits, `-` and `.`
/// stay, every other byte becomes `_` and two hex digits.
fn escape(url: &str) -> String {
    let mut s = String::with_capacity(url.len());
    for b in url.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'.' {
            s.push(b as char);
        } else {
            s.push_str(&format!("_{b:02x}"));
        }
    }
    s
}

impl LocalCache {
    /// The entries of the cache at `url`; with `refresh`, nothing is read
    /// from it (but fetched entries are still stored). Disabled when there
    /// is no cache directory.
    pub fn open(url: &str, refresh: bool) -> Self {
        let dir = root().map(|r| r.join(format!("v{FORMAT}")).join(escape(url)));
        if let Some(r) = root() {
            let max = std::env::var("NIX_HEFT_CACHE_MAX")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(DEFAULT_MAX);
            bound(&r, max);
        }
        LocalCache { dir, refresh }
    }

    fn file(&self, path: &StorePath, kind: &str) -> Option<PathBuf> {
        let mut base = path.as_str().rsplit('/').next().unwrap_or_default();
        // File names are at most 255 bytes; the hash part alone is unique.
        if base.len() + kind.len() + 1 > 255 {
            base = path.hash_part();
        }
        self.dir.as_ref().map(|d| d.join(format!("{base}.{kind}")))
    }

    /// The stored entry, unless refreshing; `None` for an entry that fails
    /// its check (it is then fetched and written again).
    pub fn get(&self, path: &StorePath, kind: &str) -> Option<Vec<u8>> {
        if self.refresh {
            return None;
        }
        unseal(std::fs::read(self.file(path, kind)?).ok()?)
    }

    /// Stores an entry, atomically. A cache that cannot be written costs
    /// only a download next time, so failures are ignored.
    pub fn put(&self, path: &StorePath, kind: &str, bytes: &[u8]) {
        let (Some(dir), Some(file)) = (&self.dir, self.file(path, kind)) else {
            return;
        };
        let _ = (|| -> std::io::Result<()> {
            std::fs::create_dir_all(dir)?;
            let mut tmp = tempfile::Builder::new()
                .prefix(TEMP_PREFIX)
                .tempfile_in(dir)?;
            let sealed = seal(bytes);
            let half = sealed.len() / 2;
            tmp.write_all(&sealed[..half])?;
            static PAUSED: std::sync::atomic::AtomicBool =
                std::sync::atomic::AtomicBool::new(false);
            // Tests kill a run in the middle of a write.
            crate::test_hooks::pause("NIX_HEFT_TEST_CACHE_PAUSE_MS", &PAUSED);
            tmp.write_all(&sealed[half..])?;
            tmp.persist(&file).map_err(|e| e.error)?;
            Ok(())
        })();
    }
}

/// Removes temporary files left by killed runs, then the oldest files
/// under `root` until the total is at most `max`; leaves the cache alone
/// when it is within bounds. Runs at the same time may remove each other's
/// entries here, which costs only a download.
fn bound(root: &Path, max: u64) {
    let mut files = Vec::new();
    let mut total: u64 = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else if e.file_name().to_string_lossy().starts_with(TEMP_PREFIX)
                && m.modified()
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > STALE_TEMP)
            {
                let _ = std::fs::remove_file(e.path());
            } else {
                total = total.saturating_add(m.len());
                files.push((m.modified().ok(), m.len(), e.path()));
            }
        }
    }
    if total <= max {
        return;
    }
    files.sort();
    for (_, len, p) in files {
        if total <= max {
            break;
        }
        if std::fs::remove_file(&p).is_ok() {
            total = total.saturating_sub(len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_is_injective_on_separators() {
        assert_ne!(escape("http://a/b_c"), escape("http://a/b/c"));
        assert_eq!(escape("http://h:1"), "http_3a_2f_2fh_3a1");
    }

    #[test]
    fn sealed_entries_round_trip_and_damage_is_refused() {
        let body = b"StorePath: /nix/store/x\nReferences: a b\n".to_vec();
        let sealed = seal(&body);
        assert_eq!(unseal(sealed.clone()), Some(body.clone()));
        // Cut anywhere, an entry is refused.
        for cut in 0..sealed.len() {
            assert_eq!(unseal(sealed[..cut].to_vec()), None, "cut at {cut}");
        }
        // One changed byte in the body, or a body without a header.
        let mut flipped = sealed.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(unseal(flipped), None);
        assert_eq!(unseal(body), None);
    }

    #[test]
    fn bound_removes_oldest_first() {
        let d = tempfile::tempdir().unwrap();
        for (i, name) in ["old", "mid", "new"].iter().enumerate() {
            let p = d.path().join(name);
            std::fs::write(&p, vec![0u8; 100]).unwrap();
            let t =
                std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(i as u64 * 1000);
            std::fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        bound(d.path(), 250);
        assert!(!d.path().join("old").exists());
        assert!(d.path().join("mid").exists() && d.path().join("new").exists());
    }

    #[test]
    fn bound_removes_temporary_files_of_killed_runs_only_when_stale() {
        let d = tempfile::tempdir().unwrap();
        let (stale, fresh) = (d.path().join(".tmpOLD"), d.path().join(".tmpNEW"));
        std::fs::write(&stale, b"half an entry").unwrap();
        std::fs::write(&fresh, b"being written").unwrap();
        let t = std::time::SystemTime::now() - 2 * STALE_TEMP;
        std::fs::File::options()
            .write(true)
            .open(&stale)
            .unwrap()
            .set_modified(t)
            .unwrap();
        bound(d.path(), u64::MAX);
        assert!(!stale.exists() && fresh.exists());
    }
}
