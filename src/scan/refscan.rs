//! Finding store-path hashes in bytes, the way Nix registers references.
//!
//! Nix's `RefScanSink` (libstore/references.cc) looks at each 32-byte window
//! right to left: the first byte outside the nix-base32 alphabet lets it skip
//! past that byte, so binary data is crossed 32 bytes at a time; only windows
//! made entirely of base-32 characters are looked up in the hash set. A
//! multi-pattern automaton (Aho–Corasick) would have to track thousands of
//! patterns at every byte; this needs one table load per skipped window.
//!
//! The scanner is fed chunks of a stream and keeps a small carry-over so
//! that a hash straddling two chunks is found once, at its true offset.

use std::collections::HashMap;

use crate::store_path::{HASH_LEN, IS_BASE32};

/// Bytes kept from the previous chunk: enough for a straddling hash plus
/// some context before it.
const CARRY: usize = 96;
/// Printable context kept on each side of a hit.
const CONTEXT: usize = 40;

/// One occurrence of a wanted hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// Which wanted hash (its value in the map given to the scanner).
    pub target: u32,
    /// Byte offset of the hash's first character in the stream.
    pub offset: u64,
    /// A short printable excerpt around it (non-printable bytes as `.`).
    pub context: String,
}

/// Streaming scanner over one file's bytes.
pub struct RefScanner<'a> {
    wanted: &'a HashMap<[u8; HASH_LEN], u32>,
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    base: u64,
    /// Positions in `buf` below this were already tried as window starts.
    scanned_to: usize,
}

impl<'a> RefScanner<'a> {
    /// A scanner looking for the hashes in `wanted`.
    pub fn new(wanted: &'a HashMap<[u8; HASH_LEN], u32>) -> Self {
        RefScanner {
            wanted,
            buf: Vec::new(),
            base: 0,
            scanned_to: 0,
        }
    }

    /// Scans the next chunk of the stream, appending hits to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Hit>) {
        if self.wanted.is_empty() {
            self.base += chunk.len() as u64;
            return;
        }
        // Keep only the tail of the previous data, then append.
        if self.buf.len() > CARRY {
            let drop = self.buf.len() - CARRY;
            self.buf.drain(..drop);
            self.base += drop as u64;
            self.scanned_to = self.scanned_to.saturating_sub(drop);
        }
        self.buf.extend_from_slice(chunk);
        let end = search(&self.buf, self.scanned_to, self.wanted, |pos, target| {
            out.push(Hit {
                target,
                offset: self.base + pos as u64,
                context: context(&self.buf, pos),
            });
        });
        self.scanned_to = end;
    }
}

/// Tries every window start from `from`; returns the first start not yet
/// tried (a window that did not fit).
fn search(
    s: &[u8],
    from: usize,
    wanted: &HashMap<[u8; HASH_LEN], u32>,
    mut hit: impl FnMut(usize, u32),
) -> usize {
    let mut i = from;
    'outer: while i + HASH_LEN <= s.len() {
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

/// Scans a whole byte string at once (file names, symlink targets).
pub fn scan_bytes(s: &[u8], wanted: &HashMap<[u8; HASH_LEN], u32>) -> Vec<Hit> {
    let mut out = Vec::new();
    search(s, 0, wanted, |pos, target| {
        out.push(Hit {
            target,
            offset: pos as u64,
            context: context(s, pos),
        })
    });
    out
}

fn context(buf: &[u8], pos: usize) -> String {
    let lo = pos.saturating_sub(CONTEXT);
    let hi = (pos + HASH_LEN + CONTEXT).min(buf.len());
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
    fn finds_every_occurrence_at_every_split() {
        let mut data = vec![0u8; 300];
        data.extend_from_slice(format!("/nix/store/{A}-x\0junk{B}{A}").as_bytes());
        data.extend(std::iter::repeat_n(b'z', 50)); // base-32 filler
        let expect: Vec<(u32, u64)> = vec![(0, 311), (1, 350), (0, 382)];
        let w = wanted(&[A, B]);
        for chunk in [1, 7, 31, 32, 33, 64, 1000] {
            let mut sc = RefScanner::new(&w);
            let mut out = Vec::new();
            for c in data.chunks(chunk) {
                sc.feed(c, &mut out);
            }
            let got: Vec<(u32, u64)> = out.iter().map(|h| (h.target, h.offset)).collect();
            assert_eq!(got, expect, "chunk size {chunk}");
        }
    }

    #[test]
    fn unknown_hashes_and_context() {
        let w = wanted(&[A]);
        let hits = scan_bytes(format!("{B} /nix/store/{A}-glibc/lib\n").as_bytes(), &w);
        assert_eq!(hits.len(), 1);
        assert!(
            hits[0]
                .context
                .contains(&format!("/nix/store/{A}-glibc/lib."))
        );
    }
}
