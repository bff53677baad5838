//! An ELF file's layout read as its bytes stream past, once, without
//! keeping the file: what the NAR reader uses (a NAR cannot be re-read, and
//! spooling each file to a temporary file costs memory on a tmpfs `/tmp`).
//!
//! [`ElfStream::feed`] takes the file chunk by chunk and keeps only the
//! parts [`ElfLayout`] reads; [`ElfStream::finish`] then parses those parts
//! with the very code [`ElfLayout::parse`] runs on a whole file, so the two
//! give the same layout whenever the parts were kept. Which parts:
//!
//! - the ELF header, the program headers it points to, and the segments
//!   those name (`PT_INTERP`, `PT_DYNAMIC`), each captured when it streams
//!   by (or taken from what was kept when it already has). BOLT rewrites
//!   the program headers at the end of the file, after the dynamic table:
//!   until they are read, the bytes around each `DT_SYMENT` entry (every
//!   linker writes one) are kept ([`MAX_DYN_WINDOWS`] windows of
//!   [`DYN_WINDOW`] bytes each side);
//! - once the dynamic table is read, the strings it names (`DT_NEEDED`,
//!   `DT_SONAME`, `DT_RUNPATH`, `DT_RPATH`), up to their terminating NUL.
//!   Linkers put `.dynstr` *before* `.dynamic` (after `.dynsym`, in the
//!   first pages), patchelf moves it to the end or the start: the first
//!   [`PREFIX`] bytes are kept until the dynamic table has been read, which
//!   covers every layout seen (libLLVM's `.dynstr` ends at 4 MiB), and
//!   dropped then;
//! - the section header table (its offset is in the ELF header) and the
//!   section name table. That one sits before the section headers
//!   (binutils, lld: within the last [`LOOKBEHIND`] bytes kept behind the
//!   stream) or anywhere (Go's linker puts it after `.rodata`): every
//!   section name table holds the name `.strtab` (in `.shstrtab` or alone),
//!   so the bytes around each `.strtab\0` in the file are kept too
//!   ([`MAX_WINDOWS`] windows of [`WINDOW`] bytes each side);
//! - the library names (`libfoo.so.1`) of the whole file with their
//!   offsets, since which of them count as `dlopen()` candidates depends on
//!   the section table at the end ([`SonameHits`]).
//!
//! A layout that needs bytes that went by unkept (a string table beyond
//! the first 8 MiB named by a dynamic table after it, a section name table
//! without `.strtab` in it far from the section headers, a dynamic table
//! without `DT_SYMENT` before late program headers, captures past
//! [`CAPTURE_BUDGET`]) is [`ElfError::NotKept`]: no file is re-read, and no
//! guess stands in for it. Of the 1,994 ELF files of this machine's
//! `/usr/lib`, `/usr/bin`, JDK, Chromium, Go programs and BOLT-optimised
//! Rust toolchains, every one streams to the layout of the whole-file
//! parse.
//!
//! Memory is bounded per file, whatever its size or its header fields
//! claim: at most [`MAX_HELD`] bytes, about 55 MiB (the prefix, the
//! look-behind ring, the captures' budget, the name hits' arena and index);
//! in practice the prefix (at most 8 MiB, while it is kept) and some
//! kilobytes: 1.9 MB at most while a 1.3 GB library streams past.

use std::cell::Cell;
use std::collections::HashMap;
use std::ops::Range;

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader as _, SectionHeader as _};
use object::{Endianness, ReadRef};

use super::{
    ElfError, ElfLayout, MAX_SONAME, Names, checked_range, dyn_info, is_elf, is_soname,
    is_soname_char, load_offset, parse_as,
};

/// Bytes at the start of the file kept until the dynamic table is read:
/// the dynamic string table is usually there, before the dynamic table
/// that locates it.
pub const PREFIX: usize = 8 << 20;

/// Bytes kept behind the stream once past the prefix (a ring): the section
/// name table just before the section headers, and the bytes before a
/// `.strtab` found in the stream.
pub const LOOKBEHIND: usize = 256 << 10;

/// Most bytes taken at once (see [`ElfStream::feed`]).
const PIECE: usize = 64 << 10;

/// Bytes kept on each side of a `.strtab\0` found in the stream: a section
/// name table is a few hundred bytes; a relocatable object's with many
/// sections some kilobytes.
pub const WINDOW: u64 = 96 << 10;

/// Most windows kept around `.strtab\0` strings; the section name table's
/// is almost always the first or second.
pub const MAX_WINDOWS: usize = 8;

/// Most bytes captured for parts known ahead (headers, tables, strings,
/// windows) together, however large the headers claim them to be.
pub const CAPTURE_BUDGET: usize = 16 << 20;

/// Most parts captured (hostile files can name a million strings).
const MAX_CAPTURES: usize = 4096;

/// Most library-name hits kept, in all and per distinct name.
const MAX_NAME_HITS: usize = 1 << 16;
const MAX_HITS_PER_NAME: u32 = 16;

/// Most bytes of library-name runs kept (each at most 256).
const MAX_NAME_BYTES: usize = 4 << 20;

/// The most an [`ElfStream`] holds, in bytes: the prefix, the ring, the
/// captures (growable buffers counted twice: a `Vec` may hold twice what
/// it has), the name arena, the hits and their per-name counts.
pub const MAX_HELD: usize = PREFIX
    + LOOKBEHIND
    + 2 * CAPTURE_BUDGET
    + 2 * MAX_NAME_BYTES
    + MAX_NAME_HITS * (2 * std::mem::size_of::<Hit>() + 32)
    + MAX_CAPTURES * std::mem::size_of::<Capture>()
    + (1 << 20);

/// One part of the file kept because the layout needs it.
#[derive(Debug)]
struct Capture {
    start: u64,
    /// Where the part ends (within the file).
    end: u64,
    /// Stops at the first NUL (kept), for a string.
    until_nul: bool,
    bytes: Vec<u8>,
    /// It had streamed past, unkept, when it became known: never complete.
    lost: bool,
}

impl Capture {
    fn next(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }
    fn complete(&self) -> bool {
        !self.lost && (self.next() >= self.end || (self.until_nul && self.bytes.last() == Some(&0)))
    }
}

/// How far the headers have been read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Header,
    ProgramHeaders,
    Dynamic,
    Done,
}

/// The layout of one ELF file, read as it streams past (see the module
/// documentation for what it keeps and its memory bound).
#[derive(Debug)]
pub struct ElfStream {
    file_len: u64,
    pos: u64,
    is64: bool,
    stage: Stage,
    /// The first bytes, until the dynamic table has been read.
    prefix: Option<Vec<u8>>,
    /// The last [`LOOKBEHIND`] bytes past the prefix: `ring[i]` holds the
    /// byte at `ring_start + k * LOOKBEHIND + i`.
    ring: Vec<u8>,
    ring_start: Option<u64>,
    captures: Vec<Capture>,
    captured: usize,
    header: Option<usize>,
    phdrs: Option<usize>,
    dynamic: Option<usize>,
    /// The section headers: first section 0 alone when `e_shnum` is 0
    /// (the count is then its `sh_size`), then the whole table.
    sht: Option<usize>,
    sht_from_0: bool,
    shstrtab_wanted: bool,
    windows: usize,
    /// A `DT_SYMENT` entry as this file's class and byte order write it
    /// (once its header is read), and the windows kept around one.
    dyn_sig: Vec<u8>,
    dyn_windows: usize,
    /// The last bytes of the previous chunk, for a signature across two.
    tail: Vec<u8>,
    names: SonameHits,
}

