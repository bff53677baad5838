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
    installables: InstallableFlags,
    #[command(subcommand)]
    command: Command,
}

/// How ROOT arguments that are installables are evaluated; passed through
/// to the user's `nix`, which evaluates them (nothing is built).
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Global options: installables (evaluated by nix, never built)")]
struct InstallableFlags {
    /// Every ROOT is an attribute path of this Nix file (or `<nixpkgs>`),
    /// as `nix build -f FILE ATTR` takes it; `.` is the file's value.
    #[arg(
        short = 'f',
        long = "file",
        global = true,
        value_name = "FILE",
        value_hint = clap::ValueHint::FilePath
    )]
    file: Option<String>,
    /// Every ROOT is an attribute path of this Nix expression's value
    /// (`.` for the value itself).
    #[arg(
        long,
        global = true,
        value_name = "EXPR",
        conflicts_with = "file",
        value_hint = clap::ValueHint::Other
    )]
    expr: Option<String>,
    /// Let `nix` evaluate impurely (`--impure`).
    #[arg(long, global = true)]
    impure: bool,
    /// Override a flake input when evaluating (`nix --override-input`);
    /// repeatable.
    #[arg(
        long,
        global = true,
        num_args = 2,
        value_names = ["INPUT", "FLAKEREF"],
        action = clap::ArgAction::Append
    )]
    override_input: Vec<String>,
    /// A Nix setting for the evaluation (`nix --option NAME VALUE`);
    /// repeatable.
    #[arg(
        long,
        global = true,
        num_args = 2,
        value_names = ["NAME", "VALUE"],
        action = clap::ArgAction::Append
    )]
    option: Vec<String>,
    /// An argument for the function the Nix file (or an attribute on the
    /// way to a ROOT) is, as a Nix expression (`nix --arg NAME EXPR`);
    /// repeatable.
    #[arg(
        long = "arg",
        global = true,
        num_args = 2,
        value_names = ["NAME", "EXPR"],
        action = clap::ArgAction::Append
    )]
    arg: Vec<String>,
    /// An argument for that function, as a string (`nix --argstr NAME
    /// STRING`); repeatable.
    #[arg(
        long,
        global = true,
        num_args = 2,
        value_names = ["NAME", "STRING"],
        action = clap::ArgAction::Append
    )]
    argstr: Vec<String>,
    /// Add PATH, or NAME=PATH, to the search path of `<NAME>` lookups,
    /// before NIX_PATH (`nix -I`); repeatable.
    #[arg(
        short = 'I',
        long = "include",
        global = true,
        value_name = "PATH",
        action = clap::ArgAction::Append
    )]
    include: Vec<String>,
    /// Show Nix's whole evaluation trace when evaluating a ROOT fails
    /// (`nix --show-trace`).
    #[arg(long, global = true)]
    show_trace: bool,
}

