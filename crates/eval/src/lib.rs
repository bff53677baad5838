//! Evaluation: Nix expressions turned into store paths by the user's own
//! tools, never building. [`installable`]s as `nix` takes them, by `nix
//! eval`; [`attrs`]: a nixpkgs-shaped tree's attributes, by
//! `nix-eval-jobs` or `nix-env`, at a directory or a git revision, and
//! which of them changed between two sides.
//!
//! The crate runs programs (`nix`, `nix-instantiate`, `nix-env`,
//! `nix-eval-jobs`, `git`) and reads their output; it opens no store.
//! Above the format crate (store paths, `.drv` files, Nix's error text),
//! below core, whose `resolve` and `impact` call it.

#![warn(missing_docs)]

pub mod attrs;
pub mod eval_store;
pub mod history;
pub mod installable;
