//! Bounded resources on hostile inputs (integrity issue): decompression
//! bombs are streamed in constant memory. Peak RSS and time are printed
//! (`--nocapture`) and recorded in BENCHMARKS.md; the memory bound is
//! asserted, the time never is.

mod common;

use std::io::Write;

use common::*;
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
        "xz" => Box::new(xz2::write::XzEncoder::new(out, 0)),
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
    std::fs::write(
        cache.join(format!("{hash}.narinfo")),
        format!(
            "StorePath: {path}\nURL: nar/bomb.nar.{compression}\nCompression: {compression}\n\
             NarHash: sha256:{hex}\nNarSize: {n}\nReferences: {hash}-bomb-1.0\n"
        ),
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

/// Peak RSS (KiB) and wall seconds of a run, from GNU time.
fn measured(store: &str, args: &[&str]) -> (i32, u64, f64, String) {
    let bin = assert_cmd::cargo::cargo_bin("nix-heft");
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "%M %e"])
        .arg(bin)
        .args(["--store", store])
        .args(args)
        .output()
        .expect("GNU time (/usr/bin/time) is installed by scripts/test.sh");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let last = err.lines().last().unwrap_or("").to_string();
    let mut it = last.split_whitespace();
    let rss: u64 = it.next().and_then(|x| x.parse().ok()).unwrap_or(u64::MAX);
    let secs: f64 = it.next().and_then(|x| x.parse().ok()).unwrap_or(0.0);
    (
        out.status.code().unwrap_or(-1),
        rss,
        secs,
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
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
