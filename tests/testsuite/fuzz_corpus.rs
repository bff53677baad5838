//! The fuzz corpus and every crash input the fuzzers found, replayed on
//! stable through the same entry points the fuzz targets call
//! (`nix_heft_store::fuzzing`), so CI guards them without nightly or libFuzzer.
//! Seeds are real files: `nix-store --dump` NARs, narinfos and listings
//! from `nix copy`, path-info JSON from Nix, gcc-built ELF files, `.drv`
//! files from `nix-instantiate`.

use std::path::Path;

#[test]
fn every_corpus_and_crash_input_is_handled() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    for (name, target) in nix_heft_store::fuzzing::TARGETS {
        let mut inputs = 0;
        for dir in ["corpus", "artifacts", "regressions"] {
            let d = root.join(dir).join(name);
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd {
                let p = e.unwrap().path();
                if p.is_file() {
                    let data = std::fs::read(&p).unwrap();
                    target(&data);
                    inputs += 1;
                }
            }
        }
        assert!(inputs > 0, "no corpus for fuzz target {name}");
    }
}
