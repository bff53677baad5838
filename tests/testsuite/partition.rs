//! `partition --keep` and advise's per-target action against a real
//! one-target rebuild, to the byte (issue 21, defect 4), on
//! tests/fixtures/partition.nix: a Tensile farm whose `*_fallback_gfxNNN`
//! links point into a fallbacks path the kept target needs too. The
//! rebuild is the same derivation with a shorter target list, built by
//! real Nix; its `nix path-info` is the oracle.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use crate::common::*;
use nix_heft_analysis::plan::advise::ActionKind;
use nix_heft_report::advise::AdviceReport;
use nix_heft_report::partition::PartitionReport;
use regex::Regex;
use serde_json::Value;

const BY: &str = "gfx[0-9a-z]+";
const LIBRARY: &str = "lib/rocblas/library";

/// (rocblas for every target, the same rocblas for gfx90a alone).
fn built() -> &'static (String, String) {
    static B: OnceLock<(String, String)> = OnceLock::new();
    B.get_or_init(|| {
        let mut p = nix_build(
            &repo().join("tests/fixtures/partition.nix"),
            &["rocblas", "rocblas-gfx90a"],
        );
        let one = p.pop().unwrap();
        let all = p.pop().unwrap();
        (all, one)
    })
}

fn json<T: serde::de::DeserializeOwned>(args: &[&str]) -> T {
    let o = heft_run(None, args);
    assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout))
}

fn refs_of(v: &Value) -> BTreeSet<String> {
    v["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect()
}

/// The links of `path`'s farm: name → target.
fn farm(path: &str) -> BTreeMap<String, String> {
    std::fs::read_dir(format!("{path}/{LIBRARY}"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let target = std::fs::read_link(e.path()).unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                target.to_string_lossy().into_owned(),
            )
        })
        .collect()
}

/// The store path a link target points into.
fn store_path_of(target: &str) -> String {
    target.splitn(5, '/').take(4).collect::<Vec<_>>().join("/")
}

#[test]
fn keep_predicts_the_one_target_rebuild_to_the_byte() {
    let (all, one) = built();
    let r: PartitionReport = json(&["--json", "partition", all, "--by", BY, "--keep", "gfx90a"]);
    let info = nix_path_info(None, &[one]);
    // NAR size and closure size as Nix registered the rebuild.
    assert_eq!(
        r.nar_size_after_keep,
        info[one]["narSize"].as_u64(),
        "NAR size"
    );
    assert_eq!(
        r.closure_after_keep,
        info[one]["closureSize"].as_u64(),
        "closure size"
    );
    // The closure summed from `nix path-info -r` too (not only Nix's -S).
    let summed: u64 = info.values().map(|v| v["narSize"].as_u64().unwrap()).sum();
    assert_eq!(r.closure_after_keep, Some(summed));
    // References, the partitioned path standing for the rebuild.
    let predicted: BTreeSet<String> = r
        .references_after_keep
        .clone()
        .unwrap()
        .into_iter()
        .map(|x| if &x == all { one.clone() } else { x })
        .collect();
    assert_eq!(predicted, refs_of(&info[one]), "references");
    assert!(
        predicted
            .iter()
            .any(|p| p.ends_with("-rocblas-tensile-fallbacks-6.0.2")),
        "{predicted:?}"
    );
    // And before: Nix's closure of the full build.
    let before = nix_path_info(None, &[all]);
    assert_eq!(Some(r.closure_before), before[all]["closureSize"].as_u64());
}

