//! The Action's command impact (issues 32 and 38): scripts/action.sh run
//! with `INPUT_COMMAND=impact` in a checkout made as actions/checkout makes
//! it for a pull_request event (GitHub's merge commit `refs/pull/N/merge`,
//! `fetch-depth: 2`), of a small package set made here: a git repository
//! whose `default.nix` has four attributes over one library. The pull
//! request's branch makes the library's docs reference a large path (the
//! library and its two dependents grow); meanwhile the base branch moved
//! on (`stable` changed), so the pull request's `base.sha` lags the
//! merge commit's first parent. The base is built by real Nix and read
//! from a signed binary cache over HTTP, as cache.nixos.org serves a
//! nixpkgs pull request's base. GitHub's event payloads and API answers
//! come from tests/fixtures/github/ (GitHub's documented shapes), their
//! values read as action.yml's `${{ github.event.… }}` expressions read
//! them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common;
use crate::common::*;
use crate::review::{ActionRun, one_action_error, open_and_details, parse_github, parse_markdown};

/// The package set at the first commit: `libcore` and two applications
/// that reference it, and `stable`, which references nothing. Builds run
/// unsandboxed here, so each builder sets its own PATH.
const BASE_NIX: &str = r#"{ ... }:
let
  sys = builtins.currentSystem;
  mk = name: script: derivation {
    inherit name;
    system = sys;
    builder = "/bin/sh";
    args = [ "-c" ("PATH=/usr/bin:/bin; " + script) ];
    salt = "@SALT@";
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

/// The pull request's number.
const PR: &str = "12";

/// The repository and what each side built.
struct Fixture {
    /// The git repository: `main` (B0, then M1), the pull request's
    /// branch (H1, on B0), GitHub's merge commits under `refs/pull/`.
    repo: PathBuf,
    /// The first commit: `pull_request.base.sha`, which GitHub does not
    /// move when `main` does.
    b0: String,
    /// `main` now: another change merged meanwhile (`stable` changed).
    m1: String,
    /// The pull request's head (libcore's docs name the manual).
    h1: String,
    /// GitHub's merge commit of the pull request into `main`
    /// (`refs/pull/12/merge`): parents M1 and H1.
    x: String,
    /// attribute → its out path at the base (M1), at the head (X).
    before: BTreeMap<String, String>,
    after: BTreeMap<String, String>,
}

fn git(dir: &Path, args: &[&str]) -> String {
    run(Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args))
    .trim()
    .to_string()
}

/// Commits `text` as default.nix on the current branch.
fn commit(repo: &Path, text: &str, msg: &str) -> String {
    std::fs::write(repo.join("default.nix"), text).unwrap();
    git(repo, &["add", "default.nix"]);
    git(repo, &["commit", "-q", "-m", msg]);
    git(repo, &["rev-parse", "HEAD"])
}

/// GitHub's merge commit of `head` into `main`, under `refs/pull/N/merge`.
fn merge_ref(repo: &Path, n: &str, head: &str) -> String {
    git(repo, &["checkout", "-q", "--detach", "main"]);
    git(repo, &["merge", "-q", "--no-ff", "--no-edit", head]);
    let x = git(repo, &["rev-parse", "HEAD"]);
    git(repo, &["update-ref", &format!("refs/pull/{n}/merge"), &x]);
    git(repo, &["checkout", "-q", "main"]);
    x
}

/// The attributes of `rev`'s tree, built (all of them).
fn build_rev(repo: &Path, rev: &str) -> BTreeMap<String, String> {
    let tree = scratch_dir("action-impact-tree");
    run(Command::new("sh")
        .arg("-c")
        .arg("git -C \"$1\" archive \"$2\" | tar -x -C \"$3\"")
        .arg("sh")
        .arg(repo)
        .arg(rev)
        .arg(&tree));
    let attrs = ["app1", "app2", "libcore", "stable"];
    attrs
        .iter()
        .map(|a| a.to_string())
        .zip(nix_build(&tree, &attrs))
        .collect()
}

