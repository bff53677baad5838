//! A minimal HTTP/1.1 server on 127.0.0.1 for tests that only need a cache
//! directory served as it is (tests/http.rs has the full one, with faults):
//! keep-alive, `Content-Length`, 404 for anything absent, and a log of the
//! paths answered with 200.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

pub struct StaticServer {
    pub port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

impl StaticServer {
    /// Serves the files under `root` until the test process ends.
    pub fn start(root: &Path) -> StaticServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (root, l2) = (root.to_path_buf(), log.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (root, log) = (root.clone(), l2.clone());
                std::thread::spawn(move || serve(conn, &root, &log));
            }
        });
        StaticServer { port, log }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Paths answered with 200 so far.
    pub fn served(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    pub fn clear(&self) {
        self.log.lock().unwrap().clear();
    }
}

fn serve(conn: TcpStream, root: &Path, log: &Mutex<Vec<String>>) {
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
        let (status, body) = if !path.contains("..") && file.is_file() {
            (200, std::fs::read(&file).unwrap())
        } else {
            (404, b"no such file".to_vec())
        };
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
