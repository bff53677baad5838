//! Snapshots of the text output on the bundled example's binary cache
//! (committed, so every path and byte is stable), at an 80-column and a
//! 200-column width. A change to what a person reads shows up here.

use crate::common::*;

fn text(columns: &str, args: &[&str]) -> String {
    let cache = example_cache().display().to_string();
    let o = heft_run_env(&[("COLUMNS", columns)], Some(&cache), args);
    assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
    o.stdout
}

#[test]
fn text_output_at_80_and_200_columns() {
    let root = example_root();
    let rocblas = "rocblas";
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("size", vec!["size", "--top", "6", &root]),
        ("why", vec!["why", &root, "rocm-smi"]),
        ("why_glob", vec!["why", &root, "rocblas-tensile-gfx9*"]),
        ("refs", vec!["refs", &root]),
        (
            "split",
            vec!["split", "--preset", "nixpkgs", "--root", &root, "hipblas"],
        ),
        (
            "partition",
            vec![
                "partition",
                rocblas,
                "--by",
                "gfx[0-9a-z]+",
                "--keep",
                "gfx90a",
                "--root",
                &root,
            ],
        ),
        ("advise", vec!["advise", &root]),
    ];
    for columns in ["80", "200"] {
        for (name, args) in &cases {
            let out = text(columns, args);
            if columns == "80" {
                for l in out.lines() {
                    assert!(l.chars().count() <= 80, "{name}: {l}");
                }
            }
            insta::assert_snapshot!(format!("{name}_{columns}"), out);
        }
    }
}
