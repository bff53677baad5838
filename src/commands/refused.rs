//! `nix-heft refused`: why Nix refuses (or would refuse) a build's output:
//! each reference or requisite a check forbids, with the files that hold
//! it and a fix that passes, and the cycles between outputs (issues 33,
//! 39). Run by the setup hook inside the build (`--in-build`), or
//! afterwards on the derivation, an output, or Nix's error text (`--log`).
//! Flags → a request → `pipeline::refused` (or `refused_log`) → one emit.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use nix_heft_format::StorePath;
use nix_heft_ops::Error;
use nix_heft_ops::pipeline::refused::{RefusedOf, refused, refused_log};
use nix_heft_report::Report;
use nix_heft_report::refused::{RefusedLogReport, RefusedReport};

use super::{Context, Emit};

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
#[derive(Args, Debug)]
pub struct RefusedArgs {
    /// The derivation (`.drv`) whose outputs to check, or an output of one
    /// (its derivation, that output's checks): the outputs where they are
    /// (valid, or left unregistered by a failed build) against the
    /// checks, over the store.
    #[arg(value_name = "DRV", required_unless_present_any = ["in_build", "log"])]
    drv: Option<String>,
    /// Inside a build (the setup hook runs this): the outputs, their
    /// checks and the inputs are the builder's environment (or
    /// `.attrs.json`); no store database is read, as a sandbox has none.
    #[arg(long, conflicts_with = "drv")]
    in_build: bool,
    /// Only this output; repeatable. Default: every output (an output
    /// given as DRV: that one).
    #[arg(long = "output", value_name = "NAME")]
    outputs: Vec<String>,
    /// Nix's error text (a file, or - for standard input: what nix-build
    /// or nix build printed, or a build log with the setup hook's text):
    /// each refusal it reports, its derivation, output and paths; then,
    /// for each derivation whose outputs Nix left behind, the files, as
    /// with DRV.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["drv", "in_build"], value_hint = clap::ValueHint::FilePath)]
    log: Option<PathBuf>,
    /// Exit 4 when a check refuses a path or outputs refer to each other
    /// (with --log: when the text holds a refusal).
    #[arg(long)]
    fail: bool,
}

/// Checks the outputs and prints each refusal with its files.
pub fn run(ctx: &Context, args: &RefusedArgs) -> anyhow::Result<ExitCode> {
    if args.in_build {
        let vars: BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        let r = refused(RefusedOf::Build(&vars), &args.outputs, &|_: u64| {})?;
        let report = RefusedReport::new(&r);
        // Inside a build, a clean output leaves no line in the build log.
        if !report.any() && !ctx.json {
            return Ok(ctx.finish(report.problems()));
        }
        return emit(ctx, args, &report, report.any());
    }
    let store = ctx.open()?;
    if let Some(log) = &args.log {
        let text = read_log(log)?;
        let r =
            // The command line's mistakes in the log are named with it.
            refused_log(store.as_ref(), &text, &ctx.read_bar(store.as_ref())).map_err(|e| {
                if e.is_usage() {
                    Error::InLog {
                        log: log.clone(),
                        source: Box::new(e),
                    }
                } else {
                    e
                }
            })?;
        let report = RefusedLogReport::new(&r);
        return emit(ctx, args, &report, report.any());
    }
    let arg = args.drv.as_deref().unwrap_or_default();
    let path = StorePath::parse(store.store_dir(), arg)
        .map_err(|e| nix_heft_types::Error::Usage(format!("{arg}: {e}")))?;
    let r = refused(
        RefusedOf::Derivation {
            store: store.as_ref(),
            path: &path,
        },
        &args.outputs,
        &ctx.read_bar(store.as_ref()),
    )?;
    let report = RefusedReport::new(&r);
    emit(ctx, args, &report, report.any())
}

/// The report printed once; 4 with `--fail` when something is refused,
/// else 0 or 3 (partial).
fn emit<R: Report>(
    ctx: &Context,
    args: &RefusedArgs,
    report: &R,
    refused: bool,
) -> anyhow::Result<ExitCode> {
    let code = ctx.emit(None, report, Emit::Report(ctx.text_options()))?;
    Ok(if args.fail && refused {
        ExitCode::from(nix_heft_types::exit::VIOLATION)
    } else {
        code
    })
}

/// The text `--log` names: a file, or standard input for `-`. Only its
/// end matters (Nix prints its errors last) and the parser reads at most
/// its last `MAX_TEXT` bytes, so no more than that is kept (plus a line's
/// worth, for where the parser starts).
fn read_log(log: &Path) -> anyhow::Result<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    let keep = nix_heft_format::nix_error::MAX_TEXT + 64 * 1024;
    let io = |source| nix_heft_types::Error::Io {
        path: log.to_path_buf(),
        source,
    };
    let mut text = Vec::new();
    if log == Path::new("-") {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = match stdin.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            text.extend_from_slice(&buf[..n]);
            if text.len() > 2 * keep {
                text.drain(..text.len() - keep);
            }
        }
        if text.len() > keep {
            text.drain(..text.len() - keep);
        }
    } else {
        let mut f = std::fs::File::open(log).map_err(io)?;
        let len = f.metadata().map_err(io)?.len();
        f.seek(SeekFrom::Start(len.saturating_sub(keep as u64)))
            .map_err(io)?;
        f.read_to_end(&mut text).map_err(io)?;
    }
    Ok(text)
}
