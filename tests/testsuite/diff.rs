//! `nix-heft diff` on two versions of a package set built with real Nix
//! (tests/fixtures/diff.nix), checked against `nix path-info -rS`,
//! `nix store diff-closures` and `nix-store -q --references`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::common::*;
use serde_json::Value;

fn diff_json(extra: &[&str]) -> Value {
    let (before, after) = diff_fixture();
    let mut args = vec!["--json", "diff"];
    args.extend_from_slice(extra);
    args.extend([before.as_str(), after.as_str()]);
    let o = heft_run(None, &args);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    // Which store each path came from differs between stores that agree.
    serde_json::from_str(&without_origins(&o.stdout)).unwrap()
}

fn paths_of(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect()
}

fn by_name<'a>(v: &'a Value, name: &str) -> &'a Value {
    v.as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"].as_str().unwrap().ends_with(&format!("-{name}")))
        .unwrap_or_else(|| panic!("no {name} in {v}"))
}

#[test]
fn added_removed_and_sizes_equal_nix_path_info() {
    let (before, after) = diff_fixture();
    let j = diff_json(&[]);
    let b = closure_set(before);
    let a = closure_set(after);
    let added: BTreeSet<String> = a.difference(&b).cloned().collect();
    let removed: BTreeSet<String> = b.difference(&a).cloned().collect();
    assert_eq!(paths_of(&j["added"]), added);
    assert_eq!(paths_of(&j["removed"]), removed);
    // The fixture's changes are all there: a bump, four new, one dropped,
    // the rebuilt root.
    assert_eq!(added.len(), 6, "{added:?}");
    assert_eq!(removed.len(), 3, "{removed:?}");
    let info_b = nix_path_info(None, &[before]);
    let info_a = nix_path_info(None, &[after]);
    assert_eq!(
        j["closure_size_before"],
        info_b[before.as_str()]["closureSize"]
    );
    assert_eq!(
        j["closure_size_after"],
        info_a[after.as_str()]["closureSize"]
    );
    assert_eq!(j["paths_before"].as_u64().unwrap() as usize, b.len());
    assert_eq!(j["paths_after"].as_u64().unwrap() as usize, a.len());
    for c in j["added"].as_array().unwrap() {
        let p = c["path"].as_str().unwrap();
        assert_eq!(c["nar_size"], info_a[p]["narSize"], "{p}");
    }
    for c in j["removed"].as_array().unwrap() {
        let p = c["path"].as_str().unwrap();
        assert_eq!(c["nar_size"], info_b[p]["narSize"], "{p}");
    }
}

/// Strips the colour codes `nix store diff-closures` prints.
fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\u{1b}' {
            for d in it.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn every_diff_closures_line_appears_with_its_transition() {
    let (before, after) = diff_fixture();
    let nix_out = run(nix().args(["store", "diff-closures", before, after]));
    let j = diff_json(&[]);
    let packages = j["packages"].as_array().unwrap();
    let mut lines = 0;
    for line in strip_ansi(&nix_out).lines() {
        let (name, rest) = line.trim().split_once(": ").unwrap();
        let p = packages
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("nix-heft lacks {name} ({line}): {j}"));
        let mut items = rest.split(", ");
        let first = items.clone().next().unwrap();
        if first.contains(" → ") {
            assert_eq!(p["transition"], first, "{line}");
            items.next();
        }
        // The size item, as Nix formats it: KiB with one decimal.
        if let Some(size) = items.next() {
            let d = p["size_delta"].as_i64().unwrap() as f64 / 1024.0;
            assert_eq!(format!("{d:+.1} KiB"), size, "{line}");
        }
        lines += 1;
    }
    assert_eq!(lines, 6, "{nix_out}");
    // The rebuilt root is there too, which Nix leaves out under 8 KiB.
    let app = packages.iter().find(|p| p["name"] == "app").unwrap();
    assert_eq!(app["transition"], "(rebuilt)");
    let bump = packages.iter().find(|p| p["name"] == "libbump").unwrap();
    assert_eq!(bump["versions_before"], serde_json::json!(["1.0"]));
    assert_eq!(bump["versions_after"], serde_json::json!(["1.1"]));
    // Largest change first.
    let deltas: Vec<u64> = packages
        .iter()
        .map(|p| p["size_delta"].as_i64().unwrap().unsigned_abs())
        .collect();
    assert!(deltas.windows(2).all(|w| w[0] >= w[1]), "{deltas:?}");
}

