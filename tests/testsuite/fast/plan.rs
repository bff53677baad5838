//! `split`, `advise` and `partition` on hello-1.0, whose only reference to
//! the manual is its README under share/doc.

use crate::common::fast_fixtures::*;
use serde_json::{Value, json};

/// nixpkgs' multiple-outputs preset moves share/doc into `doc`: the doc
/// output takes the README and the manual reference, out keeps every
/// other reference, and hello's closure loses the manual. Sizes come from
/// Nix's record: out's closure is its own NAR plus Nix's `narSize` of each
/// path it still reaches.
#[test]
fn split_moves_the_docs_and_the_manual_leaves_the_closure() {
    let hello = root("hello");
    let v = json_on_chroot(&["split", hello, "--preset", "nixpkgs"]);
    let outputs = v["outputs"].as_array().unwrap();
    let out = outputs.iter().find(|o| o["name"] == "out").unwrap();
    let doc = outputs.iter().find(|o| o["name"] == "doc").unwrap();
    assert_eq!(doc["files"], json!(["share/doc/hello/README"]), "{v}");
    assert_eq!(doc["references"], json!([root("manual")]), "{v}");
    let mut kept: Vec<String> = recorded_lines("references/hello")
        .into_iter()
        .filter(|p| p != root("manual"))
        .collect();
    kept.sort();
    let mut out_refs: Vec<String> = out["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect();
    out_refs.sort();
    assert_eq!(out_refs, kept, "{v}");
    let rest: u64 = closure(hello)
        .iter()
        .filter(|p| *p != hello && *p != root("manual"))
        .map(|p| nar_size(p))
        .sum();
    let out_nar = out["nar_size"].as_u64().unwrap();
    assert!(out_nar < nar_size(hello), "{v}");
    assert_eq!(out["closure_size"].as_u64(), Some(out_nar + rest), "{v}");
    assert_eq!(v["roots"][0]["before"].as_u64(), Some(closure_size(hello)));
    assert_eq!(v["roots"][0]["after"].as_u64(), Some(out_nar + rest));
}

/// advise's first action splits hello's docs out, safely, and its saving
/// is what split computed: the manual and the README leave.
#[test]
fn advise_splits_out_the_docs_only_reference() {
    let hello = root("hello");
    let v = json_on_chroot(&["advise", "--min-saving", "0", hello]);
    assert_eq!(v["closure_size"].as_u64(), Some(closure_size(hello)));
    let first = &v["actions"][0];
    assert_eq!(first["kind"], "split-outputs", "{v}");
    assert_eq!(first["package"], hello, "{v}");
    assert_eq!(first["cuts"], json!([root("manual")]), "{v}");
    assert_eq!(first["safety"], "safe", "{v}");
    assert_eq!(first["evidence"], json!(["share/doc/hello/README"]), "{v}");
    let split = json_on_chroot(&["split", hello, "--preset", "nixpkgs"]);
    let after = split["roots"][0]["after"].as_u64().unwrap();
    assert_eq!(
        first["saving"].as_u64(),
        Some(closure_size(hello) - after),
        "{v}"
    );
    // No action cuts a run-time reference: libgreet is linked.
    for a in v["actions"].as_array().unwrap() {
        assert!(
            !a["cuts"]
                .as_array()
                .unwrap()
                .contains(&json!(root("libgreet"))),
            "{a}"
        );
    }
    // hello-2 has no docs-only reference: nothing to split out.
    let v2 = json_on_chroot(&["advise", "--min-saving", "0", root("hello-2")]);
    assert!(
        !v2["actions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["kind"] == "split-outputs"),
        "{v2}"
    );
}

/// partition groups hello's files by their top directory: share/ alone
/// holds the manual; keeping bin and lib drops it, and the closure left is
/// the smaller NAR plus Nix's `narSize` of every path still reached.
#[test]
fn partition_by_top_directory_keeps_only_what_is_asked() {
    let hello = root("hello");
    let v: Value = json_on_chroot(&[
        "partition",
        hello,
        "--by",
        "^([a-z]+)/",
        "--keep",
        "bin,lib",
    ]);
    let group = |k: &str| {
        v["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["key"] == k)
            .unwrap_or_else(|| panic!("no group {k}: {v}"))
            .clone()
    };
    assert_eq!(
        group("share")["exclusive_references"],
        json!([root("manual")]),
        "{v}"
    );
    assert!(
        group("bin")["references"]
            .as_array()
            .unwrap()
            .contains(&json!(root("libgreet"))),
        "{v}"
    );
    assert_eq!(v["closure_before"].as_u64(), Some(closure_size(hello)));
    let rest: u64 = closure(hello)
        .iter()
        .filter(|p| *p != hello && *p != root("manual"))
        .map(|p| nar_size(p))
        .sum();
    let nar = v["nar_size_after_keep"].as_u64().unwrap();
    assert_eq!(v["closure_after_keep"].as_u64(), Some(nar + rest), "{v}");
    assert!(
        !v["references_after_keep"]
            .as_array()
            .unwrap()
            .contains(&json!(root("manual"))),
        "{v}"
    );
}
