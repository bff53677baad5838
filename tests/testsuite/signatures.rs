//! Narinfo signatures and nix.conf, checked against real Nix, and what the
//! binary says when it refuses a narinfo.
//!
//! Keys come from `nix-store --generate-binary-cache-key`, caches from
//! `nix copy --to 'file://DIR?secret-key=…'` (Nix signs them), and every
//! verdict of `nix_heft_store::source::signature` is compared with
//! `nix store verify --no-contents --sigs-needed 1 --trusted-public-keys …`
//! on the same narinfo. `nix_heft_format::nix_conf` is compared with
//! `nix show-config --json` in a private environment.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common;
use crate::common::{nix, nix_build, repo, run};
use crate::common::nix_output;
use nix_heft_format::nix_conf::{ConfEnv, NixConf};
use nix_heft_store::source::signature::{SigProblem, TrustedKeys, Verdict, verify_narinfo};

const TRUSTED: &str = "heft-test-1";
const OTHER: &str = "heft-other-1";

struct Setup {
    root: PathBuf,
    /// `name:base64` public keys.
    trusted_pub: String,
    other_pub: String,
    /// small.nix's `top` and its closure (top, left, right, base).
    top: String,
    closure: Vec<String>,
    /// Caches of the closure: signed with the trusted key, with the other
    /// key, and not signed.
    signed: PathBuf,
    other: PathBuf,
    unsigned: PathBuf,
}

fn keypair(dir: &Path, name: &str) -> (PathBuf, String) {
    let (sec, public) = (
        dir.join(format!("{name}.sec")),
        dir.join(format!("{name}.pub")),
    );
    run(Command::new("nix-store")
        .arg("--generate-binary-cache-key")
        .arg(name)
        .arg(&sec)
        .arg(&public));
    (
        sec,
        std::fs::read_to_string(public).unwrap().trim().to_string(),
    )
}

fn copy_to(cache: &Path, secret: Option<&Path>, paths: &[String]) {
    let mut url = format!("file://{}?compression=none", cache.display());
    if let Some(s) = secret {
        url.push_str(&format!("&secret-key={}", s.display()));
    }
    run(nix().args(["copy", "--to", &url]).args(paths));
}

fn setup() -> &'static Setup {
    static S: OnceLock<Setup> = OnceLock::new();
    S.get_or_init(|| {
        let top = nix_build(&repo().join("tests/fixtures/small.nix"), &["top"])
            .pop()
            .unwrap();
        let closure: Vec<String> = run(Command::new("nix-store").args(["-qR", &top]))
            .lines()
            .map(String::from)
            .collect();
        assert_eq!(closure.len(), 4, "{closure:?}");
        // Under target/tmp, so that nothing outlives `cargo clean`; a
        // previous run's is removed first.
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("signatures");
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let (trusted_sec, trusted_pub) = keypair(&root, TRUSTED);
        let (other_sec, other_pub) = keypair(&root, OTHER);
        let (signed, other, unsigned) = (
            root.join("signed"),
            root.join("other"),
            root.join("unsigned"),
        );
        copy_to(&signed, Some(&trusted_sec), std::slice::from_ref(&top));
        copy_to(&other, Some(&other_sec), std::slice::from_ref(&top));
        copy_to(&unsigned, None, std::slice::from_ref(&top));
        Setup {
            root,
            trusted_pub,
            other_pub,
            top,
            closure,
            signed,
            other,
            unsigned,
        }
    })
}

fn narinfo_file(cache: &Path, path: &str) -> PathBuf {
    let hash = &path["/nix/store/".len()..][..32];
    cache.join(format!("{hash}.narinfo"))
}

/// nix-heft's verdict on `path`'s narinfo in `cache`, trusting `keys`.
fn ours(cache: &Path, path: &str, keys: &[&str]) -> Verdict {
    let file = narinfo_file(cache, path);
    let text = std::fs::read_to_string(&file).unwrap();
    let keys = TrustedKeys::parse(keys).unwrap();
    verify_narinfo(&text, "/nix/store", &file, &keys).unwrap().1
}

/// `nix store verify` of `paths` in `cache`, signatures only, trusting
/// `keys`: Ok, or Err with Nix's stderr.
fn nix_verify(cache: &Path, paths: &[&str], keys: &[&str]) -> Result<(), String> {
    let out = nix_output(nix()
        .args([
            "store",
            "verify",
            "--no-contents",
            "--sigs-needed",
            "1",
            "--trusted-public-keys",
            &keys.join(" "),
            "--store",
            &format!("file://{}", cache.display()),
        ])
        .args(paths));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        Ok(())
    } else {
        Err(err)
    }
}

