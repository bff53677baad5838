//! `nix-heft impact --before SIDE --after SIDE`: for every attribute a
//! change to a package set touches, its closure before and after, the
//! difference and why; the base usually read from a binary cache, the head
//! from the local store or a nixpkgs-review directory.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use nix_heft_eval::attrs::Evaluator;
use nix_heft_format::nixpkgs_review::ReviewDir;
use nix_heft_ops::impact::{self, Prepared, Request, Rules, Side, Sides};
use nix_heft_report::impact::{AttrList, ImpactReport, SideMeta};
use nix_heft_types::Error;

use super::Context;
use super::context::Emit;
use super::review::{self, ReviewArgs};

/// The closure impact of a change to a package set (a nixpkgs pull
/// request): for every attribute it changes (or each --attr), its
/// closure before and after, the difference and why (each package's
/// net change, the changes in several attributes said once), and which
/// attributes the change breaks or fixes the evaluation of; the base
/// read from a binary cache, the head from the local store or a
/// nixpkgs-review directory (any version's). Nothing is built: an
/// attribute a side lacks is "not built", with the command that builds
/// it. Exit code 4 when an attribute breaks --max-growth, --max-closure,
/// --max-output or --forbid; 1 when rules were given and no attribute
/// could be measured; 2 for a revision, checkout or --attr that names
/// nothing.
///
/// When GITHUB_STEP_SUMMARY names a file, the markdown report is also
/// appended to it, as diff's and check's are.
#[derive(Args, Debug)]
pub struct ImpactArgs {
    /// The base: a directory (its default.nix, or --file inside it), a Nix
    /// file, a flake reference (path:…, github:…), or a git revision of
    /// --repo.
    #[arg(long, value_name = "SIDE")]
    before: Option<String>,
    /// The head, in the same forms (optional with --nixpkgs-review).
    #[arg(long, value_name = "SIDE")]
    after: Option<String>,
    /// The git checkout whose revisions --before and --after name
    /// (default: the current directory). Each revision is checked out in a
    /// temporary worktree; your working tree is never touched.
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    repo: Option<PathBuf>,
    /// An attribute to compare (dotted path); repeatable.
    #[arg(long = "attr", value_name = "ATTR", value_hint = clap::ValueHint::Other)]
    attrs: Vec<String>,
    /// A file of attributes to compare, one per line (`#` comments).
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    attr_file: Option<PathBuf>,
    /// Compare every attribute whose out paths differ between the two
    /// evaluations, as nixpkgs' CI counts rebuilds (the default when no
    /// attribute is named).
    #[arg(long, conflicts_with_all = ["attrs", "attr_file"])]
    changed: bool,
    /// Store to read the base's outputs from (a binary cache such as
    /// https://cache.nixos.org); repeatable, read as one. Default: the
    /// run's stores (--store, --substituters).
    #[arg(long, value_name = "STORE")]
    before_store: Vec<String>,
    /// Store to read the head's outputs from; repeatable. Default: the
    /// run's stores (the local store unless --store says otherwise).
    #[arg(long, value_name = "STORE")]
    after_store: Vec<String>,
    /// A nixpkgs-review result directory (with report.json and results/):
    /// the attributes it reviewed, the head's outputs from its result links
    /// and its failed builds as failed.
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    nixpkgs_review: Option<PathBuf>,
    /// The system of the nixpkgs-review results to read (default: this
    /// machine's, or the only one the report has).
    #[arg(long, value_name = "SYSTEM", value_hint = clap::ValueHint::Other)]
    system: Option<String>,
    #[command(flatten)]
    evaluator: super::installables::EvaluatorFlag,
    /// nix-eval-jobs' --workers (default: one per core; nix-eval-jobs'
    /// own default is one).
    #[arg(long, value_name = "N", value_hint = clap::ValueHint::Other)]
    workers: Option<usize>,
    /// nix-eval-jobs' --max-memory-size (MiB per worker; default 4096, its
    /// own).
    #[arg(long, value_name = "MIB", value_hint = clap::ValueHint::Other)]
    max_memory_size: Option<u64>,
    /// Attributes per nix-env run (nixpkgs' ci/eval uses 5000).
    #[arg(long, value_name = "N", value_hint = clap::ValueHint::Other)]
    chunk_size: Option<usize>,
    // The rules, over each attribute's head closure (exit 4 when one is
    // broken).
    #[command(flatten)]
    rules: super::rules::RuleFlags,
    /// Fail when an attribute's outputs together are larger than SIZE, as
    /// Hydra's max_output_size measures a build (a build over it fails on
    /// Hydra and is never cached).
    #[arg(long, value_name = "SIZE", value_hint = clap::ValueHint::Other)]
    max_output: Option<String>,
    /// Added and removed paths explained per attribute.
    #[arg(long, value_name = "N", default_value_t = 5, value_hint = clap::ValueHint::Other)]
    top: usize,
    /// Read no file contents: chains without the holding files (no NAR is
    /// downloaded).
    #[arg(long)]
    no_evidence: bool,
    /// Also name the files that held each explained removed path in the
    /// base: from a binary cache, this downloads their referrers' NARs
    /// (by default removed paths get their chain only).
    #[arg(long, conflicts_with = "no_evidence")]
    removed_evidence: bool,
    /// Print exact byte counts instead of IEC units.
    #[arg(long)]
    bytes: bool,
    /// Print the attributes that would be compared, one per line, and stop
    /// (no store is read): what a CI job builds before comparing them.
    #[arg(long)]
    list: bool,
    #[command(flatten)]
    review: ReviewArgs,
}

