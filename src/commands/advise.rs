//! `nix-heft advise`: ranked actions that shrink a closure, each saving
//! simulated, and their joint plan.

use std::process::ExitCode;

use clap::Args;

use nix_heft_ops::pipeline::AdviseRequest;
use nix_heft_report::TextOptions;
use nix_heft_report::advise::AdviceReport;

use super::{Context, Emit, TraceOpt};

/// Ranked actions that shrink the closure of the roots, each with the
/// saving computed by applying it to the graph, its evidence, its safety
/// and the nixpkgs snippet that applies it.
#[derive(Args, Debug)]
pub struct AdviseArgs {
    /// Roots, in any form `size` accepts.
    #[arg(required = true, value_name = "ROOT")]
    roots: Vec<String>,
    /// Show actions that save nothing in full, not folded into "also".
    #[arg(long)]
    all: bool,
    #[command(flatten)]
    trace: TraceOpt,
    /// The GPU targets the plan keeps when it partitions (the values
    /// `partition --keep` takes, e.g. gfx90a,gfx1100). Default: the targets
    /// the --trace workload used, else the costliest single target.
    #[arg(long, value_name = "TARGET,...", value_delimiter = ',', value_hint = clap::ValueHint::Other)]
    targets: Option<Vec<String>>,
    /// Read only referrers where some action could save at least this much
    /// (bytes, IEC units like 10MiB, or a percentage of the closure); the
    /// bound comes from the graph alone. `0` reads everything.
    #[arg(long, value_name = "SIZE", default_value = "1%", value_hint = clap::ValueHint::Other)]
    min_saving: nix_heft_types::units::Threshold,
}

/// [`nix_heft_ops::pipeline::advise`] on the roots' closure, printed.
pub fn run(ctx: &Context, args: &AdviseArgs) -> anyhow::Result<ExitCode> {
    let src = ctx.open()?;
    let src = src.as_ref();
    let traces = args.trace.load()?;
    let roots = ctx.roots(src, &args.roots)?;
    let g = ctx.load(src, &roots)?;
    let closure_size = g.size_of(&g.closure_of(g.roots()));
    let min_saving = args.min_saving.bytes_of(closure_size);
    let req = AdviseRequest {
        min_saving,
        targets: args.targets.as_deref(),
        traces: traces.as_ref(),
    };
    let advised = nix_heft_ops::pipeline::advise(src, &g, &req, &ctx.read_bar(src))?;
    // On stderr whatever the format, with the run's other warnings: the
    // JSON carries them in the plan too.
    for w in &advised.plan.warnings {
        ctx.log.warn(w.clone());
    }
    let report = AdviceReport::new(&g, &roots, closure_size, min_saving, advised);
    let opts = TextOptions {
        every_line: args.all,
        ..ctx.text_options()
    };
    ctx.emit(Some(src), &report, Emit::Report(opts))
}
