//! nix-heft's read of the paths a question needs, and what their bytes
//! say. [`read`] goes over each needed store path once (its file tree and
//! every hold of a wanted hash, from disk or one NAR stream);
//! [`unregistered`] reads trees that are not valid paths (a failed build's
//! outputs) as Nix would register them; [`classify`] turns holds into
//! evidence with verdicts. Of the analysis crates, only this one reads a
//! path's files.

#![warn(missing_docs)]

pub use error::{Error, Result};
pub mod classify;
pub mod error;
pub mod read;
pub mod unregistered;