/// The repository with `salt` in every derivation; the base built, and
/// the head too when `build_head`.
fn make(salt: &str, build_head: bool) -> Fixture {
    let repo = scratch_dir("action-impact-repo");
    git(&repo, &["init", "-q", "-b", "main"]);
    let base_nix = BASE_NIX.replace("@SALT@", salt);
    let b0 = commit(&repo, &base_nix, "base");
    git(&repo, &["checkout", "-q", "-b", "pr"]);
    // The head: the library's docs name the manual.
    let head_nix = base_nix.replace(
        "echo core > $out/lib/libcore.so\"",
        "echo core > $out/lib/libcore.so; echo ${manual} > $out/share/doc/README\"",
    );
    assert_ne!(head_nix, base_nix);
    let h1 = commit(&repo, &head_nix, "libcore: install the manual");
    // Meanwhile on main: another pull request changed `stable`.
    git(&repo, &["checkout", "-q", "main"]);
    let moved = base_nix.replace("echo stable > $out", "echo stable, moved on > $out");
    let m1 = commit(&repo, &moved, "stable: another change");
    let x = merge_ref(&repo, PR, "pr");
    let before = build_rev(&repo, &m1);
    let after = if build_head {
        build_rev(&repo, &x)
    } else {
        BTreeMap::new()
    };
    Fixture {
        repo,
        b0,
        m1,
        h1,
        x,
        before,
        after,
    }
}

/// The repository, both sides built (once per test binary).
fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let f = make(&nonce(), true);
        assert_eq!(
            f.before["stable"], f.after["stable"],
            "stable is the base's"
        );
        f
    })
}

/// A checkout of `refs/pull/N/merge` as actions/checkout makes it for a
/// pull_request event: the merge commit fetched with `depth` (1, its
/// default, or 2: the merge commit and both its parents), detached.
fn checkout(a: &ActionRun, repo: &Path, n: &str, depth: u32) -> PathBuf {
    let ws = a.dir.path().join("ws");
    run(Command::new("git").args(["init", "-q"]).arg(&ws));
    git(
        &ws,
        &[
            "fetch",
            "-q",
            "--no-tags",
            &format!("--depth={depth}"),
            &format!("file://{}", repo.display()),
            &format!("+refs/pull/{n}/merge:refs/remotes/pull/{n}/merge"),
        ],
    );
    git(
        &ws,
        &[
            "checkout",
            "-q",
            "--detach",
            &format!("refs/remotes/pull/{n}/merge"),
        ],
    );
    ws
}

/// A fixture of tests/fixtures/github/ with its placeholders filled.
fn payload(name: &str, fill: &[(&str, &str)]) -> serde_json::Value {
    let mut text =
        std::fs::read_to_string(repo().join("tests/fixtures/github").join(name)).unwrap();
    for (k, v) in fill {
        text = text.replace(&format!("@{k}@"), v);
    }
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The environment action.yml gives a step from the event payload: each
/// `NAME: ${{ github.event.A.B }}` line of the step `id` (its `env:`)
/// with `A.B` read in `event`, as GitHub evaluates the expression (a
/// missing value is the empty string).
fn event_env(step_id: &str, event: &serde_json::Value) -> Vec<(String, String)> {
    let action = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    let at = action
        .find(&format!("id: {step_id}\n"))
        .unwrap_or_else(|| panic!("no step {step_id} in action.yml"));
    let step = &action[at..];
    let step = &step[..step.find("\n    - ").unwrap_or(step.len())];
    let mut out = Vec::new();
    for l in step.lines() {
        let Some((name, expr)) = l.trim().split_once(": ${{ github.event.") else {
            continue;
        };
        let path = expr.trim_end_matches(" }}");
        let mut v = event;
        for k in path.split('.') {
            v = &v[k];
        }
        let value = match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => String::new(),
            other => other.to_string(),
        };
        out.push((name.to_string(), value));
    }
    assert!(!out.is_empty(), "{step}");
    out
}

/// The pull_request event of `f`'s pull request (documented shape).
fn pr_event(f: &Fixture) -> serde_json::Value {
    payload(
        "pull_request.synchronize.json",
        &[
            ("NUMBER", PR),
            ("STATE", "open"),
            ("HEAD", &f.h1),
            ("BASE", &f.b0),
            ("MERGE", &f.x),
        ],
    )
}

/// The review step's environment for `f`'s pull request, plus `extra`.
fn pr_inputs<'a>(f: &Fixture, extra: &[(&'a str, &'a str)]) -> Vec<(String, String)> {
    let mut v = event_env("review", &pr_event(f));
    v.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    v
}

