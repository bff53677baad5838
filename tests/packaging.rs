//! Packaging: `flake.nix` and `nix/package.nix` parse with Nix, the package
//! names the version and the `Cargo.lock` of `Cargo.toml`; completions and
//! the man page are generated from the clap definitions (snapshots).
//!
//! The flake cannot be built here (no nixpkgs, no network): the package
//! expression is evaluated with Nix by calling it with a
//! `buildRustPackage` that returns its arguments, which is exactly what
//! nixpkgs would receive.

mod common;

use std::process::Command;

use common::*;

fn nix_instantiate(args: &[&str]) -> String {
    let out = Command::new("nix-instantiate")
        .current_dir(repo())
        .args(args)
        .output()
        .expect("nix-instantiate is needed (scripts/test.sh installs nix-bin)");
    assert!(
        out.status.success(),
        "nix-instantiate {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `version = "..."` of Cargo.toml's `[package]` table.
fn cargo_version() -> String {
    let toml = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let package = toml.split("[package]").nth(1).unwrap();
    let package = package.split("\n[").next().unwrap();
    package
        .lines()
        .find_map(|l| l.strip_prefix("version = "))
        .unwrap()
        .trim_matches('"')
        .to_string()
}

#[test]
fn flake_and_package_parse() {
    for f in ["flake.nix", "nix/package.nix"] {
        let parsed = nix_instantiate(&["--parse", f]);
        assert!(!parsed.is_empty(), "{f}");
    }
    let flake = std::fs::read_to_string(repo().join("flake.nix")).unwrap();
    for output in [
        "packages =",
        "apps =",
        "devShells =",
        "overlays.default",
        "checks =",
    ] {
        assert!(flake.contains(output), "flake.nix lacks {output}");
    }
}

#[test]
fn package_names_cargo_version_and_lock() {
    let expr = r#"
      let a = import ./nix/package.nix {
        rustPlatform.buildRustPackage = args: args;
        installShellFiles = "installShellFiles";
        stdenv = { buildPlatform.canExecute = _: true; hostPlatform = { }; };
      };
      in {
        inherit (a) pname version cargoTestFlags postInstall;
        lock = toString a.cargoLock.lockFile;
        lockText = builtins.readFile a.cargoLock.lockFile;
      }
    "#;
    let out = nix_instantiate(&["--eval", "--strict", "--json", "-E", expr]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["pname"], "nix-heft");
    assert_eq!(v["version"], cargo_version());
    assert_eq!(
        v["lock"].as_str().unwrap(),
        repo()
            .join("Cargo.lock")
            .canonicalize()
            .unwrap()
            .to_str()
            .unwrap()
    );
    assert_eq!(
        v["lockText"].as_str().unwrap(),
        std::fs::read_to_string(repo().join("Cargo.lock")).unwrap()
    );
    // The lock file pins this very crate at the same version.
    let lock = v["lockText"].as_str().unwrap();
    assert!(
        lock.contains(&format!(
            "name = \"nix-heft\"\nversion = \"{}\"",
            cargo_version()
        )),
        "Cargo.lock does not pin nix-heft {}",
        cargo_version()
    );
    assert_eq!(v["cargoTestFlags"], serde_json::json!(["--lib"]));
    let post = v["postInstall"].as_str().unwrap();
    for piece in [
        "completions bash",
        "completions zsh",
        "completions fish",
        "installManPage",
    ] {
        assert!(post.contains(piece), "postInstall lacks {piece}");
    }
}

#[test]
fn completions_and_man_page() {
    for shell in ["bash", "zsh", "fish"] {
        let o = heft_run(None, &["completions", shell]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        // Every subcommand is completed.
        for sub in [
            "size",
            "why",
            "refs",
            "split",
            "partition",
            "advise",
            "report",
        ] {
            assert!(o.stdout.contains(sub), "{shell} completion lacks {sub}");
        }
        insta::assert_snapshot!(format!("completions_{shell}"), o.stdout);
    }
    let o = heft_run(None, &["man"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains(".TH nix-heft 1"));
    insta::assert_snapshot!("man", o.stdout);
    // A shell it does not know is a usage error.
    let o = heft_run(None, &["completions", "tcsh"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
}
