//! `nix-heft-survey query OUT SQL`: any SQL over a survey's tables with
//! DataFusion, printed as an aligned table or (`--json`) a JSON array of
//! objects, one per row.

use anyhow::Context;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::json::writer::{JsonArray, WriterBuilder};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::common::DataFusionError;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use nix_heft_report::table::{Align, Table};
use serde::de::DeserializeOwned;

use crate::output::Output;
use crate::schema::TABLES;

/// A session with `paths`, `edges`, `evidence` and `problems` of the survey
/// at `out` (a directory or an object-store URL) registered.
pub async fn open(out: &str) -> anyhow::Result<SessionContext> {
    let out = Output::open(out)?;
    let ctx = SessionContext::new();
    out.register(&ctx);
    for name in TABLES {
        let file = format!("{name}.parquet");
        if !out.exists(&file).await? {
            anyhow::bail!(
                "{out} holds no survey ({} is missing); run `nix-heft-survey run -o {out}` first",
                out.url(&file)
            );
        }
        ctx.register_parquet(name, out.url(&file), ParquetReadOptions::default())
            .await
            .with_context(|| format!("reading {}", out.url(&file)))?;
    }
    Ok(ctx)
}

/// Runs `sql`. A statement that does not parse or plan is the command
/// line's fault (exit 2); a failure while running it is not.
pub async fn execute(ctx: &SessionContext, sql: &str) -> anyhow::Result<Vec<RecordBatch>> {
    let df = match ctx.sql(sql).await {
        Ok(df) => df,
        Err(e) => {
            return Err(match e.find_root() {
                DataFusionError::SQL(..)
                | DataFusionError::Plan(_)
                | DataFusionError::SchemaError(..)
                | DataFusionError::NotImplemented(_) => {
                    nix_heft_types::Error::Usage(format!("bad SQL: {e}")).into()
                }
                _ => anyhow::Error::new(e).context("running the query"),
            });
        }
    };
    df.collect().await.context("running the query")
}

/// The rows as JSON text: an array of objects, nulls written out.
pub fn to_json(batches: &[RecordBatch]) -> anyhow::Result<Vec<u8>> {
    let mut w = WriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, JsonArray>(Vec::new());
    for b in batches {
        w.write(b)?;
    }
    w.finish()?;
    let mut out = w.into_inner();
    // No rows at all: the writer writes nothing, but the answer is `[]`.
    if out.is_empty() {
        out.extend_from_slice(b"[]");
    }
    Ok(out)
}

/// The rows of `sql`, deserialised one object each.
pub async fn rows<T: DeserializeOwned>(ctx: &SessionContext, sql: &str) -> anyhow::Result<Vec<T>> {
    let batches = execute(ctx, sql).await?;
    Ok(serde_json::from_slice(&to_json(&batches)?)?)
}

/// The rows as an aligned table: numbers right-aligned, nulls as `NULL`.
pub fn to_table(batches: &[RecordBatch], width: Option<usize>) -> anyhow::Result<String> {
    let Some(first) = batches.first() else {
        return Ok(String::new());
    };
    let schema = first.schema();
    let header: Vec<(&str, Align)> = schema
        .fields()
        .iter()
        .map(|f| {
            let numeric = f.data_type().is_numeric() || matches!(f.data_type(), DataType::Boolean);
            (
                f.name().as_str(),
                if numeric { Align::Right } else { Align::Left },
            )
        })
        .collect();
    let mut t = Table::new(&header);
    let opts = FormatOptions::default().with_null("NULL");
    for b in batches {
        let fmts = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
            .collect::<Result<Vec<_>, _>>()?;
        for r in 0..b.num_rows() {
            t.row(fmts.iter().map(|f| f.value(r).to_string()).collect());
        }
    }
    Ok(t.render_fit(width, Default::default()))
}
