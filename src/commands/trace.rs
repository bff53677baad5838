//! `nix-heft trace -- CMD`: run a workload under the tracer, write the
//! trace file, summarise what it touched.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use nix_heft_core::graph::Graph;
use nix_heft_report::TextOptions;
use nix_heft_types::problem::Problem;

use super::{Context, Shown};

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
    use nix_heft_trace::ptrace::Ended;
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
    // The timeout's message whenever the timeout fired: the first process
    // killed by it (`Running`, exit 124) or only what it left behind (its
    // own exit code kept). A signal names the signal only when the timeout
    // did not send it.
    match traced.ended {
        Ended::Signal(sig) => eprintln!(
            "nix-heft: {} was killed by {}; the partial trace is kept in {out_name}",
            traced.trace.command[0],
            sig.as_str()
        ),
        Ended::Running | Ended::Code(_) if traced.trace.timed_out => eprintln!(
            "nix-heft: --timeout reached: {} process{} still running {} killed; the partial trace is kept in {out_name}",
            traced.killed_at_timeout,
            if traced.killed_at_timeout == 1 {
                ""
            } else {
                "es"
            },
            if traced.killed_at_timeout == 1 {
                "was"
            } else {
                "were"
            }
        ),
        _ => {}
    }
    if traced.foreign_abi > 0 {
        ctx.log.warn(format!(
            "{} process{} ran in another ABI (a 32-bit program?) and {} not traced; the trace is incomplete",
            traced.foreign_abi,
            if traced.foreign_abi == 1 { "" } else { "es" },
            if traced.foreign_abi == 1 {
                "was"
            } else {
                "were"
            }
        ));
    }

    // The closure of the touched paths, for sizes and never-touched paths.
    let src = match given {
        Some(s) => Some(s),
        None => ctx.open_store(None).ok(),
    };
    let mut problems = Vec::new();
    let g = src.as_ref().and_then(|src| {
        let mut roots = Vec::new();
        for p in traced.trace.paths.keys() {
            match nix_heft_format::StorePath::parse(src.store_dir(), p) {
                Ok(sp) if src.is_valid(&sp).unwrap_or(false) => roots.push(sp),
                _ => problems.push(Problem::new(
                    p.clone(),
                    nix_heft_types::problem::ProblemKind::Unreadable,
                    format!("touched, but not a valid path in {}", src.describe()),
                )),
            }
        }
        Graph::load(src.as_ref(), &roots).ok()
    });
    let report =
        nix_heft_report::trace::TraceReport::new(&out_name, &traced.trace, g.as_ref(), problems);
    // Standard output is CMD's: the summary goes to stderr, the JSON
    // after CMD's own output. The exit code is CMD's.
    ctx.emit(
        None,
        &report,
        if ctx.json {
            Shown::Report(TextOptions::default())
        } else {
            Shown::Stderr(TextOptions::default())
        },
    )?;
    Ok(match traced.ended {
        Ended::Code(c) => {
            ExitCode::from(u8::try_from(c & 0xff).unwrap_or(nix_heft_types::exit::ERROR))
        }
        Ended::Signal(sig) => {
            ExitCode::from(u8::try_from(128 + (sig as i32)).unwrap_or(nix_heft_types::exit::ERROR))
        }
        Ended::Running => ExitCode::from(nix_heft_types::exit::TIMEOUT),
    })
}
