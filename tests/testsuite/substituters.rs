//! Several stores read as one, as Nix reads its substituters, and
//! narinfo signatures enforced at the command line (issue 24).
//!
//! The ROCm-shaped example's closure is split as a real deployment splits
//! it: the consumer's own paths in one cache (a Cachix), the rest in
//! another (cache.nixos.org), each written and signed by real
//! `nix copy --to 'file://DIR?secret-key=…'` with its own key from
//! `nix-store --generate-binary-cache-key`, both served over HTTP on
//! 127.0.0.1, and a few paths only in a local chroot store.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::common::http_server::FileServer;
use crate::common::*;
use serde_json::Value;

/// The split closure.
struct Split {
    /// The consumer's paths: only in cache A.
    in_a: BTreeSet<String>,
    /// The rest: only in cache B.
    in_b: BTreeSet<String>,
    /// Only in the chroot store.
    in_chroot: BTreeSet<String>,
    cache_a: PathBuf,
    cache_b: PathBuf,
    chroot: PathBuf,
    key_a: KeyPair,
    key_b: KeyPair,
}

fn hash_of(p: &str) -> &str {
    &p["/nix/store/".len().."/nix/store/".len() + 32]
}

/// Removes the narinfos of every path not in `keep` (their NAR files stay,
/// named by nothing): a cache holding only `keep`, still as Nix signed it.
fn keep_only(cache: &Path, all: &BTreeSet<String>, keep: &BTreeSet<String>) {
    for p in all.difference(keep) {
        std::fs::remove_file(cache.join(format!("{}.narinfo", hash_of(p)))).unwrap();
    }
}

fn split() -> &'static Split {
    static S: OnceLock<Split> = OnceLock::new();
    S.get_or_init(|| {
        let f = fixture();
        let dir = scratch("substituters");
        let all: BTreeSet<String> = closure_set(&f.rocm);
        let named = |suffixes: &[&str]| -> BTreeSet<String> {
            all.iter()
                .filter(|p| suffixes.iter().any(|s| p.ends_with(s)))
                .cloned()
                .collect()
        };
        let in_a = named(&["-llama-cpp-rocm-0.0.0", "-hipblas-5.7.1"]);
        // Paths without references, so a chroot store of them is closed.
        let in_chroot = named(&["-glibc-2.36", "-python3-3.11.6"]);
        assert_eq!((in_a.len(), in_chroot.len()), (2, 2), "{all:?}");
        let in_b: BTreeSet<String> = all
            .iter()
            .filter(|p| !in_a.contains(*p) && !in_chroot.contains(*p))
            .cloned()
            .collect();
        let (key_a, key_b) = (key_pair("heft-cachix-1"), key_pair("heft-nixos-1"));
        let (cache_a, cache_b, chroot) = (dir.join("a"), dir.join("b"), dir.join("chroot"));
        for (cache, key) in [(&cache_a, &key_a), (&cache_b, &key_b)] {
            run(nix()
                .args(["copy", "--to"])
                .arg(format!(
                    "file://{}?compression=xz&secret-key={}",
                    cache.display(),
                    key.secret.display()
                ))
                .arg(&f.rocm));
        }
        keep_only(&cache_a, &all, &in_a);
        keep_only(&cache_b, &all, &in_b);
        run(nix()
            .args(["copy", "--no-check-sigs", "--to"])
            .arg(&chroot)
            .args(&in_chroot));
        Split {
            in_a,
            in_b,
            in_chroot,
            cache_a,
            cache_b,
            chroot,
            key_a,
            key_b,
        }
    })
}

/// A run with its own local cache and no nix.conf of the machine's.
fn heft_in(xdg: &Path, args: &[&str]) -> Outcome {
    let home = xdg.join("home");
    std::fs::create_dir_all(&home).unwrap();
    heft_run_env(
        &[
            ("XDG_CACHE_HOME", xdg.to_str().unwrap()),
            ("HOME", home.to_str().unwrap()),
            ("NIX_CONF_DIR", home.to_str().unwrap()),
            ("NIX_CONFIG", ""),
            ("NIX_HEFT_HTTP_TIMEOUT", "5"),
        ],
        None,
        args,
    )
}

