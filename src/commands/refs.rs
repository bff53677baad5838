//! `nix-heft refs`: every reference edge of a closure with its kinds of
//! hold and the files holding it.

use std::process::ExitCode;

use clap::Args;

use nix_heft_core::graph::request;
use nix_heft_report::refs::RefsReport;

use super::{Context, TraceOpt};

/// `refs`'s arguments.
#[derive(Args, Debug)]
pub struct RefsArgs {
    /// Roots, in any form `size` accepts.
    #[arg(required = true, value_name = "ROOT")]
    roots: Vec<String>,
    /// Include every occurrence (offset, context, verdict): in the JSON, and
    /// listed under the table in text.
    #[arg(long)]
    evidence: bool,
    #[command(flatten)]
    trace: TraceOpt,
}

/// Reads and classifies every edge of the closure and prints the table.
pub fn run(ctx: &Context, args: &RefsArgs) -> anyhow::Result<ExitCode> {
    let src = ctx.open()?;
    let src = src.as_ref();
    let traces = args.trace.load()?;
    let roots = ctx.roots(src, &args.roots)?;
    let g = ctx.load(src, &roots)?;
    let c = ctx.classified(src, &g, &request::all_edges(&g), traces.as_ref());
    let report = RefsReport::new(&g, c, args.evidence);
    ctx.emit_from(src, &report, ctx.text_options())
}
