//! Fuzz target: `nix_heft_store::fuzzing::nix_conf` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nix_heft_store::fuzzing::nix_conf(data));
