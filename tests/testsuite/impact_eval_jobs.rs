//! `impact` with nix-eval-jobs (issue 38), as each version runs: a
//! stand-in on `PATH` (tests/fixtures/impact/nix-eval-jobs.py) that takes
//! exactly the named version's flags and prints exactly its JSON lines,
//! every value computed by `nix-instantiate`, since nix-eval-jobs does not
//! build here. nix-heft reads what the installed version can do from its
//! `--help`, passes `--workers` (a worker per core: the tool's default is
//! one), `--max-memory-size` and, from v2.31.0, `--no-instantiate`; its
//! results equal those of the `nix-env` path.

use std::path::PathBuf;
use std::process::Command;

use crate::common::impact_fixture::impact_fixture;
use crate::common::{heft_run_env, repo, run, scratch_dir};

/// The versions the stand-in is: v2.9.0 (error lines for values that are
/// no derivation), v2.24.0 (`inputDrvs` in every line), v2.30.0 (the last
/// without `--no-instantiate`), v2.33.0 (`--no-instantiate`).
const VERSIONS: [&str; 4] = ["v2.9.0", "v2.24.0", "v2.30.0", "v2.33.0"];

/// A directory holding `nix-eval-jobs`, the stand-in for `version`.
pub fn standin(version: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("nix-eval-jobs")
        .join(version);
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("nix-eval-jobs");
    let script = format!(
        "#!/bin/sh\nNIX_EVAL_JOBS_STANDIN_VERSION={version} exec python3 {} \"$@\"\n",
        repo()
            .join("tests/fixtures/impact/nix-eval-jobs.py")
            .display()
    );
    // Written once and renamed into place: tests in parallel may ask.
    if std::fs::read_to_string(&bin).ok().as_deref() != Some(script.as_str()) {
        let tmp = dir.join(format!("nix-eval-jobs.{}", std::process::id()));
        std::fs::write(&tmp, &script).unwrap();
        std::fs::set_permissions(
            &tmp,
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
        )
        .unwrap();
        std::fs::rename(&tmp, &bin).unwrap();
    }
    dir
}

/// `PATH` with the stand-in of `version` first.
/// The runs the stand-in logged (each its argv), but `--help`.
fn logged_runs(log: &std::path::Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|a: &Vec<String>| a.first().map(String::as_str) != Some("--help"))
        .collect()
}

fn path_with(version: &str) -> String {
    format!(
        "{}:{}",
        standin(version).display(),
        std::env::var("PATH").unwrap()
    )
}

/// The stand-in as the tests rely on it: `--help` as the version prints
/// it, a flag it lacks refused as Nix refuses it.
#[test]
fn the_standin_takes_exactly_the_versions_flags() {
    for version in VERSIONS {
        let bin = standin(version).join("nix-eval-jobs");
        let help = run(Command::new(&bin).arg("--help"));
        assert!(
            help.starts_with("USAGE: nix-eval-jobs [options] expr\n\n"),
            "{help}"
        );
        assert!(
            help.contains("\n  --workers              number of evaluate workers\n"),
            "{help}"
        );
        let has = help.contains("\n  --no-instantiate ");
        assert_eq!(has, version == "v2.33.0", "{version}");
        let o = Command::new(&bin)
            .args(["--no-instantiate", "--workers", "1", "/dev/null"])
            .output()
            .unwrap();
        if !has {
            assert_eq!(o.status.code(), Some(1));
            assert!(
                String::from_utf8_lossy(&o.stderr)
                    .contains("error: unrecognised flag '--no-instantiate'"),
                "{version}: {o:?}"
            );
        }
    }
}

/// The rows of an impact JSON, attribute → the fields that do not depend
/// on the evaluator.
fn figures(stdout: &str) -> Vec<(String, serde_json::Value)> {
    let v: serde_json::Value =
        serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    v["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let o = r.as_object_mut().unwrap();
            let failed = r_failed(o);
            o.retain(|k, _| {
                [
                    "attr",
                    "status",
                    "before",
                    "after",
                    "delta",
                    "changes",
                    "changes_count",
                    "rest_net",
                    "added_count",
                    "removed_count",
                ]
                .contains(&k.as_str())
            });
            // Each tool words a failure its own way: that there is one
            // is what must agree.
            o.insert("failed".into(), serde_json::json!(failed));
            (o["attr"].as_str().unwrap().to_string(), r)
        })
        .collect()
}

fn r_failed(o: &serde_json::Map<String, serde_json::Value>) -> bool {
    !o.get("failed").is_none_or(|f| f.is_null())
}

