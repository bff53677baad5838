//! Verdicts and what-if (`split`, `partition`, `advise`) checked against
//! real rebuilds: the bundled example's `variants` are the same packages
//! built with `outputs = [...]` and moves, or for one GPU target only.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::*;
use nix_heft_analysis::plan::advise::{ActionKind, Safety};
use nix_heft_report::advise::AdviceReport;
use nix_heft_report::partition::PartitionReport;
use nix_heft_report::refs::RefsReport;
use nix_heft_report::split::SplitReport;
use serde_json::Value;

fn example() -> std::path::PathBuf {
    repo().join("examples/rocm-mini/default.nix")
}

fn closure_path(suffix: &str) -> String {
    nix_path_info(None, &[&fixture().rocm])
        .into_keys()
        .find(|p| p.ends_with(suffix))
        .unwrap_or_else(|| panic!("no {suffix} in the example"))
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

fn pad8(n: u64) -> u64 {
    n.div_ceil(8) * 8
}

/// Closure size of `root` in Nix's own graph with the edges `cut` removed and
/// every reference to `replace.0` sent to `replace.1`.
fn oracle_closure(
    info: &BTreeMap<String, Value>,
    root: &str,
    cut: &[(&str, &str)],
    replace: Option<(&str, &str)>,
) -> u64 {
    let mut seen = BTreeSet::new();
    let mut stack = vec![root.to_string()];
    let mut total = 0;
    while let Some(p) = stack.pop() {
        if !seen.insert(p.clone()) {
            continue;
        }
        total += info[&p]["narSize"].as_u64().unwrap();
        for r in refs_of(&info[&p]) {
            if cut.iter().any(|(a, b)| *a == p && *b == r) {
                continue;
            }
            let r = match replace {
                Some((from, to)) if r == from => to.to_string(),
                _ => r,
            };
            stack.push(r);
        }
    }
    total
}

#[test]
fn split_predictions_match_real_rebuilds() {
    let f = fixture();
    for (suffix, attr, outputs, moves) in [
        (
            "-rocblas-5.7.1",
            "variants.rocblas-split",
            vec!["out", "dev"],
            vec!["include=dev", "lib/pkgconfig=dev", "lib/cmake=dev"],
        ),
        (
            "-hipblas-5.7.1",
            "variants.hipblas-split",
            vec!["out", "dev", "doc"],
            vec!["include=dev", "share/doc=doc"],
        ),
    ] {
        let orig = closure_path(suffix);
        let attrs: Vec<String> = outputs.iter().map(|o| format!("{attr}.{o}")).collect();
        let built = nix_build(
            &example(),
            &attrs.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let rebuilt: BTreeMap<&str, String> = outputs.iter().copied().zip(built).collect();
        let info = nix_path_info(
            None,
            &rebuilt.values().map(String::as_str).collect::<Vec<_>>(),
        );
        // The preset, and the same moves given by hand: either way the
        // rebuilt dev names out (_multioutPropagateDev).
        let mut by_hand: Vec<&str> = vec!["--json", "split", &orig, "--root", &f.rocm];
        for m in &moves {
            by_hand.extend(["--move", m]);
        }
        for args in [
            vec![
                "--json", "split", &orig, "--preset", "nixpkgs", "--root", &f.rocm,
            ],
            by_hand,
        ] {
            let r: SplitReport = json(&args);
            let names: Vec<&str> = r.outputs.iter().map(|o| o.name.as_str()).collect();
            assert_eq!(names, outputs, "{suffix}: predicted outputs");
            for o in &r.outputs {
                let real = &info[&rebuilt[o.name.as_str()]];
                // Same build commands and moves, and store paths of the same
                // length, so sizes agree to the byte: nothing to explain away.
                assert_eq!(
                    o.nar_size,
                    real["narSize"].as_u64().unwrap(),
                    "{suffix} {}: NAR size",
                    o.name
                );
                assert_eq!(
                    o.closure_size,
                    real["closureSize"].as_u64().unwrap(),
                    "{suffix} {}: closure size",
                    o.name
                );
                let predicted: BTreeSet<String> = o
                    .references
                    .iter()
                    .map(|x| match x.strip_prefix("output:") {
                        Some(name) => rebuilt[name].clone(),
                        None if *x == orig => rebuilt["out"].clone(),
                        None => x.clone(),
                    })
                    .collect();
                assert_eq!(predicted, refs_of(real), "{suffix} {}: references", o.name);
            }
            // The root's closure after the split, by Nix's own data: consumers
            // keep only `out`.
            let mut all = nix_path_info(None, &[&f.rocm]);
            all.extend(info.clone());
            let after = oracle_closure(&all, &f.rocm, &[], Some((&orig, &rebuilt["out"])));
            assert_eq!(r.roots.len(), 1);
            assert_eq!(
                r.roots[0].after, after,
                "{suffix}: root closure after the split"
            );
            assert!(r.warnings.is_empty(), "{:?}", r.warnings);
            // The files each output holds are those of the rebuilt output.
            for o in &r.outputs {
                let real = std::path::PathBuf::from(&rebuilt[o.name.as_str()]);
                let mut on_disk: Vec<String> = Vec::new();
                let mut stack = vec![real.clone()];
                while let Some(d) = stack.pop() {
                    for e in std::fs::read_dir(&d).unwrap() {
                        let e = e.unwrap();
                        let p = e.path();
                        if e.file_type().unwrap().is_dir() {
                            stack.push(p);
                        } else {
                            on_disk.push(
                                p.strip_prefix(&real)
                                    .unwrap()
                                    .to_string_lossy()
                                    .into_owned(),
                            );
                        }
                    }
                }
                on_disk.sort();
                let mut predicted = o.files.clone();
                predicted.sort();
                assert_eq!(predicted, on_disk, "{suffix} {}: files", o.name);
            }
            assert!(
                r.consumers
                    .iter()
                    .all(|c| c.keeps == vec!["out".to_string()]),
                "{:?}",
                r.consumers
            );
        }
    }
}

#[test]
fn moving_runtime_files_warns_the_consumer() {
    let f = fixture();
    let rocblas = closure_path("-rocblas-5.7.1");
    let r: SplitReport = json(&[
        "--json",
        "split",
        &rocblas,
        "--move",
        "lib/librocblas.so=lib",
        "--root",
        &f.rocm,
    ]);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("lib/librocblas.so") && w.contains("'lib'")),
        "{:?}",
        r.warnings
    );
    let hip = r
        .consumers
        .iter()
        .find(|c| c.consumer.ends_with("-hipblas-5.7.1"))
        .unwrap();
    assert!(hip.keeps.contains(&"lib".to_string()), "{hip:?}");
}

