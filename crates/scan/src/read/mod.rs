//! The read stage: one pass over each store path.
//!
//! For every path a command needs, [`read`] goes over its files once, from
//! disk for a local or chroot store or as one NAR stream from a binary
//! cache, and keeps everything later stages need, so that nothing after it
//! opens the path again:
//!
//! - the path's [`FileTree`] (names, types, sizes, executable bits and
//!   symlink targets), from which split and partition compute NAR sizes;
//! - its raw [`Hold`]s: every occurrence of a wanted hash in a file's
//!   contents, a symlink target or a file name, with where it sits (for an
//!   ELF file, the loader entry or section; for text, the line);
//! - per ELF file, the [`ElfFacts`] a verdict needs: DT_NEEDED, RUNPATH,
//!   interpreter, `dlopen()` candidates, and the relative-path strings that
//!   show a program finding data next to itself.
//!
//! Judging a RUNPATH entry needs the listing of the directory it names,
//! inside *another* path. [`read`] therefore reads, after the requested
//! paths, the tree alone of every RUNPATH target it has not read yet: still
//! one read per path. Symlinks are never followed (the target string is
//! what Nix scans too), so a symlink loop inside a path is harmless.
//! Problems with one file or one path are recorded and the rest goes on.

mod content;
mod disk;
pub mod hash_finder;
mod kept;
mod nar_stream;
pub mod walk;

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;

use nix_heft_format::elf::ElfHold;
use nix_heft_format::nar::tree::FileTree;
use nix_heft_format::store_path::HASH_LEN;
use nix_heft_graph::{Graph, NodeId, ReadRequest};
use nix_heft_store::source::PathContents;
use nix_heft_types::problem::{Problem, ProblemKind};

/// Hash part → node, for the hash finder.
pub(crate) type Wanted = HashMap<[u8; HASH_LEN], NodeId>;

/// Where a hash occurrence sits.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Site {
    /// In the name of a file or directory.
    FileName,
    /// In a symlink's target.
    Symlink,
    /// In an ELF file, at this loader entry or section; `elf` indexes
    /// [`PathRead::elf_files`].
    Elf {
        /// What holds the byte.
        hold: ElfHold,
        /// Which ELF file's facts.
        elf: usize,
    },
    /// In a file that starts like ELF but whose headers do not parse.
    BadElf {
        /// The parser's complaint.
        error: String,
    },
    /// On the `#!` line of a script.
    Shebang,
    /// In a text file, on this 1-based line.
    Text {
        /// The line.
        line: u64,
    },
    /// In any other file.
    Binary,
}

/// One occurrence of a wanted hash, before classification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// The referenced node.
    pub target: NodeId,
    /// The file (relative raw path; empty for the path itself).
    pub file: Vec<u8>,
    /// Byte offset of the hash in the file, symlink target or name.
    pub offset: u64,
    /// A short printable excerpt around the hash.
    pub context: String,
    /// The path bytes after the hash (see [`nix_heft_types::evidence::Evidence::pointed`]).
    pub pointed: Vec<u8>,
    /// Where it sits.
    pub site: Site,
}

/// Strings of a file, stored NUL-separated in one buffer: a read keeps
/// many short strings for a while, and one allocation each would cost
/// several times their bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PathStrings(Vec<u8>);

impl PathStrings {
    /// Appends a string (it must hold no NUL, as path strings never do).
    pub fn push(&mut self, s: &[u8]) {
        self.0.extend_from_slice(s);
        self.0.push(0);
    }
    /// The strings, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.0
            .split(|&b| b == 0)
            .take(self.0.iter().filter(|&&b| b == 0).count())
    }
    /// Keeps the strings `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8]) -> bool) {
        let mut out = PathStrings::default();
        for s in self.iter().filter(|s| keep(s)) {
            out.push(s);
        }
        *self = out;
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Bytes held.
    pub fn len_bytes(&self) -> usize {
        self.0.len()
    }
}

/// What one ELF file of a path says about loading.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ElfFacts {
    /// The file (relative raw path).
    pub file: Vec<u8>,
    /// DT_NEEDED names.
    pub needed: Vec<String>,
    /// RUNPATH (or RPATH) entries as written.
    pub runpath: Vec<String>,
    /// Library names found as strings: what it may `dlopen()`.
    pub dlopen: Vec<String>,
    /// Relative path strings (containing `/`) found anywhere in the file,
    /// deduplicated: a library naming `rocblas/library` loads files from
    /// there relative to itself.
    pub path_strings: PathStrings,
}

