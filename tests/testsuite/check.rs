//! `nix-heft check` on the package set of tests/fixtures/diff.nix, built
//! with real Nix: budgets, growth against a baseline, forbidden paths and
//! verdicts, config files, output formats and exit codes.

use crate::common::*;
use serde_json::Value;

fn check_json(args: &[&str]) -> (i32, Value) {
    let mut a = vec!["--json", "check"];
    a.extend_from_slice(args);
    let o = heft_run(None, &a);
    assert!(
        o.code == 0 || o.code == 4,
        "exit {}: {}{}",
        o.code,
        o.stdout,
        o.stderr
    );
    (o.code, serde_json::from_str(&o.stdout).unwrap())
}

fn name_of(p: &str) -> &str {
    &p.rsplit('/').next().unwrap()[33..]
}

#[test]
fn budget_breach_names_the_top_contributor() {
    let (_, after) = diff_fixture();
    let (code, j) = check_json(&[after, "--max-closure", "100KiB"]);
    assert_eq!(code, 4);
    assert_eq!(j["ok"], false);
    let v = &j["violations"][0];
    assert_eq!(v["rule"], "max-closure");
    let top = v["contributors"][0]["path"].as_str().unwrap();
    assert_eq!(name_of(top), "docdep-3.0");
    // Its added size is its own NAR size: nothing else hangs below it.
    let info = nix_path_info(None, &[after]);
    assert_eq!(v["contributors"][0]["added_size"], info[top]["narSize"]);
    assert_eq!(j["closure_size"], info[after.as_str()]["closureSize"]);
    // advise's single actions, with the warning that they overlap.
    let acts = v["actions"].as_array().unwrap();
    assert!(!acts.is_empty(), "{v}");
    assert!(v["note"].as_str().unwrap().contains("do not add up"), "{v}");
    // The joint answer comes from advise's plan, the same as advise gives.
    let o = heft_run(None, &["--json", "advise", "--min-saving", "0", after]);
    let adv: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["plan_closure_after"], adv["plan"]["closure_after"], "{v}");
    assert!(v["note"].as_str().unwrap().contains("advise's plan"), "{v}");
    let text = heft_run(None, &["check", after, "--max-closure", "100KiB"]);
    assert_eq!(text.code, 4);
    assert!(text.stdout.contains("[max-closure]"), "{}", text.stdout);
    assert!(text.stdout.contains("docdep-3.0"), "{}", text.stdout);
    // SI units: 400 kB is under the closure, 500 kB over it.
    let size = info[after.as_str()]["closureSize"].as_u64().unwrap();
    assert!(size > 400_000 && size < 500_000, "{size}");
    assert_eq!(check_json(&[after, "--max-closure", "400kB"]).0, 4);
    assert_eq!(check_json(&[after, "--max-closure", "500kB"]).0, 0);
    assert_eq!(
        check_json(&[after, "--max-closure", &size.to_string()]).0,
        0,
        "a closure exactly at the budget passes"
    );
}