#[test]
fn partition_keep_matches_a_single_target_build() {
    let f = fixture();
    let rocblas = closure_path("-rocblas-5.7.1");
    for t in ["gfx90a", "gfx1030"] {
        let real = nix_build(&example(), &[&format!("variants.rocblas-{t}")])
            .pop()
            .unwrap();
        let info = nix_path_info(None, &[&real]);
        let r: PartitionReport = json(&[
            "--json",
            "partition",
            &rocblas,
            "--by",
            "gfx[0-9a-z]+",
            "--keep",
            t,
        ]);
        // The one file whose bytes differ: TensileManifest.txt lists the
        // linked kernels, so the single-target build lists fewer (a file
        // the build writes from the farm, not one a partition can size;
        // tests/testsuite/partition.rs has a farm without it, exact to the byte).
        // NAR pads file contents to 8 bytes.
        let manifest = "lib/rocblas/library/TensileManifest.txt";
        let full = std::fs::metadata(format!("{rocblas}/{manifest}"))
            .unwrap()
            .len();
        let one = std::fs::metadata(format!("{real}/{manifest}"))
            .unwrap()
            .len();
        let residual = pad8(full) - pad8(one);
        assert!(residual > 0);
        let real_nar = info[&real]["narSize"].as_u64().unwrap();
        let real_closure = info[&real]["closureSize"].as_u64().unwrap();
        assert_eq!(
            r.nar_size_after_keep.unwrap() - real_nar,
            residual,
            "{t}: NAR size"
        );
        assert_eq!(
            r.closure_after_keep.unwrap() - real_closure,
            residual,
            "{t}: closure size"
        );
        let predicted: BTreeSet<String> = r
            .references_after_keep
            .unwrap()
            .into_iter()
            .map(|x| if x == rocblas { real.clone() } else { x })
            .collect();
        assert_eq!(predicted, refs_of(&info[&real]), "{t}: references");
        // The fallback kernels of the other targets link into the fallback
        // path, which the kept target's own fallback kernel holds: the
        // rebuild links that path whole, and the prediction keeps them.
        assert_eq!(r.kept_anyway.len(), 4, "{t}: {:?}", r.kept_anyway);
        for k in &r.kept_anyway {
            assert!(k.group != t && k.file.contains("_fallback_gfx"), "{k:?}");
            assert!(k.links_into.ends_with("-rocblas-tensile-fallback-5.7.1"));
            assert!(
                std::fs::symlink_metadata(format!("{real}/{}", k.file)).is_ok(),
                "{t}: the rebuild has {}",
                k.file
            );
        }
        // One group per per-target Tensile path rocblas references (Nix's
        // own references, not a count from the example).
        let targets = nix_store_references(&rocblas)
            .iter()
            .filter(|p| p.contains("-rocblas-tensile-gfx"))
            .count();
        assert_eq!(r.groups.len(), targets);
        assert!(
            r.groups.iter().all(|g| g.exclusive_references.len() == 1),
            "{:?}",
            r.groups
        );
    }
    // Unknown group names are an error that lists the groups.
    let o = heft_run(
        None,
        &[
            "partition",
            &rocblas,
            "--by",
            "gfx[0-9a-z]+",
            "--keep",
            "gfx999",
        ],
    );
    assert_usage_error(&o, "gfx90a");
    let _ = f;
}

