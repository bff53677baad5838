//! When a build refuses a reference (issues 33, 39): real Nix 2.8.0
//! builds (Debian's nix-bin, as root) of tests/fixtures/refused/ that fail
//! each of Nix's output checks and its cycle check, the sandbox off and on
//! (on with `sandbox-paths` as docs/guide/refused.md gives them, plus the
//! binary's directory and the hook), with nix-heft's setup hook
//! (nix/setup-hook.sh, as the package installs it) run by the builder as
//! stdenv's fixup phase runs postFixupHooks.
//!
//! What the tests hold nix-heft to, and where it comes from:
//! - Nix 2.8.0's `LocalDerivationGoal::checkOutputs` and
//!   `ParsedDerivation::getStringsAttr` (src/libstore/build/
//!   local-derivation-goal.cc, src/libstore/parsed-derivations.cc at the
//!   2.8.0 tag of NixOS/nix): a check set to `[ ]` is a check (an empty
//!   environment variable; a key of `outputChecks`), only `outputChecks`
//!   counts under `__structuredAttrs`, and an output is among its own
//!   requisites unless `ignoreSelfRefs`, which 2.8 sets only without
//!   structured attributes (through 2.35, `DerivationOptions` never reads
//!   it from `outputChecks`);
//! - 2.8.0's `writeStructuredAttrs`: `NIX_ATTRS_JSON_FILE` names the
//!   host's build directory, which the sandbox does not have
//!   (NixOS/nix#6736); nixpkgs' stdenv (pkgs/stdenv/generic/setup.sh)
//!   falls back to `$NIX_BUILD_TOP/.attrs.json`, as nix-heft does;
//! - nixpkgs' `moveToOutput` and `remove-references-to`, which the fixes
//!   call (the fixture's shims name the commits read).
//!
//! For each case and each sandbox setting: the build fails as Nix fails
//! it; the hook's text in the log names each refused path once, with each
//! file and its kind of hold, and has no colour and no blank line (nor has
//! the log Nix keeps); `refused DRV`, `refused --log` on that log and
//! their `--json` say the same; and each fix the report suggests, applied
//! to the derivation, builds: Nix accepts it, and the hook says nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::{heft_run, nix, nonce, repo, run};
use crate::common::nix_output;

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sandbox {
    Off,
    On,
}

/// How a build is made (the fixture's arguments).
#[derive(Clone)]
struct Opts {
    restricted: bool,
    /// NIX_HEFT_REFUSED_FAIL's value, when set.
    fail: Option<&'static str>,
    hooked: bool,
    fix: String,
    /// A Nix attribute set of checks that replace the fixture's.
    checks: String,
    /// The directory `nix-heft` is taken from (default: the binary's).
    heft_dir: Option<String>,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            restricted: true,
            fail: None,
            hooked: true,
            fix: String::new(),
            checks: "{ }".into(),
            heft_dir: None,
        }
    }
}

/// A build's outcome: whether it succeeded, its standard output (the
/// paths) and its standard error (the build log, then Nix's error).
struct Built {
    ok: bool,
    paths: String,
    log: String,
}