fn trust(s: &Split) -> String {
    format!("{} {}", s.key_a.public, s.key_b.public)
}

fn key_name(k: &KeyPair) -> &str {
    k.public.split(':').next().unwrap()
}

/// The narinfo requests of `server`, by store path hash: how many times
/// each was asked, and the statuses.
fn narinfo_asks(server: &FileServer) -> BTreeMap<String, Vec<u16>> {
    let mut out: BTreeMap<String, Vec<u16>> = BTreeMap::new();
    for a in server.asked() {
        if let Some(h) = a
            .path
            .strip_prefix('/')
            .and_then(|p| p.strip_suffix(".narinfo"))
        {
            out.entry(h.to_string()).or_default().push(a.status);
        }
    }
    out
}

/// `size`, `why` and `advise` over chroot + A + B give the single-store
/// answers; each path is asked of the stores in order and of none once
/// found; each NAR comes once, from the cache that answered for it; the
/// JSON says where each path came from and which key signed it.
#[test]
fn a_closure_split_over_a_chroot_and_two_caches_reads_as_one_store() {
    let f = fixture();
    let s = split();
    let (a, b) = (FileServer::start(&s.cache_a), FileServer::start(&s.cache_b));
    let chroot = s.chroot.display().to_string();
    let subs = format!("{} {}", a.url(), b.url());
    let keys = trust(s);
    let commands: Vec<Vec<&str>> = vec![
        vec!["size", &f.rocm],
        vec!["why", &f.rocm, "glibc"],
        vec!["advise", &f.rocm],
    ];
    for (n, cmd) in commands.iter().enumerate() {
        for (form, flags) in [
            (
                "--store repeated",
                vec![
                    "--store".to_string(),
                    chroot.clone(),
                    "--store".into(),
                    a.url(),
                    "--store".into(),
                    b.url(),
                ],
            ),
            (
                "--substituters",
                vec![
                    "--store".to_string(),
                    chroot.clone(),
                    "--substituters".into(),
                    subs.clone(),
                ],
            ),
        ] {
            let what = format!("{} ({form})", cmd[0]);
            a.clear();
            b.clear();
            let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
            args.extend(["--trusted-public-keys", &keys, "--json"]);
            args.extend(cmd.iter().copied());
            let o = heft_in(&scratch(&format!("subst-xdg-{n}-{}", form.len())), &args);
            assert_eq!(o.code, 0, "{what}: {}", o.stderr);
            let mut single = vec!["--json"];
            single.extend(cmd.iter().copied());
            let want = heft_run(None, &single);
            assert_eq!(want.code, 0, "{what} over the local store: {}", want.stderr);
            // The answer is the single store's; what was read to reach it
            // (`reads`: a local store's trees cost nothing, a cache's do)
            // depends on where the paths are.
            same(
                &without_keys(&o.stdout, &["reads"]),
                &without_keys(&want.stdout, &["reads"]),
                &what,
            );

            // Asked in order, and of none once found.
            let (asks_a, asks_b) = (narinfo_asks(&a), narinfo_asks(&b));
            for p in &s.in_chroot {
                let h = hash_of(p);
                assert!(
                    !asks_a.contains_key(h) && !asks_b.contains_key(h),
                    "{what}: {p} is in the chroot store, asked first"
                );
            }
            for p in &s.in_a {
                let h = hash_of(p);
                assert_eq!(asks_a.get(h), Some(&vec![200]), "{what}: {p} of A");
                assert_eq!(
                    asks_b.get(h),
                    None,
                    "{what}: {p} found in A, not asked of B"
                );
            }
            for p in &s.in_b {
                let h = hash_of(p);
                assert_eq!(asks_a.get(h), Some(&vec![404]), "{what}: {p} of A");
                assert_eq!(asks_b.get(h), Some(&vec![200]), "{what}: {p} of B");
                let seq = |server: &FileServer| {
                    server
                        .asked()
                        .iter()
                        .find(|x| x.path == format!("/{h}.narinfo"))
                        .unwrap()
                        .seq
                };
                assert!(seq(&a) < seq(&b), "{what}: {p} asked of A before B");
            }
            // Each NAR at most once, from the cache that answered.
            for (server, mine, name) in [(&a, &s.in_a, "A"), (&b, &s.in_b, "B")] {
                let nars = server.nars();
                let distinct: BTreeSet<&String> = nars.iter().collect();
                assert_eq!(
                    distinct.len(),
                    nars.len(),
                    "{what}: a NAR twice from {name}: {nars:?}"
                );
                let cache = if name == "A" { &s.cache_a } else { &s.cache_b };
                let urls: BTreeSet<String> = mine
                    .iter()
                    .map(|p| {
                        let t =
                            std::fs::read_to_string(cache.join(format!("{}.narinfo", hash_of(p))))
                                .unwrap();
                        format!(
                            "/{}",
                            t.lines().find_map(|l| l.strip_prefix("URL: ")).unwrap()
                        )
                    })
                    .collect();
                for n in &nars {
                    assert!(
                        urls.contains(n),
                        "{what}: {n} from {name}, whose narinfo is not there"
                    );
                }
            }
            if cmd[0] != "size" {
                assert!(
                    !a.nars().is_empty() || !b.nars().is_empty(),
                    "{what}: no NAR read"
                );
            }

            // Where each path came from, and the key that signed it.
            let j: Value = serde_json::from_str(&o.stdout).unwrap();
            let origins = j["origins"]
                .as_object()
                .unwrap_or_else(|| panic!("{what}: {j}"));
            for (p, o) in origins {
                let (store, signer) = if s.in_a.contains(p) {
                    (a.url(), Some(key_name(&s.key_a)))
                } else if s.in_b.contains(p) {
                    (b.url(), Some(key_name(&s.key_b)))
                } else {
                    assert!(s.in_chroot.contains(p), "{what}: {p}");
                    (chroot.clone(), None)
                };
                assert_eq!(o["store"], store.as_str(), "{what}: {p}");
                assert_eq!(o["signed_by"].as_str(), signer, "{what}: {p}");
            }
            if cmd[0] == "size" {
                assert_eq!(origins.len(), closure_set(&f.rocm).len(), "{what}");
            }
        }
    }
}

