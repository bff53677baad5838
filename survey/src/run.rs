//! `nix-heft-survey run`: resolve the surveyed set, load its graph, run the
//! map step as a DataFusion plan over [`crate::exec::SurveyMap`], then the
//! graph step, then assemble the four tables as one Parquet file each.
//!
//! The output's layout is [`crate::output`]'s.
//!
//! A run on an output that already holds the same survey skips the
//! partitions written and reassembles the tables.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use datafusion::arrow::array::{Array, BooleanArray, RecordBatch, UInt32Array, UInt64Array};
use datafusion::datasource::MemTable;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::prelude::{SessionConfig, SessionContext};
use nix_heft_format::StorePath;
use nix_heft_graph::Graph;
use nix_heft_store::open::{Opener, StoreSpec};
use nix_heft_store::source::StoreSource;
use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::exec::{MapEnv, MapSpec, SurveyMap, partition_of};
use crate::output::Output;
use crate::{graph_step, schema, usage};

/// What to survey.
#[derive(Debug, Clone)]
pub enum Input {
    /// These ROOT arguments (store paths, `./result` links, names) and their closures.
    Roots(Vec<String>),
    /// The store paths listed in a file, one a line, and their closures.
    PathsFile(PathBuf),
    /// Every valid path of the store.
    All,
}

/// The options of `run`.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// `--store` (repeated), `--substituters`, `--trusted-public-keys`,
    /// `--no-require-sigs`, `--verify`, `--netrc-file`, `--refresh`: the
    /// stores read, opened as nix-heft opens them.
    pub store: StoreSpec,
    /// `-o`: a directory or an object-store URL ([`Output::open`]).
    pub out: String,
    /// What to survey.
    pub input: Input,
    /// `--partitions N`; by default the number an earlier run on the same output used,
    /// else four per core.
    pub partitions: Option<usize>,
    /// Show a progress bar (a terminal, no `--json`).
    pub progress: bool,
    /// `--cluster df://HOST:PORT`: run the map step on this Ballista
    /// scheduler's executors instead of in this process.
    pub cluster: Option<String>,
}

/// What the output's `survey.json` records, so that a restart resumes only the same
/// survey.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format of the directory.
    pub format: u32,
    /// The store, as described by nix-heft.
    pub store: String,
    /// Number of partitions.
    pub partitions: usize,
    /// Number of paths surveyed.
    pub paths: usize,
    /// SHA-256 of the sorted surveyed paths and the roots.
    pub digest: String,
}

/// What a run did.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// The store read.
    pub store: String,
    /// The output directory.
    pub dir: String,
    /// Roots surveyed (their closures included).
    pub roots: usize,
    /// Paths surveyed.
    pub paths: usize,
    /// Partitions of the map step.
    pub partitions: usize,
    /// Partitions an earlier run had written, not read again.
    pub partitions_skipped: usize,
    /// Bytes of file contents read by this run.
    pub bytes_read: u64,
}

/// The roots the input names.
fn roots_of(src: &dyn StoreSource, input: &Input) -> anyhow::Result<Vec<StorePath>> {
    let roots = match input {
        Input::Roots(args) => nix_heft_ops::roots::resolve_roots(src, args)?,
        Input::PathsFile(file) => {
            let text = fs::read_to_string(file)
                .with_context(|| format!("reading the path list {}", file.display()))?;
            let mut out = Vec::new();
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let p = StorePath::parse(src.store_dir(), line).with_context(|| {
                    format!(
                        "{}:{}: not a store path of {}",
                        file.display(),
                        n + 1,
                        src.store_dir()
                    )
                })?;
                if !src.is_valid(&p)? {
                    anyhow::bail!(
                        "{}:{}: {} is not in {}",
                        file.display(),
                        n + 1,
                        p,
                        src.describe()
                    );
                }
                out.push(p);
            }
            out
        }
        Input::All => {
            let mut all = src.all_paths()?;
            all.sort();
            all
        }
    };
    if roots.is_empty() {
        return Err(usage("nothing to survey: no store paths given".into()));
    }
    Ok(roots)
}

