//! The docs' command examples are runs: every ```` ```console ```` block of
//! README.md and docs/guide/*.md is a sequence of `$ COMMAND` lines, each
//! followed by the output it prints, and this module runs each command and
//! compares (issue 31). A doc whose output drifts fails here, so no example
//! goes stale.
//!
//! How a block is run, as a reader following the doc would run it:
//! - each command by `bash -c` with its standard error joined to its
//!   standard output (in the order written), in a scratch directory per
//!   doc file where `examples/` and `tests/` link to the repository's (so
//!   `--store examples/rocm-mini/cache` and `nix-build tests/fixtures/…`
//!   read the committed files, and `result` links and reports land in the
//!   scratch directory); the commands of one file share it, in order;
//! - `nix-heft` is the binary under test, first on `PATH`;
//! - the docs' convention (README, "Examples"): `NIX_CONFIG` trusts the
//!   bundled cache's key (`examples/rocm-mini/cache.pub`) and nothing else;
//!   `COLUMNS=100`; `LC_ALL=C.UTF-8`; a fresh `XDG_CACHE_HOME`;
//! - the exit code must be 0, or the `exit=N` the fence gives
//!   (```` ```console exit=2 ````, a block of one command).
//!
//! What may differ: `[..]` in a shown line matches any text within that line
//! (a time, a temporary path); store hashes (`/nix/store/<32 chars>`, and
//! the 8-character `(hash)` labels) are masked on both sides, since the
//! fixtures' depend on the system they are built for; trailing blanks.
//! Nothing else: no line may be left out.
//!
//! The fixtures a doc builds with `nix-build` are built first here (sandbox
//! off, as `common::nix_build` builds them), so the doc's own `nix-build`
//! finds them built and prints only their paths.
//!
//! Also here: every relative link of the docs names a file that exists (and
//! a heading that exists, for `#anchor` links), and every table is a table
//! once rendered by cmark-gfm, as GitHub renders it.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The docs this module checks: README.md and every file of docs/guide/.
fn doc_files() -> Vec<PathBuf> {
    let mut v = vec![repo().join("README.md")];
    let mut guide: Vec<PathBuf> = std::fs::read_dir(repo().join("docs/guide"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    guide.sort();
    v.extend(guide);
    v
}

/// One `$ COMMAND` of a console block and what it shows.
#[derive(Debug)]
struct Example {
    /// The line of the `$` in its file (1-based), for messages.
    line: usize,
    command: String,
    output: Vec<String>,
    exit: i32,
}

/// The console blocks of a markdown text, as examples in order. Fences of
/// other languages are skipped whole (a ```` ````markdown ```` block may hold
/// a ```` ``` ```` fence of its own).
fn examples(text: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((_, line)) = lines.next() {
        let ticks = line.len() - line.trim_start_matches('`').len();
        if ticks < 3 || line.starts_with(' ') {
            continue;
        }
        let fence = &line[..ticks];
        let info: Vec<&str> = line[ticks..].split_whitespace().collect();
        let mut body = Vec::new();
        for (n, l) in lines.by_ref() {
            if l.trim_end() == fence {
                break;
            }
            body.push((n + 1, l));
        }
        if info.first() != Some(&"console") {
            continue;
        }
        let exit = info
            .iter()
            .find_map(|w| w.strip_prefix("exit="))
            .map(|n| n.parse::<i32>().expect("exit=N takes a number"))
            .unwrap_or(0);
        let first = out.len();
        let mut body = body.into_iter().peekable();
        while let Some((n, l)) = body.next() {
            let Some(cmd) = l.strip_prefix("$ ") else {
                panic!("line {n}: a console block starts with `$ COMMAND`: {l:?}");
            };
            // A command continued with a trailing backslash.
            let mut command = cmd.to_string();
            while command.ends_with('\\') {
                let (_, next) = body.next().expect("a continued command ends the block");
                command.push('\n');
                command.push_str(next);
            }
            let mut output = Vec::new();
            while let Some((_, o)) = body.next_if(|(_, o)| !o.starts_with("$ ")) {
                output.push(o.to_string());
            }
            out.push(Example {
                line: n,
                command,
                output,
                exit: 0,
            });
        }
        if exit != 0 {
            assert_eq!(
                out.len() - first,
                1,
                "a console block with exit={exit} holds one command"
            );
            out.last_mut().unwrap().exit = exit;
        }
    }
    out
}

/// Store hashes masked: the fixtures' depend on the system they are built
/// for; blanks at line ends and at the end dropped.
fn normalise(text: &str) -> Vec<String> {
    let full = regex::Regex::new(r"/nix/store/[0-9a-df-np-sv-z]{32}").unwrap();
    let short = regex::Regex::new(r"\([0-9a-df-np-sv-z]{8}\)").unwrap();
    let mut v: Vec<String> = text
        .lines()
        .map(|l| {
            let l = full.replace_all(l.trim_end(), "/nix/store/HASH");
            short.replace_all(&l, "(HASH)").into_owned()
        })
        .collect();
    while v.last().is_some_and(|l| l.is_empty()) {
        v.pop();
    }
    v
}

/// Whether `got` is the `shown` line, where `[..]` matches any text.
fn line_matches(shown: &str, got: &str) -> bool {
    let parts: Vec<&str> = shown.split("[..]").collect();
    if parts.len() == 1 {
        return shown == got;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !got.starts_with(first) || got.len() < first.len() + last.len() || !got.ends_with(last) {
        return false;
    }
    let mut rest = &got[first.len()..got.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    true
}

fn output_matches(shown: &[String], got: &[String]) -> bool {
    shown.len() == got.len() && shown.iter().zip(got).all(|(s, g)| line_matches(s, g))
}

/// The Nix programs a doc's command may run (besides nix-heft).
const NIX_PROGRAMS: &[&str] = &["nix", "nix-build", "nix-store", "nix-instantiate", "nix-env", "nix-shell"];

/// The fixtures the docs build with `nix-build` (and the build graph's
/// derivations whose output sizes they show), built first with the sandbox
/// off and no substituters, as `common::nix_build` builds, so the docs' own
/// `nix-build` prints the path and builds nothing. Each is the doc's file
/// and `nix-build` arguments.
const DOCS_BUILD: &[(&str, &[&str])] = &[
    ("tests/fixtures/diff.nix", &["-A", "before", "-A", "after"]),
    ("tests/fixtures/impact/doc-base.nix", &[]),
    ("tests/fixtures/impact/doc-head.nix", &[]),
    (
        "examples/rocm-mini/default.nix",
        &["-A", "variants.hipblas-split"],
    ),
    ("tests/fixtures/farm.nix", &["-A", "before", "-A", "after"]),
    ("tests/fixtures/drv-chain.nix", &["--argstr", "v", "1.1"]),
    ("tests/fixtures/drv-chain.nix", &["--argstr", "v", "1.2"]),
    (
        "tests/fixtures/drv-chain.nix",
        &[
            "--argstr",
            "v",
            "1.1",
            "--argstr",
            "word",
            "--enable-rocm",
            "--argstr",
            "opt",
            "-O3",
        ],
    ),
];

fn build_what_the_docs_build() {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        // The bundled example (examples/rocm-mini), with the suite's stores.
        fixture();
        for (file, args) in DOCS_BUILD {
            run(Command::new("nix-build")
                .arg(repo().join(file))
                .args(*args)
                .args([
                    "--option",
                    "sandbox",
                    "false",
                    "--option",
                    "substituters",
                    "",
                ])
                .arg("--no-out-link"));
        }
    });
}

/// Runs the console examples of `doc` and fails with every one whose
/// output or exit code is not what the doc shows.
fn check_doc(doc: &Path) {
    build_what_the_docs_build();
    let text = std::fs::read_to_string(doc).unwrap();
    let stem = doc.file_stem().unwrap().to_string_lossy().into_owned();
    let dir = scratch(&format!("run-{stem}"));
    for d in ["examples", "tests"] {
        std::os::unix::fs::symlink(repo().join(d), dir.join(d)).unwrap();
    }
    let bin = assert_cmd::cargo::cargo_bin("nix-heft");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut failures = Vec::new();
    let examples = examples(&text);
    for e in &examples {
        // A doc's own `nix-build` (its fixtures built above, so it builds
        // nothing) still opens the system store and adds its `-o` root:
        // under the lock the tests' Nix processes take.
        let _nix = e
            .command
            .split(|c: char| c.is_whitespace() || c == '|' || c == ';' || c == '(')
            .any(|w| NIX_PROGRAMS.contains(&w))
            .then(crate::common::system_store_lock);
        let o = Command::new("bash")
            .arg("-c")
            .arg(format!("exec 2>&1\n{}", e.command))
            .current_dir(&dir)
            .env("PATH", &path)
            .env(
                "NIX_CONFIG",
                format!("trusted-public-keys = {}", example_key()),
            )
            .env("COLUMNS", "100")
            // `ls` and `sort` in the docs sort by code point, whatever the
            // machine's locale.
            .env("LC_ALL", "C.UTF-8")
            .env("XDG_CACHE_HOME", dir.join(".cache"))
            .env("TMPDIR", std::env::temp_dir())
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE")
            .env_remove("NIX_HEFT_CACHE_MAX")
            .env_remove("NIX_HEFT_VERIFY")
            .env_remove("NIX_HEFT_HTTP_TIMEOUT")
            .output()
            .unwrap();
        let got = String::from_utf8_lossy(&o.stdout);
        let code = o.status.code().unwrap_or(-1);
        let shown: Vec<String> = normalise(&e.output.join("\n"));
        if code != e.exit || !output_matches(&shown, &normalise(&got)) {
            failures.push(format!(
                "{}:{}: $ {}\n--- exit {} (the doc says {}); the doc shows:\n{}\n--- it printed:\n{}",
                doc.display(),
                e.line,
                e.command,
                code,
                e.exit,
                e.output.join("\n"),
                got.trim_end()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} examples of {} differ from their runs:\n\n{}",
        failures.len(),
        examples.len(),
        doc.display(),
        failures.join("\n\n")
    );
}

#[test]
fn readme_examples_are_what_they_print() {
    let readme = repo().join("README.md");
    assert!(
        examples(&std::fs::read_to_string(&readme).unwrap()).len() >= 3,
        "README.md shows three examples"
    );
    check_doc(&readme);
}

/// One test per guide file, so a failure names the file.
macro_rules! guide_tests {
    ($($name:ident => $file:literal),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                check_doc(&repo().join("docs/guide").join($file));
            }
        )*

        /// Every guide file with a console block has its test above.
        #[test]
        fn every_guide_file_with_examples_is_run() {
            let listed = [$($file),*];
            for doc in doc_files().into_iter().skip(1) {
                let text = std::fs::read_to_string(&doc).unwrap();
                let name = doc.file_name().unwrap().to_string_lossy().into_owned();
                assert!(
                    examples(&text).is_empty() || listed.contains(&name.as_str()),
                    "{name} has console examples but no test in docs.rs"
                );
            }
        }
    };
}

guide_tests! {
    guide_commands => "commands.md",
    guide_history => "history.md",
    guide_stores_and_trust => "stores-and-trust.md",
    guide_build_graph => "build-graph.md",
    guide_review_and_ci => "review-and-ci.md",
    guide_trace => "trace.md",
    guide_report => "report.md",
    guide_refused => "refused.md",
}

/// GitHub's heading anchors: lower case, punctuation other than `-` and `_`
/// dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a markdown file's headings (outside code blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut fence: Option<String> = None;
    for l in text.lines() {
        let ticks = l.len() - l.trim_start_matches('`').len();
        if ticks >= 3 && !l.starts_with(' ') {
            match &fence {
                None => fence = Some(l[..ticks].to_string()),
                Some(f) if l.trim_end() == f => fence = None,
                _ => {}
            }
            continue;
        }
        if fence.is_none() && l.starts_with('#') {
            v.push(anchor(l.trim_start_matches('#')));
        }
    }
    v
}

/// Every relative link of README and the guide names a file that exists,
/// and its `#anchor`, if any, a heading of that file.
#[test]
fn relative_links_resolve() {
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut bad = Vec::new();
    let mut n = 0;
    for doc in doc_files() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for c in link.captures_iter(&text) {
            let target = &c[1];
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            n += 1;
            let (file, frag) = target.split_once('#').unwrap_or((target, ""));
            let path = if file.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(file)
            };
            if !path.exists() {
                bad.push(format!("{}: {target}: no such file", doc.display()));
                continue;
            }
            if !frag.is_empty() {
                let t = std::fs::read_to_string(&path).unwrap();
                if !anchors(&t).iter().any(|a| a == frag) {
                    bad.push(format!("{}: {target}: no such heading", doc.display()));
                }
            }
        }
    }
    assert!(n > 10, "only {n} relative links found");
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