/// A fresh copy of `cache` named `name` (so that no cache of Nix's, by
/// URL, remembers a narinfo from before an edit), with `top`'s narinfo
/// passed through `edit`.
fn edited(name: &str, cache: &Path, edit: impl Fn(&str) -> String) -> PathBuf {
    let s = setup();
    let to = s.root.join(name);
    let _ = std::fs::remove_dir_all(&to);
    run(Command::new("cp").arg("-a").arg(cache).arg(&to));
    let f = narinfo_file(&to, &s.top);
    let before = std::fs::read_to_string(&f).unwrap();
    let after = edit(&before);
    assert_ne!(before, after, "{name}: the edit changed nothing");
    std::fs::write(&f, after).unwrap();
    to
}

fn line_of<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(&format!("{key}:")))
        .unwrap_or_else(|| panic!("no {key} line in {text}"))
}

/// nix-heft and Nix agree that `top` in `cache` is refused, and nix-heft
/// says why with `want`; Nix's message must be about signatures (so that a
/// failure of another kind cannot pass for agreement).
fn both_refuse(cache: &Path, keys: &[&str], want: &SigProblem) {
    let s = setup();
    let v = ours(cache, &s.top, keys);
    assert_eq!(v.signed_by, None, "{}: {v:?}", cache.display());
    assert!(v.problems.contains(want), "{}: {v:?}", cache.display());
    let e = nix_verify(cache, &[&s.top], keys).expect_err("Nix accepted it");
    assert!(
        e.contains("is untrusted")
            || e.contains("signature is not valid")
            || e.contains("invalid character in Base64"),
        "{}: Nix failed for another reason: {e}",
        cache.display()
    );
}

fn both_accept(cache: &Path, keys: &[&str]) {
    let s = setup();
    let v = ours(cache, &s.top, keys);
    assert_eq!(v.signed_by.as_deref(), Some(TRUSTED), "{v:?}");
    if let Err(e) = nix_verify(cache, &[&s.top], keys) {
        panic!("{}: nix-heft accepts, Nix does not: {e}", cache.display());
    }
}

#[test]
fn every_narinfo_nix_signed_is_accepted_with_its_key() {
    let s = setup();
    let keys = [s.trusted_pub.as_str()];
    let n = std::fs::read_dir(&s.signed)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("narinfo".as_ref()))
        .count();
    assert_eq!(n, s.closure.len());
    for p in &s.closure {
        let v = ours(&s.signed, p, &keys);
        assert_eq!(v.signed_by.as_deref(), Some(TRUSTED), "{p}: {v:?}");
        assert!(v.problems.is_empty(), "{p}: {v:?}");
    }
    let all: Vec<&str> = s.closure.iter().map(String::as_str).collect();
    nix_verify(&s.signed, &all, &keys).unwrap();
    // The same cache with only cache.nixos.org's key (Nix's default):
    // refused by both, so Nix's acceptance above came from the key given.
    let default = nix_heft_format::nix_conf::DEFAULT_TRUSTED_PUBLIC_KEYS;
    for p in &s.closure {
        let v = ours(&s.signed, p, default);
        assert_eq!(v.problems, [SigProblem::UntrustedKey(TRUSTED.into())]);
    }
    assert!(nix_verify(&s.signed, &all, default).is_err());
}

#[test]
fn nar_size_edited_after_signing_is_refused() {
    let s = setup();
    let c = edited("narsize", &s.signed, |t| {
        let l = line_of(t, "NarSize");
        let n: u64 = l["NarSize: ".len()..].parse().unwrap();
        t.replace(l, &format!("NarSize: {}", n + 1))
    });
    both_refuse(
        &c,
        &[s.trusted_pub.as_str()],
        &SigProblem::Mismatch(TRUSTED.into()),
    );
}

#[test]
fn references_edited_after_signing_are_refused() {
    let s = setup();
    let mismatch = SigProblem::Mismatch(TRUSTED.into());
    // One reference dropped.
    let c = edited("refs-dropped", &s.signed, |t| {
        let l = line_of(t, "References");
        let first = l["References: ".len()..].split(' ').next().unwrap();
        t.replace(l, &l.replace(first, "").replace("  ", " "))
    });
    both_refuse(&c, &[s.trusted_pub.as_str()], &mismatch);
    // One added (a real path of the closure, so the narinfo stays valid).
    let base = s
        .closure
        .iter()
        .find(|p| p.ends_with("-base-lib-1.0"))
        .unwrap();
    let c = edited("refs-added", &s.signed, |t| {
        let l = line_of(t, "References");
        t.replace(l, &format!("{l} {}", &base["/nix/store/".len()..]))
    });
    both_refuse(&c, &[s.trusted_pub.as_str()], &mismatch);
}

