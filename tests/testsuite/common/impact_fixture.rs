//! The fixture of `nix-heft impact`'s tests (issue 32): a nixpkgs-shaped
//! git repository with a base and a head commit, the base built and
//! exported to a signed binary cache served over loopback HTTP by
//! common::cache_server (the stand-in for cache.nixos.org) and then deleted from the local store, the
//! head built locally for all but two attributes, and a nixpkgs-review
//! result directory for the head.
//!
//! The package set is `tests/fixtures/impact/default.nix`, a template whose
//! two renderings are the two commits (see its header for what changes).
//! Every derivation carries a salt no other run used, so the paths this
//! fixture builds, exports and deletes are its own: deleting them cannot
//! touch another test's (or another test process's) paths, and a second
//! run never finds the first one's outputs.
//!
//! What the tests may expect is said once, here, in the constants below
//! ([`GROWN`], [`SHRUNK`], …); `impact::fixture_is_what_the_impact_tests_need`
//! checks each of them against real Nix.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::cache_server::{CacheServer, Options};
use super::review_writer;
use super::{nix, nix_output, nonce, repo, run, scratch_dir, signed_cache_url, test_key};

/// Attributes whose closure grows from base to head, among those built on
/// both sides: libcore (its README now names [`LARGE`]), its dependents
/// but the unbuilt `app09`, and [`SPLIT`] itself (its outputs together
/// gain one path's NAR framing, +96 bytes: the same files, one more root).
pub const GROWN: &[&str] = &[
    "app01", "app02", "app03", "app04", "app05", "app06", "app07", "app08", "app10", "libcore",
    "libsplit",
];

/// The attributes whose head closure gains [`LARGE`] (all of [`GROWN`] but
/// [`SPLIT`]): the shared cause's attributes, through [`LARGE_REFERRER`]'s
/// [`LARGE_HOLDS`]. Each grows by at least [`LARGE`]'s NAR size.
pub const GROWN_BY_LARGE: &[&str] = &[
    "app01", "app02", "app03", "app04", "app05", "app06", "app07", "app08", "app10", "libcore",
];

/// Attributes whose closure shrinks (built on both sides): they use only
/// [`SPLIT`]'s `out`, which no longer holds the headers naming
/// [`SPLIT_DROPPED`], so they lose exactly that path (and gain nothing
/// but the rebuilt libsplit `out` and themselves, smaller).
pub const SHRUNK: &[&str] = &["editor", "viewer"];

/// Attributes whose out path changes but whose closure size does not
/// (Δ = 0, status `unchanged`): libver's bump 1.0 → 1.1 keeps every
/// file's length.
pub const SAME_SIZE: &[&str] = &[
    "appimage-run-tests",
    "libver",
    "tools.a",
    "verclient",
    "verdaemon",
];

/// Evaluates at the base, throws at the head (as nixpkgs' meta checks
/// throw for a package marked broken): broken by the change.
pub const BROKEN: &[&str] = &["brokenpkg"];

/// Throws at the base, evaluates at the head: fixed by the change.
pub const FIXED: &[&str] = &["fixedpkg"];

/// Evaluate only with nixpkgs-review's `config` ([`REVIEW_CONFIG`]):
/// `unfreepkg` with its `allowUnfree`, `optinpkg` with the key its
/// `--extra-nixpkgs-config` ([`REVIEW_EXTRA`]) sets. Use libver: changed,
/// the same size.
pub const CONFIGURED: &[&str] = &["optinpkg", "unfreepkg"];

/// The `--extra-nixpkgs-config` of the fixture's reviews.
pub const REVIEW_EXTRA: &str = "{ heftOptIn = true; }";

/// What the fixture builds [`CONFIGURED`] with: nixpkgs-review's config
/// with [`REVIEW_EXTRA`].
pub const REVIEW_CONFIG: &str = "{ allowUnfree = true; heftOptIn = true; }";

/// On nixpkgs-review's blacklist in every version (`nix.py`).
pub const BLACKLISTED: &str = "appimage-run-tests";

/// Attributes only the head has.
pub const ADDED: &[&str] = &["newtool"];

/// Attributes only the base has.
pub const REMOVED: &[&str] = &["oldtool"];

