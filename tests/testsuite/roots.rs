//! `nix-heft roots` and `why --roots` against Nix 2.8's own collector.
//!
//! tests/fixtures/roots.nix is built into a chroot store with `nix-build
//! --store` in Nix's sandbox, with real roots of every kind: `nix-build`
//! result links (three outputs of two derivations), `nix-store --add-root`,
//! a `.drv` root from `nix-instantiate --add-root`, a profile of three
//! generations in the state directory (`nix-env --profile --set`, two of
//! them made old with `touch -h`), a profile under a home directory and a
//! direnv-style one in `.direnv`, both found through `gcroots/auto`. Each
//! test works on its own copy (stores and links), so they run at once.
//!
//! For every root and every group `roots` lists, the commands it prints
//! are run, then `nix-store --gc --print-dead`, then everything is put
//! back: the paths Nix would delete must be exactly those nix-heft said
//! (what is dead now and what the root frees), with the default settings,
//! with `keep-outputs` and without `keep-derivations`. A process holding a
//! path in its environment and a running `nix repl`'s temporary root keep
//! paths as the collector keeps them. A real `nix-store --gc` on an
//! optimised copy (`nix-store --optimise`) deletes exactly the predicted
//! paths, and `du` of the store before and after differs by `--disk`'s
//! figure. On the host's own store, two result links made by `nix-build
//! -o` are compared the same way, on the test's own paths.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::*;

/// Nix's sandbox with the host's shell and tools, which the fixture's
/// builders use.
const SANDBOX: [&str; 4] = ["--option", "sandbox", "true", "--option"];
const SANDBOX_PATHS: [&str; 2] = ["sandbox-paths", "/bin /usr /lib /lib64"];

struct Template {
    dir: PathBuf,
    nonce: String,
    /// Attribute → output path (`split.dev` for the second output).
    out: BTreeMap<String, String>,
}

/// The chroot store of one test: its root and the directory of its links.
struct TestStore {
    chroot: PathBuf,
    links: PathBuf,
}

fn fixture_file() -> PathBuf {
    repo().join("tests/fixtures/roots.nix")
}

fn nix_build_into(chroot: &Path, nonce: &str, attr: &str, out_link: Option<&Path>) -> Vec<String> {
    let mut c = Command::new("nix-build");
    c.arg("--store")
        .arg(chroot)
        .args(SANDBOX)
        .args(SANDBOX_PATHS)
        .args(["--option", "substituters", ""])
        .arg(fixture_file())
        .args(["--argstr", "nonce", nonce, "-A", attr]);
    match out_link {
        Some(l) => c.arg("-o").arg(l),
        None => c.arg("--no-out-link"),
    };
    run(&mut c).lines().map(str::to_string).collect()
}

fn nix_env_set(chroot: &Path, profile: &Path, path: &str) {
    run(Command::new("nix-env")
        .arg("--store")
        .arg(chroot)
        .arg("--profile")
        .arg(profile)
        .args(["--set", path]));
}

fn touch_old(link: &Path, days: u64) {
    run(Command::new("touch")
        .arg("-h")
        .arg("-d")
        .arg(format!("{days} days ago"))
        .arg(link));
}

/// Built once per test run: the store and its roots, which tests copy.
fn template() -> &'static Template {
    static T: OnceLock<Template> = OnceLock::new();
    T.get_or_init(|| {
        let dir = scratch_dir("nix-heft-test-roots-");
        let chroot = dir.join("store");
        let links = dir.join("links");
        let nonce = nonce();
        let mut out = BTreeMap::new();
        std::fs::create_dir_all(links.join("proj-a")).unwrap();
        std::fs::create_dir_all(links.join("proj-b/.direnv")).unwrap();
        std::fs::create_dir_all(links.join("home/.local/state/nix/profiles")).unwrap();
        let a = nix_build_into(&chroot, &nonce, "appA", Some(&links.join("proj-a/result")));
        out.insert("appA".to_string(), a[0].clone());
        let b = nix_build_into(&chroot, &nonce, "appB", Some(&links.join("proj-b/result")));
        out.insert("appB".to_string(), b[0].clone());
        // Each output its own link, as nix-build names them: `result-split`
        // and `result-split-dev`.
        for o in ["out", "dev"] {
            let attr = format!("split.{o}");
            let p = nix_build_into(
                &chroot,
                &nonce,
                &attr,
                Some(&links.join("proj-b/result-split")),
            );
            out.insert(if o == "out" { "split".into() } else { attr }, p[0].clone());
        }
        for attr in ["tool", "base", "onlyA", "helper", "kept"] {
            let p = nix_build_into(&chroot, &nonce, attr, None);
            out.insert(attr.to_string(), p[0].clone());
        }
        run(Command::new("nix-store")
            .arg("--store")
            .arg(&chroot)
            .arg("--add-root")
            .arg(links.join("added"))
            .arg("-r")
            .arg(&out["tool"]));
        // A root to app-a's derivation (the output's own root is above).
        let drv = run(Command::new("nix-instantiate")
            .arg("--store")
            .arg(&chroot)
            .arg("--add-root")
            .arg(links.join("app-a.drv"))
            .arg(fixture_file())
            .args(["--argstr", "nonce", &nonce, "-A", "appA"]));
        // It prints the root's link; the link names the derivation.
        let link = std::fs::read_link(drv.trim()).unwrap();
        out.insert("appA.drv".to_string(), link.display().to_string());
        let drv = run(Command::new("nix-instantiate")
            .arg("--store")
            .arg(&chroot)
            .arg("--add-root")
            .arg(links.join("kept.drv"))
            .arg(fixture_file())
            .args(["--argstr", "nonce", &nonce, "-A", "kept"]));
        let link = std::fs::read_link(drv.trim()).unwrap();
        out.insert("kept.drv".to_string(), link.display().to_string());
        let test = chroot.join("nix/var/nix/profiles/test");
        for attr in ["appA", "tool", "split"] {
            nix_env_set(&chroot, &test, &out[attr]);
        }
        touch_old(&chroot.join("nix/var/nix/profiles/test-1-link"), 40);
        touch_old(&chroot.join("nix/var/nix/profiles/test-2-link"), 35);
        let home = links.join("home/.local/state/nix/profiles/profile");
        nix_env_set(&chroot, &home, &out["split"]);
        nix_env_set(&chroot, &home, &out["base"]);
        nix_env_set(
            &chroot,
            &links.join("proj-b/.direnv/flake-profile"),
            &out["onlyA"],
        );
        touch_old(&links.join("proj-a/result"), 50);
        // `nix-build --no-out-link` leaves an auto link to the `result` it
        // made and removed in /tmp: stale, as the collector will find it
        // (and delete it); gone here, so that the copies hold only roots
        // the tests made.
        for e in std::fs::read_dir(chroot.join("nix/var/nix/gcroots/auto")).unwrap() {
            let e = e.unwrap();
            let target = std::fs::read_link(e.path()).unwrap();
            if target.to_string_lossy().contains("/nix-build-") {
                std::fs::remove_file(e.path()).unwrap();
            }
        }
        Template { dir, nonce, out }
    })
}

