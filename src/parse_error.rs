//! clap's parse errors in nix-heft's words: one prefix (`nix-heft: error:`)
//! for every error the program prints, typo tips taken from the command's
//! own flags before the global ones, and a negative number where a count
//! is wanted said as such.
//!
//! clap's own tip ranks every flag the command accepts, the globals
//! propagated to it included, so `size --tpo 3` was told
//! `--http-connections`; and it reads `--top -1` as a flag `-1`, telling
//! the user to write `-- -1`, which would make `-1` a ROOT. The message is
//! rewritten here, from clap's error context, rather than by hand-parsing
//! the command line again.

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// How close a flag must be to what was typed to be suggested: the better
/// of Jaro–Winkler (clap's measure, good at shared prefixes) and the
/// normalised Damerau–Levenshtein similarity (which sees `tpo` as one
/// transposition of `top`, where Jaro–Winkler sees little in common).
const SIMILAR: f64 = 0.65;

fn similarity(typed: &str, flag: &str) -> f64 {
    strsim::jaro_winkler(typed, flag).max(strsim::normalized_damerau_levenshtein(typed, flag))
}

/// Prints `e` as nix-heft's error and exits with clap's code for it (2 for
/// usage; help and version print as clap prints them, exit 0).
pub fn exit(e: clap::Error, cmd: &clap::Command, argv: &[String]) -> ! {
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
        || matches!(
            e.kind(),
            ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        )
    {
        e.exit()
    }
    let text = message(&e, cmd, argv).unwrap_or_else(|| e.render().to_string());
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    eprint!("nix-heft: error: {text}");
    if !text.ends_with('\n') {
        eprintln!();
    }
    std::process::exit(e.exit_code())
}

/// A better message than clap's for an unknown argument, if there is one.
fn message(e: &clap::Error, cmd: &clap::Command, argv: &[String]) -> Option<String> {
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let sub = argv
        .iter()
        .skip(1)
        .find_map(|a| cmd.find_subcommand(a.as_str()))?;
    let mut sub = sub.clone().bin_name(format!("nix-heft {}", sub.get_name()));
    let usage = sub.render_usage().to_string();
    // A negative number after a flag that takes a value.
    if bad.parse::<i64>().is_ok() {
        let at = argv.iter().position(|a| a == bad)?;
        let flag = argv[..at].last()?;
        return Some(format!(
            "'{bad}' for '{flag}' must be a positive number\n\n{usage}\n\nFor more information, try '--help'.\n"
        ));
    }
    let typed = bad.split('=').next().unwrap_or(bad).trim_start_matches('-');
    let best = |global: bool| {
        sub.get_arguments()
            .filter(|a| a.is_global_set() == global)
            .filter_map(|a| a.get_long())
            .map(|l| (similarity(typed, l), l))
            .filter(|(s, _)| *s > SIMILAR)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(s, l)| (s, l.to_string()))
    };
    // A flag that starts with what was typed (`--stor`: `--store`, not
    // `size`'s `--sort`), the command's own first; else the command's own
    // closest flag, unless a global one is clearly closer.
    let prefixed = |global: bool| {
        sub.get_arguments()
            .filter(|a| a.is_global_set() == global)
            .filter_map(|a| a.get_long())
            .find(|l| !typed.is_empty() && l.starts_with(typed))
            .map(|l| (1.0, l.to_string()))
    };
    let tip = match (
        prefixed(false)
            .or_else(|| prefixed(true))
            .or_else(|| best(false)),
        best(true),
    ) {
        (Some(own), Some(global)) if global.0 < own.0 + 0.1 => Some(own.1),
        (own, global) => global.or(own).map(|(_, l)| l),
    };
    let tip = match tip {
        Some(l) => format!("\n\n  tip: a similar argument exists: '--{l}'"),
        None => String::new(),
    };
    Some(format!(
        "unexpected argument '{bad}' found{tip}\n\n{usage}\n\nFor more information, try '--help'.\n"
    ))
}
