//! The split of this test binary into tiers (tests/testsuite/main.rs):
//! every module file is declared in exactly one tier, and no module of the
//! fast tier, which `cargo test` runs without Nix or root, uses what needs
//! them. Both hold on a machine that has Nix, where a fast test that ran
//! Nix would pass and hide that it cannot run elsewhere.

use std::collections::BTreeSet;

use crate::common::repo;

fn testsuite() -> std::path::PathBuf {
    repo().join("tests/testsuite")
}

/// The fast tier's modules (`mod NAME;` lines) and the Nix tier's (the
/// names in `nix_tier! { … }`), from main.rs.
fn tiers() -> (Vec<String>, Vec<String>) {
    let main = std::fs::read_to_string(testsuite().join("main.rs")).unwrap();
    let (fast_part, nix_part) = main
        .split_once("nix_tier! {")
        .expect("main.rs invokes nix_tier! { … }");
    let fast = fast_part
        .lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .filter(|m| *m != "common")
        .map(str::to_string)
        .collect();
    let nix = nix_part
        .split_once('}')
        .expect("nix_tier!'s closing brace")
        .0
        .split_whitespace()
        .map(str::to_string)
        .collect();
    (fast, nix)
}

#[test]
fn every_module_is_in_exactly_one_tier() {
    let (fast, nix) = tiers();
    assert!(fast.len() > 5 && nix.len() > 20, "{fast:?} {nix:?}");
    let files: BTreeSet<String> = std::fs::read_dir(testsuite())
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            // A module of several files is a directory with its mod.rs
            // (`fast/`); `common/` is the helpers, in no tier.
            if e.path().join("mod.rs").is_file() {
                return (name != "common").then_some(name);
            }
            let module = name.strip_suffix(".rs")?;
            (module != "main").then(|| module.to_string())
        })
        .collect();
    let mut declared = BTreeSet::new();
    for m in fast.iter().chain(&nix) {
        assert!(declared.insert(m.clone()), "{m} is declared twice");
    }
    assert_eq!(declared, files, "main.rs's tiers and the module files");
}

/// What a fast module may not call or run: Nix's programs, and the common
/// helpers that build or sign with them (`fixture()` and what uses it,
/// `scratch` included; the test key, made by `nix-store`), or that run the
/// tools only scripts/test.sh installs (cmark-gfm, tmux, strace, chromium).
const NEEDS_NIX: &[&str] = &[
    "Command::new(\"nix",
    "nix()",
    "nix_build(",
    "nix_output(",
    "system_store_lock(",
    "fixture()",
    "scratch(",
    "example_copy(",
    "unbuilt_over_example(",
    "nix_path_info(",
    "nix_closure_paths(",
    "nix_store_references(",
    "closure_set(",
    "drv_outputs(",
    "build_graph_size(",
    "test_key(",
    "key_pair(",
    "sign_narinfo(",
    "signed_cache_url(",
    "render_gfm(",
    "\"tmux\"",
    "\"strace\"",
    "\"chromium\"",
];

/// Whether `line` names `needle` where an identifier starts: `nix()` is
/// not in `fn equals_nix() {`.
fn names(line: &str, needle: &str) -> bool {
    line.match_indices(needle).any(|(i, _)| {
        !line[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

#[test]
fn names_sees_a_call_not_a_longer_name() {
    assert!(names("    let v = nix().arg(x);", "nix()"));
    assert!(names("common::nix_path_info(p)", "nix_path_info("));
    assert!(!names("fn path_info_json_input_equals_nix() {", "nix()"));
    assert!(!names("fn sizes_equal_nix_path_info() {", "nix_path_info("));
}

#[test]
fn no_fast_module_needs_nix() {
    let (fast, _) = tiers();
    let mut found = Vec::new();
    // This module names them all, in NEEDS_NIX.
    let mut files = Vec::new();
    for m in fast.iter().filter(|m| *m != "tiers") {
        let dir = testsuite().join(m);
        if dir.join("mod.rs").is_file() {
            let mut inner: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "rs"))
                .collect();
            inner.sort();
            files.extend(inner);
        } else {
            files.push(testsuite().join(format!("{m}.rs")));
        }
    }
    // The committed-fixture tests' helpers are the fast tier's too.
    files.push(testsuite().join("common/fast_fixtures.rs"));
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let rel = f.strip_prefix(testsuite()).unwrap().display().to_string();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for needle in NEEDS_NIX {
                if names(line, needle) {
                    found.push(format!("{rel}:{}: {needle}", n + 1));
                }
            }
        }
    }
    assert!(files.len() > 20, "only {} fast files read", files.len());
    assert!(
        found.is_empty(),
        "the fast tier needs no Nix; move these to the Nix tier (nix_tier! in main.rs):\n{}",
        found.join("\n")
    );
    // The check sees what it looks for: the Nix tier's uses.
    let http = std::fs::read_to_string(testsuite().join("http.rs")).unwrap();
    assert!(NEEDS_NIX.iter().any(|n| http.contains(n)));
}

