//! `nix-heft-survey` on real stores: the bundled example and
//! tests/fixtures/small.nix built with real `nix-build`, exported with real
//! `nix copy` to a `file://` cache, and served over HTTP by a server this
//! test starts on 127.0.0.1. The survey's tables are checked against Nix
//! (`nix-store -q --references`) and against nix-heft itself (`refs`,
//! `advise`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

// The core's test helpers that need nothing but std: the commands that
// build the fixtures, and the 127.0.0.1 file server.
#[allow(dead_code)]
#[path = "../../tests/testsuite/common/commands.rs"]
mod commands;
// Shared with tests/output.rs, which uses other parts of it.
#[allow(dead_code)]
mod common;
#[allow(dead_code)]
#[path = "../../tests/testsuite/common/http_server.rs"]
mod http_server;

use common::{ObjectServer, free_port, wait_listening};

/// The survey binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_nix-heft-survey");

use commands::{SMALL_ATTRS, nix, nix_build, run};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("survey/ is inside the repository")
        .to_path_buf()
}

struct Fixture {
    roots: Vec<String>,
    /// Scratch directory, kept for the test process.
    tmp: PathBuf,
    cache: PathBuf,
    /// The key the cache is signed with, which `heft()` trusts.
    public_key: String,
    http: String,
    /// A survey over the file:// cache, run once.
    file_dir: PathBuf,
    file_report: Value,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let mut roots = nix_build(&repo().join("tests/fixtures/small.nix"), SMALL_ATTRS);
        roots.extend(nix_build(
            &repo().join("examples/rocm-mini/default.nix"),
            &[],
        ));
        let tmp = tempfile::Builder::new()
            .prefix("nix-heft-survey-test-")
            .tempdir()
            .unwrap()
            .keep();
        let cache = tmp.join("cache");
        // Signed as a real cache is: nix-heft refuses unsigned narinfos
        // (`heft()` trusts this key).
        let (secret, public) = (tmp.join("key.sec"), tmp.join("key.pub"));
        run(Command::new("nix-store")
            .args(["--generate-binary-cache-key", "nix-heft-survey-test-1"])
            .arg(&secret)
            .arg(&public));
        let public_key = std::fs::read_to_string(&public).unwrap().trim().to_string();
        run(nix()
            .args(["copy", "--to"])
            .arg(format!(
                "file://{}?secret-key={}",
                cache.display(),
                secret.display()
            ))
            .args(&roots));
        let http = http_server::FileServer::start(&cache).url();
        let file_dir = tmp.join("survey-file");
        let store = format!("file://{}", cache.display());
        let o = survey_trusting(
            Some(&public_key),
            &["run", "--json", "--store", &store, "-o"],
            &file_dir,
            &roots,
        );
        assert_eq!(o.code, 0, "survey failed: {}", o.stderr);
        let file_report: Value = serde_json::from_str(&o.stdout).unwrap();
        Fixture {
            roots,
            tmp,
            cache,
            public_key,
            http,
            file_dir,
            file_report,
        }
    })
}

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

fn output(c: &mut Command) -> Outcome {
    let out = c.output().unwrap();
    let o = Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(!o.stderr.contains("panicked"), "panicked: {}", o.stderr);
    o
}

/// Runs the survey binary with `args`, then `dir`, then `rest`; a `run`
/// trusts the fixture's key (the survey checks signatures as nix-heft
/// does, and the key is in no nix.conf).
fn survey(args: &[&str], dir: &Path, rest: &[String]) -> Outcome {
    let key = (args.first() == Some(&"run") && !args.contains(&"--trusted-public-keys"))
        .then(|| fixture().public_key.as_str());
    survey_trusting(key, args, dir, rest)
}

/// [`survey`] with `key` trusted by a `run` (the fixture's own first run
/// names its key before the fixture exists).
fn survey_trusting(key: Option<&str>, args: &[&str], dir: &Path, rest: &[String]) -> Outcome {
    let mut c = Command::new(BIN);
    if let (Some(key), Some((first, more))) = (key, args.split_first()) {
        c.arg(first).args(["--trusted-public-keys", key]).args(more);
    } else {
        c.args(args);
    }
    output(c.arg(dir).args(rest))
}

