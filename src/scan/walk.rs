//! Reading one store path's files (from disk or from its NAR) and turning
//! hash hits into classified evidence.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Mutex;

use rayon::prelude::*;

use super::refscan::{Hit, RefScanner, scan_bytes};
use super::{Evidence, Kind, Problem};
use crate::classify::elf::{ElfHold, ElfLayout, is_elf, runpath_serves};
use crate::graph::{Graph, NodeId};
use crate::source::StoreSource;
use crate::source::nar::{NarNode, walk_nar};
use crate::store_path::HASH_LEN;

/// Read size: large enough that per-call overhead vanishes, small enough
/// that the kernel's copy and the scan stay in the CPU cache. Measured on
/// the 4 GiB scan benchmark: 64 KiB took half the time of 128 KiB or 1 MiB.
const CHUNK: usize = 1 << 16;

type Wanted = HashMap<[u8; HASH_LEN], u32>;
/// Receives each chunk of a file and whether the file is ELF.
type Spool<'a> = &'a mut dyn FnMut(bool, &[u8]) -> std::io::Result<()>;
/// (referenced path, subdirectory) → names in it, `None` if unlistable.
type Listings = HashMap<(NodeId, String), Option<Vec<String>>>;

/// Directory listings of referenced paths, for deciding whether a RUNPATH
/// entry serves anything. Cached because many files share entries.
#[derive(Default)]
pub(super) struct DirCache {
    map: Mutex<Listings>,
}

impl DirCache {
    fn listing(
        &self,
        src: &dyn StoreSource,
        g: &Graph,
        v: NodeId,
        sub: &str,
    ) -> Option<Vec<String>> {
        let key = (v, sub.to_string());
        if let Some(l) = self.map.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return l.clone();
        }
        let l = list_dir(src, g, v, sub);
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, l.clone());
        l
    }
}

fn list_dir(src: &dyn StoreSource, g: &Graph, v: NodeId, sub: &str) -> Option<Vec<String>> {
    let p = g.path(v);
    if let Some(root) = src.real_path(p) {
        let rd = std::fs::read_dir(root.join(sub)).ok()?;
        return Some(
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
        );
    }
    let nar = src.nar(p).ok()??;
    let prefix = if sub.is_empty() {
        String::new()
    } else {
        format!("{sub}/")
    };
    let mut names = Vec::new();
    walk_nar(nar, &mut |path: &[u8], _node: NarNode<'_>| {
        let path = String::from_utf8_lossy(path);
        if let Some(rest) = path.strip_prefix(&prefix)
            && !rest.is_empty()
            && !rest.contains('/')
        {
            names.push(rest.to_string());
        }
        Ok(())
    })
    .ok()?;
    Some(names)
}

/// What one file's content scan found, before classification.
struct FileScan {
    hits: Vec<Hit>,
    lines: Vec<u64>,
    is_elf: bool,
    text: bool,
    /// Length of the first line when the file starts with `#!`.
    shebang_len: Option<u64>,
}

/// Streams `r` through the scanner; copies an ELF file's bytes to `spool`
/// when given (a NAR cannot be re-read, but ELF classification needs the
/// section table, which may come after the hit).
fn scan_stream(
    r: &mut dyn Read,
    wanted: &Wanted,
    report: &(dyn Fn(u64) + Sync),
    spool: Option<Spool<'_>>,
) -> std::io::Result<FileScan> {
    // One read buffer per thread: a fresh 1 MiB allocation per file costs
    // page faults on every one of tens of thousands of small files.
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUF.with(|b| match b.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() < CHUNK {
                buf.resize(CHUNK, 0);
            }
            scan_stream_with(r, wanted, report, spool, &mut buf)
        }
        // Re-entered on this thread (never expected): use a buffer of its own.
        Err(_) => scan_stream_with(r, wanted, report, spool, &mut vec![0u8; CHUNK]),
    })
}

