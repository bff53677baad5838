//! The one walker over a store path on disk: lists every entry without
//! following symlinks, in NAR order, and gives the [`FileTree`] Nix would
//! serialise. Both the tree-only read and the full read use it, so a path's
//! tree and its scan can never disagree.
//!
//! Iterative (an explicit stack), so a deep directory cannot overflow the
//! call stack. A directory that cannot be listed, a file that vanished, or
//! an entry no NAR can hold (a socket, a device) is recorded as a problem
//! and skipped; its siblings are still listed.

use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::nar::tree::{FileTree, TreeEntry, TreeNode};
use crate::problem::{Problem, ProblemKind};

/// Where the entry at `rel` (relative, raw bytes) of the tree at `root` is.
pub(crate) fn full_path(root: &Path, rel: &[u8]) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(OsStr::from_bytes(rel))
    }
}

/// An I/O failure on one entry as a problem of `store_path`.
pub(crate) fn io_problem(store_path: &str, rel: &[u8], what: &str, e: &std::io::Error) -> Problem {
    let (kind, msg) = if e.kind() == std::io::ErrorKind::NotFound {
        (
            ProblemKind::Vanished,
            format!("{what}: vanished during the read"),
        )
    } else {
        (ProblemKind::Unreadable, format!("{what}: {e}"))
    };
    let p = Problem::new(store_path, kind, msg);
    if rel.is_empty() {
        p
    } else {
        p.in_file(String::from_utf8_lossy(rel))
    }
}

/// Lists the tree at `root` (the files of `store_path`). Returns the tree
/// of what could be listed and the problems met; the tree is `None` when
/// the root itself could not be read.
pub fn walk(root: &Path, store_path: &str) -> (Option<FileTree>, Vec<Problem>) {
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    let mut pending: Vec<Vec<u8>> = vec![Vec::new()];
    while let Some(rel) = pending.pop() {
        let full = full_path(root, &rel);
        let meta = match std::fs::symlink_metadata(&full) {
            Ok(m) => m,
            Err(e) => {
                problems.push(io_problem(store_path, &rel, "cannot stat", &e));
                if rel.is_empty() {
                    return (None, problems);
                }
                continue;
            }
        };
        let ft = meta.file_type();
        let node = if ft.is_symlink() {
            match std::fs::read_link(&full) {
                Ok(t) => TreeNode::Symlink {
                    target: t.into_os_string().into_vec(),
                },
                Err(e) => {
                    problems.push(io_problem(store_path, &rel, "cannot read symlink", &e));
                    continue;
                }
            }
        } else if ft.is_file() {
            TreeNode::Regular {
                size: meta.len(),
                executable: meta.permissions().mode() & 0o100 != 0,
            }
        } else if ft.is_dir() {
            let rd = match std::fs::read_dir(&full) {
                Ok(rd) => rd,
                Err(e) => {
                    problems.push(io_problem(store_path, &rel, "cannot list", &e));
                    if rel.is_empty() {
                        return (None, problems);
                    }
                    continue;
                }
            };
            let mut names = Vec::new();
            for de in rd {
                match de {
                    Ok(de) => names.push(de.file_name().into_vec()),
                    Err(e) => problems.push(io_problem(store_path, &rel, "cannot list", &e)),
                }
            }
            // Reverse byte order on a stack pops in NAR order.
            names.sort_unstable();
            for name in names.into_iter().rev() {
                let mut child = rel.clone();
                if !child.is_empty() {
                    child.push(b'/');
                }
                child.extend_from_slice(&name);
                pending.push(child);
            }
            TreeNode::Directory
        } else {
            problems.push(io_problem(
                store_path,
                &rel,
                "cannot read",
                &std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    "not a regular file, directory or symlink, so no NAR can hold it",
                ),
            ));
            if rel.is_empty() {
                return (None, problems);
            }
            continue;
        };
        entries.push(TreeEntry { path: rel, node });
    }
    (Some(FileTree { entries }), problems)
}
