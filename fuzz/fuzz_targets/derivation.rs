//! Fuzz target: `nix_heft::fuzzing::derivation` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nix_heft::fuzzing::derivation(data));