fn scan_stream_with(
    r: &mut dyn Read,
    wanted: &Wanted,
    report: &(dyn Fn(u64) + Sync),
    mut spool: Option<Spool<'_>>,
    buf: &mut [u8],
) -> std::io::Result<FileScan> {
    let mut sc = RefScanner::new(wanted);
    let mut hits = Vec::new();
    let mut lines = Vec::new();
    let mut first = true;
    let (mut elf, mut text, mut shebang_len) = (false, true, None);
    let mut newlines_before = 0u64;
    let mut pos = 0u64;
    loop {
        let n = match r.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        if first {
            first = false;
            elf = is_elf(chunk);
            let head = &chunk[..chunk.len().min(8192)];
            text = !elf && memchr::memchr(0, head).is_none();
            if chunk.starts_with(b"#!") {
                shebang_len = Some(memchr::memchr(b'\n', chunk).unwrap_or(chunk.len()) as u64);
            }
        }
        if let Some(s) = spool.as_mut() {
            s(elf, chunk)?;
        }
        let before = hits.len();
        sc.feed(chunk, &mut hits);
        if text {
            // Hits come in offset order; count newlines incrementally.
            let mut counted_to = 0usize;
            let mut count = newlines_before;
            for h in &hits[before..] {
                if h.offset < pos {
                    lines.push(newlines_before + 1); // straddles: a hash holds no newline
                    continue;
                }
                let o = (h.offset - pos) as usize;
                count += memchr::memchr_iter(b'\n', &chunk[counted_to..o]).count() as u64;
                counted_to = o;
                lines.push(count + 1);
            }
            newlines_before += memchr::memchr_iter(b'\n', chunk).count() as u64;
        }
        pos += n as u64;
        report(n as u64);
    }
    Ok(FileScan {
        hits,
        lines,
        is_elf: elf,
        text,
        shebang_len,
    })
}

/// Everything needed to classify the hits of one file.
struct Classifier<'a> {
    src: &'a dyn StoreSource,
    g: &'a Graph,
    dirs: &'a DirCache,
}

impl Classifier<'_> {
    fn classify(
        &self,
        rel: &[u8],
        fs: FileScan,
        elf_bytes: Option<&[u8]>,
    ) -> Vec<(NodeId, Evidence)> {
        let nix_support = rel.starts_with(b"nix-support/");
        let layout = match (fs.is_elf, elf_bytes) {
            (true, Some(b)) if !fs.hits.is_empty() => {
                Some(ElfLayout::parse(b).map_err(|e| e.to_string()))
            }
            _ => None,
        };
        let mut out = Vec::with_capacity(fs.hits.len());
        for (i, h) in fs.hits.into_iter().enumerate() {
            let mut ev = Evidence::new(rel, Kind::Binary, h.offset, h.context);
            if nix_support {
                ev.kind = Kind::NixSupport;
                ev.line = fs.lines.get(i).copied();
            } else if let Some(layout) = &layout {
                match layout {
                    Ok(l) => self.elf_kind(l, h.target, &mut ev),
                    Err(e) => ev.note = Some(format!("malformed ELF, treated as binary: {e}")),
                }
            } else if fs.shebang_len.is_some_and(|len| h.offset < len) {
                ev.kind = Kind::Shebang;
                ev.line = Some(1);
            } else if fs.text {
                ev.kind = Kind::Text;
                ev.line = fs.lines.get(i).copied();
            }
            out.push((h.target, ev));
        }
        out
    }

    fn elf_kind(&self, l: &ElfLayout, target: NodeId, ev: &mut Evidence) {
        ev.kind = match l.classify(ev.offset) {
            ElfHold::Interpreter => Kind::ElfInterpreter,
            ElfHold::Needed { .. } => Kind::ElfNeeded,
            ElfHold::Runpath { entry } => {
                if let Some(e) = l.runpath().get(entry) {
                    self.judge_runpath(l, target, &e.dir, ev);
                }
                Kind::ElfRunpath
            }
            ElfHold::String { .. } => Kind::ElfString,
            ElfHold::Debug { .. } => Kind::ElfDebug,
            ElfHold::Comment { .. } => Kind::ElfComment,
            ElfHold::Other { .. } => Kind::ElfOther,
        };
    }

    /// A RUNPATH entry is dead only when the directory it names provides
    /// none of the libraries the file needs *or may dlopen() by name*:
    /// nixpkgs wires dlopen()ed libraries through exactly such entries.
    fn judge_runpath(&self, l: &ElfLayout, target: NodeId, dir: &str, ev: &mut Evidence) {
        let base = self.g.path(target).as_str();
        let sub = match dir.strip_prefix(base) {
            Some("") => "",
            Some(rest) if rest.starts_with('/') => rest.trim_matches('/'),
            _ => {
                ev.note = Some(format!("RUNPATH entry {dir} is not inside {base}"));
                return;
            }
        };
        match self.dirs.listing(self.src, self.g, target, sub) {
            Some(listing) => {
                ev.serves = runpath_serves(&listing, l.needed(), l.dlopen_candidates());
                ev.dead = ev.serves.is_empty();
            }
            None => ev.note = Some(format!("cannot list {dir}; not judged")),
        }
    }
}

