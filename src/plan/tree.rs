//! File trees of store paths, and the exact NAR size of any tree.
//!
//! Splitting a package into outputs (nixpkgs' `moveToOutput`) moves files
//! from one store path into others. What each output then weighs is the NAR
//! size Nix would register for it, and that size depends only on the names,
//! types, file sizes, executable bits and symlink targets of the tree, never
//! on file contents. So it can be computed exactly, without rebuilding:
//! [`FileTree::read`] lists an existing path (from disk, or from its NAR in a
//! binary cache), the planner picks entries, [`FileTree::from_entries`]
//! assembles them into a simulated output (adding the directories that lead
//! to them), and [`FileTree::nar_size`] gives its size.
//!
//! # NAR size
//!
//! Nix writes a NAR as in `libutil/archive.cc` (the grammar is in
//! [`crate::source::nar`]). Every string (token, name, symlink target) is a
//! little-endian `u64` length, the bytes, and zero padding to a multiple of
//! 8, so a string of `n` bytes takes
//!
//! ```text
//! strsize(n) = 8 + ceil(n / 8) * 8
//! ```
//!
//! and, writing `str(s)` for `strsize(len(s))`:
//!
//! ```text
//! nar            = str("nix-archive-1") + node(root)
//! node(regular)  = str("(") + str("type") + str("regular")
//!                  + [str("executable") + str("")]      if executable
//!                  + str("contents") + 8 + ceil(size / 8) * 8
//!                  + str(")")
//! node(symlink)  = str("(") + str("type") + str("symlink")
//!                  + str("target") + str(target) + str(")")
//! node(dir)      = str("(") + str("type") + str("directory")
//!                  + sum over children, in name order, of
//!                      str("entry") + str("(") + str("name") + str(name)
//!                      + str("node") + node(child) + str(")")
//!                  + str(")")
//! ```
//!
//! Every term is a sum, so the total is the magic string plus, for each
//! entry of the tree, its own node's fixed part plus (for all but the root)
//! the `entry` wrapper around it. [`FileTree::nar_size`] adds these up over
//! the flat entry list: no recursion, so arbitrarily deep trees are fine,
//! and no dependence on the order of the entries.
//!
//! # Order
//!
//! Entries are kept in NAR order: a directory before its contents, siblings
//! sorted by the raw bytes of their names. That is lexicographic order of
//! the paths' `/`-separated components ([`nar_cmp`]), which is not plain
//! byte order of the whole path: `a/b` comes before `a-b` although `-`
//! sorts before `/`.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result, io_err};
use crate::source::StoreSource;
use crate::source::nar::{NarError, NarNode, walk_nar};
use crate::store_path::StorePath;

/// One entry of a store path's file tree, in NAR order (sorted by raw name
/// bytes, parents before children).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// Path relative to the store path, as raw bytes: empty for the root,
    /// `a/b` below it (no leading, trailing or doubled `/`).
    pub path: Vec<u8>,
    /// What the entry is.
    pub node: TreeNode,
}

impl TreeEntry {
    /// The entry's own name (its last path component); empty for the root.
    pub fn name(&self) -> &[u8] {
        match self.path.iter().rposition(|&b| b == b'/') {
            Some(i) => &self.path[i + 1..],
            None => &self.path,
        }
    }
}

/// A file system object as a NAR records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeNode {
    /// A directory; its contents are further entries.
    Directory,
    /// A regular file.
    Regular {
        /// Its size in bytes.
        size: u64,
        /// Whether Nix records it as executable (owner execute bit set).
        executable: bool,
    },
    /// A symbolic link.
    Symlink {
        /// Its target, as raw bytes.
        target: Vec<u8>,
    },
}

/// The file tree of a store path (or of a simulated output): every file,
/// directory and symlink, in NAR order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileTree {
    /// The entries, root first, in NAR order. [`FileTree::read`] and
    /// [`FileTree::from_entries`] leave them so, and [`FileTree::under`]
    /// relies on it; [`FileTree::nar_size`] only needs every entry's parent
    /// to be a directory entry of the tree.
    pub entries: Vec<TreeEntry>,
}

/// Bytes a NAR string of `len` bytes takes: length field, bytes, padding.
const fn str_size(len: u64) -> u64 {
    8 + len.div_ceil(8) * 8
}

