//! `nix-heft man [COMMAND]`: the manual pages, `nix-heft(1)` and one
//! `nix-heft-COMMAND(1)` per subcommand, generated from the clap
//! definitions with clap_mangen; no store is opened.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use clap_mangen::roff::{Roff, roman};

/// `man`'s arguments.
#[derive(Args, Debug)]
pub struct ManArgs {
    /// The subcommand whose page to print (`nix-heft-COMMAND(1)`); without
    /// it, the page of nix-heft itself.
    #[arg(value_name = "COMMAND")]
    command: Option<String>,
    /// Write every page (nix-heft.1 and nix-heft-COMMAND.1 for each
    /// subcommand) into DIR instead of printing one, as a package installs
    /// them.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
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
                return Err(nix_heft::Error::Usage(format!(
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

/// Renders one page; a subcommand's page (`parent` given) ends with a SEE
/// ALSO naming the main page, which clap_mangen does not write.
fn render(
    cmd: &clap::Command,
    parent: Option<&clap::Command>,
    w: &mut dyn Write,
) -> std::io::Result<()> {
    page(cmd, parent).render(w)?;
    if let Some(parent) = parent {
        let mut see_also = Roff::default();
        see_also.control("SH", ["SEE ALSO"]);
        see_also.text([roman(format!("{}(1)", parent.get_name()))]);
        // to_roff: the page above already wrote roff's preamble.
        w.write_all(see_also.to_roff().as_bytes())?;
    }
    Ok(())
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
