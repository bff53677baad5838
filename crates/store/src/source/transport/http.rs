//! The files of an HTTP binary cache (`http://…`, `https://…`):
//! cache.nixos.org, Cachix, Attic, a Hydra, or `nix-serve`.
//!
//! What is fetched, and only when the answer needs it (the store over this
//! transport, [`crate::source::BinaryCache`], asks):
//!
//! 1. `nix-cache-info`, to check that the cache is for `/nix/store`;
//! 2. `<hash>.narinfo` for each path of the closure asked for, as a work
//!    queue (a path's references are asked for as soon as its narinfo
//!    arrives), `--http-connections` at a time on a pool of threads that
//!    share one client ([`super::http_client`]): over `https://` the
//!    requests are multiplexed as HTTP/2 streams, one connection per 64,
//!    when the server offers HTTP/2 (as cache.nixos.org's CDN does, and as
//!    Nix's curl asks), else sent over a pool of HTTP/1.1 keep-alive
//!    connections, one request in flight each;
//! 3. `<hash>.ls`, the NAR listing, when a path's tree is needed (its file
//!    sizes, symlink targets and names): no NAR;
//! 4. a NAR only when its file contents must be scanned, streamed through
//!    the decompressor and the scanner, never held whole.
//!
//! Narinfos and listings are kept in the [`LocalCache`], so a rerun asks
//! the cache only for `nix-cache-info`.
//!
//! Failures, as Nix treats them: 404 and 403 (S3's answer for a missing
//! key) mean "not in this cache"; 5xx, 429, resets, refused connections and
//! time-outs are retried with capped exponential backoff a bounded number
//! of times; every transport read has a time-out, so a stalled server gives
//! an error, never a hang. Credentials come from netrc
//! ([`nix_heft_format::netrc`]) and appear in no message.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{Meta, NarBody, Transport};
use crate::error::{Error, Result};
use crate::local_cache::LocalCache;
use crate::source::{Downloads, OpenOptions, RunLog};
use nix_heft_format::store_path::StorePath;

/// Requests in flight by default (`--http-connections` changes it): Nix's
/// own default of `http-connections`, as its manual gives it. A closure is
/// loaded as a work queue whose lookups these bound, so a closure of N
/// paths over a round trip RTT costs about max(depth, N / this) × RTT:
/// against a CDN-like server answering after 50 ms (BENCHMARKS.md,
/// `bench/closure-queue.sh`) 9,137 narinfos took 32 s at 16, 9 s at 64,
/// 4.3 s at 128, so a user of such a cache raises it; but a small server
/// (a self-hosted cache) answers fewer at once, and 128 against one took
/// 63 to 71 s where 25 took 2.9 s (issue 38), so the default is Nix's.
/// Over HTTP/2 these are streams, 64 to a connection (a server caps the
/// streams of one: CDNs at about 100); over HTTP/1.1 each needs a
/// connection of its own, kept alive. Only narinfos and listings use them
/// all: NARs are read a few at a time.
pub const DEFAULT_HTTP_CONNECTIONS: usize = 25;
/// Most requests in flight whatever is asked (nix.conf's 0, Nix's "no
/// limit", asks for this): each is a thread.
pub const MAX_HTTP_CONNECTIONS: usize = 256;
/// The requests in flight for `--http-connections` (or nix.conf's
/// `http-connections`) as given: `None` is `DEFAULT_HTTP_CONNECTIONS`, 0
/// (Nix's "no limit") and anything larger are `MAX_HTTP_CONNECTIONS`.
pub fn http_connections(asked: Option<usize>) -> usize {
    match asked {
        None => DEFAULT_HTTP_CONNECTIONS,
        Some(0) => MAX_HTTP_CONNECTIONS,
        Some(n) => n.min(MAX_HTTP_CONNECTIONS),
    }
}
/// HTTP/2 flow-control window of each stream (see the client's builder).
const HTTP2_STREAM_WINDOW: u32 = 8 << 20;
/// HTTP/2 flow-control window of a connection, shared by its streams: the
/// few NARs read at once each get a stream's window.
const HTTP2_CONNECTION_WINDOW: u32 = 32 << 20;
/// Attempts per request (the first and the retries).
const ATTEMPTS: u32 = 4;
/// First backoff; doubled each retry up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Cap on one backoff.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// Default time-out of a connection attempt and of each read
/// (`NIX_HEFT_HTTP_TIMEOUT`, seconds, overrides it).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// An HTTP or HTTPS binary cache's files.
pub(crate) struct HttpTransport {
    /// The cache URL without query or trailing `/`.
    base: String,
    client: super::http_client::HttpClient,
    /// `Basic …` from netrc, if any; never printed.
    auth: Option<String>,
    pool: rayon::ThreadPool,
    local: LocalCache,
    /// What this run asked the cache for, by kind: this cache's counters
    /// in the run's log, once it is open.
    stats: Arc<Downloads>,
}

