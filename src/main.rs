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
    after_help = "Exit codes: 0 success; 1 a failure outside the command line (a missing or unreadable path or file, a corrupt store, cache or database); 2 anything wrong with the command line (an unknown flag, a bad value, a regex or glob, a name that matches no path or several, nothing to do); 3 a partial result (some file or path could not be read or simulated, see the warnings); 4 (check) a rule is broken, even when the read was also partial."
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
    /// Check every local store path read against the NAR hash its database
    /// recorded (as `nix-store --verify --check-contents`): a file edited
    /// in place is reported. Costs a NAR serialisation of each path read;
    /// binary caches are always checked.
    #[arg(long, global = true)]
    verify: bool,
    /// Print machine-readable JSON instead of tables (no progress bar).
    #[arg(long, global = true)]
    json: bool,
    /// Colour the text output: `auto` on a terminal unless NO_COLOR is set.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    color: Color,
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
    /// What changed between two closures, per package (versions and size,
    /// like `nix store diff-closures`) and per path, with the referrer and
    /// files that pulled in each new path or held each path that left.
    Diff(DiffArgs),
    /// A closure-size gate for CI: a budget, a growth limit against a
    /// baseline, forbidden paths and forbidden verdicts, each violation
    /// explained. Exit code 4 when a rule is broken.
    Check(CheckArgs),
    /// Run CMD under a tracer (ptrace with a seccomp filter, following
    /// every thread, fork and exec) and record which store files it uses
    /// (opens, executes, maps) and looks at (stat, access, readlink,
    /// directory listings, failed look-ups), through symlinks.
    ///
    /// CMD's stdin, stdout and stderr pass through, and nix-heft exits with
    /// CMD's exit code (128 + the signal when a signal killed it, 124 when
    /// --timeout ended it first). The trace (JSON) goes to -o; a summary of
    /// the touched and never-touched paths of the closure goes to stderr
    /// (to stdout as JSON with --json, after CMD's own output).
    Trace(TraceArgs),
    /// One self-contained HTML file: a treemap of the closure by added
    /// size (following the dominator tree), each path's sizes, referrers,
    /// references and every edge's evidence, the advice, search and a
    /// sortable table. Opens from disk; no network.
    Report(ReportArgs),
    /// Browse the closure in the terminal (like nix-tree): referrers |
    /// references | details; sizes at once, evidence filling in from a
    /// background read; `w` why-chains with the files holding each edge,
    /// `a` advice, `y` copy, `?` help.
    Browse(BrowseArgs),
    /// Print a shell completion script (bash, zsh or fish) on standard output.
    Completions(CompletionsArgs),
    /// Print the manual page (roff) on standard output.
    Man,
}

#[derive(Args, Debug)]
struct DiffArgs {
    /// The old closure's root (store path, ./result, profile generation
    /// link, name).
    #[arg(value_name = "BEFORE")]
    before: String,
    /// The new closure's root.
    #[arg(value_name = "AFTER")]
    after: String,
    /// Store to read BEFORE from (default: --store).
    #[arg(long, value_name = "STORE")]
    before_store: Option<String>,
    /// Store to read AFTER from (default: --store).
    #[arg(long, value_name = "STORE")]
    after_store: Option<String>,
    /// Print exact byte counts instead of IEC units.
    #[arg(long)]
    bytes: bool,
}

#[derive(Args, Debug)]
struct CheckArgs {
    /// Roots, in any form `size` accepts (or `roots` in the config file).
    #[arg(value_name = "ROOT")]
    roots: Vec<String>,
    /// Fail when the closure is larger than SIZE (IEC or SI: 1GiB, 900MB).
    #[arg(long, value_name = "SIZE")]
    max_closure: Option<String>,
    /// Fail when the closure grew by more than SIZE or PCT (10%) over the
    /// baseline given by --against or --against-json.
    #[arg(long, value_name = "SIZE|PCT")]
    max_growth: Option<String>,
    /// Baseline: the closure of this root (same --store).
    #[arg(long, value_name = "ROOT", conflicts_with = "against_json")]
    against: Option<String>,
    /// Baseline: a saved `nix-heft size --json`.
    #[arg(long, value_name = "FILE")]
    against_json: Option<std::path::PathBuf>,
    /// Fail when a path whose name matches GLOB is in the closure, like
    /// disallowedRequisites (`rocm-llvm*`, `*-dev`); repeatable.
    #[arg(long, value_name = "GLOB")]
    forbid: Vec<String>,
    /// Fail when a reference is held only by documentation (docs), only by
    /// build-time files (build) or only by dead holds (dead).
    #[arg(long, value_name = "VERDICT,...", value_delimiter = ',')]
    forbid_verdict: Vec<String>,
    /// Rules from a TOML file (default: ./nix-heft.toml when present);
    /// flags override its keys.
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    /// Output: text, json, github (workflow annotations) or markdown (a PR
    /// comment).
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
}

#[derive(Args, Debug)]
struct TraceArgs {
    /// Where to write the trace file.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "nix-heft-trace.json"
    )]
    output: std::path::PathBuf,
    /// Stop after S seconds (a workload that daemonizes is traced until
    /// every traced process has exited): whatever still runs is killed and
    /// the partial trace kept.
    #[arg(long, value_name = "S")]
    timeout: Option<f64>,
    /// A note on the environment, kept in the trace file.
    #[arg(long, value_name = "TEXT")]
    env_note: Option<String>,
    /// The command and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    cmd: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
struct BrowseArgs {
    /// Roots, in any form `size` accepts.
    #[arg(required = true, value_name = "ROOT")]
    roots: Vec<String>,
    /// Sizes only: read no file (no evidence, verdicts or advice).
    #[arg(long)]
    no_evidence: bool,
}