#[test]
fn forbidden_path_fails_with_chain_and_holding_file() {
    let (_, after) = diff_fixture();
    let (code, j) = check_json(&[after, "--forbid", "docdep*"]);
    assert_eq!(code, 4);
    let v = &j["violations"][0];
    assert_eq!(v["rule"], "forbid");
    let chain: Vec<&str> = v["chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(chain.len(), 2);
    assert_eq!(chain[0], after);
    assert_eq!(name_of(chain[1]), "docdep-3.0");
    assert!(nix_store_references(chain[0]).contains(chain[1]));
    let e = &v["evidence"][0];
    assert_eq!(e["referrer"], chain[0]);
    assert_eq!(e["reference"], chain[1]);
    assert_eq!(e["evidence"][0]["file"], "share/doc/app/README");
    // A longer chain: libnew is reached through app, and the package name
    // alone matches.
    let (code, j) = check_json(&[after, "--forbid", "libnew"]);
    assert_eq!(code, 4);
    assert_eq!(
        j["violations"][0]["evidence"][0]["evidence"][0]["kind"],
        "elf-runpath"
    );
}

/// `--forbid` given a whole store path forbids that path, exactly (as
/// bisect's does): the same violation as its name's glob, none for a path
/// the closure does not hold, and a usage error for a string under the
/// store directory that is no store path.
#[test]
fn forbidden_store_path_is_that_path_exactly() {
    let (before, after) = diff_fixture();
    let (_, by_name) = check_json(&[after, "--forbid", "docdep*"]);
    let docdep = by_name["violations"][0]["chain"][1]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(name_of(&docdep), "docdep-3.0");
    let (code, j) = check_json(&[after, "--forbid", &docdep]);
    assert_eq!(code, 4, "{j}");
    let v = j["violations"].as_array().unwrap();
    assert_eq!(v.len(), 1, "{j}");
    assert_eq!(v[0]["rule"], "forbid");
    assert_eq!(v[0]["chain"], by_name["violations"][0]["chain"]);
    assert_eq!(v[0]["evidence"], by_name["violations"][0]["evidence"]);
    // A store path the closure does not hold breaks nothing (the other
    // root is not in this one's closure).
    assert!(!nix_closure_paths(None, &[after]).iter().any(|p| p == before));
    let (code, j) = check_json(&[after, "--forbid", before]);
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["violations"].as_array().map(Vec::len), Some(0), "{j}");
    let o = heft_run(None, &["check", after, "--forbid", "/nix/store/not-a-store-path"]);
    assert_usage_error(&o, "--forbid /nix/store/not-a-store-path: ");
}

#[test]
fn doc_only_reference_fails_forbid_verdict_docs() {
    let (before, after) = diff_fixture();
    let (code, j) = check_json(&[after, "--forbid-verdict", "docs"]);
    assert_eq!(code, 4);
    let vs = j["violations"].as_array().unwrap();
    assert_eq!(vs.len(), 1, "{j}");
    assert_eq!(vs[0]["rule"], "forbid-verdict");
    let e = &vs[0]["evidence"][0];
    assert_eq!(e["referrer"], after.as_str());
    assert_eq!(name_of(e["reference"].as_str().unwrap()), "docdep-3.0");
    assert_eq!(e["evidence"][0]["file"], "share/doc/app/README");
    assert_eq!(e["evidence"][0]["verdict"], "docs");
    assert_eq!(check_json(&[before, "--forbid-verdict", "docs"]).0, 0);
}

#[test]
fn build_only_and_dead_references_fail_their_verdicts() {
    let (_, after) = diff_fixture();
    for (verdict, dep, file, kind) in [
        ("build", "devtool-0.9", "lib/pkgconfig/app.pc", "text"),
        ("dead", "deadlib-4.0", "bin/app", "elf-runpath"),
    ] {
        let (code, j) = check_json(&[after, "--forbid-verdict", verdict]);
        assert_eq!(code, 4, "{verdict}");
        let vs = j["violations"].as_array().unwrap();
        assert_eq!(vs.len(), 1, "{verdict}: {j}");
        let e = &vs[0]["evidence"][0];
        assert_eq!(name_of(e["reference"].as_str().unwrap()), dep);
        assert!(nix_store_references(after).contains(e["reference"].as_str().unwrap()));
        assert_eq!(e["evidence"][0]["file"], file);
        assert_eq!(e["evidence"][0]["kind"], kind);
        assert_eq!(e["evidence"][0]["verdict"], verdict);
    }
    let (_, j) = check_json(&[after, "--forbid-verdict", "docs,build,dead"]);
    assert_eq!(j["violations"].as_array().unwrap().len(), 3);
}

