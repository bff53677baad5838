//! `nix-heft browse` through the real binary in tmux: on the bundled
//! example's cache, and on the build graph of a derivation nobody built
//! (`browse --derivation`, which Nix instantiates). The screens themselves
//! are checked on ratatui's `TestBackend` in tests/testsuite/browse.rs.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux")
        .args(args)
        .output()
        .expect("tmux is needed (scripts/test.sh installs it)");
    assert!(out.status.success(), "tmux {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A tmux session on a private server socket (so the test never touches
/// anyone's tmux) running one command; the server is killed when dropped.
pub(crate) struct Tmux {
    sock: String,
    session: String,
}

impl Tmux {
    pub(crate) fn start(name: &str, columns: u16, rows: u16, cmd: &str) -> Tmux {
        let t = Tmux {
            sock: format!("heft-test-{name}-{}", std::process::id()),
            session: format!("heft-{name}-{}", std::process::id()),
        };
        let (x, y) = (columns.to_string(), rows.to_string());
        t.tmux(&[
            "new-session",
            "-d",
            "-s",
            &t.session,
            "-x",
            &x,
            "-y",
            &y,
            cmd,
        ]);
        t
    }

    pub(crate) fn tmux(&self, a: &[&str]) -> String {
        let mut v = vec!["-L", self.sock.as_str()];
        v.extend_from_slice(a);
        tmux(&v)
    }

    /// Sends `key` to the session.
    pub(crate) fn keys(&self, key: &str) {
        self.tmux(&["send-keys", "-t", &self.session, key]);
    }

    /// The screen once `done` holds of it, within `secs` seconds.
    pub(crate) fn until(&self, secs: u64, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.tmux(&["capture-pane", "-p", "-t", &self.session]);
            if done(&s) {
                return s;
            }
            assert!(start.elapsed() < Duration::from_secs(secs), "{what}:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The screen once it shows `needle`.
    pub(crate) fn wait(&self, needle: &str) -> String {
        self.until(30, &format!("{needle:?} never shown"), |s| {
            s.contains(needle)
        })
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.sock, "kill-server"])
            .status();
    }
}

#[test]
fn real_binary_in_tmux_starts_moves_resizes_and_quits_cleanly() {
    let bin = assert_cmd::cargo::cargo_bin("nix-heft");
    // The example cache's key trusted as heft() trusts it.
    let cmd = format!(
        "NIX_CONFIG='{}' {} --store {} browse {}; echo EXITED rc=$?; sleep 60",
        trusting_conf(),
        bin.display(),
        example_cache().display(),
        example_root()
    );
    let t = Tmux::start("browse", 80, 24, &cmd);
    let s = t.wait("evidence: ready");
    let row = |s: &str, name: &str| s.lines().position(|l| l.contains(name));
    let first = s.lines().find(|l| l.contains('▶')).unwrap().to_string();
    assert!(first.contains("rocbl"), "{s}");
    t.keys("j");
    // clr is listed from the start: wait for the cursor to reach it.
    let s = t.until(30, "never moved", |s| {
        s.lines()
            .any(|l| l.contains('▶') && l.contains("clr-5.7.1"))
    });
    let moved = s.lines().find(|l| l.contains('▶')).unwrap();
    assert_ne!(moved, first, "cursor did not move:\n{s}");
    assert!(row(&s, "▶") > Some(1), "{s}");
    // Resize: the panes follow the new width.
    t.tmux(&["resize-window", "-t", &t.session, "-x", "120", "-y", "30"]);
    t.until(10, "no redraw at 120 columns", |s| {
        s.lines().next().is_some_and(|l| l.chars().count() > 100)
    });
    t.keys("q");
    let s = t.wait("EXITED rc=0");
    // The alternate screen is gone: no pane border is left on screen.
    assert!(!s.contains("details"), "screen not restored:\n{s}");
}

/// `browse --derivation` through the real binary: the build graph of a
/// derivation over the example whose own output nobody built. The status
/// line counts `nix-store -qR`'s paths and the one derivation of unknown
/// size; a derivation's self size is its outputs' (`nix path-info`); the
/// unbuilt one, reached as a referrer, lists its output as unknown.
#[test]
fn real_binary_browses_the_build_graph_in_tmux() {
    let (drv, unbuilt_out) = unbuilt_over_example();
    let n = run(Command::new("nix-store").args(["-qR", drv]))
        .lines()
        .count();
    let bin = assert_cmd::cargo::cargo_bin("nix-heft");
    let cmd = format!(
        "{} browse --derivation {drv}; echo EXITED rc=$?; sleep 60",
        bin.display()
    );
    let t = Tmux::start("browse-drv", 160, 30, &cmd);
    let s = t.wait("evidence: ready");
    assert!(s.contains(&format!("| {n} paths, 1 unknown size |")), "{s}");
    assert!(s.contains(" details (build graph) "), "{s}");
    // The root's one input: the example's derivation, sized by its output.
    let cursor = s.lines().find(|l| l.contains('▶')).unwrap();
    assert!(cursor.contains("llama-cpp-rocm-0.0.0.drv"), "{s}");
    let input = run(Command::new("nix-store").args(["-q", "--references", drv]));
    let input = input.trim();
    assert!(input.ends_with("-llama-cpp-rocm-0.0.0.drv"), "{input}");
    let own = nix_heft_types::units::iec(build_graph_size(input));
    assert!(
        s.contains(&format!("self    {own} (its outputs)")),
        "{own}:\n{s}"
    );
    assert!(s.contains("drv-input [build]"), "{s}");
    // Into it, then over to its referrer: the unbuilt derivation.
    t.keys("l");
    t.wait("referrers (1)");
    t.keys("Tab");
    let s = t.wait("outputs of unknown size (as 0):");
    let hash = &unbuilt_out["/nix/store/".len()..][..32];
    assert!(s.contains(hash), "{s}");
    t.keys("q");
    t.wait("EXITED rc=0");
}

/// `browse` prints the run's warnings once, on leaving, as every command
/// does (errors::each_warning_is_printed_once_by_every_command counts the
/// others'): on a cache whose root's NAR is unreadable and whose root's
/// narinfo is unsigned, stderr (kept in a file: the terminal is the
/// browser's) has the signature's warning once and the NAR's once, and
/// the exit code is 3, partial.
#[test]
fn browse_prints_each_warning_once() {
    let dir = scratch("browse-warned");
    let cache = crate::errors::warned_cache(&dir);
    let err = dir.join("stderr");
    let bin = assert_cmd::cargo::cargo_bin("nix-heft");
    let cmd = format!(
        "NIX_CONFIG='{}' {} --no-require-sigs --store {} browse {} 2>{}; echo EXITED rc=$?; sleep 60",
        trusting_conf(),
        bin.display(),
        cache.display(),
        example_root(),
        err.display()
    );
    let t = Tmux::start("browse-warned", 100, 30, &cmd);
    t.wait("evidence: ready, 1 problems");
    t.keys("q");
    t.wait("EXITED rc=3");
    let stderr = std::fs::read_to_string(&err).unwrap();
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("nix-heft: warning: "))
        .collect();
    let count = |needle: &str| warnings.iter().filter(|l| l.contains(needle)).count();
    assert_eq!(count("without a valid signature"), 1, "{stderr}");
    assert_eq!(count(&format!("warning: {}: NAR", example_root())), 1, "{stderr}");
    assert_eq!(warnings.len(), 2, "{stderr}");
}