/// Counts the bytes read through it into a shared counter.
struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// The outcome of one GET after retries.
enum Got {
    Body(super::http_client::Answer),
    /// 404 or 403.
    Absent,
}

impl HttpTransport {
    /// The cache at `spec` (`http://host/path`, query ignored): its client,
    /// credentials, threads and local cache; nothing is fetched yet.
    pub(crate) fn open(spec: &str, opts: &OpenOptions) -> Result<Self> {
        let base = spec
            .split_once('?')
            .map_or(spec, |(a, _)| a)
            .trim_end_matches('/')
            .to_string();
        // `https://user:password@host/…`: the credentials are used, and
        // removed from the URL that messages and the local cache show.
        let (base, url_auth) = split_userinfo(&base);
        let host = host_of(&base).to_string();
        let timeout = std::env::var("NIX_HEFT_HTTP_TIMEOUT")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|s| *s > 0.0 && s.is_finite())
            .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64);
        let connections = http_connections(opts.http_connections);
        let roots = trusted_roots(&base)?;
        let builder = || {
            let b = reqwest::Client::builder();
            match &roots {
                Some(certs) => certs.iter().fold(b.tls_built_in_root_certs(false), |b, c| {
                    b.add_root_certificate(c.clone())
                }),
                None => b,
            }
            .connect_timeout(timeout)
            .pool_max_idle_per_host(connections * 2)
            // HTTP/2's default window (64 KiB per stream) would cap a NAR
            // at 64 KiB per round trip: 1.3 MB/s at 50 ms. hyper's adaptive
            // window (BDP pings) would grow it, but streams cut short
            // ("stream error: unspecific protocol error") were more frequent
            // with it in the benchmarks (BENCHMARKS.md), so the windows are
            // fixed: 8 MiB per stream is 160 MB/s at 50 ms, and the
            // readers' pace bounds what is buffered.
            .http2_initial_stream_window_size(HTTP2_STREAM_WINDOW)
            .http2_initial_connection_window_size(HTTP2_CONNECTION_WINDOW)
            // A redirect to another host loses the Authorization header
            // (reqwest drops it): credentials are for this host only.
            .redirect(reqwest::redirect::Policy::limited(5))
            .user_agent(concat!("nix-heft/", env!("CARGO_PKG_VERSION")))
        };
        let client =
            super::http_client::HttpClient::new(builder, connections, timeout).map_err(|e| {
                Error::Http {
                    url: base.clone(),
                    reason: format!("cannot start the HTTP client: {e}"),
                }
            })?;
        let netrc_auth =
            nix_heft_format::netrc::netrc_path(opts.netrc_file.as_deref()).and_then(|p| {
                let text = std::fs::read_to_string(p).ok()?;
                let c = nix_heft_format::netrc::lookup(&text, &host)?;
                Some(basic(&c))
            });
        let auth = url_auth.map(|c| basic(&c)).or(netrc_auth);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(connections)
            .thread_name(|i| format!("nix-heft-http-{i}"))
            .build()
            .map_err(|source| crate::error::Error::Threads {
                what: format!("the requests to {base}"),
                source,
            })?;
        Ok(HttpTransport {
            local: LocalCache::open(&base, opts.refresh),
            base,
            client,
            auth,
            pool,
            stats: Arc::default(),
        })
    }

    /// GET `url` with retries. `small` asks for any content encoding (the
    /// body is decoded by [`read_small`]); NARs are asked for as they are.
    fn request(&self, url: &str, small: bool) -> Result<Got> {
        let mut backoff = FIRST_BACKOFF;
        let mut last = String::new();
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            let mut headers = vec![(
                "Accept-Encoding",
                if small { "br, zstd, gzip" } else { "identity" },
            )];
            if let Some(a) = &self.auth {
                headers.push(("Authorization", a));
            }
            match self.client.get(url, &headers) {
                Ok(resp) => {
                    let status = resp.status;
                    match status {
                        200..=299 => return Ok(Got::Body(resp)),
                        404 | 403 => return Ok(Got::Absent),
                        401 => {
                            return Err(if self.auth.is_some() {
                                Error::Http {
                                    url: url.to_string(),
                                    reason: "401 Unauthorized: the cache refused the netrc \
                                             credentials for this host"
                                        .into(),
                                }
                            } else {
                                Error::NeedsCredentials {
                                    url: url.to_string(),
                                }
                            });
                        }
                        429 | 500..=599 => last = format!("HTTP {status}"),
                        _ => {
                            return Err(Error::Http {
                                url: url.to_string(),
                                reason: format!("unexpected HTTP status {status}"),
                            });
                        }
                    }
                }
                Err(e) => {
                    last = e.to_string();
                    if !e.retryable() {
                        return Err(Error::Http {
                            url: url.to_string(),
                            reason: last,
                        });
                    }
                }
            }
        }
        Err(Error::Http {
            url: url.to_string(),
            reason: format!("{last} (gave up after {ATTEMPTS} attempts)"),
        })
    }

    /// The body of a narinfo, listing or `nix-cache-info` (see
    /// [`read_small`]), `None` when the cache has none. A body cut off
    /// midway (a reset connection or stream) is asked for again, as a
    /// failed request is.
    fn get_small(&self, url: &str, max: u64, what: &str) -> Result<Option<Vec<u8>>> {
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 1;
        loop {
            let resp = match self.request(url, true)? {
                Got::Body(r) => r,
                Got::Absent => return Ok(None),
            };
            match read_small(resp, url, max, what) {
                Ok(bytes) => return Ok(Some(bytes)),
                Err(Small::Broken(_)) if attempt < ATTEMPTS => {
                    attempt += 1;
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Err(Small::Broken(e) | Small::Refused(e)) => return Err(e),
            }
        }
    }

    /// The URL a narinfo's `URL` field names: relative to the cache, with
    /// no `..` and no other host, as a narinfo is data from whoever wrote
    /// the cache.
    fn nar_url(&self, path: &StorePath, url: &str) -> Result<String> {
        confine(&self.base, url).map_err(|why| Error::Http {
            url: format!("{}/{}.narinfo", self.base, path.hash_part()),
            reason: format!("its URL '{url}' {why}; refusing to fetch it"),
        })
    }

    /// `base/rel`.
    fn url_of(&self, rel: &str) -> String {
        format!("{}/{rel}", self.base)
    }
}

