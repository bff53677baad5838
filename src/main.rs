//! The `nix-heft` command: the global flags, the subcommands, parsing and
//! dispatch. What each command does is in its own file under `commands/`.

mod advice;
mod browse_terminal;
mod commands;
mod config_file;
mod parse_error;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Why is a Nix closure heavy, and how to cut it.
#[derive(Parser, Debug)]
#[command(
    name = "nix-heft",
    version,
    about,
    long_about = None,
    next_help_heading = "Global options",
)]
struct Cli {
    /// Store to read: `local` (default), a chroot store root directory or
    /// `local?root=DIR`, a binary cache (`file:///path` or a directory with
    /// nix-cache-info, or `http://…` / `https://…`), or a file of
    /// `nix path-info --json` output. Given several times, the stores are
    /// read as one, as Nix reads its substituters: each path from the first
    /// store, in the order given, that holds it (name `local` first to have
    /// the local store asked before caches).
    #[arg(long, global = true, value_name = "STORE")]
    store: Vec<String>,
    /// Stores asked after those of `--store`, space-separated, in Nix's
    /// spelling (`--substituters 'https://a https://b'`); `auto` is
    /// nix.conf's `substituters` and `extra-substituters`, ordered by each
    /// cache's `Priority` as Nix orders them. The local store is only read
    /// when `--store local` names it.
    #[arg(long, global = true, value_name = "URLS", value_hint = clap::ValueHint::Other)]
    substituters: Option<String>,
    /// End text output with which store each path shown came from, and the
    /// key that signed its narinfo (`--json` always says, in `origins`).
    #[arg(long, global = true)]
    show_store: bool,
    /// netrc file with credentials for HTTP caches (default: nix.conf's
    /// `netrc-file`, then ~/.netrc).
    #[arg(long, global = true, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    netrc_file: Option<std::path::PathBuf>,
    /// Public keys whose signatures make a binary cache's narinfo trusted,
    /// space-separated `NAME:BASE64` as `nix-store
    /// --generate-binary-cache-key` writes them (default: nix.conf's
    /// `trusted-public-keys` and `extra-trusted-public-keys`, which Nix
    /// starts from cache.nixos.org's key). Local stores need none.
    #[arg(long, global = true, value_name = "KEYS", value_hint = clap::ValueHint::Other)]
    trusted_public_keys: Option<String>,
    /// Accept narinfos of binary caches without a valid signature by a
    /// trusted key, with one warning (as nix.conf's `require-sigs = false`).
    /// By default they are refused, as Nix refuses them.
    #[arg(long, global = true)]
    no_require_sigs: bool,
    /// Requests in flight at once to an HTTP cache, as Nix's
    /// `http-connections` (default: nix.conf's `http-connections`, else 25, Nix's;
    /// 0 means no limit, capped at 256). Narinfos are fetched as a work
    /// queue: each path's references are asked for as soon as it arrives.
    /// Over https they are HTTP/2 streams where the server offers HTTP/2,
    /// one connection per 64; otherwise one HTTP/1.1 connection each.
    #[arg(long, global = true, value_name = "N", value_hint = clap::ValueHint::Other)]
    http_connections: Option<usize>,
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
    /// Colour the text output: `auto` on a terminal unless NO_COLOR is set
    /// (or TERM is dumb); `always` even when piped or NO_COLOR is set.
    #[arg(long, global = true, value_enum, default_value_t = commands::Color::Auto)]
    color: commands::Color,
    #[command(flatten)]
    installables: commands::installables::InstallableFlags,
    #[command(subcommand)]
    command: Command,
}

/// The subcommands; each one's help is the doc comment of its Args
/// struct, beside the command (src/commands/NAME.rs).
#[derive(Subcommand, Debug)]
enum Command {
    Size(commands::size::SizeArgs),
    Why(commands::why::WhyArgs),
    Refs(commands::refs::RefsArgs),
    Refused(commands::refused::RefusedArgs),
    Split(commands::split::SplitArgs),
    Partition(commands::partition::PartitionArgs),
    Advise(commands::advise::AdviseArgs),
    Diff(commands::diff::DiffArgs),
    Check(commands::check::CheckArgs),
    Impact(Box<commands::impact::ImpactArgs>),
    History(commands::history::HistoryArgs),
    Bisect(commands::bisect::BisectArgs),
    Trace(commands::trace::TraceArgs),
    Report(commands::report::ReportArgs),
    Roots(commands::roots::RootsArgs),
    Browse(commands::browse::BrowseArgs),
    Completions(commands::completions::CompletionsArgs),
    Man(commands::man::ManArgs),
}