#[test]
fn clean_closure_passes_with_exit_0() {
    let (before, _) = diff_fixture();
    let o = heft_run(
        None,
        &[
            "check",
            before,
            "--max-closure",
            "1GiB",
            "--forbid",
            "docdep*",
            "--forbid",
            "*-dev",
            "--forbid-verdict",
            "docs,build,dead",
        ],
    );
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("ok: every rule holds"), "{}", o.stdout);
    assert!(o.stderr.is_empty(), "{}", o.stderr);
    let (_, j) = check_json(&[before, "--max-closure", "1GiB"]);
    assert_eq!(j["ok"], true);
    assert_eq!(j["violations"], serde_json::json!([]));
}

#[test]
fn growth_against_a_root_and_a_saved_size_json() {
    let (before, after) = diff_fixture();
    let (code, j) = check_json(&[after, "--max-growth", "10%", "--against", before]);
    assert_eq!(code, 4);
    let v = &j["violations"][0];
    assert_eq!(v["rule"], "max-growth");
    // What came in since the baseline, largest first.
    assert_eq!(
        name_of(v["contributors"][0]["path"].as_str().unwrap()),
        "docdep-3.0"
    );
    let info_b = nix_path_info(None, &[before]);
    assert_eq!(
        j["baseline"]["closure_size"],
        info_b[before.as_str()]["closureSize"]
    );
    assert_eq!(
        check_json(&[after, "--max-growth", "1GiB", "--against", before]).0,
        0
    );
    // The same baseline from a saved `size --json`.
    let dir = scratch("check-baseline");
    let saved = dir.join("before.json");
    let o = heft_run(None, &["--json", "size", before]);
    assert_eq!(o.code, 0);
    std::fs::write(&saved, &o.stdout).unwrap();
    let (code, j2) = check_json(&[
        after,
        "--max-growth",
        "10%",
        "--against-json",
        saved.to_str().unwrap(),
    ]);
    assert_eq!(code, 4);
    assert_eq!(j2["violations"][0]["contributors"], v["contributors"]);
    assert_eq!(
        j2["baseline"]["closure_size"],
        j["baseline"]["closure_size"]
    );
}

#[test]
fn config_file_gives_every_rule_and_flags_override() {
    let (_, after) = diff_fixture();
    let dir = scratch("check-config");
    std::fs::write(
        dir.join("nix-heft.toml"),
        format!(
            "roots = [\"{after}\"]\nmax-closure = \"1GiB\"\nforbid = [\"docdep*\"]\n\
             forbid-verdict = [\"docs\"]\nformat = \"json\"\n"
        ),
    )
    .unwrap();
    // ./nix-heft.toml is read from the working directory.
    let out = heft().current_dir(&dir).arg("check").output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rules: Vec<&str> = j["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["forbid", "forbid-verdict"]);
    // A flag overrides the file's key.
    let out = heft()
        .current_dir(&dir)
        .args(["check", "--max-closure", "1KiB"])
        .output()
        .unwrap();
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["violations"][0]["rule"], "max-closure");
    // --config names another file; an unknown key is a usage error.
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "max-clousre = \"1GiB\"\n").unwrap();
    let o = heft_run(None, &["check", after, "--config", bad.to_str().unwrap()]);
    assert_usage_error(&o, "max-clousre");
}

fn snapshot_filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"/nix/store/[0-9a-z]{32}-", "/nix/store/<hash>-"),
        // gcc's output varies with its version: sizes are checked against
        // Nix in the JSON tests, the layout here.
        (r"[0-9]+(\.[0-9])? (B|KiB|MiB)\b", "<size>"),
        (r"\([0-9]+ bytes\)", "(<n> bytes)"),
        (r"\([0-9a-z]{8}\)", "(<hash8>)"),
    ]
}

#[test]
fn github_format_snapshot() {
    let (_, after) = diff_fixture();
    let o = heft_run(
        None,
        &[
            "check",
            after,
            "--format",
            "github",
            "--max-closure",
            "100KiB",
            "--forbid",
            "docdep*",
            "--forbid-verdict",
            "docs",
        ],
    );
    assert_eq!(o.code, 4, "{}", o.stderr);
    assert!(
        o.stdout.lines().all(|l| l.starts_with("::error title=")),
        "{}",
        o.stdout
    );
    insta::with_settings!({filters => snapshot_filters()}, {
        insta::assert_snapshot!(o.stdout);
    });
}

