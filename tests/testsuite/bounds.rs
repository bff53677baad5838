//! Bounded resources on hostile inputs (integrity issue): decompression
//! bombs are streamed in constant memory. Peak RSS and time are printed
//! (`--nocapture`) and recorded in BENCHMARKS.md; the memory bound is
//! asserted, the time never is.

use std::io::Write;

use crate::common;
use crate::common::*;
use sha2::{Digest, Sha256};

const GIB: u64 = 1 << 30;

/// A NAR of one 2 GiB file of zeros (plus a line naming the path's own hash
/// at the end, so the scan has something to find), written through
/// `compress` while its SHA-256 and size are taken.
fn bomb_cache(name: &str, compression: &str) -> (std::path::PathBuf, String) {
    let dir = scratch(name);
    let cache = dir.join("cache");
    std::fs::create_dir_all(cache.join("nar")).unwrap();
    std::fs::write(
        cache.join("nix-cache-info"),
        "StoreDir: /nix/store\nWantMassQuery: 1\nPriority: 40\n",
    )
    .unwrap();
    let hash = "0zb0mb0zb0mb0zb0mb0zb0mb0zb0mb0z";
    let path = format!("/nix/store/{hash}-bomb-1.0");
    let tail = format!("\n{path}\n");
    let size = 2 * GIB + tail.len() as u64;
    let file = cache.join(format!("nar/bomb.nar.{compression}"));
    let out = std::fs::File::create(&file).unwrap();
    let w: Box<dyn Write> = match compression {
        "xz" => Box::new(liblzma::write::XzEncoder::new(out, 0)),
        _ => Box::new(
            zstd::stream::write::Encoder::new(out, 1)
                .unwrap()
                .auto_finish(),
        ),
    };
    let mut w = Hashed {
        w,
        h: Sha256::new(),
        n: 0,
    };
    for t in [
        &b"nix-archive-1"[..],
        b"(",
        b"type",
        b"regular",
        b"contents",
    ] {
        w.string(t);
    }
    w.put(&size.to_le_bytes());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..((2 * GIB) >> 20) {
        w.put(&zeros);
    }
    w.put(tail.as_bytes());
    w.put(&vec![0u8; ((8 - size % 8) % 8) as usize]);
    w.string(b")");
    let Hashed { w, h, n } = w;
    drop(w);
    let nar_hash: [u8; 32] = h.finalize().into();
    let hex: String = nar_hash.iter().map(|b| format!("{b:02x}")).collect();
    let text = format!(
        "StorePath: {path}\nURL: nar/bomb.nar.{compression}\nCompression: {compression}\n\
         NarHash: sha256:{hex}\nNarSize: {n}\nReferences: {hash}-bomb-1.0\n"
    );
    std::fs::write(
        cache.join(format!("{hash}.narinfo")),
        sign_narinfo(&text, &test_key()),
    )
    .unwrap();
    (cache, path)
}

/// A writer that hashes and counts what it writes (the uncompressed NAR).
struct Hashed {
    w: Box<dyn Write>,
    h: Sha256,
    n: u64,
}

impl Hashed {
    fn put(&mut self, b: &[u8]) {
        self.w.write_all(b).unwrap();
        self.h.update(b);
        self.n += b.len() as u64;
    }
    fn string(&mut self, t: &[u8]) {
        self.put(&(t.len() as u64).to_le_bytes());
        self.put(t);
        self.put(&vec![0u8; (8 - t.len() % 8) % 8]);
    }
}

/// A run of nix-heft under GNU time.
struct Measured {
    code: i32,
    /// Peak RSS, KiB.
    rss: u64,
    /// Wall seconds.
    secs: f64,
    stdout: String,
    stderr: String,
}

/// Peak RSS (KiB) and wall seconds of a run, from GNU time.
fn measured(store: &str, args: &[&str]) -> (i32, u64, f64, String) {
    let m = measure(&[], store, args);
    assert!(m.code != 101, "panicked: {}", m.stderr);
    (m.code, m.rss, m.secs, m.stdout)
}

/// [`measured`] with environment variables, and stderr.
fn measure(env: &[(&str, &str)], store: &str, args: &[&str]) -> Measured {
    let bin = assert_cmd::cargo::cargo_bin("nix-heft");
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "%M %e"])
        .arg(bin)
        .env("NIX_CONFIG", trusting_conf())
        .envs(env.iter().copied())
        .args(["--store", store])
        .args(args)
        .output()
        .expect("GNU time (/usr/bin/time) is installed by scripts/test.sh");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let (stderr, last) = match err.trim_end().rsplit_once('\n') {
        Some((a, b)) => (a.to_string(), b.to_string()),
        None => (String::new(), err.trim_end().to_string()),
    };
    let mut it = last.split_whitespace();
    Measured {
        code: out.status.code().unwrap_or(-1),
        rss: it.next().and_then(|x| x.parse().ok()).unwrap_or(u64::MAX),
        secs: it.next().and_then(|x| x.parse().ok()).unwrap_or(0.0),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    }
}

