//! File trees of store paths, and the exact NAR size of any tree.
//!
//! Splitting a package into outputs (nixpkgs' `moveToOutput`) moves files
//! from one store path into others. What each output then weighs is the NAR
//! size Nix would register for it, and that size depends only on the names,
//! types, file sizes, executable bits and symlink targets of the tree, never
//! on file contents. So it can be computed exactly, without rebuilding:
//! the read stage lists an existing path once (from disk, or from its NAR
//! in a binary cache), the planner picks entries, [`FileTree::from_entries`]
//! assembles them into a simulated output (adding the directories that lead
//! to them), and [`FileTree::nar_size`] gives its size.
//!
//! # NAR size
//!
//! Nix writes a NAR as in `libutil/archive.cc` (the grammar is in
//! [`crate::nar::reader`]). Every string (token, name, symlink target) is a
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

use super::reader::{NarError, NarNode, walk_nar};
use crate::relpath::{is_under as is_at_or_under, parent as parent_of};

/// One entry of a store path's file tree, in NAR order (sorted by raw name
/// bytes, parents before children).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
        crate::relpath::file_name(&self.path)
    }
}

/// A file system object as a NAR records it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileTree {
    /// The entries, root first, in NAR order. the read stage and
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

impl FileTree {
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
        // Borrowed: the paths and their parents are all slices of the
        // entries' own paths, so a million entries cost no second copy.
        let mut present: HashSet<&[u8]> = entries.iter().map(|e| e.path.as_slice()).collect();
        let mut missing = Vec::new();
        for e in &entries {
            let mut p: &[u8] = &e.path;
            while let Some(parent) = parent_of(p) {
                // A path already present has (or will get, when its own
                // entry comes up here) all its ancestors, so stop there:
                // each directory is walked up from once.
                if !present.insert(parent) {
                    break;
                }
                missing.push(TreeEntry {
                    path: parent.to_vec(),
                    node: TreeNode::Directory,
                });
                p = parent;
            }
        }
        drop(present);
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
/// The tree of a NAR stream, and how many bytes the NAR had.
pub fn tree_of_nar(nar: impl std::io::Read) -> std::result::Result<(FileTree, u64), NarError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nar::testsupport::{dir, file, link, paths, write_nar};
    use crate::relpath::push as push_name;

    fn tree_of_nar(nar: impl std::io::Read) -> FileTree {
        super::tree_of_nar(nar).unwrap().0
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
        // As deep as PATH_MAX (which the reader enforces) lets it go.
        for i in 0..500 {
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
        assert_eq!(t.entries.len(), 1 + 500 + 2 + 1 + 500);
        let nar = write_nar(&t);
        assert_eq!(t.nar_size(), nar.len() as u64);
        assert_eq!(tree_of_nar(&nar[..]), t);
    }
}
