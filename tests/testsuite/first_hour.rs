//! A maintainer's first hour (issue 14): advice that would break a
//! program, verdicts hidden from the text, floods, widths, colours and
//! ambiguous names, each on a real store built with real Nix.

use crate::common::*;
use nix_heft_analysis::plan::advise::ActionKind;
use nix_heft_report::advise::AdviceReport;
use nix_heft_report::split::SplitReport;
use nix_heft_report::why::WhyReport;

fn rocblas() -> String {
    let f = fixture();
    nix_path_info(None, &[&f.rocm])
        .into_keys()
        .find(|p| p.ends_with("-rocblas-5.7.1"))
        .unwrap()
}

fn json<T: serde::de::DeserializeOwned>(store: Option<&str>, args: &[&str]) -> (i32, T) {
    let o = heft_run(store, args);
    assert!(o.code == 0 || o.code == 3, "{}", o.stderr);
    (
        o.code,
        serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout)),
    )
}

/// Item 1: A split that parts run-time data from the ELF file that looks it up
/// by relative path warns, and its consumers keep the data's output.
#[test]
fn split_warns_when_it_parts_data_from_its_loader() {
    let f = fixture();
    let rb = rocblas();
    for mv in ["lib/rocblas=kernels", "lib/librocblas*=libs"] {
        let (_, r): (_, SplitReport) = json(
            None,
            &["--json", "split", "--move", mv, "--root", &f.rocm, &rb],
        );
        assert!(
            r.warnings.iter().any(|w| w.contains(
                "breaks run time: lib/librocblas.so looks files up under rocblas/library"
            )),
            "{mv}: {:?}",
            r.warnings
        );
        // The consumer that links librocblas.so now keeps the data's output
        // too, so the kernels stay in the closure: little or nothing saved.
        let hipblas = r
            .consumers
            .iter()
            .find(|c| c.consumer.ends_with("-hipblas-5.7.1"))
            .unwrap();
        assert!(hipblas.keeps.len() >= 2, "{mv}: {:?}", hipblas.keeps);
        let tensile: u64 = nix_path_info(None, &[&rb])
            .iter()
            .filter(|(p, _)| p.contains("-rocblas-tensile-"))
            .map(|(_, v)| v["narSize"].as_u64().unwrap())
            .sum();
        let saved = r.roots[0].before as i128 - r.roots[0].after as i128;
        assert!(
            saved < tensile as i128,
            "{mv}: claims {saved} of the {tensile} kernel bytes"
        );
    }
}

/// Items 2 and 5: No advice to do what is done: a package already built for one
/// target gets no partition; `removes` lists only paths that leave; an
/// action saving nothing is folded into an "also" line saying what keeps
/// the path. "no reference" never appears.
#[test]
fn advice_is_never_a_no_op_and_removes_only_what_leaves() {
    let f = fixture();
    let one = f.small("onetarget");
    let (_, r): (_, AdviceReport) = json(None, &["--json", "advise", one]);
    assert!(
        r.actions
            .iter()
            .all(|a| a.kind != ActionKind::PartitionTargets),
        "{:?}",
        r.actions
    );
    let weak = f.small("weakapp");
    let (_, r): (_, AdviceReport) = json(None, &["--json", "advise", weak]);
    let dead = r
        .actions
        .iter()
        .find(|a| a.kind == ActionKind::DeadRunpath)
        .expect("the dead RUNPATH entry is found");
    assert_eq!(dead.saving, Some(0));
    assert!(dead.removes.is_empty(), "{dead:?}");
    assert!(dead.cuts[0].ends_with("-deep-lib-1.0"), "{dead:?}");
    assert!(
        dead.stays[0]
            .kept_by
            .iter()
            .any(|p| p.ends_with("-mid-lib-1.0")),
        "{dead:?}"
    );
    // What keeps deep-lib is mid-lib's hold, whose verdict needs mid-lib
    // read: at the default threshold no action on mid-lib could save 1%, so
    // it is not examined, and the line says so rather than give a verdict.
    let o = heft_run(None, &["advise", weak]);
    assert!(o.stdout.contains("0 action(s)"), "{}", o.stdout);
    assert!(
        o.stdout.contains("[dead-runpath] deep-lib-1.0 in weak-app-1.0: deep-lib-1.0 stays: via mid-lib-1.0 (not read: mid-lib-1.0; --min-saving 0 reads everything)")
            && o.stdout.contains("1 referrer(s) not examined"),
        "{}",
        o.stdout
    );
    let o = heft_run(None, &["advise", "--min-saving", "0", weak]);
    assert!(
        o.stdout.contains("[dead-runpath] deep-lib-1.0 in weak-app-1.0: deep-lib-1.0 stays: runtime via mid-lib-1.0"),
        "{}",
        o.stdout
    );
    let o = heft_run(None, &["advise", "--all", weak]);
    assert!(
        o.stdout
            .contains("1. [dead-runpath] deep-lib-1.0 in weak-app-1.0"),
        "{}",
        o.stdout
    );
    // On the example every action really removes what it names.
    let (_, r): (_, AdviceReport) = json(None, &["--json", "advise", &f.rocm]);
    let closure = nix_path_info(None, &[&f.rocm]);
    for a in &r.actions {
        assert!(!a.cuts.is_empty(), "{a:?}");
        for p in &a.removes {
            assert!(closure.contains_key(p));
        }
        if a.saving.unwrap_or(0) > 0 {
            assert!(!a.removes.is_empty(), "{a:?}");
        }
    }
    let o = heft_run(None, &["advise", &f.rocm, one, weak]);
    assert!(!o.stdout.contains("no reference"), "{}", o.stdout);
}

