//! `nix-heft impact` (issues 32 and 38) over a nixpkgs-shaped repository:
//! a base commit built and served from a signed binary cache over loopback
//! HTTP, a head commit built locally but for two attributes, and
//! nixpkgs-review directories of the head as each of its versions writes
//! them (common::impact_fixture, common::review_writer).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use crate::common::impact_fixture::{
    ADDED, BLACKLISTED, BROKEN, CONFIGURED, FIXED, GROWN, GROWN_BY_LARGE, ImpactFixture, KEPT,
    LARGE, LARGE_HOLDS, LARGE_REFERRER, NOT_BUILT, REMOVED, REVIEW_EXTRA, REVIEW_FAILED,
    REVIEW_SKIPPED, SAME_SIZE, SHRUNK, SPLIT, SPLIT_DROPPED, impact_fixture, valid_locally,
};
use crate::common::review_writer::Version;
use crate::common::{key_pair, nix, run};
use crate::common::nix_output;
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

    // The evaluations differ exactly as designed. nix-env leaves out what
    // throws: brokenpkg at the head, fixedpkg at the base, the configured
    // ones without nixpkgs-review's config.
    assert_eq!(f.base_outputs.len(), 32);
    assert_eq!(f.head_outputs.len(), 32);
    let changed = set(&[
        GROWN, SHRUNK, SAME_SIZE, ADDED, REMOVED, NOT_BUILT, BROKEN, FIXED,
    ]);
    assert_eq!(f.changed(), changed);
    assert_eq!(
        f.attrs(),
        set(&[
            &changed.iter().map(String::as_str).collect::<Vec<_>>(),
            KEPT
        ])
    );
    for a in BROKEN {
        assert!(f.base_outputs.contains_key(*a) && !f.head_outputs.contains_key(*a));
    }
    for a in FIXED {
        assert!(!f.base_outputs.contains_key(*a) && f.head_outputs.contains_key(*a));
    }
    let (cb, ch) = &f.configured_outputs;
    for a in CONFIGURED {
        assert!(!f.base_outputs.contains_key(*a) && !f.head_outputs.contains_key(*a));
        assert!(
            cb.contains_key(*a) && ch.contains_key(*a) && cb[*a] != ch[*a],
            "{a}"
        );
    }
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
    let base_changed: BTreeSet<String> = cb
        .iter()
        .filter(|(a, o)| ch.get(*a) != Some(*o))
        .flat_map(|(_, o)| o.values().cloned())
        .collect();
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
        nix_output(nix()
            .args([
                "store",
                "verify",
                "--no-contents",
                "-r",
                "--store",
                &f.cache_url,
            ])
            .args(["--option", "trusted-public-keys", key])
            .args(&base_roots))
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
                let o = nix_output(nix()
                    .args(["path-info", "--store", &f.cache_url, p]));
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

    // The nixpkgs-review directory (after 3.9.0), read by nix-heft's
    // reader: what nixpkgs-review's code makes of the head.
    let r = ReviewDir::open(&f.review).unwrap();
    assert_eq!(r.layout, Layout::PerSystem);
    assert_eq!(r.commit.as_deref(), Some(f.head.as_str()));
    assert_eq!(r.extra_nixpkgs_config.as_deref(), Some(REVIEW_EXTRA));
    assert_eq!(r.systems.len(), 1);
    let sys = &r.systems[0];
    assert_eq!(sys.system, f.system);
    assert_eq!(sys.problems, []);
    let names = |a: &[nix_heft_format::nixpkgs_review::Attribute]| {
        a.iter().map(|a| a.name.clone()).collect::<BTreeSet<_>>()
    };
    let listed: BTreeSet<String> = f.review_attrs().into_iter().collect();
    let mut want_built = listed.clone();
    for a in REMOVED
        .iter()
        .chain(BROKEN)
        .chain([&REVIEW_FAILED, &BLACKLISTED])
    {
        want_built.remove(*a);
    }
    assert_eq!(names(&sys.built), want_built);
    assert_eq!(names(&sys.failed), set(&[&[REVIEW_FAILED]]));
    // Missing from the checkout (oldtool) and broken alike: `broken`.
    assert_eq!(names(&sys.broken), set(&[REMOVED, BROKEN]));
    assert!(sys.non_existent.is_empty());
    assert_eq!(names(&sys.blacklisted), set(&[&[BLACKLISTED]]));
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
        assert_eq!(got, ch[&a.name], "{}", a.name);
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

