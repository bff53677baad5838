//! Streaming reader for NARs (Nix ARchives), the serialisation binary caches
//! store under `nar/*.nar[.xz|.zst|.bz2]`.
//!
//! Paths that exist only in a binary cache have no files on disk, so their
//! contents are scanned straight out of the (decompressed) NAR. Store paths
//! can hold multi-gigabyte files, hence everything here streams: file
//! contents are handed to the caller as a length-limited reader over the
//! archive, and memory stays bounded by the buffer sizes and the depth of the
//! tree, whatever the files' sizes.
//!
//! # Wire format
//!
//! As written and parsed by Nix (`libutil/archive.cc`). Every string,
//! token or name is
//!
//! ```text
//! str(s) = u64-le(len(s)) ++ s ++ zero bytes up to the next multiple of 8
//! ```
//!
//! and the archive is
//!
//! ```text
//! nar       = str("nix-archive-1") node
//! node      = str("(") str("type") body str(")")
//! body      = str("regular") [ str("executable") str("") ]
//!                 str("contents") u64-le(size) bytes(size) padding
//!           | str("symlink") str("target") str(target)
//!           | str("directory") { entry }
//! entry     = str("entry") str("(") str("name") str(name) str("node") node str(")")
//! ```
//!
//! Names are raw bytes, not necessarily UTF-8. Like Nix, the parser rejects
//! names that are empty, `.` or `..`, or contain `/` or NUL, and directories
//! whose entries are not strictly increasing in byte order (so there are no
//! duplicates either). Padding must be zero. Nothing may follow the root
//! node: a NAR file holds exactly one archive, and reading to the end also
//! makes a decompressor verify its stream's checksum.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};

use crate::relpath::push as push_name;

/// The longest file name accepted: Linux's `NAME_MAX`. Nix cannot restore
/// a NAR with a longer one, and a cap keeps a corrupt length field from
/// becoming a huge allocation.
pub const MAX_NAME_LEN: usize = 255;

/// The longest symlink target, and the longest path of an entry below the
/// store path: Linux's `PATH_MAX`. Capping the path also caps the depth of
/// a tree (every level adds at least two bytes), so a hostile NAR ten
/// thousand directories deep is refused before it costs memory.
pub const MAX_PATH_LEN: usize = 4096;

/// The longest syntax token read in full for an error message; longer
/// strings where a token belongs are reported by length only.
const MAX_TOKEN_LEN: u64 = 64;

const MAGIC: &str = "nix-archive-1";

/// Large enough that per-call overhead vanishes next to decompression.
const BUF_SIZE: usize = 128 * 1024;

/// Errors from decompressing or parsing a NAR.
#[derive(Debug, thiserror::Error)]
pub enum NarError {
    /// Reading the underlying file (or stream) failed.
    #[error("I/O error while reading NAR: {0}")]
    Io(#[source] io::Error),
    /// The decompressor rejected its input: the compressed file is cut short
    /// or damaged.
    #[error("{compression}-compressed NAR is truncated or corrupt: {source}")]
    Decompress {
        /// The compression method, as named in the narinfo.
        compression: String,
        /// The decompressor's own error.
        #[source]
        source: io::Error,
    },
    /// The NAR ends in the middle of the archive.
    #[error("truncated NAR: unexpected end of data at byte {at}")]
    UnexpectedEof {
        /// Offset in the uncompressed NAR, i.e. how many bytes it had.
        at: u64,
    },
    /// A syntax token is not the one the grammar requires here.
    #[error("bad NAR at byte {at}: expected {expected}, found {found}")]
    BadToken {
        /// What the grammar allows here, e.g. `"entry" or ")"`.
        expected: String,
        /// What was there (quoted and lossily decoded, or described by length).
        found: String,
        /// Offset of the token's length field in the uncompressed NAR.
        at: u64,
    },
    /// Padding after a string or file contents holds non-zero bytes.
    #[error("bad NAR at byte {at}: non-zero padding")]
    BadPadding {
        /// Offset of the padding in the uncompressed NAR.
        at: u64,
    },
    /// A directory entry's name is empty, `.`, `..`, or contains `/` or NUL.
    #[error("bad NAR: invalid file name {name:?} in directory '{path}'")]
    BadName {
        /// The name, lossily decoded.
        name: String,
        /// The directory holding it (`.` for the root), lossily decoded.
        path: String,
    },
    /// A directory entry does not sort strictly after its predecessor.
    #[error("bad NAR: directory entries out of order: '{path}' follows '{previous}'")]
    Unsorted {
        /// The offending entry's path, lossily decoded.
        path: String,
        /// The entry before it, lossily decoded.
        previous: String,
    },
    /// An entry whose path below the store path would pass
    /// [`MAX_PATH_LEN`] (which also bounds the depth of the tree).
    #[error(
        "bad NAR: a path below {path}… at depth {depth} is longer than the {max}-byte limit (PATH_MAX); Nix could not restore it"
    )]
    PathTooLong {
        /// The start of the path.
        path: String,
        /// The limit.
        max: usize,
        /// How many directories deep it is.
        depth: usize,
    },
    /// A name longer than [`MAX_NAME_LEN`] or a symlink target longer
    /// than [`MAX_PATH_LEN`].
    #[error("bad NAR at byte {at}: {what} of {len} bytes is longer than the {max}-byte limit")]
    TooLong {
        /// `"file name"` or `"symlink target"`.
        what: &'static str,
        /// The length field as read.
        len: u64,
        /// The limit.
        max: usize,
        /// Offset of the length field in the uncompressed NAR.
        at: u64,
    },
    /// Bytes follow the end of the archive.
    #[error("bad NAR: unexpected data after the end of the archive at byte {at}")]
    TrailingData {
        /// Size of the archive proper.
        at: u64,
    },
    /// The narinfo names a compression nix-heft cannot decode.
    #[error("unsupported NAR compression '{0}' (nix-heft reads xz, zstd, bzip2 and none)")]
    UnknownCompression(String),
    /// The visitor passed to [`walk_nar`] stopped the walk.
    #[error("{0}")]
    Visitor(String),
}

