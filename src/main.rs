//! The `nix-heft` command: parses flags, calls the library, prints.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use nix_heft::classify::{Classified, classify};
use nix_heft::graph::{Edges, Graph, NodeId, edges};
use nix_heft::problem::Problem;
use nix_heft::report::advise::AdviceReport;
use nix_heft::report::partition::PartitionReport;
use nix_heft::report::refs::RefsReport;
use nix_heft::report::size::{SizeOptions, SizeReport, SortKey};
use nix_heft::report::split::SplitReport;
use nix_heft::report::why::WhyReport;
use nix_heft::report::{Report, TextOptions};
use nix_heft::source::{self, StoreSource};

/// Why is a Nix closure heavy, and how to cut it.
#[derive(Parser, Debug)]
#[command(
    name = "nix-heft",
    version,
    about,
    long_about = None,
    after_help = "Exit codes: 0 success; 1 a failure outside the command line (a missing or unreadable path or file, a corrupt store, cache or database); 2 anything wrong with the command line (an unknown flag, a bad value, a regex or glob, a name that matches no path or several, nothing to do); 3 a partial result (some file or path could not be read or simulated, see the warnings)."
)]
struct Cli {
    /// Store to read: `local` (default), a chroot store root directory or
    /// `local?root=DIR`, a binary cache (`file:///path` or a directory with
    /// nix-cache-info, or `http://…` / `https://…`), or a file of
    /// `nix path-info --json` output.
    #[arg(long, global = true, value_name = "STORE")]
    store: Option<String>,
    /// netrc file with credentials for HTTP caches (default: nix.conf's
    /// `netrc-file`, then ~/.netrc).
    #[arg(long, global = true, value_name = "FILE")]
    netrc_file: Option<std::path::PathBuf>,
    /// Fetch narinfos and listings from HTTP caches again instead of using
    /// the local cache ($XDG_CACHE_HOME/nix-heft).
    #[arg(long, global = true)]
    refresh: bool,
    /// Print machine-readable JSON instead of tables (no progress bar).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Closure size, self size and added size of every path in a closure.
    ///
    /// SELF is the path's own NAR size (`nix path-info -s`). CLOSURE is the
    /// size of everything it references, directly or not, itself included
    /// (`nix path-info -S`). ADDED is what would leave the closure of the
    /// given roots if this one path were no longer kept: itself plus every
    /// path that is reachable only through it. A large library shared by two
    /// consumers therefore has an ADDED size that counts only once, under the
    /// nearest path that all routes to it pass through, not under each
    /// consumer.
    Size(SizeArgs),
    /// The chains from ROOT to DEP, and for every edge on them the files
    /// that hold the reference: where, and what kind of hold (symlink, ELF
    /// RUNPATH / NEEDED / interpreter / string, shebang, text ...).
    Why(WhyArgs),
    /// For every reference edge in the closure of the roots, the kinds of
    /// hold and the files holding it, from one scan of the whole closure.
    Refs(RefsArgs),
    /// What-if: split PATH into outputs (like moveToOutput) without
    /// rebuilding, and show each output's files, size, closure and
    /// references, and each root's closure before and after.
    Split(SplitArgs),
    /// What-if: group PATH's files by a regex capture (e.g. a GPU target)
    /// and show what each group costs, or the closure with only some kept.
    Partition(PartitionArgs),
    /// Ranked actions that shrink the closure of the roots, each with the
    /// saving computed by applying it to the graph, its evidence, its safety
    /// and the nixpkgs snippet that applies it.
    Advise(AdviseArgs),
}

#[derive(Args, Debug)]
struct AdviseArgs {
    /// Roots, in any form `size` accepts.
    #[arg(required = true, value_name = "ROOT")]
    roots: Vec<String>,
    /// Read only referrers where some action could save at least this much
    /// (bytes, IEC units like 10MiB, or a percentage of the closure); the
    /// bound comes from the graph alone. `0` reads everything.
    #[arg(long, value_name = "SIZE", default_value = "1%")]
    min_saving: nix_heft::units::Threshold,
}

