//! When a build refuses a reference (issue 33): real Nix 2.8 builds of
//! tests/fixtures/refused/ that fail Nix's output checks and its cycle
//! check, with nix-heft's setup hook (nix/setup-hook.sh, as the package
//! installs it) sourced by the builder. The hook's text, captured from the
//! build log, must name every file that holds each refused reference; the
//! same derivations built without the checks give the same files to `nix
//! why-depends --precise` and to `nix-heft why`; `nix-heft refused DRV`
//! and `refs --dir` say the same after the failure, from the output Nix
//! left behind.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::common::{heft_run, nix, nonce, repo, run};

/// The fixture's file, the binary's directory and this run's salt.
struct Refused {
    file: PathBuf,
    heft_dir: String,
    hook: String,
    salt: String,
}

fn fixture() -> &'static Refused {
    static F: OnceLock<Refused> = OnceLock::new();
    F.get_or_init(|| {
        let heft = PathBuf::from(env!("CARGO_BIN_EXE_nix-heft"));
        Refused {
            file: repo().join("tests/fixtures/refused"),
            heft_dir: heft.parent().unwrap().to_string_lossy().into_owned(),
            hook: repo()
                .join("nix/setup-hook.sh")
                .to_string_lossy()
                .into_owned(),
            salt: nonce(),
        }
    })
}

/// `nix-build` of `attr` (with `restricted` and `fail`), its exit status,
/// standard output and standard error (the build log).
fn build(attr: &str, restricted: bool, fail: bool) -> (bool, String, String) {
    let f = fixture();
    let out = Command::new("nix-build")
        .arg(&f.file)
        .args(["--option", "sandbox", "false"])
        .args(["--option", "substituters", ""])
        .args(["--option", "build-users-group", ""])
        .args(["--argstr", "heft", &f.heft_dir])
        .args(["--argstr", "hook", &f.hook])
        .args(["--argstr", "salt", &f.salt])
        .args([
            "--arg",
            "restricted",
            if restricted { "true" } else { "false" },
        ])
        .args(["--arg", "fail", if fail { "true" } else { "false" }])
        .args(["-A", attr, "--no-out-link"])
        .output()
        .expect("nix-build (Debian's nix-bin) is needed");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The part of a build log nix-heft wrote: from its first line to Nix's
/// error.
fn hook_text(log: &str) -> &str {
    let start = log
        .find("nix-heft: ")
        .unwrap_or_else(|| panic!("no nix-heft text in: {log}"));
    let end = log[start..]
        .find("\nerror: ")
        .map_or(log.len(), |e| start + e);
    &log[start..end]
}

/// The files `nix why-depends --precise ROOT DEP` shows on its edges.
fn why_depends_files(root: &str, dep: &str) -> BTreeSet<String> {
    let out = run(nix().args(["why-depends", "--precise", "--all", root, dep]));
    let plain = strip_ansi(&out);
    plain
        .lines()
        .filter_map(|l| {
            let l = l.trim_start_matches(|c: char| " │└├─".contains(c));
            l.split_once(": …").map(|(f, _)| f.to_string())
        })
        .collect()
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The files `nix-heft why --json ROOT DEP` names on its strongest chain.
fn heft_why_files(root: &str, dep: &str) -> BTreeSet<String> {
    let o = heft_run(None, &["why", "--json", root, dep]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let mut files = BTreeSet::new();
    collect_files(&v, &mut files);
    files
}

/// Every `"file"` string under a JSON value.
fn collect_files(v: &serde_json::Value, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                if k == "file"
                    && let Some(s) = x.as_str()
                {
                    out.insert(s.to_string());
                }
                collect_files(x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_files(x, out)),
        _ => {}
    }
}

/// The store path of `name` among `paths` (one per line).
fn path_named<'a>(paths: &'a str, suffix: &str) -> &'a str {
    paths
        .lines()
        .find(|l| l.ends_with(suffix))
        .unwrap_or_else(|| panic!("no {suffix} in {paths}"))
}

