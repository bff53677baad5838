//! `nix-heft report`: the HTML page of the bundled example rendered by
//! Debian's chromium, headless, and checked against `size --json`,
//! `refs --json` and `advise --json` of the same store; a synthetic
//! 10,000-path closure's page for size and painting.
//!
//! The browser runs with `--dump-dom` after a virtual-time budget, so the
//! DOM it prints is the one the page's script built. Interactions go
//! through the URL hash the page honours (`#click=PATH` clicks the drawn
//! cell through its own event handler, `#search=TEXT` types into the
//! search box). Console messages are captured with `--enable-logging`.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

/// Where this test keeps its pages and screenshots (kept after the run,
/// as CI artefacts, under target/).
fn out_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report");
    std::fs::create_dir_all(&d).unwrap();
    d
}

struct Browser {
    dom: String,
    console: Vec<String>,
}

/// Runs Debian's chromium headless on `url` with a fresh profile; with
/// `screenshot`, saves a PNG there instead of dumping the DOM.
fn chromium(url: &str, screenshot: Option<&Path>) -> Browser {
    let profile = tempfile::tempdir().unwrap();
    let mut c = Command::new("chromium");
    c.args([
        "--no-sandbox",
        "--headless",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1400,1000",
        "--virtual-time-budget=4000",
    ]);
    c.arg(format!("--user-data-dir={}", profile.path().display()));
    match screenshot {
        Some(p) => c.arg(format!("--screenshot={}", p.display())),
        None => c.arg("--dump-dom"),
    };
    c.arg(url);
    let out = c
        .output()
        .expect("chromium is needed (scripts/test.sh installs Debian's chromium)");
    assert!(out.status.success(), "chromium failed: {out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    Browser {
        dom: String::from_utf8_lossy(&out.stdout).into_owned(),
        console: stderr
            .lines()
            .filter(|l| l.contains(":CONSOLE"))
            .map(str::to_string)
            .collect(),
    }
}