#[derive(Args, Debug)]
struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum, value_name = "SHELL")]
    shell: CompletionShell,
}

/// Shells `completions` writes for.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum CompletionShell {
    /// bash (`source <(nix-heft completions bash)`).
    Bash,
    /// zsh (save as `_nix-heft` on `$fpath`).
    Zsh,
    /// fish (save under `~/.config/fish/completions/`).
    Fish,
}

#[derive(Args, Debug)]
struct ReportArgs {
    /// Roots, in any form `size` accepts.
    #[arg(required_unless_present = "diff", value_name = "ROOT")]
    roots: Vec<String>,
    /// The page of AFTER's closure, marking the paths new since BEFORE and
    /// listing those that left (what `diff BEFORE AFTER` compares).
    #[arg(
        long,
        num_args = 2,
        value_names = ["BEFORE", "AFTER"],
        conflicts_with = "roots"
    )]
    diff: Option<Vec<String>>,
    /// With --diff: store to read BEFORE from (default: --store).
    #[arg(long, value_name = "STORE")]
    before_store: Option<String>,
    /// With --diff: store to read AFTER from (default: --store).
    #[arg(long, value_name = "STORE")]
    after_store: Option<String>,
    #[command(flatten)]
    trace: TraceOpt,
    /// Where to write the HTML file (`-` for standard output).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "report.html"
    )]
    output: std::path::PathBuf,
    /// Sizes only: read no file, so no evidence, verdicts or advice (for
    /// stores without contents or very large closures).
    #[arg(long)]
    no_evidence: bool,
}

#[derive(Args, Debug)]
struct AdviseArgs {
    /// Roots, in any form `size` accepts.
    #[arg(required = true, value_name = "ROOT")]
    roots: Vec<String>,
    /// Show actions that save nothing in full, not folded into "also".
    #[arg(long)]
    all: bool,
    #[command(flatten)]
    trace: TraceOpt,
    /// The GPU targets the plan keeps when it partitions (the values
    /// `partition --keep` takes, e.g. gfx90a,gfx1100). Default: the targets
    /// the --trace workload used, else the costliest single target.
    #[arg(long, value_name = "TARGET,...", value_delimiter = ',')]
    targets: Option<Vec<String>>,
    /// Read only referrers where some action could save at least this much
    /// (bytes, IEC units like 10MiB, or a percentage of the closure); the
    /// bound comes from the graph alone. `0` reads everything.
    #[arg(long, value_name = "SIZE", default_value = "1%")]
    min_saving: nix_heft::units::Threshold,
}

/// `--trace FILE`, shared by the commands that judge holds.
#[derive(Args, Debug, Default)]
struct TraceOpt {
    /// A trace written by `nix-heft trace -o FILE` (repeat to merge several):
    /// holds the traced workload used become `runtime`, and evidence in
    /// files it never touched is noted `traced: not used`.
    #[arg(long = "trace", value_name = "FILE")]
    traces: Vec<std::path::PathBuf>,
}

impl TraceOpt {
    /// The merged traces, `None` without `--trace`; read before the store
    /// so that a bad trace file fails at once.
    fn load(&self) -> anyhow::Result<Option<nix_heft::trace::file::TraceSet>> {
        if self.traces.is_empty() {
            return Ok(None);
        }
        Ok(Some(nix_heft::trace::file::TraceSet::load(&self.traces)?))
    }
}

/// Applies the traces (if any) to classified evidence.
fn apply_traces(g: &Graph, c: &mut Classified, traces: Option<&nix_heft::trace::file::TraceSet>) {
    if let Some(t) = traces {
        nix_heft::classify::traced::apply(g, c, t);
    }
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
    #[command(flatten)]
    trace: TraceOpt,
}

/// `--color` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Color {
    /// On a terminal, unless NO_COLOR is set.
    Auto,
    /// Always, even when piped.
    Always,
    /// Never.
    Never,
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
    #[command(flatten)]
    trace: TraceOpt,
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
    /// Show every chain (up to 10,000, strongest first), not only the
    /// strongest to each dependency; lists every piece of evidence.
    #[arg(long)]
    all: bool,
    /// List every piece of evidence instead of grouping many of one kind
    /// in one directory.
    #[arg(long)]
    evidence: bool,
    #[command(flatten)]
    trace: TraceOpt,
}

#[derive(Args, Debug)]
struct RefsArgs {
    /// Roots, in any form `size` accepts.
    #[arg(required = true, value_name = "ROOT")]
    roots: Vec<String>,
    /// Include every occurrence (offset, context, verdict): in the JSON, and
    /// listed under the table in text.
    #[arg(long)]
    evidence: bool,
    #[command(flatten)]
    trace: TraceOpt,
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

/// Exit code of `check` when a rule is broken.
const EXIT_VIOLATION: u8 = 4;
/// Exit code of a run whose result is partial (some file or path could not
/// be read or simulated; the rest is reported).
const EXIT_PARTIAL: u8 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => code,
        Err(e) => ExitCode::from(nix_heft::error::report_failure("nix-heft", &e)),
    }
}

/// Opens a store as `--store` names it, with the HTTP options of the
/// command line (netrc, refresh).
fn open_store(cli: &Cli, spec: Option<&str>) -> nix_heft::Result<Box<dyn StoreSource>> {
    source::open_with(
        spec,
        &source::OpenOptions {
            netrc_file: cli.netrc_file.clone(),
            refresh: cli.refresh,
            verify: cli.verify,
        },
    )
}

/// The store a `--before-store` / `--after-store` flag names, if given.
fn optional_store(
    cli: &Cli,
    spec: &Option<String>,
) -> nix_heft::Result<Option<Box<dyn StoreSource>>> {
    spec.as_deref()
        .map(|s| open_store(cli, Some(s)))
        .transpose()
}

fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    // Generated from the clap definitions; no store is opened for these.
    match &cli.command {
        Command::Completions(args) => return completions(args),
        Command::Man => return man(),
        _ => {}
    }
    if let Command::Check(args) = &cli.command {
        // `check` may take its store from its config file.
        return check_main(cli, args);
    }
    if let Command::Trace(args) = &cli.command {
        return trace(cli, args);
    }
    // Shared, so that `browse` can read on a thread of its own.
    let shared: std::sync::Arc<dyn StoreSource> = open_store(cli, cli.store.as_deref())?.into();
    let src = shared.as_ref();
    match &cli.command {
        Command::Size(args) => size(cli, src, args),
        Command::Why(args) => why(cli, src, args),
        Command::Refs(args) => refs(cli, src, args),
        Command::Split(args) => split(cli, src, args),
        Command::Partition(args) => partition(cli, src, args),
        Command::Advise(args) => advise(cli, src, args),
        Command::Diff(args) => diff(cli, src, args),
        // Answered above, before the global store was opened.
        Command::Check(args) => check_main(cli, args),
        Command::Trace(args) => trace(cli, args),
        Command::Report(args) => report(cli, src, args),
        Command::Browse(args) => browse(cli, std::sync::Arc::clone(&shared), args),
        Command::Completions(args) => completions(args),
        Command::Man => man(),
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
    // The bar counts the paths scanned, not the whole closure: paths with
    // no references need no scan.
    let pb = spinner(cli, "");
    if !pb.is_hidden() {
        pb.set_length(total);
        pb.set_style(
            ProgressStyle::with_template(
                "reading {bar:30} {bytes}/{total_bytes} to scan {bytes_per_sec} ({eta}) {msg}",
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
    let mut c = classify(g, reads);
    // A source without file contents gives edges and chains but no
    // evidence: that is a partial answer, never a clean one.
    let blind = c.paths.values().filter(|p| !p.available).count();
    if blind > 0 {
        c.problems.push(Problem::new(
            src.describe(),
            nix_heft::problem::ProblemKind::NoContents,
            format!(
                "has no file contents: {blind} of {} paths could not be examined; \
                 read a store or a binary cache for evidence",
                c.paths.len()
            ),
        ));
    }
    c
}

/// How text is laid out for this run: the width of the terminal (or
/// `COLUMNS`), full lines when piped; colour per `--color` and `NO_COLOR`.
fn text_options(cli: &Cli) -> TextOptions {
    let tty = std::io::stdout().is_terminal();
    let width = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&w| w > 0)
        .or_else(|| {
            tty.then(terminal_size::terminal_size)
                .flatten()
                .map(|(w, _)| w.0 as usize)
        });
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    let color = match cli.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => tty && !no_color && !dumb,
    };
    TextOptions {
        width,
        style: nix_heft::report::style::Style { color },
        ..TextOptions::default()
    }
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
            ..text_options(cli)
        },
    )
}

fn why(cli: &Cli, src: &dyn StoreSource, args: &WhyArgs) -> anyhow::Result<ExitCode> {
    let traces = args.trace.load()?;
    let root = one_path(src, &args.root)?;
    let g = load(cli, src, std::slice::from_ref(&root))?;
    let deps = nix_heft::roots::resolve_in_closure(&g, src.store_dir(), &args.dep)?;
    let root = g.roots()[0];
    let mut is_dep = vec![false; g.len()];
    for &d in &deps {
        is_dep[d as usize] = true;
    }
    // Every edge on some chain is read, so chains can be ranked by verdict.
    let wants = nix_heft::graph::chains::edges_of_all_chains(&g, &[root], &is_dep);
    let mut c = read_and_classify(cli, src, &g, &wants);
    apply_traces(&g, &mut c, traces.as_ref());
    let best = nix_heft::plan::explain::best_chains(&g, &c, &[root], &deps);
    let (count, mut shown) = nix_heft::graph::chains::chains(&g, root, &deps, args.all);
    if args.all {
        shown.sort_by_key(|ch| (nix_heft::plan::explain::chain_verdict(&c, ch), ch.len()));
    } else {
        shown = best.iter().map(|b| b.chain.clone()).collect();
    }
    let report = WhyReport::new(&g, root, &args.dep, &deps, (count, shown), best, c);
    let opts = TextOptions {
        every_line: args.all || args.evidence,
        ..text_options(cli)
    };
    emit(cli, &report, opts)
}

