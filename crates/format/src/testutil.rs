//! Helpers for the unit tests that run real tools (gcc, patchelf,
//! nix-store): one copy, so every such test fails the same clear way.

use std::process::Command;

/// Runs `cmd` and returns its stdout; panics with its stderr when it cannot
/// start or fails (scripts/test.sh installs every tool the tests use).
pub fn run(cmd: &mut Command) -> Vec<u8> {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?} (scripts/test.sh installs it): {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
