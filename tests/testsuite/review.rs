//! Review output of `diff` and `check`: grouped evidence (tests/fixtures/
//! farm.nix, 300 symlinks in one directory), markdown that GitHub accepts
//! (parsed here; ≤ 65,536 characters on a synthetic store in Nix's real
//! schema with thousands of changed paths, bench/gen_store.py), GitHub
//! workflow commands checked against their grammar, `GITHUB_STEP_SUMMARY`,
//! and the Action's script (scripts/action.sh) run with GitHub's files, and
//! action.yml through actionlint. The Action's helpers (`ActionRun`, the
//! markdown and annotation parsers) serve `action_impact.rs` too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common;
use crate::common::*;
use serde_json::Value;

const LIMIT: usize = 65_536;

/// farm.nix's (before, after).
fn farm() -> &'static (String, String) {
    static F: OnceLock<(String, String)> = OnceLock::new();
    F.get_or_init(|| {
        let mut p = nix_build(
            &repo().join("tests/fixtures/farm.nix"),
            &["before", "after"],
        );
        let after = p.pop().unwrap();
        let before = p.pop().unwrap();
        (before, after)
    })
}

/// A synthetic store with two system closures that differ in thousands of
/// paths: (store, before, after).
fn synthetic() -> &'static (String, String, String) {
    static S: OnceLock<(String, String, String)> = OnceLock::new();
    S.get_or_init(|| {
        let dir = repo().join("target/tmp/review-synthetic");
        if !dir.join("roots.txt").is_file() {
            run(Command::new("python3")
                .arg(repo().join("bench/gen_store.py"))
                .arg(&dir)
                .args(["--paths", "12000", "--seed", "3", "--force"]));
        }
        let roots = std::fs::read_to_string(dir.join("roots.txt")).unwrap();
        let sys: Vec<&str> = roots
            .lines()
            .filter(|l| l.contains("nixos-system"))
            .collect();
        assert!(sys.len() >= 2, "{roots}");
        (
            dir.display().to_string(),
            sys[0].to_string(),
            sys[1].to_string(),
        )
    })
}

fn tmp(name: &str) -> tempfile::TempDir {
    let base = repo().join("target/tmp");
    std::fs::create_dir_all(&base).unwrap();
    tempfile::Builder::new()
        .prefix(name)
        .tempdir_in(base)
        .unwrap()
}

/// What a markdown check found: headings, tables (rows, columns),
/// `<details>` opened.
#[derive(Debug, Default)]
pub(crate) struct Markdown {
    pub(crate) headings: Vec<String>,
    pub(crate) tables: Vec<(usize, usize)>,
    pub(crate) details: usize,
}

/// Parses the markdown the reports write, failing on what GitHub would
/// render wrongly: `<details>` and `<summary>` unbalanced or nested
/// wrongly, a table whose rows do not have the header's cell count or
/// whose separator is malformed, a code fence left open; and requires the
/// hidden marker first.
pub(crate) fn parse_markdown(md: &str) -> Markdown {
    let mut m = Markdown::default();
    let mut lines = md.lines().peekable();
    assert_eq!(
        lines.next(),
        Some("<!-- nix-heft -->"),
        "marker first:\n{md}"
    );
    let mut open_details = 0usize;
    let mut in_fence = false;
    // Cells of a row, `\|` not splitting.
    let cells = |l: &str| -> usize {
        let inner = l.trim().trim_start_matches('|').trim_end_matches('|');
        let mut n = 1;
        let mut esc = false;
        for c in inner.chars() {
            match c {
                '\\' if !esc => esc = true,
                '|' if !esc => n += 1,
                _ => esc = false,
            }
            if c != '\\' {
                esc = false;
            }
        }
        n
    };
    while let Some(l) = lines.next() {
        if l.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if let Some(h) = l.strip_prefix("### ") {
            m.headings.push(h.to_string());
        }
        let opens = l.matches("<details").count();
        let closes = l.matches("</details>").count();
        assert_eq!(
            l.matches("<summary>").count(),
            l.matches("</summary>").count(),
            "summary on one line: {l}"
        );
        if opens > 0 {
            assert!(l.contains("<summary>"), "details without summary: {l}");
        }
        m.details += opens;
        open_details += opens;
        assert!(open_details >= closes, "</details> before <details>: {l}");
        open_details -= closes;
        if l.starts_with('|') {
            let cols = cells(l);
            let sep = lines
                .next()
                .unwrap_or_else(|| panic!("table without separator: {l}"));
            assert_eq!(cells(sep), cols, "separator of {l}: {sep}");
            assert!(
                sep.split('|')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .all(|c| c.trim_matches(':').chars().all(|x| x == '-') && c.contains('-')),
                "bad separator {sep}"
            );
            let mut rows = 0;
            while lines.peek().is_some_and(|r| r.starts_with('|')) {
                let r = lines.next().unwrap();
                assert_eq!(cells(r), cols, "row of a {cols}-column table: {r}");
                rows += 1;
            }
            m.tables.push((rows, cols));
        }
    }
    assert!(!in_fence, "code fence left open");
    assert_eq!(open_details, 0, "unclosed <details>");
    m
}

/// Checks GitHub workflow commands: every line
/// `::error|warning|notice PROPS::DATA`, properties `key=value` with keys
/// GitHub knows and values escaped (no raw `:`, `,`, CR, LF; `%` only in
/// `%25 %0D %0A %3A %2C`), data escaped likewise for `%`, CR, LF. Returns
/// each annotation's level, properties (decoded) and message lines.
pub(crate) fn parse_github(out: &str) -> Vec<(String, BTreeMap<String, String>, Vec<String>)> {
    let decode = |s: &str, prop: bool| -> String {
        let mut r = String::new();
        let mut rest = s;
        while let Some(i) = rest.find('%') {
            r.push_str(&rest[..i]);
            let code = rest
                .get(i..i + 3)
                .unwrap_or_else(|| panic!("bare % in {s}"));
            r.push(match code {
                "%25" => '%',
                "%0D" => '\r',
                "%0A" => '\n',
                "%3A" if prop => ':',
                "%2C" if prop => ',',
                _ => panic!("bad escape {code} in {s}"),
            });
            rest = &rest[i + 3..];
        }
        r.push_str(rest);
        r
    };
    let mut all = Vec::new();
    for l in out.lines() {
        assert!(!l.contains('\r'), "raw CR: {l:?}");
        let rest = l
            .strip_prefix("::")
            .unwrap_or_else(|| panic!("not a command: {l}"));
        let (head, data) = rest
            .split_once("::")
            .unwrap_or_else(|| panic!("no data: {l}"));
        let (level, props) = head.split_once(' ').unwrap_or((head, ""));
        assert!(
            ["error", "warning", "notice"].contains(&level),
            "level {level}: {l}"
        );
        let mut map = BTreeMap::new();
        for p in props.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = p
                .split_once('=')
                .unwrap_or_else(|| panic!("property {p}: {l}"));
            assert!(
                ["title", "file", "line", "endLine", "col", "endColumn"].contains(&k),
                "unknown property {k}: {l}"
            );
            assert!(!v.contains(':'), "raw : in {k}: {l}");
            map.insert(k.to_string(), decode(v, true));
        }
        if let Some(n) = map.get("line") {
            assert!(n.parse::<u64>().is_ok_and(|n| n > 0), "line={n}");
        }
        let msg = decode(data, false);
        all.push((
            level.to_string(),
            map,
            msg.lines().map(str::to_string).collect(),
        ));
    }
    all
}

