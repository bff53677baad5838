//! `nix-heft refused`: why Nix refuses (or would refuse) a build's output:
//! each reference or requisite a check forbids, with the files that hold
//! it, and the cycles between outputs, with both directions' files
//! (issue 33). Run by the setup hook inside the build (`--in-build`), or
//! afterwards on the derivation.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use nix_heft_core::graph::{Graph, NodeId};
use nix_heft_core::refusal::{self, BuildSpec, Check};
use nix_heft_core::unregistered::{Scanned, Tree};
use nix_heft_format::StorePath;
use nix_heft_report::refused::{Found, RefusedReport};
use nix_heft_store::source::StoreSource;
use nix_heft_types::Error;

use super::Context;

/// `refused`'s arguments.
#[derive(Args, Debug)]
pub struct RefusedArgs {
    /// The derivation (`.drv`) whose outputs to check: its outputs where
    /// they are (valid, or left unregistered by a failed build) against
    /// its checks, over the store.
    #[arg(value_name = "DRV", required_unless_present_any = ["in_build", "log"])]
    drv: Option<String>,
    /// Inside a build (the setup hook runs this): the outputs, their
    /// checks and the inputs are the builder's environment (or
    /// `.attrs.json`); no store database is read, as a sandbox has none.
    #[arg(long, conflicts_with = "drv")]
    in_build: bool,
    /// Only this output (the hook passes the one being fixed up);
    /// repeatable. Default: every output.
    #[arg(long = "output", value_name = "NAME")]
    outputs: Vec<String>,
    /// Nix's error text (a file, or - for standard input: what nix-build
    /// or nix build printed): each refusal it reports, its derivation,
    /// output and paths; then, for each derivation whose outputs Nix left
    /// behind, the files, as with DRV.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["drv", "in_build"], value_hint = clap::ValueHint::FilePath)]
    log: Option<PathBuf>,
    /// Exit 4 when a check refuses a path or outputs refer to each other.
    #[arg(long)]
    fail: bool,
}

/// What the checks are run over.
struct Setting<'a> {
    spec: BuildSpec,
    store_dir: String,
    base: Option<&'a dyn StoreSource>,
    trees: Vec<Tree>,
    candidates: Vec<StorePath>,
    drv: Option<String>,
}

/// Checks the outputs and prints each refusal with its files.
pub fn run(ctx: &Context, args: &RefusedArgs) -> anyhow::Result<ExitCode> {
    if args.in_build {
        let setting = in_build()?;
        return report(ctx, args, setting);
    }
    if let Some(log) = &args.log {
        return from_log(ctx, args, log);
    }
    let drv_arg = args.drv.clone().unwrap_or_default();
    report_drv(ctx, args, ctx.open()?.as_ref(), &drv_arg)
}