#[test]
fn verdicts_per_evidence_and_edge() {
    let f = fixture();
    let r: RefsReport = json(&["--json", "refs", "--evidence", &f.rocm]);
    let edge = |a: &str, b: &str| {
        r.edges
            .iter()
            .find(|e| e.referrer.ends_with(a) && e.reference.ends_with(b))
            .unwrap_or_else(|| panic!("{a} -> {b}"))
    };
    use nix_heft_types::evidence::Verdict;
    let farm = edge("-rocblas-5.7.1", "-rocblas-tensile-gfx90a-5.7.1");
    assert_eq!(farm.verdict, Some(Verdict::Runtime));
    let ev = &farm.evidence.as_ref().unwrap()[0];
    assert!(
        ev.used_by.as_deref().unwrap().contains("lib/librocblas.so"),
        "{ev:?}"
    );
    assert!(ev.reason.contains("rocblas/library"), "{ev:?}");
    assert_eq!(
        edge("-rocblas-5.7.1", "-rocm-cmake-5.7.1").verdict,
        Some(Verdict::Build)
    );
    assert_eq!(
        edge("-hipblas-5.7.1", "-rocm-docs-5.7.1").verdict,
        Some(Verdict::Docs)
    );
    assert_eq!(
        edge("-hipblas-5.7.1", "-rocm-smi-5.7.1").verdict,
        Some(Verdict::Dead)
    );
    assert_eq!(
        edge("-llama-cpp-rocm-0.0.0", "-python3-3.11.6").verdict,
        Some(Verdict::Runtime)
    );
    assert_eq!(
        edge("-llama-cpp-rocm-0.0.0", "-glibc-2.36").verdict,
        Some(Verdict::Runtime)
    );
}

