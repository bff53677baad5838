//! Decompression of NAR files as binary caches store them (`xz`, `zstd`,
//! `bzip2`, or none), kept apart from the NAR grammar so the reader parses
//! any byte stream and a new compression touches only this file.

use std::error::Error as StdError;
use std::fmt;
use std::io::{self, BufReader, Read};

use super::reader::NarError;

/// Most memory the xz decoder may use: 4× what `xz -9` needs, so any
/// stream Nix or xz writes decodes, and a forged header cannot make it
/// allocate gigabytes.
const XZ_MEMLIMIT: u64 = 256 << 20;

/// Large enough that per-call overhead vanishes next to decompression.
const BUF_SIZE: usize = 128 * 1024;

/// Wraps `r` in the decoder for `compression` as a narinfo names it: `xz`,
/// `zstd`, `bzip2`, or `none` / empty for an uncompressed NAR.
///
/// Concatenated streams (what parallel compressors write) are decoded as
/// one. Errors the decoder raises are reported as [`NarError::Decompress`]
/// by [`super::walk_nar`] and by [`NarError`]'s `From<io::Error>`; errors reading
/// `r` itself stay plain I/O errors.
pub fn decompress<'a>(
    compression: &str,
    r: impl Read + Send + 'a,
) -> Result<Box<dyn Read + Send + 'a>, NarError> {
    if matches!(compression, "" | "none") {
        return Ok(Box::new(r));
    }
    let raw = BufReader::with_capacity(BUF_SIZE, RawInput(r));
    let (name, decoder): (&'static str, Box<dyn Read + Send + 'a>) = match compression {
        "xz" => {
            // The .xz format only, with a memory limit: liblzma's default
            // decoder also takes legacy .lzma headers, whose dictionary size
            // a 41-byte input can set to 4 GiB (found by the decompress
            // fuzz target). Nix writes .xz; xz -9 needs 65 MiB to decode.
            let stream = liblzma::stream::Stream::new_stream_decoder(
                XZ_MEMLIMIT,
                liblzma::stream::CONCATENATED,
            )
            .map_err(|e| NarError::Io(io::Error::other(e)))?;
            (
                "xz",
                Box::new(liblzma::bufread::XzDecoder::new_stream(raw, stream)),
            )
        }
        "zstd" => (
            "zstd",
            Box::new(zstd::stream::read::Decoder::with_buffer(raw).map_err(NarError::Io)?),
        ),
        "bzip2" => ("bzip2", Box::new(bzip2::bufread::MultiBzDecoder::new(raw))),
        other => return Err(NarError::UnknownCompression(other.to_string())),
    };
    Ok(Box::new(Decoded {
        inner: decoder,
        compression: name,
    }))
}

/// The error of a read from the compressed input, marked so that
/// [`Decoded`] can tell it apart from the decoder's own errors.
#[derive(Debug)]
struct RawInputError(io::Error);

impl fmt::Display for RawInputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl StdError for RawInputError {}

struct RawInput<R>(R);

impl<R: Read> Read for RawInput<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0
            .read(buf)
            .map_err(|e| io::Error::new(e.kind(), RawInputError(e)))
    }
}

struct Decoded<D> {
    inner: D,
    compression: &'static str,
}

impl<D: Read> Read for Decoded<D> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            if e.get_ref().is_some_and(|i| i.is::<RawInputError>()) {
                let raw = e
                    .into_inner()
                    .and_then(|b| b.downcast::<RawInputError>().ok());
                return raw.expect("checked to hold a RawInputError").0;
            }
            if e.kind() == io::ErrorKind::Interrupted {
                return e;
            }
            NarError::Decompress {
                compression: self.compression.to_string(),
                source: e,
            }
            .into_io()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by `cargo fuzz run decompress` (fuzz/artifacts/decompress/oom-7657…):
    /// a legacy .lzma header claiming a 4 GiB dictionary made the decoder
    /// allocate it before reading a byte of data.
    #[test]
    fn fuzz_oom_lzma_alone_header_is_refused_without_allocating() {
        let input: &[u8] = &[
            0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0x00, 0x00, 0x1c, 0x31, 0x41, 0x59, 0x26, 0x53, 0x59, 0x63, 0xb4, 0x71, 0x8d, 0x00,
            0x00, 0x5a, 0x68, 0x39, 0x32, 0x41, 0x59, 0x26, 0x53, 0x5d, 0xd8, 0x42, 0x5a,
        ];
        let mut r = decompress("xz", input).unwrap();
        let mut out = Vec::new();
        assert!(r.read_to_end(&mut out).is_err(), "not an .xz stream");
    }

    /// Real `xz -9` output still decodes within the limit.
    #[test]
    fn xz_nine_decodes_within_the_limit() {
        let data = b"nix-archive-1".repeat(100_000);
        let mut enc = liblzma::write::XzEncoder::new(Vec::new(), 9);
        std::io::Write::write_all(&mut enc, &data).unwrap();
        let packed = enc.finish().unwrap();
        let mut out = Vec::new();
        decompress("xz", &packed[..])
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);
    }
}