#[test]
fn signed_by_an_untrusted_key_is_refused() {
    let s = setup();
    both_refuse(
        &s.other,
        &[s.trusted_pub.as_str()],
        &SigProblem::UntrustedKey(OTHER.into()),
    );
    // ... and accepted once that key is trusted (by both).
    let v = ours(&s.other, &s.top, &[s.other_pub.as_str()]);
    assert_eq!(v.signed_by.as_deref(), Some(OTHER));
    nix_verify(&s.other, &[&s.top], &[s.other_pub.as_str()]).unwrap();
}

#[test]
fn unsigned_is_refused() {
    let s = setup();
    let text = std::fs::read_to_string(narinfo_file(&s.unsigned, &s.top)).unwrap();
    assert!(
        !text.contains("Sig:"),
        "nix copy without a key signed: {text}"
    );
    both_refuse(
        &s.unsigned,
        &[s.trusted_pub.as_str()],
        &SigProblem::Unsigned,
    );
}

#[test]
fn malformed_sig_lines_are_refused() {
    let s = setup();
    let keys = [s.trusted_pub.as_str()];
    let with_sig = |name: &str, sig: String| {
        edited(name, &s.signed, move |t| {
            t.replace(line_of(t, "Sig"), &format!("Sig: {sig}"))
        })
    };
    // Not base64.
    let c = with_sig("sig-not-base64", format!("{TRUSTED}:!!not*base64!!"));
    let v = ours(&c, &s.top, &keys);
    assert!(
        matches!(v.problems.as_slice(), [SigProblem::MalformedTrusted(e)] if e.to_string().contains("not valid base64")),
        "{v:?}"
    );
    both_refuse(&c, &keys, &v.problems[0]);
    // Base64, but 32 bytes rather than 64 (the public key's bytes).
    let key_b64 = s.trusted_pub.split_once(':').unwrap().1;
    let c = with_sig("sig-short", format!("{TRUSTED}:{key_b64}"));
    let v = ours(&c, &s.top, &keys);
    assert!(
        matches!(v.problems.as_slice(), [SigProblem::MalformedTrusted(e)] if e.to_string().contains("holds 32 bytes, not 64")),
        "{v:?}"
    );
    both_refuse(&c, &keys, &v.problems[0]);
}

#[test]
fn extra_sig_lines_beside_the_good_one() {
    let s = setup();
    let keys = [s.trusted_pub.as_str()];
    let add =
        |name: &str, extra: String| edited(name, &s.signed, move |t| format!("{t}Sig: {extra}\n"));
    // A signature by another key (taken from the other cache) does not
    // lessen the trusted one.
    let other_sig = std::fs::read_to_string(narinfo_file(&s.other, &s.top)).unwrap();
    let other_sig = line_of(&other_sig, "Sig")["Sig: ".len()..].to_string();
    let c = add("sig-plus-other", other_sig);
    both_accept(&c, &keys);
    assert_eq!(
        ours(&c, &s.top, &keys).problems,
        [SigProblem::UntrustedKey(OTHER.into())]
    );
    // A malformed one naming an untrusted key: skipped by both.
    both_accept(&add("sig-plus-junk", format!("{OTHER}:AAAA")), &keys);
    // A malformed one naming the trusted key: Nix fails the whole check,
    // and nix-heft refuses as well.
    let c = add("sig-plus-bad-trusted", format!("{TRUSTED}:AAAA"));
    let v = ours(&c, &s.top, &keys);
    let p = v.problems[0].clone();
    assert!(matches!(p, SigProblem::MalformedTrusted(_)), "{v:?}");
    both_refuse(&c, &keys, &p);
}

#[test]
fn unsigned_fields_may_change() {
    // Deriver and Compression are outside the fingerprint: still signed.
    let s = setup();
    let c = edited("deriver", &s.signed, |t| {
        t.replace(line_of(t, "Deriver"), "Deriver: unknown-deriver")
    });
    both_accept(&c, &[s.trusted_pub.as_str()]);
}

