//! `nix-heft refs` and `why`: evidence for every reference, compared with
//! Nix's registered references and `nix why-depends --precise --all`.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::*;
use nix_heft_report::refs::RefsReport;
use nix_heft_report::why::WhyReport;
use nix_heft_types::evidence::Kind;

fn refs_json(store: Option<&str>, roots: &[&str]) -> (i32, RefsReport, String) {
    let mut args = vec!["--json", "refs", "--evidence"];
    args.extend_from_slice(roots);
    let o = heft_run(store, &args);
    assert!(o.code == 0 || o.code == 3, "refs failed: {}", o.stderr);
    (
        o.code,
        serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout)),
        o.stderr,
    )
}

fn edge<'a>(r: &'a RefsReport, from: &str, to: &str) -> &'a nix_heft_analysis::explain::EdgeSummary {
    r.edges
        .iter()
        .find(|e| e.referrer.ends_with(from) && e.reference.ends_with(to))
        .unwrap_or_else(|| panic!("no edge {from} -> {to}"))
}

/// The set of (referrer, reference) pairs with evidence equals Nix's
/// registered references, on the local store, a chroot store and a cache.
#[test]
fn evidence_covers_exactly_the_registered_references() {
    let f = fixture();
    let roots: Vec<&str> = vec![
        f.rocm.as_str(),
        f.small("top"),
        f.small("second"),
        f.small("loopy"),
    ];
    let mut registered = BTreeSet::new();
    for p in nix_path_info(None, &roots).keys() {
        for r in nix_store_references(p) {
            registered.insert((p.clone(), r));
        }
    }
    let chroot = f.chroot.display().to_string();
    let cache = format!("file://{}", f.cache.display());
    for store in [None, Some(chroot.as_str()), Some(cache.as_str())] {
        let (code, r, err) = refs_json(store, &roots);
        assert_eq!(code, 0, "{store:?}: {err}");
        let found: BTreeSet<(String, String)> = r
            .edges
            .iter()
            .filter(|e| !e.kinds.is_empty())
            .map(|e| (e.referrer.clone(), e.reference.clone()))
            .collect();
        assert_eq!(found, registered, "{store:?}");
        assert!(r.edges.iter().all(|e| !e.unavailable));
    }
}

#[test]
fn local_store_and_binary_cache_give_the_same_answers() {
    let f = fixture();
    let cache = format!("file://{}", f.cache.display());
    let (_, local, _) = refs_json(None, &[&f.rocm, f.small("loopy")]);
    let (_, cached, _) = refs_json(Some(&cache), &[&f.rocm, f.small("loopy")]);
    assert_eq!(local, cached);
}

