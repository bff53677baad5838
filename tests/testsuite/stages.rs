//! What Cargo and the compiler cannot keep of docs/ARCHITECTURE.md's rules.
//!
//! The crates are the layers (format → types → trace, store, eval → graph →
//! scan → analysis → ops → report → browse → the binary): a crate cannot
//! name a crate above it, because it does not depend on it, so no check is
//! needed for that. Left here are the rules of the manifests and of code
//! inside a crate:
//! - which crate may depend on which below it: only ops runs Nix (eval),
//!   and the analysis reads no store (no nix-heft-store), which Cargo then
//!   keeps;
//! - the analysis touches no file, process or socket of std either;
//! - no library crate prints or depends on the command line's crates
//!   (clap, indicatif, anyhow);
//! - no library crate re-exports or renames another (`pub(crate) use
//!   nix_heft_store::source;`): a path says which crate holds its code.
//!
//! The code is read as the compiler reads it, parsed by `syn`: comments and
//! string literals are not code, every `#[cfg(test)]` item is skipped
//! wherever it sits (a unit test may build fixtures with anything), and the
//! arguments of a macro (`format!`, `write!`) are read as the expressions
//! they are.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file below `dir`, sorted.
fn rs_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
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

/// What a file's code names outside its `#[cfg(test)]` items.
#[derive(Default, Debug)]
struct Names {
    /// Every path as written: each leaf of a `use` tree in full
    /// (`std::fs::File`), every path of an expression, type or pattern
    /// (`std::fs::read`, `File::open`).
    paths: Vec<String>,
    /// Every macro invoked, by its last segment (`println`).
    macros: Vec<String>,
    /// Each public `use` of a nix-heft crate's item, and each nix-heft
    /// crate renamed, as `pub use nix_heft_format::netrc` or `use
    /// nix_heft_report as report`.
    aliases: Vec<String>,
}

fn cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

fn path_string(p: &syn::Path) -> String {
    p.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

impl Names {
    /// The leaves of a `use` tree, each with the path leading to it.
    fn use_tree(&mut self, prefix: &str, t: &syn::UseTree, public: bool) {
        let join = |p: &str, i: &syn::Ident| {
            if p.is_empty() {
                i.to_string()
            } else {
                format!("{p}::{i}")
            }
        };
        match t {
            syn::UseTree::Path(p) => self.use_tree(&join(prefix, &p.ident), &p.tree, public),
            syn::UseTree::Name(n) => {
                // `use std::fs::{self, File}` names `std::fs` itself.
                let full = if n.ident == "self" {
                    prefix.to_string()
                } else {
                    join(prefix, &n.ident)
                };
                if public && full.starts_with("nix_heft_") {
                    self.aliases.push(format!("pub use {full}"));
                }
                self.paths.push(full);
            }
            syn::UseTree::Rename(r) => {
                let full = join(prefix, &r.ident);
                // A crate renamed (`use nix_heft_report as report`) makes a
                // path that hides it; an item renamed keeps its crate's
                // path at the `use`.
                if full.starts_with("nix_heft_") && (public || !full.contains("::")) {
                    let vis = if public { "pub " } else { "" };
                    self.aliases
                        .push(format!("{vis}use {full} as {}", r.rename));
                }
                self.paths.push(full);
            }
            syn::UseTree::Glob(_) => {
                if public && prefix.starts_with("nix_heft_") {
                    self.aliases.push(format!("pub use {prefix}::*"));
                }
                self.paths.push(format!("{prefix}::*"));
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, public);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Names {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match i {
            syn::Item::Const(x) => &x.attrs,
            syn::Item::Enum(x) => &x.attrs,
            syn::Item::Fn(x) => &x.attrs,
            syn::Item::Impl(x) => &x.attrs,
            syn::Item::Mod(x) => &x.attrs,
            syn::Item::Static(x) => &x.attrs,
            syn::Item::Struct(x) => &x.attrs,
            syn::Item::Trait(x) => &x.attrs,
            syn::Item::Type(x) => &x.attrs,
            syn::Item::Use(x) => &x.attrs,
            syn::Item::Macro(x) => &x.attrs,
            _ => &[],
        };
        if !cfg_test(attrs) {
            syn::visit::visit_item(self, i);
        }
    }
    fn visit_impl_item(&mut self, i: &'ast syn::ImplItem) {
        let attrs: &[syn::Attribute] = match i {
            syn::ImplItem::Const(x) => &x.attrs,
            syn::ImplItem::Fn(x) => &x.attrs,
            syn::ImplItem::Type(x) => &x.attrs,
            _ => &[],
        };
        if !cfg_test(attrs) {
            syn::visit::visit_impl_item(self, i);
        }
    }
    fn visit_stmt(&mut self, s: &'ast syn::Stmt) {
        let skip = match s {
            syn::Stmt::Local(l) => cfg_test(&l.attrs),
            syn::Stmt::Macro(m) => cfg_test(&m.attrs),
            _ => false,
        };
        if !skip {
            syn::visit::visit_stmt(self, s);
        }
    }
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let public = !matches!(u.vis, syn::Visibility::Inherited);
        self.use_tree("", &u.tree, public);
    }
    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.paths.push(path_string(p));
        syn::visit::visit_path(self, p);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if let Some(last) = m.path.segments.last() {
            self.macros.push(last.ident.to_string());
        }
        // A macro's arguments are tokens to syn; most are expressions
        // (`format!`, `write!`, `assert!`), read as such when they parse.
        let args = m.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        );
        if let Ok(args) = args {
            for a in &args {
                self.visit_expr(a);
            }
        }
        syn::visit::visit_macro(self, m);
    }
}

