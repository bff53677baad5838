//! The HTTP client under [`super::http`]: reqwest (hyper, rustls),
//! speaking HTTP/2 where the server offers it through ALPN and HTTP/1.1
//! keep-alive otherwise, driven by a small tokio runtime of its own.
//!
//! Callers are plain threads (the closure's work queue, the NAR readers):
//! [`HttpClient::get`] hands the request to the runtime and blocks until
//! the answer's head arrives; the body then comes through a bounded
//! channel ([`Body`], a `Read`). Why not reqwest's blocking client: it
//! lets each calling thread poll the connection's shared state itself, and
//! with 128 threads on one HTTP/2 connection they fought over its lock,
//! spending more time in the kernel than the answers took to arrive
//! (measured: 7–11 s of system time for 9,137 narinfos). Here only the
//! runtime's two threads touch a connection; a caller sleeps until its
//! answer is there.
//!
//! A caller may itself be a task of another tokio runtime (the survey runs
//! nix-heft's library inside DataFusion's): it waits with
//! `futures_executor::block_on`, which tokio does not forbid there as it
//! forbids its own `blocking_recv`, and the runtime here is shut down
//! without waiting when the client is dropped, which may also happen
//! there.

use std::io::Read;
use std::time::Duration;

use bytes::{Buf, Bytes};

/// Chunks of a body buffered ahead of the reader: a NAR streams at the
/// reader's pace, a few 16–64 KiB frames ahead, whatever its size.
const BODY_CHUNKS_AHEAD: usize = 8;

/// Requests in flight per HTTP/2 connection before another connection is
/// opened. A server caps the streams of one connection (cache.nixos.org's
/// CDN, like most, at 100) and hyper keeps one connection per client, so
/// 128 requests in flight over one connection would run 100 at a time:
/// measured at 50 ms, 9,137 narinfos took 5.3 s over one connection and
/// 3.9 s over two of 64 (BENCHMARKS.md).
pub const STREAMS_PER_CONNECTION: usize = 64;

/// Clients and the runtime that drives their connections.
pub struct HttpClient {
    /// Always `Some` until dropped (see the `Drop` impl).
    runtime: Option<tokio::runtime::Runtime>,
    /// One per [`STREAMS_PER_CONNECTION`] requests in flight: each keeps
    /// its own connection (HTTP/2) or pool (HTTP/1.1).
    clients: Vec<reqwest::Client>,
    /// Which client the next request goes to.
    next: std::sync::atomic::AtomicUsize,
    timeout: Duration,
}

/// Why a request got no answer.
#[derive(Debug)]
pub enum Failure {
    /// No answer's head within the time-out.
    TimedOut(Duration),
    /// The transport failed (refused, reset, TLS, protocol).
    Transport(reqwest::Error),
    /// The client could not start (no threads left, no TLS backend).
    Start(String),
}

/// An answer's status and headers, its body still to be read.
pub struct Answer {
    /// The HTTP status code.
    pub status: u16,
    /// The answer's headers.
    pub headers: reqwest::header::HeaderMap,
    /// The body, as it arrives.
    pub body: Body,
}

/// An answer's body as a reader: chunks arrive from the runtime; a chunk
/// not arriving within the time-out, or a broken connection, is an I/O
/// error, never a hang.
pub struct Body {
    chunks: tokio::sync::mpsc::Receiver<std::io::Result<Bytes>>,
    current: Bytes,
}

impl Read for Body {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match futures_executor::block_on(self.chunks.recv()) {
                Some(Ok(chunk)) => self.current = chunk,
                Some(Err(e)) => return Err(e),
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.current.len());
        out[..n].copy_from_slice(&self.current[..n]);
        self.current.advance(n);
        Ok(n)
    }
}