/// A path in no store: the one clear error, naming every store asked.
#[test]
fn a_path_in_no_store_names_every_store_asked() {
    let f = fixture();
    let s = split();
    let (a, b) = (FileServer::start(&s.cache_a), FileServer::start(&s.cache_b));
    let chroot = s.chroot.display().to_string();
    // The small fixture is in none of them.
    let o = heft_in(
        &scratch("subst-missing"),
        &[
            "--store",
            &chroot,
            "--substituters",
            &format!("{} {}", a.url(), b.url()),
            "--trusted-public-keys",
            &trust(s),
            "size",
            f.small("top"),
        ],
    );
    assert_error(&o, "is not valid in any of the stores");
    for store in [chroot.as_str(), &a.url(), &b.url()] {
        assert!(o.stderr.contains(store), "{store}: {}", o.stderr);
    }
    // A reference in none of them: B's paths without B.
    let o = heft_in(
        &scratch("subst-dangling"),
        &[
            "--store",
            &chroot,
            "--store",
            &a.url(),
            "--trusted-public-keys",
            &trust(s),
            "size",
            &f.rocm,
        ],
    );
    assert_error(&o, "which any of the stores");
    assert!(
        o.stderr.contains(&a.url()) && o.stderr.contains(&chroot),
        "{}",
        o.stderr
    );
}