/// Changed attributes whose head outputs are built nowhere (not in the
/// local store, not in the cache): `app09` would grow like its siblings,
/// `tools.b` would shrink like viewer.
pub const NOT_BUILT: &[&str] = &["app09", "tools.b"];

/// Attributes with the same out paths on both sides (never in a
/// `--changed` list).
pub const KEPT: &[&str] = &[
    "bigdata", "codegen", "docs", "fonts", "hello", "libmulti", "shell", "stable", "tools.c",
    "zlib",
];

/// The large path's attribute: bigdata-2.0, 3 MiB of pseudo-random hex,
/// the same path on both sides.
pub const LARGE: &str = "bigdata";
/// The attribute whose head output names [`LARGE`].
pub const LARGE_REFERRER: &str = "libcore";
/// The file in [`LARGE_REFERRER`]'s `out` that names [`LARGE`].
pub const LARGE_HOLDS: &str = "share/doc/libcore/README";
/// The attribute split into `out` and `dev` at head (include/ moved).
pub const SPLIT: &str = "libsplit";
/// The attribute that [`SPLIT`]'s base `out` held (through include/split.h)
/// and its head `out` no longer does ([`SHRUNK`] lose it).
pub const SPLIT_DROPPED: &str = "codegen";
/// The nested set (`recurseForDerivations = true`): attributes `tools.a`,
/// `tools.b`, `tools.c`.
pub const NESTED: &str = "tools";

/// In the nixpkgs-review directories: not built (so "failed", its outputs
/// not valid), a log in logs/.
pub const REVIEW_FAILED: &str = "app09";
/// In the nixpkgs-review directories: absent from every list, as
/// `--skip-package tools.b` leaves it (named in `skip_packages`).
pub const REVIEW_SKIPPED: &str = "tools.b";

/// One attribute's outputs: output name → store path.
pub type Outputs = BTreeMap<String, String>;

/// The fixture, built once per test process by [`impact_fixture`].
pub struct ImpactFixture {
    /// The git repository, its work tree checked out at [`Self::head`].
    pub repo: PathBuf,
    /// The base commit's sha (the first commit).
    pub base: String,
    /// The head commit's sha (child of base).
    pub head: String,
    /// The base commit's tree, exported (`git archive`): a directory side.
    pub base_tree: PathBuf,
    /// The salt in every derivation of this run.
    pub salt: String,
    /// `builtins.currentSystem`, e.g. `x86_64-linux`.
    pub system: String,
    /// Base evaluation (`nix-env -qaP --out-path --json`): attr → outputs.
    pub base_outputs: BTreeMap<String, Outputs>,
    /// Head evaluation: attr → outputs.
    pub head_outputs: BTreeMap<String, Outputs>,
    /// Both evaluations with [`REVIEW_CONFIG`] (the [`CONFIGURED`]
    /// attributes evaluate too): base, head.
    pub configured_outputs: (BTreeMap<String, Outputs>, BTreeMap<String, Outputs>),
    /// Head attributes deliberately not built ([`NOT_BUILT`]).
    pub unbuilt: BTreeSet<String>,
    /// Base outputs the head does not share, deleted from the local store
    /// after the export (present only in the cache).
    pub deleted: BTreeSet<String>,
    /// The `file://` binary cache of the base's closure, signed with
    /// [`test_key`] (which `heft()` trusts), xz-compressed as Nix writes.
    pub cache: PathBuf,
    /// Serves [`Self::cache`] over plain HTTP/1.1 for the whole test
    /// process ([`CacheServer::served`] logs the requests). Not
    /// `http_server::FileServer`: that one sends a body with its answer to
    /// `HEAD`, which Nix asks first for a narinfo, and the reused
    /// connection then breaks ("Received HTTP/0.9").
    pub server: CacheServer,
    /// `http://127.0.0.1:PORT`: the base's store (`--before-store`).
    pub cache_url: String,
    /// The cache's public key, `nix-heft-test-1:BASE64`, for
    /// `--trusted-public-keys`.
    pub public_key: String,
    /// The nixpkgs-review result directory of the head, as nixpkgs-review
    /// after 3.9.0 writes it ([`review_writer`]; [`Self::review_dir`] for
    /// other versions).
    pub review: PathBuf,
    /// How long making the fixture took (builds, export, deletion).
    pub build_time: Duration,
}

