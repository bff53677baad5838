//! HTTP binary caches: a real HTTP/1.1 server on 127.0.0.1, started here,
//! serves caches written by real `nix copy --to file://…` (xz with
//! listings, zstd with listings, xz without), and injects faults. Every
//! answer over HTTP must equal the same cache's over file:// and the local
//! store's; the server's log shows what was downloaded.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::common;
use crate::common::*;

/// What the test server does wrong, on purpose.
#[derive(Default, Clone)]
struct Faults {
    /// Every URL answers 500 this many times before it answers properly.
    fail_first: u32,
    /// Request paths answered with 404.
    not_found: Vec<String>,
    /// Request paths answered with 403 (S3's answer for a missing key).
    forbidden: Vec<String>,
    /// NAR bodies are cut off halfway (the headers promise all of it) the
    /// first this many times each is sent.
    cut_nars: u32,
    /// Narinfo and listing bodies are cut off likewise, the first this
    /// many times each is sent.
    cut_small: u32,
    /// Requests are read and never answered.
    stall: bool,
    /// The `Authorization` header every request must carry.
    auth: Option<String>,
    /// Listings are sent with this Content-Encoding.
    ls_encoding: Option<&'static str>,
    /// Every request is answered after this long, times 1 to 4 by its path
    /// (a distant cache, whose answers come back out of order).
    delay: Duration,
}

#[derive(Clone, Debug)]
struct Logged {
    path: String,
    status: u16,
    encoding: Option<&'static str>,
    /// When the request was read, and when its delay was over.
    start: std::time::Instant,
    end: std::time::Instant,
    /// Requests waiting out their delay at once, this one included.
    in_flight: usize,
}

struct Server {
    port: u16,
    log: Arc<Mutex<Vec<Logged>>>,
}