/// Bytes a NAR token takes.
const fn tok(s: &str) -> u64 {
    str_size(s.len() as u64)
}

const MAGIC: u64 = tok("nix-archive-1");
/// `( type` … `)`, common to every node.
const NODE: u64 = tok("(") + tok("type") + tok(")");
/// `regular contents <u64 size>`; the contents and their padding come on top.
const REGULAR: u64 = tok("regular") + tok("contents") + 8;
const EXECUTABLE: u64 = tok("executable") + tok("");
/// `symlink target`; the target string comes on top.
const SYMLINK: u64 = tok("symlink") + tok("target");
const DIRECTORY: u64 = tok("directory");
/// `entry ( name node )` around every non-root node; the name comes on top.
const ENTRY: u64 = tok("entry") + tok("(") + tok("name") + tok("node") + tok(")");

/// The NAR bytes an entry accounts for: its node without its children, plus
/// the `entry` wrapper that places it in its parent.
fn entry_nar_size(e: &TreeEntry) -> u64 {
    let node = NODE
        + match &e.node {
            TreeNode::Directory => DIRECTORY,
            TreeNode::Regular { size, executable } => {
                REGULAR + if *executable { EXECUTABLE } else { 0 } + size.div_ceil(8) * 8
            }
            TreeNode::Symlink { target } => SYMLINK + str_size(target.len() as u64),
        };
    if e.path.is_empty() {
        node
    } else {
        node + ENTRY + str_size(e.name().len() as u64)
    }
}

/// Compares two relative paths in NAR order: component by component, each
/// component by raw bytes, so a directory comes right before its contents.
pub fn nar_cmp(a: &[u8], b: &[u8]) -> Ordering {
    // The root is the empty path; splitting it yields one empty component,
    // which sorts before every real (non-empty) name, as the root must.
    a.split(|&c| c == b'/').cmp(b.split(|&c| c == b'/'))
}

/// The parent of a relative path, `None` for the root.
fn parent_of(p: &[u8]) -> Option<&[u8]> {
    if p.is_empty() {
        return None;
    }
    Some(match p.iter().rposition(|&b| b == b'/') {
        Some(i) => &p[..i],
        None => b"",
    })
}

/// Whether `path` is `prefix` or lies below it (`prefix` empty: always).
fn is_at_or_under(path: &[u8], prefix: &[u8]) -> bool {
    prefix.is_empty()
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
}

fn push_name(path: &mut Vec<u8>, name: &[u8]) {
    if !path.is_empty() {
        path.push(b'/');
    }
    path.extend_from_slice(name);
}

impl FileTree {
    /// Reads the tree of store path `p` from `src`: from disk when the
    /// source has the files there ([`StoreSource::real_path`]), else from the
    /// path's NAR ([`StoreSource::nar`], file contents skipped). Returns
    /// `Ok(None)` when the source has no file contents at all (a path-info
    /// JSON file).
    ///
    /// Errors in a NAR are reported as [`Error::BadNar`] naming the store
    /// path (the source does not reveal which file held the NAR; errors
    /// opening or decompressing it already name the file), read failures
    /// underneath as [`Error::Io`].
    pub fn read(src: &dyn StoreSource, p: &StorePath) -> Result<Option<FileTree>> {
        if let Some(root) = src.real_path(p) {
            return read_dir_tree(&root).map(Some);
        }
        let Some(nar) = src.nar(p)? else {
            return Ok(None);
        };
        let (tree, nar_bytes) = tree_of_nar(nar).map_err(|e| match e {
            NarError::Io(source) => Error::Io {
                path: PathBuf::from(p.as_str()),
                source,
            },
            other => Error::BadNar {
                file: PathBuf::from(p.as_str()),
                reason: other.to_string(),
            },
        })?;
        // The parser counts the bytes it read; the formula must agree.
        debug_assert_eq!(tree.nar_size(), nar_bytes, "NAR size formula of {p}");
        Ok(Some(tree))
    }

    /// Exact size of the NAR serialisation of this tree: what Nix registers
    /// as `narSize` for a path holding it (formula in the module docs). An
    /// empty tree (not even a root) has no serialisation and counts 0.
    pub fn nar_size(&self) -> u64 {
        if self.entries.is_empty() {
            return 0;
        }
        MAGIC + self.entries.iter().map(entry_nar_size).sum::<u64>()
    }

