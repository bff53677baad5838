//! `nix-heft bisect` (issue 42) on the repository of 200 commits and the
//! cache of every tenth (`common::history_fixture`): the first bad commit is
//! the one that made libcore's README name bigdata, found from the cache
//! and by instantiating the commits between the cached pair into a
//! temporary store, with the broken commits skipped, the evaluations
//! within the binary search's bound, the derivation's root cause named,
//! and nothing built.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::cache_server::{CacheServer, Options};
use crate::common::execs::{execs, runs, traced};
use crate::common::{scratch_dir, trusting_conf};

use crate::common::history_fixture::{
    local_store_lock,
    BROKEN, CULPRIT, HistoryFixture, history_fixture,
};
use crate::common::{assert_usage_error, heft_run};
use crate::common::{nix_output, system_store_lock};

fn bisect(f: &HistoryFixture, extra: &[&str]) -> (i32, Value, String) {
    let url = f.server.url();
    let repo = f.repo.display().to_string();
    let mut args = vec!["--json", "bisect", "app", "--repo", &repo];
    args.extend(extra);
    let o = heft_run(Some(&url), &args);
    let v = serde_json::from_str(&o.stdout).unwrap_or(Value::Null);
    (o.code, v, o.stderr)
}

/// The commit number of a hash.
fn n_of(f: &HistoryFixture, hash: &Value) -> usize {
    let h = hash.as_str().unwrap();
    f.commits.iter().position(|c| c == h).expect("a commit of the fixture") + 1
}

fn assert_finds_the_culprit(f: &HistoryFixture, v: &Value) {
    assert_eq!(n_of(f, &v["first_bad"]["commit"]), CULPRIT, "{v:#}");
    assert_eq!(n_of(f, &v["last_good"]["commit"]), CULPRIT - 1, "{v:#}");
    assert_eq!(v["first_bad"]["subject"], "libcore: document the test data");
    assert_eq!(n_of(f, &v["cached_good"]["commit"]), 130, "{v:#}");
    assert_eq!(n_of(f, &v["cached_bad"]["commit"]), 140, "{v:#}");
    // The cached pair's closures are what Nix says they are.
    for (key, n) in [("cached_good_size", 130), ("cached_bad_size", 140)] {
        let out = &f.outputs[&n]["app"]["out"];
        assert_eq!(v[key], f.closure_size(&[out]), "{key}");
    }
    assert!(v["target"].as_str().unwrap().ends_with("-bigdata-1.0"), "{v:#}");
    // The jump between the cached pair explained as history explains one:
    // bigdata is new, held by libcore's README.
    let first = &v["explanation"]["attributes"][0]["changes"][0];
    assert_eq!(first["package"], "bigdata", "{:#}", v["explanation"]);
    assert_eq!(first["kind"], "new");
    assert_eq!(first["holds"], serde_json::json!(["share/doc/libcore/README"]));
    // Every probe's verdict is the fixture's.
    for p in v["probes"].as_array().unwrap() {
        let n = n_of(f, &p["commit"]);
        let expected = if BROKEN.contains(&n) || !HistoryFixture::app_cached(n) {
            "skipped"
        } else if n < CULPRIT {
            "good"
        } else {
            "bad"
        };
        assert_eq!(p["verdict"], expected, "c{n}: {p}");
    }
    // The culprit's derivation against its parent's: libcore's, with
    // bigdata added as an input.
    let culprit = &v["candidates"][0];
    assert_eq!(n_of(f, &culprit["commit"]), CULPRIT);
    let causes = culprit["derivation"]["root_causes"].as_array().unwrap();
    assert!(
        causes.iter().any(|c| c["after"].as_str().unwrap().contains("-libcore-1.0.1.drv")),
        "{causes:#?}"
    );
}

