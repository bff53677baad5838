//! `nix-heft history` (issue 42) on a repository of 200 commits made by
//! git and a signed binary cache that holds every tenth commit's outputs,
//! built by Nix (`common::history_fixture`): every closure read equals
//! `nix path-info -r`'s, the commits are git's, the jump is explained with
//! the file that holds the new path, each narinfo is asked for once, and
//! the user's checkout is left as it was.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use crate::common::history_fixture::{
    local_store_lock,
    BROKEN, COMMITS, CULPRIT, DECOY, HistoryFixture, date, history_fixture, subject,
};
use std::time::Duration;

use crate::common::cache_server::{CacheServer, Options};
use crate::common::{assert_usage_error, heft_run, heft_run_env, run, scratch_dir};
use crate::common::nix_output;

fn git(f: &HistoryFixture, args: &[&str]) -> String {
    run(Command::new("git").arg("-C").arg(&f.repo).args(args))
}

fn history_json(f: &HistoryFixture, extra: &[&str]) -> Value {
    history_json_from(f, &f.server.url(), &[], extra)
}

fn history_json_from(f: &HistoryFixture, url: &str, env: &[(&str, &str)], extra: &[&str]) -> Value {
    let repo = f.repo.display().to_string();
    let mut args = vec!["--json", "history", "app", "libcore", "--repo", &repo];
    args.extend(extra);
    let o = heft_run_env(env, Some(url), &args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap()
}

/// The number of each commit in the report, by hash.
fn numbers(f: &HistoryFixture, v: &Value) -> Vec<usize> {
    let by_hash: BTreeMap<&str, usize> = (1..=COMMITS).map(|n| (f.commit(n), n)).collect();
    v["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| by_hash[c["commit"].as_str().unwrap()])
        .collect()
}

#[test]
fn history_agrees_with_nix_and_explains_the_jump() {
    let f = history_fixture();
    let _store = local_store_lock().read().unwrap_or_else(|e| e.into_inner());
    let status_before = git(f, &["status", "--porcelain"]);
    let head_before = git(f, &["rev-parse", "HEAD"]);
    // A server of its own, and no narinfo cached on disk, so that every
    // request it logs is this run's.
    let mut opts = Options::new(&f.cache_dir);
    opts.latency = Duration::from_millis(20);
    let server = CacheServer::start(opts).expect("the cache server starts");
    let xdg = scratch_dir("nix-heft-test-history-xdg-");
    let xdg = xdg.display().to_string();
    // Its worktrees go to TMPDIR, and are gone when it is done.
    let tmp = scratch_dir("nix-heft-test-history-tmp-");
    let tmp_s = tmp.display().to_string();
    let range = format!("{}..{}", f.commit(1), f.commit(COMMITS));
    let v = history_json_from(
        f,
        &server.url(),
        &[("XDG_CACHE_HOME", &xdg), ("TMPDIR", &tmp_s)],
        &["--revs", &range, "--min-jump", "1MiB"],
    );
    let left: Vec<String> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
    // Nothing built or substituted: no output of the range is in the
    // local store (the fixture deleted them after filling the cache).
    for attrs in f.outputs.values() {
        for p in attrs.values().flat_map(|o| o.values()) {
            let valid = nix_output(Command::new("nix-store")
                .args(["-q", "--hash", p]))
                .status
                .success();
            assert!(!valid, "{p} is in the local store after history");
        }
    }

    // Every first-parent commit, oldest first, as git has them.
    assert_eq!(numbers(f, &v), (1..=COMMITS).collect::<Vec<_>>());
    assert_eq!(v["evaluations"], COMMITS);
    // Git's own committer dates, one line a commit, oldest first.
    let dates = git(f, &["log", "--first-parent", "--reverse", "--format=%cI"]);
    let dates: Vec<&str> = dates.lines().collect();
    assert_eq!(dates.len(), COMMITS);
    let mut last_app: Option<u64> = None;
    for (i, c) in v["commits"].as_array().unwrap().iter().enumerate() {
        let n = i + 1;
        assert_eq!(c["subject"], subject(n).as_str(), "c{n}");
        assert_eq!(c["date"], dates[i], "c{n}");
        let app = &c["attrs"]["app"];
        if BROKEN.contains(&n) {
            assert_eq!(app["status"], "eval-failed", "c{n}: {app}");
            assert!(app["error"].as_str().unwrap().contains("libcoreX"), "c{n}: {app}");
        } else if HistoryFixture::app_cached(n) {
            assert_eq!(app["status"], "read", "c{n}: {app}");
            let outs = &f.outputs[&n]["app"];
            assert_eq!(app["outputs"]["out"], outs["out"].as_str(), "c{n}");
            let expected = f.closure_size(&[&outs["out"]]);
            assert_eq!(app["closure_size"], expected, "c{n}: nix path-info -r says {expected}");
            // The change since the previous commit read.
            match last_app {
                Some(before) => assert_eq!(
                    app["delta"].as_i64().unwrap(),
                    expected as i64 - before as i64,
                    "c{n}"
                ),
                None => assert!(app.get("delta").is_none(), "c{n}: {app}"),
            }
            last_app = Some(expected);
        } else {
            assert_eq!(app["status"], "not-in-cache", "c{n}: {app}");
            assert_eq!(app["missing"], serde_json::json!(["out"]), "c{n}");
        }
        let lib = &c["attrs"]["libcore"];
        if n % 10 == 0 {
            // Both outputs together, as Hydra and `impact` count them.
            let outs = &f.outputs[&n]["libcore"];
            assert_eq!(lib["status"], "read", "c{n}: {lib}");
            assert_eq!(
                lib["closure_size"],
                f.closure_size(&[&outs["out"], &outs["dev"]]),
                "c{n}"
            );
        }
    }

    // One jump an attribute, across the culprit, explained by the path
    // that libcore's README now names. app is cached at 130 and 140;
    // libcore's out path, the same from 1 to 132 (cached at 130) and from
    // 137 on (cached at 140), is read at every commit that has one of
    // those: its jump is pinned to 132 → 137 (1.0.1 of 133-136 was never
    // built).
    let jumps = v["jumps"].as_array().unwrap();
    assert_eq!(jumps.len(), 2, "{jumps:#?}");
    for j in jumps {
        let (from, to) = match j["attr"].as_str().unwrap() {
            "libcore" => (DECOY - 1, CULPRIT),
            _ => (CULPRIT / 10 * 10, CULPRIT / 10 * 10 + 10),
        };
        assert_eq!(j["from"], f.commit(from), "{}", j["attr"]);
        assert_eq!(j["to"], f.commit(to), "{}", j["attr"]);
        assert!(j["delta"].as_i64().unwrap() > 3_000_000, "{j}");
        let row = &j["impact"]["attributes"][0];
        let first = &row["changes"][0];
        assert_eq!(first["package"], "bigdata", "{j:#}");
        assert_eq!(first["kind"], "new");
        let holds: Vec<&str> = first["holds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap())
            .collect();
        assert_eq!(holds, ["share/doc/libcore/README"], "{first:#}");
        assert!(
            first["referrer"].as_str().unwrap().contains("-libcore-1.0.1"),
            "{first:#}"
        );
        // The two commits' derivations compared: libcore's, once, with
        // bigdata's derivation added as an input.
        let causes = j["derivation"]["root_causes"].as_array().unwrap();
        let libcore: Vec<&Value> = causes
            .iter()
            .filter(|c| c["after"].as_str().unwrap().ends_with("-libcore-1.0.1.drv"))
            .collect();
        assert_eq!(libcore.len(), 1, "{causes:#?}");
        let added: Vec<&Value> = libcore[0]["changes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["kind"] == "input_added")
            .collect();
        assert_eq!(added.len(), 1, "{libcore:#?}");
        assert!(added[0]["path"].as_str().unwrap().ends_with("-bigdata-1.0.drv"));
    }
    // Each end of a jump instantiated once: app at c130 and c140, libcore
    // at c132 and c137.
    assert_eq!(v["instantiations"], 4);
    let attrs: Vec<&str> = jumps.iter().map(|j| j["attr"].as_str().unwrap()).collect();
    assert_eq!(attrs, ["libcore", "app"]);

    // Each narinfo asked for once for the whole range, found or not.
    let served = server.served();
    let mut narinfos: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &served {
        if s.path.ends_with(".narinfo") {
            *narinfos.entry(s.path.as_str()).or_insert(0) += 1;
        }
    }
    assert!(narinfos.len() > 40, "{narinfos:?}");
    let twice: Vec<_> = narinfos.iter().filter(|(_, c)| **c > 1).collect();
    assert!(twice.is_empty(), "asked more than once: {twice:?}");

    // The user's checkout: no change, no worktree left behind.
    assert_eq!(git(f, &["status", "--porcelain"]), status_before);
    assert_eq!(git(f, &["rev-parse", "HEAD"]), head_before);
    // Other tests' runs on the repository may have worktrees of their own
    // at this moment: this run's were in its TMPDIR.
    let worktrees = git(f, &["worktree", "list", "--porcelain"]);
    let ours: Vec<&str> = worktrees
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .filter(|p| p.starts_with(tmp_s.as_str()))
        .collect();
    assert!(ours.is_empty(), "left behind: {ours:?}");
    assert_eq!(
        worktrees
            .lines()
            .filter(|l| l.strip_prefix("worktree ") == Some(&*f.repo.to_string_lossy()))
            .count(),
        1,
        "{worktrees}"
    );
}

#[test]
fn history_reads_samples_dates_and_the_cached_list() {
    let f = history_fixture();
    let range = format!("{}..{}", f.commit(1), f.commit(COMMITS));

    // Twenty commits evenly spaced, both ends kept.
    let v = history_json(f, &["--revs", &range, "--samples", "20"]);
    let got = numbers(f, &v);
    assert_eq!(got.len(), 20);
    assert_eq!((got[0], got[19]), (1, COMMITS));
    assert!(got.windows(2).all(|w| (10..=11).contains(&(w[1] - w[0]))), "{got:?}");
    assert_eq!(v["commits_in_range"], COMMITS);
    assert_eq!(v["evaluations"], 20);

    // The commits a builder built: every one read but app where it does
    // not evaluate.
    let file = f.cached_file.display().to_string();
    let v = history_json(f, &["--revs-file", &file]);
    assert_eq!(numbers(f, &v), (1..=20).map(|i| i * 10).collect::<Vec<_>>());
    for c in v["commits"].as_array().unwrap() {
        assert_eq!(c["attrs"]["libcore"]["status"], "read", "{c}");
        let app = &c["attrs"]["app"]["status"];
        if c["commit"] == f.commit(90) {
            assert_eq!(app, "eval-failed");
        } else {
            assert_eq!(app, "read", "{c}");
        }
    }

    // Since a date, as git log reads it.
    let v = history_json(f, &["--since", &date(150)]);
    assert_eq!(numbers(f, &v), (150..=COMMITS).collect::<Vec<_>>());
}

#[test]
fn history_as_markdown_is_one_table_a_commit_a_row() {
    let f = history_fixture();
    let url = f.server.url();
    let repo = f.repo.display().to_string();
    let file = f.cached_file.display().to_string();
    let o = heft_run(
        Some(&url),
        &["history", "app", "--repo", &repo, "--revs-file", &file, "--format", "markdown", "--min-jump", "1MiB"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let html = crate::common::render_gfm(&o.stdout);
    assert_eq!(html.matches("<table>").count(), 1, "{html}");
    // The header and one row a cached commit.
    assert_eq!(html.matches("<tr>").count(), 21, "{html}");
    assert_eq!(html.matches("evaluation failed").count(), 1, "{html}");
    assert_eq!(html.matches("<strong>app</strong>").count(), 1, "the jump: {html}");
    // Each row's commit linked as the origin remote says (GitHub).
    for n in (1..=20).map(|i| i * 10) {
        let href = format!("<a href=\"https://github.com/example/pkgs/commit/{}\">", f.commit(n));
        assert_eq!(html.matches(&href).count(), 1, "c{n}: {html}");
    }
    // The jump explained: the file that holds bigdata, once (the
    // derivations' diff below it shows the builder's lines that write it).
    assert_eq!(
        html.matches("holds it in <code>share/doc/libcore/README</code>").count(),
        1,
        "{html}"
    );
    assert_eq!(html.matches("Why the derivations differ").count(), 1, "{html}");
}

#[test]
fn a_range_that_names_nothing_is_a_usage_error() {
    let f = history_fixture();
    let url = f.server.url();
    let repo = f.repo.display().to_string();
    let o = heft_run(Some(&url), &["history", "app", "--repo", &repo]);
    assert_usage_error(&o, "history needs one of --revs A..B, --since DATE or --revs-file FILE");
    let o = heft_run(Some(&url), &["history", "app", "--repo", &repo, "--revs", "nosuch..HEAD"]);
    assert_usage_error(&o, "no commit nosuch");
    let range = format!("{}..{}", f.commit(20), f.commit(10));
    let o = heft_run(Some(&url), &["history", "app", "--repo", &repo, "--revs", &range]);
    assert_usage_error(&o, "is not an ancestor of");
    let empty = crate::common::scratch_dir("nix-heft-test-history-empty-").join("revs");
    std::fs::write(&empty, "# nothing here\n\n").unwrap();
    let o = heft_run(
        Some(&url),
        &["history", "app", "--repo", &repo, "--revs-file", &empty.display().to_string()],
    );
    assert_usage_error(&o, "names no commit");
}

#[test]
fn history_page_links_each_point_to_its_commit() {
    let f = history_fixture();
    let url = f.server.url();
    let repo = f.repo.display().to_string();
    let file = f.cached_file.display().to_string();
    let dir = scratch_dir("nix-heft-test-history-page-");
    let page = dir.join("history.html");
    let page_s = page.display().to_string();
    let o = heft_run(
        Some(&url),
        &[
            "history", "app", "--repo", &repo, "--revs-file", &file, "--min-jump", "1MiB",
            "--html", &page_s,
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout.matches(&format!("wrote {page_s}")).count(), 1, "{}", o.stdout);
    let b = crate::report::chromium(&format!("file://{page_s}"), None);
    assert!(b.console.is_empty(), "{:?}", b.console);
    // One linked point a commit read (app is read at every listed commit
    // but 90, where it does not evaluate), linked as the origin remote
    // says (GitHub).
    for n in (1..=20).map(|i| i * 10) {
        let href = format!("href=\"https://github.com/example/pkgs/commit/{}\"", f.commit(n));
        // The chart's link carries its title as its label; the table's
        // and the jumps' do not.
        let in_chart = b.dom.matches(&format!("<a {href} aria-label=")).count();
        let expected = usize::from(HistoryFixture::app_cached(n));
        assert_eq!(in_chart, expected, "c{n}");
    }
    assert_eq!(b.dom.matches("<circle").count(), 19, "{}", b.dom);
    assert_eq!(b.dom.matches("class=\"failed\"").count(), 1);
    assert_eq!(b.dom.matches("class=\"point jump\"").count(), 1);
    // The jump explained, and a table row a commit.
    assert_eq!(b.dom.matches("holds it in share/doc/libcore/README").count(), 1);
    assert_eq!(b.dom.matches("class=\"derivation\"").count(), 1);
    assert_eq!(b.dom.matches("input derivation added: bigdata-1.0.drv").count(), 1);
    assert_eq!(b.dom.matches("<tr>").count(), 21);
}

/// `--file` and `--argstr` reach each commit's evaluation as they reach
/// `impact`'s: the tree's own file named, with the fixture's `system`
/// argument, reads what the default reads; another system's outputs are
/// other paths, which no store has.
#[test]
fn history_takes_the_file_and_arguments_of_each_commit() {
    let f = history_fixture();
    let system = crate::common::current_system();
    let file = f.cached_file.display().to_string();
    let base = history_json(f, &["--revs-file", &file]);
    let named = history_json(
        f,
        &["--revs-file", &file, "--file", "default.nix", "--argstr", "system", system],
    );
    let other = history_json(f, &["--revs-file", &file, "--argstr", "system", "other-system"]);
    let cells = |v: &Value, attr: &str| -> Vec<(String, Value)> {
        v["commits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let cell = &c["attrs"][attr];
                (cell["status"].as_str().unwrap().to_string(), cell["closure_size"].clone())
            })
            .collect()
    };
    for attr in ["app", "libcore"] {
        assert_eq!(cells(&named, attr), cells(&base, attr), "{attr}");
        let statuses: Vec<String> = cells(&other, attr).into_iter().map(|(s, _)| s).collect();
        let read = statuses.iter().filter(|s| *s == "read").count();
        assert_eq!(read, 0, "{attr}: {statuses:?}");
    }
    // app: 19 commits evaluate to outputs no store has, c090 fails.
    let app: Vec<String> = cells(&other, "app").into_iter().map(|(s, _)| s).collect();
    assert_eq!(app.iter().filter(|s| *s == "not-in-cache").count(), 19, "{app:?}");
    assert_eq!(cells(&base, "app").iter().filter(|(s, _)| s == "read").count(), 19);
}
