//! `nix-heft history ATTR… --repo DIR`: the closure size of each attribute
//! at each commit of a range, read from binary caches without building,
//! and each jump explained.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use nix_heft_analysis::rules::Growth;
use nix_heft_eval::attrs::Evaluator;
use nix_heft_eval::history::Range;
use nix_heft_ops::history::{Request, history};
use nix_heft_report::history::{HistoryMeta, HistoryReport};
use nix_heft_types::Error;

use super::Context;
use super::review::{self, ReviewArgs};

/// When did a closure grow, and which commit did it: each attribute's
/// closure size at each commit of a range of a git repository (a nixpkgs
/// checkout or any Nix repository), with the change since the previous
/// commit read and each jump explained (the packages added and removed,
/// the chain to each and the file that holds it).
///
/// Each commit is checked out in a temporary worktree (your working tree,
/// index and HEAD are never touched; a flake is read from git itself) and
/// its attributes evaluated, never built (a flake's sources are copied
/// into a temporary store, never yours); their outputs' closures are read from the stores (--store, e.g.
/// https://cache.nixos.org, which holds what Hydra evaluated and built:
/// a commit it lacks is "not in the cache"). Each path's metadata is read
/// once for the whole range.
///
/// Give exactly one of --revs, --since or --revs-file.
#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// The attributes (dotted paths of the checkout's default.nix, or of
    /// --file inside it), each a column; written .#ATTR, of the
    /// repository as a flake at each commit (its packages, or
    /// legacyPackages, of this system).
    #[arg(required = true, value_name = "ATTR")]
    attrs: Vec<String>,
    /// The git checkout (default: the current directory).
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    repo: Option<PathBuf>,
    /// A..B: A, then every first-parent commit of B after A.
    #[arg(long, value_name = "A..B", value_hint = clap::ValueHint::Other,
          conflicts_with_all = ["since", "revs_file"])]
    revs: Option<String>,
    /// The first-parent commits of --rev committed since DATE (as `git
    /// log --since` reads it: 2025-01-01, "2 weeks ago").
    #[arg(long, value_name = "DATE", value_hint = clap::ValueHint::Other,
          conflicts_with = "revs_file")]
    since: Option<String>,
    /// With --since: and until DATE.
    #[arg(long, value_name = "DATE", value_hint = clap::ValueHint::Other, requires = "since")]
    until: Option<String>,
    /// With --since: walk the history of REV (default HEAD).
    #[arg(long, value_name = "REV", value_hint = clap::ValueHint::Other, requires = "since")]
    rev: Option<String>,
    /// The commits to read, one revision a line (`#` comments), e.g. the
    /// channel bumps or Hydra's evaluations: the commits a cache holds.
    /// Read oldest first by committer date.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    revs_file: Option<PathBuf>,
    /// Read at most N commits, evenly spaced (the first and last kept).
    #[arg(long, value_name = "N", value_hint = clap::ValueHint::Other,
          value_parser = clap::value_parser!(u64).range(1..))]
    samples: Option<u64>,
    /// Explain each change between two commits read of at least SIZE or
    /// PCT of the earlier closure.
    #[arg(long, value_name = "SIZE|PCT", default_value = "10%", value_hint = clap::ValueHint::Other)]
    min_jump: String,
    /// Changes explained per jump.
    #[arg(long, value_name = "N", default_value_t = 5, value_hint = clap::ValueHint::Other)]
    top: usize,
    /// Read no file contents: chains without the holding files (no NAR is
    /// downloaded).
    #[arg(long)]
    no_evidence: bool,
    #[command(flatten)]
    evaluator: super::installables::EvaluatorFlag,
    /// Also write a self-contained HTML page to FILE: a chart of each
    /// attribute's closure size over the commits (each point linked to its
    /// commit), the jumps, and a table of every commit.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    html: Option<PathBuf>,
    /// The link of a commit on the page and in markdown, `{commit}` for its
    /// hash (default: from the origin remote, on GitHub, GitLab or
    /// Codeberg).
    #[arg(long, value_name = "TEMPLATE", value_hint = clap::ValueHint::Url)]
    commit_url: Option<String>,
    /// Print exact byte counts instead of IEC units.
    #[arg(long)]
    bytes: bool,
    #[command(flatten)]
    review: ReviewArgs,
}

/// Reads the history and prints it; exit code 3 when evidence could not be
/// read.
pub fn run(ctx: &Context, args: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let format = review::format(args.review.format.as_deref(), ctx.json, None)?;
    let at = args.review.checked()?;
    let range = match (&args.revs, &args.since, &args.revs_file) {
        (Some(r), None, None) => {
            let Some((from, to)) = r.split_once("..") else {
                return Err(Error::Usage(format!("--revs {r}: expected A..B")).into());
            };
            Range::Revs {
                from: from.to_string(),
                to: if to.is_empty() { "HEAD" } else { to }.to_string(),
            }
        }
        (None, Some(since), None) => Range::Since {
            since: since.clone(),
            until: args.until.clone(),
            end: args.rev.clone().unwrap_or_else(|| "HEAD".into()),
        },
        (None, None, Some(f)) => Range::File(f.clone()),
        _ => {
            return Err(Error::Usage(
                "history needs one of --revs A..B, --since DATE or --revs-file FILE".into(),
            )
            .into());
        }
    };
    let min_jump = Growth::parse(&args.min_jump)?;
    let repo = args.repo.clone().unwrap_or_else(|| PathBuf::from("."));
    let ev = Evaluator::chosen(&args.evaluator.evaluator, None, None, None);
    let src = ctx.open()?;
    let src = src.as_ref();
    let found = history(
        src,
        &Request {
            repo: repo.clone(),
            range,
            samples: args.samples.map(|n| n as usize),
            attrs: &args.attrs,
            evaluator: &ev,
            options: &ctx.installables,
            min_jump,
            top: args.top,
            evidence: !args.no_evidence,
        },
        &ctx.step_spinner(),
    )?;
    let commit_url = args
        .commit_url
        .clone()
        .or_else(|| nix_heft_eval::history::commit_url(&repo));
    let mut report = HistoryReport::new(
        &found,
        &HistoryMeta {
            stores: ctx.store_names(&[], src),
            min_jump: args.min_jump.clone(),
            evaluator: ev.name().to_string(),
        },
    );
    report.commit_url = commit_url.clone();
    if let Some(file) = &args.html {
        let html = report.render_html(commit_url.as_deref());
        super::context::write_beside(file, html.as_bytes())?;
        report.page = Some(file.display().to_string());
    }
    review::emit(
        ctx,
        src,
        &report,
        format,
        &args.review,
        at.as_ref(),
        &args.review.text_options_bytes(ctx, args.bytes),
    )
}
