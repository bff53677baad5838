//! Commands the tests of both workspaces (the core's tests/ and survey/)
//! run to build what they test on: std only, so survey/tests can include it
//! with `#[path]`.

use std::path::Path;
use std::process::Command;

/// The attributes of tests/fixtures/small.nix that the fixtures build.
pub const SMALL_ATTRS: &[&str] = &[
    "base",
    "left",
    "right",
    "top",
    "second",
    "loopy",
    "oddnames",
    "binconsumer",
    "dup1",
    "dup2",
    "twins",
    "weakapp",
    "onetarget",
    "longuser",
    "multi-out",
    "multi-dev",
    "multi-doc",
];

/// Runs a command, panicking with its stderr when it fails.
pub fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `nix` with the experimental `nix-command` enabled.
pub fn nix() -> Command {
    let mut c = Command::new("nix");
    c.args(["--extra-experimental-features", "nix-command"]);
    c
}

/// `nix-build` of `attrs` of `file` (sandbox off, no substituters), the
/// store paths it printed.
pub fn nix_build(file: &Path, attrs: &[&str]) -> Vec<String> {
    let mut c = Command::new("nix-build");
    c.arg(file)
        .args([
            "--option",
            "sandbox",
            "false",
            "--option",
            "substituters",
            "",
        ])
        .arg("--no-out-link");
    for a in attrs {
        c.args(["-A", a]);
    }
    run(&mut c).lines().map(str::to_string).collect()
}
