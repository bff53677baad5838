//! The helpers of `fast`, the committed-fixture tests: the fixtures
//! scripts/make-fast-fixtures.sh made, Nix's recorded answers, and
//! nix-heft run in an environment with no Nix in it.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

// The testsuite's own, for the fast modules' one glob import.
pub use super::{Outcome, outcome};

/// tests/fixtures/fast/, as scripts/make-fast-fixtures.sh left it.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fast")
}

/// The chroot store (`ROOT/nix/store`, `ROOT/nix/var/nix/db/db.sqlite`).
pub fn chroot() -> String {
    fixtures().join("store").display().to_string()
}

/// The signed `file://` cache of every root's closure (xz NARs).
pub fn cache_url() -> String {
    format!("file://{}", fixtures().join("cache").display())
}

/// `name:base64` of the key both caches are signed with.
pub fn cache_key() -> String {
    read_trimmed(&fixtures().join("cache.pub"))
}

/// `name:base64` of a key that signed nothing.
pub fn other_key() -> String {
    read_trimmed(&fixtures().join("other.pub"))
}

fn read_trimmed(p: &Path) -> String {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .trim()
        .to_string()
}

/// The attributes of tests/fixtures/fast/fast.nix the fixtures hold.
pub const ATTRS: &[&str] = &[
    "hello",
    "hello-2",
    "libgreet",
    "libgreet-dev",
    "manual",
    "data",
];

/// `roots.json`: attribute → output path, `attribute.drv` → derivation.
pub fn roots() -> &'static BTreeMap<String, String> {
    static R: OnceLock<BTreeMap<String, String>> = OnceLock::new();
    R.get_or_init(|| {
        let text = std::fs::read_to_string(fixtures().join("roots.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    })
}

/// The output path of `attr`.
pub fn root(attr: &str) -> &'static str {
    &roots()[attr]
}

/// The derivation of `attr`.
pub fn drv(attr: &str) -> &'static str {
    &roots()[&format!("{attr}.drv")]
}

/// Nix 2.8's `nix path-info --json` array, keyed by path.
fn keyed(file: &str) -> BTreeMap<String, Value> {
    let text = std::fs::read_to_string(fixtures().join("nix").join(file)).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v.as_array()
        .expect("Nix 2.8 prints an array")
        .iter()
        .map(|it| (it["path"].as_str().unwrap().to_string(), it.clone()))
        .collect()
}

/// `nix path-info -rsS --json` of every root in the chroot store, as Nix
/// answered when the fixtures were made.
pub fn nix_info() -> &'static BTreeMap<String, Value> {
    static I: OnceLock<BTreeMap<String, Value>> = OnceLock::new();
    I.get_or_init(|| keyed("path-info.json"))
}

/// The same asked of the `file://` cache.
pub fn nix_cache_info() -> &'static BTreeMap<String, Value> {
    static I: OnceLock<BTreeMap<String, Value>> = OnceLock::new();
    I.get_or_init(|| keyed("cache-path-info.json"))
}

/// Nix's `narSize` of `path`.
pub fn nar_size(path: &str) -> u64 {
    nix_info()[path]["narSize"].as_u64().unwrap()
}

/// Nix's `closureSize` of `path`.
pub fn closure_size(path: &str) -> u64 {
    nix_info()[path]["closureSize"].as_u64().unwrap()
}

/// The closure of `path` from Nix's recorded references (every path of
/// `path-info.json` has its references there, as `-r` printed them).
pub fn closure(path: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![path.to_string()];
    while let Some(p) = todo.pop() {
        if seen.insert(p.clone()) {
            for r in nix_info()[&p]["references"].as_array().unwrap() {
                todo.push(r.as_str().unwrap().to_string());
            }
        }
    }
    seen
}