/// The nix-heft binary to compare with, built from the same sources: the
/// survey is a workspace of its own, so this builds the core's binary with
/// the core's own workspace (once per test run; quick when it is built).
fn heft() -> Command {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let bin = BIN.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(cargo)
            .args(["build", "--quiet", "--bin", "nix-heft", "--manifest-path"])
            .arg(root.join("Cargo.toml"))
            // The core's own target directory, not this workspace's.
            .env_remove("CARGO_TARGET_DIR")
            .output()
            .expect("cargo runs");
        assert!(
            out.status.success(),
            "building nix-heft failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        root.join("target/debug/nix-heft")
    });
    let mut c = Command::new(bin);
    // As a user whose nix.conf trusts the fixture cache's key.
    c.env(
        "NIX_CONFIG",
        format!("trusted-public-keys = {}", fixture().public_key),
    );
    c
}

/// The rows of `sql` over the survey in `dir`.
fn query(dir: &Path, sql: &str) -> Vec<Value> {
    query_with(dir, sql, &[])
}

/// The rows of `sql` over the survey at `out` (a directory or URL), with
/// `env` set for the query process (an object store's credentials).
fn query_with(out: &Path, sql: &str, env: &[(&'static str, String)]) -> Vec<Value> {
    let o = output(
        Command::new(BIN)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .args(["query", "--json"])
            .arg(out)
            .arg(sql),
    );
    assert_eq!(
        o.code,
        0,
        "query {sql} of {} failed: {}",
        out.display(),
        o.stderr
    );
    serde_json::from_str::<Value>(&o.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn s(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v}"))
        .to_string()
}

#[test]
fn edges_are_nix_references_of_every_path() {
    let f = fixture();
    let closure: BTreeSet<String> = run(Command::new("nix-store").arg("-qR").args(&f.roots))
        .lines()
        .map(str::to_string)
        .collect();
    let paths: BTreeSet<String> = query(&f.file_dir, "SELECT path FROM paths")
        .iter()
        .map(|r| s(&r["path"]))
        .collect();
    assert_eq!(paths, closure, "paths are the roots' closure");
    let mut by_referrer: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in query(&f.file_dir, "SELECT referrer, reference FROM edges") {
        by_referrer
            .entry(s(&r["referrer"]))
            .or_default()
            .insert(s(&r["reference"]));
    }
    for p in &closure {
        let nix: BTreeSet<String> = run(Command::new("nix-store").args(["-q", "--references", p]))
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(
            by_referrer.get(p).cloned().unwrap_or_default(),
            nix,
            "references of {p}"
        );
    }
    assert_eq!(
        f.file_report["survey"]["paths"].as_u64().unwrap() as usize,
        closure.len()
    );
}

#[test]
fn verdicts_are_those_of_refs() {
    let f = fixture();
    let store = format!("file://{}", f.cache.display());
    let o = output(
        heft()
            .args(["--store", &store, "--json", "refs"])
            .args(&f.roots),
    );
    assert!(o.code == 0 || o.code == 3, "refs failed: {}", o.stderr);
    let refs: Value = serde_json::from_str(&o.stdout).unwrap();
    let want: BTreeMap<(String, String), Value> = refs["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                (s(&e["referrer"]), s(&e["reference"])),
                e["verdict"].clone(),
            )
        })
        .collect();
    let got: BTreeMap<(String, String), Value> = query(
        &f.file_dir,
        "SELECT referrer, reference, verdict FROM edges",
    )
    .iter()
    .map(|e| {
        (
            (s(&e["referrer"]), s(&e["reference"])),
            e["verdict"].clone(),
        )
    })
    .collect();
    assert_eq!(got, want);
    // The example has every verdict a survey is for.
    let verdicts: BTreeSet<String> = got
        .values()
        .filter_map(|v| v.as_str())
        .map(str::to_string)
        .collect();
    for v in ["runtime", "build", "docs", "dead"] {
        assert!(verdicts.contains(v), "no {v} edge in {verdicts:?}");
    }
}

#[test]
fn single_edge_savings_are_advise_savings() {
    let f = fixture();
    let store = format!("file://{}", f.cache.display());
    let edges: BTreeMap<(String, String), u64> = query(
        &f.file_dir,
        "SELECT referrer, reference, saving_max FROM edges",
    )
    .iter()
    .map(|e| {
        (
            (s(&e["referrer"]), s(&e["reference"])),
            e["saving_max"].as_u64().unwrap(),
        )
    })
    .collect();
    let nar_sizes: BTreeMap<String, u64> = query(&f.file_dir, "SELECT path, nar_size FROM paths")
        .iter()
        .map(|p| (s(&p["path"]), p["nar_size"].as_u64().unwrap()))
        .collect();
    let referrers: BTreeSet<String> = query(
        &f.file_dir,
        "SELECT DISTINCT referrer FROM edges WHERE verdict IN ('dead', 'docs')",
    )
    .iter()
    .map(|r| s(&r["referrer"]))
    .collect();
    let mut checked = BTreeMap::new();
    for r in &referrers {
        let o = output(heft().args([
            "--store",
            &store,
            "--json",
            "advise",
            "--min-saving",
            "0",
            r,
        ]));
        assert!(
            o.code == 0 || o.code == 3,
            "advise {r} failed: {}",
            o.stderr
        );
        let a: Value = serde_json::from_str(&o.stdout).unwrap();
        for act in a["actions"].as_array().unwrap() {
            let kind = s(&act["kind"]);
            let cuts = act["cuts"].as_array().unwrap();
            if act["package"] != Value::String(r.clone()) || cuts.len() != 1 {
                continue;
            }
            let Some(saving) = act["saving"].as_u64() else {
                continue;
            };
            let edge = (r.clone(), s(&cuts[0]));
            let own_part = match kind.as_str() {
                "dead-runpath" => 0,
                // A split that cuts one edge also moves some of the
                // referrer's own files out of `out`: its saving is the
                // edge's plus those bytes, which `split` reports.
                "split-outputs" => {
                    let o = output(heft().args([
                        "--store", &store, "--json", "split", "--preset", "nixpkgs", "--root", r, r,
                    ]));
                    assert_eq!(o.code, 0, "split {r} failed: {}", o.stderr);
                    let sp: Value = serde_json::from_str(&o.stdout).unwrap();
                    let out = sp["outputs"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|o| o["name"] == "out")
                        .expect("an out output")["nar_size"]
                        .as_u64()
                        .unwrap();
                    nar_sizes[r] - out
                }
                _ => continue,
            };
            assert_eq!(
                edges.get(&edge).copied(),
                Some(saving - own_part),
                "{kind} of {} → {}: advise saves {saving}, {own_part} of it the referrer's own",
                edge.0,
                edge.1
            );
            *checked.entry(kind).or_insert(0) += 1;
        }
    }
    for kind in ["dead-runpath", "split-outputs"] {
        assert!(
            checked.contains_key(kind),
            "no single-edge {kind} action checked: {checked:?}"
        );
    }
}

/// Every table's rows, sorted, as JSON text (for comparing two surveys).
fn all_rows(dir: &Path) -> BTreeMap<&'static str, Vec<String>> {
    all_rows_with(dir, &[])
}

