//! Fuzz target: `nix_heft::fuzzing::nar` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nix_heft::fuzzing::nar(data));
