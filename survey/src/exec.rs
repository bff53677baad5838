//! The map step as a DataFusion table: [`SurveyMap`] is a `TableProvider`
//! over the surveyed store paths, split into partitions by hash part. Its
//! plan is [`SurveyMapExec`] over an in-memory scan of the paths (one
//! partition per bucket, [`input_schema`]); partition `i` of the plan reads
//! and classifies the paths of bucket `i`, writes them as Parquet under the
//! output directory and yields one summary row (see
//! [`crate::schema::summary`]).
//!
//! The paths are the scan's, not a field of the map step, because Ballista
//! restricts each task's copy of a stage plan to that task's partitions by
//! slicing the scans it knows (a custom leaf would be run whole by every
//! task). What else a partition needs is [`MapSpec`]: the `--store`
//! argument and its options and the output directory, plain data that the
//! Ballista codecs ([`crate::cluster`]) ship to a remote executor, which
//! opens the store itself ([`MapEnv::open`], once per process); the
//! embedded run passes its already opened source instead. The rows are the
//! same either way: a partition's rows depend only on the store and its
//! paths ([`crate::map`]).

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::{Mutex, OnceLock};

use async_trait::async_trait;
use datafusion::arrow::array::{
    Array, BooleanArray, RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::memory::MemorySourceConfig;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning,
    PhysicalExpr, PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream,
};
use futures::TryStreamExt;
use nix_heft_format::StorePath;
use nix_heft_store::open::{Opener, StoreSpec};
use nix_heft_store::source::{OpenOptions, StoreSource};
use serde::{Deserialize, Serialize};

use crate::map;
use crate::output::Output;
use crate::schema;

/// What every partition of the map step needs besides its paths, in
/// plain data: what the physical codec ships with each task.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MapSpec {
    /// Every `--store` (none: the local store, unless `substituters`).
    pub stores: Vec<String>,
    /// `--substituters`, as given (`auto`: each executor's nix.conf).
    pub substituters: Option<String>,
    /// `--trusted-public-keys` (none: each executor's nix.conf).
    pub trusted_public_keys: Option<String>,
    /// `--no-require-sigs`.
    pub no_require_sigs: bool,
    /// `--netrc-file`, as the executors are to read it.
    pub netrc_file: Option<PathBuf>,
    /// `--refresh`.
    pub refresh: bool,
    /// The output: an absolute directory or an object-store URL
    /// ([`Output::open`]).
    pub out: String,
}

impl MapSpec {
    /// The stores to open, as [`Opener`] takes them.
    pub fn store_spec(&self) -> StoreSpec {
        StoreSpec {
            stores: self.stores.clone(),
            substituters: self.substituters.clone(),
            trusted_public_keys: self.trusted_public_keys.clone(),
            no_require_sigs: self.no_require_sigs,
            options: OpenOptions {
                netrc_file: self.netrc_file.clone(),
                refresh: self.refresh,
                verify: false,
                ..Default::default()
            },
        }
    }
}

/// What a process running partitions holds: the opened store and output,
/// how many partitions may read at once, and where to report bytes read.
pub struct MapEnv {
    /// The source the paths are read from.
    pub src: Arc<dyn StoreSource>,
    /// Where the partitions are written.
    pub out: Output,
    /// Partitions reading at the same time. Each read already uses every
    /// core (rayon); a few at once overlap downloads with scanning while
    /// keeping memory to a few partitions' holds.
    pub permits: Arc<tokio::sync::Semaphore>,
    /// Told of every content byte read.
    pub progress: Arc<dyn Fn(u64) + Send + Sync>,
}