/// With each version on `PATH` (`--evaluator auto`), `impact --changed`
/// and an explicit list (a set standing for its derivations, a name the
/// base lacks) give what `nix-env` gives; the stand-in was run with
/// `--workers` (the cores, or `--workers`), `--max-memory-size 4096` and
/// `--no-instantiate` exactly when its `--help` lists it.
#[test]
fn nix_eval_jobs_gives_what_nix_env_gives() {
    let f = impact_fixture();
    let repo = f.repo.to_string_lossy().into_owned();
    let common = [
        "impact",
        "--json",
        "--repo",
        &repo,
        "--before",
        &f.base,
        "--after",
        &f.head,
        "--before-store",
        &f.cache_url,
    ];
    let lists: [&[&str]; 2] = [
        &[],
        &["--attr", "tools", "--attr", "newtool", "--attr", "libcore"],
    ];
    let cores = std::thread::available_parallelism()
        .unwrap()
        .get()
        .to_string();
    for list in lists {
        let mut by_nix_env: Vec<&str> = common.to_vec();
        by_nix_env.extend(["--evaluator", "nix-env"]);
        by_nix_env.extend(list);
        let expected = heft_run_env(&[], None, &by_nix_env);
        assert!(expected.code == 0, "{}", expected.stderr);
        let expected = figures(&expected.stdout);
        assert!(expected.len() >= 3, "{expected:?}");
        for version in VERSIONS {
            let log = scratch_dir("eval-jobs-log").join("argv");
            let log_s = log.to_string_lossy().into_owned();
            let mut args: Vec<&str> = common.to_vec();
            args.extend(list);
            let o = heft_run_env(
                &[
                    ("PATH", &path_with(version)),
                    ("NIX_EVAL_JOBS_STANDIN_LOG", &log_s),
                ],
                None,
                &args,
            );
            assert_eq!(o.code, 0, "{version}: {}", o.stderr);
            let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
            assert_eq!(v["evaluator"], "nix-eval-jobs", "{version}");
            let got = figures(&o.stdout);
            assert_eq!(
                got.iter().map(|(a, _)| a).collect::<Vec<_>>(),
                expected.iter().map(|(a, _)| a).collect::<Vec<_>>(),
                "{version} {list:?}"
            );
            for ((attr, g), (_, e)) in got.iter().zip(&expected) {
                assert_eq!(g, e, "{version} {list:?}: {attr}");
            }
            let runs = logged_runs(&log);
            assert_eq!(runs.len(), 2, "{version}: one run per side: {runs:?}");
            for argv in &runs {
                let at = |flag: &str| {
                    argv.iter()
                        .position(|a| a == flag)
                        .map(|i| argv[i + 1].clone())
                };
                assert_eq!(at("--workers").as_deref(), Some(cores.as_str()), "{argv:?}");
                assert_eq!(at("--max-memory-size").as_deref(), Some("4096"), "{argv:?}");
                assert_eq!(
                    argv.iter().any(|a| a == "--no-instantiate"),
                    version == "v2.33.0",
                    "{version}: {argv:?}"
                );
            }
        }
    }
    // --workers and --max-memory-size as given.
    let log = scratch_dir("eval-jobs-log").join("argv");
    let log_s = log.to_string_lossy().into_owned();
    let mut args: Vec<&str> = common.to_vec();
    args.extend([
        "--attr",
        "libcore",
        "--workers",
        "3",
        "--max-memory-size",
        "1024",
    ]);
    let o = heft_run_env(
        &[
            ("PATH", &path_with("v2.33.0")),
            ("NIX_EVAL_JOBS_STANDIN_LOG", &log_s),
        ],
        None,
        &args,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let argv = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        argv.matches(r#""--workers", "3", "--max-memory-size", "1024""#)
            .count(),
        2,
        "{argv}"
    );
    // What the installed version can do is asked once a run.
    assert_eq!(argv.matches(r#"["--help"]"#).count(), 1, "{argv}");
}

/// No version writes to the user's store: v2.31.0 on is given
/// `--no-instantiate`; older versions, which write the `.drv` of what they
/// evaluate, are given a scratch store (`--eval-store`, and the `store`
/// setting v2.9.0 reads) that is gone when the run ends. Checked on a
/// package set of its own (a salt no run used, so no `.drv` of it exists
/// before).
#[test]
fn no_instantiate_writes_no_derivation() {
    for (version, scratch) in [("v2.9.0", true), ("v2.30.0", true), ("v2.33.0", false)] {
        let log = scratch_dir("eval-jobs-drv-log").join("argv");
        let log_s = log.to_string_lossy().into_owned();
        let dir = scratch_dir("eval-jobs-drv");
        let salt = crate::common::nonce();
        std::fs::write(
            dir.join("default.nix"),
            format!(
                "{{ ... }}: {{ p = derivation {{ name = \"p\"; system = builtins.currentSystem; builder = \"/bin/sh\"; args = [ \"-c\" \"echo {salt} > $out\" ]; }}; }}\n"
            ),
        )
        .unwrap();
        let drv: String = serde_json::from_str(&run(Command::new("nix-instantiate")
            .args(["--readonly-mode", "--eval", "--json", "-E"])
            .arg(format!(
                "(import {}/default.nix {{ }}).p.drvPath",
                dir.display()
            ))))
        .unwrap();
        assert!(!std::path::Path::new(&drv).exists());
        let d = dir.to_string_lossy().into_owned();
        let o = heft_run_env(
            &[
                ("PATH", &path_with(version)),
                ("NIX_EVAL_JOBS_STANDIN_LOG", &log_s),
            ],
            None,
            &[
                "impact", "--json", "--before", &d, "--after", &d, "--attr", "p",
            ],
        );
        assert_eq!(o.code, 0, "{version}: {}", o.stderr);
        assert!(!std::path::Path::new(&drv).exists(), "{version}: {drv}");
        let runs = logged_runs(&log);
        assert_eq!(runs.len(), 2, "{version}: {runs:?}");
        for argv in &runs {
            let at = |flag: &str| argv.iter().position(|a| a == flag).map(|i| &argv[i + 1]);
            let store = at("--eval-store");
            assert_eq!(store.is_some(), scratch, "{version}: {argv:?}");
            if let Some(url) = store {
                let root = url.strip_prefix("local?root=").unwrap();
                // The same store through the setting v2.9.0 reads, and
                // removed with the run.
                assert_eq!(
                    argv.windows(3)
                        .filter(|w| w[0] == "--option" && w[1] == "store" && &w[2] == url)
                        .count(),
                    1,
                    "{argv:?}"
                );
                assert!(!std::path::Path::new(root).exists(), "{version}: {root}");
            }
        }
    }
}