fn strs(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// `nix path-info -s` of one path (NAR size), in `store` or locally.
fn nar_size(path: &str, store: Option<&str>) -> i128 {
    let mut c = nix();
    c.args(["path-info", "--json"]);
    if let Some(s) = store {
        c.args(["--store", s]);
    }
    let v: serde_json::Value = serde_json::from_str(&run(c.arg(path))).unwrap();
    v[0]["narSize"].as_u64().unwrap() as i128
}

/// `--changed` (the default) finds exactly the attributes whose out paths
/// differ between the two evaluations; each has its designed status
/// (brokenpkg broken by the change, first; fixedpkg fixed); every closure
/// figure is `nix path-info`'s on its side (the HTTP cache for the base,
/// the local store for the head); every change's net is its paths' NAR
/// sizes, and a row's changes add up to its Δ; the large path's docs
/// reference is said once with its count; the unbuilt attributes are "not
/// built", with a command that would build them.
#[test]
fn impact_of_every_changed_attribute_agrees_with_nix() {
    let f = impact_fixture();
    let o = impact(&["--json", "--top", "3"]);
    let v = json_of(&o);
    let rows = rows(&v);
    let got: BTreeSet<String> = rows.keys().cloned().collect();
    assert_eq!(got, f.changed(), "{}", o.stdout);
    assert!(KEPT.iter().all(|k| !got.contains(*k)));
    let cache = Some(f.cache_url.as_str());
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
        // Each change's net from Nix's NAR sizes; with the rest, the Δ.
        let mut sum: i128 = r["rest_net"].as_i64().unwrap() as i128;
        for c in r["changes"].as_array().unwrap() {
            let added: i128 = strs(&c["added"]).iter().map(|p| nar_size(p, None)).sum();
            let removed: i128 = strs(&c["removed"]).iter().map(|p| nar_size(p, cache)).sum();
            assert_eq!(
                c["net"].as_i64().unwrap() as i128,
                added - removed,
                "{attr}: {c}"
            );
            sum += added - removed;
        }
        let expected = match r["status"].as_str().unwrap() {
            "added" => f.head_closure_size(attr) as i128,
            "removed" => -(f.base_closure_size(attr) as i128),
            "grown" | "shrunk" | "unchanged" => {
                f.head_closure_size(attr) as i128 - f.base_closure_size(attr) as i128
            }
            _ => {
                assert!(r["changes"].as_array().unwrap().is_empty(), "{attr}: {r}");
                0
            }
        };
        assert_eq!(
            sum, expected,
            "{attr}: the changes add up to the closure change"
        );
        if let Some(d) = r["delta"].as_i64() {
            assert_eq!(d as i128, expected, "{attr}");
        }
    }
    // Broken by the change first, then growth, largest |Δ| first.
    let order: Vec<&str> = v["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(order[..BROKEN.len()], ["broken"]);
    let grown = order[1..].iter().take_while(|s| **s == "grown").count();
    assert_eq!(grown, GROWN.len(), "{order:?}");
    assert_eq!(order[1 + grown], "shrunk");
    for a in BROKEN {
        let m = rows[*a]["failed"].as_str().unwrap();
        assert!(m.contains("marked as broken"), "{m}");
        assert!(rows[*a]["after"].is_null());
    }
    for a in FIXED {
        let m = rows[*a]["failed"].as_str().unwrap();
        assert!(m.contains("does not evaluate yet"), "{m}");
        assert_eq!(
            rows[*a]["after"]["closure_size"].as_u64(),
            Some(f.head_closure_size(a))
        );
    }

    // The shared cause, said once, with its count and the file behind it.
    let shared: Vec<&serde_json::Value> = v["shared_causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            strs(&s["added"])
                .iter()
                .any(|p| p.contains(&format!("-{LARGE}-")))
        })
        .collect();
    assert_eq!(shared.len(), 1, "{}", v["shared_causes"]);
    let s = shared[0];
    assert_eq!(s["kind"], "new");
    assert_eq!(s["count"].as_u64().unwrap() as usize, GROWN_BY_LARGE.len());
    let attrs: BTreeSet<String> = strs(&s["attributes"]).into_iter().collect();
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
        let changes = rows[*a]["changes"].as_array().unwrap();
        let big = changes
            .iter()
            .find(|c| {
                strs(&c["added"])
                    .iter()
                    .any(|p| p.contains(&format!("-{LARGE}-")))
            })
            .unwrap_or_else(|| panic!("{a}: {changes:?}"));
        assert_eq!(big["shared"], true);
    }

    // The split: viewer and editor lose codegen, which libsplit held
    // (the removed path's chain ends at it); the files that held it are
    // read from the base cache only when asked (--removed-evidence).
    let with_base = self::rows(&json_of(&impact(&["--json", "--removed-evidence"])));
    for a in SHRUNK {
        for (r, read) in [(&rows[*a], false), (&with_base[*a], true)] {
            let changes = r["changes"].as_array().unwrap();
            let gone = changes
                .iter()
                .find(|c| c["kind"] == "gone" && c["package"] == SPLIT_DROPPED)
                .unwrap_or_else(|| panic!("{a}: {changes:?}"));
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
    assert_eq!(t["broken"], BROKEN.len());
    assert_eq!(t["fixed"], FIXED.len());
}

/// A rebuilt or bumped path counts by its net change, paired with the
/// path it replaces as `diff` pairs them: for single-output attributes,
/// impact's changes are `nix-heft diff`'s packages of the same two
/// closures (package, versions before and after, size Δ), and the version
/// change is shown as "1.0 → 1.1".
#[test]
fn changes_are_paired_as_diff_pairs_them() {
    let f = impact_fixture();
    let rows = rows(&json_of(&impact(&["--json", "--top", "50"])));
    for attr in ["editor", "viewer", "verclient", "app01", "libver"] {
        let before = &f.base_outputs[attr]["out"];
        let after = &f.head_outputs[attr]["out"];
        let d = crate::common::heft_run(
            None,
            &[
                "diff",
                "--json",
                "--before-store",
                &f.cache_url,
                before,
                after,
            ],
        );
        assert_eq!(d.code, 0, "{}", d.stderr);
        let d: serde_json::Value = serde_json::from_str(&d.stdout).unwrap();
        // (package, versions before, versions after, size change)
        let rows_of = |items: &serde_json::Value, name: &str, delta: &str| {
            let mut v: Vec<(String, Vec<String>, Vec<String>, i64)> = items
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p[name].as_str().unwrap().to_string(),
                        strs(&p["versions_before"]),
                        strs(&p["versions_after"]),
                        p[delta].as_i64().unwrap(),
                    )
                })
                .collect();
            v.sort();
            v
        };
        let from_diff = rows_of(&d["packages"], "name", "size_delta");
        let from_impact = rows_of(&rows[attr]["changes"], "package", "net");
        assert_eq!(from_impact, from_diff, "{attr}");
    }
    let libver = rows["libver"]["changes"].as_array().unwrap();
    assert_eq!(libver.len(), 1, "{libver:?}");
    assert_eq!(libver[0]["kind"], "version");
    assert_eq!(strs(&libver[0]["versions_before"]), ["1.0"]);
    assert_eq!(strs(&libver[0]["versions_after"]), ["1.1"]);
    let text = impact(&["--attr", "libver"]);
    assert!(
        text.stdout.contains("libver 1.0 → 1.1 (+0 B)"),
        "{}",
        text.stdout
    );
}

