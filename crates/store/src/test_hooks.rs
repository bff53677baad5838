//! Where the tests stop a run on purpose: a test that kills nix-heft in
//! the middle of a cache write, or changes the database while it reads,
//! sets `NIX_HEFT_TEST_*_PAUSE_MS` and waits for the run to get there.

use std::sync::atomic::{AtomicBool, Ordering};

/// The first time it is called with `var` set to a number of
/// milliseconds, creates the file `NIX_HEFT_TEST_PAUSE_FILE` names (what
/// the waiting test looks for: the library prints nothing) and sleeps
/// that long; else does nothing. `once` makes later calls return at once.
pub(crate) fn pause(var: &str, once: &AtomicBool) {
    if once.swap(true, Ordering::Relaxed) {
        return;
    }
    let Some(ms) = std::env::var(var).ok().and_then(|v| v.parse::<u64>().ok()) else {
        return;
    };
    if let Some(file) = std::env::var_os("NIX_HEFT_TEST_PAUSE_FILE") {
        // A test that cannot be told fails on its own wait.
        let _ = std::fs::write(file, var);
    }
    std::thread::sleep(std::time::Duration::from_millis(ms));
}