/// Lets visitors use `?` on errors from [`NarNode::Regular`]'s reader and
/// still get the precise variant (truncation, decompression) back: those
/// travel inside the `io::Error` and are unwrapped here.
impl From<io::Error> for NarError {
    fn from(e: io::Error) -> Self {
        if e.get_ref().is_some_and(|i| i.is::<NarError>()) {
            let inner = e.into_inner().and_then(|b| b.downcast::<NarError>().ok());
            return *inner.expect("checked to hold a NarError");
        }
        NarError::Io(e)
    }
}

impl NarError {
    pub(crate) fn into_io(self) -> io::Error {
        let kind = match &self {
            NarError::Io(e) | NarError::Decompress { source: e, .. } => e.kind(),
            NarError::UnexpectedEof { .. } => io::ErrorKind::UnexpectedEof,
            _ => io::ErrorKind::InvalidData,
        };
        io::Error::new(kind, self)
    }
}

/// One file system object of a NAR, as handed to [`walk_nar`]'s visitor.
pub enum NarNode<'a> {
    /// A directory; its entries follow as further visits, in name order.
    Directory,
    /// A regular file.
    Regular {
        /// Whether Nix marked it executable.
        executable: bool,
        /// Its size in bytes.
        size: u64,
        /// Its contents: exactly `size` bytes, then end of file. Whatever the
        /// visitor leaves unread is skipped. A read that fails (truncated or
        /// corrupt NAR) returns an `io::Error` that converts back into the
        /// precise [`NarError`].
        contents: &'a mut dyn BufRead,
    },
    /// A symbolic link.
    Symlink {
        /// Its target, as raw bytes.
        target: &'a [u8],
    },
}

impl fmt::Debug for NarNode<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NarNode::Directory => f.write_str("Directory"),
            NarNode::Regular {
                executable, size, ..
            } => f
                .debug_struct("Regular")
                .field("executable", executable)
                .field("size", size)
                .finish_non_exhaustive(),
            NarNode::Symlink { target } => f
                .debug_struct("Symlink")
                .field("target", &String::from_utf8_lossy(target))
                .finish(),
        }
    }
}

/// The callback [`walk_nar`] calls for each object: its path relative to
/// the NAR root, and the object.
pub type NarVisitor<'v> = dyn FnMut(&[u8], NarNode<'_>) -> Result<(), NarError> + 'v;

/// Parses the uncompressed NAR read from `reader`, calling `visit` once per
/// file system object in archive order (a directory before its entries,
/// entries sorted by name), and returns the number of NAR bytes read: the
/// NarSize a narinfo should state.
///
/// The visitor gets each object's path relative to the NAR root as raw
/// bytes: empty for the root itself, `a/b` below it. An error it returns
/// ends the walk and is returned as is ([`NarError::Visitor`] is there for
/// the visitor's own messages).
///
/// `reader` is buffered internally; wrap compressed input with
/// [`super::decompress`] first.
pub fn walk_nar<R: Read>(reader: R, visit: &mut NarVisitor<'_>) -> Result<u64, NarError> {
    Parser {
        r: BufReader::with_capacity(BUF_SIZE, reader),
        pos: 0,
        path: Vec::new(),
        buf: Vec::new(),
    }
    .walk(visit)
}

struct Parser<R> {
    r: BufReader<R>,
    /// Bytes of the NAR consumed so far.
    pos: u64,
    /// Path of the node being parsed.
    path: Vec<u8>,
    /// The last string read (name, target or token).
    buf: Vec<u8>,
}

/// An open directory: where its own path ends in `Parser::path`, and its
/// previous entry's name, for the ordering check.
struct OpenDir {
    path_len: usize,
    previous: Vec<u8>,
}

