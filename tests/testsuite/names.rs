//! Names and width of every text output (issue 22), on
//! tests/fixtures/names.nix built with real Nix: two builds of one
//! ROCm-shaped stack under the same names (`llama-cpp-rocm-1710`,
//! `hipblas-5.7.1`, `rocblas-5.7.1`), and a farm of 612 symlinks in one
//! directory. Every name shown twice carries its hash, in every command's
//! text and format; every line fits `COLUMNS`; piped output keeps full
//! lines; snapshots at 80 and 200 columns and piped.

use std::collections::BTreeMap;

use crate::common::*;

struct Names {
    fat: String,
    lean: String,
    both: String,
}

fn fixture() -> &'static Names {
    static F: std::sync::OnceLock<Names> = std::sync::OnceLock::new();
    F.get_or_init(|| {
        let p = nix_build(
            &repo().join("tests/fixtures/names.nix"),
            &["fat", "lean", "both"],
        );
        Names {
            fat: p[0].clone(),
            lean: p[1].clone(),
            both: p[2].clone(),
        }
    })
}

/// Runs nix-heft with `COLUMNS` set, or piped without it.
fn run(columns: Option<usize>, args: &[&str]) -> Outcome {
    let mut c = heft();
    c.env_remove("COLUMNS").env("NO_COLOR", "1");
    if let Some(w) = columns {
        c.env("COLUMNS", w.to_string());
    }
    c.args(args);
    let out = c.output().unwrap();
    let o = Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(!o.stderr.contains("panicked"), "{args:?}: {}", o.stderr);
    assert!(
        [0, 3, 4].contains(&o.code),
        "{args:?}: exit {}: {}",
        o.code,
        o.stderr
    );
    o
}

/// The closure's paths, name → the store paths of that name.
fn by_name(roots: &[&str]) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in nix_closure_paths(None, roots) {
        m.entry(nix_heft_format::store_path::name_of(&p).to_string())
            .or_default()
            .push(p);
    }
    m
}

/// Where `text` shows a name of two paths with a hash anywhere (outside
/// whole store paths), every occurrence of that name has the hash of one
/// of its paths, and each path's own hash is shown. (A name shown bare
/// everywhere stands for the one path of that name the text shows.)
/// Returns how many names were told apart.
fn assert_told_apart(what: &str, text: &str, names: &BTreeMap<String, Vec<String>>) -> usize {
    let whole = regex::Regex::new(r"/nix/store/[0-9a-z]{32}-[^\s:,()→]+").unwrap();
    let text = whole.replace_all(text, "<PATH>");
    let mut shown = 0;
    for (name, paths) in names.iter().filter(|(_, p)| p.len() > 1) {
        let hashes: Vec<&str> = paths.iter().map(|p| &p[11..19]).collect();
        let mut seen = 0;
        let hashed = hashes
            .iter()
            .any(|h| text.contains(&format!("{name} ({h})")));
        if !hashed {
            continue;
        }
        for (at, _) in text.match_indices(name.as_str()) {
            let before = text[..at].chars().last();
            let after = &text[at + name.len()..];
            // Another name that merely contains this one.
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
                || after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
            {
                continue;
            }
            let told = hashes.iter().any(|h| after.starts_with(&format!(" ({h})")));
            assert!(
                told,
                "{what}: {name} without its hash at byte {at}:\n{text}"
            );
            seen += 1;
        }
        if seen > 0 {
            shown += 1;
            for h in &hashes {
                assert!(
                    text.contains(&format!("{name} ({h})")),
                    "{what}: {name} ({h}) not shown though its namesake is\n{text}"
                );
            }
        }
    }
    shown
}

