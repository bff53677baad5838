//! Trust what is read (issue 12, first part): a NAR whose bytes are not the
//! narinfo's `NarHash` is a problem for that path, never a silent answer;
//! mutated NARs never crash nix-heft and never pass as clean.

use crate::common;
use crate::common::*;

/// The example exported uncompressed, so mutations reach the NAR bytes
/// themselves (a compressed file would mostly fail to decompress).
fn plain_cache(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let f = fixture();
    let dir = scratch(name);
    let cache = dir.join("cache");
    run(nix()
        .args(["copy", "--to"])
        .arg(signed_cache_url(&cache, "compression=none"))
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
        nix_output(nix()
            .args(["--store"])
            .arg(root)
            .args(["store", "verify", "--no-trust", "--all"]))
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

/// A cache written by `nix copy` (xz) whose NAR file was replaced by the
/// same NAR recompressed at another level: it decompresses to the right
/// NAR (NarHash matches), but it is not the file the narinfo describes
/// (FileHash and FileSize differ). Over file:// and HTTP that is a
/// `hash-mismatch` problem naming the path (exit 3), and nothing read from
/// it is kept: a second run over HTTP downloads and refuses it again.
#[test]
fn a_compressed_file_that_is_not_the_narinfos_is_refused() {
    use std::io::{Read, Write};
    let f = fixture();
    let dir = scratch("integrity-filehash");
    let cache = dir.join("cache");
    run(nix()
        .args(["copy", "--to"])
        .arg(signed_cache_url(&cache, "compression=xz"))
        .arg(&f.rocm));
    let narinfo =
        std::fs::read_to_string(cache.join(format!("{}.narinfo", &f.rocm[11..43]))).unwrap();
    let field = |k: &str| {
        narinfo
            .lines()
            .find_map(|l| l.strip_prefix(k).map(str::to_string))
            .unwrap_or_else(|| panic!("no {k} in {narinfo}"))
    };
    let (url, file_size, file_hash) = (field("URL: "), field("FileSize: "), field("FileHash: "));
    let nar_file = cache.join(&url);
    let original = std::fs::read(&nar_file).unwrap();
    assert_eq!(original.len().to_string(), file_size, "nix copy's FileSize");
    let store = cache.display().to_string();
    let clean = heft_run(Some(&store), &["--json", "refs", &f.rocm]);
    assert_eq!(clean.code, 0, "as nix copy wrote it: {}", clean.stderr);

    // The same NAR, recompressed at level 0 (nix copy uses 6).
    let mut nar = Vec::new();
    liblzma::read::XzDecoder::new(&original[..])
        .read_to_end(&mut nar)
        .unwrap();
    let mut w = liblzma::write::XzEncoder::new(Vec::new(), 0);
    w.write_all(&nar).unwrap();
    let recompressed = w.finish().unwrap();
    assert_ne!(recompressed.len(), original.len());
    std::fs::write(&nar_file, &recompressed).unwrap();
    // Nix's NarHash still holds for it.
    let o = heft_run_env(
        &[("NIX_HEFT_VERIFY", "0")],
        Some(&store),
        &["--json", "refs", &f.rocm],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, clean.stdout, "the same NAR inside");

    let check = |o: &Outcome, what: &str| {
        assert_eq!(o.code, 3, "{what}: {}", o.stderr);
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        let p = v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["kind"] == "hash-mismatch")
            .unwrap_or_else(|| panic!("{what}: {v}"));
        assert_eq!(p["path"], f.rocm.as_str(), "{what}");
        let m = p["message"].as_str().unwrap();
        assert!(m.contains(&format!("FileSize {file_size}")), "{what}: {m}");
        assert!(m.contains(&file_hash), "{what}: {m}");
        assert!(
            m.contains(&format!("has {} bytes", recompressed.len())),
            "{what}: {m}"
        );
        assert!(m.contains(&url), "{what}: names the file: {m}");
        assert!(o.stderr.contains(&f.rocm), "{what}: {}", o.stderr);
        // Nothing from the path is used.
        for e in v["edges"].as_array().unwrap() {
            if e["referrer"] == f.rocm.as_str() {
                assert!(e["files"].as_array().unwrap().is_empty(), "{what}: {e}");
            }
        }
    };
    let o = heft_run(Some(&store), &["--json", "refs", "--evidence", &f.rocm]);
    check(&o, "file://");

    let server = common::http_server::FileServer::start(&cache);
    let xdg = dir.join("xdg");
    let env = [("XDG_CACHE_HOME", xdg.to_str().unwrap())];
    let http = server.url();
    let nar_requests = |s: &common::http_server::FileServer| {
        s.log().iter().filter(|p| **p == format!("/{url}")).count()
    };
    let o = heft_run_env(
        &env,
        Some(&http),
        &["--json", "refs", "--evidence", &f.rocm],
    );
    check(&o, "HTTP");
    assert!(o.stderr.contains("after 3 attempts"), "{}", o.stderr);
    assert_eq!(
        nar_requests(&server),
        3,
        "fetched 3 times: {:?}",
        server.log()
    );
    // Nothing was kept: the next run fetches it again, and refuses it again.
    server.clear();
    let o = heft_run_env(
        &env,
        Some(&http),
        &["--json", "refs", "--evidence", &f.rocm],
    );
    check(&o, "HTTP, second run");
    assert_eq!(nar_requests(&server), 3, "{:?}", server.log());
    // The file as nix copy wrote it passes, over HTTP too.
    std::fs::write(&nar_file, &original).unwrap();
    let o = heft_run_env(&env, Some(&http), &["--json", "refs", &f.rocm]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// Every compression `nix copy` writes (xz is above) is read to the end of
/// its file, so
/// FileSize and FileHash are checked for each (a decoder that stopped at
/// the end of its stream would leave the check silently undone): a
/// narinfo whose FileSize is off by one, or whose FileHash is another
/// file's, is refused.
#[test]
fn file_size_and_hash_are_checked_for_every_compression() {
    let f = fixture();
    // top-app references left and right, so its NAR is read.
    let top = f.small("top");
    for compression in ["zstd", "bzip2", "none"] {
        let dir = scratch(&format!("integrity-filesize-{compression}"));
        let cache = dir.join("cache");
        run(nix()
            .args(["copy", "--to"])
            .arg(signed_cache_url(
                &cache,
                &format!("compression={compression}"),
            ))
            .arg(top));
        let store = cache.display().to_string();
        let o = heft_run(Some(&store), &["--json", "refs", top]);
        assert_eq!(
            o.code, 0,
            "{compression}, as nix copy wrote it: {}",
            o.stderr
        );
        let file = cache.join(format!("{}.narinfo", &top[11..43]));
        let narinfo = std::fs::read_to_string(&file).unwrap();
        let size: u64 = narinfo
            .lines()
            .find_map(|l| l.strip_prefix("FileSize: "))
            .unwrap_or_else(|| panic!("{compression}: no FileSize in {narinfo}"))
            .parse()
            .unwrap();
        let hash_line = narinfo
            .lines()
            .find(|l| l.starts_with("FileHash: "))
            .unwrap()
            .to_string();
        let other_hash = "FileHash: sha256:0n751fqccr8zb9rm5m14k38944v4mp5fr8b0ylcch78bqchxvdjm";
        for (what, edited) in [
            (
                "FileSize",
                narinfo.replace(
                    &format!("FileSize: {size}"),
                    &format!("FileSize: {}", size + 1),
                ),
            ),
            ("FileHash", narinfo.replace(&hash_line, other_hash)),
        ] {
            std::fs::write(&file, &edited).unwrap();
            let o = heft_run(Some(&store), &["--json", "refs", top]);
            assert_eq!(o.code, 3, "{compression}, {what}: {}", o.stderr);
            assert!(
                o.stderr.contains("compressed file mismatch"),
                "{compression}, {what}: {}",
                o.stderr
            );
        }
        std::fs::write(&file, &narinfo).unwrap();
    }
}