/// Everything read from one store path.
#[derive(Debug, Clone, Default)]
pub struct PathRead {
    /// False when the source has no file contents for the path.
    pub available: bool,
    /// True when its contents were searched for holds; false for a read
    /// of the tree alone.
    pub searched: bool,
    /// Its file tree; `None` when it could not be read in full.
    pub tree: Option<FileTree>,
    /// Hash occurrences, in file order.
    pub holds: Vec<Hold>,
    /// Facts of its ELF files (those with holds, and every ELF file's path
    /// strings).
    pub elf_files: Vec<ElfFacts>,
}

/// The directory a library would name to find `file` relative to itself:
/// `lib/rocblas/library/k.hsaco` gives `rocblas/library`. Only directories
/// at least two levels below `lib/`, `share/` or `libexec/` count; a single
/// name like `rocblas` is too common a string to prove anything.
pub fn lookup_needle(file: &str) -> Option<&str> {
    let dir = &file[..file.rfind('/')?];
    let rest = ["lib/", "share/", "libexec/"]
        .iter()
        .find_map(|p| dir.strip_prefix(p))?;
    rest.contains('/').then_some(rest)
}

/// Directories of `tree` that a program could name to find files by
/// relative path (see [`lookup_needle`]), as needles.
fn tree_needles(tree: &FileTree) -> Vec<String> {
    let mut v: Vec<String> = tree
        .entries
        .iter()
        .filter(|e| !matches!(e.node, nix_heft_format::nar::tree::TreeNode::Directory))
        .filter_map(|e| lookup_needle(&String::from_utf8_lossy(&e.path)).map(str::to_string))
        .collect();
    v.sort();
    v.dedup();
    v
}

impl PathRead {
    /// Keeps only the ELF path strings that name the directory of a file
    /// holding a reference: the only ones a verdict can use. Memory after a
    /// read is then proportional to the holds, not to the binaries.
    fn keep_relevant_strings(&mut self) {
        let mut needles: Vec<String> = self
            .holds
            .iter()
            .filter_map(|h| lookup_needle(&String::from_utf8_lossy(&h.file)).map(str::to_string))
            .collect();
        needles.sort();
        needles.dedup();
        let ac = (!needles.is_empty())
            .then(|| aho_corasick::AhoCorasick::new(&needles).ok())
            .flatten();
        for f in &mut self.elf_files {
            match &ac {
                Some(ac) => f.path_strings.retain(|s| ac.is_match(s)),
                None => f.path_strings = PathStrings::default(),
            }
        }
        // Drop facts nothing refers to, renumbering the holds' indices.
        let mut used = vec![false; self.elf_files.len()];
        for h in &self.holds {
            if let Site::Elf { elf, .. } = h.site {
                used[elf] = true;
            }
        }
        let mut new_index = vec![usize::MAX; self.elf_files.len()];
        let mut kept = Vec::new();
        for (i, f) in std::mem::take(&mut self.elf_files).into_iter().enumerate() {
            if used[i] || !f.path_strings.is_empty() {
                new_index[i] = kept.len();
                kept.push(f);
            }
        }
        self.elf_files = kept;
        for h in &mut self.holds {
            if let Site::Elf { elf, .. } = &mut h.site {
                *elf = new_index[*elf];
            }
        }
    }

    /// Adds one file's holds and ELF facts; the holds' ELF indices count
    /// from the file's own list and are shifted to the path's.
    fn push_file(&mut self, holds: Vec<Hold>, elf_files: Vec<ElfFacts>) {
        let base = self.elf_files.len();
        self.holds.extend(holds.into_iter().map(|mut h| {
            if let Site::Elf { elf, .. } = &mut h.site {
                *elf += base;
            }
            h
        }));
        self.elf_files.extend(elf_files);
    }
}

/// The result of the read stage.
#[derive(Debug, Clone, Default)]
pub struct Reads {
    /// Per path read.
    pub paths: BTreeMap<NodeId, PathRead>,
    /// Everything that could not be read.
    pub problems: Vec<Problem>,
}

/// Reads each path of `wants` once, then the tree of every RUNPATH target
/// not read yet. `progress` is told how many content bytes were read.
pub fn read(
    src: &dyn PathContents,
    g: &Graph,
    wants: &ReadRequest,
    progress: &(dyn Fn(u64) + Sync),
) -> Reads {
    let mut out = Reads::default();
    read_more(src, g, wants, progress, &mut out);
    out
}

