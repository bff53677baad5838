//! Reading one store path from its NAR (binary caches): a single pass over
//! the decompressed stream gives the tree and every hold. An ELF file's
//! layout is read as its bytes stream past ([`nix_heft_format::elf::ElfStream`]
//! keeps its headers, tables and the strings they name, within
//! [`nix_heft_format::elf::MAX_HELD`] bytes whatever the file's size), so neither
//! memory nor temporary disk grows with file sizes; nothing is spooled.

use std::io::Read;

use super::content::{StringFilter, file_holds, name_holds, scan_stream, symlink_holds};
use super::{PathRead, Wanted};
use nix_heft_format::elf::ElfStream;
use nix_heft_format::nar::tree::{FileTree, TreeEntry, TreeNode};
use nix_heft_format::nar::{NarError, NarNode, walk_nar};
use nix_heft_types::problem::Problem;

/// Most bytes of ELF path strings held while one NAR is read, before they
/// are filtered down to the relevant ones at its end.
const STRING_BUDGET: usize = 8 << 20;

/// Reads the path from `nar`; with `find_holds` false only its tree is kept and
/// file contents are skipped (still decompressed: a NAR has no index).
pub(super) fn read(
    nar: Box<dyn Read + Send>,
    store_path: &str,
    wanted: &Wanted,
    find_holds: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> (PathRead, Vec<Problem>) {
    let mut pr = PathRead {
        available: true,
        searched: find_holds,
        ..PathRead::default()
    };
    let mut entries = Vec::new();
    // Strings are kept until the tree is complete, within this budget.
    let mut budget = STRING_BUDGET;
    let res = walk_nar(nar, &mut |rel: &[u8], node: NarNode<'_>| {
        let tree_node = match &node {
            NarNode::Directory => TreeNode::Directory,
            NarNode::Regular {
                executable, size, ..
            } => TreeNode::Regular {
                size: *size,
                executable: *executable,
            },
            NarNode::Symlink { target } => TreeNode::Symlink {
                target: target.to_vec(),
            },
        };
        entries.push(TreeEntry {
            path: rel.to_vec(),
            node: tree_node,
        });
        if !find_holds {
            return Ok(());
        }
        if !rel.is_empty() {
            name_holds(rel, wanted, &mut pr.holds);
        }
        match node {
            NarNode::Directory => {}
            NarNode::Symlink { target } => symlink_holds(rel, target, wanted, &mut pr.holds),
            NarNode::Regular { contents, size, .. } => {
                // Started at an ELF file's first chunk; every chunk after
                // goes through it too.
                let mut elf: Option<ElfStream> = None;
                let mut headers = |is_elf: bool, chunk: &[u8]| -> std::io::Result<()> {
                    if is_elf {
                        elf.get_or_insert_with(|| ElfStream::new(size)).feed(chunk);
                    }
                    Ok(())
                };
                let filter = StringFilter::Budget(&mut budget);
                let fs = scan_stream(contents, wanted, progress, Some(&mut headers), filter)
                    .map_err(NarError::from)?;
                let layout = match elf {
                    Some(s) if fs.needs_layout() => Some(s.finish()),
                    _ => None,
                };
                let mut elf_files = Vec::new();
                let holds = file_holds(rel, fs, layout, &mut elf_files);
                pr.push_file(holds, elf_files);
            }
        }
        Ok(())
    });
    pr.keep_relevant_strings();
    match res {
        // A tree is kept only when the whole NAR was read: a split or a
        // partition on half a tree would be wrong, not partial.
        Ok(_) => {
            pr.tree = Some(FileTree { entries });
            (pr, Vec::new())
        }
        Err(e) => {
            let p = Problem::new(store_path, super::nar_problem_kind(&e), format!("NAR: {e}"));
            (pr, vec![p])
        }
    }
}
