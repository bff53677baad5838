//! `nix-heft completions SHELL`: generated from the clap definitions; no
//! store is opened. The man pages are in `man`.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;

/// `completions`'s arguments.
#[derive(Args, Debug)]
pub struct CompletionsArgs {
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

/// Prints the completion script of `cli` (the whole command line) for the
/// shell asked.
pub fn completions(args: &CompletionsArgs, mut cli: clap::Command) -> anyhow::Result<ExitCode> {
    let shell = match args.shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    let mut out = std::io::stdout().lock();
    clap_complete::generate(shell, &mut cli, "nix-heft", &mut out);
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
