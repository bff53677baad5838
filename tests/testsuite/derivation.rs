//! The `.drv` parser against real Nix: every derivation in the closures of
//! the suite's fixtures (tests/fixtures/small.nix, examples/rocm-mini) and of
//! an expression written to cover what they do not (fixed outputs, flat and
//! recursive; several outputs; an input used through two of its outputs;
//! every escape Nix writes; sources), as
//! `nix-instantiate` writes them, parsed and compared field by field with
//! `nix show-derivation -r`. And `diff --derivation`'s root causes on
//! `.drv` pairs `nix-instantiate` wrote. Nothing is built.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::common;
use crate::common::{nix, repo, run};
use nix_heft_format::derivation::Derivation;
use serde_json::{Map, Value, json};

/// Fixed outputs (flat and recursive), three outputs, an argument and
/// environment values with every escape Nix writes and non-ASCII text, a
/// source from a file and one from `builtins.toFile`.
const COVERAGE_NIX: &str = r#"
let
  sys = builtins.currentSystem;
  fodRec = derivation {
    name = "fod-recursive";
    system = sys;
    builder = "/bin/sh";
    args = [ "-c" "echo" ];
    outputHashMode = "recursive";
    outputHashAlgo = "sha256";
    outputHash = "1b8m03r63zqhnjf7l5wnldhh7c134ap5vpj0850ymkq1iyzicy5s";
  };
  fodFlat = derivation {
    name = "fod-flat";
    system = sys;
    builder = "/bin/sh";
    args = [ "-c" "echo" ];
    outputHashAlgo = "sha1";
    outputHash = "0000000000000000000000000000000000000000";
  };
  script = builtins.toFile "script.sh" "echo \"quoted\"\n";
  # Used through two of its outputs, not `out`.
  helper = derivation {
    name = "helper";
    system = sys;
    builder = "/bin/sh";
    outputs = [ "out" "dev" "lib" ];
    args = [ "-c" "echo > $out; echo > $dev; echo > $lib" ];
  };
in
derivation {
  name = "coverage-1.0";
  system = sys;
  builder = "/bin/sh";
  outputs = [ "out" "dev" "lib" ];
  args = [ "-c" "a\"b\\c\nd\re\tf ünïcødé ${script}" ];
  inherit fodRec fodFlat;
  src = ./coverage-src.txt;
  tricky = "\"\\\n\r\t$ end";
  empty = "";
  helpers = "${helper.dev} ${helper.lib}";
}
"#;

/// `nix-instantiate` of `file` (every attribute when it is an attribute
/// set), the .drv paths it printed (Nix 2.8 prints an output taken from a
/// multi-output derivation as `DRV!OUTPUT`).
fn instantiate(file: &Path) -> BTreeSet<String> {
    run(Command::new("nix-instantiate").arg(file))
        .lines()
        .map(|l| l.split('!').next().unwrap().to_string())
        .collect()
}

/// What `nix show-derivation` (Nix 2.8) prints for one derivation, made
/// from the parsed one.
fn as_nix_json(d: &Derivation) -> Value {
    let outputs: Map<String, Value> = d
        .outputs
        .iter()
        .map(|o| {
            let mut v = Map::new();
            if let Some(p) = &o.path {
                v.insert("path".into(), json!(p.as_str()));
            }
            if !o.hash_algo.is_empty() {
                v.insert("hashAlgo".into(), json!(o.hash_algo));
            }
            if !o.hash.is_empty() {
                v.insert("hash".into(), json!(o.hash));
            }
            (o.name.clone(), Value::Object(v))
        })
        .collect();
    let input_drvs: Map<String, Value> = d
        .input_drvs
        .iter()
        .map(|(p, outs)| (p.as_str().to_string(), json!(outs)))
        .collect();
    let env: Map<String, Value> = d.env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    json!({
        "outputs": outputs,
        "inputSrcs": d.input_srcs.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
        "inputDrvs": input_drvs,
        "system": d.platform,
        "builder": d.builder,
        "args": d.args,
        "env": env,
    })
}

