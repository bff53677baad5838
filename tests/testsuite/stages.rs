//! The stage rules of docs/ARCHITECTURE.md, checked against the code: each
//! top-level module of the library may name (`crate::X`) only modules of a
//! lower layer, so data flows one way and no two modules depend on each
//! other. A new module must be given a layer here, which is the moment to
//! decide where it sits.
//!
//! The check reads the source text: every `crate::NAME` path and every name
//! in a `use crate::{…}` group, outside comments and outside the unit tests
//! at the end of a file (`#[cfg(test)]`), which may build fixtures with any
//! stage.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may use modules of lower layers only.
const LAYERS: &[&[&str]] = &[
    // Leaves every stage shares.
    &["evidence", "problem", "relpath", "units", "nixbase32"],
    // File formats, which know nothing of stores.
    &["nar", "elf"],
    &["error"],
    &["store_path"],
    // Nix's configuration and file formats above store paths (derivations),
    // installables evaluated by the user's nix; the local cache directory.
    &["nix_conf", "local_cache", "derivation"],
    &["installable"],
    // The run-time stage (traces) stands apart: only errors below it.
    &["trace"],
    &["source"],
    &["graph"],
    &["roots"],
    &["read"],
    &["classify"],
    &["explain"],
    &["plan"],
    &["diff", "check"],
    &["pipeline"],
    &["report"],
    &["browse"],
];

/// Modules outside the stages: test support and fuzzing entry points.
const EXEMPT: &[&str] = &["testutil", "fuzzing"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Top-level modules of the library: `src/NAME.rs` or `src/NAME/`.
fn modules() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(src()).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let p = e.path();
        if p.is_dir() {
            out.insert(name);
        } else if let Some(stem) = name.strip_suffix(".rs")
            && stem != "lib"
            && stem != "main"
        {
            out.insert(stem.to_string());
        }
    }
    // The binary's own folder is not part of the library.
    out.remove("commands");
    out
}

fn files_of(module: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let file = src().join(format!("{module}.rs"));
    if file.is_file() {
        out.push(file);
    }
    let mut stack = vec![src().join(module)];
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

/// The code of a file without comments and without its trailing unit tests.
fn code_of(text: &str) -> String {
    let body = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    body.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
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
        // A group: split at the commas outside nested braces; each entry
        // starts with a top-level module's name.
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
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Which top-level modules each module's code names.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules();
    let mut out = BTreeMap::new();
    for m in &mods {
        let mut used = BTreeSet::new();
        for f in files_of(m) {
            let text = std::fs::read_to_string(&f).unwrap();
            used.extend(uses(&code_of(&text)));
        }
        used.remove(m.as_str());
        used.retain(|u| mods.contains(u));
        out.insert(m.clone(), used);
    }
    out
}

#[test]
fn every_module_has_a_layer() {
    let missing: Vec<String> = modules()
        .into_iter()
        .filter(|m| layer_of(m).is_none() && !EXEMPT.contains(&m.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "modules without a layer in tests/testsuite/stages.rs (and docs/ARCHITECTURE.md): {missing:?}"
    );
}

#[test]
fn no_stage_uses_a_later_one() {
    let mut broken = Vec::new();
    for (m, used) in graph() {
        if EXEMPT.contains(&m.as_str()) {
            continue;
        }
        let Some(lm) = layer_of(&m) else { continue };
        for u in used {
            if EXEMPT.contains(&u.as_str()) {
                continue;
            }
            match layer_of(&u) {
                Some(lu) if lu < lm => {}
                _ => broken.push(format!("{m} uses {u}")),
            }
        }
    }
    assert!(broken.is_empty(), "stage rules broken: {broken:#?}");
}

#[test]
fn no_cycle_between_top_level_modules() {
    // Independent of the layer table: a depth-first search for a back edge.
    let g = graph();
    let mut state: BTreeMap<&str, u8> = BTreeMap::new();
    fn visit<'a>(
        g: &'a BTreeMap<String, BTreeSet<String>>,
        v: &'a str,
        state: &mut BTreeMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        state.insert(v, 1);
        path.push(v);
        for w in g.get(v).into_iter().flatten() {
            match state.get(w.as_str()) {
                Some(1) => {
                    let at = path.iter().position(|p| p == w).unwrap();
                    let mut cycle: Vec<String> = path[at..].iter().map(|s| s.to_string()).collect();
                    cycle.push(w.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(g, w, state, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        state.insert(v, 2);
        None
    }
    for m in g.keys() {
        if !state.contains_key(m.as_str())
            && let Some(c) = visit(&g, m, &mut state, &mut Vec::new())
        {
            panic!("module cycle: {}", c.join(" → "));
        }
    }
}

#[test]
fn the_checker_sees_uses() {
    // The parser itself: plain paths, groups, nested groups, comments.
    let code = code_of(
        "use crate::a::X;\nuse crate::{b, c::{D, E}, d::F};\n// crate::zz\nlet x = crate::e::f();\n",
    );
    let got: Vec<String> = uses(&code).into_iter().collect();
    assert_eq!(got, ["a", "b", "c", "d", "e"]);
}

#[test]
fn plan_touches_no_file() {
    // The plan stage computes from data it is given: no file system, and
    // (checked above) no store source, roots or reports.
    let mut found = Vec::new();
    for f in files_of("plan").into_iter().chain(files_of("check")) {
        let code = code_of(&std::fs::read_to_string(&f).unwrap());
        for needle in ["std::fs", "File::open", "read_to_string", "OpenOptions"] {
            if code.contains(needle) {
                found.push(format!("{}: {needle}", f.display()));
            }
        }
    }
    assert!(found.is_empty(), "file access in the plan stage: {found:?}");
}
