//! The command layer of the `nix-heft` binary: one module per subcommand,
//! each holding that command's clap arguments and the one function that
//! turns them into library calls and chooses the report. A new command is a
//! new file here and a line in `main.rs`'s `Command` enum and dispatch.
//!
//! [`context`] is the glue every command shares (the global flags, stores,
//! text layout, progress, printing, exit codes); the library has no clap
//! types and prints nothing.

pub mod advise;
pub mod bisect;
pub mod browse;
pub mod check;
pub mod completions;
pub mod context;
pub mod diff;
pub mod history;
pub mod impact;
pub mod installables;
pub mod man;
pub mod partition;
pub mod refs;
pub mod refused;
pub mod report;
pub mod review;
pub mod roots;
pub mod rules;
pub mod size;
pub mod split;
pub mod trace;
pub mod tree;
pub mod why;

pub use context::{Color, Context, Emit};

use clap::Args;

use nix_heft_graph::NodeId;

/// Leaves `value` unfreed: the command ends right after, and a million
/// roots' or paths' allocations freed one by one took a tenth of a run
/// (0.4 s of CPU on 1.5 million roots, bench/roots.sh).
pub(crate) fn keep_until_exit<T>(value: T) {
    std::mem::forget(value);
}

/// A flag's value among a fixed list, kept as the string the library
/// parses (a config file gives the same values): clap refuses any other
/// (exit 2, listing them), `--help` and the man pages list them, and shell
/// completions offer them instead of file names. Spaces around a value are
/// ignored, so a comma-separated list (`--forbid-verdict 'docs, dead'`)
/// reads as written.
#[derive(Clone, Debug)]
pub struct OneOf(pub &'static [&'static str]);

impl clap::builder::TypedValueParser for OneOf {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let trimmed = value
            .to_str()
            .map_or(value, |v| std::ffi::OsStr::new(v.trim()));
        clap::builder::PossibleValuesParser::new(self.0.iter().copied())
            .parse_ref(cmd, arg, trimmed)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.0.iter().map(|v| clap::builder::PossibleValue::new(*v)),
        ))
    }
}

/// `--trace FILE`, shared by the commands that judge holds.
#[derive(Args, Debug, Default)]
pub struct TraceOpt {
    /// A trace written by `nix-heft trace -o FILE` (repeat to merge several):
    /// holds the traced workload used become `runtime`, and evidence in
    /// files it never touched is noted `traced: not used`.
    #[arg(long = "trace", value_name = "FILE")]
    traces: Vec<std::path::PathBuf>,
}

impl TraceOpt {
    /// The trace files given, absolute (for a command to copy).
    pub fn files(&self) -> Vec<std::path::PathBuf> {
        self.traces
            .iter()
            .map(|t| std::path::absolute(t).unwrap_or_else(|_| t.clone()))
            .collect()
    }

    /// The merged traces, `None` without `--trace`; read before the store
    /// so that a bad trace file fails at once.
    pub fn load(&self) -> anyhow::Result<Option<nix_heft_trace::file::TraceSet>> {
        if self.traces.is_empty() {
            return Ok(None);
        }
        Ok(Some(nix_heft_trace::file::TraceSet::load(&self.traces)?))
    }
}

/// Loads the closure of `roots` plus `path` and returns the graph with the
/// ids of `path` and of the roots.
fn load_with(
    ctx: &Context,
    src: &dyn nix_heft_store::source::StoreSource,
    path: &nix_heft_format::StorePath,
    roots: &[nix_heft_format::StorePath],
) -> anyhow::Result<(nix_heft_graph::Graph, NodeId, Vec<NodeId>)> {
    let mut all = roots.to_vec();
    if !all.contains(path) {
        all.push(path.clone());
    }
    let g = ctx.load(src, &all)?;
    let index = g.index();
    let p = index[path];
    let r = roots.iter().map(|x| index[x]).collect();
    Ok((g, p, r))
}

/// The graph, PATH's id and the roots' ids for `split` and `partition`:
/// with roots given, PATH is looked up in their closure first.
pub fn target_and_roots(
    ctx: &Context,
    src: &dyn nix_heft_store::source::StoreSource,
    path_arg: &str,
    root_args: &[String],
    default_roots: impl FnOnce(
        &nix_heft_format::StorePath,
    ) -> anyhow::Result<Vec<nix_heft_format::StorePath>>,
) -> anyhow::Result<(nix_heft_graph::Graph, NodeId, Vec<NodeId>)> {
    if !root_args.is_empty() {
        let roots = ctx.roots(src, root_args)?;
        let g = ctx.load(src, &roots)?;
        // An installable names its own paths; a name is looked for in the
        // roots' closure first.
        if !ctx.is_installable(src, path_arg)
            && let Some(p) =
                nix_heft_ops::roots::resolve_one_in_closure(&g, src.store_dir(), path_arg)?
        {
            let r = g.roots().to_vec();
            return Ok((g, p, r));
        }
        let path = ctx.one_root(src, path_arg)?;
        return load_with(ctx, src, &path, &roots);
    }
    let path = ctx.one_root(src, path_arg)?;
    let roots = default_roots(&path)?;
    load_with(ctx, src, &path, &roots)
}
