//! Fuzz target: `nix_heft_store::fuzzing::nar` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nix_heft_store::fuzzing::nar(data));