#[derive(Args, Debug)]
struct SplitArgs {
    /// The path to split.
    #[arg(value_name = "PATH")]
    path: String,
    /// Move files matching GLOB (relative to the output root) to OUTPUT,
    /// in order, like `moveToOutput GLOB "$OUTPUT"`.
    #[arg(long = "move", value_name = "GLOB=OUTPUT")]
    moves: Vec<nix_heft::plan::split::Move>,
    /// Apply nixpkgs' multiple-outputs defaults first (include, pkg-config,
    /// CMake, aclocal → dev; share/doc → doc; share/man → man; share/info →
    /// info; gtk-doc, devhelp → devdoc).
    #[arg(long, value_enum)]
    preset: Option<Preset>,
    /// Do not model `_multioutPropagateDev`: by default, when the split has
    /// a `dev` output, dev's nix-support/propagated-build-inputs names
    /// `out` (as every multi-output nixpkgs build writes it).
    #[arg(long)]
    no_propagate_dev: bool,
    /// Roots whose closure to compare (default: every top-level path in the
    /// store that pulls PATH in).
    #[arg(long = "root", value_name = "ROOT")]
    roots: Vec<String>,
}

/// `--sort` values; the library's [`SortKey`] knows nothing of clap.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Sort {
    /// Added size.
    Added,
    /// Own NAR size.
    #[value(name = "self")]
    SelfSize,
    /// Closure size.
    Closure,
    /// Name.
    Name,
}