fn rel_string(rel: &[u8]) -> String {
    String::from_utf8_lossy(rel).into_owned()
}

fn name_hits(rel: &[u8], wanted: &Wanted, out: &mut Vec<(NodeId, Evidence)>) {
    // Only the last component: parents are reported as entries of their own.
    let name_start = rel.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
    for h in scan_bytes(&rel[name_start..], wanted) {
        out.push((
            h.target,
            Evidence::new(rel, Kind::FileName, h.offset, h.context),
        ));
    }
}

fn symlink_hits(rel: &[u8], target: &[u8], wanted: &Wanted, out: &mut Vec<(NodeId, Evidence)>) {
    for h in scan_bytes(target, wanted) {
        out.push((
            h.target,
            Evidence::new(
                rel,
                Kind::Symlink,
                h.offset,
                String::from_utf8_lossy(target).into_owned(),
            ),
        ));
    }
}

/// Scans one store path. Returns whether file contents were available and
/// the evidence found, by referenced node.
pub(super) fn scan_path(
    src: &dyn StoreSource,
    g: &Graph,
    v: NodeId,
    wanted: &Wanted,
    dirs: &DirCache,
    report: &(dyn Fn(u64) + Sync),
    problems: &mut Vec<Problem>,
) -> (bool, Vec<(NodeId, Evidence)>) {
    let cls = Classifier { src, g, dirs };
    let path = g.path(v);
    let problem = |file: Option<String>, message: String| Problem {
        path: path.to_string(),
        file,
        message,
    };
    if let Some(root) = src.real_path(path) {
        let mut entries = Vec::new();
        let mut unlisted = Vec::new();
        collect_entries(&root, Vec::new(), &mut entries, &mut unlisted);
        for (rel, e) in unlisted {
            let file = (!rel.is_empty()).then(|| rel_string(&rel));
            let msg = if e.kind() == std::io::ErrorKind::NotFound {
                "vanished during the scan".to_string()
            } else {
                format!("cannot list: {e}")
            };
            problems.push(problem(file, msg));
        }
        let per_file: Vec<Result<Vec<(NodeId, Evidence)>, Problem>> = entries
            .par_iter()
            .map(|(rel, ty)| {
                let mut out = Vec::new();
                if !rel.is_empty() {
                    name_hits(rel, wanted, &mut out);
                }
                let full = if rel.is_empty() {
                    root.clone()
                } else {
                    root.join(std::ffi::OsStr::from_bytes(rel))
                };
                let fail = |what: &str, e: std::io::Error| {
                    let msg = if e.kind() == std::io::ErrorKind::NotFound {
                        format!("{what}: vanished during the scan")
                    } else {
                        format!("{what}: {e}")
                    };
                    problem(Some(rel_string(rel)), msg)
                };
                match ty {
                    EntryType::Symlink => {
                        let t = std::fs::read_link(&full)
                            .map_err(|e| fail("cannot read symlink", e))?;
                        symlink_hits(rel, t.as_os_str().as_bytes(), wanted, &mut out);
                    }
                    EntryType::File => {
                        let mut f =
                            std::fs::File::open(&full).map_err(|e| fail("cannot open", e))?;
                        let fs = scan_stream(&mut f, wanted, report, None)
                            .map_err(|e| fail("cannot read", e))?;
                        let mmap;
                        let bytes = if fs.is_elf && !fs.hits.is_empty() {
                            // SAFETY: the store is immutable; a path deleted
                            // under us only makes reads fail, not change.
                            mmap = unsafe { memmap2::Mmap::map(&f) }
                                .map_err(|e| fail("cannot map", e))?;
                            Some(&mmap[..])
                        } else {
                            None
                        };
                        out.extend(cls.classify(rel, fs, bytes));
                    }
                    EntryType::Dir => {}
                }
                Ok(out)
            })
            .collect();
        let mut out = Vec::new();
        for r in per_file {
            match r {
                Ok(v) => out.extend(v),
                Err(p) => problems.push(p),
            }
        }
        mark_relative_lookups(src, path, &mut out);
        return (true, out);
    }
    let nar = match src.nar(path) {
        Ok(Some(n)) => n,
        Ok(None) => return (false, Vec::new()),
        Err(e) => {
            problems.push(problem(None, e.to_string()));
            return (true, Vec::new());
        }
    };
    let mut out = Vec::new();
    let res = walk_nar(nar, &mut |rel: &[u8], node: NarNode<'_>| {
        if !rel.is_empty() {
            name_hits(rel, wanted, &mut out);
        }
        match node {
            NarNode::Directory => {}
            NarNode::Symlink { target } => symlink_hits(rel, target, wanted, &mut out),
            NarNode::Regular { contents, .. } => {
                // ELF bytes go to an anonymous temporary file, never to
                // memory, so memory stays independent of file sizes.
                let mut spool_file: Option<std::fs::File> = None;
                let mut spool = |elf: bool, chunk: &[u8]| -> std::io::Result<()> {
                    if elf {
                        if spool_file.is_none() {
                            spool_file = Some(tempfile::tempfile()?);
                        }
                        spool_file.as_mut().expect("just set").write_all(chunk)?;
                    }
                    Ok(())
                };
                let fs = scan_stream(contents, wanted, report, Some(&mut spool))
                    .map_err(crate::source::nar::NarError::Io)?;
                let mmap = match (&spool_file, fs.is_elf && !fs.hits.is_empty()) {
                    (Some(f), true) => Some(
                        // SAFETY: a private temporary file nobody else writes.
                        unsafe { memmap2::Mmap::map(f) }
                            .map_err(crate::source::nar::NarError::Io)?,
                    ),
                    _ => None,
                };
                out.extend(cls.classify(rel, fs, mmap.as_deref()));
            }
        }
        Ok(())
    });
    if let Err(e) = res {
        problems.push(problem(None, format!("NAR: {e}")));
    }
    mark_relative_lookups(src, path, &mut out);
    (true, out)
}

