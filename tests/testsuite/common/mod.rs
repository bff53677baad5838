//! Shared set-up for the integration tests: real Nix stores built with real
//! Nix, once per run of the test binary (every module shares them), and the
//! test servers: `http_server` (plain HTTP/1.1 files) and `cache_server` (a
//! CDN-like TLS server with HTTP/2, which `examples/cache_server.rs` also
//! runs for the benchmarks).
//!
//! Builds `tests/fixtures/small.nix` and the bundled example
//! `examples/rocm-mini` into `/nix/store` (sandbox off: the derivations run
//! the host's /bin/sh and gcc), then copies them with `nix copy` into a
//! chroot store and a `file://` binary cache, and saves
//! `nix path-info -rsS --json` in both of Nix's JSON shapes.

#![allow(dead_code)]

pub mod cache_server;
pub mod commands;
pub mod execs;
pub mod fast_fixtures;
pub use commands::*;
pub mod fault_server;
pub mod history_fixture;
pub mod http_server;
pub mod impact_fixture;
pub mod review_writer;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

pub struct Fixture {
    /// small.nix attribute → store path.
    pub small: BTreeMap<String, String>,
    /// The bundled example's top-level path (llama-cpp-rocm).
    pub rocm: String,
    /// Every root copied into the other stores.
    pub all_roots: Vec<String>,
    /// Scratch directory that lives as long as the test process.
    pub tmp: PathBuf,
    pub chroot: PathBuf,
    pub cache: PathBuf,
    pub json_array: PathBuf,
    pub json_object: PathBuf,
}

impl Fixture {
    pub fn small(&self, attr: &str) -> &str {
        &self.small[attr]
    }
    /// Every `--store` form for the same paths, with a label.
    pub fn stores(&self) -> Vec<(&'static str, Option<String>)> {
        vec![
            ("local (default)", None),
            ("local", Some("local".into())),
            ("chroot dir", Some(self.chroot.display().to_string())),
            (
                "local?root=",
                Some(format!("local?root={}", self.chroot.display())),
            ),
            (
                "file:// cache",
                Some(format!("file://{}", self.cache.display())),
            ),
            ("cache dir", Some(self.cache.display().to_string())),
            ("json array", Some(self.json_array.display().to_string())),
            ("json object", Some(self.json_object.display().to_string())),
        ]
    }
    /// The store URL Nix itself understands for the same source, to ask Nix
    /// for the reference answers (JSON files are answered by the local store
    /// they were exported from).
    pub fn nix_store_for(&self, label: &str) -> Option<String> {
        match label {
            "chroot dir" | "local?root=" => Some(self.chroot.display().to_string()),
            "file:// cache" | "cache dir" => Some(format!("file://{}", self.cache.display())),
            _ => None,
        }
    }
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `nix path-info -rsS --json` of `paths` in `store`, keyed by path.
pub fn nix_path_info(store: Option<&str>, paths: &[&str]) -> BTreeMap<String, Value> {
    let mut c = nix();
    c.args(["path-info", "-rsS", "--json"]);
    if let Some(s) = store {
        c.args(["--store", s]);
    }
    c.args(paths);
    let v: Value = serde_json::from_str(&run(&mut c)).unwrap();
    match v {
        Value::Array(items) => items
            .into_iter()
            .map(|it| (it["path"].as_str().unwrap().to_string(), it))
            .collect(),
        Value::Object(m) => m.into_iter().collect(),
        _ => panic!("unexpected path-info JSON"),
    }
}

/// `nix-store -q --references` of one path in the local store.
pub fn nix_store_references(path: &str) -> BTreeSet<String> {
    run(Command::new("nix-store").args(["-q", "--references", path]))
        .lines()
        .map(str::to_string)
        .collect()
}

/// Scratch directories removed when the test binary exits: the stores'
/// copies take hundreds of MiB, and a static has no destructor.
static SCRATCH: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

extern "C" fn remove_scratch() {
    for d in SCRATCH.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        let _ = Command::new("chmod").arg("-R").arg("u+w").arg(d).status();
        let _ = std::fs::remove_dir_all(d);
    }
}

