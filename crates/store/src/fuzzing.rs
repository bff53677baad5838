//! Entry points for the fuzz targets (`fuzz/`, cargo-fuzz on nightly) and
//! for replaying their corpus and crash inputs as ordinary tests on stable
//! (`tests/testsuite/fuzz_corpus.rs`): every parser of untrusted bytes, fed arbitrary
//! input. Each must return (an error is fine), never panic, hang or
//! allocate without bound.

use std::io::Read;
use std::path::Path;

/// Most decompressed bytes one input may produce here: a fuzzer's tiny
/// input can be a bomb, and the property tested is the decoder's safety,
/// not its throughput.
const MAX_DECODED: u64 = 16 << 20;

/// The NAR reader, on raw (uncompressed) bytes.
pub fn nar(data: &[u8]) {
    let _ = nix_heft_format::nar::tree::tree_of_nar(data);
    let _ = nix_heft_format::nar::walk_nar(data, &mut |_, node| {
        if let nix_heft_format::nar::NarNode::Regular { contents, .. } = node {
            let mut sink = Vec::new();
            let _ = contents.take(1 << 16).read_to_end(&mut sink);
        }
        Ok(())
    });
}

/// The narinfo parser.
pub fn narinfo(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ =
            crate::source::narinfo::NarInfo::parse(text, "/nix/store", Path::new("fuzz.narinfo"));
    }
}

/// The `.ls` NAR listing parser.
pub fn listing(data: &[u8]) {
    let _ = nix_heft_format::listing::parse(data);
}

/// The path-info JSON reader, every shape.
pub fn path_info_json(data: &[u8]) {
    let _ =
        crate::source::PathInfoJson::from_bytes(data, Path::new("fuzz.json"), Default::default());
}

/// The ELF classifier: any bytes as an ELF file, every offset asked about.
pub fn elf(data: &[u8]) {
    if let Ok(l) = nix_heft_format::elf::ElfLayout::parse(data) {
        for off in (0..data.len() as u64).step_by(97) {
            let _ = l.classify(off);
        }
        let _ = nix_heft_format::elf::runpath_serves(
            &["libc.so.6".into()],
            l.needed(),
            l.dlopen_candidates(),
        );
    }
}

/// The store path parser.
pub fn store_path(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = nix_heft_format::StorePath::parse("/nix/store", s);
        let _ = nix_heft_format::StorePath::from_path_inside("/nix/store", s);
        let _ = nix_heft_format::nar::hash::NarHash::parse(s);
    }
}

/// The decompression front end, each compression a narinfo can name.
pub fn decompress(data: &[u8]) {
    for c in ["xz", "zstd", "bzip2", "none"] {
        if let Ok(r) = nix_heft_format::nar::decompress(c, data) {
            let mut sink = Vec::new();
            let _ = r.take(MAX_DECODED).read_to_end(&mut sink);
        }
    }
}

/// The `.drv` (ATerm) parser, and its result's accessors.
pub fn derivation(data: &[u8]) {
    if let Ok(d) = nix_heft_format::derivation::Derivation::parse("/nix/store", data) {
        let _ = d.is_fixed_output();
        let _ = d.output("out");
    }
}

/// The nix.conf reader: the bytes as `NIX_CONFIG` and as every file,
/// includes resolved in memory (`nix_conf::fuzz`).
pub fn nix_conf(data: &[u8]) {
    nix_heft_format::nix_conf::fuzz(data);
}

/// A fuzz target's entry point.
pub type Target = fn(&[u8]);

/// Every target by name, for the replay test.
pub const TARGETS: &[(&str, Target)] = &[
    ("nar", nar),
    ("narinfo", narinfo),
    ("listing", listing),
    ("path_info_json", path_info_json),
    ("elf", elf),
    ("store_path", store_path),
    ("decompress", decompress),
    ("derivation", derivation),
    ("nix_conf", nix_conf),
];