impl ImpactFixture {
    /// Every attribute of either side, sorted.
    pub fn attrs(&self) -> BTreeSet<String> {
        self.base_outputs
            .keys()
            .chain(self.head_outputs.keys())
            .cloned()
            .collect()
    }

    /// The attributes whose outputs differ between the two evaluations
    /// (including added and removed ones): what `--changed` must find.
    pub fn changed(&self) -> BTreeSet<String> {
        self.attrs()
            .into_iter()
            .filter(|a| self.base_outputs.get(a) != self.head_outputs.get(a))
            .collect()
    }

    /// The store paths of `attr`'s outputs at base (empty if absent).
    pub fn base_paths(&self, attr: &str) -> Vec<String> {
        self.base_outputs
            .get(attr)
            .map(|o| o.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The store paths of `attr`'s outputs at head (empty if absent).
    pub fn head_paths(&self, attr: &str) -> Vec<String> {
        self.head_outputs
            .get(attr)
            .map(|o| o.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The base closure of all of `attr`'s outputs together, path → NAR
    /// size, as Nix reads it from the HTTP cache.
    pub fn base_closure(&self, attr: &str) -> BTreeMap<String, u64> {
        closure(Some(&self.cache_url), &self.base_paths(attr))
    }

    /// The head closure of all of `attr`'s outputs together, path → NAR
    /// size, as Nix reads it from the local store.
    pub fn head_closure(&self, attr: &str) -> BTreeMap<String, u64> {
        closure(None, &self.head_paths(attr))
    }

    /// The base closure size of `attr` (all outputs together) in the cache:
    /// for one output, `nix path-info -S --store CACHE`.
    pub fn base_closure_size(&self, attr: &str) -> u64 {
        self.base_closure(attr).values().sum()
    }

    /// The head closure size of `attr` (all outputs together) locally.
    pub fn head_closure_size(&self, attr: &str) -> u64 {
        self.head_closure(attr).values().sum()
    }

    /// The designed `status` of a changed attribute as the impact JSON
    /// says it (`grown`, `shrunk`, `unchanged`, `added`, `removed`,
    /// `not-built`, `broken`, `fixed`); `None` for [`KEPT`] ones.
    pub fn expected_status(attr: &str) -> Option<&'static str> {
        [
            (GROWN, "grown"),
            (SHRUNK, "shrunk"),
            (SAME_SIZE, "unchanged"),
            (ADDED, "added"),
            (REMOVED, "removed"),
            (NOT_BUILT, "not-built"),
            (BROKEN, "broken"),
            (FIXED, "fixed"),
        ]
        .into_iter()
        .find(|(set, _)| set.contains(&attr))
        .map(|(_, s)| s)
    }

    /// The attributes a review of the head lists: those whose outputs
    /// differ between the two evaluations with nixpkgs-review's config (as
    /// GitHub's evaluation of the pull request names them), less
    /// [`REVIEW_SKIPPED`].
    pub fn review_attrs(&self) -> Vec<String> {
        let (b, h) = &self.configured_outputs;
        let mut a: Vec<String> = b
            .keys()
            .chain(h.keys())
            .filter(|a| b.get(*a) != h.get(*a) && *a != REVIEW_SKIPPED)
            .cloned()
            .collect();
        a.sort();
        a.dedup();
        a
    }

    /// A nixpkgs-review directory of the head as `version` writes it, in a
    /// directory of its own (a new one per call).
    pub fn review_dir(&self, version: review_writer::Version, extra: &str) -> PathBuf {
        let dir = scratch_dir(&format!("impact-review-{}-", version.tag())).join("pr");
        let attrs = self.review_attrs();
        let skip = vec![REVIEW_SKIPPED.to_string()];
        review_writer::write(
            &review_writer::Review {
                version,
                head: &self.repo,
                extra_nixpkgs_config: extra,
                attrs: &attrs,
                system: &self.system,
                pr: Some(1234),
                commit: &self.head,
                skip_packages: &skip,
            },
            &dir,
        );
        dir
    }

    /// The `results/` link name nixpkgs-review gives `attr`'s `output`
    /// (`<attr>-<system>` for `out`, `<attr>.<output>-<system>` else).
    pub fn review_link(&self, attr: &str, output: &str) -> String {
        if output == "out" {
            format!("{attr}-{}", self.system)
        } else {
            format!("{attr}.{output}-{}", self.system)
        }
    }
}

/// The closure of `paths` in `store` (local when `None`), path → NAR size,
/// from `nix path-info -r --json`. Empty for no paths.
pub fn closure(store: Option<&str>, paths: &[String]) -> BTreeMap<String, u64> {
    if paths.is_empty() {
        return BTreeMap::new();
    }
    let mut c = nix();
    c.args(["path-info", "-r", "--json"]);
    if let Some(s) = store {
        c.args(["--store", s]);
    }
    let v: Value = serde_json::from_str(&run(c.args(paths))).unwrap();
    let entry = |p: &str, it: &Value| (p.to_string(), it["narSize"].as_u64().unwrap());
    match v {
        Value::Array(items) => items
            .iter()
            .map(|it| entry(it["path"].as_str().unwrap(), it))
            .collect(),
        Value::Object(m) => m.iter().map(|(p, it)| entry(p, it)).collect(),
        _ => panic!("unexpected path-info JSON"),
    }
}

/// Whether `path` is valid in the local store (`nix-store -q --hash`).
pub fn valid_locally(path: &str) -> bool {
    nix_output(Command::new("nix-store").args(["-q", "--hash", path]))
        .status
        .success()
}

/// Which side of the template to render.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Base,
    Head,
}

/// The template `tests/fixtures/impact/default.nix` for one side: lines
/// marked for the other side dropped, this side's marker cut off, the
/// salt filled in.
fn render(template: &str, side: Side, salt: &str) -> String {
    let (keep, drop) = match side {
        Side::Base => ("#@base", "#@head"),
        Side::Head => ("#@head", "#@base"),
    };
    let mut out = String::new();
    for line in template.lines() {
        let l = line.trim_end();
        if l.ends_with(drop) {
            continue;
        }
        out.push_str(l.strip_suffix(keep).map_or(l, str::trim_end));
        out.push('\n');
    }
    out.replace("@SALT@", salt)
}

fn git(dir: &Path, args: &[&str]) -> String {
    super::git_in(dir, args, None)
}

/// `nix-env -qaP --out-path --json` of the set in `dir`, read-only (no
/// derivation written), as nixpkgs' CI evaluates: attr → outputs. With
/// `config`, the set's `config` argument. What throws is left out.
fn evaluate(dir: &Path, config: Option<&str>) -> BTreeMap<String, Outputs> {
    let mut c = Command::new("nix-env");
    c.args(["-qaP", "--out-path", "--json", "--readonly-mode", "-f"])
        .arg(dir);
    if let Some(cfg) = config {
        c.args(["--arg", "config", cfg]);
    }
    let out = run(&mut c);
    let v: Value = serde_json::from_str(&out).unwrap();
    v.as_object()
        .expect("nix-env's JSON is an object")
        .iter()
        // An attribute whose paths throw (what nixpkgs' meta checks do) is
        // listed without `outputs`: it does not evaluate.
        .filter_map(|(attr, it)| {
            let outs = it
                .get("outputs")?
                .as_object()
                .expect("outputs")
                .iter()
                .map(|(o, p)| (o.clone(), p.as_str().unwrap().to_string()))
                .collect();
            Some((attr.clone(), outs))
        })
        .collect()
}

/// Builds `attrs` of the set in `dir` (all their outputs) into the local
/// store, with nixpkgs-review's config: sandbox off (the host's /bin/sh),
/// no substituters, as root without build users, no GC root left behind.
fn build(dir: &Path, attrs: &[&String]) {
    let mut c = Command::new("nix-build");
    c.arg(dir)
        .arg("--no-out-link")
        .args(["--arg", "config", REVIEW_CONFIG])
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
        ]);
    for a in attrs {
        c.args(["-A", a]);
    }
    run(&mut c);
}

