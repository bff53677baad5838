//! `nix-heft size` against real Nix stores, compared with Nix's own answers.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::common::*;
use nix_heft_report::size::SizeReport;
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
    check_report_against_nix(label, &report, nix_store, roots);
}

/// Every path, size and reference of `report` (made with `--references`)
/// against `nix path-info -rsS --json` of `roots` in `nix_store`.
fn check_report_against_nix(
    label: &str,
    report: &SizeReport,
    nix_store: Option<&str>,
    roots: &[&str],
) {
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
    // Every path of the closure is checked, not a prefix of it.
    assert_eq!(report.path_count, nix_closure_paths(None, &[&f.rocm]).len());
    assert_eq!(report.paths.len(), report.path_count);
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
    let by: HashMap<&str, &nix_heft_report::size::PathSizes> =
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
    let tensile: BTreeSet<String> = run(nix().args(["path-info", "--all", "--store", &chroot]))
        .lines()
        .filter(|p| {
            let name = &p[p.find('-').unwrap() + 1..];
            name.starts_with("rocblas-tensile-") && !name.ends_with(".drv")
        })
        .map(str::to_string)
        .collect();
    assert!(
        tensile.len() > 1,
        "the glob has several matches: {tensile:?}"
    );
    assert_eq!(
        r.roots.iter().cloned().collect::<BTreeSet<_>>(),
        tensile,
        "the glob takes every match"
    );
    assert_eq!(
        r.roots.len(),
        tensile.len(),
        "each match once: {:?}",
        r.roots
    );
    let r = size_json(None, &["dup-1.0", "dup-2.0", &f.rocm], &[]);
    assert_eq!(r.roots.len(), 3);
}