#[test]
fn diff_groups_a_symlink_farm_in_every_format() {
    let (before, after) = farm();
    let o = heft_run(None, &["diff", before, after]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // One line says it, with counts, bytes and examples; no flood.
    let line = o
        .stdout
        .lines()
        .find(|l| l.contains("kernels-1.0 (+"))
        .unwrap_or_else(|| panic!("{}", o.stdout));
    // The bytes the 300 links hold: their targets' lengths, as Nix stored
    // them.
    let farm_dir = Path::new(after).join("lib/farm");
    let bytes: u64 = std::fs::read_dir(&farm_dir)
        .unwrap()
        .map(|e| {
            std::fs::read_link(e.unwrap().path())
                .unwrap()
                .as_os_str()
                .len() as u64
        })
        .sum();
    assert!(
        line.contains("300 symlink holds in lib/farm/ (300 files, "),
        "{line}"
    );
    assert!(line.contains("runtime; e.g. k"), "{line}");
    assert!(line.contains("share/readme (text, runtime)"), "{line}");
    assert!(line.len() < 400, "{line}");
    // JSON: every hold, and the groups with the byte total.
    let j: Value =
        serde_json::from_str(&heft_run(None, &["--json", "diff", before, after]).stdout).unwrap();
    let k = j["added"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"].as_str().unwrap().ends_with("-kernels-1.0"))
        .unwrap();
    assert_eq!(k["why"]["evidence"].as_array().unwrap().len(), 301);
    let g = &k["why"]["groups"][0];
    assert_eq!(g["kind"], "symlink");
    assert_eq!(g["dir"], "lib/farm");
    assert_eq!(g["holds"], 300);
    assert_eq!(g["bytes"], bytes);
    assert_eq!(g["examples"].as_array().unwrap().len(), 3);
    // --evidence: every hold listed.
    let all = heft_run(None, &["diff", "--evidence", before, after]);
    let links = all
        .stdout
        .lines()
        .filter(|l| l.contains("symlink @"))
        .count();
    assert_eq!(links, 300, "{}", all.stdout);
    // markdown and github say the same group.
    let md = heft_run(None, &["diff", "--format", "markdown", before, after]).stdout;
    parse_markdown(&md);
    assert!(
        md.contains("300 symlink holds in `lib/farm/` (300 files, "),
        "{md}"
    );
    let gh = heft_run(None, &["diff", "--format", "github", before, after]).stdout;
    let anns = parse_github(&gh);
    assert!(
        anns.iter().any(|(_, _, m)| m
            .iter()
            .any(|l| l.contains("300 symlink holds in lib/farm/"))),
        "{gh}"
    );
}

#[test]
fn diff_markdown_fits_a_comment_with_thousands_of_changed_paths() {
    let (store, before, after) = synthetic();
    let j: Value =
        serde_json::from_str(&heft_run(Some(store), &["--json", "diff", before, after]).stdout)
            .unwrap();
    let (added, removed) = (
        j["added"].as_array().unwrap().len(),
        j["removed"].as_array().unwrap().len(),
    );
    assert!(added + removed > 2000, "{added} + {removed}");
    let o = heft_run(
        Some(store),
        &["diff", "--format", "markdown", before, after],
    );
    // Exit 3: a metadata-only store has no files for the evidence.
    assert_eq!(o.code, 3, "{}", o.stderr);
    let md = &o.stdout;
    assert!(
        md.chars().count() <= LIMIT,
        "{} characters",
        md.chars().count()
    );
    let m = parse_markdown(md);
    assert!(
        m.headings[0].starts_with("nix-heft diff: closure "),
        "{:?}",
        m.headings
    );
    // Paths that replace others (rebuilt, another version) are counted
    // apart from what is new and what left.
    let replacing = |side: &str| {
        j[side]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["why"].get("renamed").is_some())
            .count()
    };
    let changed = replacing("added");
    assert!(changed > 0);
    assert!(
        m.headings[0].contains(&format!(
            "{} paths added, {changed} changed, {} removed",
            added - changed,
            removed - replacing("removed")
        )),
        "{:?}",
        m.headings
    );
    // The packages table, and the added and removed lists in <details>.
    assert!(
        m.tables.iter().any(|&(rows, cols)| rows > 10 && cols == 3),
        "{m:?}"
    );
    assert!(m.details >= 3, "{m:?}");
    // What was cut, and how to see all of it.
    assert!(md.contains("✂️ Cut to fit GitHub's"), "{md}");
    assert!(
        regex::Regex::new(r"\d+ of \d+ added paths")
            .unwrap()
            .is_match(&md[md.len() - 600..]),
        "{}",
        &md[md.len() - 600..]
    );
    assert!(md.contains("nix-heft diff --format text"), "{md}");
    // Sorted by size impact.
    let deltas: Vec<u128> = j["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["size_delta"].as_i64().unwrap().unsigned_abs() as u128)
        .collect();
    let first_row = md
        .lines()
        .find(|l| l.starts_with("| ") && !l.starts_with("| package") && !l.starts_with("| ---"))
        .unwrap();
    let biggest = j["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            p["size_delta"].as_i64().unwrap().unsigned_abs() as u128
                == *deltas.iter().max().unwrap()
        })
        .unwrap();
    assert!(
        first_row.starts_with(&format!(
            "| {} |",
            biggest["name"].as_str().unwrap().replace('_', "\\_")
        )),
        "{first_row} vs {biggest}"
    );
    // A smaller limit holds too.
    let small = heft_run(
        Some(store),
        &[
            "diff",
            "--format",
            "markdown",
            "--markdown-limit",
            "5000",
            before,
            after,
        ],
    );
    assert!(
        small.stdout.chars().count() <= 5000,
        "{}",
        small.stdout.len()
    );
    parse_markdown(&small.stdout);

    // GITHUB_STEP_SUMMARY: the same markdown appended after what the file
    // held; stdout keeps the format asked for.
    let d = tmp("summary");
    let summary = d.path().join("summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    let gh = heft_run_env(
        &[("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())],
        Some(store),
        &["diff", "--format", "github", before, after],
    );
    let anns = parse_github(&gh.stdout);
    // A few annotations, each a few lines.
    assert!(anns.len() <= 11, "{}", anns.len());
    assert!(
        anns.iter()
            .all(|(_, p, m)| p.contains_key("title") && m.len() <= 11)
    );
    assert_eq!(anns[0].0, "notice");
    let written = std::fs::read_to_string(&summary).unwrap();
    assert_eq!(written, format!("earlier step\n{md}\n"));

    // check's growth rule over the same pair lists every added path: its
    // markdown is cut the same way, its annotation stays a few lines.
    let rules = ["check", after, "--against", before, "--max-growth", "1%"];
    let md = heft_run(
        Some(store),
        &[&rules[..], &["--format", "markdown"]].concat(),
    );
    assert_eq!(md.code, 4, "{}", md.stderr);
    assert!(md.stdout.chars().count() <= LIMIT, "{}", md.stdout.len());
    let m = parse_markdown(&md.stdout);
    assert!(
        m.headings[0].starts_with("nix-heft check: ❌ 1 violation"),
        "{m:?}"
    );
    assert!(
        md.stdout.contains("lines explaining violation 1"),
        "{}",
        &md.stdout[..2000]
    );
    assert!(
        md.stdout.contains("⚠️ partial read: "),
        "{}",
        &md.stdout[..2000]
    );
    let gh = heft_run(Some(store), &[&rules[..], &["--format", "github"]].concat());
    let anns = parse_github(&gh.stdout);
    assert_eq!(
        anns.iter().filter(|a| a.0 == "error").count(),
        1,
        "{}",
        gh.stdout
    );
    assert!(
        anns.iter()
            .all(|(_, p, m)| p.contains_key("title") && m.len() <= 11)
    );
    assert!(gh.stdout.len() < 8000, "{}", gh.stdout.len());
}

#[test]
fn check_github_and_markdown_point_at_the_nix_file() {
    let (_, after) = farm();
    let args = [
        "check",
        after.as_str(),
        "--forbid",
        "kernels*",
        "--max-closure",
        "1KiB",
        "--nix-file",
        "pkgs/farm app/default.nix:7",
        "--format",
        "github",
    ];
    let o = heft_run(None, &args);
    assert_eq!(o.code, 4, "{}", o.stderr);
    let anns = parse_github(&o.stdout);
    assert_eq!(anns.len(), 2, "{}", o.stdout);
    for (level, props, msg) in &anns {
        assert_eq!(level, "error");
        assert_eq!(props["file"], "pkgs/farm app/default.nix");
        assert_eq!(props["line"], "7");
        assert!(props["title"].starts_with("nix-heft check: "), "{props:?}");
        assert!(msg.len() <= 11, "{msg:?}");
        assert!(msg.iter().all(|l| l.chars().count() <= 300), "{msg:?}");
    }
    assert!(
        anns.iter().any(|(_, _, m)| m
            .iter()
            .any(|l| l.contains("300 symlink holds in lib/farm/"))),
        "{}",
        o.stdout
    );
    // JSON: every hold and the groups; text: grouped, or every hold with
    // --evidence.
    let j: Value = serde_json::from_str(
        &heft_run(None, &["--json", "check", after, "--forbid", "kernels*"]).stdout,
    )
    .unwrap();
    let edge = &j["violations"][0]["evidence"][0];
    assert_eq!(edge["evidence"].as_array().unwrap().len(), 301, "{edge}");
    assert_eq!(edge["groups"][0]["holds"], 300, "{edge}");
    let text = heft_run(None, &["check", after, "--forbid", "kernels*"]).stdout;
    assert!(text.contains("300 symlink holds in lib/farm/"), "{text}");
    assert!(text.lines().all(|l| l.len() < 400), "{text}");
    let all = heft_run(
        None,
        &["check", after, "--forbid", "kernels*", "--evidence"],
    )
    .stdout;
    assert_eq!(
        all.lines().filter(|l| l.contains("symlink @")).count(),
        300,
        "{all}"
    );
    // A bad --nix-file is a usage error before any store is read.
    let bad = heft_run(
        None,
        &["check", after, "--forbid", "x", "--nix-file", "a.nix:0"],
    );
    assert_usage_error(&bad, "--nix-file");
    let bad = heft_run(None, &["diff", after, after, "--markdown-limit", "100"]);
    assert_usage_error(&bad, "--markdown-limit 100");

    let md = heft_run(
        None,
        &[
            "check",
            after,
            "--forbid",
            "kernels*",
            "--format",
            "markdown",
            "--markdown-limit",
            "1800",
        ],
    )
    .stdout;
    assert!(md.chars().count() <= 1800, "{}", md.len());
    let m = parse_markdown(&md);
    assert!(m.headings[0].contains("1 violation"), "{md}");
}

#[test]
fn action_script_runs_with_github_files() {
    let (before, after) = farm();
    let d = tmp("action");
    let files: Vec<PathBuf> = ["summary.md", "output", "env"]
        .iter()
        .map(|f| d.path().join(f))
        .collect();
    std::fs::write(&files[0], "").unwrap();
    let heft = assert_cmd::cargo::cargo_bin("nix-heft");
    let script = repo().join("scripts/action.sh");
    let path = format!(
        "{}:{}",
        heft.parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    let github = |c: &mut Command| {
        c.env("GITHUB_STEP_SUMMARY", &files[0])
            .env("GITHUB_OUTPUT", &files[1])
            .env("GITHUB_ENV", &files[2])
            .env("RUNNER_TEMP", d.path())
            .env("PATH", &path);
    };
    // install, from PATH: NIX_HEFT for the next steps.
    let mut c = Command::new("bash");
    c.arg(&script).arg("install").env("INPUT_INSTALL", "path");
    github(&mut c);
    run(&mut c);
    let env = std::fs::read_to_string(&files[2]).unwrap();
    let bin = github_value(&env, "NIX_HEFT");
    assert_eq!(Path::new(&bin), heft);

    let mut c = Command::new("bash");
    c.arg(&script)
        .arg("run")
        .env("NIX_HEFT", &bin)
        .env("INPUT_BEFORE", before)
        .env("INPUT_AFTER", after)
        .env("INPUT_FORBID", "kernels*\n*-dev\n")
        .env("INPUT_MAX_GROWTH", "1MiB")
        .env("INPUT_NIX_FILE", "farm.nix:21");
    github(&mut c);
    let out = run(&mut c);
    // Annotations on stdout, for the runner: check's error, diff's notices.
    let anns = parse_github(&out);
    assert!(
        anns.iter()
            .any(|(l, p, _)| l == "error" && p["file"] == "farm.nix"),
        "{out}"
    );
    assert!(
        anns.iter()
            .any(|(l, p, _)| l == "notice" && p["title"] == "nix-heft diff"),
        "{out}"
    );
    let outputs = std::fs::read_to_string(&files[1]).unwrap();
    assert_eq!(github_value(&outputs, "check-exit"), "4");
    assert_eq!(github_value(&outputs, "diff-exit"), "0");
    let report = std::fs::read_to_string(github_value(&outputs, "report")).unwrap();
    assert!(report.chars().count() <= LIMIT);
    // One marker, both reports.
    assert_eq!(report.matches("<!-- nix-heft -->").count(), 1, "{report}");
    let m = parse_markdown(&report);
    assert_eq!(m.headings.len(), 2, "{:?}", m.headings);
    assert!(
        m.headings[0].starts_with("nix-heft check: ❌"),
        "{:?}",
        m.headings
    );
    assert!(
        m.headings[1].starts_with("nix-heft diff: closure "),
        "{:?}",
        m.headings
    );
    assert_eq!(std::fs::read_to_string(&files[0]).unwrap(), report);

    // Nothing to do is an error, said as an annotation.
    let mut c = Command::new("bash");
    c.arg(&script)
        .arg("run")
        .env("NIX_HEFT", &bin)
        .env("INPUT_AFTER", after);
    github(&mut c);
    let o = c.output().unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .starts_with("::error title=nix-heft action::nothing to do")
    );
}

/// Third-party actions are pinned by commit wherever a token that can
/// write reaches them: every `uses:` of a workflow or action whose token
/// may write, except GitHub's own (`actions/…`); nix-heft itself too in a
/// workflow (its placeholder commit, the zeros, for the user's).
fn assert_pinned(text: &str, file: &Path) {
    let writes = text.contains(": write") || file.ends_with("action.yml");
    for l in text.lines() {
        let Some(u) = l.trim().trim_start_matches("- ").strip_prefix("uses: ") else {
            continue;
        };
        if !writes || u.starts_with("actions/") {
            continue;
        }
        let at = u.split_once('@').map(|(_, r)| r).unwrap_or("");
        let sha = at.split_whitespace().next().unwrap_or("");
        assert!(
            sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
            "{}: {l} is not pinned by commit",
            file.display()
        );
    }
}

/// A value from a GitHub file in `KEY<<DELIM` form.
fn github_value(file: &str, key: &str) -> String {
    let mut lines = file.lines();
    while let Some(l) = lines.next() {
        if let Some(delim) = l.strip_prefix(&format!("{key}<<")) {
            let v: Vec<&str> = lines.by_ref().take_while(|x| *x != delim).collect();
            return v.join("\n");
        }
    }
    panic!("no {key} in {file}")
}

/// action.yml and the example workflows through actionlint, and
/// scripts/action.sh through shellcheck (scripts/test.sh installs both): the examples use the action as `./`, so actionlint reads
/// action.yml and checks their inputs against it; an input it does not
/// define must be caught.
#[test]
fn action_yml_passes_actionlint() {
    let lint = |dir: &Path| {
        Command::new("actionlint")
            .current_dir(dir)
            .output()
            .expect("actionlint is not installed (scripts/test.sh installs it from PyPI)")
    };
    let d = tmp("actionlint");
    let root = d.path();
    std::fs::create_dir_all(root.join(".github/workflows")).unwrap();
    std::fs::create_dir_all(root.join("scripts")).unwrap();
    std::fs::copy(repo().join("action.yml"), root.join("action.yml")).unwrap();
    let action = repo().join("action.yml");
    assert_pinned(&std::fs::read_to_string(&action).unwrap(), &action);
    std::fs::copy(
        repo().join("scripts/action.sh"),
        root.join("scripts/action.sh"),
    )
    .unwrap();
    let examples = repo().join("examples/workflows");
    let guide = std::fs::read_to_string(repo().join("docs/guide/review-and-ci.md")).unwrap();
    let mut n = 0;
    for e in std::fs::read_dir(&examples).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains("uses: OWNER/nix-heft@"), "{}", p.display());
        assert_pinned(&text, &p);
        // The guide (Review and CI) shows each example as it is.
        assert!(
            guide.contains(&format!("```yaml\n{text}```")),
            "docs/guide/review-and-ci.md does not show {} as it is",
            p.display()
        );
        let local: String = text
            .lines()
            .map(|l| match l.split_once("uses: OWNER/nix-heft@") {
                Some((indent, _)) => format!("{indent}uses: ./\n"),
                None => format!("{l}\n"),
            })
            .collect();
        std::fs::write(
            root.join(".github/workflows").join(p.file_name().unwrap()),
            local,
        )
        .unwrap();
        n += 1;
    }
    assert_eq!(n, 4);
    // The script the Action runs, through shellcheck (actionlint runs it on
    // the `run:` steps when it is on PATH; here it must be).
    let sc = Command::new("shellcheck")
        .arg(repo().join("scripts/action.sh"))
        .output()
        .expect("shellcheck is not installed (scripts/test.sh installs it)");
    assert!(
        sc.status.success(),
        "{}",
        String::from_utf8_lossy(&sc.stdout)
    );
    run(Command::new("git").arg("init").arg("-q").arg(root));
    let o = lint(root);
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    // The linter reads action.yml: an undefined input fails.
    let wf = root.join(".github/workflows/flake.yml");
    let text = std::fs::read_to_string(&wf).unwrap();
    std::fs::write(
        &wf,
        text.replace("install: nix", "install: nix\n          no-such-input: x"),
    )
    .unwrap();
    let o = lint(root);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("no-such-input"));
}

