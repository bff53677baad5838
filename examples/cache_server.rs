//! `cargo run --release --example cache_server -- DIR [options]`: serves a
//! binary cache directory on 127.0.0.1 like a distant CDN, for the network
//! benchmarks (bench/closure-queue.sh, bench/http.sh). The server itself is
//! tests/testsuite/common/cache_server.rs, the one the HTTP/2 tests use.
//!
//! Options: `--port N` (default: a free one; the port is printed on the
//! first line of stdout), `--latency-ms MS` before every answer, `--mbps R`
//! per answer's body, `--tls CERT KEY` for HTTPS, `--http1-only` (offer no
//! HTTP/2), `--max-streams N` per HTTP/2 connection (default 100),
//! `--log FILE` (one line per request: path status protocol connection
//! bytes).

#[path = "../tests/testsuite/common/cache_server.rs"]
#[allow(dead_code)] // the tests use the rest
mod cache_server;

use std::path::PathBuf;
use std::time::Duration;

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: cache_server DIR [--port N] [--latency-ms MS] [--mbps R] \
                 [--tls CERT KEY] [--http1-only] [--max-streams N] [--log FILE]";
    let Some(root) = args.next() else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let mut opts = cache_server::Options::new(&PathBuf::from(root));
    let value = |name: &str, args: &mut dyn Iterator<Item = String>| -> String {
        args.next().unwrap_or_else(|| {
            eprintln!("{name} needs a value\n{usage}");
            std::process::exit(2)
        })
    };
    let number = |s: String| -> f64 {
        s.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .unwrap_or_else(|| {
                eprintln!("not a number: {s}\n{usage}");
                std::process::exit(2)
            })
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => opts.port = number(value(&a, &mut args)) as u16,
            "--latency-ms" => {
                opts.latency = Duration::from_secs_f64(number(value(&a, &mut args)) / 1000.0)
            }
            "--mbps" => opts.rate = Some((number(value(&a, &mut args)) * 1e6) as u64),
            "--tls" => {
                let cert = PathBuf::from(value(&a, &mut args));
                let key = PathBuf::from(value(&a, &mut args));
                opts.tls = Some((cert, key));
            }
            "--http1-only" => opts.http2 = false,
            "--max-streams" => opts.max_streams = number(value(&a, &mut args)) as u32,
            "--log" => opts.log_file = Some(PathBuf::from(value(&a, &mut args))),
            _ => {
                eprintln!("unknown option {a}\n{usage}");
                std::process::exit(2);
            }
        }
    }
    let server = cache_server::CacheServer::start(opts).unwrap_or_else(|e| {
        eprintln!("cache_server: {e}");
        std::process::exit(1)
    });
    println!("{}", server.port());
    eprintln!("serving {}", server.url());
    loop {
        std::thread::park();
    }
}