fn step(a: &ActionRun, ws: &Path, name: &str, inputs: &[(String, String)]) -> std::process::Output {
    let v: Vec<(&str, &str)> = inputs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    a.step_in(ws, name, &v)
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

/// The annotations of `level` the step printed: (title, message lines).
fn annotations(out: &[u8], level: &str) -> Vec<(String, Vec<String>)> {
    parse_github(&String::from_utf8_lossy(out))
        .into_iter()
        .filter(|(l, _, _)| l == level)
        .map(|(_, p, lines)| (p["title"].clone(), lines))
        .collect()
}

/// The base's outputs (M1) in a signed `file://` cache served over HTTP,
/// as cache.nixos.org serves what Hydra built; `NIX_CONFIG` trusting it,
/// unsandboxed builds of the host's `/bin/sh`.
struct BaseCache {
    server: common::http_server::FileServer,
    url: String,
    conf: String,
}

fn base_cache(a: &ActionRun, f: &Fixture) -> BaseCache {
    let key = test_key();
    let cache = a.dir.path().join("cache");
    let url = format!("file://{}", cache.display());
    run(nix()
        .args([
            "copy",
            "--to",
            &format!("{url}?secret-key={}", key.secret.display()),
        ])
        .args(f.before.values()));
    let server = common::http_server::FileServer::start(&cache);
    let conf = format!(
        "trusted-public-keys = {}\nsandbox = false\nsubstituters =\nbuild-users-group =",
        key.public
    );
    BaseCache {
        url: server.url(),
        server,
        conf,
    }
}

/// Mode review on a pull request, the base read from a signed cache over
/// HTTP, every input left to its default: the base is the first parent of
/// GitHub's merge commit (`main` now), not `pull_request.base.sha` (which
/// would blame this pull request for `stable`, changed on `main`
/// meanwhile: shown too); the heading names both commits; the three grown
/// attributes in the comment, the annotations and the job summary, each
/// closure figure `nix path-info -S`'s on its side; markdown that GitHub
/// renders with its sticky marker, every list line as written; each
/// annotation standing alone (the attribute, the change, its holder and
/// the file), never "above"; no path of the runner's in the report.
#[test]
fn action_impact_reviews_a_pull_request() {
    let f = fixture();
    let a = ActionRun::new("action-impact-review");
    let ws = checkout(&a, &f.repo, PR, 2);
    let c = base_cache(&a, f);
    let inputs = pr_inputs(
        f,
        &[
            ("NIX_CONFIG", &c.conf),
            ("INPUT_COMMAND", "impact"),
            ("INPUT_BEFORE_STORE", &c.url),
        ],
    );
    assert!(
        inputs.iter().any(|(k, v)| k == "PR_HEAD_SHA" && *v == f.h1),
        "{inputs:?}"
    );
    let o = step(&a, &ws, "run", &inputs);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(a.output("check-exit"), "0");
    assert_eq!(a.output("diff-exit"), "");
    // The base's closures were read in the cache, not the local store.
    let libcore = &f.before["libcore"];
    let hash = &libcore["/nix/store/".len()..][..32];
    assert!(
        c.server.count(&format!("/{hash}.narinfo")) >= 1,
        "{:?}",
        c.server.log()
    );

    // One annotation per grown attribute, none for the untouched one;
    // each stands alone.
    let warnings = annotations(&o.stdout, "warning");
    let mut grew: Vec<&str> = warnings.iter().map(|(t, _)| t.as_str()).collect();
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
    for (title, lines) in &warnings {
        let text = lines.join("\n");
        assert!(!text.contains("above"), "{title}: {text}");
        assert!(text.contains("manual-1.0 is new"), "{title}: {text}");
        assert!(text.contains("share/doc/README"), "{title}: {text}");
        assert!(text.contains("libcore-1.0"), "{title}: {text}");
    }
    assert!(annotations(&o.stdout, "error").is_empty());

    let report = std::fs::read_to_string(a.output("report")).unwrap();
    assert_eq!(std::fs::read_to_string(&a.summary).unwrap(), report);
    assert!(report.chars().count() <= 65_536);
    assert_eq!(report.matches("<!-- nix-heft -->").count(), 1, "{report}");
    assert!(!report.contains(&ws.display().to_string()), "{report}");
    let m = parse_markdown(&report);
    assert_eq!(
        m.headings[0],
        format!("Closure impact: {} → {}: 3 attributes", f.m1, f.x),
        "{:?}",
        m.headings
    );
    assert!(!report.contains("stable"), "{report}");
    crate::impact::assert_list_lines_render(&report);
    // The shared cause, said once with its count, its size and the file
    // that holds it.
    let readme = Path::new(&f.after["libcore"]).join("share/doc/README");
    let manual = std::fs::read_to_string(readme).unwrap();
    let manual_size: u64 = run(nix().args(["path-info", "-s", manual.trim()]))
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let shared = format!(
        "`manual-1.0` is new ({}) in 3 attributes",
        nix_heft_types::units::iec_delta(manual_size as i128)
    );
    assert!(report.contains(&shared), "{shared}\n{report}");
    assert!(report.contains("`share/doc/README`"), "{report}");

    // As GitHub renders it: the table of every grown attribute, with the
    // closures `nix path-info -S` gives (the base's in the cache).
    let cache_url = format!("file://{}", a.dir.path().join("cache").display());
    let html = render_gfm(&report);
    let (open, details) = open_and_details(&html);
    assert!(open.contains("<h3>Closure impact:"), "{open}");
    assert_eq!(details.len(), 1, "{details:?}");
    let table = &details[0].1;
    for g in GROWN {
        let before = closure_size(&f.before[g], Some(&cache_url));
        let after = closure_size(&f.after[g], None);
        assert!(after > before, "{g}");
        let row = format!(
            "<td>{g}</td>\n<td>grown</td>\n<td align=\"right\">{}</td>\n<td align=\"right\">{}</td>\n<td align=\"right\">{}</td>",
            nix_heft_types::units::iec(before),
            nix_heft_types::units::iec(after),
            nix_heft_types::units::iec_delta(after as i128 - before as i128),
        );
        assert!(table.contains(&row), "{row}\n{table}");
    }

    // What `pull_request.base.sha` would have given: `stable`, changed on
    // main meanwhile, blamed on this pull request.
    let lagging = event_env("review", &pr_event(f))
        .into_iter()
        .find(|(k, _)| k == "PR_NUMBER")
        .unwrap();
    assert_eq!(lagging.1, PR);
    let base_sha = pr_event(f)["pull_request"]["base"]["sha"]
        .as_str()
        .unwrap()
        .to_string();
    git(
        &ws,
        &[
            "fetch",
            "-q",
            "--depth=1",
            &format!("file://{}", f.repo.display()),
            &base_sha,
        ],
    );
    let mut inputs = inputs.clone();
    inputs.push(("INPUT_IMPACT_BEFORE".into(), base_sha));
    let o = step(&a, &ws, "run", &inputs);
    assert!(o.status.success(), "{o:?}");
    let lagged = std::fs::read_to_string(a.output("report")).unwrap();
    assert!(lagged.contains("| stable |"), "{lagged}");
}

/// The `with:` inputs of the example workflow's nix-heft step, as the
/// `INPUT_*` variables the runner gives the action (block values joined
/// by newlines).
fn example_inputs(file: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo().join("examples/workflows").join(file)).unwrap();
    let at = text.find("uses: OWNER/nix-heft@").unwrap();
    let with = &text[at..];
    let with = &with[with.find("with:\n").unwrap() + "with:\n".len()..];
    let mut out: Vec<(String, String)> = Vec::new();
    let mut lines = with.lines().peekable();
    while let Some(l) = lines.next() {
        let Some(kv) = l.strip_prefix("          ") else {
            break;
        };
        let (k, v) = kv
            .split_once(": ")
            .unwrap_or((kv.trim_end_matches(':'), ""));
        let mut v = v.to_string();
        if v == "|" {
            let mut block = Vec::new();
            while let Some(n) = lines.peek().and_then(|n| n.strip_prefix("            ")) {
                block.push(n.to_string());
                lines.next();
            }
            v = block.join("\n") + "\n";
        }
        out.push((format!("INPUT_{}", k.to_uppercase().replace('-', "_")), v));
    }
    out
}