fn digest(g: &Graph) -> String {
    let mut h = sha2::Sha256::new();
    let mut paths: Vec<&str> = g.paths().iter().map(StorePath::as_str).collect();
    paths.sort_unstable();
    for p in paths {
        h.update(p.as_bytes());
        h.update(b"\n");
    }
    h.update(b"roots\n");
    for &r in g.roots() {
        h.update(g.path(r).as_str().as_bytes());
        h.update(b"\n");
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads `survey.json` when the output has one, checks it describes the
/// same survey, and settles the number of partitions.
async fn settle_manifest(
    out: &Output,
    want: Manifest,
    asked: Option<usize>,
) -> anyhow::Result<Manifest> {
    // A manifest is a few hundred bytes.
    if let Some(text) = out.read("survey.json", 1 << 20).await? {
        let had: Manifest = serde_json::from_slice(&text)
            .with_context(|| format!("{} is not a survey manifest", out.url("survey.json")))?;
        if had.digest != want.digest || had.store != want.store {
            return Err(usage(format!(
                "{out} holds a survey of other paths ({} paths of {}); \
                 give another -o or remove it",
                had.paths, had.store
            )));
        }
        if let Some(n) = asked
            && n != had.partitions
        {
            return Err(usage(format!(
                "{out} was surveyed in {} partitions, not {n}: resume it without \
                 --partitions, or use another -o",
                had.partitions
            )));
        }
        return Ok(had);
    }
    let m = Manifest {
        partitions: asked.unwrap_or(want.partitions),
        ..want
    };
    out.create()?;
    out.put("survey.json", serde_json::to_vec_pretty(&m)?)
        .await?;
    Ok(m)
}

/// Refuses a `--cluster` run whose store the executors could not reach.
/// (Every output is theirs to reach: an object store by its URL, a
/// directory by its absolute path on a file system they share, which
/// [`check_complete`] checks after the map step.)
fn check_cluster_reach(spec: &StoreSpec) -> anyhow::Result<()> {
    let reachable = |s: &str| {
        s.starts_with("http://")
            || s.starts_with("https://")
            || s.strip_prefix("file://")
                .is_some_and(|p| Path::new(p).is_absolute())
    };
    // `auto` is each executor's own nix.conf: not known here, so allowed.
    let subs: Vec<&str> = match spec.substituters.as_deref().map(str::trim) {
        Some("auto") | None => Vec::new(),
        Some(list) => list.split_ascii_whitespace().collect(),
    };
    let mut named = spec.stores.iter().map(String::as_str).chain(subs);
    let unreachable = if spec.stores.is_empty() && spec.substituters.is_none() {
        Some("the local store".to_string())
    } else {
        named
            .find(|s| !reachable(s))
            .map(|s| format!("--store {s}"))
    };
    if let Some(what) = unreachable {
        return Err(usage(format!(
            "--cluster needs a store every executor can read: an http(s):// binary cache, \
             or a file:// cache at an absolute path on a file system the executors share \
             (`nix copy --to file:///shared/cache ROOT...`), not {what}"
        )));
    }
    Ok(())
}

/// What the map step's summary rows say, per partition: whether any run of
/// it returned (`seen`), whether any run wrote it rather than finding it
/// written (`wrote`: a task run again after a lost executor or a
/// resubmitted job finds its partition written), and the bytes read.
struct Tally {
    seen: Vec<bool>,
    wrote: Vec<bool>,
    bytes_read: u64,
}

fn tally(summary: &[RecordBatch], n: usize) -> anyhow::Result<Tally> {
    let mut t = Tally {
        seen: vec![false; n],
        wrote: vec![false; n],
        bytes_read: 0,
    };
    for b in summary {
        let col = |name: &str| {
            b.column_by_name(name)
                .with_context(|| format!("summary without {name}"))
        };
        let part = col("partition")?.as_any().downcast_ref::<UInt32Array>();
        let sk = col("skipped")?.as_any().downcast_ref::<BooleanArray>();
        let nb = col("nar_bytes")?.as_any().downcast_ref::<UInt64Array>();
        let (Some(part), Some(sk), Some(nb)) = (part, sk, nb) else {
            anyhow::bail!("the map step's summary has columns of the wrong types");
        };
        for i in 0..b.num_rows() {
            let p = part.value(i) as usize;
            if let Some(s) = t.seen.get_mut(p) {
                *s = true;
            }
            if !sk.value(i)
                && let Some(w) = t.wrote.get_mut(p)
            {
                *w = true;
            }
            t.bytes_read += if nb.is_null(i) { 0 } else { nb.value(i) };
        }
    }
    Ok(t)
}

/// Checks that the map step accounted for every partition and that each is
/// in the output where the coordinator reads it, so a lost task or an
/// output directory the executors do not share is an error, never a short
/// table.
async fn check_complete(seen: &[bool], out: &Output) -> anyhow::Result<()> {
    let n = seen.len();
    let missing: Vec<usize> = (0..n).filter(|&i| !seen[i]).collect();
    if let Some(&first) = missing.first() {
        anyhow::bail!(
            "the map step returned no result for {} of {n} partitions (first: {first}); \
             run again on the same -o to resume",
            missing.len()
        );
    }
    let written = out.written().await?;
    let unseen: Vec<u32> = (0..n as u32).filter(|i| !written.contains(i)).collect();
    if let Some(&first) = unseen.first() {
        let hint = if out.is_directory() {
            "with --cluster, -o must be a directory the executors and this machine share, \
             or an object-store URL"
        } else {
            "the executors wrote them somewhere else: do they and this machine see the same -o?"
        };
        anyhow::bail!(
            "{} of {n} partitions were surveyed but are not complete in {out} (first: {}): {hint}",
            unseen.len(),
            out.url(&Output::part_file(first, "paths")),
        );
    }
    Ok(())
}

/// Runs the map step, embedded or on the cluster, and returns its summary
/// rows.
async fn map_step(
    opts: &RunOptions,
    spec: MapSpec,
    partitions: Vec<Vec<String>>,
    env: MapEnv,
    cores: usize,
) -> anyhow::Result<Vec<RecordBatch>> {
    let Some(url) = &opts.cluster else {
        let ctx =
            SessionContext::new_with_config(SessionConfig::new().with_target_partitions(cores));
        ctx.register_table(
            "survey_map",
            Arc::new(SurveyMap::new(spec, partitions, env)),
        )?;
        return ctx
            .sql("SELECT * FROM survey_map")
            .await?
            .collect()
            .await
            .context("the map step");
    };
    let ctx = crate::cluster::session(url, cores).await?;
    ctx.register_table("survey_map", Arc::new(SurveyMap::remote(spec, partitions)))?;
    // One resubmission: a job Ballista gave up on (an executor lost with
    // results the job still needed, say) is run again, and the partitions
    // already written are skipped, so only the lost work is redone.
    let mut last = None;
    for attempt in 0..2 {
        let res = async { ctx.sql("SELECT * FROM survey_map").await?.collect().await }.await;
        match res {
            Ok(b) => return Ok(b),
            Err(e) => {
                if attempt == 0 {
                    eprintln!(
                        "nix-heft-survey: warning: the map step failed on {url} ({e}); \
                         submitting it again (written partitions are kept)"
                    );
                }
                last = Some(e);
            }
        }
    }
    Err(anyhow::Error::from(last.expect("two attempts"))
        .context(format!("the map step on the cluster at {url}")))
}

/// Runs the survey and leaves its tables in `opts.out`.
pub async fn run(opts: &RunOptions) -> anyhow::Result<RunSummary> {
    if let Some(0) = opts.partitions {
        return Err(usage("--partitions must be at least 1".into()));
    }
    let out = Output::open(&opts.out)?;
    if let Some(url) = &opts.cluster {
        check_cluster_reach(&opts.store)?;
        crate::cluster::check_scheduler(url)?;
    }
    let src: Arc<dyn StoreSource> = Opener::new(opts.store.clone()).open()?.into();
    let roots = roots_of(src.as_ref(), &opts.input)?;
    let g = Graph::load(src.as_ref(), &roots).context("loading the closure")?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let manifest = settle_manifest(
        &out,
        Manifest {
            format: 1,
            store: src.describe(),
            partitions: (4 * cores).min(g.len()).max(1),
            paths: g.len(),
            digest: digest(&g),
        },
        opts.partitions,
    )
    .await?;
    let n = manifest.partitions;
    let mut partitions: Vec<Vec<String>> = vec![Vec::new(); n];
    for p in g.paths() {
        partitions[partition_of(p, n)].push(p.to_string());
    }
    for part in &mut partitions {
        part.sort();
    }

    let total: u64 = (0..g.len() as u32).map(|v| g.nar_size(v)).sum();
    let pb = if opts.progress {
        let pb = indicatif::ProgressBar::new(total);
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "surveying {bar:30} {bytes}/{total_bytes} {bytes_per_sec} ({eta})",
            )
            .expect("static template"),
        );
        pb
    } else {
        indicatif::ProgressBar::hidden()
    };
    let bar = pb.clone();
    let env = MapEnv {
        src: Arc::clone(&src),
        out: out.clone(),
        permits: Arc::new(tokio::sync::Semaphore::new(cores.max(2))),
        progress: Arc::new(move |b| bar.inc(b)),
    };
    let spec = MapSpec {
        stores: opts.store.stores.clone(),
        substituters: opts.store.substituters.clone(),
        trusted_public_keys: opts.store.trusted_public_keys.clone(),
        no_require_sigs: opts.store.no_require_sigs,
        netrc_file: opts.store.options.netrc_file.clone(),
        refresh: opts.store.options.refresh,
        out: out.location(),
    };
    if opts.cluster.is_some() {
        // The bytes are read on the executors: only a spinner here.
        pb.set_style(
            indicatif::ProgressStyle::with_template("surveying on the cluster {spinner} {elapsed}")
                .expect("static template"),
        );
        pb.enable_steady_tick(std::time::Duration::from_millis(200));
    }
    let summary = map_step(opts, spec, partitions, env, cores).await?;
    pb.finish_and_clear();
    let Tally {
        seen,
        wrote,
        bytes_read,
    } = tally(&summary, n)?;
    check_complete(&seen, &out).await?;
    let skipped = wrote.iter().filter(|&&w| !w).count();
    if skipped > 0 && opts.progress {
        eprintln!("nix-heft-survey: {skipped} of {n} partitions were already written in {out}");
    }

    let (gp, ge) = graph_step::graph_step(&g)?;
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(cores));
    assemble(&ctx, &out, gp, ge, n).await?;
    Ok(RunSummary {
        store: src.describe(),
        dir: out.location(),
        roots: g.roots().len(),
        paths: g.len(),
        partitions: n,
        partitions_skipped: skipped,
        bytes_read,
    })
}