#[test]
fn every_fixture_derivation_equals_nix_show_derivation() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("coverage-src.txt"), "source\n").unwrap();
    let coverage = dir.path().join("coverage.nix");
    std::fs::write(&coverage, COVERAGE_NIX).unwrap();

    let mut tops = instantiate(&repo().join("tests/fixtures/small.nix"));
    tops.extend(instantiate(&repo().join("examples/rocm-mini/default.nix")));
    tops.extend(instantiate(&coverage));

    // Every .drv in the closures, as nix-store lists them.
    let closure: BTreeSet<String> = run(Command::new("nix-store").arg("-qR").args(&tops))
        .lines()
        .filter(|p| p.ends_with(".drv"))
        .map(str::to_string)
        .collect();
    let shown: Value =
        serde_json::from_str(&run(nix().args(["show-derivation", "-r"]).args(&tops))).unwrap();
    let shown = shown.as_object().unwrap();
    assert_eq!(
        shown.keys().cloned().collect::<BTreeSet<_>>(),
        closure,
        "nix show-derivation -r and nix-store -qR disagree on the closure"
    );

    let (mut fixed, mut multi, mut srcs, mut two_used) = (0, 0, 0, 0);
    for drv in &closure {
        let d =
            Derivation::read("/nix/store", Path::new(drv)).unwrap_or_else(|e| panic!("{drv}: {e}"));
        assert_eq!(as_nix_json(&d), shown[drv], "{drv}");
        fixed += d.is_fixed_output() as usize;
        multi += (d.outputs.len() > 1) as usize;
        srcs += !d.input_srcs.is_empty() as usize;
        two_used += d.input_drvs.iter().any(|(_, o)| o == &["dev", "lib"]) as usize;
    }
    // The closures hold what the comparison is meant to cover.
    assert!(closure.len() > 20, "only {} derivations", closure.len());
    assert_eq!(fixed, 2, "the flat and the recursive fixed output");
    assert!(multi >= 3, "multi-1.0, coverage-1.0, helper");
    assert!(srcs >= 2, "rocm-mini's src, coverage's sources");
    assert_eq!(two_used, 1, "coverage uses helper's dev and lib");

    let cov = closure
        .iter()
        .find(|p| p.ends_with("-coverage-1.0.drv"))
        .unwrap();
    let d = Derivation::read("/nix/store", Path::new(cov)).unwrap();
    let tricky = &d.env.iter().find(|(k, _)| k == "tricky").unwrap().1;
    assert_eq!(tricky, "\"\\\n\r\t$ end");
    assert!(d.args[1].contains("\r") && d.args[1].contains("ünïcødé"));
    let o: Vec<&str> = d.outputs.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(o, ["dev", "lib", "out"]);
}

// ---- `--derivation` on an output path: its deriver's build graph ----

