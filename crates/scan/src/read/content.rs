//! One file's contents: the streaming hash scan, and turning its hits into
//! [`Hold`]s with their [`Site`] (ELF loader entry or section, shebang,
//! text line). Shared by the disk and NAR readers.

use std::collections::HashSet;
use std::io::Read;

use super::hash_finder::{HashFinder, Hit, find_all, is_path_byte};
use super::{ElfFacts, Hold, PathStrings, Site, Wanted};
use nix_heft_format::elf::{ElfError, ElfLayout, is_elf};

/// Read size: large enough that per-call overhead vanishes, small enough
/// that the kernel's copy and the scan stay in the CPU cache. Measured on
/// the 4 GiB scan benchmark: 64 KiB took half the time of 128 KiB or 1 MiB.
pub(super) const CHUNK: usize = 1 << 16;

/// Most bytes of relative-path strings kept per ELF file while a path is
/// read (they are filtered down to the relevant few at its end). Debug
/// builds can hold many source paths; the strings that matter (a data
/// directory a library names) are short and few, so a cap loses nothing
/// real and bounds memory on hostile files.
pub(super) const MAX_PATH_STRING_BYTES: usize = 1 << 20;

/// Which relative-path strings of ELF files to keep while reading.
pub(super) enum StringFilter<'a> {
    /// None: the path has no directory a program could name.
    Skip,
    /// Those containing one of these directory names (the tree is known).
    Needles(&'a aho_corasick::AhoCorasick),
    /// All, up to this many bytes more for the path (a NAR stream, whose
    /// tree is known only at its end).
    Budget(&'a mut usize),
}

/// Receives each chunk of a file and whether the file is ELF (the NAR
/// reader reads ELF headers from it as it streams past).
pub(super) type OnChunk<'a> = &'a mut dyn FnMut(bool, &[u8]) -> std::io::Result<()>;

/// Gives the site of the i-th hit of a file.
type SiteOf = Box<dyn FnMut(usize, &Hit) -> Site>;

/// What one file's content scan found.
pub(super) struct FileScan {
    pub hits: Vec<Hit>,
    /// For an ELF file, its relative-path strings, as the filter allowed.
    strings: PathStrings,
    lines: Vec<u64>,
    pub is_elf: bool,
    text: bool,
    /// Length of the first line when the file starts with `#!`.
    shebang_len: Option<u64>,
}

/// Streams `r` through the scanner; hands each chunk to `on_chunk` when given
/// (a NAR cannot be re-read, but ELF classification needs the section
/// table, which may come after the hit).
pub(super) fn scan_stream(
    r: &mut dyn Read,
    wanted: &Wanted,
    report: &(dyn Fn(u64) + Sync),
    on_chunk: Option<OnChunk<'_>>,
    strings: StringFilter<'_>,
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
            scan_stream_with(r, wanted, report, on_chunk, strings, &mut buf)
        }
        // Re-entered on this thread (never expected): use a buffer of its own.
        Err(_) => scan_stream_with(r, wanted, report, on_chunk, strings, &mut vec![0u8; CHUNK]),
    })
}

fn scan_stream_with(
    r: &mut dyn Read,
    wanted: &Wanted,
    report: &(dyn Fn(u64) + Sync),
    mut on_chunk: Option<OnChunk<'_>>,
    filter: StringFilter<'_>,
    buf: &mut [u8],
) -> std::io::Result<FileScan> {
    let mut sc = HashFinder::new(wanted);
    let (only, budget) = match filter {
        StringFilter::Skip => (None, None),
        StringFilter::Needles(ac) => (Some(ac), None),
        StringFilter::Budget(left) => (None, Some(left)),
    };
    let collect = !matches!((only, &budget), (None, None));
    let max = budget
        .as_ref()
        .map_or(MAX_PATH_STRING_BYTES, |b| (**b).min(MAX_PATH_STRING_BYTES));
    let mut strings: Option<StringScanner<'_>> = None;
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
            if elf && collect {
                strings = Some(StringScanner::new(max, only));
            }
            let head = &chunk[..chunk.len().min(8192)];
            text = !elf && memchr::memchr(0, head).is_none();
            if chunk.starts_with(b"#!") {
                shebang_len = Some(memchr::memchr(b'\n', chunk).unwrap_or(chunk.len()) as u64);
            }
        }
        if let Some(s) = on_chunk.as_mut() {
            s(elf, chunk)?;
        }
        if let Some(st) = strings.as_mut() {
            st.feed(chunk);
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
    let strings = strings.map(StringScanner::finish).unwrap_or_default();
    if let Some(left) = budget {
        *left = left.saturating_sub(strings.len_bytes());
    }
    Ok(FileScan {
        hits,
        strings,
        lines,
        is_elf: elf,
        text,
        shebang_len,
    })
}