/// [`read`] into reads already made: a path `out` has searched already is
/// not read again (so each is asked for everything it is wanted for the
/// first time), one it has only the tree of is read in full; then the tree
/// of every RUNPATH target still missing. `advise` reads in two rounds:
/// the referrers, then the consumers that their simulations need.
pub fn read_more(
    src: &dyn PathContents,
    g: &Graph,
    wants: &ReadRequest,
    progress: &(dyn Fn(u64) + Sync),
    out: &mut Reads,
) {
    let todo: ReadRequest = wants
        .iter()
        .filter(|(v, _)| !out.paths.get(v).is_some_and(|pr| pr.searched))
        .map(|(&v, t)| (v, t.clone()))
        .collect();
    read_into(src, g, &todo, progress, out);
    let mut trees: ReadRequest = BTreeMap::new();
    for pr in out.paths.values() {
        for h in &pr.holds {
            if matches!(
                h.site,
                Site::Elf {
                    hold: ElfHold::Runpath { .. },
                    ..
                }
            ) && !out.paths.contains_key(&h.target)
            {
                trees.insert(h.target, Vec::new());
            }
        }
    }
    read_into(src, g, &trees, progress, out);
}

/// The file trees of `nodes` where they cost no NAR: from the disk (names
/// and sizes only, no file is opened) or a NAR listing. `advise`'s pruning
/// uses them to bound what a split or a partition could remove before it
/// decides what to read (see `nix_heft_analysis::plan::prune`); a node missing from
/// the answer has no such tree. Problems are left to the full read.
pub fn cheap_trees(
    src: &dyn PathContents,
    g: &Graph,
    nodes: &[NodeId],
) -> BTreeMap<NodeId, FileTree> {
    nodes
        .par_iter()
        .filter_map(|&v| {
            let path = g.path(v);
            let tree = match src.real_path(path) {
                Some(root) => walk::walk(&root, path.as_str()).0,
                None => src.listing(path).ok().flatten(),
            };
            tree.map(|t| (v, t))
        })
        .collect()
}

/// NARs read at once from a source that fetches them over a network, on
/// any number of cores: a download waiting on the network overlaps other
/// paths' decompression and scanning, and each read holds one
/// decompressor (an xz or zstd window of at most 8 MiB at the levels Nix
/// writes) and one 8 MiB ELF window, so memory stays bounded.
const NETWORK_READS: usize = 6;

fn read_into(
    src: &dyn PathContents,
    g: &Graph,
    wants: &ReadRequest,
    progress: &(dyn Fn(u64) + Sync),
    out: &mut Reads,
) {
    let read_all = || -> Vec<(NodeId, PathRead, Vec<Problem>)> {
        wants
            .par_iter()
            .map(|(&v, targets)| {
                let wanted: Wanted = targets.iter().map(|&t| (hash_key(g, t), t)).collect();
                let (pr, problems) = read_path(src, g, v, &wanted, !targets.is_empty(), progress);
                (v, pr, problems)
            })
            .collect()
    };
    // Sources that download NARs keep their reads: read more of them at
    // once than there are cores (local files are read on the cores).
    let networked = wants
        .keys()
        .next()
        .is_some_and(|&v| src.kept_reads(g.path(v)).is_some());
    let pool = (networked && rayon::current_num_threads() < NETWORK_READS)
        .then(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(NETWORK_READS)
                .thread_name(|i| format!("nix-heft-read-{i}"))
                .build()
                .ok()
        })
        .flatten();
    let results = match &pool {
        Some(p) => p.install(read_all),
        None => read_all(),
    };
    for (v, pr, problems) in results {
        out.paths.insert(v, pr);
        out.problems.extend(problems);
    }
}

fn hash_key(g: &Graph, t: NodeId) -> [u8; HASH_LEN] {
    let mut k = [0u8; HASH_LEN];
    k.copy_from_slice(g.path(t).hash_part().as_bytes());
    k
}