impl MapEnv {
    /// The environment of a process that runs partitions it was sent: the
    /// store and output of `spec`, opened once per process, every core's
    /// worth of partitions at once, no progress bar.
    pub fn open(spec: &MapSpec) -> Result<Arc<MapEnv>> {
        static OPENED: OnceLock<Mutex<HashMap<MapSpec, Arc<MapEnv>>>> = OnceLock::new();
        let key = spec.clone();
        let mut opened = OPENED
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(env) = opened.get(&key) {
            return Ok(Arc::clone(env));
        }
        // Opened as the coordinator opened them: the same stores, keys
        // and signature rule, through the store crate's one way.
        let src = Opener::new(spec.store_spec())
            .open()
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let out = Output::open(&spec.out)
            .map_err(|e| DataFusionError::External(e.into_boxed_dyn_error()))?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let env = Arc::new(MapEnv {
            src: src.into(),
            out,
            permits: Arc::new(tokio::sync::Semaphore::new(cores.max(2))),
            progress: Arc::new(|_| {}),
        });
        opened.insert(key, Arc::clone(&env));
        Ok(env)
    }
}

impl fmt::Debug for MapEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MapEnv")
            .field("src", &self.src.describe())
            .finish_non_exhaustive()
    }
}

/// Bucket of a store path among `n` partitions, from its hash part alone
/// (FNV-1a, then the remainder): the same path lands in the same partition
/// on every machine and run, and paths spread evenly for any `n`.
pub fn partition_of(path: &StorePath, n: usize) -> usize {
    let h = path
        .hash_part()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |a, c| {
            (a ^ u64::from(c)).wrapping_mul(0x0100_0000_01b3)
        });
    (h % n.max(1) as u64) as usize
}

/// The schema of the map step's input: one row per surveyed path, and one
/// row with a null path for a partition that has none, so that every
/// partition is accounted for.
pub fn input_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("partition", DataType::UInt32, false),
        Field::new("path", DataType::Utf8, true),
    ]))
}

/// The map step's input as one record batch per partition.
fn input_batches(partitions: &[Vec<String>]) -> Result<Vec<Vec<RecordBatch>>> {
    partitions
        .iter()
        .enumerate()
        .map(|(i, paths)| {
            let i = u32::try_from(i)
                .map_err(|_| DataFusionError::Plan("more than 2^32 partitions".into()))?;
            let (ids, paths): (Vec<u32>, Vec<Option<&str>>) = if paths.is_empty() {
                (vec![i], vec![None])
            } else {
                paths.iter().map(|p| (i, Some(p.as_str()))).unzip()
            };
            let b = RecordBatch::try_new(
                input_schema(),
                vec![
                    Arc::new(UInt32Array::from(ids)),
                    Arc::new(StringArray::from(paths)),
                ],
            )?;
            Ok(vec![b])
        })
        .collect()
}

/// The map step as a table: each row a partition's summary.
#[derive(Debug)]
pub struct SurveyMap {
    spec: Arc<MapSpec>,
    partitions: Arc<Vec<Vec<String>>>,
    /// `None` where the plan is to run elsewhere (a Ballista scheduler, an
    /// executor): the store is then opened where a partition runs.
    env: Option<Arc<MapEnv>>,
}

impl SurveyMap {
    /// The table over `partitions` (store paths by partition number), read
    /// through `env`.
    pub fn new(spec: MapSpec, partitions: Vec<Vec<String>>, env: MapEnv) -> SurveyMap {
        SurveyMap {
            spec: Arc::new(spec),
            partitions: Arc::new(partitions),
            env: Some(Arc::new(env)),
        }
    }

    /// The same table, each partition read through the store that the
    /// process running it opens from `spec` ([`MapEnv::open`]).
    pub fn remote(spec: MapSpec, partitions: Vec<Vec<String>>) -> SurveyMap {
        SurveyMap {
            spec: Arc::new(spec),
            partitions: Arc::new(partitions),
            env: None,
        }
    }

    /// What every partition needs.
    pub fn spec(&self) -> &MapSpec {
        &self.spec
    }

    /// The store paths of each partition, by partition number.
    pub fn partitions(&self) -> &[Vec<String>] {
        &self.partitions
    }
}

#[async_trait]
impl TableProvider for SurveyMap {
    fn schema(&self) -> SchemaRef {
        schema::summary()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // The paths are an in-memory scan below the map step, not a field
        // of it: Ballista restricts a stage's plan to each task's
        // partitions by slicing the scans it knows, and passes the map
        // step the sliced input.
        let input: Arc<dyn ExecutionPlan> = MemorySourceConfig::try_new_exec(
            &input_batches(&self.partitions)?,
            input_schema(),
            None,
        )?;
        Ok(Arc::new(SurveyMapExec::new(
            Arc::clone(&self.spec),
            self.env.clone(),
            input,
            projection.cloned(),
        )?))
    }
}

