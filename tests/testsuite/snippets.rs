//! Every snippet `advise` prints, in its actions and in its plan, parsed by
//! real Nix (`nix-instantiate --parse`), and the shell of its build hooks
//! checked by real bash (`bash -n`), on the bundled example: with several
//! `--targets`, with one, and without.
//!
//! How each snippet is parsed, by its kind:
//! - `partition-targets` is an expression (`rocblas.override { … }`):
//!   parsed as `pkgs: with pkgs; (\n<snippet>\n)`;
//! - every other kind is attribute bindings (`outputs = [ … ];`,
//!   `postFixup = '' … '';`): parsed as `pkgs: with pkgs; {\n<snippet>\n}`.
//!
//! The snippet is on lines of its own, so a trailing `# comment` ends
//! before the closing bracket. `with pkgs;` is there because Nix 2.8
//! rejects undefined variables (`rocblas`, `removeReferencesTo`) at parse
//! time; under `with` they are looked up at evaluation instead. A
//! `postFixup`/`postInstall` hook is then evaluated by Nix (with each cut
//! dependency bound to its store path) and the shell text Nix hands the
//! builder is checked with `bash -n`.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::*;
use serde_json::Value;

/// `nix-instantiate --parse` of `expr`; the error text when it fails.
fn nix_parse(expr: &str) -> Result<(), String> {
    let out = nix_output(Command::new("nix-instantiate")
        .args(["--parse", "--expr", expr]));
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// `bash -n` of `script`; the error text when it fails.
fn bash_syntax(script: &str) -> Result<(), String> {
    let mut child = Command::new("bash")
        .arg("-n")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The shell hooks of a bindings snippet, as Nix evaluates them: `pkgs`
/// binds every cut dependency's package name to its store path.
fn hooks(snippet: &str, cuts: &[String]) -> Vec<String> {
    let paths: String = cuts.iter().map(|c| format!("\"{c}\" ")).collect();
    let expr = format!(
        "let pkgs = builtins.listToAttrs (map (p: {{ name = (builtins.parseDrvName \
         (builtins.substring 33 1000 (baseNameOf p))).name; value = p; }}) [ {paths}]) \
         // {{ removeReferencesTo = null; }}; \
         set = with pkgs; {{\n{snippet}\n}}; \
         in builtins.filter (x: x != null) [ (set.postFixup or null) (set.postInstall or null) ]"
    );
    let out = nix_output(Command::new("nix-instantiate")
        .args(["--eval", "--strict", "--json", "--expr", &expr]));
    assert!(
        out.status.success(),
        "{snippet}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Checks one snippet of `kind`; returns a description of what failed.
fn check(kind: &str, snippet: &str, cuts: &[String]) -> Result<(), String> {
    if kind == "partition-targets" {
        return nix_parse(&format!("pkgs: with pkgs; (\n{snippet}\n)"));
    }
    nix_parse(&format!("pkgs: with pkgs; {{\n{snippet}\n}}"))?;
    for h in hooks(snippet, cuts) {
        bash_syntax(&h).map_err(|e| format!("shell {h:?}: {e}"))?;
    }
    Ok(())
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// `advise --json` on the bundled example with `extra` flags.
fn advise(extra: &[&str]) -> Value {
    let cache = example_cache();
    let root = example_root();
    let mut args = vec!["--json", "advise", &root, "--min-saving", "0"];
    args.extend_from_slice(extra);
    let o = heft_run(Some(cache.to_str().unwrap()), &args);
    assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap()
}

#[test]
fn every_snippet_parses_as_nix() {
    let mut kinds = std::collections::BTreeSet::new();
    let mut failures = Vec::new();
    for extra in [
        &["--targets", "gfx90a,gfx1100"][..],
        &["--targets", "gfx90a"],
        &[],
    ] {
        let v = advise(extra);
        let actions = v["actions"].as_array().unwrap();
        let steps = v["plan"]["actions"].as_array().unwrap();
        assert!(!actions.is_empty() && !steps.is_empty(), "{extra:?}: {v}");
        for a in actions.iter().chain(steps) {
            let kind = a["kind"].as_str().unwrap();
            let snippet = a["snippet"].as_str().unwrap();
            kinds.insert(kind.to_string());
            // An action names its cuts; a plan step what it removes.
            let mut cuts = strings(&a["cuts"]);
            cuts.extend(strings(&a["removes"]));
            if let Err(e) = check(kind, snippet, &cuts) {
                failures.push(format!("{extra:?} {kind}: {snippet}\n{e}"));
            }
        }
        // The targets asked for, as a Nix list.
        if let [_, t] = extra {
            let list: String = t.split(',').map(|t| format!(" \"{t}\"")).collect();
            let want = format!("gpuTargets = [{list} ];");
            assert!(
                actions
                    .iter()
                    .any(|a| a["snippet"].as_str().unwrap().contains(&want)),
                "{extra:?}: no {want}"
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    for k in ["partition-targets", "split-outputs", "dead-runpath"] {
        assert!(kinds.contains(k), "the example gives {k}: {kinds:?}");
    }
}
