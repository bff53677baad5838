//! `nix-heft partition PATH --by REGEX`: a what-if grouping of a path's
//! files (per GPU target, say), each group's cost, or the closure with only
//! some kept.

use std::process::ExitCode;

use clap::Args;

use nix_heft_report::partition::PartitionReport;

use super::{Context, Emit, TraceOpt};

/// What-if: group PATH's files by a regex capture (e.g. a GPU target)
/// and show what each group costs, or the closure with only some kept.
#[derive(Args, Debug)]
pub struct PartitionArgs {
    /// The path to partition.
    #[arg(value_name = "PATH")]
    path: String,
    /// Regex whose first capture group (or whole match) in a file's path or
    /// symlink target names its group, e.g. 'gfx[0-9a-z]+'.
    #[arg(long, value_name = "REGEX", value_hint = clap::ValueHint::Other)]
    by: String,
    /// Keep only these groups (plus files in no group) and show the closure.
    #[arg(long, value_name = "VALUE,...", value_delimiter = ',', value_hint = clap::ValueHint::Other)]
    keep: Option<Vec<String>>,
    /// Roots whose closure to measure (default: PATH itself).
    #[arg(long = "root", value_name = "ROOT")]
    roots: Vec<String>,
    #[command(flatten)]
    trace: TraceOpt,
}

/// Reads PATH, groups its files and prints the groups (and, with a
/// trace, which of them the workload used).
pub fn run(ctx: &Context, args: &PartitionArgs) -> anyhow::Result<ExitCode> {
    let src = ctx.open()?;
    let src = src.as_ref();
    let traces = args.trace.load()?;
    // A bad regex is a usage error, found before anything is read.
    regex::bytes::Regex::new(&args.by).map_err(|e| nix_heft_types::Error::BadPattern {
        pattern: args.by.clone(),
        reason: e.to_string(),
    })?;
    let (g, p, root_ids) = super::target_and_roots(ctx, src, &args.path, &args.roots, |path| {
        Ok(vec![path.clone()])
    })?;
    let done = nix_heft_ops::pipeline::partition(
        src,
        nix_heft_ops::pipeline::PartitionRequest {
            graph: &g,
            path: p,
            by: &args.by,
            keep: args.keep.as_deref(),
            roots: &root_ids,
            traces: traces.as_ref(),
        },
        &ctx.read_bar(src),
    )?;
    let mut report = PartitionReport::new(
        &g,
        p,
        &args.by,
        args.keep.clone(),
        &root_ids,
        done.partition,
        done.problems,
    );
    report.traced_groups = done.traced_groups;
    ctx.emit(Some(src), &report, Emit::Report(ctx.text_options()))
}