/// A new directory under the temporary directory, named `PREFIX…`, kept
/// for the whole test binary and removed when it exits.
pub fn scratch_dir(prefix: &str) -> PathBuf {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .unwrap()
        .keep();
    SCRATCH
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(dir.clone());
    // SAFETY: registering a plain function with no captured state.
    REGISTERED.call_once(|| unsafe {
        libc::atexit(remove_scratch);
    });
    dir
}

/// A copy of the example's Nix files in a [`scratch_dir`], for tests that
/// evaluate them in place (files and `path:` flakes), with the machine's
/// system and a nonce no earlier run has used, for derivations nobody has
/// built.
pub struct ExampleCopy {
    pub dir: PathBuf,
    /// `builtins.currentSystem`, as JSON (a quoted string).
    pub system: String,
    pub nonce: String,
}

pub fn example_copy(prefix: &str) -> ExampleCopy {
    let dir = scratch_dir(prefix);
    let ex = repo().join("examples/rocm-mini");
    std::fs::copy(ex.join("default.nix"), dir.join("default.nix")).unwrap();
    run(Command::new("cp")
        .arg("-r")
        .arg(ex.join("src"))
        .arg(dir.join("src")));
    let system = serde_json::to_string(current_system()).unwrap();
    let nonce = nonce();
    ExampleCopy { dir, system, nonce }
}

/// `builtins.currentSystem` as this machine's `nix-instantiate` says it
/// (`x86_64-linux`), asked once.
pub fn current_system() -> &'static str {
    static S: OnceLock<String> = OnceLock::new();
    S.get_or_init(|| {
        let out = run(Command::new("nix-instantiate").args([
            "--eval",
            "--json",
            "--expr",
            "builtins.currentSystem",
        ]));
        serde_json::from_str(&out).unwrap()
    })
}

pub fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let small_paths = nix_build(&repo().join("tests/fixtures/small.nix"), SMALL_ATTRS);
        let small: BTreeMap<String, String> = SMALL_ATTRS
            .iter()
            .map(|s| s.to_string())
            .zip(small_paths)
            .collect();
        let rocm = nix_build(&repo().join("examples/rocm-mini/default.nix"), &[])
            .pop()
            .unwrap();
        remove_stale_scratch();
        let tmp = scratch_dir("nix-heft-test-");
        let chroot = tmp.join("chroot");
        let cache = tmp.join("cache");
        let all_roots: Vec<String> = small.values().cloned().chain([rocm.clone()]).collect();
        run(nix()
            .args(["copy", "--no-check-sigs", "--to"])
            .arg(&chroot)
            .args(&all_roots));
        // Signed, as a cache owner's `nix copy` signs: runs trust the key
        // through `heft()`'s NIX_CONFIG.
        run(nix()
            .args(["copy", "--to"])
            .arg(format!(
                "file://{}?secret-key={}",
                cache.display(),
                test_key().secret.display()
            ))
            .args(&all_roots));
        let json = run(nix().args(["path-info", "-rsS", "--json"]).args(&all_roots));
        let json_array = tmp.join("path-info-array.json");
        std::fs::write(&json_array, &json).unwrap();
        // Newer Nix (2.19+) prints an object keyed by path; build that shape
        // from the same data so both parsers are tested on Nix's own values.
        let v: Value = serde_json::from_str(&json).unwrap();
        let mut obj = serde_json::Map::new();
        for mut it in v.as_array().unwrap().clone() {
            let p = it["path"].as_str().unwrap().to_string();
            it.as_object_mut().unwrap().remove("path");
            obj.insert(p, it);
        }
        let json_object = tmp.join("path-info-object.json");
        std::fs::write(
            &json_object,
            serde_json::to_string(&Value::Object(obj)).unwrap(),
        )
        .unwrap();
        Fixture {
            small,
            rocm,
            all_roots,
            tmp,
            chroot,
            cache,
            json_array,
            json_object,
        }
    })
}

