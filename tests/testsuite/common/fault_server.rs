//! The HTTP/1.1 binary cache server that misbehaves on purpose, for the
//! HTTP tests (tests/testsuite/http.rs, over caches `nix copy` wrote, and
//! tests/testsuite/http_faults.rs, which needs no Nix): 500s, 404s and 403s,
//! bodies cut off midway, stalls, Basic auth, encoded listings and delays,
//! with a log of every request. Threads over `std::net`, keep-alive.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Outcome, heft_run_env};

/// What the test server does wrong, on purpose.
#[derive(Default, Clone)]
pub struct Faults {
    /// Every URL answers 500 this many times before it answers properly.
    pub fail_first: u32,
    /// Request paths answered with 404.
    pub not_found: Vec<String>,
    /// Request paths answered with 403 (S3's answer for a missing key).
    pub forbidden: Vec<String>,
    /// NAR bodies are cut off halfway (the headers promise all of it) the
    /// first this many times each is sent.
    pub cut_nars: u32,
    /// Narinfo and listing bodies are cut off likewise, the first this
    /// many times each is sent.
    pub cut_small: u32,
    /// Requests are read and never answered.
    pub stall: bool,
    /// The `Authorization` header every request must carry.
    pub auth: Option<String>,
    /// Listings are sent with this Content-Encoding.
    pub ls_encoding: Option<&'static str>,
    /// Every request is answered after this long, times 1 to 4 by its path
    /// (a distant cache, whose answers come back out of order).
    pub delay: Duration,
}

#[derive(Clone, Debug)]
pub struct Logged {
    pub path: String,
    pub status: u16,
    pub encoding: Option<&'static str>,
    /// When the request was read, and when its delay was over.
    pub start: std::time::Instant,
    pub end: std::time::Instant,
    /// Requests waiting out their delay at once, this one included.
    pub in_flight: usize,
}

pub struct Server {
    port: u16,
    log: Arc<Mutex<Vec<Logged>>>,
}

impl Server {
    pub fn start(root: &Path, faults: Faults) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let hits = Arc::new(Mutex::new(HashMap::<String, u32>::new()));
        let (root, l2) = (root.to_path_buf(), log.clone());
        let waiting = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (root, faults, log, hits, waiting) = (
                    root.clone(),
                    faults.clone(),
                    l2.clone(),
                    hits.clone(),
                    waiting.clone(),
                );
                std::thread::spawn(move || serve(conn, &root, &faults, &log, &hits, &waiting));
            }
        });
        Server { port, log }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn log(&self) -> Vec<Logged> {
        self.log.lock().unwrap().clone()
    }

    /// Paths of NARs sent whole or in part (status 200).
    pub fn nars(&self) -> Vec<String> {
        self.log()
            .into_iter()
            .filter(|l| l.status == 200 && l.path.starts_with("/nar/"))
            .map(|l| l.path)
            .collect()
    }

    pub fn count(&self, suffix: &str) -> usize {
        self.log()
            .iter()
            .filter(|l| l.status == 200 && l.path.ends_with(suffix))
            .count()
    }

    pub fn clear(&self) {
        self.log.lock().unwrap().clear();
    }
}

/// One keep-alive connection: requests until the client closes it.
fn serve(
    conn: TcpStream,
    root: &Path,
    faults: &Faults,
    log: &Mutex<Vec<Logged>>,
    hits: &Mutex<HashMap<String, u32>>,
    waiting: &std::sync::atomic::AtomicUsize,
) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut out = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
        let mut auth = None;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':')
                && k.eq_ignore_ascii_case("authorization")
            {
                auth = Some(v.trim().to_string());
            }
        }
        if faults.stall {
            std::thread::sleep(Duration::from_secs(60));
            return;
        }
        let start = std::time::Instant::now();
        let in_flight = waiting.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if !faults.delay.is_zero() {
            let k = path.bytes().map(u32::from).sum::<u32>() % 4 + 1;
            std::thread::sleep(faults.delay * k);
        }
        waiting.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        let end = std::time::Instant::now();
        let n = {
            let mut h = hits.lock().unwrap();
            let n = h.entry(path.clone()).or_default();
            *n += 1;
            *n
        };
        let file = root.join(path.trim_start_matches('/'));
        let (status, mut body, mut encoding) = if n <= faults.fail_first {
            (500, b"try again".to_vec(), None)
        } else if faults.auth.is_some() && auth != faults.auth {
            (401, b"who are you".to_vec(), None)
        } else if faults.forbidden.contains(&path) {
            (403, b"access denied".to_vec(), None)
        } else if faults.not_found.contains(&path) || path.contains("..") || !file.is_file() {
            (404, b"no such file".to_vec(), None)
        } else {
            (200, std::fs::read(&file).unwrap(), None)
        };
        if status == 200
            && path.ends_with(".ls")
            && let Some(enc) = faults.ls_encoding
        {
            body = encode(enc, &body);
            encoding = Some(enc);
        }
        log.lock().unwrap().push(Logged {
            path: path.clone(),
            status,
            encoding,
            start,
            end,
            in_flight,
        });
        let mut head = format!(
            "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: keep-alive\r\n",
            body.len()
        );
        if let Some(e) = encoding {
            head.push_str(&format!("Content-Encoding: {e}\r\n"));
        }
        head.push_str("\r\n");
        if out.write_all(head.as_bytes()).is_err() {
            return;
        }
        let small = path.ends_with(".narinfo") || path.ends_with(".ls");
        let cut = if small {
            faults.cut_small
        } else if path.starts_with("/nar/") {
            faults.cut_nars
        } else {
            0
        };
        if status == 200 && n - faults.fail_first <= cut {
            let _ = out.write_all(&body[..body.len() / 2]);
            let _ = out.flush();
            return; // closes the connection mid-body
        }
        if out.write_all(&body).is_err() {
            return;
        }
    }
}

fn encode(enc: &str, data: &[u8]) -> Vec<u8> {
    match enc {
        "br" => {
            let mut out = Vec::new();
            let mut w = brotli::CompressorWriter::new(&mut out, 4096, 9, 22);
            w.write_all(data).unwrap();
            drop(w);
            out
        }
        "zstd" => zstd::encode_all(data, 3).unwrap(),
        "gzip" => {
            let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            w.write_all(data).unwrap();
            w.finish().unwrap()
        }
        other => panic!("no encoder for {other}"),
    }
}

/// Runs with a fresh (or the given) local cache and no netrc around.
pub fn run_in(xdg: &Path, store: &str, args: &[&str]) -> Outcome {
    let home = xdg.join("home");
    std::fs::create_dir_all(&home).unwrap();
    heft_run_env(
        &[
            ("XDG_CACHE_HOME", xdg.to_str().unwrap()),
            ("HOME", home.to_str().unwrap()),
            ("NIX_CONF_DIR", home.to_str().unwrap()),
            ("NIX_HEFT_HTTP_TIMEOUT", "5"),
        ],
        Some(store),
        args,
    )
}