/// The impact example workflow (examples/workflows/nixpkgs-impact.yml)
/// run as written, with its inputs, on a pull request whose head is built
/// nowhere: one evaluation names the changed attributes, exactly those are
/// built and compared (growth over 10%: check-exit 4); a pull request
/// that changes no attribute compares nothing and says so; one whose
/// changed attribute does not build, under the example's rules, measured
/// nothing and fails the job.
#[test]
fn action_impact_example_builds_what_it_compares() {
    let f = make(&nonce(), false);
    let a = ActionRun::new("action-impact-example");
    let c = base_cache(&a, &f);
    let mut inputs: Vec<(String, String)> = example_inputs("nixpkgs-impact.yml")
        .into_iter()
        .map(|(k, v)| {
            // The base's cache here, where Hydra's would be.
            let v = if k == "INPUT_BEFORE_STORE" {
                c.url.clone()
            } else {
                v
            };
            (k, v)
        })
        .collect();
    assert!(
        inputs
            .iter()
            .any(|(k, v)| k == "INPUT_BUILD" && v == "true"),
        "{inputs:?}"
    );
    inputs.push(("NIX_CONFIG".into(), c.conf.clone()));
    inputs.extend(pr_inputs(&f, &[]));
    let ws = checkout(&a, &f.repo, PR, 2);
    let head_paths: Vec<String> = {
        let o = heft_run(
            None,
            &[
                "impact",
                "--repo",
                ws.to_str().unwrap(),
                "--before",
                &f.m1,
                "--after",
                ws.to_str().unwrap(),
                "--attr",
                "libcore",
                "--json",
                "--no-evidence",
                "--before-store",
                &c.url,
            ],
        );
        let v: serde_json::Value = serde_json::from_str(&o.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}{}", o.stdout, o.stderr));
        v["attributes"][0]["after"]["outputs"]
            .as_object()
            .unwrap()
            .values()
            .map(|p| p.as_str().unwrap().to_string())
            .collect()
    };
    for p in &head_paths {
        assert!(
            !common::impact_fixture::valid_locally(p),
            "{p} is built already"
        );
    }
    let o = step(&a, &ws, "run", &inputs);
    assert!(o.status.success(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.matches("building the head's 3 changed attribute(s)")
            .count(),
        1,
        "{err}"
    );
    for p in &head_paths {
        assert!(
            common::impact_fixture::valid_locally(p),
            "{p} was not built"
        );
    }
    assert_eq!(a.output("check-exit"), "4");
    let report = std::fs::read_to_string(a.output("report")).unwrap();
    let m = parse_markdown(&report);
    assert!(
        m.headings[0].ends_with(": 3 attributes"),
        "{:?}",
        m.headings
    );
    assert!(report.contains("3 grown."), "{report}");
    assert!(!report.contains("not built"), "{report}");
    let mut broke: Vec<String> = annotations(&o.stdout, "error")
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    broke.sort();
    assert_eq!(
        broke,
        GROWN
            .iter()
            .map(|g| format!("nix-heft impact: {g} breaks max-growth"))
            .collect::<Vec<_>>()
    );

    // A pull request that changes no attribute (its README only).
    git(&f.repo, &["checkout", "-q", "-b", "docs", &f.b0]);
    std::fs::write(f.repo.join("README"), "docs\n").unwrap();
    git(&f.repo, &["add", "README"]);
    git(&f.repo, &["commit", "-q", "-m", "README"]);
    let docs_head = git(&f.repo, &["rev-parse", "HEAD"]);
    git(&f.repo, &["checkout", "-q", "main"]);
    merge_ref(&f.repo, "13", "docs");
    let a2 = ActionRun::new("action-impact-nothing");
    let ws = checkout(&a2, &f.repo, "13", 2);
    let mut nothing = inputs.clone();
    nothing.retain(|(k, _)| k != "PR_NUMBER" && k != "PR_HEAD_SHA");
    nothing.extend([
        ("PR_NUMBER".to_string(), "13".to_string()),
        ("PR_HEAD_SHA".to_string(), docs_head),
    ]);
    let o = step(&a2, &ws, "run", &nothing);
    assert!(o.status.success(), "{o:?}");
    let notices = annotations(&o.stdout, "notice");
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].1.join(" ").contains("impact compares nothing"),
        "{notices:?}"
    );
    assert_eq!(a2.output("check-exit"), "0");
    let body = std::fs::read_to_string(a2.output("report")).unwrap();
    assert!(
        body.starts_with("<!-- nix-heft -->\n### Closure impact: "),
        "{body}"
    );
    assert!(body.contains("nothing to compare"), "{body}");
    assert!(!String::from_utf8_lossy(&o.stderr).contains("building the head"));

    // A pull request whose changed attribute does not build: the rules
    // measured nothing, the job fails.
    git(&f.repo, &["checkout", "-q", "-b", "broken", &f.b0]);
    let text = std::fs::read_to_string(f.repo.join("default.nix")).unwrap();
    commit(
        &f.repo,
        &text.replace(
            "echo ${libcore} > $out/ref\";\n  app2",
            "echo ${libcore} > $out/ref; exit 1\";\n  app2",
        ),
        "app1: break its build",
    );
    let broken_head = git(&f.repo, &["rev-parse", "HEAD"]);
    git(&f.repo, &["checkout", "-q", "main"]);
    merge_ref(&f.repo, "14", "broken");
    let a3 = ActionRun::new("action-impact-unbuilt");
    let ws = checkout(&a3, &f.repo, "14", 2);
    let mut unbuilt = inputs.clone();
    unbuilt.retain(|(k, _)| k != "PR_NUMBER" && k != "PR_HEAD_SHA");
    unbuilt.extend([
        ("PR_NUMBER".to_string(), "14".to_string()),
        ("PR_HEAD_SHA".to_string(), broken_head),
    ]);
    let msg = one_action_error(&step(&a3, &ws, "run", &unbuilt));
    assert!(msg.contains("the rules were applied to nothing"), "{msg}");
}