#[derive(PartialEq)]
enum Parsed {
    Leaf,
    Directory,
}

impl<R: Read> Parser<R> {
    /// Directories are kept on an explicit stack rather than the call
    /// stack, so a deeply nested (or malicious) NAR cannot overflow it.
    fn walk(mut self, visit: &mut NarVisitor<'_>) -> Result<u64, NarError> {
        self.expect(&[MAGIC])?;
        let mut open: Vec<OpenDir> = Vec::new();
        if self.node(visit)? == Parsed::Directory {
            open.push(OpenDir {
                path_len: 0,
                previous: Vec::new(),
            });
        }
        while let Some(dir) = open.last_mut() {
            if self.expect(&["entry", ")"])? == 1 {
                open.pop();
                if let Some(parent) = open.last() {
                    // The directory was an entry's node: close the entry.
                    self.expect(&[")"])?;
                    self.path.truncate(parent.path_len);
                }
                continue;
            }
            self.expect(&["("])?;
            self.expect(&["name"])?;
            self.string("file name", MAX_NAME_LEN)?;
            let name = &self.buf;
            if name.is_empty()
                || name == b"."
                || name == b".."
                || name.iter().any(|&b| b == b'/' || b == 0)
            {
                return Err(NarError::BadName {
                    name: String::from_utf8_lossy(name).into_owned(),
                    path: display_path(&self.path),
                });
            }
            let parent_len = dir.path_len;
            if !dir.previous.is_empty() && *name <= dir.previous {
                let mut previous = self.path.clone();
                push_name(&mut previous, &dir.previous);
                push_name(&mut self.path, name);
                return Err(NarError::Unsorted {
                    path: display_path(&self.path),
                    previous: display_path(&previous),
                });
            }
            dir.previous.clear();
            dir.previous.extend_from_slice(name);
            if self.path.len() + 1 + name.len() > MAX_PATH_LEN {
                return Err(NarError::PathTooLong {
                    path: display_path(&self.path[..self.path.len().min(200)]),
                    max: MAX_PATH_LEN,
                    depth: open.len(),
                });
            }
            push_name(&mut self.path, name);
            self.expect(&["node"])?;
            if self.node(visit)? == Parsed::Directory {
                open.push(OpenDir {
                    path_len: self.path.len(),
                    previous: Vec::new(),
                });
            } else {
                self.expect(&[")"])?;
                self.path.truncate(parent_len);
            }
        }
        if !self.fill()?.is_empty() {
            return Err(NarError::TrailingData { at: self.pos });
        }
        Ok(self.pos)
    }