fn refs(cli: &Cli, src: &dyn StoreSource, args: &RefsArgs) -> anyhow::Result<ExitCode> {
    let traces = args.trace.load()?;
    let roots = nix_heft::roots::resolve_roots(src, &args.roots)?;
    let g = load(cli, src, &roots)?;
    let mut c = read_and_classify(cli, src, &g, &edges::all_edges(&g));
    apply_traces(&g, &mut c, traces.as_ref());
    let report = RefsReport::new(&g, c, args.evidence);
    emit(cli, &report, text_options(cli))
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

/// The graph, PATH's id and the roots' ids for `split` and `partition`:
/// with roots given, PATH is looked up in their closure first.
fn target_and_roots(
    cli: &Cli,
    src: &dyn StoreSource,
    path_arg: &str,
    root_args: &[String],
    default_roots: impl FnOnce(&nix_heft::StorePath) -> anyhow::Result<Vec<nix_heft::StorePath>>,
) -> anyhow::Result<(Graph, NodeId, Vec<NodeId>)> {
    if !root_args.is_empty() {
        let roots = nix_heft::roots::resolve_roots(src, root_args)?;
        let g = load(cli, src, &roots)?;
        if let Some(p) = nix_heft::roots::resolve_one_in_closure(&g, src.store_dir(), path_arg)? {
            let r = g.roots().to_vec();
            return Ok((g, p, r));
        }
        let path = one_path(src, path_arg)?;
        return load_with(cli, src, &path, &roots);
    }
    let path = one_path(src, path_arg)?;
    let roots = default_roots(&path)?;
    load_with(cli, src, &path, &roots)
}

fn split(cli: &Cli, src: &dyn StoreSource, args: &SplitArgs) -> anyhow::Result<ExitCode> {
    let traces = args.trace.load()?;
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
    let (g, p, root_ids) = target_and_roots(cli, src, &args.path, &args.roots, |path| {
        match nix_heft::roots::top_level_referrers(src, path)? {
            // Nothing pulls it in: it is its own root.
            Some(r) if r.is_empty() => Ok(vec![path.clone()]),
            Some(r) => Ok(r),
            None => Err(nix_heft::Error::Usage(format!(
                "{} cannot list what references {path}; give the roots with --root",
                src.describe()
            ))
            .into()),
        }
    })?;
    // The path's own holds, and each consumer's holds into it.
    let mut wants: Edges = [(p, edges::references_of(&g, p))].into_iter().collect();
    edges::want(&mut wants, g.referrers(p).iter().map(|&c| (c, p)));
    let mut c = read_and_classify(cli, src, &g, &wants);
    apply_traces(&g, &mut c, traces.as_ref());
    let plan = nix_heft::plan::split::split(&g, &c, p, &moves, !args.no_propagate_dev, &root_ids)?;
    let mut problems = c.problems.clone();
    problems.extend(plan.sim.problems.iter().cloned());
    let unmatched: Vec<String> = args
        .moves
        .iter()
        .filter(|m| plan.sim.unmatched.contains(&m.pattern))
        .map(|m| {
            format!(
                "--move '{}={}' matched no file of {}",
                m.pattern,
                m.output,
                g.path(p)
            )
        })
        .collect();
    let mut report = SplitReport::new(&g, p, moves, plan, problems);
    report.warnings.extend(unmatched);
    emit(cli, &report, text_options(cli))
}

fn partition(cli: &Cli, src: &dyn StoreSource, args: &PartitionArgs) -> anyhow::Result<ExitCode> {
    let traces = args.trace.load()?;
    // A bad regex is a usage error, found before anything is read.
    regex::bytes::Regex::new(&args.by).map_err(|e| nix_heft::Error::BadPattern {
        pattern: args.by.clone(),
        reason: e.to_string(),
    })?;
    let (g, p, root_ids) = target_and_roots(cli, src, &args.path, &args.roots, |path| {
        Ok(vec![path.clone()])
    })?;
    let wants: Edges = [(p, edges::references_of(&g, p))].into_iter().collect();
    let mut c = read_and_classify(cli, src, &g, &wants);
    apply_traces(&g, &mut c, traces.as_ref());
    let part =
        nix_heft::plan::partition::partition(&g, &c, p, &args.by, args.keep.as_deref(), &root_ids)?;
    // The groups with a file the traces used (the link in a farm counts:
    // the trace records the use on it too).
    let traced_groups = traces.as_ref().map(|t| {
        part.groups
            .iter()
            .filter(|gr| {
                gr.files.iter().any(|f| {
                    t.file(g.path(p).as_str(), &String::from_utf8_lossy(f))
                        .is_some_and(|ft| ft.used())
                })
            })
            .map(|gr| gr.key.clone())
            .collect::<Vec<_>>()
    });
    let mut report = PartitionReport::new(
        &g,
        p,
        &args.by,
        args.keep.clone(),
        &root_ids,
        part,
        c.problems,
    );
    report.traced_groups = traced_groups;
    emit(cli, &report, text_options(cli))
}

fn advise(cli: &Cli, src: &dyn StoreSource, args: &AdviseArgs) -> anyhow::Result<ExitCode> {
    let traces = args.trace.load()?;
    let roots = nix_heft::roots::resolve_roots(src, &args.roots)?;
    let g = load(cli, src, &roots)?;
    let closure_size = g.size_of(&g.closure_of(g.roots()));
    // Graph-first pruning: only referrers where some action could reach
    // --min-saving are read.
    let min_saving = args.min_saving.bytes_of(closure_size);
    let (mut wants, mut skipped, after_read) = prune(src, &g, min_saving);
    // A split simulated on a referrer read re-points its consumers at the
    // outputs their holds point into, so their holds into it are needed too.
    let consumers: Vec<(NodeId, NodeId)> = wants
        .keys()
        .flat_map(|&v| g.referrers(v).iter().map(move |&c| (c, v)))
        .collect();
    edges::want(&mut wants, consumers);
    let mut c = read_and_classify(cli, src, &g, &wants);
    if !c.paths.is_empty() && c.paths.values().all(|p| !p.available) {
        anyhow::bail!(
            "cannot advise from {}: it has no file contents, so no reference could be examined; \
             read the local store, a chroot store or a binary cache",
            src.describe()
        );
    }
    // A referrer whose tree came only with its NAR is judged now, by the
    // same bound: every source gives the same advice.
    let added = nix_heft::graph::bounds::max_savings(&g);
    for v in after_read {
        if let Some(t) = c.trees.get(&v) {
            let b = nix_heft::plan::prune::with_tree(&g, &added, v, t);
            if b < min_saving {
                skipped.push((v, b));
            }
        }
    }
    skipped.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    apply_traces(&g, &mut c, traces.as_ref());
    let (mut actions, sim_problems) =
        nix_heft::plan::advise::advise(&g, &c, traces.as_ref(), args.targets.as_deref());
    // A consumer read only for its holds into an examined referrer stays
    // unexamined: no advice on it (none could reach --min-saving anyway).
    let skipped_paths: std::collections::HashSet<String> = skipped
        .iter()
        .map(|&(v, _)| g.path(v).to_string())
        .collect();
    actions.retain(|a| !skipped_paths.contains(&a.package));
    let partitions: Vec<&nix_heft::plan::advise::Action> = actions
        .iter()
        .filter(|a| a.kind == nix_heft::plan::advise::ActionKind::PartitionTargets)
        .collect();
    if let Some(t) = &args.targets {
        for want in t {
            if !partitions.iter().any(|a| a.keeps.contains(want)) {
                return Err(nix_heft::Error::Usage(format!(
                    "--targets {want}: no per-target package in the closure has that target{}",
                    if partitions.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " (the partitions found keep {})",
                            partitions
                                .iter()
                                .map(|a| a.keeps.join(","))
                                .collect::<Vec<_>>()
                                .join("; ")
                        )
                    }
                ))
                .into());
            }
        }
    }
    let note = if partitions.is_empty() {
        None
    } else if let Some(t) = &args.targets {
        Some(format!("keeps {} (--targets)", t.join(", ")))
    } else if let Some(tr) = &traces
        && partitions
            .iter()
            .any(|a| a.snippet.contains("the targets the trace"))
    {
        Some(format!("keeps the targets the trace used ({})", tr.names()))
    } else {
        Some(format!(
            "keeps {}, the costliest single target; give --targets to choose",
            partitions
                .iter()
                .map(|a| a.keeps.join(","))
                .collect::<Vec<_>>()
                .join("; ")
        ))
    };
    let (plan, plan_problems) = nix_heft::plan::joint::plan(&g, &c, &actions, note);
    let mut problems = c.problems;
    problems.extend(sim_problems);
    problems.extend(plan_problems);
    let report = AdviceReport {
        roots: roots.iter().map(|r| r.to_string()).collect(),
        closure_size,
        actions,
        plan: Some(plan),
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
    let opts = TextOptions {
        every_line: args.all,
        ..text_options(cli)
    };
    emit(cli, &report, opts)
}

