//! `nix-heft split PATH`: a what-if split of a path into outputs, as
//! `moveToOutput` would make them, without rebuilding.

use std::process::ExitCode;

use clap::Args;

use nix_heft_analysis::plan::split::Existing;
use nix_heft_graph::{Graph, NodeId};
use nix_heft_ops::roots::SiblingOutput;
use nix_heft_report::split::SplitReport;
use nix_heft_store::source::StoreSource;

use super::{Context, Emit, TraceOpt};

/// What-if: split PATH into outputs (like moveToOutput) without
/// rebuilding, and show each output's files, size, closure and
/// references, and each root's closure before and after.
#[derive(Args, Debug)]
pub struct SplitArgs {
    /// The path to split.
    #[arg(value_name = "PATH")]
    path: String,
    /// Move files matching GLOB (relative to the output root) to OUTPUT,
    /// in order, like `moveToOutput GLOB "$OUTPUT"`.
    #[arg(long = "move", value_name = "GLOB=OUTPUT")]
    moves: Vec<nix_heft_analysis::plan::split::Move>,
    /// Apply nixpkgs' multiple-outputs defaults first (include, pkg-config,
    /// CMake, aclocal → dev; share/doc → doc; share/man → man; share/info →
    /// info; gtk-doc, devhelp → devdoc).
    #[arg(long, value_enum)]
    preset: Option<Preset>,
    /// Do not model `_multioutPropagateDev`: by default, when the split has
    /// a `dev` output, dev's nix-support/propagated-build-inputs names
    /// `out` (as every multi-output nixpkgs build writes it).
    #[arg(long)]
    no_propagate_dev: bool,
    /// Roots whose closure to compare (default: every top-level path in the
    /// store that pulls PATH in).
    #[arg(long = "root", value_name = "ROOT")]
    roots: Vec<String>,
    #[command(flatten)]
    trace: TraceOpt,
}

/// `--preset` values.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Preset {
    /// nixpkgs' multiple-outputs.sh defaults.
    Nixpkgs,
}

/// Reads PATH's own holds and its consumers' holds into it, simulates the
/// split and prints each output and each root's closure before and after.
pub fn run(ctx: &Context, args: &SplitArgs) -> anyhow::Result<ExitCode> {
    let src = ctx.open()?;
    let src = src.as_ref();
    let traces = args.trace.load()?;
    let mut moves = match args.preset {
        Some(Preset::Nixpkgs) => nix_heft_analysis::plan::split::nixpkgs_preset(),
        None => Vec::new(),
    };
    moves.extend(args.moves.iter().cloned());
    if moves.is_empty() {
        return Err(nix_heft_types::Error::Usage(
            "nothing to split: give --move GLOB=OUTPUT or --preset nixpkgs".into(),
        )
        .into());
    }
    let (g, p, root_ids) = super::target_and_roots(ctx, src, &args.path, &args.roots, |path| {
        match nix_heft_ops::roots::top_level_referrers(src, path)? {
            // Nothing pulls it in: it is its own root.
            Some(r) if r.is_empty() => Ok(vec![path.clone()]),
            Some(r) => Ok(r),
            None => Err(nix_heft_types::Error::Usage(format!(
                "{} cannot list what references {path}; give the roots with --root",
                src.describe()
            ))
            .into()),
        }
    })?;
    // The outputs the package already has: moved files join them, so
    // their files and holds are read too, and they must be in the graph.
    let siblings = nix_heft_ops::roots::sibling_outputs(src, g.path(p))?;
    let (g, p, root_ids) = with_siblings(ctx, src, g, p, root_ids, &siblings)?;
    let index = g.index();
    let existing: Vec<Existing> = siblings
        .iter()
        .map(|s| Existing {
            output: s.output.clone(),
            path: s.path.to_string(),
            node: index.get(&s.path).copied(),
            found_by: s.found_by,
        })
        .collect();
    let (plan, problems) = nix_heft_ops::pipeline::split(
        src,
        &g,
        p,
        &moves,
        !args.no_propagate_dev,
        &root_ids,
        &existing,
        traces.as_ref(),
        &ctx.read_bar(src),
    )?;
    let unmatched: Vec<String> = args
        .moves
        .iter()
        .filter(|m| plan.sim.unmatched.contains(&m.pattern))
        .map(|m| {
            format!(
                "--move '{}={}' matched no file of {}",
                m.pattern,
                m.output,
                g.path(p)
            )
        })
        .collect();
    let mut report = SplitReport::new(&g, p, moves, plan, problems);
    report.warnings.extend(unmatched);
    ctx.emit(Some(src), &report, Emit::Report(ctx.text_options()))
}

/// The graph again with the sibling outputs it lacks (an existing `dev`
/// that no root reaches) as extra roots, and the ids of PATH and the roots
/// in it; the graph as it is when it has them all.
fn with_siblings(
    ctx: &Context,
    src: &dyn StoreSource,
    g: Graph,
    p: NodeId,
    root_ids: Vec<NodeId>,
    siblings: &[SiblingOutput],
) -> anyhow::Result<(Graph, NodeId, Vec<NodeId>)> {
    let index = g.index();
    if siblings.iter().all(|s| index.contains_key(&s.path)) {
        return Ok((g, p, root_ids));
    }
    let path = g.path(p).clone();
    let roots: Vec<_> = root_ids.iter().map(|&r| g.path(r).clone()).collect();
    let mut all: Vec<_> = g.roots().iter().map(|&r| g.path(r).clone()).collect();
    for x in std::iter::once(&path).chain(siblings.iter().map(|s| &s.path)) {
        if !all.contains(x) {
            all.push(x.clone());
        }
    }
    let g = ctx.load(src, &all)?;
    let index = g.index();
    let p = index[&path];
    let root_ids = roots.iter().map(|r| index[r]).collect();
    Ok((g, p, root_ids))
}
