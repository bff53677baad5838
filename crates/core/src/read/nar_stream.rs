//! Reading one store path from its NAR (binary caches): a single pass over
//! the decompressed stream gives the tree and every hold. ELF files are
//! spooled to an anonymous temporary file for their headers (sparse: runs
//! of zeros are skipped), never to memory, and mapped only to parse them,
//! a window at a time (see [`crate::elf::ElfLayout::parse_releasing`]), so
//! memory does not grow with file sizes.

use std::io::{Read, Seek, SeekFrom, Write};

use super::content::{StringFilter, file_holds, name_holds, scan_stream, symlink_holds};
use super::{PathRead, Wanted};
use crate::nar::tree::{FileTree, TreeEntry, TreeNode};
use crate::nar::{NarError, NarNode, walk_nar};
use crate::problem::Problem;

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
            NarNode::Regular { contents, .. } => {
                let mut spool_file: Option<std::fs::File> = None;
                let mut spooled = 0u64;
                let mut spool = |elf: bool, chunk: &[u8]| -> std::io::Result<()> {
                    if elf {
                        if spool_file.is_none() {
                            spool_file = Some(tempfile::tempfile()?);
                        }
                        let f = spool_file.as_mut().expect("just set");
                        // Runs of zeros (padding, zero-filled sections) are
                        // skipped, not written: the spool stays sparse.
                        if is_zeros(chunk) {
                            f.seek(SeekFrom::Current(chunk.len() as i64))?;
                        } else {
                            f.write_all(chunk)?;
                        }
                        spooled += chunk.len() as u64;
                    }
                    Ok(())
                };
                let filter = StringFilter::Budget(&mut budget);
                let fs = scan_stream(contents, wanted, progress, Some(&mut spool), filter)
                    .map_err(NarError::from)?;
                if let Some(f) = &spool_file {
                    // A file ending in zeros: the skipped tail.
                    f.set_len(spooled).map_err(NarError::Io)?;
                }
                let mmap = match (&spool_file, fs.is_elf && !fs.hits.is_empty()) {
                    // SAFETY: a private temporary file nobody else writes.
                    (Some(f), true) => {
                        Some(unsafe { memmap2::Mmap::map(f) }.map_err(NarError::Io)?)
                    }
                    _ => None,
                };
                let mut elf_files = Vec::new();
                let holds = file_holds(rel, fs, mmap.as_ref(), &mut elf_files);
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

/// Whether `chunk` holds only zero bytes. Compared against a block of
/// zeros (a `memcmp`), not byte by byte.
fn is_zeros(chunk: &[u8]) -> bool {
    static ZEROS: [u8; super::content::CHUNK] = [0; super::content::CHUNK];
    chunk.chunks(ZEROS.len()).all(|c| c == &ZEROS[..c.len()])
}