const SIGNATURE: &[u8] = b".strtab\0";

/// Bytes of the last chunk kept for a signature across two chunks: the
/// longest signature (a 64-bit `DT_SYMENT` entry) less one.
const TAIL: usize = 15;

/// Bytes kept on each side of a `DT_SYMENT` entry seen before the program
/// headers: a dynamic table is some hundreds of bytes.
pub const DYN_WINDOW: u64 = 16 << 10;

/// Most windows kept around `DT_SYMENT` entries.
pub const MAX_DYN_WINDOWS: usize = 16;

/// What a window around a signature is for.
#[derive(Debug, Clone, Copy)]
enum Window {
    /// The section name table (`.strtab\0`).
    Names,
    /// A dynamic table (its `DT_SYMENT` entry).
    Dynamic,
}

impl ElfStream {
    /// A stream for a file of `file_len` bytes (a NAR says it before the
    /// contents).
    pub fn new(file_len: u64) -> Self {
        ElfStream {
            file_len,
            pos: 0,
            is64: false,
            stage: Stage::Header,
            prefix: Some(Vec::new()),
            ring: Vec::new(),
            ring_start: None,
            captures: Vec::new(),
            captured: 0,
            header: None,
            phdrs: None,
            dynamic: None,
            sht: None,
            sht_from_0: false,
            shstrtab_wanted: false,
            windows: 0,
            dyn_sig: Vec::new(),
            dyn_windows: 0,
            tail: Vec::new(),
            names: SonameHits::default(),
        }
    }

    /// Takes the next `chunk` of the file, of any size.
    pub fn feed(&mut self, chunk: &[u8]) {
        // In pieces well under the look-behind, so that what a piece names
        // of the bytes just before it is still held, whatever the caller's
        // chunks.
        for piece in chunk.chunks(PIECE) {
            self.feed_piece(piece);
        }
    }

    fn feed_piece(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        let from = self.pos;
        let to = from + chunk.len() as u64;
        if let Some(p) = self.prefix.as_mut()
            && (from as usize) < PREFIX
        {
            let take = chunk.len().min(PREFIX - from as usize);
            if p.capacity() < p.len() + take {
                // Doubling, but never past the prefix's size.
                let want = (p.len() + take).max(2 * p.capacity()).min(PREFIX);
                p.reserve_exact(want - p.len());
            }
            p.extend_from_slice(&chunk[..take]);
        }
        if self.prefix.is_none() || to > PREFIX as u64 {
            self.push_ring(from, chunk);
        }
        for c in &mut self.captures {
            if c.lost || c.complete() || c.next() < from || c.next() >= to {
                continue;
            }
            let at = (c.next() - from) as usize;
            let mut end = (c.end.min(to) - from) as usize;
            if c.until_nul {
                if let Some(nul) = memchr::memchr(0, &chunk[at..end]) {
                    end = at + nul + 1;
                }
                // A string is paid for as it grows.
                if self.captured + (end - at) > CAPTURE_BUDGET {
                    c.lost = true;
                    c.bytes = Vec::new();
                    continue;
                }
                self.captured += end - at;
            }
            c.bytes.extend_from_slice(&chunk[at..end]);
        }
        self.pos = to;
        self.find_signatures(from, chunk);
        self.names.feed(from, chunk);
        self.advance();
    }

    /// The layout, from what was kept. Errors are [`ElfLayout::parse`]'s on
    /// the same file, or [`ElfError::NotKept`].
    pub fn finish(mut self) -> Result<ElfLayout, ElfError> {
        self.advance();
        self.names.close();
        let prefix_part = self.prefix.as_deref().map(|p| (0u64, p));
        let mut parts: Vec<(u64, &[u8])> = prefix_part.into_iter().collect();
        parts.extend(
            self.captures
                .iter()
                .filter(|c| !c.bytes.is_empty())
                .map(|c| (c.start, c.bytes.as_slice())),
        );
        let kept = Kept {
            parts,
            len: self.file_len,
            missed: Cell::new(None),
        };
        let first = kept.parts.iter().find(|(s, _)| *s == 0).map(|(_, b)| *b);
        if !first.is_some_and(is_elf) {
            return Err(ElfError::NotElf);
        }
        let names = Names::Seen(&self.names);
        let res = match first.and_then(|b| b.get(4)).map(|&c| elf::FileClass(c)) {
            Some(elf::ELFCLASS32) => parse_as::<elf::FileHeader32<Endianness>, _>(&kept, names),
            Some(elf::ELFCLASS64) => parse_as::<elf::FileHeader64<Endianness>, _>(&kept, names),
            _ => Err(ElfError::NotElf),
        };
        // A read that found its bytes gone decides: whatever the parse made
        // of the gap, it is not what the whole file says.
        match kept.missed.get() {
            Some((start, end)) => Err(ElfError::NotKept(format!(
                "bytes {start}..{end} were needed after they had streamed past"
            ))),
            None => res,
        }
    }

    /// Bytes this stream holds now (buffers' capacities): never more than
    /// [`MAX_HELD`].
    pub fn held(&self) -> usize {
        self.prefix.as_ref().map_or(0, Vec::capacity)
            + self.ring.capacity()
            + self.captures.capacity() * std::mem::size_of::<Capture>()
            + self
                .captures
                .iter()
                .map(|c| c.bytes.capacity())
                .sum::<usize>()
            + self.names.held()
            + self.tail.capacity()
    }

    fn push_ring(&mut self, from: u64, chunk: &[u8]) {
        // Only the last LOOKBEHIND bytes of a long chunk can stay.
        let skip = chunk.len().saturating_sub(LOOKBEHIND);
        let (from, chunk) = (from + skip as u64, &chunk[skip..]);
        let start = *self.ring_start.get_or_insert(from);
        let mut at = ((from - start) % LOOKBEHIND as u64) as usize;
        if self.ring.len() < LOOKBEHIND && at != self.ring.len() {
            // A chunk longer than the ring skipped ahead while it was
            // filling: its last LOOKBEHIND bytes fill all of it now.
            self.ring.resize(LOOKBEHIND, 0);
        }
        let mut rest = chunk;
        while !rest.is_empty() {
            let n = rest.len().min(LOOKBEHIND - at);
            if self.ring.len() < LOOKBEHIND {
                if self.ring.capacity() < self.ring.len() + n {
                    // Doubling up to its size: a small file keeps little.
                    let want = (self.ring.len() + n)
                        .max(2 * self.ring.capacity())
                        .min(LOOKBEHIND);
                    self.ring.reserve_exact(want - self.ring.len());
                }
                // Filling for the first time: `at` is the ring's length.
                self.ring.extend_from_slice(&rest[..n]);
            } else {
                self.ring[at..at + n].copy_from_slice(&rest[..n]);
            }
            rest = &rest[n..];
            at = (at + n) % LOOKBEHIND;
        }
    }

