//! HTTP/2 and connection reuse (issue 25), against a real TLS server on
//! 127.0.0.1 (common/cache_server.rs: hyper with rustls, the
//! certificate from a CA the test makes with `openssl`, trusted through
//! `NIX_SSL_CERT_FILE` as Nix trusts it):
//!
//! - a server offering HTTP/2 gets every request of a run as a stream of
//!   one connection per 64 requests in flight, many at once, and the
//!   answers are exactly the `file://` cache's;
//! - requests in flight are bounded by `--http-connections` and by the
//!   server's own stream limit on each connection;
//! - a server offering only HTTP/1.1 gets a pool of keep-alive
//!   connections, never more than `--http-connections` of them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use crate::common::cache_server::{CacheServer, Options, Served};
use crate::common::commands::run;
use crate::common::*;

/// A TLS server over `root`: HTTP/2 offered or not, each answer after
/// `latency`, at most `max_streams` streams per connection.
fn serve(root: &Path, http2: bool, latency: Duration, max_streams: u32) -> CacheServer {
    let c = tls_certs();
    let mut opts = Options::new(root);
    opts.tls = Some((c.cert.clone(), c.key.clone()));
    opts.http2 = http2;
    opts.latency = latency;
    opts.max_streams = max_streams;
    CacheServer::start(opts).expect("the test server starts")
}

/// nix-heft with the test CA trusted and a cold local cache of its own.
fn over(server: &CacheServer, scratch: &str, args: &[&str]) -> Outcome {
    let xdg = scratch_dir(scratch);
    let o = heft_run_env(
        &[
            ("NIX_SSL_CERT_FILE", tls_certs().ca.to_str().unwrap()),
            ("XDG_CACHE_HOME", xdg.to_str().unwrap()),
            ("NIX_HEFT_HTTP_TIMEOUT", "20"),
        ],
        Some(&server.url()),
        args,
    );
    assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
    o
}

/// Requests asked more than once, by path.
fn repeated(served: &[Served]) -> BTreeMap<String, usize> {
    let mut n: BTreeMap<String, usize> = BTreeMap::new();
    for s in served {
        *n.entry(s.path.clone()).or_default() += 1;
    }
    n.retain(|p, c| *c > 1 && p != "/nix-cache-info");
    n
}

/// The synthetic narinfo cache of bench/narinfo_cache.py (real narinfo
/// format, unsigned), and its root.
fn narinfo_cache() -> &'static (PathBuf, String) {
    static C: OnceLock<(PathBuf, String)> = OnceLock::new();
    C.get_or_init(|| {
        let dir = scratch_dir("http2-narinfos");
        run(Command::new("python3")
            .arg(repo().join("bench/narinfo_cache.py"))
            .arg(&dir)
            .args(["--paths", "1200", "--levels", "10"]));
        let root = std::fs::read_to_string(dir.join("root.txt"))
            .unwrap()
            .trim()
            .to_string();
        (dir, root)
    })
}

#[test]
fn every_command_over_http2_is_the_file_answer_on_few_connections() {
    let cache = example_cache();
    let root = example_root();
    let server = serve(&cache, true, Duration::from_millis(10), 100);
    let file = format!("file://{}", cache.display());
    let named = |suffix: &str| {
        std::fs::read_dir(&cache)
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "narinfo"))
            .find_map(|e| {
                let t = std::fs::read_to_string(e.path()).unwrap();
                let p = t.lines().find_map(|l| l.strip_prefix("StorePath: "))?;
                p.ends_with(suffix).then(|| p.to_string())
            })
            .unwrap_or_else(|| panic!("the example has {suffix}"))
    };
    let (glibc, rocblas) = (named("-glibc-2.36"), named("-rocblas-5.7.1"));
    for args in [
        vec!["--json", "size", root.as_str()],
        vec!["--json", "refs", root.as_str()],
        vec!["--json", "why", root.as_str(), glibc.as_str()],
        vec!["--json", "advise", root.as_str()],
        vec!["--json", "advise", "--min-saving", "0", root.as_str()],
        vec![
            "--json",
            "partition",
            rocblas.as_str(),
            "--by",
            "gfx[0-9a-z]+",
        ],
    ] {
        server.reset();
        let o = over(&server, "http2-cmd", &args);
        let f = heft_run(Some(&file), &args);
        assert_eq!(f.code, 0, "{}", f.stderr);
        same(
            &o.stdout,
            &f.stdout,
            &format!("{args:?} over HTTP/2 vs file://"),
        );
        let served = server.served();
        assert!(!served.is_empty());
        let h1: Vec<&Served> = served.iter().filter(|s| s.version != "HTTP/2").collect();
        assert!(h1.is_empty(), "{args:?}: not HTTP/2: {h1:?}");
        // The default 128 requests in flight are spread over two
        // connections of 64 streams.
        assert!(
            server.connections() <= 2,
            "{args:?}: {} connections: {served:?}",
            server.connections()
        );
        assert_eq!(repeated(&served), BTreeMap::new(), "{args:?}: asked twice");
    }
}