/// Items 3 and 4: `why` with a glob explains every match, and ranks a run-time
/// chain above a shorter dead one, saying what keeps the dependency.
#[test]
fn why_explains_every_match_by_its_strongest_chain() {
    let f = fixture();
    let (_, w): (_, WhyReport) = json(None, &["--json", "why", &f.rocm, "rocblas-tensile-*"]);
    assert!(w.deps.len() >= 6, "{:?}", w.deps);
    assert_eq!(w.best.len(), w.deps.len());
    for d in &w.deps {
        assert!(
            w.chains.iter().any(|c| c.last() == Some(d)),
            "{d} has no chain shown"
        );
        assert!(
            w.edges
                .iter()
                .any(|e| &e.reference == d && !e.evidence.is_empty()),
            "{d}"
        );
    }
    let weak = f.small("weakapp");
    let (_, w): (_, WhyReport) = json(None, &["--json", "why", weak, "deep-lib"]);
    assert_eq!(w.chain_count, 2);
    assert_eq!(w.chains.len(), 1);
    assert_eq!(
        w.chains[0].len(),
        3,
        "the runtime chain via mid-lib, not the direct dead one: {:?}",
        w.chains
    );
    assert_eq!(
        w.best[0].verdict,
        nix_heft_types::evidence::Verdict::Runtime
    );
    let o = heft_run(None, &["why", "--all", weak, "deep-lib"]);
    assert!(
        o.stdout
            .contains("[runtime] weak-app-1.0 → mid-lib-1.0 → deep-lib-1.0"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("[dead] weak-app-1.0 → deep-lib-1.0"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("deep-lib-1.0 stays: runtime via mid-lib-1.0"),
        "{}",
        o.stdout
    );
    let runtime_at = o.stdout.find("[runtime]").unwrap();
    assert!(
        runtime_at < o.stdout.find("[dead]").unwrap(),
        "runtime first"
    );
}

/// Item 6: Sources without file contents never look like clean answers, and an
/// unreadable referrer is not shown as a missing reference.
#[test]
fn no_contents_and_unreadable_are_said() {
    let f = fixture();
    let json_store = f.json_array.display().to_string();
    let o = heft_run(Some(&json_store), &["advise", &f.rocm]);
    assert_error(&o, "has no file contents");
    let o = heft_run(Some(&json_store), &["why", &f.rocm, "glibc"]);
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert!(o.stderr.contains("has no file contents"), "{}", o.stderr);
    // A truncated NAR: its edges say unreadable, not NOT FOUND.
    let dir = scratch("truncated-for-refs");
    let cache = dir.join("cache");
    copy_tree(&example_cache(), &cache);
    let root = example_root();
    let narinfo = cache.join(format!(
        "{}.narinfo",
        &root.rsplit('/').next().unwrap()[..32]
    ));
    let url = std::fs::read_to_string(&narinfo)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("URL: ").map(str::to_string))
        .unwrap();
    let nar = cache.join(url);
    let bytes = std::fs::read(&nar).unwrap();
    std::fs::write(&nar, &bytes[..bytes.len() / 2]).unwrap();
    let o = heft_run(Some(&cache.display().to_string()), &["refs", &root]);
    assert_eq!(o.code, 3, "{}", o.stderr);
    let root_rows: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("llama-cpp-rocm-0.0.0 "))
        .collect();
    assert!(!root_rows.is_empty());
    assert!(
        root_rows
            .iter()
            .all(|l| l.contains("unreadable:") && !l.contains("NOT FOUND")),
        "{root_rows:?}"
    );
}