/// Nix's error text read: what it refuses, then each derivation's files
/// where its outputs are still there.
fn from_log(ctx: &Context, args: &RefusedArgs, log: &std::path::Path) -> anyhow::Result<ExitCode> {
    use std::io::Read;
    let mut text = Vec::new();
    let limit = nix_heft_format::nix_error::MAX_TEXT as u64;
    if log == std::path::Path::new("-") {
        // The last part is what matters (Nix prints its errors last), but
        // the parser keeps that itself: read at most a little more.
        std::io::stdin()
            .lock()
            .take(limit * 2)
            .read_to_end(&mut text)?;
    } else {
        std::fs::File::open(log)
            .and_then(|f| f.take(limit * 2).read_to_end(&mut text))
            .map_err(|source| Error::Io {
                path: log.to_path_buf(),
                source,
            })?;
    }
    let store_dir = ctx.installables.store_dir.clone();
    let parsed = nix_heft_format::nix_error::parse(&store_dir, &text);
    if parsed.refusals.is_empty() {
        return Err(Error::Usage(format!(
            "{}: no refusal of Nix's found (an output check or a cycle){}",
            log.display(),
            if parsed.derivations.is_empty() {
                String::new()
            } else {
                format!("; it names {}", plural_drvs(&parsed.derivations))
            }
        ))
        .into());
    }
    let base = ctx.open()?;
    let mut summary = Vec::new();
    let mut drvs: Vec<StorePath> = Vec::new();
    for f in &parsed.refusals {
        use nix_heft_format::nix_error::Refusal as R;
        let (line, drv) = match &f.refusal {
            R::Forbidden {
                drv, output, paths, ..
            } => {
                let names: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
                let left =
                    base.is_valid(output)? || std::fs::symlink_metadata(output.as_str()).is_ok();
                (
                    format!(
                        "Nix refused output {output}{}: it refers to (or its closure holds) {}; {}",
                        drv.as_ref().map(|d| format!(" of {d}")).unwrap_or_default(),
                        names.join(", "),
                        if left {
                            "its files are still there (below)"
                        } else {
                            "its files are gone: build it again with nix-heft's setup hook (nativeBuildInputs = [ nix-heft ]) to see them"
                        }
                    ),
                    drv.clone(),
                )
            }
            R::Cycle { drv, from, to } => (
                format!(
                    "Nix found a cycle{}: {from} refers to {to}, which refers back; the outputs' files show both directions when Nix left them (below), else build again with nix-heft's setup hook",
                    drv.as_ref().map(|d| format!(" in {d}")).unwrap_or_default(),
                ),
                drv.clone(),
            ),
            R::TooLarge {
                drv,
                path,
                closure,
                size,
                limit,
            } => (
                format!(
                    "Nix refused {path}: its {} is {} bytes, over the limit of {limit}; `nix-heft size` and `advise` on it say what is heavy",
                    if *closure { "closure" } else { "NAR" },
                    size
                ),
                drv.clone(),
            ),
        };
        summary.push(line);
        if let Some(d) = drv
            && !drvs.contains(&d)
        {
            drvs.push(d);
        }
    }
    if !ctx.json {
        for l in &summary {
            println!("nix-heft: {l}");
        }
    }
    let mut code = ExitCode::SUCCESS;
    for d in &drvs {
        if std::fs::symlink_metadata(d.as_str()).is_err() && !base.is_valid(d)? {
            continue;
        }
        match report_drv(ctx, args, base.as_ref(), d.as_str()) {
            Ok(c) => code = c,
            Err(e) => eprintln!("nix-heft: {d}: {e}"),
        }
    }
    Ok(code)
}

fn plural_drvs(d: &[StorePath]) -> String {
    let names: Vec<String> = d.iter().take(3).map(|p| p.to_string()).collect();
    if d.len() > 3 {
        format!("{} and {} more", names.join(", "), d.len() - 3)
    } else {
        names.join(", ")
    }
}

/// The checks of the derivation `drv_arg` over its outputs where they are.
fn report_drv(
    ctx: &Context,
    args: &RefusedArgs,
    base: &dyn StoreSource,
    drv_arg: &str,
) -> anyhow::Result<ExitCode> {
    let store_dir = base.store_dir().to_string();
    let drv_path = StorePath::parse(&store_dir, drv_arg)
        .map_err(|e| Error::Usage(format!("{drv_arg}: {e}")))?;
    let file = base
        .real_path(&drv_path)
        .unwrap_or_else(|| PathBuf::from(drv_path.as_str()));
    let drv = nix_heft_format::derivation::Derivation::read(&store_dir, &file)
        .map_err(|e| Error::Usage(format!("{drv_arg}: {e}")))?;
    let spec = BuildSpec::from_drv(&store_dir, &drv).map_err(Error::Usage)?;
    // Outputs the store does not hold but whose files are there (a failed
    // build leaves them) are read as trees; valid ones as they are.
    let mut trees = Vec::new();
    for p in spec.outputs.values() {
        if !base.is_valid(p)? {
            let dir = nix_heft_store::source::files_dir(base)
                .map(|d| d.join(p.base_name()))
                .unwrap_or_else(|| PathBuf::from(p.as_str()));
            if std::fs::symlink_metadata(&dir).is_ok() {
                trees.push(Tree {
                    path: p.clone(),
                    dir,
                });
            }
        }
    }
    // As Nix's scanner: every path the build could name (here, every
    // valid path), and the outputs.
    let mut candidates = base.all_paths()?;
    candidates.extend(spec.outputs.values().cloned());
    let setting = Setting {
        spec,
        store_dir,
        base: Some(base),
        trees,
        candidates,
        drv: Some(drv_path.to_string()),
    };
    report(ctx, args, setting)
}

