//! The `nix-heft` command: parses flags, calls the library, prints.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use nix_heft::graph::Graph;
use nix_heft::report::size::{SizeOptions, SizeReport, SortKey};
use nix_heft::source::{self, StoreSource};

/// Why is a Nix closure heavy, and how to cut it.
#[derive(Parser, Debug)]
#[command(name = "nix-heft", version, about, long_about = None)]
struct Cli {
    /// Store to read: `local` (default), a chroot store root directory or
    /// `local?root=DIR`, a binary cache (`file:///path` or a directory with
    /// nix-cache-info), or a file of `nix path-info --json` output.
    #[arg(long, global = true, value_name = "STORE")]
    store: Option<String>,
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
}

#[derive(Args, Debug)]
struct SizeArgs {
    /// Roots: store paths, paths inside them, symlinks like ./result, or
    /// package names and globs (`llama-cpp-rocm`, `rocm-llvm*`).
    #[arg(required = true, value_name = "ROOT")]
    roots: Vec<String>,
    /// Order of the table (largest first, except name).
    #[arg(long, value_enum, default_value_t = SortKey::Added)]
    sort: SortKey,
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
            ExitCode::from(1)
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let src = source::open(cli.store.as_deref())?;
    match &cli.command {
        Command::Size(args) => size(cli, src.as_ref(), args),
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

fn size(cli: &Cli, src: &dyn StoreSource, args: &SizeArgs) -> anyhow::Result<ExitCode> {
    let roots = nix_heft::roots::resolve_roots(src, &args.roots)?;
    let pb = spinner(cli, &format!("reading closure from {}", src.describe()));
    let g = Graph::load(src, &roots).context("loading the closure")?;
    pb.set_message(format!("sizing {} paths", g.len()));
    let report = SizeReport::compute(
        &g,
        SizeOptions {
            sort: args.sort,
            top: args.top,
            references: args.references,
        },
    );
    pb.finish_and_clear();
    print_warnings(src);
    let mut out = std::io::stdout().lock();
    if cli.json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        out.write_all(report.render(args.bytes).as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}