impl FileScan {
    /// Whether the hits need the file's ELF layout to be classified (an
    /// ELF file holding a hash): callers read it then, and only then.
    pub(super) fn needs_layout(&self) -> bool {
        self.is_elf && !self.hits.is_empty()
    }
}

/// Turns one file's scan into holds. `layout` is the file's ELF layout
/// when [`FileScan::needs_layout`] (its headers classify the hits); its
/// facts are added to `elf_files` when it holds a hash or names relative
/// paths.
pub(super) fn file_holds(
    rel: &[u8],
    fs: FileScan,
    layout: Option<Result<ElfLayout, ElfError>>,
    elf_files: &mut Vec<ElfFacts>,
) -> Vec<Hold> {
    let mut site_of: SiteOf = Box::new(|_, _| Site::Binary);
    let mut facts = None;
    if fs.is_elf {
        let mut f = ElfFacts {
            file: rel.to_vec(),
            path_strings: fs.strings,
            ..ElfFacts::default()
        };
        if let (false, Some(layout)) = (fs.hits.is_empty(), layout) {
            match layout {
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
    for h in find_all(&rel[name_start..], wanted) {
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
    for h in find_all(target, wanted) {
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

/// Longest path string kept; longer runs are not paths a program names.
const MAX_PATH_STRING: usize = 4096;

/// Collects the relative-path strings of a file as it streams by: maximal
/// runs of path bytes that hold a `/` with a path byte on each side
/// (`rocblas/library`, `../share/x`), deduplicated. Found from each `/`
/// outwards with memchr, so a binary is crossed at memchr's speed; a run
/// cut by a chunk boundary is carried over, so no mapping of the whole file
/// is needed.
pub(super) struct StringScanner<'a> {
    out: PathStrings,
    seen: HashSet<u64>,
    hasher: std::collections::hash_map::RandomState,
    kept: usize,
    max_bytes: usize,
    only: Option<&'a aho_corasick::AhoCorasick>,
    /// The start of a run that may continue in the next chunk.
    carry: Vec<u8>,
    /// The carried run is longer than [`MAX_PATH_STRING`]: drop it.
    carry_too_long: bool,
    full: bool,
}

impl<'a> StringScanner<'a> {
    /// Keeps at most `max_bytes`, and with `only` just the strings it matches.
    pub(super) fn new(max_bytes: usize, only: Option<&'a aho_corasick::AhoCorasick>) -> Self {
        StringScanner {
            out: PathStrings::default(),
            seen: HashSet::new(),
            hasher: Default::default(),
            kept: 0,
            max_bytes,
            only,
            carry: Vec::new(),
            carry_too_long: false,
            full: false,
        }
    }

    fn emit(&mut self, s: &[u8]) {
        use std::hash::BuildHasher;
        // Cheapest tests first: most runs around a `/` in a binary are
        // noise, and with known directory names the automaton rejects them.
        if self.full || s.len() < 3 || s.len() > MAX_PATH_STRING {
            return;
        }
        if self.only.is_some_and(|ac| !ac.is_match(s)) {
            return;
        }
        let inner = s
            .windows(3)
            .any(|w| w[1] == b'/' && w[0] != b'/' && w[2] != b'/');
        if !inner || !self.seen.insert(self.hasher.hash_one(s)) {
            return;
        }
        self.kept += s.len() + 1;
        if self.kept > self.max_bytes {
            self.full = true;
            return;
        }
        self.out.push(s);
    }

    /// Takes the next chunk of the file.
    pub(super) fn feed(&mut self, chunk: &[u8]) {
        if self.full {
            return;
        }
        let mut start = 0;
        if !self.carry.is_empty() || self.carry_too_long {
            let run = chunk
                .iter()
                .position(|&b| !is_path_byte(b))
                .unwrap_or(chunk.len());
            if self.carry.len() + run > MAX_PATH_STRING {
                self.carry_too_long = true;
                self.carry.clear();
            } else if !self.carry_too_long {
                self.carry.extend_from_slice(&chunk[..run]);
            }
            if run == chunk.len() {
                return;
            }
            let carried = std::mem::take(&mut self.carry);
            if !std::mem::replace(&mut self.carry_too_long, false) {
                self.emit(&carried);
            }
            start = run;
        }
        let bytes = &chunk[start..];
        let mut covered = 0usize;
        let inner_byte = |b: u8| b != b'/' && is_path_byte(b);
        for slash in memchr::memchr_iter(b'/', bytes) {
            if slash < covered {
                continue;
            }
            // Only a `/` between two path bytes can make a run a relative
            // path (another `/` of the same run is then such a one): most
            // `/` bytes in binary data are skipped here, unexpanded. At a
            // chunk's edge the neighbour is unknown, so expand.
            let left_ok = slash == 0 || inner_byte(bytes[slash - 1]);
            let right_ok = slash + 1 >= bytes.len() || inner_byte(bytes[slash + 1]);
            if !(left_ok && right_ok) && slash + 1 < bytes.len() {
                continue;
            }
            let from = bytes[covered..slash]
                .iter()
                .rposition(|&b| !is_path_byte(b))
                .map_or(covered, |i| covered + i + 1);
            match bytes[slash..].iter().position(|&b| !is_path_byte(b)) {
                Some(i) => {
                    covered = slash + i;
                    self.emit(&bytes[from..covered]);
                }
                None => {
                    // Runs into the next chunk.
                    let rest = &bytes[from..];
                    if rest.len() > MAX_PATH_STRING {
                        self.carry_too_long = true;
                    } else {
                        self.carry.extend_from_slice(rest);
                    }
                    return;
                }
            }
        }
        // A run without a slash yet may still get one in the next chunk.
        let tail = bytes[covered..]
            .iter()
            .rposition(|&b| !is_path_byte(b))
            .map_or(covered, |i| covered + i + 1);
        if tail < bytes.len() && bytes.len() - tail <= MAX_PATH_STRING {
            self.carry.extend_from_slice(&bytes[tail..]);
        }
    }

    /// The strings collected.
    pub(super) fn finish(mut self) -> PathStrings {
        if !self.carry.is_empty() && !self.carry_too_long {
            let c = std::mem::take(&mut self.carry);
            self.emit(&c);
        }
        self.out
    }
}

/// The relative-path strings of `bytes` (see [`StringScanner`]).
#[cfg(test)]
pub(crate) fn path_strings(bytes: &[u8], max_bytes: usize) -> PathStrings {
    let mut sc = StringScanner::new(max_bytes, None);
    sc.feed(bytes);
    sc.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_strings_are_the_same_at_every_chunk_size() {
        let mut data = Vec::new();
        let mut rng = nix_heft_graph::testgraph::SplitMix(7);
        while data.len() < 20_000 {
            match rng.below(12) {
                0 => data.extend_from_slice(b"rocblas/library"),
                1 => data.push(b'/'),
                2 | 3 => data.push(0),
                4 => data.extend_from_slice(&vec![b'a'; rng.below(5000) as usize]),
                _ => data.push(b"abc/._-x"[rng.below(8) as usize]),
            }
        }
        let whole: Vec<Vec<u8>> = path_strings(&data, usize::MAX)
            .iter()
            .map(<[u8]>::to_vec)
            .collect();
        assert!(
            whole
                .iter()
                .any(|s| memchr::memmem::find(s, b"rocblas/library").is_some())
        );
        for chunk in [1, 2, 3, 7, 64, 4095, 4096, 4097, 10_000] {
            let mut sc = StringScanner::new(usize::MAX, None);
            for c in data.chunks(chunk) {
                sc.feed(c);
            }
            let got: Vec<Vec<u8>> = sc.finish().iter().map(<[u8]>::to_vec).collect();
            assert_eq!(got, whole, "chunk size {chunk}");
        }
    }

    #[test]
    fn path_strings_are_runs_with_an_inner_slash() {
        let b = b"\0rocblas/library\0/abs\0x/\0a/b/c\0rocblas/library\0/nix/store/h-x/lib/rocblas/library:y\0";
        let got: Vec<String> = path_strings(b, 1 << 20)
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
