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
    build_with(attr, restricted, fail, true)
}

fn build_with(attr: &str, restricted: bool, fail: bool, hooked: bool) -> (bool, String, String) {
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
        .args(["--arg", "hooked", if hooked { "true" } else { "false" }])
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

/// Store hashes masked: each run's builds are salted.
fn masked(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("/nix/store/") {
        let after = &rest[i + "/nix/store/".len()..];
        out.push_str(&rest[..i]);
        out.push_str("/nix/store/");
        let hash = after.as_bytes().get(..32).is_some_and(|h| {
            h.iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        });
        if hash {
            out.push_str("HASH");
            rest = &after[32..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The block between `<!-- NAME:start -->` and `<!-- NAME:end -->` of the
/// README, without its code fence.
fn readme_block(readme: &str, name: &str) -> (usize, usize) {
    let start = format!("<!-- {name}:start -->\n```text\n");
    let a = readme
        .find(&start)
        .unwrap_or_else(|| panic!("README lacks {name}"))
        + start.len();
    let b = a + readme[a..].find("```\n<!-- ").unwrap();
    (a, b)
}

/// README.md shows a real failing build's log, without the hook and with
/// it (NIX_HEFT_UPDATE_README=1 writes them there).
#[test]
fn readme_shows_a_refused_build_before_and_after() {
    let (ok, _, plain) = build_with("textAndElf", true, false, false);
    assert!(!ok);
    assert!(!plain.contains("nix-heft"), "{plain}");
    let before = &plain[plain.find("error: ").unwrap()..];
    let (ok, _, hooked) = build("textAndElf", true, false);
    assert!(!ok);
    let after = &hooked[hooked.find("nix-heft: ").unwrap()..];
    let path = repo().join("README.md");
    let mut readme = std::fs::read_to_string(&path).unwrap();
    for (name, text) in [("refused-before", before), ("refused-after", after)] {
        let (a, b) = readme_block(&readme, name);
        if std::env::var_os("NIX_HEFT_UPDATE_README").is_some() {
            readme = format!("{}{}{}", &readme[..a], text, &readme[b..]);
            continue;
        }
        assert_eq!(
            masked(&readme[a..b]),
            masked(text),
            "README's {name} log is stale: NIX_HEFT_UPDATE_README=1 cargo test --test testsuite refused::readme"
        );
    }
    if std::env::var_os("NIX_HEFT_UPDATE_README").is_some() {
        std::fs::write(&path, readme).unwrap();
    }
}

/// Nix's error text alone (`--log`, a file or standard input): the
/// derivation, output and paths it names, then the files from the output
/// Nix left behind; for a cycle, both directions.
#[test]
fn the_log_leads_to_the_files() {
    let (ok, _, log) = build_with("requisite", true, false, false);
    assert!(!ok);
    let file = crate::common::scratch_dir("refused-log").join("build.log");
    std::fs::write(&file, &log).unwrap();
    let o = heft_run(None, &["refused", "--log", &file.to_string_lossy()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("Nix refused output /nix/store/"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("its files are still there"),
        "{}",
        o.stdout
    );
    for f in ["etc/app.conf", "share/mid.conf", "lib/lib2.deps"] {
        assert!(o.stdout.contains(f), "{f}: {}", o.stdout);
    }
    let (ok, _, log) = build_with("cycle", true, false, false);
    assert!(!ok);
    let mut c = crate::common::heft();
    c.args(["refused", "--log", "-"]).write_stdin(log.clone());
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("Nix found a cycle in /nix/store/"), "{text}");
    assert!(text.contains("lib/pkgconfig/cycle.pc"), "{text}");
    assert!(text.contains("lib/cmake/cycle-config.cmake"), "{text}");
    // A text without a refusal is a usage error that says so.
    let o = heft_run(
        None,
        &[
            "refused",
            "--log",
            &repo().join("Cargo.toml").to_string_lossy(),
        ],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains("no refusal of Nix's found"),
        "{}",
        o.stderr
    );
}

/// `--dir` on a tree of 100,000 files and a 2 GiB file (sparse: its bytes
/// are zeros but for a store path at the end) keeps the memory bound of
/// every other read: the tree is streamed, never held.
#[test]
fn a_large_tree_is_read_in_bounded_memory() {
    let dir = crate::common::scratch_dir("refused-large");
    let tree = dir.join("tree");
    for d in 0..100 {
        let sub = tree.join(format!("d{d:03}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..1000 {
            std::fs::write(sub.join(format!("f{f:04}")), b"small").unwrap();
        }
    }
    let dep = "/nix/store/0123456789abcdfghijklmnpqrsvwxyz-large-dep";
    let big = std::fs::File::create(tree.join("big")).unwrap();
    let size: u64 = 2 << 30;
    big.set_len(size).unwrap();
    use std::os::unix::fs::FileExt;
    big.write_at(format!("{dep}/lib\n").as_bytes(), size - 100)
        .unwrap();
    drop(big);
    let bin = assert_cmd::cargo::cargo_bin("nix-heft");
    let tree_s = tree.to_string_lossy().into_owned();
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(bin)
        .args(["refs", "--json", "--dir", &tree_s, "--to", dep])
        .output()
        .expect("GNU time (/usr/bin/time) is installed by scripts/test.sh");
    let err = String::from_utf8_lossy(&out.stderr);
    let rss: u64 = err
        .trim()
        .rsplit('\n')
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The candidate is in no store: a leaf, held by the one file.
    eprintln!(
        "refs --dir over 100,000 files and 2 GiB: peak RSS {} MiB",
        rss / 1024
    );
    assert!(out.status.success(), "{err}");
    assert!(
        stdout.contains("\"big\"") && stdout.contains(dep),
        "{stdout}"
    );
    assert!(rss < 150 * 1024, "peak RSS {} KiB", rss);
    // Its 100,000 files' blocks go now, not at the end of the run.
    std::fs::remove_dir_all(&tree).unwrap();
}

/// `__structuredAttrs`: the check per output in `outputChecks`, read by the
/// hook from `.attrs.json`, the outputs from `.attrs.sh`'s array.
#[test]
fn hook_reads_structured_attributes() {
    let (ok, _, log) = build("structured", true, false);
    assert!(!ok, "{log}");
    assert!(log.contains("is not allowed to refer"), "{log}");
    let text = hook_text(&log);
    assert!(
        text.contains("which disallowedReferences refuses"),
        "{text}"
    );
    assert!(text.contains("share/doc/structured/NOTES"), "{text}");
}
