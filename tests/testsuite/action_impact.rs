//! The Action's command impact (issue 32): scripts/action.sh run with
//! `INPUT_COMMAND=impact` in a checkout of a small package set made here,
//! a git repository whose `default.nix` has four attributes over one
//! library, with a base commit and a head commit where the library's docs
//! reference a large path (so the library and its two dependents grow,
//! and one attribute is untouched). Both sides are built by real Nix; the
//! base is read from a signed binary cache over HTTP where a test says so,
//! as cache.nixos.org serves a nixpkgs pull request's base.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common;
use crate::common::*;
use crate::review::{ActionRun, one_action_error, open_and_details, parse_github, parse_markdown};

/// The package set at the base: `libcore` and two applications that
/// reference it, and `stable`, which references nothing. Builds run
/// unsandboxed here, so each builder sets its own PATH.
const BASE_NIX: &str = r#"{ ... }:
let
  sys = builtins.currentSystem;
  mk = name: script: derivation {
    inherit name;
    system = sys;
    builder = "/bin/sh";
    args = [ "-c" ("PATH=/usr/bin:/bin; " + script) ];
  };
  # About 254 KiB: the kind of file a docs reference drags in.
  manual = mk "manual-1.0" "i=0; : > $out; while [ $i -lt 4000 ]; do echo 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef >> $out; i=$((i+1)); done";
  libcore = mk "libcore-1.0" "mkdir -p $out/lib $out/share/doc; echo core > $out/lib/libcore.so";
in {
  inherit libcore;
  app1 = mk "app1-1.0" "mkdir $out; echo ${libcore} > $out/ref";
  app2 = mk "app2-1.0" "mkdir $out; echo ${libcore} > $out/ref";
  stable = mk "stable-1.0" "echo stable > $out";
}
"#;

/// The attributes whose closures grow at the head.
const GROWN: [&str; 3] = ["app1", "app2", "libcore"];

/// The repository and what each side built.
struct Fixture {
    /// The git repository (base and head commits, head checked out).
    repo: PathBuf,
    base: String,
    head: String,
    /// attribute → its out path at the base, at the head.
    before: Vec<(String, String)>,
    after: Vec<(String, String)>,
}

impl Fixture {
    fn path(side: &[(String, String)], attr: &str) -> String {
        side.iter()
            .find(|(a, _)| a == attr)
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| panic!("no {attr}"))
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    run(Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args))
    .trim()
    .to_string()
}

/// The repository, both sides built (once per test binary).
fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let repo = scratch_dir("action-impact-repo");
        let attrs = ["app1", "app2", "libcore", "stable"];
        git(&repo, &["init", "-q"]);
        std::fs::write(repo.join("default.nix"), BASE_NIX).unwrap();
        git(&repo, &["add", "default.nix"]);
        git(&repo, &["commit", "-q", "-m", "base"]);
        let base = git(&repo, &["rev-parse", "HEAD"]);
        let before: Vec<(String, String)> = attrs
            .iter()
            .map(|a| a.to_string())
            .zip(nix_build(&repo, &attrs))
            .collect();
        // The head: the library's docs name the manual.
        let head_nix = BASE_NIX.replace(
            "echo core > $out/lib/libcore.so\"",
            "echo core > $out/lib/libcore.so; echo ${manual} > $out/share/doc/README\"",
        );
        assert_ne!(head_nix, BASE_NIX);
        std::fs::write(repo.join("default.nix"), head_nix).unwrap();
        git(
            &repo,
            &["commit", "-q", "-a", "-m", "libcore: install the manual"],
        );
        let head = git(&repo, &["rev-parse", "HEAD"]);
        let after: Vec<(String, String)> = attrs
            .iter()
            .map(|a| a.to_string())
            .zip(nix_build(&repo, &attrs))
            .collect();
        assert_eq!(
            Fixture::path(&before, "stable"),
            Fixture::path(&after, "stable")
        );
        Fixture {
            repo,
            base,
            head,
            before,
            after,
        }
    })
}