/// `nix-heft` in `cwd` with `args`: exit code, stdout, stderr.
fn heft_in(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = common::heft().current_dir(cwd).args(args).output().unwrap();
    let r = (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(!r.2.contains("panicked"), "{}", r.2);
    r
}

/// `nix-store -qR` of one path.
fn qr(path: &str) -> BTreeSet<String> {
    run(Command::new("nix-store").args(["-qR", path]))
        .lines()
        .map(str::to_string)
        .collect()
}

/// A four-level chain app → middle → lower → leaf over `/bin/sh`, nothing
/// built. Arguments change one thing at a time: `v` leaf's own `flag`
/// (three levels below app), `extraSrc` an input source of app, `word`
/// one word of app's 5,386-character `configureFlags`, `opt` a short
/// variable of app.
const CHAIN_NIX: &str = include_str!("../fixtures/drv-chain.nix");

/// The chain's app `.drv` for `args` (nix-instantiate's own arguments).
fn chain(dir: &Path, args: &[&str]) -> String {
    run(Command::new("nix-instantiate")
        .arg(dir.join("chain.nix"))
        .args(args))
    .trim()
    .to_string()
}

/// `nix-heft diff --derivation BEFORE AFTER` with `flags`: stdout.
fn drv_diff(before: &str, after: &str, flags: &[&str]) -> String {
    let out = common::heft()
        .args(["diff", "--derivation", before, after])
        .args(flags)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    String::from_utf8(out.stdout).unwrap()
}

/// `nix-store -qR` of `path`, derivations only.
fn drv_closure(path: &str) -> BTreeSet<String> {
    run(Command::new("nix-store").args(["-qR", path]))
        .lines()
        .filter(|p| p.ends_with(".drv"))
        .map(str::to_string)
        .collect()
}

/// The deriver Nix records for an output (`nix-store -q --deriver`).
fn deriver(path: &str) -> String {
    run(Command::new("nix-store").args(["-q", "--deriver", path]))
        .trim()
        .to_string()
}

/// The `paths` of a `size --json`.
fn size_paths(json: &str) -> BTreeSet<String> {
    let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect()
}

/// With `--derivation`, an output path (or a `./result` link to one) means
/// the derivation that built it, as `nix path-info --derivation` maps it:
/// `size`, `why` and `report` read that derivation's build graph (the
/// nodes of `nix-store -qR DRV`), never the output's run-time closure, and
/// say on stderr and in the JSON (`derivers`) that they mapped it. A DEP
/// given as an output path is mapped too, so `why` gives the chain of
/// derivations with `.drv` entries as evidence, and its words are about
/// the build, never run time.
#[test]
fn an_output_path_with_derivation_means_its_deriver() {
    let out = common::nix_build(&repo().join("examples/rocm-mini/default.nix"), &[])
        .pop()
        .unwrap();
    let drv = deriver(&out);
    assert!(drv.ends_with(".drv") && Path::new(&drv).exists(), "{drv}");
    let build = qr(&drv);
    let runtime = qr(&out);
    assert!(build.len() > runtime.len(), "{build:?}");
    let dir = common::scratch_dir("nix-heft-drv-map-");
    std::os::unix::fs::symlink(&out, dir.join("result")).unwrap();

    // size: the deriver's build graph, from the path and from the link.
    for root in [out.as_str(), "./result"] {
        let (code, json, err) = heft_in(&dir, &["--json", "size", "--derivation", root]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(size_paths(&json), build, "{root}");
        assert!(
            err.contains(&drv) && err.contains("deriver"),
            "says it mapped {root}: {err}"
        );
        let v: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["derivers"][0]["output"], out.as_str(), "{v}");
        assert_eq!(v["derivers"][0]["deriver"], drv.as_str(), "{v}");
    }

    // A link to the `.drv` itself (what `nix-instantiate --add-root`
    // leaves) is that derivation, for `size` and for `diff`.
    std::os::unix::fs::symlink(&drv, dir.join("app.drv")).unwrap();
    let (code, json, err) = heft_in(&dir, &["--json", "size", "--derivation", "./app.drv"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(size_paths(&json), build);
    let (code, json, err) = heft_in(&dir, &["--json", "diff", "--derivation", "./app.drv", &drv]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["added"].as_array().map(Vec::len), Some(0), "{v}");

    // why: ROOT and DEP output paths give the chains between derivers.
    let dep_out = runtime
        .iter()
        .find(|p| p.ends_with("-rocblas-5.7.1"))
        .unwrap()
        .clone();
    let dep_drv = deriver(&dep_out);
    let chains = |root: &str, dep: &str| -> Value {
        let (code, json, err) = heft_in(&dir, &["--json", "why", "--derivation", root, dep]);
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&json).unwrap();
        v["best"].clone()
    };
    let want = chains(&drv, &dep_drv);
    assert!(want[0]["chain"].as_array().unwrap().len() >= 2, "{want}");
    assert_eq!(chains("./result", &dep_out), want);
    let (code, text, err) = heft_in(&dir, &["why", "--derivation", "./result", &dep_out]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("drv-input"), "{text}");
    assert!(!text.contains("elf-runpath"), "run-time evidence: {text}");
    for said in ["run-time", "run time", "runtime"] {
        assert!(
            !text.contains(said),
            "build-graph text says {said:?}: {text}"
        );
    }

    // report: the page is the deriver's build graph.
    let page = dir.join("page.html");
    let (code, json, err) = heft_in(
        &dir,
        &[
            "--json",
            "report",
            "--derivation",
            "./result",
            "-o",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["paths"].as_u64(), Some(build.len() as u64), "{v}");
    assert_eq!(v["derivers"][0]["deriver"], drv.as_str(), "{v}");
    assert!(err.contains(&drv), "{err}");
}

/// From a binary cache, an output the local store lacks is mapped by its
/// narinfo's `Deriver` line to the `.drv` in the local store. Where that
/// is not possible the run refuses, saying why, rather than read the
/// run-time graph: a `Deriver` naming a `.drv` that is not here, or no
/// `Deriver` line at all (both fields are outside the signature, so the
/// narinfo stays trusted).
#[test]
fn a_cached_output_maps_by_its_narinfo_or_is_refused() {
    let dir = common::scratch_dir("nix-heft-drv-cache-");
    let file = dir.join("cached.nix");
    std::fs::write(
        &file,
        format!(
            r#"let p = import {} {{ }}; in
derivation {{
  name = "cached-{}";
  system = builtins.currentSystem;
  builder = "/bin/sh";
  args = [ "-c" "echo ${{p.rocblas}} > $out" ];
}}"#,
            repo().join("examples/rocm-mini/default.nix").display(),
            common::nonce()
        ),
    )
    .unwrap();
    let out = common::nix_build(&file, &[]).pop().unwrap();
    let drv = deriver(&out);
    let build = qr(&drv);
    let cache = dir.join("cache");
    run(nix()
        .args(["copy", "--to", &common::signed_cache_url(&cache, "")])
        .arg(&out));
    run(Command::new("nix-store").args(["--delete", &out]));
    assert!(!Path::new(&out).exists(), "{out} is still valid");
    let url = format!("file://{}", cache.display());

    let (code, json, err) = heft_in(
        &dir,
        &["--store", &url, "--json", "size", "--derivation", &out],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(size_paths(&json), build);
    assert!(err.contains(&drv), "{err}");

    let narinfo = cache.join(format!("{}.narinfo", &out["/nix/store/".len()..][..32]));
    let text = std::fs::read_to_string(&narinfo).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("Deriver: "))
        .unwrap()
        .to_string();
    let gone = format!("{}-gone-1.0.drv", "0".repeat(32));
    for (what, edited, needle) in [
        (
            "a deriver not here",
            text.replace(&line, &format!("Deriver: {gone}")),
            gone.as_str(),
        ),
        (
            "no deriver",
            text.replace(&format!("{line}\n"), ""),
            "no deriver",
        ),
    ] {
        std::fs::write(&narinfo, &edited).unwrap();
        let (code, json, err) = heft_in(
            &dir,
            &["--store", &url, "--json", "size", "--derivation", &out],
        );
        assert_eq!(code, 1, "{what}: {json}{err}");
        assert!(json.is_empty(), "{what}: {json}");
        assert!(
            err.starts_with("nix-heft: error: ") && err.contains(&out) && err.contains(needle),
            "{what}: {err}"
        );
    }
}

/// `diff --derivation` says why the derivations differ, on `.drv` pairs
/// nix-instantiate wrote. nix-diff is not packaged by Debian
/// (`apt-cache policy nix-diff`: no candidate; nor in the package lists
/// this machine has), so the expectations were checked by hand against
/// the differences nix-diff reports for such pairs: (a) the input sources
/// differ by `extra.txt`, and the variable naming it is new; (b) the
/// environments differ in `configureFlags` (one word) and `opt`; (c) the
/// input derivations `middle-1.0`, `lower-1.0` and `leaf-1.0` differ in
/// turn, down to leaf's `flag`, 1 → 2. Unlike nix-diff, the root cause is
/// named once and ranked, and the derivations above it are said to change
/// because of it rather than each showing its environment's changed paths.
#[test]
fn diff_derivation_finds_the_root_causes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("extra.txt"), "extra\n").unwrap();
    std::fs::write(dir.path().join("chain.nix"), CHAIN_NIX).unwrap();
    let base = chain(dir.path(), &[]);
    let path_of = |v: &Value, key: &str| -> Vec<String> {
        v[key]
            .as_array()
            .unwrap_or_else(|| panic!("no {key}: {v}"))
            .iter()
            .map(|c| c["after"].as_str().unwrap().to_string())
            .collect()
    };

    // (a) An added input source: app's own change, the only one.
    let a = chain(dir.path(), &["--arg", "extraSrc", "true"]);
    let v: Value = serde_json::from_str(&drv_diff(&base, &a, &["--json"])).unwrap();
    assert_eq!(path_of(&v, "root_causes"), [a.as_str()], "{v}");
    assert_eq!(path_of(&v, "derivation_changes"), [a.as_str()]);
    let src = Derivation::read("/nix/store", Path::new(&a))
        .unwrap()
        .input_srcs
        .iter()
        .find(|p| p.name() == "extra.txt")
        .unwrap()
        .to_string();
    let changes = &v["root_causes"][0]["changes"];
    assert_eq!(
        changes,
        &json!([
            { "kind": "source_added", "path": src },
            { "kind": "env_added", "name": "extra", "value": src },
        ]),
        "{v}"
    );
    assert_eq!(v["root_causes"][0]["dependents"], 0);

    // (b) A changed variable, short and long: the long one as the changed
    // word with three words of context, not two 5,000-character values.
    let b = chain(
        dir.path(),
        &[
            "--argstr",
            "word",
            "--enable-rocm",
            "--argstr",
            "opt",
            "-O3",
        ],
    );
    let text = drv_diff(&base, &b, &[]);
    let why = text.split_once("why the derivations differ").unwrap().1;
    let expected = "\
     environment variable configureFlags (5386 → 5392 characters):
       - …--feat-247 --feat-248 --feat-249 word250 --feat-251 --feat-252 --feat-253…
       + …--feat-247 --feat-248 --feat-249 --enable-rocm --feat-251 --feat-252 --feat-253…
     environment variable opt: \"-O2\" → \"-O3\"
";
    assert!(why.contains(expected), "{why}");
    assert!(
        why.starts_with(": 1 root cause; 0 derivations changed"),
        "{why}"
    );
    assert!(why.lines().all(|l| l.len() < 200), "{why}");
    let v: Value = serde_json::from_str(&drv_diff(&base, &b, &["--json"])).unwrap();
    let changes = v["root_causes"][0]["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2, "{v}");
    assert_eq!(changes[0]["name"], "configureFlags");
    assert_eq!(changes[0]["diff"].as_array().unwrap().len(), 2);
    // JSON keeps the whole values.
    assert_eq!(changes[0]["after"].as_str().unwrap().len(), 5392);

    // (c) leaf's variable, three levels below app: leaf is the one root
    // cause, named once; lower, middle and app changed because of it.
    let c = chain(dir.path(), &["--argstr", "v", "2"]);
    let v: Value = serde_json::from_str(&drv_diff(&base, &c, &["--json"])).unwrap();
    let leaf = drv_closure(&c)
        .into_iter()
        .find(|p| p.ends_with("-leaf-1.0.drv"))
        .unwrap();
    assert_eq!(path_of(&v, "root_causes"), [leaf.as_str()], "{v}");
    assert_eq!(
        v["root_causes"][0]["changes"],
        json!([{ "kind": "env_changed", "name": "flag", "before": "1", "after": "2",
                 "diff": [{ "tag": "removed", "text": "1" }, { "tag": "added", "text": "2" }] }])
    );
    // Its dependents, as Nix sees them: AFTER's derivations whose
    // `nix-store -qR` holds leaf.
    let dependents = drv_closure(&c)
        .into_iter()
        .filter(|d| *d != leaf && drv_closure(d).contains(&leaf))
        .count();
    assert_eq!(dependents, 3);
    assert_eq!(v["root_causes"][0]["dependents"], dependents);
    let changes = v["derivation_changes"].as_array().unwrap();
    assert_eq!(changes.len(), 4, "{v}");
    for ch in changes {
        let is_leaf = ch["after"] == leaf.as_str();
        assert_eq!(ch["root_cause"], is_leaf, "{ch}");
        if !is_leaf {
            assert_eq!(ch["changes"], json!([]), "{ch}");
            assert_eq!(ch["because_of"], json!([leaf]), "{ch}");
            assert_eq!(ch["changed_inputs"].as_array().unwrap().len(), 1, "{ch}");
        }
    }
    let text = drv_diff(&base, &c, &[]);
    let why = text.split_once("why the derivations differ").unwrap().1;
    assert_eq!(why.matches("replaces leaf-1.0.drv").count(), 1, "{why}");
    assert!(
        why.contains("1 root cause; 3 derivations changed only because of it")
            && why.contains("): 3 derivations of AFTER depend on it")
            && why.contains("\n     environment variable flag: \"1\" → \"2\"\n"),
        "{why}"
    );
    let app = why
        .lines()
        .find(|l| l.trim_start().starts_with("app-1.0.drv"))
        .unwrap();
    assert!(
        app.contains("because of leaf-1.0.drv (") && app.contains("through middle-1.0.drv ("),
        "{why}"
    );

    // Markdown and GitHub say the same.
    let md = drv_diff(&base, &b, &["--format", "markdown"]);
    assert!(md.contains("#### Why the derivations differ"), "{md}");
    assert!(
        md.contains("     ```diff\n     - …--feat-247 --feat-248 --feat-249 word250"),
        "{md}"
    );
    assert_eq!(md.matches("```").count() % 2, 0, "{md}");
    // Within a small limit, the root cause still shows after the closure.
    let md = drv_diff(
        &base,
        &c,
        &["--format", "markdown", "--markdown-limit", "2500"],
    );
    assert!(md.chars().count() <= 2500, "{md}");
    let why = md.split_once("#### Why the derivations differ").unwrap().1;
    assert!(why.contains("replaces `leaf-1.0.drv ("), "{md}");
    assert_eq!(
        md.matches("<details").count(),
        md.matches("</details>").count()
    );
    let gh = drv_diff(&base, &c, &["--format", "github"]);
    let notice = gh
        .lines()
        .find(|l| l.contains("nix-heft diff --derivation"))
        .unwrap();
    assert!(notice.starts_with("::notice "), "{gh}");
    assert!(
        notice.contains("leaf-1.0.drv") && notice.contains("3 derivations of AFTER"),
        "{gh}"
    );

    // AFTER built (`echo > $out` each): the root cause's bytes are the
    // outputs' NAR sizes of it and its dependents, as `nix path-info`
    // gives them.
    run(Command::new("nix-store").args([
        "-r",
        &c,
        "--option",
        "sandbox",
        "false",
        "--option",
        "substituters",
        "",
    ]));
    let v: Value = serde_json::from_str(&drv_diff(&base, &c, &["--json"])).unwrap();
    let expected: u64 = drv_closure(&c)
        .iter()
        .filter(|d| drv_closure(d).contains(&leaf))
        .map(|d| common::build_graph_size(d))
        .sum();
    assert!(expected > 0);
    assert_eq!(v["root_causes"][0]["bytes"], expected, "{v}");
    assert_eq!(v["root_causes"][0]["unknown_size"], 0, "{v}");
    let text = drv_diff(&base, &c, &[]);
    assert!(
        text.contains(&format!(
            "3 derivations of AFTER depend on it; {} of outputs with it\n",
            nix_heft_types::units::iec(expected)
        )),
        "{text}"
    );
}