#[test]
fn advise_ranks_real_savings_on_the_example() {
    let f = fixture();
    let mut a: AdviceReport = json(&["--json", "advise", &f.rocm]);
    let cache = format!("file://{}", f.cache.display());
    let o = heft_run(Some(&cache), &["--json", "advise", &f.rocm]);
    let mut from_cache: AdviceReport = serde_json::from_str(&o.stdout).unwrap();
    // That cache has no listings: a referrer's tree costs its NAR there,
    // so the paths read differ; the advice does not.
    a.reads.clear();
    from_cache.reads.clear();
    assert_eq!(a, from_cache, "same advice from the binary cache");
    let savings: Vec<u64> = a.actions.iter().filter_map(|x| x.saving).collect();
    assert!(
        savings.windows(2).all(|w| w[0] >= w[1]),
        "ranked: {savings:?}"
    );
    let info = nix_path_info(None, &[&f.rocm]);
    let total = info[&f.rocm]["closureSize"].as_u64().unwrap();
    assert_eq!(a.closure_size, total);
    let kinds: Vec<ActionKind> = a.actions.iter().map(|x| x.kind).collect();
    assert_eq!(
        kinds[0],
        ActionKind::PartitionTargets,
        "the per-target split saves most: {kinds:?}"
    );
    for x in &a.actions {
        let saving = x.saving.unwrap();
        match x.kind {
            ActionKind::DeadRunpath | ActionKind::StripDebug | ActionKind::RemoveReferencesTo => {
                let cut: Vec<(&str, &str)> = x
                    .removes
                    .iter()
                    .map(|r| (x.package.as_str(), r.as_str()))
                    .collect();
                assert_eq!(
                    saving,
                    total - oracle_closure(&info, &f.rocm, &cut, None),
                    "{x:?}"
                );
            }
            ActionKind::SplitOutputs => {
                let r: SplitReport = json(&[
                    "--json", "split", &x.package, "--preset", "nixpkgs", "--root", &f.rocm,
                ]);
                assert_eq!(saving, r.roots[0].before - r.roots[0].after, "{x:?}");
                assert!(
                    x.evidence
                        .iter()
                        .all(|e| !e.starts_with("lib/rocblas/library")),
                    "never moves the farm: {x:?}"
                );
                assert!(
                    r.outputs
                        .iter()
                        .skip(1)
                        .all(|o| o.references.iter().all(|r| !r.contains("tensile"))),
                    "{r:?}"
                );
            }
            ActionKind::PartitionTargets => {
                let kept = x.snippet.split('"').nth(1).unwrap();
                let r: PartitionReport = json(&[
                    "--json",
                    "partition",
                    &x.package,
                    "--by",
                    "gfx[0-9]+[a-z]?",
                    "--keep",
                    kept,
                    "--root",
                    &f.rocm,
                ]);
                assert_eq!(
                    saving,
                    r.closure_before - r.closure_after_keep.unwrap(),
                    "{x:?}"
                );
                assert_eq!(x.safety, Safety::CheckAtRuntime);
            }
            ActionKind::BinOutput => {}
        }
        assert!((x.saving_percent.unwrap() - saving as f64 * 100.0 / total as f64).abs() < 1e-9);
        assert!(!x.snippet.is_empty() && !x.evidence.is_empty(), "{x:?}");
    }
    let dead = a
        .actions
        .iter()
        .find(|x| x.kind == ActionKind::DeadRunpath)
        .expect("dead RUNPATH reported");
    assert!(
        dead.package.ends_with("-hipblas-5.7.1") && dead.removes[0].ends_with("-rocm-smi-5.7.1")
    );
    assert!(dead.saving.unwrap() > 0);
    // The edit keeps hipblas' other entries as the builder finds them and
    // drops only rocm-smi's, by name whatever its hash: no store path is
    // pasted (tests/testsuite/runpath.rs runs it on a rebuilt copy).
    assert!(
        dead.snippet.contains("f=$out/lib/libhipblas.so\n")
            && dead.snippet.contains("patchelf --print-rpath \"$f\"")
            && dead
                .snippet
                .contains("patchelf --set-rpath \"$runpath\" \"$f\"")
            && dead.snippet.contains("'-rocm-smi-5.7.1/lib') ;;")
            && !dead.snippet.contains("/nix/store/"),
        "{}",
        dead.snippet
    );
    let leak = a
        .actions
        .iter()
        .find(|x| x.kind == ActionKind::SplitOutputs && x.package.ends_with("-rocblas-5.7.1"))
        .expect("dev-only leak reported");
    assert!(
        leak.removes
            .iter()
            .any(|r| r.ends_with("-rocm-cmake-5.7.1")),
        "{leak:?}"
    );
    assert_eq!(leak.safety, Safety::Safe);
}

