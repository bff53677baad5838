//! The `nix-heft-survey` command line: clap flags over the library.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use nix_heft_store::open::StoreSpec;
use nix_heft_store::source::OpenOptions;
use nix_heft_survey::{cluster, query, report, run};

const EXIT_PARTIAL: u8 = 3;

/// nix-heft's evidence for a whole package set, as Parquet tables you can
/// query with SQL.
#[derive(Parser, Debug)]
#[command(name = "nix-heft-survey", version)]
struct Cli {
    /// Machine-readable output: the report, or the rows of a query, as JSON.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Survey a set of store paths and write the tables and a report.
    Run(RunArgs),
    /// Run SQL over a survey's tables (paths, edges, evidence, problems).
    Query(QueryArgs),
    /// Start a Ballista scheduler that knows the survey's plans.
    Scheduler(SchedulerArgs),
    /// Start a Ballista executor that runs the survey's map step.
    Executor(ExecutorArgs),
}

#[derive(Args, Debug)]
struct SchedulerArgs {
    /// Where executors and `run --cluster` connect.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50050")]
    bind: String,
    /// Seconds without a heartbeat after which an executor is taken for
    /// dead and its tasks are run again on the others.
    #[arg(long, value_name = "SECS", default_value_t = 180)]
    executor_timeout: u64,
}

#[derive(Args, Debug)]
struct ExecutorArgs {
    /// The scheduler to register with.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50050")]
    scheduler: String,
    /// Where results are fetched from (Arrow Flight).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50051")]
    bind: String,
    /// The port the scheduler sends tasks to. Default: --bind's port + 1.
    #[arg(long, value_name = "PORT")]
    grpc_port: Option<u16>,
    /// Tasks run at once. Default: the cores of this machine.
    #[arg(long, value_name = "N")]
    concurrent_tasks: Option<usize>,
    /// Seconds between heartbeats to the scheduler; keep it well under the
    /// scheduler's --executor-timeout.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    heartbeat_interval: u64,
    /// Directory for Ballista's shuffle files. Default: a temporary one.
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["roots", "paths", "all"])))]
struct RunArgs {
    /// Where to read from, as nix-heft's --store: the local store, a chroot
    /// store, file:// or http(s):// binary cache. Repeat it to read several
    /// stores as one, each path from the first that has it.
    #[arg(long)]
    store: Vec<String>,
    /// Further stores as Nix's substituters setting spells them, or `auto`
    /// for nix.conf's, by priority.
    #[arg(long, value_name = "URLS")]
    substituters: Option<String>,
    /// Keys whose signatures make a narinfo trusted (name:base64 ...);
    /// default: nix.conf's trusted-public-keys.
    #[arg(long, value_name = "KEYS")]
    trusted_public_keys: Option<String>,
    /// Accept unsigned narinfos (as nix.conf's require-sigs = false).
    #[arg(long)]
    no_require_sigs: bool,
    /// Where the tables go (a restart on it resumes): a directory (created),
    /// s3://BUCKET/PREFIX (credentials from AWS_* variables) or
    /// http(s):// on a WebDAV server.
    #[arg(short = 'o', long = "out", value_name = "DIR|URL")]
    out: String,
    /// Roots to survey with their closures: store paths, ./result links, names.
    #[arg(value_name = "ROOT")]
    roots: Vec<String>,
    /// A file of store paths, one a line (a channel's store-paths list); their
    /// closures are surveyed.
    #[arg(long, value_name = "FILE")]
    paths: Option<PathBuf>,
    /// Every valid path of the store.
    #[arg(long)]
    all: bool,
    /// Number of map partitions (by hash part). Default: four per core, or
    /// what an earlier run on the same -o used.
    #[arg(long, value_name = "N")]
    partitions: Option<usize>,
    /// Rows per list of the report.
    #[arg(long, default_value_t = 10, value_name = "N")]
    top: usize,
    /// Check local store paths against their database's NAR hashes.
    #[arg(long)]
    verify: bool,
    /// Credentials for private HTTP caches.
    #[arg(long, value_name = "FILE")]
    netrc_file: Option<PathBuf>,
    /// Fetch again what the local cache holds of an HTTP cache.
    #[arg(long)]
    refresh: bool,
    /// Run the map step on a Ballista cluster: the scheduler started with
    /// `nix-heft-survey scheduler`. Its executors read --store themselves
    /// (an http(s):// cache, or a file:// cache on a shared file system)
    /// and write to -o: an object-store URL, or a directory they share
    /// with this machine.
    #[arg(long, value_name = "df://HOST:PORT")]
    cluster: Option<String>,
}