/// B's key not trusted: its narinfos are refused, naming the path, the
/// cache, the key found; `--no-require-sigs` accepts them with one warning
/// for the whole run, and the JSON says they were not signed by a trusted
/// key.
#[test]
fn an_untrusted_cache_is_refused_and_accepted_only_when_asked() {
    let f = fixture();
    let s = split();
    let (a, b) = (FileServer::start(&s.cache_a), FileServer::start(&s.cache_b));
    let subs = format!("{} {}", a.url(), b.url());
    let chroot = s.chroot.display().to_string();
    let base = [
        "--store",
        chroot.as_str(),
        "--substituters",
        &subs,
        "--trusted-public-keys",
        &s.key_a.public,
    ];
    let mut args = base.to_vec();
    args.extend(["size", &f.rocm]);
    let o = heft_in(&scratch("subst-untrusted"), &args);
    assert_error(&o, "refusing the narinfo of");
    assert!(
        o.stderr.contains(&b.url()) && o.stderr.contains(key_name(&s.key_b)),
        "{}",
        o.stderr
    );
    assert!(
        s.in_b.iter().any(|p| o.stderr.contains(p.as_str())),
        "names the path: {}",
        o.stderr
    );
    let mut args = base.to_vec();
    args.extend(["--no-require-sigs", "--json", "size", &f.rocm]);
    let o = heft_in(&scratch("subst-untrusted-ok"), &args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stderr.matches("without a valid signature").count(),
        1,
        "one warning: {}",
        o.stderr
    );
    let j: Value = serde_json::from_str(&o.stdout).unwrap();
    for p in &s.in_b {
        assert_eq!(j["origins"][p]["signed_by"], Value::Null, "{p}");
    }
    for p in &s.in_a {
        assert_eq!(j["origins"][p]["signed_by"], key_name(&s.key_a), "{p}");
    }
    // The same in text, with --show-store: grouped by store.
    let mut args = base.to_vec();
    args.extend([
        "--no-require-sigs",
        "--show-store",
        "size",
        "--top",
        "100",
        &f.rocm,
    ]);
    let o = heft_in(&scratch("subst-untrusted-text"), &args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let (_, stores) = o
        .stdout
        .split_once("where the paths came from:\n")
        .unwrap_or_else(|| panic!("{}", o.stdout));
    let section = |head: &str| -> BTreeSet<String> {
        let start = stores
            .find(&format!("  {head}:\n"))
            .unwrap_or_else(|| panic!("{head} in {stores}"));
        stores[start..]
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("    "))
            .map(|l| l.trim().to_string())
            .collect()
    };
    assert_eq!(
        section(&format!("{} (signed by {})", a.url(), key_name(&s.key_a))),
        s.in_a
    );
    assert_eq!(
        section(&format!("{} (no trusted signature)", b.url())),
        s.in_b
    );
    assert_eq!(section(&chroot), s.in_chroot);
}

/// `--substituters auto`: nix.conf's `substituters` and
/// `extra-substituters`, ordered by each cache's `Priority` as Nix orders
/// them; the trusted keys from `trusted-public-keys` and
/// `extra-trusted-public-keys`.
#[test]
fn substituters_auto_reads_nix_conf_and_orders_by_priority() {
    let f = fixture();
    let s = split();
    let dir = scratch("subst-auto");
    // Copies whose nix-cache-info says B comes first.
    let (ca, cb) = (dir.join("a"), dir.join("b"));
    copy_tree(&s.cache_a, &ca);
    copy_tree(&s.cache_b, &cb);
    let set_priority = |c: &Path, p: u32| {
        let info = c.join("nix-cache-info");
        let t: String = std::fs::read_to_string(&info)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with("Priority:"))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&info, format!("{t}Priority: {p}\n")).unwrap();
    };
    set_priority(&ca, 60);
    set_priority(&cb, 40);
    let (a, b) = (FileServer::start(&ca), FileServer::start(&cb));
    let xdg = scratch("subst-auto-xdg");
    let home = xdg.join("home");
    let conf = xdg.join("conf");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(
        conf.join("nix.conf"),
        format!(
            "# as a user writes it\nsubstituters = {}\ntrusted-public-keys = {}\n\
             include extra.conf\n",
            a.url(),
            s.key_a.public
        ),
    )
    .unwrap();
    std::fs::write(
        conf.join("extra.conf"),
        format!(
            "extra-substituters = {}\nextra-trusted-public-keys = {}\n",
            b.url(),
            s.key_b.public
        ),
    )
    .unwrap();
    let env = [
        ("XDG_CACHE_HOME", xdg.to_str().unwrap()),
        ("HOME", home.to_str().unwrap()),
        ("NIX_CONF_DIR", conf.to_str().unwrap()),
        ("NIX_CONFIG", ""),
    ];
    let chroot = s.chroot.display().to_string();
    let o = heft_run_env(
        &env,
        Some(&chroot),
        &["--substituters", "auto", "--json", "size", &f.rocm],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    same(
        &o.stdout,
        &heft_run(None, &["--json", "size", &f.rocm]).stdout,
        "auto",
    );
    // B (Priority 40) is asked before A (60): A's paths are asked of B
    // first, B's never of A.
    let (asks_a, asks_b) = (narinfo_asks(&a), narinfo_asks(&b));
    for p in &s.in_a {
        assert_eq!(asks_b.get(hash_of(p)), Some(&vec![404]), "{p}");
        assert_eq!(asks_a.get(hash_of(p)), Some(&vec![200]), "{p}");
    }
    for p in &s.in_b {
        assert_eq!(asks_a.get(hash_of(p)), None, "{p}");
    }
    // require-sigs = false in nix.conf: B's narinfos accepted without its
    // key, with the one warning.
    std::fs::write(
        conf.join("extra.conf"),
        format!("extra-substituters = {}\nrequire-sigs = false\n", b.url()),
    )
    .unwrap();
    let o = heft_run_env(
        &env,
        Some(&chroot),
        &["--substituters", "auto", "--refresh", "size", &f.rocm],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stderr.matches("without a valid signature").count(),
        1,
        "{}",
        o.stderr
    );
}

