//! Damaged inputs, made at run time from copies of the fixtures: a
//! truncated NAR, a narinfo whose NarHash is not its NAR's, a corrupt
//! database. Each gives a clear error or a named problem (exit 3, the
//! result partial), never a panic and never a silent answer.

use crate::common::fast_fixtures::*;

fn truncate(file: &std::path::Path, len: usize) {
    let bytes = std::fs::read(file).unwrap();
    assert!(bytes.len() > len, "{}", file.display());
    std::fs::write(file, &bytes[..len]).unwrap();
}

/// hello's NAR cut in half, uncompressed (the NAR parser meets the end)
/// and xz (the decompressor does): hello's edges are unreadable, the
/// problem names the path, and the rest of the closure is still read.
#[test]
fn a_truncated_nar_is_a_named_problem() {
    let hello = root("hello");
    for (fixture, needle) in [
        ("cache-plain", "truncated NAR"),
        ("cache", "xz-compressed NAR is truncated or corrupt"),
    ] {
        let (_tmp, cache) = copy_of(fixture);
        let (_, nar) = narinfo_and_nar(&cache, hello);
        let half = std::fs::metadata(&nar).unwrap().len() as usize / 2;
        truncate(&nar, half);
        let o = on_cache(&cache.display().to_string(), &["--json", "refs", hello]);
        assert_eq!(o.code, 3, "{fixture}: {}", o.stderr);
        assert!(o.stderr.contains(needle), "{fixture}: {}", o.stderr);
        assert!(o.stderr.contains(hello), "{fixture}: {}", o.stderr);
        let v = o.json();
        let p = &v["problems"][0];
        assert_eq!(p["path"], hello, "{v}");
        for e in v["edges"].as_array().unwrap() {
            if e["referrer"] == hello {
                assert_eq!(e["files"], serde_json::json!([]), "{e}");
            } else {
                assert!(!e["files"].as_array().unwrap().is_empty(), "{e}");
            }
        }
    }
}

/// An unsigned narinfo (its Sig removed, read with `--no-require-sigs`)
/// whose NarHash is not its NAR's: the NAR is read and refused as a hash
/// mismatch, nothing of it used.
#[test]
fn a_narinfo_with_a_bad_nar_hash_is_a_hash_mismatch() {
    let hello = root("hello");
    let (_tmp, cache) = copy_of("cache-plain");
    let (narinfo, _) = narinfo_and_nar(&cache, hello);
    let text: String = std::fs::read_to_string(&narinfo)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("Sig: "))
        .map(|l| {
            if l.starts_with("NarHash: ") {
                format!("NarHash: sha256:{}\n", "1".repeat(52))
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(&narinfo, text).unwrap();
    let o = outcome(heft().args([
        "--no-require-sigs",
        "--store",
        &cache.display().to_string(),
        "--json",
        "refs",
        hello,
    ]));
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert!(o.stderr.contains("NAR hash mismatch"), "{}", o.stderr);
    let v = o.json();
    let p = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "hash-mismatch")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(p["path"], hello, "{v}");
}

/// The chroot store's database damaged three ways: overwritten past its
/// first page, cut short, emptied. Each is one error naming the file.
#[test]
fn a_corrupt_database_is_a_clear_error() {
    let (_tmp, store) = copy_of("store");
    let db = store.join("nix/var/nix/db/db.sqlite");
    let original = std::fs::read(&db).unwrap();
    let spec = store.display().to_string();
    let mut scribbled = original.clone();
    scribbled[4096..].fill(0x5a);
    for (what, bytes, needle) in [
        ("scribbled", scribbled, "database disk image is malformed"),
        (
            "cut short",
            original[..original.len() / 2].to_vec(),
            "db.sqlite",
        ),
        ("empty", vec![], "shorter than a SQLite header"),
        ("not SQLite", vec![0x42; 8192], "not a SQLite database"),
    ] {
        std::fs::write(&db, &bytes).unwrap();
        let o = outcome(heft().args(["--store", &spec, "size", root("hello")]));
        assert_error(&o, 1, needle);
        assert!(
            o.stderr.contains("cannot read Nix database"),
            "{what}: {}",
            o.stderr
        );
    }
    // Restored, it reads again: the damage, not the copy, failed.
    std::fs::write(&db, &original).unwrap();
    let o = outcome(heft().args(["--store", &spec, "size", root("hello")]));
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// The environment holds no Nix: an installable, which only `nix` can
/// evaluate, is refused saying so, as a usage error (exit 2): no test here
/// could have asked Nix.
#[test]
fn the_environment_has_no_nix() {
    let o = on_chroot(&["size", "nixpkgs#hello"]);
    assert_error(&o, 2, "was not found on PATH");
    assert!(o.stderr.contains("`nix`"), "{}", o.stderr);
}