/// The fork-safe pair with command impact: mode report leaves the impact
/// report (here of a nixpkgs-review directory of the head, as
/// nixpkgs-review after 3.9.0 writes it) as the same artifact closure's
/// does, and the trusted mode comment checks it against GitHub's answer
/// for the pull request (its documented shape) and names the body to post
/// as it is; it refuses a closed pull request, a run that names no head
/// commit (a mismatch, never a pass), and a symlink in the artifact,
/// saying so.
#[test]
fn action_impact_fork_pair_reports_then_comments() {
    let f = fixture();
    let a = ActionRun::new("action-impact-fork");
    let ws = checkout(&a, &f.repo, PR, 2);
    let system: String = serde_json::from_str(
        run(Command::new("nix-instantiate").args([
            "--eval",
            "--json",
            "--expr",
            "builtins.currentSystem",
        ]))
        .trim(),
    )
    .unwrap();
    let review = a.dir.path().join("nixpkgs-review");
    let attrs: Vec<String> = GROWN.iter().map(|s| s.to_string()).collect();
    common::review_writer::write(
        &common::review_writer::Review {
            version: common::review_writer::Version::After3_9_0,
            head: &ws,
            extra_nixpkgs_config: "{ }",
            attrs: &attrs,
            system: &system,
            pr: Some(12),
            commit: &f.h1,
            skip_packages: &[],
        },
        &review,
    );
    let c = base_cache(&a, f);
    let review_s = review.display().to_string();
    let inputs = pr_inputs(
        f,
        &[
            ("NIX_CONFIG", &c.conf),
            ("INPUT_MODE", "report"),
            ("INPUT_COMMAND", "impact"),
            ("INPUT_NIXPKGS_REVIEW", &review_s),
            ("INPUT_BEFORE_STORE", &c.url),
        ],
    );
    let o = step(&a, &ws, "run", &inputs);
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
        format!("{}\n", f.h1)
    );
    assert_eq!(
        std::fs::read_to_string(art.join("check-exit")).unwrap(),
        "0\n"
    );
    parse_markdown(&body);
    crate::impact::assert_list_lines_render(&body);
    // The review's attributes, all grown by the shared causes: one story.
    assert!(
        body.contains("**app1**, **app2**, **libcore** (3 attributes, grown"),
        "{body}"
    );
    assert!(!body.contains("stable"), "{body}");
    open_and_details(&render_gfm(&body));

    // The trusted half, against a stand-in of GitHub's API answering with
    // the documented pull request object.
    let api = a.dir.path().join("api");
    let pulls = api.join("repos/o/r/pulls");
    std::fs::create_dir_all(&pulls).unwrap();
    let answer = |state: &str| {
        let v = payload(
            "pulls.get.json",
            &[
                ("NUMBER", PR),
                ("STATE", state),
                ("HEAD", &f.h1),
                ("BASE", &f.b0),
                ("MERGE", &f.x),
            ],
        );
        std::fs::write(pulls.join(PR), v.to_string()).unwrap();
    };
    let server = common::http_server::FileServer::start(&api);
    let url = server.url();
    let run_event = payload(
        "workflow_run.completed.json",
        &[("NUMBER", PR), ("HEAD", &f.h1), ("BASE", &f.b0)],
    );
    let comment = |art: &Path| {
        let mut v = event_env("artifact", &run_event);
        v.extend(
            [
                ("INPUT_ARTIFACT_DIR", art.display().to_string()),
                ("GITHUB_API_URL", url.clone()),
                ("GITHUB_REPOSITORY", "o/r".into()),
                ("GITHUB_TOKEN", "t".into()),
            ]
            .map(|(k, v)| (k.to_string(), v)),
        );
        v
    };
    answer("open");
    let inputs = comment(&art);
    assert!(
        inputs
            .iter()
            .any(|(k, v)| k == "RUN_HEAD_SHA" && *v == f.h1),
        "{inputs:?}"
    );
    let o = step(&a, a.dir.path(), "comment", &inputs);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(a.output("number"), "12");
    assert_eq!(std::fs::read_to_string(a.output("report")).unwrap(), body);
    assert_eq!(server.count("/repos/o/r/pulls/12"), 1);

    // Closed since: not posted.
    answer("closed");
    let msg = one_action_error(&step(&a, a.dir.path(), "comment", &comment(&art)));
    assert!(
        msg.contains("pull request #12 is closed: not posted"),
        "{msg}"
    );
    answer("open");
    // A run that names no head commit is a mismatch.
    let mut no_head = comment(&art);
    for (k, v) in &mut no_head {
        if k == "RUN_HEAD_SHA" {
            v.clear();
        }
    }
    let msg = one_action_error(&step(&a, a.dir.path(), "comment", &no_head));
    assert!(msg.contains("not posted"), "{msg}");
    // A symlink where the body should be.
    let linked = a.dir.path().join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    std::fs::copy(art.join("pr-number"), linked.join("pr-number")).unwrap();
    std::os::unix::fs::symlink(art.join("comment.md"), linked.join("comment.md")).unwrap();
    let msg = one_action_error(&step(&a, a.dir.path(), "comment", &comment(&linked)));
    assert!(msg.contains("'comment.md' is a symlink"), "{msg}");
}

