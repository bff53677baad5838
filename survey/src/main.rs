//! The `nix-heft-survey` command line: clap flags over the library.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use nix_heft::source::OpenOptions;
use nix_heft_survey::{query, report, run};

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
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["roots", "paths", "all"])))]
struct RunArgs {
    /// Where to read from, as nix-heft's --store: the local store, a chroot
    /// store, file:// or http(s):// binary cache.
    #[arg(long)]
    store: Option<String>,
    /// The output directory (created; a restart on it resumes).
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    out: PathBuf,
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
    /// what an earlier run on DIR used.
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
}

#[derive(Args, Debug)]
struct QueryArgs {
    /// A survey's output directory.
    dir: PathBuf,
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
        Err(e) => ExitCode::from(nix_heft::error::report_failure("nix-heft-survey", &e)),
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
    }
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
        store: args.store.clone(),
        open: OpenOptions {
            netrc_file: args.netrc_file.clone(),
            refresh: args.refresh,
            verify: args.verify,
        },
        out: args.out.clone(),
        input,
        partitions: args.partitions,
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