/// Test binaries keep their scratch directory until they exit (a static
/// has no destructor); the next run removes those older than an hour.
fn remove_stale_scratch() {
    let Ok(rd) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in rd.flatten() {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > 3600);
        if old
            && e.file_name()
                .to_string_lossy()
                .starts_with("nix-heft-test-")
        {
            let _ = Command::new("chmod")
                .arg("-R")
                .arg("u+w")
                .arg(e.path())
                .status();
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// A fresh scratch directory under the fixture's, `MODULE/NAME` for the
/// test module that asks: every module runs in the one test process and
/// shares the fixture, so two modules' `NAME`s must not meet (nor one
/// module's directory be emptied under another's running test).
#[track_caller]
pub fn scratch(name: &str) -> PathBuf {
    let caller = Path::new(std::panic::Location::caller().file());
    let module = caller.file_stem().unwrap_or_default();
    let d = fixture().tmp.join(module).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Set in a child process of the test binary that runs one test alone, for
/// what is process-wide: PATH, the working directory (every module of the
/// suite runs in the one process, so its other tests would see them).
const CHILD: &str = "NIX_HEFT_TEST_CHILD";

/// Whether this is the child [`in_child`] started.
pub fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Runs `test` (a function of the calling module) alone in a child process
/// of this test binary, with `env` set, and requires it to pass.
#[track_caller]
pub fn in_child(test: &str, env: &[(&str, &std::ffi::OsStr)]) {
    // libtest names a test by its path below the crate: `MODULE::NAME`,
    // the module being the caller's file.
    let caller = Path::new(std::panic::Location::caller().file());
    let module = caller.file_stem().unwrap().to_string_lossy();
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([&format!("{module}::{test}"), "--exact", "--nocapture"])
        .env(CHILD, "1");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Copies a directory tree (for corrupting copies of stores and caches).
pub fn copy_tree(from: &Path, to: &Path) {
    run(Command::new("cp").arg("-a").arg(from).arg(to));
}

/// A signing key pair made by `nix-store --generate-binary-cache-key`.
pub struct KeyPair {
    /// The secret key file (`secret-key=` of `nix copy`).
    pub secret: PathBuf,
    /// The public key, `NAME:BASE64`.
    pub public: String,
}

/// A key pair `name`, made once under the test target directory and kept
/// (test runs at once share it: made aside, then renamed).
pub fn key_pair(name: &str) -> KeyPair {
    require_nix();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("test-keys")
        .join(name);
    if !dir.join("public").is_file() {
        std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
        let tmp = tempfile::tempdir_in(dir.parent().unwrap()).unwrap();
        run(Command::new("nix-store")
            .arg("--generate-binary-cache-key")
            .arg(name)
            .arg(tmp.path().join("secret"))
            .arg(tmp.path().join("public")));
        // Another binary may have won the race; its pair is as good.
        let _ = std::fs::rename(tmp.keep(), &dir);
    }
    KeyPair {
        secret: dir.join("secret"),
        public: std::fs::read_to_string(dir.join("public"))
            .unwrap()
            .trim()
            .to_string(),
    }
}

/// `text` (a narinfo written by a test) with a `Sig:` line by `key`, made
/// as Nix makes it: ed25519 over the library's fingerprint, which
/// tests/testsuite/signatures.rs checks against `nix store verify`. For caches a
/// test writes by hand (where no `nix copy` could sign).
pub fn sign_narinfo(text: &str, key: &KeyPair) -> String {
    use base64::Engine;
    use ed25519_dalek::Signer;
    let info = nix_heft_store::source::narinfo::NarInfo::parse(text, "/nix/store", Path::new("t"))
        .expect("a narinfo to sign");
    let fp = nix_heft_store::source::signature::fingerprint(&info).expect("a fingerprint");
    let secret = std::fs::read_to_string(&key.secret).unwrap();
    let (name, b64) = secret.trim().split_once(':').unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    let seed: [u8; 32] = bytes[..32].try_into().unwrap();
    let sig = ed25519_dalek::SigningKey::from_bytes(&seed).sign(fp.as_bytes());
    let sig = base64::engine::general_purpose::STANDARD.encode(sig.to_bytes());
    let mut out = text.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("Sig: {name}:{sig}\n"));
    out
}

/// The key the fixture's `file://` cache is signed with.
pub fn test_key() -> KeyPair {
    key_pair("nix-heft-test-1")
}

/// The public key the committed example cache is signed with.
pub fn example_key() -> String {
    std::fs::read_to_string(repo().join("examples/rocm-mini/cache.pub"))
        .unwrap()
        .trim()
        .to_string()
}

/// nix.conf text that trusts the fixture's and the example's keys, as
/// `heft()` passes it in NIX_CONFIG (a test may set its own instead). The
/// fast tier (tests/testsuite/main.rs) trusts the example's key alone: the
/// fixture's is made by `nix-store`, and nothing there is signed with it.
pub fn trusting_conf() -> String {
    if cfg!(feature = "nix-tests") {
        format!(
            "trusted-public-keys = {} {}",
            test_key().public,
            example_key()
        )
    } else {
        format!("trusted-public-keys = {}", example_key())
    }
}

/// The nix-heft binary under test, trusting the fixture's and the
/// example's signing keys (NIX_CONFIG, as a user's nix.conf would).
pub fn heft() -> assert_cmd::Command {
    let mut c = heft_bare();
    c.env("NIX_CONFIG", trusting_conf());
    c
}

/// The nix-heft binary under test, with the environment as it is but for
/// TMPDIR: a scratch directory of the test process, removed when it ends,
/// so that nothing a run leaves there piles up in /tmp over test runs. A
/// test may set its own.
pub fn heft_bare() -> assert_cmd::Command {
    static TMP: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let mut c = assert_cmd::Command::cargo_bin("nix-heft").unwrap();
    c.env(
        "TMPDIR",
        TMP.get_or_init(|| scratch_dir("nix-heft-test-tmpdir-")),
    );
    c
}

pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// stdout as JSON, or a panic showing both streams.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}{}", self.stdout, self.stderr))
    }
}

/// Runs nix-heft with `--store` (if any) and args.
pub fn heft_run(store: Option<&str>, args: &[&str]) -> Outcome {
    heft_run_env(&[], store, args)
}

/// Asserts a clean failure: exit code 1, one error naming `needle`.
pub fn assert_error(o: &Outcome, needle: &str) {
    assert_failure(o, 1, needle)
}

/// Asserts a clean usage error: exit code 2, one error naming `needle`.
pub fn assert_usage_error(o: &Outcome, needle: &str) {
    assert_failure(o, 2, needle)
}

fn assert_failure(o: &Outcome, code: i32, needle: &str) {
    assert_eq!(
        o.code, code,
        "expected failure, got {}: {}{}",
        o.code, o.stdout, o.stderr
    );
    // clap reports bad flags itself, as `error: ...`. The warnings of what
    // was read before the failure come first.
    let error = o
        .stderr
        .split_inclusive('\n')
        .skip_while(|l| l.starts_with("nix-heft: warning: "))
        .collect::<String>();
    assert!(
        // One prefix for every error, clap's parse errors included.
        error.starts_with("nix-heft: error: "),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains(needle),
        "stderr lacks {needle:?}: {}",
        o.stderr
    );
    assert!(o.stdout.is_empty(), "stdout on error: {}", o.stdout);
}

/// Runs nix-heft as [`heft_run`] does, with extra environment variables
/// (`NIX_HEFT_TABLE_SCAN_AT` to choose how the database is read).
pub fn heft_run_env(env: &[(&str, &str)], store: Option<&str>, args: &[&str]) -> Outcome {
    let mut c = heft();
    c.envs(env.iter().copied());
    if let Some(s) = store {
        c.args(["--store", s]);
    }
    c.args(args);
    outcome(&mut c)
}

/// Runs `c`, a nix-heft command: never a panic, whatever the exit code.
pub fn outcome(c: &mut assert_cmd::Command) -> Outcome {
    let out = c.output().unwrap();
    let o = Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        o.code != 101 && !o.stderr.contains("panicked"),
        "nix-heft panicked: {}",
        o.stderr
    );
    o
}