/// The build's own view, from its environment.
fn in_build() -> anyhow::Result<Setting<'static>> {
    let vars: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let store_dir = vars
        .get("NIX_STORE")
        .cloned()
        .unwrap_or_else(|| nix_heft_store::source::DEFAULT_STORE_DIR.to_string());
    // `__structuredAttrs`: Nix writes the attributes as JSON in the build
    // directory (newer Nix also names the file in NIX_ATTRS_JSON_FILE).
    let json_file = vars
        .get("NIX_ATTRS_JSON_FILE")
        .map(PathBuf::from)
        .or_else(|| {
            vars.get("NIX_BUILD_TOP")
                .map(|t| PathBuf::from(t).join(".attrs.json"))
                .filter(|f| f.is_file())
        });
    let structured = match &json_file {
        Some(f) => Some(std::fs::read_to_string(f).map_err(|source| Error::Io {
            path: f.clone(),
            source,
        })?),
        None => None,
    };
    let spec =
        BuildSpec::from_env(&store_dir, &vars, structured.as_deref()).map_err(Error::Usage)?;
    let trees = spec
        .outputs
        .values()
        .filter(|p| std::fs::symlink_metadata(p.as_str()).is_ok())
        .map(|p| Tree {
            path: p.clone(),
            dir: PathBuf::from(p.as_str()),
        })
        .collect();
    let candidates = spec.named.clone();
    Ok(Setting {
        spec,
        store_dir,
        base: None,
        trees,
        candidates,
        drv: vars.get("drvPath").cloned(),
    })
}

fn report(ctx: &Context, args: &RefusedArgs, setting: Setting) -> anyhow::Result<ExitCode> {
    let Setting {
        mut spec,
        store_dir,
        base,
        trees,
        candidates,
        drv,
    } = setting;
    for o in &args.outputs {
        if !spec.outputs.contains_key(o) {
            let have: Vec<&str> = spec.outputs.keys().map(String::as_str).collect();
            return Err(Error::Usage(format!(
                "--output {o}: the derivation's outputs are {}",
                have.join(", ")
            ))
            .into());
        }
    }
    let chosen: Vec<String> = if args.outputs.is_empty() {
        spec.outputs.keys().cloned().collect()
    } else {
        args.outputs.clone()
    };
    spec.checks.retain(|o, _| chosen.contains(o));
    let present: Vec<StorePath> = spec
        .outputs
        .values()
        .filter(|p| {
            trees.iter().any(|t| &t.path == *p)
                || base.is_some_and(|b| b.is_valid(p).unwrap_or(false))
        })
        .cloned()
        .collect();
    if present.is_empty() {
        return Err(Error::Usage(
            "none of the outputs is there to read (not built, or removed after the failure)".into(),
        )
        .into());
    }
    // Closure checks need the inputs' own references; the others only
    // the outputs' direct ones.
    let recursive = spec
        .checks
        .values()
        .any(|c| c.0.keys().any(|k| Check::recursive(*k)));
    let mut scanned = Scanned::new(base, &store_dir, trees, candidates);
    if base.is_none() {
        // Inside a build: the inputs the environment does not name are
        // found written out in the outputs and inputs (only the input
        // closure exists in a sandbox); closure checks read the inputs'
        // own files, the others stop at the outputs' direct references.
        scanned = scanned.discovering();
        if !recursive {
            scanned = scanned.candidates_as_leaves();
        }
    }
    let g = Graph::load(&scanned, &present)?;
    let refusals = refusal::refusals(&g, &spec, &store_dir);
    let index = g.index();
    let output_names: BTreeMap<NodeId, String> = spec
        .outputs
        .iter()
        .filter_map(|(n, p)| index.get(p).map(|&v| (v, n.clone())))
        .collect();
    let output_ids: Vec<NodeId> = output_names.keys().copied().collect();
    // Each cycle once: in the run for its first output (by path), so the
    // hook, run once per output, says it once.
    let cycles: Vec<Vec<NodeId>> = refusal::cycles(&g, &output_ids)
        .into_iter()
        .filter(|c| output_names.get(&c[0]).is_some_and(|n| chosen.contains(n)))
        .collect();
    let wants = refusal::wants(&g, &refusals, &cycles);
    let c = nix_heft_core::pipeline::classified(&scanned, &g, &wants, None, &|_: u64| {});
    let chains = refusal::explained(&g, &c, &refusals);
    let problems = c.problems.clone();
    let report = RefusedReport::new(
        &g,
        &c,
        drv,
        &Found {
            output_names: &output_names,
            refusals: &refusals,
            chains: &chains,
            cycles: &cycles,
        },
        problems,
    );
    let refused = report.any();
    // Inside a build, a clean output leaves no line in the build log.
    let code = if !(args.in_build && !refused && !ctx.json) {
        ctx.emit(
            None,
            &report,
            super::context::Shown::Report(ctx.text_options()),
        )?
    } else {
        ctx.finish(nix_heft_report::Report::problems(&report))
    };
    Ok(if args.fail && refused {
        ExitCode::from(nix_heft_types::exit::VIOLATION)
    } else {
        code
    })
}