#[test]
fn markdown_format_snapshot() {
    let (before, after) = diff_fixture();
    let o = heft_run(
        None,
        &[
            "check",
            after,
            "--format",
            "markdown",
            "--max-growth",
            "10%",
            "--against",
            before,
            "--forbid",
            "docdep*",
        ],
    );
    assert_eq!(o.code, 4, "{}", o.stderr);
    insta::with_settings!({filters => snapshot_filters()}, {
        insta::assert_snapshot!(o.stdout);
    });
    let ok = heft_run(
        None,
        &[
            "check",
            before,
            "--format",
            "markdown",
            "--max-closure",
            "1GiB",
        ],
    );
    assert_eq!(ok.code, 0);
    insta::with_settings!({filters => snapshot_filters()}, {
        insta::assert_snapshot!("markdown_ok", ok.stdout);
    });
}

#[test]
fn bad_input_exit_codes() {
    let (_, after) = diff_fixture();
    let o = heft_run(None, &["check", after, "--max-closure", "12parsecs"]);
    assert_usage_error(&o, "unknown unit 'parsecs'");
    let o = heft_run(None, &["check", after, "--forbid", "rocm-[llvm"]);
    assert_usage_error(&o, "bad pattern 'rocm-[llvm'");
    let o = heft_run(
        None,
        &[
            "check",
            after,
            "--max-growth",
            "10 percent",
            "--against",
            after,
        ],
    );
    assert_usage_error(&o, "bad size '10 percent'");
    let o = heft_run(None, &["check", after, "--max-growth", "10%"]);
    assert_usage_error(&o, "needs a baseline");
    let o = heft_run(None, &["check", after]);
    assert_usage_error(&o, "nothing to check");
    // clap refuses a verdict it does not know, naming those it does
    // (which completions offer); spaces after a comma are fine.
    let o = heft_run(None, &["check", after, "--forbid-verdict", "docs, runtime"]);
    assert_usage_error(&o, "invalid value 'runtime' for '--forbid-verdict");
    assert!(o.stderr.contains("docs, build, dead"), "{}", o.stderr);
    let o = heft_run(
        None,
        &[
            "--json",
            "check",
            after,
            "--format",
            "github",
            "--max-closure",
            "1GiB",
        ],
    );
    assert_usage_error(&o, "disagree");
    let missing = scratch("check-missing").join("nope.json");
    let o = heft_run(
        None,
        &[
            "check",
            after,
            "--max-growth",
            "10%",
            "--against-json",
            missing.to_str().unwrap(),
        ],
    );
    assert_error(&o, &missing.display().to_string());
    let bad = scratch("check-bad-baseline").join("bad.json");
    std::fs::write(&bad, "{\"not\": \"a size report\"}").unwrap();
    let o = heft_run(
        None,
        &[
            "check",
            after,
            "--max-growth",
            "10%",
            "--against-json",
            bad.to_str().unwrap(),
        ],
    );
    assert_error(&o, "not the output of `nix-heft size --json`");
    let o = heft_run(
        None,
        &[
            "check",
            after,
            "--config",
            missing.to_str().unwrap(),
            "--max-closure",
            "1GiB",
        ],
    );
    assert_error(&o, &missing.display().to_string());
}