#[test]
fn decompression_bombs_stream_in_constant_memory() {
    for compression in ["zstd", "xz"] {
        let (cache, path) = bomb_cache(&format!("bomb-{compression}"), compression);
        let compressed = std::fs::metadata(cache.join(format!("nar/bomb.nar.{compression}")))
            .unwrap()
            .len();
        let store = cache.display().to_string();
        let (code, rss, secs, stdout) = measured(&store, &["--json", "refs", "--evidence", &path]);
        eprintln!(
            "bomb {compression}: {compressed} bytes compressed → 2 GiB; refs: {secs} s, peak RSS {} MiB",
            rss / 1024
        );
        assert_eq!(code, 0, "{stdout}");
        // The one hold at the very end was found: all 2 GiB were scanned.
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let e = &v["edges"][0];
        assert_eq!(e["files"][0], "", "{e}");
        assert!(
            e["evidence"][0]["offset"].as_u64().unwrap() > 2 * GIB,
            "{e}"
        );
        assert!(
            rss < 150 * 1024,
            "{compression}: peak RSS {rss} KiB for a 2 GiB file"
        );
    }
}

// ---------------------------------------------------------------------
// Large trees, hostile ELF headers, huge narinfos and reference lists:
// caches written here in the real formats (narinfo + zstd NAR, the way
// `nix copy` lays them out), each run measured with GNU time.

const NIX32: &[u8; 32] = b"0123456789abcdfghijklmnpqrsvwxyz";

/// A valid, distinct 32-character store hash for `(tag, i)`.
fn store_hash(tag: u8, i: u64) -> String {
    let mut s = vec![NIX32[(tag % 32) as usize]; 32];
    let mut v = i;
    for c in s.iter_mut().rev().take(13) {
        *c = NIX32[(v % 32) as usize];
        v /= 32;
    }
    String::from_utf8(s).unwrap()
}

/// A `file://` cache being written: `nix-cache-info`, `nar/`, narinfos.
struct TestCache {
    dir: std::path::PathBuf,
}

/// What a NAR file written to a cache came to.
struct NarFile {
    url: String,
    sha256_hex: String,
    nar_size: u64,
}

impl TestCache {
    fn new(name: &str) -> TestCache {
        let dir = scratch(name).join("cache");
        std::fs::create_dir_all(dir.join("nar")).unwrap();
        std::fs::write(
            dir.join("nix-cache-info"),
            "StoreDir: /nix/store\nWantMassQuery: 1\nPriority: 40\n",
        )
        .unwrap();
        TestCache { dir }
    }

    fn store(&self) -> String {
        self.dir.display().to_string()
    }

    /// Writes `nar/<file>.nar.zst`, the NAR that `body` writes after the
    /// magic string, hashing it as it goes.
    fn nar(&self, file: &str, body: impl FnOnce(&mut Hashed)) -> NarFile {
        let url = format!("nar/{file}.nar.zst");
        let out = std::io::BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(self.dir.join(&url)).unwrap(),
        );
        let w = zstd::stream::write::Encoder::new(out, 1)
            .unwrap()
            .auto_finish();
        let mut w = Hashed {
            w: Box::new(w),
            h: Sha256::new(),
            n: 0,
        };
        w.string(b"nix-archive-1");
        body(&mut w);
        let Hashed { w, h, n } = w;
        drop(w);
        let hash: [u8; 32] = h.finalize().into();
        NarFile {
            url,
            sha256_hex: hash.iter().map(|b| format!("{b:02x}")).collect(),
            nar_size: n,
        }
    }

    /// Writes the narinfo of `path` (a full store path) for `nar`, with
    /// `refs` (base names) and any `extra` lines.
    fn narinfo(&self, path: &str, nar: &NarFile, refs: &[String], extra: &str) {
        let hash = &path[11..43];
        let text = format!(
            "StorePath: {path}\nURL: {}\nCompression: zstd\nNarHash: sha256:{}\nNarSize: {}\nReferences: {}\n{extra}",
            nar.url,
            nar.sha256_hex,
            nar.nar_size,
            refs.join(" ")
        );
        // Signed by the key `heft()` trusts, as a cache owner signs.
        let text = sign_narinfo(&text, &test_key());
        std::fs::write(self.dir.join(format!("{hash}.narinfo")), text).unwrap();
    }
}