/// A copy of the template for one test: the store and the links, with
/// `gcroots/auto`'s links moved to the copy's links.
fn store_copy(name: &str) -> TestStore {
    let t = template();
    let dir = scratch_dir(&format!("nix-heft-test-roots-{name}-"));
    let chroot = dir.join("store");
    let links = dir.join("links");
    copy_tree(&t.dir.join("store"), &chroot);
    copy_tree(&t.dir.join("links"), &links);
    // `addPermRoot` made an auto link for every link, generations in the
    // state directory included: each now points into the copy.
    let auto = chroot.join("nix/var/nix/gcroots/auto");
    for e in std::fs::read_dir(&auto).unwrap() {
        let e = e.unwrap();
        let target = std::fs::read_link(e.path()).unwrap();
        let moved = [("links", &links), ("store", &chroot)]
            .into_iter()
            .find_map(|(d, to)| Some(to.join(target.strip_prefix(t.dir.join(d)).ok()?)));
        if let Some(new) = moved {
            std::fs::remove_file(e.path()).unwrap();
            std::os::unix::fs::symlink(new, e.path()).unwrap();
        }
    }
    TestStore { chroot, links }
}

fn opts(keep_outputs: bool, keep_derivations: bool) -> Vec<String> {
    vec![
        "--option".into(),
        "keep-outputs".into(),
        keep_outputs.to_string(),
        "--option".into(),
        "keep-derivations".into(),
        keep_derivations.to_string(),
    ]
}

/// `nix-heft --store CHROOT [OPTS] ARGS` as JSON.
fn heft_json(s: &TestStore, options: &[String], args: &[&str]) -> Value {
    let mut c = heft();
    c.arg("--store")
        .arg(&s.chroot)
        .args(options)
        .arg("--json")
        .args(args);
    let out = c.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What `nix-store --gc --print-dead` lists.
fn print_dead(s: &TestStore, options: &[String]) -> BTreeSet<String> {
    run(Command::new("nix-store")
        .arg("--store")
        .arg(&s.chroot)
        .args(options)
        .args(["--gc", "--print-dead"]))
    .lines()
    .map(str::to_string)
    .collect()
}

/// Every symlink of the store's root trees and of the links directory,
/// with its target and mtime: what a test removes and puts back.
fn snapshot(s: &TestStore) -> Vec<(PathBuf, PathBuf, i64)> {
    let mut out = Vec::new();
    let mut stack = vec![
        s.links.clone(),
        s.chroot.join("nix/var/nix/gcroots"),
        s.chroot.join("nix/var/nix/profiles"),
    ];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.path().symlink_metadata().unwrap();
            if m.file_type().is_symlink() {
                out.push((e.path(), std::fs::read_link(e.path()).unwrap(), m.mtime()));
            } else if m.is_dir() {
                stack.push(e.path());
            }
        }
    }
    out
}

fn restore(snap: &[(PathBuf, PathBuf, i64)]) {
    for (link, target, mtime) in snap {
        if link.symlink_metadata().is_err() {
            std::os::unix::fs::symlink(target, link).unwrap();
            run(Command::new("touch")
                .arg("-h")
                .arg("-d")
                .arg(format!("@{mtime}"))
                .arg(link));
        }
    }
}