/// `nix-build -A attr` with this run's salt and `tag` (each test its own
/// derivations: a failed build's output is removed by the next build of
/// the same derivation).
fn build(attr: &str, sandbox: Sandbox, tag: &str, o: &Opts) -> Built {
    let f = fixture();
    let heft_dir = o.heft_dir.clone().unwrap_or_else(|| f.heft_dir.clone());
    let mut c = Command::new("nix-build");
    c.arg(&f.file).args(["--option", "substituters", ""]).args([
        "--option",
        "build-users-group",
        "",
    ]);
    match sandbox {
        Sandbox::Off => {
            c.args(["--option", "sandbox", "false"]);
        }
        Sandbox::On => {
            c.args(["--option", "sandbox", "true"]).args([
                "--option",
                "sandbox-paths",
                &format!(
                    "/bin=/usr/bin /usr /lib=/usr/lib /lib64=/usr/lib64 {heft_dir} {}",
                    f.hook
                ),
            ]);
        }
    }
    let out = nix_output(
        c.args(["--argstr", "heft", &heft_dir])
        .args(["--argstr", "hook", &f.hook])
        .args(["--argstr", "salt", &format!("{}-{tag}-{sandbox:?}", f.salt)])
        .args(["--arg", "restricted", &o.restricted.to_string()])
        .args(match o.fail {
            Some(v) => vec!["--argstr", "fail", v],
            None => vec![],
        })
        .args(["--arg", "hooked", &o.hooked.to_string()])
        .args(["--argstr", "fix", &o.fix])
        .args(["--arg", "override", &o.checks])
            .args(["-A", attr, "--no-out-link"]),
    );
    Built {
        ok: out.status.success(),
        paths: String::from_utf8_lossy(&out.stdout).into_owned(),
        log: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The part of a build log nix-heft wrote: from its first line to the
/// line before Nix's error (or the hook's failing line).
fn hook_text(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("nix-heft: "))
        .unwrap_or_else(|| panic!("no nix-heft text in: {log}"));
    let end = lines[start..]
        .iter()
        .position(|l| l.starts_with("error: ") || l.starts_with("nix-heft setup hook: "))
        .map_or(lines.len(), |e| start + e);
    let mut s = lines[start..end].join("\n");
    s.push('\n');
    s
}

/// The derivation a log says it built whose name is `name`.
fn drv_in(log: &str, name: &str) -> String {
    let suffix = format!("-{name}.drv");
    log.split(['\'', ' ', '\n'])
        .find(|s| s.starts_with("/nix/store/") && s.ends_with(&suffix))
        .unwrap_or_else(|| panic!("no {suffix} in {log}"))
        .to_string()
}

/// How many lines of `text` are exactly `line`, or start with it.
fn count_lines(text: &str, pred: impl Fn(&str) -> bool) -> usize {
    text.lines().filter(|l| pred(l)).count()
}

/// A refused path as a case expects it: the attribute that refuses it, the
/// end of its store path (`-dep-1.0`; the output's own name for itself),
/// and the files on its chain with their kind of hold.
type Expected = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// One case: a fixture attribute that Nix refuses, what nix-heft must say.
struct Case {
    attr: &'static str,
    /// The derivation's name.
    name: &'static str,
    /// Each refused path.
    refused: &'static [Expected],
    /// A cycle's files and kinds.
    cycle: Option<&'static [(&'static str, &'static str)]>,
}

const CASES: &[Case] = &[
    Case {
        attr: "allowedNone",
        name: "allowed-none-1.0",
        refused: &[
            (
                "allowedReferences",
                "-dep-1.0",
                &[
                    ("bin/tool", "elf-runpath"),
                    ("share/doc/allowed-none/README", "text"),
                ],
            ),
            (
                "allowedReferences",
                "-allowed-none-1.0",
                &[("bin/tool", "elf-runpath")],
            ),
        ],
        cycle: None,
    },
    Case {
        attr: "allowedReqNone",
        name: "allowed-req-none-1.0",
        refused: &[
            (
                "allowedRequisites",
                "-dep-1.0",
                &[
                    ("share/doc/allowed-req-none/BUILD-INFO", "text"),
                    ("share/mid.conf", "text"),
                    ("lib/lib2.deps", "text"),
                ],
            ),
            (
                "allowedRequisites",
                "-lib2-2.0",
                &[
                    ("share/doc/allowed-req-none/BUILD-INFO", "text"),
                    ("share/mid.conf", "text"),
                ],
            ),
            (
                "allowedRequisites",
                "-mid-1.0",
                &[("share/doc/allowed-req-none/BUILD-INFO", "text")],
            ),
        ],
        cycle: None,
    },
    Case {
        attr: "textAndElf",
        name: "text-and-elf-1.0",
        refused: &[(
            "disallowedReferences",
            "-dep-1.0",
            &[
                ("bin/tool", "elf-runpath"),
                ("share/doc/text-and-elf/README", "text"),
            ],
        )],
        cycle: None,
    },
    Case {
        attr: "requisite",
        name: "requisite-1.0",
        refused: &[(
            "disallowedRequisites",
            "-dep-1.0",
            &[
                ("etc/app.conf", "text"),
                ("share/mid.conf", "text"),
                ("lib/lib2.deps", "text"),
            ],
        )],
        cycle: None,
    },
    Case {
        attr: "allowed",
        name: "allowed-1.0",
        refused: &[("allowedReferences", "-lib2-2.0", &[("bin/run", "text")])],
        cycle: None,
    },
    Case {
        attr: "structured",
        name: "structured-1.0",
        refused: &[(
            "outputChecks.out.disallowedReferences",
            "-dep-1.0",
            &[("share/doc/structured/NOTES", "text")],
        )],
        cycle: None,
    },
    Case {
        attr: "structuredSelf",
        name: "structured-self-1.0",
        refused: &[
            (
                "outputChecks.out.allowedRequisites",
                "-structured-self-1.0",
                &[],
            ),
            (
                "outputChecks.out.allowedRequisites",
                "-dep-1.0",
                &[("share/doc/structured-self/NOTES", "text")],
            ),
        ],
        cycle: None,
    },
    Case {
        attr: "manyDocs",
        name: "many-docs-1.0",
        refused: &[(
            "disallowedReferences",
            "-dep-1.0",
            &[
                ("share/doc/many-docs/a.txt", "text"),
                ("share/doc/many-docs/b.txt", "text"),
                ("share/doc/many-docs/c.txt", "text"),
                ("share/doc/many-docs/html/d.html", "text"),
                ("share/doc/many-docs/html/e.html", "text"),
            ],
        )],
        cycle: None,
    },
    Case {
        attr: "cycle",
        name: "cycle-1.0",
        refused: &[],
        cycle: Some(&[
            ("lib/pkgconfig/cycle.pc", "text"),
            ("lib/cmake/cycle-config.cmake", "text"),
        ]),
    },
];

fn case(attr: &str) -> &'static Case {
    CASES.iter().find(|c| c.attr == attr).unwrap()
}

