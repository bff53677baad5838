//! Decompression of NAR files as binary caches store them (`xz`, `zstd`,
//! `bzip2`, or none), kept apart from the NAR grammar so the reader parses
//! any byte stream and a new compression touches only this file.

use std::error::Error as StdError;
use std::fmt;
use std::io::{self, BufReader, Read};

use super::reader::NarError;

/// Large enough that per-call overhead vanishes next to decompression.
const BUF_SIZE: usize = 128 * 1024;

/// Wraps `r` in the decoder for `compression` as a narinfo names it: `xz`,
/// `zstd`, `bzip2`, or `none` / empty for an uncompressed NAR.
///
/// Concatenated streams (what parallel compressors write) are decoded as
/// one. Errors the decoder raises are reported as [`NarError::Decompress`]
/// by [`walk_nar`] and by [`NarError`]'s `From<io::Error>`; errors reading
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
        "xz" => (
            "xz",
            Box::new(xz2::bufread::XzDecoder::new_multi_decoder(raw)),
        ),
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
