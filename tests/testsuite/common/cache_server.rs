//! A binary cache server on 127.0.0.1 that behaves like a distant CDN, for
//! the HTTP/2 tests (tests/testsuite/http2.rs) and the network benchmarks
//! (`examples/cache_server.rs`, run by bench/closure-queue.sh and
//! bench/http.sh).
//!
//! What it does that the other test servers do not:
//! - TLS with ALPN, offering HTTP/2 and HTTP/1.1 (as cache.nixos.org's CDN
//!   does) or HTTP/1.1 only, with a limit on concurrent HTTP/2 streams per
//!   connection (CDNs announce about 100);
//! - every answer after a fixed latency, waited for without a thread, so
//!   thousands of requests in flight cost the server nothing and the client
//!   alone decides how fast a closure loads;
//! - bodies streamed from disk at an optional rate per answer;
//! - a log of every request: path, status, protocol, which connection it
//!   came on and the bytes sent, and the most requests it ever had waiting
//!   at once.
//!
//! Built on hyper and tokio (the server side of the HTTP stack nix-heft's
//! client uses) because Python's servers speak no HTTP/2.

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use std::future::Future;

use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::body::Frame;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};

/// How a [`CacheServer`] answers.
#[derive(Debug, Clone)]
pub struct Options {
    /// The cache directory served (`nix-cache-info`, `*.narinfo`, `nar/…`).
    pub root: PathBuf,
    /// Port to listen on; 0 picks a free one.
    pub port: u16,
    /// Wait before every answer: the round trip to a distant cache.
    pub latency: Duration,
    /// Bytes a second each answer's body is sent at; `None` is unlimited.
    pub rate: Option<u64>,
    /// PEM certificate chain and key: serve HTTPS. `None` serves plain
    /// HTTP/1.1 (and HTTP/2 to a client that asks for it by prior
    /// knowledge, which neither Nix nor nix-heft does).
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Offer HTTP/2 through ALPN (with `tls`).
    pub http2: bool,
    /// Most concurrent HTTP/2 streams a connection may carry.
    pub max_streams: u32,
    /// Append one line per request here (for scripts).
    pub log_file: Option<PathBuf>,
}

impl Options {
    /// Plain HTTP over `root`, no latency.
    pub fn new(root: &Path) -> Options {
        Options {
            root: root.to_path_buf(),
            port: 0,
            latency: Duration::ZERO,
            rate: None,
            tls: None,
            http2: true,
            max_streams: 100,
            log_file: None,
        }
    }
}

/// One request the server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// The request path, query removed.
    pub path: String,
    /// 200 or 404.
    pub status: u16,
    /// "HTTP/2" or "HTTP/1.1".
    pub version: String,
    /// Which connection (numbered from 1 as accepted) carried it.
    pub connection: u64,
    /// Body bytes sent.
    pub bytes: u64,
}

#[derive(Default)]
struct State {
    served: Mutex<Vec<Served>>,
    connections: AtomicU64,
    waiting: AtomicU64,
    most_waiting: AtomicU64,
    log_file: Option<Mutex<std::fs::File>>,
    /// Files read so far, by request path: a file is read from disk once,
    /// so the server's own work stays small beside the client's (they
    /// share the machine's cores in a benchmark).
    files: Mutex<std::collections::HashMap<String, Bytes>>,
}

/// A running server; it stops when dropped.
pub struct CacheServer {
    port: u16,
    https: bool,
    state: Arc<State>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl CacheServer {
    /// Starts serving on 127.0.0.1.
    pub fn start(opts: Options) -> std::io::Result<CacheServer> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("cache-server")
            .enable_all()
            .build()?;
        let log_file = match &opts.log_file {
            Some(p) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)?,
            )),
            None => None,
        };
        let state = Arc::new(State {
            log_file,
            ..State::default()
        });
        let tls = match &opts.tls {
            Some((cert, key)) => Some(acceptor(cert, key, opts.http2)?),
            None => None,
        };
        let listener = runtime.block_on(tokio::net::TcpListener::bind(("127.0.0.1", opts.port)))?;
        let port = listener.local_addr()?.port();
        let https = tls.is_some();
        let opts = Arc::new(opts);
        let st = state.clone();
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let _ = tcp.set_nodelay(true);
                let connection = st.connections.fetch_add(1, Ordering::SeqCst) + 1;
                let (st, opts, tls) = (st.clone(), opts.clone(), tls.clone());
                tokio::spawn(async move {
                    let max_streams = opts.max_streams;
                    let svc = hyper::service::service_fn(move |req| {
                        answer(req, st.clone(), opts.clone(), connection)
                    });
                    let mut builder =
                        hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    builder.http2().max_concurrent_streams(max_streams);
                    match tls {
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(tcp).await {
                                let _ = builder.serve_connection(TokioIo::new(stream), svc).await;
                            }
                        }
                        None => {
                            let _ = builder.serve_connection(TokioIo::new(tcp), svc).await;
                        }
                    }
                });
            }
        });
        Ok(CacheServer {
            port,
            https,
            state,
            runtime: Some(runtime),
        })
    }

    /// `https://127.0.0.1:PORT` or `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// The port listened on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every request answered so far, in order.
    pub fn served(&self) -> Vec<Served> {
        self.state.served.lock().unwrap().clone()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// The most requests that were waiting for their answer at one time:
    /// how many the client had in flight.
    pub fn most_in_flight(&self) -> u64 {
        self.state.most_waiting.load(Ordering::SeqCst)
    }

    /// Forgets the log and the counters, for the next run to be measured
    /// alone.
    pub fn reset(&self) {
        self.state.served.lock().unwrap().clear();
        self.state.connections.store(0, Ordering::SeqCst);
        self.state.most_waiting.store(0, Ordering::SeqCst);
    }
}

