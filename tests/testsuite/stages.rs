//! What the compiler cannot keep of docs/ARCHITECTURE.md's rules.
//!
//! The crates are the layers (format → types → trace, store, eval → core
//! → report → browse → the binary): a crate cannot name a crate above it,
//! because it does not depend on it, so no check is needed for that. Left
//! here are the rules that live inside one crate or outside the code:
//! - the stages inside `nix-heft-core` (graph → roots → resolve → read → classify →
//!   explain → plan → diff, check → pipeline), one crate so that a change
//!   to a stage does not rebuild six crates, kept by a check of the code;
//! - the pure stages (classify, explain, plan, diff, check) touch no file,
//!   process or socket;
//! - no library crate prints or depends on the command line's crates
//!   (clap, indicatif, anyhow), which is a rule of the manifests;
//! - no library crate re-exports or renames another (`pub(crate) use
//!   nix_heft_store::source;`): a path says which crate holds its code.
//!
//! The check reads the code as the compiler would see it: comments and
//! string literals blanked (so a `"file://…"` or a `// crate::x` is not
//! read as code), and every `#[cfg(test)]` item skipped wherever it sits
//! (a unit test may build fixtures with any stage).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The stages inside nix-heft-core, lowest first. A module may use modules
/// of lower layers only.
const CORE_LAYERS: &[&[&str]] = &[
    // Core's error enum, which every stage may return.
    &["error"],
    &["graph"],
    &["roots"],
    // Arguments as `nix` takes them: installables and roots together.
    &["resolve"],
    &["read"],
    // Trees that are not valid paths, scanned as Nix registers them: a
    // source over the read stage's hash finder.
    &["unregistered"],
    &["classify"],
    &["explain"],
    &["plan"],
    &["diff", "check", "refusal"],
    &["pipeline"],
    // Many attributes' closures compared (issue 32): looks outputs up and
    // loads the graphs itself, then runs the pipeline's read once. The
    // collector's view of a whole store (issue 41): the graph's dominators
    // over every root, the plan's shell quoting for its commands.
    &["impact", "gc"],
    // A closure's history over many commits, and the bisect that finds
    // the commit that made it bad (issue 42): each jump is an impact
    // between two commits, each culprit a derivation diff.
    &["history", "bisect"],
];

/// The stages that compute from what they are given: no I/O.
const PURE: &[&str] = &["classify", "explain", "plan", "diff", "check", "refusal"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn core_src() -> PathBuf {
    repo().join("crates/core/src")
}

/// Top-level modules of a crate's `src`: `NAME.rs` or `NAME/`.
fn modules(src: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if e.path().is_dir() {
            out.insert(name);
        } else if let Some(stem) = name.strip_suffix(".rs")
            && stem != "lib"
            && stem != "main"
        {
            out.insert(stem.to_string());
        }
    }
    out
}

/// Every `.rs` file below `dir` (or `dir.rs` itself).
fn rs_files(src: &Path, module: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let file = src.join(format!("{module}.rs"));
    if file.is_file() {
        out.push(file);
    }
    let mut stack = vec![src.join(module)];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The code of a file with comments and the contents of string and char
/// literals blanked (newlines kept), so that what remains is code.
fn blank_comments_and_strings(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0usize;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == b'r'
            && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
            && !b[..i]
                .last()
                .is_some_and(|p| p.is_ascii_alphanumeric() || *p == b'_')
        {
            // A raw string: r"…", r#"…"#, …
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c);
                i += 1;
                continue;
            }
            out.extend_from_slice(&b[i..=j]);
            j += 1;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            while j < b.len() && !b[j..].starts_with(&close) {
                blank(&mut out, b[j]);
                j += 1;
            }
            out.extend_from_slice(&b[j..(j + close.len()).min(b.len())]);
            i = j + close.len();
        } else if c == b'"' {
            out.push(b'"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                blank(&mut out, b[i]);
                i += 1;
            }
            if i < b.len() {
                out.push(b'"');
                i += 1;
            }
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            let is_char = (b.get(i + 1) == Some(&b'\\'))
                || (b.get(i + 2) == Some(&b'\'') && b.get(i + 1).is_some());
            if is_char {
                out.push(b'\'');
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    if b[i] == b'\\' {
                        blank(&mut out, b[i]);
                        i += 1;
                    }
                    if i < b.len() {
                        blank(&mut out, b[i]);
                        i += 1;
                    }
                }
                if i < b.len() {
                    out.push(b'\'');
                    i += 1;
                }
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `code` (already blanked) without the items under `#[cfg(test)]`: the
/// attribute and the item after it, to its closing brace or semicolon.
fn without_test_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(i) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..i]);
        let item = &rest[i..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (j, ch) in item.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = j + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = j + 1;
                    break;
                }
                _ => {}
            }
        }
        out.extend(
            item[..end]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' }),
        );
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