impl Server {
    fn start(root: &Path, faults: Faults) -> Server {
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

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn log(&self) -> Vec<Logged> {
        self.log.lock().unwrap().clone()
    }

    /// Paths of NARs sent whole or in part (status 200).
    fn nars(&self) -> Vec<String> {
        self.log()
            .into_iter()
            .filter(|l| l.status == 200 && l.path.starts_with("/nar/"))
            .map(|l| l.path)
            .collect()
    }

    fn count(&self, suffix: &str) -> usize {
        self.log()
            .iter()
            .filter(|l| l.status == 200 && l.path.ends_with(suffix))
            .count()
    }

    fn clear(&self) {
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

/// The three caches, made by real `nix copy` from the local store.
struct Caches {
    xz_ls: PathBuf,
    zstd_ls: PathBuf,
    xz_plain: PathBuf,
}

fn caches() -> &'static Caches {
    static C: OnceLock<Caches> = OnceLock::new();
    C.get_or_init(|| {
        let f = fixture();
        let make = |name: &str, query: &str| {
            let dir = f.tmp.join(name);
            if !dir.join("nix-cache-info").exists() {
                run(nix()
                    .args(["copy", "--to"])
                    .arg(signed_cache_url(&dir, query))
                    .args(&f.all_roots));
            }
            dir
        };
        Caches {
            xz_ls: make("http-xz-ls", "compression=xz&write-nar-listing=1"),
            zstd_ls: make("http-zstd-ls", "compression=zstd&write-nar-listing=1"),
            xz_plain: make("http-xz-plain", "compression=xz"),
        }
    })
}

fn closure_path(suffix: &str) -> String {
    nix_path_info(None, &[&fixture().rocm])
        .into_keys()
        .find(|p| p.ends_with(suffix))
        .unwrap_or_else(|| panic!("no {suffix} in the example"))
}

/// Runs with a fresh (or the given) local cache and no netrc around.
fn run_in(xdg: &Path, store: &str, args: &[&str]) -> Outcome {
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

fn fresh(name: &str) -> PathBuf {
    scratch(&format!("xdg-{name}"))
}

/// The commands compared across sources.
fn commands() -> Vec<(&'static str, Vec<String>)> {
    let f = fixture();
    let rocblas = closure_path("-rocblas-5.7.1");
    let glibc = closure_path("-glibc-2.36");
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        ("size", s(&["size", "--bytes", "--references", &f.rocm])),
        ("size-json", s(&["--json", "size", "--references", &f.rocm])),
        ("why", s(&["--json", "why", "--all", &f.rocm, &glibc])),
        ("refs", s(&["--json", "refs", "--evidence", &f.rocm])),
        (
            "split",
            s(&[
                "--json", "split", &rocblas, "--preset", "nixpkgs", "--root", &f.rocm,
            ]),
        ),
        (
            "partition",
            s(&["--json", "partition", &rocblas, "--by", "gfx[0-9a-z]+"]),
        ),
        ("advise", s(&["--json", "advise", &f.rocm])),
        (
            "advise-0",
            s(&["--json", "advise", "--min-saving", "0", &f.rocm]),
        ),
        ("advise-top", s(&["--json", "advise", f.small("top")])),
    ]
}

#[test]
fn same_answers_over_http_file_and_local_store() {
    let f = fixture();
    let rocblas = closure_path("-rocblas-5.7.1");
    let local: HashMap<&str, Outcome> = commands()
        .into_iter()
        .map(|(name, args)| {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            (name, run_in(&fresh("local"), "local", &a))
        })
        .collect();
    let c = caches();
    for (label, dir, listings) in [
        ("xz", &c.xz_ls, true),
        ("zstd", &c.zstd_ls, true),
        ("plain", &c.xz_plain, false),
    ] {
        // Answers after 1 to 4 ms, out of order: the closure's work queue
        // sees them arrive in any order, and the answers must not change.
        let server = Server::start(
            dir,
            Faults {
                delay: Duration::from_millis(1),
                ..Faults::default()
            },
        );
        let file = format!("file://{}", dir.display());
        for (name, args) in commands() {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            server.clear();
            let http = run_in(&fresh(label), &server.url(), &a);
            assert_eq!(http.code, 0, "{label} {name}: {}", http.stderr);
            let nars = server.nars();
            let from_file = run_in(&fresh(label), &file, &a);
            same(
                &http.stdout,
                &from_file.stdout,
                &format!("{label} {name}: http vs file://"),
            );
            // Without listings a referrer's tree costs its NAR: the reads
            // (`reads`: which paths were read) differ, the answer does not.
            let comparable = |s: &str| match (listings, name.starts_with("advise")) {
                (false, true) => without_keys(s, &["reads"]),
                _ => s.to_string(),
            };
            same(
                &comparable(&http.stdout),
                &comparable(&local[name].stdout),
                &format!("{label} {name}: http vs local"),
            );
            let mut seen = std::collections::BTreeSet::new();
            for n in &nars {
                assert!(seen.insert(n), "{label} {name}: {n} downloaded twice");
            }
            let mut asked = std::collections::BTreeSet::new();
            for l in server.log() {
                if l.path.ends_with(".narinfo") {
                    assert!(
                        asked.insert(l.path.clone()),
                        "{label} {name}: {} asked twice",
                        l.path
                    );
                }
            }
            match name {
                "size" | "size-json" => assert!(nars.is_empty(), "{label} size: {nars:?}"),
                // Only rocblas is scanned; the trees of its RUNPATH
                // targets come from their listings.
                "partition" if listings => {
                    assert_eq!(nars.len(), 1, "{label} partition: {nars:?}")
                }
                "partition" => assert!(nars.len() > 1, "{label}: the trees need NARs"),
                _ => {}
            }
        }
        // A rerun with the same local cache downloads no NAR and asks for
        // no narinfo or listing.
        let xdg = fresh(&format!("{label}-warm"));
        let args = ["--json", "advise", "--min-saving", "0", &f.rocm];
        let cold = run_in(&xdg, &server.url(), &args);
        server.clear();
        let warm = run_in(&xdg, &server.url(), &args);
        assert_eq!(cold.code, 0, "{}", cold.stderr);
        assert_eq!(cold.stdout, warm.stdout);
        assert_eq!(server.nars(), Vec::<String>::new(), "{label}: warm rerun");
        assert_eq!(server.count(".narinfo"), 0, "{label}: {:?}", server.log());
        assert_eq!(server.count(".ls"), 0, "{label}: {:?}", server.log());
        // --refresh fetches them again.
        server.clear();
        let refreshed = run_in(&xdg, &server.url(), &["--refresh", "size", &rocblas]);
        assert_eq!(refreshed.code, 0, "{}", refreshed.stderr);
        assert!(server.count(".narinfo") > 0);
    }
}

#[test]
fn split_and_partition_sizes_come_from_listings() {
    let f = fixture();
    let rocblas = closure_path("-rocblas-5.7.1");
    let server = Server::start(&caches().xz_ls, Faults::default());
    let o = run_in(
        &fresh("split-ls"),
        &server.url(),
        &[
            "--json", "split", &rocblas, "--preset", "nixpkgs", "--root", &f.rocm,
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    // Scanned: rocblas (its own references) and its referrers (their holds
    // into it); every other tree came from a listing.
    let info = nix_path_info(None, &[&f.rocm]);
    let scanned: std::collections::BTreeSet<String> = info
        .iter()
        .filter(|(p, v)| {
            *p == &rocblas
                || v["references"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r.as_str() == Some(&rocblas) && *p != &rocblas)
        })
        .map(|(p, v)| {
            let _ = v;
            p.clone()
        })
        .collect();
    assert_eq!(
        server.nars().len(),
        scanned.len(),
        "{:?} vs {scanned:?}",
        server.nars()
    );
    assert!(server.count(".ls") > 0);
}

#[test]
fn listings_in_every_content_encoding() {
    let rocblas = closure_path("-rocblas-5.7.1");
    let args = ["--json", "partition", &rocblas, "--by", "gfx[0-9a-z]+"];
    let want = run_in(&fresh("enc-local"), "local", &args);
    assert_eq!(want.code, 0, "{}", want.stderr);
    for enc in ["br", "zstd", "gzip"] {
        let server = Server::start(
            &caches().xz_ls,
            Faults {
                ls_encoding: Some(enc),
                ..Faults::default()
            },
        );
        let o = run_in(&fresh(enc), &server.url(), &args);
        assert_eq!(o.code, 0, "{enc}: {}", o.stderr);
        same(&o.stdout, &want.stdout, enc);
        let encoded = server
            .log()
            .iter()
            .filter(|l| l.encoding == Some(enc))
            .count();
        assert!(encoded > 0, "{enc}: no listing was sent encoded");
        assert_eq!(server.nars().len(), 1, "{enc}: listings were not used");
    }
}

#[test]
fn answers_500_twice_per_url_and_results_stay_exact() {
    let f = fixture();
    let server = Server::start(
        &caches().xz_ls,
        Faults {
            fail_first: 2,
            ..Faults::default()
        },
    );
    for args in [
        vec!["--json", "size", &f.rocm],
        vec!["--json", "advise", "--min-saving", "0", &f.rocm],
    ] {
        let o = run_in(&fresh("flaky"), &server.url(), &args);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let want = run_in(&fresh("flaky-local"), "local", &args);
        same(&o.stdout, &want.stdout, args[1]);
    }
    assert!(server.log().iter().any(|l| l.status == 500));
}

#[test]
fn missing_narinfo_is_a_clear_error() {
    let f = fixture();
    let glibc = closure_path("-glibc-2.36");
    let hash = &glibc["/nix/store/".len()..][..32];
    let server = Server::start(
        &caches().xz_ls,
        Faults {
            not_found: vec![format!("/{hash}.narinfo")],
            ..Faults::default()
        },
    );
    let o = run_in(&fresh("404"), &server.url(), &["size", &f.rocm]);
    assert_error(&o, &glibc);
    assert!(o.stderr.contains("not found"), "{}", o.stderr);
    let o = run_in(&fresh("404root"), &server.url(), &["size", &glibc]);
    assert_error(&o, &glibc);
    // 403 means the same as 404.
    let server = Server::start(
        &caches().xz_ls,
        Faults {
            forbidden: vec![format!("/{hash}.narinfo")],
            ..Faults::default()
        },
    );
    let o = run_in(&fresh("403"), &server.url(), &["size", &f.rocm]);
    assert_error(&o, &glibc);
    assert!(o.stderr.contains("not found"), "{}", o.stderr);
}

#[test]
fn a_nar_cut_off_midway_is_a_partial_result_naming_the_path() {
    let f = fixture();
    let server = Server::start(
        &caches().xz_plain,
        Faults {
            cut_nars: u32::MAX,
            ..Faults::default()
        },
    );
    let rocblas = closure_path("-rocblas-5.7.1");
    let o = run_in(
        &fresh("cut"),
        &server.url(),
        &["--json", "partition", &rocblas, "--by", "gfx[0-9a-z]+"],
    );
    assert_ne!(o.code, 0);
    assert!(o.stderr.contains(&rocblas), "{}", o.stderr);
    let o = run_in(
        &fresh("cut-advise"),
        &server.url(),
        &["advise", "--min-saving", "0", &f.rocm],
    );
    assert_eq!(o.code, 3, "{}{}", o.stdout, o.stderr);
    assert!(o.stderr.contains("/nix/store/"), "{}", o.stderr);
    assert!(o.stderr.contains("after 3 attempts"), "{}", o.stderr);
}

#[test]
fn a_nar_cut_off_once_is_read_again_and_results_stay_exact() {
    let f = fixture();
    let server = Server::start(
        &caches().xz_plain,
        Faults {
            cut_nars: 1,
            ..Faults::default()
        },
    );
    let args = ["--json", "advise", "--min-saving", "0", &f.rocm];
    let o = run_in(&fresh("cut-once"), &server.url(), &args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    same(
        &o.stdout,
        &run_in(&fresh("cut-once-local"), "local", &args).stdout,
        "after a cut NAR",
    );
    let nars = server.nars();
    assert!(!nars.is_empty());
    // Each NAR was sent twice: cut, then whole.
    let mut counts: HashMap<&String, usize> = HashMap::new();
    for n in &nars {
        *counts.entry(n).or_default() += 1;
    }
    assert!(counts.values().all(|&c| c == 2), "{counts:?}");
}

/// A narinfo or listing whose body stops halfway (the connection closed
/// under it) is asked for again, as a failed request is (issue 25: an
/// HTTP/2 stream reset mid-body showed it), and the answers stay exact.
#[test]
fn a_narinfo_or_listing_cut_off_once_is_asked_again() {
    let f = fixture();
    let file = format!("file://{}", caches().xz_ls.display());
    for (name, args) in [
        ("size", vec!["--json", "size", f.rocm.as_str()]),
        ("advise", vec!["--json", "advise", f.rocm.as_str()]),
    ] {
        let server = Server::start(
            &caches().xz_ls,
            Faults {
                cut_small: 1,
                ..Faults::default()
            },
        );
        let o = run_in(&fresh(&format!("cut-small-{name}")), &server.url(), &args);
        assert_eq!(o.code, 0, "{}", o.stderr);
        same(
            &o.stdout,
            &run_in(&fresh(&format!("cut-small-file-{name}")), &file, &args).stdout,
            "after cut narinfos and listings",
        );
        // Each was sent twice: cut, then whole.
        let mut counts: HashMap<String, usize> = HashMap::new();
        for l in server.log() {
            if l.status == 200 && (l.path.ends_with(".narinfo") || l.path.ends_with(".ls")) {
                *counts.entry(l.path).or_default() += 1;
            }
        }
        assert!(!counts.is_empty());
        assert!(counts.values().all(|&c| c == 2), "{name}: {counts:?}");
    }
}

#[test]
fn refused_and_stalled_connections_are_clear_errors() {
    let f = fixture();
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let o = run_in(&fresh("refused"), &url, &["size", &f.rocm]);
    assert_error(&o, "connection refused");
    assert!(o.stderr.contains(&url), "{}", o.stderr);

    let server = Server::start(
        &caches().xz_ls,
        Faults {
            stall: true,
            ..Faults::default()
        },
    );
    let home = fresh("stall");
    let o = heft_run_env(
        &[
            ("XDG_CACHE_HOME", home.to_str().unwrap()),
            ("NIX_HEFT_HTTP_TIMEOUT", "0.5"),
        ],
        Some(&server.url()),
        &["size", &f.rocm],
    );
    assert_error(&o, "timed out");
}

#[test]
fn netrc_credentials_are_sent_and_never_printed() {
    use base64::Engine;
    let f = fixture();
    let secret = "s3cret-Pa55";
    let server = Server::start(
        &caches().xz_ls,
        Faults {
            auth: Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("alice:{secret}"))
            )),
            ..Faults::default()
        },
    );
    let o = run_in(&fresh("noauth"), &server.url(), &["size", &f.rocm]);
    assert_error(&o, "401");
    assert!(o.stderr.contains("netrc"), "{}", o.stderr);

    let dir = fresh("netrc");
    let netrc = dir.join("netrc");
    std::fs::write(
        &netrc,
        format!("machine elsewhere login bob password nope\nmachine 127.0.0.1 login alice password {secret}\n"),
    )
    .unwrap();
    let args = [
        "--netrc-file",
        netrc.to_str().unwrap(),
        "--json",
        "advise",
        &f.rocm,
    ];
    let o = run_in(&dir, &server.url(), &args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    same(
        &o.stdout,
        &run_in(&fresh("netrc-local"), "local", &args[2..]).stdout,
        "netrc",
    );
    assert!(!o.stdout.contains(secret) && !o.stderr.contains(secret));

    // From nix.conf's netrc-file setting.
    let conf = fresh("netrc-conf");
    std::fs::write(
        conf.join("nix.conf"),
        format!("netrc-file = {}\n", netrc.display()),
    )
    .unwrap();
    let o = heft_run_env(
        &[
            ("XDG_CACHE_HOME", conf.to_str().unwrap()),
            ("HOME", conf.to_str().unwrap()),
            ("NIX_CONF_DIR", conf.to_str().unwrap()),
        ],
        Some(&server.url()),
        &["size", &f.rocm],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);

    // Credentials in the URL are used, and shown nowhere.
    let with_info = server.url().replace("://", &format!("://alice:{secret}@"));
    let o = run_in(&fresh("userinfo"), &with_info, &["size", &f.rocm]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let bad_info = server.url().replace("://", "://alice:wrong-two@");
    let o = run_in(&fresh("userinfo-bad"), &bad_info, &["size", &f.rocm]);
    assert_error(&o, "401");
    assert!(!o.stderr.contains("wrong-two"), "{}", o.stderr);

    // Wrong credentials: refused, and the password is not shown.
    std::fs::write(&netrc, "default login alice password wrong-one\n").unwrap();
    let o = run_in(
        &dir,
        &server.url(),
        &["--netrc-file", netrc.to_str().unwrap(), "size", &f.rocm],
    );
    assert_error(&o, "refused the netrc credentials");
    assert!(!o.stderr.contains("wrong-one"));
}

#[test]
fn names_and_globs_over_http_are_usage_errors() {
    let server = Server::start(&caches().xz_ls, Faults::default());
    for arg in ["rocm-llvm", "rocm-llvm*"] {
        let o = run_in(&fresh("names"), &server.url(), &["size", arg]);
        assert_usage_error(&o, "give a store path");
    }
}

#[test]
fn a_cache_for_another_store_dir_is_refused() {
    let dir = fresh("otherstore");
    std::fs::write(
        dir.join("nix-cache-info"),
        "StoreDir: /gnu/store\nWantMassQuery: 1\n",
    )
    .unwrap();
    let server = Server::start(&dir, Faults::default());
    let o = run_in(
        &fresh("otherstore-x"),
        &server.url(),
        &["size", &fixture().rocm],
    );
    // A --store that names a cache nix-heft cannot read: exit 2.
    assert_usage_error(&o, "/gnu/store");
    let empty = fresh("notacache");
    let server = Server::start(&empty, Faults::default());
    let o = run_in(
        &fresh("notacache-x"),
        &server.url(),
        &["size", &fixture().rocm],
    );
    assert_error(&o, "not a Nix binary cache");
}

#[test]
fn advise_reads_only_referrers_whose_bound_reaches_min_saving() {
    let f = fixture();
    let json = |o: &Outcome| -> serde_json::Value {
        assert!(o.code == 0, "{}", o.stderr);
        serde_json::from_str(&o.stdout).unwrap()
    };
    let full = json(&run_in(
        &fresh("ms0"),
        "local",
        &["--json", "advise", "--min-saving", "0", &f.rocm],
    ));
    assert_eq!(full["not_examined"].as_array().unwrap().len(), 0);
    // At 100% only a referrer dominating the whole closure could be read:
    // every bound is listed, and every real saving is within its bound.
    let all = json(&run_in(
        &fresh("ms100"),
        "local",
        &["--json", "advise", "--min-saving", "100%", &f.rocm],
    ));
    let bounds: HashMap<String, u64> = all["not_examined"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["referrer"].as_str().unwrap().to_string(),
                x["max_saving"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(bounds.len() > 5, "{bounds:?}");
    let closure = full["closure_size"].as_u64().unwrap();
    for a in full["actions"].as_array().unwrap() {
        let pkg = a["package"].as_str().unwrap();
        if let Some(s) = a["saving"].as_u64() {
            let bound = bounds.get(pkg).copied().unwrap_or(closure);
            assert!(s <= bound, "{pkg}: saving {s} > bound {bound}");
        }
    }
    // A threshold in between: over HTTP the skipped referrers' NARs are
    // never downloaded, and the advice is that of the full run restricted
    // to the referrers read, from every source alike.
    let min = 20 << 20;
    let args = ["--json", "advise", "--min-saving", "20MiB", &f.rocm];
    let local = run_in(&fresh("ms20"), "local", &args);
    let server = Server::start(&caches().xz_ls, Faults::default());
    let http = run_in(&fresh("ms20-http"), &server.url(), &args);
    same(&http.stdout, &local.stdout, "advise --min-saving 20MiB");
    let part = json(&local);
    let skipped: Vec<String> = part["not_examined"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            assert!(x["max_saving"].as_u64().unwrap() < min);
            x["referrer"].as_str().unwrap().to_string()
        })
        .collect();
    assert!(!skipped.is_empty());
    assert_eq!(part["min_saving"].as_u64(), Some(min));
    for a in part["actions"].as_array().unwrap() {
        assert!(!skipped.contains(&a["package"].as_str().unwrap().to_string()));
    }
    // Without listings the borderline referrers are read whole and judged
    // by the same bound after: the same advice.
    let plain = Server::start(&caches().xz_plain, Faults::default());
    let http_plain = run_in(&fresh("ms20-plain"), &plain.url(), &args);
    same(
        &without_keys(&http_plain.stdout, &["reads"]),
        &without_keys(&local.stdout, &["reads"]),
        "advise --min-saving 20MiB, no listings",
    );
    // rocm-llvm is over 20 MiB itself, but its only reference (glibc) stays
    // anyway and it has no file a split or a partition would move: its
    // tree (from the listing) bounds every action on it below its own size,
    // and its NAR is never fetched.
    let llvm = closure_path("-rocm-llvm-5.7.1");
    let llvm_nar = nix_path_info(None, &[&llvm])[&llvm]["narSize"]
        .as_u64()
        .unwrap();
    assert!(llvm_nar >= min, "rocm-llvm is {llvm_nar} bytes");
    let llvm_bound = part["not_examined"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["referrer"] == llvm.as_str())
        .unwrap_or_else(|| panic!("{llvm} examined: {}", part["not_examined"]))["max_saving"]
        .as_u64()
        .unwrap();
    assert!(llvm_bound < llvm_nar, "{llvm_bound} vs its own {llvm_nar}");
    let narinfo = std::fs::read_to_string(
        caches()
            .xz_ls
            .join(format!("{}.narinfo", &llvm["/nix/store/".len()..][..32])),
    )
    .unwrap();
    let url = narinfo
        .lines()
        .find_map(|l| l.strip_prefix("URL: "))
        .unwrap()
        .to_string();
    assert!(
        !server.nars().iter().any(|n| n.ends_with(&url)),
        "{url} fetched: {:?}",
        server.nars()
    );
    assert!(
        plain.nars().iter().any(|n| n.ends_with(&url)),
        "without a listing the NAR gives the tree"
    );
    let nars = server.nars().len();
    let full_server = Server::start(&caches().xz_ls, Faults::default());
    run_in(
        &fresh("ms0-http"),
        &full_server.url(),
        &["--json", "advise", "--min-saving", "0", &f.rocm],
    );
    assert!(nars < full_server.nars().len(), "{nars} NARs with pruning");
    // The text output counts the referrers not examined.
    let text = run_in(&fresh("ms20-text"), "local", &args[1..]);
    assert!(
        text.stdout
            .contains(&format!("{} referrer(s) not examined", skipped.len())),
        "{}",
        text.stdout
    );
}

#[test]
fn a_symlink_farm_is_explained_from_its_listing_alone() {
    let dir = fresh("farm");
    let expr = dir.join("farm.nix");
    std::fs::write(
        &expr,
        r#"let
  mk = name: script: derivation {
    inherit name; system = builtins.currentSystem; builder = "/bin/sh";
    args = [ "-c" script ]; PATH = "/usr/bin:/bin";
  };
  data = mk "farm-data-1.0" "mkdir -p $out/lib/gfx90a; echo kernel > $out/lib/gfx90a/k.co";
in {
  farm = mk "farm-links-1.0" ''
    mkdir -p $out/lib/targets
    ln -s ${data}/lib/gfx90a $out/lib/targets/gfx90a
    ln -s ${data}/lib/gfx90a/k.co $out/lib/k.co
    touch $out/lib/.keep
  '';
}
"#,
    )
    .unwrap();
    let farm = nix_build(&expr, &["farm"]).pop().unwrap();
    let cache = dir.join("cache");
    run(nix()
        .args(["copy", "--to"])
        .arg(signed_cache_url(
            &cache,
            "compression=xz&write-nar-listing=1",
        ))
        .arg(&farm));
    let server = Server::start(&cache, Faults::default());
    let args = ["--json", "refs", "--evidence", &farm];
    let http = run_in(&fresh("farm-http"), &server.url(), &args);
    assert_eq!(http.code, 0, "{}", http.stderr);
    same(
        &http.stdout,
        &run_in(&fresh("farm-local"), "local", &args).stdout,
        "farm refs",
    );
    assert!(http.stdout.contains("symlink"), "{}", http.stdout);
    // Its holds are symlink targets: the listing gives them all.
    assert_eq!(server.nars(), Vec::<String>::new());
    assert!(server.count(".ls") > 0);
}

/// `https://` against a real TLS server on 127.0.0.1 (the tests' cache
/// server, HTTP/1.1 only, a certificate from a CA the test makes with
/// `openssl`): trusted through `NIX_SSL_CERT_FILE` as Nix is, the answers
/// are the `file://` cache's; an untrusted certificate is a clear error,
/// never a silent fallback.
#[test]
fn https_with_the_ca_nix_ssl_cert_file_names() {
    let f = fixture();
    let dir = fresh("https");
    let certs = tls_certs();
    let mut opts = common::cache_server::Options::new(&caches().xz_ls);
    opts.tls = Some((certs.cert.clone(), certs.key.clone()));
    opts.http2 = false;
    let server = common::cache_server::CacheServer::start(opts).expect("the test server starts");
    let url = server.url();
    let ca = &certs.ca;
    let with_ca = |args: &[&str]| {
        heft_run_env(
            &[
                ("XDG_CACHE_HOME", dir.join("xdg").to_str().unwrap()),
                ("NIX_SSL_CERT_FILE", ca.to_str().unwrap()),
                ("NIX_HEFT_HTTP_TIMEOUT", "10"),
            ],
            Some(&url),
            args,
        )
    };
    let file = format!("file://{}", caches().xz_ls.display());
    for args in [
        vec!["--json", "size", f.rocm.as_str()],
        vec!["--json", "refs", f.rocm.as_str()],
    ] {
        let o = with_ca(&args);
        assert_eq!(o.code, 0, "{}", o.stderr);
        same(
            &o.stdout,
            &heft_run(Some(&file), &args).stdout,
            "https vs file://",
        );
    }
    // The bundled roots do not know the test CA.
    let o = heft_run_env(
        &[
            ("XDG_CACHE_HOME", dir.join("xdg2").to_str().unwrap()),
            ("NIX_HEFT_HTTP_TIMEOUT", "10"),
        ],
        Some(&url),
        &["size", &f.rocm],
    );
    drop(server);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stderr.contains(&url) && o.stderr.to_lowercase().contains("certificate"),
        "{}",
        o.stderr
    );
}

/// `advise` reads a consumer the pruning left out only when an action on a
/// referrer read needs its holds and could reach `--min-saving` (issue 25):
/// tests/fixtures/consumer-prune.nix has a 20 MiB library (`big`) whose
/// own bound is 24 KiB, consumer of a runtime that is read (its references
/// alone reach 1%) and whose split could save 65 KiB at most. At the
/// default 1% the split cannot reach the threshold: it is listed as not
/// simulated, and big's NAR is never requested. At 40 KiB the split can,
/// and big is read for its holds into the runtime alone, as the JSON says.
/// Every NAR requested belongs to a path the JSON lists as read, and the
/// answers equal the local store's.
#[test]
fn advise_fetches_no_nar_that_no_question_needs() {
    let root = nix_build(&repo().join("tests/fixtures/consumer-prune.nix"), &[])
        .pop()
        .unwrap();
    let cache = scratch("consumer-prune").join("cache");
    run(nix()
        .args(["copy", "--to"])
        .arg(signed_cache_url(
            &cache,
            "compression=xz&write-nar-listing=1",
        ))
        .arg(&root));
    let paths = closure_set(&root);
    let find = |suffix: &str| {
        paths
            .iter()
            .find(|p| p.ends_with(suffix))
            .unwrap_or_else(|| panic!("no {suffix}"))
            .clone()
    };
    let (big, runtime) = (find("-big-1.0"), find("-runtime-1.0"));
    // NAR URL → store path, from the narinfos.
    let path_of_nar: HashMap<String, String> = paths
        .iter()
        .map(|p| {
            let narinfo = std::fs::read_to_string(
                cache.join(format!("{}.narinfo", &p["/nix/store/".len()..][..32])),
            )
            .unwrap();
            let url = narinfo
                .lines()
                .find_map(|l| l.strip_prefix("URL: "))
                .unwrap();
            (format!("/{url}"), p.clone())
        })
        .collect();
    let server = Server::start(&cache, Faults::default());
    let advise = |label: &str, min: &str| -> (serde_json::Value, Vec<String>) {
        server.clear();
        let args = ["--json", "advise", "--min-saving", min, &root];
        let http = run_in(&fresh(label), &server.url(), &args);
        assert_eq!(http.code, 0, "{label}: {}", http.stderr);
        let local = run_in(&fresh(&format!("{label}-local")), "local", &args);
        same(
            &http.stdout,
            &local.stdout,
            &format!("{label}: http vs local"),
        );
        let requested: Vec<String> = server
            .log()
            .into_iter()
            .filter(|l| l.path.starts_with("/nar/"))
            .map(|l| path_of_nar[&l.path].clone())
            .collect();
        let v: serde_json::Value = serde_json::from_str(&http.stdout).unwrap();
        let read: Vec<&str> = v["reads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["path"].as_str().unwrap())
            .collect();
        for p in &requested {
            assert!(
                read.contains(&p.as_str()),
                "{label}: {p} fetched, not in {read:?}"
            );
        }
        (v, requested)
    };
    let question = |v: &serde_json::Value, p: &str| -> Option<serde_json::Value> {
        v["reads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["path"] == p)
            .cloned()
    };

    let (v, requested) = advise("cp-default", "1%");
    assert!(
        v["not_examined"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["referrer"] == big.as_str()),
        "{v}"
    );
    assert!(
        !requested.contains(&big),
        "big's NAR requested: {requested:?}"
    );
    // Only its file names are read, from its listing: the library app's
    // RUNPATH entry for it serves.
    assert_eq!(
        question(&v, &big).map(|r| r["question"].clone()),
        Some(serde_json::json!("runpath-tree")),
        "{}",
        v["reads"]
    );
    assert_eq!(
        question(&v, &runtime).map(|r| r["question"].clone()),
        Some(serde_json::json!("references")),
        "{}",
        v["reads"]
    );
    assert!(requested.contains(&runtime), "{requested:?}");
    let not_simulated = v["not_simulated"].as_array().unwrap();
    assert!(
        not_simulated
            .iter()
            .any(|x| x["referrer"] == runtime.as_str()
                && x["action"] == "split-outputs"
                && x["max_saving"].as_u64().unwrap() < v["min_saving"].as_u64().unwrap()),
        "{v}"
    );

    let (v, requested) = advise("cp-40k", "40KiB");
    assert!(requested.contains(&big), "{requested:?}");
    assert_eq!(
        question(&v, &big),
        Some(serde_json::json!({
            "path": big, "question": "holds-into", "of": [runtime]
        })),
        "{}",
        v["reads"]
    );
    assert!(
        v["not_examined"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["referrer"] == big.as_str()),
        "big is read, not examined: {v}"
    );
    assert!(
        v["actions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["kind"] == "split-outputs" && a["package"] == runtime.as_str()),
        "{v}"
    );
}

/// Narinfos are fetched as a bounded work queue (issue 25): over a server
/// that answers each request after 5 to 20 ms, out of order, a synthetic
/// 1,500-narinfo cache in the real narinfo format (bench/narinfo_cache.py,
/// 12 levels) gives `size` exactly the file:// answer, which has Nix's
/// closure of the root, with every narinfo asked once; at most
/// `--http-connections` requests wait at once (25 without it, Nix's
/// default), more than the old fixed 16 when more are allowed; and some
/// path's narinfo is asked before every
/// narinfo of the level above it has arrived: no level waits for its
/// slowest request.
#[test]
fn narinfos_are_a_bounded_work_queue() {
    let dir = scratch("narinfo-queue");
    run(Command::new("python3")
        .arg(repo().join("bench/narinfo_cache.py"))
        .arg(&dir)
        .args(["--paths", "1500", "--levels", "12"]));
    let root = std::fs::read_to_string(dir.join("root.txt"))
        .unwrap()
        .trim()
        .to_string();
    let file = format!("file://{}", dir.display());
    let nix_paths: std::collections::BTreeSet<String> = nix_closure_paths(Some(&file), &[&root])
        .into_iter()
        .collect();
    // The synthetic cache is unsigned (bench/narinfo_cache.py writes no
    // Sig lines): accepted deliberately, this tests the queue.
    let args = ["--no-require-sigs", "--json", "size", &root];
    let from_file = run_in(&fresh("queue-file"), &file, &args);
    assert_eq!(from_file.code, 0, "{}", from_file.stderr);
    let v: serde_json::Value = serde_json::from_str(&from_file.stdout).unwrap();
    let ours: std::collections::BTreeSet<String> = v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ours, nix_paths);
    // Depth of each narinfo from the root, breadth-first over the files.
    let refs: HashMap<String, Vec<String>> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "narinfo"))
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).unwrap();
            let field = |k: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(k))
                    .unwrap()
                    .to_string()
            };
            let hash = |p: &str| p.trim_start_matches("/nix/store/")[..32].to_string();
            let refs = field("References: ").split_whitespace().map(hash).collect();
            (hash(&field("StorePath: ")), refs)
        })
        .collect();
    let mut depth: HashMap<String, usize> = HashMap::new();
    let mut level = vec![root["/nix/store/".len()..][..32].to_string()];
    for d in 0.. {
        if level.is_empty() {
            break;
        }
        let mut next = Vec::new();
        for h in level {
            if depth.contains_key(&h) {
                continue;
            }
            depth.insert(h.clone(), d);
            next.extend(refs[&h].iter().filter(|r| !depth.contains_key(*r)).cloned());
        }
        level = next;
    }
    assert!(depth.values().max().unwrap() >= &8);
    // Without the flag, Nix's own default of `http-connections`: 25.
    for (asked, delay) in [(Some(4usize), 5), (Some(64), 5), (None, 5)] {
        let n = asked.unwrap_or(25);
        let server = Server::start(
            &dir,
            Faults {
                delay: Duration::from_millis(delay),
                ..Faults::default()
            },
        );
        let flag = asked.map(|n| n.to_string());
        let mut args = vec!["--no-require-sigs"];
        if let Some(f) = &flag {
            args.extend(["--http-connections", f]);
        }
        args.extend(["--json", "size", &root]);
        let o = run_in(&fresh(&format!("queue-{n}")), &server.url(), &args);
        assert_eq!(o.code, 0, "{}", o.stderr);
        same(
            &o.stdout,
            &from_file.stdout,
            &format!("{n} in flight vs file://"),
        );
        let log: Vec<Logged> = server
            .log()
            .into_iter()
            .filter(|l| l.path.ends_with(".narinfo"))
            .collect();
        let mut asked: Vec<&str> = log.iter().map(|l| l.path.as_str()).collect();
        asked.sort_unstable();
        let before = asked.len();
        asked.dedup();
        assert_eq!(asked.len(), before, "{n}: a narinfo asked twice");
        assert_eq!(asked.len(), nix_paths.len());
        let peak = log.iter().map(|l| l.in_flight).max().unwrap();
        assert!(peak <= n, "{n} allowed, {peak} waited at once");
        if n > 16 {
            assert!(peak > 16, "{n} allowed, at most {peak} waited at once");
        }
        // Some narinfo was asked before the last of the level above it
        // had arrived.
        let depth = &depth;
        let log = &log;
        let by_depth = |d: usize| {
            log.iter()
                .filter(move |l| depth.get(&l.path[1..33]) == Some(&d))
        };
        let overlapped = (0..*depth.values().max().unwrap()).any(|d| {
            let last_end = by_depth(d).map(|l| l.end).max().unwrap();
            by_depth(d + 1).any(|l| l.start < last_end)
        });
        assert!(overlapped, "{n}: every level waited for the one above");
    }
}