    /// Parses a node up to its closing `)` if it is a file or symlink, or up
    /// to its first entry if it is a directory.
    fn node(&mut self, visit: &mut NarVisitor<'_>) -> Result<Parsed, NarError> {
        self.expect(&["("])?;
        self.expect(&["type"])?;
        match self.expect(&["regular", "symlink", "directory"])? {
            0 => {
                let executable = self.expect(&["executable", "contents"])? == 0;
                if executable {
                    self.expect(&[""])?;
                    self.expect(&["contents"])?;
                }
                let size = self.u64()?;
                let mut contents = Contents {
                    r: &mut self.r,
                    pos: &mut self.pos,
                    left: size,
                };
                visit(
                    &self.path,
                    NarNode::Regular {
                        executable,
                        size,
                        contents: &mut contents,
                    },
                )?;
                // Skips what the visitor left, without copying.
                loop {
                    match contents.fill_buf() {
                        Ok([]) => break,
                        Ok(b) => {
                            let n = b.len();
                            contents.consume(n);
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                self.padding(size)?;
                self.expect(&[")"])?;
                Ok(Parsed::Leaf)
            }
            1 => {
                self.expect(&["target"])?;
                self.string("symlink target", MAX_PATH_LEN)?;
                visit(&self.path, NarNode::Symlink { target: &self.buf })?;
                self.expect(&[")"])?;
                Ok(Parsed::Leaf)
            }
            _ => {
                visit(&self.path, NarNode::Directory)?;
                Ok(Parsed::Directory)
            }
        }
    }

    fn fill(&mut self) -> Result<&[u8], NarError> {
        loop {
            match self.r.fill_buf() {
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
        }
        // Returning fill_buf's slice from inside the loop trips the borrow
        // checker; after a successful fill the buffer is the same slice.
        Ok(self.r.buffer())
    }

    /// Like `Read::read_exact`, but reports truncation at the exact offset.
    fn read_exact(&mut self, mut out: &mut [u8]) -> Result<(), NarError> {
        while !out.is_empty() {
            let pos = self.pos;
            let avail = self.fill()?;
            if avail.is_empty() {
                return Err(NarError::UnexpectedEof { at: pos });
            }
            let n = avail.len().min(out.len());
            out[..n].copy_from_slice(&avail[..n]);
            self.r.consume(n);
            self.pos += n as u64;
            out = &mut out[n..];
        }
        Ok(())
    }

    fn u64(&mut self) -> Result<u64, NarError> {
        let mut b = [0u8; 8];
        self.read_exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn padding(&mut self, len: u64) -> Result<(), NarError> {
        let pad = ((8 - len % 8) % 8) as usize;
        let at = self.pos;
        let mut b = [0u8; 8];
        self.read_exact(&mut b[..pad])?;
        if b.iter().any(|&x| x != 0) {
            return Err(NarError::BadPadding { at });
        }
        Ok(())
    }

    /// Reads a string of at most `max` bytes into `self.buf`.
    fn string(&mut self, what: &'static str, max: usize) -> Result<(), NarError> {
        let at = self.pos;
        let len = self.u64()?;
        if len > max as u64 {
            return Err(NarError::TooLong { what, len, max, at });
        }
        self.read_body(len as usize)
    }

    fn read_body(&mut self, len: usize) -> Result<(), NarError> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.resize(len, 0);
        let r = self.read_exact(&mut buf);
        self.buf = buf;
        r?;
        self.padding(len as u64)
    }

    /// Reads a token that must be one of `allowed`; returns its index.
    fn expect(&mut self, allowed: &[&str]) -> Result<usize, NarError> {
        let at = self.pos;
        let len = self.u64()?;
        let bad = |found: String| NarError::BadToken {
            expected: allowed
                .iter()
                .map(|t| format!("{t:?}"))
                .collect::<Vec<_>>()
                .join(" or "),
            found,
            at,
        };
        if len > MAX_TOKEN_LEN {
            return Err(bad(format!("a {len}-byte string")));
        }
        self.read_body(len as usize)?;
        match allowed.iter().position(|t| t.as_bytes() == self.buf) {
            Some(i) => Ok(i),
            None => Err(bad(format!("{:?}", String::from_utf8_lossy(&self.buf)))),
        }
    }
}

/// The reader behind [`NarNode::Regular`]: the next `left` bytes of the
/// archive, read in place from the parser's buffer.
struct Contents<'p, R> {
    r: &'p mut BufReader<R>,
    pos: &'p mut u64,
    left: u64,
}

impl<R: Read> Read for Contents<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(out.len());
        out[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Contents<'_, R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.left == 0 {
            return Ok(&[]);
        }
        let at = *self.pos;
        let avail = self.r.fill_buf()?;
        if avail.is_empty() {
            return Err(NarError::UnexpectedEof { at }.into_io());
        }
        let n = avail
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        Ok(&avail[..n])
    }

    fn consume(&mut self, n: usize) {
        let n = n.min(usize::try_from(self.left).unwrap_or(usize::MAX));
        self.r.consume(n);
        self.left -= n as u64;
        *self.pos += n as u64;
    }
}

fn display_path(path: &[u8]) -> String {
    if path.is_empty() {
        ".".to_string()
    } else {
        String::from_utf8_lossy(path).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nar::decompress;
    use std::io::Write;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    use std::process::{Command, Stdio};

    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Seen {
        Dir,
        File { executable: bool, data: Vec<u8> },
        Link(Vec<u8>),
    }

    type Listing = Vec<(Vec<u8>, Seen)>;

    /// Pseudo-random bytes, so compressors cannot shrink the big file away.
    fn noise(len: usize, mut seed: u64) -> Vec<u8> {
        (0..len)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (seed >> 33) as u8
            })
            .collect()
    }

