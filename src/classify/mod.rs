//! What holds each store hash the reference scanner finds (by file format), and whether the reference is needed at run time.

pub mod elf;
pub mod verdict;