impl Drop for CacheServer {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// A TLS acceptor for the PEM chain and key, offering HTTP/2 or not.
fn acceptor(cert: &Path, key: &Path, http2: bool) -> std::io::Result<tokio_rustls::TlsAcceptor> {
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let bad = |e: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, e);
    let certs = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad(format!("{}: {e}", cert.display())))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("{}: {e}", cert.display())))?;
    let key =
        PrivateKeyDer::from_pem_file(key).map_err(|e| bad(format!("{}: {e}", key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad(e.to_string()))?;
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

type Body = BoxBody<Bytes, std::io::Error>;

/// The file under `root` that `path` names, if it stays inside `root`.
fn file_of(root: &Path, path: &str) -> Option<PathBuf> {
    let rel = Path::new(path.trim_start_matches('/'));
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return None;
    }
    let full = root.join(rel);
    full.is_file().then_some(full)
}

async fn answer(
    req: Request<hyper::body::Incoming>,
    st: Arc<State>,
    opts: Arc<Options>,
    connection: u64,
) -> Result<Response<Body>, std::convert::Infallible> {
    let waiting = st.waiting.fetch_add(1, Ordering::SeqCst) + 1;
    st.most_waiting.fetch_max(waiting, Ordering::SeqCst);
    tokio::time::sleep(opts.latency).await;
    st.waiting.fetch_sub(1, Ordering::SeqCst);
    let path = req.uri().path().to_string();
    let version = match req.version() {
        hyper::Version::HTTP_2 => "HTTP/2",
        hyper::Version::HTTP_11 => "HTTP/1.1",
        _ => "HTTP/1.0",
    }
    .to_string();
    let kept = st.files.lock().unwrap().get(&path).cloned();
    let data = match kept {
        Some(d) => Some(d),
        None => {
            let root = opts.root.clone();
            let p = path.clone();
            let read = tokio::task::spawn_blocking(move || {
                file_of(&root, &p).and_then(|f| std::fs::read(f).ok())
            })
            .await
            .ok()
            .flatten()
            .map(Bytes::from);
            if let Some(d) = &read {
                st.files.lock().unwrap().insert(path.clone(), d.clone());
            }
            read
        }
    };
    let record = |status: u16, bytes: u64| {
        if let Some(f) = &st.log_file {
            use std::io::Write;
            let _ = writeln!(
                f.lock().unwrap(),
                "{path} {status} {version} {connection} {bytes}"
            );
        }
        st.served.lock().unwrap().push(Served {
            path: path.clone(),
            status,
            version: version.clone(),
            connection,
            bytes,
        });
    };
    let Some(data) = data else {
        record(404, 0);
        return Ok(reply(StatusCode::NOT_FOUND, empty(), 0));
    };
    let len = data.len() as u64;
    // Nix asks `HEAD /HASH.narinfo` to learn whether a path is there: the
    // head alone (a body on a HEAD answer breaks an HTTP/2 stream).
    if req.method() == hyper::Method::HEAD {
        record(200, 0);
        return Ok(reply(StatusCode::OK, empty(), len));
    }
    record(200, len);
    let body = match opts.rate.filter(|r| *r > 0) {
        None => BoxBody::new(http_body_util::Full::new(data).map_err(|never| match never {})),
        Some(rate) => BoxBody::new(Paced {
            data,
            sent: 0,
            rate,
            start: tokio::time::Instant::now(),
            sleep: None,
        }),
    };
    Ok(reply(StatusCode::OK, body, len))
}

/// An answer with `status`, `body` and a Content-Length of `length`.
fn reply(status: StatusCode, body: Body, length: u64) -> Response<Body> {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(hyper::header::CONTENT_LENGTH, length.into());
    resp
}

/// An empty body.
fn empty() -> Body {
    BoxBody::new(http_body_util::Empty::new().map_err(|never| match never {}))
}

/// A body sent at `rate` bytes a second, in 64 KiB frames: each frame
/// waits until the rate allows it. Its exact size is known, so the
/// Content-Length header and the frames always agree (a body fed through
/// a channel here once ended streams early under HTTP/2).
struct Paced {
    data: Bytes,
    sent: usize,
    rate: u64,
    start: tokio::time::Instant,
    sleep: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl hyper::body::Body for Paced {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        use std::task::Poll;
        if self.sent >= self.data.len() {
            return Poll::Ready(None);
        }
        let end = (self.sent + (1 << 16)).min(self.data.len());
        let due = self.start + Duration::from_secs_f64(end as f64 / self.rate as f64);
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        if sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.sleep = None;
        let frame = self.data.slice(self.sent..end);
        self.sent = end;
        Poll::Ready(Some(Ok(Frame::data(frame))))
    }

    fn is_end_stream(&self) -> bool {
        self.sent >= self.data.len()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::SizeHint::with_exact((self.data.len() - self.sent) as u64)
    }
}
