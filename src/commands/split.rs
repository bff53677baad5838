//! `nix-heft split PATH`: a what-if split of a path into outputs, as
//! `moveToOutput` would make them, without rebuilding.

use std::process::ExitCode;

use clap::Args;

use nix_heft_report::split::SplitReport;

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
    let split = nix_heft_ops::pipeline::split(
        src,
        nix_heft_ops::pipeline::SplitRequest {
            graph: g,
            path: p,
            roots: root_ids,
            moves,
            named: &args.moves,
            propagate: !args.no_propagate_dev,
            traces: traces.as_ref(),
        },
        &ctx.read_bar(src),
    )?;
    let mut report = SplitReport::new(
        &split.graph,
        split.path,
        split.moves,
        split.plan,
        split.problems,
    );
    report.warnings.extend(split.warnings);
    ctx.emit(Some(src), &report, Emit::Report(ctx.text_options()))
}
