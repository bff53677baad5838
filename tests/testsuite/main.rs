//! nix-heft's integration tests, one binary as cargo's own `tests/testsuite`:
//! a module per feature, sharing `common` (the fixtures: real Nix stores
//! built with real Nix, once per run; the test servers). One binary links the
//! library and its dependencies once, where a binary per file linked them
//! ~30 times over (the CI disk and most of the link time).
//!
//! Two tiers. The fast tier needs neither Nix nor root (cargo, bash,
//! python3, openssl and man): plain `cargo test` runs it with the unit
//! tests, in under a minute. The Nix tier builds real stores with real Nix
//! as root and uses the tools `scripts/test.sh` installs (strace, gcc,
//! chromium, tmux, cmark-gfm...); `--features nix-tests` compiles it in, as
//! scripts/test.sh (and so CI) does. A test that runs a Nix program or
//! needs the common Nix fixtures goes in the Nix tier, listed in
//! `nix_tier!` below; every other module is a `mod` line of its own.
//! `tiers.rs` checks that each file is in exactly one tier and that no
//! fast module reaches for Nix; run without root or Nix, the Nix tier fails
//! at its first use of Nix, saying so (`common::require_nix`).
//!
//! `cargo test --test testsuite review::` runs one module's tests. All the
//! modules run in one process, so a test may not change what is
//! process-wide (environment, working directory, signal dispositions):
//! such a test runs itself in a child process (`common::in_child`), and
//! scratch directories are named per module (`common::scratch`).

mod common;

// The fast tier.
mod browse;
// The committed-fixture tests (tests/fixtures/fast/), no Nix at run time.
mod fast;
mod fuzz_corpus;
mod http2;
mod http_faults;
mod installable_without_nix;
mod packaging;
mod snapshots;
mod stages;
mod tiers;

/// Declares the modules of the Nix tier, compiled with `--features
/// nix-tests`: a module per line.
macro_rules! nix_tier {
    ($($module:ident)*) => { $(#[cfg(feature = "nix-tests")] mod $module;)* };
}

nix_tier! {
    action_impact
    bisect
    bounds
    browse_tmux
    check
    derivation
    diff
    docs
    errors
    evidence
    existing_outputs
    first_hour
    history
    http
    impact
    impact_eval_jobs
    installable
    installable_cli
    integrity
    live_store
    names
    package_nix
    partition
    plan
    reads
    reasons
    refused
    report
    review
    roots
    runpath
    signatures
    size
    snippets
    substituters
    trace
}
