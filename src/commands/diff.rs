//! `nix-heft diff BEFORE AFTER`: what changed between two closures, per
//! package and per path, with what pulled each new path in or held each
//! path that left.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use nix_heft::graph::Graph;
use nix_heft::report::TextOptions;

use super::Context;

/// `diff`'s arguments.
#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The old closure's root (store path, ./result, profile generation
    /// link, name).
    #[arg(value_name = "BEFORE")]
    before: String,
    /// The new closure's root.
    #[arg(value_name = "AFTER")]
    after: String,
    /// Store to read BEFORE from (default: --store).
    #[arg(long, value_name = "STORE")]
    before_store: Option<String>,
    /// Store to read AFTER from (default: --store).
    #[arg(long, value_name = "STORE")]
    after_store: Option<String>,
    /// Print exact byte counts instead of IEC units.
    #[arg(long)]
    bytes: bool,
}

/// Loads both closures at once, reads only the edges that explain what
/// came and went (AFTER's new edges, BEFORE's vanished ones) and prints
/// the comparison.
pub fn run(ctx: &Context, args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let src = ctx.open()?;
    let src = src.as_ref();
    let (b_own, a_own) = (
        ctx.optional_store(&args.before_store)?,
        ctx.optional_store(&args.after_store)?,
    );
    let bsrc = b_own.as_deref().unwrap_or(src);
    let asrc = a_own.as_deref().unwrap_or(src);
    let broots = nix_heft::roots::resolve_roots(bsrc, std::slice::from_ref(&args.before))?;
    let aroots = nix_heft::roots::resolve_roots(asrc, std::slice::from_ref(&args.after))?;
    let pb = ctx.spinner("reading both closures");
    // The two sides are independent: load them at once.
    let (bg, ag) = rayon::join(
        || Graph::load(bsrc, &broots).context("loading BEFORE's closure"),
        || Graph::load(asrc, &aroots).context("loading AFTER's closure"),
    );
    pb.finish_and_clear();
    let (bg, ag) = (bg?, ag?);
    let d = nix_heft::diff::diff(&bg, &ag);
    let (wb, wa) = d.wants();
    let cb = ctx.classified(bsrc, &bg, &wb, None);
    let ca = ctx.classified(asrc, &ag, &wa, None);
    let report = nix_heft::report::diff::DiffReport::new(&bg, &ag, d, cb, ca);
    // Origins as AFTER's store says (BEFORE's own store, when separate,
    // is not asked).
    ctx.emit_from(
        asrc,
        &report,
        TextOptions {
            exact_bytes: args.bytes,
            ..ctx.text_options()
        },
    )
}
