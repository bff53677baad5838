//! How a binary cache's files are fetched: the one thing that differs
//! between a `file://` directory ([`file::FileTransport`]) and an
//! `http://`/`https://` cache ([`http::HttpTransport`]), as Nix's one
//! `BinaryCacheStore` sits over each store's `getFile`.
//!
//! A transport knows where a file of the cache is and how to get it, and
//! everything that comes with that: confining a narinfo's NAR URL to the
//! cache, the local cache of fetched files, threads and connections,
//! retries, credentials, download counters. What the files mean (narinfos,
//! signatures, listings, NAR decompression, what is remembered for the
//! run) is [`super::BinaryCache`]'s, the same over both.

pub(crate) mod file;
pub(crate) mod http;
mod http_client;

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::local_cache::LocalCache;
use nix_heft_format::store_path::StorePath;

use super::{MAX_LISTING, MAX_NARINFO, RunLog};

/// The small files of a cache, each fetched whole, with the limit past
/// which it is refused and the words its messages name it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Meta {
    /// `nix-cache-info`.
    CacheInfo,
    /// `<hash>.narinfo`.
    Narinfo,
    /// `<hash>.ls`, a NAR listing.
    Listing,
}

impl Meta {
    /// The largest such file read.
    pub(crate) fn max(self) -> u64 {
        match self {
            Meta::CacheInfo | Meta::Narinfo => MAX_NARINFO,
            Meta::Listing => MAX_LISTING,
        }
    }

    /// How messages name it ("larger than the 16 MiB limit for a narinfo").
    pub(crate) fn what(self) -> &'static str {
        match self {
            Meta::CacheInfo => "nix-cache-info",
            Meta::Narinfo => "a narinfo",
            Meta::Listing => "a NAR listing",
        }
    }
}

/// A NAR file as a transport serves it: compressed as the narinfo says.
pub(crate) struct NarBody {
    /// The compressed bytes (after any transport encoding is undone).
    pub reader: Box<dyn std::io::Read + Send>,
    /// The file or URL it comes from, for messages.
    pub name: PathBuf,
    /// Fetched over a network ([`super::Nar::downloaded`]).
    pub downloaded: bool,
}

/// Gets the files of one binary cache. Every `rel` is a name relative to
/// the cache's root (`nix-cache-info`, `HASH.narinfo`, `HASH.ls`).
pub(crate) trait Transport: Send + Sync {
    /// The cache's URL, as messages, signatures' warnings and
    /// [`super::Provenance`] name it (`file:///abs/dir`, `https://host`).
    fn url(&self) -> &str;

    /// Where the file `rel` is (a path, or a URL as a path), for messages
    /// and narinfo errors.
    fn locate(&self, rel: &str) -> PathBuf;

    /// The text of `nix-cache-info`; an error (each transport's own) when
    /// there is none: then this is no binary cache.
    fn cache_info(&self) -> Result<Vec<u8>>;

    /// Whether the cache must be for `/nix/store`, as an HTTP cache has
    /// always had to be (another `StoreDir` is refused when it opens); a
    /// directory may be for any store directory.
    fn default_store_dir_only(&self) -> bool {
        false
    }

    /// Called once the cache is open (its `nix-cache-info` read and
    /// accepted): a transport that downloads takes its counters in `log`
    /// then, so a URL that is no cache adds none.
    fn opened(&mut self, _log: &RunLog) {}

    /// The file `rel` whole, `None` when the cache has none; one larger
    /// than `kind`'s limit is an error.
    fn get(&self, rel: &str, kind: Meta) -> Result<Option<Vec<u8>>>;

    /// The NAR file a narinfo names by its `URL` field (`url`), which must
    /// lie inside the cache (a narinfo is data from whoever wrote it).
    /// `narinfo` is that narinfo's `rel`, `path` the store path it is of.
    fn nar(&self, path: &StorePath, narinfo: &str, url: &str) -> Result<NarBody>;

    /// The `rel` of every narinfo the cache holds, or `None` when the cache
    /// cannot be listed (over HTTP).
    fn list(&self) -> Option<Result<Vec<String>>>;

    /// The error for `path`, which `referrer` references, having no
    /// narinfo (`narinfo` is its `rel`).
    fn missing(&self, path: &StorePath, referrer: &StorePath, narinfo: &str) -> Error;

    /// The threads requests are made on, when the transport has its own
    /// (HTTP: `--http-connections` of them); `None`: the caller's.
    fn pool(&self) -> Option<&rayon::ThreadPool> {
        None
    }

    /// The local cache where fetched narinfos, listings and reads are kept
    /// across runs, for a transport that downloads; `None`: not kept.
    fn local(&self) -> Option<&LocalCache> {
        None
    }
}