/// Compares the closures of every attribute the change touches and prints
/// the impact; exit code 4 when an attribute breaks a rule, else 3 for a
/// partial read, else 0; 1 when rules were given and no attribute could be
/// measured (a gate that measured nothing does not pass).
pub fn run(ctx: &Context, args: &ImpactArgs) -> anyhow::Result<ExitCode> {
    let format = review::format(args.review.format.as_deref(), ctx.json, None)?;
    let at = args.review.checked()?;
    let rules = Rules::parse(
        args.rules.text(),
        args.max_output.as_deref(),
        &ctx.installables.store_dir,
    )?;
    let Some(before) = &args.before else {
        return Err(Error::Usage(
            "impact needs --before SIDE (a revision, a directory or a flake)".into(),
        )
        .into());
    };
    let review_dir = args
        .nixpkgs_review
        .as_deref()
        .map(|d| ReviewDir::open_with_store_dir(d, &ctx.installables.store_dir))
        .transpose()
        .map_err(|e| Error::Usage(format!("--nixpkgs-review: {e}")))?;
    if args.after.is_none() && review_dir.is_none() {
        return Err(
            Error::Usage("impact needs --after SIDE, or --nixpkgs-review DIR".into()).into(),
        );
    }
    let ev = Evaluator::chosen(
        &args.evaluator.evaluator,
        args.workers,
        args.max_memory_size,
        args.chunk_size,
    );
    let named = impact::named_attrs(&args.attrs, args.attr_file.as_deref())?;
    let watch = ctx.step_spinner();
    let prepared = impact::prepare(
        &Sides {
            before,
            after: args.after.as_deref(),
            repo: args.repo.as_deref(),
            review: review_dir.as_ref(),
            system: args.system.as_deref(),
            named: named.as_deref(),
            evaluator: &ev,
            opts: &ctx.installables,
        },
        &watch,
    )
    // As it is: the judge sees a side named wrong (exit 2) through it.
    ?;
    if args.list {
        let list = AttrList {
            attrs: prepared.attrs.clone(),
        };
        return ctx.emit(None, &list, Emit::Report(ctx.text_options()));
    }

    let (bsrc, asrc) = (
        ctx.open_stores(&args.before_store)?,
        ctx.open_stores(&args.after_store)?,
    );
    let found = impact::impact(
        prepared.before.input(bsrc.as_ref()),
        prepared.after.input(asrc.as_ref()),
        &Request {
            attrs: &prepared.attrs,
            top: args.top,
            rules: &rules,
            evidence: !args.no_evidence,
            removed_evidence: args.removed_evidence,
        },
        (&ctx.read_bar(bsrc.as_ref()), &ctx.read_bar(asrc.as_ref())),
    )?;
    let cwd = std::env::current_dir().unwrap_or_default();
    let build = |attr: &str, side: Side| prepared.build_command(attr, side, &cwd);
    let report = ImpactReport::new(
        &found,
        &context(ctx, args, &prepared, &ev, &found, [&*bsrc, &*asrc], &build),
        prepared.problems(&found, &asrc.describe()),
    );
    let partial = review::emit(
        ctx,
        asrc.as_ref(),
        &report,
        format,
        &args.review,
        at.as_ref(),
        &args.review.text_options_bytes(ctx, args.bytes),
    )?;
    found.gate(&rules)?;
    Ok(if report.broken() {
        ExitCode::from(nix_heft_types::exit::VIOLATION)
    } else {
        partial
    })
}

/// What the report needs beside the impact: how the sides were given,
/// their commits and stores (those given, else the run's), the build
/// commands, the notes.
fn context<'a>(
    ctx: &Context,
    args: &ImpactArgs,
    p: &Prepared,
    ev: &Evaluator,
    found: &nix_heft_ops::impact::Impact,
    srcs: [&dyn nix_heft_store::source::StoreSource; 2],
    build: &'a dyn Fn(&str, Side) -> String,
) -> nix_heft_report::impact::ImpactMeta<'a> {
    let before_stores = ctx.store_names(&args.before_store, srcs[0]);
    nix_heft_report::impact::ImpactMeta {
        notes: nix_heft_report::impact::notes(
            found,
            !args.before_store.is_empty(),
            &before_stores,
            &p.undecided,
        ),
        before: SideMeta {
            side: args.before.clone().unwrap_or_default(),
            commit: p.before.commit.clone(),
            dirty: p.before.dirty,
            stores: before_stores,
        },
        after: SideMeta {
            side: match (&args.after, &args.nixpkgs_review) {
                (Some(a), _) => a.clone(),
                (None, Some(d)) => format!("nixpkgs-review {}", d.display()),
                (None, None) => String::new(),
            },
            commit: p.after.commit.clone(),
            dirty: p.after.dirty,
            stores: ctx.store_names(&args.after_store, srcs[1]),
        },
        evaluator: match (&args.nixpkgs_review, &args.after) {
            (Some(_), None) => format!("{} (base), nixpkgs-review (head)", ev.name()),
            _ => ev.name().to_string(),
        },
        build,
    }
}