    /// Lets the prefix go; its last bytes, when the ring has not started,
    /// start it, so what lies just behind the stream stays held.
    fn drop_prefix(&mut self) {
        let Some(p) = self.prefix.take() else {
            return;
        };
        if self.ring_start.is_none() && p.len() as u64 == self.pos {
            let keep = p.len().min(LOOKBEHIND);
            self.push_ring((p.len() - keep) as u64, &p[p.len() - keep..]);
        }
    }

    /// The first offset the ring still holds (the stream's position when
    /// it has not started).
    fn ring_from(&self) -> u64 {
        match self.ring_start {
            Some(start) => self.pos.saturating_sub(self.ring.len() as u64).max(start),
            None => self.pos,
        }
    }

    /// Where the bytes held without a gap from `start` (behind the
    /// stream's position) end: `start` itself when it is not held.
    fn held_to(&self, start: u64) -> u64 {
        let in_prefix = self.prefix.as_ref().map_or(0, |p| p.len() as u64);
        let ring_from = self.ring_from();
        if start < in_prefix {
            if in_prefix >= ring_from {
                self.pos
            } else {
                in_prefix
            }
        } else if start >= ring_from {
            self.pos
        } else {
            start
        }
    }

    /// Whether every byte of `range` (behind the stream's position) is
    /// still held, by the prefix or the ring.
    fn is_held(&self, range: Range<u64>) -> bool {
        let in_prefix = self.prefix.as_ref().map_or(0, |p| p.len() as u64);
        let rest = range.start.max(in_prefix);
        rest >= range.end || rest >= self.ring_from()
    }

    /// The held bytes `range` (behind the stream's position), in at most
    /// three pieces (the prefix, the ring's two halves).
    fn behind(&self, range: Range<u64>) -> Vec<&[u8]> {
        let mut pieces = Vec::new();
        let mut at = range.start;
        if let Some(p) = &self.prefix {
            let end = range.end.min(p.len() as u64);
            if at < end {
                pieces.push(&p[at as usize..end as usize]);
                at = end;
            }
        }
        if let Some(start) = self.ring_start {
            while at < range.end {
                let i = ((at - start) % LOOKBEHIND as u64) as usize;
                let n = ((range.end - at) as usize).min(LOOKBEHIND - i);
                pieces.push(&self.ring[i..i + n]);
                at += n as u64;
            }
        }
        pieces
    }

    /// Keeps `range` of the file, from what is held behind the stream and
    /// then as it streams by; a string (`until_nul`) up to its NUL. `None`
    /// when there are too many captures or the range lies outside the
    /// file (reads there then fail as they would on the whole file). A
    /// range that already went by unkept, or past the budget, is kept as
    /// lost: reads of it fail and say so.
    fn capture(&mut self, range: Range<u64>, until_nul: bool) -> Option<usize> {
        let end = range.end.min(self.file_len);
        if range.start >= end || self.captures.len() >= MAX_CAPTURES {
            return None;
        }
        let mut c = Capture {
            start: range.start,
            end,
            until_nul,
            bytes: Vec::new(),
            lost: false,
        };
        if until_nul {
            // Paid for as it grows (see `feed`).
        } else if let Some(size) = usize::try_from(end - range.start)
            .ok()
            .filter(|&n| self.captured + n <= CAPTURE_BUDGET)
        {
            self.captured += size;
            c.bytes.reserve_exact(size);
        } else {
            c.lost = true;
        }
        if !c.lost && range.start < self.pos {
            // Behind the stream, in a part kept already (a window).
            let upto = end.min(self.pos);
            if let Some(bytes) = self.kept_part(range.start..upto, until_nul) {
                if until_nul {
                    if self.captured + bytes.len() > CAPTURE_BUDGET {
                        return None;
                    }
                    self.captured += bytes.len();
                }
                c.bytes = bytes;
                self.captures.push(c);
                return Some(self.captures.len() - 1);
            }
        }
        if !c.lost && range.start < self.pos {
            // Behind the stream: from what is held, as far as it reaches
            // without a gap (a string needs only the bytes to its NUL).
            let upto = end.min(self.pos);
            let held = upto.min(self.held_to(range.start));
            let mut captured = self.captured;
            let mut ended = false;
            for piece in self.behind(range.start..held) {
                let piece = match memchr::memchr(0, piece).filter(|_| until_nul) {
                    Some(n) => {
                        ended = true;
                        &piece[..=n]
                    }
                    None => piece,
                };
                if until_nul {
                    if captured + piece.len() > CAPTURE_BUDGET {
                        c.lost = true;
                        break;
                    }
                    captured += piece.len();
                }
                c.bytes.extend_from_slice(piece);
                if ended {
                    break;
                }
            }
            self.captured = captured;
            if !ended && held < upto {
                c.lost = true;
            }
        }
        if c.lost {
            c.bytes = Vec::new();
        }
        self.captures.push(c);
        Some(self.captures.len() - 1)
    }

    /// The bytes `range` (a string: to its NUL) from one part already
    /// kept, if one has them all.
    fn kept_part(&self, range: Range<u64>, until_nul: bool) -> Option<Vec<u8>> {
        let part = self
            .captures
            .iter()
            .filter(|k| !k.lost && k.start <= range.start && range.start < k.next())
            .max_by_key(|k| k.next())?;
        let have = &part.bytes[(range.start - part.start) as usize..];
        let want = have.len().min((range.end - range.start) as usize);
        match memchr::memchr(0, &have[..want]).filter(|_| until_nul) {
            Some(n) => Some(have[..=n].to_vec()),
            None if have.len() as u64 >= range.end - range.start => Some(have[..want].to_vec()),
            None => None,
        }
    }

    fn done(&self, i: Option<usize>) -> Option<&Capture> {
        i.map(|i| &self.captures[i]).filter(|c| c.complete())
    }

