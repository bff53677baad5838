//! nix-heft's store sources: what a store path is (NAR size, references)
//! and what it contains (files, a NAR, a listing), from a local or chroot
//! store's database, a binary cache over a file or HTTP transport, several
//! of them layered as Nix's substituters, a saved `nix path-info --json`,
//! or the build graph of `.drv` files; and the on-disk cache of what was
//! downloaded. Opened read-only, always.

#![warn(missing_docs)]

pub mod error;
pub use error::{Error, Result};
#[doc(hidden)]
pub mod fuzzing;
pub mod gc;
pub mod local_cache;
pub mod open;
pub mod source;
mod test_hooks;
