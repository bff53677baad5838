//! `nix-heft size`: closure, self and added size of every path.

use std::process::ExitCode;

use clap::Args;

use nix_heft_report::TextOptions;
use nix_heft_report::size::{SizeOptions, SizeReport, SortKey, UnknownOutputs};

use super::Context;
use super::context::Emit;

/// Closure size, self size and added size of every path in a closure.
///
/// SELF is the path's own NAR size (`nix path-info -s`). CLOSURE is the
/// size of everything it references, directly or not, itself included
/// (`nix path-info -S`). ADDED is what would leave the closure of the
/// given roots if this one path were no longer kept: itself plus every
/// path that is reachable only through it. A large library shared by two
/// consumers therefore has an ADDED size that counts only once, under the
/// nearest path that all routes to it pass through, not under each
/// consumer.
#[derive(Args, Debug)]
pub struct SizeArgs {
    /// Roots: store paths, paths inside them, symlinks like ./result,
    /// package names and globs (`llama-cpp-rocm`, `rocm-llvm*`), or
    /// installables as `nix` takes them, evaluated but never built
    /// (`nixpkgs#hello`, `.#default^out,dev`, `-f FILE ATTR`, `--expr`, a
    /// `.drv` or `DRV^out` for its outputs).
    #[arg(required = true, value_name = "ROOT")]
    roots: Vec<String>,
    /// Order of the table (largest first, except name).
    #[arg(long, value_enum, default_value_t = Sort::Added)]
    sort: Sort,
    /// Show only the first N paths.
    #[arg(long, value_name = "N", value_hint = clap::ValueHint::Other)]
    top: Option<usize>,
    /// Print exact byte counts instead of IEC units.
    #[arg(long)]
    bytes: bool,
    /// Include each path's registered references (JSON: a `references`
    /// array; table: a REFS count).
    #[arg(long)]
    references: bool,
    /// The build-time graph instead of the run-time closure (as
    /// `nix-tree --derivation`): nodes are derivations and sources, edges
    /// `inputDrvs` and `inputSrcs` from the `.drv` files (local or chroot
    /// store); a derivation's SELF is its outputs' size where they are
    /// valid (in the local store or --store's cache), those unknown
    /// counted as 0 and listed. An installable ROOT means its `.drv`.
    #[arg(long)]
    derivation: bool,
}

/// `--sort` values; the library's [`SortKey`] knows nothing of clap.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Sort {
    /// Added size.
    Added,
    /// Own NAR size.
    #[value(name = "self")]
    SelfSize,
    /// Closure size.
    Closure,
    /// Name.
    Name,
}

impl From<Sort> for SortKey {
    fn from(s: Sort) -> SortKey {
        match s {
            Sort::Added => SortKey::Added,
            Sort::SelfSize => SortKey::SelfSize,
            Sort::Closure => SortKey::Closure,
            Sort::Name => SortKey::Name,
        }
    }
}

/// Loads the closure and prints its sizes: the graph alone, no read.
pub fn run(ctx: &Context, args: &SizeArgs) -> anyhow::Result<ExitCode> {
    if args.derivation {
        let ctx = &ctx.for_derivations();
        let src = ctx.open_derivations()?;
        let roots = ctx.roots(&src, &args.roots)?;
        let g = ctx.load(&src, &roots)?;
        let mut report = report(&g, args);
        report.unknown_outputs = UnknownOutputs::of(src.unknown(), &g);
        return emit(ctx, &src, &report, args);
    }
    let src = ctx.open()?;
    let src = src.as_ref();
    let roots = ctx.roots(src, &args.roots)?;
    let g = ctx.load(src, &roots)?;
    let report = report(&g, args);
    let shown = emit(ctx, src, &report, args);
    super::keep_until_exit((g, report));
    shown
}

fn report(g: &nix_heft_graph::Graph, args: &SizeArgs) -> SizeReport {
    SizeReport::new(
        g,
        &nix_heft_graph::Sizes::compute(g),
        SizeOptions {
            sort: args.sort.into(),
            top: args.top,
            references: args.references,
        },
    )
}

fn emit(
    ctx: &Context,
    src: &dyn nix_heft_store::source::StoreSource,
    report: &SizeReport,
    args: &SizeArgs,
) -> anyhow::Result<ExitCode> {
    ctx.emit(
        Some(src),
        report,
        Emit::Report(TextOptions {
            exact_bytes: args.bytes,
            ..ctx.text_options()
        }),
    )
}