/// Runs `commands` (what `roots` printed for a root or group), then the
/// collector's listing, and puts every link back: the paths Nix would
/// delete after those commands.
fn dead_after(s: &TestStore, commands: &[String], options: &[String]) -> BTreeSet<String> {
    let snap = snapshot(s);
    for c in commands {
        run(Command::new("sh").arg("-c").arg(c));
    }
    let dead = print_dead(s, options);
    restore(&snap);
    assert_eq!(snapshot(s).len(), snap.len(), "links not put back");
    dead
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// What nix-heft says the collector deletes after removing a root or a
/// group: what is dead now and what it frees.
fn predicted(report: &Value, item: &Value) -> BTreeSet<String> {
    let mut p = strings(&report["dead"]["paths"]);
    p.extend(strings(&report["dead"]["invalid_entries"]));
    p.extend(strings(&item["freed_paths"]));
    p
}

fn same_sets(want: &BTreeSet<String>, got: &BTreeSet<String>, what: &str) {
    if want != got {
        let extra: Vec<_> = got.difference(want).collect();
        let missing: Vec<_> = want.difference(got).collect();
        panic!(
            "{what}: Nix would delete {} paths, nix-heft said {}\n  only Nix: {extra:#?}\n  only nix-heft: {missing:#?}",
            got.len(),
            want.len()
        );
    }
}

fn commands_of(v: &Value) -> Vec<String> {
    match (&v["command"], &v["commands"]) {
        (Value::String(c), _) => vec![c.clone()],
        (_, Value::Array(cs)) => cs.iter().map(|c| c.as_str().unwrap().to_string()).collect(),
        _ => Vec::new(),
    }
}

/// Every removable root and every group, one after the other: the
/// collector deletes exactly what nix-heft predicted. Returns the report.
fn check_every_root_and_group(s: &TestStore, options: &[String]) -> Value {
    let report = heft_json(s, options, &["roots", "--list-paths"]);
    // Nothing removed: the dead set itself.
    let dead_now = print_dead(s, options);
    same_sets(&predicted(&report, &Value::Null), &dead_now, "dead now");
    let mut checked = 0;
    for r in report["roots"].as_array().unwrap() {
        let commands = commands_of(r);
        if commands.is_empty() {
            continue;
        }
        let got = dead_after(s, &commands, options);
        same_sets(
            &predicted(&report, r),
            &got,
            &format!("root {} ({options:?})", r["location"]),
        );
        checked += 1;
    }
    for g in report["groups"].as_array().unwrap() {
        let got = dead_after(s, &commands_of(g), options);
        same_sets(
            &predicted(&report, g),
            &got,
            &format!("group {} ({options:?})", g["title"]),
        );
        checked += 1;
    }
    // Every link root of the fixture, and groups.
    assert!(checked >= 18, "only {checked} roots and groups checked");
    report
}

fn root<'a>(report: &'a Value, location: &Path) -> &'a Value {
    report["roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["location"] == location.to_str().unwrap())
        .unwrap_or_else(|| panic!("no root at {}: {report:#}", location.display()))
}

fn group<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["kind"]["kind"] == kind)
        .collect()
}

