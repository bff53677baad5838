//! `nix-heft report`: one self-contained HTML page of a closure (treemap,
//! evidence, advice), or of AFTER's closure marked against BEFORE with
//! `--diff`.

use std::process::ExitCode;

use clap::Args;

use nix_heft_ops::pipeline::{CompareOptions, PageReading};
use nix_heft_report::html::{BuildGraph, HtmlReport, ReportWritten};
use nix_heft_report::size::UnknownOutputs;
use nix_heft_store::source::StoreSource;
use nix_heft_store::source::build_graph::DerivationSource;
use nix_heft_trace::file::TraceSet;

use super::{Context, Emit, TraceOpt};

/// One self-contained HTML file: a treemap of the closure by added
/// size (following the dominator tree), each path's sizes, referrers,
/// references and every edge's evidence, the advice, search and a
/// sortable table. Opens from disk; no network.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Roots, in any form `size` accepts.
    #[arg(required_unless_present = "diff", value_name = "ROOT")]
    roots: Vec<String>,
    /// The page of AFTER's closure, marking the paths new since BEFORE and
    /// listing those that left (what `diff BEFORE AFTER` compares).
    #[arg(
        long,
        num_args = 2,
        value_names = ["BEFORE", "AFTER"],
        conflicts_with = "roots"
    )]
    diff: Option<Vec<String>>,
    /// With --diff: store to read BEFORE from (default: --store).
    #[arg(long, value_name = "STORE")]
    before_store: Option<String>,
    /// With --diff: store to read AFTER from (default: --store).
    #[arg(long, value_name = "STORE")]
    after_store: Option<String>,
    #[command(flatten)]
    trace: TraceOpt,
    /// Where to write the HTML file (`-` for standard output).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "report.html"
    )]
    output: std::path::PathBuf,
    /// Sizes only: read no file, so no evidence, verdicts or advice (for
    /// stores without contents or very large closures).
    #[arg(long)]
    no_evidence: bool,
    /// The page of the build-time graph (as `size --derivation`): paths
    /// are derivations and sources, a derivation's size its outputs'
    /// where they are valid (local store or --store's cache), those of
    /// unknown size counted as 0 and listed; edges are the `.drv` files'
    /// inputs, with their entries as evidence; no advice. An installable
    /// ROOT (or --diff's BEFORE and AFTER) means its `.drv`.
    #[arg(long, conflicts_with_all = ["before_store", "after_store"])]
    derivation: bool,
}

/// Examines the closure ([`nix_heft_ops::pipeline::examine`], plus advise's
/// joint plan for the total), builds the page and writes it.
pub fn run(ctx: &Context, args: &ReportArgs) -> anyhow::Result<ExitCode> {
    // Checked here: clap waives `requires` on "diff" when ROOTs, which
    // conflict with it, are given.
    if args.diff.is_none() && (args.before_store.is_some() || args.after_store.is_some()) {
        return Err(nix_heft_types::Error::Usage(
            "--before-store and --after-store go with --diff BEFORE AFTER; give --store for ROOT"
                .into(),
        )
        .into());
    }
    let traces = args.trace.load()?;
    if args.derivation {
        let ctx = &ctx.for_derivations();
        let src = ctx.open_derivations()?;
        return page(ctx, args, traces.as_ref(), (&src, &src), Some(&src));
    }
    // With --diff the page is AFTER's closure, read from AFTER's store.
    let sides = ctx.open_sides(&args.before_store, &args.after_store)?;
    page(
        ctx,
        args,
        traces.as_ref(),
        (sides.before(), sides.after()),
        None,
    )
}

/// The page of `src`'s closure (AFTER's with --diff, BEFORE read from
/// `bsrc`); `drvs` is the build graph's source with `--derivation`.
fn page(
    ctx: &Context,
    args: &ReportArgs,
    traces: Option<&TraceSet>,
    (bsrc, src): (&dyn StoreSource, &dyn StoreSource),
    drvs: Option<&DerivationSource>,
) -> anyhow::Result<ExitCode> {
    let (g, before) = match args.diff.as_deref() {
        Some([before, after]) => {
            let broots = ctx.roots(bsrc, std::slice::from_ref(before))?;
            let aroots = ctx.roots(src, std::slice::from_ref(after))?;
            let (bg, ag) = ctx.load_pair((bsrc, &broots), (src, &aroots))?;
            (ag, Some(bg))
        }
        _ => {
            let roots = ctx.roots(src, &args.roots)?;
            (ctx.load(src, &roots)?, None)
        }
    };
    let reading = match (args.no_evidence, drvs.is_some()) {
        (true, _) => PageReading::Nothing,
        (false, true) => PageReading::BuildGraph,
        (false, false) => PageReading::Examined,
    };
    let ev = nix_heft_ops::pipeline::page_evidence(src, &g, reading, traces, &ctx.read_bar(src));
    let mut model = HtmlReport::new(
        &g,
        &nix_heft_graph::Sizes::compute(&g),
        src.describe(),
        ev.classified.as_ref(),
        ev.actions,
        ev.plan_saving,
        ev.problems,
    );
    model.traces = traces.as_ref().map(|t| t.names());
    for (origin, node) in nix_heft_ops::pipeline::origins(src, &g)
        .into_iter()
        .zip(&mut model.paths)
    {
        node.origin = origin;
    }
    model.build_graph = drvs.map(|d| BuildGraph {
        unknown_outputs: UnknownOutputs::of(d.unknown(), &g),
    });
    // The command the page offers to copy reads what it shows: the same
    // stores (AFTER's, for a --diff page), keys and graph. The command
    // line's words, so the binary's.
    let after = args.after_store.as_ref().map(std::slice::from_ref);
    let mut why = vec!["nix-heft".to_string()];
    why.extend(ctx.store_args(after.filter(|_| args.diff.is_some())));
    why.push("why".to_string());
    if drvs.is_some() {
        why.push("--derivation".to_string());
    }
    for t in args.trace.files() {
        why.push("--trace".to_string());
        why.push(t.display().to_string());
    }
    model.why_command = why;
    if let Some(bg) = before {
        // BEFORE is read only for the edges that held the paths that
        // left; the page's own evidence (every edge of AFTER) explains the
        // new ones, and groups the paths added for one reason as `diff`
        // does.
        let cmp = nix_heft_ops::pipeline::compare(
            (bsrc, &bg),
            (src, &g),
            CompareOptions {
                // As `diff --derivation` ranks the changed inputs.
                rank_by_drag: drvs.is_some(),
                no_evidence: args.no_evidence,
                after_read: Some(ev.classified.unwrap_or_default()),
            },
            (&ctx.read_bar(bsrc), &ctx.read_bar(src)),
        );
        let dr = nix_heft_report::diff::DiffReport::new(&bg, &g, cmp.diff, cmp.before, cmp.after);
        model.set_diff(&g, dr);
    }
    let html = model.render_html();
    if args.output.as_os_str() == "-" {
        let written = ReportWritten::new(&model, "-".into(), html.len());
        return ctx.emit(None, &written, Emit::Rendered(html));
    }
    super::context::write_beside(&args.output, html.as_bytes())?;
    let written = ReportWritten::new(&model, args.output.display().to_string(), html.len());
    ctx.emit(None, &written, Emit::Report(ctx.text_options()))
}
