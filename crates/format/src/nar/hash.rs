//! NAR hashes as Nix writes them (`NarHash` in narinfos, `hash` in the
//! database): `sha256:` followed by nix-base32 (52 characters) or base16
//! (64), or an SRI string `sha256-<base64>`; and a reader that hashes the
//! NAR as it streams by, so checking costs no second pass.

use std::io::Read;

use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::nixbase32;

/// A SHA-256 NAR hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NarHash(pub [u8; 32]);

impl NarHash {
    /// Parses `sha256:<nix32>`, `sha256:<base16>` or `sha256-<base64>`.
    /// Other algorithms are refused: Nix writes NAR hashes in SHA-256.
    pub fn parse(s: &str) -> Result<NarHash, String> {
        let bad = |why: &str| format!("NAR hash '{s}' {why}");
        let mut out = [0u8; 32];
        if let Some(b64) = s.strip_prefix("sha256-") {
            let v = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|_| bad("is not valid base64"))?;
            if v.len() != 32 {
                return Err(bad("does not hold 32 bytes"));
            }
            out.copy_from_slice(&v);
            return Ok(NarHash(out));
        }
        let Some(rest) = s.strip_prefix("sha256:") else {
            return Err(bad("is not a sha256 hash"));
        };
        match rest.len() {
            64 => {
                for (i, pair) in rest.as_bytes().chunks(2).enumerate() {
                    let hex = std::str::from_utf8(pair).map_err(|_| bad("is not base16"))?;
                    out[i] = u8::from_str_radix(hex, 16).map_err(|_| bad("is not base16"))?;
                }
            }
            52 => {
                out = nixbase32::decode(rest.as_bytes()).ok_or_else(|| bad("is not nix-base32"))?
            }
            _ => return Err(bad("has the wrong length")),
        }
        Ok(NarHash(out))
    }

    /// `sha256:<nix32>`, as `nix path-info` prints it.
    pub fn to_nix32(self) -> String {
        format!("sha256:{}", nixbase32::encode(&self.0))
    }
}

/// Hashes what is read through it, on a thread of its own: decompressing
/// and scanning one NAR already keep one core busy, and SHA-256 of the same
/// bytes would add half again to that if done in line. Chunks go over a
/// small bounded channel, so memory stays a few hundred KiB per NAR.
pub struct HashingReader<R: Read> {
    inner: R,
    tx: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    // Bytes read but not sent yet: the NAR reader reads headers 8 bytes at
    // a time, and one channel message per read would cost more than the
    // hash itself.
    pending: Vec<u8>,
    // Buffers the hashing thread is done with, to fill again: a fresh
    // 256 KiB allocation per chunk would be an mmap, page faults and an
    // munmap each time.
    free: std::sync::mpsc::Receiver<Vec<u8>>,
    eof: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// The far end of a [`HashingReader`]: the hash and the byte count, once
/// the reader is dropped.
pub struct HashHandle {
    thread: Option<std::thread::JoinHandle<(Sha256, u64)>>,
    eof: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// Chunks in flight to the hashing thread.
const IN_FLIGHT: usize = 8;

/// Bytes gathered before they go to the hashing thread.
const CHUNK: usize = 256 << 10;

impl HashHandle {
    /// The hash of every byte read, and how many there were. Call after
    /// the reader is dropped (the thread ends when it is).
    pub fn finish(mut self) -> (NarHash, u64) {
        let (h, n) = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_else(|| (Sha256::new(), 0));
        (NarHash(h.finalize().into()), n)
    }

    /// Whether the reader met the end of its input: only then is the hash
    /// that of the whole input.
    pub fn reached_end(&self) -> bool {
        self.eof.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl<R: Read> HashingReader<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> (HashingReader<R>, HashHandle) {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT);
        let (back, free) = std::sync::mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT + 1);
        let t = std::thread::spawn(move || {
            let mut h = Sha256::new();
            let mut n = 0u64;
            for mut chunk in rx {
                h.update(&chunk);
                n += chunk.len() as u64;
                chunk.clear();
                // The reader may be gone or have enough spares: then the
                // buffer is simply dropped.
                let _ = back.try_send(chunk);
            }
            (h, n)
        });
        let eof = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        (
            HashingReader {
                inner,
                tx: Some(tx),
                pending: Vec::with_capacity(CHUNK),
                free,
                eof: eof.clone(),
            },
            HashHandle {
                thread: Some(t),
                eof,
            },
        )
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() {
            self.eof.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        self.pending.extend_from_slice(&buf[..n]);
        if self.pending.len() >= CHUNK {
            self.send();
        }
        Ok(n)
    }
}

impl<R: Read> HashingReader<R> {
    fn send(&mut self) {
        let spare = self
            .free
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        let chunk = std::mem::replace(&mut self.pending, spare);
        if let Some(tx) = &self.tx
            && tx.send(chunk).is_err()
        {
            // The hashing thread is gone (it panicked): no hash to compare.
            self.tx = None;
        }
    }
}

impl<R: Read> Drop for HashingReader<R> {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            self.send();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_three_spellings_agree() {
        // `nix hash to-base16` / `to-sri` of one hash, as Nix prints them.
        let nix32 = "sha256:0n751fqccr8zb9rm5m14k38944v4mp5fr8b0ylcch78bqchxvdjm";
        let h = NarHash::parse(nix32).unwrap();
        assert_eq!(h.to_nix32(), nix32);
        let hex: String = h.0.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(NarHash::parse(&format!("sha256:{hex}")).unwrap(), h);
        let sri = format!(
            "sha256-{}",
            base64::engine::general_purpose::STANDARD.encode(h.0)
        );
        assert_eq!(NarHash::parse(&sri).unwrap(), h);
        for bad in ["md5:abc", "sha256:xyz", "sha256-!!", "sha256-AAAA"] {
            assert!(NarHash::parse(bad).is_err(), "{bad}");
        }
        assert!(
            NarHash::parse("sha256:zz751fqccr8zb9rm5m14k38944v4mp5fr8b0ylcch78bqchxvdjm").is_err()
        );
    }

    #[test]
    fn reader_hashes_what_passes() {
        let data = b"nix-archive-1 and more".repeat(1000);
        let (mut r, h) = HashingReader::new(&data[..]);
        std::io::copy(&mut r, &mut std::io::sink()).unwrap();
        drop(r);
        assert!(h.reached_end());
        let (got, n) = h.finish();
        assert_eq!(n, data.len() as u64);
        let want: [u8; 32] = Sha256::digest(&data).into();
        assert_eq!(got.0, want);
    }
}
