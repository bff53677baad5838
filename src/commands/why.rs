//! `nix-heft why ROOT DEP`: the chains from a root to a dependency, each
//! edge with the files holding it.

use std::process::ExitCode;

use clap::Args;

use nix_heft_report::TextOptions;
use nix_heft_report::why::WhyReport;

use super::tree::{self, TreeArgs};
use super::{Context, Emit, TraceOpt};

/// The chains from ROOT to DEP, and for every edge on them the files
/// that hold the reference: where, and what kind of hold (symlink, ELF
/// RUNPATH / NEEDED / interpreter / string, shebang, text ...).
#[derive(Args, Debug)]
pub struct WhyArgs {
    /// The root (store path, ./result, name, installable); omitted with
    /// --dir, whose tree is the root.
    #[arg(value_name = "ROOT")]
    root: String,
    /// The dependency: a store path, a name or glob matched against the
    /// root's closure (several matches are all explained), or an
    /// installable (its outputs in the closure).
    #[arg(value_name = "DEP")]
    dep: Option<String>,
    /// Show every chain (up to 10,000, strongest first), not only the
    /// strongest to each dependency; evidence stays grouped (add
    /// `--evidence` for every piece).
    #[arg(long)]
    all: bool,
    /// List every piece of evidence instead of grouping many of one kind
    /// in one directory.
    #[arg(long)]
    evidence: bool,
    /// Which garbage-collector roots keep ROOT alive (a store path, a path
    /// inside one, a link to one, a name), each with a shortest chain from
    /// the root and what removing it frees, and what removing them all
    /// frees, as Nix's collector counts it (a local or chroot store; see
    /// `roots`).
    #[arg(long, conflicts_with_all = ["all", "derivation", "dep", "dir"])]
    roots: bool,
    /// The build-time graph (as `nix why-depends --derivation`): ROOT and
    /// DEP are derivations (an installable its `.drv`), the chains run
    /// through `inputDrvs` and `inputSrcs`, and each edge's evidence is
    /// the input's entry in the `.drv` file (the outputs it uses).
    #[arg(long)]
    derivation: bool,
    #[command(flatten)]
    trace: TraceOpt,
    #[command(flatten)]
    tree: TreeArgs,
}

/// Reads every edge on some chain from ROOT to DEP, so that chains can be
/// ranked by verdict, and prints the strongest (or all).
pub fn run(ctx: &Context, args: &WhyArgs) -> anyhow::Result<ExitCode> {
    if args.roots {
        return why_roots(ctx, &args.root);
    }
    if args.derivation {
        let ctx = &ctx.for_derivations();
        let Some(dep) = &args.dep else {
            return Err(nix_heft_types::Error::Usage("why needs ROOT and DEP".into()).into());
        };
        return explain(ctx, &ctx.open_derivations()?, args, &args.root, dep);
    }
    // With --dir the one positional is DEP.
    let (root, dep) = match (&args.tree.dir, &args.dep) {
        (Some(_), None) => (None, args.root.clone()),
        (Some(_), Some(_)) => {
            return Err(nix_heft_types::Error::Usage(
                "with --dir, give only DEP: the tree is the root".into(),
            )
            .into());
        }
        (None, Some(d)) => (Some(args.root.as_str()), d.clone()),
        (None, None) => {
            return Err(nix_heft_types::Error::Usage("why needs ROOT and DEP".into()).into());
        }
    };
    let opened = tree::open(ctx, &args.tree, root)?;
    let done = opened
        .with_source(|src| {
            let root = opened.root().unwrap_or_else(|| args.root.clone());
            explain(ctx, src, args, &root, &dep)
        })
        .unwrap_or_else(|| Err(tree::no_source()));
    // DEP a sibling output that a failed build left unregistered: no
    // candidate of the tree unless named (it is not valid).
    match done {
        Err(e) if opened.unnamed_unregistered(&ctx.installables.store_dir, &dep) => {
            Err(nix_heft_types::Error::Usage(format!(
                "{dep} is not valid (an output a failed build left unregistered), so it is no \
                 candidate of the tree: name it with --to {dep} ({e})"
            ))
            .into())
        }
        done => done,
    }
}

fn explain(
    ctx: &Context,
    src: &dyn nix_heft_store::source::StoreSource,
    args: &WhyArgs,
    root: &str,
    dep: &str,
) -> anyhow::Result<ExitCode> {
    let traces = args.trace.load()?;
    let root = ctx.one_root(src, root)?;
    let g = ctx.load(src, std::slice::from_ref(&root))?;
    let deps = ctx.in_closure(src, &g, dep)?;
    let root = g.roots()[0];
    let why = nix_heft_ops::pipeline::why(
        src,
        &g,
        root,
        &deps,
        args.all,
        traces.as_ref(),
        &ctx.read_bar(src),
    );
    let mut report = WhyReport::new(
        &g,
        root,
        dep,
        &deps,
        (why.count, why.shown),
        why.best,
        why.classified,
    );
    report.build_graph = ctx.derivation;
    let opts = TextOptions {
        every_line: args.evidence,
        ..ctx.text_options()
    };
    ctx.emit(Some(src), &report, Emit::Report(opts))
}

/// `why --roots PATH`: the roots that keep PATH, with chains.
fn why_roots(ctx: &Context, arg: &str) -> anyhow::Result<ExitCode> {
    let store = ctx.open_local()?;
    let path = ctx.one_root(&store, arg)?;
    let req = nix_heft_ops::gc::RootsRequest {
        why: Some(path.to_string()),
        detail: nix_heft_ops::gc::Listing::Top(0),
        ..ctx.collector_request(&store)?
    };
    let analysis = ctx.reading_roots(&store, || nix_heft_ops::gc::analyse(&store, &req))?;
    ctx.emit(
        None,
        &nix_heft_report::roots::WhyRootsReport::new(&analysis),
        Emit::Report(ctx.text_options()),
    )
}
