//! `refs --json`: every edge of the closure, its holds and verdict.

use std::collections::BTreeSet;

use crate::common::fast_fixtures::*;

/// The edges are Nix's references (`nix-store -q --references`, recorded)
/// of every path in hello's closure, self references apart; every edge
/// names the files holding it, and each verdict is the one its file
/// earns.
#[test]
fn edges_equal_nix_references_with_their_holds() {
    let hello = root("hello");
    let v = json_on_chroot(&["refs", hello]);
    let edges = v["edges"].as_array().unwrap();
    let ours: BTreeSet<(String, String)> = edges
        .iter()
        .map(|e| {
            (
                e["referrer"].as_str().unwrap().to_string(),
                e["reference"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut nix = BTreeSet::new();
    for p in closure(hello) {
        for r in nix_info()[&p]["references"].as_array().unwrap() {
            nix.insert((p.clone(), r.as_str().unwrap().to_string()));
        }
    }
    // A self reference is an edge of its own in refs (held, like any).
    assert_eq!(ours, nix, "{v}");
    // The recorded `nix-store -q --references` agree with path-info.
    let direct: BTreeSet<String> = ours
        .iter()
        .filter(|(a, _)| a == hello)
        .map(|(_, b)| b.clone())
        .collect();
    assert_eq!(direct, recorded_lines("references/hello"));
    for e in edges {
        assert!(
            !e["files"].as_array().unwrap().is_empty(),
            "an edge held by no file: {e}"
        );
    }
    let edge = |to: &str| {
        edges
            .iter()
            .find(|e| e["referrer"] == hello && e["reference"] == to)
            .unwrap()
    };
    assert_eq!(edge(root("manual"))["verdict"], "docs");
    assert_eq!(edge(root("libgreet"))["verdict"], "runtime");
    assert_eq!(edge(root("libgreet"))["kinds"]["elf-runpath"], 1);
    assert_eq!(
        edge(root("libgreet-dev"))["files"],
        serde_json::json!(["lib/hello/build-flags"])
    );
    // The source file named in bin/hello's symbol table only.
    let src = closure(hello)
        .into_iter()
        .find(|p| p.ends_with("-hello.c"))
        .unwrap();
    assert_eq!(edge(&src)["verdict"], "dead");
    assert_eq!(v["problems"], serde_json::json!([]));
}