#[test]
fn table_output_is_aligned_and_sorted() {
    let f = fixture();
    let o = heft_run(None, &["size", &f.rocm]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let lines: Vec<&str> = o.stdout.lines().collect();
    let count = nix_closure_paths(None, &[&f.rocm]).len();
    assert!(
        lines[0].starts_with(&format!("closure of {}: ", f.rocm)),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains(&format!("MiB in {count} paths")),
        "{}",
        lines[0]
    );
    assert_eq!(lines.len(), 3 + count, "one line per path: {}", o.stdout);
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
    assert!(
        lines[6].contains(&format!("3 of {count} paths shown")),
        "{}",
        lines[6]
    );
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
    // --top cuts the list, not the count.
    assert_eq!(r.path_count, nix_closure_paths(None, &[&f.rocm]).len());
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

/// Database ids are SQLite row ids and need not be small: the same store
/// with its ids renumbered to sparse values ending at i64::MAX must give
/// Nix's answers, by both ways of reading the database.
#[test]
fn database_ids_near_i64_max() {
    let f = fixture();
    let dir = scratch("big-ids");
    let root = dir.join("store");
    copy_tree(&f.chroot, &root);
    let db = root.join("nix/var/nix/db/db.sqlite");
    // New id = i64::MAX - 1000 * (max - id): every old id moves far above
    // every old one, so no update collides; every table that holds a
    // ValidPaths id moves with it.
    sqlite_edit(
        &db,
        "c.execute('pragma foreign_keys=off')\n\
         m = c.execute('select max(id) from ValidPaths').fetchone()[0]\n\
         new = lambda col: f'9223372036854775807 - 1000 * ({m} - {col})'\n\
         c.execute(f'update ValidPaths set id = {new(\"id\")}')\n\
         c.execute(f'update Refs set referrer = {new(\"referrer\")}, reference = {new(\"reference\")}')\n\
         tables = [r[0] for r in c.execute(\"select name from sqlite_master where type='table'\")]\n\
         if 'DerivationOutputs' in tables: c.execute(f'update DerivationOutputs set drv = {new(\"drv\")}')\n\
         assert c.execute('select max(id) from ValidPaths').fetchone()[0] == 9223372036854775807\n\
         assert c.execute('select count(*) from Refs where referrer not in (select id from ValidPaths) or reference not in (select id from ValidPaths)').fetchone()[0] == 0",
        &[],
    );
    let store = root.display().to_string();
    let original = f.chroot.display().to_string();
    for roots in [
        vec![f.rocm.as_str()],
        vec![f.small("top"), f.small("second"), f.rocm.as_str()],
    ] {
        // The edit kept the database consistent: Nix reads it as before.
        assert_eq!(
            nix_path_info(Some(&store), &roots),
            nix_path_info(Some(&original), &roots),
            "renumbered database as Nix reads it"
        );
        for scan_at in ["1", "1000000"] {
            let mut args = vec!["--json", "size", "--references"];
            args.extend_from_slice(&roots);
            let o = heft_run_env(&[("NIX_HEFT_TABLE_SCAN_AT", scan_at)], Some(&store), &args);
            assert_eq!(o.code, 0, "NIX_HEFT_TABLE_SCAN_AT={scan_at}: {}", o.stderr);
            let report: SizeReport = serde_json::from_str(&o.stdout).unwrap();
            assert_eq!(
                report.roots,
                roots.iter().map(|r| r.to_string()).collect::<Vec<_>>()
            );
            check_report_against_nix(
                &format!("ids near i64::MAX, NIX_HEFT_TABLE_SCAN_AT={scan_at}"),
                &report,
                Some(&original),
                &roots,
            );
        }
    }
}

/// Base name of a full store path.
fn base(p: &str) -> String {
    p.rsplit('/').next().unwrap().to_string()
}

/// `nix path-info -rsS --json` in each of the shapes Nix and Lix print,
/// built from the array Nix 2.8 printed for the fixture: sizes must be
/// Nix's for each, and an entry for an invalid path (`null`) is skipped with
/// a warning naming it.
#[test]
fn path_info_json_in_every_shape() {
    let f = fixture();
    let dir = scratch("json-shapes");
    let array: Value = serde_json::from_slice(&std::fs::read(&f.json_array).unwrap()).unwrap();
    let array = array.as_array().unwrap();
    assert!(!array.is_empty());
    // A well-formed path that no store holds, as `nix path-info --json`
    // reports a path it was asked about but does not have.
    let missing = format!("/nix/store/{}-not-built-1.0", "0".repeat(32));
    assert!(array.iter().all(|it| it["path"] != missing.as_str()));

    // Nix 2.19+: an object keyed by path, `null` for an invalid path.
    let mut keyed = serde_json::Map::new();
    for it in array {
        let mut it = it.clone();
        let p = it.as_object_mut().unwrap().remove("path").unwrap();
        keyed.insert(p.as_str().unwrap().to_string(), it);
    }
    keyed.insert(missing.clone(), Value::Null);

    // Nix 2.33+ `--json-format 2`: keys and references are base names, the
    // store directory is given once, `ca` is an object or null (these paths
    // are input-addressed), hashes are SRI (Nix 2.8 already prints narHash
    // so).
    let mut info = serde_json::Map::new();
    for it in array {
        let p = it["path"].as_str().unwrap();
        assert!(
            it["narHash"].as_str().unwrap().starts_with("sha256-"),
            "SRI hash: {it}"
        );
        let mut o = it.as_object().unwrap().clone();
        o.remove("path");
        let refs: Vec<Value> = it["references"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| Value::String(base(r.as_str().unwrap())))
            .collect();
        o.insert("references".into(), Value::Array(refs));
        if let Some(d) = it.get("deriver").and_then(Value::as_str) {
            o.insert("deriver".into(), Value::String(base(d)));
        }
        o.insert("ca".into(), it.get("ca").cloned().unwrap_or(Value::Null));
        info.insert(base(p), Value::Object(o));
    }
    info.insert(base(&missing), Value::Null);
    let v2 = serde_json::json!({"version": 2, "storeDir": "/nix/store", "info": info});
    assert!(
        !serde_json::to_string(&v2["info"])
            .unwrap()
            .contains("/nix/store/"),
        "no full paths in version 2 keys or references"
    );

    let root_sets: Vec<Vec<&str>> = vec![
        vec![f.rocm.as_str()],
        vec![f.small("top"), f.small("second")],
    ];
    for (label, value) in [
        ("keyed object with null", Value::Object(keyed)),
        ("version 2", v2),
    ] {
        let file = dir.join(format!("{}.json", label.replace(' ', "-")));
        std::fs::write(&file, serde_json::to_vec(&value).unwrap()).unwrap();
        let store = file.display().to_string();
        for roots in &root_sets {
            check_against_nix(label, Some(&store), None, roots);
        }
        let o = heft_run(Some(&store), &["size", f.small("top")]);
        assert_eq!(o.code, 0, "{label}: {}", o.stderr);
        assert!(
            o.stderr.contains(&format!(
                "warning: path-info JSON {store}: {missing} is not a valid path"
            )) && o.stderr.contains("skipped"),
            "{label}: {}",
            o.stderr
        );
        assert_eq!(o.stderr.lines().count(), 1, "{label}: {}", o.stderr);
        // The invalid path is not in the source: asking for it is the usual
        // error, not a crash or an empty closure.
        assert_error(
            &heft_run(Some(&store), &["size", &missing]),
            "is not valid in path-info JSON",
        );
    }
}