/// The committed binary cache of the bundled example.
pub fn example_cache() -> PathBuf {
    repo().join("examples/rocm-mini/cache")
}

/// A string no other test run has made (process id and time): a name
/// that makes a derivation new, so it is really built.
pub fn nonce() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// Where the source of `flake` (a `path:` or `git+file:` reference) would
/// be in `/nix/store` had an evaluation copied it there: asked of Nix with
/// a throwaway store, so that asking writes nothing to the real one.
pub fn flake_source(flake: &str) -> PathBuf {
    let scratch = scratch_dir("flake-source");
    let out = run(Command::new("nix")
        .args(["--extra-experimental-features", "nix-command flakes"])
        .args(["flake", "metadata", "--json", "--store"])
        .arg(format!("local?root={}", scratch.display()))
        .arg(flake));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    PathBuf::from(v["path"].as_str().unwrap())
}

/// The bundled example's root, as `examples/rocm-mini/ROOT` names it.
pub fn example_root() -> String {
    std::fs::read_to_string(repo().join("examples/rocm-mini/ROOT"))
        .unwrap()
        .trim()
        .to_string()
}

/// Runs Python's sqlite3 on `db` with `script` (statements using `c`, with
/// `sys.argv[2:]` as the extra `args`), committing and closing so that no
/// WAL side file is left behind.
pub fn sqlite_edit(db: &Path, script: &str, args: &[&str]) {
    run(Command::new("python3")
        .args([
            "-c",
            &format!(
                "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\n{script}\nc.commit()\nc.close()\n"
            ),
        ])
        .arg(db)
        .args(args));
}