/// Graph-first pruning for `advise`: the edges to read, the referrers no
/// action on which can reach `min` (with their bounds), and the referrers
/// whose bound needs a tree the source gives only with the NAR (read in
/// full, judged after). See `nix_heft::plan::prune`.
fn prune(src: &dyn StoreSource, g: &Graph, min: u64) -> (Edges, Vec<(NodeId, u64)>, Vec<NodeId>) {
    use nix_heft::plan::prune::{FirstCut, first_cut, with_tree};
    let added = nix_heft::graph::bounds::max_savings(g);
    let mut wants = edges::all_edges(g);
    let mut skipped = Vec::new();
    let mut needs_tree = Vec::new();
    for &v in wants.keys() {
        match first_cut(g, &added, v, min) {
            FirstCut::Skip(b) => skipped.push((v, b)),
            FirstCut::Read => {}
            FirstCut::NeedsTree => needs_tree.push(v),
        }
    }
    let trees = nix_heft::read::cheap_trees(src, g, &needs_tree);
    let mut after_read = Vec::new();
    for v in needs_tree {
        match trees.get(&v) {
            Some(t) => {
                let b = with_tree(g, &added, v, t);
                if b < min {
                    skipped.push((v, b));
                }
            }
            None => after_read.push(v),
        }
    }
    for (v, _) in &skipped {
        wants.remove(v);
    }
    (wants, skipped, after_read)
}

fn diff(cli: &Cli, src: &dyn StoreSource, args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let (b_own, a_own) = (
        optional_store(cli, &args.before_store)?,
        optional_store(cli, &args.after_store)?,
    );
    let bsrc = b_own.as_deref().unwrap_or(src);
    let asrc = a_own.as_deref().unwrap_or(src);
    let broots = nix_heft::roots::resolve_roots(bsrc, std::slice::from_ref(&args.before))?;
    let aroots = nix_heft::roots::resolve_roots(asrc, std::slice::from_ref(&args.after))?;
    let pb = spinner(cli, "reading both closures");
    // The two sides are independent: load them at once.
    let (bg, ag) = rayon::join(
        || Graph::load(bsrc, &broots).context("loading BEFORE's closure"),
        || Graph::load(asrc, &aroots).context("loading AFTER's closure"),
    );
    pb.finish_and_clear();
    let (bg, ag) = (bg?, ag?);
    let d = nix_heft::plan::diff::diff(&bg, &ag);
    let (wb, wa) = d.wants();
    let cb = read_and_classify(cli, bsrc, &bg, &wb);
    let ca = read_and_classify(cli, asrc, &ag, &wa);
    let report = nix_heft::report::diff::DiffReport::new(&bg, &ag, d, cb, ca);
    emit(
        cli,
        &report,
        TextOptions {
            exact_bytes: args.bytes,
            ..text_options(cli)
        },
    )
}

/// The config file: `--config`, else `./nix-heft.toml` when present, else
/// none.
fn load_config(given: Option<&std::path::Path>) -> anyhow::Result<nix_heft::gate::Config> {
    let default = std::path::Path::new("nix-heft.toml");
    let file = match given {
        Some(f) => f,
        None if default.is_file() => default,
        None => return Ok(nix_heft::gate::Config::default()),
    };
    let text = std::fs::read_to_string(file).map_err(|source| nix_heft::Error::Io {
        path: file.to_path_buf(),
        source,
    })?;
    Ok(nix_heft::gate::Config::parse(file, &text)?)
}