/// What `text`, a file of Rust, names outside its tests.
fn names_in(file: &Path, text: &str) -> Names {
    let parsed =
        syn::parse_file(text).unwrap_or_else(|e| panic!("{}: does not parse: {e}", file.display()));
    let mut n = Names::default();
    n.visit_file(&parsed);
    n
}

/// What each file of every library crate's `src` names, parsed once for
/// the checks that read them.
fn library_names() -> &'static [(PathBuf, Names)] {
    static N: std::sync::OnceLock<Vec<(PathBuf, Names)>> = std::sync::OnceLock::new();
    N.get_or_init(|| {
        library_crates()
            .iter()
            .flat_map(|k| rs_files(&k.join("src")))
            .map(|f| {
                let text = std::fs::read_to_string(&f).unwrap();
                let n = names_in(&f, &text);
                (f, n)
            })
            .collect()
    })
}

/// What each file of the library crate `krate` (crates/KRATE) names.
fn names_of_crate(krate: &str) -> impl Iterator<Item = &'static (PathBuf, Names)> {
    let src = repo().join("crates").join(krate).join("src");
    library_names()
        .iter()
        .filter(move |(f, _)| f.starts_with(&src))
}

/// The I/O of std a pure crate must not name: a path that starts so.
const IO_PATHS: &[&str] = &[
    "std::fs",
    "std::process",
    "std::net",
    "std::os::unix::net",
    "std::io::stdin",
    "File",
    "OpenOptions",
    "Command",
    "TcpStream",
    "UnixStream",
];

/// Which of `names`' paths are I/O.
fn io_of(names: &Names) -> Vec<&str> {
    names
        .paths
        .iter()
        .map(|p| p.strip_prefix("::").unwrap_or(p))
        .filter(|p| {
            IO_PATHS
                .iter()
                .any(|io| *p == *io || p.starts_with(&format!("{io}::")))
        })
        .collect()
}

/// Which of `names`' macros and paths print.
fn prints_of(names: &Names) -> Vec<String> {
    let mut out: Vec<String> = names
        .macros
        .iter()
        .filter(|m| ["println", "print", "eprintln", "eprint", "dbg"].contains(&m.as_str()))
        .map(|m| format!("{m}!"))
        .collect();
    for p in &names.paths {
        let segs: Vec<&str> = p.split("::").collect();
        let last = segs[segs.len() - 1];
        // A path of one segment is a local (`let Output { stderr, .. }`);
        // std's are `io::stderr` or a `use` of `std::io::stderr`.
        let under_io = segs.len() >= 2 && segs[segs.len() - 2] == "io";
        if under_io && (last == "stdout" || last == "stderr") {
            out.push(p.clone());
        }
    }
    out
}