/// The paths of the closure of `roots` in `store` (the local store when
/// `None`), as `nix path-info -r` lists them.
pub fn nix_closure_paths(store: Option<&str>, roots: &[&str]) -> Vec<String> {
    let mut c = nix();
    c.args(["path-info", "-r"]);
    if let Some(s) = store {
        c.args(["--store", s]);
    }
    run(c.args(roots)).lines().map(str::to_string).collect()
}

/// `tests/fixtures/diff.nix`'s two versions of one package set, built once
/// per test binary: (before, after) top-level paths.
pub fn diff_fixture() -> &'static (String, String) {
    static F: OnceLock<(String, String)> = OnceLock::new();
    F.get_or_init(|| {
        let mut p = nix_build(
            &repo().join("tests/fixtures/diff.nix"),
            &["before", "after"],
        );
        let after = p.pop().unwrap();
        let before = p.pop().unwrap();
        (before, after)
    })
}

/// `tests/fixtures/story.nix`'s ROCm-shaped growth (a rebuilt llama whose
/// rocblas links twelve new `tensile-gfx*` paths, a README naming a large
/// rocsparse), built once per test binary: (before, after).
pub fn story_fixture() -> &'static (String, String) {
    static F: OnceLock<(String, String)> = OnceLock::new();
    F.get_or_init(|| {
        let mut p = nix_build(
            &repo().join("tests/fixtures/story.nix"),
            &["before", "after"],
        );
        let after = p.pop().unwrap();
        let before = p.pop().unwrap();
        (before, after)
    })
}