/// 16 runs of `advise` at once against one slow server with one local
/// cache, 4 of them killed with SIGKILL at pseudo-random moments in their
/// first second (issue 25): the survivors give the answer a lone run gives,
/// every entry left in the local cache passes its seal (the header line's
/// length and SHA-256), and a rerun asks the server for nothing but
/// `nix-cache-info`.
#[test]
fn concurrent_runs_killed_midway_leave_a_sound_cache() {
    use sha2::{Digest, Sha256};
    let f = fixture();
    let server = Server::start(
        &caches().xz_ls,
        Faults {
            delay: Duration::from_millis(5),
            ..Faults::default()
        },
    );
    let args = ["--json", "advise", "--min-saving", "0", &f.rocm];
    let alone = run_in(&fresh("kill9-alone"), &server.url(), &args);
    assert_eq!(alone.code, 0, "{}", alone.stderr);
    let xdg = fresh("kill9");
    let home = xdg.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("nix-heft");
    let mut children: Vec<(std::process::Child, PathBuf)> = (0..16)
        .map(|i| {
            let out = xdg.join(format!("out-{i}"));
            let child = Command::new(&bin)
                .env("XDG_CACHE_HOME", &xdg)
                .env("HOME", &home)
                .env("NIX_CONF_DIR", &home)
                // The caches are signed with the test key, trusted here.
                .env("NIX_CONFIG", trusting_conf())
                .args(["--store", &server.url()])
                .args(args)
                .stdout(std::fs::File::create(&out).unwrap())
                .stderr(std::fs::File::create(out.with_extension("err")).unwrap())
                .spawn()
                .unwrap();
            (child, out)
        })
        .collect();
    let start = std::time::Instant::now();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    let mut kills: Vec<(Duration, usize)> = (0..4)
        .map(|k| {
            let ms = (seed.wrapping_mul(6364136223846793005).rotate_left(k * 13)) % 1000;
            (Duration::from_millis(ms), k as usize * 4)
        })
        .collect();
    kills.sort();
    eprintln!("killing runs {kills:?} after start");
    for (at, i) in &kills {
        std::thread::sleep(at.saturating_sub(start.elapsed()));
        // Child::kill is SIGKILL; a run that already ended is no error.
        let _ = children[*i].0.kill();
    }
    let killed: Vec<usize> = kills.iter().map(|&(_, i)| i).collect();
    for (i, (child, out)) in children.iter_mut().enumerate() {
        // Bounded in time: five minutes for all of them.
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > Duration::from_secs(300) {
                let _ = child.kill();
                panic!("run {i} still running after 300 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if killed.contains(&i) {
            continue;
        }
        let stderr = std::fs::read_to_string(out.with_extension("err")).unwrap();
        assert!(status.success(), "run {i}: {status}: {stderr}");
        same(
            &std::fs::read_to_string(out).unwrap(),
            &alone.stdout,
            &format!("run {i} vs a lone run"),
        );
    }
    // Every entry's seal: `nix-heft-cache <len> <sha256>` then the data.
    let mut entries = 0;
    let mut dirs = vec![xdg.join("nix-heft")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            if e.file_name().to_string_lossy().starts_with(".tmp") {
                continue;
            }
            let bytes = std::fs::read(&p).unwrap();
            let nl = bytes.iter().position(|&b| b == b'\n').unwrap();
            let head = std::str::from_utf8(&bytes[..nl]).unwrap();
            let mut it = head.strip_prefix("nix-heft-cache ").unwrap().split(' ');
            let len: usize = it.next().unwrap().parse().unwrap();
            let sum = it.next().unwrap();
            let data = &bytes[nl + 1..];
            assert_eq!(data.len(), len, "{}: cut short", p.display());
            let got: String = Sha256::digest(data)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(got, sum, "{}: damaged", p.display());
            entries += 1;
        }
    }
    assert!(entries > 10, "{entries} entries");
    server.clear();
    let again = run_in(&xdg, &server.url(), &args);
    same(&again.stdout, &alone.stdout, "rerun");
    let asked: Vec<String> = server.log().into_iter().map(|l| l.path).collect();
    assert_eq!(asked, vec!["/nix-cache-info".to_string()], "rerun asked");
}
