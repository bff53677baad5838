//! Splitting into an output the package already has
//! (tests/fixtures/existing-dev.nix: `outputs = [ "out" "dev" ]`, with
//! `lib/cmake` left in `out`): `split --move lib/cmake=dev` merges the
//! moved files into the existing `dev` and predicts the real rebuild's
//! `dev` (which moves `lib/cmake` there) to the byte, NAR size, references
//! and closure; the existing output is found by its deriver, or by its
//! name where no deriver is recorded, and the report says which. `advise`
//! proposes `moveToOutput` into it, not `outputs = [ "out" "dev" ]`, which
//! the package already has, and the snippet parses.

use std::collections::BTreeMap;
use std::process::Command;

use crate::common::*;
use serde_json::Value;

struct Built {
    lib: String,
    lib_dev: String,
    app: String,
    rebuilt: String,
    rebuilt_dev: String,
    rebuilt_app: String,
    build_dep: String,
}

fn built() -> &'static Built {
    static B: std::sync::OnceLock<Built> = std::sync::OnceLock::new();
    B.get_or_init(|| {
        let p = nix_build(
            &repo().join("tests/fixtures/existing-dev.nix"),
            &[
                "lib",
                "libDev",
                "app",
                "rebuilt",
                "rebuiltDev",
                "rebuiltApp",
                "buildDep",
            ],
        );
        Built {
            lib: p[0].clone(),
            lib_dev: p[1].clone(),
            app: p[2].clone(),
            rebuilt: p[3].clone(),
            rebuilt_dev: p[4].clone(),
            rebuilt_app: p[5].clone(),
            build_dep: p[6].clone(),
        }
    })
}

