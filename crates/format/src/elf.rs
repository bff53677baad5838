//! ELF files: which part of a binary holds a store hash.
//!
//! A store hash inside an ELF file can be load-bearing (the program
//! interpreter, a `DT_RUNPATH` entry the dynamic loader searches, a
//! `DT_NEEDED` library name), plausibly used at run time (a string constant
//! in `.rodata` or `.data`), or dead weight that only stripping removes
//! (DWARF debug info, `.comment`, notes). [`ElfLayout::parse`] reads the
//! headers once and [`ElfLayout::classify`] maps each byte offset the
//! reference scanner reports to an [`ElfHold`]. [`ElfStream`] gives the
//! same layout from a stream (a NAR, read once), keeping only the parts the
//! parse reads, in bounded memory.
//!
//! Parsing goes through `object`'s low-level ELF API so that 32/64-bit and
//! little/big-endian files share one code path, and every offset read from
//! the file is bounds-checked: store paths contain arbitrary, possibly
//! corrupt files, and one bad binary must not abort a scan.
//!
//! Separate debug-info files (`objcopy --only-keep-debug`, Nix's
//! `separateDebugInfo` outputs) keep the original program headers but not
//! the bytes they describe: `.interp`, `.dynamic` and `.dynstr` become
//! `SHT_NOBITS` there. A segment or string table whose address is covered by
//! such a section is therefore ignored rather than read as garbage.

use std::collections::HashSet;
use std::ops::Range;

use object::elf;
use object::read::elf::{Dyn as _, FileHeader, ProgramHeader as _, SectionHeader as _};
use object::{Endianness, ReadRef};
use serde::{Deserialize, Serialize};

mod stream;
pub use stream::{ElfStream, MAX_HELD};

/// Why an ELF file could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElfError {
    /// The data lacks the ELF magic, or uses a class, byte order or version
    /// that is not standard ELF.
    #[error("not a supported ELF file")]
    NotElf,
    /// The ELF header is readable but a table, segment or string it points
    /// to lies outside the file or is inconsistent.
    #[error("malformed ELF file: {0}")]
    Malformed(String),
    /// Read as a stream ([`ElfStream`]): the layout needs bytes that had
    /// already gone past when the headers named them, in a place the
    /// stream does not keep (see [`ElfStream`] for what it keeps).
    #[error("ELF file not readable as a stream: {0}")]
    NotKept(String),
}

impl From<object::read::Error> for ElfError {
    fn from(e: object::read::Error) -> Self {
        ElfError::Malformed(e.to_string())
    }
}

fn malformed(what: &str) -> ElfError {
    ElfError::Malformed(what.to_string())
}

/// What holds a byte of an ELF file, from the dynamic loader's point of view
/// first and the section table's second.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ElfHold {
    /// Inside the `PT_INTERP` segment: the program interpreter (dynamic
    /// loader) path.
    Interpreter,
    /// Inside the `DT_RUNPATH` string (or `DT_RPATH` when there is no
    /// `DT_RUNPATH`).
    Runpath {
        /// Index into [`ElfLayout::runpath`] of the `:`-separated entry
        /// containing the byte (a separator counts towards the entry before it).
        entry: usize,
    },
    /// Inside a `DT_NEEDED` string.
    Needed {
        /// Index into [`ElfLayout::needed`].
        entry: usize,
    },
    /// Inside loaded, non-executable data (`.rodata`, `.data`,
    /// `.data.rel.ro`, the rest of `.dynstr`, ...): a string the program can
    /// read at run time.
    String {
        /// The section's name.
        section: String,
    },
    /// Inside debug information that stripping removes: `.debug_*`,
    /// `.zdebug_*`, `.gdb_index`, `.stab*`, and the symbol names in
    /// `.strtab` (which hold source file names).
    Debug {
        /// The section's name.
        section: String,
    },
    /// Inside build metadata the program never reads: `.comment`,
    /// `.note*`, `.gnu_debuglink`, `.gnu_debugaltlink`, `.GCC.command.line`.
    Comment {
        /// The section's name.
        section: String,
    },
    /// Anywhere else: code (`.text`), `.symtab`, unloaded sections nix-heft
    /// has no rule for, or bytes outside every section (headers, padding, a
    /// file without section headers).
    Other {
        /// The section's name, if the byte is inside one.
        section: Option<String>,
    },
}

/// One `:`-separated entry of the run path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunpathEntry {
    /// The directory exactly as written (`$ORIGIN` and friends unexpanded;
    /// may be empty for `a::b`).
    pub dir: String,
    /// Where the entry's bytes are in the file (inside the dynamic string
    /// table), separators excluded.
    pub file_range: Range<u64>,
}

/// A section with file contents and what a byte inside it counts as.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SectionSpan {
    range: Range<u64>,
    hold: ElfHold,
}

/// Parsed layout of one ELF file, enough to classify byte offsets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElfLayout {
    interpreter: Option<String>,
    interp_range: Option<Range<u64>>,
    runpath: Vec<RunpathEntry>,
    /// The whole run path string, so a byte on a `:` is still a run path byte.
    runpath_range: Option<Range<u64>>,
    needed: Vec<String>,
    needed_ranges: Vec<Range<u64>>,
    sections: Vec<SectionSpan>,
    dlopen: Vec<String>,
}

/// Whether `prefix` (the first bytes of a file) starts with the ELF magic.
pub fn is_elf(prefix: &[u8]) -> bool {
    prefix.starts_with(&elf::ELFMAG)
}

impl ElfLayout {
    /// Parses from the whole file's bytes (callers mmap the file).
    ///
    /// Returns an error, never panics, when the headers, the program or
    /// section header tables, the dynamic table or a dynamic string lie
    /// outside `data` or contradict each other.
    pub fn parse(data: &[u8]) -> Result<ElfLayout, ElfError> {
        Self::parse_releasing(data, &mut |_| {})
    }

    /// [`ElfLayout::parse`], telling `done` each byte range of `data` it has
    /// finished with while it scans the loaded data sections for library
    /// names, [`SCAN_WINDOW`] bytes at a time. A caller that mapped the file
    /// drops those pages there (`madvise(MADV_DONTNEED)`), so parsing a
    /// file of any size keeps a window of it resident, not the whole file
    /// (a GPU library's code objects alone can be gigabytes of `.rodata`).
    /// The headers, the dynamic table and its strings are read in place
    /// and are small.
    pub fn parse_releasing(
        data: &[u8],
        done: &mut dyn FnMut(Range<u64>),
    ) -> Result<ElfLayout, ElfError> {
        if !is_elf(data) {
            return Err(ElfError::NotElf);
        }
        // e_ident[EI_CLASS], right after the four magic bytes.
        let names = Names::Scan(data, done);
        match data.get(4).map(|&c| elf::FileClass(c)) {
            Some(elf::ELFCLASS32) => parse_as::<elf::FileHeader32<Endianness>, _>(data, names),
            Some(elf::ELFCLASS64) => parse_as::<elf::FileHeader64<Endianness>, _>(data, names),
            _ => Err(ElfError::NotElf),
        }
    }

