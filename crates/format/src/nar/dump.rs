//! The NAR serialisation of a file tree on disk, streamed (what
//! `nix-store --dump` writes): how `--verify` checks a local store path
//! against the hash its database records, in the same one read that scans
//! it.
//!
//! Written by hand because no maintained crate streams a NAR from a
//! directory without holding files in memory; the format is small
//! (nix-compat's `nar::writer` is the model). Symlinks are never followed:
//! every entry is `lstat`ed and a symlink's target is written as it is.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Writes the NAR of `root` (a file, symlink or directory) to `out`.
pub fn dump(root: &Path, out: &mut impl Write) -> io::Result<()> {
    put(out, b"nix-archive-1")?;
    node(root, out)
}

fn put(out: &mut impl Write, s: &[u8]) -> io::Result<()> {
    out.write_all(&(s.len() as u64).to_le_bytes())?;
    out.write_all(s)?;
    let pad = s.len().next_multiple_of(8) - s.len();
    out.write_all(&[0u8; 8][..pad])
}

fn with_path(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn node(path: &Path, out: &mut impl Write) -> io::Result<()> {
    let meta = fs::symlink_metadata(path).map_err(|e| with_path(path, e))?;
    put(out, b"(")?;
    put(out, b"type")?;
    let ft = meta.file_type();
    if ft.is_symlink() {
        let target = fs::read_link(path).map_err(|e| with_path(path, e))?;
        put(out, b"symlink")?;
        put(out, b"target")?;
        put(out, target.as_os_str().as_bytes())?;
    } else if ft.is_file() {
        put(out, b"regular")?;
        // Nix records a file as executable when its owner may run it.
        if meta.permissions().mode() & 0o100 != 0 {
            put(out, b"executable")?;
            put(out, b"")?;
        }
        put(out, b"contents")?;
        let mut f = fs::File::open(path).map_err(|e| with_path(path, e))?;
        let size = meta.len();
        out.write_all(&size.to_le_bytes())?;
        // Exactly `size` bytes: a file that grows or shrinks while it is
        // read would otherwise give a NAR that is not even well formed.
        let copied = io::copy(&mut (&mut f).take(size), out).map_err(|e| with_path(path, e))?;
        if copied != size {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{}: shrank from {size} to {copied} bytes while read",
                    path.display()
                ),
            ));
        }
        let pad = (size.next_multiple_of(8) - size) as usize;
        out.write_all(&[0u8; 8][..pad])?;
    } else if ft.is_dir() {
        put(out, b"directory")?;
        let mut names: Vec<std::ffi::OsString> = fs::read_dir(path)
            .map_err(|e| with_path(path, e))?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<io::Result<_>>()
            .map_err(|e| with_path(path, e))?;
        // NAR entries are sorted by the bytes of their names.
        names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        for name in names {
            put(out, b"entry")?;
            put(out, b"(")?;
            put(out, b"name")?;
            put(out, name.as_bytes())?;
            put(out, b"node")?;
            node(&path.join(&name), out)?;
            put(out, b")")?;
        }
    } else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: not a regular file, directory or symlink",
                path.display()
            ),
        ));
    }
    put(out, b")")
}

/// A reader of the NAR of `root`, written on a thread of its own into a
/// pipe, so the NAR reader (and its hash) consume it as it is produced and
/// no file is held in memory. An error while dumping (a file that cannot be
/// read) ends the stream with that error, not a silent end of file.
pub fn reader(root: &Path) -> io::Result<Box<dyn Read + Send>> {
    let (r, mut w) = io::pipe()?;
    let failed: Arc<Mutex<Option<io::Error>>> = Arc::default();
    let slot = Arc::clone(&failed);
    let root = root.to_path_buf();
    std::thread::Builder::new()
        .name("nar-dump".into())
        .spawn(move || {
            let mut buf = io::BufWriter::with_capacity(1 << 16, &mut w);
            let res = dump(&root, &mut buf).and_then(|()| buf.flush());
            // A reader that stopped early (it found what it needed or
            // failed itself) closes the pipe: that is not a dump error.
            if let Err(e) = res
                && e.kind() != io::ErrorKind::BrokenPipe
            {
                *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            }
        })?;
    Ok(Box::new(DumpReader { pipe: r, failed }))
}

struct DumpReader {
    pipe: io::PipeReader,
    failed: Arc<Mutex<Option<io::Error>>>,
}

impl Read for DumpReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.pipe.read(buf)?;
        if n == 0
            && !buf.is_empty()
            && let Some(e) = self.failed.lock().unwrap_or_else(|p| p.into_inner()).take()
        {
            return Err(e);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    #[cfg_attr(not(feature = "nix-tests"), ignore = "runs Nix: scripts/test.sh")]
    fn dump_is_byte_for_byte_what_nix_store_dump_writes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        fs::create_dir_all(root.join("lib/sub")).unwrap();
        fs::write(root.join("lib/a.txt"), b"hello").unwrap();
        fs::write(root.join("lib/sub/b"), vec![7u8; 9000]).unwrap();
        fs::write(root.join("Z"), b"").unwrap();
        fs::write(root.join("run"), b"#!/bin/sh\n").unwrap();
        fs::set_permissions(root.join("run"), fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("lib/a.txt", root.join("link")).unwrap();
        let mut ours = Vec::new();
        reader(&root).unwrap().read_to_end(&mut ours).unwrap();
        let nix = Command::new("nix-store")
            .arg("--dump")
            .arg(&root)
            .output()
            .expect("nix-store (nix-bin) is needed for this test");
        assert!(nix.status.success());
        assert_eq!(ours, nix.stdout);
    }

    #[test]
    fn an_unreadable_file_ends_the_stream_with_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        fs::create_dir_all(&root).unwrap();
        // A FIFO is neither file, directory nor symlink: Nix refuses it too.
        let fifo = root.join("fifo");
        assert!(
            Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let mut out = Vec::new();
        let e = reader(&root).unwrap().read_to_end(&mut out).unwrap_err();
        assert!(e.to_string().contains("fifo"), "{e}");
    }
}