impl From<Sort> for SortKey {
    fn from(s: Sort) -> SortKey {
        match s {
            Sort::Added => SortKey::Added,
            Sort::SelfSize => SortKey::SelfSize,
            Sort::Closure => SortKey::Closure,
            Sort::Name => SortKey::Name,
        }
    }
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Preset {
    /// nixpkgs' multiple-outputs.sh defaults.
    Nixpkgs,
}

#[derive(Args, Debug)]
struct PartitionArgs {
    /// The path to partition.
    #[arg(value_name = "PATH")]
    path: String,
    /// Regex whose first capture group (or whole match) in a file's path or
    /// symlink target names its group, e.g. 'gfx[0-9a-z]+'.
    #[arg(long, value_name = "REGEX")]
    by: String,
    /// Keep only these groups (plus files in no group) and show the closure.
    #[arg(long, value_name = "VALUE,...", value_delimiter = ',')]
    keep: Option<Vec<String>>,
    /// Roots whose closure to measure (default: PATH itself).
    #[arg(long = "root", value_name = "ROOT")]
    roots: Vec<String>,
}

#[derive(Args, Debug)]
struct WhyArgs {
    /// The root (store path, ./result, name).
    #[arg(value_name = "ROOT")]
    root: String,
    /// The dependency: a store path, or a name or glob matched against the
    /// root's closure (several matches are all explained).
    #[arg(value_name = "DEP")]
    dep: String,
    /// Show every chain (up to 10,000), not only the shortest.
    #[arg(long)]
    all: bool,
}

#[derive(Args, Debug)]
struct RefsArgs {
    /// Roots, in any form `size` accepts.
    #[arg(required = true, value_name = "ROOT")]
    roots: Vec<String>,
    /// Include every occurrence (offset, context) in the JSON output.
    #[arg(long)]
    evidence: bool,
}

#[derive(Args, Debug)]
struct SizeArgs {
    /// Roots: store paths, paths inside them, symlinks like ./result, or
    /// package names and globs (`llama-cpp-rocm`, `rocm-llvm*`).
    #[arg(required = true, value_name = "ROOT")]
    roots: Vec<String>,
    /// Order of the table (largest first, except name).
    #[arg(long, value_enum, default_value_t = Sort::Added)]
    sort: Sort,
    /// Show only the first N paths.
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// Print exact byte counts instead of IEC units.
    #[arg(long)]
    bytes: bool,
    /// Include each path's registered references (JSON: a `references`
    /// array; table: a REFS count).
    #[arg(long)]
    references: bool,
}

/// Exit code of a usage error, as clap gives for bad flags.
const EXIT_USAGE: u8 = 2;
/// Exit code of a run whose result is partial (some file or path could not
/// be read or simulated; the rest is reported).
const EXIT_PARTIAL: u8 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => code,
        Err(e) => {
            // A closed pipe (`nix-heft size ... | head`) is not a failure.
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            // Print the chain once: library errors already carry their
            // cause's text, so repeat a cause only when it adds something.
            let mut printed = e.to_string();
            eprintln!("nix-heft: error: {printed}");
            for cause in e.chain().skip(1) {
                let c = cause.to_string();
                if !printed.contains(&c) {
                    eprintln!("  caused by: {c}");
                    printed.push_str(&c);
                }
            }
            let usage = e.chain().any(|c| {
                c.downcast_ref::<nix_heft::Error>()
                    .is_some_and(|e| e.is_usage())
            });
            ExitCode::from(if usage { EXIT_USAGE } else { 1 })
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let src = source::open_with(
        cli.store.as_deref(),
        &source::OpenOptions {
            netrc_file: cli.netrc_file.clone(),
            refresh: cli.refresh,
        },
    )?;
    let src = src.as_ref();
    match &cli.command {
        Command::Size(args) => size(cli, src, args),
        Command::Why(args) => why(cli, src, args),
        Command::Refs(args) => refs(cli, src, args),
        Command::Split(args) => split(cli, src, args),
        Command::Partition(args) => partition(cli, src, args),
        Command::Advise(args) => advise(cli, src, args),
    }
}

/// A spinner on stderr while something slow runs, only for a person at a
/// terminal and never with `--json`.
fn spinner(cli: &Cli, msg: &str) -> ProgressBar {
    if cli.json
        || !std::io::stderr().is_terminal()
        || std::env::var_os("TERM").is_some_and(|t| t == "dumb")
    {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new_spinner();
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("static template"),
    );
    pb.set_message(msg.to_string());
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    pb
}

fn print_warnings(src: &dyn StoreSource) {
    for w in src.warnings() {
        eprintln!("nix-heft: warning: {w}");
    }
}

/// Resolve and load: the roots' closure as a graph.
fn load(cli: &Cli, src: &dyn StoreSource, roots: &[nix_heft::StorePath]) -> anyhow::Result<Graph> {
    let pb = spinner(cli, &format!("reading closure from {}", src.describe()));
    let g = Graph::load(src, roots).context("loading the closure")?;
    pb.finish_and_clear();
    Ok(g)
}

/// Read and classify: each path `wants` names read once (a byte progress
/// bar on a terminal), then classified.
fn read_and_classify(cli: &Cli, src: &dyn StoreSource, g: &Graph, wants: &Edges) -> Classified {
    let total: u64 = wants
        .iter()
        .filter(|(_, t)| !t.is_empty())
        .map(|(&v, _)| g.nar_size(v))
        .sum();
    let pb = spinner(cli, "");
    if !pb.is_hidden() {
        pb.set_length(total);
        pb.set_style(
            ProgressStyle::with_template(
                "reading {bar:30} {bytes}/{total_bytes} {bytes_per_sec} ({eta}) {msg}",
            )
            .expect("static template"),
        );
    }
    let scanned = wants.values().filter(|t| !t.is_empty()).count();
    let reads = nix_heft::read::read(src, g, wants, &|n| {
        pb.inc(n);
        // Over a network: NARs and (compressed) bytes fetched so far.
        if !pb.is_hidden()
            && let Some((nars, bytes)) = src.fetched()
        {
            pb.set_message(format!(
                "{nars}/{scanned} NARs, {} fetched",
                nix_heft::units::iec(bytes)
            ));
        }
    });
    pb.finish_and_clear();
    print_warnings(src);
    classify(g, reads)
}

/// Report: JSON or text on stdout, problems on stderr, and the exit code.
fn emit<R: Report>(cli: &Cli, report: &R, opts: TextOptions) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if cli.json {
        serde_json::to_writer(&mut out, report)?;
        writeln!(out)?;
    } else {
        out.write_all(report.render_text(&opts).as_bytes())?;
    }
    out.flush()?;
    Ok(partial_code(report.problems()))
}