#[derive(Args, Debug)]
struct QueryArgs {
    /// A survey's output: its directory or object-store URL.
    dir: String,
    /// The SQL statement.
    sql: String,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("nix-heft-survey: error: starting the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(main_async(&cli)) {
        Ok(code) => code,
        Err(e) => {
            // The library says what to print; printing is the program's.
            let f = nix_heft_types::error::failure(e.as_ref(), &judge);
            eprint!("{}", f.message("nix-heft-survey"));
            ExitCode::from(f.code)
        }
    }
}

/// The width tables fit: `COLUMNS`, else the terminal's; none when piped.
fn width() -> Option<usize> {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&w| w > 0)
}

async fn main_async(cli: &Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Run(args) => survey(cli, args).await,
        Command::Query(args) => sql(cli, args).await,
        Command::Scheduler(args) => {
            init_logging();
            cluster::run_scheduler(&cluster::SchedulerOptions {
                bind: args.bind.clone(),
                executor_timeout_secs: args.executor_timeout,
            })
            .await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Executor(args) => {
            init_logging();
            cluster::run_executor(&cluster::ExecutorOptions {
                scheduler: args.scheduler.clone(),
                bind: args.bind.clone(),
                grpc_port: args.grpc_port,
                concurrent_tasks: args.concurrent_tasks,
                heartbeat_secs: args.heartbeat_interval,
                work_dir: args.work_dir.clone(),
            })
            .await?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Ballista's processes log through `log`: warnings and errors on stderr,
/// more with `RUST_LOG` (e.g. `RUST_LOG=info`).
fn init_logging() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
}

async fn survey(cli: &Cli, args: &RunArgs) -> anyhow::Result<ExitCode> {
    let input = if args.all {
        run::Input::All
    } else if let Some(f) = &args.paths {
        run::Input::PathsFile(f.clone())
    } else {
        run::Input::Roots(args.roots.clone())
    };
    let opts = run::RunOptions {
        store: StoreSpec {
            stores: args.store.clone(),
            substituters: args.substituters.clone(),
            trusted_public_keys: args.trusted_public_keys.clone(),
            no_require_sigs: args.no_require_sigs,
            options: OpenOptions {
                netrc_file: args.netrc_file.clone(),
                refresh: args.refresh,
                verify: args.verify,
                ..Default::default()
            },
        },
        out: args.out.clone(),
        input,
        partitions: args.partitions,
        cluster: args.cluster.clone(),
        progress: !cli.json
            && std::io::stderr().is_terminal()
            && std::env::var_os("TERM").is_none_or(|t| t != "dumb"),
    };
    let summary = run::run(&opts).await?;
    let ctx = query::open(&args.out).await?;
    let r = report::SurveyReport::compute(&ctx, summary, args.top).await?;
    let mut out = std::io::stdout().lock();
    if cli.json {
        serde_json::to_writer(&mut out, &r)?;
        writeln!(out)?;
    } else {
        out.write_all(r.render_text(width()).as_bytes())?;
    }
    out.flush()?;
    if r.problems.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for p in &r.problems {
        match &p.file {
            Some(f) => eprintln!("nix-heft-survey: warning: {} ({f}): {}", p.path, p.message),
            None => eprintln!("nix-heft-survey: warning: {}: {}", p.path, p.message),
        }
    }
    Ok(ExitCode::from(EXIT_PARTIAL))
}

async fn sql(cli: &Cli, args: &QueryArgs) -> anyhow::Result<ExitCode> {
    let ctx = query::open(&args.dir).await?;
    let batches = query::execute(&ctx, &args.sql).await?;
    let mut out = std::io::stdout().lock();
    if cli.json {
        out.write_all(&query::to_json(&batches)?)?;
        writeln!(out)?;
    } else {
        out.write_all(query::to_table(&batches, width())?.as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Whether an error of the run's chain is the command line's fault, and
/// what to do about it in this program's words (its flags): each crate's
/// enum, a crate's error inside another's looked through
/// ([`nix_heft_ops::error::Layers`]); the library says what is wrong,
/// never which flag fixes it.
fn judge(e: &(dyn std::error::Error + 'static)) -> nix_heft_types::error::Judged {
    use nix_heft_store::Error as StoreError;
    let layers = nix_heft_ops::error::Layers::of(e);
    let advice = match layers.store {
        Some(StoreError::UntrustedNarinfo(u)) if u.mismatched.is_empty() => Some(
            "; trust the cache's key with `run --trusted-public-keys` or nix.conf's \
             trusted-public-keys, or accept such narinfos with `run --no-require-sigs`",
        ),
        Some(StoreError::NoLocalStore(_)) => Some("; name a store with `run --store`"),
        Some(StoreError::NeedsCredentials { .. }) => Some(
            "; put them in a netrc file (`run --netrc-file`, nix.conf's netrc-file, or ~/.netrc)",
        ),
        _ => None,
    };
    nix_heft_types::error::Judged {
        usage: layers.is_usage(),
        advice: advice.map(str::to_string),
    }
}
