//! Reads kept across runs in the [`LocalCache`]: what reading a downloaded
//! NAR gave (tree, holds, ELF facts), so a rerun against the same cache
//! downloads no NAR again.
//!
//! An entry is keyed by the store path, its NAR hash (contents that could
//! differ under one path in two caches never share an entry) and the set of
//! hashes looked for (a `why` asks for fewer than an `advise`); the entry
//! repeats all three and is used only when they match. Holds name their
//! target by hash part, not by the graph's node ids, which differ per run.

use serde::{Deserialize, Serialize};

use super::{ElfFacts, Hold, PathRead, Site, Wanted};
use nix_heft_format::nar::tree::FileTree;
use nix_heft_format::store_path::{HASH_LEN, StorePath};
use nix_heft_store::local_cache::LocalCache;

#[derive(Serialize, Deserialize)]
struct Entry {
    store_path: String,
    nar_hash: String,
    wanted: Vec<String>,
    tree: FileTree,
    holds: Vec<KeptHold>,
    elf_files: Vec<ElfFacts>,
}

#[derive(Serialize, Deserialize)]
struct KeptHold {
    target: String,
    file: Vec<u8>,
    offset: u64,
    context: String,
    pointed: Vec<u8>,
    site: Site,
}

fn wanted_list(wanted: &Wanted) -> Vec<String> {
    let mut w: Vec<String> = wanted
        .keys()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    w.sort();
    w
}

/// FNV-1a, 64 bits: a name for the wanted set that is the same in every
/// build (std's hasher is not stable across releases, and a collision
/// costs nothing since the entry repeats the full set).
fn fnv(parts: &[String]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([b' ']) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn kind(nar_hash: &str, wanted: &[String]) -> String {
    let nh: String = nar_hash
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    // `.scan`: the name entries had when this was the scan stage; kept,
    // so that users' cached reads stay valid.
    format!("{nh}.{:016x}.scan", fnv(wanted))
}

/// The kept read of `path`, if one matches.
pub(super) fn load(
    cache: &LocalCache,
    path: &StorePath,
    nar_hash: &str,
    wanted: &Wanted,
    find_holds: bool,
) -> Option<PathRead> {
    let list = wanted_list(wanted);
    let bytes = cache.get(path, &kind(nar_hash, &list))?;
    let e: Entry = serde_json::from_slice(&bytes).ok()?;
    if e.store_path != path.as_str() || e.nar_hash != nar_hash || e.wanted != list {
        return None;
    }
    let mut holds = Vec::with_capacity(e.holds.len());
    for h in e.holds {
        let key: [u8; HASH_LEN] = h.target.as_bytes().try_into().ok()?;
        holds.push(Hold {
            target: *wanted.get(&key)?,
            file: h.file,
            offset: h.offset,
            context: h.context,
            pointed: h.pointed,
            site: h.site,
        });
    }
    Some(PathRead {
        available: true,
        searched: find_holds,
        tree: Some(e.tree),
        holds,
        elf_files: e.elf_files,
    })
}

/// Keeps a complete read of `path`.
pub(super) fn save(
    cache: &LocalCache,
    path: &StorePath,
    nar_hash: &str,
    wanted: &Wanted,
    pr: &PathRead,
) {
    let Some(tree) = &pr.tree else { return };
    let by_node: std::collections::HashMap<_, _> = wanted.iter().map(|(k, v)| (*v, *k)).collect();
    let Some(holds) = pr
        .holds
        .iter()
        .map(|h| {
            Some(KeptHold {
                target: String::from_utf8_lossy(by_node.get(&h.target)?).into_owned(),
                file: h.file.clone(),
                offset: h.offset,
                context: h.context.clone(),
                pointed: h.pointed.clone(),
                site: h.site.clone(),
            })
        })
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    let list = wanted_list(wanted);
    let e = Entry {
        store_path: path.to_string(),
        nar_hash: nar_hash.to_string(),
        wanted: list.clone(),
        tree: tree.clone(),
        holds,
        elf_files: pr.elf_files.clone(),
    };
    if let Ok(bytes) = serde_json::to_vec(&e) {
        cache.put(path, &kind(nar_hash, &list), &bytes);
    }
}