/// A saved `nix-heft size --json` as a baseline.
fn baseline_file(file: &std::path::PathBuf) -> anyhow::Result<nix_heft::gate::Baseline> {
    let text = std::fs::read(file).map_err(|source| nix_heft::Error::Io {
        path: file.clone(),
        source,
    })?;
    let r: SizeReport =
        serde_json::from_slice(&text).map_err(|e| nix_heft::Error::BadBaseline {
            file: file.clone(),
            reason: format!("not the output of `nix-heft size --json`: {e}"),
        })?;
    Ok(nix_heft::gate::Baseline::from_sizes(
        file.display().to_string(),
        r.closure_size,
        r.path_count,
        r.paths.into_iter().map(|p| p.path),
    ))
}

fn check_main(cli: &Cli, args: &CheckArgs) -> anyhow::Result<ExitCode> {
    use nix_heft::gate::{Baseline, BaselineFrom, Config, Settings};
    use nix_heft::report::check::{CheckReport, Format};
    let config = load_config(args.config.as_deref())?;
    let format = match (&args.format, cli.json) {
        (Some(f), true) if f != "json" => {
            return Err(nix_heft::Error::Usage(format!(
                "--json and --format {f} disagree; give one"
            ))
            .into());
        }
        (Some(f), _) => Format::parse(f)?,
        (None, true) => Format::Json,
        (None, false) => Format::parse(config.format.as_deref().unwrap_or("text"))?,
    };
    let flags = Config {
        roots: args.roots.clone(),
        store: cli.store.clone(),
        max_closure: args.max_closure.clone(),
        max_growth: args.max_growth.clone(),
        against: args.against.clone(),
        against_json: args.against_json.clone(),
        forbid: args.forbid.clone(),
        forbid_verdict: args.forbid_verdict.clone(),
        format: args.format.clone(),
    };
    let settings = Settings::merge(config, flags, nix_heft::roots::glob)?;
    let saved = match &settings.baseline {
        Some(BaselineFrom::SizeJson(f)) => Some(baseline_file(f)?),
        _ => None,
    };
    let src = open_store(cli, settings.store.as_deref())?;
    let src = src.as_ref();
    let baseline = match &settings.baseline {
        Some(BaselineFrom::Root(a)) => {
            let r = nix_heft::roots::resolve_roots(src, std::slice::from_ref(a))?;
            Some(Baseline::from_graph(&load(cli, src, &r)?))
        }
        _ => saved,
    };
    let roots = nix_heft::roots::resolve_roots(src, &settings.roots)?;
    let g = load(cli, src, &roots)?;
    let forbidden: Vec<(String, NodeId)> = settings
        .rules
        .forbid
        .iter()
        .flat_map(|(pat, m)| {
            nix_heft::roots::matching_in_closure(&g, m)
                .into_iter()
                .map(move |v| (pat.clone(), v))
        })
        .collect();
    let prepared = nix_heft::gate::prepare(&g, &settings.rules, baseline.as_ref(), &forbidden);
    let c = if prepared.wants.is_empty() {
        Classified::default()
    } else {
        read_and_classify(cli, src, &g, &prepared.wants)
    };
    let mut problems = c.problems.clone();
    problems.extend(nix_heft::gate::unchecked(&g, &c, &prepared));
    let (actions, plan) = if prepared.needs_advice {
        let (a, p) = nix_heft::plan::advise::advise(&g, &c, None, None);
        problems.extend(p);
        let (plan, pp) = nix_heft::plan::joint::plan(&g, &c, &a, None);
        problems.extend(pp);
        (a, Some(plan))
    } else {
        (Vec::new(), None)
    };
    let violations = nix_heft::gate::check(
        &g,
        &c,
        &settings.rules,
        baseline.as_ref(),
        &prepared,
        &actions,
        plan.as_ref(),
    );
    let report = CheckReport {
        ok: violations.is_empty(),
        roots: roots.iter().map(|r| r.to_string()).collect(),
        closure_size: prepared.closure_size,
        baseline,
        rules: settings.shown,
        violations,
        problems,
    };
    let mut out = std::io::stdout().lock();
    match format {
        Format::Json => {
            serde_json::to_writer(&mut out, &report)?;
            writeln!(out)?;
        }
        Format::Text => out.write_all(report.render_text(&text_options(cli)).as_bytes())?,
        Format::Github => out.write_all(report.render_github().as_bytes())?,
        Format::Markdown => out.write_all(report.render_markdown().as_bytes())?,
    }
    out.flush()?;
    let partial = partial_code(report.problems());
    Ok(if report.ok {
        partial
    } else {
        ExitCode::from(EXIT_VIOLATION)
    })
}

/// Exit code when `--timeout` ended the trace before the first process
/// exited, as timeout(1) gives.
const EXIT_TIMEOUT: u8 = 124;