/// `max-growth`, `max-output` and `forbid` apply to every attribute
/// compared (here those of `attrs` and `attr-file`, the base commit given
/// as `impact-before`): an attribute that breaks one is an `::error` and
/// check-exit 4, which fails the job in action.yml's last step; with a
/// limit every attribute keeps, only `forbid` is broken; with no rule
/// broken, 0.
#[test]
fn action_impact_max_growth_broken_is_check_exit_4() {
    let f = fixture();
    let a = ActionRun::new("action-impact-growth");
    let ws = checkout(&a, &f.repo, PR, 2);
    let list = a.dir.path().join("attrs.txt");
    std::fs::write(&list, "# from the workflow\napp2\n").unwrap();
    let list_s = list.display().to_string();
    let inputs = |growth: &'static str| -> Vec<(&'static str, String)> {
        vec![
            ("INPUT_COMMAND", "impact".into()),
            ("INPUT_IMPACT_BEFORE", f.m1.clone()),
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
    let titles = |o: &std::process::Output| {
        let mut t: Vec<String> = annotations(&o.stdout, "error")
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        t.sort();
        t
    };
    let o = step("10%");
    assert!(o.status.success(), "{o:?}");
    assert_eq!(a.output("check-exit"), "4");
    assert_eq!(
        titles(&o),
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
    assert_eq!(
        titles(&o),
        [
            "nix-heft impact: app2 breaks forbid",
            "nix-heft impact: libcore breaks forbid",
        ]
    );

    // Every rule kept: 0, and no error. Hydra's limit, over libcore's
    // output alone: max-output flags it.
    let v: Vec<(&str, String)> = inputs("1MiB")
        .into_iter()
        .filter(|(k, _)| *k != "INPUT_FORBID")
        .collect();
    let vv: Vec<(&str, &str)> = v.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let o = a.step_in(&ws, "run", &vv);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(a.output("check-exit"), "0");
    assert!(titles(&o).is_empty());
    let mut vv = vv.clone();
    vv.push(("INPUT_MAX_OUTPUT", "100"));
    let o = a.step_in(&ws, "run", &vv);
    assert_eq!(a.output("check-exit"), "4");
    assert_eq!(
        titles(&o),
        [
            "nix-heft impact: app2 breaks max-output",
            "nix-heft impact: libcore breaks max-output",
        ]
    );
}

/// What the action checks before nix-heft runs, each one error that says
/// what to change: a checkout of the merge commit alone (actions/checkout's
/// default depth of 1) has no base; a checkout of something that is not
/// GitHub's merge commit has no first parent to take, nor one that merges
/// another head; and the other inputs command impact cannot take.
#[test]
fn action_impact_errors_say_what_to_change() {
    let f = fixture();
    let a = ActionRun::new("action-impact-errors");
    let shallow = checkout(&a, &f.repo, PR, 1);
    let impact = |ws: &Path, extra: &[(&str, &str)]| {
        let mut v = pr_inputs(f, &[("INPUT_COMMAND", "impact")]);
        v.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        one_action_error(&step(&a, ws, "run", &v))
    };
    let msg = impact(&shallow, &[]);
    assert!(
        msg.contains(&format!("holds the merge commit {} alone", f.x)),
        "{msg}"
    );
    assert!(msg.contains("fetch-depth: 2"), "{msg}");
    // Stopped before nix-heft ran: no output was set.
    assert!(!a.output.exists() || std::fs::read_to_string(&a.output).unwrap().is_empty());

    // The pull request's head checked out instead of the merge commit.
    let head_ws = a.dir.path().join("head-ws");
    run(Command::new("git")
        .args(["clone", "-q"])
        .arg(format!("file://{}", f.repo.display()))
        .arg(&head_ws));
    git(&head_ws, &["checkout", "-q", "--detach", &f.h1]);
    let msg = impact(&head_ws, &[]);
    assert!(msg.contains("is not a merge commit"), "{msg}");
    // A merge commit of another head than the pull request's.
    let ws = checkout(&a, &f.repo, PR, 2);
    let msg = impact(&ws, &[("PR_HEAD_SHA", &f.b0)]);
    assert!(
        msg.contains(&format!(
            "merges {}, not the pull request's head {}",
            f.h1, f.b0
        )),
        "{msg}"
    );

    // Past those checks, closure's inputs are refused by name.
    let msg = impact(&ws, &[("INPUT_AFTER", "./result")]);
    assert!(
        msg.contains("'after' is an input of command closure"),
        "{msg}"
    );
    let msg = impact(&ws, &[("INPUT_FORBID_VERDICT", "docs")]);
    assert!(
        msg.contains("'forbid-verdict' is not a rule of command impact"),
        "{msg}"
    );
    let msg = impact(&ws, &[("INPUT_NIXPKGS_REVIEW", ".")]);
    assert!(msg.contains("has no report.json"), "{msg}");
    let msg = impact(&ws, &[("INPUT_BUILD", "yes")]);
    assert!(msg.contains("build: 'yes' is not true or false"), "{msg}");
    let msg = one_action_error(&a.step_in(&ws, "run", &[("INPUT_COMMAND", "impact")]));
    assert!(
        msg.contains("'impact-before' is required outside a pull request"),
        "{msg}"
    );
    let msg = one_action_error(&a.step_in(&ws, "run", &[("INPUT_COMMAND", "size")]));
    assert!(msg.contains("'size' is not closure or impact"), "{msg}");
    // A value nix-heft refuses: its own words and impact's hint.
    let msg = impact(&ws, &[("INPUT_MAX_CLOSURE", "lots")]);
    assert!(msg.contains("nix-heft impact failed (exit 2)"), "{msg}");
    assert!(msg.contains("lots"), "{msg}");
    assert!(msg.contains("'impact-before' and 'impact-after'"), "{msg}");
}