    fn write_file(path: &Path, data: &[u8], mode: u32) {
        std::fs::write(path, data).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A tree with every kind of object and the awkward cases: sizes on and
    /// off the 8-byte padding boundary, an empty file and directory, a
    /// non-UTF-8 name, dangling and relative symlinks.
    fn make_tree(root: &Path, big: bool) {
        use std::ffi::OsStr;
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::create_dir_all(root.join("lib/sub/deep")).unwrap();
        std::fs::create_dir_all(root.join("share/empty")).unwrap();
        write_file(&root.join("bin/tool"), b"#!/bin/sh\necho hi\n", 0o755);
        write_file(&root.join("bin/.hidden"), b"1234567", 0o644);
        write_file(&root.join("lib/sub/deep/eight"), b"12345678", 0o644);
        write_file(&root.join("lib/sub/nine"), b"123456789", 0o744);
        write_file(&root.join("lib/empty"), b"", 0o644);
        write_file(
            &root.join("lib").join(OsStr::from_bytes(b"n\xffame")),
            b"non-utf8 name",
            0o644,
        );
        std::os::unix::fs::symlink("../bin/tool", root.join("lib/tool-link")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/dangling", root.join("dangling")).unwrap();
        write_file(&root.join("README"), b"readme\n", 0o444);
        if big {
            write_file(
                &root.join("share/big"),
                &noise(3 * 1024 * 1024 + 5, 7),
                0o644,
            );
        }
    }

    /// What the tree on disk should look like through a NAR: depth first,
    /// entries in byte order, executable meaning the owner's x bit (as Nix
    /// decides it).
    fn disk_listing(path: &Path, rel: &[u8], out: &mut Listing) {
        let meta = std::fs::symlink_metadata(path).unwrap();
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(path).unwrap();
            out.push((
                rel.to_vec(),
                Seen::Link(target.as_os_str().as_bytes().to_vec()),
            ));
        } else if meta.is_file() {
            out.push((
                rel.to_vec(),
                Seen::File {
                    executable: meta.permissions().mode() & 0o100 != 0,
                    data: std::fs::read(path).unwrap(),
                },
            ));
        } else {
            out.push((rel.to_vec(), Seen::Dir));
            let mut names: Vec<Vec<u8>> = std::fs::read_dir(path)
                .unwrap()
                .map(|e| e.unwrap().file_name().as_bytes().to_vec())
                .collect();
            names.sort();
            for name in names {
                let mut child = rel.to_vec();
                push_name(&mut child, &name);
                disk_listing(&path.join(std::ffi::OsStr::from_bytes(&name)), &child, out);
            }
        }
    }

    fn nix_dump(path: &Path) -> Vec<u8> {
        let out = Command::new("nix-store")
            .arg("--dump")
            .arg(path)
            .output()
            .expect("nix-store must be installed to test the NAR reader");
        assert!(out.status.success(), "nix-store --dump failed: {out:?}");
        out.stdout
    }

    fn run_filter(cmd: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
        let mut child = Command::new(cmd)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"));
        let mut stdin = child.stdin.take().unwrap();
        let input = input.to_vec();
        let writer = std::thread::spawn(move || stdin.write_all(&input).unwrap());
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        assert!(out.status.success(), "{cmd} {args:?} failed");
        out.stdout
    }

    fn compress(compression: &str, data: &[u8]) -> Vec<u8> {
        match compression {
            "xz" => run_filter("xz", &["-c", "-3"], data),
            "zstd" => run_filter("zstd", &["-c", "-q"], data),
            "bzip2" => run_filter("bzip2", &["-c"], data),
            _ => data.to_vec(),
        }
    }

    /// Walks reading every file in full.
    fn listing(r: impl Read) -> Result<(Listing, u64), NarError> {
        let mut out = Vec::new();
        let n = walk_nar(r, &mut |path, node| {
            let seen = match node {
                NarNode::Directory => Seen::Dir,
                NarNode::Symlink { target } => Seen::Link(target.to_vec()),
                NarNode::Regular {
                    executable,
                    size,
                    contents,
                } => {
                    let mut data = Vec::new();
                    contents.read_to_end(&mut data)?;
                    assert_eq!(data.len() as u64, size, "size of {path:?}");
                    Seen::File { executable, data }
                }
            };
            out.push((path.to_vec(), seen));
            Ok(())
        })?;
        Ok((out, n))
    }

    /// Walks reading no file contents at all.
    fn paths_only(r: impl Read) -> Result<(Vec<Vec<u8>>, u64), NarError> {
        let mut out = Vec::new();
        let n = walk_nar(r, &mut |path, _| {
            out.push(path.to_vec());
            Ok(())
        })?;
        Ok((out, n))
    }

    use crate::nar::testsupport::{dir_nar, file_node, put};

    #[test]
    #[cfg_attr(not(feature = "nix-tests"), ignore = "runs Nix: scripts/test.sh")]
    fn walk_matches_the_tree_nix_dumped() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        make_tree(&root, true);
        let nar = nix_dump(&root);
        let mut expected = Vec::new();
        disk_listing(&root, b"", &mut expected);

        let (seen, consumed) = listing(&nar[..]).unwrap();
        assert_eq!(consumed, nar.len() as u64);
        assert_eq!(seen.len(), expected.len());
        for (s, e) in seen.iter().zip(&expected) {
            assert_eq!(s, e, "at {:?}", String::from_utf8_lossy(&e.0));
        }
        assert!(seen.iter().any(|(p, _)| p == b"lib/n\xffame"));
        assert!(seen.contains(&(
            b"bin/tool".to_vec(),
            Seen::File {
                executable: true,
                data: b"#!/bin/sh\necho hi\n".to_vec(),
            }
        )));
        assert!(seen.contains(&(
            b"lib/tool-link".to_vec(),
            Seen::Link(b"../bin/tool".to_vec())
        )));
        assert!(seen.contains(&(b"share/empty".to_vec(), Seen::Dir)));

        // Skipping all contents must land on the same structure and size.
        let (paths, consumed) = paths_only(&nar[..]).unwrap();
        assert_eq!(consumed, nar.len() as u64);
        assert_eq!(
            paths,
            expected.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>()
        );
    }

    #[test]
    #[cfg_attr(not(feature = "nix-tests"), ignore = "runs Nix: scripts/test.sh")]
    fn partial_reads_and_fill_buf_are_skipped_correctly() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        make_tree(&root, true);
        let nar = nix_dump(&root);
        let mut expected = Vec::new();
        disk_listing(&root, b"", &mut expected);