/// The map step's physical plan: for each partition of its input (the
/// paths, one partition per hash bucket), read, classify and write them.
#[derive(Debug)]
pub struct SurveyMapExec {
    spec: Arc<MapSpec>,
    env: Option<Arc<MapEnv>>,
    input: Arc<dyn ExecutionPlan>,
    projection: Option<Vec<usize>>,
    props: Arc<PlanProperties>,
}

impl SurveyMapExec {
    /// The plan over `input` (rows of [`input_schema`]), its summary
    /// columns projected.
    pub fn new(
        spec: Arc<MapSpec>,
        env: Option<Arc<MapEnv>>,
        input: Arc<dyn ExecutionPlan>,
        projection: Option<Vec<usize>>,
    ) -> Result<SurveyMapExec> {
        if input.schema().fields() != input_schema().fields() {
            return Err(DataFusionError::Plan(format!(
                "SurveyMapExec over an input of the wrong schema: {:?}",
                input.schema()
            )));
        }
        let full = schema::summary();
        let schema = match &projection {
            Some(p) => Arc::new(full.project(p)?),
            None => full,
        };
        let n = input.properties().output_partitioning().partition_count();
        let props = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(n),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Ok(SurveyMapExec {
            spec,
            env,
            input,
            projection,
            props: Arc::new(props),
        })
    }

    /// What the plan runs.
    pub fn spec(&self) -> &MapSpec {
        &self.spec
    }

    /// The summary columns it yields, by index (`None`: all).
    pub fn projection(&self) -> Option<&[usize]> {
        self.projection.as_deref()
    }
}

impl DisplayAs for SurveyMapExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SurveyMapExec: store={}, out={}",
            if self.spec.stores.is_empty() {
                "local".to_string()
            } else {
                self.spec.stores.join(" ")
            },
            self.spec.out
        )
    }
}

impl ExecutionPlan for SurveyMapExec {
    fn name(&self) -> &str {
        "SurveyMapExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    // A partition of the input is a hash bucket, whole: it must not be
    // split or merged by a repartition below.
    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children).map_err(|c: Vec<_>| {
            DataFusionError::Internal(format!("SurveyMapExec given {} children", c.len()))
        })?;
        Ok(Arc::new(SurveyMapExec::new(
            Arc::clone(&self.spec),
            self.env.clone(),
            input,
            self.projection.clone(),
        )?))
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let spec = Arc::clone(&self.spec);
        let env = self.env.clone();
        let projection = self.projection.clone();
        let schema = Arc::clone(self.props.eq_properties.schema());
        let fut = async move {
            let batches: Vec<RecordBatch> = input.try_collect().await?;
            let groups = group_paths(&batches)?;
            let mut rows = Vec::with_capacity(groups.len());
            for (i, paths) in groups {
                rows.push(run_async(Arc::clone(&spec), env.clone(), i, paths).await?);
            }
            let summary = concat_batches(&schema::summary(), &rows)?;
            match projection {
                Some(p) => Ok(summary.project(&p)?),
                None => Ok(summary),
            }
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            futures::stream::once(fut),
        )))
    }
}

/// The paths of each partition among `batches` (rows of [`input_schema`]),
/// by partition number. Normally one partition: grouping by the number the
/// rows carry, rather than trusting the index a partition is executed
/// under, keeps every bucket whole and named whatever a planner did to the
/// input's partitioning.
fn group_paths(batches: &[RecordBatch]) -> Result<std::collections::BTreeMap<u32, Vec<String>>> {
    let mut groups: std::collections::BTreeMap<u32, Vec<String>> = Default::default();
    for b in batches {
        let ids = b
            .column(0)
            .as_any()
            .downcast_ref::<UInt32Array>()
            .ok_or_else(|| DataFusionError::Internal("map input without partition".into()))?;
        let paths = b
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| DataFusionError::Internal("map input without path".into()))?;
        for r in 0..b.num_rows() {
            let g = groups.entry(ids.value(r)).or_default();
            if paths.is_valid(r) {
                g.push(paths.value(r).to_string());
            }
        }
    }
    Ok(groups)
}

