//! Run-time data found by relative path. rocblas finds its Tensile kernels
//! as `<dir of librocblas.so>/rocblas/library/*`, which no reference scan
//! of a consumer can see; but librocblas.so holds the string
//! `rocblas/library`. A file whose directory an ELF file of the same path
//! names is therefore used at run time, wherever it sits.

use crate::read::{PathRead, lookup_needle};
use nix_heft_graph::NodeId;
use nix_heft_types::evidence::Evidence;

/// The first ELF file of `pr` whose strings hold `needle`.
pub(crate) fn finder<'a>(pr: &'a PathRead, needle: &str) -> Option<&'a [u8]> {
    let f = memchr::memmem::Finder::new(needle.as_bytes());
    pr.elf_files
        .iter()
        .find(|e| e.path_strings.iter().any(|s| f.find(s).is_some()))
        .map(|e| e.file.as_slice())
}

/// Sets `used_by` on evidence in directories an ELF file of the same path
/// names by relative path.
pub(super) fn mark(pr: &PathRead, evs: &mut [(NodeId, Evidence)]) {
    let mut found: std::collections::HashMap<String, Option<String>> = Default::default();
    for (_, e) in evs.iter_mut() {
        let Some(n) = lookup_needle(&e.file) else {
            continue;
        };
        let by = found
            .entry(n.to_string())
            .or_insert_with(|| finder(pr, n).map(|f| String::from_utf8_lossy(f).into_owned()));
        if let Some(elf) = by {
            e.used_by = Some(format!(
                "{elf} looks files up under '{n}' relative to itself"
            ));
            e.looked_up_by = Some((elf.clone(), n.to_string()));
        }
    }
}