/// Narinfos a cache owner did not sign as they are: NarSize or References
/// edited after signing, signed by an untrusted key, unsigned, a `Sig`
/// line that is not base64 or not 64 bytes. Each is refused over HTTP and
/// file://, naming the path and the cache; each is accepted, with the one
/// warning, with `--no-require-sigs`. A narinfo kept in the local cache
/// while signatures were not required is not trusted later.
#[test]
fn tampered_and_unsigned_narinfos_are_refused() {
    let f = fixture();
    let top = f.small("top");
    let key = test_key();
    let other = key_pair("heft-untrusted-1");
    let base = scratch("subst-tamper");
    let signed = base.join("signed");
    run(nix()
        .args([
            "copy",
            "--to",
            &signed_cache_url(&signed, "compression=none"),
        ])
        .arg(top));
    let file = format!("{}.narinfo", hash_of(top));
    let text = std::fs::read_to_string(signed.join(&file)).unwrap();
    let sig_line = text.lines().find(|l| l.starts_with("Sig: ")).unwrap();
    let unsigned: String = text
        .lines()
        .filter(|l| !l.starts_with("Sig: "))
        .map(|l| format!("{l}\n"))
        .collect();
    let name = key_name(&key);
    let cases: Vec<(&str, String)> = vec![
        ("narsize edited", {
            let size = text.lines().find(|l| l.starts_with("NarSize: ")).unwrap();
            let n: u64 = size["NarSize: ".len()..].parse().unwrap();
            text.replace(size, &format!("NarSize: {}", n + 8))
        }),
        ("references edited", {
            let refs = text
                .lines()
                .find(|l| l.starts_with("References: "))
                .unwrap();
            let kept: Vec<&str> = refs["References: ".len()..].split(' ').skip(1).collect();
            text.replace(refs, &format!("References: {}", kept.join(" ")))
        }),
        ("untrusted key", sign_narinfo(&unsigned, &other)),
        ("unsigned", unsigned.clone()),
        ("not base64", format!("{unsigned}Sig: {name}:not*base64!\n")),
        ("not 64 bytes", format!("{unsigned}Sig: {name}:AAAA\n")),
    ];
    assert!(sig_line.contains(name), "{sig_line}");
    for (n, (what, narinfo)) in cases.into_iter().enumerate() {
        let cache = base.join(format!("case-{n}"));
        copy_tree(&signed, &cache);
        std::fs::write(cache.join(&file), &narinfo).unwrap();
        let server = FileServer::start(&cache);
        for store in [format!("file://{}", cache.display()), server.url()] {
            let xdg = scratch(&format!("subst-tamper-xdg-{n}-{}", store.len()));
            let run = |extra: &[&str]| {
                let mut args = vec![
                    "--store",
                    store.as_str(),
                    "--trusted-public-keys",
                    &key.public,
                ];
                args.extend_from_slice(extra);
                args.extend(["size", top]);
                heft_in(&xdg, &args)
            };
            // First accepted unsigned (kept in the local cache), then
            // refused: what was kept unverified is not trusted later.
            let o = run(&["--no-require-sigs"]);
            assert_eq!(o.code, 0, "{what} {store}: {}", o.stderr);
            assert_eq!(
                o.stderr.matches("without a valid signature").count(),
                1,
                "{what} {store}: {}",
                o.stderr
            );
            let o = run(&[]);
            assert_error(&o, &format!("refusing the narinfo of {top} from "));
            assert!(o.stderr.contains(&store), "{what}: {}", o.stderr);
        }
    }
    // Nix agrees on every case: its own verify refuses each edited cache
    // and accepts the one it signed.
    let verify = |cache: &Path| {
        nix_output(nix()
            .args(["store", "verify", "--no-contents", "--sigs-needed", "1"])
            .args(["--trusted-public-keys", &key.public])
            .arg("--store")
            .arg(format!("file://{}", cache.display()))
            .arg(top))
            .status
            .success()
    };
    assert!(verify(&signed));
    for n in 0..6 {
        assert!(!verify(&base.join(format!("case-{n}"))), "case {n}");
    }
}