/// [`all_rows`] of the survey at `out`, with `env` for the queries.
fn all_rows_with(
    out: &Path,
    env: &[(&'static str, String)],
) -> BTreeMap<&'static str, Vec<String>> {
    ["paths", "edges", "evidence", "problems"]
        .into_iter()
        .map(|t| {
            let mut rows: Vec<String> = query_with(out, &format!("SELECT * FROM {t}"), env)
                .iter()
                .map(|r| r.to_string())
                .collect();
            rows.sort();
            (t, rows)
        })
        .collect()
}

#[test]
fn http_cache_gives_the_same_tables() {
    let f = fixture();
    let dir = f.tmp.join("survey-http");
    let o = survey(&["run", "--json", "--store", &f.http, "-o"], &dir, &f.roots);
    assert_eq!(o.code, 0, "survey over HTTP failed: {}", o.stderr);
    assert_eq!(all_rows(&dir), all_rows(&f.file_dir));
    // Checked against the narinfos' NarHash while streaming.
    let unhashed = query(&dir, "SELECT path FROM paths WHERE nar_hash IS NULL");
    assert!(unhashed.is_empty(), "{unhashed:?}");
}

fn part_mtimes(dir: &Path) -> BTreeMap<String, std::time::SystemTime> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir.join("parts")).unwrap() {
        let e = e.unwrap();
        let m = std::fs::metadata(e.path().join("edges.parquet"))
            .unwrap()
            .modified()
            .unwrap();
        out.insert(e.file_name().to_string_lossy().into_owned(), m);
    }
    out
}

