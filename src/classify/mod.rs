//! What holds each store hash the reference scanner finds, by file format.

pub mod elf;