/// The command line as clap sees it: the derived one, with the exit codes
/// after `--help` and `man`'s COMMAND
/// limited to the subcommands that have a page, so that clap rejects any
/// other as it rejects a bad value (exit 2, listing them) and completions
/// offer them. The list cannot be written in the derive: it is the enum the
/// derive is defining.
fn command() -> clap::Command {
    // The exit codes from their one table.
    let cli = Cli::command().after_help(nix_heft_types::exit::paragraph());
    let names: Vec<String> = cli
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name().to_string())
        .collect();
    cli.mut_subcommand("man", |man| {
        man.mut_arg("command", |a| {
            a.value_parser(clap::builder::PossibleValuesParser::new(names))
        })
    })
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // For messages only: clap parses the arguments as given.
    let argv: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut cmd = command();
    // Built, so that each subcommand holds the global flags too (the
    // typo tips weigh them after its own).
    cmd.build();
    let mut matches = cmd
        .clone()
        .try_get_matches_from(&args)
        .unwrap_or_else(|e| parse_error::exit(e, &cmd, &argv));
    // `check`'s config file: its keys are flags, parsed with the others.
    match config_file::arguments(&cmd, &args, &matches) {
        Ok(None) => {}
        Ok(Some(with_file)) => {
            matches = cmd
                .clone()
                .try_get_matches_from(&with_file)
                .unwrap_or_else(|e| parse_error::exit(e, &cmd, &argv));
        }
        Err(e) => {
            let f = nix_heft_types::error::failure(&e, &advice::judge);
            eprint!("{}", f.message("nix-heft"));
            return ExitCode::from(f.code);
        }
    }
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| parse_error::exit(e, &cmd, &argv));
    let ctx = context(&cli, &matches);
    match run(&cli, &ctx) {
        Ok(code) => code,
        Err(e) => {
            // What the stores said before the failure, then the failure:
            // the library says what to print; printing is the program's.
            ctx.finish(&[]);
            let f = nix_heft_types::error::failure(e.as_ref(), &advice::judge);
            eprint!("{}", f.message("nix-heft"));
            ExitCode::from(f.code)
        }
    }
}

/// The global flags as every command sees them.
fn context(cli: &Cli, matches: &clap::ArgMatches) -> commands::Context {
    commands::Context {
        store: cli.store.first().cloned(),
        opener: nix_heft_store::open::Opener::new(nix_heft_store::open::StoreSpec {
            stores: cli.store.clone(),
            substituters: cli.substituters.clone(),
            trusted_public_keys: cli.trusted_public_keys.clone(),
            no_require_sigs: cli.no_require_sigs,
            options: nix_heft_store::source::OpenOptions {
                netrc_file: cli.netrc_file.clone(),
                refresh: cli.refresh,
                verify: cli.verify,
                http_connections: cli
                    .http_connections
                    .or_else(nix_heft_format::nix_conf::http_connections),
                ..Default::default()
            },
        }),
        show_store: cli.show_store,
        json: cli.json,
        color: cli.color,
        installables: cli.installables.options(matches),
        derivation: false,
        mapped: Default::default(),
        log: Default::default(),
    }
}

/// Runs the subcommand; each opens the store it needs (none for
/// `completions` and `man`, `check` may take it from its config file).
fn run(cli: &Cli, ctx: &commands::Context) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Size(args) => commands::size::run(ctx, args),
        Command::Why(args) => commands::why::run(ctx, args),
        Command::Refs(args) => commands::refs::run(ctx, args),
        Command::Refused(args) => commands::refused::run(ctx, args),
        Command::Split(args) => commands::split::run(ctx, args),
        Command::Partition(args) => commands::partition::run(ctx, args),
        Command::Advise(args) => commands::advise::run(ctx, args),
        Command::Diff(args) => commands::diff::run(ctx, args),
        Command::Check(args) => commands::check::run(ctx, args),
        Command::Impact(args) => commands::impact::run(ctx, args),
        Command::History(args) => commands::history::run(ctx, args),
        Command::Bisect(args) => commands::bisect::run(ctx, args),
        Command::Trace(args) => commands::trace::run(ctx, args),
        Command::Report(args) => commands::report::run(ctx, args),
        Command::Browse(args) => commands::browse::run(ctx, args),
        Command::Roots(args) => commands::roots::run(ctx, args),
        Command::Completions(args) => commands::completions::completions(args, command()),
        Command::Man(args) => commands::man::run(args, command()),
    }
}

#[cfg(test)]
mod tests {
    /// clap's own consistency checks (names, conflicts, value parsers) on
    /// the command line as it is run, `man`'s COMMAND values included.
    #[test]
    fn command_line_is_consistent() {
        super::command().debug_assert();
    }
}
