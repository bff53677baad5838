//! `nix-heft impact` (issue 32) over a nixpkgs-shaped repository: a base
//! commit built and served from a signed binary cache over loopback HTTP,
//! a head commit built locally but for two attributes, and a
//! nixpkgs-review directory of the head (common::impact_fixture).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use crate::common::impact_fixture::{
    ADDED, GROWN, GROWN_BY_LARGE, ImpactFixture, KEPT, LARGE, LARGE_HOLDS, LARGE_REFERRER,
    NOT_BUILT, REMOVED, REVIEW_FAILED, REVIEW_SKIPPED, SAME_SIZE, SHRUNK, SPLIT, SPLIT_DROPPED,
    impact_fixture, valid_locally,
};
use crate::common::{key_pair, nix, run};
use nix_heft_format::nixpkgs_review::{Layout, ReviewDir};

fn set(items: &[&[&str]]) -> BTreeSet<String> {
    items
        .iter()
        .flat_map(|s| s.iter().map(|a| a.to_string()))
        .collect()
}

/// The one output path of a single-output attribute.
fn only_out(outputs: &BTreeMap<String, String>) -> &str {
    assert_eq!(outputs.len(), 1, "{outputs:?}");
    &outputs["out"]
}

/// The fixture is built as the impact tests assume: every designed
/// expectation of common::impact_fixture checked against real Nix (the
/// two evaluations, the local store, the HTTP cache) and the review
/// directory read by nix-heft's own reader.
#[test]
fn fixture_is_what_the_impact_tests_need() {
    let f = impact_fixture();
    eprintln!("impact fixture made in {:.1} s", f.build_time.as_secs_f64());

    // The repository: head is base's child, the work tree is head and
    // clean, and the exported base tree is the base commit's file.
    assert_eq!(
        run(Command::new("git").arg("-C").arg(&f.repo).args([
            "rev-list",
            "--parents",
            "-n1",
            &f.head
        ]))
        .trim(),
        format!("{} {}", f.head, f.base)
    );
    assert_eq!(
        run(Command::new("git")
            .arg("-C")
            .arg(&f.repo)
            .args(["status", "--porcelain"])),
        ""
    );
    assert_eq!(
        run(Command::new("git")
            .arg("-C")
            .arg(&f.repo)
            .args(["show", &format!("{}:default.nix", f.base)])),
        std::fs::read_to_string(f.base_tree.join("default.nix")).unwrap()
    );

    // The evaluations differ exactly as designed.
    assert_eq!(f.base_outputs.len(), 30);
    assert_eq!(f.head_outputs.len(), 30);
    let changed = set(&[GROWN, SHRUNK, SAME_SIZE, ADDED, REMOVED, NOT_BUILT]);
    assert_eq!(f.changed(), changed);
    assert_eq!(
        f.attrs(),
        set(&[
            &changed.iter().map(String::as_str).collect::<Vec<_>>(),
            KEPT
        ])
    );
    for a in KEPT {
        assert_eq!(f.base_outputs[*a], f.head_outputs[*a], "{a}");
    }
    for a in ADDED {
        assert!(!f.base_outputs.contains_key(*a) && f.head_outputs.contains_key(*a));
    }
    for a in REMOVED {
        assert!(f.base_outputs.contains_key(*a) && !f.head_outputs.contains_key(*a));
    }
    for a in ["tools.a", "tools.b", "tools.c"] {
        assert!(
            f.head_outputs.contains_key(a),
            "{a} (recurseForDerivations)"
        );
    }
    let outs = |m: &BTreeMap<String, String>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(outs(&f.base_outputs[SPLIT]), ["out"]);
    assert_eq!(outs(&f.head_outputs[SPLIT]), ["dev", "out"]);
    assert_eq!(outs(&f.head_outputs["libmulti"]), ["dev", "doc", "out"]);
    assert!(only_out(&f.base_outputs["libver"]).ends_with("-libver-1.0"));
    assert!(only_out(&f.head_outputs["libver"]).ends_with("-libver-1.1"));

    // The base: its outputs the head does not share are gone from the
    // local store; its whole closure is in the HTTP cache, signed by the
    // key the tests trust (and by no other).
    let base_changed: BTreeSet<String> = changed.iter().flat_map(|a| f.base_paths(a)).collect();
    assert_eq!(f.deleted, base_changed);
    for p in &f.deleted {
        assert!(!valid_locally(p), "{p} is in the local store");
    }
    let base_roots: Vec<String> = f
        .base_outputs
        .values()
        .flat_map(|o| o.values().cloned())
        .collect();
    let verify = |key: &str| {
        nix()
            .args([
                "store",
                "verify",
                "--no-contents",
                "-r",
                "--store",
                &f.cache_url,
            ])
            .args(["--option", "trusted-public-keys", key])
            .args(&base_roots)
            .output()
            .unwrap()
    };
    let ok = verify(&f.public_key);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let other = key_pair("nix-heft-impact-other");
    let bad = verify(&other.public);
    let bad_err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && bad_err.contains("untrusted"),
        "{bad_err}"
    );
    for (attr, outputs) in &f.base_outputs {
        let closure = f.base_closure(attr);
        for p in outputs.values() {
            assert!(closure.contains_key(p), "{attr}: {p} not in the cache");
        }
        // `nix path-info -S` on the cache agrees with the helper's sum.
        if outputs.len() == 1 {
            let p = only_out(outputs);
            let info: serde_json::Value = serde_json::from_str(&run(nix()
                .args(["path-info", "-S", "--json", "--store", &f.cache_url])
                .arg(p)))
            .unwrap();
            assert_eq!(
                info[0]["closureSize"].as_u64(),
                Some(f.base_closure_size(attr)),
                "{attr}"
            );
        }
    }

    // The head: valid locally but for the two unbuilt attributes, which
    // are in no store.
    assert_eq!(f.unbuilt, set(&[NOT_BUILT]));
    for (attr, outputs) in &f.head_outputs {
        for p in outputs.values() {
            let unbuilt = f.unbuilt.contains(attr);
            assert_eq!(valid_locally(p), !unbuilt, "{attr}: {p}");
            if unbuilt {
                let o = nix()
                    .args(["path-info", "--store", &f.cache_url, p])
                    .output()
                    .unwrap();
                assert!(!o.status.success(), "{attr}'s head {p} is in the cache");
            }
        }
    }

    // Sizes: growth by the large path through libcore's README, shrinking
    // by codegen through libsplit's split, a size-neutral bump.
    let large = only_out(&f.head_outputs[LARGE]).to_string();
    let large_size = f.head_closure(LARGE)[&large];
    assert!(large_size >= 3 << 20, "{large_size}");
    let referrer = only_out(&f.head_outputs[LARGE_REFERRER]);
    assert!(crate::common::nix_store_references(referrer).contains(&large));
    assert!(
        std::fs::read_to_string(std::path::Path::new(referrer).join(LARGE_HOLDS))
            .unwrap()
            .contains(&large)
    );
    let delta = |a: &str| f.head_closure_size(a) as i64 - f.base_closure_size(a) as i64;
    for a in GROWN_BY_LARGE {
        assert!(!f.base_closure(a).contains_key(&large), "{a}");
        assert!(f.head_closure(a).contains_key(&large), "{a}");
        assert!(delta(a) >= large_size as i64, "{a}: {}", delta(a));
    }
    assert_eq!(set(&[GROWN]), set(&[GROWN_BY_LARGE, &[SPLIT]]));
    let split = delta(SPLIT);
    assert!(split > 0 && split < 1024, "{SPLIT}: {split}");
    let dropped = only_out(&f.base_outputs[SPLIT_DROPPED]).to_string();
    for a in SHRUNK {
        assert!(delta(a) < 0, "{a}: {}", delta(a));
        assert!(f.base_closure(a).contains_key(&dropped), "{a}");
        assert!(!f.head_closure(a).contains_key(&dropped), "{a}");
    }
    for a in SAME_SIZE {
        assert_ne!(f.base_outputs[*a], f.head_outputs[*a], "{a}");
        assert_eq!(delta(a), 0, "{a}");
    }
    for a in ADDED {
        assert!(f.head_closure_size(a) > 0, "{a}");
    }
    for a in REMOVED {
        assert!(f.base_closure_size(a) > 0, "{a}");
    }
    for (a, s) in [
        ("libcore", "grown"),
        ("viewer", "shrunk"),
        ("tools.a", "unchanged"),
    ] {
        assert_eq!(ImpactFixture::expected_status(a), Some(s));
    }
    assert_eq!(ImpactFixture::expected_status("app09"), Some("not-built"));
    assert_eq!(ImpactFixture::expected_status("zlib"), None);

    // The nixpkgs-review directory, read by nix-heft's reader.
    let r = ReviewDir::open(&f.review).unwrap();
    assert_eq!(r.layout, Layout::PerSystem);
    assert_eq!(r.commit.as_deref(), Some(f.head.as_str()));
    assert_eq!(r.systems.len(), 1);
    let sys = &r.systems[0];
    assert_eq!(sys.system, f.system);
    assert_eq!(sys.problems, []);
    let names = |a: &[nix_heft_format::nixpkgs_review::Attribute]| {
        a.iter().map(|a| a.name.clone()).collect::<BTreeSet<_>>()
    };
    let mut want_built = changed.clone();
    for a in REMOVED.iter().chain([&REVIEW_FAILED, &REVIEW_SKIPPED]) {
        want_built.remove(*a);
    }
    assert_eq!(names(&sys.built), want_built);
    assert_eq!(names(&sys.failed), set(&[&[REVIEW_FAILED]]));
    assert_eq!(names(&sys.non_existent), set(&[REMOVED]));
    assert_eq!(sys.status_of(REVIEW_SKIPPED), None);
    for a in &sys.built {
        let got: BTreeMap<String, String> = a
            .outputs
            .iter()
            .map(|o| {
                (
                    o.output.clone().unwrap_or_else(|| "out".into()),
                    o.path.as_str().to_string(),
                )
            })
            .collect();
        assert_eq!(got, f.head_outputs[&a.name], "{}", a.name);
        for o in got.keys() {
            assert!(
                f.review
                    .join("results")
                    .join(f.review_link(&a.name, o))
                    .is_symlink()
            );
        }
    }
}