    /// Keeps the bytes around each `.strtab\0` of the chunk.
    fn find_signatures(&mut self, from: u64, chunk: &[u8]) {
        // Until the program headers are read (BOLT writes them after
        // everything), a dynamic table may go by unrecognised: its
        // `DT_SYMENT` entry marks it.
        let dynamic_sig = match self.stage {
            Stage::ProgramHeaders => self.dyn_sig.clone(),
            _ => Vec::new(),
        };
        let mut found = Vec::new();
        for (sig, kind) in [
            (SIGNATURE, Window::Names),
            (&dynamic_sig[..], Window::Dynamic),
        ] {
            if sig.is_empty() {
                continue;
            }
            let tail = &self.tail[self.tail.len().saturating_sub(sig.len() - 1)..];
            let mut joint = tail.to_vec();
            joint.extend_from_slice(&chunk[..chunk.len().min(sig.len() - 1)]);
            let base = from - tail.len() as u64;
            found.extend(
                memchr::memmem::find_iter(&joint, sig)
                    .filter(|&i| i < tail.len())
                    .map(|i| (base + i as u64, sig.len() as u64, kind)),
            );
            found.extend(
                memchr::memmem::find_iter(chunk, sig)
                    .map(|i| (from + i as u64, sig.len() as u64, kind)),
            );
        }
        let keep = chunk.len().min(TAIL);
        if self.tail.len() + keep > TAIL {
            let drop = (self.tail.len() + keep) - TAIL;
            self.tail.drain(..drop.min(self.tail.len()));
        }
        self.tail.extend_from_slice(&chunk[chunk.len() - keep..]);
        for (at, len, kind) in found {
            let (count, most, side) = match kind {
                Window::Names => (&mut self.windows, MAX_WINDOWS, WINDOW),
                Window::Dynamic => (&mut self.dyn_windows, MAX_DYN_WINDOWS, DYN_WINDOW),
            };
            if *count >= most {
                continue;
            }
            let covered = self
                .captures
                .iter()
                .any(|c| c.start + side <= at && at + len + side <= c.end);
            if covered {
                continue;
            }
            let mut start = at.saturating_sub(side);
            if !self.is_held(start..self.pos) {
                start = start.max(self.ring_from());
            }
            if !self.is_held(start..self.pos) {
                continue;
            }
            let end = at + len + side;
            if self.capture(start..end, false).is_some() {
                match kind {
                    Window::Names => self.windows += 1,
                    Window::Dynamic => self.dyn_windows += 1,
                }
            }
        }
    }

    /// Reads the headers as far as the bytes kept allow, asking for the
    /// parts they name.
    fn advance(&mut self) {
        if self.is64 || self.stage == Stage::Header {
            self.advance_as::<elf::FileHeader64<Endianness>>();
        }
        if !self.is64 {
            self.advance_as::<elf::FileHeader32<Endianness>>();
        }
    }

    fn advance_as<Elf: FileHeader<Endian = Endianness>>(&mut self) {
        loop {
            let before = (self.stage, self.sht_from_0, self.shstrtab_wanted);
            match self.stage {
                Stage::Header => self.read_header::<Elf>(),
                Stage::ProgramHeaders => self.read_program_headers::<Elf>(),
                Stage::Dynamic => self.read_dynamic::<Elf>(),
                Stage::Done => {}
            }
            self.read_section_headers::<Elf>();
            if before == (self.stage, self.sht_from_0, self.shstrtab_wanted) {
                return;
            }
        }
    }

    fn read_header<Elf: FileHeader<Endian = Endianness>>(&mut self) {
        let size = std::mem::size_of::<Elf>();
        let prefix = self.prefix.as_deref().unwrap_or_default();
        if prefix.len() < size && self.pos < self.file_len {
            return;
        }
        let class64 = prefix.get(4) == Some(&elf::ELFCLASS64.0);
        if prefix.get(4) == Some(&elf::ELFCLASS32.0) && size != 52 || class64 && size != 64 {
            // The other class's call reads it.
            self.is64 = class64;
            return;
        }
        let Ok(h) = Elf::parse(prefix) else {
            self.stage = Stage::Done;
            return;
        };
        let Ok(endian) = h.endian() else {
            self.stage = Stage::Done;
            return;
        };
        self.is64 = class64;
        let phoff: u64 = h.e_phoff(endian).into();
        let phnum = u64::from(h.e_phnum(endian));
        let phent = u64::from(h.e_phentsize(endian));
        let shoff: u64 = h.e_shoff(endian).into();
        let shnum = u64::from(h.e_shnum(endian));
        let shent = u64::from(h.e_shentsize(endian));
        self.header = self.capture(0..size as u64, false);
        // (DT_SYMENT, the size of a symbol) in words of the file's class.
        let word = if class64 { 8 } else { 4 };
        for v in [elf::DT_SYMENT.0 as u64, size_of::<Elf::Sym>() as u64] {
            let bytes = match endian {
                Endianness::Little => v.to_le_bytes()[..word].to_vec(),
                Endianness::Big => v.to_be_bytes()[8 - word..].to_vec(),
            };
            self.dyn_sig.extend_from_slice(&bytes);
        }
        // Entry sizes other than the class's make the whole-file parse
        // fail before reading the table: nothing to keep then. Counts are
        // 16-bit here, so no claim costs more than 4 MiB (and the budget).
        if phoff != 0 && phnum != 0 && phent == size_of::<Elf::ProgramHeader>() as u64 {
            self.phdrs = self.capture(phoff..phoff.saturating_add(phnum * phent), false);
        }
        if shoff != 0 && shent == size_of::<Elf::SectionHeader>() as u64 {
            let count = if shnum == 0 { 1 } else { shnum };
            self.sht_from_0 = shnum == 0;
            self.sht = self.capture(shoff..shoff.saturating_add(count * shent), false);
        }
        self.stage = Stage::ProgramHeaders;
    }

    /// The ELF header's bytes, once read.
    fn header_bytes(&self) -> Option<&[u8]> {
        self.header.map(|i| self.captures[i].bytes.as_slice())
    }

    fn program_headers<Elf: FileHeader<Endian = Endianness>>(&self) -> &[Elf::ProgramHeader] {
        self.done(self.phdrs)
            .and_then(|c| {
                let n = c.bytes.len() / size_of::<Elf::ProgramHeader>();
                object::pod::slice_from_bytes(&c.bytes, n).ok()
            })
            .map_or(&[], |(s, _)| s)
    }

    fn endian(&self) -> Endianness {
        let big = self.header_bytes().and_then(|b| b.get(5)) == Some(&elf::ELFDATA2MSB.0);
        if big {
            Endianness::Big
        } else {
            Endianness::Little
        }
    }

    fn read_program_headers<Elf: FileHeader<Endian = Endianness>>(&mut self) {
        if self.phdrs.is_some() && self.done(self.phdrs).is_none() {
            // Still to come, or lost (the parse at the end says so).
            if self.captures[self.phdrs.unwrap_or_default()].lost {
                self.stage = Stage::Done;
            }
            return;
        }
        let endian = self.endian();
        let phdrs = self.program_headers::<Elf>();
        let file_len = self.file_len;
        let range_of = |ty: elf::ProgramType| {
            phdrs
                .iter()
                .find(|ph| ph.p_type(endian) == ty)
                .and_then(|ph| {
                    let (offset, size) = ph.file_range(endian);
                    checked_range(offset, size, file_len)
                })
        };
        let interp = range_of(elf::PT_INTERP);
        let dynamic = range_of(elf::PT_DYNAMIC);
        if let Some(r) = interp {
            self.capture(r, false);
        }
        self.dynamic = dynamic.and_then(|r| self.capture(r, false));
        self.stage = Stage::Dynamic;
    }