#[test]
fn each_added_path_names_a_real_referrer_and_its_files() {
    let (before, after) = diff_fixture();
    let j = diff_json(&[]);
    for (side, root) in [("added", after), ("removed", before)] {
        for c in j[side].as_array().unwrap() {
            let p = c["path"].as_str().unwrap();
            let why = &c["why"];
            let Some(r) = why["referrer"].as_str() else {
                assert_eq!(p, root, "only the root has no referrer");
                assert_eq!(why["edge"], "root");
                continue;
            };
            assert!(
                nix_store_references(r).contains(p),
                "{r} does not reference {p}"
            );
            if why["edge"] == "renamed" {
                continue;
            }
            let ev = why["evidence"].as_array().unwrap();
            assert!(!ev.is_empty(), "{p}: {why}");
            for e in ev {
                let f = Path::new(r).join(e["file"].as_str().unwrap());
                assert!(
                    f.symlink_metadata().is_ok(),
                    "{} is not in {r}",
                    f.display()
                );
                let bytes = std::fs::read(&f).unwrap();
                let hash = &Path::new(p).file_name().unwrap().to_str().unwrap()[..32];
                assert!(
                    bytes.windows(32).any(|w| w == hash.as_bytes()),
                    "{} does not hold {hash}",
                    f.display()
                );
            }
        }
    }
    let added = &j["added"];
    let doc = &by_name(added, "docdep-3.0")["why"];
    assert_eq!(doc["edge"], "new");
    assert_eq!(doc["evidence"][0]["file"], "share/doc/app/README");
    assert_eq!(doc["evidence"][0]["kind"], "text");
    assert_eq!(doc["evidence"][0]["verdict"], "docs");
    let new = &by_name(added, "libnew-2.0")["why"];
    assert_eq!(new["edge"], "new");
    assert_eq!(new["evidence"][0]["file"], "bin/app");
    assert_eq!(new["evidence"][0]["kind"], "elf-runpath");
    assert_eq!(new["evidence"][0]["verdict"], "runtime");
    // The bump is followed through, not reported as an unrelated add.
    let bump = &by_name(added, "libbump-1.1")["why"];
    assert_eq!(bump["edge"], "renamed");
    assert_eq!(bump["evidence"], serde_json::json!([]));
    let old_bump = by_name(&j["removed"], "libbump-1.0");
    assert_eq!(bump["renamed"], serde_json::json!([old_bump["path"]]));
    let dead = &by_name(added, "deadlib-4.0")["why"];
    assert_eq!(dead["evidence"][0]["kind"], "elf-runpath");
    assert_eq!(dead["evidence"][0]["verdict"], "dead");
    let dev = &by_name(added, "devtool-0.9")["why"];
    assert_eq!(dev["evidence"][0]["file"], "lib/pkgconfig/app.pc");
    assert_eq!(dev["evidence"][0]["verdict"], "build");
    let old = &by_name(&j["removed"], "libold-1.0")["why"];
    assert_eq!(old["edge"], "gone");
    assert_eq!(old["evidence"][0]["file"], "share/app/deps");
    let text = heft_run(None, &["diff", before, after]).stdout;
    // Both app-1.0 are shown: each with its hash.
    assert!(
        text.contains(&format!(
            "docdep-3.0 (+293.4 KiB) is new: app-1.0 ({}) references it from share/doc/app/README (text, docs)",
            &after[11..19]
        )),
        "{text}"
    );
    // The bump is a change, not an add and a remove: its size change is
    // the two paths' NAR sizes apart, as Nix registered them.
    let bump_path = by_name(added, "libbump-1.1")["path"].as_str().unwrap();
    let sizes = nix_path_info(None, &[bump_path, old_bump["path"].as_str().unwrap()]);
    let grew = sizes[bump_path]["narSize"].as_i64().unwrap()
        - sizes[old_bump["path"].as_str().unwrap()]["narSize"]
            .as_i64()
            .unwrap();
    assert!(
        text.contains(&format!(
            "libbump-1.1 ({}) replaces libbump-1.0: app-1.0 ({}) references it as before",
            nix_heft_types::units::iec_delta(grew as i128),
            &after[11..19]
        )),
        "{text}"
    );
    // The rebuilt root is labelled old and new, not shown as two hashes.
    assert!(
        text.starts_with(&format!(
            "old app-1.0 ({}) → new app-1.0 ({})\n",
            &before[11..19],
            &after[11..19]
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "app-1.0 ({}) ({}) is a rebuild of app-1.0 ({}): the root",
            &after[11..19],
            nix_heft_types::units::iec_delta(sizes_of(after) as i128 - sizes_of(before) as i128),
            &before[11..19],
        )),
        "{text}"
    );
}

