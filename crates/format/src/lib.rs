//! Nix's file formats as nix-heft reads them, on nix-compat's model: each
//! format with its own typed errors, no app types (evidence, problems,
//! verdicts) and no I/O beyond readers and the files a caller names.
//!
//! [`nixbase32`] is Nix's base-32; [`store_path`] holds store paths and
//! Nix's and nixpkgs' naming rules; [`nar`] reads, sizes and dumps NARs;
//! [`listing`] is a binary cache's `.ls` file; [`derivation`] the `.drv`
//! (ATerm) format; [`nix_conf`] nix.conf as Nix reads it, [`netrc`] the
//! credentials file it names; [`elf`] says which part of an ELF file holds
//! a byte; [`relpath`] is the one set of relative-path helpers;
//! [`nixpkgs_review`] reads a nixpkgs-review result directory;
//! [`nix_error`] finds Nix's refusals of a build's outputs (forbidden
//! references, cycles, sizes) in its error text; [`quote`] writes a shell
//! word or a Nix string, the one quoting of every command and snippet.

#![warn(missing_docs)]

pub mod derivation;
pub mod elf;
pub mod listing;
pub mod nar;
pub mod netrc;
pub mod nix_conf;
pub mod nix_error;
pub mod nixbase32;
pub mod nixpkgs_review;
pub mod quote;
pub mod relpath;
pub mod store_path;
#[cfg(any(test, feature = "testutil"))]
#[doc(hidden)]
pub mod testutil;

pub use store_path::StorePath;
