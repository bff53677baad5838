//! The repository `history`'s tests read (issue 42): 200 first-parent
//! commits of tests/fixtures/history/default.nix, made with git, and a
//! signed binary cache holding what a builder built at every tenth commit,
//! as a cache holds only what was evaluated and built. Served over
//! loopback HTTP with a delay on each answer.
//!
//! The commits (n = 1..=200, one hour apart from 2025-01-01):
//! - n ≢ 5 (mod 10): "stamp: n-1 -> n" (app's out path changes);
//!   n ≡ 5: "unrelated: n" (app unchanged);
//! - 81..=93: app takes libcore from an attribute that is not there (app,
//!   and only app, fails to evaluate); 94 fixes it;
//! - 133: libcore 1.0 -> 1.0.1 (its own change, no new reference);
//! - 137: libcore's README names bigdata (3 MiB): app and libcore grow.
//!
//! Cached: every n ≡ 0 (mod 10), the attributes that evaluate there (app
//! and libcore with both outputs; libcore only at 90).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use super::cache_server::{CacheServer, Options};
use super::{nix, nonce, repo, run, scratch_dir, signed_cache_url};

/// Commits in the repository.
pub const COMMITS: usize = 200;
/// The commits where app does not evaluate.
pub const BROKEN: std::ops::RangeInclusive<usize> = 81..=93;
/// The commit whose libcore names bigdata.
pub const CULPRIT: usize = 137;
/// The decoy: libcore's own change, no new reference.
pub const DECOY: usize = 133;

/// The repository and its cache.
pub struct HistoryFixture {
    /// The git checkout.
    pub repo: PathBuf,
    /// Commit hash of each n (index n - 1).
    pub commits: Vec<String>,
    /// The signed file:// cache's directory.
    pub cache_dir: PathBuf,
    /// The cache served over HTTP.
    pub server: CacheServer,
    /// The commits a builder built, one a line (the "revs file").
    pub cached_file: PathBuf,
    /// For each cached n: attribute → output → path.
    pub outputs: BTreeMap<usize, BTreeMap<String, BTreeMap<String, String>>>,
}

impl HistoryFixture {
    /// The commit hash of commit n.
    pub fn commit(&self, n: usize) -> &str {
        &self.commits[n - 1]
    }

    /// Whether app is cached at commit n.
    pub fn app_cached(n: usize) -> bool {
        n.is_multiple_of(10) && !BROKEN.contains(&n)
    }

    /// The closure size of `paths` together in the cache, as Nix counts it
    /// (`nix path-info -r --json`, summed once per path).
    pub fn closure_size(&self, paths: &[&str]) -> u64 {
        let out = run(nix()
            .args(["path-info", "-r", "--json", "--store"])
            .arg(format!("file://{}", self.cache_dir.display()))
            .args(paths));
        let v: Value = serde_json::from_str(&out).unwrap();
        let mut seen = std::collections::BTreeSet::new();
        v.as_array()
            .unwrap()
            .iter()
            .filter(|p| seen.insert(p["path"].as_str().unwrap().to_string()))
            .map(|p| p["narSize"].as_u64().unwrap())
            .sum()
    }
}

/// What commit n's tree says.
fn render(template: &str, n: usize, salt: &str) -> String {
    let stamp = if n % 10 == 5 { n - 1 } else { n };
    let unrelated = n / 10 * 10 + if n % 10 >= 5 { 5 } else { 0 };
    template
        .replace("@SALT@", salt)
        .replace("@STAMP@", &stamp.to_string())
        .replace("@UNRELATED@", &unrelated.to_string())
        .replace("@LIBVER@", if n >= DECOY { "1.0.1" } else { "1.0" })
        .replace("@BIGDOC@", if n >= CULPRIT { "true" } else { "false" })
        .replace(
            "@BROKEN@",
            if BROKEN.contains(&n) { "true" } else { "false" },
        )
}

/// Commit n's subject.
pub fn subject(n: usize) -> String {
    match n {
        1 => "pkgs: init".into(),
        81 => "app: take libcore from the refactored set".into(),
        94 => "app: fix the refactor".into(),
        DECOY => "libcore: 1.0 -> 1.0.1".into(),
        CULPRIT => "libcore: document the test data".into(),
        n if n % 10 == 5 => format!("unrelated: {n}"),
        n => format!("stamp: {} -> {n}", n - 1),
    }
}

fn git(dir: &Path, args: &[&str], date: Option<&str>) -> String {
    super::git_in(dir, args, date)
}

/// The date of commit n.
pub fn date(n: usize) -> String {
    format!("2025-01-{:02}T{:02}:00:00+00:00", 1 + n / 24, n % 24)
}

/// The local store's share of the fixture: tests that check that no
/// output of it is in the local store hold this for reading; the one that
/// builds some (`bisect --build`) holds it alone, and deletes what it
/// built before letting go.
pub fn local_store_lock() -> &'static std::sync::RwLock<()> {
    static L: std::sync::RwLock<()> = std::sync::RwLock::new(());
    &L
}

