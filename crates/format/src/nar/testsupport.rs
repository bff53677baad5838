//! The one NAR writer of the test suite: archives from a [`FileTree`]
//! (file contents zero bytes, so it reproduces `nix-store --dump` of such a
//! tree byte for byte), and the primitives to write archives Nix never
//! would (unsorted, bad names) for the reader's error tests.

use super::tree::{FileTree, TreeEntry, TreeNode};
use crate::relpath::{is_under as is_at_or_under, parent as parent_of};

/// Writes one NAR string: length, bytes, zero padding to 8.
pub fn put(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s);
    out.resize(out.len().next_multiple_of(8), 0);
}

/// Writes a regular file node holding `data`.
pub fn file_node(out: &mut Vec<u8>, executable: bool, data: &[u8]) {
    put(out, b"(");
    put(out, b"type");
    put(out, b"regular");
    if executable {
        put(out, b"executable");
        put(out, b"");
    }
    put(out, b"contents");
    put(out, data);
    put(out, b")");
}

/// A NAR of a directory holding the given files, in the given order
/// (which need not be Nix's).
pub fn dir_nar(entries: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    put(&mut out, b"nix-archive-1");
    put(&mut out, b"(");
    put(&mut out, b"type");
    put(&mut out, b"directory");
    for (name, data) in entries {
        put(&mut out, b"entry");
        put(&mut out, b"(");
        put(&mut out, b"name");
        put(&mut out, name);
        put(&mut out, b"node");
        file_node(&mut out, false, data);
        put(&mut out, b")");
    }
    put(&mut out, b")");
    out
}

/// The NAR of `tree`, every file's contents zero bytes.
pub fn write_nar(tree: &FileTree) -> Vec<u8> {
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

/// A directory entry of a hand-written tree.
pub fn dir(path: &[u8]) -> TreeEntry {
    TreeEntry {
        path: path.to_vec(),
        node: TreeNode::Directory,
    }
}

/// A regular file entry of a hand-written tree.
pub fn file(path: &[u8], size: u64, executable: bool) -> TreeEntry {
    TreeEntry {
        path: path.to_vec(),
        node: TreeNode::Regular { size, executable },
    }
}

/// A symlink entry of a hand-written tree.
pub fn link(path: &[u8], target: &[u8]) -> TreeEntry {
    TreeEntry {
        path: path.to_vec(),
        node: TreeNode::Symlink {
            target: target.to_vec(),
        },
    }
}

/// A tree's paths, in its (NAR) order, as text.
pub fn paths(t: &FileTree) -> Vec<String> {
    t.entries
        .iter()
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect()
}