/// The GitHub files of one Action run, in a workspace directory of its
/// own (the runner's checkout, where globs would match files).
pub(crate) struct ActionRun {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) summary: PathBuf,
    pub(crate) output: PathBuf,
    pub(crate) env: PathBuf,
}

impl ActionRun {
    pub(crate) fn new(name: &str) -> ActionRun {
        let dir = tmp(name);
        let (summary, output, env) = (
            dir.path().join("summary.md"),
            dir.path().join("output"),
            dir.path().join("env"),
        );
        std::fs::write(&summary, "").unwrap();
        ActionRun {
            dir,
            summary,
            output,
            env,
        }
    }

    /// `scripts/action.sh STEP` with GitHub's files, the workspace as the
    /// working directory, the test's nix-heft on PATH and `inputs`.
    pub(crate) fn step(&self, step: &str, inputs: &[(&str, &str)]) -> std::process::Output {
        self.step_in(self.dir.path(), step, inputs)
    }

    /// [`ActionRun::step`] with `cwd` as the working directory (a checkout
    /// of the repository under review, as actions/checkout leaves it).
    pub(crate) fn step_in(
        &self,
        cwd: &Path,
        step: &str,
        inputs: &[(&str, &str)],
    ) -> std::process::Output {
        let heft = assert_cmd::cargo::cargo_bin("nix-heft");
        let path = format!(
            "{}:{}",
            heft.parent().unwrap().display(),
            std::env::var("PATH").unwrap()
        );
        let mut c = Command::new("bash");
        c.arg(repo().join("scripts/action.sh"))
            .arg(step)
            .current_dir(cwd)
            .env("GITHUB_STEP_SUMMARY", &self.summary)
            .env("GITHUB_OUTPUT", &self.output)
            .env("GITHUB_ENV", &self.env)
            .env("RUNNER_TEMP", self.dir.path())
            .env("PATH", &path)
            .env("NIX_HEFT", &heft)
            .envs(inputs.iter().copied());
        // The steps that start a writer of the system store (`install:
        // nix`'s `nix build`, impact's `build: true` nix-build) run under
        // the lock the tests' own Nix processes take; the others start
        // only nix-heft, whose evaluations write nothing there.
        let writes = inputs.iter().any(|&(k, v)| {
            (k == "INPUT_BUILD" && v == "true") || (k == "INPUT_INSTALL" && v == "nix")
        });
        let _nix = writes.then(crate::common::system_store_lock);
        c.output().unwrap()
    }