/// A file whose name is not UTF-8 still carries its references into the
/// output that holds it.
#[test]
fn split_keeps_references_of_non_utf8_file_names() {
    let f = fixture();
    let odd = f.small("oddnames");
    let base = f.small("base");
    let left = f.small("left");
    let r: SplitReport = json(&["--json", "split", odd, "--preset", "nixpkgs"]);
    // Nothing references it: it is its own root.
    assert_eq!(r.roots.len(), 1);
    assert_eq!(r.roots[0].root, odd);
    let out = &r.outputs[0];
    assert_eq!(out.references, vec![base.to_string()], "{r:?}");
    let doc = r.outputs.iter().find(|o| o.name == "doc").unwrap();
    assert_eq!(doc.references, vec![left.to_string()]);
    assert!(
        out.files
            .iter()
            .any(|x| x.starts_with("lib/odd") && x.contains('\u{fffd}')),
        "{:?}",
        out.files
    );
    // A dev output propagates out (_multioutPropagateDev), preset or not.
    let r: SplitReport = json(&["--json", "split", odd, "--move", "lib=dev"]);
    let dev = r.outputs.iter().find(|o| o.name == "dev").unwrap();
    assert_eq!(
        dev.references,
        vec![base.to_string(), "output:out".to_string()]
    );
    let r: SplitReport = json(&[
        "--json",
        "split",
        odd,
        "--move",
        "lib=dev",
        "--no-propagate-dev",
    ]);
    let dev = r.outputs.iter().find(|o| o.name == "dev").unwrap();
    assert_eq!(dev.references, vec![base.to_string()]);
}

/// `why` terminates and counts simple chains on a cyclic graph (possible in
/// a hand-edited path-info JSON file, never in a Nix store).
#[test]
fn why_survives_a_reference_cycle() {
    let dir = scratch("cycle");
    let h = |c: char| {
        format!(
            "/nix/store/{}-{c}",
            c.to_string().repeat(32).replace(['e', 'o', 't', 'u'], "0")
        )
    };
    let (a, b, c, d) = (h('a'), h('b'), h('c'), h('d'));
    let entry =
        |p: &str, refs: &[&str]| serde_json::json!({"path": p, "narSize": 100, "references": refs});
    let v = serde_json::json!([
        entry(&a, &[&b]),
        entry(&b, &[&c]),
        entry(&c, &[&b, &d]),
        entry(&d, &[])
    ]);
    let file = dir.join("cyc.json");
    std::fs::write(&file, v.to_string()).unwrap();
    let store = file.display().to_string();
    let o = heft_run(Some(&store), &["--json", "why", "--all", &a, &d]);
    // A path-info file has no file contents: a partial answer.
    assert_eq!(o.code, 3, "{}", o.stderr);
    let w: nix_heft_report::why::WhyReport = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(w.chain_count, 1);
    assert_eq!(
        w.chains,
        vec![vec![a.clone(), b.clone(), c.clone(), d.clone()]]
    );
}

