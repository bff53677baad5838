//! A plain HTTP/1.1 file server on 127.0.0.1 for tests that need a real
//! binary cache over HTTP and no injected faults (live_store, bounds,
//! integrity; tests/testsuite/http.rs has its own,
//! which also misbehaves on purpose): threads over `std::net`, keep-alive,
//! a log of every request answered 200, and one of every request asked.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A server of the files under one directory.
pub struct FileServer {
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
    asked: Arc<Mutex<Vec<Asked>>>,
}

/// One request a [`FileServer`] answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// The request path (`/HASH.narinfo`, `/nar/…`).
    pub path: String,
    /// 200 or 404.
    pub status: u16,
    /// When, as a count shared by every server of the test process: which
    /// of two servers was asked first.
    pub seq: u64,
}

/// The order of requests over every server.
static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl FileServer {
    /// Serves `root` on a free port of 127.0.0.1 until the test ends.
    pub fn start(root: &Path) -> FileServer {
        FileServer::start_slow(root, Duration::ZERO)
    }

    /// Serves `root` like [`FileServer::start`], each NAR after `delay`: a
    /// slow cache, for tests that must act while a reader is mid-way.
    pub fn start_slow(root: &Path, delay: Duration) -> FileServer {
        FileServer::start_with(root, delay, Duration::ZERO)
    }

    /// Serves `root` with every answer after `latency` (a cache far away:
    /// round trips cost it) and each NAR after a further `nar_delay`.
    pub fn start_with(root: &Path, nar_delay: Duration, latency: Duration) -> FileServer {
        let delay = nar_delay;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let asked = Arc::new(Mutex::new(Vec::new()));
        let (root, l2, a2) = (root.to_path_buf(), log.clone(), asked.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (root, log, asked) = (root.clone(), l2.clone(), a2.clone());
                std::thread::spawn(move || serve(conn, &root, &log, &asked, delay, latency));
            }
        });
        FileServer { port, log, asked }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Request paths answered 200, in order.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// How many requests answered 200 were for a path ending in `suffix`.
    pub fn count(&self, suffix: &str) -> usize {
        self.log().iter().filter(|p| p.ends_with(suffix)).count()
    }

    /// NARs sent (`/nar/...`).
    pub fn nars(&self) -> Vec<String> {
        self.log()
            .into_iter()
            .filter(|p| p.starts_with("/nar/"))
            .collect()
    }

    /// Every request path asked, with the status it was answered with
    /// (200 or 404), in the order they were answered.
    pub fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }

    /// Forgets the requests so far.
    pub fn clear(&self) {
        self.log.lock().unwrap().clear();
        self.asked.lock().unwrap().clear();
    }
}

fn serve(
    conn: TcpStream,
    root: &Path,
    log: &Mutex<Vec<String>>,
    asked: &Mutex<Vec<Asked>>,
    delay: Duration,
    latency: Duration,
) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut out = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h.trim_end().is_empty() {
                break;
            }
        }
        let file = root.join(path.trim_start_matches('/'));
        let (status, body) = if path.contains("..") || !file.is_file() {
            (404, b"no such file".to_vec())
        } else {
            (200, std::fs::read(&file).unwrap())
        };
        if !latency.is_zero() {
            std::thread::sleep(latency);
        }
        if status == 200 && path.starts_with("/nar/") && !delay.is_zero() {
            std::thread::sleep(delay);
        }
        asked.lock().unwrap().push(Asked {
            path: path.clone(),
            status,
            seq: SEQ.fetch_add(1, std::sync::atomic::Ordering::SeqCst),
        });
        if status == 200 {
            log.lock().unwrap().push(path);
        }
        let head = format!(
            "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n",
            body.len()
        );
        if out.write_all(head.as_bytes()).is_err() || out.write_all(&body).is_err() {
            return;
        }
    }
}
