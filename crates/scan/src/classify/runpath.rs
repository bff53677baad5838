//! Is a RUNPATH entry dead? Only when the directory it names provides none
//! of the libraries the file needs *or may dlopen() by name*: nixpkgs wires
//! dlopen()ed libraries through exactly such entries. The directory's
//! listing comes from the referenced path's tree, read in the same pass.

use crate::read::ElfFacts;
use nix_heft_format::elf::runpath_serves;
use nix_heft_format::nar::tree::{FileTree, TreeNode};
use nix_heft_format::relpath;
use nix_heft_graph::{Graph, NodeId};
use nix_heft_types::evidence::Evidence;

/// Most symlinks followed resolving one directory, as the kernel's limit.
const MAX_LINKS: usize = 40;

/// Sets `ev.serves` and `ev.dead` for the RUNPATH entry `dir` of the file
/// `facts` describes, whose hash names `target`.
pub(super) fn judge(
    g: &Graph,
    target: NodeId,
    tree: Option<&FileTree>,
    dir: &str,
    facts: &ElfFacts,
    ev: &mut Evidence,
) {
    let base = g.path(target).as_str();
    let sub = match dir.strip_prefix(base) {
        Some("") => "",
        Some(rest) if rest.starts_with('/') => rest.trim_matches('/'),
        _ => {
            ev.note = Some(format!("RUNPATH entry {dir} is not inside {base}"));
            return;
        }
    };
    match tree.and_then(|t| list_dir(t, base, sub.as_bytes())) {
        Some(listing) => {
            ev.serves = runpath_serves(&listing, &facts.needed, &facts.dlopen);
            ev.dead = ev.serves.is_empty();
        }
        // The path's whole tree is known and has no such directory (an
        // output's own `$out/lib` that was never made): the loader finds
        // nothing there.
        None if tree.is_some_and(|t| resolve(t, base, sub.as_bytes()) == Err(Missing::Yes)) => {
            ev.dead = true;
            ev.note = Some(format!("{dir} does not exist"));
        }
        None => ev.note = Some(format!("cannot list {dir}; not judged")),
    }
}

/// Why a directory could not be resolved in a tree.
#[derive(Debug, PartialEq, Eq)]
enum Missing {
    /// A component is not there.
    Yes,
    /// A symlink leads out of the tree or loops: not known here.
    Unknown,
}

/// The names in directory `sub` of `tree`, following symlinks inside the
/// tree as the loader would (`lib -> lib64`); `None` when it is not a
/// directory of this path.
pub(crate) fn list_dir(tree: &FileTree, base: &str, sub: &[u8]) -> Option<Vec<String>> {
    let dir = resolve(tree, base, sub).ok()?;
    let names = tree
        .under(&dir)
        .filter(|e| relpath::parent(&e.path) == Some(dir.as_slice()))
        .map(|e| String::from_utf8_lossy(e.name()).into_owned())
        .collect();
    match tree.under(&dir).next().map(|e| &e.node) {
        Some(TreeNode::Directory) => Some(names),
        _ => None,
    }
}

/// `sub` with every symlink on the way resolved within the tree.
fn resolve(tree: &FileTree, base: &str, sub: &[u8]) -> Result<Vec<u8>, Missing> {
    let mut todo: Vec<Vec<u8>> = sub
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty())
        .rev()
        .map(<[u8]>::to_vec)
        .collect();
    let mut cur: Vec<u8> = Vec::new();
    let mut links = 0;
    while let Some(comp) = todo.pop() {
        match comp.as_slice() {
            b"." => continue,
            b".." => {
                cur = relpath::parent(&cur).ok_or(Missing::Unknown)?.to_vec();
                continue;
            }
            _ => {}
        }
        let mut next = cur.clone();
        relpath::push(&mut next, &comp);
        let entry = tree
            .under(&next)
            .next()
            .filter(|e| e.path == next)
            .ok_or(Missing::Yes)?;
        if let TreeNode::Symlink { target } = &entry.node {
            links += 1;
            if links > MAX_LINKS {
                return Err(Missing::Unknown);
            }
            let target = if let Some(abs) = target.strip_prefix(base.as_bytes()) {
                cur.clear();
                abs
            } else if target.starts_with(b"/") {
                return Err(Missing::Unknown); // leaves this path
            } else {
                target.as_slice()
            };
            todo.extend(
                target
                    .split(|&b| b == b'/')
                    .filter(|c| !c.is_empty())
                    .rev()
                    .map(<[u8]>::to_vec),
            );
        } else {
            cur = next;
        }
    }
    Ok(cur)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix_heft_format::nar::tree::TreeEntry;

    fn t(entries: &[(&str, Option<&str>)]) -> FileTree {
        FileTree::from_entries(
            entries
                .iter()
                .map(|(p, l)| TreeEntry {
                    path: p.as_bytes().to_vec(),
                    node: match l {
                        Some(target) => TreeNode::Symlink {
                            target: target.as_bytes().to_vec(),
                        },
                        None => TreeNode::Regular {
                            size: 1,
                            executable: false,
                        },
                    },
                })
                .collect(),
        )
    }

    #[test]
    fn lists_through_symlinks_inside_the_tree() {
        let base = "/nix/store/00000000000000000000000000000000-x";
        let tree = t(&[
            ("lib64/libx.so.1", None),
            ("lib64/sub/liby.so", None),
            ("lib", Some("lib64")),
            (
                "abs",
                Some("/nix/store/00000000000000000000000000000000-x/lib64/sub"),
            ),
            ("loop", Some("loop")),
            ("out", Some("/etc")),
        ]);
        assert_eq!(
            list_dir(&tree, base, b"lib64").unwrap(),
            ["libx.so.1", "sub"]
        );
        assert_eq!(list_dir(&tree, base, b"lib").unwrap(), ["libx.so.1", "sub"]);
        assert_eq!(list_dir(&tree, base, b"lib/sub").unwrap(), ["liby.so"]);
        assert_eq!(list_dir(&tree, base, b"abs").unwrap(), ["liby.so"]);
        assert_eq!(list_dir(&tree, base, b"").unwrap().len(), 5);
        assert!(list_dir(&tree, base, b"loop").is_none());
        assert!(list_dir(&tree, base, b"out").is_none());
        assert!(list_dir(&tree, base, b"lib64/libx.so.1").is_none());
        assert!(list_dir(&tree, base, b"missing").is_none());
        assert_eq!(resolve(&tree, base, b"missing"), Err(Missing::Yes));
        assert_eq!(resolve(&tree, base, b"lib/missing"), Err(Missing::Yes));
        assert_eq!(resolve(&tree, base, b"out"), Err(Missing::Unknown));
        assert_eq!(resolve(&tree, base, b"loop"), Err(Missing::Unknown));
    }
}
