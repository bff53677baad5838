//! Installables as ROOTs through the binary: each form (`-f FILE ATTR`,
//! `--expr`, `.#attr`, `path:DIR#attr`, `^out,dev`, `^*`, a `.drv` and
//! `DRV^out`) gives the same answer as the output paths themselves; an
//! installable not built locally is explained from a `file://` cache that
//! holds its outputs, and nothing is built (the store gains no path of its
//! build graph, and strace shows no build). Offline: a Nix file and a `path:`
//! flake around the ROCm-shaped example (examples/rocm-mini).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::common;
use crate::common::{ExampleCopy, example_copy, heft, nix, nix_build, run};
use serde_json::Value;

struct Fixture {
    dir: PathBuf,
    /// llama-cpp-rocm's output, built.
    rocm: String,
    /// variants.hipblas-split's outputs, built: out, dev, doc.
    split: Vec<String>,
    /// The unbuilt derivation's output (built once, copied to `cache`,
    /// then deleted from the local store).
    unbuilt_out: String,
    cache: PathBuf,
    /// greet.nix built with `--argstr greeting hi`.
    greet_hi: String,
    /// lookup.nix built with `-I DIR/search`.
    lookup: String,
    nonce: String,
}

fn fx() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let ExampleCopy { dir, system, nonce } = example_copy("nix-heft-installable-cli-");
        // A ROCm-shaped package nobody on the machine has: it refers to
        // rocblas, which the cache holds too.
        std::fs::write(
            dir.join("unbuilt.nix"),
            format!(
                r#"let p = import ./default.nix {{ system = {system}; }}; in
derivation {{
  name = "unbuilt-{nonce}";
  system = {system};
  builder = "/bin/sh";
  args = [ "-c" "echo ${{p.rocblas}} > $out" ];
}}"#
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("flake.nix"),
            format!(
                r#"{{
  outputs = {{ self }}:
    let p = import ./default.nix {{ system = {system}; }};
    in {{
      packages.{system} = {{
        default = p;
        hipblas-split = p.variants.hipblas-split;
        unbuilt = import ./unbuilt.nix;
      }};
    }};
}}"#
            ),
        )
        .unwrap();
        // A function of `greeting` (built with `--argstr greeting hi`
        // only), a lookup through the search path (built with `-I`), an
        // evaluation that fails two calls deep, and an import from a
        // derivation nobody has built.
        std::fs::write(
            dir.join("greet.nix"),
            format!(
                r#"{{ greeting ? "x" }}: derivation {{
  name = "greet-${{greeting}}-{nonce}"; system = {system}; builder = "/bin/sh";
  args = [ "-c" "echo ${{greeting}} > $out" ];
}}"#
            ),
        )
        .unwrap();
        let lookup_dir = dir.join("search").join(format!("heft-lookup-{nonce}"));
        std::fs::create_dir_all(&lookup_dir).unwrap();
        std::fs::write(lookup_dir.join("value.nix"), "\"found\"\n").unwrap();
        std::fs::write(
            dir.join("lookup.nix"),
            format!(
                r#"derivation {{
  name = "lookup-${{import <heft-lookup-{nonce}/value.nix>}}-{nonce}"; system = {system};
  builder = "/bin/sh"; args = [ "-c" "echo > $out" ];
}}"#
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("fail.nix"),
            r#"let inner = x: throw "boom ${x}"; in { pkg = inner "deep"; }"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("ifd.nix"),
            format!(
                r#"import (derivation {{
  name = "ifd-cli-{nonce}"; system = {system}; builder = "/bin/sh";
  args = [ "-c" "echo 'derivation {{ name = \"after-ifd-{nonce}\"; system = {system_escaped}; builder = \"/bin/sh\"; args = [ \"-c\" \"echo > $out\" ]; }}' > $out" ];
}})"#,
                system_escaped = system.replace('"', "\\\"")
            ),
        )
        .unwrap();
        let greet_hi = run(Command::new("nix-build")
            .arg(dir.join("greet.nix"))
            .args(["--argstr", "greeting", "hi", "--no-out-link"])
            .args(["--option", "sandbox", "false", "--option", "substituters", ""]))
        .trim()
        .to_string();
        let lookup = run(Command::new("nix-build")
            .arg(dir.join("lookup.nix"))
            .arg("-I")
            .arg(dir.join("search"))
            .arg("--no-out-link")
            .args(["--option", "sandbox", "false", "--option", "substituters", ""]))
        .trim()
        .to_string();
        let file = dir.join("default.nix");
        let rocm = nix_build(&file, &[]).pop().unwrap();
        let split = nix_build(
            &file,
            &[
                "variants.hipblas-split.out",
                "variants.hipblas-split.dev",
                "variants.hipblas-split.doc",
            ],
        );
        assert_eq!(split.len(), 3, "{split:?}");
        let unbuilt_out = nix_build(&dir.join("unbuilt.nix"), &[]).pop().unwrap();
        let cache = dir.join("cache");
        run(nix()
            .args(["copy", "--to"])
            .arg(format!(
                "file://{}?secret-key={}",
                cache.display(),
                common::test_key().secret.display()
            ))
            .arg(&unbuilt_out));
        run(Command::new("nix-store").args(["--delete", &unbuilt_out]));
        assert!(!Path::new(&unbuilt_out).exists());
        Fixture {
            dir,
            rocm,
            split,
            unbuilt_out,
            cache,
            greet_hi,
            lookup,
            nonce,
        }
    })
}