#[test]
fn the_links_kept_are_those_the_rebuild_keeps_and_say_why() {
    let (all, one) = built();
    let r: PartitionReport = json(&["--json", "partition", all, "--by", BY, "--keep", "gfx90a"]);
    // Every link of the rebuild's farm whose name names another target:
    // what the prediction must have kept although it matched.
    let re = Regex::new(BY).unwrap();
    let rebuilt = farm(one);
    let expected: BTreeSet<String> = rebuilt
        .keys()
        .filter(|n| re.find(n).is_some_and(|m| m.as_str() != "gfx90a"))
        .map(|n| format!("{LIBRARY}/{n}"))
        .collect();
    assert_eq!(expected.len(), 2, "{rebuilt:?}");
    let kept: BTreeSet<String> = r.kept_anyway.iter().map(|k| k.file.clone()).collect();
    assert_eq!(kept, expected);
    let fallbacks = store_path_of(
        &rebuilt["TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx900.hsaco"],
    );
    assert!(fallbacks.ends_with("-rocblas-tensile-fallbacks-6.0.2"));
    let kernel = format!(
        "{LIBRARY}/TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback_gfx90a.hsaco"
    );
    for k in &r.kept_anyway {
        assert_eq!(k.links_into, fallbacks, "{k:?}");
        assert!(k.file.contains(&k.group), "{k:?}");
        // Why it stays: the kept target's own fallback kernel holds the
        // path, named first.
        assert_eq!(k.needed_by[0].file, kernel, "{k:?}");
        assert_eq!(k.needed_by[0].group.as_deref(), Some("gfx90a"));
        assert_eq!(k.needed_by_count, 3, "{k:?}");
        assert!(
            k.reason.starts_with(&format!(
                "links into rocblas-tensile-fallbacks-6.0.2, which stays: needed by {kernel} (gfx90a)"
            )),
            "{}",
            k.reason
        );
    }
    // A regular file named for a dropped target is dropped: a build for
    // gfx90a never writes it.
    assert!(std::path::Path::new(&format!("{all}/share/rocblas/arch-gfx900.txt")).exists());
    assert!(!std::path::Path::new(&format!("{one}/share/rocblas/arch-gfx900.txt")).exists());
    assert!(!kept.iter().any(|f| f.starts_with("share/")));
    // Each group alone: one link stays (its fallback kernel), the rest go.
    for g in &r.groups {
        assert_eq!((g.files, g.kept_anyway), (4, 1), "{g:?}");
    }

    // The text says the same.
    // Wide enough that no line wraps.
    let o = heft_run_env(
        &[("COLUMNS", "1000")],
        None,
        &["partition", all, "--by", BY, "--keep", "gfx90a"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains(
            "kept although they match the pattern: 2 links into \
             rocblas-tensile-fallbacks-6.0.2, which stays: the files that stay need it"
        ),
        "{}",
        o.stdout
    );
    let row = |words: &[&str]| {
        o.stdout
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == words)
    };
    assert!(row(&["gfx90a", "needs", "it", &kernel]), "{}", o.stdout);
    for k in &r.kept_anyway {
        assert!(row(&[&k.group, "kept", &k.file]), "{}", o.stdout);
    }
    for f in &expected {
        assert!(o.stdout.contains(f.as_str()), "{f}: {}", o.stdout);
    }
    assert!(o.stdout.contains("KEPT"), "{}", o.stdout);
}

#[test]
fn advise_targets_saves_what_the_rebuild_saves_and_names_the_links_that_stay() {
    let (all, one) = built();
    let a: AdviceReport = json(&["--json", "advise", all, "--targets", "gfx90a"]);
    let x = a
        .actions
        .iter()
        .find(|x| x.kind == ActionKind::PartitionTargets)
        .unwrap_or_else(|| panic!("{:?}", a.actions));
    let closure = |p: &str| {
        nix_path_info(None, &[p])[p]["closureSize"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(x.saving, Some(closure(all) - closure(one)), "{x:?}");
    assert_eq!(x.keeps, vec!["gfx90a".to_string()]);
    assert!(
        x.reason.contains(
            "; 2 links of other targets stay (gfx1030, gfx900): they point into \
             rocblas-tensile-fallbacks-6.0.2, which stays: needed by 1 file of gfx90a \
             and 2 files in no group"
        ),
        "{}",
        x.reason
    );
    // What it cuts is what the rebuild no longer references.
    let cut: BTreeSet<String> = x.cuts.iter().cloned().collect();
    let gone: BTreeSet<String> = nix_store_references(all)
        .difference(&nix_store_references(one))
        .cloned()
        .collect();
    assert_eq!(cut, gone);
    assert!(gone.iter().all(|p| p.contains("-rocblas-tensile-gfx")));
}
