//! Classifying the byte offsets where the reference scanner found a store hash: what kind of hold each one is.

pub mod elf;
