//! `trace` and `--trace`: a live trace of a program that looks in the
//! store, measured against the chroot store; and the recorded trace of
//! hello-1.0 really run (traces/hello-run.json, made by
//! scripts/make-fast-fixtures.sh) folded into `refs` and `advise`.

use crate::common::fast_fixtures::*;
use serde_json::json;

fn recorded_trace() -> String {
    fixtures()
        .join("traces/hello-run.json")
        .display()
        .to_string()
}

/// A run proves what it loaded: libgreet through bin/hello's RUNPATH is
/// `used`, the manual that only the README names is `not used`.
#[test]
fn a_recorded_run_proves_the_library_and_not_the_manual() {
    let hello = root("hello");
    let v = json_on_chroot(&["refs", "--trace", &recorded_trace(), hello]);
    let edge = |to: &str| {
        v["edges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["referrer"] == hello && e["reference"] == to)
            .unwrap()
            .clone()
    };
    let lib = edge(root("libgreet"));
    assert_eq!(lib["traced"], "used", "{lib}");
    assert_eq!(lib["verdict"], "runtime", "{lib}");
    assert!(
        lib["reason"].as_str().unwrap().contains("lib/libgreet.so"),
        "{lib}"
    );
    assert_eq!(edge(root("manual"))["traced"], "not used");
    // advise still splits the docs out, and never cuts the traced library.
    let a = json_on_chroot(&[
        "advise",
        "--min-saving",
        "0",
        "--trace",
        &recorded_trace(),
        hello,
    ]);
    assert_eq!(a["actions"][0]["cuts"], json!([root("manual")]), "{a}");
    for act in a["actions"].as_array().unwrap() {
        assert!(
            !act["cuts"]
                .as_array()
                .unwrap()
                .contains(&json!(root("libgreet"))),
            "{act}"
        );
    }
}

/// `trace` runs a command (here /bin/cat of a file the manual does not
/// have), passes its exit code through, records the failed look-up under
/// the manual's store path, and sizes what was touched from `--store`
/// (Nix's `narSize`).
#[test]
fn trace_records_a_look_up_and_sizes_it_from_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("cat.json");
    let manual = root("manual");
    let missing = format!("{manual}/share/doc/greet/missing.html");
    let o = on_chroot(&[
        "--json",
        "trace",
        "-o",
        out.to_str().unwrap(),
        "--",
        "/bin/cat",
        &missing,
    ]);
    assert_eq!(o.code, 1, "cat's exit code: {}", o.stderr);
    let v = o.json();
    assert_eq!(v["touched"][0]["path"], manual, "{v}");
    assert_eq!(v["touched"][0]["files_looked_at"], 1, "{v}");
    assert_eq!(v["touched"][0]["files_used"], 0, "{v}");
    assert_eq!(v["touched"][0]["nar_size"].as_u64(), Some(nar_size(manual)));
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        t["paths"][manual]["files"]["share/doc/greet/missing.html"]["failed"]["open"], 1,
        "{t}"
    );
    assert_eq!(t["exit"]["code"], 1, "{t}");
}