/// The visible text of one markdown list line as written: the item's
/// text with backslash escapes resolved, code spans' backticks and `**`
/// dropped.
fn visible(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut code = false;
    while let Some(c) = chars.next() {
        match c {
            '`' => code = !code,
            '\\' if !code => {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            }
            '*' if !code && chars.peek() == Some(&'*') => {
                chars.next();
            }
            c => out.push(c),
        }
    }
    out
}

/// The text of rendered HTML: tags dropped, entities decoded.
fn html_text(html: &str) -> String {
    let mut out = String::new();
    let mut tag = false;
    for c in html.chars() {
        match c {
            '<' => tag = true,
            '>' => tag = false,
            c if !tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Every list line of `md`, rendered alone by cmark-gfm as GitHub renders
/// a comment: one list item, nothing nested in it (no list, no block),
/// and its text exactly what the line says. Returns how many lines.
pub(crate) fn assert_list_lines_render(md: &str) -> usize {
    let mut n = 0;
    for line in md.lines().filter(|l| l.starts_with("- ")) {
        let html = crate::common::render_gfm(line);
        assert!(
            html.starts_with("<ul>\n<li>") && html.ends_with("</li>\n</ul>\n"),
            "{line}\n{html}"
        );
        let inner = &html["<ul>\n<li>".len()..html.len() - "</li>\n</ul>\n".len()];
        for nested in ["<ul>", "<ol>", "<li>", "<p>", "<pre>", "<h", "<hr"] {
            assert!(!inner.contains(nested), "{line}: nested {nested}: {html}");
        }
        assert_eq!(
            html_text(inner),
            visible(&line[2..]),
            "{line} renders otherwise"
        );
        n += 1;
    }
    n
}

/// The markdown comment: the sticky marker, the shared cause said once
/// (rendered as GitHub renders it), every list line rendering as written
/// (a line starting `- +` would be a nested list), every changed attribute
/// in the table, broken by the change first, and within a small
/// `--markdown-limit` a note on what was cut.
#[test]
fn impact_comment_tells_the_story_once() {
    let o = impact(&["--format", "markdown"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let md = &o.stdout;
    assert!(md.starts_with("<!-- nix-heft -->\n"), "{md}");
    assert!(assert_list_lines_render(md) > 10, "{md}");
    // What a line that starts with `+` does on GitHub: the check above
    // would catch it.
    let nested = crate::common::render_gfm("- + `libfoo-1.0` (1 KiB)");
    assert!(nested.contains("<li>\n<ul>"), "{nested}");
    let html = crate::common::render_gfm(md);
    // Said once: the file behind it named once, each grown attribute
    // pointing up to it.
    let said = format!("in {} attributes, through", GROWN_BY_LARGE.len());
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
    // Broken by this change: in the heading's verdict and first.
    let first = md.find("broken by this change").unwrap();
    assert!(first < md.find("New in several").unwrap(), "{md}");
    assert!(md.contains("**Broken by this change**"), "{md}");
    assert!(html.contains("<table>"), "{html}");
    let small = impact(&["--format", "markdown", "--markdown-limit", "2000"]);
    assert_eq!(small.code, 0, "{}", small.stderr);
    assert!(small.stdout.chars().count() <= 2000);
    assert!(small.stdout.contains("Cut to fit"), "{}", small.stdout);
    assert!(small.stdout.contains(&said), "{}", small.stdout);
    assert_list_lines_render(&small.stdout);
}

/// `check`'s rules for every attribute: exit 4 naming only the attributes
/// that break them. Hydra's limit (`--max-output`) is the NAR sizes of an
/// attribute's outputs together, flagged for each attribute over it in
/// every format.
#[test]
fn impact_rules_apply_to_each_attribute() {
    let f = impact_fixture();
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
    // A whole store path forbids that path, as check's and bisect's do:
    // the large package's path, taken from what the glob flagged, flags
    // the same attributes.
    let flagged_by = |v: &serde_json::Value, rule: &str| -> BTreeSet<String> {
        rows(v)
            .into_iter()
            .filter(|(_, r)| {
                r["violations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|x| x["rule"] == rule)
            })
            .map(|(a, _)| a)
            .collect()
    };
    let by_glob = flagged_by(&v, "forbid");
    assert!(!by_glob.is_empty(), "{v}");
    let message = rows(&v)
        .into_values()
        .flat_map(|r| r["violations"].as_array().unwrap().clone())
        .find(|x| x["rule"] == "forbid")
        .unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    let large = message.split(' ').next().unwrap().to_string();
    assert!(large.starts_with("/nix/store/") && large.contains(LARGE), "{message}");
    let o = impact(&["--json", "--forbid", &large]);
    assert_eq!(o.code, 4, "{}{}", o.stdout, o.stderr);
    assert_eq!(flagged_by(&json_of(&o), "forbid"), by_glob);

    // --max-output 150KiB: the attributes whose head outputs (built)
    // weigh more than that together, as `nix path-info -s` gives them.
    let limit = 150 * 1024;
    let over: BTreeSet<String> = f
        .head_outputs
        .iter()
        .filter(|(a, outs)| {
            f.changed().contains(*a)
                && !f.unbuilt.contains(*a)
                && outs.values().map(|p| nar_size(p, None)).sum::<i128>() > limit
        })
        .map(|(a, _)| a.clone())
        .collect();
    assert!(over.contains("libcore") && over.contains(SPLIT), "{over:?}");
    let o = impact(&["--json", "--max-output", "150KiB"]);
    assert_eq!(o.code, 4, "{}", o.stderr);
    assert_eq!(flagged_by(&json_of(&o), "max-output"), over);
    for (format, needle) in [
        ("text", "✗ max-output: its outputs are"),
        ("markdown", "❌ `max-output`: its outputs are"),
        ("github", "breaks max-output::its outputs are"),
    ] {
        let o = impact(&["--format", format, "--max-output", "150KiB"]);
        assert_eq!(o.code, 4, "{format}: {}", o.stderr);
        assert_eq!(
            o.stdout.matches(needle).count(),
            over.len(),
            "{format}: {}",
            o.stdout
        );
        for a in &over {
            assert!(o.stdout.contains(a.as_str()), "{format}: {a}");
        }
    }
}

/// An explicit list: a kept attribute is unchanged (same path), a nested
/// one works, a set with `recurseForDerivations` stands for the
/// derivations in it, and a name that is nothing on either side is a
/// usage error (a typo must fail CI).
#[test]
fn impact_of_named_attributes() {
    let o = impact(&[
        "--json", "--attr", "stable", "--attr", "tools.a", "--attr", "tools",
    ]);
    let v = json_of(&o);
    let rows = rows(&v);
    assert_eq!(
        rows.keys().map(String::as_str).collect::<Vec<_>>(),
        ["stable", "tools.a", "tools.b", "tools.c"]
    );
    assert_eq!(rows["stable"]["status"], "unchanged");
    assert_eq!(rows["stable"]["added_count"], 0);
    assert_eq!(rows["tools.a"]["status"], "unchanged");
    assert_eq!(rows["tools.b"]["status"], "not-built");
    assert_eq!(rows["tools.c"]["status"], "unchanged");
    for evaluator in ["nix-env", "auto"] {
        let o = impact(&[
            "--json",
            "--evaluator",
            evaluator,
            "--attr",
            "stable",
            "--attr",
            "nosuchattr",
        ]);
        crate::common::assert_usage_error(&o, "--attr nosuchattr: no such attribute");
    }
    // Only at the base, only at the head: removed and added, not errors.
    let v = json_of(&impact(&[
        "--json", "--attr", "oldtool", "--attr", "newtool",
    ]));
    let r = self::rows(&v);
    assert_eq!(
        (
            r["oldtool"]["status"].as_str(),
            r["newtool"]["status"].as_str()
        ),
        (Some("removed"), Some("added"))
    );
}

/// The head read from a nixpkgs-review directory, as each version of
/// nixpkgs-review writes it (common::review_writer follows its code),
/// gives the figures the evaluated head gives for every attribute built
/// there: per-output entries (2.9.0 to 3.7.x) are one attribute with its
/// outputs (libsplit's `out` and `dev`), 2.6.0's one link is the default
/// output. Its failed build is "build-failed", an attribute missing from
/// its checkout (listed `broken`, as every version does) is "removed"
/// when the report's commit can be evaluated here and undecided (skipped
/// as broken, with a note) when it cannot, a broken one is "skipped as
/// broken", a blacklisted one "skipped"; `extra-nixpkgs-config` is applied
/// to the base, so the configured attributes compare on both sides.
#[test]
fn nixpkgs_review_directories_of_every_version() {
    let f = impact_fixture();
    let repo = f.repo.to_string_lossy().into_owned();
    let config = format!(
        "({{ allowUnfree = true; allowBroken = true; checkMeta = true; }} // {REVIEW_EXTRA}) // {{ allowBroken = false; }}"
    );
    // The evaluated head, with the review's config, over the review's list.
    let listed = f.review_attrs();
    let mut args: Vec<&str> = vec!["--json", "--arg", "config", &config];
    for a in &listed {
        args.extend(["--attr", a]);
    }
    let evaluated = rows(&json_of(&impact(&args)));
    for version in Version::ALL {
        let dir = f.review_dir(version, REVIEW_EXTRA);
        let review = dir.to_string_lossy().into_owned();
        let run = |extra: &[&str]| {
            let mut a = vec![
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
            ];
            a.extend_from_slice(extra);
            crate::common::heft_run(None, &a)
        };
        let o = run(&[]);
        let v = json_of(&o);
        let reviewed = rows(&v);
        let tag = version.tag();
        assert_eq!(reviewed[REVIEW_FAILED]["status"], "build-failed", "{tag}");
        assert!(
            !reviewed.contains_key(REVIEW_SKIPPED),
            "{tag}: skipped, listed nowhere"
        );
        assert_eq!(reviewed[BLACKLISTED]["status"], "skipped", "{tag}");
        for a in BROKEN {
            assert_eq!(reviewed[*a]["status"], "skipped-broken", "{tag}");
        }
        // oldtool: `broken` in the report; removed when the report's
        // commit (3.4.0 on) can be evaluated here.
        let removed = if version >= Version::V3_4_0 {
            "removed"
        } else {
            "skipped-broken"
        };
        assert_eq!(reviewed[REMOVED[0]]["status"], removed, "{tag}");
        let notes = strs(&v["notes"]);
        assert_eq!(
            notes
                .iter()
                .any(|n| n.contains("broken and removed cannot be told apart")),
            version < Version::V3_4_0,
            "{tag}: {notes:?}"
        );
        // With the head evaluated too, removed whatever the version.
        if version < Version::V3_4_0 {
            let with_after = rows(&json_of(&run(&["--after", &f.head])));
            assert_eq!(with_after[REMOVED[0]]["status"], "removed", "{tag}");
        }
        // 2.6.0 had no --extra-nixpkgs-config: optinpkg did not evaluate
        // in its review either.
        let configured: Vec<&str> = if version == Version::V2_6_0 {
            assert_eq!(reviewed["optinpkg"]["status"], "skipped-broken", "{tag}");
            vec!["unfreepkg"]
        } else {
            CONFIGURED.to_vec()
        };
        for a in &configured {
            assert_eq!(
                reviewed[*a]["status"], "unchanged",
                "{tag}: {a}: {}",
                reviewed[*a]
            );
        }
        // Per-output entries (2.9.2 to 3.4.0) are one attribute again;
        // 2.6.0 linked the default output alone, so its base is compared
        // over that output alone.
        let split = &reviewed[SPLIT];
        let outputs: Vec<&String> = split["after"]["outputs"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        if version == Version::V2_6_0 {
            assert_eq!(outputs, ["out"], "{tag}: {split}");
            let out = &f.head_outputs[SPLIT]["out"];
            assert_eq!(
                split["after"]["closure_size"].as_u64(),
                Some(
                    crate::common::impact_fixture::closure(None, std::slice::from_ref(out))
                        .values()
                        .sum()
                ),
                "{tag}"
            );
            assert_eq!(
                strs(&serde_json::json!(
                    split["before"]["outputs"]
                        .as_object()
                        .unwrap()
                        .keys()
                        .collect::<Vec<_>>()
                )),
                ["out"]
            );
        } else {
            assert_eq!(outputs, ["dev", "out"], "{tag}: {split}");
        }
        let mut compared = 0;
        for (attr, r) in &reviewed {
            if !["grown", "shrunk", "unchanged", "added"].contains(&r["status"].as_str().unwrap()) {
                continue;
            }
            if r["after"]["outputs"] != evaluated[attr]["after"]["outputs"] {
                assert_eq!((version, attr.as_str()), (Version::V2_6_0, SPLIT));
                continue;
            }
            let e = &evaluated[attr];
            for k in ["status", "delta", "added_count", "removed_count"] {
                assert_eq!(r[k], e[k], "{tag}: {attr} {k}: {r} vs {e}");
            }
            for side in ["before", "after"] {
                assert_eq!(
                    r[side]["closure_size"], e[side]["closure_size"],
                    "{tag}: {attr} {side}"
                );
            }
            compared += 1;
        }
        assert!(compared >= GROWN.len(), "{tag}: {compared}");
        assert_eq!(o.code, 0, "{tag}: {}", o.stderr);
    }
}

/// A link nixpkgs-review wrote that is missing, or that points to a path
/// the head's store does not hold, is a problem said once and exit 3,
/// never a silent "not built".
#[test]
fn nixpkgs_review_link_problems_are_said_once() {
    let f = impact_fixture();
    let dir = f.review_dir(Version::After3_9_0, REVIEW_EXTRA);
    let results = dir.join("results");
    let missing = f.review_link("libcore", "out");
    std::fs::remove_file(results.join(&missing)).unwrap();
    let dangling = f.review_link("viewer", "out");
    std::fs::remove_file(results.join(&dangling)).unwrap();
    let nowhere = "/nix/store/00000000000000000000000000000000-viewer-3.0";
    std::os::unix::fs::symlink(nowhere, results.join(&dangling)).unwrap();
    let repo = f.repo.to_string_lossy().into_owned();
    let review = dir.to_string_lossy().into_owned();
    let o = crate::common::heft_run(
        None,
        &[
            "impact",
            "--repo",
            &repo,
            "--before",
            &f.base,
            "--before-store",
            &f.cache_url,
            "--nixpkgs-review",
            &review,
            "--attr",
            "libcore",
            "--attr",
            "viewer",
        ],
    );
    assert_eq!(o.code, 3, "{}{}", o.stdout, o.stderr);
    let warnings: Vec<&str> = o
        .stderr
        .lines()
        .filter(|l| l.starts_with("nix-heft: warning:"))
        .collect();
    assert_eq!(warnings.len(), 2, "{}", o.stderr);
    assert_eq!(
        warnings.iter().filter(|w| w.contains(&missing)).count(),
        1,
        "{warnings:?}"
    );
    assert_eq!(
        warnings
            .iter()
            .filter(|w| w.contains(&dangling) && w.contains(nowhere))
            .count(),
        1,
        "{warnings:?}"
    );
}

/// Bad input: no base; a revision the repository lacks, or a directory
/// that is no git checkout, is a usage error naming the flag; a cache
/// whose key is not trusted.
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
    crate::common::assert_usage_error(
        &o,
        &format!("--before no-such-rev: no such revision in {repo}"),
    );
    let o = crate::common::heft_run(
        None,
        &[
            "impact",
            "--repo",
            &repo,
            "--before",
            &f.base,
            "--after",
            "no-such-rev",
        ],
    );
    crate::common::assert_usage_error(&o, "--after no-such-rev: no such revision in");
    let plain = crate::common::scratch_dir("impact-not-git");
    let plain_s = plain.to_string_lossy().into_owned();
    let o = crate::common::heft_run(
        None,
        &[
            "impact", "--repo", &plain_s, "--before", "master", "--after", "HEAD",
        ],
    );
    crate::common::assert_usage_error(
        &o,
        &format!("--before master: {plain_s} is not a git checkout"),
    );
    assert!(!o.stderr.contains("--after"), "{}", o.stderr);
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

/// A head that does not evaluate at all is an error of the run (exit 1,
/// Nix's message), with either evaluator: never every attribute removed
/// and an attribute named "".
#[test]
fn a_side_that_does_not_evaluate_is_an_error() {
    let f = impact_fixture();
    let wip = crate::common::scratch_dir("impact-wip");
    std::fs::write(
        wip.join("default.nix"),
        "{ ... }: throw \"work in progress\"\n",
    )
    .unwrap();
    let wip_s = wip.to_string_lossy().into_owned();
    let base = f.base_tree.to_string_lossy().into_owned();
    for evaluator in ["nix-env", "nix-eval-jobs"] {
        for named in [false, true] {
            let mut args = vec![
                "impact",
                "--evaluator",
                evaluator,
                "--before",
                &base,
                "--after",
                &wip_s,
                "--before-store",
                &f.cache_url,
            ];
            if named {
                args.extend(["--attr", "libcore"]);
            }
            let standin = crate::impact_eval_jobs::standin("v2.33.0");
            let path = format!("{}:{}", standin.display(), std::env::var("PATH").unwrap());
            let o = crate::common::heft_run_env(&[("PATH", &path)], None, &args);
            assert_eq!(o.code, 1, "{evaluator} {named}: {}{}", o.stdout, o.stderr);
            assert!(
                o.stderr
                    .contains(&format!("--after {wip_s}: does not evaluate")),
                "{}",
                o.stderr
            );
            assert!(o.stderr.contains("work in progress"), "{}", o.stderr);
            assert!(o.stdout.is_empty(), "{}", o.stdout);
        }
    }
}

/// Without `--before-store` the base is read from the local store, and
/// the report says so; where the base's outputs are missing there, it
/// says to pass `--before-store`. A gate (a rule given) that measured no
/// attribute fails.
#[test]
fn the_base_from_the_local_store_is_said_and_a_gate_must_measure() {
    let f = impact_fixture();
    let repo = f.repo.to_string_lossy().into_owned();
    let o = crate::common::heft_run(
        None,
        &[
            "impact", "--json", "--repo", &repo, "--before", &f.base, "--after", &f.head, "--attr",
            "libcore", "--attr", "stable",
        ],
    );
    let v = json_of(&o);
    let r = rows(&v);
    assert_eq!(r["libcore"]["status"], "not-built");
    assert_eq!(r["libcore"]["not_built"], "before");
    assert_eq!(r["stable"]["status"], "unchanged");
    let notes = strs(&v["notes"]);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("no --before-store") && notes[0].contains("pass --before-store"),
        "{notes:?}"
    );
    let text = crate::common::heft_run(
        None,
        &[
            "impact", "--repo", &repo, "--before", &f.base, "--after", &f.head, "--attr", "libcore",
        ],
    );
    assert_eq!(
        text.stdout
            .matches("note: the base's outputs were read from")
            .count(),
        1,
        "{}",
        text.stdout
    );

    // A gate over attributes none of which could be measured.
    let o = impact(&["--attr", "app09", "--max-growth", "10%"]);
    assert_eq!(o.code, 1, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stderr.contains("the rules were applied to nothing"),
        "{}",
        o.stderr
    );
}

/// Each warning of a run is printed once, for `diff`, `check` and
/// `impact` alike (they were printed twice): a cache read without
/// signatures required warns once per store, a NAR that does not read is
/// one problem.
#[test]
fn warnings_are_printed_once() {
    let f = impact_fixture();
    // An unsigned copy of the base's cache (app01's closure), app01's NAR
    // damaged.
    let dir = crate::common::scratch_dir("impact-warnings");
    let cache = dir.join("cache");
    let app = &f.base_outputs["app01"]["out"];
    let lib = &f.base_outputs["libcore"]["out"];
    let old = &f.base_outputs["oldtool"]["out"];
    run(nix()
        .args([
            "copy",
            "--from",
            &f.cache_url,
            "--to",
            &format!("file://{}", cache.display()),
        ])
        .args(["--option", "require-sigs", "false", app, old]));
    for e in std::fs::read_dir(&cache).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "narinfo") {
            let text = std::fs::read_to_string(&p).unwrap();
            let unsigned: String = text
                .lines()
                .filter(|l| !l.starts_with("Sig: "))
                .map(|l| format!("{l}\n"))
                .collect();
            std::fs::write(&p, unsigned).unwrap();
        }
    }
    for p in [app, old] {
        let narinfo =
            std::fs::read_to_string(cache.join(format!("{}.narinfo", &p[11..43]))).unwrap();
        let url = narinfo
            .lines()
            .find_map(|l| l.strip_prefix("URL: "))
            .unwrap();
        std::fs::write(cache.join(url), b"not xz").unwrap();
    }
    let store = format!("file://{}", cache.display());
    let (base_tree, repo) = (
        f.base_tree.to_string_lossy().into_owned(),
        f.repo.to_string_lossy().into_owned(),
    );
    let runs: [Vec<&str>; 3] = [
        vec!["--store", &store, "--no-require-sigs", "diff", lib, app],
        vec![
            "--store",
            &store,
            "--no-require-sigs",
            "check",
            app,
            "--forbid",
            "zlib*",
        ],
        vec![
            "--no-require-sigs",
            "impact",
            "--before",
            &base_tree,
            "--after",
            &repo,
            "--attr",
            "oldtool",
            "--before-store",
            &store,
            "--removed-evidence",
        ],
    ];
    for (args, code) in runs.into_iter().zip([3, 4, 3]) {
        let o = crate::common::heft_run(None, &args);
        assert_eq!(o.code, code, "{args:?}: {}{}", o.stdout, o.stderr);
        let lines: Vec<&str> = o
            .stderr
            .lines()
            .filter(|l| l.starts_with("nix-heft: warning:"))
            .collect();
        let mut unique = lines.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(lines.len(), unique.len(), "{args:?}: {}", o.stderr);
        assert!(
            lines
                .iter()
                .any(|l| l.contains("without a valid signature")),
            "{args:?}: {}",
            o.stderr
        );
        assert!(
            lines.iter().any(|l| l.contains("NAR")),
            "{args:?}: {}",
            o.stderr
        );
    }
}

/// The flags of the README's impact comment, after `impact`.
const README_FLAGS: &[&str] = &[
    "--format",
    "markdown",
    "--top",
    "3",
    "--markdown-limit",
    "7000",
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

/// The guide (docs/guide/review-and-ci.md) shows a real impact comment:
/// the one this fixture gives, up to hashes and commits
/// (NIX_HEFT_UPDATE_README=1 writes it there), and it renders on
/// cmark-gfm as shown, line by line.
#[test]
fn the_guide_shows_a_real_impact_comment() {
    let mut o = impact(README_FLAGS);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // The fixture's temporary checkout, as a reader's would be named.
    let repo = impact_fixture().repo.to_string_lossy().into_owned();
    o.stdout = o.stdout.replace(&repo, "/home/you/nixpkgs");
    let readme_path = crate::common::repo().join("docs/guide/review-and-ci.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let (start, end) = (
        "<!-- impact-example:start -->\n",
        "<!-- impact-example:end -->",
    );
    let a = readme.find(start).expect("the guide has the impact example") + start.len();
    let b = readme[a..].find(end).unwrap() + a;
    if std::env::var_os("NIX_HEFT_UPDATE_README").is_some() {
        let new = format!("{}{}{}", &readme[..a], o.stdout, &readme[b..]);
        std::fs::write(&readme_path, new).unwrap();
        return;
    }
    assert_eq!(
        normalized(&readme[a..b]),
        normalized(&o.stdout),
        "the guide's impact example is stale: NIX_HEFT_UPDATE_README=1 cargo test --features nix-tests --test testsuite impact::the_guide"
    );
    // And it renders on GitHub as a comment would.
    let html = crate::common::render_gfm(&readme[a..b]);
    assert!(
        html.contains("<table>") && html.contains("Closure impact"),
        "{html}"
    );
    assert!(assert_list_lines_render(&readme[a..b]) > 5);
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
    // The flakes' sources were copied into a scratch store, not the user's.
    for f in &flakes {
        let src = crate::common::flake_source(f);
        assert!(!src.exists(), "{f}: {}", src.display());
    }
}

/// `--list` names the attributes a comparison would compare, one a line
/// (what the Action builds), the same with `--json`, and exactly the rows
/// of the comparison itself; it reads no store, so it prints no warning.
#[test]
fn list_names_what_would_be_compared_in_text_and_json() {
    let text = impact(&["--list"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stderr.is_empty(), "{}", text.stderr);
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert!(lines.len() > 10, "{}", text.stdout);
    let json = impact(&["--list", "--json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let attrs: Vec<&str> = v["attrs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(attrs, lines);
    let compared: BTreeSet<String> = rows(&json_of(&impact(&["--json"])))
        .into_keys()
        .collect();
    let listed: BTreeSet<String> = lines.iter().map(|l| l.to_string()).collect();
    assert_eq!(listed, compared);
}
