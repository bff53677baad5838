//! `nix-heft man [COMMAND]`: the manual pages, `nix-heft(1)` and one
//! `nix-heft-COMMAND(1)` per subcommand, generated from the clap
//! definitions with clap_mangen; no store is opened. Each page adds what
//! clap does not know: EXIT STATUS and ENVIRONMENT (the variables
//! nix-heft reads, each on the pages of the commands that read it), and a
//! subcommand's SEE ALSO.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use clap_mangen::roff::{Inline, Roff, bold, italic, roman};

/// Print the manual page (roff) of nix-heft, or of COMMAND
/// (`nix-heft-COMMAND(1)`), on standard output.
#[derive(Args, Debug)]
pub struct ManArgs {
    /// The subcommand whose page to print (`nix-heft-COMMAND(1)`); without
    /// it, the page of nix-heft itself.
    #[arg(value_name = "COMMAND")]
    command: Option<String>,
    /// Write every page (nix-heft.1 and nix-heft-COMMAND.1 for each
    /// subcommand) into DIR instead of printing one, as a package installs
    /// them.
    #[arg(long, value_name = "DIR", conflicts_with = "command", value_hint = clap::ValueHint::DirPath)]
    out_dir: Option<PathBuf>,
}

/// `cli` (the whole command line) ready for clap_mangen: without the
/// `help` subcommand, which has no page of its own (the main page would
/// otherwise name a `nix-heft-help(1)` that does not exist), and built, so
/// that each subcommand carries the global flags and its display name
/// `nix-heft-COMMAND`.
fn prepared(cli: clap::Command) -> clap::Command {
    let mut cli = cli.disable_help_subcommand(true);
    cli.build();
    cli
}

/// The subcommands that get a page: those the main page lists.
fn paged(cli: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cli.get_subcommands().filter(|s| !s.is_hide_set())
}