/// Every command, as the tests run it, with the names it must tell apart.
fn commands(f: &Names) -> Vec<(&'static str, Vec<String>)> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let rocblas_fat = by_name(&[&f.fat])["rocblas-5.7.1"][0].clone();
    vec![
        ("size", s(&["size", &f.both])),
        ("size_top", s(&["size", "--top", "5", &f.fat, &f.lean])),
        ("refs", s(&["refs", &f.fat, &f.lean])),
        ("why", s(&["why", &f.both, "rocblas-tensile-gfx94*"])),
        (
            "why_all",
            s(&["why", "--all", &f.both, "rocblas-tensile-gfx94*"]),
        ),
        (
            "split",
            s(&[
                "split", "--preset", "nixpkgs", "--root", &f.fat, "--root", &f.lean, "clr",
            ]),
        ),
        (
            "partition",
            s(&[
                "partition",
                &rocblas_fat,
                "--by",
                "gfx[0-9a-z]+",
                "--keep",
                "gfx942",
                "--root",
                &f.fat,
                "--root",
                &f.lean,
            ]),
        ),
        ("advise", s(&["advise", &f.fat, &f.lean])),
        ("diff", s(&["diff", &f.fat, &f.lean])),
        (
            "check",
            s(&[
                "check",
                "--max-closure",
                "100KiB",
                "--forbid",
                "rocblas-tensile-gfx94*",
                &f.fat,
                &f.lean,
            ]),
        ),
    ]
}

#[test]
fn two_paths_of_one_name_are_told_apart_in_every_command_and_format() {
    let f = fixture();
    let names = by_name(&[&f.both]);
    assert_eq!(names["llama-cpp-rocm-1710"].len(), 2);
    assert_eq!(names["rocblas-5.7.1"].len(), 2);
    let mut shown_somewhere = 0;
    let hash = regex::Regex::new(r" \(([0-9a-z]{8})\)").unwrap();
    for (what, args) in commands(f) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        for columns in [None, Some(200)] {
            let o = run(columns, &args);
            let n = assert_told_apart(&format!("{what} at {columns:?}"), &o.stdout, &names);
            if !what.starts_with("size") && !what.starts_with("why") {
                assert!(n > 0, "{what}: no repeated name shown\n{}", o.stdout);
            }
            shown_somewhere += n;
        }
        // At 80 columns names may be shortened, never their hashes: every
        // hash shown piped is there.
        let piped = run(None, &args).stdout;
        let narrow = run(Some(80), &args).stdout;
        for c in hash.captures_iter(&piped) {
            assert!(
                narrow.contains(&c[0]),
                "{what} at 80 lacks{}:\n{narrow}",
                &c[0]
            );
        }
    }
    assert!(shown_somewhere > 20);
    // The same rule in check's other formats.
    for format in ["markdown", "github"] {
        let o = run(
            None,
            &[
                "check",
                "--format",
                format,
                "--max-closure",
                "100KiB",
                &f.fat,
                &f.lean,
            ],
        );
        assert!(
            assert_told_apart(format, &o.stdout, &names) > 0,
            "{}",
            o.stdout
        );
    }
    // diff says which rocblas replaces which.
    let d = run(None, &["diff", &f.fat, &f.lean]).stdout;
    let [a, b] = [&names["rocblas-5.7.1"][0], &names["rocblas-5.7.1"][1]].map(|p| &p[11..19]);
    assert!(
        d.contains(&format!("rocblas-5.7.1 ({a})")) && d.contains(&format!("rocblas-5.7.1 ({b})")),
        "{d}"
    );
    assert!(!d.contains("rocblas-5.7.1 replaces rocblas-5.7.1"), "{d}");
}

/// Size figures and percentages depend on the host's gcc: snapshots show
/// them as placeholders (the checks on widths use the real text).
fn redact(s: &str) -> String {
    let re =
        regex::Regex::new(r"-?\d+(\.\d+)? (B|KiB|MiB|GiB)\b|\(\d+ bytes\)|-?\d+\.\d%").unwrap();
    re.replace_all(s, "<N>").into_owned()
}