/// A checkout of the fixture in the Action's workspace, as
/// actions/checkout leaves it: every commit with `fetch-depth: 0`, the
/// head's alone with its default of 1.
fn checkout(a: &ActionRun, full: bool) -> PathBuf {
    let f = fixture();
    let ws = a.dir.path().join("ws");
    let mut c = Command::new("git");
    c.args(["clone", "-q"]);
    if !full {
        c.args(["--depth", "1"]);
    }
    c.arg(format!("file://{}", f.repo.display())).arg(&ws);
    run(&mut c);
    assert_eq!(git(&ws, &["rev-parse", "HEAD"]), f.head);
    ws
}

/// `nix path-info -S` of `path` (in `store`, or the local store).
fn closure_size(path: &str, store: Option<&str>) -> u64 {
    let mut c = nix();
    c.args(["path-info", "-S"]);
    if let Some(s) = store {
        c.args(["--store", s]);
    }
    let out = run(c.arg(path));
    out.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The titles of the annotations of `level` the step printed.
fn titles(out: &[u8], level: &str) -> Vec<String> {
    parse_github(&String::from_utf8_lossy(out))
        .into_iter()
        .filter(|(l, _, _)| l == level)
        .map(|(_, p, _)| p["title"].clone())
        .collect()
}

/// Mode review on a pull request, the base read from a signed cache over
/// HTTP (`before-store`), the base commit the pull request's (the
/// default), the attributes those whose out paths changed (the default):
/// the three grown attributes in the comment, annotations and job summary,
/// each closure figure `nix path-info -S`'s on its side, the untouched
/// attribute absent; markdown that GitHub renders with its sticky marker.
#[test]
fn action_impact_reviews_a_pull_request() {
    let f = fixture();
    let a = ActionRun::new("action-impact-review");
    let ws = checkout(&a, true);
    let key = test_key();
    let cache = a.dir.path().join("cache");
    let cache_url = format!("file://{}", cache.display());
    let base_paths: Vec<&str> = f.before.iter().map(|(_, p)| p.as_str()).collect();
    run(nix()
        .args([
            "copy",
            "--to",
            &format!("{cache_url}?secret-key={}", key.secret.display()),
        ])
        .args(&base_paths));
    let server = common::http_server::FileServer::start(&cache);
    let conf = format!("trusted-public-keys = {}", key.public);
    let o = a.step_in(
        &ws,
        "run",
        &[
            ("NIX_CONFIG", &conf),
            ("INPUT_COMMAND", "impact"),
            ("INPUT_BEFORE_STORE", &server.url()),
            ("PR_BASE_SHA", &f.base),
            ("PR_NUMBER", "12"),
        ],
    );
    assert!(o.status.success(), "{o:?}");
    assert_eq!(a.output("check-exit"), "0");
    assert_eq!(a.output("diff-exit"), "");
    // The base's closures were read in the cache, not the local store.
    let libcore = Fixture::path(&f.before, "libcore");
    let hash = &libcore["/nix/store/".len()..][..32];
    assert!(
        server.count(&format!("/{hash}.narinfo")) >= 1,
        "{:?}",
        server.log()
    );

    // One annotation per grown attribute, none for the untouched one.
    let mut grew = titles(&o.stdout, "warning");
    grew.sort();
    assert_eq!(
        grew,
        GROWN
            .iter()
            .map(|g| format!("nix-heft impact: {g} grew"))
            .collect::<Vec<_>>(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(titles(&o.stdout, "error").is_empty());

    let report = std::fs::read_to_string(a.output("report")).unwrap();
    assert_eq!(std::fs::read_to_string(&a.summary).unwrap(), report);
    assert!(report.chars().count() <= 65_536);
    assert_eq!(report.matches("<!-- nix-heft -->").count(), 1, "{report}");
    let m = parse_markdown(&report);
    assert!(
        m.headings[0].starts_with(&format!("Closure impact: {}", f.base)),
        "{:?}",
        m.headings
    );
    assert!(
        m.headings[0].ends_with(": 3 attributes"),
        "{:?}",
        m.headings
    );
    assert!(!report.contains("stable"), "{report}");
    // The shared cause, said once with its count, its size and the file
    // that holds it.
    let readme = Path::new(&Fixture::path(&f.after, "libcore")).join("share/doc/README");
    let manual = std::fs::read_to_string(readme).unwrap();
    let manual_size: u64 = run(nix().args(["path-info", "-s", manual.trim()]))
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let shared = format!(
        "`manual-1.0` ({}) is new in 3 attributes",
        nix_heft_types::units::iec_delta(manual_size as i128)
    );
    assert!(report.contains(&shared), "{shared}\n{report}");
    assert!(report.contains("`share/doc/README`"), "{report}");

    // As GitHub renders it: the table of every grown attribute, with the
    // closures `nix path-info -S` gives (the base's in the cache).
    let html = render_gfm(&report);
    let (open, details) = open_and_details(&html);
    assert!(open.contains("<h3>Closure impact:"), "{open}");
    assert_eq!(details.len(), 1, "{details:?}");
    let table = &details[0].1;
    for g in GROWN {
        let before = closure_size(&Fixture::path(&f.before, g), Some(&cache_url));
        let after = closure_size(&Fixture::path(&f.after, g), None);
        assert!(after > before, "{g}");
        let row = format!(
            "<td>{g}</td>\n<td>grown</td>\n<td align=\"right\">{}</td>\n<td align=\"right\">{}</td>\n<td align=\"right\">{}</td>",
            nix_heft_types::units::iec(before),
            nix_heft_types::units::iec(after),
            nix_heft_types::units::iec_delta(after as i128 - before as i128),
        );
        assert!(table.contains(&row), "{row}\n{table}");
    }
}

/// The fork-safe pair with command impact: mode report leaves the impact
/// report as the same artifact closure's does (here of the attributes a
/// nixpkgs-review directory lists, one failed there), and the trusted
/// mode comment, unchanged, checks it and names the body to post as it is.
#[test]
fn action_impact_fork_pair_reports_then_comments() {
    let f = fixture();
    let a = ActionRun::new("action-impact-fork");
    let ws = checkout(&a, true);
    // nixpkgs-review's per-system layout: built app1 and libcore (their
    // result links), app2 failed.
    let system = run(Command::new("nix-instantiate").args([
        "--eval",
        "--json",
        "--expr",
        "builtins.currentSystem",
    ]));
    let system: String = serde_json::from_str(system.trim()).unwrap();
    let review = a.dir.path().join("nixpkgs-review");
    std::fs::create_dir_all(review.join("results")).unwrap();
    std::fs::write(
        review.join("report.json"),
        serde_json::to_string_pretty(&serde_json::json!({
            "systems": [system],
            "pr": 12,
            "checkout": "merge",
            "extra-nixpkgs-config": null,
            "result": { system.clone(): {
                "blacklisted": [], "broken": [], "non-existent": [], "tests": [],
                "built": ["app1", "libcore"],
                "failed": ["app2"],
            }},
        }))
        .unwrap(),
    )
    .unwrap();
    for attr in ["app1", "libcore"] {
        std::os::unix::fs::symlink(
            Fixture::path(&f.after, attr),
            review.join("results").join(format!("{attr}-{system}")),
        )
        .unwrap();
    }
    let review_s = review.display().to_string();
    let o = a.step_in(
        &ws,
        "run",
        &[
            ("INPUT_MODE", "report"),
            ("INPUT_COMMAND", "impact"),
            ("INPUT_NIXPKGS_REVIEW", &review_s),
            ("PR_BASE_SHA", &f.base),
            ("PR_NUMBER", "12"),
            ("PR_HEAD_SHA", &f.head),
        ],
    );
    assert!(o.status.success(), "{o:?}");
    let art = PathBuf::from(a.output("artifact-dir"));
    let body = std::fs::read_to_string(art.join("comment.md")).unwrap();
    assert_eq!(body, std::fs::read_to_string(a.output("report")).unwrap());
    assert_eq!(
        std::fs::read_to_string(art.join("pr-number")).unwrap(),
        "12\n"
    );
    assert_eq!(
        std::fs::read_to_string(art.join("head-sha")).unwrap(),
        format!("{}\n", f.head)
    );
    assert_eq!(
        std::fs::read_to_string(art.join("check-exit")).unwrap(),
        "0\n"
    );
    parse_markdown(&body);
    // The review's attributes: two grown, the failed one said so.
    // Both grew by the shared causes alone: one story, told once.
    assert!(
        body.contains("**app1**, **libcore** (2 attributes, grown"),
        "{body}"
    );
    assert!(!body.contains("**app2** (grown"), "{body}");
    assert!(body.contains("| app2 | failed |"), "{body}");
    assert!(!body.contains("stable"), "{body}");
    open_and_details(&render_gfm(&body));

    // The trusted half, against a stand-in of GitHub's API.
    let api = a.dir.path().join("api");
    let pulls = api.join("repos/o/r/pulls");
    std::fs::create_dir_all(&pulls).unwrap();
    std::fs::write(
        pulls.join("12"),
        format!(r#"{{"number":12,"head":{{"sha":"{}"}}}}"#, f.head),
    )
    .unwrap();
    let server = common::http_server::FileServer::start(&api);
    let art_s = art.display().to_string();
    let url = server.url();
    let o = a.step(
        "comment",
        &[
            ("INPUT_ARTIFACT_DIR", &art_s),
            ("GITHUB_API_URL", &url),
            ("GITHUB_REPOSITORY", "o/r"),
            ("GITHUB_TOKEN", "t"),
            ("RUN_HEAD_SHA", &f.head),
        ],
    );
    assert!(o.status.success(), "{o:?}");
    assert_eq!(a.output("number"), "12");
    assert_eq!(std::fs::read_to_string(a.output("report")).unwrap(), body);
    assert_eq!(server.count("/repos/o/r/pulls/12"), 1);
}

/// `max-growth` and `forbid` apply to every attribute compared (here
/// those of `attrs` and `attr-file`, the base commit given as
/// `impact-before`): an attribute that breaks one is an `::error` and
/// check-exit 4, which fails the job in action.yml's last step; with a
/// limit every attribute keeps, only `forbid` is broken; with no rule
/// broken, 0.
#[test]
fn action_impact_max_growth_broken_is_check_exit_4() {
    let f = fixture();
    let a = ActionRun::new("action-impact-growth");
    let ws = checkout(&a, true);
    let list = a.dir.path().join("attrs.txt");
    std::fs::write(&list, "# from the workflow\napp2\n").unwrap();
    let list_s = list.display().to_string();
    let inputs = |growth: &'static str| -> Vec<(&'static str, String)> {
        vec![
            ("INPUT_COMMAND", "impact".into()),
            ("INPUT_IMPACT_BEFORE", f.base.clone()),
            ("INPUT_ATTRS", "  libcore\n\n".into()),
            ("INPUT_ATTR_FILE", list_s.clone()),
            ("INPUT_MAX_GROWTH", growth.into()),
            // A glob reaches nix-heft as written, never expanded against
            // the workspace's files.
            ("INPUT_FORBID", "manual*\n".into()),
        ]
    };
    std::fs::write(ws.join("manual-link"), "").unwrap();
    let step = |growth| {
        let v = inputs(growth);
        let v: Vec<(&str, &str)> = v.iter().map(|(k, v)| (*k, v.as_str())).collect();
        a.step_in(&ws, "run", &v)
    };
    let o = step("10%");
    assert!(o.status.success(), "{o:?}");
    assert_eq!(a.output("check-exit"), "4");
    let mut broken = titles(&o.stdout, "error");
    broken.sort();
    assert_eq!(
        broken,
        [
            "nix-heft impact: app2 breaks forbid",
            "nix-heft impact: app2 breaks max-growth",
            "nix-heft impact: libcore breaks forbid",
            "nix-heft impact: libcore breaks max-growth",
        ],
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let report = std::fs::read_to_string(a.output("report")).unwrap();
    parse_markdown(&report);
    assert!(report.contains("❌ 2 attributes break a rule"), "{report}");
    assert!(!report.contains("app1"), "{report}");

    let o = step("1MiB");
    assert!(o.status.success(), "{o:?}");
    assert_eq!(a.output("check-exit"), "4");
    let mut broken = titles(&o.stdout, "error");
    broken.sort();
    assert_eq!(
        broken,
        [
            "nix-heft impact: app2 breaks forbid",
            "nix-heft impact: libcore breaks forbid",
        ],
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );

    // Every rule kept: 0, and no error.
    let v: Vec<(&str, String)> = inputs("1MiB")
        .into_iter()
        .filter(|(k, _)| *k != "INPUT_FORBID")
        .collect();
    let v: Vec<(&str, &str)> = v.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let o = a.step_in(&ws, "run", &v);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(a.output("check-exit"), "0");
    assert!(titles(&o.stdout, "error").is_empty());
}

/// actions/checkout's default fetch of one commit leaves the base out: the
/// step stops before nix-heft with one error that names the commit and
/// the fix. And the other inputs command impact cannot take, each one
/// error that says what to change.
#[test]
fn action_impact_errors_say_what_to_change() {
    let f = fixture();
    let a = ActionRun::new("action-impact-errors");
    let ws = checkout(&a, false);
    let impact = |extra: &[(&str, &str)]| {
        let mut v = vec![
            ("INPUT_COMMAND", "impact"),
            ("PR_BASE_SHA", f.base.as_str()),
        ];
        v.extend_from_slice(extra);
        one_action_error(&a.step_in(&ws, "run", &v))
    };
    let msg = impact(&[]);
    assert!(
        msg.contains(&format!("'impact-before' is '{}'", f.base)),
        "{msg}"
    );
    assert!(msg.contains("fetch-depth: 0"), "{msg}");
    // Stopped before nix-heft ran: no output was set.
    assert!(!a.output.exists() || std::fs::read_to_string(&a.output).unwrap().is_empty());

    // The head commit is there: past that check, closure's inputs are
    // refused by name.
    let msg = impact(&[
        ("INPUT_IMPACT_BEFORE", &f.head),
        ("INPUT_AFTER", "./result"),
    ]);
    assert!(
        msg.contains("'after' is an input of command closure"),
        "{msg}"
    );
    let msg = impact(&[
        ("INPUT_IMPACT_BEFORE", &f.head),
        ("INPUT_FORBID_VERDICT", "docs"),
    ]);
    assert!(
        msg.contains("'forbid-verdict' is not a rule of command impact"),
        "{msg}"
    );
    let msg = impact(&[
        ("INPUT_IMPACT_BEFORE", &f.head),
        ("INPUT_NIXPKGS_REVIEW", "."),
    ]);
    assert!(msg.contains("has no report.json"), "{msg}");
    let msg = one_action_error(&a.step_in(&ws, "run", &[("INPUT_COMMAND", "impact")]));
    assert!(
        msg.contains("'impact-before' is required outside a pull request"),
        "{msg}"
    );
    let msg = one_action_error(&a.step_in(&ws, "run", &[("INPUT_COMMAND", "size")]));
    assert!(msg.contains("'size' is not closure or impact"), "{msg}");
    // A value nix-heft refuses: its own words and impact's hint.
    let msg = impact(&[
        ("INPUT_IMPACT_BEFORE", &f.head),
        ("INPUT_MAX_CLOSURE", "lots"),
    ]);
    assert!(msg.contains("nix-heft impact failed (exit 2)"), "{msg}");
    assert!(msg.contains("lots"), "{msg}");
    assert!(msg.contains("'impact-before' and 'impact-after'"), "{msg}");
}
