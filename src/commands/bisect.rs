//! `nix-heft bisect ATTR --good REV --bad REV`: the first commit that made
//! an attribute's closure bad by a rule, from binary caches and
//! evaluation, never building.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use nix_heft_eval::attrs::Evaluator;
use nix_heft_ops::bisect::{Request, Rule, bisect};
use nix_heft_report::bisect::BisectReport;

use super::Context;
use super::review::{self, ReviewArgs};

/// Which commit made a closure bad: finds the first commit between --good
/// and --bad at which ATTR's closure breaks the rule (--max-closure,
/// --max-growth or --forbid), without building.
///
/// First a binary search over the commits a cache holds (--revs-file,
/// e.g. the channel bumps; else every first-parent commit): each probe
/// evaluates ATTR at the commit in a temporary worktree and reads its
/// closure from the stores (--store https://cache.nixos.org); a commit the
/// stores lack or that does not evaluate is skipped, as `git bisect skip`
/// skips, for its neighbour. It ends with a cached good commit and a
/// cached bad one. Then every commit between them is instantiated into a
/// temporary store (the .drv files never touch yours): the first commit
/// after which the package the bad closure gained is in ATTR's build
/// graph is the first bad commit, shown with its derivation's root causes
/// (as diff --derivation). Exit 3 when several commits could be it (they
/// are listed).
#[derive(Args, Debug)]
// One rule: a commit is bad by one measure (clap names the two given).
#[command(group(clap::ArgGroup::new("rule").args(["max_closure", "max_growth", "forbid"]).multiple(false)))]
pub struct BisectArgs {
    /// The attribute (dotted path of the checkout's default.nix, or of
    /// --file inside it); written .#ATTR, of the repository as a flake at
    /// each commit.
    #[arg(value_name = "ATTR")]
    attr: String,
    /// The git checkout (default: the current directory).
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    repo: Option<PathBuf>,
    /// A commit good by the rule, whose closure the stores hold.
    #[arg(long, value_name = "REV", value_hint = clap::ValueHint::Other)]
    good: String,
    /// A later commit (good is its ancestor) bad by the rule, whose
    /// closure the stores hold.
    #[arg(long, value_name = "REV", value_hint = clap::ValueHint::Other)]
    bad: String,
    // Bad by one rule: a closure larger, grown more, or holding a path.
    #[command(flatten)]
    rules: super::rules::RuleFlags,
    /// The commits a cache holds, one revision a line (`#` comments): the
    /// binary search probes only these.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    revs_file: Option<PathBuf>,
    /// Confirm by building: the first bad commit and its parent are built
    /// in your store, with your settings (nix-build, or nix build for a
    /// flake: the one write nix-heft makes, and only with this flag), and
    /// each built closure judged by the rule. Exit 3 when a build fails or
    /// disagrees.
    #[arg(long)]
    build: bool,
    #[command(flatten)]
    evaluator: super::installables::EvaluatorFlag,
    #[command(flatten)]
    review: ReviewArgs,
}

/// Searches and prints the first bad commit; exit 3 when no single commit
/// could be named.
pub fn run(ctx: &Context, args: &BisectArgs) -> anyhow::Result<ExitCode> {
    let format = review::format(args.review.format.as_deref(), ctx.json, None)?;
    let at = args.review.checked()?;
    let (rule, said) = Rule::of(args.rules.text(), &ctx.installables.store_dir)?;
    let ev = Evaluator::chosen(&args.evaluator.evaluator, None, None, None);
    let src = ctx.open()?;
    let src = src.as_ref();
    let found = bisect(
        src,
        &Request {
            repo: args.repo.clone().unwrap_or_else(|| PathBuf::from(".")),
            attr: &args.attr,
            good: args.good.clone(),
            bad: args.bad.clone(),
            rule,
            revs_file: args.revs_file.clone(),
            evaluator: &ev,
            options: &ctx.installables,
            build: args.build,
        },
        &ctx.step_spinner(),
    )?;
    let report = BisectReport::new(&found, &said, &ctx.store_names(&[], src), ev.name());
    review::emit(
        ctx,
        src,
        &report,
        format,
        &args.review,
        at.as_ref(),
        &args.review.text_options(ctx),
    )
}