/// The NAR size of one path, as `nix path-info` gives it.
fn sizes_of(p: &str) -> u64 {
    nix_path_info(None, &[p])[p]["narSize"].as_u64().unwrap()
}

/// The headline counts what changed (rebuilt or another version) apart
/// from what is new and what left: on tests/fixtures/diff.nix, 4 new
/// paths, libbump and the rebuilt root changed, libold gone; the removed
/// list of `--json` still holds every path that left.
#[test]
fn the_headline_counts_changed_paths_apart() {
    let (before, after) = diff_fixture();
    let j = diff_json(&[]);
    let replaced = |side: &str| {
        j[side]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["why"].get("renamed").is_some())
            .count()
    };
    let total = |side: &str| j[side].as_array().unwrap().len();
    assert_eq!((total("added"), replaced("added")), (6, 2));
    assert_eq!((total("removed"), replaced("removed")), (3, 2));
    let text = heft_run(None, &["diff", before, after]).stdout;
    assert!(
        text.lines()
            .nth(1)
            .unwrap()
            .ends_with(": 4 added, 2 changed, 1 removed"),
        "{text}"
    );
    assert!(text.contains("\n4 path(s) added:\n"), "{text}");
    assert!(
        text.contains("\n2 path(s) changed (rebuilt or another version):\n"),
        "{text}"
    );
    assert!(text.contains("\n1 path(s) removed:\n"), "{text}");
    // The replaced paths are said once, with what replaced them.
    assert!(!text.contains("replaced by libbump-1.1"), "{text}");
    let md = heft_run(None, &["diff", "--format", "markdown", before, after]).stdout;
    assert!(
        md.contains(": 4 paths added, 2 changed, 1 removed\n"),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "old `app-1.0 ({})` → new `app-1.0 ({})`",
            &before[11..19],
            &after[11..19]
        )),
        "{md}"
    );
}

/// Only the referrers of appeared or vanished edges are read: under
/// strace, nothing inside the shared path, the bumped library or the new
/// ones is opened, while the two app paths are.
#[test]
fn only_referrers_of_changed_edges_are_read() {
    let (before, after) = diff_fixture();
    let log = scratch("diff-strace").join("log");
    let bin = assert_cmd::cargo::cargo_bin("nix-heft");
    run(Command::new("strace")
        .args(["-f", "-e", "trace=openat,open", "-o"])
        .arg(&log)
        .arg(&bin)
        .args(["--json", "diff", before, after]));
    let trace = std::fs::read_to_string(&log).unwrap();
    let opened = |p: &str| trace.lines().any(|l| l.contains(&format!("\"{p}/")));
    assert!(opened(after), "AFTER's app was not read");
    assert!(opened(before), "BEFORE's app was not read");
    let a = closure_set(after);
    let b = closure_set(before);
    for p in a.union(&b) {
        if p != after && p != before {
            // RUNPATH targets have their tree listed (a directory open),
            // never a file read.
            let files: Vec<&str> = trace
                .lines()
                .filter(|l| l.contains(&format!("\"{p}/")) && !l.contains("O_DIRECTORY"))
                .collect();
            assert!(files.is_empty(), "{p} was read: {files:?}");
        }
    }
}

