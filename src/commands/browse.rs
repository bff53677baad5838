//! `nix-heft browse`: the terminal browser. Sizes are drawn at once; the
//! evidence and advice ([`nix_heft_ops::pipeline::examine`]) arrive from a
//! background thread.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use clap::Args;

use nix_heft_browse::BuildGraph;
use nix_heft_graph::request;
use nix_heft_store::source::StoreSource;
use nix_heft_store::source::build_graph::DerivationSource;

use super::Context;

/// Browse the closure in the terminal (like nix-tree): referrers |
/// references | details; sizes at once, evidence filling in from a
/// background read; `w` why-chains with the files holding each edge,
/// `a` advice, `y` copy, `?` help.
#[derive(Args, Debug)]
pub struct BrowseArgs {
    /// Roots, in any form `size` accepts.
    #[arg(required = true, value_name = "ROOT")]
    roots: Vec<String>,
    /// Sizes only: read no file (no evidence, verdicts or advice).
    #[arg(long)]
    no_evidence: bool,
    /// Browse the build-time graph (as `nix-tree --derivation`): paths are
    /// derivations and sources, a derivation's self size its outputs'
    /// where valid (local store or --store's cache), those of unknown size
    /// counted as 0 and shown; edges the `.drv` files' inputs, their
    /// entries the evidence; no advice. An installable ROOT means its
    /// `.drv`.
    #[arg(long)]
    derivation: bool,
}

/// Loads the closure, starts the read on a detached thread and runs the
/// browser until the user quits.
pub fn run(ctx: &Context, args: &BrowseArgs) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    let derivation = args.derivation;
    let ctx = &if derivation {
        ctx.for_derivations()
    } else {
        ctx.clone()
    };
    // Shared, so that the read runs on a thread of its own.
    let drvs: Option<Arc<DerivationSource>> = if derivation {
        Some(Arc::new(ctx.open_derivations()?))
    } else {
        None
    };
    let src: Arc<dyn StoreSource> = match &drvs {
        Some(d) => d.clone(),
        None => ctx.open()?.into(),
    };
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(nix_heft_types::Error::Usage(
            "browse needs a terminal; use size, refs or report when piped".into(),
        )
        .into());
    }
    let roots = ctx.roots(src.as_ref(), &args.roots)?;
    let g = Arc::new(ctx.load(src.as_ref(), &roots)?);
    // The derivations whose outputs no store has, known once loaded.
    let build = drvs.as_deref().map(|d| BuildGraph::new(&g, d.unknown()));
    let no_color = !ctx.colour(true);
    let progress = Arc::new(AtomicU64::new(0));
    let total: u64 = if args.no_evidence {
        0
    } else {
        nix_heft_ops::pipeline::bytes_to_scan(&g, &request::all_edges(&g))
    };
    let (tx, rx) = std::sync::mpsc::channel();
    if args.no_evidence {
        let _ = tx.send(nix_heft_browse::Loaded::default());
    } else {
        // Detached: quitting never waits for the read to finish.
        let (g2, src2, p2) = (Arc::clone(&g), Arc::clone(&src), Arc::clone(&progress));
        std::thread::spawn(move || {
            let progress = |n| {
                p2.fetch_add(n, Ordering::Relaxed);
            };
            let examined = if derivation {
                nix_heft_ops::pipeline::examine_build_graph(src2.as_ref(), &g2, &progress)
            } else {
                nix_heft_ops::pipeline::examine(src2.as_ref(), &g2, None, &progress)
            };
            let _ = tx.send(nix_heft_browse::Loaded::from(examined));
        });
    }
    // Closure sizes on their own thread: the first screen needs only self
    // and added sizes.
    let (sizes_tx, crx) = std::sync::mpsc::channel();
    let g3 = Arc::clone(&g);
    std::thread::spawn(move || {
        let _ = sizes_tx.send(nix_heft_graph::closure_sizes(&g3));
    });
    let origins = g
        .paths()
        .iter()
        .map(|p| src.provenance(p).map(|o| o.label()))
        .collect();
    let feeds = crate::browse_terminal::Feeds {
        origins,
        closure: crx,
        evidence: rx,
        progress: &progress,
        total,
    };
    let problems = crate::browse_terminal::run(&g, feeds, no_color, build)?;
    Ok(ctx.finish(&problems))
}