impl Transport for HttpTransport {
    fn url(&self) -> &str {
        &self.base
    }

    fn locate(&self, rel: &str) -> PathBuf {
        PathBuf::from(self.url_of(rel))
    }

    fn cache_info(&self) -> Result<Vec<u8>> {
        let info_url = self.url_of("nix-cache-info");
        match self.get_small(&info_url, Meta::CacheInfo.max(), Meta::CacheInfo.what())? {
            Some(bytes) => Ok(bytes),
            None => Err(Error::Http {
                url: info_url,
                reason: "not found: this URL is not a Nix binary cache".into(),
            }),
        }
    }

    fn default_store_dir_only(&self) -> bool {
        true
    }

    fn opened(&mut self, log: &RunLog) {
        self.stats = log.downloads_of(&self.base);
    }

    fn get(&self, rel: &str, kind: Meta) -> Result<Option<Vec<u8>>> {
        let got = self.get_small(&self.url_of(rel), kind.max(), kind.what())?;
        if got.is_some() {
            match kind {
                Meta::Narinfo => self.stats.narinfos.fetch_add(1, Ordering::Relaxed),
                Meta::Listing => self.stats.listings.fetch_add(1, Ordering::Relaxed),
                Meta::CacheInfo => 0,
            };
        }
        Ok(got)
    }