/// nix-heft in `cwd` with `args`: exit code, stdout, stderr.
fn heft_in(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = heft().current_dir(cwd).args(args).output().unwrap();
    let r = (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(!r.2.contains("panicked"), "{}", r.2);
    r
}

/// `size --json` of `args` (flags and ROOTs), which must succeed.
fn size(args: &[&str]) -> Value {
    // Flags before the command, ROOTs after it.
    let (flags, roots): (Vec<&str>, Vec<&str>) = split_roots(args);
    let mut all: Vec<&str> = flags;
    all.extend(["size", "--json"]);
    all.extend(roots);
    let (code, out, err) = heft_in(&fx().dir, &all);
    assert_eq!(code, 0, "{all:?}: {err}");
    serde_json::from_str(&out).unwrap()
}

/// The ROOTs of `args`: what follows `--`.
fn split_roots<'a>(args: &[&'a str]) -> (Vec<&'a str>, Vec<&'a str>) {
    let at = args.iter().position(|a| *a == "--").unwrap();
    (args[..at].to_vec(), args[at + 1..].to_vec())
}

fn the_paths(paths: &[&str]) -> Value {
    let mut a = vec!["--"];
    a.extend(paths);
    size(&a)
}

#[test]
fn every_form_gives_the_output_paths_answer() {
    let _store = store_lock();
    let f = fx();
    let file = f.dir.join("default.nix").display().to_string();
    let flake = format!("path:{}", f.dir.display());
    let want = the_paths(&[&f.rocm]);
    assert_eq!(want["roots"][0], f.rocm, "{want}");
    let expr = format!("import {file} {{}}");
    for args in [
        vec!["-f", &file, "--", "."],
        vec!["--file", &file, "--", "llama-cpp"],
        vec!["--impure", "--expr", &expr, "--", "."],
        vec!["--", ".#default"],
        vec!["--", &format!("{flake}#default")],
    ] {
        assert_eq!(size(&args), want, "{args:?}");
    }
    let split: Vec<&str> = f.split.iter().map(String::as_str).collect();
    let (out, dev) = (split[0], split[1]);
    let want = the_paths(&[out, dev]);
    for args in [
        vec!["-f", &file, "--", "variants.hipblas-split^out,dev"],
        vec!["--", ".#hipblas-split^out,dev"],
        vec!["--", &format!("{flake}#hipblas-split^out,dev")],
    ] {
        assert_eq!(size(&args), want, "{args:?}");
    }
    let want = the_paths(&split);
    for args in [
        vec!["-f", &file, "--", "variants.hipblas-split^*"],
        vec!["--", ".#hipblas-split^*"],
        // -f without a selection: every output, as `nix build -f` takes.
        vec!["-f", &file, "--", "variants.hipblas-split"],
    ] {
        assert_eq!(size(&args), want, "{args:?}");
    }
    // A `.drv` means its outputs (as `nix path-info DRV`); `^dev` one.
    let drv = run(Command::new("nix-instantiate")
        .arg(&file)
        .args(["-A", "variants.hipblas-split"]))
    .trim()
    .to_string();
    // In the file's (sorted) order of output names, as Nix lists them.
    assert_eq!(the_paths(&[dev, split[2], out]), size(&["--", &drv]));
    assert_eq!(
        the_paths(&[&format!("{drv}^dev")]),
        the_paths(&[dev]),
        "{drv}^dev"
    );
}