fn read_path(
    src: &dyn PathContents,
    g: &Graph,
    v: NodeId,
    wanted: &Wanted,
    find_holds: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> (PathRead, Vec<Problem>) {
    let path = g.path(v);
    // Files on disk are walked and read in parallel, unless the source
    // wants them checked against a NAR hash (`--verify`): then they are read
    // as the NAR they serialise to, hashed as it streams.
    if let Some(root) = src.real_path(path)
        && src.expected_nar_hash(path).is_none()
    {
        return disk::read(&root, path.as_str(), wanted, find_holds, progress);
    }
    // A read kept from an earlier run against the same NAR (sources that
    // fetch NARs over a network keep them) needs no download at all.
    // (A tree-only read is kept too: without a listing it costs a NAR.)
    // The NAR hash is asked for only where reads are kept: for a local
    // store with `--verify` it is a database query.
    let kept = src
        .kept_reads(path)
        .and_then(|cache| Some((cache, src.expected_nar_hash(path)?)));
    if let Some((cache, nar_hash)) = &kept
        && let Some(pr) = kept::load(cache, path, nar_hash, wanted, find_holds)
    {
        return (pr, Vec::new());
    }
    let (pr, problems) = read_contents(src, path, wanted, find_holds, progress);
    if let Some((cache, nar_hash)) = &kept
        && problems.is_empty()
        && pr.tree.is_some()
    {
        kept::save(cache, path, nar_hash, wanted, &pr);
    }
    (pr, problems)
}

/// A path's contents from its listing or its NAR.
fn read_contents(
    src: &dyn PathContents,
    path: &nix_heft_format::StorePath,
    wanted: &Wanted,
    find_holds: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> (PathRead, Vec<Problem>) {
    // A NAR listing gives the tree without the NAR: all a tree-only read
    // needs, and all a search for holds needs when the path holds no file
    // contents (a symlink farm: its holds are in names and symlink
    // targets). A listing that cannot be fetched is no loss: the NAR has
    // it all.
    if let Ok(Some(tree)) = src.listing(path) {
        if !find_holds {
            return (
                PathRead {
                    available: true,
                    searched: false,
                    tree: Some(tree),
                    ..PathRead::default()
                },
                Vec::new(),
            );
        }
        if let Some(pr) = holds_from_listing(tree, wanted) {
            return (pr, Vec::new());
        }
    }
    let mut attempt = 1;
    loop {
        // A request that failed for good was already retried by the source.
        let nar = match src.nar(path, verify_enabled()) {
            Ok(Some(nar)) => nar,
            Ok(None) => {
                // No file contents in this source: searched, but blind.
                let pr = PathRead {
                    available: false,
                    searched: find_holds,
                    ..PathRead::default()
                };
                return (pr, Vec::new());
            }
            Err(e) => return unopened(path, find_holds, &e),
        };
        // A NAR downloaded over a network may break off mid-body (a reset,
        // a time-out) or arrive damaged: it is read again from the start, a
        // bounded number of times. Local files are read once.
        let attempts = if nar.downloaded { NAR_ATTEMPTS } else { 1 };
        let (pr, mut problems) = read_checked(
            src,
            path,
            nar.reader,
            nar.file_check,
            wanted,
            find_holds,
            progress,
        );
        let transient = problems.iter().any(|p| {
            matches!(
                p.kind,
                ProblemKind::TruncatedNar
                    | ProblemKind::CorruptNar
                    | ProblemKind::Unreadable
                    | ProblemKind::HashMismatch
            )
        });
        if !transient || attempt >= attempts {
            if transient && attempts > 1 {
                for p in &mut problems {
                    p.message.push_str(&format!(" (after {attempts} attempts)"));
                }
            }
            return (pr, problems);
        }
        attempt += 1;
    }
}

/// Reads a NAR, hashing it on the way when the source says what it must
/// hash to: a NAR whose bytes are not the narinfo's is not that path, so
/// nothing from it is kept (and, with no problem-free read, nothing cached).
/// The compressed file, when `file_check` is given, is checked the same
/// way once the whole NAR was read (its `FileHash` and `FileSize`).
/// `NIX_HEFT_VERIFY=0` turns the checks off (to measure what they cost).
fn read_checked(
    src: &dyn PathContents,
    path: &nix_heft_format::StorePath,
    nar: Box<dyn std::io::Read + Send>,
    file_check: Option<nix_heft_store::source::FileCheck>,
    wanted: &Wanted,
    find_holds: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> (PathRead, Vec<Problem>) {
    use nix_heft_format::nar::hash::{HashingReader, NarHash};
    let expected = match src.expected_nar_hash(path).filter(|_| verify_enabled()) {
        None => return nar_stream::read(nar, path.as_str(), wanted, find_holds, progress),
        Some(h) => match NarHash::parse(&h) {
            Ok(h) => h,
            Err(e) => {
                let p = Problem::new(
                    path.as_str(),
                    ProblemKind::HashMismatch,
                    format!("cannot check the NAR: {e}"),
                );
                return (
                    PathRead {
                        available: true,
                        searched: find_holds,
                        ..PathRead::default()
                    },
                    vec![p],
                );
            }
        },
    };
    let (reader, handle) = HashingReader::new(nar);
    let (pr, problems) = nar_stream::read(
        Box::new(reader),
        path.as_str(),
        wanted,
        find_holds,
        progress,
    );
    if !problems.is_empty() {
        return (pr, problems);
    }
    let (got, bytes) = handle.finish();
    let message = if got != expected {
        format!(
            "NAR hash mismatch: {} {}, but its {bytes} bytes hash to {}; nothing read from it is used",
            if src.real_path(path).is_some() {
                "the store database records"
            } else {
                "the narinfo says"
            },
            expected.to_nix32(),
            got.to_nix32()
        )
    } else {
        // The NAR is right, but the file it came in is not the one the
        // narinfo describes: a cache whose files were replaced.
        match file_check.and_then(|c| c.mismatch()) {
            None => return (pr, problems),
            Some(m) => m,
        }
    };
    let p = Problem::new(path.as_str(), ProblemKind::HashMismatch, message);
    (
        PathRead {
            available: true,
            searched: find_holds,
            ..PathRead::default()
        },
        vec![p],
    )
}

/// Whether NARs are checked against their narinfo (`NIX_HEFT_VERIFY=0`
/// turns it off, to measure what checking costs).
fn verify_enabled() -> bool {
    std::env::var_os("NIX_HEFT_VERIFY").is_none_or(|v| v != "0")
}

/// Downloads over a network get this many tries at a whole NAR.
const NAR_ATTEMPTS: u32 = 3;

/// The read of a path whose contents could not be opened.
fn unopened(
    path: &nix_heft_format::StorePath,
    find_holds: bool,
    e: &nix_heft_store::Error,
) -> (PathRead, Vec<Problem>) {
    (
        PathRead {
            available: true,
            searched: find_holds,
            ..PathRead::default()
        },
        vec![Problem::new(path.as_str(), problem_kind(e), e.to_string())],
    )
}

/// The holds of a path whose listing shows no file contents (only
/// directories, symlinks and empty files): every hold is in a name or a
/// symlink target, found as the NAR stream would find them, in NAR order.
/// `None` when some file has contents to search.
fn holds_from_listing(tree: FileTree, wanted: &Wanted) -> Option<PathRead> {
    use nix_heft_format::nar::tree::TreeNode;
    if tree
        .entries
        .iter()
        .any(|e| matches!(e.node, TreeNode::Regular { size, .. } if size > 0))
    {
        return None;
    }
    let mut holds = Vec::new();
    for e in &tree.entries {
        if !e.path.is_empty() {
            content::name_holds(&e.path, wanted, &mut holds);
        }
        if let TreeNode::Symlink { target } = &e.node {
            content::symlink_holds(&e.path, target, wanted, &mut holds);
        }
    }
    Some(PathRead {
        available: true,
        searched: true,
        tree: Some(tree),
        holds,
        elf_files: Vec::new(),
    })
}

/// The kind of problem a NAR that could not be parsed makes for the path
/// being read: the read stage's judgement, so the NAR format knows nothing
/// of the app's problems.
pub(crate) fn nar_problem_kind(e: &nix_heft_format::nar::reader::NarError) -> ProblemKind {
    use nix_heft_format::nar::reader::NarError;
    match e {
        NarError::UnexpectedEof { .. } => ProblemKind::TruncatedNar,
        NarError::UnknownCompression(_) => ProblemKind::UnknownCompression,
        NarError::Io(io) if io.kind() == std::io::ErrorKind::NotFound => ProblemKind::Vanished,
        NarError::Io(_) => ProblemKind::Unreadable,
        _ => ProblemKind::CorruptNar,
    }
}

/// The kind of problem an error opening a path's contents is.
fn problem_kind(e: &nix_heft_store::Error) -> ProblemKind {
    match e {
        nix_heft_store::Error::BadNar { source, .. } => nar_problem_kind(source),
        nix_heft_store::Error::NarUrlOutsideCache { .. } => ProblemKind::BadNarUrl,
        nix_heft_store::Error::Shared(nix_heft_types::Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            ProblemKind::Vanished
        }
        _ => ProblemKind::Unreadable,
    }
}