    /// Builds a tree from entries that may be unsorted, repeated, and lack
    /// their parent directories (say, the files a `moveToOutput` pattern
    /// picks out of a path): adds every missing ancestor, the root
    /// included, as a directory, sorts into NAR order and keeps only the
    /// first entry given for each path.
    ///
    /// The entries should come from one consistent tree; an entry below a
    /// path given as a file or symlink yields a tree no NAR can hold.
    pub fn from_entries(mut entries: Vec<TreeEntry>) -> FileTree {
        let mut present: HashSet<Vec<u8>> = entries.iter().map(|e| e.path.clone()).collect();
        let mut missing = Vec::new();
        for e in &entries {
            let mut p: &[u8] = &e.path;
            while let Some(parent) = parent_of(p) {
                // A path already present has (or will get, when its own
                // entry comes up here) all its ancestors, so stop there:
                // each directory is walked up from once.
                if !present.insert(parent.to_vec()) {
                    break;
                }
                missing.push(TreeEntry {
                    path: parent.to_vec(),
                    node: TreeNode::Directory,
                });
                p = parent;
            }
        }
        entries.append(&mut missing);
        // Stable, so among equal paths the one given first stays first and
        // survives the dedup (added directories never repeat a given path).
        entries.sort_by(|a, b| nar_cmp(&a.path, &b.path));
        entries.dedup_by(|later, earlier| later.path == earlier.path);
        FileTree { entries }
    }

    /// Entries at or under `prefix`, a relative path (`lib`, `share/doc`;
    /// surrounding `/` ignored); `""` means all. `lib` does not take
    /// `lib64` or `libexec`. Found by binary search, since NAR order keeps a
    /// subtree contiguous.
    pub fn under<'a>(&'a self, prefix: &'a [u8]) -> impl Iterator<Item = &'a TreeEntry> + 'a {
        let start = prefix
            .iter()
            .position(|&b| b != b'/')
            .unwrap_or(prefix.len());
        let end = prefix
            .iter()
            .rposition(|&b| b != b'/')
            .map_or(start, |i| i + 1);
        let prefix = &prefix[start..end.max(start)];
        let first = self
            .entries
            .partition_point(|e| nar_cmp(&e.path, prefix) == Ordering::Less);
        self.entries[first..]
            .iter()
            .take_while(move |e| is_at_or_under(&e.path, prefix))
    }
}

/// The tree a NAR stream describes, and the NAR bytes read.
pub(crate) fn tree_of_nar(
    nar: impl std::io::Read,
) -> std::result::Result<(FileTree, u64), NarError> {
    let mut entries = Vec::new();
    let n = walk_nar(nar, &mut |path: &[u8], node: NarNode<'_>| {
        let node = match node {
            NarNode::Directory => TreeNode::Directory,
            NarNode::Regular {
                executable, size, ..
            } => TreeNode::Regular { size, executable },
            NarNode::Symlink { target } => TreeNode::Symlink {
                target: target.to_vec(),
            },
        };
        entries.push(TreeEntry {
            path: path.to_vec(),
            node,
        });
        Ok(())
    })?;
    Ok((FileTree { entries }, n))
}

