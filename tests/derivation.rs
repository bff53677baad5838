//! The `.drv` parser against real Nix: every derivation in the closures of
//! the suite's fixtures (tests/fixtures/small.nix, examples/rocm-mini) and of
//! an expression written to cover what they do not (fixed outputs, flat and
//! recursive; several outputs; an input used through two of its outputs;
//! every escape Nix writes; sources), as
//! `nix-instantiate` writes them, parsed and compared field by field with
//! `nix show-derivation -r`. Nothing is built.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::{nix, repo, run};
use nix_heft::derivation::Derivation;
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
