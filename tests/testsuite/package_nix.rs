//! The Nix packaging: `flake.nix` and `nix/package.nix` parse with Nix,
//! the package names the version and the `Cargo.lock` of `Cargo.toml` and
//! installs every man page (tests/testsuite/packaging.rs checks the pages
//! and completions themselves, without Nix).
//!
//! The flake cannot be built here (no nixpkgs, no network): the package
//! expression is evaluated with Nix by calling it with a
//! `buildRustPackage` that returns its arguments, which is exactly what
//! nixpkgs would receive.

use std::process::Command;

use crate::common::*;
use crate::packaging::paged_commands;

fn nix_instantiate(args: &[&str]) -> String {
    require_nix();
    let out = nix_output(Command::new("nix-instantiate")
        .current_dir(repo())
        .args(args));
    assert!(
        out.status.success(),
        "nix-instantiate {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `version = "..."` of Cargo.toml's `[workspace.package]` table.
fn cargo_version() -> String {
    // The workspace's version, which the package and every crate take.
    let toml = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let package = toml.split("[workspace.package]").nth(1).unwrap();
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
    assert_eq!(
        v["cargoTestFlags"],
        serde_json::json!(["--workspace", "--lib"])
    );
    let post = v["postInstall"].as_str().unwrap();
    for piece in [
        "completions bash",
        "completions zsh",
        "completions fish",
        "installManPage",
        "nix/setup-hook.sh $out/nix-support/setup-hook",
    ] {
        assert!(post.contains(piece), "postInstall lacks {piece}");
    }
}

#[test]
fn package_installs_every_man_page() {
    // postInstall as nixpkgs would run it, with the built binary as
    // $out/bin/nix-heft. installShellFiles' functions come from nixpkgs,
    // which is not here: these two do what they do with the files given
    // (a page goes to share/man/man<section>), so what is checked is that
    // the script writes and hands over every page.
    let expr = r#"
      (import ./nix/package.nix {
        rustPlatform.buildRustPackage = args: args;
        installShellFiles = "installShellFiles";
        stdenv = { buildPlatform.canExecute = _: true; hostPlatform = { }; };
      }).postInstall
    "#;
    let post: String = serde_json::from_str(&nix_instantiate(&[
        "--eval", "--strict", "--json", "-E", expr,
    ]))
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir_all(out.join("bin")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_nix-heft"), out.join("bin/nix-heft")).unwrap();
    let script = format!(
        r#"set -euo pipefail
installShellCompletion() {{ :; }}
installManPage() {{
  for f in "$@"; do
    s="${{f##*.}}"
    mkdir -p "$out/share/man/man$s"
    cp "$f" "$out/share/man/man$s/"
  done
}}
{post}"#
    );
    // postInstall runs in the unpacked source: the hook is there.
    std::fs::create_dir_all(tmp.path().join("nix")).unwrap();
    std::fs::copy(
        repo().join("nix/setup-hook.sh"),
        tmp.path().join("nix/setup-hook.sh"),
    )
    .unwrap();
    let o = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("out", &out)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let man1 = out.join("share/man/man1");
    let mut installed: Vec<String> = std::fs::read_dir(&man1)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    installed.sort();
    let mut expected: Vec<String> = paged_commands()
        .iter()
        .map(|c| format!("nix-heft-{c}.1"))
        .chain(["nix-heft.1".to_string()])
        .collect();
    expected.sort();
    assert_eq!(installed, expected);
    // Each file is the page `nix-heft man` prints.
    for command in paged_commands() {
        let page = std::fs::read_to_string(man1.join(format!("nix-heft-{command}.1"))).unwrap();
        assert_eq!(page, heft_run(None, &["man", &command]).stdout, "{command}");
    }
    let main = std::fs::read_to_string(man1.join("nix-heft.1")).unwrap();
    assert_eq!(main, heft_run(None, &["man"]).stdout);
    // The setup hook, where stdenv sources a package's hook from.
    assert_eq!(
        std::fs::read_to_string(out.join("nix-support/setup-hook")).unwrap(),
        std::fs::read_to_string(repo().join("nix/setup-hook.sh")).unwrap()
    );
}