    fn read_dynamic<Elf: FileHeader<Endian = Endianness>>(&mut self) {
        let Some(c) = self.done(self.dynamic) else {
            if self.dynamic.is_none_or(|i| self.captures[i].lost) {
                // No dynamic table (the prefix stays for the section
                // table's fallbacks) or one that cannot be read.
                self.stage = Stage::Done;
            }
            return;
        };
        let endian = self.endian();
        let Ok(dyns) = object::pod::slice_from_all_bytes::<Elf::Dyn>(&c.bytes) else {
            self.stage = Stage::Done;
            return;
        };
        let info = dyn_info::<Elf>(dyns, endian);
        let phdrs = self.program_headers::<Elf>();
        let strtab = info
            .strtab_addr
            .and_then(|addr| load_offset(phdrs, endian, addr))
            .and_then(|(start, avail)| {
                let len = info.strsz.map_or(avail, |sz| sz.min(avail));
                checked_range(start, len, self.file_len)
            });
        if let Some(strtab) = strtab {
            let vals = info
                .needed
                .iter()
                .chain(&info.soname)
                .chain(&info.runpath)
                .chain(&info.rpath);
            let starts: Vec<u64> = vals
                .filter_map(|&v| strtab.start.checked_add(v).filter(|&s| s < strtab.end))
                .collect();
            for s in starts {
                self.capture(s..strtab.end, true);
            }
            // Everything the layout reads from the first bytes is kept on
            // its own now (the section table's fallbacks for the string
            // table are for files the program headers do not locate it in).
            self.drop_prefix();
        }
        self.stage = Stage::Done;
    }

    fn read_section_headers<Elf: FileHeader<Endian = Endianness>>(&mut self) {
        if !self.sht_from_0 && self.shstrtab_wanted {
            return;
        }
        let Some(c) = self.done(self.sht) else {
            return;
        };
        let endian = self.endian();
        let ent = size_of::<Elf::SectionHeader>();
        let sections =
            object::pod::slice_from_bytes::<Elf::SectionHeader>(&c.bytes, c.bytes.len() / ent)
                .map_or(&[][..], |(s, _)| s);
        let start = c.start;
        let first = sections.first();
        if self.sht_from_0 {
            // `e_shnum` was 0: section 0's `sh_size` is the count.
            let count: u64 = first.map_or(0, |s0| s0.sh_size(endian).into());
            let range = count
                .checked_mul(ent as u64)
                .map(|len| start..start.saturating_add(len));
            self.sht_from_0 = false;
            self.sht = range.and_then(|r| self.capture(r, false));
            return;
        }
        let e_shstrndx = self
            .header_bytes()
            .and_then(|b| Elf::parse(b).ok())
            .map(|h| h.e_shstrndx(endian));
        // As the whole-file parse finds it (`FileHeader::shstrndx`).
        let index = e_shstrndx.and_then(|i| match i.index() {
            Some(i) => Some(u32::from(i)),
            None if i == elf::SHN_XINDEX => first.map(|s0| s0.sh_link(endian)),
            None => None,
        });
        let range = index
            .and_then(|i| sections.get(i as usize))
            .and_then(|s| s.file_range(endian))
            .and_then(|(offset, size)| Some(offset..offset.checked_add(size)?));
        self.shstrtab_wanted = true;
        if let Some(r) = range {
            self.capture(r, false);
        }
    }
}

/// The parts of a file an [`ElfStream`] kept, read as the whole file: a
/// read inside the file that falls outside them is remembered, and fails.
struct Kept<'a> {
    parts: Vec<(u64, &'a [u8])>,
    len: u64,
    missed: Cell<Option<(u64, u64)>>,
}

impl<'a> Kept<'a> {
    /// The kept bytes from `offset` on, as far as one part goes.
    fn from(&self, offset: u64) -> Option<&'a [u8]> {
        self.parts
            .iter()
            .filter(|(s, b)| *s <= offset && offset < s + b.len() as u64)
            .map(|(s, b)| &b[(offset - s) as usize..])
            .max_by_key(|b| b.len())
    }

    fn miss(&self, range: Range<u64>) {
        if self.missed.get().is_none() {
            self.missed.set(Some((range.start, range.end)));
        }
    }
}

impl<'a> ReadRef<'a> for &'a Kept<'a> {
    fn len(self) -> Result<u64, ()> {
        Ok(self.len)
    }

    fn read_bytes_at(self, offset: u64, size: u64) -> Result<&'a [u8], ()> {
        if size == 0 {
            return Ok(&[]);
        }
        let end = offset.checked_add(size).ok_or(())?;
        if end > self.len {
            return Err(());
        }
        match self.from(offset) {
            Some(b) if b.len() as u64 >= size => Ok(&b[..size as usize]),
            _ => {
                self.miss(offset..end);
                Err(())
            }
        }
    }

    fn read_bytes_at_until(self, range: Range<u64>, delimiter: u8) -> Result<&'a [u8], ()> {
        if range.start > range.end || range.end > self.len {
            return Err(());
        }
        let want = (range.end - range.start) as usize;
        let bytes = match self.from(range.start) {
            Some(b) => &b[..b.len().min(want)],
            None if want == 0 => &[][..],
            None => {
                self.miss(range);
                return Err(());
            }
        };
        match memchr::memchr(delimiter, bytes) {
            Some(n) => Ok(&bytes[..n]),
            None if bytes.len() < want => {
                self.miss(range.start + bytes.len() as u64..range.end);
                Err(())
            }
            None => Err(()),
        }
    }
}

/// One `lib` seen in the stream, with the run of name characters from it
/// (at most `MAX_SONAME + 1` bytes, in the arena).
#[derive(Debug, Clone, Copy)]
struct Hit {
    offset: u64,
    at: u32,
    len: u16,
    /// The byte before it is a name character (it only counts where a
    /// section starts right at it).
    after_name_char: bool,
}

/// Where each library-name string (`lib…\.so…`) of a file is, found as the
/// file streams past, so that those inside loaded data sections can be
/// picked once the section table (at the end) is known, exactly as a scan
/// of those sections finds them (`sonames_in`): every `lib` whose run of
/// name characters holds `.so` after it is kept with that run (up to 256
/// bytes), and the section's edges cut runs afterwards.
///
/// Bounded: at most [`MAX_NAME_HITS`] hits (the first 16 of each run's
/// text), [`MAX_NAME_BYTES`] of runs; a file with more library-name
/// strings than that loses the later ones as `dlopen()` candidates.
#[derive(Debug, Default)]
pub struct SonameHits {
    hits: Vec<Hit>,
    arena: Vec<u8>,
    per_name: HashMap<u64, u32>,
    hasher: std::collections::hash_map::RandomState,
    /// Runs that reached the end of the last chunk: (offset, previous byte
    /// is a name character, bytes so far).
    open: Vec<(u64, bool, Vec<u8>)>,
    /// The last three bytes fed (for a `lib` across two chunks and the
    /// byte before it).
    last: Vec<u8>,
}

impl SonameHits {
    fn held(&self) -> usize {
        self.hits.capacity() * std::mem::size_of::<Hit>()
            + self.arena.capacity()
            + self.per_name.capacity() * 24
            + self.open.iter().map(|o| o.2.capacity() + 40).sum::<usize>()
    }

