//! Fuzz target: `nix_heft_store::fuzzing::narinfo` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nix_heft_store::fuzzing::narinfo(data));
