//! `size` on every kind of committed store, compared with Nix's recorded
//! `nix path-info -rsS --json`.

use crate::common::fast_fixtures::*;
use serde_json::Value;

/// `size --json` of `root` agrees with Nix: the same paths, each with
/// Nix's `narSize`, and the root's `closureSize`.
fn assert_size_is_nix(
    what: &str,
    v: &Value,
    root: &str,
    info: &std::collections::BTreeMap<String, Value>,
) {
    assert_eq!(
        v["closure_size"], info[root]["closureSize"],
        "{what}: closure of {root}"
    );
    let paths = v["paths"].as_array().unwrap();
    let ours: std::collections::BTreeSet<String> = paths
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ours, closure(root), "{what}: the closure's paths of {root}");
    for p in paths {
        let path = p["path"].as_str().unwrap();
        assert_eq!(p["nar_size"], info[path]["narSize"], "{what}: {path}");
        assert_eq!(
            p["closure_size"], info[path]["closureSize"],
            "{what}: {path}"
        );
    }
}

#[test]
fn chroot_store_sizes_equal_nix_path_info() {
    for attr in ATTRS {
        let v = json_on_chroot(&["size", root(attr)]);
        assert_size_is_nix("chroot", &v, root(attr), nix_info());
    }
    // Several roots at once: the union's size is the sum of its paths'.
    let v = json_on_chroot(&["size", root("hello"), root("hello-2")]);
    let union: std::collections::BTreeSet<String> = closure(root("hello"))
        .union(&closure(root("hello-2")))
        .cloned()
        .collect();
    let sum: u64 = union.iter().map(|p| nar_size(p)).sum();
    assert_eq!(v["closure_size"].as_u64(), Some(sum), "{v}");
    assert_eq!(v["path_count"].as_u64(), Some(union.len() as u64), "{v}");
}

#[test]
fn path_info_json_input_equals_nix() {
    let file = fixtures().join("nix/path-info.json").display().to_string();
    for attr in ["hello", "hello-2", "libgreet-dev"] {
        let o = outcome(heft().args(["--store", &file, "--json", "size", root(attr)]));
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert_size_is_nix("path-info JSON", &o.json(), root(attr), nix_info());
    }
    // A name is looked up in that file as in a store.
    let o = outcome(heft().args(["--store", &file, "--json", "size", "greet-manual"]));
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.json()["roots"][0], root("manual"));
}

#[test]
fn signed_cache_sizes_equal_nix_path_info_of_the_cache() {
    for attr in ["hello", "hello-2"] {
        let o = on_cache(&cache_url(), &["--json", "size", root(attr)]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert_size_is_nix("cache", &o.json(), root(attr), nix_cache_info());
    }
    // The two stores hold the same paths with the same sizes.
    for (p, i) in nix_cache_info() {
        assert_eq!(i["narSize"], nix_info()[p]["narSize"], "{p}");
    }
}

/// `--verify` serialises every path read from the checked-out chroot
/// store and compares it with the NAR hash Nix recorded: git kept the
/// files, symlinks and executable bits that make each path (and no
/// directory was lost). Reading never leaves a side file by the
/// database.
#[test]
fn the_committed_store_verifies_against_its_database() {
    let mut args = vec!["--verify", "--json", "refs"];
    args.extend(ATTRS.iter().map(|a| root(a)));
    let o = on_chroot(&args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v = o.json();
    assert_eq!(v["problems"], Value::Array(vec![]), "{v}");
    assert!(o.stderr.is_empty(), "{}", o.stderr);
    let db = fixtures().join("store/nix/var/nix/db");
    let names: Vec<String> = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["db.sqlite"], "{}", db.display());
}

/// The bundled example's committed cache (examples/rocm-mini), with its
/// own key and `nix path-info` record.
#[test]
fn the_example_cache_equals_its_path_info() {
    let ex = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rocm-mini");
    let key = std::fs::read_to_string(ex.join("cache.pub")).unwrap();
    let top = std::fs::read_to_string(ex.join("ROOT")).unwrap();
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(ex.join("path-info.json")).unwrap()).unwrap();
    let info: std::collections::BTreeMap<String, Value> = info
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["path"].as_str().unwrap().to_string(), i.clone()))
        .collect();
    let o = outcome(heft().args([
        "--trusted-public-keys",
        key.trim(),
        "--store",
        &format!("file://{}", ex.join("cache").display()),
        "--json",
        "size",
        top.trim(),
    ]));
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v = o.json();
    assert_eq!(v["closure_size"], info[top.trim()]["closureSize"], "{v}");
    assert_eq!(v["path_count"].as_u64(), Some(info.len() as u64), "{v}");
}

/// A `result` link whose store path the store does not hold (a build's
/// link after a garbage collection): one error line that names the link
/// and the path and says how to get it (issue 40); the same link pointing
/// at a path the store holds is read.
#[test]
fn a_dangling_result_link_is_named_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let gone = format!("/nix/store/{}-gone-1.0", "a".repeat(32));
    std::os::unix::fs::symlink(&gone, dir.path().join("result")).unwrap();
    std::os::unix::fs::symlink(root("hello"), dir.path().join("result-hello")).unwrap();
    let o =
        outcome(
            heft()
                .current_dir(dir.path())
                .args(["--store", &chroot(), "size", "./result"]),
        );
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", o.stderr);
    let line = lines[0];
    assert!(
        line.starts_with("nix-heft: error: './result' points to "),
        "{line}"
    );
    assert!(line.contains(&format!("{gone}, which ")), "{line}");
    assert!(line.contains("does not hold"), "{line}");
    assert!(line.contains("(nix build)"), "{line}");
    assert!(line.contains("--store https://cache.nixos.org"), "{line}");
    // A store path given as itself stays the plain "not valid" error.
    let o = outcome(heft().args(["--store", &chroot(), "size", &gone]));
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(!o.stderr.contains("points to"), "{}", o.stderr);
    let o = outcome(heft().current_dir(dir.path()).args([
        "--store",
        &chroot(),
        "--json",
        "size",
        "./result-hello",
    ]));
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.json()["closure_size"],
        nix_info()[root("hello")]["closureSize"]
    );
}
