//! What a store directory holds on disk, as the collector meets it: the
//! entries it walks (`readdir` of the store directory, `.links` aside), and
//! for the on-disk figure every inode below them and in `.links`.
//!
//! A store optimised by `nix-store --optimise` (or `auto-optimise-store`)
//! hard-links identical files to one inode with a name in `.links`; the
//! collector deletes a path's names, and afterwards every `.links` entry
//! left with one link. So an inode's bytes are freed only when every name
//! it has outside `.links` goes (nix-du counts it the same way). Bytes on
//! disk are what `du` counts: `st_blocks` × 512, each inode once.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rayon::prelude::*;

/// The name of the hard-link directory inside the store directory.
pub const LINKS: &str = ".links";

/// Every entry of the store directory `real_store` but `.links` (and `.`,
/// `..`), sorted: what the collector visits, valid paths or not.
pub fn entries(real_store: &Path) -> std::io::Result<Vec<OsString>> {
    let mut out: Vec<OsString> = std::fs::read_dir(real_store)?
        .map(|e| e.map(|e| e.file_name()))
        .filter(|n| n.as_ref().map_or(true, |n| n != LINKS))
        .collect::<std::io::Result<_>>()?;
    out.sort_unstable();
    Ok(out)
}

/// An inode with more than one name, met below one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shared {
    /// Device and inode number.
    pub key: (u64, u64),
    /// Its bytes on disk.
    pub bytes: u64,
    /// Its link count.
    pub nlink: u64,
    /// The entry it was met below (the caller's index).
    pub holder: u32,
}

/// The store's use of the disk, by entry.
#[derive(Debug, Clone, Default)]
pub struct DiskUse {
    /// Per entry (the caller's order): bytes on disk of the inodes only
    /// it has (directories, symlinks, files with one link).
    pub own: Vec<u64>,
    /// Names of inodes with several links, one per name met.
    pub shared: Vec<Shared>,
    /// Link count of every inode with a name in `.links`.
    pub in_links: HashMap<(u64, u64), u64>,
    /// `.links` entries with one link left (no path uses them; the
    /// collector deletes them): their count and bytes on disk.
    pub links_garbage: (usize, u64),
    /// Entries or files that could not be read, with the error.
    pub problems: Vec<String>,
}

/// Walks each of `entries` (names in `real_store`) and `.links`, in
/// parallel, `lstat`ing every inode once per name.
pub fn disk_use(real_store: &Path, entries: &[OsString]) -> DiskUse {
    let per: Vec<(u64, Vec<Shared>, Vec<String>)> = entries
        .par_iter()
        .enumerate()
        .map(|(i, name)| walk_entry(&real_store.join(name), i as u32))
        .collect();
    let mut out = DiskUse::default();
    for (own, shared, problems) in per {
        out.own.push(own);
        out.shared.extend(shared);
        out.problems.extend(problems);
    }
    let links = real_store.join(LINKS);
    match std::fs::read_dir(&links) {
        Ok(rd) => {
            for e in rd {
                let Ok(e) = e else { continue };
                match e.metadata() {
                    Ok(m) if m.nlink() <= 1 => {
                        out.links_garbage.0 += 1;
                        out.links_garbage.1 += m.blocks() * 512;
                    }
                    Ok(m) => {
                        out.in_links.insert((m.dev(), m.ino()), m.nlink());
                    }
                    Err(err) => out.problems.push(format!("{}: {err}", e.path().display())),
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => out.problems.push(format!("{}: {e}", links.display())),
    }
    out
}

/// One entry's inodes: its own bytes, its shared names, its problems.
fn walk_entry(top: &Path, holder: u32) -> (u64, Vec<Shared>, Vec<String>) {
    let mut own = 0u64;
    let mut shared = Vec::new();
    let mut problems = Vec::new();
    let count = |m: &std::fs::Metadata, own: &mut u64, shared: &mut Vec<Shared>| {
        let bytes = m.blocks() * 512;
        if m.is_dir() || m.nlink() <= 1 {
            *own += bytes;
        } else {
            shared.push(Shared {
                key: (m.dev(), m.ino()),
                bytes,
                nlink: m.nlink(),
                holder,
            });
        }
    };
    let m = match std::fs::symlink_metadata(top) {
        Ok(m) => m,
        Err(e) => {
            problems.push(format!("{}: {e}", top.display()));
            return (own, shared, problems);
        }
    };
    count(&m, &mut own, &mut shared);
    if !m.is_dir() {
        return (own, shared, problems);
    }
    let mut stack = vec![top.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let rd = match std::fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) => {
                problems.push(format!("{}: {e}", dir.display()));
                continue;
            }
        };
        for e in rd {
            let e = match e {
                Ok(e) => e,
                Err(err) => {
                    problems.push(format!("{}: {err}", dir.display()));
                    continue;
                }
            };
            // `DirEntry::metadata` is an lstat relative to the directory.
            match e.metadata() {
                Ok(m) => {
                    count(&m, &mut own, &mut shared);
                    if m.is_dir() {
                        stack.push(e.path());
                    }
                }
                Err(err) => problems.push(format!("{}: {err}", e.path().display())),
            }
        }
    }
    (own, shared, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_links_are_shared_and_dot_links_is_apart() {
        let d = tempfile::tempdir().unwrap();
        let store = d.path();
        std::fs::create_dir_all(store.join(LINKS)).unwrap();
        std::fs::create_dir_all(store.join("a/sub")).unwrap();
        std::fs::create_dir_all(store.join("b")).unwrap();
        std::fs::write(store.join("a/sub/one"), vec![1u8; 10_000]).unwrap();
        std::fs::write(store.join("a/shared"), vec![2u8; 10_000]).unwrap();
        std::fs::hard_link(store.join("a/shared"), store.join("b/shared")).unwrap();
        std::fs::hard_link(store.join("a/shared"), store.join(LINKS).join("h1")).unwrap();
        std::fs::write(store.join(LINKS).join("garbage"), vec![3u8; 5000]).unwrap();
        let names = entries(store).unwrap();
        assert_eq!(names, ["a", "b"]);
        let u = disk_use(store, &names);
        assert_eq!(u.shared.len(), 2);
        assert!(u.shared.iter().all(|s| s.nlink == 3));
        assert_eq!(u.in_links.len(), 1);
        assert_eq!(u.links_garbage.0, 1);
        assert!(u.links_garbage.1 >= 4096);
        // a: two directories and one file of its own.
        assert!(u.own[0] >= 3 * 4096, "{:?}", u.own);
        assert!(u.problems.is_empty());
    }
}