impl InstallableFlags {
    /// The options for `nix`; `matches` gives the order in which `--arg`
    /// and `--argstr` came, which Nix keeps (the last of a name wins).
    fn options(&self, matches: &clap::ArgMatches) -> nix_heft_eval::installable::Options {
        use nix_heft_eval::installable::AutoArg;
        let pairs = |v: &[String]| {
            v.chunks_exact(2)
                .map(|c| (c[0].clone(), c[1].clone()))
                .collect::<Vec<_>>()
        };
        // Each pair's position on the command line: the index of its NAME.
        let at = |id: &str| -> Vec<usize> {
            matches
                .indices_of(id)
                .map(|i| i.step_by(2).collect())
                .unwrap_or_default()
        };
        let mut auto_args: Vec<(usize, String, AutoArg)> = Vec::new();
        for ((n, v), i) in pairs(&self.arg).into_iter().zip(at("arg")) {
            auto_args.push((i, n, AutoArg::Expr(v)));
        }
        for ((n, v), i) in pairs(&self.argstr).into_iter().zip(at("argstr")) {
            auto_args.push((i, n, AutoArg::Str(v)));
        }
        auto_args.sort_by_key(|(i, _, _)| *i);
        nix_heft_eval::installable::Options {
            file: self.file.clone(),
            expr: self.expr.clone(),
            impure: self.impure,
            override_inputs: pairs(&self.override_input),
            options: pairs(&self.option),
            auto_args: auto_args.into_iter().map(|(_, n, v)| (n, v)).collect(),
            include: self.include.clone(),
            show_trace: self.show_trace,
            ..Default::default()
        }
    }
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
    Size(commands::size::SizeArgs),
    /// The chains from ROOT to DEP, and for every edge on them the files
    /// that hold the reference: where, and what kind of hold (symlink, ELF
    /// RUNPATH / NEEDED / interpreter / string, shebang, text ...).
    Why(commands::why::WhyArgs),
    /// For every reference edge in the closure of the roots, the kinds of
    /// hold and the files holding it, from one scan of the whole closure.
    Refs(commands::refs::RefsArgs),
    /// Why Nix refuses a build's output: each path a check
    /// (disallowedReferences, disallowedRequisites, allowedReferences,
    /// allowedRequisites; `[ ]` included; per output in outputChecks)
    /// forbids, with every file that holds it (offset of the hash, kind,
    /// verdict), the chain for a requisite and a fix that passes; and
    /// outputs that refer to each other ("cycle detected"), both
    /// directions with their files. On a derivation or one of its outputs
    /// after a failed build (its outputs where Nix left them), on Nix's
    /// error text (--log), or inside the build through the setup hook
    /// (--in-build). Exit code 4 with --fail when something is refused.
    Refused(commands::refused::RefusedArgs),
    /// What-if: split PATH into outputs (like moveToOutput) without
    /// rebuilding, and show each output's files, size, closure and
    /// references, and each root's closure before and after.
    Split(commands::split::SplitArgs),
    /// What-if: group PATH's files by a regex capture (e.g. a GPU target)
    /// and show what each group costs, or the closure with only some kept.
    Partition(commands::partition::PartitionArgs),
    /// Ranked actions that shrink the closure of the roots, each with the
    /// saving computed by applying it to the graph, its evidence, its safety
    /// and the nixpkgs snippet that applies it.
    Advise(commands::advise::AdviseArgs),
    /// What changed between two closures, per package (versions and size,
    /// like `nix store diff-closures`) and per path, with the referrer and
    /// files that pulled in each new path or held each path that left.
    ///
    /// When GITHUB_STEP_SUMMARY names a file (as in a GitHub Actions step),
    /// the markdown report is also appended to it, whatever --format or
    /// --json prints on standard output: the job summary is for people
    /// reading the run, the JSON for the next step.
    Diff(commands::diff::DiffArgs),
    /// A closure-size gate for CI: a budget, a growth limit against a
    /// baseline, forbidden paths and forbidden verdicts, each violation
    /// explained. Exit code 4 when a rule is broken.
    ///
    /// When GITHUB_STEP_SUMMARY names a file (as in a GitHub Actions step),
    /// the markdown verdict is also appended to it, whatever --format or
    /// --json prints on standard output: the job summary is for people
    /// reading the run, the JSON for the next step.
    Check(commands::check::CheckArgs),
    /// The closure impact of a change to a package set (a nixpkgs pull
    /// request): for every attribute it changes (or each --attr), its
    /// closure before and after, the difference and why (each package's
    /// net change, the changes in several attributes said once), and which
    /// attributes the change breaks or fixes the evaluation of; the base
    /// read from a binary cache, the head from the local store or a
    /// nixpkgs-review directory (any version's). Nothing is built: an
    /// attribute a side lacks is "not built", with the command that builds
    /// it. Exit code 4 when an attribute breaks --max-growth, --max-closure,
    /// --max-output or --forbid; 1 when rules were given and no attribute
    /// could be measured; 2 for a revision, checkout or --attr that names
    /// nothing.
    ///
    /// When GITHUB_STEP_SUMMARY names a file, the markdown report is also
    /// appended to it, as diff's and check's are.
    Impact(Box<commands::impact::ImpactArgs>),
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
    Trace(commands::trace::TraceArgs),
    /// One self-contained HTML file: a treemap of the closure by added
    /// size (following the dominator tree), each path's sizes, referrers,
    /// references and every edge's evidence, the advice, search and a
    /// sortable table. Opens from disk; no network.
    Report(commands::report::ReportArgs),
    /// What removing each garbage-collector root of a local or chroot
    /// store would free, exactly as Nix's collector counts it: every root
    /// (links in gcroots and profiles, result links, generations, run-time
    /// and temporary roots) with where it is, what it keeps, its age, its
    /// closure and what removing it alone frees; stale links; groups
    /// removed together (a profile's old generations, result links, direnv
    /// roots, roots older than --older-than), counted jointly; what is dead
    /// now; and the commands that do it. Honours nix.conf's keep-outputs
    /// and keep-derivations (and --option). Reads only: nix-heft deletes
    /// nothing.
    Roots(commands::roots::RootsArgs),
    /// Browse the closure in the terminal (like nix-tree): referrers |
    /// references | details; sizes at once, evidence filling in from a
    /// background read; `w` why-chains with the files holding each edge,
    /// `a` advice, `y` copy, `?` help.
    Browse(commands::browse::BrowseArgs),
    /// Print a shell completion script (bash, zsh or fish) on standard output.
    Completions(commands::completions::CompletionsArgs),
    /// Print the manual page (roff) of nix-heft, or of COMMAND
    /// (`nix-heft-COMMAND(1)`), on standard output.
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
            let f = nix_heft_types::error::failure(&e, &advice::advice);
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
            let f = nix_heft_types::error::failure(e.as_ref(), &advice::advice);
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
                http_connections: cli.http_connections.or_else(http_connections_from_nix_conf),
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
        Command::Trace(args) => commands::trace::run(ctx, args),
        Command::Report(args) => commands::report::run(ctx, args),
        Command::Browse(args) => commands::browse::run(ctx, args),
        Command::Roots(args) => commands::roots::run(ctx, args),
        Command::Completions(args) => commands::completions::completions(args, command()),
        Command::Man(args) => commands::man::run(args, command()),
    }
}

/// nix.conf's `http-connections` (Nix's setting, which `--http-connections`
/// overrides), when it is set to a number. A configuration that cannot be
/// read, or another value, leaves the default: the commands that need
/// nix.conf say what is wrong with it.
fn http_connections_from_nix_conf() -> Option<usize> {
    let conf = nix_heft_format::nix_conf::NixConf::load(
        &nix_heft_format::nix_conf::ConfEnv::from_process(),
    )
    .ok()?;
    conf.get("http-connections")?.trim().parse().ok()
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
