//! The reason a path is present, in every command that gives one, is the
//! chain `why` and `nix why-depends` give: the strongest (runtime first),
//! never a dead edge that would not keep the path. The fixture
//! (tests/fixtures/strongest-chain.nix) has the context file's shape: the
//! program's RUNPATH points straight into rocm-llvm, dead, while rocm-llvm
//! is held at run time through clr → comgr.

use crate::common::*;
use serde_json::Value;

struct Built {
    /// The program before it linked against clr.
    app0: String,
    app: String,
    llvm: String,
    comgr: String,
    clr: String,
}

fn built() -> &'static Built {
    static B: std::sync::OnceLock<Built> = std::sync::OnceLock::new();
    B.get_or_init(|| {
        let p = nix_build(
            &repo().join("tests/fixtures/strongest-chain.nix"),
            &["app0", "app", "llvm", "comgr", "clr"],
        );
        Built {
            app0: p[0].clone(),
            app: p[1].clone(),
            llvm: p[2].clone(),
            comgr: p[3].clone(),
            clr: p[4].clone(),
        }
    })
}

fn json(o: &Outcome) -> Value {
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout))
}

/// The shortest chain is the dead one, and `why` (like `nix why-depends`)
/// gives the runtime one: what every other command must agree with.
#[test]
fn the_fixture_has_a_dead_shortcut_and_a_runtime_chain() {
    let b = built();
    let refs = nix_store_references(&b.app);
    assert!(refs.contains(&b.llvm) && refs.contains(&b.clr), "{refs:?}");
    let why = json(&heft_run(None, &["--json", "why", &b.app, &b.llvm]));
    let chain: Vec<&str> = why["best"][0]["chain"]
        .as_array()
        .unwrap_or_else(|| panic!("{why}"))
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(chain, [&b.app, &b.clr, &b.comgr, &b.llvm]);
    let direct = json(&heft_run(None, &["--json", "refs", &b.app]));
    let to_llvm = direct["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["referrer"] == b.app.as_str() && r["reference"] == b.llvm.as_str())
        .unwrap_or_else(|| panic!("{direct}"));
    assert_eq!(to_llvm["verdict"], "dead", "{to_llvm}");
}

#[test]
fn check_forbid_names_the_runtime_chain_in_every_format() {
    let b = built();
    let run = |format: &str| {
        heft_run(
            None,
            &[
                "check",
                "--forbid",
                "rocm-llvm*",
                "--format",
                format,
                &b.app,
            ],
        )
    };
    let j = run("json");
    assert_eq!(j.code, 4, "{}", j.stderr);
    let v = json(&j);
    let viol = &v["violations"][0];
    let chain: Vec<&str> = viol["chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(chain, [&b.app, &b.clr, &b.comgr, &b.llvm], "{viol}");
    for e in viol["evidence"].as_array().unwrap() {
        let verdicts: Vec<&str> = e["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["verdict"].as_str().unwrap())
            .collect();
        assert!(verdicts.contains(&"runtime"), "{e}");
    }
    let want = "llama-cpp-rocm-1710 → clr-5.7.1 → comgr-5.7.1 → rocm-llvm-5.7.1";
    for f in ["text", "github", "markdown"] {
        let o = run(f);
        assert_eq!(o.code, 4, "{f}: {}", o.stderr);
        assert!(o.stdout.contains(want), "{f}:\n{}", o.stdout);
        assert!(
            !o.stdout.contains("dead"),
            "{f} gives the dead edge:\n{}",
            o.stdout
        );
    }
}

/// `diff` and `check --max-growth` name the referrer that holds an added
/// path at run time, not the root's dead RUNPATH entry, although the root's
/// package is the one on both sides (which they prefer otherwise).
#[test]
fn diff_and_growth_name_the_runtime_referrer() {
    let b = built();
    let d = json(&heft_run(None, &["--json", "diff", &b.app0, &b.app]));
    let added = d["added"].as_array().unwrap_or_else(|| panic!("{d}"));
    let llvm = added
        .iter()
        .find(|a| a["path"] == b.llvm.as_str())
        .unwrap_or_else(|| panic!("{d}"));
    assert_eq!(llvm["why"]["referrer"], b.comgr.as_str(), "{llvm}");
    let text = heft_run(None, &["diff", &b.app0, &b.app]).stdout;
    let line = text
        .lines()
        .find(|l| l.contains("rocm-llvm-5.7.1 (+"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("comgr-5.7.1 references it") && line.contains("runtime"),
        "{line}"
    );

    let o = heft_run(
        None,
        &[
            "--json",
            "check",
            "--max-growth",
            "0",
            "--against",
            &b.app0,
            &b.app,
        ],
    );
    assert_eq!(o.code, 4, "{}", o.stderr);
    let v = json(&o);
    let c = v["violations"][0]["contributors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == b.llvm.as_str())
        .unwrap_or_else(|| panic!("{v}"))
        .clone();
    assert_eq!(c["referrer"], b.comgr.as_str(), "{c}");
}
