//! nix-heft's analysis, from roots to answers. [`resolve`] turns
//! arguments into store paths (installables evaluated by
//! [`nix_heft_eval::installable`], the rest by [`roots`]); [`graph`] holds
//! the closure, its sizes and dominators, and says which edges a question
//! needs read; [`read`] reads each needed store path once (file tree and
//! raw holds); [`classify`] turns holds into evidence with verdicts;
//! [`explain`] finds the chains that hold a dependency; [`plan`] simulates
//! splits, partitions and advice from those alone; [`diff`] compares two
//! closures and [`check`] is the CI gate's rules over them; [`pipeline`]
//! runs the stages after the graph in order for every caller; [`impact`]
//! compares many attributes' closures across two sides evaluated by
//! [`nix_heft_eval::attrs`]. Only `roots`, `graph::Graph::load` and `read`
//! touch a store.

#![warn(missing_docs)]

pub use error::{Error, Result};
pub mod bisect;
pub mod check;
pub mod classify;
pub mod diff;
pub mod error;
pub mod explain;
pub mod gc;
pub mod graph;
pub mod history;
pub mod impact;
pub mod pipeline;
pub mod plan;
pub mod read;
pub mod refusal;
pub mod resolve;
pub mod roots;
pub mod unregistered;