/// The page loaded cleanly: the script ran to its end, nothing was logged
/// and no error was caught.
fn assert_clean(b: &Browser) {
    assert!(
        b.dom.contains(r#"data-ready="true""#),
        "script did not finish"
    );
    assert!(b.console.is_empty(), "console: {:#?}", b.console);
    assert!(
        b.dom.contains(r#"<pre id="js-errors" hidden=""></pre>"#),
        "errors caught by the page: {}",
        b.dom
            .split(r#"id="js-errors""#)
            .nth(1)
            .unwrap_or("")
            .chars()
            .take(500)
            .collect::<String>()
    );
}

fn unescape(s: &str) -> String {
    s.replace("&gt;", ">")
        .replace("&lt;", "<")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// Drawn treemap cells: path → (data-added, label text).
fn cells(dom: &str) -> BTreeMap<String, (u64, String)> {
    let re = regex::Regex::new(
        r#"<div role="button" tabindex="0" class="cell[^"]*" style="[^"]*" data-path="([^"]+)" data-added="(\d+)"[^>]*>(?:<span class="lbl">([^<]*)</span>)?"#,
    )
    .unwrap();
    re.captures_iter(dom)
        .map(|c| {
            (
                c[1].to_string(),
                (
                    c[2].parse().unwrap(),
                    c.get(3).map_or(String::new(), |m| unescape(m.as_str())),
                ),
            )
        })
        .collect()
}

/// The inner text of the element with `id` (first tag only).
fn by_id<'a>(dom: &'a str, id: &str) -> &'a str {
    let start = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the page"));
    let rest = &dom[start..];
    let open = rest.find('>').unwrap() + 1;
    let close = rest[open..].find('<').unwrap() + open;
    &rest[open..close]
}

fn json(o: &Outcome) -> Value {
    assert_eq!(o.code, 0, "{}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap()
}

fn example_page() -> (PathBuf, String, String) {
    let cache = example_cache().display().to_string();
    let root = example_root();
    let page = out_dir().join("example.html");
    let o = heft_run(
        Some(&cache),
        &["--json", "report", &root, "-o", page.to_str().unwrap()],
    );
    let w = json(&o);
    assert_eq!(w["output"], page.to_str().unwrap());
    assert_eq!(w["evidence"], "available");
    let bytes = std::fs::metadata(&page).unwrap().len();
    assert_eq!(w["bytes"].as_u64(), Some(bytes));
    (page, cache, root)
}

#[test]
fn example_report_is_small_self_contained_and_embeds_data_once() {
    let (page, _cache, root) = example_page();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.len() < 300 * 1024, "{} bytes", html.len());
    // Self-contained: no external script, style, image or fetch.
    for needle in ["<script src", "<link", "http://", "https://cdn", "fetch("] {
        assert!(!html.contains(needle), "page contains {needle:?}");
    }
    assert!(html.contains("d3-hierarchy"), "d3-hierarchy not embedded");
    assert!(html.contains("ISC") || html.contains("Permission to use, copy, modify"));
    // The data once, as JSON: no store path anywhere outside it.
    assert_eq!(
        html.matches(r#"<script type="application/json""#).count(),
        1
    );
    let (before, rest) = html
        .split_once(r#"<script type="application/json" id="heft-data">"#)
        .unwrap();
    let (data, after) = rest.split_once("</script>").unwrap();
    assert!(data.contains(&root));
    let v: Value = serde_json::from_str(data).expect("embedded data is JSON");
    assert_eq!(v["paths"].as_array().unwrap().len(), 17);
    assert!(!before.contains("/nix/store/") && !after.contains("/nix/store/"));
}

#[test]
fn example_report_draws_heaviest_paths_with_size_json_sizes() {
    let (page, cache, _root) = example_page();
    let sizes = json(&heft_run(
        Some(&cache),
        &["--json", "size", &example_root()],
    ));
    let b = chromium(&format!("file://{}", page.display()), None);
    assert_clean(&b);
    let drawn = cells(&b.dom);
    assert!(!drawn.is_empty(), "no cell drawn");
    // The five heaviest by added size, each drawn with `size`'s bytes and
    // its IEC text in the label.
    let paths = sizes["paths"].as_array().unwrap();
    for p in paths.iter().take(5) {
        let path = p["path"].as_str().unwrap();
        let added = p["added_size"].as_u64().unwrap();
        let (a, label) = drawn
            .get(path)
            .unwrap_or_else(|| panic!("{path} not drawn; drawn: {:?}", drawn.keys()));
        assert_eq!(*a, added, "{path}");
        assert!(
            label.contains(&nix_heft::units::iec(added)),
            "{path}: label {label:?} lacks {}",
            nix_heft::units::iec(added)
        );
    }
    // The summary states `size`'s closure size.
    let closure = sizes["closure_size"].as_u64().unwrap();
    assert!(
        by_id(&b.dom, "summary").contains(&nix_heft::units::iec(closure)),
        "{}",
        by_id(&b.dom, "summary")
    );
    // Every drawn path's bytes agree with `size`, not only the top five.
    let by_path: BTreeMap<&str, u64> = paths
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap(),
                p["added_size"].as_u64().unwrap(),
            )
        })
        .collect();
    for (path, (a, _)) in &drawn {
        assert_eq!(by_path.get(path.as_str()), Some(a), "{path}");
    }
    // A screenshot of the first screen, kept as an artefact.
    let shot = out_dir().join("example.png");
    let _ = std::fs::remove_file(&shot);
    let s = chromium(&format!("file://{}", page.display()), Some(&shot));
    assert!(s.console.is_empty(), "console: {:#?}", s.console);
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000);
}