impl Hashed {
    /// A regular file node with `data` as its contents.
    fn file(&mut self, executable: bool, data: &[u8]) {
        for t in [&b"("[..], b"type", b"regular"] {
            self.string(t);
        }
        if executable {
            self.string(b"executable");
            self.string(b"");
        }
        self.string(b"contents");
        self.string(data);
        self.string(b")");
    }
    /// `entry ( name NAME node`: the node follows, then [`Hashed::end_entry`].
    fn entry(&mut self, name: &[u8]) {
        for t in [&b"entry"[..], b"(", b"name", name, b"node"] {
            self.string(t);
        }
    }
    fn end_entry(&mut self) {
        self.string(b")");
    }
    fn open_dir(&mut self) {
        for t in [&b"("[..], b"type", b"directory"] {
            self.string(t);
        }
    }
    fn close_dir(&mut self) {
        self.string(b")");
    }
    fn symlink(&mut self, target: &[u8]) {
        for t in [&b"("[..], b"type", b"symlink", b"target", target, b")"] {
            self.string(t);
        }
    }
}

/// A store path of one file naming nothing, for references to point at.
fn leaf(cache: &TestCache, path: &str) -> NarFile {
    let nar = cache.nar(&path[11..43], |w| w.file(false, b"leaf\n"));
    cache.narinfo(path, &nar, &[], "");
    nar
}

const ENTRIES: u64 = 1_000_000;

