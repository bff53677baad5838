//! `nix-heft size` against real Nix stores, compared with Nix's own answers.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use common::*;
use nix_heft::report::size::SizeReport;
use serde_json::Value;

fn size_json(store: Option<&str>, roots: &[&str], extra: &[&str]) -> SizeReport {
    let mut args = vec!["--json", "size"];
    args.extend_from_slice(extra);
    args.extend_from_slice(roots);
    let o = heft_run(store, &args);
    assert_eq!(o.code, 0, "nix-heft failed: {}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("bad JSON ({e}): {}", o.stdout))
}

/// Added size by its definition, from Nix's own reference data: what leaves
/// the roots' closure when one path is removed from the graph.
fn added_by_definition(info: &BTreeMap<String, Value>, roots: &[&str]) -> HashMap<String, u64> {
    let refs = |p: &str| -> Vec<String> {
        info[p]["references"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect()
    };
    let reach = |without: Option<&str>| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<String> = roots
            .iter()
            .filter(|r| Some(**r) != without)
            .map(|r| r.to_string())
            .collect();
        while let Some(p) = stack.pop() {
            if Some(p.as_str()) == without || !seen.insert(p.clone()) {
                continue;
            }
            stack.extend(refs(&p));
        }
        seen
    };
    let nar = |p: &str| info[p]["narSize"].as_u64().unwrap();
    let all: u64 = reach(None).iter().map(|p| nar(p)).sum();
    info.keys()
        .map(|p| {
            let rest: u64 = reach(Some(p)).iter().map(|q| nar(q)).sum();
            (p.clone(), all - rest)
        })
        .collect()
}

fn check_against_nix(label: &str, store: Option<&str>, nix_store: Option<&str>, roots: &[&str]) {
    let report = size_json(store, roots, &["--references"]);
    let nix = nix_path_info(nix_store, roots);
    let ours: BTreeSet<&str> = report.paths.iter().map(|p| p.path.as_str()).collect();
    let theirs: BTreeSet<&str> = nix.keys().map(String::as_str).collect();
    assert_eq!(
        ours, theirs,
        "{label}: closure differs from nix path-info -r"
    );
    assert_eq!(report.path_count, nix.len(), "{label}");
    let total: u64 = nix.values().map(|v| v["narSize"].as_u64().unwrap()).sum();
    assert_eq!(report.closure_size, total, "{label}: total closure size");
    let added = added_by_definition(&nix, roots);
    for p in &report.paths {
        let n = &nix[&p.path];
        assert_eq!(
            p.nar_size,
            n["narSize"].as_u64().unwrap(),
            "{label}: narSize of {}",
            p.path
        );
        assert_eq!(
            p.closure_size,
            n["closureSize"].as_u64().unwrap(),
            "{label}: closure size of {} differs from nix path-info -S",
            p.path
        );
        let mut nix_refs: Vec<String> = n["references"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect();
        nix_refs.sort();
        assert_eq!(
            p.references.as_ref().unwrap(),
            &nix_refs,
            "{label}: references of {}",
            p.path
        );
        assert_eq!(
            p.added_size, added[&p.path],
            "{label}: added size of {}",
            p.path
        );
    }
}

#[test]
fn sizes_and_references_match_nix_on_every_source() {
    let f = fixture();
    let root_sets: Vec<Vec<&str>> = vec![
        vec![f.rocm.as_str()],
        vec![f.small("top")],
        vec![f.small("top"), f.small("second")],
        vec![f.rocm.as_str(), f.small("second"), f.small("dup1")],
    ];
    for (label, store) in f.stores() {
        for roots in &root_sets {
            check_against_nix(
                label,
                store.as_deref(),
                f.nix_store_for(label).as_deref(),
                roots,
            );
        }
    }
}

#[test]
fn references_match_nix_store_query() {
    let f = fixture();
    let report = size_json(None, &[&f.rocm], &["--references"]);
    assert!(report.path_count >= 15);
    for p in &report.paths {
        let ours: BTreeSet<String> = p.references.clone().unwrap().into_iter().collect();
        assert_eq!(
            ours,
            nix_store_references(&p.path),
            "references of {}",
            p.path
        );
    }
}

#[test]
fn added_size_of_shared_and_exclusive_paths() {
    let f = fixture();
    let nar = |attr: &str| {
        nix_path_info(None, &[f.small(attr)])[f.small(attr)]["narSize"]
            .as_u64()
            .unwrap()
    };
    let report = size_json(None, &[f.small("top"), f.small("second")], &[]);
    let by: HashMap<&str, &nix_heft::report::size::PathSizes> =
        report.paths.iter().map(|p| (p.path.as_str(), p)).collect();
    // `right` is kept by both roots: removing it saves only itself, since
    // `base` stays alive through `left`.
    assert_eq!(by[f.small("right")].added_size, nar("right"));
    // `top` alone keeps `left`; `base` is shared with `second` via `right`.
    assert_eq!(by[f.small("top")].added_size, nar("top") + nar("left"));
    assert_eq!(by[f.small("second")].added_size, nar("second"));
    // With `top` alone, it owns the whole closure.
    let alone = size_json(None, &[f.small("top")], &[]);
    assert_eq!(alone.paths[0].path, f.small("top"));
    assert_eq!(alone.paths[0].added_size, alone.closure_size);
}

#[test]
fn every_root_form_resolves() {
    let f = fixture();
    let top = f.small("top");
    let dir = scratch("root-forms");
    let link = dir.join("result");
    std::os::unix::fs::symlink(top, &link).unwrap();
    let link2 = dir.join("result-of-result");
    std::os::unix::fs::symlink("result", &link2).unwrap();
    let inside = format!("{top}/bin/top");
    let cases: Vec<(String, Option<String>)> = vec![
        (top.to_string(), None),
        (inside.clone(), None),
        (link.display().to_string(), None),
        (link2.display().to_string(), None),
        ("top-app".into(), None),
        ("top-app-1.0".into(), None),
        ("top-ap?".into(), None),
        // The same forms against other sources: a result link into the
        // chroot store, names looked up in a binary cache and a JSON file.
        (
            link.display().to_string(),
            Some(f.chroot.display().to_string()),
        ),
        (inside, Some(format!("file://{}", f.cache.display()))),
        (
            "top-app".into(),
            Some(format!("file://{}", f.cache.display())),
        ),
        ("top-app".into(), Some(f.json_object.display().to_string())),
        ("top-app".into(), Some(f.chroot.display().to_string())),
    ];
    for (arg, store) in cases {
        let r = size_json(store.as_deref(), &[&arg], &[]);
        assert_eq!(r.roots, vec![top.to_string()], "{arg} with {store:?}");
    }
    // A relative `result` in the working directory, as after nix-build.
    let out = heft()
        .current_dir(&dir)
        .args(["--json", "size", "result"])
        .output()
        .unwrap();
    let r: SizeReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r.roots, vec![top.to_string()]);
    // A glob takes every match; several roots are allowed. (The chroot
    // store holds only the fixture; /nix/store may hold older builds.)
    let chroot = f.chroot.display().to_string();
    let r = size_json(Some(&chroot), &["rocblas-tensile-*"], &[]);
    assert_eq!(r.roots.len(), 6, "{:?}", r.roots);
    let r = size_json(None, &["dup-1.0", "dup-2.0", &f.rocm], &[]);
    assert_eq!(r.roots.len(), 3);
}

#[test]
fn table_output_is_aligned_and_sorted() {
    let f = fixture();
    let o = heft_run(None, &["size", &f.rocm]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert!(
        lines[0].starts_with(&format!("closure of {}: ", f.rocm)),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("MiB in 17 paths"), "{}", lines[0]);
    let header = lines[2];
    assert!(header.contains("SELF") && header.contains("CLOSURE") && header.contains("ADDED"));
    let path_col = header.find("PATH").unwrap();
    for l in &lines[3..] {
        assert_eq!(
            &l[path_col..path_col + 11],
            "/nix/store/",
            "misaligned: {l}"
        );
    }
    // Default order: added size, largest first; the root owns everything.
    assert!(lines[3].ends_with("llama-cpp-rocm-0.0.0"));
    let o = heft_run(
        None,
        &["size", "--sort", "name", "--top", "3", "--bytes", &f.rocm],
    );
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 3 + 3 + 1, "{}", o.stdout);
    assert!(lines[3].ends_with("-clr-5.7.1"), "{}", o.stdout);
    assert!(
        lines[0]
            .split_whitespace()
            .any(|w| w.parse::<u64>().is_ok()),
        "--bytes: {}",
        lines[0]
    );
    assert!(lines[6].contains("3 of 17 paths shown"));
}

#[test]
fn sort_orders_and_top_in_json() {
    let f = fixture();
    for (key, field) in [("self", 0), ("closure", 1), ("added", 2)] {
        let r = size_json(None, &[&f.rocm], &["--sort", key]);
        let vals: Vec<u64> = r
            .paths
            .iter()
            .map(|p| [p.nar_size, p.closure_size, p.added_size][field])
            .collect();
        assert!(
            vals.windows(2).all(|w| w[0] >= w[1]),
            "--sort {key}: {vals:?}"
        );
    }
    let r = size_json(None, &[&f.rocm], &["--top", "4"]);
    assert_eq!(r.paths.len(), 4);
    assert_eq!(r.path_count, 17);
}

/// Large closures are read with one pass over the database tables instead of
/// per-path queries; both strategies must give the same report.
#[test]
fn table_scan_strategy_gives_the_same_report() {
    let f = fixture();
    let chroot = f.chroot.display().to_string();
    for roots in [
        vec![f.rocm.as_str()],
        vec![f.small("top"), f.small("second"), f.rocm.as_str()],
    ] {
        let mut args = vec!["--store", &chroot, "--json", "size", "--references"];
        args.extend_from_slice(&roots);
        let per_path = heft().args(&args).output().unwrap();
        let scanned = heft()
            .env("NIX_HEFT_TABLE_SCAN_AT", "0")
            .args(&args)
            .output()
            .unwrap();
        assert!(per_path.status.success() && scanned.status.success());
        let a: SizeReport = serde_json::from_slice(&per_path.stdout).unwrap();
        let b: SizeReport = serde_json::from_slice(&scanned.stdout).unwrap();
        assert_eq!(a, b);
        assert_eq!(
            b.roots,
            roots.iter().map(|r| r.to_string()).collect::<Vec<_>>()
        );
    }
}
