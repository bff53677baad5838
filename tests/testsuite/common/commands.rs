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

/// Whether `cmd` runs a Nix program (`nix`, `nix-build`, `nix-store`…).
fn is_nix(cmd: &Command) -> bool {
    Path::new(cmd.get_program())
        .file_name()
        .is_some_and(|n| n.as_encoded_bytes().starts_with(b"nix"))
}

/// Whether `cmd`, a Nix program, opens the system store (`/nix/store` and
/// `/nix/var/nix/db`): every Nix command does unless its `--store` names
/// another one (a chroot store, a `file://` cache). `nix copy --to X`
/// with no `--store` reads the system store, so it counts.
fn opens_system_store(cmd: &Command) -> bool {
    let args: Vec<&std::ffi::OsStr> = cmd.get_args().collect();
    match args.iter().position(|a| *a == "--store") {
        Some(i) => args
            .get(i + 1)
            .is_none_or(|s| ["local", "auto", "daemon", "/"].iter().any(|l| s == l)),
        None => true,
    }
}

/// The file behind [`system_store_lock`]: one per machine, so that test
/// binaries run at once (nextest, a child of [`in_child`](super::in_child),
/// survey/'s tests) take the same lock.
fn lock_file_path() -> std::path::PathBuf {
    std::env::temp_dir().join("nix-heft-tests-system-store.lock")
}

thread_local! {
    /// How many [`SystemStoreLock`]s this thread holds: a helper that holds
    /// the lock may run a helper that takes it again.
    static HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Held while one Nix process of the tests runs on the system store; see
/// [`system_store_lock`].
pub struct SystemStoreLock {
    /// The locked file, or `None` when this thread held the lock already.
    file: Option<std::fs::File>,
}

impl Drop for SystemStoreLock {
    fn drop(&mut self) {
        // The file is closed after this, which releases the flock.
        HELD.set(HELD.get() - 1);
    }
}

/// The one lock every Nix process the tests start on the system store is
/// run under ([`run`], [`nix_output`], and so `nix_build`, `nix` and
/// `common::fixture`), across threads and processes (an flock).
///
/// Why: the tests run in parallel (libtest's threads, nextest's
/// processes) and many of them build, instantiate, copy, import or
/// collect in the one system store at once. Nix 2.8 retries SQLITE_BUSY
/// only around its transactions (`retrySQLite` in libstore/sqlite.hh:
/// registering, invalidating, signing and querying paths); opening the
/// store is not retried (`LocalStore::LocalStore` and `openDB` in
/// local-store.cc: the journal mode queried and set, the
/// auto-checkpoint pragma, the schema of a new store, each statement
/// prepared), nor are `verifyStore`'s updates, nor a schema upgrade. SQLite
/// itself answers SQLITE_BUSY at once, without its busy handler, when a
/// transaction that has read must write after another process wrote
/// (`SQLITE_BUSY_SNAPSHOT`). So two of the tests' Nix processes at once
/// could fail with "SQLite database '/nix/var/nix/db/db.sqlite' is busy"
/// (seen: action_impact's `nix-build` beside the other tests' builds,
/// issue 52). Under this lock one test-started Nix process at a time uses
/// the system store; Nix retries nothing that this hides. The Nix
/// processes nix-heft itself starts read the system store (`nix eval
/// --read-only`) or write a scratch store of their own, but for
/// `bisect --build`, whose test takes this lock around it.
///
/// Processes on a store of their own (a chroot or `file://` store named by
/// `--store`) need no lock: each test makes its own. Hold it around one
/// process only, never while waiting for another thread (a fixture's
/// `OnceLock`), which may be waiting for it.
pub fn system_store_lock() -> SystemStoreLock {
    if HELD.get() > 0 {
        HELD.set(HELD.get() + 1);
        return SystemStoreLock { file: None };
    }
    let path = lock_file_path();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("cannot open the tests' store lock {}: {e}", path.display()));
    file.lock()
        .unwrap_or_else(|e| panic!("cannot lock {}: {e}", path.display()));
    HELD.set(1);
    let lock = SystemStoreLock { file: Some(file) };
    init_system_store();
    lock
}

/// On a machine where Nix was just installed (or `/nix` removed), the
/// first Nix process creates the database and its schema
/// (`LocalStore::LocalStore`, schema 0): two first processes at once would
/// both create it. The first lock taken by a test process opens the store
/// once, alone (`nix-store --init`, which does nothing else), so no test's
/// Nix process is ever the first. scripts/test.sh does the same before
/// any test, for the Nix processes nix-heft starts.
fn init_system_store() {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        run(Command::new("nix-store").arg("--init"));
    });
}

/// `cmd`'s output, run as [`run`] runs it (under [`system_store_lock`]
/// when it is a Nix program on the system store), for a test that judges
/// a failing command itself.
pub fn nix_output(cmd: &mut Command) -> std::process::Output {
    let _lock = lock_for(cmd);
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// [`system_store_lock`] when `cmd` is a Nix program that opens the
/// system store (after [`require_nix`]'s check), else nothing.
fn lock_for(cmd: &Command) -> Option<SystemStoreLock> {
    if !is_nix(cmd) {
        return None;
    }
    require_nix();
    opens_system_store(cmd).then(system_store_lock)
}

/// Runs a command, panicking with its stderr when it fails (and, for a
/// Nix program, first with [`require_nix`]'s message when Nix cannot run).
/// A Nix program on the system store runs under [`system_store_lock`].
pub fn run(cmd: &mut Command) -> String {
    let out = nix_output(cmd);
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