/// The (file, kind) pairs of every hold under a JSON value's `evidence`.
fn holds(v: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    fn walk(v: &Value, out: &mut BTreeSet<(String, String)>) {
        match v {
            Value::Object(m) => {
                if let (Some(f), Some(k)) = (m.get("file"), m.get("kind"))
                    && m.contains_key("verdict")
                {
                    out.insert((
                        f.as_str().unwrap_or_default().to_string(),
                        k.as_str().unwrap_or_default().to_string(),
                    ));
                }
                m.values().for_each(|x| walk(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(v, &mut out);
    out
}

fn pairs(p: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    p.iter()
        .map(|(f, k)| (f.to_string(), k.to_string()))
        .collect()
}

/// The checks the report's check fixes make, as the fixture's `override`
/// (several fixes of one attribute together: the union of what they add,
/// the intersection of what they leave).
fn checks_of(fixes: &[&Value]) -> String {
    let mut by_attr: BTreeMap<String, Option<BTreeSet<String>>> = BTreeMap::new();
    for f in fixes.iter().filter(|f| f["kind"] == "check") {
        let list: BTreeSet<String> = f["list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap().to_string())
            .collect();
        let slot = by_attr
            .entry(f["attribute"].as_str().unwrap().to_string())
            .or_insert(None);
        *slot = Some(match slot.take() {
            None => list,
            Some(had) if f["add"] == true => had.union(&list).cloned().collect(),
            Some(had) => had.intersection(&list).cloned().collect(),
        });
    }
    let mut s = String::from("{ ");
    for (attr, list) in by_attr {
        let items: Vec<String> = list
            .unwrap_or_default()
            .iter()
            .map(|e| format!("{e:?}"))
            .collect();
        s.push_str(&format!("{attr} = [ {} ]; ", items.join(" ")));
    }
    s.push('}');
    s
}

/// The lines of the report's script fixes, in order.
fn script_of(fixes: &[&Value]) -> String {
    let mut lines: Vec<String> = Vec::new();
    for f in fixes.iter().filter(|f| f["kind"] == "script") {
        for l in f["lines"].as_array().unwrap() {
            lines.push(l.as_str().unwrap().to_string());
        }
    }
    lines.join("\n")
}

/// Every fix `report` (`refused --json`) suggests, applied to the
/// derivation with the first fix of every other refusal (each drops one
/// path; the build passes when all are dropped), must build with Nix,
/// and the hook must then say nothing.
/// `tag` is the failing build's: the fixes name its inputs' paths.
fn fixes_build(c: &Case, sandbox: Sandbox, tag: &str, report: &Value) {
    let remedies: Vec<&Value> = report["refused"]
        .as_array()
        .unwrap()
        .iter()
        .chain(report["cycles"].as_array().unwrap())
        .map(|r| &r["remedy"])
        .collect();
    assert!(!remedies.is_empty(), "{report}");
    let mut tried: BTreeSet<(String, String)> = BTreeSet::new();
    for (i, r) in remedies.iter().enumerate() {
        let fixes = r["fixes"].as_array().unwrap();
        assert!(!fixes.is_empty(), "no fix for {r} in {report}");
        for (k, fix) in fixes.iter().enumerate() {
            let mut chosen: Vec<&Value> = remedies
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, o)| &o["fixes"][0])
                .collect();
            chosen.insert(0, fix);
            let o = Opts {
                fix: script_of(&chosen),
                checks: checks_of(&chosen),
                ..Opts::default()
            };
            if !tried.insert((o.fix.clone(), o.checks.clone())) {
                continue;
            }
            let b = build(c.attr, sandbox, tag, &o);
            assert!(
                b.ok,
                "{} ({sandbox:?}): fix {k} of refusal {i} does not build:\nfix: {}\nchecks: {}\n{}",
                c.attr, o.fix, o.checks, b.log
            );
            assert_eq!(
                count_lines(&b.log, |l| l.contains("nix-heft")),
                0,
                "the hook says nothing of a build Nix accepts: {}",
                b.log
            );
        }
    }
}

/// A file holding `text`, for `--log`.
fn log_file(name: &str, text: &str) -> String {
    let f = crate::common::scratch_dir("refused-log").join(name);
    std::fs::write(&f, text).unwrap();
    f.to_string_lossy().into_owned()
}

fn json(o: &crate::common::Outcome) -> Value {
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout))
}

/// The whole check of one case under one sandbox setting (see the module
/// docs).
fn check_case(attr: &str, sandbox: Sandbox) {
    let c = case(attr);
    let b = build(c.attr, sandbox, c.attr, &Opts::default());
    assert!(!b.ok, "{} must fail: {}", c.attr, b.log);
    let log = &b.log;
    if c.cycle.is_some() {
        assert_eq!(
            count_lines(log, |l| l.starts_with("error: cycle detected")),
            1,
            "{log}"
        );
    } else {
        assert_eq!(
            count_lines(log, |l| l
                .contains("is not allowed to refer to the following paths")),
            1,
            "Nix's own error: {log}"
        );
    }
    assert!(!log.contains('\u{1b}'), "no colour in a build log: {log:?}");
    let text = hook_text(log);
    assert_eq!(
        count_lines(&text, |l| l.trim().is_empty()),
        0,
        "no blank line: {text}"
    );
    // Each refused path said once, by its attribute; nothing else refused.
    assert_eq!(
        count_lines(&text, |l| l.starts_with("nix-heft: output '")),
        c.refused.len(),
        "{text}"
    );
    for (attribute, path, files) in c.refused {
        let itself = if path.ends_with(c.name) && path.len() == c.name.len() + 1 {
            " (itself)"
        } else {
            ""
        };
        let needle = format!("{path}{itself}, which {attribute} refuses");
        assert_eq!(
            count_lines(&text, |l| l.starts_with("nix-heft: output '")
                && l.ends_with(&needle)),
            1,
            "{needle}: {text}"
        );
        for (f, kind) in *files {
            assert!(text.contains(&format!("    {f}\n")), "{f}: {text}");
            assert!(text.contains(&format!("      {kind} ")), "{kind}: {text}");
        }
    }
    if let Some(files) = c.cycle {
        assert_eq!(
            count_lines(&text, |l| l.starts_with(
                "nix-heft: the outputs refer to each other: dev → out → dev"
            )),
            1,
            "{text}"
        );
        for (f, _) in files {
            assert!(text.contains(&format!("    {f}\n")), "{f}: {text}");
        }
    }
    assert_eq!(
        count_lines(&text, |l| l.starts_with(
            "nix-heft: an offset (@N) is where the path's hash starts"
        )),
        1,
        "{text}"
    );
    // The log Nix keeps (`nix-store -l`, /nix/var/log/nix/drvs): the same
    // text, no colour.
    let drv = drv_in(log, c.name);
    let kept = run(Command::new("nix-store").args(["-l", &drv]));
    assert!(!kept.contains('\u{1b}'), "{kept:?}");
    assert!(kept.contains(text.lines().next().unwrap()), "{kept}");

    let file = log_file(&format!("{}-{sandbox:?}.log", c.attr), log);
    // A cycle's outputs are deleted with the sandbox by Nix 2.8 (the
    // guide's table): nothing to read after the failure.
    let gone = c.cycle.is_some() && sandbox == Sandbox::On;
    if gone {
        let o = heft_run(None, &["refused", &drv]);
        assert_eq!(o.code, 1, "{}", o.stderr);
        assert!(o.stderr.contains("none of the outputs of"), "{}", o.stderr);
        let o = heft_run(None, &["refused", "--log", &file]);
        assert_eq!(o.code, 3, "{}{}", o.stdout, o.stderr);
        assert_eq!(
            count_lines(&o.stdout, |l| l
                .starts_with("nix-heft: Nix found a cycle in ")
                && l.contains("files are gone")),
            1,
            "{}",
            o.stdout
        );
        let o = heft_run(None, &["refused", "--log", &file, "--fail"]);
        assert_eq!(o.code, 4, "{}", o.stderr);
        let v = json(&heft_run(None, &["refused", "--log", &file, "--json"]));
        assert_eq!(v["log"][0]["left"], "gone", "{v}");
        assert_eq!(v["log"][0]["kind"], "cycle", "{v}");
        // The fixes come from a build the hook fails itself: a builder's
        // failure leaves the outputs, even in the sandbox.
        let b = build(
            c.attr,
            sandbox,
            &format!("{}-failing", c.attr),
            &Opts {
                fail: Some("1"),
                ..Opts::default()
            },
        );
        assert!(!b.ok);
        let drv = drv_in(&b.log, c.name);
        let v = json(&heft_run(None, &["refused", "--json", &drv]));
        fixes_build(c, sandbox, &format!("{}-failing", c.attr), &v);
        return;
    }
    // After the failure: `refused DRV` says what the hook said.
    let o = heft_run(None, &["refused", &drv]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, text, "refused DRV and the hook");
    let report = json(&heft_run(None, &["refused", "--json", &drv]));
    assert_eq!(report["drv"], drv.as_str());
    let refused = report["refused"].as_array().unwrap();
    assert_eq!(refused.len(), c.refused.len(), "{report}");
    // Refusals come in store path order, which the hashes decide.
    for (attribute, path, files) in c.refused {
        let r = refused
            .iter()
            .find(|r| r["path"].as_str().unwrap().ends_with(path))
            .unwrap_or_else(|| panic!("{path} not refused: {report}"));
        assert_eq!(r["attribute"], *attribute, "{r}");
        assert_eq!(holds(&r["chain"]), pairs(files), "{r}");
    }
    if let Some(files) = c.cycle {
        assert_eq!(holds(&report["cycles"]), pairs(files), "{report}");
    }
    assert_eq!(heft_run(None, &["refused", "--fail", &drv]).code, 4);
    // `--log` on the build's output: Nix's refusal once, then the same.
    let o = heft_run(None, &["refused", "--log", &file]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let (said, rest) = o.stdout.split_at(o.stdout.find('\n').unwrap() + 1);
    assert!(
        said.starts_with("nix-heft: Nix refused output /nix/store/")
            || said.starts_with("nix-heft: Nix found a cycle in /nix/store/"),
        "{}",
        o.stdout
    );
    assert!(said.contains("still there"), "{said}");
    assert_eq!(rest, text, "refused --log and the hook");
    let v = json(&heft_run(None, &["refused", "--log", &file, "--json"]));
    assert_eq!(v["log"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["log"][0]["by"], "nix");
    assert_eq!(
        v["builds"][0], report,
        "refused --log --json and refused --json"
    );
    assert_eq!(
        heft_run(None, &["refused", "--log", &file, "--fail"]).code,
        4
    );
    // `refused OUTPUT`: the output Nix left unregistered, read as its
    // derivation (the one that lists it), that output's checks.
    if let Some(out) = refused.first().map(|r| r["output_path"].as_str().unwrap()) {
        let o = heft_run(None, &["refused", "--json", out]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert_eq!(json(&o), report, "refused OUTPUT and refused DRV");
    }
    fixes_build(c, sandbox, c.attr, &report);
}

macro_rules! cases {
    ($($name:ident => $attr:literal, $sandbox:ident;)*) => {
        $(
            #[test]
            fn $name() {
                check_case($attr, Sandbox::$sandbox);
            }
        )*
    };
}

cases! {
    allowed_references_empty_sandbox_off => "allowedNone", Off;
    allowed_references_empty_sandbox_on => "allowedNone", On;
    allowed_requisites_empty_sandbox_off => "allowedReqNone", Off;
    allowed_requisites_empty_sandbox_on => "allowedReqNone", On;
    disallowed_references_sandbox_off => "textAndElf", Off;
    disallowed_references_sandbox_on => "textAndElf", On;
    disallowed_requisites_two_deep_sandbox_off => "requisite", Off;
    disallowed_requisites_two_deep_sandbox_on => "requisite", On;
    allowed_references_list_sandbox_off => "allowed", Off;
    allowed_references_list_sandbox_on => "allowed", On;
    output_checks_structured_sandbox_off => "structured", Off;
    output_checks_structured_sandbox_on => "structured", On;
    output_checks_own_path_sandbox_off => "structuredSelf", Off;
    output_checks_own_path_sandbox_on => "structuredSelf", On;
    many_files_sandbox_off => "manyDocs", Off;
    cycle_between_outputs_sandbox_off => "cycle", Off;
    cycle_between_outputs_sandbox_on => "cycle", On;
}

/// The fixes are the ones that pass: no move to an output that does not
/// exist or that the check covers too (without structured attributes every
/// output has the checks), a run-time hold allowed rather than removed,
/// the output's own path allowed by name.
#[test]
fn the_fixes_suggested_are_the_ones_that_pass() {
    let fixes_of = |attr: &str| -> Vec<Value> {
        let c = case(attr);
        let b = build(
            attr,
            Sandbox::Off,
            &format!("{attr}-which"),
            &Opts::default(),
        );
        assert!(!b.ok);
        let v = json(&heft_run(
            None,
            &["refused", "--json", &drv_in(&b.log, c.name)],
        ));
        v["refused"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["remedy"].clone())
            .collect()
    };
    // No doc output: no move, the reference removed.
    let r = &fixes_of("textAndElf")[0];
    assert_eq!(r["held"], "removable", "{r}");
    let text = r.to_string();
    assert!(!text.contains("moveToOutput"), "{r}");
    assert!(
        text.contains("patchelf --shrink-rpath $out/bin/tool"),
        "{r}"
    );
    // A doc output no check covers: the move first, then the removal.
    let r = &fixes_of("structured")[0];
    assert_eq!(
        r["fixes"][0]["lines"][0], "moveToOutput share/doc \"$doc\"",
        "{r}"
    );
    assert!(
        r["fixes"][1]["lines"][0]
            .as_str()
            .unwrap()
            .starts_with("remove-references-to -t /nix/store/")
    );
    // Five files: three named, the rest counted, all reached by find.
    let r = &fixes_of("manyDocs")[0];
    let lines = &r["fixes"][0]["lines"];
    assert_eq!(
        lines[0],
        "# 5 files: share/doc/many-docs/a.txt, share/doc/many-docs/b.txt, \
         share/doc/many-docs/c.txt and 2 more",
        "{r}"
    );
    assert!(
        lines[1].as_str().unwrap().starts_with(
            "find $out/share/doc/many-docs -type f -exec remove-references-to -t /nix/store/"
        ),
        "{r}"
    );
    // Held at run time by a script: the check allows it.
    let r = &fixes_of("allowed")[0];
    assert_eq!(r["held"], "at-run-time", "{r}");
    assert_eq!(r["files"], serde_json::json!(["bin/run"]));
    assert_eq!(r["fixes"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["fixes"][0]["kind"], "check");
    assert_eq!(r["fixes"][0]["attribute"], "allowedReferences");
    assert_eq!(r["fixes"][0]["list"].as_array().unwrap().len(), 2, "{r}");
    // The output's own path as its requisite: allowed by its name.
    let all = fixes_of("structuredSelf");
    let r = all
        .iter()
        .find(|r| r["held"] == "own-path")
        .unwrap_or_else(|| panic!("{all:?}"));
    assert_eq!(
        r["fixes"][0],
        serde_json::json!({"kind": "check", "attribute": "outputChecks.out.allowedRequisites",
                           "entry": "out", "add": true, "list": ["out"]})
    );
}

/// `ignoreSelfRefs = true` in `outputChecks` is not read by Nix 2.8: the
/// output's own path is still refused, which is why nix-heft never
/// suggests it.
#[test]
fn nix_2_8_ignores_ignore_self_refs_in_output_checks() {
    let b = build(
        "structuredSelf",
        Sandbox::Off,
        "ignore-self-refs",
        &Opts {
            checks: "{ outputChecks.out = { allowedRequisites = [ ]; ignoreSelfRefs = true; }; }"
                .into(),
            fix: "rm -r $out/share".into(),
            ..Opts::default()
        },
    );
    assert!(!b.ok, "{}", b.log);
    let text = hook_text(&b.log);
    assert_eq!(
        count_lines(&text, |l| l.starts_with("nix-heft: output '")),
        1,
        "{text}"
    );
    assert!(text.contains("(itself), which outputChecks.out.allowedRequisites refuses"));
    assert!(
        b.log
            .contains("is not allowed to refer to the following paths")
    );
}

/// With NIX_HEFT_REFUSED_FAIL the hook fails the build itself, before
/// Nix's checks; `refused --log` recognises that text and reads the
/// outputs the failed builder left (with the sandbox too).
#[test]
fn the_hook_fails_the_build_and_log_reads_it() {
    for sandbox in [Sandbox::Off, Sandbox::On] {
        let b = build(
            "textAndElf",
            sandbox,
            "failing",
            &Opts {
                fail: Some("1"),
                ..Opts::default()
            },
        );
        assert!(!b.ok);
        assert_eq!(
            count_lines(&b.log, |l| l
                .starts_with("nix-heft setup hook: failing the build")),
            1,
            "{}",
            b.log
        );
        assert!(
            !b.log.contains("is not allowed to refer"),
            "Nix's check never ran"
        );
        let file = log_file(&format!("failing-{sandbox:?}.log"), &b.log);
        let o = heft_run(None, &["refused", "--log", &file]);
        assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
        assert_eq!(
            count_lines(&o.stdout, |l| l
                .starts_with("nix-heft: nix-heft's setup hook refused output ")
                && l.contains("(disallowedReferences)")),
            1,
            "{}",
            o.stdout
        );
        assert_eq!(
            count_lines(&o.stdout, |l| l.starts_with(
                "nix-heft: nix-heft's setup hook failed the build of /nix/store/"
            )),
            1,
            "{}",
            o.stdout
        );
        assert!(o.stdout.ends_with(&hook_text(&b.log)), "{}", o.stdout);
        assert_eq!(
            heft_run(None, &["refused", "--log", &file, "--fail"]).code,
            4
        );
    }
    // NIX_HEFT_REFUSED_FAIL=0 does not fail the build: the hook explains,
    // then Nix refuses.
    let b = build(
        "textAndElf",
        Sandbox::Off,
        "failing-0",
        &Opts {
            fail: Some("0"),
            ..Opts::default()
        },
    );
    assert!(!b.ok);
    assert!(!b.log.contains("failing the build"), "{}", b.log);
    assert!(b.log.contains("is not allowed to refer"), "{}", b.log);
    assert_eq!(
        count_lines(&b.log, |l| l.starts_with("nix-heft: output '")),
        1
    );
}

/// The hook runs once per build, after every output's fixup, and reads
/// each output once: on a build with two outputs and nothing refused,
/// one nix-heft process opens each output's files once (strace); a build
/// with no check and one output does not run it at all.
#[test]
fn the_hook_runs_once_and_reads_each_output_once() {
    let dir = crate::common::scratch_dir("refused-once");
    let calls = dir.join("calls");
    let wrapper = dir.join("nix-heft");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/bash\necho \"$@\" >> {calls}\nexec strace -f -qq -e trace=open,openat -o {trace}.$$ {real} \"$@\"\n",
            calls = calls.display(),
            trace = dir.join("trace").display(),
            real = env!("CARGO_BIN_EXE_nix-heft"),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let via = |fix: &str, restricted: bool, attr: &str, tag: &str| {
        build(
            attr,
            Sandbox::Off,
            tag,
            &Opts {
                fix: fix.into(),
                restricted,
                heft_dir: Some(dir.to_string_lossy().into_owned()),
                ..Opts::default()
            },
        )
    };
    // The cycle broken: two outputs, nothing refused.
    let b = via("moveToOutput lib/pkgconfig \"$dev\"", true, "cycle", "once");
    assert!(b.ok, "{}", b.log);
    let said = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(said.lines().count(), 1, "one call per build: {said}");
    let outs =
        run(Command::new("nix-store").args(["-q", "--outputs", &drv_in(&b.log, "cycle-1.0")]));
    let outputs: Vec<&str> = outs.lines().collect();
    assert_eq!(outputs.len(), 2, "{outs}");
    let mut opened: BTreeMap<String, usize> = BTreeMap::new();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        if !e.file_name().to_string_lossy().starts_with("trace.") {
            continue;
        }
        for l in std::fs::read_to_string(e.path()).unwrap().lines() {
            if l.contains("ENOENT") || l.contains("O_DIRECTORY") {
                continue;
            }
            if let Some(p) = l.split('"').nth(1)
                && outputs.iter().any(|o| p.starts_with(&format!("{o}/")))
            {
                *opened.entry(p.to_string()).or_default() += 1;
            }
        }
    }
    let files = [
        "lib/libcycle.so",
        "lib/pkgconfig/cycle.pc",
        "lib/cmake/cycle-config.cmake",
    ];
    assert_eq!(opened.len(), files.len(), "{opened:?}");
    assert!(
        opened.values().all(|&n| n == 1),
        "each file once: {opened:?}"
    );
    // One output, no check: the hook returns before running nix-heft.
    std::fs::remove_file(&calls).unwrap();
    let b = via("", false, "textAndElf", "once-plain");
    assert!(b.ok, "{}", b.log);
    assert!(!calls.exists(), "{:?}", std::fs::read_to_string(&calls));
}

/// What no scanner sees, Nix's included: a store path written in UTF-16,
/// or inside a compressed file. Nix accepts the build whatever the check
/// says, and nix-heft finds no reference either (docs/guide/refused.md).
#[test]
fn what_no_scanner_sees() {
    let b = build(
        "textAndElf",
        Sandbox::Off,
        "unseen",
        &Opts {
            // $disallowedReferences is dep's path.
            fix: "rm $out/bin/tool $out/share/doc/text-and-elf/README\n\
                  printf '%s' \"$disallowedReferences\" | iconv -t UTF-16LE > $out/share/doc/text-and-elf/utf16\n\
                  printf '%s' \"$disallowedReferences\" | gzip > $out/share/doc/text-and-elf/README.gz"
                .into(),
            ..Opts::default()
        },
    );
    assert!(b.ok, "Nix sees no reference: {}", b.log);
    let out = b.paths.trim();
    let o = heft_run(None, &["refs", "--json", out]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(!o.stdout.contains("-dep-1.0"), "{}", o.stdout);
    let refs = run(Command::new("nix-store").args(["-q", "--references", out]));
    assert!(refs.trim().is_empty(), "{refs}");
}

/// The exit codes of the README: a missing `--dir` is 1, like a missing
/// path; `why OUT DEV` on a sibling output a failed build left says to
/// name it with `--to`; a cycle's excerpt of a hold on line 2 is line 2.
#[test]
fn exit_codes_and_what_a_tree_cannot_see() {
    let o = heft_run(
        None,
        &[
            "refs",
            "--dir",
            "/nonexistent/tree",
            "--to",
            "/nix/store/0123456789abcdfghijklmnpqrsvwxyz-x",
        ],
    );
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("/nonexistent/tree"), "{}", o.stderr);
    let b = build("cycle", Sandbox::Off, "why-sibling", &Opts::default());
    assert!(!b.ok);
    let drv = drv_in(&b.log, "cycle-1.0");
    let outs = run(Command::new("nix-store").args(["-q", "--outputs", &drv]));
    let out = path_named(&outs, "-cycle-1.0");
    let dev = path_named(&outs, "-cycle-1.0-dev");
    let o = heft_run(None, &["why", out, dev]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains(&format!("name it with --to {dev}")),
        "{}",
        o.stderr
    );
    let o = heft_run(None, &["why", "--json", out, dev, "--to", dev]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // The excerpt of the hold on line 2 of cycle.pc starts on line 2.
    let v = json(&heft_run(None, &["refused", "--json", &drv]));
    let ev: Vec<&Value> = v["cycles"][0]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["evidence"].as_array().unwrap())
        .filter(|e| e["file"] == "lib/pkgconfig/cycle.pc")
        .collect();
    assert_eq!(ev.len(), 1, "{v}");
    assert_eq!(ev[0]["line"], 2);
    assert!(
        ev[0]["context"]
            .as_str()
            .unwrap()
            .starts_with("includedir=/nix/store/"),
        "{}",
        ev[0]
    );
}

/// The store path of `name` among `paths` (one per line).
fn path_named<'a>(paths: &'a str, suffix: &str) -> &'a str {
    paths
        .lines()
        .find(|l| l.ends_with(suffix))
        .unwrap_or_else(|| panic!("no {suffix} in {paths}"))
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
    holds(&json(&o)).into_iter().map(|(f, _)| f).collect()
}

/// The output a failed build left (Nix 2.8, the sandbox off: at its store
/// path, unregistered) is read as a store path by every command that takes
/// a tree: `refs OUT` and `refs --dir OUT --as OUT` give the same
/// references, the refused input among them, and `why --dir OUT DEP` the
/// files the hook named.
#[test]
fn the_left_output_is_read_by_refs_and_why() {
    let c = case("textAndElf");
    let b = build(c.attr, Sandbox::Off, "left", &Opts::default());
    assert!(!b.ok, "{}", b.log);
    let v = json(&heft_run(
        None,
        &["refused", "--json", &drv_in(&b.log, c.name)],
    ));
    let out = v["refused"][0]["output_path"].as_str().unwrap().to_string();
    let dep = v["refused"][0]["path"].as_str().unwrap().to_string();
    let valid = nix_output(Command::new("nix-store")
        .args(["--check-validity", &out]));
    assert!(!valid.status.success(), "{out} is not valid");
    let by_path = heft_run(None, &["refs", "--json", &out]);
    assert_eq!(by_path.code, 0, "{}", by_path.stderr);
    let by_dir = heft_run(None, &["refs", "--json", "--dir", &out, "--as", &out]);
    assert_eq!(by_dir.code, 0, "{}", by_dir.stderr);
    assert_eq!(by_path.stdout, by_dir.stdout, "refs OUT and refs --dir OUT");
    assert!(by_path.stdout.contains(&dep), "{}", by_path.stdout);
    let why = heft_run(None, &["why", "--json", "--dir", &out, &dep]);
    assert_eq!(why.code, 0, "{}", why.stderr);
    let files: BTreeSet<String> = holds(&json(&why)).into_iter().map(|(f, _)| f).collect();
    let expected: BTreeSet<String> = c.refused[0].2.iter().map(|(f, _)| f.to_string()).collect();
    assert_eq!(files, expected, "{}", why.stdout);
}

/// The same derivations built without the checks: `nix why-depends
/// --precise` and `nix-heft why` name the files the hook named.
#[test]
fn the_files_are_the_ones_nix_why_depends_names() {
    for attr in ["textAndElf", "requisite"] {
        let c = case(attr);
        let b = build(
            attr,
            Sandbox::Off,
            "unrestricted",
            &Opts {
                restricted: false,
                hooked: false,
                ..Opts::default()
            },
        );
        assert!(b.ok, "{}", b.log);
        let out = b.paths.trim();
        let dep = path_named(
            &run(Command::new("nix-store").args(["-qR", out])),
            "-dep-1.0",
        )
        .to_string();
        let expected: BTreeSet<String> =
            c.refused[0].2.iter().map(|(f, _)| f.to_string()).collect();
        assert_eq!(
            why_depends_files(out, &dep),
            expected,
            "nix why-depends --precise"
        );
        assert_eq!(heft_why_files(out, &dep), expected, "nix-heft why");
    }
}

/// Store hashes masked: each run's builds are salted. A hash an excerpt
/// cuts (at its start, or at its end after `/nix/store/`) is masked too.
fn masked(s: &str) -> String {
    let is_b32 = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let mut lines = Vec::new();
    for line in s.lines() {
        let mut out = String::new();
        let mut rest = line;
        // An excerpt (`@N: …`) that starts inside a hash.
        if let Some(at) = rest.find(": ").filter(|_| rest.contains(" @")) {
            let after = &rest[at + 2..];
            let run = after.chars().take_while(|&c| is_b32(c)).count();
            if run > 0 && run < 32 && after[run..].starts_with('-') {
                out.push_str(&rest[..at + 2]);
                out.push_str("HASH");
                rest = &after[run..];
            }
        }
        while let Some(i) = rest.find("/nix/store/") {
            let after = &rest[i + "/nix/store/".len()..];
            out.push_str(&rest[..i]);
            out.push_str("/nix/store/");
            let run = after.chars().take(32).take_while(|&c| is_b32(c)).count();
            if run == 32 || (run > 0 && run == after.len()) {
                out.push_str("HASH");
                rest = &after[run..];
            } else {
                rest = after;
            }
        }
        out.push_str(rest);
        lines.push(out);
    }
    lines.join("\n")
}

/// A log as blocks (a line at column 0 and the indented lines after it),
/// masked, with the blocks and the paths of Nix's error sorted: the order
/// of refusals and of Nix's paths follows the store paths, which differ
/// from machine to machine (the fixture names the binary's directory).
fn normalised(s: &str) -> Vec<Vec<String>> {
    let mut blocks: Vec<Vec<String>> = Vec::new();
    for l in masked(s).lines() {
        match blocks.last_mut() {
            Some(b) if l.starts_with(' ') => b.push(l.to_string()),
            _ => blocks.push(vec![l.to_string()]),
        }
    }
    for b in &mut blocks {
        if b[0].starts_with("error: ") {
            b[1..].sort();
        }
    }
    blocks.sort();
    blocks
}

/// The block between `<!-- NAME:start -->` and `<!-- NAME:end -->` of a
/// doc, without its code fence.
fn doc_block(doc: &str, name: &str) -> (usize, usize) {
    let start = format!("<!-- {name}:start -->\n```text\n");
    let a = doc
        .find(&start)
        .unwrap_or_else(|| panic!("no {name} block"))
        + start.len();
    let b = a + doc[a..].find("```\n<!-- ").unwrap();
    (a, b)
}

/// A doc shows a real failing build's log, without the hook and with it
/// (NIX_HEFT_UPDATE_README=1 writes them there), the two builds over the
/// same inputs.
fn doc_shows_before_and_after(doc: &str, attr: &str, blocks: (&str, &str)) {
    let plain = build(
        attr,
        Sandbox::Off,
        "doc",
        &Opts {
            hooked: false,
            ..Opts::default()
        },
    );
    assert!(!plain.ok);
    assert!(!plain.log.contains("nix-heft"), "{}", plain.log);
    // From Nix's refusal (Nix may say other things before it: "SQLite
    // database … is busy" while other tests build).
    let before = &plain.log[plain.log.find("error: output '").unwrap()..];
    let hooked = build(attr, Sandbox::Off, "doc", &Opts::default());
    assert!(!hooked.ok);
    let after = &hooked.log[hooked.log.find("nix-heft: ").unwrap()..];
    let path = repo().join(doc);
    let mut text = std::fs::read_to_string(&path).unwrap();
    let update = std::env::var_os("NIX_HEFT_UPDATE_README").is_some();
    for (name, shown) in [(blocks.0, before), (blocks.1, after)] {
        let (a, b) = doc_block(&text, name);
        if update {
            text = format!("{}{}{}", &text[..a], shown, &text[b..]);
            continue;
        }
        assert_eq!(
            normalised(&text[a..b]),
            normalised(shown),
            "{doc}'s {name} log is stale: NIX_HEFT_UPDATE_README=1 cargo test --test testsuite refused::"
        );
    }
    if update {
        std::fs::write(&path, text).unwrap();
    }
}

/// README.md shows a real `disallowedReferences` failure before and after
/// the hook.
#[test]
fn readme_shows_a_refused_build_before_and_after() {
    doc_shows_before_and_after(
        "README.md",
        "textAndElf",
        ("refused-before", "refused-after"),
    );
}

/// The guide's refused page shows an `allowedReferences = [ ]` failure
/// before and after the hook.
#[test]
fn guide_shows_an_empty_allow_list_before_and_after() {
    doc_shows_before_and_after(
        "docs/guide/refused.md",
        "allowedNone",
        ("allowed-none-before", "allowed-none-after"),
    );
}

/// A text without a refusal is a usage error that says so.
#[test]
fn a_log_without_a_refusal_is_refused() {
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
        o.stderr.contains("Cargo.toml: no refusal of Nix's found"),
        "{}",
        o.stderr
    );
    // Standard input too.
    let mut c = crate::common::heft();
    c.args(["refused", "--log", "-"])
        .write_stdin("nothing here\n");
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
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