#[test]
fn a_restarted_survey_skips_written_partitions() {
    let f = fixture();
    let store = format!("file://{}", f.cache.display());
    let dir = f.tmp.join("survey-resume");
    let o = survey(
        &[
            "run",
            "--json",
            "--partitions",
            "5",
            "--store",
            &store,
            "-o",
        ],
        &dir,
        &f.roots,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let first: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(first["survey"]["partitions_skipped"], 0);
    let before = part_mtimes(&dir);
    assert_eq!(before.len(), 5);
    let rows = all_rows(&dir);
    // What an interrupted run leaves: partitions 00001 and 00003 without
    // their completion marker, one of them with a half-written file; no
    // tables.
    for p in ["00001", "00003"] {
        std::fs::remove_file(dir.join("parts").join(p).join("_SUCCESS")).unwrap();
    }
    std::fs::write(dir.join("parts/00001/paths.parquet"), b"half a file").unwrap();
    for t in ["paths", "edges", "evidence", "problems"] {
        std::fs::remove_file(dir.join(format!("{t}.parquet"))).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    // Restarted without --partitions: the directory says how many.
    let o = survey(&["run", "--json", "--store", &store, "-o"], &dir, &f.roots);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let second: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(second["survey"]["partitions"], 5);
    assert_eq!(second["survey"]["partitions_skipped"], 3);
    let after = part_mtimes(&dir);
    for (p, t) in &before {
        if p == "00001" || p == "00003" {
            assert!(after[p] > *t, "partition {p} was written again");
        } else {
            assert_eq!(after[p], *t, "partition {p} was not skipped");
        }
    }
    assert_eq!(all_rows(&dir), rows);
    // A third run writes no partition at all.
    let o = survey(&["run", "--json", "--store", &store, "-o"], &dir, &f.roots);
    let third: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(third["survey"]["partitions_skipped"], 5);
    assert_eq!(third["survey"]["bytes_read"], 0);
    assert_eq!(part_mtimes(&dir), after);

    // Another set of paths, or another partitioning, on the same directory
    // is refused rather than mixed.
    let o = survey(&["run", "--store", &store, "-o"], &dir, &f.roots[..1]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains("holds a survey of other paths"),
        "{}",
        o.stderr
    );
    let o = survey(
        &["run", "--partitions", "7", "--store", &store, "-o"],
        &dir,
        &f.roots,
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("5 partitions"), "{}", o.stderr);
}

#[test]
fn report_lists_what_the_tables_hold() {
    let f = fixture();
    let r = &f.file_report;
    let dead: BTreeSet<(String, String)> = query(
        &f.file_dir,
        "SELECT referrer, file FROM evidence WHERE kind = 'elf-runpath' AND verdict = 'dead'",
    )
    .iter()
    .map(|e| (s(&e["referrer"]), s(&e["file"])))
    .collect();
    assert!(!dead.is_empty());
    let listed: BTreeSet<(String, String)> = r["dead_runpaths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (s(&e["referrer"]), s(&e["file"])))
        .collect();
    assert!(
        listed.is_subset(&dead) && !listed.is_empty(),
        "{listed:?} vs {dead:?}"
    );
    for e in r["docs_only"].as_array().unwrap() {
        assert_eq!(e["verdict"], "docs");
    }
    assert!(!r["docs_only"].as_array().unwrap().is_empty());
    // rocblas links its per-target kernel derivations into its own tree.
    let farms = r["symlink_farms"].as_array().unwrap();
    assert!(
        farms.iter().any(|e| s(&e["referrer"]).contains("rocblas")),
        "{farms:?}"
    );
    // The text report: the same lists as aligned tables.
    let o = survey(
        &[
            "run",
            "--store",
            &format!("file://{}", f.cache.display()),
            "-o",
        ],
        &f.file_dir,
        &f.roots,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    for heading in [
        "Top packages by savable bytes",
        "References held only by documentation:",
        "Dead RUNPATH entries:",
        "Symlink farms",
    ] {
        assert!(
            o.stdout.contains(heading),
            "{heading} missing:\n{}",
            o.stdout
        );
    }
}

#[test]
fn query_prints_rows_and_refuses_bad_sql() {
    let f = fixture();
    let rows = query(
        &f.file_dir,
        "SELECT output, count(*) AS n FROM paths GROUP BY output ORDER BY output",
    );
    let outputs: Vec<String> = rows.iter().map(|r| s(&r["output"])).collect();
    assert!(
        outputs.contains(&"out".to_string()) && outputs.contains(&"dev".to_string()),
        "{outputs:?}"
    );
    let o = output(
        Command::new(BIN)
            .arg("query")
            .arg(&f.file_dir)
            .arg("SELECT path, nar_size FROM paths ORDER BY nar_size DESC LIMIT 3"),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", o.stdout);
    assert!(
        lines[0].starts_with("path") && lines[0].ends_with("nar_size"),
        "{}",
        o.stdout
    );
    let o = output(
        Command::new(BIN)
            .arg("query")
            .arg(&f.file_dir)
            .arg("SELECT nope FROM paths"),
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.starts_with("nix-heft-survey: error: bad SQL"),
        "{}",
        o.stderr
    );
    let o = output(
        Command::new(BIN)
            .arg("query")
            .arg(f.tmp.join("nowhere"))
            .arg("SELECT 1"),
    );
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("holds no survey"), "{}", o.stderr);
}

#[test]
fn a_path_list_file_surveys_the_same_closure() {
    let f = fixture();
    let store = format!("file://{}", f.cache.display());
    let list = f.tmp.join("store-paths");
    std::fs::write(
        &list,
        format!("# a channel's list\n{}\n\n", f.roots.join("\n")),
    )
    .unwrap();
    let dir = f.tmp.join("survey-list");
    let o = survey(
        &["run", "--json", "--store", &store, "--paths"],
        &list,
        &["-o".to_string(), dir.display().to_string()],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(all_rows(&dir), all_rows(&f.file_dir));
    // A line that is no store path names the file and line (exit 1).
    std::fs::write(&list, format!("{}\n/tmp/not-a-store-path\n", f.roots[0])).unwrap();
    let o = survey(
        &["run", "--store", &store, "--paths"],
        &list,
        &[
            "-o".to_string(),
            f.tmp.join("survey-bad").display().to_string(),
        ],
    );
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("store-paths:2"), "{}", o.stderr);
    // Nothing to survey is a usage error.
    std::fs::write(&list, "# nothing\n").unwrap();
    let o = survey(
        &["run", "--store", &store, "--paths"],
        &list,
        &[
            "-o".to_string(),
            f.tmp.join("survey-none").display().to_string(),
        ],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("nothing to survey"), "{}", o.stderr);
}

/// A Ballista cluster on 127.0.0.1: `nix-heft-survey scheduler` and two
/// `nix-heft-survey executor` processes, each executor with a cache
/// directory of its own. Killed when dropped.
struct Cluster {
    scheduler: std::process::Child,
    executors: Vec<std::process::Child>,
    url: String,
    caches: Vec<PathBuf>,
    /// The scheduler's stderr.
    log: PathBuf,
}

impl Cluster {
    fn start(tmp: &Path, executor_timeout: u64, tasks_each: usize) -> Cluster {
        let bin = BIN;
        let sport = free_port();
        let log = tmp.join(format!("scheduler-{sport}.log"));
        let mut scheduler = Command::new(bin)
            .args(["scheduler", "--bind"])
            .arg(format!("127.0.0.1:{sport}"))
            .args(["--executor-timeout", &executor_timeout.to_string()])
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        wait_listening(sport, &mut scheduler);
        let mut executors = Vec::new();
        let mut caches = Vec::new();
        for k in 0..2 {
            let (port, grpc) = (free_port(), free_port());
            let cache = tmp.join(format!("executor-{sport}-{k}-cache"));
            let mut e = Command::new(bin)
                .args(["executor", "--scheduler"])
                .arg(format!("127.0.0.1:{sport}"))
                .arg("--bind")
                .arg(format!("127.0.0.1:{port}"))
                .args(["--grpc-port", &grpc.to_string()])
                .args(["--concurrent-tasks", &tasks_each.to_string()])
                .args(["--heartbeat-interval", "1"])
                .env("XDG_CACHE_HOME", &cache)
                .stderr(
                    std::fs::File::create(tmp.join(format!("executor-{sport}-{k}.log"))).unwrap(),
                )
                .spawn()
                .unwrap();
            wait_listening(port, &mut e);
            executors.push(e);
            caches.push(cache);
        }
        Cluster {
            scheduler,
            executors,
            url: format!("df://127.0.0.1:{sport}"),
            caches,
            log,
        }
    }
}

impl Cluster {
    /// `run` on this cluster over `store`, in as many partitions as the
    /// embedded survey (so that the `partition` columns match), up to `-o`.
    fn run_args(&self, f: &Fixture, store: &str) -> Vec<String> {
        let parts = embedded_partitions(f);
        [
            "run",
            "--json",
            "--cluster",
            &self.url,
            "--partitions",
            &parts,
        ]
        .into_iter()
        .chain(["--trusted-public-keys", &f.public_key])
        .chain(["--store", store, "-o"])
        .map(String::from)
        .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for c in self.executors.iter_mut().chain([&mut self.scheduler]) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The number of partitions the embedded survey used, for a cluster run
/// whose `partition` column is to match it.
fn embedded_partitions(f: &Fixture) -> String {
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(f.file_dir.join("survey.json")).unwrap())
            .unwrap();
    m["partitions"].to_string()
}

/// Whether a directory holds any file, at any depth.
fn holds_files(dir: &Path) -> bool {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    rd.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() { holds_files(&p) } else { true }
    })
}

#[test]
fn a_ballista_cluster_gives_the_embedded_rows() {
    let f = fixture();
    let cluster = Cluster::start(&f.tmp, 180, 2);
    let dir = f.tmp.join("survey-cluster");
    let args = cluster.run_args(f, &f.http);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = survey(&args, &dir, &f.roots);
    assert_eq!(o.code, 0, "cluster survey failed: {}", o.stderr);
    assert_eq!(all_rows(&dir), all_rows(&f.file_dir));
    let r: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(
        r["survey"]["partitions_skipped"], 0,
        "{}\n{}",
        o.stdout, o.stderr
    );
    assert!(r["survey"]["bytes_read"].as_u64().unwrap() > 0);
    // The executors read the cache themselves, both of them: each one's
    // own local cache (narinfos, scan results) got entries.
    for c in &cluster.caches {
        assert!(
            holds_files(c),
            "executor with cache {} did no work",
            c.display()
        );
    }

    // With an object store as -o, the executors need no shared directory:
    // they write their partitions to the WebDAV server themselves.
    let server = ObjectServer::webdav(&f.tmp);
    let o = output(
        server
            .command(BIN)
            .args(&args)
            .arg(&server.out)
            .args(&f.roots),
    );
    assert_eq!(o.code, 0, "cluster survey to WebDAV failed: {}", o.stderr);
    assert_eq!(server_rows(&server), all_rows(&f.file_dir));
    assert!(server.root.join("survey/parts/00000/_SUCCESS").is_file());
}

#[test]
fn a_cluster_run_refuses_a_store_the_executors_cannot_reach() {
    let f = fixture();
    let dir = f.tmp.join("survey-cluster-refused");
    // No scheduler listens on port 1: the check comes before connecting.
    for store in [None, Some("local"), Some("file://relative/cache")] {
        let mut args = vec!["run", "--cluster", "df://127.0.0.1:1"];
        if let Some(s) = store {
            args.extend(["--store", s]);
        }
        args.push("-o");
        let o = survey(&args, &dir, &f.roots);
        assert_eq!(o.code, 2, "{store:?}: {}", o.stderr);
        assert!(
            o.stderr
                .contains("--cluster needs a store every executor can read"),
            "{store:?}: {}",
            o.stderr
        );
    }
    assert!(!dir.exists(), "a refused run wrote {}", dir.display());
    // A reachable store but no scheduler: one clear error, nothing written.
    let store = format!("file://{}", f.cache.display());
    let url = format!("df://127.0.0.1:{}", free_port());
    let o = survey(
        &["run", "--cluster", &url, "--store", &store, "-o"],
        &dir,
        &f.roots,
    );
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stderr.contains("no Ballista scheduler answers at"),
        "{}",
        o.stderr
    );
    assert!(
        !dir.exists(),
        "a run without a scheduler wrote {}",
        dir.display()
    );
}

#[test]
fn a_cluster_survey_outlives_a_killed_executor() {
    let f = fixture();
    // A slow cache, so that the survey is mid-way when an executor dies;
    // one task at a time per executor.
    let slow = http_server::FileServer::start_slow(&f.cache, std::time::Duration::from_millis(300));
    let mut cluster = Cluster::start(&f.tmp, 4, 1);
    let sched_log = cluster.log.clone();
    let dir = f.tmp.join("survey-cluster-kill");
    let parts = embedded_partitions(f);
    let child = Command::new(BIN)
        .args(cluster.run_args(f, &slow.url()))
        .arg(&dir)
        .args(&f.roots)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Kill an executor once the first partition is written.
    let total: usize = parts.parse().unwrap();
    let start = std::time::Instant::now();
    let written = || {
        std::fs::read_dir(dir.join("parts")).map_or(0, |rd| {
            rd.flatten()
                .filter(|e| e.path().join("_SUCCESS").is_file())
                .count()
        })
    };
    while written() == 0 {
        assert!(start.elapsed().as_secs() < 120, "no partition written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let at_kill = written();
    assert!(at_kill < total, "the survey ended before the kill");
    cluster.executors[0].kill().unwrap();
    cluster.executors[0].wait().unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Ballista runs the lost executor's tasks again on the other one (or
    // the survey resubmits): the result is complete, never short.
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(written(), total);
    assert_eq!(all_rows(&dir), all_rows(&f.file_dir));
    // And the kill was seen: the scheduler took the executor for lost and
    // put its running tasks back.
    let log = std::fs::read_to_string(&sched_log).unwrap();
    assert!(log.contains("lost Executor"), "{log}");
}

/// Every table's rows of the survey at `server.out`, sorted.
fn server_rows(server: &ObjectServer) -> BTreeMap<&'static str, Vec<String>> {
    all_rows_with(Path::new(&server.out), &server.env)
}

/// A survey written to an object store: the same rows as to a directory,
/// the files where the server keeps them, resumable there.
fn check_object_store_output(f: &Fixture, server: &ObjectServer) {
    let store = format!("file://{}", f.cache.display());
    let parts = embedded_partitions(f);
    let run = || {
        output(
            server
                .command(BIN)
                .args(["run", "--json", "--partitions", &parts, "--store", &store])
                .args(["--trusted-public-keys", &f.public_key])
                .args(["-o", &server.out])
                .args(&f.roots),
        )
    };
    let o = run();
    assert_eq!(o.code, 0, "survey to {} failed: {}", server.out, o.stderr);
    let r: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(r["survey"]["dir"], server.out.as_str());
    assert_eq!(r["survey"]["partitions_skipped"], 0);
    assert_eq!(server_rows(server), all_rows(&f.file_dir));
    // What the server holds: the manifest, the tables, each partition's
    // files and completion marker.
    let on_server = server.root.join("survey");
    for t in [
        "survey.json",
        "paths.parquet",
        "edges.parquet",
        "evidence.parquet",
    ] {
        assert!(on_server.join(t).is_file(), "{t} not on the server");
    }
    let total: usize = parts.parse().unwrap();
    for i in 0..total {
        let p = on_server.join(format!("parts/{i:05}"));
        assert!(p.join("_SUCCESS").is_file(), "{} incomplete", p.display());
        assert!(p.join("edges.parquet").is_file(), "{}", p.display());
    }
    // Resumed: every partition found written, nothing read again.
    let o = run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    let again: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(again["survey"]["partitions_skipped"], total);
    assert_eq!(again["survey"]["bytes_read"], 0);
    assert_eq!(server_rows(server), all_rows(&f.file_dir));
}

#[test]
fn a_survey_written_to_webdav_gives_the_same_tables() {
    let f = fixture();
    let server = ObjectServer::webdav(&f.tmp);
    check_object_store_output(f, &server);
    // Nothing listens there: a clear error after a few retries.
    let dead = format!("http://127.0.0.1:{}/survey", free_port());
    let o = output(Command::new(BIN).args(["query", &dead, "SELECT 1"]));
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stderr
            .contains(&format!("looking up {dead}/paths.parquet"))
            && o.stderr.contains("Connection refused"),
        "{}",
        o.stderr
    );
}

#[test]
fn a_survey_written_to_s3_gives_the_same_tables() {
    let f = fixture();
    let server = ObjectServer::s3(&f.tmp, "heft-test-secret");
    check_object_store_output(f, &server);

    // Credentials the server refuses: a clear error and a failing exit,
    // before a single path is read.
    let bad = ObjectServer::s3(&f.tmp, "not-the-secret");
    let store = format!("file://{}", f.cache.display());
    let o = output(
        bad.command(BIN)
            .args(["run", "--store", &store, "-o", &bad.out])
            .args(["--trusted-public-keys", &f.public_key])
            .args(&f.roots),
    );
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("s3://heft/survey"), "{}", o.stderr);
    assert!(!bad.root.join("survey").exists());
    // An output scheme the survey does not write is the command line's
    // fault.
    let o = output(
        server
            .command(BIN)
            .args(["run", "--store", &store, "-o", "ftp://127.0.0.1/x"])
            .args(["--trusted-public-keys", &f.public_key])
            .args(&f.roots),
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("ftp:// is not an output"), "{}", o.stderr);
}

/// Several stores with signatures, opened as nix-heft opens them (the
/// store crate's `Opener`): a second cache, signed with another key, holds
/// the first root's closure and is asked first; the fixture's cache holds
/// the rest. Trusting both keys gives the one-cache survey's tables;
/// trusting only the second key refuses the fixture cache's narinfos, as
/// Nix refuses an untrusted substituter's.
#[test]
fn several_signed_stores_give_the_one_cache_tables() {
    let f = fixture();
    let second = f.tmp.join("second-cache");
    let (secret, public) = (f.tmp.join("second.sec"), f.tmp.join("second.pub"));
    run(Command::new("nix-store")
        .args(["--generate-binary-cache-key", "nix-heft-survey-second-1"])
        .arg(&secret)
        .arg(&public));
    let second_key = std::fs::read_to_string(&public).unwrap().trim().to_string();
    run(nix()
        .args(["copy", "--to"])
        .arg(format!(
            "file://{}?secret-key={}",
            second.display(),
            secret.display()
        ))
        .arg(&f.roots[0]));
    let a = format!("file://{}", second.display());
    let b = format!("file://{}", f.cache.display());
    let both = format!("{} {second_key}", f.public_key);

    let dir = f.tmp.join("survey-two-stores");
    let o = output(
        Command::new(BIN)
            .args(["run", "--json", "--store", &a, "--store", &b])
            .args(["--trusted-public-keys", &both, "-o"])
            .arg(&dir)
            .args(&f.roots),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(all_rows(&dir), all_rows(&f.file_dir));

    // Trusting the second cache's key alone: the fixture cache's narinfos
    // are refused, so the paths only it holds are in no store trusted.
    let refused = f.tmp.join("survey-two-stores-refused");
    let o = output(
        Command::new(BIN)
            .args(["run", "--store", &a, "--store", &b])
            .args(["--trusted-public-keys", &second_key, "-o"])
            .arg(&refused)
            .args(&f.roots),
    );
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("nix-heft-survey-test-1"), "{}", o.stderr);
}
