//! The map step as a DataFusion table: [`SurveyMap`] is a `TableProvider`
//! over the surveyed store paths, split into partitions by hash part, and
//! [`SurveyMapExec`] the `ExecutionPlan` whose partition `i` reads and
//! classifies the paths of bucket `i`, writes them as Parquet under the
//! output directory and yields one summary row (see
//! [`crate::schema::summary`]).
//!
//! Everything a partition needs to run is in [`MapSpec`]: the `--store`
//! argument, the output directory and the paths of each partition, all
//! plain strings. That is what a physical extension codec serialises to
//! ship the plan to a remote executor, which opens the store itself from
//! `MapSpec::store`; the embedded run passes its already opened source
//! ([`MapEnv`]) instead. The rows are the same either way: a partition's
//! rows depend only on the store and its paths ([`crate::map`]).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{BooleanArray, RecordBatch, UInt32Array, UInt64Array};
use datafusion::arrow::datatypes::SchemaRef;
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
use nix_heft::StorePath;
use nix_heft::source::StoreSource;

use crate::map;
use crate::schema;

/// What the map step is asked to do, in plain data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapSpec {
    /// The `--store` argument (`None`: the local store).
    pub store: Option<String>,
    /// The output directory.
    pub out: PathBuf,
    /// The store paths of each partition, by partition number.
    pub partitions: Vec<Vec<String>>,
}

/// What a process running partitions holds: the opened store, how many
/// partitions may read at once, and where to report bytes read.
pub struct MapEnv {
    /// The source the paths are read from.
    pub src: Arc<dyn StoreSource>,
    /// Partitions reading at the same time. Each read already uses every
    /// core (rayon); a few at once overlap downloads with scanning while
    /// keeping memory to a few partitions' holds.
    pub permits: Arc<tokio::sync::Semaphore>,
    /// Told of every content byte read.
    pub progress: Arc<dyn Fn(u64) + Send + Sync>,
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

/// The map step as a table: each row a partition's summary.
#[derive(Debug)]
pub struct SurveyMap {
    spec: Arc<MapSpec>,
    env: Arc<MapEnv>,
}

impl SurveyMap {
    /// The table over `spec`'s partitions, read through `env`.
    pub fn new(spec: MapSpec, env: MapEnv) -> SurveyMap {
        SurveyMap {
            spec: Arc::new(spec),
            env: Arc::new(env),
        }
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
        Ok(Arc::new(SurveyMapExec::new(
            Arc::clone(&self.spec),
            Arc::clone(&self.env),
            projection.cloned(),
        )?))
    }
}

/// The map step's physical plan: one partition per hash bucket.
#[derive(Debug)]
pub struct SurveyMapExec {
    spec: Arc<MapSpec>,
    env: Arc<MapEnv>,
    projection: Option<Vec<usize>>,
    props: Arc<PlanProperties>,
}

impl SurveyMapExec {
    /// The plan for `spec`, its summary columns projected.
    pub fn new(
        spec: Arc<MapSpec>,
        env: Arc<MapEnv>,
        projection: Option<Vec<usize>>,
    ) -> Result<SurveyMapExec> {
        let full = schema::summary();
        let schema = match &projection {
            Some(p) => Arc::new(full.project(p)?),
            None => full,
        };
        let props = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(spec.partitions.len().max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(SurveyMapExec {
            spec,
            env,
            projection,
            props: Arc::new(props),
        })
    }

    /// What the plan runs.
    pub fn spec(&self) -> &MapSpec {
        &self.spec
    }
}

impl DisplayAs for SurveyMapExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SurveyMapExec: {} partitions of {} paths, out={}",
            self.spec.partitions.len(),
            self.spec.partitions.iter().map(Vec::len).sum::<usize>(),
            self.spec.out.display()
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
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
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
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let paths = self
            .spec
            .partitions
            .get(partition)
            .cloned()
            .unwrap_or_default();
        let spec = Arc::clone(&self.spec);
        let env = Arc::clone(&self.env);
        let projection = self.projection.clone();
        let schema = Arc::clone(self.props.eq_properties.schema());
        let fut = run_async(spec, env, partition as u32, paths, projection);
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            futures::stream::once(fut),
        )))
    }
}

/// Runs partition `i` on a blocking thread once a permit is free.
async fn run_async(
    spec: Arc<MapSpec>,
    env: Arc<MapEnv>,
    i: u32,
    paths: Vec<String>,
    projection: Option<Vec<usize>>,
) -> Result<RecordBatch> {
    let _permit = Arc::clone(&env.permits)
        .acquire_owned()
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    let summary = tokio::task::spawn_blocking(move || run_partition(&spec, &env, i, &paths))
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))??;
    match projection {
        Some(p) => Ok(summary.project(&p)?),
        None => Ok(summary),
    }
}

/// Runs partition `i`: skipped when an earlier run wrote it, else read,
/// classified and written. Returns its summary row.
fn run_partition(spec: &MapSpec, env: &MapEnv, i: u32, paths: &[String]) -> Result<RecordBatch> {
    let ext = |e: nix_heft::Error| DataFusionError::External(Box::new(e));
    let row = |counts: [u64; 5], skipped: bool| {
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
    };
    if map::is_written(&spec.out, i) {
        return row([0; 5], true);
    }
    let store_dir = env.src.store_dir().to_string();
    let paths: Vec<StorePath> = paths
        .iter()
        .map(|p| StorePath::parse(&store_dir, p))
        .collect::<nix_heft::Result<_>>()
        .map_err(ext)?;
    let progress = Arc::clone(&env.progress);
    let facts = map::survey_partition(env.src.as_ref(), &paths, i, &|n| progress(n))?;
    map::write_partition(&spec.out, i, &facts).map_err(|e| {
        DataFusionError::Execution(format!(
            "writing partition {i} under {}: {e}",
            spec.out.display()
        ))
    })?;
    row(
        [
            facts.rows(0),
            facts.rows(1),
            facts.rows(2),
            facts.rows(3),
            facts.nar_bytes,
        ],
        false,
    )
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