/// The fixture, made on first use and shared by the test process.
pub fn impact_fixture() -> &'static ImpactFixture {
    static F: OnceLock<ImpactFixture> = OnceLock::new();
    F.get_or_init(make)
}

fn make() -> ImpactFixture {
    let started = Instant::now();
    let salt = nonce();
    let top = scratch_dir("nix-heft-test-impact-");
    let template = std::fs::read_to_string(repo().join("tests/fixtures/impact/default.nix"))
        .expect("tests/fixtures/impact/default.nix");
    let system = super::current_system().to_string();

    // The repository: the base commit, then the head commit on top.
    let repo_dir = top.join("nixpkgs");
    std::fs::create_dir_all(&repo_dir).unwrap();
    git(&repo_dir, &["init", "-q", "-b", "master"]);
    let file = repo_dir.join("default.nix");
    std::fs::write(&file, render(&template, Side::Base, &salt)).unwrap();
    git(&repo_dir, &["add", "default.nix"]);
    git(
        &repo_dir,
        &["commit", "-q", "-m", "pkgs: init the package set"],
    );
    let base = git(&repo_dir, &["rev-parse", "HEAD"]);
    std::fs::write(&file, render(&template, Side::Head, &salt)).unwrap();
    git(
        &repo_dir,
        &[
            "commit",
            "-q",
            "-a",
            "-m",
            "libcore: document the test data; libsplit: split dev; libver: 1.0 -> 1.1; \
             oldtool: drop; newtool: init",
        ],
    );
    let head = git(&repo_dir, &["rev-parse", "HEAD"]);

    // The base side as a directory of its own, from the commit itself.
    let base_tree = top.join("base-tree");
    std::fs::create_dir_all(&base_tree).unwrap();
    run(Command::new("sh")
        .arg("-c")
        .arg("git -C \"$1\" archive \"$2\" | tar -x -C \"$3\"")
        .arg("sh")
        .arg(&repo_dir)
        .arg(&base)
        .arg(&base_tree));

    let base_outputs = evaluate(&base_tree, None);
    let head_outputs = evaluate(&repo_dir, None);
    let configured_outputs = (
        evaluate(&base_tree, Some(REVIEW_CONFIG)),
        evaluate(&repo_dir, Some(REVIEW_CONFIG)),
    );
    let head_paths: BTreeSet<&String> = configured_outputs
        .1
        .values()
        .flat_map(|o| o.values())
        .collect();

    // The base: built, exported (its closure, signed), then its outputs
    // the head does not share deleted, as if Hydra had built them.
    build(&base_tree, &configured_outputs.0.keys().collect::<Vec<_>>());
    let base_all: Vec<&String> = configured_outputs
        .0
        .values()
        .flat_map(|o| o.values())
        .collect();
    for p in &base_all {
        assert!(valid_locally(p), "the base build left {p} unbuilt");
    }
    let cache = top.join("cache");
    run(nix()
        .args(["copy", "--to", &signed_cache_url(&cache, "")])
        .args(&base_all));
    let deleted: BTreeSet<String> = base_all
        .iter()
        .filter(|p| !head_paths.contains(*p))
        .map(|p| p.to_string())
        .collect();
    // Only this run's salted outputs: `nix-store --delete` refuses a path
    // that is still alive (a root, or referred to by a valid path not
    // deleted with it), so nothing else can go. A path the head shares
    // has only shared references (same inputs), so the set is closed
    // under referrers among the fixture's paths.
    run(Command::new("nix-store").arg("--delete").args(&deleted));
    for p in &deleted {
        assert!(!valid_locally(p), "{p} is still in the local store");
    }

    // The head: built locally but for NOT_BUILT.
    let unbuilt: BTreeSet<String> = NOT_BUILT.iter().map(|s| s.to_string()).collect();
    build(
        &repo_dir,
        &configured_outputs
            .1
            .keys()
            .filter(|a| !unbuilt.contains(*a))
            .collect::<Vec<_>>(),
    );

    let server = CacheServer::start(Options::new(&cache)).expect("the cache server starts");
    let cache_url = server.url();
    let mut f = ImpactFixture {
        repo: repo_dir,
        base,
        head,
        base_tree,
        salt,
        system,
        base_outputs,
        head_outputs,
        configured_outputs,
        unbuilt,
        deleted,
        cache,
        server,
        cache_url,
        public_key: test_key().public,
        review: PathBuf::new(),
        build_time: Duration::ZERO,
    };
    f.review = f.review_dir(review_writer::Version::After3_9_0, REVIEW_EXTRA);
    f.build_time = started.elapsed();
    eprintln!(
        "impact fixture: {} base and {} head attributes built, exported and deleted in {:.1} s",
        f.configured_outputs.0.len(),
        f.configured_outputs.1.len() - f.unbuilt.len(),
        f.build_time.as_secs_f64()
    );
    f
}
