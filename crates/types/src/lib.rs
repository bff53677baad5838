//! The types every nix-heft stage shares, a leaf under the store, the
//! analysis and the reports: [`evidence`] (one hold of a reference: its
//! file, offset, kind and verdict), [`problem`] (what could not be read),
//! [`units`] (IEC sizes), the library's [`error`]s and the programs'
//! [`exit`] codes.

#![warn(missing_docs)]

pub mod error;
pub mod evidence;
pub mod exit;
pub mod problem;
pub mod units;

pub use error::{Error, Result};
