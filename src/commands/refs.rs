//! `nix-heft refs`: every reference edge of a closure with its kinds of
//! hold and the files holding it.

use std::process::ExitCode;

use clap::Args;

use nix_heft_graph::request;
use nix_heft_report::refs::RefsReport;

use super::tree::{self, TreeArgs};
use super::{Context, Emit, TraceOpt};

/// For every reference edge in the closure of the roots, the kinds of
/// hold and the files holding it, from one scan of the whole closure.
#[derive(Args, Debug)]
pub struct RefsArgs {
    /// Roots, in any form `size` accepts (or none with --dir).
    #[arg(required_unless_present = "dir", value_name = "ROOT")]
    roots: Vec<String>,
    /// Include every occurrence (offset, context, verdict): in the JSON, and
    /// listed under the table in text.
    #[arg(long)]
    evidence: bool,
    #[command(flatten)]
    trace: TraceOpt,
    #[command(flatten)]
    tree: TreeArgs,
}

/// Reads and classifies every edge of the closure and prints the table.
pub fn run(ctx: &Context, args: &RefsArgs) -> anyhow::Result<ExitCode> {
    let traces = args.trace.load()?;
    let opened = tree::open(ctx, &args.tree, args.roots.first().map(String::as_str))?;
    opened
        .with_source(|src| {
            let roots = match opened.root() {
                // The tree is the first ROOT (with --dir, one before the rest).
                Some(t) if args.tree.dir.is_some() => std::iter::once(t)
                    .chain(args.roots.iter().cloned())
                    .collect(),
                Some(t) => std::iter::once(t)
                    .chain(args.roots.iter().skip(1).cloned())
                    .collect(),
                None => args.roots.clone(),
            };
            let roots = ctx.roots(src, &roots)?;
            let g = ctx.load(src, &roots)?;
            let c = ctx.classified(src, &g, &request::all_edges(&g), traces.as_ref());
            let report = RefsReport::new(&g, c, args.evidence);
            ctx.emit(Some(src), &report, Emit::Report(ctx.text_options()))
        })
        .unwrap_or_else(|| Err(tree::no_source()))
}