/// Every file `nix why-depends --precise --all A B` names for a direct edge
/// is among the files nix-heft reports for that edge.
#[test]
fn files_named_by_nix_why_depends_are_reported() {
    let f = fixture();
    let (_, r, _) = refs_json(None, &[&f.rocm, f.small("top"), f.small("loopy")]);
    let ansi = |s: &str| -> String {
        let mut out = String::new();
        let mut it = s.chars().peekable();
        while let Some(c) = it.next() {
            if c == '\u{1b}' {
                for d in it.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    };
    let mut checked = 0;
    for e in r.edges.iter().filter(|e| e.referrer != e.reference) {
        let out = run(nix()
            .args(["why-depends", "--precise", "--all"])
            .arg(&e.referrer)
            .arg(&e.reference));
        let lines: Vec<String> = out.lines().map(ansi).collect();
        // Depth-1 entries: "├───FILE: context" then "│   → PATH" (or "    → PATH").
        let mut nix_files = BTreeSet::new();
        let hash = &e.reference["/nix/store/".len().."/nix/store/".len() + 32];
        for (i, first) in lines.iter().enumerate() {
            let Some(rest) = first
                .strip_prefix("├───")
                .or_else(|| first.strip_prefix("└───"))
            else {
                continue;
            };
            // "FILE: …context…" or, for a symlink, "FILE -> TARGET"; the
            // arrow line after it may be omitted when the reference is the
            // target itself, so go by the hash in the excerpt.
            let next = lines
                .get(i + 1)
                .map(|l| l.trim_start_matches(['│', ' ']))
                .unwrap_or("");
            if rest.contains(hash)
                || next.strip_prefix("→ ").map(str::trim) == Some(e.reference.as_str())
            {
                let file = rest.split(": ").next().unwrap();
                nix_files.insert(file.split(" -> ").next().unwrap().to_string());
            }
        }
        // Nix names no file for a hash found in a file name; it prints the
        // edge alone, which nix-heft reports as `file-name`.
        if nix_files.is_empty() {
            assert!(
                e.kinds.contains_key(&Kind::FileName),
                "could not read nix why-depends for {} -> {}:\n{out}",
                e.referrer,
                e.reference
            );
            continue;
        }
        for nf in &nix_files {
            // Nix names a symlink or file by its path; a hit in the path
            // itself (a file name) is reported by its name.
            assert!(
                e.files.contains(nf),
                "{} -> {}: nix names {nf}, we have {:?}",
                e.referrer,
                e.reference,
                e.files
            );
        }
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} edges checked");
}

#[test]
fn kinds_of_hold_in_the_example() {
    let f = fixture();
    let (_, r, _) = refs_json(None, &[&f.rocm, f.small("loopy")]);
    let kinds =
        |from: &str, to: &str| -> BTreeMap<Kind, usize> { edge(&r, from, to).kinds.clone() };
    // The symlink farm into every Tensile target.
    let k = kinds("-rocblas-5.7.1", "-rocblas-tensile-gfx90a-5.7.1");
    assert_eq!(k.keys().collect::<Vec<_>>(), vec![&Kind::Symlink]);
    assert!(
        edge(&r, "-rocblas-5.7.1", "-rocblas-tensile-gfx90a-5.7.1")
            .files
            .iter()
            .all(|f| f.starts_with("lib/rocblas/library/"))
    );
    // ELF interpreter and RUNPATH.
    let k = kinds("-llama-cpp-rocm-0.0.0", "-glibc-2.36");
    assert!(
        k.contains_key(&Kind::ElfInterpreter) && k.contains_key(&Kind::ElfRunpath),
        "{k:?}"
    );
    // Shebang.
    assert_eq!(
        kinds("-llama-cpp-rocm-0.0.0", "-python3-3.11.6")
            .keys()
            .collect::<Vec<_>>(),
        vec![&Kind::Shebang]
    );
    // Dev-only leak: cmake and pkg-config text files, with line numbers.
    let e = edge(&r, "-rocblas-5.7.1", "-rocm-cmake-5.7.1");
    assert!(e.kinds.contains_key(&Kind::Text));
    assert!(
        e.evidence
            .as_ref()
            .unwrap()
            .iter()
            .all(|ev| ev.line.is_some())
    );
    // Documentation-only reference.
    assert_eq!(
        edge(&r, "-hipblas-5.7.1", "-rocm-docs-5.7.1").files,
        vec!["share/doc/hipblas/README"]
    );
    // The dead RUNPATH entry, and a live one that says what it serves.
    let dead = edge(&r, "-hipblas-5.7.1", "-rocm-smi-5.7.1");
    assert!(
        dead.dead && dead.kinds.contains_key(&Kind::ElfRunpath),
        "{dead:?}"
    );
    let live = edge(&r, "-hipblas-5.7.1", "-rocblas-5.7.1");
    assert!(!live.dead);
    assert!(
        live.evidence
            .as_ref()
            .unwrap()
            .iter()
            .any(|ev| ev.serves == vec!["librocblas.so".to_string()]),
        "{live:?}"
    );
    // nix-support, file name, and a symlink loop scanned without hanging.
    assert_eq!(
        kinds("-loopy-1.0", "-left-2.1").keys().collect::<Vec<_>>(),
        vec![&Kind::NixSupport]
    );
    assert!(kinds("-loopy-1.0", "-base-lib-1.0").contains_key(&Kind::FileName));
}

#[test]
fn why_gives_chains_and_evidence() {
    let f = fixture();
    let o = heft_run(None, &["--json", "why", &f.rocm, "glibc"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let w: WhyReport = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(w.chains.len(), 1);
    assert_eq!(
        w.chains[0].len(),
        2,
        "direct reference is the shortest chain"
    );
    // Count every chain independently from Nix's reference data.
    let info = nix_path_info(None, &[&f.rocm]);
    fn count(info: &BTreeMap<String, serde_json::Value>, p: &str, dep: &str) -> u128 {
        if p.ends_with(dep) {
            return 1;
        }
        info[p]["references"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .filter(|r| *r != p)
            .map(|r| count(info, r, dep))
            .sum()
    }
    assert_eq!(w.chain_count, count(&info, &f.rocm, "-glibc-2.36"));
    assert!(w.chain_count > 5);
    let all = heft_run(None, &["--json", "why", "--all", &f.rocm, "glibc"]);
    let wa: WhyReport = serde_json::from_str(&all.stdout).unwrap();
    assert_eq!(wa.chains.len() as u128, wa.chain_count);
    assert!(
        wa.edges.iter().all(|e| !e.evidence.is_empty()),
        "every edge on every chain has evidence"
    );
    // A glob naming several dependencies, and the tree output.
    let o = heft_run(None, &["why", &f.rocm, "rocblas-tensile-gfx9*"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout
            .contains("llama-cpp-rocm-0.0.0 → rocblas-5.7.1 → rocblas-tensile-gfx9"),
        "{}",
        o.stdout
    );
    // Many symlinks of one edge are grouped; --evidence lists each.
    assert!(
        o.stdout.contains("symlink holds in lib/rocblas/library/"),
        "{}",
        o.stdout
    );
    assert!(!o.stdout.contains("symlink @"), "{}", o.stdout);
    let o = heft_run(
        None,
        &["why", "--evidence", &f.rocm, "rocblas-tensile-gfx9*"],
    );
    assert!(o.stdout.contains("symlink @"), "{}", o.stdout);
    let o = heft_run(None, &["why", f.small("top"), "rocm-llvm"]);
    assert_usage_error(&o, "no valid path in the closure of");
}

/// A glob matching a package and the paths it pulls in (`rocblas*`:
/// rocblas and its six Tensile targets, which only rocblas references)
/// explains every match: the ones some chain reaches directly by their
/// chain, each of the others in one line naming the match it is reached
/// only through. The JSON has a best chain for every match, checked edge
/// by edge against Nix's references, and marks which are reached only
/// through another (worked out here from `nix path-info`, independently).
#[test]
fn why_explains_every_match_of_a_glob() {
    let f = fixture();
    let info = nix_path_info(None, &[&f.rocm]);
    let name = |p: &str| p["/nix/store/".len() + 33..].to_string();
    let deps: BTreeSet<&str> = info
        .keys()
        .map(String::as_str)
        .filter(|p| name(p).starts_with("rocblas"))
        .collect();
    assert!(deps.len() >= 3, "{deps:?}");
    let refs = |p: &str| -> Vec<String> {
        info[p]["references"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .filter(|r| r != p)
            .collect()
    };
    // Reached from the root without passing through another match.
    let mut direct = BTreeSet::new();
    let mut seen = BTreeSet::from([f.rocm.clone()]);
    let mut stack = vec![f.rocm.clone()];
    while let Some(p) = stack.pop() {
        for r in refs(&p) {
            if deps.contains(r.as_str()) {
                direct.insert(r);
            } else if seen.insert(r.clone()) {
                stack.push(r);
            }
        }
    }
    assert!(
        !direct.is_empty() && direct.len() < deps.len(),
        "the fixture has matches reached only through others: {direct:?} of {deps:?}"
    );

    let o = heft_run(None, &["--json", "why", &f.rocm, "rocblas*"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let w: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let best = w["best"].as_array().unwrap();
    let explained: BTreeSet<&str> = best.iter().map(|b| b["dep"].as_str().unwrap()).collect();
    assert_eq!(
        explained, deps,
        "every match has a best chain: {}",
        o.stdout
    );
    for b in best {
        let dep = b["dep"].as_str().unwrap();
        let chain: Vec<&str> = b["chain"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(chain.first(), Some(&f.rocm.as_str()), "{b}");
        assert_eq!(chain.last(), Some(&dep), "{b}");
        for e in chain.windows(2) {
            assert!(
                refs(e[0]).iter().any(|r| r == e[1]),
                "{e:?} is no reference"
            );
        }
        if direct.contains(dep) {
            assert!(b.get("through").is_none(), "{b}");
        } else {
            let via = b["through"].as_str().unwrap_or_else(|| panic!("{b}"));
            assert!(deps.contains(via) && chain.contains(&via), "{b}");
        }
    }
    // Text: a chain for each direct match, one line for each other.
    let o = heft_run(None, &["why", &f.rocm, "rocblas*"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    for d in &deps {
        let line = format!("{}: reached only through ", name(d));
        if direct.contains(*d) {
            assert!(
                o.stdout.contains(&format!("→ {}\n", name(d))),
                "{}",
                o.stdout
            );
        } else {
            let at = o
                .stdout
                .find(&line)
                .unwrap_or_else(|| panic!("{line}\n{}", o.stdout));
            assert!(
                o.stdout[at..].lines().next().unwrap().ends_with("(above)"),
                "{}",
                o.stdout
            );
        }
    }
}

#[test]
fn json_source_marks_evidence_unavailable() {
    let f = fixture();
    let (code, r, stderr) = refs_json(Some(&f.json_array.display().to_string()), &[&f.rocm]);
    // Edges without evidence are a partial answer, and say so.
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("has no file contents"), "{stderr}");
    assert!(!r.edges.is_empty());
    assert!(r.edges.iter().all(|e| e.unavailable && e.kinds.is_empty()));
}

/// Bad input inside the scan: each gives a message for its item, the rest
/// completes, and the exit code (3) says the result is partial.
#[test]
fn bad_items_make_a_partial_result() {
    let f = fixture();
    let dir = scratch("bad-scan");
    // A cache with a truncated NAR and one with an unknown compression.
    let cache = dir.join("cache");
    copy_tree(&f.cache, &cache);
    let info = nix_path_info(None, &[&f.rocm]);
    let hipblas = info.keys().find(|p| p.ends_with("-hipblas-5.7.1")).unwrap();
    let clr = info.keys().find(|p| p.ends_with("-clr-5.7.1")).unwrap();
    let narinfo = |p: &str| cache.join(format!("{}.narinfo", &p[11..43]));
    let text = std::fs::read_to_string(narinfo(hipblas)).unwrap();
    let url = text.lines().find_map(|l| l.strip_prefix("URL: ")).unwrap();
    let nar = cache.join(url);
    let bytes = std::fs::read(&nar).unwrap();
    std::fs::write(&nar, &bytes[..bytes.len() / 2]).unwrap();
    let t = std::fs::read_to_string(narinfo(clr))
        .unwrap()
        .replace("Compression: xz", "Compression: lz5");
    std::fs::write(narinfo(clr), t).unwrap();
    let o = heft_run(
        Some(&format!("file://{}", cache.display())),
        &["--json", "refs", &f.rocm],
    );
    assert_eq!(o.code, 3, "{}", o.stderr);
    let r: RefsReport = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
    assert!(
        r.problems.iter().any(|p| p.path == *hipblas),
        "{:?}",
        r.problems
    );
    assert!(
        r.problems
            .iter()
            .any(|p| p.path == *clr && p.message.contains("lz5")),
        "{:?}",
        r.problems
    );
    assert!(o.stderr.contains("hipblas-5.7.1"), "{}", o.stderr);
    // Everything else still explained.
    assert!(
        !edge(&r, "-rocblas-5.7.1", "-rocblas-tensile-gfx90a-5.7.1")
            .kinds
            .is_empty()
    );

    // A chroot store with a vanished path, an unreadable file (a socket),
    // and a malformed ELF.
    let root = dir.join("store");
    copy_tree(&f.chroot, &root);
    let real = |p: &str| root.join(p.trim_start_matches('/'));
    let rocm_llvm = info
        .keys()
        .find(|p| p.ends_with("-rocm-llvm-5.7.1"))
        .unwrap();
    run(std::process::Command::new("chmod")
        .args(["-R", "u+w"])
        .arg(&root));
    std::fs::remove_dir_all(real(rocm_llvm)).unwrap();
    let python = info
        .keys()
        .find(|p| p.ends_with("-python3-3.11.6"))
        .unwrap();
    let sock = real(&f.rocm).join("bin/llama-convert");
    std::fs::remove_file(&sock).unwrap();
    // Socket paths are limited to ~108 bytes: bind short, then move it.
    let short = std::env::temp_dir().join(format!("nh-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&short);
    let _listener = std::os::unix::net::UnixListener::bind(&short).unwrap();
    std::fs::rename(&short, &sock).unwrap();
    let lib = real(hipblas).join("lib/libhipblas.so");
    let mut elf = std::fs::read(&lib).unwrap();
    // Point e_shoff (64-bit header, bytes 0x28..0x30) past the end of the
    // file; patchelf keeps the RUNPATH string itself intact.
    elf[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes()[..]);
    std::fs::write(&lib, &elf).unwrap();
    let o = heft_run(
        Some(&root.display().to_string()),
        &["--json", "refs", "--evidence", &f.rocm],
    );
    assert_eq!(o.code, 3, "{}", o.stderr);
    let r: RefsReport = serde_json::from_str(&o.stdout).unwrap();
    assert!(
        r.problems.iter().any(|p| p.path == *rocm_llvm),
        "{:?}",
        r.problems
    );
    assert!(
        r.problems
            .iter()
            .any(|p| p.file.as_deref() == Some("bin/llama-convert")),
        "{:?}",
        r.problems
    );
    assert!(
        edge(&r, "-llama-cpp-rocm-0.0.0", "-python3-3.11.6")
            .kinds
            .is_empty()
    );
    let _ = python;
    let e = edge(&r, "-hipblas-5.7.1", "-rocblas-5.7.1");
    let ev = &e
        .evidence
        .as_ref()
        .unwrap()
        .first()
        .unwrap_or_else(|| panic!("{e:?} {:?}", r.problems));
    assert_eq!(ev.kind, Kind::Binary, "{ev:?}");
    assert!(
        ev.note.as_deref().unwrap_or("").contains("malformed ELF"),
        "{ev:?}"
    );
    assert!(
        !edge(&r, "-rocblas-5.7.1", "-rocblas-tensile-gfx90a-5.7.1")
            .kinds
            .is_empty()
    );
}