        let mut heads = Vec::new();
        let consumed = walk_nar(&nar[..], &mut |path, node| {
            if let NarNode::Regular { contents, .. } = node {
                // Peek without consuming, then read a little.
                let peeked = contents
                    .fill_buf()?
                    .iter()
                    .take(3)
                    .copied()
                    .collect::<Vec<_>>();
                let mut head = [0u8; 3];
                let n = contents.read(&mut head)?;
                assert_eq!(&head[..n], &peeked[..n]);
                heads.push((path.to_vec(), head[..n].to_vec()));
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(consumed, nar.len() as u64);
        let want: Vec<(Vec<u8>, Vec<u8>)> = expected
            .iter()
            .filter_map(|(p, s)| match s {
                Seen::File { data, .. } => Some((p.clone(), data[..data.len().min(3)].to_vec())),
                _ => None,
            })
            .collect();
        assert_eq!(heads, want);
    }

    #[test]
    #[cfg_attr(not(feature = "nix-tests"), ignore = "runs Nix: scripts/test.sh")]
    fn root_may_be_a_file_or_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("file");
        write_file(&file, b"just a file", 0o755);
        let nar = nix_dump(&file);
        let (seen, n) = listing(&nar[..]).unwrap();
        assert_eq!(n, nar.len() as u64);
        assert_eq!(
            seen,
            vec![(
                Vec::new(),
                Seen::File {
                    executable: true,
                    data: b"just a file".to_vec(),
                }
            )]
        );

        let link = tmp.path().join("link");
        std::os::unix::fs::symlink("file", &link).unwrap();
        let nar = nix_dump(&link);
        let (seen, n) = listing(&nar[..]).unwrap();
        assert_eq!(n, nar.len() as u64);
        assert_eq!(seen, vec![(Vec::new(), Seen::Link(b"file".to_vec()))]);
    }

    #[test]
    #[cfg_attr(not(feature = "nix-tests"), ignore = "runs Nix: scripts/test.sh")]
    fn test_writer_agrees_with_nix() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir(&root).unwrap();
        write_file(&root.join("a"), b"alpha", 0o644);
        write_file(&root.join("b"), b"12345678", 0o644);
        assert_eq!(
            nix_dump(&root),
            dir_nar(&[(b"a", b"alpha"), (b"b", b"12345678")])
        );
    }

