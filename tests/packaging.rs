//! Packaging: `flake.nix` and `nix/package.nix` parse with Nix, the package
//! names the version and the `Cargo.lock` of `Cargo.toml` and installs every
//! man page; completions and the man pages (`nix-heft(1)` and one
//! `nix-heft-COMMAND(1)` per subcommand) are generated from the clap
//! definitions (snapshots, and every flag of `--help` in its page).
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
    let o = heft_run(None, &["man", "advise"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    insta::assert_snapshot!("man_advise", o.stdout);
    // A shell it does not know is a usage error.
    let o = heft_run(None, &["completions", "tcsh"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
}

/// Roff text as read: `\-` is a hyphen.
fn unroff(page: &str) -> String {
    page.replace("\\-", "-")
}

/// The subcommands the main page names as `nix-heft-COMMAND(1)`.
fn paged_commands() -> Vec<String> {
    let o = heft_run(None, &["man"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let re = regex::Regex::new(r"(?m)^nix-heft-([a-z-]+)\(1\)$").unwrap();
    re.captures_iter(&unroff(&o.stdout))
        .map(|c| c[1].to_string())
        .collect()
}

/// The subcommands `nix-heft --help` lists (but `help`).
fn help_commands() -> Vec<String> {
    let o = heft_run(None, &["--help"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let section = o.stdout.split("Commands:\n").nth(1).unwrap();
    let section = section.split("\n\n").next().unwrap();
    section
        .lines()
        // A command's line; its wrapped description is indented further.
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The long flags `nix-heft COMMAND --help` shows (`--store`, ...).
fn long_flags(command: &str) -> Vec<String> {
    let o = heft_run(None, &[command, "--help"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let re = regex::Regex::new(r"(?m)^  (?:-\w, |    )(--[a-z0-9][a-z0-9-]*)").unwrap();
    let flags: Vec<String> = re
        .captures_iter(&o.stdout)
        .map(|c| c[1].to_string())
        .collect();
    assert!(flags.contains(&"--help".to_string()), "{}", o.stdout);
    flags
}

#[test]
fn man_page_of_every_subcommand_has_its_flags() {
    let paged = paged_commands();
    // The main page names a page for every command --help lists, and no
    // other (no nix-heft-help(1)).
    assert_eq!(paged, help_commands());
    assert!(paged.contains(&"advise".to_string()), "{paged:?}");
    for command in &paged {
        let o = heft_run(None, &["man", command]);
        assert_eq!(o.code, 0, "man {command}: {}", o.stderr);
        let page = unroff(&o.stdout);
        assert!(
            page.contains(&format!(".TH nix-heft-{command} 1")),
            "man {command}: {page}"
        );
        assert!(
            page.contains(&format!("\n.SH NAME\nnix-heft-{command} - ")),
            "man {command}: {page}"
        );
        assert!(
            page.contains(&format!("\\fBnix-heft {command}\\fR")),
            "man {command}: synopsis: {page}"
        );
        assert!(
            page.contains(".SH \"SEE ALSO\"\nnix-heft(1)"),
            "man {command}: {page}"
        );
        // Every long flag of its --help, the global ones included.
        let flags = long_flags(command);
        for global in ["--store", "--json", "--color", "--verify"] {
            assert!(flags.iter().any(|f| f == global), "{command} --help");
        }
        for flag in &flags {
            assert!(
                page.contains(&format!("\\fB{flag}\\fR")),
                "man {command} lacks {flag}"
            );
        }
    }
    let advise = unroff(&heft_run(None, &["man", "advise"]).stdout);
    for flag in ["--targets", "--min-saving"] {
        assert!(advise.contains(&format!("\\fB{flag}\\fR")), "{advise}");
    }
}

#[test]
fn man_of_an_unknown_command_is_a_usage_error() {
    let o = heft_run(None, &["man", "nosuch"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    assert!(
        o.stderr.contains("invalid value 'nosuch' for '[COMMAND]'"),
        "{}",
        o.stderr
    );
    // It names every command that has a page.
    for command in paged_commands() {
        assert!(o.stderr.contains(&command), "{command}: {}", o.stderr);
    }
    // The help subcommand has no page.
    let o = heft_run(None, &["man", "help"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
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
}