    /// The NAR streamed; what is hashed for a file check is the file after
    /// any Content-Encoding is undone (that is transport).
    fn nar(&self, path: &StorePath, _narinfo: &str, url: &str) -> Result<NarBody> {
        let url = self.nar_url(path, url)?;
        let resp = match self.request(&url, false)? {
            Got::Body(r) => r,
            Got::Absent => {
                return Err(Error::Http {
                    url,
                    reason: format!("not found, although the narinfo of {path} names it"),
                });
            }
        };
        self.stats.nars.fetch_add(1, Ordering::Relaxed);
        let encoding = content_encoding(&resp);
        let counted = Counting {
            inner: resp.body,
            count: self.stats.bytes.clone(),
        };
        let reader = decode_content(&encoding, Box::new(counted), &url)?;
        Ok(NarBody {
            reader,
            name: PathBuf::from(url),
            downloaded: true,
        })
    }

    /// An HTTP cache cannot be listed, and fetching every narinfo of
    /// cache.nixos.org is not an option.
    fn list(&self) -> Option<Result<Vec<String>>> {
        None
    }

    fn missing(&self, path: &StorePath, referrer: &StorePath, narinfo: &str) -> Error {
        Error::Http {
            url: self.url_of(narinfo),
            reason: format!("not found: the cache has no {path} (referenced by {referrer})"),
        }
    }

    fn pool(&self) -> Option<&rayon::ThreadPool> {
        Some(&self.pool)
    }

    fn local(&self) -> Option<&LocalCache> {
        Some(&self.local)
    }
}

/// An answer's `Content-Encoding`, lower case; empty when none.
fn content_encoding(resp: &super::http_client::Answer) -> String {
    resp.headers
        .get("content-encoding")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Wraps `body` in the decoder its `Content-Encoding` (`enc`) names:
/// servers and CDNs send listings and narinfos compressed with br, zstd or
/// gzip, whatever the request asked for.
fn decode_content(
    enc: &str,
    body: Box<dyn Read + Send>,
    url: &str,
) -> Result<Box<dyn Read + Send>> {
    Ok(match enc {
        "" | "identity" => body,
        "br" => Box::new(brotli_decompressor::Decompressor::new(body, 1 << 16)),
        "zstd" => Box::new(
            zstd::stream::read::Decoder::new(body).map_err(|e| Error::Http {
                url: url.to_string(),
                reason: format!("zstd: {e}"),
            })?,
        ),
        "gzip" | "x-gzip" => Box::new(flate2::read::MultiGzDecoder::new(body)),
        "deflate" => Box::new(flate2::read::ZlibDecoder::new(body)),
        other => {
            return Err(Error::Http {
                url: url.to_string(),
                reason: format!("unsupported Content-Encoding '{other}'"),
            });
        }
    })
}

/// Why [`read_small`] gave no body.
enum Small {
    /// Too large, or in an encoding nix-heft cannot decode: asking again
    /// gets the same.
    Refused(Error),
    /// Cut off or garbled on the way: worth asking again.
    Broken(Error),
}

/// Reads a narinfo, listing or nix-cache-info body, decoded, of at most
/// `max` bytes (as decoded): a larger one is an error naming the URL and
/// the limit. A `Content-Length` past the limit is refused before any of
/// the body is read; without one (chunked, or encoded), reading stops at
/// the limit.
fn read_small(
    resp: super::http_client::Answer,
    url: &str,
    max: u64,
    what: &str,
) -> std::result::Result<Vec<u8>, Small> {
    let too_large = || {
        Small::Refused(Error::Http {
            url: url.to_string(),
            reason: crate::source::too_large(what, max),
        })
    };
    let declared = resp
        .headers
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let encoding = content_encoding(&resp);
    if encoding.is_empty() && declared.is_some_and(|n| n > max) {
        return Err(too_large());
    }
    let r = decode_content(&encoding, Box::new(resp.body), url).map_err(Small::Refused)?;
    let mut out = Vec::new();
    r.take(max + 1).read_to_end(&mut out).map_err(|e| {
        Small::Broken(Error::Http {
            url: url.to_string(),
            reason: format!("reading the body: {e}"),
        })
    })?;
    if out.len() as u64 > max {
        return Err(too_large());
    }
    Ok(out)
}

/// TLS roots: the bundled Mozilla roots, or, as Nix does, the PEM bundle
/// named by `NIX_SSL_CERT_FILE` (else `SSL_CERT_FILE`) when one is set, for
/// caches behind a company's own certificate authority.
fn trusted_roots(base: &str) -> Result<Option<Vec<reqwest::Certificate>>> {
    let file = ["NIX_SSL_CERT_FILE", "SSL_CERT_FILE"]
        .iter()
        .find_map(|v| std::env::var_os(v).filter(|x| !x.is_empty()));
    let Some(file) = file else {
        return Ok(None);
    };
    let bad = |reason: String| Error::Http {
        url: base.to_string(),
        reason: format!(
            "certificate file {}: {reason}",
            PathBuf::from(&file).display()
        ),
    };
    let pem = std::fs::read(&file).map_err(|e| bad(e.to_string()))?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("holds no certificate".into()));
    }
    Ok(Some(certs))
}