    fn feed(&mut self, from: u64, chunk: &[u8]) {
        let cap = MAX_SONAME + 1;
        // Runs continued from the last chunk.
        if !self.open.is_empty() {
            let run = chunk
                .iter()
                .take(cap)
                .take_while(|&&b| is_soname_char(b))
                .count();
            let mut still = Vec::new();
            for (offset, after, mut bytes) in std::mem::take(&mut self.open) {
                let take = run.min(cap - bytes.len());
                bytes.extend_from_slice(&chunk[..take]);
                if bytes.len() < cap && take == chunk.len() {
                    still.push((offset, after, bytes));
                } else {
                    self.keep(offset, after, &bytes);
                }
            }
            self.open = still;
        }
        // A `lib` that starts in the last chunk's final bytes and ends in
        // this one.
        let mut joint = self.last.clone();
        let n_last = joint.len();
        joint.extend_from_slice(&chunk[..chunk.len().min(2)]);
        let base = from - n_last as u64;
        let straddling: Vec<usize> = memchr::memmem::find_iter(&joint, b"lib")
            .filter(|&i| i < n_last && i + 3 > n_last)
            .collect();
        for i in straddling {
            // Only at the file's start is there no byte before it.
            let after = i > 0 && is_soname_char(joint[i - 1]);
            let head = joint[i..n_last].to_vec();
            self.start_run(base + i as u64, after, &head, chunk);
        }
        for i in memchr::memmem::find_iter(chunk, b"lib") {
            let after = match i {
                0 => self.last.last().is_some_and(|&b| is_soname_char(b)),
                _ => is_soname_char(chunk[i - 1]),
            };
            self.start_run(from + i as u64, after, &[], &chunk[i..]);
        }
        let keep = chunk.len().min(3);
        let total = self.last.len() + keep;
        if total > 3 {
            self.last.drain(..(total - 3).min(self.last.len()));
        }
        self.last.extend_from_slice(&chunk[chunk.len() - keep..]);
    }

    /// A run made of `head` (its start, from the last chunk) and the name
    /// characters that open `rest`: kept when it ends here, else open.
    fn start_run(&mut self, offset: u64, after: bool, head: &[u8], rest: &[u8]) {
        let cap = MAX_SONAME + 1;
        let mut bytes = head.to_vec();
        let run = rest
            .iter()
            .take(cap - bytes.len())
            .take_while(|&&b| is_soname_char(b))
            .count();
        bytes.extend_from_slice(&rest[..run]);
        if bytes.len() < cap && run == rest.len() {
            self.open.push((offset, after, bytes));
        } else {
            self.keep(offset, after, &bytes);
        }
    }

    /// Ends the runs still open (the file ended).
    fn close(&mut self) {
        for (offset, after, bytes) in std::mem::take(&mut self.open) {
            self.keep(offset, after, &bytes);
        }
        self.hits.sort_by_key(|h| h.offset);
    }

    fn keep(&mut self, offset: u64, after: bool, run: &[u8]) {
        // A name ends in `.so` or `.so.N…` and is at least `libX.so`.
        if run.len() < 7 || memchr::memmem::find(&run[4..], b".so").is_none() {
            return;
        }
        if self.hits.len() >= MAX_NAME_HITS || self.arena.len() + run.len() > MAX_NAME_BYTES {
            return;
        }
        use std::hash::BuildHasher;
        let count = self.per_name.entry(self.hasher.hash_one(run)).or_insert(0);
        if *count >= MAX_HITS_PER_NAME {
            return;
        }
        *count += 1;
        self.hits.push(Hit {
            offset,
            at: self.arena.len() as u32,
            len: run.len() as u16,
            after_name_char: after,
        });
        self.arena.extend_from_slice(run);
    }