fn trace(cli: &Cli, args: &TraceArgs) -> anyhow::Result<ExitCode> {
    use nix_heft::trace::ptrace::Ended;
    let timeout = match args.timeout {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => {
            Some(std::time::Duration::from_secs_f64(s))
        }
        Some(s) => {
            return Err(nix_heft::Error::Usage(format!(
                "--timeout {s}: give a positive number of seconds"
            ))
            .into());
        }
    };
    // A --store given is opened first, so that a bad one fails before the
    // workload runs; the default local store is only needed for sizes.
    let given = match &cli.store {
        Some(s) => Some(source::open(Some(s))?),
        None => None,
    };
    let store_dir = given
        .as_ref()
        .map(|s| s.store_dir().to_string())
        .or_else(|| std::env::var("NIX_STORE_DIR").ok())
        .unwrap_or_else(|| "/nix/store".to_string());
    let (program, rest) = args
        .cmd
        .split_first()
        .ok_or_else(|| nix_heft::Error::Usage("no command to trace".into()))?;
    let cmd = nix_heft::trace::ptrace::Command {
        program: program.clone(),
        args: rest.to_vec(),
        timeout,
    };
    let traced = nix_heft::trace::trace(&cmd, &store_dir, args.env_note.clone())?;
    let json = serde_json::to_vec_pretty(&traced.trace)?;
    std::fs::write(&args.output, json)
        .with_context(|| format!("writing the trace to {}", args.output.display()))?;
    let out_name = args.output.display().to_string();
    match traced.ended {
        Ended::Signal(sig) => eprintln!(
            "nix-heft: {} was killed by {}; the partial trace is kept in {out_name}",
            traced.trace.command[0],
            sig.as_str()
        ),
        _ if traced.trace.timed_out => eprintln!(
            "nix-heft: --timeout reached: {} process{} still running were killed; the partial trace is kept in {out_name}",
            traced.killed_at_timeout,
            if traced.killed_at_timeout == 1 {
                ""
            } else {
                "es"
            }
        ),
        _ => {}
    }
    if traced.foreign_abi > 0 {
        eprintln!(
            "nix-heft: warning: {} process{} ran in another ABI (a 32-bit program?) and {} not traced; the trace is incomplete",
            traced.foreign_abi,
            if traced.foreign_abi == 1 { "" } else { "es" },
            if traced.foreign_abi == 1 {
                "was"
            } else {
                "were"
            }
        );
    }

    // The closure of the touched paths, for sizes and never-touched paths.
    let src = match given {
        Some(s) => Some(s),
        None => source::open(None).ok(),
    };
    let mut problems = Vec::new();
    let g = src.as_ref().and_then(|src| {
        let mut roots = Vec::new();
        for p in traced.trace.paths.keys() {
            match nix_heft::StorePath::parse(src.store_dir(), p) {
                Ok(sp) if src.is_valid(&sp).unwrap_or(false) => roots.push(sp),
                _ => problems.push(Problem::new(
                    p.clone(),
                    nix_heft::problem::ProblemKind::Unreadable,
                    format!("touched, but not a valid path in {}", src.describe()),
                )),
            }
        }
        Graph::load(src.as_ref(), &roots).ok()
    });
    let report =
        nix_heft::report::trace::TraceReport::new(&out_name, &traced.trace, g.as_ref(), problems);
    if cli.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        eprint!("{}", report.render_text(&TextOptions::default()));
    }
    Ok(match traced.ended {
        Ended::Code(c) => ExitCode::from(u8::try_from(c & 0xff).unwrap_or(1)),
        Ended::Signal(sig) => ExitCode::from(u8::try_from(128 + (sig as i32)).unwrap_or(1)),
        Ended::Running => ExitCode::from(EXIT_TIMEOUT),
    })
}

/// What `report` prints on standard output after writing the file.
#[derive(serde::Serialize)]
struct ReportWritten {
    output: String,
    bytes: usize,
    paths: usize,
    edges_with_evidence: usize,
    advice: usize,
    evidence: nix_heft::report::html::EvidenceState,
    /// With --diff: paths new since BEFORE.
    #[serde(skip_serializing_if = "Option::is_none")]
    added: Option<usize>,
    /// With --diff: BEFORE's paths that left.
    #[serde(skip_serializing_if = "Option::is_none")]
    removed: Option<usize>,
}