    /// What holds the byte at file offset `off`.
    ///
    /// The loader-facing holds (interpreter, run path, needed library) win
    /// over the section the byte is in, since those strings also sit inside
    /// `.interp` and `.dynstr`.
    pub fn classify(&self, off: u64) -> ElfHold {
        if self.interp_range.as_ref().is_some_and(|r| r.contains(&off)) {
            return ElfHold::Interpreter;
        }
        if self
            .runpath_range
            .as_ref()
            .is_some_and(|r| r.contains(&off))
        {
            // Entries are contiguous apart from one separator each; a byte on
            // a separator belongs to the entry it ends.
            let entry = self
                .runpath
                .iter()
                .position(|e| off <= e.file_range.end)
                .unwrap_or(self.runpath.len().saturating_sub(1));
            return ElfHold::Runpath { entry };
        }
        if let Some(entry) = self.needed_ranges.iter().position(|r| r.contains(&off)) {
            return ElfHold::Needed { entry };
        }
        // Sections should not overlap, but in odd files they can; the
        // smallest containing section is the most specific answer.
        self.sections
            .iter()
            .filter(|s| s.range.contains(&off))
            .min_by_key(|s| s.range.end - s.range.start)
            .map(|s| s.hold.clone())
            .unwrap_or(ElfHold::Other { section: None })
    }

    /// `DT_NEEDED` library names, in dynamic-table order.
    pub fn needed(&self) -> &[String] {
        &self.needed
    }

    /// `DT_RUNPATH` entries, or `DT_RPATH` entries if there is no
    /// `DT_RUNPATH` (the loader ignores `DT_RPATH` when both exist).
    pub fn runpath(&self) -> &[RunpathEntry] {
        &self.runpath
    }

    /// The `PT_INTERP` path, if the file has one.
    pub fn interpreter(&self) -> Option<&str> {
        self.interpreter.as_deref()
    }

    /// Library names (`lib*.so`, `lib*.so.N...`) found as strings in loaded
    /// data sections, other than the file's own `DT_NEEDED` and `DT_SONAME`
    /// names: libraries the program may `dlopen()` by name. Deduplicated, in
    /// file order.
    pub fn dlopen_candidates(&self) -> &[String] {
        &self.dlopen
    }
}

/// Which sonames (from `needed` and `dlopen`, deduplicated, in that order) a
/// directory containing the files `dir_listing` provides.
///
/// A directory provides a soname if it has a file of exactly that name, or
/// one whose name is the soname followed by `.` (so `libfoo.so.1.2.3`
/// serves `libfoo.so.1`, and `libfoo.so.1` serves a `dlopen("libfoo.so")`).
/// A run path entry whose directory serves nothing is dead.
pub fn runpath_serves(dir_listing: &[String], needed: &[String], dlopen: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    needed
        .iter()
        .chain(dlopen)
        .filter(|soname| !soname.is_empty() && seen.insert(soname.as_str()))
        .filter(|soname| {
            dir_listing.iter().any(|file| {
                file == *soname
                    || file
                        .strip_prefix(soname.as_str())
                        .is_some_and(|rest| rest.starts_with('.'))
            })
        })
        .cloned()
        .collect()
}

/// The facts read from one section header, widened to `u64` so the code
/// after the class-generic header parsing stays simple.
struct Sect {
    name: String,
    sh_type: elf::SectionType,
    flags: elf::SectionFlags,
    addr: u64,
    offset: u64,
    size: u64,
    link: u32,
}

/// Dynamic-table facts before strings are resolved.
#[derive(Default)]
struct DynInfo {
    strtab_addr: Option<u64>,
    strsz: Option<u64>,
    needed: Vec<u64>,
    soname: Option<u64>,
    runpath: Option<u64>,
    rpath: Option<u64>,
}

/// Bytes of a data section scanned for library names before the pages
/// behind them are handed back (see [`ElfLayout::parse_releasing`]): large
/// enough that the system calls cost nothing, small against any memory
/// bound.
pub const SCAN_WINDOW: usize = 8 << 20;

/// Where the library names of the loaded data sections come from.
enum Names<'a> {
    /// Scanned in the whole file's bytes, a window at a time, each window
    /// handed to the callback once done.
    Scan(&'a [u8], &'a mut dyn FnMut(Range<u64>)),
    /// Found while the file streamed past, before its sections were known.
    Seen(&'a stream::SonameHits),
}

/// The bytes at `offset..offset + size`, as a slice of the whole file
/// would give them.
fn bytes_at<'d, R: ReadRef<'d>>(data: R, range: Range<u64>) -> Result<&'d [u8], ElfError> {
    data.read_bytes_at(range.start, range.end.saturating_sub(range.start))
        .map_err(|_| malformed("a range past the end of the file"))
}