#[test]
fn clicking_a_path_shows_its_sizes_evidence_and_advice() {
    let (page, cache, root) = example_page();
    let sizes = json(&heft_run(Some(&cache), &["--json", "size", &root]));
    let refs = json(&heft_run(Some(&cache), &["--json", "refs", &root]));
    let advice = json(&heft_run(Some(&cache), &["--json", "advise", &root]));
    // rocblas: drawn at the first screen, held by two referrers.
    let target = sizes["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"].as_str().unwrap().ends_with("-rocblas-5.7.1"))
        .unwrap()
        .clone();
    let tpath = target["path"].as_str().unwrap();
    let b = chromium(&format!("file://{}#click={tpath}", page.display()), None);
    assert_clean(&b);
    assert_eq!(by_id(&b.dom, "detail-path"), tpath);
    for (id, key) in [
        ("detail-added", "added_size"),
        ("detail-self", "nar_size"),
        ("detail-closure", "closure_size"),
    ] {
        let text = by_id(&b.dom, id);
        assert!(
            text.starts_with(&nix_heft::units::iec(target[key].as_u64().unwrap())),
            "{id}: {text}"
        );
    }
    // Every edge into it, with every file `refs` names for that edge.
    let detail = b
        .dom
        .split(r#"id="detail-referrers""#)
        .nth(1)
        .unwrap()
        .split(r#"id="detail-references""#)
        .next()
        .unwrap();
    let into: Vec<&Value> = refs["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["reference"] == tpath && e["referrer"] != tpath)
        .collect();
    assert!(!into.is_empty());
    for e in &into {
        let from = nix_heft::store_path::name_of(e["referrer"].as_str().unwrap());
        assert!(
            unescape(detail).contains(&format!("data-edge=\"{from}>rocblas-5.7.1\"")),
            "edge from {from} missing"
        );
        for f in e["files"].as_array().unwrap() {
            assert!(
                detail.contains(&format!("<code>{}</code>", f.as_str().unwrap())),
                "file {f} of {from} missing"
            );
        }
        let v = e["verdict"].as_str().unwrap();
        assert!(detail.contains(&format!(">{v}</span>")), "verdict {v}");
    }
    // The advice touching it: every action naming it as package or cut.
    let touching: Vec<&Value> = advice["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| {
            a["package"] == tpath
                || a["cuts"].as_array().unwrap().iter().any(|c| c == tpath)
                || a["removes"].as_array().unwrap().iter().any(|c| c == tpath)
        })
        .collect();
    let adv = b.dom.split(r#"id="detail-advice""#).nth(1).unwrap();
    assert_eq!(
        adv.matches(r#"class="advice""#).count(),
        touching.len(),
        "advice blocks"
    );
}

#[test]
fn search_finds_a_path_and_says_when_nothing_matches() {
    let (page, cache, root) = example_page();
    let sizes = json(&heft_run(Some(&cache), &["--json", "size", &root]));
    let want = sizes["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .find(|p| p.ends_with("-rocblas-tensile-gfx90a-5.7.1"))
        .unwrap()
        .to_string();
    let b = chromium(&format!("file://{}#search=gfx90a", page.display()), None);
    assert_clean(&b);
    let results = b.dom.split(r#"id="results""#).nth(1).unwrap();
    let results = &results[..results.find("</ul>").unwrap()];
    assert!(!results.starts_with(" hidden"), "results hidden: {results}");
    assert!(
        results.contains(&format!("data-path=\"{want}\"")),
        "{results}"
    );
    assert_eq!(results.matches("role=\"option\"").count(), 1, "{results}");
    let none = chromium(
        &format!("file://{}#search=no-such-package-xyz", page.display()),
        None,
    );
    assert_clean(&none);
    assert!(none.dom.contains(r#"id="no-hits""#));
}

#[test]
fn advice_view_lists_every_action_with_its_snippet() {
    let (page, cache, root) = example_page();
    let advice = json(&heft_run(Some(&cache), &["--json", "advise", &root]));
    let b = chromium(&format!("file://{}#view=advice", page.display()), None);
    assert_clean(&b);
    let view = b.dom.split(r#"id="view-advice""#).nth(1).unwrap();
    let view = unescape(&view[..view.find("</section>").unwrap()]);
    let actions = advice["actions"].as_array().unwrap();
    assert!(!actions.is_empty());
    assert_eq!(view.matches(r#"class="advice""#).count(), actions.len());
    for a in actions {
        let snippet = a["snippet"].as_str().unwrap();
        assert!(view.contains(snippet), "snippet missing: {snippet}");
        if let Some(s) = a["saving"].as_u64() {
            assert!(view.contains(&nix_heft::units::iec(s)), "saving {s}");
        }
    }
    assert!(view.contains("Copy snippet"));
    assert!(view.contains(r#"id="plan-total""#));
}

#[test]
fn report_writes_stdout_with_dash_and_fails_cleanly_on_a_bad_output() {
    let cache = example_cache().display().to_string();
    let root = example_root();
    let o = heft_run(Some(&cache), &["report", &root, "-o", "-"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.starts_with("<!DOCTYPE html>"));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let bad = dir.join("no/such/dir/r.html");
    let o = heft_run(
        Some(&cache),
        &["report", &root, "-o", bad.to_str().unwrap()],
    );
    assert_error(&o, "no/such/dir");
    assert!(!bad.exists());
    // An existing report is replaced whole, never left half written.
    let page = dir.join("r.html");
    std::fs::write(&page, "old").unwrap();
    let o = heft_run(
        Some(&cache),
        &["report", &root, "-o", page.to_str().unwrap()],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .ends_with("</html>\n")
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "temporary files left: {leftovers:?}");
    let o = heft_run(
        Some(&cache),
        &["report", "no-such-name-xyz", "-o", page.to_str().unwrap()],
    );
    assert_usage_error(&o, "no-such-name-xyz");
}

/// A synthetic store of 10,000 paths (bench/gen_store.py: database only,
/// so sizes without evidence): the page stays under 5 MB and paints. Its
/// time is measured in BENCHMARKS.md, not asserted here.
#[test]
fn ten_thousand_paths_stay_under_5_mb_and_paint() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    run(Command::new("python3")
        .arg(repo().join("bench/gen_store.py"))
        .arg(&store)
        .args(["--paths", "10000", "--force"]));
    let roots: Vec<String> = std::fs::read_to_string(store.join("roots.txt"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let page = out_dir().join("synthetic-10k.html");
    let mut args = vec![
        "--json",
        "report",
        "--no-evidence",
        "-o",
        page.to_str().unwrap(),
    ];
    args.extend(roots.iter().map(String::as_str));
    let w = json(&heft_run(Some(store.to_str().unwrap()), &args));
    assert_eq!(w["paths"], 10_000);
    assert_eq!(w["evidence"], "unavailable");
    let bytes = std::fs::metadata(&page).unwrap().len();
    assert!(bytes <= 5_000_000, "{bytes} bytes");
    let b = chromium(&format!("file://{}", page.display()), None);
    assert_clean(&b);
    assert!(cells(&b.dom).len() > 100, "too few cells drawn");
    assert!(b.dom.contains("evidence unavailable"));
}

/// From a `nix path-info --json` file there are no file contents: the page
/// is still written, says evidence is unavailable, has no advice, and the
/// run is partial (exit 3) as `refs` is.
#[test]
fn without_file_contents_the_page_says_so_and_the_run_is_partial() {
    let json_store = repo().join("examples/rocm-mini/path-info.json");
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("r.html");
    let o = heft_run(
        Some(json_store.to_str().unwrap()),
        &[
            "--json",
            "report",
            &example_root(),
            "-o",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert!(o.stderr.contains("no file contents"), "{}", o.stderr);
    let w: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(w["evidence"], "unavailable");
    assert_eq!(w["advice"], 0);
    let b = chromium(&format!("file://{}#view=advice", page.display()), None);
    assert_clean(&b);
    assert!(b.dom.contains("evidence unavailable"));
    assert!(b.dom.contains("No advice: it needs file-level evidence"));
}
