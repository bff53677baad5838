//! Where a survey's files live: a local directory, or an object store that
//! DataFusion reads and writes through `object_store`.
//!
//! `-o` takes a directory (`DIR`, `file:///ABS/DIR`), `s3://BUCKET/PREFIX`
//! (credentials, region and endpoint from the usual `AWS_*` variables of
//! each process: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_REGION`, `AWS_ENDPOINT`, `AWS_ALLOW_HTTP`), or
//! `http(s)://HOST/PATH` on a WebDAV server (PUT, MKCOL, PROPFIND).
//!
//! Layout under that location:
//!
//! ```text
//! survey.json                     what was surveyed (store, partitions, a digest of the paths)
//! parts/NNNNN/{paths,edges,evidence,problems}.parquet
//!                                 the map step's rows of partition NNNNN
//! parts/NNNNN/_SUCCESS            written last: the partition is complete
//! {paths,edges,evidence,problems}.parquet
//!                                 the tables, with the graph step's columns
//! ```
//!
//! No object store renames a directory in one step, so a partition is
//! complete when its marker is there, as Hadoop and Spark mark a finished
//! output. Each object itself only ever appears whole: the local store
//! writes to a staging file and renames it, S3 shows a multipart upload
//! only once it is completed, and WebDAV gets every file in one PUT.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use datafusion::arrow::array::RecordBatch;
use datafusion::parquet::arrow::AsyncArrowWriter;
use datafusion::prelude::SessionContext;
use futures::{Stream, StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::buffered::BufWriter;
use object_store::http::HttpBuilder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ClientConfigKey, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig};
use url::Url;

use crate::usage;

/// The marker of a complete partition.
const MARKER: &str = "_SUCCESS";

/// An opened output location.
#[derive(Debug, Clone)]
pub struct Output {
    store: Arc<dyn ObjectStore>,
    /// The store's own URL (`file:///`, `s3://BUCKET`, `http://HOST:PORT`):
    /// what DataFusion looks the store up by.
    base: Url,
    /// The location inside the store.
    prefix: ObjectPath,
    /// The local directory, for a directory output.
    dir: Option<PathBuf>,
    /// Whether the store takes multipart uploads (WebDAV does not).
    multipart: bool,
}

impl Output {
    /// Opens the `-o` argument: a directory (relative ones are made
    /// absolute), `file:///ABS`, `s3://…` or `http(s)://…`, configured
    /// from this process's environment. Nothing is created or sent yet.
    pub fn open(arg: &str) -> anyhow::Result<Output> {
        Output::open_with(arg, std::env::vars())
    }