/// The parts of table `name` written by the map step, as one table over
/// every partition's file (listed here: the files of an incomplete
/// partition are never read).
fn register_parts(
    ctx: &SessionContext,
    out: &Output,
    name: &str,
    partitions: usize,
) -> anyhow::Result<()> {
    let urls = (0..partitions as u32)
        .map(|i| ListingTableUrl::parse(out.url(&Output::part_file(i, name))))
        .collect::<datafusion::common::Result<Vec<_>>>()?;
    let options =
        ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
    let config = ListingTableConfig::new_with_multi_paths(urls)
        .with_listing_options(options)
        .with_schema(schema::map_schema(name));
    ctx.register_table(
        format!("map_{name}"),
        Arc::new(ListingTable::try_new(config)?),
    )?;
    Ok(())
}

/// Joins the map step's rows with the graph step's columns and writes each
/// table as one Parquet file, which appears only once complete.
async fn assemble(
    ctx: &SessionContext,
    out: &Output,
    graph_paths: datafusion::arrow::array::RecordBatch,
    graph_edges: datafusion::arrow::array::RecordBatch,
    partitions: usize,
) -> anyhow::Result<()> {
    out.register(ctx);
    for name in schema::TABLES {
        register_parts(ctx, out, name, partitions)?;
    }
    ctx.register_table(
        "graph_paths",
        Arc::new(MemTable::try_new(
            graph_paths.schema(),
            vec![vec![graph_paths]],
        )?),
    )?;
    ctx.register_table(
        "graph_edges",
        Arc::new(MemTable::try_new(
            graph_edges.schema(),
            vec![vec![graph_edges]],
        )?),
    )?;
    let queries = [
        (
            "paths",
            "SELECT m.path, m.hash, m.name, m.version, m.output, m.nar_size, \
             g.closure_size, g.dependents, m.file_count, m.nar_hash, m.partition \
             FROM map_paths m JOIN graph_paths g ON m.path = g.path ORDER BY m.path",
        ),
        (
            "edges",
            "SELECT m.referrer, m.reference, m.verdict, m.kinds, m.holding_files, \
             m.symlink_farm, g.saving_max, m.unavailable \
             FROM map_edges m JOIN graph_edges g \
             ON m.referrer = g.referrer AND m.reference = g.reference \
             ORDER BY m.referrer, m.reference",
        ),
        (
            "evidence",
            "SELECT * FROM map_evidence ORDER BY referrer, reference, file, \"offset\"",
        ),
        (
            "problems",
            "SELECT DISTINCT * FROM map_problems ORDER BY path, file, kind, message",
        ),
    ];
    for (name, sql) in queries {
        let stream = ctx.sql(sql).await?.execute_stream().await?;
        out.write_parquet(&format!("{name}.parquet"), stream.schema(), stream)
            .await?;
    }
    Ok(())
}