/// The absolute URL of a narinfo's `URL` field, which must stay inside
/// the cache at `base`: relative without `..`, or absolute below `base`.
fn confine(base: &str, url: &str) -> std::result::Result<String, &'static str> {
    if url.contains("://") {
        return match url.strip_prefix(&format!("{base}/")) {
            Some(rest) if !rest.split('/').any(|c| c == "..") => Ok(url.to_string()),
            _ => Err("points outside the cache"),
        };
    }
    if url.is_empty() || url.starts_with('/') || url.split('/').any(|c| c == "..") {
        return Err("is not a path inside the cache");
    }
    Ok(format!("{base}/{url}"))
}

/// An `Authorization` header value for HTTP basic authentication.
fn basic(c: &nix_heft_format::netrc::Credentials) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", c.login, c.password))
    )
}

/// `url` without user info, and the credentials it held.
fn split_userinfo(url: &str) -> (String, Option<nix_heft_format::netrc::Credentials>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_string(), None);
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let Some((info, host)) = authority.rsplit_once('@') else {
        return (url.to_string(), None);
    };
    let (login, password) = info.split_once(':').unwrap_or((info, ""));
    (
        format!("{scheme}://{host}{path}"),
        Some(nix_heft_format::netrc::Credentials {
            login: login.to_string(),
            password: password.to_string(),
        }),
    )
}

/// The host of `url` (no user info, no port), for netrc.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split(']').next().unwrap_or("");
    }
    authority.split(':').next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::{MAX_HTTP_CONNECTIONS, confine, host_of, http_connections};

    /// Nix's default of `http-connections` (its manual: 25), 0 its "no
    /// limit", capped.
    #[test]
    fn http_connections_default_to_nixs() {
        assert_eq!(http_connections(None), 25);
        assert_eq!(http_connections(Some(0)), MAX_HTTP_CONNECTIONS);
        assert_eq!(http_connections(Some(10_000)), MAX_HTTP_CONNECTIONS);
        assert_eq!(http_connections(Some(7)), 7);
    }

    #[test]
    fn user_info_is_taken_out_of_the_url() {
        let (u, c) = super::split_userinfo("https://al:pw@h:8/c");
        assert_eq!(u, "https://h:8/c");
        let c = c.unwrap();
        assert_eq!((c.login.as_str(), c.password.as_str()), ("al", "pw"));
        assert!(super::split_userinfo("https://h/c@x").1.is_none());
    }

    #[test]
    fn nar_urls_stay_in_the_cache() {
        let b = "http://h/c";
        assert_eq!(
            confine(b, "nar/x.nar.xz").unwrap(),
            "http://h/c/nar/x.nar.xz"
        );
        assert_eq!(confine(b, "http://h/c/nar/x").unwrap(), "http://h/c/nar/x");
        for bad in [
            "../x",
            "/etc/passwd",
            "nar/../../x",
            "",
            "http://evil/x",
            "http://h/c/../d",
        ] {
            assert!(confine(b, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hosts() {
        assert_eq!(host_of("https://cache.nixos.org"), "cache.nixos.org");
        assert_eq!(host_of("http://u:p@127.0.0.1:8080/x"), "127.0.0.1");
        assert_eq!(host_of("http://[::1]:80/"), "::1");
    }
}