    /// [`Output::open`] with the variables `vars` in place of the
    /// environment (`AWS_ACCESS_KEY_ID` and so on).
    pub fn open_with(
        arg: &str,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> anyhow::Result<Output> {
        if !arg.contains("://") {
            return Output::directory(
                std::path::absolute(arg).with_context(|| format!("the output directory {arg}"))?,
            );
        }
        let url = Url::parse(arg).map_err(|e| usage(format!("-o {arg}: not a URL ({e})")))?;
        match url.scheme() {
            "file" => {
                let dir = url
                    .to_file_path()
                    .map_err(|()| usage(format!("-o {arg}: not an absolute file:// path")))?;
                Output::directory(dir)
            }
            "s3" | "s3a" | "http" | "https" => {
                let (scheme, prefix) = object_store::ObjectStoreScheme::parse(&url)
                    .with_context(|| format!("-o {arg}"))?;
                let webdav = scheme == object_store::ObjectStoreScheme::Http;
                if url.scheme().starts_with("http") && !webdav {
                    // An https:// URL of S3 itself names the bucket in its
                    // host or path, which DataFusion's file URLs would not
                    // carry over: the s3:// form says the same plainly.
                    return Err(usage(format!(
                        "-o {arg}: an S3 endpoint's own URL; give s3://BUCKET/PREFIX \
                         (and AWS_REGION or AWS_ENDPOINT)"
                    )));
                }
                // From the process's environment, so each executor uses
                // its own credentials.
                let vars: Vec<(String, String)> = vars
                    .into_iter()
                    .map(|(k, v)| (k.to_ascii_lowercase(), v))
                    .collect();
                // A plain-HTTP address the user wrote (`-o http://…`,
                // `AWS_ENDPOINT=http://…`) is one they chose: allowed, not
                // refused for want of TLS.
                let plain = url.scheme() == "http"
                    || vars.iter().any(|(k, v)| {
                        (k == "aws_endpoint" || k == "aws_endpoint_url") && v.starts_with("http://")
                    });
                let base = &url[..url::Position::BeforePath];
                let store: Arc<dyn ObjectStore> = if webdav {
                    let mut b = HttpBuilder::new().with_url(base).with_retry(retry());
                    if plain {
                        b = b.with_config(ClientConfigKey::AllowHttp, "true");
                    }
                    Arc::new(
                        b.build()
                            .with_context(|| format!("opening the output {arg}"))?,
                    )
                } else {
                    // Variables the S3 builder does not know are not its.
                    let mut b = vars
                        .iter()
                        .filter_map(|(k, v)| Some((k.parse::<AmazonS3ConfigKey>().ok()?, v)))
                        .fold(AmazonS3Builder::new(), |b, (k, v)| b.with_config(k, v));
                    b = b.with_url(url.as_str()).with_retry(retry());
                    if plain {
                        b = b.with_allow_http(true);
                    }
                    Arc::new(
                        b.build()
                            .with_context(|| format!("opening the output {arg}"))?,
                    )
                };
                Ok(Output {
                    store,
                    base: Url::parse(base).with_context(|| format!("-o {arg}"))?,
                    prefix,
                    dir: None,
                    multipart: !webdav,
                })
            }
            s => Err(usage(format!(
                "-o {arg}: {s}:// is not an output nix-heft-survey writes; give a directory, \
                 s3://BUCKET/PREFIX or http(s):// (WebDAV)"
            ))),
        }
    }

    fn directory(dir: PathBuf) -> anyhow::Result<Output> {
        let prefix = ObjectPath::from_absolute_path(&dir)
            .with_context(|| format!("the output directory {}", dir.display()))?;
        Ok(Output {
            store: Arc::new(LocalFileSystem::new()),
            base: Url::parse("file:///").expect("static URL"),
            prefix,
            dir: Some(dir),
            multipart: true,
        })
    }

    /// The location as the executors are to open it: an absolute
    /// directory, or the URL.
    pub fn location(&self) -> String {
        match &self.dir {
            Some(d) => d.display().to_string(),
            None => self.url_of(&self.prefix),
        }
    }

    /// Whether this is a directory on this machine's file system.
    pub fn is_directory(&self) -> bool {
        self.dir.is_some()
    }

    fn path(&self, rel: &str) -> ObjectPath {
        rel.split('/')
            .fold(self.prefix.clone(), |p, part| p.join(part))
    }

    fn url_of(&self, p: &ObjectPath) -> String {
        format!("{}/{p}", self.base.as_str().trim_end_matches('/'))
    }

    /// The URL of `rel` under the output, as DataFusion's listing tables
    /// take it.
    pub fn url(&self, rel: &str) -> String {
        match &self.dir {
            Some(d) => d.join(rel).display().to_string(),
            None => self.url_of(&self.path(rel)),
        }
    }

    /// Makes the store known to `ctx`, so that [`Output::url`]s resolve.
    pub fn register(&self, ctx: &SessionContext) {
        if self.dir.is_none() {
            ctx.register_object_store(&self.base, Arc::clone(&self.store));
        }
    }

    /// Creates the directory of a directory output (object stores have
    /// none to create).
    pub fn create(&self) -> anyhow::Result<()> {
        if let Some(d) = &self.dir {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        Ok(())
    }

    /// The object `rel`, or `None` when there is none. An object larger
    /// than `max` bytes is an error, not read: what a server sends is not
    /// trusted to be the small file asked for.
    pub async fn read(&self, rel: &str, max: u64) -> anyhow::Result<Option<bytes::Bytes>> {
        match self.store.get(&self.path(rel)).await {
            Ok(r) => {
                if r.meta.size > max {
                    anyhow::bail!(
                        "{} is {} bytes, more than the {max} it can be",
                        self.url(rel),
                        r.meta.size
                    );
                }
                Ok(Some(
                    r.bytes()
                        .await
                        .with_context(|| format!("reading {}", self.url(rel)))?,
                ))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(anyhow::Error::new(e).context(format!("reading {}", self.url(rel)))),
        }
    }

    /// Whether `rel` exists.
    pub async fn exists(&self, rel: &str) -> anyhow::Result<bool> {
        match self.store.head(&self.path(rel)).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(anyhow::Error::new(e).context(format!("looking up {}", self.url(rel)))),
        }
    }

    /// Writes `rel` whole, replacing what was there.
    pub async fn put(&self, rel: &str, bytes: impl Into<PutPayload>) -> anyhow::Result<()> {
        let payload = bytes.into();
        let path = self.path(rel);
        // WebDAV has no implicit directories: a PUT into a missing one
        // fails, and object_store then creates the parents with MKCOL and
        // tries again. Partitions written at once race to create the same
        // `parts/` collection, and the loser's MKCOL fails (405 Method Not
        // Allowed, or 423 Locked while the winner's is under way). By the
        // next try the collection exists, so a few quick retries settle it.
        let tries = if self.multipart { 1 } else { 4 };
        let mut wait = std::time::Duration::from_millis(50);
        let mut attempt = 1;
        loop {
            match self.store.put(&path, payload.clone()).await {
                Ok(_) => return Ok(()),
                Err(e) if attempt < tries && !matches!(e, object_store::Error::NotFound { .. }) => {
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                    attempt += 1;
                }
                Err(e) => {
                    return Err(anyhow::Error::new(e).context(format!("writing {}", self.url(rel))));
                }
            }
        }
    }

    /// Writes the batches of `stream` as the Parquet file `rel`, streamed
    /// in multipart uploads where the store takes them and held until one
    /// PUT where it does not (WebDAV).
    pub async fn write_parquet<S>(
        &self,
        rel: &str,
        schema: datafusion::arrow::datatypes::SchemaRef,
        mut stream: S,
    ) -> anyhow::Result<()>
    where
        S: Stream<Item = datafusion::common::Result<RecordBatch>> + Unpin,
    {
        let capacity = if self.multipart {
            10 * 1024 * 1024
        } else {
            usize::MAX
        };
        let sink = BufWriter::with_capacity(Arc::clone(&self.store), self.path(rel), capacity);
        let mut w = AsyncArrowWriter::try_new(sink, schema, None)?;
        while let Some(b) = stream.next().await {
            w.write(&b?).await?;
        }
        w.close()
            .await
            .with_context(|| format!("writing {}", self.url(rel)))?;
        Ok(())
    }

    /// The relative name of table `name`'s file of partition `i`.
    pub fn part_file(i: u32, name: &str) -> String {
        format!("parts/{i:05}/{name}.parquet")
    }

    /// The relative name of partition `i`'s completion marker.
    fn marker(i: u32) -> String {
        format!("parts/{i:05}/{MARKER}")
    }

    /// Whether partition `i` is complete: its marker is there.
    pub async fn is_written(&self, i: u32) -> anyhow::Result<bool> {
        self.exists(&Output::marker(i)).await
    }

    /// The complete partitions, from one listing of `parts/`.
    pub async fn written(&self) -> anyhow::Result<BTreeSet<u32>> {
        let parts = self.path("parts");
        let metas: Vec<_> = match self.store.list(Some(&parts)).try_collect().await {
            Ok(m) => m,
            Err(object_store::Error::NotFound { .. }) => Vec::new(),
            Err(e) => {
                return Err(anyhow::Error::new(e).context(format!("listing {}", self.url("parts"))));
            }
        };
        Ok(metas
            .iter()
            .filter_map(|m| {
                let mut rest = m.location.prefix_match(&parts)?;
                let dir = rest.next()?;
                let file = rest.next()?;
                (file.as_ref() == MARKER && rest.next().is_none())
                    .then(|| dir.as_ref().parse().ok())?
            })
            .collect())
    }

    /// Writes partition `i`'s files, then its marker.
    pub async fn write_partition(
        &self,
        i: u32,
        files: crate::map::PartitionFiles,
    ) -> anyhow::Result<()> {
        for (name, bytes) in files {
            self.put(&Output::part_file(i, name), bytes).await?;
        }
        self.put(&Output::marker(i), bytes::Bytes::new()).await
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.location())
    }
}

/// How often a failed request is tried again. object_store's default, 10
/// retries within 3 minutes, leaves a user who mistyped a host waiting
/// 35 s for "connection refused"; 4 retries ride out a flaky server and
/// give up on a dead one in a few seconds.
fn retry() -> RetryConfig {
    RetryConfig {
        max_retries: 4,
        retry_timeout: std::time::Duration::from_secs(60),
        ..RetryConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_and_urls_name_their_files() {
        let o = Output::open("/srv/survey").unwrap();
        assert!(o.is_directory());
        assert_eq!(o.location(), "/srv/survey");
        assert_eq!(
            o.url("parts/00003/edges.parquet"),
            "/srv/survey/parts/00003/edges.parquet"
        );
        assert_eq!(
            Output::open("file:///srv/survey").unwrap().location(),
            "/srv/survey"
        );
        let rel = Output::open("survey").unwrap();
        assert!(std::path::Path::new(&rel.location()).is_absolute());

        let o = Output::open("http://127.0.0.1:8080/dav/survey").unwrap();
        assert!(!o.is_directory());
        assert!(!o.multipart);
        assert_eq!(o.location(), "http://127.0.0.1:8080/dav/survey");
        assert_eq!(
            o.url("paths.parquet"),
            "http://127.0.0.1:8080/dav/survey/paths.parquet"
        );
        assert_eq!(o.base.as_str(), "http://127.0.0.1:8080/");

        let o = Output::open("s3://bucket/a/survey").unwrap();
        assert!(o.multipart);
        assert_eq!(o.url("survey.json"), "s3://bucket/a/survey/survey.json");

        for bad in [
            "ftp://host/x",
            "file://relative/x",
            "gs://bucket/x",
            "https://s3.eu-central-1.amazonaws.com/bucket/x",
        ] {
            let e = Output::open(bad).unwrap_err();
            assert!(
                matches!(e.downcast_ref(), Some(nix_heft_types::Error::Usage(_))),
                "{bad}: {e:#}"
            );
        }
    }

    #[tokio::test]
    async fn a_partition_counts_as_written_once_its_marker_is() {
        let tmp = tempfile::tempdir().unwrap();
        let o = Output::open(tmp.path().to_str().unwrap()).unwrap();
        assert!(o.written().await.unwrap().is_empty());
        // Files without the marker: an interrupted write.
        o.put(
            &Output::part_file(2, "paths"),
            bytes::Bytes::from_static(b"half"),
        )
        .await
        .unwrap();
        assert!(!o.is_written(2).await.unwrap());
        o.write_partition(2, vec![("paths", bytes::Bytes::from_static(b"x"))])
            .await
            .unwrap();
        o.write_partition(7, vec![]).await.unwrap();
        assert!(o.is_written(2).await.unwrap());
        assert_eq!(o.written().await.unwrap(), BTreeSet::from([2, 7]));
        assert_eq!(
            std::fs::read(tmp.path().join("parts/00002/paths.parquet")).unwrap(),
            b"x"
        );
        assert_eq!(o.read("survey.json", 1 << 20).await.unwrap(), None);
        // Larger than asked for: refused, not read.
        let e = o.read("parts/00002/paths.parquet", 0).await.unwrap_err();
        assert!(e.to_string().contains("more than the 0"), "{e:#}");
    }
}