impl HttpClient {
    /// Clients built from `builder`, one per [`STREAMS_PER_CONNECTION`] of
    /// `in_flight` (the most requests callers will have in flight at once).
    /// `timeout` bounds the wait for an answer's head, then for each chunk
    /// of its body, so a stalled server gives an error while a large NAR
    /// may take as long as it keeps arriving.
    pub fn new(
        builder: impl Fn() -> reqwest::ClientBuilder,
        in_flight: usize,
        timeout: Duration,
    ) -> Result<Self, Failure> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("nix-heft-net")
            .enable_all()
            .build()
            .map_err(|e| Failure::Start(format!("cannot start its threads: {e}")))?;
        // reqwest's connector needs the runtime's reactor when it is built.
        let clients = {
            let _entered = runtime.enter();
            (0..in_flight.div_ceil(STREAMS_PER_CONNECTION).max(1))
                .map(|_| builder().build().map_err(Failure::Transport))
                .collect::<Result<Vec<_>, _>>()?
        };
        Ok(HttpClient {
            runtime: Some(runtime),
            clients,
            next: std::sync::atomic::AtomicUsize::new(0),
            timeout,
        })
    }

    /// GET `url` with `headers`; blocks until the head of the answer
    /// arrives.
    pub fn get(&self, url: &str, headers: &[(&str, &str)]) -> Result<Answer, Failure> {
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % self.clients.len();
        let mut req = self.clients[i].get(url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let timeout = self.timeout;
        let (head_tx, head_rx) = tokio::sync::oneshot::channel();
        let Some(runtime) = &self.runtime else {
            return Err(Failure::Start("the client was shut down".into()));
        };
        runtime.spawn(async move {
            let mut resp = match tokio::time::timeout(timeout, req.send()).await {
                Err(_) => {
                    let _ = head_tx.send(Err(Failure::TimedOut(timeout)));
                    return;
                }
                Ok(Err(e)) => {
                    let _ = head_tx.send(Err(Failure::Transport(e)));
                    return;
                }
                Ok(Ok(r)) => r,
            };
            let (tx, rx) = tokio::sync::mpsc::channel(BODY_CHUNKS_AHEAD);
            let answer = Answer {
                status: resp.status().as_u16(),
                headers: std::mem::take(resp.headers_mut()),
                body: Body {
                    chunks: rx,
                    current: Bytes::new(),
                },
            };
            if head_tx.send(Ok(answer)).is_err() {
                return;
            }
            loop {
                let next = match tokio::time::timeout(timeout, resp.chunk()).await {
                    Err(_) => Some(Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("no data for {}s", timeout.as_secs_f64()),
                    ))),
                    Ok(Err(e)) => Some(Err(std::io::Error::other(describe(&e)))),
                    Ok(Ok(Some(chunk))) => Some(Ok(chunk)),
                    Ok(Ok(None)) => None,
                };
                let Some(item) = next else { break };
                let failed = item.is_err();
                // The reader went away (it had read enough, or failed):
                // drop the answer, which resets the stream.
                if tx.send(item).await.is_err() || failed {
                    break;
                }
            }
            // The answer first, so its connection goes back to the pool
            // before the reader sees the end and asks its next question.
            drop(resp);
            drop(tx);
        });
        futures_executor::block_on(head_rx).unwrap_or(Err(Failure::TimedOut(timeout)))
    }
}

impl Drop for HttpClient {
    /// Stops the runtime without waiting for its tasks (a body nobody
    /// reads any more): dropping a runtime the usual way blocks, which
    /// tokio refuses inside another runtime's task.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Failure {
    /// Whether another attempt may succeed: a refused or reset
    /// connection, a time-out, a connection closed mid-answer; not a TLS
    /// failure (an untrusted certificate answers the same every time), a
    /// request built wrong or a redirect loop.
    pub fn retryable(&self) -> bool {
        let e = match self {
            Failure::TimedOut(_) => return true,
            Failure::Start(_) => return false,
            Failure::Transport(e) => e,
        };
        if e.is_builder() || e.is_redirect() || e.is_status() {
            return false;
        }
        // A TLS failure comes as an I/O error of kind InvalidData.
        let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
        while let Some(s) = source {
            if s.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::InvalidData)
            {
                return false;
            }
            source = s.source();
        }
        true
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::TimedOut(t) => write!(f, "timed out (no answer in {}s)", t.as_secs_f64()),
            Failure::Transport(e) => f.write_str(&describe(e)),
            Failure::Start(why) => f.write_str(why),
        }
    }
}

/// A transport error in words: reqwest's own message is only "error
/// sending request"; the cause (refused, certificate, reset) is in its
/// sources.
fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out".into();
    }
    let mut causes: Vec<String> = Vec::new();
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return "connection refused".into();
        }
        let text = s.to_string();
        if !causes.iter().any(|c| c.contains(&text)) {
            causes.push(text);
        }
        source = s.source();
    }
    if causes.is_empty() {
        e.to_string()
    } else {
        causes.join(": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};

    /// Answers one request on 127.0.0.1 with `body`, over HTTP/1.1.
    fn one_answer(body: &'static str) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let mut conn = conn;
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        });
        format!("http://127.0.0.1:{port}/x")
    }

    fn fetch(url: &str) -> String {
        let client = HttpClient::new(reqwest::Client::builder, 8, Duration::from_secs(10)).unwrap();
        let mut answer = client.get(url, &[]).unwrap();
        assert_eq!(answer.status, 200);
        let mut out = String::new();
        answer.body.read_to_string(&mut out).unwrap();
        out
        // The client is dropped here, inside the caller's context.
    }

    #[test]
    fn answers_on_a_plain_thread() {
        assert_eq!(fetch(&one_answer("hello")), "hello");
    }

    /// The survey calls the library from tasks of its own tokio runtime:
    /// waiting for an answer and dropping the client there must not panic
    /// (tokio forbids `blocking_recv` and a blocking runtime drop inside a
    /// runtime).
    #[test]
    fn answers_inside_another_tokio_runtime() {
        let url = one_answer("inside");
        let outer = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let got = outer.block_on(async { fetch(&url) });
        assert_eq!(got, "inside");
    }
}