/// Parses the layout from `data` (a whole file, or the parts of it a
/// stream kept); `names` gives the library-name strings of its data.
fn parse_as<'d, Elf: FileHeader<Endian = Endianness>, R: ReadRef<'d>>(
    data: R,
    names: Names<'_>,
) -> Result<ElfLayout, ElfError> {
    let header = Elf::parse(data).map_err(|_| ElfError::NotElf)?;
    let endian = header.endian().map_err(|_| ElfError::NotElf)?;
    let file_len = data.len().map_err(|_| ElfError::NotElf)?;

    let phdrs = header.program_headers(endian, data)?;
    let table = header.sections(endian, data)?;

    let mut sects = Vec::with_capacity(table.len());
    for sh in table.iter().skip(1) {
        let name = table
            .section_name(endian, sh)
            .map_err(|_| malformed("section name outside the section name table"))?;
        let s = Sect {
            name: String::from_utf8_lossy(name).into_owned(),
            sh_type: sh.sh_type(endian),
            flags: sh.sh_flags(endian),
            addr: sh.sh_addr(endian).into(),
            offset: sh.sh_offset(endian).into(),
            size: sh.sh_size(endian).into(),
            link: sh.sh_link(endian),
        };
        if s.sh_type != elf::SHT_NOBITS && s.sh_type != elf::SHT_NULL {
            checked_range(s.offset, s.size, file_len).ok_or_else(|| {
                malformed(&format!(
                    "section {} extends past the end of the file",
                    s.name
                ))
            })?;
        }
        sects.push(s);
    }

    // True when the bytes a header claims at `vaddr` are absent from this
    // file (debug-info-only files); see the module documentation.
    let absent_at = |vaddr: u64| {
        vaddr != 0
            && sects.iter().any(|s| {
                s.sh_type == elf::SHT_NOBITS
                    && !s.flags.contains(elf::SHF_TLS)
                    && s.size != 0
                    && s.addr == vaddr
            })
    };

    let mut layout = ElfLayout::default();

    // Program interpreter.
    if let Some(ph) = phdrs.iter().find(|ph| ph.p_type(endian) == elf::PT_INTERP)
        && ph.file_range(endian).1 != 0
        && !absent_at(ph.p_vaddr(endian).into())
    {
        let (offset, size) = ph.file_range(endian);
        let range = checked_range(offset, size, file_len)
            .ok_or_else(|| malformed("PT_INTERP extends past the end of the file"))?;
        let bytes = bytes_at(data, range.clone())?;
        let text = bytes.split(|&b| b == 0).next().unwrap_or_default();
        layout.interpreter = Some(String::from_utf8_lossy(text).into_owned());
        layout.interp_range = Some(range);
    }

    // Dynamic table: the loader reads PT_DYNAMIC; objects without program
    // headers fall back to the SHT_DYNAMIC section.
    let dyn_section = sects.iter().find(|s| s.sh_type == elf::SHT_DYNAMIC);
    let dyns: Option<&[Elf::Dyn]> =
        match phdrs.iter().find(|ph| ph.p_type(endian) == elf::PT_DYNAMIC) {
            Some(ph) if absent_at(ph.p_vaddr(endian).into()) => None,
            Some(ph) => ph.dynamic(endian, data)?,
            None => match dyn_section {
                Some(s) => {
                    let range = checked_range(s.offset, s.size, file_len)
                        .ok_or_else(|| malformed("dynamic section past the end of the file"))?;
                    let bytes = bytes_at(data, range)?;
                    Some(
                        object::pod::slice_from_all_bytes(bytes)
                            .map_err(|_| malformed("invalid dynamic section"))?,
                    )
                }
                None => None,
            },
        };

    let info = dyn_info::<Elf>(dyns.unwrap_or_default(), endian);

    let has_strings = !info.needed.is_empty()
        || info.soname.is_some()
        || info.runpath.is_some()
        || info.rpath.is_some();
    let mut soname = None;
    if has_strings {
        let strtab = resolve_strtab(
            &info,
            &sects,
            dyn_section,
            endian,
            phdrs,
            file_len,
            &absent_at,
        )?;
        let string_at = |val: u64| -> Result<(String, Range<u64>), ElfError> {
            let start = strtab
                .start
                .checked_add(val)
                .filter(|&s| s < strtab.end)
                .ok_or_else(|| malformed("dynamic string offset outside the string table"))?;
            let bytes = data
                .read_bytes_at_until(start..strtab.end, 0)
                .map_err(|_| malformed("unterminated dynamic string"))?;
            let len = bytes.len();
            let text = String::from_utf8_lossy(bytes).into_owned();
            Ok((text, start..start + len as u64))
        };
        for &val in &info.needed {
            let (name, range) = string_at(val)?;
            layout.needed.push(name);
            layout.needed_ranges.push(range);
        }
        if let Some(val) = info.soname {
            soname = Some(string_at(val)?.0);
        }
        if let Some(val) = info.runpath.or(info.rpath) {
            let (text, range) = string_at(val)?;
            let mut start = range.start;
            for dir in text.split(':') {
                // `from_utf8_lossy` may lengthen invalid bytes, so take the
                // byte length from the file, not from `dir`.
                let len = bytes_at(data, start..range.end)?
                    .iter()
                    .position(|&b| b == b':')
                    .unwrap_or((range.end - start) as usize) as u64;
                layout.runpath.push(RunpathEntry {
                    dir: dir.to_string(),
                    file_range: start..start + len,
                });
                start = (start + len + 1).min(range.end);
            }
            layout.runpath_range = Some(range);
        }
    }

    layout.sections = sects
        .iter()
        .filter(|s| s.sh_type != elf::SHT_NOBITS && s.sh_type != elf::SHT_NULL && s.size != 0)
        .map(|s| SectionSpan {
            range: s.offset..s.offset + s.size,
            hold: section_hold(s),
        })
        .collect();

    // A DT_NEEDED entry may be a path (`/nix/store/...-foo/lib/libfoo.so.1`);
    // its file name is a library the file links anyway, not a dlopen.
    let own: HashSet<&str> = layout
        .needed
        .iter()
        .flat_map(|n| [n.as_str(), n.rsplit('/').next().unwrap_or(n)])
        .chain(soname.as_deref())
        .collect();
    let mut seen = HashSet::new();
    let mut dlopen = Vec::new();
    let mut take = |off: u64, name: String| {
        let in_loader_string = layout
            .needed_ranges
            .iter()
            .chain(&layout.runpath_range)
            .any(|r| r.contains(&off));
        if !in_loader_string && !own.contains(name.as_str()) && seen.insert(name.clone()) {
            dlopen.push(name);
        }
    };
    let strings = layout
        .sections
        .iter()
        .filter(|span| matches!(span.hold, ElfHold::String { .. }));
    match names {
        Names::Scan(whole, done) => {
            for span in strings {
                let bytes = bytes_at(whole, span.range.clone())?;
                let mut from = 0;
                while from < bytes.len() {
                    let to = bytes.len().min(from.saturating_add(SCAN_WINDOW));
                    for (pos, name) in sonames_in(bytes, from, to) {
                        take(span.range.start + pos as u64, name);
                    }
                    done(span.range.start + from as u64..span.range.start + to as u64);
                    from = to;
                }
            }
        }
        Names::Seen(hits) => {
            for span in strings {
                for (off, name) in hits.in_range(span.range.clone()) {
                    take(off, name);
                }
            }
        }
    }
    layout.dlopen = dlopen;

    Ok(layout)
}

/// The dynamic table's entries the layout needs, read as the loader reads
/// them (up to `DT_NULL`; the first of each single-valued tag).
fn dyn_info<Elf: FileHeader<Endian = Endianness>>(
    dyns: &[Elf::Dyn],
    endian: Endianness,
) -> DynInfo {
    let mut info = DynInfo::default();
    for d in dyns {
        let val = d.val(endian);
        match d.tag(endian) {
            elf::DT_NULL => break,
            elf::DT_STRTAB => info.strtab_addr = Some(val),
            elf::DT_STRSZ => info.strsz = Some(val),
            elf::DT_NEEDED => info.needed.push(val),
            // The loader uses the first of each; later duplicates are ignored.
            elf::DT_SONAME => info.soname = info.soname.or(Some(val)),
            elf::DT_RUNPATH => info.runpath = info.runpath.or(Some(val)),
            elf::DT_RPATH => info.rpath = info.rpath.or(Some(val)),
            _ => {}
        }
    }
    info
}