/// Measured for BENCHMARKS.md (`cargo test --test testsuite
/// substituters::measure -- --ignored --nocapture`): `size` over the chroot store and one cache
/// holding every other path, against the chroot store and the split caches
/// A and B, each server answering every request after `latency` (a cache
/// across a network: the round trips show in the wall time). Prints the
/// median wall time of 5 runs and the narinfo requests each server
/// answered.
#[test]
#[ignore]
fn measure_one_cache_against_two() {
    let f = fixture();
    let s = split();
    let one = scratch("subst-bench-one");
    run(nix()
        .args(["copy", "--to"])
        .arg(format!(
            "file://{}?compression=xz&secret-key={}",
            one.display(),
            s.key_a.secret.display()
        ))
        .arg(&f.rocm));
    let chroot = s.chroot.display().to_string();
    let keys = trust(s);
    for ms in [0u64, 100] {
        let latency = std::time::Duration::from_millis(ms);
        let zero = std::time::Duration::ZERO;
        let all = FileServer::start_with(&one, zero, latency);
        let (a, b) = (
            FileServer::start_with(&s.cache_a, zero, latency),
            FileServer::start_with(&s.cache_b, zero, latency),
        );
        for (label, stores) in [
            ("one cache", vec![all.url()]),
            ("two caches", vec![a.url(), b.url()]),
        ] {
            let mut times = Vec::new();
            for run_no in 0..5 {
                for srv in [&all, &a, &b] {
                    srv.clear();
                }
                let mut args = vec!["--store", chroot.as_str()];
                for st in &stores {
                    args.extend(["--store", st.as_str()]);
                }
                args.extend(["--trusted-public-keys", &keys, "--json", "size", &f.rocm]);
                let xdg = scratch(&format!("subst-bench-{ms}-{}-{run_no}", label.len()));
                let t = std::time::Instant::now();
                let o = heft_in(&xdg, &args);
                times.push(t.elapsed());
                assert_eq!(o.code, 0, "{}", o.stderr);
            }
            times.sort();
            let asks = |srv: &FileServer| {
                srv.asked()
                    .iter()
                    .filter(|x| x.path.ends_with(".narinfo"))
                    .count()
            };
            println!(
                "latency {ms} ms, {label}: median {:?} (min {:?}, max {:?}); narinfo requests: one {} A {} B {}",
                times[2],
                times[0],
                times[4],
                asks(&all),
                asks(&a),
                asks(&b)
            );
        }
    }
}