fn report(cli: &Cli, src: &dyn StoreSource, args: &ReportArgs) -> anyhow::Result<ExitCode> {
    use nix_heft::report::html::{EvidenceState, HtmlReport};
    // Checked here: clap waives `requires` on "diff" when ROOTs, which
    // conflict with it, are given.
    if args.diff.is_none() && (args.before_store.is_some() || args.after_store.is_some()) {
        return Err(nix_heft::Error::Usage(
            "--before-store and --after-store go with --diff BEFORE AFTER; give --store for ROOT"
                .into(),
        )
        .into());
    }
    let traces = args.trace.load()?;
    let (b_own, a_own) = (
        optional_store(cli, &args.before_store)?,
        optional_store(cli, &args.after_store)?,
    );
    let bsrc = b_own.as_deref().unwrap_or(src);
    // With --diff the page is AFTER's closure, read from AFTER's store.
    let src = a_own.as_deref().unwrap_or(src);
    let (g, before) = match args.diff.as_deref() {
        Some([before, after]) => {
            let broots = nix_heft::roots::resolve_roots(bsrc, std::slice::from_ref(before))?;
            let aroots = nix_heft::roots::resolve_roots(src, std::slice::from_ref(after))?;
            let pb = spinner(cli, "reading both closures");
            let (bg, ag) = rayon::join(
                || Graph::load(bsrc, &broots).context("loading BEFORE's closure"),
                || Graph::load(src, &aroots).context("loading AFTER's closure"),
            );
            pb.finish_and_clear();
            (ag?, Some(bg?))
        }
        _ => {
            let roots = nix_heft::roots::resolve_roots(src, &args.roots)?;
            (load(cli, src, &roots)?, None)
        }
    };
    let (c, actions, plan_saving, problems) = if args.no_evidence {
        (None, Vec::new(), None, Vec::new())
    } else {
        let mut c = read_and_classify(cli, src, &g, &edges::all_edges(&g));
        let readable = c.paths.values().any(|p| p.available);
        apply_traces(&g, &mut c, traces.as_ref());
        let (actions, sim_problems) = if readable {
            nix_heft::plan::advise::advise(&g, &c, traces.as_ref(), None)
        } else {
            (Vec::new(), Vec::new())
        };
        let mut problems = c.problems.clone();
        problems.extend(sim_problems);
        // The total is advise's joint plan: every non-breaking action
        // applied together, each path counted once.
        let plan_saving = readable.then(|| {
            let (plan, pp) = nix_heft::plan::joint::plan(&g, &c, &actions, None);
            problems.extend(pp);
            plan.closure_before.saturating_sub(plan.closure_after)
        });
        (Some(c), actions, plan_saving, problems)
    };
    let mut model = HtmlReport::new(
        &g,
        src.describe(),
        c.as_ref(),
        actions,
        plan_saving,
        problems,
    );
    model.traces = traces.as_ref().map(|t| t.names());
    if let Some(bg) = before {
        let d = nix_heft::plan::diff::diff(&bg, &g);
        // BEFORE is read only for the edges that held the paths that
        // left; the page's own evidence explains the new ones.
        let cb = if args.no_evidence {
            Classified::default()
        } else {
            read_and_classify(cli, bsrc, &bg, &d.wants().0)
        };
        let dr = nix_heft::report::diff::DiffReport::new(&bg, &g, d, cb, Classified::default());
        model.set_diff(&g, dr);
    }
    let html = model.render_html();
    let shown = if args.output.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(html.as_bytes())?;
        out.flush()?;
        "-".to_string()
    } else {
        // Written beside the target and renamed, so a failed run never
        // leaves half a report where the last one was.
        let dir = match args.output.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        let mut tmp = tempfile::NamedTempFile::new_in(&dir)
            .with_context(|| format!("creating a file in {}", dir.display()))?;
        tmp.write_all(html.as_bytes())
            .with_context(|| format!("writing {}", args.output.display()))?;
        // A report is for sharing: readable by all, as files written
        // without a temporary would be (tempfile creates them 0600).
        {
            use std::os::unix::fs::PermissionsExt;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644))?;
        }
        tmp.persist(&args.output)
            .with_context(|| format!("writing {}", args.output.display()))?;
        args.output.display().to_string()
    };
    let written = ReportWritten {
        output: shown,
        bytes: html.len(),
        paths: model.paths.len(),
        edges_with_evidence: model
            .edges
            .iter()
            .filter(|e| !e.evidence.is_empty())
            .count(),
        advice: model.advice.len(),
        evidence: model.evidence_state,
        added: model.diff.as_ref().map(|d| d.added.len()),
        removed: model.diff.as_ref().map(|d| d.removed.len()),
    };
    if args.output.as_os_str() != "-" {
        let mut out = std::io::stdout().lock();
        if cli.json {
            serde_json::to_writer(&mut out, &written)?;
            writeln!(out)?;
        } else {
            writeln!(
                out,
                "wrote {} ({}, {} paths, {}{} edges with evidence, {} actions{})",
                written.output,
                nix_heft::units::iec(written.bytes as u64),
                written.paths,
                match (written.added, written.removed) {
                    (Some(a), Some(r)) => format!("{a} added, {r} removed, "),
                    _ => String::new(),
                },
                written.edges_with_evidence,
                written.advice,
                match written.evidence {
                    EvidenceState::Unavailable => ", evidence unavailable",
                    EvidenceState::Partial => ", evidence partial",
                    EvidenceState::Available => "",
                }
            )?;
        }
    }
    Ok(partial_code(&model.problems))
}

fn completions(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    use clap::CommandFactory;
    let shell = match args.shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    let mut out = std::io::stdout().lock();
    clap_complete::generate(shell, &mut Cli::command(), "nix-heft", &mut out);
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn man() -> anyhow::Result<ExitCode> {
    use clap::CommandFactory;
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn browse(
    cli: &Cli,
    src: std::sync::Arc<dyn StoreSource>,
    args: &BrowseArgs,
) -> anyhow::Result<ExitCode> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(nix_heft::Error::Usage(
            "browse needs a terminal; use size, refs or report when piped".into(),
        )
        .into());
    }
    let roots = nix_heft::roots::resolve_roots(src.as_ref(), &args.roots)?;
    let g = load(cli, src.as_ref(), &roots)?;
    let no_color = matches!(cli.color, Color::Never)
        || (matches!(cli.color, Color::Auto)
            && std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()));
    let g = Arc::new(g);
    let progress = Arc::new(AtomicU64::new(0));
    let wants = edges::all_edges(&g);
    let total: u64 = if args.no_evidence {
        0
    } else {
        wants
            .iter()
            .filter(|(_, t)| !t.is_empty())
            .map(|(&v, _)| g.nar_size(v))
            .sum()
    };
    let (tx, rx) = std::sync::mpsc::channel();
    if args.no_evidence {
        let _ = tx.send(nix_heft::browse::Loaded::default());
    } else {
        // Detached: quitting never waits for the read to finish.
        let (g2, src2, p2) = (Arc::clone(&g), Arc::clone(&src), Arc::clone(&progress));
        std::thread::spawn(move || {
            let reads = nix_heft::read::read(src2.as_ref(), &g2, &wants, &|n| {
                p2.fetch_add(n, Ordering::Relaxed);
            });
            let c = classify(&g2, reads);
            let available = c.paths.values().any(|p| p.available);
            let (actions, sim) = if available {
                nix_heft::plan::advise::advise(&g2, &c, None, None)
            } else {
                (Vec::new(), Vec::new())
            };
            let problems = c.problems.len() + sim.len();
            let _ = tx.send(nix_heft::browse::Loaded {
                classified: c,
                actions,
                problems,
                available,
            });
        });
    }
    // Closure sizes on their own thread: the first screen needs only self
    // and added sizes.
    let (ctx, crx) = std::sync::mpsc::channel();
    let g3 = Arc::clone(&g);
    std::thread::spawn(move || {
        let _ = ctx.send(nix_heft::graph::closure_sizes(&g3));
    });
    let feeds = nix_heft::browse::term::Feeds {
        closure: crx,
        evidence: rx,
        progress: &progress,
        total,
    };
    nix_heft::browse::term::run(&g, feeds, no_color)?;
    print_warnings(src.as_ref());
    Ok(ExitCode::SUCCESS)
}