#[test]
fn installables_in_why_and_diff() {
    let _store = store_lock();
    let f = fx();
    let file = f.dir.join("default.nix").display().to_string();
    // why ROOT DEP, both attribute paths, against the store paths.
    let by_attr = heft_in(
        &f.dir,
        &["-f", &file, "--json", "why", "llama-cpp", "rocblas"],
    );
    assert_eq!(by_attr.0, 0, "{}", by_attr.2);
    let rocblas =
        run(Command::new("nix-build")
            .arg(&file)
            .args(["-A", "rocblas", "--no-out-link"]))
        .trim()
        .to_string();
    let by_path = heft_in(&f.dir, &["--json", "why", &f.rocm, &rocblas]);
    assert_eq!(by_path.0, 0, "{}", by_path.2);
    let (a, b): (Value, Value) = (
        serde_json::from_str(&by_attr.1).unwrap(),
        serde_json::from_str(&by_path.1).unwrap(),
    );
    // The DEP argument is echoed as given; everything else agrees.
    let strip = |mut v: Value| {
        v.as_object_mut().unwrap().remove("dep");
        v
    };
    assert_eq!(strip(a), strip(b));
    // diff BEFORE AFTER as flake installables.
    let d = heft_in(
        &f.dir,
        &["--json", "diff", ".#default", ".#hipblas-split^out"],
    );
    let p = heft_in(&f.dir, &["--json", "diff", &f.rocm, &f.split[0]]);
    assert_eq!((d.0, &d.1), (p.0, &p.1), "{}", d.2);
}

/// Held by every test here: they evaluate flakes and build, which add
/// paths named with the fixture's nonce to the store, and the test that
/// looks for new such paths must not see another test's.
static STORE: Mutex<()> = Mutex::new(());

fn store_lock() -> MutexGuard<'static, ()> {
    STORE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The local store's valid paths.
fn valid_paths() -> BTreeSet<String> {
    run(nix().args(["path-info", "--all"]))
        .lines()
        .map(str::to_string)
        .collect()
}

/// Every path that building or substituting `drv` could add to the store:
/// its closure (input derivations and sources) and their outputs.
fn build_graph(drv: &str) -> BTreeSet<String> {
    let closure = qr(drv);
    let drvs: Vec<&String> = closure.iter().filter(|p| p.ends_with(".drv")).collect();
    let outputs = run(Command::new("nix-store")
        .args(["-q", "--outputs"])
        .args(&drvs));
    closure
        .iter()
        .cloned()
        .chain(outputs.lines().map(str::to_string))
        .collect()
}