#[test]
fn every_command_fits_the_width_and_keeps_full_lines_when_piped() {
    let f = fixture();
    for (what, args) in commands(f) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        for columns in [80usize, 200] {
            let o = run(Some(columns), &args);
            for l in o.stdout.lines() {
                assert!(
                    l.chars().count() <= columns,
                    "{what} at {columns}: {} characters: {l}",
                    l.chars().count()
                );
            }
            insta::assert_snapshot!(format!("{what}_{columns}"), redact(&o.stdout));
        }
        let piped = run(None, &args);
        // Piped: nothing shortened.
        assert!(
            !piped.stdout.contains('…'),
            "{what} piped shortened a line:\n{}",
            piped.stdout
        );
        insta::assert_snapshot!(format!("{what}_piped"), redact(&piped.stdout));
    }
}

#[test]
fn names_are_shortened_keeping_the_part_that_differs() {
    let f = fixture();
    // refs at 100 columns: the reason and the files are wrapped, not cut
    // to "runtime: RUNPAT…", and names keep their target and hash.
    let o = run(Some(100), &["refs", &f.fat, &f.lean]);
    assert!(!o.stdout.contains("RUNPAT…"), "{}", o.stdout);
    let text = o.stdout.replace('\n', " ");
    assert!(text.contains("librocblas.so"), "{}", o.stdout);
    let tensile = regex::Regex::new(r"(rocblas-tensile-|…)gfx942-5\.7\.1").unwrap();
    assert!(tensile.is_match(&o.stdout), "{}", o.stdout);
    // At 60 columns the tensile names are cut, their target kept.
    let o = run(Some(60), &["refs", &f.fat]);
    let rows: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("rocbl") && l.contains("gfx"))
        .collect();
    assert_eq!(rows.len(), 12, "{}", o.stdout);
    for r in &rows {
        assert!(r.chars().count() <= 60, "{r}");
    }
    let targets: std::collections::BTreeSet<&str> = rows
        .iter()
        .filter_map(|r| regex::Regex::new(r"gfx[0-9a-z]+").unwrap().find(r))
        .map(|m| m.as_str())
        .collect();
    assert_eq!(targets.len(), 12, "{}", o.stdout);
    // size at 80: the header never breaks inside a size.
    let o = run(Some(80), &["size", &f.both]);
    let header: Vec<&str> = o.stdout.lines().take(2).collect();
    assert!(
        !header
            .iter()
            .any(|l| l.ends_with(" 1.7") || l.trim_end().ends_with(char::is_numeric)),
        "{header:?}"
    );
    // advise: the partition's heading counts its cuts and names them on a
    // line of their own, and the evidence gives the farm's real count.
    let o = run(Some(80), &["advise", &f.fat]);
    assert!(
        o.stdout.contains("11 references in rocblas-5.7.1"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("cuts: rocblas-tensile-{gfx1012, gfx1030,"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("evidence: 612 files, e.g."),
        "{}",
        o.stdout
    );
    assert!(!o.stdout.contains("more)"), "{}", o.stdout);
}

#[test]
fn why_all_lists_every_chain_with_evidence_grouped() {
    let f = fixture();
    let args = ["why", "--all", &f.both, "rocblas-tensile-gfx9*"];
    let all = run(None, &args).stdout;
    let j = json(&run(
        None,
        &["--json", "why", "--all", &f.both, "rocblas-tensile-gfx9*"],
    ));
    let chains = j["chains"].as_array().unwrap().len();
    assert_eq!(j["chain_count"].as_u64(), Some(chains as u64));
    let listed = all.lines().filter(|l| l.starts_with("  [")).count();
    assert_eq!(listed, chains, "{all}");
    // The farm grouped: one line per target's links, not one per link.
    assert!(
        all.contains("51 symlink holds in lib/rocblas/library/"),
        "{all}"
    );
    assert!(all.lines().count() < 200, "{} lines", all.lines().count());
    // --evidence shows every link.
    let every = run(
        None,
        &[
            "why",
            "--all",
            "--evidence",
            &f.both,
            "rocblas-tensile-gfx9*",
        ],
    )
    .stdout;
    assert!(!every.contains("symlink holds in"), "{every}");
    assert!(every.contains("Kernels.so-050-gfx942.hsaco"), "{every}");
    assert!(every.lines().count() > 600);
}

fn json(o: &Outcome) -> serde_json::Value {
    assert_eq!(o.code, 0, "{}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap()
}