    /// The library names a scan of the bytes `range` alone would find, with
    /// their offsets, in file order.
    pub(super) fn in_range(&self, range: Range<u64>) -> Vec<(u64, String)> {
        let first = self.hits.partition_point(|h| h.offset < range.start);
        let mut out = Vec::new();
        for h in &self.hits[first..] {
            if h.offset.saturating_add(3) > range.end {
                break;
            }
            if h.offset > range.start && h.after_name_char {
                continue;
            }
            let room = (range.end - h.offset).min(h.len as u64) as usize;
            let run = &self.arena[h.at as usize..h.at as usize + room];
            if run.len() > MAX_SONAME {
                continue;
            }
            let mut token = run;
            while let [rest @ .., b'.'] = token {
                token = rest;
            }
            if is_soname(token) {
                out.push((h.offset, String::from_utf8_lossy(token).into_owned()));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use super::super::tests::{build, h, need, run, section_range, synth_elf};
    use super::super::{ElfHold, sonames_in};
    use super::*;

    /// The layout of `data` streamed in `chunk`-byte pieces, and the most
    /// the stream held at any time.
    fn streamed(data: &[u8], chunk: usize) -> (Result<ElfLayout, ElfError>, usize) {
        let mut s = ElfStream::new(data.len() as u64);
        let mut most = 0;
        for c in data.chunks(chunk) {
            s.feed(c);
            most = most.max(s.held());
        }
        (s.finish(), most)
    }

    /// Streaming gives exactly what parsing the whole file gives, at every
    /// chunk size, within the memory bound.
    fn same_as_whole(data: &[u8], what: &str) -> Result<ElfLayout, ElfError> {
        let whole = ElfLayout::parse(data);
        let sizes: &[usize] = if data.len() < 256 << 10 {
            &[1, 2, 3, 7, 64, 4095, 65536, usize::MAX]
        } else {
            &[65536, 1 << 20]
        };
        for &chunk in sizes {
            let (got, most) = streamed(data, chunk);
            assert_eq!(got, whole, "{what}, chunks of {chunk}");
            assert!(most <= MAX_HELD, "{what}: held {most}");
        }
        whole
    }

    /// Offsets of the `.dynstr` and `.dynamic` sections.
    fn dynstr_and_dynamic(data: &[u8]) -> (u64, u64) {
        let at = |name| section_range(data, name).unwrap().start;
        (at(".dynstr"), at(".dynamic"))
    }

    #[test]
    fn gcc_files_stream_as_they_parse() {
        let b = build();
        for (file, what) in [(&b.prog, "prog"), (&b.lib, "lib"), (&b.debug, "debug")] {
            let data = std::fs::read(file).unwrap();
            let l = same_as_whole(&data, what).unwrap();
            if what == "prog" {
                // Holds of every kind classify alike too.
                assert_eq!(l.interpreter(), Some(b.interp.as_str()));
                assert_eq!(l.runpath().len(), 3);
                assert_eq!(l.dlopen_candidates(), ["libzstd.so.1"]);
            }
        }
    }

    /// gcc alone puts `.dynstr` before `.dynamic` (it went past before the
    /// dynamic table named it: kept from the prefix); patchelf, making room
    /// for a longer run path, moves it after (kept as it streams by).
    #[test]
    fn runpath_before_and_after_the_dynamic_section() {
        need("gcc");
        need("patchelf");
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("lib.c"), "int demo(void) { return 1; }\n").unwrap();
        std::fs::write(
            d.join("main.c"),
            format!(
                "extern int demo(void);\nconst char *p = \"/nix/store/{}-x libfoo.so.2\";\nint main(void) {{ return demo() + *p; }}\n",
                h('r')
            ),
        )
        .unwrap();
        run(Command::new("gcc")
            .args(["-shared", "-fPIC", "lib.c", "-o", "libdemo.so"])
            .current_dir(d));
        let rp = format!("-Wl,-rpath,/nix/store/{}-a/lib", h('0'));
        run(Command::new("gcc")
            .args(["main.c", "-L.", "-ldemo", &rp, "-o", "before"])
            .current_dir(d));
        std::fs::copy(d.join("before"), d.join("after")).unwrap();
        std::fs::copy(d.join("libdemo.so"), d.join("libafter.so")).unwrap();
        let long = format!(
            "/nix/store/{}-b/lib:/nix/store/{}-c/lib:$ORIGIN/../lib",
            h('1'),
            h('2')
        );
        for f in ["after", "libafter.so"] {
            run(Command::new("patchelf")
                .args(["--set-rpath", &long, f])
                .current_dir(d));
        }

        let before = std::fs::read(d.join("before")).unwrap();
        let (dynstr, dynamic) = dynstr_and_dynamic(&before);
        assert!(dynstr < dynamic, "gcc's layout: {dynstr} {dynamic}");
        let l = same_as_whole(&before, "before").unwrap();
        assert_eq!(l.runpath()[0].dir, format!("/nix/store/{}-a/lib", h('0')));
        assert_eq!(l.needed(), ["libdemo.so", "libc.so.6"]);
        assert_eq!(l.dlopen_candidates(), ["libfoo.so.2"]);

        for f in ["after", "libafter.so"] {
            let data = std::fs::read(d.join(f)).unwrap();
            let (dynstr, dynamic) = dynstr_and_dynamic(&data);
            assert!(
                dynstr > dynamic,
                "{f}: patchelf's layout: {dynstr} {dynamic}"
            );
            let l = same_as_whole(&data, f).unwrap();
            let dirs: Vec<&str> = l.runpath().iter().map(|e| e.dir.as_str()).collect();
            assert_eq!(dirs.join(":"), long, "{f}");
            let at = memchr::memmem::find(&data, h('2').as_bytes()).unwrap() as u64;
            assert_eq!(l.classify(at), ElfHold::Runpath { entry: 1 }, "{f}");
        }
    }

    #[test]
    fn stripped_file() {
        need("strip");
        let b = build();
        let stripped = b.prog.with_file_name("prog.stripped");
        run(Command::new("strip")
            .arg("--strip-all")
            .arg(&b.prog)
            .arg("-o")
            .arg(&stripped));
        let data = std::fs::read(&stripped).unwrap();
        assert!(section_range(&data, ".symtab").is_none(), "stripped");
        let l = same_as_whole(&data, "stripped").unwrap();
        assert_eq!(l.interpreter(), Some(b.interp.as_str()));
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
                "extern int demo(void);\nconst char *p = \"/nix/store/{}-x libbar.so.1\";\nint start(void) {{ return demo() + *p; }}\n",
                h('r')
            ),
        )
        .unwrap();
        run(Command::new("gcc")
            .args(["-m32", "-shared", "-fPIC", "-nostdlib", "lib.c"])
            .args(["-o", "libdemo32.so"])
            .current_dir(d));
        run(Command::new("gcc")
            .args([
                "-m32",
                "-pie",
                "-fPIE",
                "-nostdlib",
                "-e",
                "start",
                "main.c",
            ])
            .args(["-L.", "-ldemo32", "-o", "prog32"])
            .current_dir(d));
        let rp = format!("/nix/store/{}-a/lib:$ORIGIN", h('0'));
        run(Command::new("patchelf")
            .args(["--set-rpath", &rp, "prog32"])
            .current_dir(d));
        let data = std::fs::read(d.join("prog32")).unwrap();
        assert_eq!(data[4], 1, "expected ELFCLASS32");
        let l = same_as_whole(&data, "prog32").unwrap();
        assert_eq!(l.needed(), ["libdemo32.so"]);
        assert_eq!(l.runpath().len(), 2);
        assert_eq!(l.dlopen_candidates(), ["libbar.so.1"]);
    }

    /// Every truncation of a real file streams to the same answer as the
    /// truncated file parsed whole (mostly an error, never a panic).
    #[test]
    fn truncated_files() {
        let b = build();
        let data = std::fs::read(&b.prog).unwrap();
        let step = (data.len() / 400).max(1);
        for len in (0..data.len()).step_by(step) {
            let part = &data[..len];
            let whole = ElfLayout::parse(part);
            for chunk in [5, 4096] {
                assert_eq!(
                    streamed(part, chunk).0,
                    whole,
                    "{len} bytes, chunks of {chunk}"
                );
            }
        }
    }

    fn le(data: &mut [u8], at: usize, v: u64, size: usize) {
        data[at..at + size].copy_from_slice(&v.to_le_bytes()[..size]);
    }