#[test]
fn every_root_and_group_frees_what_the_collector_deletes() {
    let s = store_copy("default");
    let t = template();
    // Nix 2.8's defaults, said explicitly.
    let report = check_every_root_and_group(&s, &opts(false, true));
    // The kinds found, where they are.
    let kind = |l: &Path| root(&report, l)["kind"].as_str().unwrap().to_string();
    assert_eq!(kind(&s.links.join("proj-a/result")), "link");
    assert_eq!(kind(&s.links.join("app-a.drv")), "link");
    let gen1 = s.chroot.join("nix/var/nix/profiles/test-1-link");
    assert_eq!(kind(&gen1), "generation");
    let r = root(&report, &s.links.join("proj-a/result"));
    assert_eq!(r["store_path"], t.out["appA"]);
    assert!(r["via"].as_str().unwrap().contains("/gcroots/auto/"), "{r}");
    assert!(r["age_secs"].as_i64().unwrap() > 49 * 86_400, "{r}");
    // app-a's output is kept by its result link and by generation 1:
    // neither frees it alone, both together do.
    assert_eq!(r["same_path_roots"], 2, "{r}");
    assert_eq!(r["freed"]["paths"], 0, "{r}");
    assert!(strings(&root(&report, &gen1)["freed_paths"]).is_empty());
    // Its closure, as `nix path-info -rS` counts it.
    let info = nix_path_info(Some(s.chroot.to_str().unwrap()), &[&t.out["appA"]]);
    assert_eq!(
        r["closure"]["nar_bytes"],
        info[&t.out["appA"]]["closureSize"]
    );
    // The generation groups: old ones, and older than 30 days (gen 1 and
    // 2 are 40 and 35 days old; 2 was current 30 days ago, so it stays).
    let old = group(&report, "profile-old");
    let test_old = old
        .iter()
        .find(|g| {
            g["kind"]["profile"]
                .as_str()
                .unwrap()
                .ends_with("profiles/test")
        })
        .unwrap();
    assert_eq!(test_old["members"].as_array().unwrap().len(), 2);
    let older = group(&report, "profile-older-than");
    let test_older = older
        .iter()
        .find(|g| {
            g["kind"]["profile"]
                .as_str()
                .unwrap()
                .ends_with("profiles/test")
        })
        .unwrap();
    assert_eq!(
        test_older["members"].as_array().unwrap().len(),
        1,
        "{test_older}"
    );
    assert_eq!(
        commands_of(test_older),
        [format!(
            "nix-env --store {} --profile {} --delete-generations 30d",
            s.chroot.display(),
            s.chroot.join("nix/var/nix/profiles/test").display()
        )]
    );
    // Result links (three), direnv (one), older than 30 days (the old
    // result link and generations 1 and 2).
    assert_eq!(
        group(&report, "result-links")[0]["members"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    assert_eq!(
        group(&report, "direnv")[0]["members"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        group(&report, "older-than")[0]["members"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    // A group frees what its members share, which none frees alone:
    // app-a's output goes with its result link and generation 1, both old.
    let old = group(&report, "older-than")[0];
    assert!(
        strings(&old["freed_paths"]).contains(&t.out["appA"]),
        "{old}"
    );
    let results = group(&report, "result-links")[0];
    // Bytes are the sum of Nix's narSize over the paths (`nix-store -q
    // --size`: `nix path-info` would take a `.drv` for its outputs).
    let freed = strings(&results["freed_paths"]);
    assert!(freed.iter().any(|p| p.ends_with(".drv")), "{freed:#?}");
    let sum: u64 = run(Command::new("nix-store")
        .arg("--store")
        .arg(&s.chroot)
        .args(["-q", "--size"])
        .args(&freed))
    .lines()
    .map(|l| l.trim().parse::<u64>().unwrap())
    .sum();
    assert_eq!(results["freed"]["nar_bytes"], sum);
}

#[test]
fn with_keep_outputs_a_derivation_root_keeps_its_outputs_and_build_inputs() {
    let s = store_copy("keep-outputs");
    let t = template();
    let report = check_every_root_and_group(&s, &opts(true, true));
    // The `.drv` root keeps its output, and removing it frees both.
    let r = root(&report, &s.links.join("kept.drv"));
    let freed = strings(&r["freed_paths"]);
    assert!(freed.contains(&t.out["kept"]), "{r:#}");
    assert!(freed.contains(&t.out["kept.drv"]), "{r:#}");
    // A build input no output refers to (app-a's helper) is kept through
    // app-a's derivation, which its output keeps (keep-derivations).
    let dead = strings(&report["dead"]["paths"]);
    assert!(!dead.contains(&t.out["helper"]));
    // Without keep-outputs, both outputs are dead now.
    let without = heft_json(&s, &opts(false, true), &["roots", "--list-paths"]);
    let dead = strings(&without["dead"]["paths"]);
    assert!(dead.contains(&t.out["helper"]) && dead.contains(&t.out["kept"]));
    let r = root(&without, &s.links.join("kept.drv"));
    assert!(!strings(&r["freed_paths"]).contains(&t.out["kept"]));
}

#[test]
fn without_keep_derivations_the_derivations_are_dead() {
    let s = store_copy("no-keep-derivations");
    let t = template();
    let report = check_every_root_and_group(&s, &opts(false, false));
    let dead = strings(&report["dead"]["paths"]);
    assert!(
        dead.iter().any(|p| p.ends_with("-app-b-1.0.drv")),
        "{dead:#?}"
    );
    // Rooted itself, app-a's derivation is live.
    assert!(!dead.contains(&t.out["appA.drv"]));
}

/// A process that holds a path (here in its environment, where Nix 2.8's
/// `findRuntimeRoots` looks too) keeps it, and a running `nix repl`'s
/// temporary root keeps the path it added, until it exits.
#[test]
fn processes_and_temporary_roots_keep_paths_as_the_collector_sees_them() {
    let s = store_copy("runtime");
    let t = template();
    let o = opts(false, true);
    // A path only this copy has, rooted by a link: no other test's store
    // holds it, so the process roots nothing elsewhere.
    let file = s.links.join("held.txt");
    std::fs::write(&file, format!("held by {}", s.chroot.display())).unwrap();
    let held = run(Command::new("nix-store")
        .arg("--store")
        .arg(&s.chroot)
        .arg("--add")
        .arg(&file))
    .trim()
    .to_string();
    run(Command::new("nix-store")
        .arg("--store")
        .arg(&s.chroot)
        .arg("--add-root")
        .arg(s.links.join("held"))
        .arg("-r")
        .arg(&held));
    let mut holder = Command::new("sleep")
        .arg("600")
        .env("HELD_BY_THE_TEST", format!("{held}:/usr/bin"))
        .spawn()
        .unwrap();
    let report = heft_json(&s, &o, &["roots", "--list-paths"]);
    let runtime: Vec<&Value> = report["roots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "runtime" && r["store_path"] == held)
        .collect();
    assert_eq!(runtime.len(), 1, "{report:#}");
    let pid = holder.id();
    assert_eq!(runtime[0]["location"], format!("/proc/{pid}"));
    assert!(
        strings(&runtime[0]["held_by"]).contains(&format!("/proc/{pid}/environ")),
        "{}",
        runtime[0]
    );
    // Its link frees nothing while the process holds it, and the
    // collector agrees.
    let link = root(&report, &s.links.join("held"));
    assert_eq!(link["same_path_roots"], 2, "{link}");
    assert_eq!(link["freed"]["paths"], 0, "{link}");
    let all = check_every_root_and_group(&s, &o);
    assert!(
        !strings(&all["dead"]["paths"]).contains(&held),
        "held path dead"
    );
    let _ = holder.kill();
    let _ = holder.wait();

    // A temporary root: `nix repl` adds a file to the store and keeps it
    // rooted while it runs.
    let name = format!("temp-root-{}", t.nonce);
    let mut repl = Command::new("nix")
        .args([
            "--extra-experimental-features",
            "nix-command",
            "repl",
            "--store",
        ])
        .arg(&s.chroot)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let stdin = repl.stdin.as_mut().unwrap();
        writeln!(stdin, "builtins.toFile \"{name}\" \"kept\"").unwrap();
        stdin.flush().unwrap();
    }
    let temproots = s.chroot.join("nix/var/nix/temproots");
    let start = std::time::Instant::now();
    let path = loop {
        let found = std::fs::read_dir(&temproots).ok().and_then(|rd| {
            rd.flatten().find_map(|e| {
                let text = std::fs::read(e.path()).ok()?;
                text.split(|&b| b == 0)
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .find(|p| p.ends_with(&name))
            })
        });
        if let Some(p) = found {
            break p;
        }
        assert!(
            start.elapsed().as_secs() < 60,
            "nix repl made no temporary root"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let report = heft_json(&s, &o, &["roots", "--list-paths"]);
    let temp: Vec<&Value> = report["roots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "temporary")
        .collect();
    assert_eq!(temp.len(), 1, "{report:#}");
    assert_eq!(temp[0]["store_path"], path);
    assert_eq!(temp[0]["processes"][0][0], repl.id());
    same_sets(
        &predicted(&report, &Value::Null),
        &print_dead(&s, &o),
        "with a temporary root",
    );
    drop(repl.stdin.take());
    repl.wait().unwrap();
    // Its process gone, the file roots nothing: the path is dead.
    let report = heft_json(&s, &o, &["roots", "--list-paths"]);
    assert!(strings(&report["dead"]["paths"]).contains(&path));
    same_sets(
        &predicted(&report, &Value::Null),
        &print_dead(&s, &o),
        "after nix repl",
    );
}

/// Links that root nothing are listed, and the collector agrees they
/// root nothing.
#[test]
fn stale_links_are_listed_and_root_nothing() {
    let s = store_copy("stale");
    let o = opts(false, true);
    // A result link replaced by a file, a removed one (its auto link
    // left), and a link in gcroots to a path the store does not hold.
    std::fs::remove_file(s.links.join("proj-b/result-split-dev")).unwrap();
    std::fs::remove_file(s.links.join("proj-b/result")).unwrap();
    std::fs::write(s.links.join("proj-b/result"), "not a link").unwrap();
    let missing = format!("/nix/store/{}-never-built", "0".repeat(32));
    std::os::unix::fs::symlink(&missing, s.chroot.join("nix/var/nix/gcroots/missing")).unwrap();
    let report = heft_json(&s, &o, &["roots", "--list-paths"]);
    // (`nix-build --no-out-link` leaves stale auto links of its own, to
    // the temporary `result` it removed.)
    let stale: Vec<&Value> = report["stale"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| {
            !x["location"]
                .as_str()
                .unwrap()
                .starts_with("/tmp/nix-build-")
        })
        .collect();
    let reason = |l: &Path| -> String {
        stale
            .iter()
            .find(|x| x["location"] == l.to_str().unwrap())
            .unwrap_or_else(|| panic!("{} not stale: {stale:#?}", l.display()))["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(reason(&s.links.join("proj-b/result-split-dev")).contains("gone"));
    assert!(reason(&s.links.join("proj-b/result")).contains("no longer a symlink"));
    assert!(reason(&s.chroot.join("nix/var/nix/gcroots/missing")).contains("does not hold"));
    assert_eq!(stale.len(), 3, "{stale:#?}");
    same_sets(
        &predicted(&report, &Value::Null),
        &print_dead(&s, &o),
        "with stale links",
    );
}

/// `why --roots PATH`: every root that keeps the path, with a chain; the
/// removable ones removed together free it, as the collector confirms.
#[test]
fn why_roots_names_every_root_that_keeps_a_path() {
    let s = store_copy("why");
    let t = template();
    let o = opts(false, true);
    let mut args = o.clone();
    args.extend(["--store".to_string(), s.chroot.display().to_string()]);
    let mut c = heft();
    c.args(&args)
        .args(["--json", "why", "--roots", &t.out["base"]]);
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let w: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(w["path"], t.out["base"]);
    let locations: BTreeSet<String> = w["roots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["root"]["location"].as_str().unwrap().to_string())
        .collect();
    // Both applications' result links, generation 1 of `test` (app-a),
    // not the `.drv` root (keep-derivations does not go from a derivation
    // to its output), the home profile's current generation (base itself)
    // and the direnv profile (only-a refers to base).
    let want: BTreeSet<String> = [
        s.links.join("proj-a/result"),
        s.links.join("proj-b/result"),
        s.chroot.join("nix/var/nix/profiles/test-1-link"),
        s.links
            .join("home/.local/state/nix/profiles/profile-2-link"),
        s.links.join("proj-b/.direnv/flake-profile-1-link"),
    ]
    .iter()
    .map(|p| p.display().to_string())
    .collect();
    assert_eq!(locations, want);
    // Each chain ends at the path.
    for r in w["roots"].as_array().unwrap() {
        let chain = r["chain"].as_array().unwrap();
        assert_eq!(chain.last().unwrap()[0], t.out["base"], "{r}");
        assert_eq!(chain[0][1], "root");
    }
    // Removing them all frees it: the collector then lists it.
    assert_eq!(w["freed_by_all"], true);
    let dead = dead_after(&s, &commands_of(&w["all"]), &o);
    assert!(dead.contains(&t.out["base"]), "{dead:#?}");
    // The text names each root and the chain.
    let text = String::from_utf8(
        heft()
            .args(&args)
            .args(["why", "--roots", &t.out["base"]])
            .env("COLUMNS", "200")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(text.contains("is kept by 5 root(s)"), "{text}");
    // One reference on each chain but the profile generation that is
    // base itself.
    assert_eq!(text.matches(" → ").count(), 4, "{text}");
}

/// A real collection on an optimised copy: `nix-store --gc` deletes
/// exactly the paths predicted, and the store's size on disk (du) drops by
/// `--disk`'s figure, a file shared by `nix-store --optimise` freed only
/// with its last name.
#[test]
fn a_real_collection_on_an_optimised_store_frees_what_was_predicted_on_disk() {
    let s = store_copy("optimised");
    let t = template();
    let o = opts(false, true);
    run(Command::new("nix-store")
        .arg("--store")
        .arg(&s.chroot)
        .arg("--optimise"));
    let links_dir = s.chroot.join("nix/store/.links");
    assert!(
        std::fs::read_dir(&links_dir).unwrap().count() > 0,
        "nothing optimised"
    );
    let report = heft_json(&s, &o, &["roots", "--list-paths", "--disk"]);
    // app-b alone: its zeros are shared with app-a's and the tool's, so
    // they stay; what it frees on disk is less than its NAR.
    let b = root(&report, &s.links.join("proj-b/result"));
    let b_disk = b["freed"]["disk_bytes"].as_u64().unwrap();
    let b_nar = b["freed"]["nar_bytes"].as_u64().unwrap();
    assert!(b["freed"]["paths"].as_u64().unwrap() > 0, "{b}");
    let du = || -> u64 {
        let out = run(Command::new("du")
            .args(["-s", "-B1"])
            .arg(s.chroot.join("nix/store")));
        out.split_whitespace().next().unwrap().parse().unwrap()
    };
    let before = du();
    let deleted = collect(&s, &commands_of(b), &o);
    same_sets(&predicted(&report, b), &deleted, "nix-store --gc");
    let after = du();
    let dead_disk = report["dead"]["figure"]["disk_bytes"].as_u64().unwrap();
    assert_eq!(before - after, dead_disk + b_disk, "du {before} → {after}");
    // Its 70,000 zeros stay with app-a's and the tool's.
    assert!(b_disk > 0 && b_disk + 50_000 < b_nar, "{b}");
    // Now every other root of the zeros: they go with the last one.
    let report = heft_json(&s, &o, &["roots", "--list-paths", "--disk"]);
    let results = group(&report, "result-links")[0];
    let before = du();
    let deleted = collect(&s, &commands_of(results), &o);
    same_sets(
        &predicted(&report, results),
        &deleted,
        "nix-store --gc of the result links",
    );
    let after = du();
    let want = report["dead"]["figure"]["disk_bytes"].as_u64().unwrap()
        + results["freed"]["disk_bytes"].as_u64().unwrap();
    assert_eq!(before - after, want, "du {before} → {after}");
    assert!(s.chroot.join(&t.out["tool"][1..]).exists());
}

/// Runs `commands`, then a real `nix-store --gc`: the paths it deleted.
fn collect(s: &TestStore, commands: &[String], options: &[String]) -> BTreeSet<String> {
    for c in commands {
        run(Command::new("sh").arg("-c").arg(c));
    }
    let out = nix_output(Command::new("nix-store")
        .arg("--store")
        .arg(&s.chroot)
        .args(options)
        .arg("--gc"));
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("deleting '")?.strip_suffix('\''))
        .filter(|p| !p.contains("/.links/"))
        .map(str::to_string)
        .collect()
}

/// The text: a table of the roots most freed first, the groups with
/// their commands, the collector's command; PATH arguments narrow it.
#[test]
fn the_text_lists_roots_groups_and_commands() {
    let s = store_copy("text");
    let out = heft()
        .arg("--store")
        .arg(&s.chroot)
        .args(opts(false, true))
        .arg("roots")
        .env("COLUMNS", "250")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.matches("FREES").count(), 1, "{text}");
    assert!(text.contains("removed together"), "{text}");
    assert!(
        text.contains(&format!("nix-store --store {} --gc", s.chroot.display())),
        "{text}"
    );
    assert!(text.contains("nix-heft deletes nothing"), "{text}");
    // PATH: the roots under proj-b and what removing them all frees.
    let out = heft()
        .arg("--store")
        .arg(&s.chroot)
        .args(opts(false, true))
        .args(["--json", "roots"])
        .arg(s.links.join("proj-b"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let roots = v["roots"].as_array().unwrap();
    assert_eq!(roots.len(), 4, "{v:#}");
    assert!(
        roots
            .iter()
            .all(|r| r["location"].as_str().unwrap().contains("/proj-b/"))
    );
    let under = group(&v, "under");
    assert_eq!(under.len(), 1);
    assert_eq!(under[0]["members"].as_array().unwrap().len(), 4);
}

/// README.md shows the roots of this fixture's store as `roots` prints
/// them (NIX_HEFT_UPDATE_README=1 writes it there): the copy's links made
/// days old, its directories named as a reader's would be, hashes masked.
#[test]
fn readme_shows_the_roots_of_a_real_store() {
    let s = store_copy("readme");
    for (link, _, _) in snapshot(&s) {
        if !link.starts_with(s.chroot.join("nix/var/nix/gcroots")) {
            let name = link.file_name().unwrap().len() as u64;
            touch_old(&link, 3 + (name % 4) * 7);
        }
    }
    touch_old(&s.links.join("proj-a/result"), 50);
    touch_old(&s.chroot.join("nix/var/nix/profiles/test-1-link"), 40);
    touch_old(&s.chroot.join("nix/var/nix/profiles/test-2-link"), 35);
    // Full lines (piped, no COLUMNS), then the directories renamed.
    let out = heft_bare()
        .arg("--store")
        .arg(&s.chroot)
        .args(["roots", "--top", "4"])
        .env_remove("COLUMNS")
        .env("NIX_CONFIG", "")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Both directories renamed to names of one length, so the table's
    // rows, each holding one of them, stay aligned (the header's gap
    // after ROOT shrinks by as much).
    let (links, chroot) = (
        s.links.display().to_string(),
        s.chroot.display().to_string(),
    );
    assert_eq!(links.len(), chroot.len());
    let shrink = links.len() - "/home/user".len();
    let text: String = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("note: the open files of"))
        .map(|l| {
            let l = if l.trim_start().starts_with("FREES") {
                l.replacen(&format!("ROOT{}", " ".repeat(shrink)), "ROOT", 1)
            } else {
                l.replace(&links, "/home/user")
                    .replace(&chroot, "/mnt/store")
            };
            format!("{}\n", l.trim_end())
        })
        .collect();
    let text = format!("$ nix-heft --store /mnt/store roots --top 4\n{text}");
    let mask = |t: &str| {
        regex::Regex::new("/nix/store/[0-9a-z]{32}")
            .unwrap()
            .replace_all(t, "/nix/store/HASH")
            .into_owned()
    };
    let path = repo().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (start, end) = (
        "<!-- roots-example:start -->\n```text\n",
        "```\n<!-- roots-example:end -->",
    );
    let a = readme.find(start).expect("README has the roots example") + start.len();
    let b = readme[a..].find(end).unwrap() + a;
    if std::env::var_os("NIX_HEFT_UPDATE_README").is_some() {
        std::fs::write(&path, format!("{}{}{}", &readme[..a], text, &readme[b..])).unwrap();
        return;
    }
    assert_eq!(
        mask(&readme[a..b]),
        mask(&text),
        "README's roots example is stale: NIX_HEFT_UPDATE_README=1 cargo test --test testsuite roots::readme"
    );
}

/// `roots --html`: the page, drawn by headless chromium, has one cell per
/// root that frees something alone, one per store path several roots keep
/// together, and what is dead now, each as large as `--json` says; a click
/// shows the command that removes the root.
#[test]
fn the_page_draws_the_roots_by_what_they_free() {
    use crate::report::{assert_clean, chromium, out_dir};
    let s = store_copy("page");
    let o = opts(false, true);
    let report = heft_json(&s, &o, &["roots"]);
    let page = out_dir().join("roots.html");
    let out = heft()
        .arg("--store")
        .arg(&s.chroot)
        .args(&o)
        .args(["roots", "--html"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.matches("page written to").count(), 1, "{text}");
    let b = chromium(&format!("file://{}", page.display()), None);
    assert_clean(&b);
    let cell = regex::Regex::new(
        r#"class="cell [^"]*" style="[^"]*" data-id="([^"]+)" data-bytes="(\d+)""#,
    )
    .unwrap();
    let cells: BTreeMap<String, u64> = cell
        .captures_iter(&b.dom)
        .map(|c| (c[1].to_string(), c[2].parse().unwrap()))
        .collect();
    let mut want = BTreeMap::new();
    for (i, r) in report["roots"].as_array().unwrap().iter().enumerate() {
        let f = r["freed"]["nar_bytes"].as_u64().unwrap();
        if f > 0 {
            want.insert(format!("r{i}"), f);
        }
    }
    for (j, sp) in report["shared"].as_array().unwrap().iter().enumerate() {
        want.insert(format!("s{j}"), sp["freed"]["nar_bytes"].as_u64().unwrap());
    }
    let dead = report["dead"]["figure"]["nar_bytes"].as_u64().unwrap();
    if dead > 0 {
        want.insert("dead".into(), dead);
    }
    assert!(want.len() >= 4, "{want:?}");
    assert_eq!(cells, want);
    // A click on the root that frees the most: its command, then the
    // collector's.
    let top = &report["roots"][0];
    let b = chromium(&format!("file://{}#click=r0", page.display()), None);
    assert_clean(&b);
    let cmd = top["command"].as_str().unwrap();
    let detail = &b.dom[b.dom.find(r#"id="detail""#).unwrap()..];
    assert!(detail.contains(&format!("$ {cmd}")), "{detail}");
    assert!(detail.contains("nix-store --store"), "{detail}");
    // The table lists every root; the groups view every group.
    let rows = b.dom.matches("<tr tabindex=\"0\" data-root=").count();
    assert_eq!(rows, report["roots"].as_array().unwrap().len());
    let groups = b.dom.matches(r#"<div class="group">"#).count();
    assert_eq!(groups, report["groups"].as_array().unwrap().len());
}

/// `roots --browse`, drawn on ratatui's test backend over the library:
/// marking roots updates the joint figure, which is what the collector
/// deletes once the commands printed on leaving have run.
#[test]
fn browsing_marks_roots_and_gives_their_joint_figure_and_commands() {
    use nix_heft_browse::key;
    use nix_heft_browse::roots::{RootsApp, RootsOutcome, draw};
    use ratatui::crossterm::event::KeyCode;
    let s = store_copy("browse");
    let t = template();
    let o = opts(false, true);
    let store = nix_heft_store::source::LocalStore::open(&s.chroot, Default::default()).unwrap();
    let req = nix_heft_ops::gc::RootsRequest {
        keep_derivations: true,
        store_arg: Some(s.chroot.display().to_string()),
        options: vec![
            ("keep-outputs".into(), "false".into()),
            ("keep-derivations".into(), "true".into()),
        ],
        older_than_days: 30,
        now: 2_000_000_000,
        ..Default::default()
    };
    let (a, c) = nix_heft_ops::gc::analyse_with(&store, &req).unwrap();
    let screen = |app: &RootsApp| {
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 30)).unwrap();
        term.draw(|f| draw(f, app)).unwrap();
        let buf = term.backend().buffer();
        let mut out = String::new();
        for y in 0..buf.area.height {
            for x in 0..buf.area.width {
                out.push_str(buf[(x, y)].symbol());
            }
            out.push('\n');
        }
        out
    };
    let mut app = RootsApp::new(&a, &c, true);
    assert!(screen(&app).contains("nothing marked"));
    // Mark app-a's two roots: neither frees anything alone, both do.
    let at = |l: &Path| a.roots.iter().position(|r| *r.location == *l).unwrap();
    for l in [
        s.links.join("proj-a/result"),
        s.chroot.join("nix/var/nix/profiles/test-1-link"),
    ] {
        app.cursor = app.order.iter().position(|&i| i == at(&l)).unwrap();
        assert_eq!(app.on_key(key(KeyCode::Char(' '))), RootsOutcome::Continue);
    }
    let shared = a
        .shared
        .iter()
        .find(|sp| *sp.store_path == t.out["appA"])
        .unwrap();
    assert_eq!(app.joint, shared.freed);
    let sc = screen(&app);
    assert!(
        sc.contains(&format!(
            "2 marked: together they free {}",
            nix_heft_types::units::iec(shared.freed.nar_bytes)
        )),
        "{sc}"
    );
    assert!(sc.contains("[x]"), "{sc}");
    // And a third, the direnv root: the figure is the collector's.
    app.cursor = app
        .order
        .iter()
        .position(|&i| i == at(&s.links.join("proj-b/.direnv/flake-profile-1-link")))
        .unwrap();
    app.on_key(key(KeyCode::Char(' ')));
    let RootsOutcome::Quit(commands) = app.on_key(key(KeyCode::Char('q'))) else {
        panic!("q does not quit");
    };
    assert_eq!(commands.last().unwrap(), &a.gc_command);
    let got = dead_after(&s, &commands[..commands.len() - 1], &o);
    let report = heft_json(&s, &o, &["roots", "--list-paths"]);
    let mut want = predicted(&report, &Value::Null);
    let joint = c.figures(&[&app.marked.iter().copied().collect::<Vec<_>>()], true);
    want.extend(joint[0].1.iter().cloned());
    same_sets(&want, &got, "the marked roots");
    assert_eq!(joint[0].0, app.joint);
}

/// The real binary in tmux: space marks, q prints the commands.
#[test]
fn the_real_browser_prints_the_commands_of_the_marked_roots() {
    use crate::browse_tmux::Tmux;
    let s = store_copy("tmux");
    let bin = assert_cmd::cargo::cargo_bin("nix-heft");
    let cmd = format!(
        "{} --store {} roots --browse; echo EXITED rc=$?; sleep 60",
        bin.display(),
        s.chroot.display(),
    );
    let t = Tmux::start("roots", 250, 30, &cmd);
    t.wait("nothing marked");
    t.keys("Space");
    t.wait("1 marked: together they free");
    t.keys("q");
    let screen = t.wait("EXITED rc=0");
    let printed: String = screen
        .lines()
        .skip_while(|l| !l.starts_with("# 1 root(s) marked"))
        .take(3)
        .map(|l| format!("{}\n", l.trim_end()))
        .collect();
    let report = heft_json(&s, &[], &["roots"]);
    let first = &report["roots"][0];
    let want = format!(
        "# 1 root(s) marked: together they free {}\n{}\n{}\n",
        sized_text(&first["freed"]),
        first["command"].as_str().unwrap(),
        report["gc_command"].as_str().unwrap()
    );
    assert_eq!(printed, want);
}

fn sized_text(f: &Value) -> String {
    let paths = f["paths"].as_u64().unwrap();
    format!(
        "{} in {paths} {}",
        nix_heft_types::units::iec(f["nar_bytes"].as_u64().unwrap()),
        if paths == 1 { "path" } else { "paths" }
    )
}

/// The host's own store, /nix/store, with its database, its gcroots and
/// the processes running now: `nix-build -o` makes two result links (their
/// roots in `gcroots/auto`), nix-heft predicts what removing each and both
/// frees, and Nix 2.8's collector (`nix-store --gc --print-dead`, which
/// deletes nothing) lists the same paths after the links are removed, with
/// the default settings and with `keep-outputs`. Other tests share the
/// store and add paths and roots while this runs, so the comparison is on
/// this test's own paths: the derivations of its two builds, their inputs
/// and every output they have.
#[test]
fn on_the_local_store_removing_result_links_frees_what_the_collector_deletes() {
    let dir = scratch_dir("nix-heft-test-roots-local-");
    let nonce = nonce();
    let mut outs = Vec::new();
    for (attr, link) in [("appA", "a/result"), ("appB", "b/result")] {
        let link = dir.join(link);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        let out = run(Command::new("nix-build")
            .args(SANDBOX)
            .args(SANDBOX_PATHS)
            .args(["--option", "substituters", ""])
            .arg(fixture_file())
            .args(["--argstr", "nonce", &nonce, "-A", attr])
            .arg("-o")
            .arg(&link));
        outs.push(out.trim().to_string());
    }
    // This test's paths: the derivations' closures and their outputs.
    let derivers = run(Command::new("nix-store").arg("-qd").args(&outs));
    let drvs = run(Command::new("nix-store")
        .arg("-qR")
        .args(derivers.split_whitespace()));
    let outputs = run(Command::new("nix-store")
        .arg("-q")
        .arg("--outputs")
        .args(drvs.split_whitespace()));
    let own: BTreeSet<String> = drvs
        .split_whitespace()
        .chain(outputs.split_whitespace())
        .filter(|p| Path::new(p).exists())
        .map(str::to_string)
        .collect();
    assert!(own.len() >= 10, "{own:#?}");
    let mine = |s: BTreeSet<String>| -> BTreeSet<String> { s.intersection(&own).cloned().collect() };
    let print_dead_local = |options: &[String]| -> BTreeSet<String> {
        mine(
            run(Command::new("nix-store")
                .args(options)
                .args(["--gc", "--print-dead"]))
            .lines()
            .map(str::to_string)
            .collect(),
        )
    };
    for options in [opts(false, true), opts(true, true)] {
        let mut c = heft();
        c.args(&options)
            .args(["--json", "roots", "--list-paths"])
            .arg(&dir);
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["store"], "the local store");
        let dead_now = mine(strings(&report["dead"]["paths"]));
        same_sets(&dead_now, &print_dead_local(&options), &format!("{options:?}: dead now"));
        let roots = report["roots"].as_array().unwrap();
        assert_eq!(roots.len(), 2, "{roots:#?}");
        let groups = group(&report, "under");
        assert_eq!(groups.len(), 1, "{groups:#?}");
        let mut freed_by_one = 0;
        for item in roots.iter().chain(groups) {
            let mut want = dead_now.clone();
            want.extend(mine(strings(&item["freed_paths"])));
            freed_by_one += usize::from(want.len() > dead_now.len());
            // The links and their `gcroots/auto` entries, which the
            // collector deletes once they are stale: put back after.
            let auto = Path::new("/nix/var/nix/gcroots/auto");
            let mut links: Vec<(PathBuf, PathBuf)> = ["a/result", "b/result"]
                .iter()
                .map(|l| (dir.join(l), std::fs::read_link(dir.join(l)).unwrap()))
                .collect();
            for e in std::fs::read_dir(auto).unwrap() {
                let e = e.unwrap();
                if let Ok(t) = std::fs::read_link(e.path())
                    && t.starts_with(&dir)
                {
                    links.push((e.path(), t));
                }
            }
            assert_eq!(links.len(), 4, "{links:#?}");
            for c in commands_of(item) {
                run(Command::new("sh").arg("-c").arg(c));
            }
            let got = print_dead_local(&options);
            for (l, t) in &links {
                if l.symlink_metadata().is_err() {
                    std::os::unix::fs::symlink(t, l).unwrap();
                }
            }
            same_sets(&want, &got, &format!("{options:?}: removing {}", item["location"]));
        }
        // Each link and the pair free something of this test's own.
        assert_eq!(freed_by_one, 3, "{options:?}");
    }
}