/// docs/guide/review-and-ci.md's recipe for nixpkgs' `passthru.tests`: inside a Nix build, the
/// closure from `exportReferencesGraph` is enough for budgets and forbidden
/// paths.
#[test]
fn check_runs_inside_a_build_on_export_references_graph() {
    let (_, after) = diff_fixture();
    let heft = assert_cmd::cargo::cargo_bin("nix-heft");
    let nonce = format!("{:?}", std::time::SystemTime::now());
    let out = run(std::process::Command::new("nix-build")
        .arg(repo().join("tests/fixtures/check-in-build.nix"))
        .args([
            "--option",
            "sandbox",
            "false",
            "--option",
            "substituters",
            "",
        ])
        .arg("--no-out-link")
        .args(["--arg", "root", &format!("builtins.storePath {after}")])
        .args(["--argstr", "heft", heft.to_str().unwrap()])
        .args(["--argstr", "rules", "--max-closure 100KiB --forbid docdep*"])
        .args(["--argstr", "nonce", &nonce]));
    let dir = std::path::PathBuf::from(out.trim());
    let rc = std::fs::read_to_string(dir.join("rc")).unwrap();
    assert_eq!(
        rc.trim(),
        "4",
        "{}",
        std::fs::read_to_string(dir.join("stderr")).unwrap()
    );
    let j: Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    let info = nix_path_info(None, &[after]);
    assert_eq!(j["closure_size"], info[after.as_str()]["closureSize"]);
    let rules: Vec<&str> = j["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["max-closure", "forbid"]);
    assert_eq!(
        name_of(
            j["violations"][0]["contributors"][0]["path"]
                .as_str()
                .unwrap()
        ),
        "docdep-3.0"
    );
    // No file contents in the build's JSON: the chain's files are unknown,
    // and said so.
    assert_eq!(j["violations"][1]["evidence"][0]["unavailable"], true);
    assert_eq!(j["problems"][0]["kind"], "no-contents");
}

/// A source without file contents cannot pass `--forbid-verdict`
/// silently: the result is partial (exit 3), and still 4 when a rule is
/// broken.
#[test]
fn verdicts_without_file_contents_are_a_partial_result() {
    let (_, after) = diff_fixture();
    let json = scratch("check-json-store").join("closure.json");
    std::fs::write(
        &json,
        run(nix().args(["path-info", "-rsS", "--json", after])),
    )
    .unwrap();
    let store = json.to_str().unwrap();
    let o = heft_run(Some(store), &["check", after, "--forbid-verdict", "docs"]);
    assert_eq!(o.code, 3, "{}{}", o.stdout, o.stderr);
    assert!(o.stderr.contains("no file contents"), "{}", o.stderr);
    let o = heft_run(
        Some(store),
        &[
            "check",
            after,
            "--forbid-verdict",
            "docs",
            "--forbid",
            "docdep*",
        ],
    );
    assert_eq!(o.code, 4, "{}{}", o.stdout, o.stderr);
    assert!(o.stderr.contains("no file contents"), "{}", o.stderr);
    // Budgets need no contents: a clean pass.
    let o = heft_run(Some(store), &["check", after, "--max-closure", "1GiB"]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
}

/// A growth violation is explained by what `diff` says came in since the
/// baseline: exactly its added paths, in its order (largest NAR first),
/// each with the same referrer and, where `diff` read them, the same files;
/// not the largest paths of the closure by added size. With both kinds of
/// baseline: a root and a saved `size --json`.
#[test]
fn growth_lists_the_paths_diff_says_were_added() {
    let (before, after) = diff_fixture();
    let o = heft_run(None, &["--json", "diff", before, after]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let d: Value = serde_json::from_str(&o.stdout).unwrap();
    let diff_added = d["added"].as_array().unwrap();
    let saved = scratch("check-growth-diff").join("before.json");
    let o = heft_run(None, &["--json", "size", before]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    std::fs::write(&saved, &o.stdout).unwrap();
    for baseline in [
        ["--against", before.as_str()],
        ["--against-json", saved.to_str().unwrap()],
    ] {
        let mut args = vec![after.as_str(), "--max-growth", "10%"];
        args.extend(baseline);
        let (code, j) = check_json(&args);
        assert_eq!(code, 4);
        let v = &j["violations"][0];
        assert_eq!(v["rule"], "max-growth");
        let listed = v["contributors"].as_array().unwrap();
        let paths = |a: &[Value]| -> Vec<String> {
            a.iter()
                .map(|c| c["path"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(paths(listed), paths(diff_added), "{baseline:?}: {v}");
        for (c, a) in listed.iter().zip(diff_added) {
            assert_eq!(c["nar_size"], a["nar_size"], "{c}");
            assert_eq!(c["referrer"], a["why"]["referrer"], "{c} vs {a}");
            if a["why"]["edge"] == "new" {
                assert_eq!(c["evidence"], a["why"]["evidence"], "{c} vs {a}");
            }
        }
        // The rebuilt root is new too (diff lists it), which the largest
        // paths by added size left out.
        assert!(listed.iter().any(|c| c["path"] == after.as_str()), "{v}");
    }
    let text = heft_run(
        None,
        &["check", after, "--max-growth", "10%", "--against", before],
    );
    assert_eq!(text.code, 4);
    assert!(
        text.stdout
            .contains("paths added since the baseline, largest first:"),
        "{}",
        text.stdout
    );
    // BEFORE's app-1.0 is named too (the baseline): each has its hash.
    assert!(
        text.stdout.contains(&format!(
            "docdep-3.0  pulled in by app-1.0 ({}) from share/doc/app/README (text, docs)",
            &after[11..19]
        )),
        "{}",
        text.stdout
    );
}

/// Check's rows name paths as `diff` does (short names, a hash only where
/// two share a name), and several violations of one rule say what differs
/// between them: which verdict holds which path, largest path first.
#[test]
fn check_rows_use_diffs_names_and_say_what_differs() {
    let (_, after) = diff_fixture();
    let rules = [
        "check",
        after.as_str(),
        "--forbid-verdict",
        "docs,build,dead",
    ];
    let text = heft_run(None, &rules).stdout;
    assert!(
        text.contains(
            "[forbid-verdict] app-1.0 references docdep-3.0 only by documentation (docs): \
             share/doc/app/README"
        ),
        "{text}"
    );
    assert!(!text.contains("] /nix/store/"), "{text}");
    let md = heft_run(None, &[&rules[..], &["--format", "markdown"]].concat()).stdout;
    let summaries: Vec<&str> = md
        .lines()
        .filter_map(|l| l.strip_prefix("<details><summary>"))
        .collect();
    // The largest path first, as `nix path-info` sizes them.
    let j = check_json(&rules[1..]).1;
    let refs: Vec<&str> = j["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["evidence"][0]["reference"].as_str().unwrap())
        .collect();
    let info = nix_path_info(None, &refs);
    let sizes: Vec<u64> = refs
        .iter()
        .map(|r| info[*r]["narSize"].as_u64().unwrap())
        .collect();
    assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{sizes:?}");
    assert_eq!(
        summaries,
        [
            "1. forbid-verdict: docs hold on docdep-3.0 (from app-1.0)</summary>",
            "2. forbid-verdict: dead hold on deadlib-4.0 (from app-1.0)</summary>",
            "3. forbid-verdict: build hold on devtool-0.9 (from app-1.0)</summary>",
        ],
        "{md}"
    );
    assert!(
        md.contains(
            "| `forbid-verdict` | app-1.0 references deadlib-4.0 only by dead holds (dead): bin/app |"
        ),
        "{md}"
    );
    let gh = heft_run(None, &[&rules[..], &["--format", "github"]].concat()).stdout;
    let titles: Vec<&str> = gh
        .lines()
        .map(|l| {
            l.split_once("title=")
                .unwrap()
                .1
                .split_once("::")
                .unwrap()
                .0
        })
        .collect();
    assert_eq!(
        titles[0], "nix-heft check%3A forbid-verdict%3A docs hold on docdep-3.0 (from app-1.0)",
        "{gh}"
    );
    assert_eq!(titles.len(), 3, "{gh}");
}
