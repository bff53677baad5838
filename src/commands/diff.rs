//! `nix-heft diff BEFORE AFTER`: what changed between two closures, per
//! package and per path, with what pulled each new path in or held each
//! path that left.

use std::process::ExitCode;

use clap::Args;

use nix_heft_ops::pipeline::CompareOptions;

use super::Context;
use super::review::{self, ReviewArgs};

/// What changed between two closures, per package (versions and size,
/// like `nix store diff-closures`) and per path, with the referrer and
/// files that pulled in each new path or held each path that left.
///
/// When GITHUB_STEP_SUMMARY names a file (as in a GitHub Actions step),
/// the markdown report is also appended to it, whatever --format or
/// --json prints on standard output: the job summary is for people
/// reading the run, the JSON for the next step.
#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The old closure's root (store path, ./result, profile generation
    /// link, name, installable).
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
    /// Compare build-time graphs (as nix-diff does): BEFORE and AFTER are
    /// derivations (an installable its `.drv`), and the paths added and
    /// removed are the inputs (derivations and sources) that changed, each
    /// with the derivation whose `.drv` names it, ranked by how much of
    /// the build closure each drags in (the new paths reachable from it).
    #[arg(long, conflicts_with_all = ["before_store", "after_store"])]
    derivation: bool,
    #[command(flatten)]
    review: ReviewArgs,
}

/// Loads both closures at once, reads only the edges that explain what
/// came and went (AFTER's new edges, BEFORE's vanished ones) and prints
/// the comparison.
pub fn run(ctx: &Context, args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let format = review::format(args.review.format.as_deref(), ctx.json, None)?;
    let at = args.review.checked()?;
    if args.derivation {
        let ctx = &ctx.for_derivations();
        // Kept whole as they are read, so that why each derivation differs
        // is found without reading the `.drv` files again.
        let src = ctx.open_derivations()?.keeping_parsed();
        return compare(ctx, &src, &src, Some(&src), args, format, at);
    }
    let sides = ctx.open_sides(&args.before_store, &args.after_store)?;
    compare(ctx, sides.before(), sides.after(), None, args, format, at)
}

fn compare(
    ctx: &Context,
    bsrc: &dyn nix_heft_store::source::StoreSource,
    asrc: &dyn nix_heft_store::source::StoreSource,
    drvs: Option<&nix_heft_store::source::build_graph::DerivationSource>,
    args: &DiffArgs,
    format: nix_heft_report::review::Format,
    at: Option<nix_heft_report::review::NixFile>,
) -> anyhow::Result<ExitCode> {
    let broots = ctx.roots(bsrc, std::slice::from_ref(&args.before))?;
    let aroots = ctx.roots(asrc, std::slice::from_ref(&args.after))?;
    let (bg, ag) = ctx.load_pair((bsrc, &broots), (asrc, &aroots))?;
    let c = nix_heft_ops::pipeline::compare(
        (bsrc, &bg),
        (asrc, &ag),
        CompareOptions {
            // The changed inputs, the one that drags most of the build
            // closure along first (nix-diff's "why does X rebuild").
            rank_by_drag: args.derivation,
            ..Default::default()
        },
        (&ctx.read_bar(bsrc), &ctx.read_bar(asrc)),
    );
    let mut report = nix_heft_report::diff::DiffReport::new(&bg, &ag, c.diff, c.before, c.after);
    if let Some(drvs) = drvs {
        let c = nix_heft_ops::pipeline::derivation_diff(&broots, &aroots, drvs);
        report.derivations = Some(nix_heft_report::drv_diff::DrvDiffReport::new(&c));
    }
    // Origins as AFTER's store says (BEFORE's own store, when separate,
    // is not asked).
    review::emit(
        ctx,
        asrc,
        &report,
        format,
        &args.review,
        at.as_ref(),
        &args.review.text_options_bytes(ctx, args.bytes),
    )
}