/// Every table of the docs (a `|` row followed by a `| --- |` row, outside
/// code blocks) is a table once cmark-gfm renders the file, as GitHub does.
#[test]
fn tables_render_as_tables() {
    for doc in doc_files() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let mut fence: Option<String> = None;
        let mut tables = 0;
        let mut prev = "";
        for l in text.lines() {
            let ticks = l.len() - l.trim_start_matches('`').len();
            if ticks >= 3 && !l.starts_with(' ') {
                match &fence {
                    None => fence = Some(l[..ticks].to_string()),
                    Some(f) if l.trim_end() == f => fence = None,
                    _ => {}
                }
            } else if fence.is_none()
                && prev.starts_with('|')
                && l.starts_with("| -")
                && l.trim_end().ends_with('|')
            {
                tables += 1;
            }
            prev = l;
        }
        let html = render_gfm(&text);
        assert_eq!(
            html.matches("<table>").count(),
            tables,
            "{}: {tables} tables written, others rendered",
            doc.display()
        );
    }
}

/// The harness itself: a drifted line fails, `[..]` and masked hashes pass.
#[test]
fn the_comparison_fails_on_drift() {
    let shown = normalise(
        "closure of /nix/store/bknyqpbxj6y2f3zyj1a80my28ppxqrhl-x: 1 MiB\nwrote [..] (2 KiB)",
    );
    let ok = normalise(
        "closure of /nix/store/0f2w0zwhp01cjng4xj96bl48g023ls23-x: 1 MiB\nwrote /tmp/a/b (2 KiB)\n",
    );
    assert!(output_matches(&shown, &ok));
    let drifted = normalise(
        "closure of /nix/store/0f2w0zwhp01cjng4xj96bl48g023ls23-x: 2 MiB\nwrote /tmp/a/b (2 KiB)",
    );
    assert!(!output_matches(&shown, &drifted));
    let longer = normalise(
        "closure of /nix/store/0f2w0zwhp01cjng4xj96bl48g023ls23-x: 1 MiB\nwrote /tmp/a/b (2 KiB)\nmore",
    );
    assert!(!output_matches(&shown, &longer));
    let ex = examples(
        "```console exit=2\n$ a \\\n  b\nout\n```\n````markdown\n```console\n$ no\n```\n````\n",
    );
    assert_eq!(ex.len(), 1);
    assert_eq!(ex[0].command, "a \\\n  b");
    assert_eq!(
        (ex[0].exit, ex[0].output.clone()),
        (2, vec!["out".to_string()])
    );
}
