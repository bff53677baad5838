//! nix-heft's answers, computed from what the graph and the scan hold:
//! [`explain`] finds the chains that hold a dependency; [`plan`] simulates
//! splits, partitions and advice; [`diff`] compares two closures; [`check`]
//! is the CI gate's rules over them, [`rules`] the closure rules the gates
//! share; [`refusal`] explains the references a
//! build's check refused. Nothing here opens a file, a process or a socket:
//! the crate does not depend on the store, and `clippy.toml` beside it
//! disallows what would.

#![warn(missing_docs)]

pub use error::{Error, Result};
pub mod check;
pub mod diff;
pub mod error;
pub mod explain;
pub mod plan;
pub mod refusal;
pub mod rules;
