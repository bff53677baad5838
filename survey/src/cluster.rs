//! The survey on a Ballista cluster: the extension codecs that ship the map
//! step ([`SurveyMap`], [`SurveyMapExec`]) from the coordinator to the
//! scheduler and on to the executors, the `scheduler` and `executor`
//! processes with those codecs registered, and the coordinator's session
//! for `run --cluster df://HOST:PORT`.
//!
//! The plan is the embedded run's: the coordinator registers the same
//! table and runs the same `SELECT`; Ballista's planner turns the map
//! step's partitions into one task each. A task sent to an executor
//! carries the [`MapSpec`] (store, options, output directory), encoded here
//! as JSON after a tag, over its slice of the in-memory scan of the paths
//! (encoded by DataFusion's own codec), so the executor opens the store
//! itself ([`crate::exec::MapEnv::open`]) and writes its partition's
//! Parquet under the shared output directory.
//!
//! Everything that is not ours is passed to Ballista's own codecs, which
//! encode its shuffle and cache nodes and the file formats.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use anyhow::Context;
use ballista::prelude::{SessionConfigExt, SessionContextExt};
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::{DataFusionError, Result, TableReference};
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::execution::TaskContext;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use serde::{Deserialize, Serialize};

use crate::exec::{MapSpec, SurveyMap, SurveyMapExec};

/// The tag before an encoded table or plan of ours. Ballista's own nodes
/// are protobuf, whose first byte is never `n` followed by this text.
const TAG: &[u8] = b"nix-heft-survey/map/1\n";

/// What the logical codec sends for a [`SurveyMap`] table.
#[derive(Serialize, Deserialize)]
struct TableWire {
    spec: MapSpec,
    partitions: Vec<Vec<String>>,
}

/// What the physical codec sends for a [`SurveyMapExec`] (its input, the
/// scan of the paths, goes as a child plan).
#[derive(Serialize, Deserialize)]
struct ExecWire {
    spec: MapSpec,
    projection: Option<Vec<usize>>,
}

fn encode_tagged<T: Serialize>(value: &T, buf: &mut Vec<u8>) -> Result<()> {
    buf.extend_from_slice(TAG);
    serde_json::to_writer(buf, value).map_err(|e| DataFusionError::External(Box::new(e)))
}

fn decode_tagged<T: for<'de> Deserialize<'de>>(buf: &[u8]) -> Option<Result<T>> {
    let body = buf.strip_prefix(TAG)?;
    Some(
        serde_json::from_slice(body).map_err(|e| {
            DataFusionError::Internal(format!("a survey plan that does not decode: {e}"))
        }),
    )
}

/// The logical codec: [`SurveyMap`] tables, then Ballista's.
#[derive(Debug, Default)]
pub struct SurveyLogicalCodec {
    inner: BallistaLogicalExtensionCodec,
}

impl LogicalExtensionCodec for SurveyLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> Result<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        match decode_tagged::<TableWire>(buf) {
            Some(wire) => {
                let wire = wire?;
                Ok(Arc::new(SurveyMap::remote(wire.spec, wire.partitions)))
            }
            None => self
                .inner
                .try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        match node.downcast_ref::<SurveyMap>() {
            Some(map) => encode_tagged(
                &TableWire {
                    spec: map.spec().clone(),
                    partitions: map.partitions().to_vec(),
                },
                buf,
            ),
            None => self.inner.try_encode_table_provider(table_ref, node, buf),
        }
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> Result<()> {
        self.inner.try_encode_file_format(buf, node)
    }
}

/// The physical codec: [`SurveyMapExec`] plans, then Ballista's.
#[derive(Debug, Default)]
pub struct SurveyPhysicalCodec {
    inner: BallistaPhysicalExtensionCodec,
}

impl PhysicalExtensionCodec for SurveyPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match decode_tagged::<ExecWire>(buf) {
            Some(wire) => {
                let wire = wire?;
                let [input] = inputs else {
                    return Err(DataFusionError::Internal(format!(
                        "a survey map plan with {} inputs",
                        inputs.len()
                    )));
                };
                Ok(Arc::new(SurveyMapExec::new(
                    Arc::new(wire.spec),
                    None,
                    Arc::clone(input),
                    wire.projection,
                )?))
            }
            None => self.inner.try_decode(buf, inputs, ctx, proto_converter),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        match node.downcast_ref::<SurveyMapExec>() {
            Some(exec) => encode_tagged(
                &ExecWire {
                    spec: exec.spec().clone(),
                    projection: exec.projection().map(<[usize]>::to_vec),
                },
                buf,
            ),
            None => self.inner.try_encode(node, buf, proto_converter),
        }
    }
}

/// The coordinator's session on the cluster whose scheduler is at `url`
/// (`df://HOST:PORT`), with the survey's codecs.
pub async fn session(url: &str, target_partitions: usize) -> anyhow::Result<SessionContext> {
    let config = SessionConfig::new_with_ballista()
        .with_target_partitions(target_partitions)
        .with_ballista_job_name("nix-heft-survey")
        // Ballista's static planner: one task per map partition. The
        // adaptive one coalesces partitions it judges small (ours report no
        // statistics), and a coalesced task ran every partition of the map
        // step, each task again.
        .with_ballista_adaptive_query_planner(false)
        .with_ballista_logical_extension_codec(Arc::new(SurveyLogicalCodec::default()))
        .with_ballista_physical_extension_codec(Arc::new(SurveyPhysicalCodec::default()));
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .build();
    SessionContext::remote_with_state(url, state)
        .await
        .with_context(|| format!("connecting to the Ballista scheduler at {url}"))
}