/// The fixture, made on first use and shared by the test process.
pub fn history_fixture() -> &'static HistoryFixture {
    static F: OnceLock<HistoryFixture> = OnceLock::new();
    F.get_or_init(make)
}

fn make() -> HistoryFixture {
    let salt = nonce();
    let top = scratch_dir("nix-heft-test-history-");
    let template = std::fs::read_to_string(repo().join("tests/fixtures/history/default.nix"))
        .expect("tests/fixtures/history/default.nix");
    let repo_dir = top.join("pkgs");
    std::fs::create_dir_all(&repo_dir).unwrap();
    git(&repo_dir, &["init", "-q", "-b", "master"], None);
    git(
        &repo_dir,
        &[
            "remote",
            "add",
            "origin",
            "https://github.com/example/pkgs.git",
        ],
        None,
    );
    let system = super::current_system();
    let flake = std::fs::read_to_string(repo().join("tests/fixtures/history/flake.nix"))
        .expect("tests/fixtures/history/flake.nix")
        .replace("@SYSTEM@", system);
    std::fs::write(repo_dir.join("flake.nix"), flake).unwrap();
    let mut commits = Vec::new();
    let mut trees: Vec<(usize, PathBuf)> = Vec::new();
    for n in 1..=COMMITS {
        let text = render(&template, n, &salt);
        std::fs::write(repo_dir.join("default.nix"), &text).unwrap();
        git(&repo_dir, &["add", "default.nix", "flake.nix"], None);
        git(
            &repo_dir,
            &["commit", "-q", "-m", &subject(n)],
            Some(&date(n)),
        );
        commits.push(git(&repo_dir, &["rev-parse", "HEAD"], None));
        if n.is_multiple_of(10) {
            let tree = top.join(format!("trees/c{n:03}"));
            std::fs::create_dir_all(&tree).unwrap();
            std::fs::write(tree.join("default.nix"), &text).unwrap();
            trees.push((n, tree));
        }
    }

    // What each cached commit's attributes evaluate to, as nixpkgs' CI
    // evaluates (`nix-env -qaP --out-path --json`, read-only).
    let mut outputs = BTreeMap::new();
    for (n, tree) in &trees {
        let mut attrs = BTreeMap::new();
        // One attribute at a time: nix-env stops at the first that does
        // not evaluate (app, at 90).
        for attr in ["app", "libcore"] {
            if attr == "app" && BROKEN.contains(n) {
                continue;
            }
            let out = run(Command::new("nix-env")
                .args(["-qaP", "--out-path", "--json", "--readonly-mode", "-f"])
                .arg(tree)
                .args(["-A", attr]));
            let v: Value = serde_json::from_str(&out).unwrap();
            let o = v[attr]["outputs"].as_object().expect("outputs");
            attrs.insert(
                attr.to_string(),
                o.iter()
                    .map(|(k, p)| (k.clone(), p.as_str().unwrap().to_string()))
                    .collect::<BTreeMap<_, _>>(),
            );
        }
        outputs.insert(*n, attrs);
    }

    // Built as a builder builds what evaluates: app and libcore (both
    // outputs) of every cached commit, in one nix-build.
    let mut expr = String::from("builtins.concatLists [\n");
    for (n, tree) in &trees {
        let app = if BROKEN.contains(n) { "" } else { "p.app " };
        expr.push_str(&format!(
            "  (let p = import {} {{}}; in [ {app}p.libcore.out p.libcore.dev ])\n",
            tree.join("default.nix").display()
        ));
    }
    expr.push(']');
    run(Command::new("nix-build")
        .args(["--no-out-link", "-E", &expr])
        .args([
            "--option",
            "sandbox",
            "false",
            "--option",
            "build-users-group",
            "",
            "--option",
            "substituters",
            "",
            "--max-jobs",
            "2",
        ]));
    let built: Vec<String> = outputs
        .iter()
        .flat_map(|(n, attrs)| {
            attrs
                .iter()
                .filter(|(a, _)| *a == "libcore" || (*a == "app" && !BROKEN.contains(n)))
                .flat_map(|(_, o)| o.values().cloned())
        })
        .collect();
    let cache_dir = top.join("cache");
    run(nix()
        .args(["copy", "--to", &signed_cache_url(&cache_dir, "")])
        .args(&built));
    // Every salted path goes from the local store, so that only the cache
    // holds them: the closure of what was built (all salted: the builder
    // is the host's /bin/sh).
    let closure = run(Command::new("nix-store").args(["-qR"]).args(&built));
    let salted: Vec<&str> = closure.lines().collect();
    run(Command::new("nix-store").arg("--delete").args(&salted));

    let cached_file = top.join("cached.txt");
    std::fs::write(
        &cached_file,
        trees
            .iter()
            .map(|(n, _)| format!("{}  # c{n:03}\n", commits[n - 1]))
            .collect::<String>(),
    )
    .unwrap();
    let mut opts = Options::new(&cache_dir);
    opts.latency = Duration::from_millis(20);
    let server = CacheServer::start(opts).expect("the cache server starts");
    HistoryFixture {
        repo: repo_dir,
        commits,
        cache_dir,
        server,
        cached_file,
        outputs,
    }
}