/// Where the `PT_LOAD` segments put address `addr` in the file: its file
/// offset and the bytes of that segment from there on.
fn load_offset<P: object::read::elf::ProgramHeader<Endian = Endianness>>(
    phdrs: &[P],
    endian: Endianness,
    addr: u64,
) -> Option<(u64, u64)> {
    phdrs
        .iter()
        .filter(|ph| ph.p_type(endian) == elf::PT_LOAD)
        .find_map(|ph| {
            let vaddr: u64 = ph.p_vaddr(endian).into();
            let (offset, filesz) = ph.file_range(endian);
            let delta = addr.checked_sub(vaddr).filter(|&d| d < filesz)?;
            Some((offset.checked_add(delta)?, filesz - delta))
        })
}

/// The file range of the dynamic string table.
///
/// `DT_STRTAB` is an address, so it is mapped through the `PT_LOAD`
/// segments the way the loader sees it; files whose segments do not cover
/// it fall back to a section at that address, then to the dynamic section's
/// linked string table. `DT_STRSZ` bounds it when present.
fn resolve_strtab<P: object::read::elf::ProgramHeader<Endian = Endianness>>(
    info: &DynInfo,
    sects: &[Sect],
    dyn_section: Option<&Sect>,
    endian: Endianness,
    phdrs: &[P],
    file_len: u64,
    absent_at: &dyn Fn(u64) -> bool,
) -> Result<Range<u64>, ElfError> {
    let mut found: Option<(u64, u64)> = None; // (file offset, bytes available)
    if let Some(addr) = info.strtab_addr.filter(|&a| !absent_at(a)) {
        found = load_offset(phdrs, endian, addr).or_else(|| {
            sects
                .iter()
                .find(|s| {
                    s.addr == addr && s.sh_type != elf::SHT_NOBITS && s.sh_type != elf::SHT_NULL
                })
                .map(|s| (s.offset, s.size))
        });
    }
    if found.is_none() {
        found = dyn_section
            .and_then(|d| d.link.checked_sub(1))
            .and_then(|i| sects.get(i as usize))
            .filter(|s| s.sh_type == elf::SHT_STRTAB)
            .map(|s| (s.offset, s.size));
    }
    let (start, avail) =
        found.ok_or_else(|| malformed("dynamic string table not found in the file"))?;
    let len = info.strsz.map_or(avail, |sz| sz.min(avail));
    checked_range(start, len, file_len)
        .ok_or_else(|| malformed("dynamic string table past the end of the file"))
}

/// `offset..offset + size` if it lies within a file of `file_len` bytes.
fn checked_range(offset: u64, size: u64, file_len: u64) -> Option<Range<u64>> {
    let end = offset.checked_add(size)?;
    (end <= file_len).then_some(offset..end)
}

/// The hold of a byte inside section `s` (which has file contents).
fn section_hold(s: &Sect) -> ElfHold {
    let n = s.name.as_str();
    let section = s.name.clone();
    if n.starts_with(".debug")
        || n.starts_with(".zdebug")
        || n.starts_with(".stab")
        || n == ".gdb_index"
        || n == ".strtab"
    {
        // `.strtab` holds symbol names, including source file names from
        // STT_FILE symbols; like DWARF it is never loaded and `strip`
        // removes it, which is the advice that matters for such a hold.
        ElfHold::Debug { section }
    } else if n == ".comment"
        || n.starts_with(".note")
        || n == ".gnu_debuglink"
        || n == ".gnu_debugaltlink"
        || n == ".GCC.command.line"
    {
        ElfHold::Comment { section }
    } else if s.flags.contains(elf::SHF_ALLOC) && !s.flags.contains(elf::SHF_EXECINSTR) {
        // Loaded and not code: data the program can read. Matching on flags
        // rather than names also covers toolchain-specific sections such as
        // Go's `.gopclntab` or `.lrodata` of the large code model.
        ElfHold::String { section }
    } else {
        ElfHold::Other {
            section: Some(section),
        }
    }
}

/// Characters allowed in a library name after `lib`.
fn is_soname_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'.' | b'-')
}

/// Longest library name looked for. A soname is a file name (the loader
/// finds it in a directory), and no file system has names longer than 255
/// bytes, so a longer run can serve nothing; stopping there keeps a
/// gigabyte-long run of name characters from being walked (and paged in)
/// whole.
const MAX_SONAME: usize = 255;

/// Library names, with their positions, matching
/// `lib[A-Za-z0-9_+.-]*\.so(\.[0-9]+)*` that stand
/// as whole words in `bytes` (not preceded or followed by a name character),
/// so `libglib-2.0.so.0` does not also yield `lib-2.0.so.0`, and that start
/// in `from..to` (a name may run past `to`: windows of one section give, in
/// turn, exactly the names of the whole). Trailing dots are dropped so a
/// format string like `libfoo.so.%d` still yields `libfoo.so`. Names longer
/// than [`MAX_SONAME`] are none.
fn sonames_in(bytes: &[u8], from: usize, to: usize) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let to = to.min(bytes.len());
    if from >= to {
        return out;
    }
    // A "lib" starting before `to` ends at most two bytes after it.
    let hay = &bytes[from..bytes.len().min(to + 2)];
    let mut next_from = from;
    for pos in memchr::memmem::find_iter(hay, b"lib").map(|p| from + p) {
        if pos >= to || pos < next_from || (pos > 0 && is_soname_char(bytes[pos - 1])) {
            continue;
        }
        let run = bytes[pos..]
            .iter()
            .take(MAX_SONAME + 1)
            .take_while(|&&b| is_soname_char(b))
            .count();
        let end = pos + run;
        next_from = end;
        if run > MAX_SONAME {
            continue;
        }
        let mut token = &bytes[pos..end];
        while let [rest @ .., b'.'] = token {
            token = rest;
        }
        if is_soname(token) {
            // Only ASCII passed `is_soname_char`.
            out.push((pos, String::from_utf8_lossy(token).into_owned()));
        }
    }
    out
}