/// `nix-heft size TOP` run in the signatures' directory (so that relative
/// `file://` URLs are read as a user in that directory would type them),
/// with `args` before the command: exit code and stderr.
fn heft_size(args: &[&str]) -> (i32, String) {
    let s = setup();
    let out = common::heft()
        .current_dir(&s.root)
        .args(args)
        .args(["size", &s.top])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    (out.status.code().unwrap_or(-1), err)
}

/// A signature that names a trusted key but does not verify is a sign of
/// tampering, not a setting to turn off: the refusal says the narinfo may
/// have been tampered with and names the key, and never advises
/// `--no-require-sigs` — whether the narinfo changed after signing or the
/// key trusted under that name has other bytes. A cache that is merely
/// signed by an unknown key keeps the advice to trust its key (or not
/// require signatures). Over several stores the refused cache is named
/// one way, as its absolute URL, however it was given.
#[test]
fn a_signature_that_does_not_verify_says_tampered_not_no_require_sigs() {
    let s = setup();
    let tampered = edited("tampered-cli", &s.signed, |t| {
        let l = line_of(t, "NarSize");
        let n: u64 = l["NarSize: ".len()..].parse().unwrap();
        t.replace(l, &format!("NarSize: {}", n + 1))
    });
    let url = |c: &Path| format!("file://{}", c.display());
    // The other key's bytes under the trusted key's name.
    let impostor = format!("{TRUSTED}:{}", s.other_pub.split_once(':').unwrap().1);
    for (what, keys, cache) in [
        (
            "edited after signing",
            s.trusted_pub.clone(),
            url(&tampered),
        ),
        (
            "a trusted name with other key bytes",
            impostor,
            url(&s.signed),
        ),
    ] {
        let (code, err) = heft_size(&["--trusted-public-keys", &keys, "--store", &cache]);
        assert_eq!(code, 1, "{what}: {err}");
        assert!(err.contains("refusing the narinfo of"), "{what}: {err}");
        assert!(
            err.contains("tampered with") && err.contains(&format!("'{TRUSTED}'")),
            "{what}: {err}"
        );
        assert!(!err.contains("--no-require-sigs"), "{what}: {err}");
    }
    // Signed by a key that is simply not trusted: configure it, or accept.
    let (code, err) = heft_size(&[
        "--trusted-public-keys",
        &s.trusted_pub,
        "--store",
        &url(&s.other),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("--trusted-public-keys") && err.contains("--no-require-sigs"),
        "{err}"
    );
    assert!(!err.contains("tampered"), "{err}");
    // Several stores, the tampered one given by a relative URL: it is
    // refused with a warning and the path taken from the next store; the
    // warning names it by its absolute URL only.
    let (code, err) = heft_size(&[
        "--trusted-public-keys",
        &s.trusted_pub,
        "--store",
        "file://tampered-cli",
        "--store",
        "file://signed",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("tampered with"), "{err}");
    assert!(
        !err.contains("file://tampered-cli") && !err.contains("file://signed"),
        "a relative URL beside the absolute one: {err}"
    );
    assert_eq!(err.matches(&url(&tampered)).count(), 2, "{err}");
}

/// `nix show-config --json`'s value of `name` in `env` (nothing else of
/// this process's environment but PATH).
fn nix_show(env: &[(&str, String)], name: &str) -> serde_json::Value {
    let mut c = nix();
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap())
        .args(["show-config", "--json"]);
    for (k, v) in env {
        c.env(k, v);
    }
    let v: serde_json::Value = serde_json::from_str(&run(&mut c)).unwrap();
    v[name]["value"].clone()
}

#[test]
fn nix_conf_reads_what_nix_reads() {
    let s = setup();
    let d = s.root.join("conf");
    let w = |p: &str, text: &str| {
        let p = d.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w(
        "etc/nix.conf",
        "# system\nsubstituters = https://sys.example/ # the company cache\n\
         trusted-public-keys = sys-1:p2VkyP9EJ9lK4yt5aERUf7pYPGQyBwnvBvOBgRA+FkY=\n\
         include conf.d/extra.conf\n!include conf.d/absent.conf\nrequire-sigs = true\n",
    );
    w(
        "etc/conf.d/extra.conf",
        "extra-substituters = https://inc.example/\nnetrc-file = /run/netrc\n",
    );
    w(
        "home/nix/nix.conf",
        "extra-trusted-public-keys = home-1:6NCHdD59X431o0gWypbMrAURkbJ16ZPMQFGspcDShjY=\n\
         binary-caches = https://home.example/ https://sys.example/\n",
    );
    w(
        "xdg1/nix/nix.conf",
        "extra-substituters = https://xdg1.example/\n",
    );
    w(
        "xdg2/nix/nix.conf",
        "require-sigs = false\nextra-binary-caches = https://xdg2.example/\n",
    );
    let p = |s: &str| d.join(s).display().to_string();
    let envs: Vec<Vec<(&str, String)>> = vec![
        vec![
            ("NIX_CONF_DIR", p("etc")),
            ("XDG_CONFIG_HOME", p("home")),
            ("XDG_CONFIG_DIRS", format!("{}:{}", p("xdg1"), p("xdg2"))),
            (
                "NIX_CONFIG",
                "extra-substituters = https://env.example/\nextra-trusted-public-keys = env-1:AAAA"
                    .into(),
            ),
        ],
        vec![
            ("NIX_CONF_DIR", p("etc")),
            ("HOME", p("nohome")),
            ("XDG_CONFIG_DIRS", p("xdg2")),
        ],
        vec![
            ("NIX_CONF_DIR", p("nowhere")),
            (
                "NIX_USER_CONF_FILES",
                format!("{}:{}", p("xdg2/nix/nix.conf"), p("xdg1/nix/nix.conf")),
            ),
        ],
    ];
    for env in &envs {
        let conf = NixConf::load(&ConfEnv::from_pairs(env.iter().cloned())).unwrap();
        let strings = |v: serde_json::Value| -> Vec<String> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(
            conf.substituters(),
            strings(nix_show(env, "substituters")),
            "{env:?}"
        );
        assert_eq!(
            conf.trusted_public_keys(),
            strings(nix_show(env, "trusted-public-keys")),
            "{env:?}"
        );
        assert_eq!(
            serde_json::Value::Bool(conf.require_sigs().unwrap()),
            nix_show(env, "require-sigs"),
            "{env:?}"
        );
        assert_eq!(
            conf.netrc_file().map(|p| p.display().to_string()),
            nix_show(env, "netrc-file").as_str().map(String::from),
            "{env:?}"
        );
    }
}

/// Measured for BENCHMARKS.md (`cargo test --test testsuite
/// signatures::measure -- --ignored --nocapture`): 10,000 narinfos of 10 references each, signed as Nix
/// signs them, each parsed and checked by the run's `SigPolicy` as a cache
/// checks it. Dependencies (ed25519-dalek, curve25519-dalek) are built
/// with opt-level 2 in the dev profile, so the figure is the release one
/// for the cryptography.
#[test]
#[ignore]
fn measure_ten_thousand_signature_checks() {
    use nix_heft_store::source::RunLog;
    use nix_heft_store::source::narinfo::NarInfo;
    use nix_heft_store::source::signature::SigPolicy;
    const NIX32: &[u8] = b"0123456789abcdfghijklmnpqrsvwxyz";
    let hash = |seed: u64, len: usize| -> String {
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                NIX32[(x % 32) as usize] as char
            })
            .collect()
    };
    let key = common::test_key();
    let n = 10_000u64;
    let texts: Vec<String> = (0..n)
        .map(|i| {
            let refs: Vec<String> = (1..=10)
                .map(|r| format!("{}-dep-{r}", hash(i * 100 + r, 32)))
                .collect();
            let text = format!(
                "StorePath: /nix/store/{}-p-{i}\nURL: nar/{i}.nar.xz\nCompression: xz\n\
                 NarHash: sha256:0{}\nNarSize: {}\nReferences: {}\n",
                hash(i, 32),
                // 52 nix32 digits hold 260 bits: the first is 0 for 256.
                hash(i + 7, 51),
                1000 + i,
                refs.join(" ")
            );
            common::sign_narinfo(&text, &key)
        })
        .collect();
    let policy = SigPolicy::new(TrustedKeys::parse([&key.public]).unwrap(), true);
    let log = RunLog::default();
    let parse_only = std::time::Instant::now();
    for t in &texts {
        NarInfo::parse(t, "/nix/store", Path::new("x")).unwrap();
    }
    let parse_only = parse_only.elapsed();
    let start = std::time::Instant::now();
    for t in &texts {
        let info = NarInfo::parse(t, "/nix/store", Path::new("x")).unwrap();
        assert!(
            policy
                .check(&info, "file:///bench", &log)
                .unwrap()
                .is_some()
        );
    }
    let all = start.elapsed();
    let per = (all.saturating_sub(parse_only)).as_secs_f64() * 1e6 / n as f64;
    println!(
        "{n} narinfos: parse {parse_only:?}, parse + check {all:?}: {per:.1} µs per signature check"
    );
}
