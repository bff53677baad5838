//! The split of this test binary into tiers (tests/testsuite/main.rs):
//! every module file is declared in exactly one tier, and no module of the
//! fast tier, which `cargo test` runs without Nix or root, uses what needs
//! them. Both hold on a machine that has Nix, where a fast test that ran
//! Nix would pass and hide that it cannot run elsewhere.

use std::collections::BTreeSet;

use crate::common::repo;

fn testsuite() -> std::path::PathBuf {
    repo().join("tests/testsuite")
}

/// The fast tier's modules (`mod NAME;` lines) and the Nix tier's (the
/// names in `nix_tier! { … }`), from main.rs.
fn tiers() -> (Vec<String>, Vec<String>) {
    let main = std::fs::read_to_string(testsuite().join("main.rs")).unwrap();
    let (fast_part, nix_part) = main
        .split_once("nix_tier! {")
        .expect("main.rs invokes nix_tier! { … }");
    let fast = fast_part
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .filter(|m| *m != "common")
        .map(str::to_string)
        .collect();
    let nix = nix_part
        .split_once('}')
        .expect("nix_tier!'s closing brace")
        .0
        .split_whitespace()
        .map(str::to_string)
        .collect();
    (fast, nix)
}

#[test]
fn every_module_is_in_exactly_one_tier() {
    let (fast, nix) = tiers();
    assert!(fast.len() > 5 && nix.len() > 20, "{fast:?} {nix:?}");
    let files: BTreeSet<String> = std::fs::read_dir(testsuite())
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let module = name.strip_suffix(".rs")?;
            (module != "main").then(|| module.to_string())
        })
        .collect();
    let mut declared = BTreeSet::new();
    for m in fast.iter().chain(&nix) {
        assert!(declared.insert(m.clone()), "{m} is declared twice");
    }
    assert_eq!(declared, files, "main.rs's tiers and the module files");
}

/// What a fast module may not call or run: Nix's programs, and the common
/// helpers that build or sign with them (`fixture()` and what uses it,
/// `scratch` included; the test key, made by `nix-store`), or that run the
/// tools only scripts/test.sh installs (cmark-gfm, tmux, strace, chromium).
const NEEDS_NIX: &[&str] = &[
    "Command::new(\"nix",
    "nix()",
    "nix_build(",
    "fixture()",
    "scratch(",
    "example_copy(",
    "unbuilt_over_example(",
    "nix_path_info(",
    "nix_closure_paths(",
    "nix_store_references(",
    "closure_set(",
    "drv_outputs(",
    "build_graph_size(",
    "test_key(",
    "key_pair(",
    "sign_narinfo(",
    "signed_cache_url(",
    "render_gfm(",
    "\"tmux\"",
    "\"strace\"",
    "\"chromium\"",
];

#[test]
fn no_fast_module_needs_nix() {
    let (fast, _) = tiers();
    let mut found = Vec::new();
    // This module names them all, in NEEDS_NIX.
    for m in fast.iter().filter(|m| *m != "tiers") {
        let text = std::fs::read_to_string(testsuite().join(format!("{m}.rs"))).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for needle in NEEDS_NIX {
                if line.contains(needle) {
                    found.push(format!("{m}.rs:{}: {needle}", n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the fast tier needs no Nix; move these to the Nix tier (nix_tier! in main.rs):\n{}",
        found.join("\n")
    );
    // The check sees what it looks for: the Nix tier's uses.
    let http = std::fs::read_to_string(testsuite().join("http.rs")).unwrap();
    assert!(NEEDS_NIX.iter().any(|n| http.contains(n)));
}
