//! nix-heft's operations: what a command asks, run through the crates
//! below in order. [`resolve`] turns arguments into store paths
//! (installables evaluated by [`nix_heft_eval::installable`], the rest by
//! [`roots`]); [`pipeline`] runs the stages after the graph (the scan's
//! read and classify, then an analysis) for every caller; [`impact`]
//! compares many attributes' closures across two sides evaluated by
//! [`nix_heft_eval::attrs`]; [`gc`] is the collector's view of a whole
//! store; [`history`] and [`bisect`] follow a closure over commits. Of
//! the crates under the binary, only this one runs Nix (through eval).

#![warn(missing_docs)]

pub use error::{Error, Result};
pub mod bisect;
pub mod error;
pub mod gc;
pub mod history;
pub mod impact;
pub mod pipeline;
pub mod resolve;
pub mod roots;
