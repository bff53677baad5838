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

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use serde_json::Value;

/// Where this test keeps its pages and screenshots (kept after the run,
/// as CI artefacts, under target/).
pub(crate) fn out_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report");
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub(crate) struct Browser {
    pub(crate) dom: String,
    pub(crate) console: Vec<String>,
}

/// Runs Debian's chromium headless on `url` with a fresh profile; with
/// `screenshot`, saves a PNG there instead of dumping the DOM.
pub(crate) fn chromium(url: &str, screenshot: Option<&Path>) -> Browser {
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
pub(crate) fn assert_clean(b: &Browser) {
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
            label.contains(&nix_heft_types::units::iec(added)),
            "{path}: label {label:?} lacks {}",
            nix_heft_types::units::iec(added)
        );
    }
    // The summary states `size`'s closure size.
    let closure = sizes["closure_size"].as_u64().unwrap();
    assert!(
        by_id(&b.dom, "summary").contains(&nix_heft_types::units::iec(closure)),
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
    // Where it came from, as size --json's origins say.
    let o = &sizes["origins"][tpath];
    assert_eq!(
        by_id(&b.dom, "detail-origin"),
        format!(
            "{} (signed by {})",
            o["store"].as_str().unwrap(),
            o["signed_by"].as_str().unwrap()
        )
    );
    for (id, key) in [
        ("detail-added", "added_size"),
        ("detail-self", "nar_size"),
        ("detail-closure", "closure_size"),
    ] {
        let text = by_id(&b.dom, id);
        assert!(
            text.starts_with(&nix_heft_types::units::iec(target[key].as_u64().unwrap())),
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
        let from = nix_heft_format::store_path::name_of(e["referrer"].as_str().unwrap());
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
            assert!(view.contains(&nix_heft_types::units::iec(s)), "saving {s}");
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

/// The embedded JSON of a page.
fn page_data(page: &Path) -> Value {
    let html = std::fs::read_to_string(page).unwrap();
    let data = html
        .split_once(r#"<script type="application/json" id="heft-data">"#)
        .unwrap()
        .1
        .split_once("</script>")
        .unwrap()
        .0;
    serde_json::from_str(data).unwrap()
}

/// The element with attribute `attr="value"`: its opening tag through
/// the close that matches it, nested elements of the same name counted.
fn element<'a>(dom: &'a str, attr: &str, value: &str) -> &'a str {
    let needle = format!("{attr}=\"{value}\"");
    let at = dom
        .find(&needle)
        .unwrap_or_else(|| panic!("no element with {needle}"));
    let start = dom[..at].rfind('<').unwrap();
    let tag: String = dom[start + 1..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    let tags = regex::Regex::new(&format!(r"<(/?){tag}[\s>]")).unwrap();
    let mut depth = 0usize;
    for m in tags.captures_iter(&dom[start..]) {
        if m[1].is_empty() {
            depth += 1;
        } else {
            depth -= 1;
            if depth == 0 {
                let end = start + m.get(0).unwrap().end();
                return &dom[start..end];
            }
        }
    }
    panic!("unclosed <{tag}> at {needle}")
}

/// The example built in the local store (where its programs can run) and
/// a trace of its server loading rocblas' kernels for gfx90a, as
/// tests/testsuite/trace.rs makes it.
fn traced_example() -> (String, PathBuf) {
    let root = nix_build(&repo().join("examples/rocm-mini/default.nix"), &[])
        .pop()
        .unwrap();
    let trace = scratch("report-trace").join("server-gfx90a.json");
    let server = format!("{root}/bin/llama-server");
    let o = heft_run_env(
        &[("ROCBLAS_GPU_TARGET", "gfx90a")],
        None,
        &["trace", "-o", trace.to_str().unwrap(), "--", &server],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("loaded gfx90a kernels"), "{}", o.stdout);
    (root, trace)
}

#[test]
fn a_traced_report_shows_the_holds_the_trace_used_and_the_traced_advice() {
    let (root, trace) = traced_example();
    let t = trace.to_str().unwrap();
    let page = out_dir().join("traced.html");
    let w = json(&heft_run(
        None,
        &[
            "--json",
            "report",
            &root,
            "--trace",
            t,
            "-o",
            page.to_str().unwrap(),
        ],
    ));
    assert_eq!(w["evidence"], "available");
    // The hold the loader used: the farm's symlink to gfx90a's kernel file,
    // as `refs --trace` sees it.
    let refs = json(&heft_run(
        None,
        &["--json", "refs", &root, "--evidence", "--trace", t],
    ));
    let edge = refs["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e["referrer"].as_str().unwrap().ends_with("-rocblas-5.7.1")
                && e["reference"]
                    .as_str()
                    .unwrap()
                    .ends_with("-rocblas-tensile-gfx90a-5.7.1")
        })
        .unwrap();
    assert_eq!(edge["traced"], "used");
    let used: Vec<&str> = edge["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["traced"] == "used")
        .map(|e| e["file"].as_str().unwrap())
        .collect();
    assert_eq!(used, ["lib/rocblas/library/TensileLibrary_gfx90a.dat"]);
    let tensile = edge["reference"].as_str().unwrap();
    let b = chromium(&format!("file://{}#click={tensile}", page.display()), None);
    assert_clean(&b);
    assert_eq!(by_id(&b.dom, "detail-path"), tensile);
    // Attributes escape ">" as "&gt;".
    let block = element(
        &b.dom,
        "data-edge",
        "rocblas-5.7.1&gt;rocblas-tensile-gfx90a-5.7.1",
    );
    assert!(block.contains("traced: used"), "edge not marked: {block}");
    let item = block
        .split(r#"<li class="ev">"#)
        .find(|li| li.contains(&format!("<code>{}</code>", used[0])))
        .unwrap_or_else(|| panic!("{} not shown: {block}", used[0]));
    assert!(
        item.contains(r#"data-traced="used">traced: used</span>"#),
        "{item}"
    );
    assert!(item.contains("used by the traced workload"), "{item}");
    assert!(by_id(&b.dom, "summary").contains(&format!("traced by {t}")));
    // The advice is advise's with the same trace: the partition keeps the
    // target the workload used.
    let advice = json(&heft_run(None, &["--json", "advise", &root, "--trace", t]));
    let key = |a: &Value| {
        (
            a["kind"].clone(),
            a["package"].clone(),
            a["safety"].clone(),
            a["saving"].clone(),
            a["snippet"].clone(),
        )
    };
    let data = page_data(&page);
    let on_page: Vec<_> = data["advice"].as_array().unwrap().iter().map(key).collect();
    let want: Vec<_> = advice["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(key)
        .collect();
    assert_eq!(on_page, want);
    let part = data["advice"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == "partition-targets")
        .expect("a partition");
    assert!(
        part["snippet"]
            .as_str()
            .unwrap()
            .contains("gpuTargets = [ \"gfx90a\" ]"),
        "{part}"
    );
    // Without --trace, nothing on the page says traced.
    let plain = out_dir().join("untraced.html");
    json(&heft_run(
        None,
        &["--json", "report", &root, "-o", plain.to_str().unwrap()],
    ));
    let b = chromium(&format!("file://{}#click={tensile}", plain.display()), None);
    assert_clean(&b);
    // (The DOM dump includes the page's script, so look for the markup.)
    assert!(!b.dom.contains(r#"<span class="traced""#));
    assert!(
        b.dom
            .contains(r#"data-edge="rocblas-5.7.1&gt;rocblas-tensile-gfx90a-5.7.1""#)
    );
    assert!(page_data(&plain).get("traces").is_none());
}

#[test]
fn a_diff_page_marks_exactly_the_added_paths_and_lists_the_removed() {
    let (before, after) = diff_fixture();
    let d = json(&heft_run(None, &["--json", "diff", before, after]));
    let set = |side: &str| -> BTreeMap<String, u64> {
        d[side]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["path"].as_str().unwrap().to_string(),
                    c["nar_size"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let (added, removed) = (set("added"), set("removed"));
    assert!(!added.is_empty() && !removed.is_empty());
    let page = out_dir().join("diff.html");
    let w = json(&heft_run(
        None,
        &[
            "--json",
            "report",
            "--diff",
            before,
            after,
            "-o",
            page.to_str().unwrap(),
        ],
    ));
    assert_eq!(w["added"].as_u64(), Some(added.len() as u64));
    assert_eq!(w["removed"].as_u64(), Some(removed.len() as u64));
    let closure = closure_set(after);
    assert_eq!(w["paths"].as_u64(), Some(closure.len() as u64));

    // The table: one row per path of AFTER's closure, marked added exactly
    // when `diff` lists it as added.
    let b = chromium(&format!("file://{}#view=table", page.display()), None);
    assert_clean(&b);
    let row =
        regex::Regex::new(r#"<tr tabindex="0" data-path="([^"]+)" data-change="(\w+)""#).unwrap();
    let rows: BTreeMap<String, String> = row
        .captures_iter(&b.dom)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect();
    assert_eq!(rows.keys().cloned().collect::<BTreeSet<_>>(), closure);
    // What came: app-1.0 rebuilt (BEFORE's root had its name), libbump
    // updated (1.0 → 1.1), the rest added.
    let kind_of = |p: &str| match nix_heft_format::store_path::name_of(p) {
        "app-1.0" => "rebuilt",
        "libbump-1.1" => "updated",
        _ => "added",
    };
    for (p, change) in &rows {
        let want = if added.contains_key(p) {
            kind_of(p)
        } else {
            "same"
        };
        assert_eq!(change, want, "{p}");
    }
    assert!(rows.values().any(|c| c == "rebuilt") && rows.values().any(|c| c == "updated"));
    assert!(!b.dom.contains(r#"id="tab-changes" aria-controls="view-changes" aria-selected="false" tabindex="-1" hidden"#));

    // The treemap: every drawn cell says whether it is new, in a label
    // (not only a colour) as well as in its data.
    let first = chromium(&format!("file://{}", page.display()), None);
    assert_clean(&first);
    let cell = regex::Regex::new(
        r#"<div role="button" tabindex="0" class="cell ([^"]*)" style="[^"]*" data-path="([^"]+)" data-added="\d+" data-change="(\w+)"[^>]*>(?:<span class="lbl">([^<]*)</span>)?"#,
    )
    .unwrap();
    let mut drawn_added = BTreeSet::new();
    for c in cell.captures_iter(&first.dom) {
        let (class, p, change) = (&c[1], &c[2], &c[3]);
        let label = c.get(4).map_or("", |m| m.as_str());
        if added.contains_key(p) {
            let want = kind_of(p);
            assert_eq!(change, want, "{p}");
            assert!(
                class.contains(&format!("pat-{want}")) && class.contains(&format!("is-{want}")),
                "{p}: {class}"
            );
            if !label.is_empty() {
                let sign = if want == "added" { "+ " } else { "↻ " };
                // The tag goes first when a cell is narrow, never the sign.
                assert!(
                    label.starts_with(sign)
                        && (label.ends_with(&format!("[{want}]")) || !label.contains('[')),
                    "{p}: {label}"
                );
            }
            drawn_added.insert(p.to_string());
        } else {
            assert_eq!(change, "same", "{p}");
            assert!(
                !label.starts_with("+ ") && !class.contains("is-added"),
                "{p}"
            );
        }
    }
    assert_eq!(
        drawn_added,
        added.keys().cloned().collect::<BTreeSet<_>>(),
        "every added path is drawn in this small closure"
    );
    // The legend names what left, with sizes.
    let legend = unescape(element(&first.dom, "data-legend", "removed"));
    assert!(
        legend.contains(&format!("{} paths", removed.len())),
        "{legend}"
    );
    for (p, s) in &removed {
        // app-1.0 left and came back rebuilt: its hash tells the two apart.
        let name = match nix_heft_format::store_path::name_of(p) {
            "app-1.0" => format!("app-1.0 ({})", &p[11..19]),
            n => n.to_string(),
        };
        assert!(
            legend.contains(&format!("{name} ({})", nix_heft_types::units::iec(*s))),
            "{legend}"
        );
    }

    // The Changes view: the added paths and every removed one with its
    // size, as `diff --json` gives them.
    let ch = chromium(&format!("file://{}#view=changes", page.display()), None);
    assert_clean(&ch);
    let item = regex::Regex::new(
        r#"<li data-change="(added|rebuilt|updated|removed)" data-path="([^"]+)" data-bytes="(\d+)">(.*?)</li>"#,
    )
    .unwrap();
    let mut listed: BTreeMap<&str, BTreeMap<String, u64>> = BTreeMap::new();
    for c in item.captures_iter(&ch.dom) {
        let bytes: u64 = c[3].parse().unwrap();
        assert!(
            c[4].contains(&nix_heft_types::units::iec(bytes)),
            "size not shown: {}",
            &c[4]
        );
        let side = if &c[1] == "removed" {
            "removed"
        } else {
            "added"
        };
        listed
            .entry(side)
            .or_default()
            .insert(c[2].to_string(), bytes);
    }
    assert_eq!(listed.get("added"), Some(&added));
    assert_eq!(listed.get("removed"), Some(&removed));
    // The dropped library says what held it before.
    let libold = ch
        .dom
        .split(r#"<li data-change="removed""#)
        .skip(1)
        .find(|li| li.contains("libold-1.0"))
        .unwrap();
    assert!(
        libold.contains("no longer references it (held before by share/app/deps"),
        "{libold}"
    );
    let summary = unescape(by_id(&ch.dom, "diff-summary"));
    assert!(
        summary.contains(&nix_heft_types::units::iec(
            d["closure_size_before"].as_u64().unwrap()
        )),
        "{summary}"
    );

    // BEFORE from a chroot store and AFTER from a binary cache: the same
    // comparison and the same paths, read from the NAR stream.
    let chroot = scratch("report-diff-before").join("store");
    run(nix()
        .args(["copy", "--no-check-sigs", "--to"])
        .arg(&chroot)
        .arg(before));
    let after_cache = scratch("report-diff-after").join("cache");
    let url = format!("file://{}", after_cache.display());
    run(nix().args(["copy", "--to", &signed_cache_url(&after_cache, ""), after]));
    let split = out_dir().join("diff-split.html");
    let o = heft_run(
        None,
        &[
            "report",
            "--diff",
            before,
            after,
            "--before-store",
            chroot.to_str().unwrap(),
            "--after-store",
            &url,
            "-o",
            split.to_str().unwrap(),
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let (local, mut other) = (page_data(&page), page_data(&split));
    assert_eq!(local["diff"], other["diff"]);
    // The same paths; only where they came from differs (the cache).
    for p in other["paths"].as_array_mut().unwrap() {
        let o = p.as_object_mut().unwrap().remove("o").unwrap();
        assert!(
            o.as_str().unwrap().contains("(signed by nix-heft-test-1)"),
            "{o}"
        );
    }
    assert_eq!(local["paths"], other["paths"]);
    assert_eq!(local["edges"], other["edges"]);
    assert_ne!(local["source"], other["source"]);

    // The command line: --diff takes two roots, and not beside ROOT.
    let o = heft_run(None, &["report", "--diff", before]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    let o = heft_run(None, &["report", after, "--diff", before, after]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    let o = heft_run(None, &["report", after, "--before-store", "/nix/store"]);
    assert_usage_error(&o, "--diff BEFORE AFTER");
    // A plain page has no Changes view.
    let o = heft_run(None, &["report", after, "-o", "-"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(!o.stdout.contains(r#""diff""#));
}

/// The page's "why it is here" is the chain `why` gives: the runtime chain
/// through clr → comgr, not the root's dead RUNPATH entry straight into
/// rocm-llvm, which is shorter (tests/fixtures/strongest-chain.nix).
#[test]
fn why_it_is_here_is_the_strongest_chain_not_the_shortest() {
    let built = nix_build(
        &repo().join("tests/fixtures/strongest-chain.nix"),
        &["app", "llvm", "clr", "comgr"],
    );
    let [app, llvm, clr, comgr] = [&built[0], &built[1], &built[2], &built[3]];
    let page = out_dir().join("strongest-chain.html");
    json(&heft_run(
        None,
        &["--json", "report", app, "-o", page.to_str().unwrap()],
    ));
    let b = chromium(&format!("file://{}#click={llvm}", page.display()), None);
    assert_clean(&b);
    assert_eq!(by_id(&b.dom, "detail-path"), llvm.as_str());
    let start = b.dom.find("id=\"detail-chain\"").expect("no chain shown");
    let end = start + b.dom[start..].find("</ol>").unwrap();
    let shown: Vec<&str> = regex::Regex::new(r#"data-select="([^"]+)""#)
        .unwrap()
        .captures_iter(&b.dom[start..end])
        .map(|c| c.get(1).unwrap().as_str())
        .collect();
    assert_eq!(shown, [app, clr, comgr, llvm]);
}

/// The Changes view says a path left with its referrer (the chain), as
/// `diff` does, rather than that a referrer which left too "no longer
/// references it" (tests/fixtures/diff-chain.nix).
#[test]
fn the_changes_view_says_a_path_left_with_its_referrer() {
    let p = nix_build(
        &repo().join("tests/fixtures/diff-chain.nix"),
        &["before", "after"],
    );
    let page = out_dir().join("diff-chain.html");
    json(&heft_run(
        None,
        &[
            "--json",
            "report",
            "--diff",
            &p[0],
            &p[1],
            "-o",
            page.to_str().unwrap(),
        ],
    ));
    let ch = chromium(&format!("file://{}#view=changes", page.display()), None);
    assert_clean(&ch);
    let removed = |name: &str| -> String {
        unescape(
            ch.dom
                .split(r#"<li data-change="removed""#)
                .skip(1)
                .find(|li| li.contains(&format!("-{name}\"")))
                .unwrap_or_else(|| panic!("{name} not listed"))
                .split("</li>")
                .next()
                .unwrap(),
        )
    };
    let comgr = removed("comgr-1.0");
    assert!(
        comgr.contains("left with clr-1.0 (top-1.0 → clr-1.0 → comgr-1.0)"),
        "{comgr}"
    );
    assert!(!comgr.contains("no longer references"), "{comgr}");
    let olddep = removed("olddep-1.0");
    // keeper-1.0 is in both closures, two builds: shown with its hash.
    assert!(
        regex::Regex::new(r"keeper-1\.0 \([0-9a-z]{8}\) no longer references it")
            .unwrap()
            .is_match(&olddep),
        "{olddep}"
    );
}

/// tests/fixtures/names.nix: two builds of one stack under the same names.
fn names_fixture() -> (String, String) {
    let p = nix_build(&repo().join("tests/fixtures/names.nix"), &["fat", "lean"]);
    (p[0].clone(), p[1].clone())
}

#[test]
fn labels_keep_the_target_and_the_root_is_shown_on_load() {
    let (fat, _) = names_fixture();
    let page = out_dir().join("names.html");
    json(&heft_run(
        None,
        &["--json", "report", &fat, "-o", page.to_str().unwrap()],
    ));
    // The twelve rocblas-tensile-gfx*-5.7.1 cells are too small for their
    // names and sizes.
    let b = chromium(&format!("file://{}", page.display()), None);
    assert_clean(&b);
    // Nothing asked for: the detail pane shows the root.
    assert_eq!(by_id(&b.dom, "detail-path"), fat);
    let target = regex::Regex::new(r"-(gfx[0-9a-z]+)-5\.7\.1$").unwrap();
    let mut shortened = 0;
    let mut labelled = 0;
    for (path, (_, label)) in cells(&b.dom) {
        let Some(t) = target.captures(&path) else {
            continue;
        };
        if label.is_empty() {
            continue;
        }
        labelled += 1;
        assert!(label.contains(&t[1]), "{path}: {label:?} lost its target");
        if label.contains('…') {
            shortened += 1;
        }
    }
    assert!(
        labelled >= 6,
        "{labelled} tensile cells labelled\n{}",
        b.dom
    );
    assert!(shortened > 0, "no tensile label shortened");
}

#[test]
fn a_diff_page_names_two_builds_of_one_name_apart_and_marks_rebuilt_paths() {
    let (fat, lean) = names_fixture();
    let page = out_dir().join("names-diff.html");
    json(&heft_run(
        None,
        &[
            "--json",
            "report",
            "--diff",
            &fat,
            &lean,
            "-o",
            page.to_str().unwrap(),
        ],
    ));
    let data = page_data(&page);
    let (hf, hl) = (&fat[11..19], &lean[11..19]);
    // The page's JSON names every path as the text reports do.
    let name_of = |p: &str| {
        data["paths"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["p"] == p)
            .map(|x| x["n"].as_str().unwrap().to_string())
    };
    assert_eq!(
        name_of(&lean).unwrap(),
        format!("llama-cpp-rocm-1710 ({hl})")
    );
    assert_eq!(
        data["diff"]["before_names"][0],
        format!("llama-cpp-rocm-1710 ({hf})")
    );
    let d = json(&heft_run(None, &["--json", "diff", &fat, &lean]));
    let rocblas_after = d["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .find(|p| p.ends_with("-rocblas-5.7.1"))
        .unwrap()
        .to_string();
    assert_eq!(
        name_of(&rocblas_after).unwrap(),
        format!("rocblas-5.7.1 ({})", &rocblas_after[11..19])
    );

    let ch = chromium(&format!("file://{}#view=changes", page.display()), None);
    assert_clean(&ch);
    assert_eq!(
        unescape(by_id(&ch.dom, "changes-heading")),
        format!("Changes since llama-cpp-rocm-1710 ({hf})")
    );
    // The map: rebuilt paths are "rebuilt", not "added".
    let first = chromium(&format!("file://{}", page.display()), None);
    assert_clean(&first);
    let cell = regex::Regex::new(
        r#"<div role="button" tabindex="0" class="cell ([^"]*)" style="[^"]*" data-path="([^"]+)" data-added="\d+" data-change="(\w+)"[^>]*>(?:<span class="lbl">([^<]*)</span>)?"#,
    )
    .unwrap();
    let mut changes = BTreeMap::new();
    for c in cell.captures_iter(&first.dom) {
        changes.insert(
            c[2].to_string(),
            (
                c[3].to_string(),
                c.get(4).map_or(String::new(), |m| unescape(m.as_str())),
            ),
        );
    }
    for p in [&lean, &rocblas_after] {
        let (change, label) = &changes[p.as_str()];
        assert_eq!(change, "rebuilt", "{p}");
        assert!(
            label.is_empty() || label.ends_with("[rebuilt]") || !label.contains('['),
            "{label}"
        );
    }
    assert!(!changes.values().any(|(c, _)| c == "added"), "{changes:?}");
    let legend = unescape(element(&first.dom, "data-legend", "rebuilt"));
    assert!(
        legend.contains("rebuilt: same name and version"),
        "{legend}"
    );
    // The summary names BEFORE with its hash too.
    assert!(
        unescape(by_id(&first.dom, "summary"))
            .contains(&format!("since llama-cpp-rocm-1710 ({hf})")),
        "{}",
        by_id(&first.dom, "summary")
    );
}

/// The page groups an edge's holds in the words every command uses (51
/// links of one target in one directory are one line, with their files and
/// bytes), then lists the first holds.
#[test]
fn an_edge_shows_its_holds_grouped_as_the_commands_do() {
    let (fat, _) = names_fixture();
    let page = out_dir().join("names-groups.html");
    json(&heft_run(
        None,
        &["--json", "report", &fat, "-o", page.to_str().unwrap()],
    ));
    let data = page_data(&page);
    let tensile = data["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["p"].as_str().unwrap().to_string())
        .find(|p| p.ends_with("-rocblas-tensile-gfx942-5.7.1"))
        .expect("no gfx942 path");
    let b = chromium(&format!("file://{}#click={tensile}", page.display()), None);
    assert_clean(&b);
    let groups: Vec<String> = regex::Regex::new(r#"<li class="ev-group">([^<]*)</li>"#)
        .unwrap()
        .captures_iter(&b.dom)
        .map(|c| unescape(&c[1]))
        .collect();
    assert!(
        groups
            .iter()
            .any(|g| g.starts_with("51 symlink holds in lib/rocblas/library/ (51 files, ")),
        "{groups:?}"
    );
    // The same words as `why`'s.
    let why = heft_run(None, &["why", &fat, &tensile]).stdout;
    let g = groups.iter().find(|g| g.starts_with("51 symlink")).unwrap();
    assert!(why.contains(g.as_str()), "{g}\n{why}");
}

/// `report --derivation`: the page is the build graph. Its paths are
/// `nix-store -qR` of the derivation, each derivation sized by its
/// outputs as `nix path-info` has them, the unbuilt one counted as 0 and
/// listed (in the JSON and on the rendered page), every edge's evidence
/// the input's entry in the `.drv` file, and no advice.
#[test]
fn a_build_graph_page_is_the_derivation_closure_sized_by_outputs() {
    let (drv, unbuilt_out) = unbuilt_over_example();
    let page = out_dir().join("derivation.html");
    let o = heft_run(
        None,
        &[
            "--json",
            "report",
            "--derivation",
            drv,
            "-o",
            page.to_str().unwrap(),
        ],
    );
    let w = json(&o);
    assert_eq!(w["unknown_outputs"], 1, "{w}");
    assert_eq!(w["evidence"], "available");
    assert_eq!(w["advice"], 0);
    let data = page_data(&page);
    let paths = data["paths"].as_array().unwrap();
    let got: BTreeSet<&str> = paths.iter().map(|p| p["p"].as_str().unwrap()).collect();
    let qr = run(Command::new("nix-store").args(["-qR", drv]));
    let want: BTreeSet<&str> = qr.lines().collect();
    assert_eq!(got, want);
    assert!(got.iter().filter(|p| p.ends_with(".drv")).count() > 10);
    for p in paths {
        let path = p["p"].as_str().unwrap();
        assert_eq!(p["s"].as_u64().unwrap(), build_graph_size(path), "{path}");
    }
    let root = &paths[data["roots"][0].as_u64().unwrap() as usize];
    assert_eq!(root["p"], drv.as_str());
    assert_eq!(root["s"], 0, "the unbuilt output is counted as 0");
    assert_eq!(
        data["build_graph"]["unknown_outputs"],
        serde_json::json!([{"derivation": drv, "outputs": [format!("out {unbuilt_out}")]}])
    );
    // Every edge out of a derivation is its `.drv` file's entry for the
    // input: read, with that evidence.
    let mut drv_edges = 0;
    for (i, p) in paths.iter().enumerate() {
        if !p["p"].as_str().unwrap().ends_with(".drv") {
            continue;
        }
        for to in p["r"].as_array().unwrap() {
            drv_edges += 1;
            let e = data["edges"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["from"] == i && e["to"] == *to)
                .unwrap_or_else(|| panic!("edge {i} → {to} not on the page"));
            assert!(
                e["evidence"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|x| x["k"] == "drv-input" && x["v"] == "build"),
                "{e}"
            );
        }
    }
    assert!(drv_edges > 10);
    assert_eq!(data["advice"].as_array().unwrap().len(), 0);
    // Rendered: the summary says it is the build graph and counts the
    // unknown; Problems lists the derivation; Advice says why there is none.
    let b = chromium(&format!("file://{}#view=problems", page.display()), None);
    assert_clean(&b);
    let summary = by_id(&b.dom, "summary");
    assert!(
        summary.starts_with("Build graph: 1 root, ")
            && summary.contains("1 derivation(s) with outputs of unknown size"),
        "{summary}"
    );
    let listed = element(&b.dom, "id", "unknown-outputs");
    assert!(
        listed.contains(drv.as_str()) && listed.contains(unbuilt_out.as_str()),
        "{listed}"
    );
    let b = chromium(&format!("file://{}#view=advice", page.display()), None);
    assert_clean(&b);
    assert!(
        b.dom.contains("No advice on the build graph"),
        "advice view"
    );
    // Text mode says what was written.
    let o = heft_run(
        None,
        &["report", "--derivation", drv, "-o", page.to_str().unwrap()],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout
            .contains("1 derivation(s) with outputs of unknown size"),
        "{}",
        o.stdout
    );
}

/// The "Copy why command" text of a page clicked on `target`: the command
/// and the chain the page shows (full paths, root first).
fn copied_why(page: &Path, target: &str) -> (String, Vec<String>) {
    let b = chromium(&format!("file://{}#click={target}", page.display()), None);
    assert_clean(&b);
    assert_eq!(by_id(&b.dom, "detail-path"), target);
    let cmd = regex::Regex::new(r#"<code[^>]*>(nix-heft [^<]*)</code>"#)
        .unwrap()
        .captures(&b.dom)
        .unwrap_or_else(|| panic!("no why command on the page"))[1]
        .to_string();
    let start = b.dom.find("id=\"detail-chain\"").expect("no chain shown");
    let end = start + b.dom[start..].find("</ol>").unwrap();
    let chain = regex::Regex::new(r#"data-select="([^"]+)""#)
        .unwrap()
        .captures_iter(&b.dom[start..end])
        .map(|c| c[1].to_string())
        .collect();
    (unescape(&cmd), chain)
}

/// Runs `cmd` as a shell runs copied text, from `/`, with the binary under
/// test first on PATH and no NIX_CONFIG (so what it trusts is what the
/// command says): exit code and output.
fn run_copied(cmd: &str) -> (i32, String, String) {
    let bin = assert_cmd::cargo::cargo_bin("nix-heft");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir("/")
        .env("PATH", path)
        .env_remove("NIX_CONFIG")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A chain of full paths as `why`'s text names it (`a → b → c`).
fn chain_line(chain: &[String]) -> String {
    chain
        .iter()
        .map(|p| &p["/nix/store/".len() + 33..])
        .collect::<Vec<_>>()
        .join(" → ")
}

/// The detail panel's "Copy why command" reproduces what the page shows:
/// copied and run through `sh -c` (from another directory, without the
/// environment's trusted keys) it succeeds and names the page's chain. A
/// page made over several stores, one given by a relative `file://` URL,
/// with the keys on the command line, copies every store (absolute) and
/// the keys; a build-graph page copies `--derivation`, and its chain is
/// the build one.
#[test]
fn the_copied_why_command_runs_and_names_the_page_chain() {
    let dir = scratch_dir("nix-heft-copied-why-");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("nix-cache-info"), "StoreDir: /nix/store\n").unwrap();
    let cache = format!("file://{}", example_cache().display());
    let root = example_root();
    let page = out_dir().join("copied-why.html");
    let out = heft_bare()
        .current_dir(&dir)
        .env_remove("NIX_CONFIG")
        .args([
            "--store",
            "file://empty",
            "--store",
            &cache,
            "--trusted-public-keys",
            &example_key(),
            "--json",
            "report",
            &root,
            "-o",
            page.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let data = page_data(&page);
    let target = data["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["p"].as_str().unwrap())
        .find(|p| p.ends_with("-rocblas-tensile-gfx90a-5.7.1"))
        .unwrap()
        .to_string();
    let (cmd, chain) = copied_why(&page, &target);
    assert!(chain.len() >= 3, "{chain:?}");
    assert!(
        cmd.contains(&format!("file://{}", empty.display())) && cmd.contains(&cache),
        "every store: {cmd}"
    );
    let (code, stdout, stderr) = run_copied(&cmd);
    assert_eq!(code, 0, "{cmd}\n{stderr}");
    assert!(
        stdout.contains(&format!("] {}\n", chain_line(&chain))),
        "{cmd}\n{stdout}"
    );

    // The build graph: the copied command reads it too.
    let (drv, _) = unbuilt_over_example();
    let page = out_dir().join("copied-why-derivation.html");
    json(&heft_run(
        None,
        &[
            "--json",
            "report",
            "--derivation",
            drv,
            "-o",
            page.to_str().unwrap(),
        ],
    ));
    let data = page_data(&page);
    let target = data["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["p"].as_str().unwrap())
        .find(|p| p.ends_with("-rocblas-5.7.1.drv"))
        .unwrap()
        .to_string();
    let (cmd, chain) = copied_why(&page, &target);
    assert!(cmd.contains("--derivation"), "{cmd}");
    let (code, stdout, stderr) = run_copied(&cmd);
    assert_eq!(code, 0, "{cmd}\n{stderr}");
    assert!(
        stdout.contains(&format!("[build] {}\n", chain_line(&chain))),
        "{cmd}\n{stdout}"
    );
}

/// The page's Changes view gives paths added for one reason through one
/// referrer one line, in `diff`'s words, with the paths listed under it
/// (tests/fixtures/story.nix: twelve tensile paths linked by rocblas).
#[test]
fn a_diff_page_gives_paths_added_together_one_line() {
    let (before, after) = story_fixture();
    let text = heft_run(None, &["diff", before, after]).stdout;
    let line = text
        .lines()
        .find(|l| l.contains("tensile-gfx* paths"))
        .unwrap_or_else(|| panic!("{text}"))
        .trim();
    let page = out_dir().join("story.html");
    let o = heft_run(
        None,
        &[
            "report",
            "--diff",
            before,
            after,
            "-o",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let ch = chromium(&format!("file://{}#view=changes", page.display()), None);
    assert_clean(&ch);
    let list = element(&ch.dom, "id", "added-list");
    let group = element(list, "data-group", "0");
    assert!(unescape(group).contains(line), "{line}\n{group}");
    // Its twelve paths are inside it, not lines of their own.
    let tensile = |s: &str| s.matches("-tensile-gfx").count();
    let members = group.matches("<li data-path=").count();
    assert_eq!(members, 12, "{group}");
    let outside = list.replace(group, "");
    assert_eq!(tensile(&outside), 0, "{outside}");
    // The rest are lines of their own: rocsparse, the three rebuilt.
    assert_eq!(outside.matches("<li data-change=").count(), 4, "{outside}");
}

/// The detail pane offers `why ROOT DEP` for a dependency only: a root
/// (selected on load) would give `why ROOT ROOT`, which answers nothing,
/// so it gets a hint instead; a dependency's command names the root and
/// the dependency, two paths.
#[test]
fn the_why_command_is_offered_for_a_dependency_only() {
    let (page, _cache, root) = example_page();
    let b = chromium(&format!("file://{}", page.display()), None);
    assert_clean(&b);
    assert_eq!(by_id(&b.dom, "detail-path"), root);
    assert!(
        !b.dom.contains(r#"id="detail-why""#),
        "a root's why command"
    );
    assert_eq!(b.dom.matches(">Copy why command</button>").count(), 0);
    assert_eq!(b.dom.matches(r#"id="detail-why-root""#).count(), 1);
    let data = page_data(&page);
    let dep = data["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["p"].as_str().unwrap())
        .find(|p| p.ends_with("-rocblas-5.7.1"))
        .unwrap()
        .to_string();
    let (cmd, chain) = copied_why(&page, &dep);
    let words: Vec<&str> = cmd.split(' ').collect();
    assert_eq!(words[words.len() - 2..], [chain[0].as_str(), dep.as_str()]);
    assert_ne!(chain[0], dep);
}

/// advise writes its reasons with code spans (`out`): the Advice view
/// shows them as code, never as raw backticks.
#[test]
fn advice_reasons_show_code_spans_as_code() {
    let (page, cache, root) = example_page();
    let advice = json(&heft_run(Some(&cache), &["--json", "advise", &root]));
    let b = chromium(&format!("file://{}#view=advice", page.display()), None);
    assert_clean(&b);
    let view = element(&b.dom, "id", "view-advice");
    let reasons: Vec<String> = regex::Regex::new(r#"<p class="reason">(.*?)</p>"#)
        .unwrap()
        .captures_iter(view)
        .map(|c| unescape(&c[1]))
        .collect();
    let actions = advice["actions"].as_array().unwrap();
    assert_eq!(reasons.len(), actions.len());
    let mut spans = 0;
    for (a, shown) in actions.iter().zip(&reasons) {
        let reason = a["reason"].as_str().unwrap();
        assert!(!shown.contains('`'), "raw backticks: {shown}");
        // The reason with each `span` as <code>span</code>.
        let mut want = String::new();
        for (k, part) in reason.split('`').enumerate() {
            if k % 2 == 1 {
                spans += 1;
                want.push_str(&format!("<code>{part}</code>"));
            } else {
                want.push_str(part);
            }
        }
        assert_eq!(shown, &want);
    }
    assert!(spans > 0, "no reason of the example has a code span");
}

/// Small treemap cells (an actionable path's is a few MiB: its label cut
/// to nothing telling) say their name and size on hover, and the paths
/// advice acts on are listed beside the map with `size`'s added bytes.
#[test]
fn small_cells_say_their_name_on_hover_and_actionable_paths_are_listed() {
    let (page, cache, root) = example_page();
    let sizes = json(&heft_run(Some(&cache), &["--json", "size", &root]));
    let advice = json(&heft_run(Some(&cache), &["--json", "advise", &root]));
    let added: BTreeMap<&str, u64> = sizes["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap(),
                p["added_size"].as_u64().unwrap(),
            )
        })
        .collect();
    let data = page_data(&page);
    let name_of: BTreeMap<&str, &str> = data["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["p"].as_str().unwrap(), p["n"].as_str().unwrap()))
        .collect();
    let b = chromium(&format!("file://{}", page.display()), None);
    assert_clean(&b);
    // The list: each package advice acts on, once, in advice's order.
    let mut want: Vec<&str> = Vec::new();
    for a in advice["actions"].as_array().unwrap() {
        let p = a["package"].as_str().unwrap();
        if !want.contains(&p) {
            want.push(p);
        }
    }
    assert!(!want.is_empty());
    let list = element(&b.dom, "id", "actionable-list");
    let listed: Vec<(String, u64)> =
        regex::Regex::new(r#"<li data-path="([^"]+)" data-bytes="(\d+)">"#)
            .unwrap()
            .captures_iter(list)
            .map(|c| (c[1].to_string(), c[2].parse().unwrap()))
            .collect();
    assert_eq!(
        listed.iter().map(|l| l.0.as_str()).collect::<Vec<_>>(),
        want
    );
    for (p, bytes) in &listed {
        assert_eq!(Some(bytes), added.get(p.as_str()), "{p}");
        assert!(list.contains(&nix_heft_types::units::iec(*bytes)), "{p}");
    }
    // The smallest drawn cell whose label does not hold its whole name.
    let drawn = cells(&b.dom);
    let (small, (bytes, label)) = drawn
        .iter()
        .filter(|(p, (_, l))| !l.contains(name_of[p.as_str()]))
        .min_by_key(|(_, (a, _))| *a)
        .expect("no cell with a cut label");
    let h = chromium(&format!("file://{}#hover={small}", page.display()), None);
    assert_clean(&h);
    let tip = element(&h.dom, "id", "map-tip");
    let open = &tip[..tip.find('>').unwrap()];
    assert!(!open.contains("hidden"), "tooltip hidden: {tip}");
    let text = unescape(&regex::Regex::new("<[^>]+>").unwrap().replace_all(tip, ""));
    assert!(
        text.starts_with(&format!(
            "{} {} added",
            name_of[small.as_str()],
            nix_heft_types::units::iec(*bytes)
        )),
        "{small} (label {label:?}): tooltip {text:?}"
    );
    assert_eq!(h.dom.matches(r#"aria-describedby="map-tip""#).count(), 1);
}
