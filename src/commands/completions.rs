//! `nix-heft completions SHELL`: generated from the clap definitions; no
//! store is opened. The man pages are in `man`.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;

/// Print a shell completion script (bash, zsh or fish) on standard output.
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
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cli, "nix-heft", &mut script);
    let mut script = String::from_utf8(script)?;
    if let CompletionShell::Bash = args.shell {
        script = bash_subcommand_arms(&script);
    }
    let mut out = std::io::stdout().lock();
    out.write_all(script.as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// clap_complete's bash script (4.6.12) names the state of a subcommand
/// `nix__heft__subcmd__size` where it walks the words, but spells the
/// `case` arm that completes its options `nix__subcmd__heft__subcmd__size`
/// (the `-` of the program's name escaped as a subcommand separator), so
/// no subcommand's options or values were ever completed
/// (clap-rs/clap#6421). The arms are respelled as the walk spells them;
/// `tests/testsuite/packaging.rs` runs the completion in bash.
fn bash_subcommand_arms(script: &str) -> String {
    script.replace("nix__subcmd__heft__subcmd__", "nix__heft__subcmd__")
}