#[derive(Debug, Clone, Copy)]
enum EntryType {
    File,
    Dir,
    Symlink,
}

/// Lists a tree without following symlinks, in NAR order (sorted names).
/// A directory that cannot be read is recorded in `failed` and skipped; its
/// siblings are still listed.
fn collect_entries(
    dir: &Path,
    rel: Vec<u8>,
    out: &mut Vec<(Vec<u8>, EntryType)>,
    failed: &mut Vec<(Vec<u8>, std::io::Error)>,
) {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) => return failed.push((rel, e)),
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        out.push((rel, EntryType::Symlink));
        return;
    }
    if !ft.is_dir() {
        out.push((rel, EntryType::File));
        return;
    }
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => return failed.push((rel, e)),
    };
    out.push((rel.clone(), EntryType::Dir));
    let mut names: Vec<std::ffi::OsString> =
        rd.filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    names.sort();
    for n in names {
        let mut r = rel.clone();
        if !r.is_empty() {
            r.push(b'/');
        }
        r.extend_from_slice(n.as_bytes());
        collect_entries(&dir.join(&n), r, out, failed);
    }
}

/// The directory a library would name to find `file` relative to itself:
/// `lib/rocblas/library/k.hsaco` gives `rocblas/library`. Only directories
/// at least two levels below `lib/`, `share/` or `libexec/` count; a single
/// name like `rocblas` is too common a string to prove anything.
fn lookup_needle(file: &str) -> Option<&str> {
    let dir = &file[..file.rfind('/')?];
    let rest = ["lib/", "share/", "libexec/"]
        .iter()
        .find_map(|p| dir.strip_prefix(p))?;
    rest.contains('/').then_some(rest)
}

