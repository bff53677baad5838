//! `nix-heft check`: the CI gate. Rules come from the flags, a config
//! file's keys among them (src/config_file.rs, [`Settings::new`]); this
//! file reads the baseline, resolves the roots and the forbidden globs in
//! the store, and prints the verdict in the format asked for.

use std::process::ExitCode;

use clap::Args;

use nix_heft_analysis::check::{Baseline, BaselineFrom, Config, Settings};
use nix_heft_report::check::CheckReport;
use nix_heft_report::size::SizeReport;

use super::Context;
use super::review::{self, ReviewArgs};

/// A closure-size gate for CI: a budget, a growth limit against a
/// baseline, forbidden paths and forbidden verdicts, each violation
/// explained. Exit code 4 when a rule is broken.
///
/// When GITHUB_STEP_SUMMARY names a file (as in a GitHub Actions step),
/// the markdown verdict is also appended to it, whatever --format or
/// --json prints on standard output: the job summary is for people
/// reading the run, the JSON for the next step.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Roots, in any form `size` accepts (or `roots` in the config file).
    #[arg(value_name = "ROOT")]
    roots: Vec<String>,
    #[command(flatten)]
    rules: super::rules::RuleFlags,
    /// Baseline: the closure of this root (same --store; any ROOT form,
    /// installables included).
    #[arg(long, value_name = "ROOT", conflicts_with = "against_json")]
    against: Option<String>,
    /// Baseline: a saved `nix-heft size --json`.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    against_json: Option<std::path::PathBuf>,
    /// Fail when a reference is held only by documentation (docs), only by
    /// build-time files (build) or only by dead holds (dead).
    #[arg(
        long,
        value_name = "VERDICT,...",
        value_delimiter = ',',
        value_parser = super::OneOf(&["docs", "build", "dead"])
    )]
    forbid_verdict: Vec<String>,
    /// Flags from a TOML file (default: ./nix-heft.toml when present):
    /// every flag of check, global ones included, is a key spelled as the
    /// flag; flags given override its keys, lists add up.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    config: Option<std::path::PathBuf>,
    #[command(flatten)]
    review: ReviewArgs,
}

impl CheckArgs {
    /// The flags that make the rules (the global `--store` included), for
    /// [`Settings::new`].
    fn as_config(&self, store: Option<&str>) -> Config {
        Config {
            roots: self.roots.clone(),
            store: store.map(str::to_string),
            max_closure: self.rules.max_closure.clone(),
            max_growth: self.rules.max_growth.clone(),
            against: self.against.clone(),
            against_json: self.against_json.clone(),
            forbid: self.rules.forbid.clone(),
            forbid_verdict: self.forbid_verdict.clone(),
            format: self.review.format.clone(),
        }
    }
}

/// Checks the rules over the roots' closure and prints the verdict; exit
/// code 4 when a rule is broken, else 3 for a partial read, else 0.
pub fn run(ctx: &Context, args: &CheckArgs) -> anyhow::Result<ExitCode> {
    // The config file's keys are in `args` already (src/config_file.rs).
    let format = review::format(args.review.format.as_deref(), ctx.json, None)?;
    let at = args.review.checked()?;
    let flags = args.as_config(ctx.store.as_deref());
    let settings = Settings::new(flags, &ctx.installables.store_dir)?;
    // The file is read before the store is opened: a bad baseline fails at
    // once.
    let saved = match &settings.baseline {
        Some(BaselineFrom::SizeJson(f)) => Some(SizeReport::read_baseline(f)?),
        _ => None,
    };
    // Several stores come from the command line only (a config file names
    // one).
    let src = if ctx.several_stores() {
        ctx.open()?
    } else {
        ctx.open_store(settings.store.as_deref())?
    };
    let src = src.as_ref();
    let baseline = match &settings.baseline {
        Some(BaselineFrom::Root(a)) => {
            let r = ctx.roots(src, std::slice::from_ref(a))?;
            Some(Baseline::from_graph(&ctx.load(src, &r)?))
        }
        _ => saved,
    };
    let roots = ctx.roots(src, &settings.roots)?;
    let g = ctx.load(src, &roots)?;
    let checked = nix_heft_ops::pipeline::check(
        src,
        &g,
        &settings.rules,
        baseline.as_ref(),
        &ctx.read_bar(src),
    );
    let report = CheckReport {
        ok: checked.violations.is_empty(),
        roots: roots.iter().map(|r| r.to_string()).collect(),
        closure_size: checked.closure_size,
        baseline,
        rules: settings.shown,
        violations: checked.violations,
        problems: checked.problems,
    };
    let partial = review::emit(
        ctx,
        src,
        &report,
        format,
        &args.review,
        at.as_ref(),
        &args.review.text_options(ctx),
    )?;
    Ok(if report.ok {
        partial
    } else {
        ExitCode::from(nix_heft_types::exit::VIOLATION)
    })
}