/// Prints the page asked for, or writes them all with `--out-dir`.
pub fn run(args: &ManArgs, cli: clap::Command) -> anyhow::Result<ExitCode> {
    let cli = prepared(cli);
    if let Some(dir) = &args.out_dir {
        write_all(&cli, dir)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    match &args.command {
        None => render(&cli, None, &mut out)?,
        Some(name) => {
            let Some(sub) = paged(&cli).find(|s| s.get_name() == name) else {
                // clap already refuses such a COMMAND (main.rs gives it the
                // names); this stays a usage error naming them should a
                // caller pass another command line.
                let names: Vec<&str> = paged(&cli).map(|s| s.get_name()).collect();
                return Err(nix_heft_types::Error::Usage(format!(
                    "no manual page for '{name}'; the commands are: {}",
                    names.join(", ")
                ))
                .into());
            };
            render(sub, Some(&cli), &mut out)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The page of `cmd`, a subcommand of `parent` or (`None`) the main command.
fn page(cmd: &clap::Command, parent: Option<&clap::Command>) -> clap_mangen::Man {
    let man = clap_mangen::Man::new(cmd.clone());
    match parent {
        // clap_mangen would write the subcommand's bare name as the source
        // in the title line; the program and its version belong there.
        Some(p) => man.source(format!(
            "{} {}",
            p.get_name(),
            p.get_version().unwrap_or_default()
        )),
        None => man,
    }
}

/// The environment variables nix-heft reads (each `std::env::var` of the
/// crate but the test suite's hooks, `NIX_HEFT_TEST_*`, and reqwest's
/// proxy variables), the commands that read them (`None`: every one that
/// reads a store), and what they do.
const ENVIRONMENT: &[(&str, Option<&[&str]>, &str)] = &[
    (
        "NIX_CONFIG, NIX_CONF_DIR, NIX_USER_CONF_FILES, XDG_CONFIG_HOME, XDG_CONFIG_DIRS",
        None,
        "Where nix.conf is, and extra settings, as Nix 2.8 reads them: substituters (--substituters \
         auto), trusted-public-keys, require-sigs, netrc-file, http-connections, and the collector's \
         keep-outputs and keep-derivations (roots, why --roots).",
    ),
    (
        "HOME",
        None,
        "~/.config/nix/nix.conf, ~/.netrc and ~/.cache when the XDG variables are not set.",
    ),
    (
        "XDG_CACHE_HOME",
        None,
        "The local cache of HTTP caches' narinfos, listings and reads: \
         $XDG_CACHE_HOME/nix-heft (else ~/.cache/nix-heft).",
    ),
    (
        "NIX_HEFT_CACHE_MAX",
        None,
        "The local cache's bound in bytes (default 1 GiB); past it the oldest entries are removed.",
    ),
    (
        "NIX_HEFT_HTTP_TIMEOUT",
        None,
        "Seconds before a connection attempt or a read of an HTTP cache times out (default 30).",
    ),
    (
        "NIX_SSL_CERT_FILE, SSL_CERT_FILE",
        None,
        "A PEM bundle of the certificate authorities HTTPS caches are checked against, as Nix \
         reads it (the first set); else the bundled Mozilla roots.",
    ),
    (
        "HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY (or lower case)",
        None,
        "The proxy for HTTP caches, as curl (and so Nix) reads them.",
    ),
    (
        "NIX_HEFT_VERIFY",
        None,
        "0 turns off checking downloaded NARs against their narinfo (to measure what it costs).",
    ),
    (
        "NIX_HEFT_TABLE_SCAN_AT",
        None,
        "How many paths of a closure make the local store read whole tables instead of path by \
         path (default: an eighth of the store, at least 20000); roots an eighth of that many \
         are read by whole tables from the start.",
    ),
    (
        "PATH",
        None,
        "Where nix (for installables), nix-store and, for trace, CMD are found. The nix that \
         evaluates an installable runs with this environment: NIX_PATH is its search path for \
         <NAME>, after -I.",
    ),
    (
        "NO_COLOR",
        None,
        "Set and not empty: no colour with --color auto; --color always colours all the same.",
    ),
    (
        "TERM",
        None,
        "dumb: no colour with --color auto, no spinner while nix evaluates.",
    ),
    (
        "COLUMNS",
        None,
        "The width text output fits (else the terminal's; piped, full lines).",
    ),
    (
        "GITHUB_STEP_SUMMARY",
        Some(&["diff", "check", "impact", "history", "bisect"]),
        "A file the markdown report is appended to (a GitHub Actions job summary), whatever \
         --format or --json prints on standard output.",
    ),
    (
        "outputs, out, and each output's variable",
        Some(&["refused"]),
        "With --in-build: the build's outputs, as Nix sets them for the builder (names in \
         outputs, default out; each name's variable its path).",
    ),
    (
        "disallowedReferences, disallowedRequisites, allowedReferences, allowedRequisites",
        Some(&["refused"]),
        "With --in-build: the checks, as Nix passes them to the builder; set to nothing is [ ] \
         (everything refused), unset is no check.",
    ),
    (
        "NIX_ATTRS_JSON_FILE, NIX_BUILD_TOP",
        Some(&["refused"]),
        "With --in-build under __structuredAttrs: the outputs and outputChecks, from the file \
         NIX_ATTRS_JSON_FILE names when it exists, else NIX_BUILD_TOP/.attrs.json (Nix 2.8 names \
         the host's path, which a sandboxed build cannot see).",
    ),
    (
        "every other variable",
        Some(&["refused"]),
        "With --in-build: the store paths any variable names are the build's inputs, whose files \
         are read to find what holds a refused path (there is no store database in a sandbox).",
    ),
    (
        "NIX_HEFT_REFUSED_FAIL",
        Some(&["refused"]),
        "Read by the setup hook (nix/setup-hook.sh), not by nix-heft: set to anything but 0, the \
         hook runs refused --in-build --fail, so the build fails with nix-heft's text first.",
    ),
    (
        "NIX_STORE_DIR",
        Some(&["trace"]),
        "The store directory whose paths are traced, without --store (default /nix/store).",
    ),
    (
        "LD_*, *PATH",
        Some(&["trace"]),
        "Recorded in the trace file as the environment that decided what CMD loaded.",
    ),
];

/// The sections clap_mangen does not write, for the page of `name` (`None`:
/// the main page): EXIT STATUS and ENVIRONMENT with the entries that apply
/// (`completions` and `man` read no variable).
fn extra_sections(name: Option<&str>) -> Roff {
    let on_page = |pages: &Option<&[&str]>| match (name, pages) {
        (Some(n), Some(list)) => list.contains(&n),
        _ => true,
    };
    let mut roff = Roff::default();
    roff.control("SH", ["EXIT STATUS"]);
    // From the one table the code's exit codes come from.
    for e in nix_heft_types::exit::TABLE {
        if on_page(&e.commands) {
            roff.control("TP", []);
            roff.text([bold(e.code.to_string())]);
            roff.text([roman(e.when)]);
        }
    }
    if matches!(name, Some("completions" | "man")) {
        return roff;
    }
    roff.control("SH", ["ENVIRONMENT"]);
    for (vars, pages, text) in ENVIRONMENT {
        if on_page(pages) {
            roff.control("TP", []);
            roff.text([bold(*vars)]);
            let text = match (name, pages) {
                (None, Some(list)) => format!("({}) {text}", list.join(", ")),
                _ => text.to_string(),
            };
            roff.text([roman(text)]);
        }
    }
    roff
}

/// Renders one page: clap_mangen's, with EXIT STATUS and ENVIRONMENT
/// before its VERSION section (in place of the main page's EXTRA, which
/// is `--help`'s exit-code paragraph), and on a subcommand's page
/// (`parent` given) a SEE ALSO naming the main page.
fn render(
    cmd: &clap::Command,
    parent: Option<&clap::Command>,
    w: &mut dyn Write,
) -> std::io::Result<()> {
    let cmd = cmd.clone().after_help(None::<&'static str>);
    let mut page_text = Vec::new();
    page(&cmd, parent).render(&mut page_text)?;
    let page_text = String::from_utf8_lossy(&page_text);
    // to_roff: the page already wrote roff's preamble.
    let mut extra = extra_sections(parent.map(|_| cmd.get_name())).to_roff();
    if let Some(parent) = parent {
        let mut see_also = Roff::default();
        see_also.control("SH", ["SEE ALSO"]);
        see_also.text([roman(format!("{}(1)", parent.get_name()))]);
        extra.push_str(&see_also.to_roff());
    }
    // clap_mangen's SYNOPSIS names the flags without their values
    // (`[--store]`) and says nothing of a repeatable one: ours, as
    // man-pages(7) writes a synopsis, in its place.
    let page_text = match (
        page_text.find(".SH SYNOPSIS\n"),
        page_text.find("\n.SH DESCRIPTION\n"),
    ) {
        (Some(a), Some(b)) if a < b => format!(
            "{}{}{}",
            &page_text[..a],
            synopsis(&cmd, parent).to_roff(),
            &page_text[b + 1..]
        )
        .into(),
        _ => page_text,
    };
    let (before, after) = match page_text.find("\n.SH VERSION\n") {
        Some(at) => page_text.split_at(at + 1),
        None => (page_text.as_ref(), ""),
    };
    w.write_all(before.as_bytes())?;
    w.write_all(extra.as_bytes())?;
    w.write_all(after.as_bytes())
}

/// The SYNOPSIS of `cmd` (a subcommand of `parent`): every flag with its
/// value's name (`[--store STORE]`), `...` after what may be repeated,
/// optional parts in brackets, the positional arguments last.
fn synopsis(cmd: &clap::Command, parent: Option<&clap::Command>) -> Roff {
    let name = match parent {
        Some(p) => format!("{} {}", p.get_name(), cmd.get_name()),
        None => cmd.get_name().to_string(),
    };
    let mut line: Vec<Inline> = vec![bold(name)];
    let repeated = |a: &clap::Arg| {
        matches!(
            a.get_action(),
            clap::ArgAction::Append | clap::ArgAction::Count
        )
    };
    let (operands, flags): (Vec<&clap::Arg>, Vec<&clap::Arg>) = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .partition(|a| a.is_positional());
    for a in flags.into_iter().chain(operands) {
        let mut part: Vec<Inline> = Vec::new();
        if a.is_positional() {
            let v = a
                .get_value_names()
                .and_then(|v| v.first())
                .map_or_else(|| a.get_id().to_string(), |v| v.to_string());
            part.push(italic(v));
        } else {
            let flag = match (a.get_short(), a.get_long()) {
                (Some(s), Some(l)) => {
                    vec![bold(format!("-{s}")), roman("|"), bold(format!("--{l}"))]
                }
                (Some(s), None) => vec![bold(format!("-{s}"))],
                (None, Some(l)) => vec![bold(format!("--{l}"))],
                (None, None) => continue,
            };
            part.extend(flag);
            let takes_value = a.get_num_args().is_some_and(|r| r.takes_values())
                && !matches!(
                    a.get_action(),
                    clap::ArgAction::SetTrue
                        | clap::ArgAction::SetFalse
                        | clap::ArgAction::Count
                        | clap::ArgAction::Help
                        | clap::ArgAction::HelpShort
                        | clap::ArgAction::HelpLong
                        | clap::ArgAction::Version
                );
            if takes_value {
                for v in a.get_value_names().unwrap_or_default() {
                    part.push(roman(" "));
                    part.push(italic(v.to_string()));
                }
            }
        }
        line.push(roman(" "));
        let optional = !a.is_required_set();
        if optional {
            line.push(roman("["));
        }
        line.extend(part);
        if optional {
            line.push(roman("]"));
        }
        if repeated(a) {
            line.push(roman("..."));
        }
    }
    if cmd.has_subcommands() {
        line.push(roman(" "));
        line.push(italic("COMMAND"));
        line.push(roman(" ["));
        line.push(italic("ARGS"));
        line.push(roman("]..."));
    }
    let mut roff = Roff::default();
    roff.control("SH", ["SYNOPSIS"]);
    // Not hyphenated (a flag broken as `--http-connec‐ tions` is no flag),
    // left-aligned, as man-pages(7) sets a synopsis.
    roff.control("nh", []);
    roff.control("ad", ["l"]);
    roff.text(line);
    roff.control("ad", ["b"]);
    roff.control("hy", []);
    roff
}

/// Writes `nix-heft.1` and `nix-heft-COMMAND.1` for every paged
/// subcommand into `dir` (created if missing).
fn write_all(cli: &clap::Command, dir: &Path) -> anyhow::Result<()> {
    use anyhow::Context as _;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let pages = std::iter::once((cli, None)).chain(paged(cli).map(|s| (s, Some(cli))));
    for (cmd, parent) in pages {
        let path = dir.join(page(cmd, parent).get_filename());
        let mut file = std::io::BufWriter::new(
            std::fs::File::create(&path).with_context(|| format!("writing {}", path.display()))?,
        );
        render(cmd, parent, &mut file).with_context(|| format!("writing {}", path.display()))?;
        file.flush()
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
