//! Reading one store path from disk (local and chroot stores): the tree
//! from the walker, then each regular file opened once, scanned as a
//! stream, and, when it is ELF and holds a hash, mapped through the same
//! descriptor for its headers (a window of it resident at a time).

use std::path::Path;

use rayon::prelude::*;

use super::content::{StringFilter, file_holds, name_holds, scan_stream, symlink_holds};
use super::walk::{full_path, io_problem, walk};
use super::{ElfFacts, Hold, PathRead, Wanted};
use nix_heft_format::elf::ElfLayout;
use nix_heft_format::nar::tree::TreeNode;
use nix_heft_types::problem::Problem;

/// Reads the path whose files are at `root`; with `find_holds` false only its
/// tree is listed and no file is opened.
pub(super) fn read(
    root: &Path,
    store_path: &str,
    wanted: &Wanted,
    find_holds: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> (PathRead, Vec<Problem>) {
    let (tree, mut problems) = walk(root, store_path);
    let mut pr = PathRead {
        available: true,
        searched: find_holds,
        ..PathRead::default()
    };
    let Some(tree) = tree else {
        return (pr, problems);
    };
    if find_holds {
        // The tree is known before any file is read: keep only the strings
        // that name one of its data directories.
        let needles = super::tree_needles(&tree);
        let ac = (!needles.is_empty())
            .then(|| aho_corasick::AhoCorasick::new(&needles).ok())
            .flatten();
        type FileResult = Result<(Vec<Hold>, Vec<ElfFacts>), Problem>;
        let per_entry: Vec<FileResult> = tree
            .entries
            .par_iter()
            .map(|e| {
                let rel = &e.path;
                let mut holds = Vec::new();
                let mut elf_files = Vec::new();
                if !rel.is_empty() {
                    name_holds(rel, wanted, &mut holds);
                }
                match &e.node {
                    TreeNode::Directory => {}
                    TreeNode::Symlink { target } => symlink_holds(rel, target, wanted, &mut holds),
                    TreeNode::Regular { .. } => {
                        let full = full_path(root, rel);
                        let fail =
                            |what: &str, e: std::io::Error| io_problem(store_path, rel, what, &e);
                        let mut f =
                            std::fs::File::open(&full).map_err(|e| fail("cannot open", e))?;
                        let filter = match &ac {
                            Some(ac) => StringFilter::Needles(ac),
                            None => StringFilter::Skip,
                        };
                        let fs = scan_stream(&mut f, wanted, progress, None, filter)
                            .map_err(|e| fail("cannot read", e))?;
                        let layout = if fs.needs_layout() {
                            // SAFETY: the store is immutable; a path deleted
                            // under us only makes reads fail, not change.
                            let map = unsafe { memmap2::Mmap::map(&f) }
                                .map_err(|e| fail("cannot map", e))?;
                            Some(ElfLayout::parse_releasing(&map, &mut |done| {
                                release(&map, done)
                            }))
                        } else {
                            None
                        };
                        holds.extend(file_holds(rel, fs, layout, &mut elf_files));
                    }
                }
                Ok((holds, elf_files))
            })
            .collect();
        for r in per_entry {
            match r {
                Ok((holds, elf_files)) => pr.push_file(holds, elf_files),
                Err(p) => problems.push(p),
            }
        }
    }
    pr.keep_relevant_strings();
    pr.tree = Some(tree);
    (pr, problems)
}

/// Drops the pages of `map` behind `range` (file offsets) that the ELF
/// parser is done with, so that scanning a mapped file of any size keeps
/// one window of it resident (peak RSS is what a CI runner or a laptop
/// must have spare; a 1.7 GB libLLVM must not need 1.7 GB).
fn release(map: &memmap2::Mmap, range: std::ops::Range<u64>) {
    let (Ok(start), Ok(end)) = (usize::try_from(range.start), usize::try_from(range.end)) else {
        return;
    };
    let end = end.min(map.len());
    if start >= end {
        return;
    }
    // SAFETY: a read-only shared mapping of a file nobody writes (an
    // immutable store path): dropped pages fault back in with the same
    // bytes, so no slice borrowed from the map can see a change. A failure
    // only leaves the pages resident.
    let _ = unsafe {
        map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
    };
}