#[test]
fn sides_from_different_stores_agree() {
    let (before, _) = diff_fixture();
    let chroot = scratch("diff-before-store").join("store");
    run(nix()
        .args(["copy", "--no-check-sigs", "--to"])
        .arg(&chroot)
        .arg(before));
    let local = diff_json(&[]);
    let split = diff_json(&["--before-store", chroot.to_str().unwrap()]);
    assert_eq!(local, split);
    // AFTER from a binary cache, as a local build against a cache's copy:
    // the evidence then comes from the NAR stream.
    let (_, after) = diff_fixture();
    let cache = scratch("diff-after-cache").join("cache");
    let url = format!("file://{}", cache.display());
    run(nix().args(["copy", "--to", &signed_cache_url(&cache, ""), after]));
    let from_cache = diff_json(&[
        "--before-store",
        chroot.to_str().unwrap(),
        "--after-store",
        &url,
    ]);
    assert_eq!(local, from_cache);
}

#[test]
fn bad_roots_are_usage_errors() {
    let (before, _) = diff_fixture();
    let o = heft_run(None, &["diff", before, "no-such-package-xyz"]);
    assert_usage_error(&o, "no-such-package-xyz");
}

/// Profile generation links, as NixOS keeps them, are roots like any other.
#[test]
fn profile_generation_links_are_roots() {
    let (before, after) = diff_fixture();
    let dir = scratch("diff-profile");
    let profile = dir.join("profile");
    for p in [before, after] {
        run(Command::new("nix-env")
            .arg("-p")
            .arg(&profile)
            .args(["--set", p]));
    }
    let gen1 = dir.join("profile-1-link");
    let gen2 = dir.join("profile-2-link");
    assert_eq!(std::fs::read_link(&gen1).unwrap().to_str().unwrap(), before);
    let o = heft_run(
        None,
        &[
            "--json",
            "diff",
            gen1.to_str().unwrap(),
            gen2.to_str().unwrap(),
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let j: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(j, diff_json(&[]));
}

/// A path whose only referrer left too is said to have left with it (the
/// chain that held it), not that a referrer "no longer references it";
/// a path whose referrer stayed (rebuilt) and dropped the edge keeps that
/// wording (tests/fixtures/diff-chain.nix).
#[test]
fn a_path_that_left_with_its_referrer_names_the_chain() {
    let p = nix_build(
        &repo().join("tests/fixtures/diff-chain.nix"),
        &["before", "after"],
    );
    let (before, after) = (p[0].as_str(), p[1].as_str());
    let o = heft_run(None, &["--json", "diff", before, after]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    let j: Value = serde_json::from_str(&o.stdout).unwrap();
    let removed = &j["removed"];
    let clr = by_name(removed, "clr-1.0");
    let comgr = &by_name(removed, "comgr-1.0")["why"];
    // clr is comgr's only referrer, as Nix registers it.
    let comgr_path = by_name(removed, "comgr-1.0")["path"].as_str().unwrap();
    let referrers = run(Command::new("nix-store").args(["-q", "--referrers", comgr_path]));
    assert_eq!(referrers.trim(), clr["path"].as_str().unwrap());
    assert_eq!(comgr["left_with"], clr["path"]);
    assert_eq!(
        comgr["left_chain"],
        serde_json::json!([before, clr["path"], comgr_path])
    );
    // top stayed (rebuilt) and dropped clr; keeper stayed and dropped
    // olddep: neither left with anything.
    for name in ["clr-1.0", "olddep-1.0"] {
        let why = &by_name(removed, name)["why"];
        assert_eq!(why["edge"], "gone", "{name}: {why}");
        assert!(why.get("left_with").is_none(), "{name}: {why}");
        assert!(why.get("left_chain").is_none(), "{name}: {why}");
    }
    let text = heft_run(None, &["diff", before, after]).stdout;
    // top-1.0 and keeper-1.0 are on both sides: each shown with its hash.
    let keeper = by_name(removed, "keeper-1.0")["path"].as_str().unwrap();
    assert!(
        text.contains(&format!(
            "comgr-1.0 (-39.5 KiB) left with clr-1.0 (top-1.0 ({}) → clr-1.0 → comgr-1.0)",
            &before[11..19]
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "olddep-1.0 (-20.0 KiB) left: keeper-1.0 ({}) no longer references it",
            &keeper[11..19]
        )),
        "{text}"
    );
    assert!(text.contains("clr-1.0 (-"), "{text}");
    assert!(!text.contains("clr-1.0 no longer references"), "{text}");
}