/// Whether `token` (made of soname characters) ends in `.so` plus any number
/// of `.<digits>` groups, with something between `lib` and `.so`.
fn is_soname(token: &[u8]) -> bool {
    let mut t = token;
    loop {
        if t.ends_with(b".so") {
            return t.len() >= b"libX.so".len();
        }
        let Some(dot) = t.iter().rposition(|&b| b == b'.') else {
            return false;
        };
        let digits = &t[dot + 1..];
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return false;
        }
        t = &t[..dot];
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use memchr::memmem;

    use super::*;

    /// A fake 32-character store hash made of one nix-base32 character, so
    /// each role in a test binary is easy to find and tell apart.
    pub(super) fn h(c: char) -> String {
        std::iter::repeat_n(c, 32).collect()
    }

    pub(super) fn offsets(hay: &[u8], needle: &str) -> Vec<u64> {
        memmem::find_iter(hay, needle.as_bytes())
            .map(|o| o as u64)
            .collect()
    }

    /// The single offset of `needle`, which the test put there exactly once.
    pub(super) fn offset1(hay: &[u8], needle: &str) -> u64 {
        let all = offsets(hay, needle);
        assert_eq!(all.len(), 1, "{needle} occurs {} times", all.len());
        all[0]
    }

    pub(super) fn run(cmd: &mut Command) {
        crate::testutil::run(cmd);
    }

    /// Fails the test when a tool cannot be run: scripts/test.sh installs
    /// every one, so a missing tool is a broken set-up, never a skip.
    pub(super) fn need(tool: &str) {
        let ok = Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(ok, "{tool} is needed (scripts/test.sh installs it)");
    }

    pub(super) fn section_range(data: &[u8], name: &str) -> Option<Range<u64>> {
        let header = elf::FileHeader64::<Endianness>::parse(data).ok()?;
        let endian = header.endian().ok()?;
        let table = header.sections(endian, data).ok()?;
        let (_, sh) = table.section_by_name(endian, name.as_bytes())?;
        let (off, size) = sh.file_range(endian)?;
        Some(off..off + size)
    }

    pub(super) fn string_hold(section: &str) -> ElfHold {
        ElfHold::String {
            section: section.into(),
        }
    }

    pub(super) struct Built {
        pub(super) _dir: tempfile::TempDir,
        pub(super) lib: PathBuf,
        pub(super) prog: PathBuf,
        /// `prog` before patchelf, split into a debug-info-only file.
        pub(super) debug: PathBuf,
        pub(super) runpath: Vec<String>,
        pub(super) interp: String,
        pub(super) extra_needed: String,
    }

    /// Compiles a shared library and an executable with gcc, then gives the
    /// executable a store-path interpreter, a three-entry run path and a
    /// store-path DT_NEEDED with patchelf. The source lives under a fake
    /// store path so `-g` records that path in DWARF.
    pub(super) fn build() -> Built {
        for tool in ["gcc", "patchelf", "objcopy"] {
            need(tool);
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let src_dir = d.join(format!("nix/store/{}-src", h('g')));
        std::fs::create_dir_all(&src_dir).unwrap();
        let main_c = src_dir.join("main.c");
        std::fs::write(
            &main_c,
            format!(
                r#"#include <dlfcn.h>
#include <stdio.h>
extern int demo(void);
const char *store_ref = "/nix/store/{r}-data/share/thing";
char data_ref[] = "/nix/store/{d}-mutable/etc";
__asm__(".ident \"/nix/store/{c}-compiler\"");
int main(void) {{
    void *h = dlopen("libzstd.so.1", RTLD_LAZY);
    puts(store_ref);
    puts(data_ref);
    return h ? demo() : 0;
}}
"#,
                r = h('r'),
                d = h('d'),
                c = h('c')
            ),
        )
        .unwrap();
        std::fs::write(
            d.join("lib.c"),
            "const char *self_name = \"libdemo.so.1\";\n\
             const char *plugin = \"libplugin-2.0.so\";\n\
             int demo(void) { return 42; }\n",
        )
        .unwrap();
        let lib = d.join("libdemo.so.1");
        run(Command::new("gcc")
            .args([
                "-shared",
                "-fPIC",
                "-g",
                "-Wl,-soname,libdemo.so.1",
                "lib.c",
                "-o",
            ])
            .arg(&lib)
            .current_dir(d));
        std::os::unix::fs::symlink("libdemo.so.1", d.join("libdemo.so")).unwrap();
        let prog = d.join("prog");
        run(Command::new("gcc")
            .arg("-g")
            .arg(&main_c)
            .args(["-L.", "-ldemo", "-o"])
            .arg(&prog)
            .current_dir(d));
        let debug = d.join("prog.debug");
        run(Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(&prog)
            .arg(&debug));

        let runpath: Vec<String> = ['0', '1', '2']
            .iter()
            .zip(["a", "b", "c"])
            .map(|(&c, n)| format!("/nix/store/{}-{n}/lib", h(c)))
            .collect();
        let interp = format!("/nix/store/{}-glibc-2.40/lib/ld-linux-x86-64.so.2", h('i'));
        let extra_needed = format!("/nix/store/{}-extra/lib/libextra.so.3", h('n'));
        // One patchelf call per change: patchelf 0.14 mixes up strings when
        // --add-needed and --set-rpath are combined.
        for args in [
            ["--add-needed", extra_needed.as_str()],
            ["--set-rpath", &runpath.join(":")],
            ["--set-interpreter", interp.as_str()],
        ] {
            run(Command::new("patchelf").args(args).arg(&prog));
        }
        Built {
            _dir: dir,
            lib,
            prog,
            debug,
            runpath,
            interp,
            extra_needed,
        }
    }

    #[test]
    fn gcc_executable_holds() {
        let b = build();
        let data = std::fs::read(&b.prog).unwrap();
        let l = ElfLayout::parse(&data).unwrap();

        assert_eq!(l.interpreter(), Some(b.interp.as_str()));
        let dirs: Vec<&str> = l.runpath().iter().map(|e| e.dir.as_str()).collect();
        assert_eq!(dirs, b.runpath);
        for e in l.runpath() {
            let r = e.file_range.start as usize..e.file_range.end as usize;
            assert_eq!(&data[r], e.dir.as_bytes());
        }
        for name in ["libdemo.so.1", "libc.so.6", b.extra_needed.as_str()] {
            assert!(
                l.needed().iter().any(|n| n == name),
                "{name} not in {:?}",
                l.needed()
            );
        }
        assert_eq!(l.dlopen_candidates(), ["libzstd.so.1"]);

        assert_eq!(l.classify(offset1(&data, &h('i'))), ElfHold::Interpreter);
        for (entry, c) in ['0', '1', '2'].into_iter().enumerate() {
            assert_eq!(
                l.classify(offset1(&data, &h(c))),
                ElfHold::Runpath { entry }
            );
        }
        // The ':' after the first entry still counts as run path, towards entry 0.
        let colon = l.runpath()[0].file_range.end;
        assert_eq!(data[colon as usize], b':');
        assert_eq!(l.classify(colon), ElfHold::Runpath { entry: 0 });

        let extra = l
            .needed()
            .iter()
            .position(|n| *n == b.extra_needed)
            .unwrap();
        assert_eq!(
            l.classify(offset1(&data, &h('n'))),
            ElfHold::Needed { entry: extra }
        );
        assert_eq!(l.classify(offset1(&data, &h('r'))), string_hold(".rodata"));
        assert_eq!(l.classify(offset1(&data, &h('d'))), string_hold(".data"));
        assert_eq!(
            l.classify(offset1(&data, &h('c'))),
            ElfHold::Comment {
                section: ".comment".into()
            }
        );
        let debug_hits = offsets(&data, &h('g'));
        assert!(!debug_hits.is_empty());
        for off in debug_hits {
            assert!(
                matches!(l.classify(off), ElfHold::Debug { ref section } if section.starts_with(".debug")),
                "{:?}",
                l.classify(off)
            );
        }
        // libdemo.so.1 is DT_NEEDED, so it is not a dlopen candidate even
        // though .dynstr holds it; a non-soname dynstr string is String.
        let libc = offset1(&data, "libc.so.6\0");
        assert_eq!(
            l.classify(libc),
            ElfHold::Needed {
                entry: l.needed().iter().position(|n| n == "libc.so.6").unwrap()
            }
        );
        let text = section_range(&data, ".text").unwrap();
        assert_eq!(
            l.classify(text.start),
            ElfHold::Other {
                section: Some(".text".into())
            }
        );
        assert_eq!(l.classify(0), ElfHold::Other { section: None });
        assert_eq!(l.classify(u64::MAX), ElfHold::Other { section: None });
    }

    #[test]
    fn gcc_shared_library() {
        let b = build();
        let data = std::fs::read(&b.lib).unwrap();
        let l = ElfLayout::parse(&data).unwrap();
        assert_eq!(l.interpreter(), None);
        assert!(l.runpath().is_empty());
        assert!(!l.needed().iter().any(|n| n.starts_with("libdemo")));
        // Its own soname is in .rodata too, but that is not a dlopen.
        assert_eq!(l.dlopen_candidates(), ["libplugin-2.0.so"]);
    }

    #[test]
    fn debug_info_file_has_no_loader_holds() {
        let b = build();
        let data = std::fs::read(&b.debug).unwrap();
        let l = ElfLayout::parse(&data).unwrap();
        // PT_INTERP and PT_DYNAMIC survive in the program headers, but
        // their bytes do not: nothing may be read from where they point.
        assert_eq!(l.interpreter(), None);
        assert!(l.needed().is_empty() && l.runpath().is_empty());
        let hits = offsets(&data, &h('g'));
        assert!(!hits.is_empty());
        for off in hits {
            assert!(
                matches!(l.classify(off), ElfHold::Debug { .. }),
                "{:?}",
                l.classify(off)
            );
        }
    }

    #[test]
    fn gcc_32_bit() {
        need("gcc");
        need("patchelf");
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("lib.c"), "int demo(void) { return 1; }\n").unwrap();
        std::fs::write(
            d.join("main.c"),
            format!(
                "extern int demo(void);\nconst char *p = \"/nix/store/{}-x\";\nint start(void) {{ return demo() + *p; }}\n",
                h('r')
            ),
        )
        .unwrap();
        // -nostdlib keeps the test to the 32-bit compiler and linker, which
        // gcc-multilib brings (scripts/test.sh installs it).
        run(Command::new("gcc")
            .args([
                "-m32",
                "-shared",
                "-fPIC",
                "-nostdlib",
                "lib.c",
                "-o",
                "libdemo32.so",
            ])
            .current_dir(d));
        let interp = format!("/nix/store/{}-glibc/lib/ld-linux.so.2", h('i'));
        run(Command::new("gcc")
            .args([
                "-m32",
                "-pie",
                "-fPIE",
                "-nostdlib",
                "-e",
                "start",
                "main.c",
                "-L.",
                "-ldemo32",
            ])
            .arg(format!("-Wl,-dynamic-linker,{interp}"))
            .args(["-o", "prog32"])
            .current_dir(d));
        let rp = format!(
            "/nix/store/{}-a/lib:/nix/store/{}-b/lib:$ORIGIN",
            h('0'),
            h('1')
        );
        run(Command::new("patchelf")
            .args(["--set-rpath", &rp, "prog32"])
            .current_dir(d));

        let data = std::fs::read(d.join("prog32")).unwrap();
        assert_eq!(data[4], 1, "expected ELFCLASS32");
        let l = ElfLayout::parse(&data).unwrap();
        assert_eq!(l.interpreter(), Some(interp.as_str()));
        assert_eq!(l.needed(), ["libdemo32.so"]);
        assert_eq!(l.runpath().len(), 3);
        assert_eq!(l.runpath()[2].dir, "$ORIGIN");
        assert_eq!(l.classify(offset1(&data, &h('i'))), ElfHold::Interpreter);
        assert_eq!(
            l.classify(offset1(&data, &h('1'))),
            ElfHold::Runpath { entry: 1 }
        );
        assert_eq!(l.classify(offset1(&data, &h('r'))), string_hold(".rodata"));
    }

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn system_binary() {
        let path = Path::new("/usr/bin/ls");
        let data = std::fs::read(path).expect("coreutils' ls is on every Debian machine");
        let l = ElfLayout::parse(&data).unwrap();
        assert!(
            l.needed().iter().any(|n| n == "libc.so.6"),
            "{:?}",
            l.needed()
        );
        assert_eq!(l.interpreter(), Some("/lib64/ld-linux-x86-64.so.2"));
        let interp = offset1(&data, "/lib64/ld-linux-x86-64.so.2");
        assert_eq!(l.classify(interp), ElfHold::Interpreter);
        // ELF layouts are also parsed from slices that are not 8-aligned
        // (a buffer read at an odd offset): results must not change.
        let mut shifted = vec![0u8; 1];
        shifted.extend_from_slice(&data);
        let l2 = ElfLayout::parse(&shifted[1..]).unwrap();
        assert_eq!(l2.needed(), l.needed());
        assert_eq!(l2.classify(interp), ElfHold::Interpreter);
    }

    /// Hand-built ELF writer for the cases gcc here cannot produce:
    /// big-endian files in both classes.
    struct Writer {
        buf: Vec<u8>,
        big: bool,
        is64: bool,
    }

    impl Writer {
        fn int(&mut self, v: u64, size: usize) {
            let bytes = v.to_be_bytes();
            let mut b = bytes[8 - size..].to_vec();
            if !self.big {
                b.reverse();
            }
            self.buf.extend_from_slice(&b);
        }
        fn word(&mut self, v: u64) {
            self.int(v, if self.is64 { 8 } else { 4 });
        }
        fn pad_to(&mut self, align: usize) {
            while !self.buf.len().is_multiple_of(align) {
                self.buf.push(0);
            }
        }
    }

    const VBASE: u64 = 0x10000;

    /// A shared-object-shaped ELF with PT_INTERP, PT_DYNAMIC (NEEDED,
    /// SONAME, RUNPATH, STRTAB, STRSZ), .rodata and .debug_str.
    pub(super) fn synth_elf(is64: bool, big: bool) -> Vec<u8> {
        let (ehsize, phent, shent) = if is64 { (64, 56, 64) } else { (52, 32, 40) };
        let dynent = if is64 { 16 } else { 8 };
        let nph = 3;
        let interp = format!("/nix/store/{}-glibc/lib/ld.so\0", h('i'));
        let rp = format!("/nix/store/{}-a/lib:/nix/store/{}-b/lib", h('0'), h('1'));
        let dynstr = format!("\0libc.so.6\0{rp}\0libsyn.so.1\0");
        let (needed_at, rp_at, soname_at) = (1u64, 11u64, 12 + rp.len() as u64);
        let rodata = format!("x /nix/store/{}-x libzstd.so.1\0libsyn.so.1\0", h('r'));
        let debug = format!("/nix/store/{}-src\0", h('g'));
        let shstrtab = "\0.interp\0.dynstr\0.rodata\0.dynamic\0.debug_str\0.shstrtab\0";
        let name = |n: &str| shstrtab.find(&format!("\0{n}\0")).unwrap() as u64 + 1;

        let mut w = Writer {
            buf: vec![0; ehsize + nph * phent],
            big,
            is64,
        };
        let interp_off = w.buf.len() as u64;
        w.buf.extend_from_slice(interp.as_bytes());
        let dynstr_off = w.buf.len() as u64;
        w.buf.extend_from_slice(dynstr.as_bytes());
        let rodata_off = w.buf.len() as u64;
        w.buf.extend_from_slice(rodata.as_bytes());
        w.pad_to(8);
        let dyn_off = w.buf.len() as u64;
        let dyns = [
            (elf::DT_NEEDED.0 as u64, needed_at),
            (elf::DT_SONAME.0 as u64, soname_at),
            (elf::DT_RUNPATH.0 as u64, rp_at),
            (elf::DT_STRTAB.0 as u64, VBASE + dynstr_off),
            (elf::DT_STRSZ.0 as u64, dynstr.len() as u64),
            (0, 0),
        ];
        for (tag, val) in dyns {
            w.word(tag);
            w.word(val);
        }
        let dyn_size = (dyns.len() * dynent) as u64;
        let debug_off = w.buf.len() as u64;
        w.buf.extend_from_slice(debug.as_bytes());
        let shstrtab_off = w.buf.len() as u64;
        w.buf.extend_from_slice(shstrtab.as_bytes());
        w.pad_to(8);
        let shoff = w.buf.len() as u64;
        let loaded_end = debug_off;

        // (name, type, flags, offset, size, link)
        let sections = [
            (0, 0, 0, 0, 0, 0),
            (name(".interp"), 1, 2, interp_off, interp.len() as u64, 0),
            (name(".dynstr"), 3, 2, dynstr_off, dynstr.len() as u64, 0),
            (name(".rodata"), 1, 2, rodata_off, rodata.len() as u64, 0),
            (name(".dynamic"), 6, 3, dyn_off, dyn_size, 2),
            (name(".debug_str"), 1, 0, debug_off, debug.len() as u64, 0),
            (
                name(".shstrtab"),
                3,
                0,
                shstrtab_off,
                shstrtab.len() as u64,
                0,
            ),
        ];
        for (n, ty, flags, off, size, link) in sections {
            let addr = if flags & 2 != 0 { VBASE + off } else { 0 };
            w.int(n, 4);
            w.int(ty, 4);
            w.word(flags);
            w.word(addr);
            w.word(off);
            w.word(size);
            w.int(link, 4);
            w.int(0, 4);
            w.word(1);
            w.word(0);
        }
        let total = w.buf.len() as u64;

        // Headers last, now that every offset is known.
        let mut hw = Writer {
            buf: Vec::new(),
            big,
            is64,
        };
        hw.buf.extend_from_slice(&elf::ELFMAG);
        hw.buf
            .extend_from_slice(&[if is64 { 2 } else { 1 }, if big { 2 } else { 1 }, 1]);
        hw.buf.resize(16, 0);
        hw.int(3, 2); // ET_DYN
        hw.int(if is64 { 22 } else { 20 }, 2); // s390 / ppc: big-endian machines
        hw.int(1, 4);
        hw.word(0);
        hw.word(ehsize as u64);
        hw.word(shoff);
        hw.int(0, 4);
        for v in [
            ehsize,
            phent,
            nph,
            shent,
            sections.len(),
            sections.len() - 1,
        ] {
            hw.int(v as u64, 2);
        }
        // (type, offset, size)
        for (ty, off, size) in [
            (3, interp_off, interp.len() as u64),
            (1, 0, loaded_end),
            (2, dyn_off, dyn_size),
        ] {
            hw.int(ty, 4);
            if is64 {
                hw.int(4, 4);
            }
            hw.word(off);
            hw.word(VBASE + off);
            hw.word(VBASE + off);
            hw.word(size);
            hw.word(size);
            if !is64 {
                hw.int(4, 4);
            }
            hw.word(if ty == 1 { 0x1000 } else { 1 });
        }
        assert_eq!(hw.buf.len(), ehsize + nph * phent);
        w.buf[..hw.buf.len()].copy_from_slice(&hw.buf);
        assert_eq!(w.buf.len() as u64, total);
        w.buf
    }

    #[test]
    fn synthetic_all_classes_and_byte_orders() {
        for is64 in [false, true] {
            for big in [false, true] {
                let data = synth_elf(is64, big);
                let what = format!("is64={is64} big={big}");
                let l = ElfLayout::parse(&data).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(
                    l.interpreter(),
                    Some(format!("/nix/store/{}-glibc/lib/ld.so", h('i')).as_str()),
                    "{what}"
                );
                assert_eq!(l.needed(), ["libc.so.6"], "{what}");
                assert_eq!(l.runpath().len(), 2, "{what}");
                assert_eq!(
                    l.classify(offset1(&data, &h('i'))),
                    ElfHold::Interpreter,
                    "{what}"
                );
                assert_eq!(
                    l.classify(offset1(&data, &h('1'))),
                    ElfHold::Runpath { entry: 1 },
                    "{what}"
                );
                assert_eq!(
                    l.classify(offset1(&data, &h('r'))),
                    string_hold(".rodata"),
                    "{what}"
                );
                assert_eq!(
                    l.classify(offset1(&data, &h('g'))),
                    ElfHold::Debug {
                        section: ".debug_str".into()
                    },
                    "{what}"
                );
                // The file's own soname is excluded, the other name kept.
                assert_eq!(l.dlopen_candidates(), ["libzstd.so.1"], "{what}");
            }
        }
    }

    #[test]
    fn rpath_when_no_runpath() {
        let mut data = synth_elf(true, false);
        let dynamic = section_range(&data, ".dynamic").unwrap();
        let at = (dynamic.start as usize..dynamic.end as usize)
            .step_by(16)
            .find(|&i| data[i..i + 8] == elf::DT_RUNPATH.0.to_le_bytes())
            .unwrap();
        data[at..at + 8].copy_from_slice(&elf::DT_RPATH.0.to_le_bytes());
        let l = ElfLayout::parse(&data).unwrap();
        assert_eq!(l.runpath().len(), 2);
        assert_eq!(
            l.classify(offset1(&data, &h('0'))),
            ElfHold::Runpath { entry: 0 }
        );
    }

    #[test]
    fn malformed_inputs_are_errors() {
        assert_eq!(ElfLayout::parse(b"").unwrap_err(), ElfError::NotElf);
        assert_eq!(
            ElfLayout::parse(b"#!/bin/sh\n").unwrap_err(),
            ElfError::NotElf
        );
        assert!(ElfLayout::parse(b"\x7fELF").is_err());
        let mut garbage = b"\x7fELF".to_vec();
        garbage.extend((0..4000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
        assert!(ElfLayout::parse(&garbage).is_err());

        let data = synth_elf(true, false);
        assert!(
            ElfLayout::parse(&data[..100]).is_err(),
            "truncated inside the program headers"
        );

        // e_shoff (offset 40 in a 64-bit little-endian header) past EOF.
        let mut bad = data.clone();
        bad[40..48].copy_from_slice(&(data.len() as u64 + 4096).to_le_bytes());
        assert!(ElfLayout::parse(&bad).is_err());

        // A section whose contents lie past EOF: the last section's
        // sh_offset (at +24 in a 64-byte section header).
        let mut bad = data.clone();
        let last = data.len() - 64;
        bad[last + 24..last + 32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(ElfLayout::parse(&bad).is_err());

        // DT_STRSZ cut to 0: every dynamic string is now outside the table.
        let l = ElfLayout::parse(&data).unwrap();
        assert!(!l.needed().is_empty());
        let dynamic = section_range(&data, ".dynamic").unwrap();
        let dt_strsz = (dynamic.start as usize..dynamic.end as usize)
            .step_by(16)
            .find(|&i| data[i..i + 8] == elf::DT_STRSZ.0.to_le_bytes())
            .unwrap();
        let mut bad = data.clone();
        bad[dt_strsz + 8..dt_strsz + 16].copy_from_slice(&0u64.to_le_bytes());
        assert!(ElfLayout::parse(&bad).is_err());
    }

    /// Every truncation and many random corruptions of real files: parse
    /// may fail but must never panic, and classify must answer anything.
    #[test]
    fn corrupted_files_never_panic() {
        let mut samples = vec![synth_elf(true, false), synth_elf(false, true)];
        if let Ok(ls) = std::fs::read("/usr/bin/ls") {
            samples.push(ls);
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for data in &samples {
            let check = |bytes: &[u8]| {
                if let Ok(l) = ElfLayout::parse(bytes) {
                    for off in [0, 1, bytes.len() as u64 / 2, bytes.len() as u64, u64::MAX] {
                        let _ = l.classify(off);
                    }
                }
            };
            let step = (data.len() / 3000).max(1);
            for len in (0..data.len()).step_by(step) {
                check(&data[..len]);
            }
            for _ in 0..3000 {
                let mut bytes = data.clone();
                for _ in 0..1 + rand() % 8 {
                    // Mostly hit the headers, where corruption matters most.
                    let limit = if rand() % 2 == 0 {
                        0x400.min(bytes.len())
                    } else {
                        bytes.len()
                    };
                    let i = (rand() % limit as u64) as usize;
                    bytes[i] = rand() as u8;
                }
                check(&bytes);
            }
        }
    }

    #[test]
    fn soname_strings() {
        let text = b"\0libglib-2.0.so.0\0/usr/lib/libfoo.so.1\0libbar.so.%d\0xlibno.so\0libfoo.so.1.conf\0\
              lib.so\0libstdc++.so.6 libpython3.11.so.1.0\0libnotalib\0";
        let got = sonames_in(text, 0, text.len());
        let names: Vec<&str> = got.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(got[0].0, 1);
        assert_eq!(
            names,
            [
                "libglib-2.0.so.0",
                "libfoo.so.1",
                "libbar.so",
                "libstdc++.so.6",
                "libpython3.11.so.1.0"
            ]
        );
    }

    #[test]
    fn runpath_serving() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let listing = s(&[
            "libfoo.so.1.2.3",
            "libbar.so.2",
            "libbaz.so",
            "libzstd.so.1",
            "README",
        ]);
        assert_eq!(
            runpath_serves(
                &listing,
                &s(&["libfoo.so.1", "libbar.so.2", "libqux.so.1"]),
                &s(&["libzstd.so", "libbar.so.2"])
            ),
            s(&["libfoo.so.1", "libbar.so.2", "libzstd.so"])
        );
        // Prefixes must end at a dot: libbaz.so does not serve libba.
        assert!(runpath_serves(&listing, &s(&["libba", "libbaz.so.1"]), &[]).is_empty());
        assert!(runpath_serves(&[], &s(&["libc.so.6"]), &[]).is_empty());
    }

    #[test]
    fn elf_magic() {
        assert!(is_elf(b"\x7fELF\x02\x01"));
        assert!(!is_elf(b"\x7fEL"));
        assert!(!is_elf(b"#!/bin/sh"));
    }

    #[test]
    fn hold_serializes_with_kind_tag() {
        let j = serde_json::to_string(&ElfHold::Runpath { entry: 1 }).unwrap();
        assert_eq!(j, r#"{"kind":"runpath","entry":1}"#);
        let back: ElfHold = serde_json::from_str(&j).unwrap();
        assert_eq!(back, ElfHold::Runpath { entry: 1 });
        assert_eq!(
            serde_json::to_string(&ElfHold::Interpreter).unwrap(),
            r#"{"kind":"interpreter"}"#
        );
    }
}
