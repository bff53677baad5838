//! The signed `file://` cache: its key trusted, none or the wrong one, and
//! a narinfo changed after signing. Exit codes as tests/testsuite/
//! signatures.rs expects of the same refusals with Nix at hand.

use crate::common::Outcome;
use crate::common::fast_fixtures::*;

fn size_of_hello(args: &[&str]) -> Outcome {
    outcome(
        heft()
            .args(args)
            .args(["--store", &cache_url(), "--json", "size", root("hello")]),
    )
}

#[test]
fn the_trusted_key_reads_the_cache_by_flag_or_nix_config() {
    let key = cache_key();
    let by_flag = size_of_hello(&["--trusted-public-keys", &key]);
    assert_eq!(by_flag.code, 0, "{}", by_flag.stderr);
    let by_conf = outcome(
        heft()
            .env("NIX_CONFIG", format!("trusted-public-keys = {key}"))
            .args(["--store", &cache_url(), "--json", "size", root("hello")]),
    );
    assert_eq!(by_conf.code, 0, "{}", by_conf.stderr);
    for o in [&by_flag, &by_conf] {
        let v = o.json();
        assert_eq!(
            v["closure_size"],
            nix_cache_info()[root("hello")]["closureSize"]
        );
        // origins name the cache and the key that signed each path.
        let text = v["origins"].to_string();
        assert!(text.contains(key.split(':').next().unwrap()), "{v}");
    }
}

#[test]
fn no_key_or_the_wrong_key_is_refused() {
    let signer = cache_key().split(':').next().unwrap().to_string();
    for (what, args) in [
        ("no key", vec![]),
        (
            "the wrong key",
            vec!["--trusted-public-keys".to_string(), other_key()],
        ),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = size_of_hello(&args);
        assert_error(&o, 1, "refusing the narinfo of");
        assert!(o.stderr.contains(root("hello")), "{what}: {}", o.stderr);
        assert!(
            o.stderr
                .contains(&format!("signed by '{signer}', which is not trusted")),
            "{what}: {}",
            o.stderr
        );
        assert!(
            o.stderr.contains("--trusted-public-keys") && o.stderr.contains("--no-require-sigs"),
            "{what}: {}",
            o.stderr
        );
    }
    // Accepting unsigned narinfos reads the cache, with one warning.
    let o = size_of_hello(&["--no-require-sigs"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stderr.matches("warning").count(), 1, "{}", o.stderr);
    assert_eq!(
        o.json()["closure_size"].as_u64(),
        Some(closure_size(root("hello")))
    );
}

/// A narinfo whose signed fields changed (NarHash here) is refused as
/// possibly tampered with, and `--no-require-sigs` is not offered.
#[test]
fn a_narinfo_changed_after_signing_is_refused_as_tampered() {
    let (_tmp, cache) = copy_of("cache");
    let (narinfo, _) = narinfo_and_nar(&cache, root("hello"));
    let text = std::fs::read_to_string(&narinfo).unwrap();
    let line = text.lines().find(|l| l.starts_with("NarHash: ")).unwrap();
    let bad = format!("NarHash: sha256:{}", "1".repeat(52));
    std::fs::write(&narinfo, text.replace(line, &bad)).unwrap();
    let o = on_cache(
        &format!("file://{}", cache.display()),
        &["size", root("hello")],
    );
    assert_error(&o, 1, "refusing the narinfo of");
    assert!(o.stderr.contains("tampered with"), "{}", o.stderr);
    assert!(!o.stderr.contains("--no-require-sigs"), "{}", o.stderr);
}
