//! One file's contents: the streaming hash scan, and turning its hits into
//! [`Hold`]s with their [`Site`] (ELF loader entry or section, shebang,
//! text line). Shared by the disk and NAR readers.

use std::collections::HashSet;
use std::io::Read;

use super::refscan::{Hit, RefScanner, is_path_byte, scan_bytes};
use super::{ElfFacts, Hold, Site, Wanted};
use crate::elf::{ElfLayout, is_elf};

/// Read size: large enough that per-call overhead vanishes, small enough
/// that the kernel's copy and the scan stay in the CPU cache. Measured on
/// the 4 GiB scan benchmark: 64 KiB took half the time of 128 KiB or 1 MiB.
pub(super) const CHUNK: usize = 1 << 16;

/// Most bytes of relative-path strings kept per ELF file. Debug builds can
/// hold many source paths; the strings that matter (a data directory a
/// library names) are short and few, so a cap loses nothing real and
/// bounds memory on hostile files.
const MAX_PATH_STRING_BYTES: usize = 4 << 20;

/// Receives each chunk of a file and whether the file is ELF.
pub(super) type Spool<'a> = &'a mut dyn FnMut(bool, &[u8]) -> std::io::Result<()>;

/// Gives the site of the i-th hit of a file.
type SiteOf = Box<dyn FnMut(usize, &Hit) -> Site>;

/// What one file's content scan found.
pub(super) struct FileScan {
    pub hits: Vec<Hit>,
    lines: Vec<u64>,
    pub is_elf: bool,
    text: bool,
    /// Length of the first line when the file starts with `#!`.
    shebang_len: Option<u64>,
}

/// Streams `r` through the scanner; copies an ELF file's bytes to `spool`
/// when given (a NAR cannot be re-read, but ELF classification needs the
/// section table, which may come after the hit).
pub(super) fn scan_stream(
    r: &mut dyn Read,
    wanted: &Wanted,
    report: &(dyn Fn(u64) + Sync),
    spool: Option<Spool<'_>>,
) -> std::io::Result<FileScan> {
    // One read buffer per thread: a fresh allocation per file costs page
    // faults on every one of tens of thousands of small files.
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

/// Turns one file's scan into holds. `elf_bytes` is the whole file when it
/// is ELF; its facts are added to `elf_files` when it holds a hash or names
/// relative paths.
pub(super) fn file_holds(
    rel: &[u8],
    fs: FileScan,
    elf_bytes: Option<&[u8]>,
    elf_files: &mut Vec<ElfFacts>,
) -> Vec<Hold> {
    let mut site_of: SiteOf = Box::new(|_, _| Site::Binary);
    let mut facts = None;
    if let (true, Some(bytes)) = (fs.is_elf, elf_bytes) {
        let mut f = ElfFacts {
            file: rel.to_vec(),
            path_strings: path_strings(bytes),
            ..ElfFacts::default()
        };
        if !fs.hits.is_empty() {
            match ElfLayout::parse(bytes) {
                Ok(l) => {
                    f.needed = l.needed().to_vec();
                    f.runpath = l.runpath().iter().map(|e| e.dir.clone()).collect();
                    f.dlopen = l.dlopen_candidates().to_vec();
                    let elf = elf_files.len();
                    site_of = Box::new(move |_, h| Site::Elf {
                        hold: l.classify(h.offset),
                        elf,
                    });
                }
                Err(e) => {
                    let error = e.to_string();
                    site_of = Box::new(move |_, _| Site::BadElf {
                        error: error.clone(),
                    });
                }
            }
        }
        if !fs.hits.is_empty() || !f.path_strings.is_empty() {
            facts = Some(f);
        }
    } else if fs.text || fs.shebang_len.is_some() {
        let lines = fs.lines;
        let shebang = fs.shebang_len;
        let text = fs.text;
        site_of = Box::new(move |i, h| {
            if shebang.is_some_and(|len| h.offset < len) {
                Site::Shebang
            } else if text {
                Site::Text {
                    line: lines.get(i).copied().unwrap_or(1),
                }
            } else {
                Site::Binary
            }
        });
    }
    let holds = fs
        .hits
        .iter()
        .enumerate()
        .map(|(i, h)| Hold {
            target: h.target,
            file: rel.to_vec(),
            offset: h.offset,
            context: h.context.clone(),
            pointed: h.pointed.clone(),
            site: site_of(i, h),
        })
        .collect();
    drop(site_of);
    if let Some(f) = facts {
        elf_files.push(f);
    }
    holds
}

/// Holds in the last component of `rel` (parents are entries of their own).
pub(super) fn name_holds(rel: &[u8], wanted: &Wanted, out: &mut Vec<Hold>) {
    let name_start = rel.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
    for h in scan_bytes(&rel[name_start..], wanted) {
        out.push(Hold {
            target: h.target,
            file: rel.to_vec(),
            // The offset within the name, as the name is the context.
            offset: h.offset,
            context: h.context,
            pointed: h.pointed,
            site: Site::FileName,
        });
    }
}

/// Holds in a symlink's target; the whole target is the context.
pub(super) fn symlink_holds(rel: &[u8], target: &[u8], wanted: &Wanted, out: &mut Vec<Hold>) {
    for h in scan_bytes(target, wanted) {
        out.push(Hold {
            target: h.target,
            file: rel.to_vec(),
            offset: h.offset,
            context: String::from_utf8_lossy(target).into_owned(),
            pointed: h.pointed,
            site: Site::Symlink,
        });
    }
}

/// The relative-path strings of a file: maximal runs of path bytes that
/// hold a `/` with a path byte on each side (`rocblas/library`,
/// `../share/x`), deduplicated. Found from each `/` outwards with memchr,
/// so a binary is crossed at memchr's speed.
pub(crate) fn path_strings(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut seen: HashSet<&[u8]> = HashSet::new();
    let mut out = Vec::new();
    let mut kept = 0usize;
    let mut covered = 0usize;
    for slash in memchr::memchr_iter(b'/', bytes) {
        if slash < covered {
            continue;
        }
        let start = bytes[..slash]
            .iter()
            .rposition(|&b| !is_path_byte(b))
            .map_or(0, |i| i + 1);
        let end = bytes[slash..]
            .iter()
            .position(|&b| !is_path_byte(b))
            .map_or(bytes.len(), |i| slash + i);
        covered = end;
        let s = &bytes[start..end];
        let inner = s
            .windows(3)
            .any(|w| w[1] == b'/' && w[0] != b'/' && w[2] != b'/');
        if !inner || s.len() > 4096 || !seen.insert(s) {
            continue;
        }
        kept += s.len();
        if kept > MAX_PATH_STRING_BYTES {
            break;
        }
        out.push(s.to_vec());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_strings_are_runs_with_an_inner_slash() {
        let b = b"\0rocblas/library\0/abs\0x/\0a/b/c\0rocblas/library\0/nix/store/h-x/lib/rocblas/library:y\0";
        let got: Vec<String> = path_strings(b)
            .iter()
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect();
        assert_eq!(
            got,
            [
                "rocblas/library",
                "a/b/c",
                "/nix/store/h-x/lib/rocblas/library"
            ]
        );
    }
}