/// Reads the tree rooted at `root` from disk in NAR order, as
/// `nix-store --dump` would serialise it: symlinks are never followed,
/// names are raw bytes, a regular file is executable when its owner
/// execute bit is set (Nix tests `S_IXUSR`). `root` itself may be a file or
/// a symlink. Other file types (sockets, devices, FIFOs) cannot be put in a
/// NAR and are an error, as in Nix.
pub fn read_dir_tree(root: &Path) -> Result<FileTree> {
    let mut entries = Vec::new();
    // Paths still to visit, the next one last: an explicit stack instead
    // of recursion so depth costs heap, not call stack. Children are
    // pushed in reverse name order, so popping visits each directory
    // before its contents and siblings in name order, i.e. NAR order.
    let mut pending: Vec<Vec<u8>> = vec![Vec::new()];
    while let Some(rel) = pending.pop() {
        let full = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(OsStr::from_bytes(&rel))
        };
        let meta = std::fs::symlink_metadata(&full).map_err(io_err(&full))?;
        let ft = meta.file_type();
        let node = if ft.is_symlink() {
            let target = std::fs::read_link(&full).map_err(io_err(&full))?;
            TreeNode::Symlink {
                target: target.into_os_string().into_vec(),
            }
        } else if ft.is_file() {
            TreeNode::Regular {
                size: meta.len(),
                executable: meta.permissions().mode() & 0o100 != 0,
            }
        } else if ft.is_dir() {
            let mut names = Vec::new();
            for de in std::fs::read_dir(&full).map_err(io_err(&full))? {
                names.push(de.map_err(io_err(&full))?.file_name().into_vec());
            }
            names.sort_unstable();
            for name in names.into_iter().rev() {
                let mut child = rel.clone();
                push_name(&mut child, &name);
                pending.push(child);
            }
            TreeNode::Directory
        } else {
            return Err(Error::Io {
                path: full,
                source: std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    "not a regular file, directory or symlink, so no NAR can hold it",
                ),
            });
        };
        entries.push(TreeEntry { path: rel, node });
    }
    Ok(FileTree { entries })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn repo() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
    }

    fn run(cmd: &mut Command) -> Vec<u8> {
        let out = cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot run {cmd:?} (Nix must be installed): {e}"));
        assert!(
            out.status.success(),
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// Builds `attr` of `file` (relative to the crate) with real Nix; the
    /// derivations use the host's /bin/sh, hence no sandbox.
    fn nix_build(file: &str, attr: &str) -> String {
        let out = run(Command::new("nix-build")
            .args([
                "--option",
                "sandbox",
                "false",
                "--option",
                "substituters",
                "",
            ])
            .arg("--no-out-link")
            .arg(repo().join(file))
            .args(["-A", attr]));
        String::from_utf8(out).unwrap().trim().to_string()
    }

    /// `narSize` as `nix path-info --json` reports it (array shape of older
    /// Nix, object keyed by path of newer).
    fn nix_nar_size(path: &str) -> u64 {
        let out = run(Command::new("nix")
            .args(["--extra-experimental-features", "nix-command"])
            .args(["path-info", "--json", path]));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let info = match &v {
            serde_json::Value::Array(a) => &a[0],
            serde_json::Value::Object(o) => &o[path],
            _ => panic!("unexpected path-info JSON: {v}"),
        };
        info["narSize"].as_u64().unwrap()
    }

    fn nix_dump(path: &Path) -> Vec<u8> {
        run(Command::new("nix-store").arg("--dump").arg(path))
    }

    fn tree_of_nar(nar: impl std::io::Read) -> FileTree {
        super::tree_of_nar(nar).unwrap().0
    }

    /// Serialises a tree as a NAR with zeroed contents, straight from the
    /// grammar (not from the size formula), iteratively.
    fn write_nar(tree: &FileTree) -> Vec<u8> {
        fn put(out: &mut Vec<u8>, s: &[u8]) {
            out.extend_from_slice(&(s.len() as u64).to_le_bytes());
            out.extend_from_slice(s);
            out.resize(out.len().next_multiple_of(8), 0);
        }
        fn close(out: &mut Vec<u8>, dir: &[u8]) {
            put(out, b")"); // the directory node
            if !dir.is_empty() {
                put(out, b")"); // its entry
            }
        }
        let mut out = Vec::new();
        put(&mut out, b"nix-archive-1");
        let mut open: Vec<&[u8]> = Vec::new();
        for e in &tree.entries {
            while let Some(d) = open.last() {
                if parent_of(&e.path).is_some_and(|p| is_at_or_under(p, d)) {
                    break;
                }
                close(&mut out, d);
                open.pop();
            }
            if !e.path.is_empty() {
                for t in [&b"entry"[..], b"(", b"name", e.name(), b"node"] {
                    put(&mut out, t);
                }
            }
            put(&mut out, b"(");
            put(&mut out, b"type");
            match &e.node {
                TreeNode::Directory => {
                    put(&mut out, b"directory");
                    open.push(&e.path);
                    continue;
                }
                TreeNode::Regular { size, executable } => {
                    put(&mut out, b"regular");
                    if *executable {
                        put(&mut out, b"executable");
                        put(&mut out, b"");
                    }
                    put(&mut out, b"contents");
                    out.extend_from_slice(&size.to_le_bytes());
                    out.resize(out.len() + size.next_multiple_of(8) as usize, 0);
                }
                TreeNode::Symlink { target } => {
                    put(&mut out, b"symlink");
                    put(&mut out, b"target");
                    put(&mut out, target);
                }
            }
            put(&mut out, b")");
            if !e.path.is_empty() {
                put(&mut out, b")");
            }
        }
        while let Some(d) = open.pop() {
            close(&mut out, d);
        }
        out
    }

    fn dir(path: &[u8]) -> TreeEntry {
        TreeEntry {
            path: path.to_vec(),
            node: TreeNode::Directory,
        }
    }
    fn file(path: &[u8], size: u64, executable: bool) -> TreeEntry {
        TreeEntry {
            path: path.to_vec(),
            node: TreeNode::Regular { size, executable },
        }
    }
    fn link(path: &[u8], target: &[u8]) -> TreeEntry {
        TreeEntry {
            path: path.to_vec(),
            node: TreeNode::Symlink {
                target: target.to_vec(),
            },
        }
    }
    fn paths(t: &FileTree) -> Vec<String> {
        t.entries
            .iter()
            .map(|e| String::from_utf8_lossy(&e.path).into_owned())
            .collect()
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
        assert_eq!(tree_of_nar(&dump[..]), expected, "Nix's own order");
        // Files hold zero bytes, so even the test serialiser (which the
        // deep-tree test relies on) must reproduce Nix's bytes exactly.
        assert!(write_nar(&expected) == dump, "write_nar differs from Nix");
    }

    /// A store path may be a single file or symlink: every size around the
    /// padding boundary, plain and executable, and symlink roots.
    #[test]
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

    #[test]
    fn unsupported_file_types_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let sock = tmp.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        match read_dir_tree(tmp.path()) {
            Err(Error::Io { path, source }) => {
                assert_eq!(path, sock);
                assert_eq!(source.kind(), std::io::ErrorKind::Unsupported);
            }
            other => panic!("{other:?}"),
        }
        match read_dir_tree(&tmp.path().join("missing")) {
            Err(Error::Io { source, .. }) => {
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound)
            }
            other => panic!("{other:?}"),
        }
    }

    /// Real store paths built by real Nix: the tree read through the local
    /// store gives the `narSize` Nix registered, and equals the tree of
    /// Nix's own serialisation.
    #[test]
    fn nar_size_matches_nix_for_built_paths() {
        let src = crate::source::open(None).unwrap();
        let mut built: Vec<String> = ["top", "loopy", "right"]
            .iter()
            .map(|a| nix_build("tests/fixtures/small.nix", a))
            .collect();
        built.push(nix_build("examples/rocm-mini/default.nix", "rocblas"));
        for path in &built {
            let sp = StorePath::parse("/nix/store", path).unwrap();
            let tree = FileTree::read(src.as_ref(), &sp).unwrap().unwrap();
            assert_eq!(tree.nar_size(), nix_nar_size(path), "{path}");
            assert_eq!(tree, tree_of_nar(&nix_dump(Path::new(path))[..]), "{path}");
        }
    }

    /// The bundled binary cache holds rocblas as an xz NAR: the tree read
    /// from it equals the one on disk, and both weigh the recorded narSize.
    #[test]
    fn cache_tree_equals_disk_tree() {
        let example = repo().join("examples/rocm-mini");
        let infos: serde_json::Value =
            serde_json::from_slice(&std::fs::read(example.join("path-info.json")).unwrap())
                .unwrap();
        let info = infos
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["path"].as_str().unwrap().ends_with("-rocblas-5.7.1"))
            .unwrap();
        let path = info["path"].as_str().unwrap();
        assert_eq!(nix_build("examples/rocm-mini/default.nix", "rocblas"), path);
        let sp = StorePath::parse("/nix/store", path).unwrap();

        let cache = crate::source::open(Some(example.join("cache").to_str().unwrap())).unwrap();
        assert!(cache.real_path(&sp).is_none());
        let from_nar = FileTree::read(cache.as_ref(), &sp).unwrap().unwrap();
        let local = crate::source::open(None).unwrap();
        let from_disk = FileTree::read(local.as_ref(), &sp).unwrap().unwrap();
        assert_eq!(paths(&from_nar), paths(&from_disk));
        assert_eq!(from_nar, from_disk);
        assert_eq!(from_nar.nar_size(), info["narSize"].as_u64().unwrap());
        assert!(from_nar.entries.len() > 3, "{:?}", paths(&from_nar));
    }

    #[test]
    fn json_source_has_no_tree() {
        let example = repo().join("examples/rocm-mini");
        let src =
            crate::source::open(Some(example.join("path-info.json").to_str().unwrap())).unwrap();
        let root = std::fs::read_to_string(example.join("ROOT")).unwrap();
        let sp = StorePath::parse("/nix/store", root.trim()).unwrap();
        assert!(FileTree::read(src.as_ref(), &sp).unwrap().is_none());
    }

    #[test]
    fn from_entries_adds_parents_and_sorts() {
        let t = FileTree::from_entries(vec![file(b"lib/cmake/x.cmake", 10, false)]);
        assert_eq!(paths(&t), ["", "lib", "lib/cmake", "lib/cmake/x.cmake"]);
        assert_eq!(t.entries[1], dir(b"lib"));

        let t = FileTree::from_entries(vec![
            file(b"share/doc/b", 1, false),
            link(b"lib-x", b"lib"),
            file(b"lib/a.so", 2, true),
            file(b"share/doc/a", 3, false),
            file(b"lib/a.so", 99, false), // repeated: the first one wins
            dir(b"share"),
            file(b"lib.txt", 4, false),
        ]);
        assert_eq!(
            paths(&t),
            [
                "",
                "lib",
                "lib/a.so",
                "lib-x",
                "lib.txt",
                "share",
                "share/doc",
                "share/doc/a",
                "share/doc/b"
            ]
        );
        assert_eq!(t.entries[2], file(b"lib/a.so", 2, true));
        // Already complete and sorted: unchanged.
        assert_eq!(FileTree::from_entries(t.entries.clone()), t);
        assert_eq!(FileTree::from_entries(Vec::new()).nar_size(), 0);
    }

    #[test]
    fn under_selects_a_subtree() {
        let t = FileTree::from_entries(vec![
            file(b"lib/libx.so", 1, false),
            file(b"lib/cmake/x.cmake", 1, false),
            file(b"lib64/liby.so", 1, false),
            file(b"libexec/helper", 1, true),
            file(b"lib-extra", 1, false),
            file(b"bin/x", 1, true),
        ]);
        let sel = |p: &[u8]| -> Vec<String> {
            t.under(p)
                .map(|e| String::from_utf8_lossy(&e.path).into_owned())
                .collect()
        };
        assert_eq!(
            sel(b"lib"),
            ["lib", "lib/cmake", "lib/cmake/x.cmake", "lib/libx.so"]
        );
        assert_eq!(sel(b"/lib/cmake/"), ["lib/cmake", "lib/cmake/x.cmake"]);
        assert_eq!(sel(b"lib/libx.so"), ["lib/libx.so"]);
        assert_eq!(sel(b"bin"), ["bin", "bin/x"]);
        assert!(sel(b"li").is_empty());
        assert!(sel(b"share").is_empty());
        assert_eq!(sel(b"").len(), t.entries.len());
        assert_eq!(sel(b"/").len(), t.entries.len());
    }

    /// Trees far deeper than any call stack would take: the size is
    /// computed without recursion and agrees with a serialisation written
    /// from the grammar, which Nix's parser rules (via `walk_nar`) accept.
    #[test]
    fn deep_and_wide_trees() {
        let mut entries = Vec::new();
        let mut p = Vec::new();
        for i in 0..3000 {
            push_name(&mut p, if i % 2 == 0 { b"d" } else { b"dir-name-9" });
        }
        let mut leaf = p.clone();
        push_name(&mut leaf, b"leaf");
        entries.push(file(&leaf, 13, true));
        let mut l = p.clone();
        push_name(&mut l, b"link");
        entries.push(link(&l, b"../../x"));
        for i in 0..500u64 {
            entries.push(file(format!("wide/{i}").as_bytes(), i * 7, i % 2 == 1));
        }
        let t = FileTree::from_entries(entries);
        assert_eq!(t.entries.len(), 1 + 3000 + 2 + 1 + 500);
        let nar = write_nar(&t);
        assert_eq!(t.nar_size(), nar.len() as u64);
        assert_eq!(tree_of_nar(&nar[..]), t);
    }
}