/// Nothing built or substituted: no output of the range is in the local
/// store.
fn assert_nothing_local(f: &HistoryFixture) {
    for attrs in f.outputs.values() {
        for outs in attrs.values() {
            for p in outs.values() {
                let valid = nix_output(Command::new("nix-store")
                    .args(["-q", "--hash", p]))
                    .status
                    .success();
                assert!(!valid, "{p} is in the local store after bisect");
            }
        }
    }
}

#[test]
fn bisect_finds_the_culprit_from_the_cache_without_building() {
    let f = history_fixture();
    let _store = local_store_lock().read().unwrap_or_else(|e| e.into_inner());
    let file = f.cached_file.display().to_string();
    let (code, v, err) = bisect(
        f,
        &["--good", f.commit(10), "--bad", f.commit(170), "--max-growth", "1MiB", "--revs-file", &file],
    );
    assert_eq!(code, 0, "{err}");
    assert_finds_the_culprit(f, &v);
    assert_nothing_local(f);
    // The binary search over the 15 listed commits between good and bad:
    // good, bad, ⌈log2 16⌉ probes, and one more for each skipped (c090,
    // which does not evaluate); then the 11 commits from 130 to 140
    // instantiated.
    let skipped = v["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["verdict"] == "skipped")
        .count();
    let evaluations = v["costs"]["evaluations"].as_u64().unwrap() as usize;
    assert_eq!(evaluations, v["probes"].as_array().unwrap().len());
    assert!(evaluations <= 2 + 4 + skipped, "{evaluations} evaluations: {v:#}");
    assert_eq!(v["costs"]["instantiations"], 11);
    assert!(v["costs"]["seconds"].as_f64().unwrap() > 0.0, "{}", v["costs"]);
    assert_eq!(v["notes"], serde_json::json!([]), "with the list, nothing to advise");
}

#[test]
fn bisect_without_a_list_and_with_other_rules() {
    let f = history_fixture();
    let _store = local_store_lock().read().unwrap_or_else(|e| e.into_inner());
    // Every first-parent commit probed: the uncached ones are skipped for
    // their neighbours, and the answer is the same.
    let (code, v, err) = bisect(
        f,
        &["--good", f.commit(10), "--bad", f.commit(170), "--max-growth", "1MiB"],
    );
    assert_eq!(code, 0, "{err}");
    assert_finds_the_culprit(f, &v);
    assert_nothing_local(f);
    // It says how to spend fewer evaluations: once.
    let notes = v["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].as_str().unwrap().contains("--revs-file"), "{notes:?}");
    let file = f.cached_file.display().to_string();
    // The path the bad closure gained, forbidden by itself; another path
    // of the same name (another hash) is not it.
    let bigdata = v["target"].as_str().unwrap().to_string();
    let (dir, base) = bigdata.rsplit_once('/').unwrap();
    let other = format!("{dir}/{}{}", "0".repeat(32), &base[32..]);
    for rule in [
        &["--forbid", "bigdata*"][..],
        &["--max-closure", "2MiB"][..],
        &["--forbid", &bigdata][..],
    ] {
        let mut args = vec!["--good", f.commit(10), "--bad", f.commit(170), "--revs-file", &file];
        args.extend(rule);
        let (code, v, err) = bisect(f, &args);
        assert_eq!(code, 0, "{rule:?}: {err}");
        assert_eq!(n_of(f, &v["first_bad"]["commit"]), CULPRIT, "{rule:?}: {v:#}");
        assert_eq!(v["target"], bigdata.as_str(), "{rule:?}");
    }
    let repo = f.repo.display().to_string();
    let o = heft_run(
        Some(&f.server.url()),
        &["bisect", "app", "--repo", &repo, "--good", f.commit(10), "--bad", f.commit(170), "--forbid", &other],
    );
    assert_usage_error(&o, "the bad commit");
    assert_eq!(o.stderr.matches("good by the rule").count(), 1, "{}", o.stderr);
}

#[test]
fn a_good_commit_that_is_bad_or_no_rule_is_a_usage_error() {
    let f = history_fixture();
    let url = f.server.url();
    let repo = f.repo.display().to_string();
    let o = heft_run(
        Some(&url),
        &["bisect", "app", "--repo", &repo, "--good", f.commit(140), "--bad", f.commit(170), "--forbid", "bigdata*"],
    );
    assert_usage_error(&o, "the good commit");
    let o = heft_run(
        Some(&url),
        &["bisect", "app", "--repo", &repo, "--good", f.commit(10), "--bad", f.commit(170)],
    );
    assert_usage_error(&o, "bisect needs a rule");
    let o = heft_run(
        Some(&url),
        &["bisect", "app", "--repo", &repo, "--good", f.commit(10), "--bad", f.commit(15), "--forbid", "bigdata*"],
    );
    assert_usage_error(&o, "the bad commit");
}

/// The repository as a flake (`.#app`, read from git at each commit, no
/// checkout): `history` reads the closures the tree's attributes give, and
/// `bisect` finds the same culprit. The flakes' sources went to a scratch
/// store: none is in the user's store afterwards. Attributes given both
/// ways at once are refused.
#[test]
fn a_flake_reads_as_its_tree() {
    let f = history_fixture();
    let _store = local_store_lock().read().unwrap_or_else(|e| e.into_inner());
    let url = f.server.url();
    let repo = f.repo.display().to_string();
    let cached = f.cached_file.display().to_string();
    let json = |attrs: &[&str]| -> Value {
        let mut args = vec!["--json", "history"];
        args.extend(attrs);
        args.extend(["--repo", &repo, "--revs-file", &cached]);
        let o = heft_run(Some(&url), &args);
        assert_eq!(o.code, 0, "{}", o.stderr);
        serde_json::from_str(&o.stdout).unwrap()
    };
    let tree = json(&["app", "libcore"]);
    let flake = json(&[".#app", ".#libcore"]);
    let (tree, flake) = (
        tree["commits"].as_array().unwrap(),
        flake["commits"].as_array().unwrap(),
    );
    assert_eq!(tree.len(), 20);
    assert_eq!(flake.len(), 20);
    let mut read = 0;
    for (t, fl) in tree.iter().zip(flake) {
        assert_eq!(t["commit"], fl["commit"]);
        for (a, fa) in [("app", ".#app"), ("libcore", ".#libcore")] {
            for k in ["status", "closure_size", "outputs"] {
                assert_eq!(t["attrs"][a][k], fl["attrs"][fa][k], "{}: {a} {k}", t["commit"]);
            }
            read += usize::from(fl["attrs"][fa]["status"] == "read");
        }
    }
    // app at 19 cached commits (c090 does not evaluate), libcore at 20.
    assert_eq!(read, 39);

    let o = heft_run(
        Some(&url),
        &[
            "--json", "bisect", ".#app", "--repo", &repo, "--good", f.commit(10), "--bad",
            f.commit(170), "--max-growth", "1MiB", "--revs-file", &cached,
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_finds_the_culprit(f, &v);
    assert_nothing_local(f);

    for n in [10, 90, 130, CULPRIT, 140, 170] {
        let src = crate::common::flake_source(&format!("git+file://{repo}?rev={}", f.commit(n)));
        assert!(!src.exists(), "c{n}'s flake source {} is in the store", src.display());
    }

    let mixed = heft_run(
        Some(&url),
        &["history", ".#app", "libcore", "--repo", &repo, "--revs-file", &cached],
    );
    assert_usage_error(&mixed, "give every attribute as a flake's (.#app) or none");
}

/// What `bisect` reports it ran is what the kernel saw it run (strace of
/// every execve): one `nix-env` a probe, one `nix-instantiate` an
/// instantiation, one worktree for each of them (none for a flake, read
/// from git), and nothing that builds; and every narinfo asked for once,
/// on a server and a local cache of the run's own.
#[test]
fn bisect_runs_what_it_counts_and_asks_each_narinfo_once() {
    let f = history_fixture();
    let _store = local_store_lock().read().unwrap_or_else(|e| e.into_inner());
    let mut opts = Options::new(&f.cache_dir);
    opts.latency = Duration::from_millis(20);
    let server = CacheServer::start(opts).expect("the cache server starts");
    let repo = f.repo.display().to_string();
    let file = f.cached_file.display().to_string();
    for attr in ["app", ".#app"] {
        let traces = scratch_dir("nix-heft-test-bisect-strace-");
        let xdg = scratch_dir("nix-heft-test-bisect-xdg-");
        let tmp = scratch_dir("nix-heft-test-bisect-tmp-");
        let before = server.served().len();
        let url = server.url();
        let out = traced(
            &traces,
            Command::new(assert_cmd::cargo::cargo_bin("nix-heft"))
                .env("NIX_CONFIG", trusting_conf())
                .env("XDG_CACHE_HOME", &xdg)
                .env("TMPDIR", &tmp)
                .args(["--store", &url, "--json", "bisect", attr, "--repo", &repo])
                .args(["--good", f.commit(10), "--bad", f.commit(170)])
                .args(["--max-growth", "1MiB", "--revs-file", &file]),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{attr}: {stderr}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_finds_the_culprit(f, &v);
        assert_nothing_local(f);
        let evaluations = v["costs"]["evaluations"].as_u64().unwrap() as usize;
        let instantiations = v["costs"]["instantiations"].as_u64().unwrap() as usize;

        let ex = execs(&traces);
        let count = |pred: &dyn Fn(&Vec<String>) -> bool| ex.iter().filter(|a| pred(a)).count();
        let has = |a: &Vec<String>, w: &str| a.iter().any(|x| x == w);
        assert_eq!(
            count(&|a| runs(a, "nix-env") && has(a, "-qaP")),
            evaluations,
            "{attr}: one nix-env a probe"
        );
        assert_eq!(
            count(&|a| runs(a, "nix-instantiate") && has(a, "--eval-store") && !has(a, "--eval")),
            instantiations,
            "{attr}: one nix-instantiate an instantiation"
        );
        let worktrees = count(&|a| {
            runs(a, "git") && a.windows(2).any(|w| w[0] == "worktree" && w[1] == "add")
        });
        let expected = if attr.starts_with(".#") {
            0
        } else {
            evaluations + instantiations
        };
        assert_eq!(worktrees, expected, "{attr}: worktrees");
        let builds: Vec<&Vec<String>> = ex
            .iter()
            .filter(|a| {
                runs(a, "nix-build")
                    || (runs(a, "nix-store") && (has(a, "--realise") || has(a, "-r")))
                    || (runs(a, "nix") && has(a, "build"))
            })
            .collect();
        assert!(builds.is_empty(), "{attr}: built: {builds:?}");

        let served = server.served();
        let mut narinfos: std::collections::BTreeMap<&str, usize> = Default::default();
        for s in &served[before..] {
            if s.path.ends_with(".narinfo") {
                *narinfos.entry(s.path.as_str()).or_default() += 1;
            }
        }
        assert!(narinfos.len() > 10, "{attr}: {narinfos:?}");
        let twice: Vec<_> = narinfos.iter().filter(|(_, c)| **c > 1).collect();
        assert!(twice.is_empty(), "{attr}: asked more than once: {twice:?}");
    }
}

/// `--build` builds the first bad commit and its parent in the local store
/// (the one write nix-heft makes, asked for), the tree with `nix-build`
/// and the flake with `nix build`, and judges each built closure:
/// the parent good, the commit bad, each size what `nix path-info -S` says
/// of the built output. What it built is deleted again, holding the local
/// store's lock alone, so the other tests still find none of the
/// fixture's outputs there.
#[test]
fn bisect_build_confirms_by_building() {
    let f = history_fixture();
    let _alone = local_store_lock().write().unwrap_or_else(|e| e.into_inner());
    let file = f.cached_file.display().to_string();
    // The outputs both commits build, by Nix's own evaluation of their
    // trees (read-only: nothing written).
    let out_of = |n: usize| -> String {
        let tree = scratch_dir("nix-heft-test-bisect-build-tree-");
        let text = crate::common::git_in(&f.repo, &["show", &format!("{}:default.nix", f.commit(n))], None);
        std::fs::write(tree.join("default.nix"), text).unwrap();
        let o = crate::common::run(
            Command::new("nix-instantiate")
                .args(["--readonly-mode", "--eval", "--json", "-A", "app.outPath"])
                .arg(tree.join("default.nix")),
        );
        serde_json::from_str(&o).unwrap()
    };
    let (parent, culprit) = (out_of(CULPRIT - 1), out_of(CULPRIT));
    let repo = f.repo.display().to_string();
    // The tree built with nix-build, the flake with nix build.
    for attr in ["app", ".#app"] {
        for p in [&parent, &culprit] {
            assert!(!std::path::Path::new(p).exists(), "{p} before the build");
        }
        // The builds nix-heft runs write to the system store: under the
        // lock the tests' own Nix processes take (common::system_store_lock;
        // the fixture is made above, so nothing held waits for it).
        let o = {
            let _nix = system_store_lock();
            heft_run(
                Some(&f.server.url()),
                &[
                    "--json", "bisect", attr, "--repo", &repo, "--good", f.commit(10), "--bad",
                    f.commit(170), "--max-growth", "1MiB", "--revs-file", &file, "--build", "--option",
                    "sandbox", "false",
                ],
            )
        };
        let (code, err) = (o.code, &o.stderr);
        let v: Value = serde_json::from_str(&o.stdout).unwrap_or(Value::Null);
        // What it built is deleted whatever the assertions below say. A
        // build makes every output of each derivation of the build graph
        // (the fixture deleted every output it built; the `.drv` files,
        // which the fixture's share, stay, as the fixture's did).
        let mut built: Vec<String> = Vec::new();
        for p in [&parent, &culprit] {
            if std::path::Path::new(p).exists() {
                let drv = crate::common::run(Command::new("nix-store").args(["-qd", p]));
                let drvs = crate::common::run(Command::new("nix-store").args(["-qR", drv.trim()]));
                for d in drvs.lines() {
                    let outs = crate::common::run(Command::new("nix-store").args(["-q", "--outputs", d]));
                    built.extend(
                        outs.lines()
                            .filter(|o| std::path::Path::new(o).exists())
                            .map(String::from),
                    );
                }
            }
        }
        let sizes: Vec<u64> = [&parent, &culprit]
            .iter()
            .map(|p| {
                let o = crate::common::run(
                    crate::common::nix().args(["path-info", "-S", "--json"]).arg(p),
                );
                let v: Value = serde_json::from_str(&o).unwrap();
                v[0]["closureSize"].as_u64().unwrap()
            })
            .collect();
        built.sort();
        built.dedup();
        let deleted = nix_output(Command::new("nix-store")
            .arg("--delete")
            .args(&built));
        assert!(deleted.status.success(), "{}", String::from_utf8_lossy(&deleted.stderr));

        assert_eq!(code, 0, "{err}");
        assert_finds_the_culprit(f, &v);
        let k = &v["confirmation"];
        assert_eq!(k["agrees"], true, "{k:#}");
        assert_eq!(n_of(f, &k["last_good"]["commit"]), CULPRIT - 1);
        assert_eq!(k["last_good"]["verdict"], "good");
        assert_eq!(k["last_good"]["closure_size"], sizes[0]);
        assert_eq!(n_of(f, &k["first_bad"]["commit"]), CULPRIT);
        assert_eq!(k["first_bad"]["verdict"], "bad");
        assert_eq!(k["first_bad"]["closure_size"], sizes[1]);
        assert!(sizes[1] > sizes[0] + (1 << 20), "{sizes:?}");
        assert_nothing_local(f);
        for p in [&parent, &culprit] {
            assert!(!std::path::Path::new(p).exists(), "{p} left after the test");
        }
    }
}