#[test]
fn the_reader_reads_code_as_the_compiler_does() {
    let text = concat!(
        "use std::fs::{self, File};\nuse crate::{b, c::{D, E as F}};\n// std::process::Command\n",
        "pub use nix_heft_format::netrc;\npub(crate) use nix_heft_store::{local_cache, source};\n",
        "use nix_heft_report as report;\nuse nix_heft_store::source::RunLog;\n",
        "use nix_heft_format::store_path::name_of as full_name;\n",
        "fn f() { let x = g(\"std::net::TcpStream\", 'c', r#\"println!()\"#); stderr.len() }\n",
        "/* eprintln!() /* nested */ dbg!() */\n",
        "fn h() -> String { format!(\"{}\", std::io::stdout().lock().x) }\n",
        "#[cfg(test)]\nmod tests { fn t() { println!(); std::process::exit(0); } }\n",
        "#[cfg(test)]\nuse std::net::TcpStream;\n",
        "struct S;\nimpl S {\n    #[cfg(test)]\n    fn t() { dbg!(1); }\n    fn u() { eprint!(\"x\") }\n}\n",
    );
    let n = names_in(Path::new("sample.rs"), text);
    assert_eq!(io_of(&n), ["std::fs", "std::fs::File"]);
    assert_eq!(prints_of(&n), ["eprint!", "std::io::stdout"]);
    assert_eq!(
        n.aliases,
        [
            "pub use nix_heft_format::netrc",
            "pub use nix_heft_store::local_cache",
            "pub use nix_heft_store::source",
            "use nix_heft_report as report",
        ]
    );
    assert!(
        n.paths.contains(&"crate::c::E".to_string()),
        "{:?}",
        n.paths
    );
}

