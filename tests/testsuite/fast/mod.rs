//! The committed-fixture part of the fast tier: no Nix at run time, so a
//! change is checked in seconds (`cargo test --test testsuite fast::`). The Nix-backed tier,
//! the rest of the testsuite, stays the truth; this one reads what
//! scripts/make-fast-fixtures.sh made with real Nix and committed under
//! tests/fixtures/fast/ (a chroot store with `.drv` files, a signed
//! `file://` binary cache with xz NARs and one with plain NARs, and Nix's
//! own answers at creation time: `nix path-info -rsS --json`,
//! `nix-store -qR` of each derivation, `nix-store -q --references`; and a
//! `nix-heft trace` of one program really run), and compares nix-heft's
//! answers with Nix's.
//!
//! Every run of nix-heft gets an environment of its own
//! (`common::heft`): PATH names no directory, so no `nix`, `nix-store` or
//! `nix-build` can be found, and no NIX_* variable or nix.conf of the host
//! reaches it. Tests that damage a fixture damage a copy in a temporary
//! directory; the committed files are only read.
//!
//! A module per command or concern, as the rest of the testsuite has; the
//! fixtures' helpers in `common::fast_fixtures`.

mod check;
mod cli;
mod corrupt;
mod derivation;
mod diff;
mod plan;
mod refs;
mod report;
mod signatures;
mod size;
mod trace;
mod why;
