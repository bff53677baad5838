//! `nix-heft trace -- CMD`: run a workload under the tracer, write the
//! trace file, summarise what it touched.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use nix_heft_report::TextOptions;

use super::{Context, Emit};

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
#[derive(Args, Debug)]
pub struct TraceArgs {
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
    #[arg(long, value_name = "S", value_hint = clap::ValueHint::Other)]
    timeout: Option<f64>,
    /// A note on the environment, kept in the trace file.
    #[arg(long, value_name = "TEXT", value_hint = clap::ValueHint::Other)]
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

/// Traces CMD, writes the trace, prints the summary (stderr, or stdout as
/// JSON) and exits with CMD's exit code.
pub fn run(ctx: &Context, args: &TraceArgs) -> anyhow::Result<ExitCode> {
    let timeout = match args.timeout {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => {
            Some(std::time::Duration::from_secs_f64(s))
        }
        Some(s) => {
            return Err(nix_heft_types::Error::Usage(format!(
                "--timeout {s}: give a positive number of seconds"
            ))
            .into());
        }
    };
    // A --store given is opened first, so that a bad one fails before the
    // workload runs; the default local store is only needed for sizes.
    let given = match &ctx.store {
        Some(s) => Some(ctx.open_store(Some(s))?),
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
        .ok_or_else(|| nix_heft_types::Error::Usage("no command to trace".into()))?;
    let cmd = nix_heft_trace::ptrace::Command {
        program: program.clone(),
        args: rest.to_vec(),
        timeout,
    };
    let traced = nix_heft_trace::trace(&cmd, &store_dir, args.env_note.clone())?;
    let json = serde_json::to_vec_pretty(&traced.trace)?;
    std::fs::write(&args.output, json)
        .with_context(|| format!("writing the trace to {}", args.output.display()))?;
    let out_name = args.output.display().to_string();
    if let Some(ending) = traced.ending(&out_name) {
        ctx.note(&ending);
    }
    if let Some(why) = traced.incomplete() {
        ctx.log.warn(why);
    }
    // The closure of the touched paths, for sizes and never-touched paths.
    let src = match given {
        Some(s) => Some(s),
        None => ctx.open_store(None).ok(),
    };
    let (g, problems) = match &src {
        Some(src) => nix_heft_ops::pipeline::traced_closure(src.as_ref(), &traced.trace),
        None => (None, Vec::new()),
    };
    let report =
        nix_heft_report::trace::TraceReport::new(&out_name, &traced.trace, g.as_ref(), problems);
    // Standard output is CMD's: the summary goes to stderr, the JSON
    // after CMD's own output. The exit code is CMD's.
    ctx.emit(
        None,
        &report,
        if ctx.json {
            Emit::Report(TextOptions::default())
        } else {
            Emit::Stderr(TextOptions::default())
        },
    )?;
    Ok(ExitCode::from(traced.exit_code()))
}