/// The analysis computes from what it is given: no file, process or
/// socket (and, by its manifest, no store).
#[test]
fn the_analysis_touches_no_file_process_or_socket() {
    let mut found = Vec::new();
    let files: Vec<_> = names_of_crate("analysis").collect();
    assert!(files.len() >= 10, "only {} files read", files.len());
    for (f, n) in files {
        for p in io_of(n) {
            found.push(format!("{}: {p}", f.display()));
        }
    }
    assert!(found.is_empty(), "I/O in the analysis: {found:#?}");
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

/// Dependencies Cargo would allow (the crate is below) that the layers
/// forbid: only the operations run Nix (eval); the analysis computes from
/// what it is given, reading no store; the reports and the browser only
/// format and draw what arrives computed, so they name no store either
/// (ARCHITECTURE.md: "report only formats").
const FORBIDDEN_BELOW: &[(&str, &str)] = &[
    ("nix-heft-graph", "nix-heft-eval"),
    ("nix-heft-scan", "nix-heft-eval"),
    ("nix-heft-analysis", "nix-heft-eval"),
    ("nix-heft-analysis", "nix-heft-store"),
    ("nix-heft-report", "nix-heft-store"),
    ("nix-heft-report", "nix-heft-eval"),
    ("nix-heft-browse", "nix-heft-store"),
    ("nix-heft-browse", "nix-heft-eval"),
];

/// The workspace's packages as Cargo reads their manifests (`cargo
/// metadata --no-deps`, offline).
fn manifests() -> serde_json::Value {
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
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn no_library_crate_depends_on_the_command_lines_crates() {
    let meta = manifests();
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
            if !dev && FORBIDDEN_BELOW.contains(&(name, d)) {
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
    let mut files = 0;
    for (f, n) in library_names() {
        files += 1;
        for p in prints_of(n) {
            found.push(format!("{}: {p}", f.display()));
        }
    }
    assert!(files >= 100, "only {files} files read");
    assert!(found.is_empty(), "a library crate prints: {found:#?}");
}

#[test]
fn no_library_crate_aliases_another() {
    // A path says where its code lives: `nix_heft_store::source::RunLog`
    // in ops, never `crate::source` through a re-export.
    let mut found = Vec::new();
    for (f, n) in library_names() {
        for a in &n.aliases {
            found.push(format!("{}: {a}", f.display()));
        }
    }
    assert!(found.is_empty(), "crate aliases: {found:#?}");
}

/// docs/ARCHITECTURE.md's "a command" row, checked by doing it: every
/// subcommand of `main.rs`'s `Command` has its files where the row says:
/// `src/commands/NAME.rs` with `NAMEArgs` (clap, its doc comment the
/// command's help) and the function `main.rs` dispatches to, its report in
/// `crates/report/src/NAME.rs` (or `NAME/`), its tests in a module of its
/// name in `tests/testsuite/` or `tests/testsuite/fast/`. The exceptions are named
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
        ("split", "tests/testsuite/fast/plan.rs"),
        ("advise", "tests/testsuite/fast/plan.rs"),
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
        // Above the struct: its derive (a clap attribute such as a group,
        // and a comment on it, may follow the derive), and above that its
        // doc comment, the command's help.
        let before: Vec<&str> = code[..at]
            .lines()
            .rev()
            .skip_while(|l| l.starts_with("#[command(") || l.starts_with("// "))
            .take(2)
            .collect();
        assert!(
            before.len() == 2
                && before[0].starts_with("#[derive(Args")
                && before[1].starts_with("///"),
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
                    root.join(format!("tests/testsuite/fast/{module}.rs"))
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

/// The survey is a workspace of its own with its own Cargo.lock, which
/// lists each library crate it uses with that crate's dependencies: a
/// change to a library manifest (a dependency added or dropped) must be
/// taken into survey/Cargo.lock too, or the survey's `cargo test --locked`
/// fails at the end of a CI run (as it did once, after ops dropped
/// globset). Checked here, offline, against the manifests as Cargo reads
/// them: each library crate's normal dependencies are what the survey's
/// lock lists for it.
#[test]
fn the_survey_lock_follows_the_library_manifests() {
    let meta = manifests();
    let mut wanted: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for pkg in meta["packages"].as_array().unwrap() {
        let name = pkg["name"].as_str().unwrap();
        if name == "nix-heft" {
            continue;
        }
        let mut deps: Vec<String> = pkg["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].is_null())
            .map(|d| d["name"].as_str().unwrap().to_string())
            .collect();
        deps.sort();
        deps.dedup();
        wanted.insert(name.to_string(), deps);
    }
    let lock: toml::Value =
        toml::from_str(&std::fs::read_to_string(repo().join("survey/Cargo.lock")).unwrap())
            .unwrap();
    let mut compared = 0;
    let mut stale = Vec::new();
    for pkg in lock["package"].as_array().unwrap() {
        let name = pkg["name"].as_str().unwrap();
        let Some(want) = wanted.get(name) else {
            continue;
        };
        compared += 1;
        // `object 0.40.0`: a name the lock disambiguates by version.
        let mut listed: Vec<String> = pkg
            .get("dependencies")
            .and_then(|d| d.as_array())
            .map(|d| {
                d.iter()
                    .map(|x| x.as_str().unwrap().split(' ').next().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default();
        listed.sort();
        listed.dedup();
        if &listed != want {
            stale.push(format!(
                "{name}: the lock lists {listed:?}, the manifest {want:?}"
            ));
        }
    }
    assert!(
        compared >= 8,
        "only {compared} library crates found in survey/Cargo.lock"
    );
    assert!(
        stale.is_empty(),
        "survey/Cargo.lock is stale (run `cargo metadata` in survey/): {stale:#?}"
    );
}

/// docs/ARCHITECTURE.md's "a command is one file": no command's module
/// names another command's (`super::roots::why`, `super::report::…`):
/// what two commands share is the context's (`commands/context/`) or a
/// module of shared flags (review, tree, installables, rules), else the
/// library's.
#[test]
fn no_command_names_another() {
    let dir = repo().join("src/commands");
    let shared = ["context", "review", "tree", "installables", "rules", "mod"];
    let commands: Vec<String> = rs_files(&dir)
        .iter()
        .filter(|f| f.parent() == Some(dir.as_path()))
        .filter_map(|f| Some(f.file_stem()?.to_str()?.to_string()))
        .filter(|m| !shared.contains(&m.as_str()))
        .collect();
    assert!(commands.len() >= 16, "{commands:?}");
    let mut found = Vec::new();
    for m in &commands {
        let f = dir.join(format!("{m}.rs"));
        let n = names_in(&f, &std::fs::read_to_string(&f).unwrap());
        for p in &n.paths {
            let other = p
                .strip_prefix("super::")
                .or_else(|| p.strip_prefix("crate::commands::"))
                .and_then(|rest| rest.split("::").next());
            if let Some(o) = other
                && o != m
                && commands.iter().any(|c| c == o)
            {
                found.push(format!("{m}.rs: {p}"));
            }
        }
    }
    assert!(found.is_empty(), "commands naming another's: {found:#?}");
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