/// An action the what-if engine cannot simulate is still advised, and
/// labelled as not simulated.
#[test]
fn unsimulated_bin_output_is_labelled() {
    let f = fixture();
    let a: AdviceReport = json(&["--json", "advise", f.small("binconsumer")]);
    let bin = a
        .actions
        .iter()
        .find(|x| x.kind == ActionKind::BinOutput)
        .unwrap_or_else(|| panic!("{a:?}"));
    assert!(bin.package.ends_with("-libwithbin-1.0"), "{bin:?}");
    assert!(bin.removes[0].ends_with("-heavytool-1.0"));
    assert!(!bin.simulated && bin.saving.is_none() && bin.saving_percent.is_none());
    assert_eq!(bin.evidence, vec!["bin/tool".to_string()]);
    assert!(bin.snippet.contains("not simulated"));
    assert_eq!(
        a.actions.last().unwrap().kind,
        ActionKind::BinOutput,
        "unsimulated actions rank last"
    );
}

/// Two different paths with one name appear in advice with their hash
/// part, so a reader knows which is meant; every other name is the full
/// name with version.
#[test]
fn advice_names_are_unambiguous() {
    let f = fixture();
    let twins = f.small("twins");
    let o = heft_run(None, &["advise", twins]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let refs: Vec<String> = nix_store_references(twins)
        .into_iter()
        .filter(|r| r != twins)
        .collect();
    assert_eq!(refs.len(), 2);
    for r in &refs {
        let base = r.rsplit('/').next().unwrap();
        let shown = format!("twin-1.0 ({})", &base[..8]);
        assert!(o.stdout.contains(&shown), "{shown} not in:\n{}", o.stdout);
    }
    assert!(o.stdout.contains("in twins-1.0"), "{}", o.stdout);
}

/// A consumer's target inside the split path comes from the bytes after
/// the hash, not from a 40-byte excerpt: a file deep below a long name
/// still decides which output the consumer keeps.
#[test]
fn split_finds_a_consumer_target_past_the_excerpt() {
    let f = fixture();
    let user = f.small("longuser");
    let dep = nix_store_references(user)
        .into_iter()
        .find(|p| p.ends_with("-long-named-dependency-package-1.0"))
        .unwrap();
    let r: SplitReport = json(&[
        "--json",
        "split",
        &dep,
        "--move",
        "share/long-directory-name-for-testing/data=data",
        "--root",
        user,
    ]);
    let c = r.consumers.iter().find(|c| c.consumer == user).unwrap();
    assert_eq!(c.keeps, vec!["data".to_string()], "{r:?}");
    assert!(!r.warnings.is_empty(), "a run-time file moved: {r:?}");
}

/// `advise --targets` on the bundled example's cache.
fn advise_example_targets(targets: &str) -> Outcome {
    let cache = example_cache();
    heft_run(
        Some(cache.to_str().unwrap()),
        &["--json", "advise", &example_root(), "--targets", targets],
    )
}

#[test]
fn targets_ignore_case_and_a_miss_lists_the_targets_found() {
    let lower = advise_example_targets("gfx90a");
    let upper = advise_example_targets("GFX90A");
    assert_eq!(lower.code, 0, "{}", lower.stderr);
    assert_eq!(upper.code, 0, "{}", upper.stderr);
    // The same advice to the byte: the snippet names the target as the
    // files do.
    assert_eq!(upper.stdout, lower.stdout);
    assert!(
        upper.stdout.contains(r#"gpuTargets = [ \"gfx90a\" ]"#),
        "{}",
        upper.stdout
    );
    let miss = advise_example_targets("gfx9000");
    assert_usage_error(
        &miss,
        "--targets gfx9000: no per-target package in the closure has that target \
         (targets found: gfx1030, gfx1100, gfx900, gfx906, gfx90a in rocblas-5.7.1)",
    );
}
