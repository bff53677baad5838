//! Finding store-path hashes in bytes, the way Nix registers references.
//!
//! Nix's `RefScanSink` (libstore/references.cc) looks at each 32-byte window
//! right to left: the first byte outside the nix-base32 alphabet lets it skip
//! past that byte, so binary data is crossed 32 bytes at a time; only windows
//! made entirely of base-32 characters are looked up in the hash set. A
//! multi-pattern automaton (Aho–Corasick) would have to track thousands of
//! patterns at every byte; this needs one table load per skipped window.
//!
//! The finder is fed chunks of a stream and keeps a small carry-over so
//! that a hash straddling two chunks is found once, at its true offset.

use std::collections::HashMap;

use nix_heft_format::nixbase32::IS_BASE32;
use nix_heft_format::store_path::HASH_LEN;
use nix_heft_types::evidence::POINTED_MAX;

/// Bytes kept from the previous chunk: enough for a straddling hash.
const CARRY: usize = HASH_LEN - 1;
/// Printable context kept on each side of a hit.
const CONTEXT: usize = 40;

/// One occurrence of a wanted hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// Which wanted hash (its value in the map given to the finder).
    pub target: u32,
    /// Byte offset of the hash's first character in the stream.
    pub offset: u64,
    /// A short printable excerpt around it (non-printable bytes as `.`).
    pub context: String,
    /// The bytes right after the hash that can be part of a path
    /// (`-rocblas-5.7.1/lib/librocblas.so`), up to [`POINTED_MAX`]; they
    /// say which file of the referenced path the hold points into.
    pub pointed: Vec<u8>,
}

/// Whether `b` can be part of a path as programs and scripts write them:
/// what a store path name allows, plus `/` and the bytes of non-ASCII names.
pub fn is_path_byte(b: u8) -> bool {
    PATH_BYTE[b as usize]
}

/// [`is_path_byte`] as a table: it runs on every byte around each `/` of
/// every ELF file, where a search through the punctuation list per byte
/// cost as much as the hash scan itself.
static PATH_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'.' | b'_' | b'+' | b'-' | b'/' | b'=' | b'?' | b'@' | b',' | b'~' | b'%'
            )
            || b >= 0x80;
        i += 1;
    }
    t
};

/// Appends to `pointed` the path bytes at the start of `bytes`; true when
/// it ended (a non-path byte, or [`POINTED_MAX`] reached) within `bytes`.
fn extend_pointed(pointed: &mut Vec<u8>, bytes: &[u8]) -> bool {
    let room = POINTED_MAX - pointed.len();
    let run = bytes
        .iter()
        .take(room)
        .position(|&b| !is_path_byte(b))
        .unwrap_or(bytes.len().min(room));
    pointed.extend_from_slice(&bytes[..run]);
    run < bytes.len() || pointed.len() == POINTED_MAX
}

/// Streaming hash finder over one file's bytes.
///
/// Chunks are scanned where they lie, without copying; only the windows
/// that start in the last 31 bytes of one chunk and end in the next are
/// scanned in a small side buffer.
pub struct HashFinder<'a> {
    wanted: &'a HashMap<[u8; HASH_LEN], u32>,
    /// The last bytes seen (at most `CARRY`), ending at `seen`.
    tail: Vec<u8>,
    /// Scratch for windows across a chunk boundary.
    tmp: Vec<u8>,
    /// Bytes fed so far.
    seen: u64,
    /// Window starts below this offset have been tried.
    tried: u64,
    /// Indices (into the caller's hit list) of hits whose `pointed` bytes
    /// may continue into the next chunk.
    pending: Vec<usize>,
}

impl<'a> HashFinder<'a> {
    /// A finder of the hashes in `wanted`.
    pub fn new(wanted: &'a HashMap<[u8; HASH_LEN], u32>) -> Self {
        HashFinder {
            wanted,
            tail: Vec::new(),
            tmp: Vec::new(),
            seen: 0,
            tried: 0,
            pending: Vec::new(),
        }
    }

    /// Forgets the hits whose `pointed` bytes would be completed by the
    /// next chunk: for a caller that clears its hit list after each chunk
    /// (it wants only which hashes occur, not what follows them).
    pub fn forget_pending(&mut self) {
        self.pending.clear();
    }