#[test]
fn unbuilt_installable_is_explained_from_the_cache_and_never_built() {
    let _store = store_lock();
    let f = fx();
    let cache = format!("file://{}", f.cache.display());
    let unbuilt = f.dir.join("unbuilt.nix").display().to_string();
    let graph = build_graph(&instantiate(Path::new(&unbuilt), None));
    assert!(graph.contains(&f.unbuilt_out), "{graph:?}");
    let before = valid_paths();
    let trace = f.dir.join("strace.log");
    let out = Command::new("strace")
        .args(["-f", "-e", "trace=execve", "-o"])
        .arg(&trace)
        .arg(assert_cmd::cargo::cargo_bin("nix-heft"))
        .args(["--store", &cache, "-f", &unbuilt, "--json", "size", "."])
        // The cache is signed with the test key, which this trusts.
        .env("NIX_CONFIG", common::trusting_conf())
        .current_dir(&f.dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let want = heft_in(
        &f.dir,
        &["--store", &cache, "--json", "size", &f.unbuilt_out],
    );
    assert_eq!(got, serde_json::from_str::<Value>(&want.1).unwrap());
    assert_eq!(got["roots"][0], f.unbuilt_out.as_str());
    // Only paths of the unbuilt package's build graph, or named with the
    // fixture's nonce, can be this run's: the suite's other modules run in
    // the same process and add paths of their own meanwhile.
    let after = valid_paths();
    let gained: Vec<&String> = after
        .difference(&before)
        .filter(|p| graph.contains(*p) || p.contains(&f.nonce))
        .collect();
    assert!(gained.is_empty(), "the store gained {gained:?}");
    assert!(!Path::new(&f.unbuilt_out).exists());
    let log = std::fs::read_to_string(&trace).unwrap();
    let execs: Vec<&str> = log.lines().filter(|l| l.contains("execve(")).collect();
    // The evaluation ran (so the trace saw the children) …
    assert!(
        execs.iter().any(|l| l.contains("\"eval\"")),
        "no nix eval in the trace:\n{log}"
    );
    // … and nothing built or realised.
    for l in &execs {
        assert!(
            !l.contains("nix-build")
                && !l.contains("\"build\"")
                && !l.contains("--realise")
                && !l.contains("\"-r\""),
            "a build was run: {l}"
        );
    }

    // The same installable against the local store: the missing output is
    // named, with the ways to get it; exit 1.
    let (code, stdout, err) = heft_in(&f.dir, &["-f", &unbuilt, "size", "."]);
    assert_eq!(code, 1, "{err}");
    assert!(stdout.is_empty());
    assert!(err.contains(&f.unbuilt_out), "{err}");
    assert!(err.contains("--store https://cache.nixos.org"), "{err}");
    assert!(err.contains("nix build"), "{err}");
}

#[test]
fn evaluation_failures_and_missing_nix() {
    let _store = store_lock();
    let f = fx();
    let file = f.dir.join("default.nix").display().to_string();
    // Nix's own words, exit 1.
    let (code, out, err) = heft_in(&f.dir, &["-f", &file, "size", "nosuch"]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains("attribute 'nosuch' in selection path 'nosuch' not found"),
        "{err}"
    );
    let (code, _, err) = heft_in(&f.dir, &["size", ".#nosuch"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("does not provide attribute"), "{err}");
    // No `nix` on PATH: exit 2 naming what is needed; store paths still work.
    let empty = tempfile::tempdir().unwrap();
    let o = heft()
        .env("PATH", empty.path())
        .current_dir(&f.dir)
        .args(["size", ".#default"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`nix` command") && err.contains("PATH"),
        "{err}"
    );
    let o = heft()
        .env("PATH", empty.path())
        .args(["size", &f.rocm])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // --file and --expr together: a usage error from clap.
    let (code, _, _) = heft_in(&f.dir, &["-f", &file, "--expr", "1", "size", "x"]);
    assert_eq!(code, 2);
}

/// The roots `size --json` of `args` reports (which must succeed).
fn roots_of(args: &[&str]) -> Vec<String> {
    let v = size(args);
    v["roots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn arg_argstr_include_and_show_trace_pass_through() {
    let _store = store_lock();
    let f = fx();
    let greet = f.dir.join("greet.nix").display().to_string();
    // --argstr and --arg, after the command or before it, as Nix users
    // type them.
    for args in [
        vec!["-f", &greet, "--argstr", "greeting", "hi", "--", "."],
        vec!["-f", &greet, "--arg", "greeting", r#""h" + "i""#, "--", "."],
        // The last of a name wins, in the order given (as in Nix).
        vec![
            "--file", &greet, "--arg", "greeting", "1", "--argstr", "greeting", "hi", "--", ".",
        ],
        vec![
            "--file", &greet, "--argstr", "greeting", "x", "--arg", "greeting", r#""hi""#, "--",
            ".",
        ],
    ] {
        assert_eq!(roots_of(&args), [f.greet_hi.as_str()], "{args:?}");
    }
    let (code, out, err) = heft_in(
        &f.dir,
        &[
            "-f", &greet, "size", ".", "--argstr", "greeting", "hi", "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&f.greet_hi), "{out}");
    // Without them, the default's output, which nobody built.
    let (code, _, err) = heft_in(&f.dir, &["-f", &greet, "size", "."]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("-greet-x-{}", f.nonce)) && err.contains("is not valid"),
        "{err}"
    );

    // -I, both forms; without it, Nix's words, which name -I.
    let lookup = f.dir.join("lookup.nix").display().to_string();
    let search = f.dir.join("search").display().to_string();
    let named = format!("heft-lookup-{}={search}/heft-lookup-{}", f.nonce, f.nonce);
    for include in [&search, &named] {
        assert_eq!(
            roots_of(&["-f", &lookup, "-I", include, "--", "."]),
            [f.lookup.as_str()]
        );
    }
    let (code, _, err) = heft_in(&f.dir, &["-f", &lookup, "size", "."]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("search path") && err.contains("-I"), "{err}");

    // --show-trace: Nix's trace of the failing call comes through.
    let fail = f.dir.join("fail.nix").display().to_string();
    let (code, _, short) = heft_in(&f.dir, &["-f", &fail, "size", "pkg"]);
    assert_eq!(code, 1, "{short}");
    let (code, _, traced) = heft_in(&f.dir, &["-f", &fail, "size", "pkg", "--show-trace"]);
    assert_eq!(code, 1, "{traced}");
    assert!(short.contains("boom deep") && traced.contains("boom deep"));
    assert!(!short.contains("while evaluating 'inner'"), "{short}");
    assert!(traced.contains("while evaluating 'inner'"), "{traced}");
}

#[test]
fn flake_references_without_a_fragment() {
    let _store = store_lock();
    let f = fx();
    let flake = format!("path:{}", f.dir.display());
    // `path:DIR` means its default package, as `nix build path:DIR` does.
    assert_eq!(roots_of(&["--", &flake]), [f.rocm.as_str()]);
    assert_eq!(
        size(&["--", &flake]),
        size(&["--", &format!("{flake}#default")])
    );
    // A flake without a default package: Nix's words, and what to add.
    let nodefault = f.dir.join("nodefault");
    std::fs::create_dir_all(&nodefault).unwrap();
    std::fs::write(
        nodefault.join("flake.nix"),
        "{ outputs = { self }: { packages = { }; }; }",
    )
    .unwrap();
    let bare = format!("path:{}", nodefault.display());
    let (code, out, err) = heft_in(&f.dir, &["size", &bare]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("does not provide attribute"), "{err}");
    assert!(err.contains(&format!("'{bare}#NAME'")), "{err}");
    assert!(!err.contains("No such file"), "{err}");
    // A flake's directory without `#` stays a path to nix-heft, and the
    // error says to add one; a path outside the store is a usage
    // mistake (exit 2, as `size /etc/passwd`).
    let (code, _, err) = heft_in(&f.dir, &["size", "./nodefault"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("'./nodefault#default'"), "{err}");
}

#[test]
fn import_from_derivation_says_what_to_build_and_the_command_works() {
    let _store = store_lock();
    let f = fx();
    let ifd = f.dir.join("ifd.nix").display().to_string();
    let (code, out, err) = heft_in(&f.dir, &["-f", &ifd, "size", "."]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains("imports from a derivation")
            && err.contains(&format!("-ifd-cli-{}.drv", f.nonce))
            && err.contains("read-only"),
        "{err}"
    );
    // The command the error gives, run as given: it builds what the
    // evaluation imports, not the package.
    let command = err
        .lines()
        .skip_while(|l| !l.contains("unless it is built already:"))
        .nth(1)
        .unwrap_or_else(|| panic!("no command in: {err}"))
        .trim()
        .to_string();
    assert!(command.starts_with("nix "), "{command}");
    let built = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .current_dir(&f.dir)
        // This machine's settings for a build (the test store has no
        // sandbox, there is no network), not part of the command.
        .env("NIX_CONFIG", "sandbox = false\nsubstituters =")
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    // Then, as the error says, with import from derivation allowed the
    // evaluation goes through: the package's own output is not built.
    let allow = ["--option", "allow-import-from-derivation", "true"];
    let mut args = vec!["-f", ifd.as_str()];
    args.extend(allow);
    args.extend(["size", "."]);
    let (code, _, err) = heft_in(&f.dir, &args);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("-after-ifd-{}", f.nonce)) && err.contains("is not valid"),
        "{err}"
    );
    assert!(!err.contains("imports from a derivation"), "{err}");
    // Built, it is read.
    let after = run(Command::new("nix-build").arg(&ifd).args([
        "--no-out-link",
        "--option",
        "sandbox",
        "false",
        "--option",
        "substituters",
        "",
    ]))
    .trim()
    .to_string();
    let mut args = vec!["-f", ifd.as_str()];
    args.extend(allow);
    args.extend(["--", "."]);
    assert_eq!(roots_of(&args), [after]);
}

// ---- The build graph (--derivation) ----

/// `nix-instantiate FILE [-A ATTR]`: the `.drv` path.
fn instantiate(file: &Path, attr: Option<&str>) -> String {
    let mut c = Command::new("nix-instantiate");
    c.arg(file);
    if let Some(a) = attr {
        c.args(["-A", a]);
    }
    run(&mut c).trim().to_string()
}

/// The outputs of a derivation, as `nix-store -q --outputs` lists them.
fn outputs_of(drv: &str) -> Vec<String> {
    run(Command::new("nix-store").args(["-q", "--outputs", drv]))
        .lines()
        .map(str::to_string)
        .collect()
}

/// A node's size in the build graph as Nix gives it: a derivation's
/// outputs' NAR sizes summed (`nix path-info`; every output must be
/// valid), a source's own.
fn own_size(path: &str) -> u64 {
    let of: Vec<String> = if path.ends_with(".drv") {
        outputs_of(path)
    } else {
        vec![path.to_string()]
    };
    let info = run(nix().args(["path-info", "--json"]).args(&of));
    let info: Value = serde_json::from_str(&info).unwrap();
    info.as_array()
        .unwrap()
        .iter()
        .map(|i| i["narSize"].as_u64().unwrap())
        .sum()
}

/// `nix-store -qR` of one path.
fn qr(path: &str) -> std::collections::BTreeSet<String> {
    run(Command::new("nix-store").args(["-qR", path]))
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn derivation_graph_is_nix_store_qr_with_output_sizes() {
    let _store = store_lock();
    let f = fx();
    let file = f.dir.join("default.nix");
    let drv = instantiate(&file, None);
    let (code, out, err) = heft_in(&f.dir, &["--json", "size", "--derivation", &drv]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let nodes: std::collections::BTreeSet<String> = v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect();
    let want: std::collections::BTreeSet<String> =
        run(Command::new("nix-store").args(["-qR", &drv]))
            .lines()
            .map(str::to_string)
            .collect();
    assert_eq!(nodes, want);
    assert!(nodes.iter().filter(|n| n.ends_with(".drv")).count() > 10);
    // Every output is built: a derivation's SELF is its outputs' NAR
    // sizes, as `nix path-info` has them; a source's its own.
    assert!(v.get("unknown_outputs").is_none(), "{v}");
    let mut checked = 0;
    for p in v["paths"].as_array().unwrap() {
        let path = p["path"].as_str().unwrap();
        assert_eq!(p["nar_size"].as_u64().unwrap(), own_size(path), "{path}");
        checked += 1;
    }
    assert_eq!(checked, want.len());
    // The installable means the same derivation.
    let by_attr = heft_in(
        &f.dir,
        &[
            "-f",
            file.to_str().unwrap(),
            "--json",
            "size",
            "--derivation",
            ".",
        ],
    );
    assert_eq!(by_attr.1, out, "{}", by_attr.2);
}

/// The store paths of `nix why-depends`' tree, in order.
fn paths_in(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || c == '\u{1b}' || c == '─' || c == '└')
        .filter_map(|w| w.find("/nix/store/").map(|i| &w[i..]))
        .map(|w| {
            w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric() && c != '+' && c != '_')
                .trim_end_matches("[0m")
                .to_string()
        })
        .collect()
}

#[test]
fn why_derivation_agrees_with_nix_why_depends() {
    let _store = store_lock();
    let f = fx();
    let file = f.dir.join("default.nix");
    let root = instantiate(&file, None);
    for dep in ["rocblas-tensile.gfx90a", "rocm-llvm", "rocblas"] {
        let dep = instantiate(&file, Some(dep));
        let nix_says = run(nix().args(["why-depends", "--derivation", &root, &dep]));
        let nix_chain = paths_in(&nix_says);
        assert_eq!(nix_chain.first(), Some(&root), "{nix_says}");
        assert_eq!(nix_chain.last(), Some(&dep), "{nix_says}");
        let (code, out, err) = heft_in(&f.dir, &["--json", "why", "--derivation", &root, &dep]);
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let ours: Vec<Vec<String>> = serde_json::from_value(v["chains"].clone()).unwrap();
        // Nix shows one shortest chain; ours (the strongest) is one of the
        // same length, and Nix's is among all of ours.
        assert_eq!(ours[0].len(), nix_chain.len(), "{nix_says}\n{out}");
        let (_, all, _) = heft_in(
            &f.dir,
            &["--json", "why", "--all", "--derivation", &root, &dep],
        );
        let all: Value = serde_json::from_str(&all).unwrap();
        let all: Vec<Vec<String>> = serde_json::from_value(all["chains"].clone()).unwrap();
        assert!(all.contains(&nix_chain), "{nix_chain:?} not in {all:?}");
    }
    // Text: each edge's evidence is the input's entry in the .drv file.
    let dep = instantiate(&file, Some("rocblas-tensile.gfx90a"));
    let (_, text, _) = heft_in(&f.dir, &["why", "--derivation", &root, &dep]);
    assert!(text.contains(&format!("(\"{dep}\",[\"out")), "{text}");
    assert!(
        text.contains("drv-input") && text.contains("build: an input of the derivation"),
        "{text}"
    );
}

#[test]
fn derivation_outputs_unknown_then_known_from_a_cache() {
    let _store = store_lock();
    let f = fx();
    let unbuilt = f.dir.join("unbuilt.nix");
    let drv = instantiate(&unbuilt, None);
    let (code, out, err) = heft_in(&f.dir, &["--json", "size", "--derivation", &drv]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["unknown_outputs"],
        serde_json::json!([{"derivation": drv, "outputs": [format!("out {}", f.unbuilt_out)]}])
    );
    let own = |v: &Value| {
        v["paths"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["path"] == drv.as_str())
            .unwrap()["nar_size"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(own(&v), 0);
    let (_, text, _) = heft_in(&f.dir, &["size", "--derivation", &drv]);
    assert!(
        text.contains("1 derivation(s) with outputs of unknown size")
            && text.contains(&f.unbuilt_out),
        "{text}"
    );
    // With the cache that holds the output: its size, from the narinfo.
    let cache = format!("file://{}", f.cache.display());
    let (code, out, err) = heft_in(
        &f.dir,
        &["--store", &cache, "--json", "size", "--derivation", &drv],
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v.get("unknown_outputs").is_none(), "{v}");
    let info = run(nix()
        .args(["path-info", "--json", "--store", &cache])
        .arg(&f.unbuilt_out));
    let info: Value = serde_json::from_str(&info).unwrap();
    assert_eq!(own(&v), info[0]["narSize"].as_u64().unwrap());
    // The same cache over HTTP (its narinfos requested in parallel).
    let server = common::http_server::FileServer::start(&f.cache);
    let (code, out, err) = heft_in(
        &f.dir,
        &[
            "--store",
            &server.url(),
            "--refresh",
            "--json",
            "size",
            "--derivation",
            &drv,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v.get("unknown_outputs").is_none(), "{v}");
    assert_eq!(own(&v), info[0]["narSize"].as_u64().unwrap());
    let hash = &f.unbuilt_out["/nix/store/".len()..][..32];
    assert_eq!(
        server.count(&format!("{hash}.narinfo")),
        1,
        "{:?}",
        server.log()
    );
    // A derivation the local store lacks: the build graph needs .drv
    // files, which a binary cache does not have.
    let missing = format!("/nix/store/{}-gone-1.0.drv", "0".repeat(32));
    let (code, _, err) = heft_in(
        &f.dir,
        &["--store", &cache, "size", "--derivation", &missing],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&missing) && err.contains("binary cache"),
        "{err}"
    );
}

#[test]
fn diff_derivation_names_the_changed_input() {
    let _store = store_lock();
    let f = fx();
    let file = f.dir.join("two-tops.nix");
    std::fs::write(
        &file,
        r#"let
  p = import ./default.nix { };
  mk = name: deps: derivation {
    inherit name; system = builtins.currentSystem; builder = "/bin/sh";
    args = [ "-c" "echo ${toString deps} > $out" ];
  };
  x1 = mk "xinput-1.0" [ p.rocblas ];
  x2 = mk "xinput-2.0" [ p.rocblas ];
in { before = mk "top-1.0" [ p.clr x1 ]; after = mk "top-1.0" [ p.clr x2 ]; }"#,
    )
    .unwrap();
    let (before, after) = (
        instantiate(&file, Some("before")),
        instantiate(&file, Some("after")),
    );
    let (code, out, err) = heft_in(&f.dir, &["--json", "diff", "--derivation", &before, &after]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let names = |key: &str| -> Vec<String> {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["path"].as_str().unwrap().to_string())
            .collect()
    };
    let (added, removed) = (names("added"), names("removed"));
    // The changed input and the derivation that uses it; nothing else
    // (clr, rocblas and their inputs are shared).
    assert_eq!(added.len(), 2, "{added:?}");
    assert_eq!(removed.len(), 2, "{removed:?}");
    let new_input = added
        .iter()
        .find(|p| p.ends_with("-xinput-2.0.drv"))
        .unwrap();
    assert!(removed.iter().any(|p| p.ends_with("-xinput-1.0.drv")));
    assert!(added.contains(&after) && removed.contains(&before));
    let entry = v["added"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == new_input.as_str())
        .unwrap();
    assert_eq!(entry["why"]["referrer"], after.as_str(), "{entry}");
    // The same through installables, and the text names the input.
    let (code, text, err) = heft_in(
        &f.dir,
        &[
            "-f",
            file.to_str().unwrap(),
            "diff",
            "--derivation",
            "before",
            "after",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("xinput-2.0.drv") && text.contains("replaces xinput-1.0.drv"),
        "{text}"
    );
}

#[test]
fn diff_derivation_ranks_changed_inputs_by_what_they_drag_in() {
    let _store = store_lock();
    let f = fx();
    let file = f.dir.join("ranked-tops.nix");
    // Two inputs of `top` change: xa (with its own new dependency, two
    // small derivations) and yb (one derivation whose output is large).
    // Shell builtins only: the builder has no PATH.
    std::fs::write(
        &file,
        r#"let
  p = import ./default.nix { };
  mk = name: deps: script: derivation {
    inherit name; system = builtins.currentSystem; builder = "/bin/sh";
    args = [ "-c" "echo ${toString deps} > $out; ${script}" ];
  };
  big = "i=0; while [ $i -lt 3000 ]; do echo 0123456789012345678901234567890123456789 >> $out; i=$((i+1)); done";
  side = v: rec {
    xdep = mk "xdep-${v}" [ ] "";
    xa = mk "xa-${v}" [ xdep ] "";
    yb = mk "yb-${v}" [ ] (if v == "2" then big else "");
    top = mk "top-1.0" [ p.clr xa yb ] "";
  };
in { before = (side "1").top; after = (side "2").top; }"#,
    )
    .unwrap();
    let (before, after) = (
        instantiate(&file, Some("before")),
        instantiate(&file, Some("after")),
    );
    // AFTER built, so that its outputs' sizes are known.
    nix_build(&file, &["after"]);
    let (code, out, err) = heft_in(&f.dir, &["--json", "diff", "--derivation", &before, &after]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    // What each added path drags in, as Nix sees it: its `nix-store -qR`
    // less BEFORE's, sized by `nix path-info`.
    let old = qr(&before);
    let added = v["added"].as_array().unwrap();
    let mut got = Vec::new();
    for a in added {
        let path = a["path"].as_str().unwrap();
        let new: Vec<String> = qr(path).difference(&old).cloned().collect();
        let bytes: u64 = new.iter().map(|p| own_size(p)).sum();
        assert_eq!(a["drags"]["paths"].as_u64(), Some(new.len() as u64), "{a}");
        assert_eq!(a["drags"]["bytes"].as_u64(), Some(bytes), "{a}");
        got.push((
            path.rsplit_once('-')
                .unwrap()
                .0
                .split_once('-')
                .unwrap()
                .1
                .to_string(),
            bytes,
        ));
    }
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    // The root drags in everything new; then the large yb before xa,
    // which drags in two paths but fewer bytes; then xa's dependency.
    assert_eq!(names, ["top", "yb", "xa", "xdep"], "{got:?}");
    assert!(got[1].1 > 100_000 && got[2].1 < got[1].1, "{got:?}");
    let (code, text, err) = heft_in(&f.dir, &["diff", "--derivation", &before, &after]);
    assert_eq!(code, 0, "{err}");
    assert!(
        // Each replaces its older self: changed, not added (issue 30).
        text.contains("4 path(s) changed (rebuilt or another version), by what each drags in:"),
        "{text}"
    );
    let yb = text.lines().find(|l| l.contains("yb-2.drv")).unwrap();
    assert!(yb.contains("drags in 1 path(s)"), "{text}");
    // The page of the same comparison lists the added inputs in that order.
    let page = f.dir.join("ranked.html");
    let (code, _, err) = heft_in(
        &f.dir,
        &[
            "report",
            "--derivation",
            "--diff",
            &before,
            &after,
            "-o",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    let data = html
        .split_once(r#"<script type="application/json" id="heft-data">"#)
        .unwrap()
        .1
        .split_once("</script>")
        .unwrap()
        .0;
    let data: Value = serde_json::from_str(data).unwrap();
    let on_page: Vec<&str> = data["diff"]["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            data["paths"][a["i"].as_u64().unwrap() as usize]["p"]
                .as_str()
                .unwrap()
        })
        .collect();
    let in_diff: Vec<&str> = added.iter().map(|a| a["path"].as_str().unwrap()).collect();
    assert_eq!(on_page, in_diff);
}