/// Runs partition `i`: skipped when an earlier run wrote it, else read,
/// classified (on a blocking thread, once a permit is free) and written.
/// Returns its summary row.
async fn run_async(
    spec: Arc<MapSpec>,
    env: Option<Arc<MapEnv>>,
    i: u32,
    paths: Vec<String>,
) -> Result<RecordBatch> {
    let blocking = |e: tokio::task::JoinError| DataFusionError::External(Box::new(e));
    let env = match env {
        Some(env) => env,
        None => {
            let spec = Arc::clone(&spec);
            // Opening an HTTP cache fetches its nix-cache-info: blocking.
            tokio::task::spawn_blocking(move || MapEnv::open(&spec))
                .await
                .map_err(blocking)??
        }
    };
    let out_err = |e: anyhow::Error| {
        DataFusionError::Execution(format!("partition {i} under {}: {e:#}", env.out))
    };
    if env.out.is_written(i).await.map_err(out_err)? {
        return summary_row(i, [0; 5], true);
    }
    let permit = Arc::clone(&env.permits)
        .acquire_owned()
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    let e2 = Arc::clone(&env);
    let (counts, files) = tokio::task::spawn_blocking(move || read_partition(&e2, i, &paths))
        .await
        .map_err(blocking)??;
    drop(permit);
    env.out.write_partition(i, files).await.map_err(out_err)?;
    summary_row(i, counts, false)
}

/// Reads and classifies partition `i`'s paths and encodes its files;
/// returns them with the summary's counts (rows per table, NAR bytes), so
/// that only the encoded files outlive this.
fn read_partition(
    env: &MapEnv,
    i: u32,
    paths: &[String],
) -> Result<([u64; 5], map::PartitionFiles)> {
    let store_dir = env.src.store_dir().to_string();
    let paths: Vec<StorePath> = paths
        .iter()
        .map(|p| StorePath::parse(&store_dir, p))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    let progress = Arc::clone(&env.progress);
    let facts = map::survey_partition(env.src.as_ref(), &paths, i, &|n| progress(n))?;
    let files = map::encode_partition(&facts)?;
    let counts = [
        facts.rows(0),
        facts.rows(1),
        facts.rows(2),
        facts.rows(3),
        facts.nar_bytes,
    ];
    Ok((counts, files))
}

/// The summary row of partition `i`: its rows per table, the NAR bytes
/// read, and whether it was found written.
fn summary_row(i: u32, counts: [u64; 5], skipped: bool) -> Result<RecordBatch> {
    RecordBatch::try_new(
        schema::summary(),
        vec![
            Arc::new(UInt32Array::from(vec![i])),
            Arc::new(UInt64Array::from(vec![counts[0]])),
            Arc::new(UInt64Array::from(vec![counts[1]])),
            Arc::new(UInt64Array::from(vec![counts[2]])),
            Arc::new(UInt64Array::from(vec![counts[3]])),
            Arc::new(UInt64Array::from(vec![counts[4]])),
            Arc::new(BooleanArray::from(vec![skipped])),
        ],
    )
    .map_err(DataFusionError::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_parts_spread_over_partitions() {
        let alphabet = b"0123456789abcdfghijklmnpqrsvwxyz";
        let mut counts = [0usize; 8];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for i in 0..4000 {
            let hash: String = (0..32)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    alphabet[(x % 32) as usize] as char
                })
                .collect();
            let p = StorePath::parse("/nix/store", &format!("/nix/store/{hash}-p{i}")).unwrap();
            let k = partition_of(&p, 8);
            assert_eq!(k, partition_of(&p, 8));
            counts[k] += 1;
        }
        // 500 expected per partition; a skewed bucketing would be far off.
        assert!(
            counts.iter().all(|&c| (350..650).contains(&c)),
            "{counts:?}"
        );
    }
}