    /// Scans the next chunk of the stream, appending hits to `out`. Give
    /// the same `out` to every call for one stream: a hit's `pointed` bytes
    /// are completed in place when they run on into the next chunk.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Hit>) {
        let chunk_start = self.seen;
        self.seen += chunk.len() as u64;
        if self.wanted.is_empty() || chunk.is_empty() {
            return;
        }
        let first_new = out.len();
        let mut untried: Option<u64> = None;
        if self.tried < chunk_start {
            // Windows that start in the tail: tail + the chunk's first bytes.
            let tmp_base = chunk_start - self.tail.len() as u64;
            self.tmp.clear();
            self.tmp.extend_from_slice(&self.tail);
            self.tmp
                .extend_from_slice(&chunk[..chunk.len().min(HASH_LEN - 1)]);
            let from = (self.tried - tmp_base) as usize;
            let tmp = &self.tmp;
            let end = search(tmp, from, self.tail.len(), self.wanted, |pos, target| {
                out.push(Hit {
                    target,
                    offset: tmp_base + pos as u64,
                    context: context(tmp, pos),
                    pointed: Vec::new(),
                });
            });
            if end < self.tail.len() {
                untried = Some(tmp_base + end as u64);
            }
        }
        let end = search(chunk, 0, usize::MAX, self.wanted, |pos, target| {
            out.push(Hit {
                target,
                offset: chunk_start + pos as u64,
                context: context(chunk, pos),
                pointed: Vec::new(),
            });
        });
        self.tried = untried.unwrap_or(chunk_start + end as u64);
        // What follows each new or unfinished hit's hash, from this chunk.
        self.pending.extend(first_new..out.len());
        self.pending.retain(|&i| {
            let h = &mut out[i];
            // A hash always ends in this chunk or before its end, never
            // before its start (earlier windows were tried with the
            // previous chunk), so `next` falls inside or at the end.
            let next = h.offset + HASH_LEN as u64 + h.pointed.len() as u64;
            let at = next.saturating_sub(chunk_start) as usize;
            !extend_pointed(&mut h.pointed, &chunk[at.min(chunk.len())..])
        });
        if chunk.len() >= CARRY {
            self.tail.clear();
            self.tail.extend_from_slice(&chunk[chunk.len() - CARRY..]);
        } else {
            self.tail.extend_from_slice(chunk);
            let excess = self.tail.len().saturating_sub(CARRY);
            self.tail.drain(..excess);
        }
    }
}

/// Tries every window start from `from` below `max_start`; returns the
/// first start not tried.
fn search(
    s: &[u8],
    from: usize,
    max_start: usize,
    wanted: &HashMap<[u8; HASH_LEN], u32>,
    mut hit: impl FnMut(usize, u32),
) -> usize {
    let mut i = from;
    'outer: while i + HASH_LEN <= s.len() && i < max_start {
        let mut j = HASH_LEN;
        while j > 0 {
            j -= 1;
            if !IS_BASE32[s[i + j] as usize] {
                i += j + 1;
                continue 'outer;
            }
        }
        let window: &[u8; HASH_LEN] = s[i..i + HASH_LEN].try_into().expect("window length");
        if let Some(&t) = wanted.get(window) {
            hit(i, t);
        }
        i += 1;
    }
    i
}

/// Finds the hashes in a whole byte string at once (file names, symlink
/// targets).
pub fn find_all(s: &[u8], wanted: &HashMap<[u8; HASH_LEN], u32>) -> Vec<Hit> {
    let mut out = Vec::new();
    search(s, 0, usize::MAX, wanted, |pos, target| {
        let mut pointed = Vec::new();
        extend_pointed(&mut pointed, &s[pos + HASH_LEN..]);
        out.push(Hit {
            target,
            offset: pos as u64,
            context: context(s, pos),
            pointed,
        })
    });
    out
}