/// As in Nix's substitution, a narinfo the first cache gives but no trusted
/// key signed is no answer: the next cache is asked, and the refusal is a
/// warning when that one has the path signed by a trusted key.
#[test]
fn a_refused_narinfo_falls_through_to_the_next_store() {
    let f = fixture();
    let s = split();
    let dir = scratch("subst-fallthrough");
    let (untrusted, trusted) = (dir.join("untrusted"), dir.join("trusted"));
    for (cache, key) in [(&untrusted, &s.key_a), (&trusted, &s.key_b)] {
        run(nix()
            .args(["copy", "--to"])
            .arg(format!(
                "file://{}?compression=none&secret-key={}",
                cache.display(),
                key.secret.display()
            ))
            .arg(&f.rocm));
    }
    let (u, t) = (
        format!("file://{}", untrusted.display()),
        format!("file://{}", trusted.display()),
    );
    let o = heft_in(
        &scratch("subst-fallthrough-xdg"),
        &[
            "--store",
            &u,
            "--store",
            &t,
            "--trusted-public-keys",
            &s.key_b.public,
            "--json",
            "size",
            &f.rocm,
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    same(
        &o.stdout,
        &heft_run(None, &["--json", "size", &f.rocm]).stdout,
        "fall-through",
    );
    let j: Value = serde_json::from_str(&o.stdout).unwrap();
    let origins = j["origins"].as_object().unwrap();
    assert_eq!(origins.len(), closure_set(&f.rocm).len());
    for (p, o) in origins {
        assert_eq!(o["store"], t.as_str(), "{p}");
        assert_eq!(o["signed_by"], key_name(&s.key_b), "{p}");
    }
    assert!(
        o.stderr.contains("refusing the narinfo of") && o.stderr.contains("is taken from"),
        "{}",
        o.stderr
    );
    assert_eq!(
        o.stderr.matches("is taken from").count(),
        1,
        "one warning: {}",
        o.stderr
    );
    // Only the untrusted cache: the refusal is the error.
    let o = heft_in(
        &scratch("subst-fallthrough-xdg2"),
        &[
            "--store",
            &u,
            "--store",
            &s.chroot.display().to_string(),
            "--trusted-public-keys",
            &s.key_b.public,
            "size",
            &f.rocm,
        ],
    );
    assert_error(&o, "refusing the narinfo of");
    assert!(
        o.stderr.contains(&u) && o.stderr.contains(key_name(&s.key_a)),
        "{}",
        o.stderr
    );
}

/// A local store asked first that holds the whole closure answers for all
/// of it, in one read of its database: no cache is asked anything but its
/// `nix-cache-info`, and every path says it came from the local store.
#[test]
fn a_local_store_first_that_holds_everything_answers_alone() {
    let f = fixture();
    let s = split();
    let a = FileServer::start(&s.cache_a);
    let chroot = f.chroot.display().to_string();
    let o = heft_in(
        &scratch("subst-local-all"),
        &[
            "--store",
            &chroot,
            "--store",
            &a.url(),
            "--trusted-public-keys",
            &trust(s),
            "--json",
            "why",
            &f.rocm,
            "glibc",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    same(
        &o.stdout,
        &heft_run(None, &["--json", "why", &f.rocm, "glibc"]).stdout,
        "local first",
    );
    let asked: Vec<String> = a.asked().into_iter().map(|x| x.path).collect();
    assert_eq!(asked, ["/nix-cache-info"], "{asked:?}");
    let j: Value = serde_json::from_str(&o.stdout).unwrap();
    for (p, o) in j["origins"].as_object().unwrap() {
        assert_eq!(o["store"], chroot.as_str(), "{p}");
        assert_eq!(o["signed_by"], Value::Null, "{p}");
    }
}

/// A nix.conf nix-heft cannot read (an `include` of a missing file, an
/// error in Nix too) fails only runs that need its keys: a chroot store
/// opens, a binary cache is an error naming the file.
#[test]
fn an_unreadable_nix_conf_fails_only_binary_caches() {
    let f = fixture();
    let xdg = scratch("subst-badconf");
    let (home, conf) = (xdg.join("home"), xdg.join("conf"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(conf.join("nix.conf"), "include missing.conf\n").unwrap();
    let env = [
        ("XDG_CACHE_HOME", xdg.to_str().unwrap()),
        ("HOME", home.to_str().unwrap()),
        ("NIX_CONF_DIR", conf.to_str().unwrap()),
        ("NIX_CONFIG", ""),
    ];
    let chroot = f.chroot.display().to_string();
    let o = heft_run_env(&env, Some(&chroot), &["size", f.small("top")]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let cache = format!("file://{}", f.cache.display());
    let o = heft_run_env(&env, Some(&cache), &["size", f.small("top")]);
    assert_error(&o, "missing.conf");
    assert!(o.stderr.contains("nix.conf"), "{}", o.stderr);
    // A bad key on the command line is a usage error, whatever the store.
    for store in [&chroot, &cache] {
        let o = heft_run_env(
            &env,
            Some(store),
            &["--trusted-public-keys", "nokey", "size", f.small("top")],
        );
        assert_usage_error(&o, "--trusted-public-keys");
    }
}

/// Narinfos Nix trusts unsigned, because their `CA` field proves their
/// store path: a text path (`builtins.toFile`), a recursive and a flat
/// fixed-output path (`builtins.path`). Accepted with no signature and no
/// warning, `content_addressed` in the JSON; with the content address
/// edited, refused. `nix store verify --sigs-needed 1` agrees on each.
#[test]
fn content_addressed_narinfos_need_no_signature() {
    let dir = scratch("subst-ca");
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    std::fs::write(src.join("sub/a.txt"), "content-addressed source\n").unwrap();
    std::fs::write(dir.join("flat.txt"), "a flat file\n").unwrap();
    let expr = format!(
        r#"[ (builtins.toFile "heft-ca-text" "hello, content address\n")
            (builtins.path {{ path = {}; name = "heft-ca-source"; }})
            (builtins.path {{ path = {}; name = "heft-ca-flat"; recursive = false; }}) ]"#,
        src.display(),
        dir.join("flat.txt").display()
    );
    let out = run(std::process::Command::new("nix-instantiate").args([
        "--eval",
        "--strict",
        "--json",
        "--read-write-mode",
        "-E",
        &expr,
    ]));
    let paths: Vec<String> = serde_json::from_str(&out).unwrap();
    let cache = dir.join("cache");
    run(nix()
        .args(["copy", "--to"])
        .arg(format!("file://{}?compression=none", cache.display()))
        .args(&paths));
    let url = format!("file://{}", cache.display());
    let verify = |p: &str| {
        nix_output(nix()
            .args(["store", "verify", "--no-contents", "--sigs-needed", "1"])
            .args([
                "--trusted-public-keys",
                &test_key().public,
                "--store",
                &url,
                p,
            ]))
            .status
            .success()
    };
    for (p, kind) in paths
        .iter()
        .zip(["CA: text:", "CA: fixed:r:", "CA: fixed:sha256:"])
    {
        let file = cache.join(format!("{}.narinfo", hash_of(p)));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains(kind) && !text.contains("Sig:"), "{text}");
        assert!(verify(p), "Nix trusts {p} unsigned");
        let o = heft_in(
            &scratch(&format!("subst-ca-xdg-{}", &p[11..19])),
            &["--store", &url, "--json", "size", p],
        );
        assert_eq!(o.code, 0, "{p}: {}", o.stderr);
        assert!(!o.stderr.contains("warning"), "{p}: {}", o.stderr);
        let j: Value = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(j["origins"][p]["content_addressed"], true, "{p}: {j}");
        assert_eq!(j["origins"][p]["signed_by"], Value::Null, "{p}: {j}");
        // Another content address: the path is no longer proved.
        let ca = text.lines().find(|l| l.starts_with("CA: ")).unwrap();
        let last = ca.len() - 1;
        let flipped = if &ca[last..] == "0" { "1" } else { "0" };
        std::fs::write(
            &file,
            text.replace(ca, &format!("{}{flipped}", &ca[..last])),
        )
        .unwrap();
        assert!(!verify(p), "Nix refuses {p} with its CA edited");
        let o = heft_in(
            &scratch(&format!("subst-ca-xdg2-{}", &p[11..19])),
            &["--store", &url, "size", p],
        );
        assert_error(&o, &format!("refusing the narinfo of {p}"));
        std::fs::write(&file, &text).unwrap();
    }
}
