//! Trust what is read (issue 12, first part): a NAR whose bytes are not the
//! narinfo's `NarHash` is a problem for that path, never a silent answer;
//! mutated NARs never crash nix-heft and never pass as clean.

mod common;

use common::*;

/// The example exported uncompressed, so mutations reach the NAR bytes
/// themselves (a compressed file would mostly fail to decompress).
fn plain_cache(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let f = fixture();
    let dir = scratch(name);
    let cache = dir.join("cache");
    run(nix()
        .args(["copy", "--to"])
        .arg(format!("file://{}?compression=none", cache.display()))
        .arg(&f.rocm));
    let narinfo = cache.join(format!("{}.narinfo", &f.rocm[11..43]));
    let url = std::fs::read_to_string(&narinfo)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("URL: ").map(str::to_string))
        .unwrap();
    (cache.clone(), cache.join(url))
}

#[test]
fn a_nar_that_is_not_the_narinfos_is_refused() {
    let f = fixture();
    let (cache, nar) = plain_cache("integrity-flip");
    let store = cache.display().to_string();
    let clean = heft_run(Some(&store), &["--json", "refs", &f.rocm]);
    assert_eq!(
        clean.code, 0,
        "an intact cache checks clean: {}",
        clean.stderr
    );
    // One byte of file contents changed: the NAR still parses.
    let mut bytes = std::fs::read(&nar).unwrap();
    let at = memchr_find(&bytes, b"GLIBC_2").expect("an ELF string in the NAR");
    bytes[at] ^= 0x20;
    std::fs::write(&nar, &bytes).unwrap();
    for args in [
        vec!["--json", "refs", &f.rocm],
        vec!["--json", "advise", "--min-saving", "0", &f.rocm],
        vec!["--json", "why", &f.rocm, "glibc"],
    ] {
        let o = heft_run(Some(&store), &args);
        assert_eq!(o.code, 3, "{args:?}: {}", o.stderr);
        assert!(o.stderr.contains("NAR hash mismatch"), "{}", o.stderr);
        assert!(o.stderr.contains(&f.rocm), "names the path: {}", o.stderr);
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        let p = v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["kind"] == "hash-mismatch")
            .unwrap_or_else(|| panic!("{v}"));
        assert_eq!(p["path"], f.rocm.as_str());
    }
    // Nothing from the damaged path is used.
    let o = heft_run(Some(&store), &["--json", "refs", "--evidence", &f.rocm]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    for e in v["edges"].as_array().unwrap() {
        if e["referrer"] == f.rocm.as_str() {
            assert!(e["files"].as_array().unwrap().is_empty(), "{e}");
        }
    }
    // Checking off (for benchmarks): the damaged bytes are read as they are.
    let o = heft_run_env(
        &[("NIX_HEFT_VERIFY", "0")],
        Some(&store),
        &["--json", "refs", &f.rocm],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// The measurement of the issue: random mutations (bit flips, cut-offs,
/// inserted and deleted bytes, extreme length fields) through refs,
/// advise and why. Before, most exited 0; now none may.
#[test]
fn mutated_nars_never_pass_and_never_crash() {
    let f = fixture();
    let (cache, nar) = plain_cache("integrity-mutations");
    let store = cache.display().to_string();
    let original = std::fs::read(&nar).unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for round in 0..60 {
        let mut m = original.clone();
        let what = round % 5;
        match what {
            0 => {
                let i = next(m.len());
                m[i] ^= 1 << next(8);
            }
            1 => m.truncate(next(m.len())),
            2 => {
                let i = next(m.len());
                m.insert(i, next(256) as u8);
            }
            3 => {
                let i = next(m.len());
                m.remove(i);
            }
            _ => {
                // A length field (8-aligned) set to an extreme value.
                let i = next(m.len() / 8) * 8;
                let v = [u64::MAX, u64::MAX / 2, 1 << 40, 0][next(4)];
                m[i..i + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
        if m == original {
            continue;
        }
        std::fs::write(&nar, &m).unwrap();
        let args: Vec<&str> = match round % 3 {
            0 => vec!["--json", "refs", &f.rocm],
            1 => vec!["--json", "advise", "--min-saving", "0", &f.rocm],
            _ => vec!["--json", "why", &f.rocm, "glibc"],
        };
        let o = heft_run(Some(&store), &args);
        assert_eq!(
            o.code, 3,
            "round {round} (mutation {what}) {args:?} must be partial: {}",
            o.stderr
        );
    }
    std::fs::write(&nar, &original).unwrap();
}

fn memchr_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `--verify` on a local (chroot) store: every path read is serialised as
/// a NAR from disk and checked against the hash its database recorded. An
/// intact store gives the same answer as without it; a file edited in
/// place (as `nix-store --verify --check-contents` finds) is a
/// `hash-mismatch` problem naming the path, exit 3, while a plain run does
/// not notice.
#[test]
fn verify_finds_a_local_store_path_edited_in_place() {
    let f = fixture();
    let dir = scratch("verify-local");
    let root = dir.join("store");
    copy_tree(&f.chroot, &root);
    let store = root.display().to_string();
    let plain = heft_run(Some(&store), &["--json", "refs", &f.rocm]);
    let verified = heft_run(Some(&store), &["--verify", "--json", "refs", &f.rocm]);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert_eq!(
        verified.code, 0,
        "an intact store verifies: {}",
        verified.stderr
    );
    assert_eq!(verified.stdout, plain.stdout);
    // Nix's own check agrees that the store is intact.
    let nix_check = |root: &std::path::Path| {
        nix()
            .args(["--store"])
            .arg(root)
            .args(["store", "verify", "--no-trust", "--all"])
            .output()
            .unwrap()
    };
    assert!(nix_check(&root).status.success());
    // Edit one byte of a file of a referrer that refs reads, in place.
    let hipblas = nix_path_info(None, &[&f.rocm])
        .into_keys()
        .find(|p| p.contains("-hipblas-"))
        .unwrap();
    let file = root
        .join(hipblas.trim_start_matches('/'))
        .join("lib/libhipblas.so");
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x20;
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    std::fs::write(&file, &bytes).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
    let nix = nix_check(&root);
    let nix_err = String::from_utf8_lossy(&nix.stderr);
    assert!(
        !nix.status.success() && nix_err.contains(&hipblas) && nix_err.contains("modified"),
        "Nix finds the edit: {nix_err}"
    );
    let unchecked = heft_run(Some(&store), &["--json", "refs", &f.rocm]);
    assert_eq!(unchecked.code, 0, "without --verify nothing is hashed");
    let o = heft_run(Some(&store), &["--verify", "--json", "refs", &f.rocm]);
    assert_eq!(o.code, 3, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let problems = v["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| p["path"] == hipblas.as_str()
            && p["kind"] == "hash-mismatch"
            && p["message"]
                .as_str()
                .unwrap()
                .contains("the store database records")),
        "{problems:?}"
    );
    // Only the edited path is a problem.
    assert_eq!(
        problems
            .iter()
            .filter(|p| p["kind"] == "hash-mismatch")
            .count(),
        1,
        "{problems:?}"
    );
}