fn partial_code(problems: &[Problem]) -> ExitCode {
    if problems.is_empty() {
        return ExitCode::SUCCESS;
    }
    for p in problems {
        eprintln!("nix-heft: warning: {}", p.display());
    }
    ExitCode::from(EXIT_PARTIAL)
}

fn size(cli: &Cli, src: &dyn StoreSource, args: &SizeArgs) -> anyhow::Result<ExitCode> {
    let roots = nix_heft::roots::resolve_roots(src, &args.roots)?;
    let g = load(cli, src, &roots)?;
    let report = SizeReport::compute(
        &g,
        SizeOptions {
            sort: args.sort.into(),
            top: args.top,
            references: args.references,
        },
    );
    print_warnings(src);
    emit(
        cli,
        &report,
        TextOptions {
            exact_bytes: args.bytes,
        },
    )
}

fn why(cli: &Cli, src: &dyn StoreSource, args: &WhyArgs) -> anyhow::Result<ExitCode> {
    let root = one_path(src, &args.root)?;
    let g = load(cli, src, std::slice::from_ref(&root))?;
    let deps = nix_heft::roots::resolve_in_closure(&g, src.store_dir(), &args.dep)?;
    let root = g.roots()[0];
    let found = nix_heft::graph::chains::chains(&g, root, &deps, args.all);
    let wants = nix_heft::graph::chains::edges_on(&found.1);
    let c = read_and_classify(cli, src, &g, &wants);
    let report = WhyReport::new(&g, root, &args.dep, &deps, found, c);
    emit(cli, &report, TextOptions::default())
}

fn refs(cli: &Cli, src: &dyn StoreSource, args: &RefsArgs) -> anyhow::Result<ExitCode> {
    let roots = nix_heft::roots::resolve_roots(src, &args.roots)?;
    let g = load(cli, src, &roots)?;
    let c = read_and_classify(cli, src, &g, &edges::all_edges(&g));
    let report = RefsReport::new(&g, c, args.evidence);
    emit(cli, &report, TextOptions::default())
}

/// Resolves one PATH argument; several matches are a usage error.
fn one_path(src: &dyn StoreSource, arg: &str) -> anyhow::Result<nix_heft::StorePath> {
    let mut p = nix_heft::roots::resolve_roots(src, &[arg.to_string()])?;
    if p.len() != 1 {
        return Err(
            nix_heft::Error::Usage(format!("'{arg}' matches {} paths; give one", p.len())).into(),
        );
    }
    Ok(p.remove(0))
}

/// Loads the closure of `roots` plus `path` and returns the graph with the
/// ids of `path` and of the roots.
fn load_with(
    cli: &Cli,
    src: &dyn StoreSource,
    path: &nix_heft::StorePath,
    roots: &[nix_heft::StorePath],
) -> anyhow::Result<(Graph, NodeId, Vec<NodeId>)> {
    let mut all = roots.to_vec();
    if !all.contains(path) {
        all.push(path.clone());
    }
    let g = load(cli, src, &all)?;
    let index = g.index();
    let p = index[path];
    let r = roots.iter().map(|x| index[x]).collect();
    Ok((g, p, r))
}

fn split(cli: &Cli, src: &dyn StoreSource, args: &SplitArgs) -> anyhow::Result<ExitCode> {
    let path = one_path(src, &args.path)?;
    let mut moves = match args.preset {
        Some(Preset::Nixpkgs) => nix_heft::plan::split::nixpkgs_preset(),
        None => Vec::new(),
    };
    moves.extend(args.moves.iter().cloned());
    if moves.is_empty() {
        return Err(nix_heft::Error::Usage(
            "nothing to split: give --move GLOB=OUTPUT or --preset nixpkgs".into(),
        )
        .into());
    }
    let roots = if args.roots.is_empty() {
        match nix_heft::roots::top_level_referrers(src, &path)? {
            // Nothing pulls it in: it is its own root.
            Some(r) if r.is_empty() => vec![path.clone()],
            Some(r) => r,
            None => {
                return Err(nix_heft::Error::Usage(format!(
                    "{} cannot list what references {path}; give the roots with --root",
                    src.describe()
                ))
                .into());
            }
        }
    } else {
        nix_heft::roots::resolve_roots(src, &args.roots)?
    };
    let (g, p, root_ids) = load_with(cli, src, &path, &roots)?;
    // The path's own holds, and each consumer's holds into it.
    let mut wants: Edges = [(p, edges::references_of(&g, p))].into_iter().collect();
    edges::want(&mut wants, g.referrers(p).iter().map(|&c| (c, p)));
    let c = read_and_classify(cli, src, &g, &wants);
    let plan = nix_heft::plan::split::split(&g, &c, p, &moves, !args.no_propagate_dev, &root_ids)?;
    let mut problems = c.problems.clone();
    problems.extend(plan.sim.problems.iter().cloned());
    let report = SplitReport::new(&g, p, moves, plan, problems);
    emit(cli, &report, TextOptions::default())
}