fn code_of(text: &str) -> String {
    without_test_items(&blank_comments_and_strings(text))
}

/// Every top-level module named as `crate::NAME` or in `use crate::{…}`.
fn uses(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            out.insert(ident(rest));
            continue;
        };
        let mut depth = 0usize;
        let mut start = 0usize;
        for (j, ch) in group.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    out.insert(ident(&group[start..j]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.insert(ident(&group[start..j]));
                    start = j + 1;
                }
                _ => {}
            }
        }
    }
    out.remove("");
    out
}

fn layer_of(module: &str) -> Option<usize> {
    CORE_LAYERS.iter().position(|l| l.contains(&module))
}

/// Which of core's stages each stage's code names.
fn core_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = core_src();
    let mods = modules(&src);
    let mut out = BTreeMap::new();
    for m in &mods {
        let mut used = BTreeSet::new();
        for f in rs_files(&src, m) {
            used.extend(uses(&code_of(&std::fs::read_to_string(&f).unwrap())));
        }
        used.remove(m.as_str());
        used.retain(|u| mods.contains(u));
        out.insert(m.clone(), used);
    }
    out
}

#[test]
fn every_core_stage_has_a_layer() {
    let missing: Vec<String> = modules(&core_src())
        .into_iter()
        .filter(|m| layer_of(m).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "core modules without a layer in tests/testsuite/stages.rs (and docs/ARCHITECTURE.md): {missing:?}"
    );
}

#[test]
fn no_core_stage_uses_a_later_one() {
    let mut broken = Vec::new();
    for (m, used) in core_graph() {
        let Some(lm) = layer_of(&m) else { continue };
        for u in used {
            match layer_of(&u) {
                Some(lu) if lu < lm => {}
                _ => broken.push(format!("{m} uses {u}")),
            }
        }
    }
    assert!(broken.is_empty(), "stage rules broken: {broken:#?}");
}

#[test]
fn the_checker_reads_code_as_the_compiler_does() {
    let code = code_of(concat!(
        "use crate::a::X;\nuse crate::{b, c::{D, E}, d::F};\n// crate::zz\n",
        "let x = crate::e::f(\"file://crate::s\", 'c', r#\"crate::r\"#);\n",
        "fn g<'a>(_: &'a str) { crate::h::i() }\n/* crate::y /* nested */ crate::w */\n",
        "#[cfg(test)]\nmod tests { use crate::t; }\n",
        "#[cfg(test)]\nuse crate::u;\n",
        "fn after() { crate::k::l(); }\n",
    ));
    let got: Vec<String> = uses(&code).into_iter().collect();
    assert_eq!(got, ["a", "b", "c", "d", "e", "h", "k"]);
}

#[test]
fn pure_stages_touch_no_file_process_or_socket() {
    let src = core_src();
    let mut found = Vec::new();
    for m in PURE {
        for f in rs_files(&src, m) {
            let code = code_of(&std::fs::read_to_string(&f).unwrap());
            for needle in [
                "std::fs",
                "File::",
                "read_to_string",
                "OpenOptions",
                "std::process",
                "Command::new",
                "std::net",
                "nix_heft_store::",
            ] {
                if code.contains(needle) {
                    found.push(format!("{}: {needle}", f.display()));
                }
            }
        }
    }
    assert!(found.is_empty(), "I/O in a pure stage: {found:?}");
}