    #[test]
    #[cfg_attr(not(feature = "nix-tests"), ignore = "runs Nix: scripts/test.sh")]
    fn compressed_nars_decode_to_the_same_walk() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        make_tree(&root, true);
        let nar = nix_dump(&root);
        let plain = listing(&nar[..]).unwrap();
        for compression in ["xz", "zstd", "bzip2", "none", ""] {
            let packed = compress(compression, &nar);
            let r = decompress(compression, &packed[..]).unwrap();
            let got = listing(r).unwrap();
            assert!(got == plain, "{compression} walk differs");
        }
    }

    /// Parallel compressors write several concatenated streams; they must
    /// read as one NAR.
    #[test]
    #[cfg_attr(not(feature = "nix-tests"), ignore = "runs Nix: scripts/test.sh")]
    fn concatenated_streams_are_one_nar() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        make_tree(&root, false);
        let nar = nix_dump(&root);
        let plain = listing(&nar[..]).unwrap();
        let (a, b) = nar.split_at(nar.len() / 2 + 3);
        for compression in ["xz", "zstd", "bzip2"] {
            let mut packed = compress(compression, a);
            packed.extend(compress(compression, b));
            let got = listing(decompress(compression, &packed[..]).unwrap()).unwrap();
            assert!(got == plain, "{compression} multi-stream walk differs");
        }
    }

    #[test]
    #[cfg_attr(not(feature = "nix-tests"), ignore = "runs Nix: scripts/test.sh")]
    fn truncation_is_reported_at_the_exact_byte() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        make_tree(&root, false);
        let nar = nix_dump(&root);
        for cut in 0..nar.len() {
            for read_contents in [true, false] {
                let r = if read_contents {
                    listing(&nar[..cut]).map(|_| ())
                } else {
                    paths_only(&nar[..cut]).map(|_| ())
                };
                match r {
                    Err(NarError::UnexpectedEof { at }) => assert_eq!(at, cut as u64),
                    other => panic!("cut at {cut}: {other:?}"),
                }
            }
        }
        let msg = listing(&nar[..100]).unwrap_err().to_string();
        assert_eq!(msg, "truncated NAR: unexpected end of data at byte 100");
    }

    #[test]
    #[cfg_attr(not(feature = "nix-tests"), ignore = "runs Nix: scripts/test.sh")]
    fn truncation_inside_a_large_file() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        make_tree(&root, true);
        let nar = nix_dump(&root);
        for cut in [
            nar.len() / 3,
            nar.len() / 2,
            nar.len() - 1000,
            nar.len() - 1,
        ] {
            for r in [
                listing(&nar[..cut]).map(|_| ()),
                paths_only(&nar[..cut]).map(|_| ()),
            ] {
                match r {
                    Err(NarError::UnexpectedEof { at }) => assert_eq!(at, cut as u64),
                    other => panic!("cut at {cut}: {other:?}"),
                }
            }
        }
    }

    #[test]
    #[cfg_attr(not(feature = "nix-tests"), ignore = "runs Nix: scripts/test.sh")]
    fn truncated_or_corrupt_compressed_streams_fail_cleanly() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        make_tree(&root, false);
        let nar = nix_dump(&root);
        for compression in ["xz", "zstd", "bzip2"] {
            let packed = compress(compression, &nar);
            // The last cut leaves all NAR bytes decodable but loses the
            // stream's end (and checksum): still an error.
            for cut in [0, 1, 40, packed.len() / 2, packed.len() - 1] {
                let err = listing(decompress(compression, &packed[..cut]).unwrap()).unwrap_err();
                let ok = match &err {
                    NarError::Decompress { compression: c, .. } => c == compression,
                    NarError::UnexpectedEof { .. } => true,
                    _ => false,
                };
                assert!(ok, "{compression} cut at {cut}: {err:?}");
                assert!(err.to_string().contains("truncated"), "{err}");
            }
            let mut corrupt = packed.clone();
            let mid = corrupt.len() / 2;
            for b in &mut corrupt[mid..mid + 16] {
                *b ^= 0x5a;
            }
            // Decoders emit data before they can check it (bzip2 verifies a
            // block's CRC only after handing it out), so the damage may show
            // as a NAR syntax error rather than a decoder error; either way
            // the walk must fail.
            let r = listing(decompress(compression, &corrupt[..]).unwrap());
            assert!(r.is_err(), "{compression}: corruption went unnoticed");
        }
    }

    /// Errors of the compressed input itself are not the decompressor's.
    #[test]
    fn input_errors_stay_io_errors() {
        struct Failing(usize);
        impl Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    return Err(io::Error::other("disk on fire"));
                }
                let n = buf.len().min(self.0);
                buf[..n].fill(0);
                self.0 -= n;
                Ok(n)
            }
        }
        for compression in ["xz", "zstd", "bzip2", "none"] {
            let err = paths_only(decompress(compression, Failing(0)).unwrap()).unwrap_err();
            match err {
                NarError::Io(e) => assert_eq!(e.to_string(), "disk on fire"),
                other => panic!("{compression}: {other:?}"),
            }
        }
    }

    #[test]
    fn unknown_compression_is_refused() {
        match decompress("br", &b""[..]) {
            Err(NarError::UnknownCompression(c)) => assert_eq!(c, "br"),
            Err(e) => panic!("{e:?}"),
            Ok(_) => panic!("br accepted"),
        }
    }

    #[test]
    fn garbage_and_bad_tokens() {
        let err = paths_only(&b"this is certainly not a Nix archive"[..]).unwrap_err();
        assert!(
            matches!(&err, NarError::BadToken { at: 0, expected, .. } if expected == "\"nix-archive-1\""),
            "{err:?}"
        );

        let mut nar = dir_nar(&[(b"a", b"x")]);
        let at = nar.windows(7).position(|w| w == b"regular").unwrap();
        nar[at + 6] = b'x';
        match paths_only(&nar[..]).unwrap_err() {
            NarError::BadToken {
                expected,
                found,
                at: tok,
            } => {
                assert_eq!(found, "\"regulax\"");
                assert_eq!(expected, "\"regular\" or \"symlink\" or \"directory\"");
                assert_eq!(tok, at as u64 - 8);
            }
            e => panic!("{e:?}"),
        }

        // Executable marker with a value.
        let mut nar = Vec::new();
        put(&mut nar, MAGIC.as_bytes());
        for t in ["(", "type", "regular", "executable", "yes"] {
            put(&mut nar, t.as_bytes());
        }
        let err = paths_only(&nar[..]).unwrap_err();
        assert!(
            matches!(&err, NarError::BadToken { found, .. } if found == "\"yes\""),
            "{err:?}"
        );
    }

    #[test]
    fn nonzero_padding_is_refused() {
        let mut nar = dir_nar(&[(b"abc", b"x")]);
        let at = nar.windows(3).position(|w| w == b"abc").unwrap();
        nar[at + 5] = 1;
        let err = paths_only(&nar[..]).unwrap_err();
        assert!(
            matches!(err, NarError::BadPadding { at: p } if p == at as u64 + 3),
            "{err:?}"
        );
    }

    #[test]
    fn invalid_names_are_refused() {
        for name in [&b""[..], b".", b"..", b"a/b", b"a\0b"] {
            let err = paths_only(&dir_nar(&[(name, b"x")])[..]).unwrap_err();
            assert!(
                matches!(&err, NarError::BadName { path, .. } if path == "."),
                "{name:?}: {err:?}"
            );
        }
        let long = vec![b'n'; MAX_NAME_LEN + 1];
        let err = paths_only(&dir_nar(&[(&long, b"x")])[..]).unwrap_err();
        assert!(
            matches!(err, NarError::TooLong { len, .. } if len == long.len() as u64),
            "{err:?}"
        );
        let ok = vec![b'n'; MAX_NAME_LEN];
        paths_only(&dir_nar(&[(&ok, b"x")])[..]).unwrap();
    }

    /// Nix's own limits, as hostile NARs would break them: a tree ten
    /// thousand directories deep, and a symlink target past PATH_MAX, are
    /// refused with an error naming the limit, in bounded memory.
    #[test]
    fn paths_past_path_max_are_refused() {
        use crate::nar::tree::{FileTree, TreeEntry, TreeNode};
        let mut p = Vec::new();
        for _ in 0..10_000 {
            crate::relpath::push(&mut p, b"d");
        }
        let deep = FileTree::from_entries(vec![TreeEntry {
            path: p,
            node: TreeNode::Regular {
                size: 1,
                executable: false,
            },
        }]);
        let nar = crate::nar::testsupport::write_nar(&deep);
        let err = paths_only(&nar[..]).unwrap_err();
        assert!(
            matches!(err, NarError::PathTooLong { max: 4096, depth, .. } if depth >= 2048),
            "{err:?}"
        );
        assert!(err.to_string().contains("PATH_MAX"), "{err}");
        let link = |target: Vec<u8>| {
            crate::nar::testsupport::write_nar(&FileTree::from_entries(vec![TreeEntry {
                path: b"l".to_vec(),
                node: TreeNode::Symlink { target },
            }]))
        };
        let err = paths_only(&link(vec![b't'; MAX_PATH_LEN + 1])[..]).unwrap_err();
        assert!(
            matches!(
                err,
                NarError::TooLong {
                    what: "symlink target",
                    max: 4096,
                    ..
                }
            ),
            "{err:?}"
        );
        paths_only(&link(vec![b't'; MAX_PATH_LEN])[..]).unwrap();
    }

    #[test]
    fn unsorted_or_duplicate_entries_are_refused() {
        for entries in [
            &[(&b"b"[..], &b"1"[..]), (b"a", b"2")][..],
            &[(b"a", b"1"), (b"a", b"2")],
            &[(b"a", b"1"), (b"c", b"2"), (b"b", b"3")],
        ] {
            let err = paths_only(&dir_nar(entries)[..]).unwrap_err();
            assert!(matches!(err, NarError::Unsorted { .. }), "{err:?}");
        }
        let err = paths_only(&dir_nar(&[(b"b", b"1"), (b"a", b"2")])[..]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "bad NAR: directory entries out of order: 'a' follows 'b'"
        );
        // Byte order, as Nix compares: 0xff sorts after ASCII.
        paths_only(&dir_nar(&[(b"Z", b""), (b"a", b""), (b"\xff", b"")])[..]).unwrap();
    }

    #[test]
    fn trailing_data_is_refused() {
        let mut nar = dir_nar(&[(b"a", b"x")]);
        let len = nar.len() as u64;
        nar.extend_from_slice(b"junk");
        let err = paths_only(&nar[..]).unwrap_err();
        assert!(
            matches!(err, NarError::TrailingData { at } if at == len),
            "{err:?}"
        );
    }

    #[test]
    fn visitor_errors_end_the_walk() {
        let nar = dir_nar(&[(b"a", b"x"), (b"b", b"y")]);
        let mut visited = 0;
        let err = walk_nar(&nar[..], &mut |path, _| {
            visited += 1;
            if path == b"a" {
                return Err(NarError::Visitor("stop at a".into()));
            }
            Ok(())
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "stop at a");
        assert_eq!(visited, 2);
    }

    /// Nesting depth is limited by input size only, never by the stack.
    #[test]
    fn deep_nesting_does_not_overflow() {
        // As deep as PATH_MAX allows with one-byte names.
        const DEPTH: usize = 2047;
        let mut nar = Vec::new();
        put(&mut nar, MAGIC.as_bytes());
        for _ in 0..DEPTH {
            for t in ["(", "type", "directory", "entry", "(", "name", "d", "node"] {
                put(&mut nar, t.as_bytes());
            }
        }
        file_node(&mut nar, false, b"bottom");
        for _ in 0..DEPTH {
            put(&mut nar, b")");
            put(&mut nar, b")");
        }
        let mut deepest = 0;
        let n = walk_nar(&nar[..], &mut |path, node| {
            if let NarNode::Regular { .. } = node {
                deepest = path.len();
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(n, nar.len() as u64);
        assert_eq!(deepest, DEPTH * 2 - 1);
    }
}