fn partition(cli: &Cli, src: &dyn StoreSource, args: &PartitionArgs) -> anyhow::Result<ExitCode> {
    // A bad regex is a usage error, found before anything is read.
    regex::bytes::Regex::new(&args.by).map_err(|e| nix_heft::Error::BadPattern {
        pattern: args.by.clone(),
        reason: e.to_string(),
    })?;
    let path = one_path(src, &args.path)?;
    let roots = if args.roots.is_empty() {
        vec![path.clone()]
    } else {
        nix_heft::roots::resolve_roots(src, &args.roots)?
    };
    let (g, p, root_ids) = load_with(cli, src, &path, &roots)?;
    let wants: Edges = [(p, edges::references_of(&g, p))].into_iter().collect();
    let c = read_and_classify(cli, src, &g, &wants);
    let part =
        nix_heft::plan::partition::partition(&g, &c, p, &args.by, args.keep.as_deref(), &root_ids)?;
    let report = PartitionReport::new(
        &g,
        p,
        &args.by,
        args.keep.clone(),
        &root_ids,
        part,
        c.problems,
    );
    emit(cli, &report, TextOptions::default())
}

fn advise(cli: &Cli, src: &dyn StoreSource, args: &AdviseArgs) -> anyhow::Result<ExitCode> {
    let roots = nix_heft::roots::resolve_roots(src, &args.roots)?;
    let g = load(cli, src, &roots)?;
    let closure_size = g.size_of(&g.closure_of(g.roots()));
    // Graph-first pruning: only referrers where some action could reach
    // --min-saving are read.
    let min_saving = args.min_saving.bytes_of(closure_size);
    let bounds = nix_heft::graph::bounds::max_savings(&g);
    let mut wants = edges::all_edges(&g);
    let skipped = nix_heft::graph::bounds::below(&bounds, wants.keys().copied(), min_saving);
    for (v, _) in &skipped {
        wants.remove(v);
    }
    // A split simulated on a referrer read re-points its consumers at the
    // outputs their holds point into, so their holds into it are needed too.
    let consumers: Vec<(NodeId, NodeId)> = wants
        .keys()
        .flat_map(|&v| g.referrers(v).iter().map(move |&c| (c, v)))
        .collect();
    edges::want(&mut wants, consumers);
    let c = read_and_classify(cli, src, &g, &wants);
    let (mut actions, sim_problems) = nix_heft::plan::advise::advise(&g, &c);
    // A consumer read only for its holds into an examined referrer stays
    // unexamined: no advice on it (none could reach --min-saving anyway).
    let skipped_paths: std::collections::HashSet<String> = skipped
        .iter()
        .map(|&(v, _)| g.path(v).to_string())
        .collect();
    actions.retain(|a| !skipped_paths.contains(&a.package));
    let mut problems = c.problems;
    problems.extend(sim_problems);
    let report = AdviceReport {
        roots: roots.iter().map(|r| r.to_string()).collect(),
        closure_size,
        actions,
        min_saving,
        not_examined: skipped
            .into_iter()
            .map(|(v, max_saving)| nix_heft::report::advise::NotExamined {
                referrer: g.path(v).to_string(),
                max_saving,
            })
            .collect(),
        problems,
    };
    emit(cli, &report, TextOptions::default())
}
