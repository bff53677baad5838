//! Fuzz target: `nix_heft_store::fuzzing::elf` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nix_heft_store::fuzzing::elf(data));