    /// Absurd offsets and counts in the headers: a clear error, no panic,
    /// and nothing held in proportion to what the headers claim.
    #[test]
    fn hostile_header_fields() {
        let good = synth_elf(true, false);
        let shoff = u64::from_le_bytes(good[40..48].try_into().unwrap()) as usize;
        // (what, offset in the file, value, size)
        let cases: [(&str, usize, u64, usize); 9] = [
            ("e_phoff past the end", 32, u64::MAX - 8, 8),
            ("e_phnum at its largest", 56, 0xffff, 2),
            ("e_shoff past the end", 40, 1 << 62, 8),
            ("e_shnum at its largest", 60, 0xffff, 2),
            ("e_shnum 0: section 0 claims 2^60 sections", 60, 0, 2),
            ("e_shstrndx out of range", 62, 0xfffe, 2),
            (
                "PT_DYNAMIC's size at its largest",
                64 + 2 * 56 + 32,
                u64::MAX,
                8,
            ),
            ("PT_INTERP's offset past the end", 64 + 8, 1 << 40, 8),
            ("section 1's offset wraps", shoff + 64 + 24, u64::MAX - 2, 8),
        ];
        let mut errors = 0;
        for (what, at, v, size) in cases {
            let mut data = good.clone();
            le(&mut data, at, v, size);
            if what.starts_with("e_shnum 0") {
                // Section 0's sh_size.
                le(&mut data, shoff + 32, 1 << 60, 8);
            }
            let (got, most) = streamed(&data, 61);
            assert!(most < 64 << 10, "{what}: held {most} bytes");
            // The whole-file parse's answer: mostly a clear error (e_phnum
            // 0xffff is PN_XNUM, a count section 0 gives: here none).
            assert_eq!(got, ElfLayout::parse(&data), "{what}");
            if let Err(e) = got {
                assert!(e.to_string().starts_with("malformed ELF"), "{what}: {e}");
                errors += 1;
            }
        }
        assert!(errors >= 7, "{errors}");
        // Dynamic strings named at absurd offsets, and a dynamic table of
        // nothing but DT_NEEDED entries.
        let dynamic = section_range(&good, ".dynamic").unwrap();
        let mut data = good.clone();
        le(&mut data, dynamic.start as usize + 8, u64::MAX - 1, 8);
        let (got, _) = streamed(&data, 4096);
        assert!(matches!(got, Err(ElfError::Malformed(_))), "{got:?}");
        let mut data = good.clone();
        for e in (dynamic.start..dynamic.end - 16).step_by(16) {
            le(&mut data, e as usize, elf::DT_NEEDED.0 as u64, 8);
            le(&mut data, e as usize + 8, 1, 8);
        }
        assert_eq!(streamed(&data, 3).0, ElfLayout::parse(&data));
        // Garbage after the magic.
        let mut garbage = b"\x7fELF\x02\x01\x01".to_vec();
        garbage.extend((0..5000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
        let (got, most) = streamed(&garbage, 100);
        assert!(got.is_err() && most < 64 << 10);
        assert_eq!(streamed(b"\x7fEL", 1).0, Err(ElfError::NotElf));
        assert_eq!(streamed(b"", 1).0, Err(ElfError::NotElf));
    }

    /// A library larger than everything the stream keeps: the same layout,
    /// with at most the prefix and the captures held; and a dynamic table
    /// that names strings from the middle of it, long gone by then, is a
    /// clear error rather than a guess.
    #[test]
    fn large_file_bounded_and_what_is_not_kept() {
        need("gcc");
        need("patchelf");
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(
            d.join("big.c"),
            format!(
                "const char big[24 << 20] = {{1}};\nconst char *p = \"/nix/store/{}-x libzz.so.3\";\nint f(void) {{ return big[7] + *p; }}\n",
                h('r')
            ),
        )
        .unwrap();
        run(Command::new("gcc")
            .args(["-shared", "-fPIC", "-g", "-Wl,-soname,libbig.so.1", "big.c"])
            .args(["-o", "libbig.so"])
            .current_dir(d));
        std::fs::copy(d.join("libbig.so"), d.join("libbig2.so")).unwrap();
        let rp = format!("/nix/store/{}-a/lib:/nix/store/{}-b/lib", h('0'), h('1'));
        run(Command::new("patchelf")
            .args(["--set-rpath", &rp, "libbig2.so"])
            .current_dir(d));
        for f in ["libbig.so", "libbig2.so"] {
            let data = std::fs::read(d.join(f)).unwrap();
            assert!(data.len() > 24 << 20);
            let (dynstr, dynamic) = dynstr_and_dynamic(&data);
            assert!(dynamic > PREFIX as u64, "{f}: .dynamic at {dynamic}");
            let l = same_as_whole(&data, f).unwrap();
            assert_eq!(l.dlopen_candidates(), ["libzz.so.3"], "{f}");
            let (_, most) = streamed(&data, 65536);
            assert!(
                most < PREFIX + (2 << 20),
                "{f}: held {most} bytes of {} (dynstr at {dynstr})",
                data.len()
            );
        }
        // BOLT's layout: the program headers rewritten at the end, long
        // after the dynamic table went by (kept around its DT_SYMENT).
        let mut data = std::fs::read(d.join("libbig.so")).unwrap();
        let phoff = u64::from_le_bytes(data[32..40].try_into().unwrap()) as usize;
        let phnum = u16::from_le_bytes(data[56..58].try_into().unwrap()) as usize;
        let phdrs = data[phoff..phoff + phnum * 56].to_vec();
        data.resize(data.len().next_multiple_of(8) + (2 << 20), 0);
        let at = data.len() as u64;
        data.extend_from_slice(&phdrs);
        data[32..40].copy_from_slice(&at.to_le_bytes());
        let (_, dynamic) = dynstr_and_dynamic(&data);
        assert!(dynamic > PREFIX as u64 && at - dynamic > LOOKBEHIND as u64);
        let l = same_as_whole(&data, "program headers at the end").unwrap();
        assert!(l.needed().is_empty() && l.interpreter().is_none());
        let (got, _) = streamed(&data, 65536);
        assert_eq!(got.unwrap().dlopen_candidates(), ["libzz.so.3"]);

        // DT_STRTAB moved into the middle of `big` (zeros: empty names
        // for the whole-file parse).
        let mut data = std::fs::read(d.join("libbig.so")).unwrap();
        let dynamic = section_range(&data, ".dynamic").unwrap();
        let rodata = section_range(&data, ".rodata").unwrap();
        let strtab = (dynamic.start..dynamic.end)
            .step_by(16)
            .find(|&i| data[i as usize..i as usize + 8] == elf::DT_STRTAB.0.to_le_bytes())
            .unwrap() as usize;
        let vaddr = u64::from_le_bytes(data[strtab + 8..strtab + 16].try_into().unwrap());
        let dynstr = section_range(&data, ".dynstr").unwrap();
        let moved = vaddr + (rodata.start - dynstr.start) + (12 << 20);
        data[strtab + 8..strtab + 16].copy_from_slice(&moved.to_le_bytes());
        assert!(ElfLayout::parse(&data).is_ok());
        let (got, _) = streamed(&data, 65536);
        assert!(matches!(got, Err(ElfError::NotKept(_))), "{got:?}");
    }

    /// Library names found while streaming, cut to a range, are exactly the
    /// names a scan of that range alone finds, whatever the chunks.
    #[test]
    fn soname_hits_match_a_scan_of_each_range() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let mut data = Vec::new();
        while data.len() < 30_000 {
            match next(6) {
                0 => data.push(0),
                1 => data.push(b"/x.-_9"[next(6) as usize]),
                _ => {
                    data.extend_from_slice(b"lib");
                    for _ in 0..next(6) {
                        data.push(b"abcdefgh-_+2"[next(12) as usize]);
                    }
                    data.extend_from_slice(b".so");
                    for _ in 0..next(3) {
                        data.push(b'.');
                        data.extend_from_slice(next(100).to_string().as_bytes());
                    }
                    if next(4) == 0 {
                        data.push(b'.');
                    }
                }
            }
        }
        data.extend(std::iter::repeat_n(b'a', 300));
        data.extend_from_slice(b"libtoolong.so\0lib");
        let ranges: Vec<Range<usize>> = (0..200)
            .map(|_| {
                let a = next(data.len() as u64) as usize;
                a..(a + next(3000) as usize).min(data.len())
            })
            .chain(std::iter::once(0..data.len()))
            .collect();
        for chunk in [1, 2, 3, 4, 255, 256, 257, 4096, usize::MAX] {
            let mut hits = SonameHits::default();
            let mut at = 0u64;
            for c in data.chunks(chunk.min(data.len())) {
                hits.feed(at, c);
                at += c.len() as u64;
            }
            hits.close();
            for r in &ranges {
                let want: Vec<(u64, String)> = sonames_in(&data[r.clone()], 0, r.len())
                    .into_iter()
                    .map(|(p, n)| ((r.start + p) as u64, n))
                    .collect();
                let got = hits.in_range(r.start as u64..r.end as u64);
                assert_eq!(got, want, "chunks of {chunk}, range {r:?}");
            }
        }
    }

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn system_binary() {
        let data = std::fs::read(Path::new("/usr/bin/ls")).unwrap();
        same_as_whole(&data, "ls").unwrap();
    }
}