fn json(o: &Outcome) -> Value {
    assert_eq!(o.code, 0, "{}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout))
}

/// `nix path-info -S` of one path: (narSize, closure size, references).
fn info(p: &str) -> (u64, u64, Vec<String>) {
    let v: Value =
        serde_json::from_str(&run(nix().args(["path-info", "--json", "-S", p]))).unwrap();
    let e = &v[0];
    let mut refs: Vec<String> = e["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect();
    refs.sort();
    (
        e["narSize"].as_u64().unwrap(),
        e["closureSize"].as_u64().unwrap(),
        refs,
    )
}

fn outputs(v: &Value) -> BTreeMap<String, Value> {
    v["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["name"].as_str().unwrap().to_string(), o.clone()))
        .collect()
}

/// The prediction against the real rebuild: every output's NAR size,
/// references (the split path standing for the rebuilt `out`) and closure.
fn assert_matches_rebuild(v: &Value, b: &Built) {
    let outs = outputs(v);
    assert_eq!(outs.len(), 2, "{v}");
    let (dev_nar, dev_closure, dev_refs) = info(&b.rebuilt_dev);
    let dev = &outs["dev"];
    assert_eq!(dev["nar_size"].as_u64(), Some(dev_nar), "{dev}");
    assert_eq!(dev["closure_size"].as_u64(), Some(dev_closure), "{dev}");
    let mut predicted: Vec<String> = dev["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| match r.as_str().unwrap() {
            "output:out" => b.rebuilt.clone(),
            p => p.to_string(),
        })
        .collect();
    predicted.sort();
    assert_eq!(predicted, dev_refs);
    assert!(dev_refs.contains(&b.build_dep));
    let (out_nar, out_closure, _) = info(&b.rebuilt);
    assert_eq!(outs["out"]["nar_size"].as_u64(), Some(out_nar));
    assert_eq!(outs["out"]["closure_size"].as_u64(), Some(out_closure));
    // The consumer's closure after, as the rebuilt consumer's.
    let (_, app_closure, _) = info(&b.rebuilt_app);
    let app = v["roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["root"] == b.app.as_str())
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(app["after"].as_u64(), Some(app_closure), "{app}");
}

#[test]
fn a_move_into_an_existing_dev_predicts_the_rebuild_to_the_byte() {
    let b = built();
    // The fixture is what the issue describes: the rebuild's dev holds the
    // existing dev's files besides the moved ones, so a new `dev` made of
    // the moved files alone would be short of it.
    let (old_dev_nar, _, _) = info(&b.lib_dev);
    let (new_dev_nar, _, _) = info(&b.rebuilt_dev);
    assert!(old_dev_nar > 0 && new_dev_nar > old_dev_nar);

    let v = json(&heft_run(
        None,
        &[
            "--json",
            "split",
            &b.lib,
            "--move",
            "lib/cmake=dev",
            "--root",
            &b.app,
        ],
    ));
    assert_matches_rebuild(&v, b);
    let dev = &outputs(&v)["dev"];
    assert_eq!(dev["existing"], b.lib_dev.as_str(), "{dev}");
    assert_eq!(dev["found_by"], "deriver", "{dev}");
    // The existing dev's own files are in the prediction.
    let files: Vec<&str> = dev["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    for f in [
        "include/rocm-lib.h",
        "nix-support/propagated-build-inputs",
        "lib/cmake/rocm-lib/rocm-lib-config.cmake",
    ] {
        assert!(files.contains(&f), "{f} not in {files:?}");
    }
    let text = heft_run(
        None,
        &["split", &b.lib, "--move", "lib/cmake=dev", "--root", &b.app],
    );
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout.contains("the package already has this output")
            && text.stdout.contains(&b.lib_dev)
            && text.stdout.contains("same deriver"),
        "{}",
        text.stdout
    );
    // Without --root, the existing dev is one of the roots that pull the
    // path in, and it becomes the rebuilt dev.
    let v = json(&heft_run(
        None,
        &["--json", "split", &b.lib, "--move", "lib/cmake=dev"],
    ));
    assert_matches_rebuild(&v, b);
    let (_, dev_closure, _) = info(&b.rebuilt_dev);
    let dev_root = v["roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["root"] == b.lib_dev.as_str())
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(dev_root["after"].as_u64(), Some(dev_closure));
}

/// A chroot store whose database records no derivers: the existing output
/// is found by its name (and says it was assumed), with the same answer.
#[test]
fn without_a_deriver_the_existing_output_is_found_by_name() {
    let b = built();
    let root = scratch("existing-dev-no-deriver").join("store");
    run(nix()
        .args(["copy", "--no-check-sigs", "--to"])
        .arg(&root)
        .args([&b.app, &b.lib_dev]));
    sqlite_edit(
        &root.join("nix/var/nix/db/db.sqlite"),
        "c.execute('UPDATE ValidPaths SET deriver = NULL')",
        &[],
    );
    let store = root.to_str().unwrap();
    let v = json(&heft_run(
        Some(store),
        &[
            "--json",
            "split",
            &b.lib,
            "--move",
            "lib/cmake=dev",
            "--root",
            &b.app,
        ],
    ));
    assert_matches_rebuild(&v, b);
    let dev = &outputs(&v)["dev"];
    assert_eq!(dev["existing"], b.lib_dev.as_str(), "{dev}");
    assert_eq!(dev["found_by"], "name", "{dev}");
    let text = heft_run(
        Some(store),
        &["split", &b.lib, "--move", "lib/cmake=dev", "--root", &b.app],
    );
    assert!(
        text.stdout.contains("assumed from the name"),
        "{}",
        text.stdout
    );
}

/// `advise` moves the files into the existing output rather than declaring
/// outputs the package has; the snippet parses as Nix bindings.
#[test]
fn advise_moves_into_the_existing_output_and_the_snippet_parses() {
    let b = built();
    let v = json(&heft_run(
        None,
        &["--json", "advise", &b.app, "--min-saving", "0"],
    ));
    let split = v["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == "split-outputs" && a["package"] == b.lib.as_str())
        .unwrap_or_else(|| panic!("{v}"))
        .clone();
    let snippet = split["snippet"].as_str().unwrap();
    assert!(
        snippet.contains(r#"moveToOutput "lib/cmake" "$dev""#),
        "{snippet}"
    );
    assert!(!snippet.contains("outputs ="), "{snippet}");
    let reason = split["reason"].as_str().unwrap();
    assert!(reason.contains("already has output 'dev'"), "{reason}");
    let parsed = nix_output(Command::new("nix-instantiate")
        .args(["--parse", "--expr", &format!("{{\n{snippet}\n}}")]));
    assert!(
        parsed.status.success(),
        "{snippet}\n{}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    // The shell the builder runs is exactly the move.
    let post: String = serde_json::from_str(&run(Command::new("nix-instantiate").args([
        "--eval",
        "--strict",
        "--json",
        "--expr",
        &format!("{{\n{snippet}\n}}.postInstall"),
    ])))
    .unwrap();
    assert_eq!(post.trim(), r#"moveToOutput "lib/cmake" "$dev""#);
    // The saving is the rebuild's: the consumer's closure after.
    let (_, before, _) = info(&b.app);
    let (_, after, _) = info(&b.rebuilt_app);
    assert_eq!(split["saving"].as_u64(), Some(before - after), "{split}");
}
