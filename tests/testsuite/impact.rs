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

/// `nix-heft impact` over the fixture: the base revision from the HTTP
/// cache, the head revision from the local store (extra flags appended).
fn impact(extra: &[&str]) -> crate::common::Outcome {
    let f = impact_fixture();
    let repo = f.repo.to_string_lossy().into_owned();
    let mut args = vec![
        "impact",
        "--repo",
        &repo,
        "--before",
        &f.base,
        "--after",
        &f.head,
        "--before-store",
        &f.cache_url,
    ];
    args.extend_from_slice(extra);
    crate::common::heft_run(None, &args)
}

fn json_of(o: &crate::common::Outcome) -> serde_json::Value {
    assert!(
        o.code == 0 || o.code == 4,
        "impact failed ({}): {}{}",
        o.code,
        o.stdout,
        o.stderr
    );
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout))
}

fn rows(v: &serde_json::Value) -> BTreeMap<String, serde_json::Value> {
    v["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["attr"].as_str().unwrap().to_string(), r.clone()))
        .collect()
}

/// `--changed` (the default) finds exactly the attributes whose out paths
/// differ between the two evaluations; each has its designed status; every
/// closure figure is `nix path-info`'s on its side (the HTTP cache for the
/// base, the local store for the head); the large path's docs reference is
/// said once with its count; the unbuilt attributes are "not built", with
/// a command that would build them.
#[test]
fn impact_of_every_changed_attribute_agrees_with_nix() {
    let f = impact_fixture();
    let o = impact(&["--json"]);
    let v = json_of(&o);
    let rows = rows(&v);
    let got: BTreeSet<String> = rows.keys().cloned().collect();
    assert_eq!(got, f.changed(), "{}", o.stdout);
    assert!(KEPT.iter().all(|k| !got.contains(*k)));
    for (attr, r) in &rows {
        assert_eq!(
            r["status"].as_str(),
            ImpactFixture::expected_status(attr),
            "{attr}: {r}"
        );
        if let Some(s) = r["before"]["closure_size"].as_u64() {
            assert_eq!(s, f.base_closure_size(attr), "{attr} before");
        }
        if let Some(s) = r["after"]["closure_size"].as_u64() {
            assert_eq!(s, f.head_closure_size(attr), "{attr} after");
        }
        let both = !REMOVED.contains(&attr.as_str())
            && !ADDED.contains(&attr.as_str())
            && !NOT_BUILT.contains(&attr.as_str());
        if both {
            let d = r["delta"].as_i64().unwrap();
            assert_eq!(
                d,
                f.head_closure_size(attr) as i64 - f.base_closure_size(attr) as i64,
                "{attr}"
            );
        }
    }
    // Growth first, largest |Δ| first.
    let order: Vec<&str> = v["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    let grown = order.iter().take_while(|s| **s == "grown").count();
    assert_eq!(grown, GROWN.len(), "{order:?}");
    assert_eq!(order[grown], "shrunk");

    // The shared cause, said once, with its count and the file behind it.
    let shared: Vec<&serde_json::Value> = v["shared_causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["path"].as_str().unwrap().contains(&format!("-{LARGE}-")))
        .collect();
    assert_eq!(shared.len(), 1, "{}", v["shared_causes"]);
    let s = shared[0];
    assert_eq!(s["count"].as_u64().unwrap() as usize, GROWN_BY_LARGE.len());
    let attrs: BTreeSet<String> = s["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    assert_eq!(attrs, set(&[GROWN_BY_LARGE]));
    assert!(
        s["referrer"]
            .as_str()
            .unwrap()
            .contains(&format!("-{LARGE_REFERRER}-")),
        "{s}"
    );
    assert_eq!(s["holds"], serde_json::json!([LARGE_HOLDS]));
    assert_eq!(s["groups"][0]["verdict"], "docs", "{s}");
    // Each grown row names it as shared rather than explaining it again.
    for a in GROWN_BY_LARGE {
        let added = rows[*a]["added"].as_array().unwrap();
        let big = added
            .iter()
            .find(|c| c["path"].as_str().unwrap().contains(&format!("-{LARGE}-")))
            .unwrap_or_else(|| panic!("{a}: {added:?}"));
        assert_eq!(big["shared"], true);
    }

    // The split: viewer and editor lose codegen, which libsplit held
    // (the removed path's chain ends at it); the files that held it are
    // read from the base cache only when asked (--removed-evidence).
    let with_base = self::rows(&json_of(&impact(&["--json", "--removed-evidence"])));
    for a in SHRUNK {
        for (r, read) in [(&rows[*a], false), (&with_base[*a], true)] {
            let removed = r["removed"].as_array().unwrap();
            let gone = removed
                .iter()
                .find(|c| {
                    c["path"]
                        .as_str()
                        .unwrap()
                        .contains(&format!("-{SPLIT_DROPPED}-"))
                })
                .unwrap_or_else(|| panic!("{a}: {removed:?}"));
            assert!(
                gone["referrer"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("-{SPLIT}-")),
                "{gone}"
            );
            let holds = gone["holds"].as_array().unwrap();
            if read {
                assert!(
                    holds
                        .iter()
                        .any(|h| h.as_str().unwrap().starts_with("include/")),
                    "{gone}"
                );
            } else {
                assert!(holds.is_empty(), "{gone}");
            }
        }
    }

    // Not built: in neither the local store nor the cache; the command
    // builds them from the head revision (checked with --dry-run, which
    // evaluates and plans without building).
    for a in NOT_BUILT {
        let r = &rows[*a];
        assert_eq!(r["not_built"], "after", "{r}");
        assert!(r["after"]["closure_size"].is_null());
        let cmd = r["build"].as_str().unwrap();
        assert!(cmd.starts_with("nix-build "), "{cmd}");
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("{cmd} --dry-run --no-out-link"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{cmd}: {text}");
        let drv = f.head_paths(a)[0]
            .rsplit('/')
            .next()
            .unwrap()
            .split_once('-')
            .unwrap()
            .1
            .to_string();
        assert!(
            text.contains("will be built") && text.contains(&drv),
            "{cmd}: {text}"
        );
    }
    let t = &v["totals"];
    assert_eq!(t["not_built"], NOT_BUILT.len());
    assert_eq!(t["shrunk"], SHRUNK.len());
    assert_eq!(t["added"], ADDED.len());
    assert_eq!(t["removed"], REMOVED.len());
    assert_eq!(t["unchanged"], SAME_SIZE.len());
}

/// The markdown comment: the sticky marker, the shared cause said once
/// (rendered as GitHub renders it), every changed attribute in the table,
/// and within a small `--markdown-limit` a note on what was cut.
#[test]
fn impact_comment_tells_the_story_once() {
    let o = impact(&["--format", "markdown"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let md = &o.stdout;
    assert!(md.starts_with("<!-- nix-heft -->\n"), "{md}");
    let html = crate::common::render_gfm(md);
    // Said once: the file behind it named once, each grown attribute
    // pointing up to it.
    let said = format!("is new in {} attributes, through", GROWN_BY_LARGE.len());
    assert_eq!(html.matches(&said).count(), 1, "{html}");
    assert_eq!(html.matches(LARGE_HOLDS).count(), 1, "{html}");
    // The attributes whose whole change is the shared causes are one
    // story, told once.
    let story = format!("({} attributes, grown", GROWN_BY_LARGE.len());
    assert_eq!(html.matches(&story).count(), 1, "{html}");
    let line = html.lines().find(|l| l.contains(&story)).unwrap();
    for a in GROWN_BY_LARGE {
        assert!(
            line.contains(&format!("<strong>{a}</strong>")),
            "{a}: {line}"
        );
    }
    for a in impact_fixture().changed() {
        assert!(
            html.contains(&format!("<td>{a}</td>")),
            "{a} not in the table: {html}"
        );
    }
    assert!(html.contains("<table>"), "{html}");
    let small = impact(&["--format", "markdown", "--markdown-limit", "2000"]);
    assert_eq!(small.code, 0, "{}", small.stderr);
    assert!(small.stdout.chars().count() <= 2000);
    assert!(small.stdout.contains("Cut to fit"), "{}", small.stdout);
    assert!(small.stdout.contains(&said), "{}", small.stdout);
}

/// `check`'s rules for every attribute: exit 4 naming only the attributes
/// that break them.
#[test]
fn impact_rules_apply_to_each_attribute() {
    let o = impact(&[
        "--json",
        "--max-growth",
        "10%",
        "--forbid",
        &format!("{LARGE}-*"),
    ]);
    assert_eq!(o.code, 4, "{}{}", o.stdout, o.stderr);
    let v = json_of(&o);
    for (attr, r) in rows(&v) {
        let rules: BTreeSet<&str> = r["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["rule"].as_str().unwrap())
            .collect();
        if GROWN_BY_LARGE.contains(&attr.as_str()) {
            assert_eq!(
                rules,
                BTreeSet::from(["forbid", "max-growth"]),
                "{attr}: {r}"
            );
        } else {
            assert!(rules.is_empty(), "{attr}: {r}");
        }
    }
    let ok = impact(&["--json", "--max-growth", "1GiB"]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
}

/// An explicit list: a kept attribute is unchanged (same path), a name
/// that is no attribute fails with Nix's message, a nested one works.
#[test]
fn impact_of_named_attributes() {
    let o = impact(&[
        "--json",
        "--attr",
        "stable",
        "--attr",
        "tools.a",
        "--attr",
        "nosuchattr",
    ]);
    let v = json_of(&o);
    let rows = rows(&v);
    assert_eq!(rows.len(), 3);
    assert_eq!(rows["stable"]["status"], "unchanged");
    assert_eq!(rows["stable"]["added_count"], 0);
    assert_eq!(rows["tools.a"]["status"], "unchanged");
    assert_eq!(rows["nosuchattr"]["status"], "failed");
    assert!(
        rows["nosuchattr"]["failed"]
            .as_str()
            .unwrap()
            .contains("no such attribute"),
        "{}",
        rows["nosuchattr"]
    );
}

/// The head read from a nixpkgs-review directory gives the same figures
/// for every attribute built there; its failed build is "failed", the
/// removed attribute (non-existent there) is "removed".
#[test]
fn nixpkgs_review_directory_gives_the_same_report() {
    let f = impact_fixture();
    let evaluated = rows(&json_of(&impact(&["--json"])));
    let repo = f.repo.to_string_lossy().into_owned();
    let review = f.review.to_string_lossy().into_owned();
    let o = crate::common::heft_run(
        None,
        &[
            "impact",
            "--json",
            "--repo",
            &repo,
            "--before",
            &f.base,
            "--before-store",
            &f.cache_url,
            "--nixpkgs-review",
            &review,
        ],
    );
    let v = json_of(&o);
    let reviewed = rows(&v);
    assert_eq!(
        reviewed[REVIEW_FAILED]["status"], "failed",
        "{}",
        reviewed[REVIEW_FAILED]
    );
    assert!(
        !reviewed.contains_key(REVIEW_SKIPPED),
        "skipped: listed nowhere"
    );
    assert_eq!(reviewed[REMOVED[0]]["status"], "removed");
    for (attr, r) in &reviewed {
        if attr == REVIEW_FAILED {
            continue;
        }
        let e = &evaluated[attr];
        for k in ["status", "delta", "added_count", "removed_count"] {
            assert_eq!(r[k], e[k], "{attr} {k}: {r} vs {e}");
        }
        assert_eq!(
            r["after"]["closure_size"], e["after"]["closure_size"],
            "{attr}"
        );
        assert_eq!(
            r["before"]["closure_size"], e["before"]["closure_size"],
            "{attr}"
        );
    }
    assert_eq!(reviewed.len(), evaluated.len() - 1);
    assert_eq!(
        v["shared_causes"][0]["count"],
        evaluated.len().min(GROWN_BY_LARGE.len())
    );
}

/// Bad input: no base, a revision the repository lacks, a cache whose key
/// is not trusted.
#[test]
fn impact_refuses_bad_sides_and_untrusted_caches() {
    let f = impact_fixture();
    let repo = f.repo.to_string_lossy().into_owned();
    let o = crate::common::heft_run(None, &["impact", "--after", "HEAD", "--repo", &repo]);
    crate::common::assert_usage_error(&o, "--before");
    let o = crate::common::heft_run(
        None,
        &[
            "impact",
            "--repo",
            &repo,
            "--before",
            "no-such-rev",
            "--after",
            &f.head,
        ],
    );
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("no-such-rev"), "{}", o.stderr);
    let other = key_pair("impact-untrusted");
    let mut c = crate::common::heft_bare();
    c.env(
        "NIX_CONFIG",
        format!("trusted-public-keys = {}", other.public),
    )
    .args([
        "impact", "--repo", &repo, "--before", &f.base, "--after", &f.head,
    ])
    .args(["--before-store", &f.cache_url]);
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("signature") || err.contains("trusted"),
        "{err}"
    );
}

/// The flags of the README's impact comment, after `impact`.
const README_FLAGS: &[&str] = &[
    "--format",
    "markdown",
    "--top",
    "3",
    "--markdown-limit",
    "6000",
];

/// What differs from one fixture run to the next: store hashes (the
/// fixture salts every derivation), commits, temporary directories.
fn normalized(md: &str) -> String {
    let mut out = String::new();
    let mut rest = md;
    // Hand-rolled, as the test crate has no regex: 40-hex commits and the
    // 8-character hash prefixes Names adds, "(xxxxxxxx)".
    while let Some(c) = rest.chars().next() {
        let hex40 = rest
            .as_bytes()
            .get(..40)
            .is_some_and(|h| h.iter().all(|b| b.is_ascii_hexdigit()));
        let short = rest.len() >= 10
            && rest.as_bytes()[0] == b'('
            && rest.as_bytes()[9] == b')'
            && rest.as_bytes()[1..9]
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        if hex40 {
            out.push_str("COMMIT");
            rest = &rest[40..];
        } else if short {
            out.push_str("(HASH)");
            rest = &rest[10..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// README.md shows a real impact comment: the one this fixture gives, up
/// to hashes and commits (NIX_HEFT_UPDATE_README=1 writes it there).
#[test]
fn readme_shows_a_real_impact_comment() {
    let mut o = impact(README_FLAGS);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // The fixture's temporary checkout, as a reader's would be named.
    let repo = impact_fixture().repo.to_string_lossy().into_owned();
    o.stdout = o.stdout.replace(&repo, "/home/you/nixpkgs");
    let readme_path = crate::common::repo().join("README.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let (start, end) = (
        "<!-- impact-example:start -->\n",
        "<!-- impact-example:end -->",
    );
    let a = readme.find(start).expect("README has the impact example") + start.len();
    let b = readme[a..].find(end).unwrap() + a;
    if std::env::var_os("NIX_HEFT_UPDATE_README").is_some() {
        let new = format!("{}{}{}", &readme[..a], o.stdout, &readme[b..]);
        std::fs::write(&readme_path, new).unwrap();
        return;
    }
    assert_eq!(
        normalized(&readme[a..b]),
        normalized(&o.stdout),
        "README's impact example is stale: NIX_HEFT_UPDATE_README=1 cargo test --test testsuite impact::readme"
    );
    // And it renders on GitHub as a comment would.
    let html = crate::common::render_gfm(&readme[a..b]);
    assert!(
        html.contains("<table>") && html.contains("Closure impact"),
        "{html}"
    );
}

/// Sides given as directories and as `path:` flakes (their
/// `legacyPackages`, as `nix build REF#attr` looks attributes up) give the
/// figures the git revisions give.
#[test]
fn directory_and_flake_sides_agree_with_revisions() {
    let f = impact_fixture();
    let attrs = ["libcore", "viewer", "stable", "tools.a"];
    let mut named: Vec<&str> = Vec::new();
    for a in &attrs {
        named.extend(["--attr", a]);
    }
    let mut by_rev = vec!["--json"];
    by_rev.extend(&named);
    let expected = rows(&json_of(&impact(&by_rev)));
    let scratch = crate::common::scratch_dir("impact-flake");
    let sides: Vec<String> = [("base", &f.base_tree), ("head", &f.repo)]
        .iter()
        .map(|(name, tree)| {
            let dir = scratch.join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::copy(tree.join("default.nix"), dir.join("default.nix")).unwrap();
            std::fs::write(
                dir.join("flake.nix"),
                format!(
                    "{{ outputs = {{ self }}: {{ legacyPackages.{} = import ./default.nix {{ }}; }}; }}\n",
                    f.system
                ),
            )
            .unwrap();
            dir.to_string_lossy().into_owned()
        })
        .collect();
    let flakes: Vec<String> = sides.iter().map(|d| format!("path:{d}")).collect();
    for (before, after) in [(&sides[0], &sides[1]), (&flakes[0], &flakes[1])] {
        let mut args = vec!["impact", "--json", "--before", before, "--after", after];
        args.extend(["--before-store", &f.cache_url]);
        args.extend(&named);
        let got = rows(&json_of(&crate::common::heft_run(None, &args)));
        assert_eq!(got.len(), attrs.len(), "{before}");
        for a in attrs {
            for k in ["status", "delta", "before", "after", "added_count"] {
                assert_eq!(got[a][k], expected[a][k], "{before}: {a} {k}");
            }
        }
    }
}