    /// A value the last steps wrote to `$GITHUB_OUTPUT` (the last one
    /// written under `key`).
    pub(crate) fn output(&self, key: &str) -> String {
        let text = std::fs::read_to_string(&self.output).unwrap_or_default();
        let mut last = None;
        let mut lines = text.lines();
        while let Some(l) = lines.next() {
            if let Some(delim) = l.strip_prefix(&format!("{key}<<")) {
                let v: Vec<&str> = lines.by_ref().take_while(|x| *x != delim).collect();
                last = Some(v.join("\n"));
            }
        }
        last.unwrap_or_else(|| panic!("no {key} in {text}"))
    }
}

/// The `::error` annotations a failed step printed: exactly one, with
/// nix-heft action's title; its message unescaped.
pub(crate) fn one_action_error(o: &std::process::Output) -> String {
    assert!(!o.status.success(), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    let anns = parse_github(&out);
    let errors: Vec<_> = anns.iter().filter(|(l, _, _)| l == "error").collect();
    assert_eq!(errors.len(), 1, "{out}");
    assert_eq!(errors[0].1["title"], "nix-heft action", "{out}");
    errors[0].2.join("\n")
}

/// Issue 30's first wrong answer: `forbid: *-dev` after `nix-build -o
/// after` (which leaves an `after-dev` link) reached nix-heft as
/// `--forbid after-dev`, and a broken rule read as "every rule holds".
/// Every list input now arrives line by line, never a shell pattern,
/// whatever characters it holds.
#[test]
fn action_inputs_reach_nix_heft_as_written() {
    let (_, after) = farm();
    let a = ActionRun::new("action-glob");
    let ws = a.dir.path();
    // The workspace has files each glob would match, and a result link
    // whose name has a blank.
    for f in [
        "kernels-1.0-link",
        "kernelsX",
        "k",
        "after-dev",
        "farmapp-link",
    ] {
        std::fs::write(ws.join(f), "").unwrap();
    }
    std::os::unix::fs::symlink(after, ws.join("my result")).unwrap();
    let globs = [
        "kernels*",
        "kernel?-1.0",
        "[k]ernels-*",
        "no such thing",
        "$HOME*",
        "-dev*",
    ];
    let forbid = format!("  {}\n\n", globs.join("\n  "));
    let o = a.step(
        "run",
        &[
            ("INPUT_AFTER", "./my result"),
            ("INPUT_FORBID", &forbid),
            ("INPUT_NIX_FILE", "pkgs/$x/default.nix"),
        ],
    );
    assert!(o.status.success(), "{o:?}");
    assert_eq!(a.output("check-exit"), "4");
    let out = String::from_utf8_lossy(&o.stdout);
    let anns = parse_github(&out);
    // The three patterns that match kernels-1.0 are broken rules, each
    // named as written; the others hold.
    assert!(
        anns.iter()
            .any(|(l, p, _)| l == "error" && p["title"].starts_with("nix-heft check: forbid")),
        "{out}"
    );
    let report = std::fs::read_to_string(a.output("report")).unwrap();
    for g in ["kernels*", "kernel?-1.0", "[k]ernels-*"] {
        let shown = g
            .replace('*', "\\*")
            .replace('[', "\\[")
            .replace(']', "\\]");
        assert!(
            report.contains(&format!("pattern '{g}'"))
                || report.contains(&format!("pattern '{shown}'")),
            "{g}: {report}"
        );
    }
    // `$x` reached nix-heft unexpanded.
    assert!(
        anns.iter()
            .all(|(_, p, _)| p["file"] == "pkgs/$x/default.nix"),
        "{out}"
    );
    // Every glob, the blank, `$` and the leading `-` included, is a rule
    // of the report.
    for g in globs {
        let shown = g
            .replace('*', "\\*")
            .replace('[', "\\[")
            .replace(']', "\\]");
        assert!(
            report.contains(&format!("`forbid {g}`"))
                || report.contains(&format!("`forbid {shown}`")),
            "{g}: {report}"
        );
    }

    // The issue's own case: the link `after-dev` in the workspace, and
    // `*-dev`, which no path of farm's closure matches but the link would.
    let o = a.step(
        "run",
        &[
            ("INPUT_AFTER", "./my result"),
            ("INPUT_FORBID", "*-farm\nfarmapp*"),
        ],
    );
    assert!(o.status.success(), "{o:?}");
    assert_eq!(a.output("check-exit"), "4");

    // A root that looks like a flag is a root, not `--help`.
    let msg = one_action_error(&a.step(
        "run",
        &[("INPUT_AFTER", "--help"), ("INPUT_MAX_CLOSURE", "1GiB")],
    ));
    assert!(msg.contains("nix-heft check failed (exit 2)"), "{msg}");
    assert!(msg.contains("matches '--help'"), "{msg}");
}

/// What the Action cannot do is one annotation that says what to change:
/// a rule that needs a baseline without one, a value nix-heft refuses
/// (its exit 2, with its own message), a missing input.
#[test]
fn action_errors_say_what_to_change() {
    let (before, after) = farm();
    let a = ActionRun::new("action-errors");
    let msg = one_action_error(&a.step(
        "run",
        &[("INPUT_AFTER", after), ("INPUT_MAX_GROWTH", "10%")],
    ));
    assert!(msg.contains("set 'before'"), "{msg}");
    assert!(msg.contains("max-growth"), "{msg}");

    let msg = one_action_error(&a.step(
        "run",
        &[
            ("INPUT_AFTER", after),
            ("INPUT_BEFORE", before),
            ("INPUT_MAX_CLOSURE", "lots"),
        ],
    ));
    assert!(msg.contains("nix-heft check failed (exit 2)"), "{msg}");
    // nix-heft's own words about the value, and the hint.
    assert!(msg.contains("lots"), "{msg}");
    assert!(msg.contains("change the input it names"), "{msg}");
    assert!(!msg.contains("error:"), "{msg}");

    let msg = one_action_error(&a.step("run", &[("INPUT_MAX_CLOSURE", "1GiB")]));
    assert!(msg.contains("'after' input is required"), "{msg}");

    let msg = one_action_error(&a.step(
        "run",
        &[
            ("INPUT_AFTER", after),
            ("INPUT_BEFORE_STORE", "https://cache.nixos.org"),
        ],
    ));
    assert!(msg.contains("set 'before' too"), "{msg}");
}

/// The base of a nixpkgs pull request is read from the binary cache that
/// holds it (`before-store`), never built: a signed `file://` cache made
/// by `nix copy`, served over loopback HTTP, stands in for
/// cache.nixos.org. Both the check's baseline and the diff read it there.
#[test]
fn action_reads_the_base_from_a_binary_cache() {
    let (before, after) = farm();
    let a = ActionRun::new("action-cache");
    let key = test_key();
    let cache = a.dir.path().join("cache");
    run(nix().args([
        "copy",
        "--to",
        &format!(
            "file://{}?secret-key={}",
            cache.display(),
            key.secret.display()
        ),
        before,
    ]));
    let server = common::http_server::FileServer::start(&cache);
    let conf = format!("trusted-public-keys = {}", key.public);
    let o = a.step(
        "run",
        &[
            ("NIX_CONFIG", &conf),
            ("INPUT_BEFORE", before),
            ("INPUT_BEFORE_STORE", &server.url()),
            ("INPUT_AFTER", after),
            ("INPUT_MAX_GROWTH", "1GiB"),
        ],
    );
    assert!(o.status.success(), "{o:?}");
    assert_eq!(a.output("check-exit"), "0");
    assert_eq!(a.output("diff-exit"), "0");
    let hash = &before["/nix/store/".len()..][..32];
    // Read there: the size for check's baseline, the closure for diff.
    assert!(
        server.count(&format!("/{hash}.narinfo")) >= 1,
        "{:?}",
        server.log()
    );
    let report = std::fs::read_to_string(a.output("report")).unwrap();
    assert!(report.contains("nix-heft diff: closure"), "{report}");
    assert!(report.contains("nix-heft check: ✅"), "{report}");
}

/// The fork-safe pair: `mode: report` leaves the report, the pull
/// request's number and head as an artifact directory; `comment` takes
/// such a directory as untrusted input and names the pull request to post
/// to only when the number is a number, GitHub's API (a real server on
/// 127.0.0.1 here) says that pull request's head is the commit reported
/// on, and the body is a bounded nix-heft report.
#[test]
fn action_fork_pair_reports_then_comments() {
    let (before, after) = farm();
    let a = ActionRun::new("action-fork");
    let head = "0123456789abcdef0123456789abcdef01234567";
    let o = a.step(
        "run",
        &[
            ("INPUT_MODE", "report"),
            ("INPUT_BEFORE", before),
            ("INPUT_AFTER", after),
            ("INPUT_FORBID", "kernels*"),
            ("PR_NUMBER", "7"),
            ("PR_HEAD_SHA", head),
        ],
    );
    assert!(o.status.success(), "{o:?}");
    let art = PathBuf::from(a.output("artifact-dir"));
    assert_eq!(
        std::fs::read_to_string(art.join("pr-number")).unwrap(),
        "7\n"
    );
    assert_eq!(
        std::fs::read_to_string(art.join("check-exit")).unwrap(),
        "4\n"
    );
    let body = std::fs::read_to_string(art.join("comment.md")).unwrap();
    assert_eq!(body, std::fs::read_to_string(a.output("report")).unwrap());

    // The trusted half, against a stand-in of GitHub's API.
    let api = a.dir.path().join("api");
    let pulls = api.join("repos/o/r/pulls");
    std::fs::create_dir_all(&pulls).unwrap();
    std::fs::write(
        pulls.join("7"),
        format!(r#"{{"number":7,"state":"open","head":{{"sha":"{head}"}}}}"#),
    )
    .unwrap();
    let server = common::http_server::FileServer::start(&api);
    let art_s = art.display().to_string();
    let url = server.url();
    let trusted = |extra: &[(&'static str, &str)]| {
        let mut v: Vec<(&str, &str)> = vec![
            ("INPUT_ARTIFACT_DIR", &art_s),
            ("GITHUB_API_URL", &url),
            ("GITHUB_REPOSITORY", "o/r"),
            ("GITHUB_TOKEN", "t"),
            ("RUN_HEAD_SHA", head),
        ];
        v.extend_from_slice(extra);
        a.step("comment", &v)
    };
    let o = trusted(&[]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(a.output("number"), "7");
    assert_eq!(std::fs::read_to_string(a.output("report")).unwrap(), body);
    assert_eq!(server.count("/repos/o/r/pulls/7"), 1);

    // A newer push: the report is of another commit.
    let msg = one_action_error(&trusted(&[("RUN_HEAD_SHA", "f".repeat(40).as_str())]));
    assert!(msg.contains("not posted"), "{msg}");

    // What a hostile run could upload.
    std::fs::write(art.join("pr-number"), "7; echo pwned\n").unwrap();
    let msg = one_action_error(&trusted(&[]));
    assert!(msg.contains("not a number"), "{msg}");
    std::fs::write(art.join("pr-number"), "8\n").unwrap();
    let msg = one_action_error(&trusted(&[]));
    assert!(
        msg.contains("could not ask GitHub for pull request #8"),
        "{msg}"
    );
    std::fs::write(art.join("pr-number"), "7\n").unwrap();
    std::fs::write(art.join("comment.md"), "hello\n").unwrap();
    let msg = one_action_error(&trusted(&[]));
    assert!(msg.contains("not a nix-heft report"), "{msg}");
    std::fs::write(
        art.join("comment.md"),
        format!("<!-- nix-heft -->\n{}", "x".repeat(70_000)),
    )
    .unwrap();
    let msg = one_action_error(&trusted(&[]));
    assert!(msg.contains("more than a comment takes"), "{msg}");
    std::fs::remove_file(art.join("comment.md")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", art.join("comment.md")).unwrap();
    let msg = one_action_error(&trusted(&[]));
    assert!(msg.contains("'comment.md' is a symlink"), "{msg}");

    // report mode outside a pull request.
    let msg = one_action_error(&a.step(
        "run",
        &[
            ("INPUT_MODE", "report"),
            ("INPUT_AFTER", after),
            ("INPUT_FORBID", "kernels*"),
        ],
    ));
    assert!(msg.contains("pull_request event"), "{msg}");
}

/// `install: nix` builds the action's flake as every supported Nix can:
/// Nix 2.8 has no `--print-out-paths`. A flake of the same shape as the
/// action's (`packages.SYSTEM.nix-heft`), whose package wraps the test's
/// binary, built by the real Nix here.
#[test]
fn action_install_nix_works_with_nix_2_8() {
    let a = ActionRun::new("action-install");
    let flake = a.dir.path().join("action");
    std::fs::create_dir_all(&flake).unwrap();
    let system = run(Command::new("nix-instantiate").args([
        "--eval",
        "--json",
        "--expr",
        "builtins.currentSystem",
    ]));
    let heft = assert_cmd::cargo::cargo_bin("nix-heft");
    std::fs::write(
        flake.join("flake.nix"),
        format!(
            r#"{{
  outputs = {{ self }}: {{
    packages.{system}.nix-heft = derivation {{
      name = "nix-heft-action-test-{nonce}";
      system = {system};
      builder = "/bin/sh";
      args = [ "-c" "mkdir -p $out/bin; printf '#!/bin/sh\nexec {heft} \"$@\"\n' > $out/bin/nix-heft; chmod +x $out/bin/nix-heft" ];
      PATH = "/usr/bin:/bin";
    }};
  }};
}}"#,
            system = system.trim(),
            nonce = nonce(),
            heft = heft.display()
        ),
    )
    .unwrap();
    let o = a.step(
        "install",
        &[
            ("INPUT_INSTALL", "nix"),
            ("ACTION_PATH", flake.to_str().unwrap()),
            ("NIX_CONFIG", "sandbox = false\nsubstituters =\n"),
        ],
    );
    assert!(o.status.success(), "{o:?}");
    let env = std::fs::read_to_string(&a.env).unwrap();
    let bin = github_value(&env, "NIX_HEFT");
    assert!(
        bin.starts_with("/nix/store/") && bin.ends_with("/bin/nix-heft"),
        "{bin}"
    );
    let v = run(Command::new(&bin).arg("--version"));
    assert!(v.starts_with("nix-heft "), "{v}");
}

/// Rendered HTML split as a reader sees it: what is open (outside every
/// `<details>`) and each `<details>` as (summary, body). Fails on a
/// `<details>` without a summary or with nothing in it: an empty section.
pub(crate) fn open_and_details(html: &str) -> (String, Vec<(String, String)>) {
    let mut open = String::new();
    let mut details = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find("<details") {
        open.push_str(&rest[..at]);
        let end = rest[at..]
            .find("</details>")
            .unwrap_or_else(|| panic!("unclosed <details>: {html}"))
            + at;
        let inner = &rest[at..end];
        assert!(
            !inner[1..].contains("<details"),
            "nested <details>: {inner}"
        );
        let (summary, body) = inner
            .split_once("<summary>")
            .and_then(|(_, s)| s.split_once("</summary>"))
            .unwrap_or_else(|| panic!("<details> without <summary>: {inner}"));
        assert!(
            ["<li>", "<tr>", "<pre>"].iter().any(|t| body.contains(t)),
            "empty section {summary:?}: {body:?}"
        );
        details.push((summary.to_string(), body.to_string()));
        rest = &rest[end + "</details>".len()..];
    }
    open.push_str(rest);
    (open, details)
}

/// A path's first 8 hash characters.
fn h8(p: &str) -> &str {
    &p["/nix/store/".len().."/nix/store/".len() + 8]
}

/// The paths of one side of `diff --json` whose name starts with `prefix`.
fn named<'a>(v: &'a Value, prefix: &str) -> Vec<&'a Value> {
    v.as_array()
        .unwrap()
        .iter()
        .filter(|c| c["path"].as_str().unwrap()["/nix/store/".len() + 33..].starts_with(prefix))
        .collect()
}

/// The growth comment of tests/fixtures/story.nix tells its story where a
/// reader looks first: the headline counts the rebuilt paths apart, the
/// largest changes are open with what pulls each in (the docs-only
/// rocsparse, the twelve tensile paths as one line with the chain to them),
/// the rest under `<details>`; text, GitHub annotations and the HTML page
/// give the same line for the twelve. Checked against the store: the
/// symlinks in rocblas, the sizes `nix path-info` gives, the references of
/// each edge of the chain.
#[test]
fn a_growth_comment_tells_the_story_open() {
    let (before, after) = story_fixture();
    let j: Value = serde_json::from_str(&without_origins(
        &heft_run(None, &["--json", "diff", before, after]).stdout,
    ))
    .unwrap();
    let tensile = named(&j["added"], "tensile-gfx");
    assert_eq!(tensile.len(), 12, "{j}");
    let rocblas = named(&j["added"], "rocblas-5.7.1")[0]["path"]
        .as_str()
        .unwrap();
    let ggml = named(&j["added"], "ggml-1.0")[0]["path"].as_str().unwrap();
    let library = Path::new(rocblas).join("lib/rocblas/library");
    let links: Vec<PathBuf> = std::fs::read_dir(&library)
        .unwrap()
        .map(|e| std::fs::read_link(e.unwrap().path()).unwrap())
        .collect();
    let mut total = 0i128;
    for t in &tensile {
        let p = t["path"].as_str().unwrap();
        assert_eq!(t["why"]["referrer"], rocblas, "{t}");
        let into = links.iter().filter(|l| l.starts_with(p)).count();
        assert_eq!(into, 51, "{p}");
        assert_eq!(t["why"]["groups"][0]["holds"], 51, "{t}");
        assert_eq!(t["why"]["groups"][0]["dir"], "lib/rocblas/library", "{t}");
        // The chain from the root, each edge a reference Nix registered.
        let chain: Vec<&str> = t["why"]["chain"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        assert_eq!(chain, [after.as_str(), ggml, rocblas, p]);
        for w in chain.windows(2) {
            assert!(nix_store_references(w[0]).contains(w[1]), "{w:?}");
        }
        total += nix_path_info(None, &[p])[p]["narSize"].as_i64().unwrap() as i128;
    }
    let rocsparse = named(&j["added"], "rocsparse-5.7.1")[0];
    assert_eq!(rocsparse["why"]["referrer"], after.as_str());
    assert_eq!(
        rocsparse["why"]["evidence"][0]["file"],
        "share/doc/llama/README"
    );
    assert_eq!(rocsparse["why"]["evidence"][0]["verdict"], "docs");
    let rs = rocsparse["path"].as_str().unwrap();
    let rs_size = nix_path_info(None, &[rs])[rs]["narSize"].as_u64().unwrap();
    let iec = |b: u64| nix_heft_types::units::iec(b);
    let group = format!(
        "12 tensile-gfx* paths ({}) are new: rocblas-5.7.1 ({}) links to them, \
         51 symlink holds each in lib/rocblas/library/, runtime",
        nix_heft_types::units::iec_delta(total),
        h8(rocblas)
    );

    // Text: the twelve are one line; --evidence lists each.
    let text = heft_run(None, &["diff", before, after]).stdout;
    assert!(text.contains(&format!("  {group}\n")), "{text}");
    assert!(
        text.lines()
            .nth(1)
            .unwrap()
            .ends_with(": 13 added, 3 changed, 0 removed"),
        "{text}"
    );
    assert!(!text.contains("  tensile-gfx"), "{text}");
    let every = heft_run(None, &["diff", "--evidence", before, after]).stdout;
    assert_eq!(
        every
            .lines()
            .filter(|l| l.starts_with("    tensile-gfx"))
            .count(),
        12,
        "{every}"
    );

    // Markdown, rendered as GitHub renders it.
    let md = heft_run(None, &["diff", "--format", "markdown", before, after]).stdout;
    parse_markdown(&md);
    let html = render_gfm(&md);
    let (open, details) = open_and_details(&html);
    assert!(
        open.contains(&format!(
            "<h3>nix-heft diff: closure {} → {} ({}): 13 paths added, 3 changed, 0 removed</h3>",
            iec(j["closure_size_before"].as_u64().unwrap()),
            iec(j["closure_size_after"].as_u64().unwrap()),
            nix_heft_types::units::iec_delta(
                j["closure_size_after"].as_i64().unwrap() as i128
                    - j["closure_size_before"].as_i64().unwrap() as i128
            )
        )),
        "{open}"
    );
    assert!(
        open.contains(&format!(
            "old <code>llama-1.0 ({})</code> → new <code>llama-1.0 ({})</code>",
            h8(before),
            h8(after)
        )),
        "{open}"
    );
    assert!(
        open.contains(&format!(
            "<li><code>rocsparse-5.7.1</code> (+{}) is new: <code>llama-1.0 ({})</code> references it \
             from <code>share/doc/llama/README</code> (text, docs)</li>",
            iec(rs_size),
            h8(after)
        )),
        "{open}"
    );
    let code_group = group
        .replace("tensile-gfx*", "<code>tensile-gfx*</code>")
        .replace(
            &format!("rocblas-5.7.1 ({})", h8(rocblas)),
            &format!("<code>rocblas-5.7.1 ({})</code>", h8(rocblas)),
        )
        .replace("lib/rocblas/library/", "<code>lib/rocblas/library/</code>");
    assert!(
        open.contains(&format!(
            "<li>{code_group}; chain: <code>llama-1.0 ({})</code> → <code>ggml-1.0 ({})</code> → \
             <code>rocblas-5.7.1 ({})</code> → them</li>",
            h8(after),
            h8(ggml),
            h8(rocblas)
        )),
        "{open}"
    );
    // The largest first: rocsparse, then the twelve.
    assert!(open.find("rocsparse-5.7.1").unwrap() < open.find("tensile-gfx*").unwrap());
    // The packages under <details>, not open.
    assert!(!open.contains("<table>"), "{open}");
    assert!(
        details
            .iter()
            .any(|(s, b)| s == "16 packages changed, by size impact"
                && b.contains("<td>rocsparse</td>")),
        "{details:?}"
    );
    assert!(!open.contains("tensile-gfx9"), "{open}");

    // The guide (Review and CI) shows this comment as it is (hashes aside,
    // which depend on the system the fixture is built for).
    let hashes = regex::Regex::new(r"\([0-9a-z]{8}\)").unwrap();
    let guide = std::fs::read_to_string(repo().join("docs/guide/review-and-ci.md")).unwrap();
    assert!(
        hashes.replace_all(&guide, "(HASH)").contains(&format!(
            "```markdown\n{}```\n",
            hashes.replace_all(&md, "(HASH)")
        )),
        "docs/guide/review-and-ci.md does not show the story comment:\n{md}"
    );

    // GitHub: the same line, and within ten notices.
    let gh = heft_run(None, &["diff", "--format", "github", before, after]).stdout;
    let anns = parse_github(&gh);
    assert!(anns.len() <= 10, "{gh}");
    let a = anns
        .iter()
        .find(|(_, p, _)| p["title"].starts_with("nix-heft diff: 12 tensile-gfx* paths added"))
        .unwrap_or_else(|| panic!("{gh}"));
    assert_eq!(a.2[0], group, "{gh}");
    assert!(anns[1].1["title"].contains("rocsparse-5.7.1"), "{gh}");

    // The HTML page: one line for the twelve, in the same words.
    let page = tmp("story-page");
    let file = page.path().join("story.html");
    let o = heft_run(
        None,
        &[
            "report",
            "--diff",
            before,
            after,
            "-o",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let html = std::fs::read_to_string(&file).unwrap();
    let data: Value = serde_json::from_str(
        html.split_once(r#"<script type="application/json" id="heft-data">"#)
            .unwrap()
            .1
            .split_once("</script>")
            .unwrap()
            .0,
    )
    .unwrap();
    let groups = data["diff"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{}", data["diff"]);
    assert_eq!(groups[0]["line"], group.as_str());
    let members: Vec<&str> = groups[0]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            data["paths"][i.as_u64().unwrap() as usize]["p"]
                .as_str()
                .unwrap()
        })
        .collect();
    let mut want: Vec<&str> = tensile
        .iter()
        .map(|t| t["path"].as_str().unwrap())
        .collect();
    let mut got = members.clone();
    want.sort();
    got.sort();
    assert_eq!(got, want);
}

/// `--markdown-limit` is used, not a fixed share of it: on the synthetic
/// pair (thousands of changes), each limit's document fills at least 90%
/// of it, names the limit in force, keeps the largest changes open, and
/// has no empty section as GitHub renders it; `check`'s growth markdown
/// likewise.
#[test]
fn the_markdown_cut_uses_its_budget_and_names_the_limit() {
    let (store, before, after) = synthetic();
    for limit in [1800usize, 3000, 8000, 65_536] {
        let mut args = vec![
            "diff",
            "--format",
            "markdown",
            before.as_str(),
            after.as_str(),
        ];
        let l = limit.to_string();
        if limit != 65_536 {
            args.extend(["--markdown-limit", &l]);
        }
        let md = heft_run(Some(store), &args).stdout;
        let n = md.chars().count();
        assert!(n <= limit && n >= limit * 9 / 10, "{limit}: {n} characters");
        parse_markdown(&md);
        let note = if limit == 65_536 {
            "✂️ Cut to fit GitHub's 65536-character limit for a comment: ".to_string()
        } else {
            format!("✂️ Cut to fit the {limit}-character limit of `--markdown-limit {limit}`: ")
        };
        assert!(
            md.contains(&note),
            "{limit}: {}",
            &md[md.len().saturating_sub(800)..]
        );
        let html = render_gfm(&md);
        let (open, details) = open_and_details(&html);
        assert!(
            open.contains("<strong>Largest changes</strong> of "),
            "{limit}: {open}"
        );
        // Five when there is room for them, the largest at least.
        let top = open
            .split("<strong>Largest changes</strong>")
            .nth(1)
            .unwrap();
        let shown = top.split("</ul>").next().unwrap().matches("<li>").count();
        assert!(
            shown == 5 || (limit < 3000 && shown >= 1),
            "{limit}: {open}"
        );
        // Past the largest changes, the rest in <details> (at 1800 only
        // the largest fit).
        assert!(limit < 3000 || !details.is_empty(), "{limit}: {html}");
    }
    let rules = ["check", after, "--against", before, "--max-growth", "1%"];
    let md = heft_run(
        Some(store),
        &[
            &rules[..],
            &["--format", "markdown", "--markdown-limit", "3000"],
        ]
        .concat(),
    )
    .stdout;
    let n = md.chars().count();
    assert!((2700..=3000).contains(&n), "{n}: {md}");
    assert!(md.contains("`--markdown-limit 3000`"), "{md}");
    open_and_details(&render_gfm(&md));
    // The story's open part survives the smallest limit.
    let (before, after) = story_fixture();
    let md = heft_run(
        None,
        &[
            "diff",
            "--format",
            "markdown",
            "--markdown-limit",
            "1800",
            before,
            after,
        ],
    )
    .stdout;
    assert!(md.chars().count() <= 1800, "{md}");
    let (open, _) = open_and_details(&render_gfm(&md));
    assert!(open.contains("share/doc/llama/README"), "{open}");
    assert!(open.contains("tensile-gfx*"), "{open}");
}

/// GitHub shows ten annotations of each level per step and drops the rest
/// silently: `diff` writes at most ten notices, the last counting the rest
/// and saying where they are; `check` with more than ten violations folds
/// those of one rule into one error that names each (largest first).
#[test]
fn github_annotations_stay_within_what_github_shows() {
    let (store, before, after) = synthetic();
    let gh = heft_run(Some(store), &["diff", "--format", "github", before, after]).stdout;
    let anns = parse_github(&gh);
    for level in ["error", "warning", "notice"] {
        assert!(anns.iter().filter(|a| a.0 == level).count() <= 10, "{gh}");
    }
    let notices: Vec<_> = anns.iter().filter(|a| a.0 == "notice").collect();
    assert_eq!(notices.len(), 10, "{gh}");
    let last = notices.last().unwrap();
    assert_eq!(last.1["title"], "nix-heft diff: more changes", "{gh}");
    assert!(last.2[0].contains("the job summary lists them"), "{gh}");

    let (_, after) = story_fixture();
    let o = heft_run(
        None,
        &[
            "check",
            after,
            "--forbid",
            "tensile*",
            "--forbid",
            "rocsparse*",
            "--forbid-verdict",
            "docs",
            "--format",
            "github",
        ],
    );
    assert_eq!(o.code, 4, "{}", o.stderr);
    let anns = parse_github(&o.stdout);
    assert_eq!(anns.len(), 2, "{}", o.stdout);
    let (_, props, lines) = &anns[0];
    assert_eq!(props["title"], "nix-heft check: forbid (13 violations)");
    // Largest first: rocsparse, then the tensile paths; each its own line
    // (the box shows ten lines, then a count).
    assert_eq!(lines[1], "rocsparse-5.7.1", "{lines:?}");
    assert!(
        lines[2..10].iter().all(|l| l.starts_with("tensile-gfx")),
        "{lines:?}"
    );
    assert!(lines[10].starts_with("… 4 more lines"), "{lines:?}");
    let (_, props, lines) = &anns[1];
    assert_eq!(props["title"], "nix-heft check: forbid-verdict");
    assert!(
        lines[0].starts_with("llama-1.0 references rocsparse-5.7.1 only by documentation"),
        "{lines:?}"
    );
    // Ten or fewer violations: one error each, as before.
    let o = heft_run(
        None,
        &[
            "check",
            after,
            "--forbid",
            "rocsparse*",
            "--forbid",
            "ggml*",
            "--format",
            "github",
        ],
    );
    let anns = parse_github(&o.stdout);
    assert_eq!(anns.len(), 2, "{}", o.stdout);
    assert_eq!(
        anns[0].1["title"], "nix-heft check: forbid: rocsparse-5.7.1",
        "{}",
        o.stdout
    );
}

/// The guide's Action example (docs/guide/review-and-ci.md) is a real run of scripts/action.sh on
/// tests/fixtures/diff.nix with `max-growth: 10%` and `forbid: docdep*`:
/// its comment and its annotations as shown there (store hashes aside,
/// which depend on the system the fixture is built for).
#[test]
fn the_guide_shows_the_actions_comment_as_it_is() {
    let (before, after) = diff_fixture();
    let a = ActionRun::new("action-guide");
    let o = a.step(
        "run",
        &[
            ("INPUT_BEFORE", before),
            ("INPUT_AFTER", after),
            ("INPUT_MAX_GROWTH", "10%"),
            ("INPUT_FORBID", "docdep*"),
            ("INPUT_NIX_FILE", "pkgs/app/default.nix:12"),
        ],
    );
    assert!(o.status.success(), "{o:?}");
    let comment = std::fs::read_to_string(a.output("report")).unwrap();
    let anns = String::from_utf8(o.stdout).unwrap();
    let mask = |s: &str| {
        let full = regex::Regex::new(r"/nix/store/[0-9a-z]{32}").unwrap();
        let short = regex::Regex::new(r"\([0-9a-z]{8}\)").unwrap();
        let s = full.replace_all(s, "/nix/store/HASH");
        short.replace_all(&s, "(HASH)").into_owned()
    };
    let guide = mask(&std::fs::read_to_string(repo().join("docs/guide/review-and-ci.md")).unwrap());
    assert!(
        guide.contains(&format!("````markdown\n{}````\n", mask(&comment))),
        "docs/guide/review-and-ci.md does not show the Action's comment:\n{comment}"
    );
    assert!(
        guide.contains(&format!(
            "and the annotations it printed for the runner:\n\n```\n{}```\n",
            mask(&anns)
        )),
        "docs/guide/review-and-ci.md does not show the Action's annotations:\n{anns}"
    );
}