/// Marks evidence in directories that an ELF file of the same path names
/// by relative path: such files are loaded at run time (rocblas finds its
/// Tensile kernels as `<dir of librocblas.so>/rocblas/library/*`), which no
/// reference scan of the consumer can see.
fn mark_relative_lookups(
    src: &dyn StoreSource,
    path: &crate::StorePath,
    out: &mut [(NodeId, Evidence)],
) {
    let mut needles: Vec<String> = out
        .iter()
        .filter_map(|(_, e)| lookup_needle(&e.file).map(str::to_string))
        .collect();
    needles.sort();
    needles.dedup();
    if needles.is_empty() {
        return;
    }
    let mut found: HashMap<String, String> = HashMap::new();
    let check = |rel: &[u8], r: &mut dyn Read, found: &mut HashMap<String, String>| {
        let mut head = [0u8; 4];
        if r.read_exact(&mut head).is_err() || !is_elf(&head) {
            return;
        }
        let finders: Vec<memchr::memmem::Finder<'_>> = needles
            .iter()
            .map(|n| memchr::memmem::Finder::new(n.as_bytes()))
            .collect();
        let keep = needles.iter().map(|n| n.len()).max().unwrap_or(0);
        let mut buf: Vec<u8> = Vec::with_capacity(CHUNK + keep);
        let mut chunk = vec![0u8; CHUNK];
        loop {
            let n = match r.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            buf.extend_from_slice(&chunk[..n]);
            for (i, f) in finders.iter().enumerate() {
                if !found.contains_key(&needles[i]) && f.find(&buf).is_some() {
                    found.insert(needles[i].clone(), rel_string(rel));
                }
            }
            if found.len() == needles.len() {
                break;
            }
            let cut = buf.len().saturating_sub(keep);
            buf.drain(..cut);
        }
    };
    if let Some(root) = src.real_path(path) {
        let mut entries = Vec::new();
        collect_entries(&root, Vec::new(), &mut entries, &mut Vec::new());
        for (rel, ty) in entries {
            if matches!(ty, EntryType::File)
                && let Ok(mut f) = std::fs::File::open(root.join(std::ffi::OsStr::from_bytes(&rel)))
            {
                check(&rel, &mut f, &mut found);
            }
        }
    } else if let Ok(Some(nar)) = src.nar(path) {
        let _ = walk_nar(nar, &mut |rel: &[u8], node: NarNode<'_>| {
            if let NarNode::Regular { contents, .. } = node {
                check(rel, contents, &mut found);
            }
            Ok(())
        });
    }
    for (_, e) in out.iter_mut() {
        if let Some(n) = lookup_needle(&e.file)
            && let Some(elf) = found.get(n)
        {
            e.used_by = Some(format!(
                "{elf} looks files up under '{n}' relative to itself"
            ));
        }
    }
}