/// Lines of a file of `nix/` (`drv-closure/ATTR`, `references/ATTR`).
pub fn recorded_lines(file: &str) -> BTreeSet<String> {
    std::fs::read_to_string(fixtures().join("nix").join(file))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// A store path's name (after the hash and dash).
pub fn name_of(p: &str) -> &str {
    &p.rsplit('/').next().unwrap()[33..]
}

/// The private environment every run gets: a home, an empty Nix
/// configuration directory and a cache directory under the target's
/// temporary directory (made once per test binary).
fn env_dir() -> &'static Path {
    static D: OnceLock<PathBuf> = OnceLock::new();
    D.get_or_init(|| {
        let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fast-env");
        for sub in ["home", "empty-conf", "cache"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        // A nix.conf left by anything would be read: there must be none.
        let _ = std::fs::remove_file(d.join("empty-conf/nix.conf"));
        d
    })
}

/// The nix-heft binary under test, in an environment that holds no Nix:
/// nothing of this process's environment, PATH a directory that does not
/// exist (so no `nix`, `nix-store`, `nix-build` can run), HOME, the XDG
/// directories and NIX_CONF_DIR private and empty (so no host nix.conf,
/// keys or substituters). A test adds what it means to (NIX_CONFIG).
pub fn heft() -> assert_cmd::Command {
    let d = env_dir();
    let mut c = assert_cmd::Command::cargo_bin("nix-heft").unwrap();
    c.env_clear()
        .env("PATH", "/nonexistent")
        .env("HOME", d.join("home"))
        .env("NIX_CONF_DIR", d.join("empty-conf"))
        .env("XDG_CONFIG_HOME", d.join("home"))
        .env("XDG_CONFIG_DIRS", d.join("empty-conf"))
        .env("XDG_CACHE_HOME", d.join("cache"))
        .current_dir(d.join("home"));
    c
}

/// nix-heft `args` on the chroot store.
pub fn on_chroot(args: &[&str]) -> Outcome {
    outcome(heft().args(["--store", &chroot()]).args(args))
}

/// nix-heft `args` on the chroot store, which must succeed (exit 0): its
/// JSON output.
pub fn json_on_chroot(args: &[&str]) -> Value {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let o = on_chroot(&a);
    assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
    o.json()
}

/// nix-heft `args` on `store`, trusting the fixture caches' key.
pub fn on_cache(store: &str, args: &[&str]) -> Outcome {
    outcome(
        heft()
            .args(["--trusted-public-keys", &cache_key(), "--store", store])
            .args(args),
    )
}

/// Asserts a clean failure: `code`, one `nix-heft: error:` naming
/// `needle`, nothing on stdout.
pub fn assert_error(o: &Outcome, code: i32, needle: &str) {
    assert_eq!(o.code, code, "{}{}", o.stdout, o.stderr);
    assert!(o.stderr.starts_with("nix-heft: error: "), "{}", o.stderr);
    assert!(o.stderr.contains(needle), "lacks {needle:?}: {}", o.stderr);
    assert!(o.stdout.is_empty(), "stdout on error: {}", o.stdout);
}

/// A fresh temporary directory holding a writable copy of the fixture
/// `name` (a test damages the copy, never the committed files).
pub fn copy_of(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::Builder::new()
        .prefix("nix-heft-fast-")
        .tempdir()
        .unwrap();
    let to = tmp.path().join(name);
    copy_tree(&fixtures().join(name), &to);
    (tmp, to)
}

/// Copies a tree: directories, files (with their modes) and symlinks as
/// links; every copy writable by its owner, so the test can damage it.
pub fn copy_tree(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(from).unwrap();
    if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from).unwrap(), to).unwrap();
    } else if meta.is_dir() {
        std::fs::create_dir(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            copy_tree(&e.path(), &to.join(e.file_name()));
        }
    } else {
        std::fs::copy(from, to).unwrap();
        let mode = meta.permissions().mode() | 0o200;
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// The file a narinfo's `URL:` names, in cache directory `cache`, for
/// store path `path`; and the narinfo's own file.
pub fn narinfo_and_nar(cache: &Path, path: &str) -> (PathBuf, PathBuf) {
    let hash = &path["/nix/store/".len()..][..32];
    let narinfo = cache.join(format!("{hash}.narinfo"));
    let url = std::fs::read_to_string(&narinfo)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("URL: ").map(str::to_string))
        .unwrap();
    (narinfo, cache.join(url))
}
