//! Scanning store paths for the references they hold, file by file.
//!
//! For each path to explain, the scanner looks for the hash parts of that
//! path's registered references (itself included) in every file's contents,
//! every symlink target and every file name, reading either the files of a
//! local or chroot store or the NAR of a binary cache as a stream. Each
//! occurrence becomes an [`Evidence`] with a [`Kind`] saying what holds it.
//!
//! Symlinks are never followed while scanning (the target string is what Nix
//! scans too), so a symlink loop inside a store path is harmless. Problems
//! with one file or one path (unreadable, vanished, corrupt NAR) are
//! recorded as [`Problem`]s and the rest of the scan goes on.

mod refscan;
mod walk;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

pub use refscan::{Hit, RefScanner, scan_bytes};

use crate::classify::verdict::Verdict;
use crate::graph::{Graph, NodeId};
use crate::source::StoreSource;
use crate::store_path::HASH_LEN;

/// What holds a reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The target of a symlink.
    Symlink,
    /// The name of a file or directory.
    FileName,
    /// The ELF program interpreter (PT_INTERP).
    ElfInterpreter,
    /// An entry of DT_RUNPATH / DT_RPATH.
    ElfRunpath,
    /// A DT_NEEDED entry.
    ElfNeeded,
    /// A string in loaded data (.rodata, .data, .dynstr ...).
    ElfString,
    /// Debug information (.debug_*).
    ElfDebug,
    /// .comment or .note* sections.
    ElfComment,
    /// Elsewhere in an ELF file (code, symbol tables, no section).
    ElfOther,
    /// The `#!` line of a script.
    Shebang,
    /// A file under `nix-support/` (propagated inputs, setup hooks).
    NixSupport,
    /// A text file.
    Text,
    /// Any other file.
    Binary,
}

impl Kind {
    /// The name used in output (`elf-runpath`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Symlink => "symlink",
            Kind::FileName => "file-name",
            Kind::ElfInterpreter => "elf-interpreter",
            Kind::ElfRunpath => "elf-runpath",
            Kind::ElfNeeded => "elf-needed",
            Kind::ElfString => "elf-string",
            Kind::ElfDebug => "elf-debug",
            Kind::ElfComment => "elf-comment",
            Kind::ElfOther => "elf-other",
            Kind::Shebang => "shebang",
            Kind::NixSupport => "nix-support",
            Kind::Text => "text",
            Kind::Binary => "binary",
        }
    }
}

/// One place where a path holds a reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// File relative to the referrer's store path (`""` for the path itself);
    /// names that are not UTF-8 are shown with U+FFFD.
    pub file: String,
    /// The same relative path as raw bytes, for matching against file trees
    /// (not in JSON).
    #[serde(skip)]
    pub file_raw: Vec<u8>,
    /// What kind of hold it is.
    pub kind: Kind,
    /// Byte offset of the hash in the file (or in the symlink target / name).
    pub offset: u64,
    /// 1-based line number, for text files and scripts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// A short printable excerpt around the hash.
    pub context: String,
    /// True for a RUNPATH entry that provides none of the file's needed or
    /// dlopen()ed libraries.
    #[serde(default)]
    pub dead: bool,
    /// For a RUNPATH entry: the sonames the file needs or may dlopen() that
    /// this directory provides.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub serves: Vec<String>,
    /// Extra explanation (e.g. why an ELF file was treated as binary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// A program in the same store path that finds this file by a relative
    /// directory name (e.g. `lib/librocblas.so` names `rocblas/library`),
    /// which makes it run-time data whatever its location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_by: Option<String>,
    /// Whether this hold is needed at run time.
    pub verdict: Verdict,
    /// Why, in one line.
    pub reason: String,
}

impl Evidence {
    /// Evidence of `kind` at `offset` in `file` (raw relative path), not
    /// yet judged.
    pub fn new(file: &[u8], kind: Kind, offset: u64, context: String) -> Evidence {
        Evidence {
            file: String::from_utf8_lossy(file).into_owned(),
            file_raw: file.to_vec(),
            kind,
            offset,
            line: None,
            context,
            dead: false,
            serves: Vec::new(),
            note: None,
            used_by: None,
            verdict: Verdict::Unknown,
            reason: String::new(),
        }
    }
}

/// Something that could not be read; the scan went on without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// The store path being scanned.
    pub path: String,
    /// The file inside it, if the problem is with one file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// What went wrong.
    pub message: String,
}

/// Evidence found in one referrer, by reference.
#[derive(Debug, Default, Clone)]
pub struct PathEvidence {
    /// Evidence per referenced node, in file order.
    pub by_reference: BTreeMap<NodeId, Vec<Evidence>>,
    /// False when the source has no file contents for this path.
    pub available: bool,
}

/// The result of scanning several paths.
#[derive(Debug, Default)]
pub struct ScanResult {
    /// Per scanned referrer.
    pub paths: BTreeMap<NodeId, PathEvidence>,
    /// Everything that could not be read.
    pub problems: Vec<Problem>,
}

/// What to look for in one referrer: its own hash and those of `targets`.
pub struct ScanRequest {
    /// The path to scan.
    pub referrer: NodeId,
    /// References whose hashes to look for.
    pub targets: Vec<NodeId>,
}

impl ScanRequest {
    /// A request for every registered reference of `v` (itself included
    /// when it refers to itself).
    pub fn all_references(g: &Graph, v: NodeId) -> ScanRequest {
        let mut targets = g.references(v).to_vec();
        if g.references_self(v) {
            targets.push(v);
        }
        ScanRequest {
            referrer: v,
            targets,
        }
    }
}

/// Scans each request's referrer, in parallel over paths and files.
/// `progress` is told how many bytes were read, as they are read.
pub fn scan(
    src: &dyn StoreSource,
    g: &Graph,
    requests: &[ScanRequest],
    progress: &(dyn Fn(u64) + Sync),
) -> ScanResult {
    let dirs = walk::DirCache::default();
    let bytes = AtomicU64::new(0);
    let report = |n: u64| {
        bytes.fetch_add(n, Ordering::Relaxed);
        progress(n);
    };
    let results: Vec<(NodeId, PathEvidence, Vec<Problem>)> = requests
        .par_iter()
        .map(|req| {
            let wanted: HashMap<[u8; HASH_LEN], u32> = req
                .targets
                .iter()
                .map(|&t| {
                    let h: [u8; HASH_LEN] = g
                        .path(t)
                        .hash_part()
                        .as_bytes()
                        .try_into()
                        .expect("hash part length");
                    (h, t)
                })
                .collect();
            let mut problems = Vec::new();
            let (available, hits) =
                walk::scan_path(src, g, req.referrer, &wanted, &dirs, &report, &mut problems);
            let mut by_reference: BTreeMap<NodeId, Vec<Evidence>> = BTreeMap::new();
            for (target, mut ev) in hits {
                let (v, r) = crate::classify::verdict::judge(&ev);
                ev.verdict = v;
                ev.reason = r;
                by_reference.entry(target).or_default().push(ev);
            }
            (
                req.referrer,
                PathEvidence {
                    by_reference,
                    available,
                },
                problems,
            )
        })
        .collect();
    let mut out = ScanResult::default();
    for (v, ev, problems) in results {
        out.paths.insert(v, ev);
        out.problems.extend(problems);
    }
    out
}
