//! `output::Output` against real object-store servers on 127.0.0.1: a
//! table larger than one upload part (10 MiB) goes to S3 in a multipart
//! upload and to WebDAV in one PUT, and reads back whole with DataFusion.

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use nix_heft_survey::output::Output;

#[allow(dead_code)] // the survey binary's helpers are for tests/survey.rs
mod common;

use common::ObjectServer;

const ROWS: u64 = 200_000;

/// 200,000 rows of 64 bytes that neither compress nor dictionary-encode:
/// about 14 MiB of Parquet.
fn batches() -> (Arc<Schema>, Vec<RecordBatch>) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("n", DataType::UInt64, false),
        Field::new("s", DataType::Utf8, false),
    ]));
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let batches = (0..ROWS / 10_000)
        .map(|k| {
            let n: Vec<u64> = (k * 10_000..(k + 1) * 10_000).collect();
            let s: Vec<String> = n
                .iter()
                .map(|_| {
                    (0..4)
                        .map(|_| {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            format!("{x:016x}")
                        })
                        .collect()
                })
                .collect();
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![
                    Arc::new(UInt64Array::from(n)),
                    Arc::new(StringArray::from(s)),
                ],
            )
            .unwrap()
        })
        .collect();
    (schema, batches)
}

async fn round_trip(out: &Output, on_disk: &std::path::Path) {
    let (schema, batches) = batches();
    let stream = futures::stream::iter(batches.into_iter().map(Ok));
    out.write_parquet("big.parquet", schema, stream)
        .await
        .unwrap();
    let size = std::fs::metadata(on_disk).unwrap().len();
    assert!(size > 10 << 20, "only {size} bytes: not more than one part");

    let ctx = SessionContext::new();
    out.register(&ctx);
    ctx.register_parquet("big", out.url("big.parquet"), ParquetReadOptions::default())
        .await
        .unwrap();
    let b = ctx
        .sql("SELECT count(*), sum(n), count(DISTINCT s), min(length(s)) FROM big")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let row = datafusion::arrow::util::pretty::pretty_format_batches(&b)
        .unwrap()
        .to_string();
    let want = format!("| {ROWS} | {} | {ROWS} | 64 |", ROWS * (ROWS - 1) / 2);
    let got: String = row
        .lines()
        .nth(3)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(got, want, "{row}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_table_larger_than_one_upload_part_is_written_whole() {
    let tmp = tempfile::tempdir().unwrap();

    let dir = tmp.path().join("dir");
    let out = Output::open(dir.to_str().unwrap()).unwrap();
    round_trip(&out, &dir.join("big.parquet")).await;

    let s3 = ObjectServer::s3(tmp.path(), "heft-test-secret");
    let vars = s3.env.iter().map(|(k, v)| (k.to_string(), v.clone()));
    let out = Output::open_with(&s3.out, vars).unwrap();
    round_trip(&out, &s3.root.join("survey/big.parquet")).await;
    // It went up as a multipart upload, completed: no part is left staged.
    let log = std::fs::read_to_string(&s3.log).unwrap();
    assert!(log.contains("CreateMultipartUpload"), "{log}");
    assert!(log.contains("CompleteMultipartUpload"), "{log}");
    let staged: Vec<_> = walk(s3.root.parent().unwrap())
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("upload"))
        .collect();
    assert!(staged.is_empty(), "{staged:?}");

    let dav = ObjectServer::webdav(tmp.path());
    let out = Output::open_with(&dav.out, std::iter::empty()).unwrap();
    round_trip(&out, &dav.root.join("survey/big.parquet")).await;
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