/// disallowedReferences on a path held by a text file and an ELF RUNPATH:
/// Nix refuses with its own error; the hook's text, before it, names both
/// files with offset and kind; without the check, `nix why-depends
/// --precise` and `nix-heft why` name the same files.
#[test]
fn hook_explains_a_disallowed_reference_held_by_text_and_elf() {
    let (ok, _, log) = build("textAndElf", true, false);
    assert!(!ok, "the build must fail: {log}");
    assert!(
        log.contains("is not allowed to refer to the following paths"),
        "Nix's own error: {log}"
    );
    let text = hook_text(&log);
    assert!(
        text.contains("which disallowedReferences refuses"),
        "{text}"
    );
    assert!(text.contains("bin/tool"), "{text}");
    assert!(text.contains("elf-runpath"), "{text}");
    assert!(text.contains("share/doc/text-and-elf/README"), "{text}");
    assert!(text.contains("text line 1 @"), "{text}");
    assert!(
        text.contains("moveToOutput share/doc/text-and-elf \"$doc\""),
        "{text}"
    );
    assert!(
        text.contains("patchelf --shrink-rpath $out/bin/tool"),
        "{text}"
    );
    // Nix's error comes after: the hook explains first, then Nix refuses.
    assert!(log.find("nix-heft: ").unwrap() < log.find("is not allowed").unwrap());

    let (ok, paths, log) = build("textAndElf", false, false);
    assert!(ok, "{log}");
    let out = paths.trim();
    let dep = path_named(
        &run(Command::new("nix-store").args(["-qR", out])),
        "-dep-1.0",
    )
    .to_string();
    let nix_files = why_depends_files(out, &dep);
    let heft_files = heft_why_files(out, &dep);
    let expected: BTreeSet<String> = ["bin/tool", "share/doc/text-and-elf/README"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(nix_files, expected, "nix why-depends --precise");
    assert_eq!(heft_files, expected, "nix-heft why");
}

/// disallowedRequisites reached through an input two levels down: the
/// hook gives the chain out → mid → lib2 → dep with each edge's file, as
/// `nix why-depends --precise` does on the unrestricted build.
#[test]
fn hook_explains_a_requisite_two_levels_down() {
    let (ok, _, log) = build("requisite", true, false);
    assert!(!ok, "{log}");
    let text = hook_text(&log);
    assert!(text.contains("has in its closure"), "{text}");
    assert!(text.contains("disallowedRequisites"), "{text}");
    let order: Vec<usize> = ["etc/app.conf", "share/mid.conf", "lib/lib2.deps"]
        .iter()
        .map(|f| text.find(f).unwrap_or_else(|| panic!("{f} not in {text}")))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "chain order: {text}");

    let (ok, paths, log) = build("requisite", false, false);
    assert!(ok, "{log}");
    let out = paths.trim();
    let dep = path_named(
        &run(Command::new("nix-store").args(["-qR", out])),
        "-dep-1.0",
    )
    .to_string();
    let nix_files = why_depends_files(out, &dep);
    let expected: BTreeSet<String> = ["etc/app.conf", "share/mid.conf", "lib/lib2.deps"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(nix_files, expected);
    assert_eq!(heft_why_files(out, &dep), expected);
}

/// allowedReferences: the one reference not on the list, with its file.
#[test]
fn hook_explains_an_allowed_references_list() {
    let (ok, _, log) = build("allowed", true, false);
    assert!(!ok, "{log}");
    let text = hook_text(&log);
    assert!(
        text.contains("-lib2-2.0, which allowedReferences refuses"),
        "{text}"
    );
    assert!(!text.contains("-mid-1.0, which"), "mid is allowed: {text}");
    assert!(text.contains("bin/run"), "{text}");
    assert!(log.contains("-lib2-2.0\n") || log.trim_end().ends_with("-lib2-2.0"));
}

/// Two outputs that refer to each other: both directions with their
/// files, said once (the hook runs once per output), and the move that
/// breaks the cycle; Nix's own "cycle detected" after it.
#[test]
fn hook_explains_a_cycle_between_outputs() {
    let (ok, _, log) = build("cycle", false, false);
    assert!(!ok, "{log}");
    assert!(log.contains("cycle detected"), "{log}");
    let text = hook_text(&log);
    assert_eq!(text.matches("refer to each other").count(), 1, "{text}");
    assert!(text.contains("lib/pkgconfig/cycle.pc"), "{text}");
    assert!(text.contains("lib/cmake/cycle-config.cmake"), "{text}");
    assert!(
        text.contains("moveToOutput lib/pkgconfig \"$dev\""),
        "{text}"
    );
}

/// With NIX_HEFT_REFUSED_FAIL the hook fails the build itself, first.
#[test]
fn hook_can_fail_the_build_first() {
    let (ok, _, log) = build("textAndElf", true, true);
    assert!(!ok);
    assert!(
        log.contains("failing the build (NIX_HEFT_REFUSED_FAIL is set)"),
        "{log}"
    );
    assert!(
        !log.contains("is not allowed to refer"),
        "Nix's check never ran: {log}"
    );
}

/// After the failure, the output Nix 2.8 leaves in the store (unregistered,
/// with the sandbox off) is read as it is: `refused DRV` gives the hook's
/// refusals, `refs` on the path and `refs --dir` give its references.
#[test]
fn after_the_failure_the_left_output_is_read() {
    let (ok, _, log) = build("textAndElf", true, false);
    assert!(!ok, "{log}");
    let drv = log
        .split('\'')
        .find(|s| s.ends_with("-text-and-elf-1.0.drv"))
        .unwrap_or_else(|| panic!("no drv in {log}"))
        .to_string();
    let o = heft_run(None, &["refused", "--json", &drv]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let refused = v["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 1, "{v}");
    assert_eq!(refused[0]["check"], "disallowedReferences");
    let out = refused[0]["output_path"].as_str().unwrap().to_string();
    let mut files = BTreeSet::new();
    collect_files(&refused[0]["chain"], &mut files);
    assert_eq!(
        files,
        ["bin/tool", "share/doc/text-and-elf/README"]
            .into_iter()
            .map(String::from)
            .collect()
    );
    let o = heft_run(None, &["refused", "--fail", &drv]);
    assert_eq!(o.code, 4, "{}", o.stderr);

    // The path is not valid, but its files are there.
    let valid = Command::new("nix-store")
        .args(["--check-validity", &out])
        .output()
        .unwrap();
    assert!(!valid.status.success(), "{out} should not be valid");
    let by_path = heft_run(None, &["refs", "--json", &out]);
    assert_eq!(by_path.code, 0, "{}", by_path.stderr);
    let by_dir = heft_run(None, &["refs", "--json", "--dir", &out, "--as", &out]);
    assert_eq!(by_dir.code, 0, "{}", by_dir.stderr);
    assert_eq!(by_path.stdout, by_dir.stdout);
    assert!(by_path.stdout.contains("-dep-1.0"), "{}", by_path.stdout);
}
