//! nix-heft's integration tests, one binary as cargo's own `tests/testsuite`:
//! a module per feature, sharing `common` (the fixtures: real Nix stores
//! built with real Nix, once per run; the test servers). One binary links the
//! library and its dependencies once, where a binary per file linked them
//! ~30 times over (the CI disk and most of the link time).
//!
//! `cargo test --test testsuite review::` runs one module's tests. All the
//! modules run in one process, so a test may not change what is
//! process-wide (environment, working directory, signal dispositions):
//! such a test runs itself in a child process (`installable.rs`'s
//! `in_child`), and scratch directories are named per module
//! (`common::scratch`).

mod common;

mod action_impact;
mod bounds;
mod browse;
mod check;
mod derivation;
mod diff;
mod docs;
mod errors;
mod evidence;
mod existing_outputs;
mod first_hour;
mod fuzz_corpus;
mod http;
mod http2;
mod impact;
mod impact_eval_jobs;
mod installable;
mod installable_cli;
mod integrity;
mod live_store;
mod names;
mod packaging;
mod partition;
mod plan;
mod reads;
mod reasons;
mod refused;
mod report;
mod review;
mod roots;
mod runpath;
mod signatures;
mod size;
mod snapshots;
mod snippets;
mod stages;
mod substituters;
mod trace;