/// Renders markdown as GitHub does for a comment: cmark-gfm (GitHub's fork
/// of cmark) with its table extension, raw HTML such as `<details>` kept.
pub fn render_gfm(md: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("cmark-gfm")
        .args([
            "--unsafe",
            "-e",
            "table",
            "-e",
            "autolink",
            "-e",
            "strikethrough",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("cmark-gfm is needed (scripts/test.sh installs Debian's cmark-gfm)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(md.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "cmark-gfm failed: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The closure of `root` in the local store, as `nix path-info -r` lists it.
pub fn closure_set(root: &str) -> BTreeSet<String> {
    nix_closure_paths(None, &[root]).into_iter().collect()
}

/// `json` (a report's JSON) without its `origins`, which say which store
/// and key each path came from and so differ between stores that give
/// the same answer; text that is not a JSON object is returned as it is.
pub fn without_origins(json: &str) -> String {
    without_keys(json, &["origins"])
}

/// `json` (a report's JSON object) without the top-level `keys`; text that
/// is not a JSON object is returned as it is.
pub fn without_keys(json: &str, keys: &[&str]) -> String {
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(mut m)) => {
            for k in keys {
                m.remove(*k);
            }
            let mut s = serde_json::to_string(&Value::Object(m)).unwrap();
            s.push('\n');
            s
        }
        _ => json.to_string(),
    }
}

/// `file://DIR?QUERY&secret-key=…`: a cache URL that `nix copy --to`
/// signs with [`test_key`], which `heft()` trusts. `query` may be empty.
pub fn signed_cache_url(dir: &Path, query: &str) -> String {
    let sep = if query.is_empty() { "" } else { "&" };
    format!(
        "file://{}?{query}{sep}secret-key={}",
        dir.display(),
        test_key().secret.display()
    )
}

/// Equal outputs (JSON compared without its `origins`, see
/// [`without_origins`]), or a panic showing where they part (outputs are
/// long).
pub fn same(a: &str, b: &str, what: &str) {
    let (a, b) = (&without_origins(a), &without_origins(b));
    if a != b {
        let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        let from = at.saturating_sub(200);
        panic!(
            "{what}: outputs differ at byte {at}:\n  {}\n  {}",
            &a[from..(at + 200).min(a.len())],
            &b[from..(at + 200).min(b.len())]
        );
    }
}

/// The build graph's subject for `report` and `browse --derivation`: a
/// derivation over the bundled example (built, as [`fixture`] builds it)
/// whose own output nobody built (a unique name), instantiated; its
/// `.drv` path and that output's path.
pub fn unbuilt_over_example() -> &'static (String, String) {
    static F: OnceLock<(String, String)> = OnceLock::new();
    F.get_or_init(|| {
        let f = fixture();
        let dir = f.tmp.join("build-graph");
        std::fs::create_dir_all(&dir).unwrap();
        let nonce = nonce();
        let file = dir.join("unbuilt.nix");
        std::fs::write(
            &file,
            format!(
                r#"let p = import {} {{ }}; in
derivation {{
  name = "unbuilt-top-{nonce}";
  system = builtins.currentSystem;
  builder = "/bin/sh";
  args = [ "-c" "echo ${{p}} > $out" ];
}}"#,
                repo().join("examples/rocm-mini/default.nix").display()
            ),
        )
        .unwrap();
        let drv = run(Command::new("nix-instantiate").arg(&file))
            .trim()
            .to_string();
        let out = drv_outputs(&drv).pop().unwrap();
        assert!(!Path::new(&out).exists(), "{out} is built");
        (drv, out)
    })
}

/// The outputs of a derivation, as `nix-store -q --outputs` lists them.
pub fn drv_outputs(drv: &str) -> Vec<String> {
    run(Command::new("nix-store").args(["-q", "--outputs", drv]))
        .lines()
        .map(str::to_string)
        .collect()
}

/// A node's size in the build graph as Nix gives it: a derivation's valid
/// outputs' NAR sizes summed (`nix path-info`), a source's own.
pub fn build_graph_size(path: &str) -> u64 {
    let of: Vec<String> = if path.ends_with(".drv") {
        drv_outputs(path)
            .into_iter()
            .filter(|o| Path::new(o).exists())
            .collect()
    } else {
        vec![path.to_string()]
    };
    if of.is_empty() {
        return 0;
    }
    let info: Value =
        serde_json::from_str(&run(nix().args(["path-info", "--json"]).args(&of))).unwrap();
    info.as_array()
        .unwrap()
        .iter()
        .map(|i| i["narSize"].as_u64().unwrap())
        .sum()
}

/// A CA, and a certificate for 127.0.0.1 that it signed.
pub struct TlsCerts {
    /// The CA's certificate (PEM), for NIX_SSL_CERT_FILE.
    pub ca: PathBuf,
    /// The server's certificate (PEM), for 127.0.0.1.
    pub cert: PathBuf,
    /// The server's key (PEM).
    pub key: PathBuf,
}

/// Made once per test process with `openssl`, for the tests' TLS servers.
pub fn tls_certs() -> &'static TlsCerts {
    static C: OnceLock<TlsCerts> = OnceLock::new();
    C.get_or_init(|| {
        let dir = scratch_dir("tls-certs");
        commands::run(Command::new("sh").current_dir(&dir).arg("-c").arg(
            "set -e
             openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
               -keyout ca.key -out ca.pem -days 2 -subj /CN=nix-heft-test-ca 2>/dev/null
             openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
               -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 2>/dev/null
             printf 'subjectAltName=IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > ext
             openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
               -out srv.pem -days 2 -extfile ext 2>/dev/null",
        ));
        TlsCerts {
            ca: dir.join("ca.pem"),
            cert: dir.join("srv.pem"),
            key: dir.join("srv.key"),
        }
    })
}