/// A directory of a million entries: `split` and `refs` stay within a
/// stated bound per entry (documented in docs/guide/stores-and-trust.md, "Trust and limits").
#[test]
fn a_million_entry_directory_costs_a_bounded_amount_per_entry() {
    let cache = TestCache::new("million");
    let dep = format!("/nix/store/{}-dep-1.0", store_hash(3, 1));
    leaf(&cache, &dep);
    let path = format!("/nix/store/{}-wide-1.0", store_hash(7, 1));
    let holder = ENTRIES / 2;
    let started = std::time::Instant::now();
    let nar = cache.nar(&path[11..43], |w| {
        w.open_dir();
        for i in 0..ENTRIES {
            w.entry(format!("f{i:07}").as_bytes());
            if i == holder {
                w.file(false, format!("see {dep}/lib\n").as_bytes());
            } else {
                w.file(false, b"");
            }
            w.end_entry();
        }
        w.close_dir();
    });
    cache.narinfo(&path, &nar, &[dep[11..].to_string()], "");
    eprintln!(
        "million: NAR of {} MiB written in {:.1} s",
        nar.nar_size >> 20,
        started.elapsed().as_secs_f64()
    );
    let store = cache.store();

    let (code, rss_refs, secs, stdout) = measured(&store, &["--json", "refs", "--evidence", &path]);
    eprintln!("million: refs {secs} s, peak RSS {} MiB", rss_refs / 1024);
    assert_eq!(code, 0, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let e = &v["edges"][0];
    assert_eq!(e["reference"], dep.as_str(), "{e}");
    assert_eq!(e["files"][0], format!("f{holder:07}"), "{e}");

    // f05* is the 100,000 files f0500000..f0599999, the holder among them.
    let m = measure(
        &[],
        &store,
        &["split", "--move", "f05*=dev", "--root", &path, &path],
    );
    eprintln!("million: split {} s, peak RSS {} MiB", m.secs, m.rss / 1024);
    assert_eq!(m.code, 0, "{}{}", m.stdout, m.stderr);
    assert!(m.stdout.contains("dev"), "{}", m.stdout);
    let rss_split = m.rss;

    for (what, rss, per_entry) in [
        ("refs", rss_refs, REFS_PER_ENTRY),
        ("split", rss_split, SPLIT_PER_ENTRY),
    ] {
        let bound = BASE_KIB + ENTRIES * per_entry / 1024;
        assert!(
            rss <= bound,
            "{what}: peak RSS {rss} KiB for {ENTRIES} entries, past the bound of {BASE_KIB} KiB + {per_entry} B per entry"
        );
    }
}

/// The memory bounds per NAR entry stated in docs/guide/stores-and-trust.md, "Trust and limits"
/// (measured: refs 83 B, split 270 B per entry of an 8-byte name), and the
/// constant part (the binary, thread stacks, decompression buffers).
const REFS_PER_ENTRY: u64 = 128;
const SPLIT_PER_ENTRY: u64 = 320;
const BASE_KIB: u64 = 64 * 1024;

/// ELF files whose section header table claims 2^32 entries (and more),
/// or lies past the end of the file, inside a NAR: `refs` neither crashes
/// nor allocates what the headers claim; each is a `bad-elf` problem
/// naming the file, and the reference is still found by the raw scan.
#[test]
fn hostile_elf_section_tables_are_problems_not_crashes() {
    let cache = TestCache::new("hostile-elf");
    let dep = format!("/nix/store/{}-dep-1.0", store_hash(3, 2));
    leaf(&cache, &dep);
    let dir = cache.dir.parent().unwrap().to_path_buf();
    let src = dir.join("prog.c");
    std::fs::write(
        &src,
        format!(
            "#include <stdio.h>\nstatic const char *data = \"{dep}/share/data\";\n\
             int main(void) {{ puts(data); return 0; }}\n"
        ),
    )
    .unwrap();
    let exe = dir.join("prog");
    run(std::process::Command::new("gcc")
        .arg("-O0")
        .arg("-o")
        .arg(&exe)
        .arg(&src));
    let good = std::fs::read(&exe).unwrap();
    assert_eq!(&good[..5], b"\x7fELF\x02", "a 64-bit ELF from gcc");
    let le = |b: &[u8], at: usize, n: usize| -> u64 {
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(&b[at..at + n]);
        u64::from_le_bytes(v)
    };
    let shoff = le(&good, 0x28, 8) as usize;
    let len = good.len() as u64;
    // ELF64 header: e_shoff at 0x28, e_shnum at 0x3c; section 0's
    // sh_size at +0x20 holds the count when e_shnum is 0.
    let patched = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        f(&mut b);
        b
    };
    let variants: Vec<(&str, Vec<u8>)> = vec![
        (
            "shnum-2pow32",
            patched(&|b| {
                b[0x3c..0x3e].copy_from_slice(&0u16.to_le_bytes());
                b[shoff + 0x20..shoff + 0x28].copy_from_slice(&(1u64 << 32).to_le_bytes());
            }),
        ),
        (
            "shnum-2pow32-1",
            patched(&|b| {
                b[0x3c..0x3e].copy_from_slice(&0u16.to_le_bytes());
                b[shoff + 0x20..shoff + 0x28].copy_from_slice(&u64::from(u32::MAX).to_le_bytes());
            }),
        ),
        (
            "shnum-u64max",
            patched(&|b| {
                b[0x3c..0x3e].copy_from_slice(&0u16.to_le_bytes());
                b[shoff + 0x20..shoff + 0x28].copy_from_slice(&u64::MAX.to_le_bytes());
            }),
        ),
        (
            "shnum-65535",
            patched(&|b| b[0x3c..0x3e].copy_from_slice(&0xffffu16.to_le_bytes())),
        ),
        (
            "shoff-past-end",
            patched(&|b| b[0x28..0x30].copy_from_slice(&(len + 4096).to_le_bytes())),
        ),
        (
            "shoff-wraps",
            patched(&|b| b[0x28..0x30].copy_from_slice(&(u64::MAX - 7).to_le_bytes())),
        ),
        (
            "phoff-past-end",
            patched(&|b| b[0x20..0x28].copy_from_slice(&(len * 2).to_le_bytes())),
        ),
    ];
    let path = format!("/nix/store/{}-hostile-elf-1.0", store_hash(7, 2));
    let mut names: Vec<&str> = variants.iter().map(|(n, _)| *n).collect();
    names.push("intact");
    names.sort();
    let nar = cache.nar(&path[11..43], |w| {
        w.open_dir();
        w.entry(b"bin");
        w.open_dir();
        for name in &names {
            let bytes = match variants.iter().find(|(n, _)| n == name) {
                Some((_, b)) => b,
                None => &good,
            };
            w.entry(name.as_bytes());
            w.file(true, bytes);
            w.end_entry();
        }
        w.close_dir();
        w.end_entry();
        w.close_dir();
    });
    cache.narinfo(&path, &nar, &[dep[11..].to_string()], "");
    let (code, rss, secs, stdout) =
        measured(&cache.store(), &["--json", "refs", "--evidence", &path]);
    eprintln!("hostile ELF: refs {secs} s, peak RSS {} MiB", rss / 1024);
    assert_eq!(code, 3, "malformed ELF files holding a reference: {stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let e = v["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["reference"] == dep.as_str())
        .unwrap();
    let files: Vec<&str> = e["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    let want: Vec<String> = names.iter().map(|n| format!("bin/{n}")).collect();
    assert_eq!(files, want, "the raw scan finds every copy: {e}");
    let problems = v["problems"].as_array().unwrap();
    for (name, _) in &variants {
        let p = problems
            .iter()
            .find(|p| p["file"] == format!("bin/{name}").as_str())
            .unwrap_or_else(|| panic!("{name}: no problem in {problems:?}"));
        eprintln!("hostile ELF {name}: {}", p["message"]);
        assert_eq!(p["kind"], "bad-elf", "{p}");
        assert_eq!(p["path"], path.as_str(), "{p}");
    }
    assert!(
        !problems.iter().any(|p| p["file"] == "bin/intact"),
        "{problems:?}"
    );
    // The intact copy's hold is placed in its section.
    assert!(rss < 100 * 1024, "peak RSS {rss} KiB");
}

/// Narinfos past the 16 MiB limit (a 100 MiB padding field; Nix writes a
/// few KiB) are refused with an error naming the file and the limit, from
/// a file:// cache and over HTTP, in bounded memory; a listing past its
/// 16 MiB limit is not read (the NAR gives the tree).
#[test]
fn huge_narinfos_and_listings_are_refused_in_bounded_memory() {
    let cache = TestCache::new("huge-narinfo");
    let dep = format!("/nix/store/{}-dep-1.0", store_hash(3, 3));
    leaf(&cache, &dep);
    let path = format!("/nix/store/{}-huge-1.0", store_hash(7, 3));
    // A symlink farm: its listing alone would answer `refs`.
    let target = format!("{dep}/lib");
    let nar = cache.nar(&path[11..43], |w| {
        w.open_dir();
        w.entry(b"lib");
        w.symlink(target.as_bytes());
        w.end_entry();
        w.close_dir();
    });
    let refs = [dep[11..].to_string()];
    let pad = format!("Padding: {}\n", "x".repeat(100 << 20));
    cache.narinfo(&path, &nar, &refs, &pad);
    let file = cache.dir.join(format!("{}.narinfo", &path[11..43]));
    assert!(std::fs::metadata(&file).unwrap().len() > 100 << 20);
    let (code, rss, secs, _) = measured(&cache.store(), &["size", &path]);
    let o = heft_run(Some(&cache.store()), &["size", &path]);
    eprintln!(
        "100 MiB narinfo, file://: {secs} s, peak RSS {} MiB",
        rss / 1024
    );
    assert_eq!(code, 1);
    assert_error(&o, &file.display().to_string());
    assert!(
        o.stderr.contains("16.0 MiB limit for a narinfo"),
        "{}",
        o.stderr
    );
    assert!(rss < 64 * 1024, "peak RSS {rss} KiB");

    // Over HTTP: refused from its Content-Length, before the body is read.
    let server = common::http_server::FileServer::start(&cache.dir);
    let xdg = cache.dir.parent().unwrap().join("xdg");
    let url = server.url();
    let env = [("XDG_CACHE_HOME", xdg.to_str().unwrap())];
    let o = heft_run_env(&env, Some(&url), &["size", &path]);
    assert_error(&o, &format!("{url}/{}.narinfo", &path[11..43]));
    assert!(
        o.stderr.contains("16.0 MiB limit for a narinfo"),
        "{}",
        o.stderr
    );
    let Measured {
        code, rss, secs, ..
    } = measure(&env, &url, &["size", &path]);
    eprintln!(
        "100 MiB narinfo, HTTP: {secs} s, peak RSS {} MiB",
        rss / 1024
    );
    assert_eq!(code, 1);
    assert!(rss < 64 * 1024, "peak RSS {rss} KiB");

    // A 100 MiB listing next to a sane narinfo: not read; the NAR is.
    cache.narinfo(&path, &nar, &refs, "");
    let ls = cache.dir.join(format!("{}.ls", &path[11..43]));
    let mut listing = format!(
        r#"{{"version":1,"root":{{"type":"directory","entries":{{"lib":{{"type":"symlink","target":"{target}"}}}},"pad":""#
    );
    listing.push_str(&"y".repeat(100 << 20));
    listing.push_str(r#""}}"#);
    std::fs::write(&ls, listing).unwrap();
    for store in [cache.store(), url.clone()] {
        let Measured {
            code,
            rss,
            secs,
            stdout,
            ..
        } = measure(&env, &store, &["--json", "refs", &path]);
        eprintln!(
            "100 MiB listing, {store}: {secs} s, peak RSS {} MiB",
            rss / 1024
        );
        assert_eq!(code, 0, "{stdout}");
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(v["edges"][0]["files"][0], "lib", "{v}");
        assert!(rss < 64 * 1024, "peak RSS {rss} KiB");
    }
    let served = server.log();
    assert!(
        served.iter().any(|p| p.ends_with(".ls")) && served.iter().any(|p| p.starts_with("/nar/")),
        "the listing was asked for, and the NAR gave the tree: {served:?}"
    );
}

const LEAVES: u64 = 100_000;

/// A path referencing 100,000 paths, each of which references one base:
/// from a file:// cache (100,002 narinfos, one 4 MiB References line) and
/// from `nix path-info --json` output, `size` and `why` answer in time and
/// memory proportional to the graph.
#[test]
fn a_hundred_thousand_references() {
    let cache = TestCache::new("wide-refs");
    let base = format!("/nix/store/{}-base-1.0", store_hash(3, 4));
    let base_nar = leaf(&cache, &base);
    // Leaves share one NAR file, as identical NARs do in a cache.
    let leaf_nar = cache.nar("leaf", |w| w.file(false, b"leaf\n"));
    let leaves: Vec<String> = (0..LEAVES)
        .map(|i| format!("/nix/store/{}-leaf-{i:05}", store_hash(5, i)))
        .collect();
    let started = std::time::Instant::now();
    for l in &leaves {
        cache.narinfo(l, &leaf_nar, &[base[11..].to_string()], "");
    }
    let root = format!("/nix/store/{}-wide-root-1.0", store_hash(7, 4));
    let mut refs: Vec<String> = leaves.iter().map(|l| l[11..].to_string()).collect();
    refs.push(base[11..].to_string());
    refs.sort();
    let root_nar = cache.nar(&root[11..43], |w| {
        let mut text = String::new();
        for l in &leaves {
            text.push_str(l);
            text.push('\n');
        }
        text.push_str(&base);
        text.push('\n');
        w.file(false, text.as_bytes());
    });
    cache.narinfo(&root, &root_nar, &refs, "");
    eprintln!(
        "100k refs: cache written in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let total = root_nar.nar_size + LEAVES * leaf_nar.nar_size + base_nar.nar_size;

    // The same graph as `nix path-info --json` prints it (array shape).
    let json = cache.dir.parent().unwrap().join("path-info.json");
    let mut items = vec![serde_json::json!({
        "path": root, "narSize": root_nar.nar_size,
        "references": refs.iter().map(|r| format!("/nix/store/{r}")).collect::<Vec<_>>(),
        "narHash": format!("sha256:{}", root_nar.sha256_hex), "valid": true,
    })];
    for l in &leaves {
        items.push(serde_json::json!({
            "path": l, "narSize": leaf_nar.nar_size, "references": [&base],
            "narHash": format!("sha256:{}", leaf_nar.sha256_hex), "valid": true,
        }));
    }
    items.push(serde_json::json!({
        "path": base, "narSize": base_nar.nar_size, "references": [],
        "narHash": format!("sha256:{}", base_nar.sha256_hex), "valid": true,
    }));
    std::fs::write(&json, serde_json::to_vec(&items).unwrap()).unwrap();

    let paths = (LEAVES + 2) as usize;
    for (label, store) in [
        ("file://", format!("file://{}", cache.store())),
        ("path-info JSON", json.display().to_string()),
    ] {
        let (code, rss, secs, stdout) = measured(&store, &["--json", "size", "--top", "3", &root]);
        eprintln!(
            "100k refs, {label}: size {secs} s, peak RSS {} MiB",
            rss / 1024
        );
        assert_eq!(code, 0, "{stdout}");
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(v["path_count"], paths, "{label}");
        assert_eq!(v["closure_size"], total, "{label}");
        assert!(
            rss < GRAPH_BASE_KIB + paths as u64 * GRAPH_PER_PATH_BYTES / 1024,
            "{label}: peak RSS {rss} KiB"
        );

        // Why a leaf: the one chain, its edge read from the root's NAR (the
        // JSON source runs the same chain search without contents, so only
        // the base is asked there).
        if label == "file://" {
            let pick = (LEAVES * 7 / 9) as usize;
            let name = format!("leaf-{pick:05}");
            let (code, rss, secs, stdout) = measured(&store, &["--json", "why", &root, &name]);
            eprintln!(
                "100k refs, {label}: why leaf {secs} s, peak RSS {} MiB",
                rss / 1024
            );
            assert_eq!(code, 0, "{label}: {stdout}");
            let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(v["chain_count"], 1, "{label}");
            assert_eq!(v["chains"][0][1], leaves[pick].as_str(), "{label}");
            assert!(
                rss < GRAPH_BASE_KIB + paths as u64 * GRAPH_PER_PATH_BYTES / 1024,
                "{label}: peak RSS {rss} KiB"
            );
        }

        // Why the base: 100,001 chains (directly and through every leaf).
        let (code, rss, secs, stdout) = measured(&store, &["--json", "why", &root, "base"]);
        eprintln!(
            "100k refs, {label}: why base {secs} s, peak RSS {} MiB",
            rss / 1024
        );
        assert!(
            code == 0 || (code == 3 && label != "file://"),
            "{label}: {stdout}"
        );
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(v["chain_count"], LEAVES + 1, "{label}");
        assert!(
            rss < GRAPH_BASE_KIB + paths as u64 * GRAPH_PER_PATH_BYTES / 1024,
            "{label}: peak RSS {rss} KiB"
        );
    }
}

/// The graph's memory bound used above: a constant and so much per path.
const GRAPH_BASE_KIB: u64 = 64 * 1024;
const GRAPH_PER_PATH_BYTES: u64 = 4096;

/// A symlink target past PATH_MAX (4096 bytes) in a cache's NAR is refused
/// like the other limits, with or without a listing (a listing naming it
/// is refused too, and the NAR read instead).
#[test]
fn symlink_targets_past_path_max_are_refused() {
    let cache = TestCache::new("long-link");
    let dep = format!("/nix/store/{}-dep-1.0", store_hash(3, 5));
    leaf(&cache, &dep);
    let path = format!("/nix/store/{}-long-link-1.0", store_hash(7, 5));
    let target = format!("{dep}/{}", "t".repeat(5000));
    let nar = cache.nar(&path[11..43], |w| {
        w.open_dir();
        w.entry(b"link");
        w.symlink(target.as_bytes());
        w.end_entry();
        w.close_dir();
    });
    cache.narinfo(&path, &nar, &[dep[11..].to_string()], "");
    for with_listing in [false, true] {
        if with_listing {
            std::fs::write(
                cache.dir.join(format!("{}.ls", &path[11..43])),
                format!(
                    r#"{{"version":1,"root":{{"type":"directory","entries":{{"link":{{"type":"symlink","target":"{target}"}}}}}}}}"#
                ),
            )
            .unwrap();
        }
        let o = heft_run(Some(&cache.store()), &["--json", "refs", &path]);
        assert_eq!(o.code, 3, "listing {with_listing}: {}", o.stderr);
        let msg = format!(
            "symlink target of {} bytes is longer than the 4096-byte limit",
            target.len()
        );
        assert!(o.stderr.contains(&msg), "{}", o.stderr);
        assert!(o.stderr.contains(&path), "{}", o.stderr);
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(v["problems"][0]["kind"], "corrupt-nar", "{v}");
    }
}

/// Peak RSS of a `refs` or `advise` run with a 2 GiB file in the closure
/// (docs/guide/stores-and-trust.md, "Trust and limits"): the binary, thread stacks, decompression
/// buffers and one scanning window of the file, never the file.
const BIG_FILE_RSS_KIB: u64 = 256 * 1024;

/// A program with a 2 GiB loaded data section (tests/fixtures/big-elf.nix,
/// built by real Nix, sparse on disk): `refs` maps it to classify its holds
/// and scans the section for library names, in a window at a time, so peak
/// RSS stays under 256 MiB from the local store and from a `file://`
/// cache (`nix copy`, zstd), and the evidence is all there: the hold at the
/// very end of the section, placed in it, and the RUNPATH entry serving the
/// library named only in the middle of it.
#[test]
fn a_two_gib_elf_file_is_scanned_in_a_bounded_window() {
    let root = nix_build(&repo().join("tests/fixtures/big-elf.nix"), &[])
        .pop()
        .unwrap();
    let big = std::path::Path::new(&root).join("bin/big");
    let size = std::fs::metadata(&big).unwrap().len();
    assert!(size > 2 * GIB, "{size}");
    // The same program with a 4 MiB section: what the evidence must be,
    // offsets and excerpts aside.
    let small = run(std::process::Command::new("nix-build")
        .arg(repo().join("tests/fixtures/big-elf.nix"))
        .args(["--arg", "size", "4194304", "--no-out-link"])
        .args([
            "--option",
            "sandbox",
            "false",
            "--option",
            "substituters",
            "",
        ]))
    .trim()
    .to_string();
    let small_json = heft_run(None, &["--json", "refs", "--evidence", &small]);
    assert_eq!(small_json.code, 0, "{}", small_json.stderr);
    let small_shape = evidence_shape(&serde_json::from_str(&small_json.stdout).unwrap());
    let dir = scratch("big-elf");
    let cache = signed_cache_url(&dir.join("cache"), "compression=zstd");
    run(nix().args(["copy", "--to", &cache, &root]));
    // A local cache per run: over HTTP a kept read would spare the scan.
    let xdg = |run: &str| dir.join(format!("xdg-{run}")).display().to_string();
    let file_cache = format!("file://{}/cache", dir.display());
    let server = common::http_server::FileServer::start(&dir.join("cache"));
    let http = server.url();
    for (label, store) in [
        ("local", "auto"),
        ("file://", file_cache.as_str()),
        ("http://", http.as_str()),
    ] {
        let refs_xdg = xdg(&format!("refs-{}", label.trim_end_matches("://")));
        let env = [("XDG_CACHE_HOME", refs_xdg.as_str())];
        let m = measure(&env, store, &["--json", "refs", "--evidence", &root]);
        eprintln!(
            "2 GiB ELF, {label}: refs {} s, peak RSS {} MiB",
            m.secs,
            m.rss / 1024
        );
        assert_eq!(m.code, 0, "{label}: {}{}", m.stdout, m.stderr);
        let v: serde_json::Value = serde_json::from_str(&m.stdout).unwrap();
        assert_eq!(
            evidence_shape(&v),
            small_shape,
            "{label}: the evidence differs from the 4 MiB program's"
        );
        let edges = v["edges"].as_array().unwrap();
        let edge = |name: &str| {
            edges
                .iter()
                .find(|e| e["reference"].as_str().unwrap().ends_with(name))
                .unwrap_or_else(|| panic!("{label}: no edge to {name}: {v}"))
        };
        let data = edge("-big-data-1.0");
        let last = data["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["offset"].as_u64().unwrap() > 2 * GIB)
            .unwrap_or_else(|| panic!("{label}: the hold at the end was not found: {data}"));
        assert_eq!(last["file"], "bin/big", "{last}");
        assert_eq!(last["kind"], "elf-string", "{last}");
        assert!(
            last["context"].as_str().unwrap().contains("/share/big"),
            "{last}"
        );
        let plugin = edge("-huge-plugin-1.0");
        assert_eq!(plugin["verdict"], "runtime", "{plugin}");
        assert_eq!(
            plugin["evidence"][0]["serves"],
            serde_json::json!(["libhuge-plugin.so.3"]),
            "{label}: the name in the middle of .bigdata was found: {plugin}"
        );
        assert!(
            m.rss < BIG_FILE_RSS_KIB,
            "{label}: refs peak RSS {} KiB for a 2 GiB file",
            m.rss
        );
        // advise examines it all (`--min-saving 0`): the same bound.
        let advise_xdg = xdg(&format!("advise-{}", label.trim_end_matches("://")));
        let m = measure(
            &[("XDG_CACHE_HOME", advise_xdg.as_str())],
            store,
            &["--json", "advise", "--min-saving", "0", &root],
        );
        eprintln!(
            "2 GiB ELF, {label}: advise {} s, peak RSS {} MiB",
            m.secs,
            m.rss / 1024
        );
        assert!(m.code == 0, "{label}: {}{}", m.stdout, m.stderr);
        assert!(
            m.rss < BIG_FILE_RSS_KIB,
            "{label}: advise peak RSS {} KiB for a 2 GiB file",
            m.rss
        );
    }
}

/// `refs --evidence` JSON with store paths as names and each piece of
/// evidence without its offset and excerpt: what a program says whatever
/// the size of its sections.
fn evidence_shape(v: &serde_json::Value) -> String {
    let mut v = v.clone();
    for e in v["edges"].as_array_mut().unwrap() {
        for ev in e["evidence"].as_array_mut().unwrap() {
            let o = ev.as_object_mut().unwrap();
            o.remove("offset");
            o.remove("context");
        }
    }
    let text = v["edges"].to_string();
    // `/nix/store/HASH-name` → `name`.
    let re = regex::Regex::new(r"/nix/store/[0-9a-z]{32}-").unwrap();
    re.replace_all(&text, "").into_owned()
}

/// NARs are read several at once (6, so that one download's wait overlaps
/// another's decompression and scanning): memory stays bounded by the
/// readers' windows, not by the files they read. Eight paths of one
/// 96 MiB file each (zeros, the leaf's store path at both ends), all read
/// by `refs ROOT` from a `file://` cache and over HTTP: were a reader to
/// hold its file, six at once would pass 576 MiB; the bound is 256 MiB.
#[test]
fn nars_read_six_at_once_stay_within_the_memory_bound() {
    const FILE: usize = 96 << 20;
    let cache = TestCache::new("six-at-once");
    let leaf_path = format!("/nix/store/{}-leaf-1.0", store_hash(3, 1));
    leaf(&cache, &leaf_path);
    let leaf_base = leaf_path[11..].to_string();
    let mut data = vec![0u8; FILE];
    data[..leaf_path.len()].copy_from_slice(leaf_path.as_bytes());
    data[FILE - leaf_path.len()..].copy_from_slice(leaf_path.as_bytes());
    let mut bigs = Vec::new();
    for i in 0..8u64 {
        let path = format!("/nix/store/{}-big-{i}", store_hash(4, i));
        let nar = cache.nar(&path[11..43], |w| w.file(false, &data));
        cache.narinfo(&path, &nar, std::slice::from_ref(&leaf_base), "");
        bigs.push(path[11..].to_string());
    }
    drop(data);
    let root = format!("/nix/store/{}-root-1.0", store_hash(5, 1));
    let text = format!(
        "{}\n",
        bigs.iter()
            .map(|b| format!("/nix/store/{b}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let nar = cache.nar(&root[11..43], |w| w.file(false, text.as_bytes()));
    cache.narinfo(&root, &nar, &bigs, "");
    let server = common::http_server::FileServer::start(&cache.dir);
    let file = format!("file://{}", cache.store());
    for store in [file.as_str(), server.url().as_str()] {
        let xdg = scratch_dir("six-at-once-xdg");
        let m = measure(
            &[("XDG_CACHE_HOME", xdg.to_str().unwrap())],
            store,
            &["--json", "refs", &root],
        );
        assert_eq!(m.code, 0, "{store}: {}", m.stderr);
        let v: serde_json::Value = serde_json::from_str(&m.stdout).unwrap();
        // Every big path's edge to the leaf is found, at both ends of its
        // file: each NAR was read to its end.
        let edges = v["edges"].as_array().expect("refs --json lists edges");
        for b in &bigs {
            let e = edges
                .iter()
                .find(|e| {
                    e["referrer"]
                        .as_str()
                        .is_some_and(|f| f.ends_with(b.as_str()))
                        && e["reference"]
                            .as_str()
                            .is_some_and(|t| t.ends_with("-leaf-1.0"))
                })
                .unwrap_or_else(|| panic!("{store}: no edge {b} -> leaf: {}", m.stdout));
            assert_eq!(e["kinds"]["binary"], 2, "{store}: {b}: {e}");
        }
        assert!(
            m.rss < 256 * 1024,
            "{store}: peak RSS {} MiB reading eight 96 MiB NARs",
            m.rss / 1024
        );
        eprintln!("{store}: peak RSS {} MiB, {:.1} s", m.rss / 1024, m.secs);
    }
}
