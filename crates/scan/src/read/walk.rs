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

use nix_heft_format::nar::tree::{FileTree, TreeEntry, TreeNode};
use nix_heft_types::problem::{Problem, ProblemKind};

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

#[cfg(test)]
mod tests {
    use nix_heft_format::nar::testsupport::{dir, file, link, paths, write_nar};
    use nix_heft_format::nar::tree::{FileTree, TreeEntry, TreeNode, tree_of_nar};
    use nix_heft_format::testutil::run;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    use std::process::Command;

    // The disk reader against Nix's own dump (moved here from the NAR
    // format's tests, which know no disk reader).
    fn read_dir_tree(root: &Path) -> Option<FileTree> {
        let (tree, problems) = super::walk(root, "test");
        assert!(problems.is_empty(), "{problems:?}");
        tree
    }

    fn nix_dump(path: &Path) -> Vec<u8> {
        run(Command::new("nix-store").arg("--dump").arg(path))
    }

    /// Creates `entries` below `root` (parents as needed). Regular files get
    /// `size` zero bytes and mode 0755 or 0644.
    fn materialise(root: &Path, entries: &[TreeEntry]) {
        for e in entries {
            let full = root.join(OsStr::from_bytes(&e.path));
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent).unwrap();
            }
            match &e.node {
                TreeNode::Directory => std::fs::create_dir_all(&full).unwrap(),
                TreeNode::Regular { size, executable } => {
                    std::fs::write(&full, vec![0u8; *size as usize]).unwrap();
                    let mode = if *executable { 0o755 } else { 0o644 };
                    std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode)).unwrap();
                }
                TreeNode::Symlink { target } => {
                    std::os::unix::fs::symlink(OsStr::from_bytes(target), &full).unwrap()
                }
            }
        }
    }

    /// The tree described by hand, made on disk, read back, dumped by Nix:
    /// all four views agree, and the formula gives Nix's byte count.
    #[test]
    #[cfg_attr(not(feature = "nix-tests"), ignore = "runs Nix: scripts/test.sh")]
    fn disk_tree_matches_nix_store_dump() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("tree");
        let mut desc = vec![
            dir(b"empty"),
            file(b"deep/a/b/c/d/e/leaf", 5, false),
            file(b"bin/run", 123, true),
            file(b"bin/empty-exec", 0, true),
            file(b"caf\xe9", 3, false),
            dir(b"\xff\xfe-dir"),
            file(b"\xff\xfe-dir/inside", 9, false),
            link(b"links/dangling", b"/nonexistent/target"),
            link(b"links/up", b".."),
            link(b"links/loop-a", b"loop-b"),
            link(b"links/loop-b", b"loop-a"),
            // NAR order is per component: a/x before a-b, a.b, a0, and
            // upper case and 0xff placed by raw byte value.
            file(b"order/a/x", 1, false),
            file(b"order/a-b", 1, false),
            file(b"order/a.b", 1, false),
            file(b"order/a0", 1, false),
            file(b"order/A", 1, false),
            file(b"order/\xff", 1, false),
        ];
        for n in 0..=17u64 {
            desc.push(file(format!("sizes/f{n:02}").as_bytes(), n, n % 3 == 0));
            let len = n as usize + 1;
            desc.push(file(
                format!("names/{}", "n".repeat(len)).as_bytes(),
                1,
                false,
            ));
            desc.push(link(
                format!("targets/t{n:02}").as_bytes(),
                "t".repeat(len).as_bytes(),
            ));
        }
        std::fs::create_dir(&root).unwrap();
        materialise(&root, &desc);
        // Group execute alone does not make a file executable for Nix.
        let group_x = file(b"modes/group-x", 4, false);
        materialise(&root, std::slice::from_ref(&group_x));
        std::fs::set_permissions(
            root.join("modes/group-x"),
            std::fs::Permissions::from_mode(0o654),
        )
        .unwrap();
        desc.push(group_x);

        let expected = FileTree::from_entries(desc);
        let on_disk = read_dir_tree(&root).unwrap();
        assert_eq!(paths(&on_disk), paths(&expected));
        assert_eq!(on_disk, expected);

        let dump = nix_dump(&root);
        assert_eq!(expected.nar_size(), dump.len() as u64);
        assert_eq!(
            tree_of_nar(&dump[..]).unwrap().0,
            expected,
            "Nix's own order"
        );
        // Files hold zero bytes, so even the test serialiser (which the
        // deep-tree test relies on) must reproduce Nix's bytes exactly.
        assert!(write_nar(&expected) == dump, "write_nar differs from Nix");
    }

    /// A store path may be a single file or symlink: every size around the
    /// padding boundary, plain and executable, and symlink roots.
    #[test]
    #[cfg_attr(not(feature = "nix-tests"), ignore = "runs Nix: scripts/test.sh")]
    fn single_file_roots_match_nix_store_dump() {
        let tmp = tempfile::tempdir().unwrap();
        for size in 0..=17u64 {
            for executable in [false, true] {
                let p = tmp.path().join(format!("f{size}-{executable}"));
                std::fs::write(&p, vec![7u8; size as usize]).unwrap();
                let mode = if executable { 0o700 } else { 0o600 };
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
                let expected = FileTree::from_entries(vec![file(b"", size, executable)]);
                assert_eq!(read_dir_tree(&p).unwrap(), expected);
                assert_eq!(expected.nar_size(), nix_dump(&p).len() as u64, "{p:?}");
            }
            let l = tmp.path().join(format!("l{size}"));
            let target = "t".repeat(size as usize + 1);
            std::os::unix::fs::symlink(&target, &l).unwrap();
            let expected = FileTree::from_entries(vec![link(b"", target.as_bytes())]);
            assert_eq!(read_dir_tree(&l).unwrap(), expected);
            assert_eq!(expected.nar_size(), nix_dump(&l).len() as u64, "{l:?}");
        }
    }
}