#[test]
fn http2_streams_in_flight_are_bounded_by_http_connections_and_the_server() {
    let (dir, root) = narinfo_cache();
    let file = format!("file://{}", dir.display());
    let args = ["--no-require-sigs", "--json", "size", root.as_str()];
    let want = heft_run(Some(&file), &args);
    assert_eq!(want.code, 0, "{}", want.stderr);
    let paths = serde_json::from_str::<serde_json::Value>(&want.stdout).unwrap()["paths"]
        .as_array()
        .unwrap()
        .len();
    assert!(paths > 500, "{paths}");
    // Requests in flight allowed by nix-heft, and streams per connection
    // allowed by the server. nix-heft opens a connection per 64 requests
    // in flight, so the server may see min(asked, streams × connections).
    for (asked, streams) in [(8usize, 100u32), (64, 12), (128, 100), (128, 40)] {
        let connections = asked.div_ceil(64) as u64;
        let bound = (asked as u64).min(u64::from(streams) * connections);
        let server = serve(dir, true, Duration::from_millis(15), streams);
        let n = asked.to_string();
        let mut a = vec!["--http-connections", n.as_str()];
        a.extend(args);
        let o = over(&server, "http2-bound", &a);
        same(&o.stdout, &want.stdout, &format!("{a:?}"));
        let served = server.served();
        assert!(served.iter().all(|s| s.version == "HTTP/2"));
        assert_eq!(server.connections(), connections, "{a:?}");
        assert_eq!(repeated(&served), BTreeMap::new(), "{a:?}");
        let most = server.most_in_flight();
        assert!(
            most <= bound,
            "{a:?} against {streams} streams: {most} in flight"
        );
        // Multiplexed for real: with every answer 15 ms away and hundreds
        // of narinfos queued, more than half the allowed streams are used.
        assert!(
            most * 2 > bound,
            "{a:?} against {streams} streams: only {most} in flight"
        );
    }
}

#[test]
fn an_http1_only_server_gets_a_bounded_pool_of_kept_alive_connections() {
    let (dir, root) = narinfo_cache();
    let file = format!("file://{}", dir.display());
    let args = [
        "--http-connections",
        "6",
        "--no-require-sigs",
        "--json",
        "size",
        root.as_str(),
    ];
    let want = heft_run(Some(&file), &args);
    assert_eq!(want.code, 0, "{}", want.stderr);
    let server = serve(dir, false, Duration::from_millis(5), 100);
    let o = over(&server, "http1-pool", &args);
    same(&o.stdout, &want.stdout, "HTTP/1.1 over TLS vs file://");
    let served = server.served();
    assert!(served.iter().all(|s| s.version == "HTTP/1.1"));
    assert!(server.most_in_flight() <= 6, "{}", server.most_in_flight());
    // Kept alive: hundreds of requests over a handful of connections. A
    // connection goes back to hyper's pool from a task of its own, so a
    // thread may ask its next question a moment before, and open one more
    // connection than the 6 in flight.
    assert!(
        served.len() > 500 && server.connections() <= 12,
        "{} requests over {} connections",
        served.len(),
        server.connections()
    );
    assert_eq!(repeated(&served), BTreeMap::new());
}