/// Where `text` (a test module's source) starts a Nix process that does
/// not go through the helpers that take the system store's lock
/// (`common::run`, `common::nix_output`; commands.rs's
/// `system_store_lock` says why): a `Command::new("nix…")` or `nix()`
/// whose statement runs it (`.output()`, `.status()`, `.spawn()`) outside
/// them, directly or through the variable it is bound to. A statement
/// naming `--store` runs on a store of the test's own and needs no lock.
fn unlocked_nix_processes(text: &str) -> Vec<String> {
    let code: String = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let statements: Vec<&str> = code.split(';').collect();
    let runs = |s: &str| {
        [".output()", ".status()", ".spawn()"]
            .iter()
            .any(|r| s.contains(r))
    };
    let locked =
        |s: &str| s.contains("run(") || s.contains("nix_output(") || s.contains("\"--store\"");
    let mut found = Vec::new();
    for (i, st) in statements.iter().enumerate() {
        let Some(at) = ["Command::new(\"nix", "nix()"]
            .iter()
            .filter_map(|n| st.find(n))
            .min()
        else {
            continue;
        };
        if runs(st) && !locked(st) {
            found.push(st.trim().to_string());
        }
        // `let mut c = Command::new("nix-build");` … `c.output()` later.
        let binding = st[..at]
            .trim_end()
            .strip_suffix('=')
            .and_then(|b| b.trim().rsplit(' ').next())
            .filter(|v| !v.is_empty() && v.chars().all(|c| c.is_alphanumeric() || c == '_'));
        if let Some(var) = binding {
            // Up to the end of the function: the next `fn` starts another.
            let starts_fn = |s: &str| {
                s.lines().any(|l| {
                    let l = l.trim_start();
                    l.starts_with("fn ") || l.starts_with("pub fn ") || l.contains(" fn ")
                })
            };
            for later in &statements[i + 1..] {
                if starts_fn(later) {
                    break;
                }
                let t = later.trim_start();
                let t = t
                    .strip_prefix("let ")
                    .map_or(t, |r| r.split_once('=').map_or(r, |x| x.1));
                if t.trim_start()
                    .strip_prefix(var)
                    .is_some_and(|r| r.trim_start().starts_with('.'))
                    && runs(later)
                    && !locked(later)
                {
                    found.push(later.trim().to_string());
                }
            }
        }
    }
    found
}

/// Every Nix process the tests start runs under the system store's lock
/// (issue 52: two at once raced on Nix's database), checked over every
/// module and the survey's tests, which share commands.rs.
#[test]
fn every_nix_process_runs_under_the_store_lock() {
    // The check finds what it looks for.
    let bad = "let out = Command::new(\"nix-build\")\n    .arg(f)\n    .output()\n    .unwrap();\n\
               let mut c = nix();\nc.args([\"copy\"]);\nlet o = c\n    .arg(p)\n    .status();\n";
    assert_eq!(unlocked_nix_processes(bad).len(), 2, "{bad}");
    let good = "let out = nix_output(Command::new(\"nix-build\").arg(f));\n\
                let mut c = nix();\nlet o = run(c.arg(p));\n\
                let r = Command::new(\"nix\").args([\"repl\", \"--store\"]).arg(d).spawn();\n";
    assert_eq!(unlocked_nix_processes(good), Vec::<String>::new());

    let mut files: Vec<std::path::PathBuf> = Vec::new();
    for dir in [
        testsuite(),
        testsuite().join("common"),
        repo().join("survey/tests"),
    ] {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "rs")
                && p.file_name()
                    .is_some_and(|n| n != "commands.rs" && n != "tiers.rs")
            {
                files.push(p);
            }
        }
    }
    let mut starts = 0;
    let mut found = Vec::new();
    for p in &files {
        let text = std::fs::read_to_string(p).unwrap();
        starts += text.matches("Command::new(\"nix").count() + text.matches("nix()").count();
        for st in unlocked_nix_processes(&text) {
            found.push(format!("{}: {st}", p.display()));
        }
    }
    assert!(
        starts > 100,
        "only {starts} Nix commands found in {} files",
        files.len()
    );
    assert!(
        found.is_empty(),
        "Nix run outside common::run / common::nix_output (the system store's lock):\n{}",
        found.join("\n---\n")
    );
}