/// The library crates under crates/.
fn library_crates() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(repo().join("crates"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    out.sort();
    assert!(out.len() >= 5, "{out:?}");
    out
}

#[test]
fn no_library_crate_depends_on_the_command_lines_crates() {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut libs = 0;
    let mut broken = Vec::new();
    for pkg in meta["packages"].as_array().unwrap() {
        let name = pkg["name"].as_str().unwrap();
        if name == "nix-heft" {
            continue;
        }
        libs += 1;
        for dep in pkg["dependencies"].as_array().unwrap() {
            let d = dep["name"].as_str().unwrap();
            let dev = dep["kind"].as_str() == Some("dev");
            // The shared error type names no store's dependency: SQLite's
            // and rayon's errors are the store crate's own.
            if name == "nix-heft-types" && !dev && ["rusqlite", "rayon"].contains(&d) {
                broken.push(format!("{name} depends on {d}"));
            }
            if !dev
                && [
                    "clap",
                    "clap_complete",
                    "clap_mangen",
                    "indicatif",
                    "anyhow",
                    "terminal_size",
                ]
                .contains(&d)
            {
                broken.push(format!("{name} depends on {d}"));
            }
        }
    }
    assert_eq!(libs, library_crates().len());
    assert!(broken.is_empty(), "{broken:?}");
}

#[test]
fn no_library_crate_prints() {
    // Warnings and progress go to the RunLog or a callback that the
    // binary draws; even the test hooks signal by a file.
    let mut found = Vec::new();
    for krate in library_crates() {
        let src = krate.join("src");
        for m in modules(&src).into_iter().chain(["lib".to_string()]) {
            for f in rs_files(&src, &m) {
                let code = code_of(&std::fs::read_to_string(&f).unwrap());
                let rel = f
                    .strip_prefix(repo().join("crates"))
                    .unwrap()
                    .to_string_lossy()
                    .to_string();
                for needle in [
                    "println!",
                    "print!",
                    "eprintln!",
                    "eprint!",
                    "dbg!",
                    "stdout()",
                    "stderr()",
                ] {
                    // `print!` inside `eprint!` is not a second use.
                    let n = code
                        .match_indices(needle)
                        .filter(|(i, _)| {
                            !code[..*i]
                                .chars()
                                .next_back()
                                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                        })
                        .count();
                    if n > 0 {
                        found.push(format!("{rel}: {needle}"));
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "a library crate prints: {found:?}");
}

/// Every re-export or renaming of a nix-heft crate in `code` (already
/// blanked): `pub(crate) use nix_heft_store::source;`, `pub use
/// nix_heft_format::netrc;`, `use nix_heft_report as report;`. Each makes
/// a path (`crate::source`) that hides which crate holds the code.
fn crate_aliases(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for stmt in code.split(';') {
        let words: Vec<&str> = stmt.split_whitespace().collect();
        let Some(u) = words.iter().position(|w| *w == "use") else {
            continue;
        };
        let Some(path) = words.get(u + 1) else {
            continue;
        };
        if !path.starts_with("nix_heft_") {
            continue;
        }
        let public = u > 0 && words[u - 1].starts_with("pub");
        let renamed = words.get(u + 2) == Some(&"as");
        if public || renamed {
            let start = if public { u - 1 } else { u };
            out.push(words[start..].join(" "));
        }
    }
    out
}

#[test]
fn the_alias_check_finds_each_form() {
    let code = code_of(concat!(
        "use nix_heft_store::source::RunLog;\n",
        "pub(crate) use nix_heft_store::{local_cache, source};\n",
        "pub use nix_heft_format::netrc;\n",
        "pub(crate)\n    use nix_heft_types::error;\n",
        "use nix_heft_report as report;\n",
        "// pub(crate) use nix_heft_core::graph;\n",
        "#[cfg(test)]\npub(crate) use nix_heft_core::plan;\n",
        "pub use self::x::Y;\n",
        "fn f() {}\npub use nix_heft_core::diff;\n",
    ));
    assert_eq!(
        crate_aliases(&code),
        [
            "pub(crate) use nix_heft_store::{local_cache, source}",
            "pub use nix_heft_format::netrc",
            "pub(crate) use nix_heft_types::error",
            "use nix_heft_report as report",
            "pub use nix_heft_core::diff",
        ]
    );
}

#[test]
fn no_library_crate_aliases_another() {
    // A path says where its code lives: `nix_heft_store::source::RunLog`
    // in core, never `crate::source` through a re-export.
    let mut found = Vec::new();
    for krate in library_crates() {
        let src = krate.join("src");
        for m in modules(&src).into_iter().chain(["lib".to_string()]) {
            for f in rs_files(&src, &m) {
                let code = code_of(&std::fs::read_to_string(&f).unwrap());
                for a in crate_aliases(&code) {
                    found.push(format!("{}: {a}", f.display()));
                }
            }
        }
    }
    assert!(found.is_empty(), "crate aliases: {found:#?}");
}

/// docs/ARCHITECTURE.md's "a command" row, checked by doing it: every
/// subcommand of `main.rs`'s `Command` has its files where the row says:
/// `src/commands/NAME.rs` with `NAMEArgs` (clap, its doc comment the
/// command's help) and the function `main.rs` dispatches to, its report in
/// `crates/report/src/NAME.rs` (or `NAME/`), its tests in a module of its
/// name in `tests/testsuite/` or `tests/fast/`. The exceptions are named
/// with where their part lives instead.
#[test]
fn each_command_has_its_files_in_their_places() {
    let root = repo();
    let main = std::fs::read_to_string(root.join("src/main.rs")).unwrap();
    let variant =
        regex::Regex::new(r"(?m)^    (\w+)\((?:Box<)?commands::(\w+)::(\w+)>?\),$").unwrap();
    // Where a command's report or tests live when not under its name.
    let report_elsewhere: BTreeMap<&str, &str> = [
        ("report", "crates/report/src/html.rs"),
        ("browse", "crates/browse/src/lib.rs"),
        ("completions", "src/commands/completions.rs"),
        ("man", "src/commands/man.rs"),
    ]
    .into();
    let tests_elsewhere: BTreeMap<&str, &str> = [
        ("split", "tests/fast/plan.rs"),
        ("advise", "tests/fast/plan.rs"),
        ("completions", "tests/testsuite/packaging.rs"),
        ("man", "tests/testsuite/packaging.rs"),
    ]
    .into();
    let mut seen = 0;
    for c in variant.captures_iter(&main) {
        let (name, module, args) = (&c[1], &c[2], &c[3]);
        let file = root.join(format!("src/commands/{module}.rs"));
        let code = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{name}: {}: {e}", file.display()));
        let decl = format!("pub struct {args} {{");
        let at = code
            .find(&decl)
            .unwrap_or_else(|| panic!("{name}: no `{decl}` in {}", file.display()));
        let before: Vec<&str> = code[..at].lines().rev().take(2).collect();
        assert!(
            before[0].starts_with("#[derive(Args") && before[1].starts_with("///"),
            "{name}: {args} is not a documented clap Args struct: {before:?}"
        );
        let dispatch = regex::Regex::new(&format!(
            r"Command::{name}\(args\) => commands::{module}::(\w+)\("
        ))
        .unwrap();
        let f = dispatch
            .captures(&main)
            .unwrap_or_else(|| panic!("{name}: no dispatch line in main.rs"))[1]
            .to_string();
        assert!(
            code.contains(&format!("pub fn {f}(")),
            "{name}: main.rs calls {module}::{f}, which {} does not define",
            file.display()
        );
        let report = report_elsewhere.get(module).map_or_else(
            || {
                let one = root.join(format!("crates/report/src/{module}.rs"));
                if one.exists() {
                    one
                } else {
                    root.join(format!("crates/report/src/{module}/mod.rs"))
                }
            },
            |p| root.join(p),
        );
        assert!(report.exists(), "{name}: no report at {}", report.display());
        let tests = tests_elsewhere.get(module).map_or_else(
            || {
                let t = root.join(format!("tests/testsuite/{module}.rs"));
                if t.exists() {
                    t
                } else {
                    root.join(format!("tests/fast/{module}.rs"))
                }
            },
            |p| root.join(p),
        );
        let t = std::fs::read_to_string(&tests)
            .unwrap_or_else(|e| panic!("{name}: no tests at {}: {e}", tests.display()));
        assert!(
            t.contains(&format!("\"{module}\"")),
            "{name}: {} never runs `{module}`",
            tests.display()
        );
        seen += 1;
    }
    // Every variant of `Command`, none missed by the pattern.
    let enum_at = main
        .find("enum Command {")
        .expect("main.rs has enum Command");
    let body = &main[enum_at..enum_at + main[enum_at..].find("\n}").unwrap()];
    let variants = body
        .lines()
        .filter(|l| l.trim_end().ends_with("),"))
        .count();
    assert_eq!(seen, variants, "{body}");
    assert!(seen >= 16, "{seen}");
}

/// docs/ARCHITECTURE.md names only what exists where it says: each module
/// of its table (`CRATE::a::b` is `crates/CRATE/src/a/b.rs` or
/// `a/b/mod.rs`, `CRATE` alone its `lib.rs`), each file it names in
/// backticks (`src/…`, `crates/…`, `tests/…`, `docs/…`, `scripts/…`) and
/// each crate directory of its picture.
#[test]
fn architecture_names_only_modules_that_exist() {
    let root = repo();
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let crates: Vec<String> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let module_row = regex::Regex::new(r"(?m)^\| `([a-z_:]+)` \|").unwrap();
    let mut modules = 0;
    let mut missing = Vec::new();
    for c in module_row.captures_iter(&doc) {
        let mut parts = c[1].split("::");
        let krate = parts.next().unwrap();
        if !crates.iter().any(|k| k == krate) {
            missing.push(format!("{}: no crate crates/{krate}", &c[1]));
            continue;
        }
        let rest: Vec<&str> = parts.collect();
        let src = root.join("crates").join(krate).join("src");
        let found = if rest.is_empty() {
            src.join("lib.rs").is_file()
        } else {
            let p = src.join(rest.join("/"));
            p.with_extension("rs").is_file() || p.join("mod.rs").is_file()
        };
        if !found {
            missing.push(c[1].to_string());
        }
        modules += 1;
    }
    // A table that stopped matching the pattern checks nothing.
    assert!(modules >= 50, "only {modules} module rows read");
    let file = regex::Regex::new(r"`((?:src|crates|tests|docs|scripts|nix)/[^`*<>{} ]+)`").unwrap();
    let mut files = 0;
    // `NAME` is the placeholder of the "to add" table.
    for c in file.captures_iter(&doc).filter(|c| !c[1].contains("NAME")) {
        files += 1;
        if !root.join(&c[1]).exists() {
            missing.push(c[1].to_string());
        }
    }
    assert!(files >= 8, "only {files} file names read");
    let picture = regex::Regex::new(r"(?m)^ +(?:library +)?nix-heft-(\w+) +crates/(\w+) ").unwrap();
    let mut drawn = 0;
    for c in picture.captures_iter(&doc) {
        drawn += 1;
        if c[1] != c[2] || !root.join("crates").join(&c[2]).join("Cargo.toml").is_file() {
            missing.push(format!("nix-heft-{} in crates/{}", &c[1], &c[2]));
        }
    }
    assert_eq!(
        drawn,
        crates.len(),
        "the picture draws {drawn} of {} crates",
        crates.len()
    );
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names what does not exist: {missing:#?}"
    );
}
