//! `nix-heft bisect` (issue 42) on the repository of 200 commits and the
//! cache of every tenth (`common::history_fixture`): the first bad commit is
//! the one that made libcore's README name bigdata, found from the cache
//! and by instantiating the commits between the cached pair into a
//! temporary store, with the broken commits skipped, the evaluations
//! within the binary search's bound, the derivation's root cause named,
//! and nothing built.

use std::process::Command;

use serde_json::Value;

use crate::common::history_fixture::{
    BROKEN, CULPRIT, HistoryFixture, history_fixture,
};
use crate::common::{assert_usage_error, heft_run};

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
    // Nothing built or substituted: no output of the range is in the
    // local store.
    for attrs in f.outputs.values() {
        for outs in attrs.values() {
            for p in outs.values() {
                let valid = Command::new("nix-store")
                    .args(["-q", "--hash", p])
                    .output()
                    .unwrap()
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
    let file = f.cached_file.display().to_string();
    let (code, v, err) = bisect(
        f,
        &["--good", f.commit(10), "--bad", f.commit(170), "--max-growth", "1MiB", "--revs-file", &file],
    );
    assert_eq!(code, 0, "{err}");
    assert_finds_the_culprit(f, &v);
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
    // Every first-parent commit probed: the uncached ones are skipped for
    // their neighbours, and the answer is the same.
    let (code, v, err) = bisect(
        f,
        &["--good", f.commit(10), "--bad", f.commit(170), "--max-growth", "1MiB"],
    );
    assert_eq!(code, 0, "{err}");
    assert_finds_the_culprit(f, &v);
    // It says how to spend fewer evaluations: once.
    let notes = v["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].as_str().unwrap().contains("--revs-file"), "{notes:?}");
    let file = f.cached_file.display().to_string();
    for rule in [&["--forbid", "bigdata*"][..], &["--max-closure", "2MiB"][..]] {
        let mut args = vec!["--good", f.commit(10), "--bad", f.commit(170), "--revs-file", &file];
        args.extend(rule);
        let (code, v, err) = bisect(f, &args);
        assert_eq!(code, 0, "{rule:?}: {err}");
        assert_eq!(n_of(f, &v["first_bad"]["commit"]), CULPRIT, "{rule:?}: {v:#}");
    }
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