/// The printable bytes around the hash at `pos`, within its line: an
/// excerpt of a text file's line 2 starts on line 2 (a newline never
/// occurs in a hash, so the line is the one the hash is on).
fn context(buf: &[u8], pos: usize) -> String {
    let mut lo = pos.saturating_sub(CONTEXT);
    if let Some(nl) = memchr::memrchr(b'\n', &buf[lo..pos]) {
        lo += nl + 1;
    }
    let end = (pos + HASH_LEN).min(buf.len());
    let mut hi = (pos + HASH_LEN + CONTEXT).min(buf.len());
    if let Some(nl) = memchr::memchr(b'\n', &buf[end..hi]) {
        hi = end + nl;
    }
    buf[lo..hi]
        .iter()
        .map(|&b| {
            if (0x20..0x7f).contains(&b) {
                b as char
            } else {
                '.'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted(hs: &[&str]) -> HashMap<[u8; HASH_LEN], u32> {
        hs.iter()
            .enumerate()
            .map(|(i, h)| (h.as_bytes().try_into().unwrap(), i as u32))
            .collect()
    }

    const A: &str = "02hmm3h249gbm141s547nrgi1r420ji4";
    const B: &str = "ql3g6qnarjnqcm4p102iqqwfm5fyrmnw";

    #[test]
    fn an_excerpt_stays_on_its_line() {
        let w = wanted(&[A]);
        let text =
            format!("prefix=/nix/store/{B}-x\nincludedir=/nix/store/{A}-dev/include\nnext\n");
        let hits = find_all(text.as_bytes(), &w);
        assert_eq!(hits.len(), 1);
        assert_eq!(
            hits[0].context,
            format!("includedir=/nix/store/{A}-dev/include")
        );
        // A line longer than the excerpt is cut by length alone.
        let long = format!("{}{A}{}", "x".repeat(100), "y".repeat(100));
        let hits = find_all(long.as_bytes(), &w);
        assert_eq!(hits[0].context.len(), CONTEXT + HASH_LEN + CONTEXT);
    }

    #[test]
    fn finds_every_occurrence_at_every_split() {
        let mut data = vec![0u8; 300];
        data.extend_from_slice(format!("/nix/store/{A}-x\0junk{B}{A}").as_bytes());
        data.extend(std::iter::repeat_n(b'z', 50)); // base-32 filler
        let expect: Vec<(u32, u64)> = vec![(0, 311), (1, 350), (0, 382)];
        let w = wanted(&[A, B]);
        for chunk in [1, 7, 31, 32, 33, 64, 1000] {
            let mut sc = HashFinder::new(&w);
            let mut out = Vec::new();
            for c in data.chunks(chunk) {
                sc.feed(c, &mut out);
            }
            let got: Vec<(u32, u64)> = out.iter().map(|h| (h.target, h.offset)).collect();
            assert_eq!(got, expect, "chunk size {chunk}");
        }
    }

    #[test]
    fn pointed_bytes_cross_chunks() {
        let mut data = b"\x01\x02".to_vec();
        data.extend_from_slice(
            format!("/nix/store/{A}-rocblas-5.7.1/lib/librocblas.so\0").as_bytes(),
        );
        data.extend_from_slice(format!("{B}-b:{A}").as_bytes());
        let w = wanted(&[A, B]);
        for chunk in [1, 2, 7, 31, 32, 33, 64, 1000] {
            let mut sc = HashFinder::new(&w);
            let mut out = Vec::new();
            for c in data.chunks(chunk) {
                sc.feed(c, &mut out);
            }
            let got: Vec<&[u8]> = out.iter().map(|h| h.pointed.as_slice()).collect();
            assert_eq!(
                got,
                [&b"-rocblas-5.7.1/lib/librocblas.so"[..], b"-b", b""],
                "chunk size {chunk}"
            );
        }
        let hits = find_all(format!("{A}-x/share/doc y").as_bytes(), &w);
        assert_eq!(hits[0].pointed, b"-x/share/doc");
    }

    #[test]
    fn unknown_hashes_and_context() {
        let w = wanted(&[A]);
        let hits = find_all(format!("{B} /nix/store/{A}-glibc/lib\n").as_bytes(), &w);
        assert_eq!(hits.len(), 1);
        // The excerpt ends with the line.
        assert!(
            hits[0]
                .context
                .ends_with(&format!(" /nix/store/{A}-glibc/lib"))
        );
    }

    /// Streaming at random chunk sizes finds exactly what a whole-buffer
    /// scan finds, on data dense in base-32 characters (the slow case).
    #[test]
    fn streaming_equals_whole_buffer_scan() {
        let w = wanted(&[A, B]);
        let mut rng = nix_heft_graph::testgraph::SplitMix(42);
        for round in 0..50 {
            let mut data = Vec::new();
            while data.len() < 5000 {
                match rng.below(10) {
                    0 => data.extend_from_slice(A.as_bytes()),
                    1 => data.extend_from_slice(B.as_bytes()),
                    2 => data.push(0),
                    _ => data.push(b"0123456789abcdfghijklmnpqrsvwxyz"[rng.below(32) as usize]),
                }
            }
            let whole: Vec<(u32, u64)> = find_all(&data, &w)
                .iter()
                .map(|h| (h.target, h.offset))
                .collect();
            let mut sc = HashFinder::new(&w);
            let mut out = Vec::new();
            let mut i = 0;
            while i < data.len() {
                let n = (1 + rng.below(if round % 2 == 0 { 40 } else { 700 }) as usize)
                    .min(data.len() - i);
                sc.feed(&data[i..i + n], &mut out);
                i += n;
            }
            let streamed: Vec<(u32, u64)> = out.iter().map(|h| (h.target, h.offset)).collect();
            assert_eq!(streamed, whole, "round {round}");
            assert!(whole.len() > 100);
        }
    }
}