/// Checks that something accepts connections at the scheduler address of
/// `url` (`df://HOST[:PORT]`, Ballista's port 50050 by default), so that a
/// scheduler not started is one clear error before the graph is loaded.
pub fn check_scheduler(url: &str) -> anyhow::Result<()> {
    let rest = url
        .split_once("://")
        .map_or(url, |(_, r)| r)
        .trim_end_matches('/');
    let hostport = if rest
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        rest.to_string()
    } else {
        format!("{rest}:50050")
    };
    let (_, addr) = endpoint(&hostport, "--cluster")?;
    std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(5)).with_context(
        || {
            format!(
                "no Ballista scheduler answers at {url} ({addr}); start one with \
                 `nix-heft-survey scheduler --bind {hostport}`"
            )
        },
    )?;
    Ok(())
}

/// `HOST:PORT` given to `flag`: the host as written (what other machines
/// are told to connect to), and the first socket address it resolves to.
fn endpoint(s: &str, flag: &str) -> anyhow::Result<(String, SocketAddr)> {
    let (host, _) = s
        .rsplit_once(':')
        .with_context(|| format!("{flag} {s}: not HOST:PORT"))?;
    let addr = s
        .to_socket_addrs()
        .with_context(|| format!("{flag} {s}: not HOST:PORT"))?
        .next()
        .with_context(|| format!("{flag} {s}: resolves to no address"))?;
    Ok((host.to_string(), addr))
}

/// `nix-heft-survey scheduler` options.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    /// `--bind HOST:PORT`: where executors and coordinators connect.
    pub bind: String,
    /// `--executor-timeout SECS`: an executor silent this long is taken
    /// for dead, and its tasks run again elsewhere.
    pub executor_timeout_secs: u64,
}

/// Runs a Ballista scheduler with the survey's codecs until it is killed.
pub async fn run_scheduler(opts: &SchedulerOptions) -> anyhow::Result<()> {
    let (host, addr) = endpoint(&opts.bind, "--bind")?;
    let mut config = SchedulerConfig {
        bind_host: addr.ip().to_string(),
        bind_port: addr.port(),
        external_host: host,
        executor_timeout_seconds: opts.executor_timeout_secs,
        // Checked four times per timeout, so a dead executor is noticed
        // within about 1.25 timeouts.
        expire_dead_executor_interval_seconds: (opts.executor_timeout_secs / 4).max(1),
        no_executors_grace_period_seconds: opts.executor_timeout_secs,
        ..SchedulerConfig::default()
    };
    config.override_logical_codec = Some(Arc::new(SurveyLogicalCodec::default()));
    config.override_physical_codec = Some(Arc::new(SurveyPhysicalCodec::default()));
    let cluster = BallistaCluster::new_from_config(&config)
        .await
        .context("setting up the scheduler's cluster state")?;
    eprintln!("nix-heft-survey: scheduler listening on {addr}");
    start_server(cluster, addr, Arc::new(config))
        .await
        .with_context(|| format!("running the scheduler on {addr}"))
}

/// `nix-heft-survey executor` options.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    /// `--scheduler HOST:PORT`.
    pub scheduler: String,
    /// `--bind HOST:PORT`: the Arrow Flight port other executors and the
    /// coordinator fetch results from.
    pub bind: String,
    /// `--grpc-port`: the port the scheduler sends tasks to (default: the
    /// Flight port + 1).
    pub grpc_port: Option<u16>,
    /// `--concurrent-tasks N` (default: the cores of this machine).
    pub concurrent_tasks: Option<usize>,
    /// `--heartbeat-interval SECS`.
    pub heartbeat_secs: u64,
    /// `--work-dir DIR` for shuffle files (default: a temporary directory).
    pub work_dir: Option<std::path::PathBuf>,
}

/// Runs a Ballista executor with the survey's codecs until it is killed.
pub async fn run_executor(opts: &ExecutorOptions) -> anyhow::Result<()> {
    let (host, addr) = endpoint(&opts.bind, "--bind")?;
    let (sched_host, sched) = endpoint(&opts.scheduler, "--scheduler")?;
    let grpc_port = match opts.grpc_port {
        Some(p) => p,
        None => addr
            .port()
            .checked_add(1)
            .context("--bind's port is the last one: give --grpc-port")?,
    };
    let mut config = ExecutorProcessConfig {
        bind_host: addr.ip().to_string(),
        external_host: Some(host),
        port: addr.port(),
        grpc_port,
        scheduler_host: sched_host,
        scheduler_port: sched.port(),
        executor_heartbeat_interval_seconds: opts.heartbeat_secs,
        work_dir: opts
            .work_dir
            .as_ref()
            .map(|d| d.to_string_lossy().into_owned()),
        special_mod_log_level: "WARN".into(),
        print_thread_info: false,
        ..ExecutorProcessConfig::default()
    };
    if let Some(n) = opts.concurrent_tasks {
        config.vcores = n.max(1);
    }
    config.override_logical_codec = Some(Arc::new(SurveyLogicalCodec::default()));
    config.override_physical_codec = Some(Arc::new(SurveyPhysicalCodec::default()));
    eprintln!(
        "nix-heft-survey: executor on {addr} (tasks on port {grpc_port}), scheduler {}",
        opts.scheduler
    );
    start_executor_process(Arc::new(config))
        .await
        .with_context(|| format!("running the executor on {addr}"))
}
