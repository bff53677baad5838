//! Turning results into what a person or a program reads: aligned tables
//! for the terminal, serde structs for `--json` (the same structs, so the
//! two never disagree).

pub mod plan;
pub mod refs;
pub mod size;
pub mod table;
pub mod why;
