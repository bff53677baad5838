//! Commands the tests of both workspaces (the core's tests/ and survey/)
//! run to build what they test on: std only, so survey/tests can include it
//! with `#[path]`.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

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

/// Panics, saying what is missing, unless this process can build into
/// /nix/store with real Nix: root, and `nix-build` on PATH. Every way the
/// tests run Nix (`run` of a Nix program, `nix`, `nix_build`, and so
/// `common::fixture`) checks it first, so a Nix-backed test run as a user
/// or without Nix fails with this message, never with Nix's own.
pub fn require_nix() {
    static MISSING: OnceLock<Vec<&'static str>> = OnceLock::new();
    let missing = MISSING.get_or_init(|| {
        let mut missing = Vec::new();
        let uid = Command::new("id").arg("-u").output();
        if !uid.is_ok_and(|o| o.stdout.trim_ascii() == b"0") {
            missing.push("root");
        }
        let on_path = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("nix-build").is_file()));
        if !on_path {
            missing.push("nix-build on PATH");
        }
        missing
    });
    assert!(
        missing.is_empty(),
        "this test builds real Nix stores with real Nix, which needs root and \
         nix-build on PATH; missing: {}. Run the Nix tier as CI does, as root: \
         `bash scripts/test.sh` (it installs Nix). `cargo test` alone runs the \
         fast tier, which needs neither.",
        missing.join(", ")
    );
}

/// Runs a command, panicking with its stderr when it fails (and, for a
/// Nix program, first with [`require_nix`]'s message when Nix cannot run).
pub fn run(cmd: &mut Command) -> String {
    if Path::new(cmd.get_program())
        .file_name()
        .is_some_and(|n| n.as_encoded_bytes().starts_with(b"nix"))
    {
        require_nix();
    }
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

/// `git` in `dir` as the fixtures' repositories are made: a fixed
/// identity, no signing, no hooks; with `date`, as the author and
/// committer date. Its trimmed output.
pub fn git_in(dir: &Path, args: &[&str], date: Option<&str>) -> String {
    let mut c = Command::new("git");
    c.arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args);
    if let Some(d) = date {
        c.env("GIT_AUTHOR_DATE", d).env("GIT_COMMITTER_DATE", d);
    }
    run(&mut c).trim().to_string()
}

/// `nix` with the experimental `nix-command` enabled.
pub fn nix() -> Command {
    require_nix();
    let mut c = Command::new("nix");
    c.args(["--extra-experimental-features", "nix-command"]);
    c
}

/// `nix-build` of `attrs` of `file` (sandbox off, no substituters), the
/// store paths it printed.
pub fn nix_build(file: &Path, attrs: &[&str]) -> Vec<String> {
    require_nix();
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