/// Items 7 and 8: Verdicts in the text, and no floods.
#[test]
fn text_shows_verdicts_and_groups_floods() {
    let f = fixture();
    let o = heft_run(None, &["refs", &f.rocm]);
    let header = o.stdout.lines().next().unwrap();
    assert!(header.contains("VERDICT"), "{header}");
    assert!(
        o.stdout
            .contains("docs: share/doc/hipblas/README is documentation"),
        "{}",
        o.stdout
    );
    let o = heft_run(None, &["why", &f.rocm, "rocm-docs"]);
    assert!(
        o.stdout
            .contains("docs: share/doc/hipblas/README is documentation"),
        "{}",
        o.stdout
    );
    let o = heft_run(None, &["why", &f.rocm, "rocblas-tensile-*"]);
    let plain = heft_run(None, &["why", "--evidence", &f.rocm, "rocblas-tensile-*"]);
    assert!(
        o.stdout.lines().count() * 2 < plain.stdout.lines().count(),
        "grouping shortens"
    );
    // refs --evidence lists each occurrence under the table.
    let o = heft_run(None, &["refs", "--evidence", &f.rocm]);
    let bare = heft_run(None, &["refs", &f.rocm]);
    assert!(o.stdout.len() > bare.stdout.len() * 2);
    assert!(o.stdout.contains("symlink @"), "{}", o.stdout);
}

/// Items 9 and 10: Widths and colour.
#[test]
fn widths_and_colour() {
    let f = fixture();
    for args in [
        vec!["refs", f.rocm.as_str()],
        vec!["advise", f.rocm.as_str()],
        vec!["why", f.rocm.as_str(), "rocm-llvm"],
        vec!["size", f.rocm.as_str()],
    ] {
        let o = heft_run_env(&[("COLUMNS", "80")], None, &args);
        for l in o.stdout.lines() {
            assert!(
                l.chars().count() <= 80,
                "{args:?}: {} chars: {l}",
                l.chars().count()
            );
        }
        // Piped without COLUMNS: full lines.
        let full = heft_run_env(&[("COLUMNS", "")], None, &args);
        assert!(!full.stdout.contains('…') || args[0] == "why", "{args:?}");
        let c = heft_run(None, &[&["--color", "always"][..], &args].concat());
        assert!(c.stdout.contains("\u{1b}["), "{args:?}: colour asked for");
        let n = heft_run(None, &[&["--color", "never"][..], &args].concat());
        assert!(!n.stdout.contains('\u{1b}'), "{args:?}");
        assert!(
            !full.stdout.contains('\u{1b}'),
            "{args:?}: piped means no colour"
        );
    }
    // Removed paths listed by name, not by hash.
    let (_, r): (_, AdviceReport) = json(None, &["--json", "advise", &f.rocm]);
    for a in &r.actions {
        let names: Vec<&str> = a
            .cuts
            .iter()
            .map(|p| nix_heft_format::store_path::name_of(p))
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted, "{a:?}");
    }
}

/// Item 11: Finding the right path.
#[test]
fn names_resolve_as_a_user_means_them() {
    let f = fixture();
    let o = heft_run(None, &["--json", "size", "multi"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let r: nix_heft_report::size::SizeReport = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(r.roots, vec![f.small("multi-out").to_string()]);
    // Within the roots' closure first: the store holds several rocblas
    // builds (the example's variants), the root's closure one.
    nix_build(
        &repo().join("examples/rocm-mini/default.nix"),
        &["variants.rocblas-gfx90a"],
    );
    let o = heft_run(
        None,
        &[
            "--json",
            "partition",
            "rocblas",
            "--by",
            "gfx[0-9a-z]+",
            "--root",
            &f.rocm,
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = heft_run(None, &["size", "rocblas"]);
    assert_usage_error(&o, "ambiguous");
    assert!(o.stderr.contains("registered "), "{}", o.stderr);
    assert!(o.stderr.contains(" MiB"), "{}", o.stderr);
    let o = heft_run(None, &["size", "llama-cpp-rcom"]);
    assert_usage_error(&o, "did you mean llama-cpp-rocm?");
}

/// Item 12: Small rough edges.
#[test]
fn small_rough_edges() {
    let f = fixture();
    let rb = rocblas();
    let (_, r): (_, SplitReport) = json(
        None,
        &[
            "--json",
            "split",
            "--move",
            "nonexistent/*=dev",
            "--root",
            &f.rocm,
            &rb,
        ],
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("--move 'nonexistent/*=dev' matched no file")),
        "{:?}",
        r.warnings
    );
    let o = heft_run(
        None,
        &["partition", &rb, "--by", "gfx[0-9a-z]+", "--keep", "gfx90A"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("keeping only gfx90a"), "{}", o.stdout);
    let o = heft_run(
        None,
        &[
            "partition",
            &rb,
            "--by",
            "gfx[0-9a-z]+",
            "--keep",
            "gfx1031",
        ],
    );
    assert_usage_error(&o, "gfx1031");
    assert!(
        o.stderr.contains("gfx1030") && !o.stderr.contains("gfx906"),
        "only near names: {}",
        o.stderr
    );
    let o = heft_run(None, &["partition", &rb, "--by", "gfx[0-9a-z]+"]);
    let first = o.stdout.lines().next().unwrap();
    assert!(!first.contains(" now "), "{first}");
}
