//! `nix-heft impact --before SIDE --after SIDE`: for every attribute a
//! change to a package set touches, its closure before and after, the
//! difference and why; the base usually read from a binary cache, the head
//! from the local store or a nixpkgs-review directory.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use nix_heft_core::attrs::{self, Evaluation, Evaluator, GitSide, Outcome};
use nix_heft_core::impact::{Request, Rules, Side, SideInput};
use nix_heft_core::installable::Options;
use nix_heft_format::nixpkgs_review::{ReviewDir, Status as ReviewStatus};
use nix_heft_report::TextOptions;
use nix_heft_report::impact::{ImpactReport, SideMeta};
use nix_heft_types::Error;

use super::Context;
use super::context::partial_code;
use super::review::{self, ReviewArgs};

/// Exit code when an attribute breaks a rule, as `check`'s.
const EXIT_VIOLATION: u8 = 4;

/// `impact`'s arguments.
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
    /// How attributes are evaluated: nix-eval-jobs, nix-env, or auto
    /// (nix-eval-jobs when it is on PATH).
    #[arg(long, value_name = "TOOL", default_value = "auto",
          value_parser = super::OneOf(&["auto", "nix-eval-jobs", "nix-env"]))]
    evaluator: String,
    /// nix-eval-jobs' --workers.
    #[arg(long, value_name = "N", value_hint = clap::ValueHint::Other)]
    workers: Option<usize>,
    /// nix-eval-jobs' --max-memory-size (MiB per worker).
    #[arg(long, value_name = "MIB", value_hint = clap::ValueHint::Other)]
    max_memory_size: Option<u64>,
    /// Attributes per nix-env run (nixpkgs' ci/eval uses 5000).
    #[arg(long, value_name = "N", value_hint = clap::ValueHint::Other)]
    chunk_size: Option<usize>,
    /// Fail (exit 4) when an attribute's closure grew by more than SIZE or
    /// PCT (10%) over its own base closure.
    #[arg(long, value_name = "SIZE|PCT", value_hint = clap::ValueHint::Other)]
    max_growth: Option<String>,
    /// Fail when an attribute's head closure is larger than SIZE.
    #[arg(long, value_name = "SIZE", value_hint = clap::ValueHint::Other)]
    max_closure: Option<String>,
    /// Fail when an attribute's head closure holds a path whose name
    /// matches GLOB; repeatable.
    #[arg(long, value_name = "GLOB", value_hint = clap::ValueHint::Other)]
    forbid: Vec<String>,
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
    #[command(flatten)]
    review: ReviewArgs,
}

/// How a side was named.
enum SideKind {
    Dir(PathBuf),
    File(PathBuf),
    Flake(String),
    Git { repo: PathBuf, rev: String },
}

impl SideKind {
    fn of(s: &str, repo: &Option<PathBuf>) -> SideKind {
        if Path::new(s).is_dir() {
            SideKind::Dir(PathBuf::from(s))
        } else if Path::new(s).is_file() {
            SideKind::File(PathBuf::from(s))
        } else if s.contains(':') {
            SideKind::Flake(s.to_string())
        } else {
            SideKind::Git {
                repo: repo.clone().unwrap_or_else(|| PathBuf::from(".")),
                rev: s.to_string(),
            }
        }
    }
}

/// A side evaluated: what each attribute evaluated to, how to say it, and
/// how to build what it lacks.
struct Evaluated {
    eval: Evaluation,
    meta: SideMeta,
    build: BuildHow,
}

/// What the command that builds a missing attribute starts from.
enum BuildHow {
    /// `nix-build DIR -A attr`.
    Dir(String),
    /// `nix-build FILE -A attr`.
    File(String),
    /// `nix-build -E 'import (builtins.fetchGit {…})' -A attr`.
    Git { repo: String, commit: String },
    /// `nix build REF#attr`.
    Flake(String),
    /// The nixpkgs-review directory: `nixpkgs-review` built it.
    Review,
}

/// Shell-quotes a word unless it is plain.
fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@+,".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The `--arg`, `--argstr`, `-I` and `--option` words of `opts`, as
/// nix-build takes them.
fn eval_words(opts: &Options) -> Vec<String> {
    let mut w = Vec::new();
    for i in &opts.include {
        w.extend(["-I".to_string(), quote(i)]);
    }
    for (n, v) in &opts.auto_args {
        match v {
            nix_heft_core::installable::AutoArg::Expr(e) => {
                w.extend(["--arg".into(), quote(n), quote(e)])
            }
            nix_heft_core::installable::AutoArg::Str(s) => {
                w.extend(["--argstr".into(), quote(n), quote(s)])
            }
        }
    }
    w
}

impl BuildHow {
    fn command(&self, attr: &str, opts: &Options) -> String {
        let extra = eval_words(opts);
        let extra = if extra.is_empty() {
            String::new()
        } else {
            format!(" {}", extra.join(" "))
        };
        let sub = opts
            .file
            .as_deref()
            .map(|f| format!(" + \"/{}\"", f.trim_start_matches("./")))
            .unwrap_or_default();
        match self {
            BuildHow::Dir(d) => {
                let target = match &opts.file {
                    Some(f) => Path::new(d).join(f).display().to_string(),
                    None => d.clone(),
                };
                format!("nix-build {}{extra} -A {}", quote(&target), quote(attr))
            }
            BuildHow::File(f) => format!("nix-build {}{extra} -A {}", quote(f), quote(attr)),
            BuildHow::Git { repo, commit } => {
                let expr = if sub.is_empty() {
                    format!(
                        "import (builtins.fetchGit {{ url = \"{repo}\"; rev = \"{commit}\"; }})"
                    )
                } else {
                    format!(
                        "import ((builtins.fetchGit {{ url = \"{repo}\"; rev = \"{commit}\"; }}){sub})"
                    )
                };
                format!("nix-build -E {}{extra} -A {}", quote(&expr), quote(attr))
            }
            BuildHow::Flake(r) => format!("nix build {}", quote(&format!("{r}#{attr}"))),
            BuildHow::Review => format!("nixpkgs-review (rebuild it there): {attr}"),
        }
    }
}

/// The attributes named on the command line, if any.
fn named_attrs(args: &ImpactArgs) -> anyhow::Result<Option<Vec<String>>> {
    let mut attrs = args.attrs.clone();
    if let Some(f) = &args.attr_file {
        let text = std::fs::read_to_string(f).map_err(|source| Error::Io {
            path: f.clone(),
            source,
        })?;
        attrs.extend(
            text.lines()
                .map(|l| l.split('#').next().unwrap_or("").trim())
                .filter(|l| !l.is_empty())
                .map(String::from),
        );
    }
    if attrs.is_empty() {
        if args.attr_file.is_some() {
            return Err(Error::Usage("--attr-file names no attribute".into()).into());
        }
        return Ok(None);
    }
    let mut seen = std::collections::BTreeSet::new();
    attrs.retain(|a| seen.insert(a.clone()));
    Ok(Some(attrs))
}

fn evaluator(args: &ImpactArgs) -> Evaluator {
    let mut e = match args.evaluator.as_str() {
        "nix-env" => Evaluator::nix_env(),
        "nix-eval-jobs" => Evaluator::NixEvalJobs(attrs::EvalJobs::new("nix-eval-jobs")),
        _ => Evaluator::detect(),
    };
    match &mut e {
        Evaluator::NixEvalJobs(ej) => {
            if let Some(w) = args.workers {
                ej.workers = w;
            }
            if let Some(m) = args.max_memory_size {
                ej.max_memory_size = m;
            }
        }
        Evaluator::NixEnv { chunk_size, .. } => {
            if let Some(n) = args.chunk_size {
                *chunk_size = n.max(1);
            }
        }
    }
    e
}

/// Evaluates one side (checking a revision out in a temporary worktree
/// that is removed when this returns).
fn evaluate_side(
    ctx: &Context,
    ev: &Evaluator,
    given: &str,
    args: &ImpactArgs,
    attrs: Option<&[String]>,
    stores: Vec<String>,
) -> anyhow::Result<Evaluated> {
    let spinner = ctx.spinner(&format!("evaluating {given} with {}", ev.name()));
    let opts = &ctx.installables;
    let out = match SideKind::of(given, &args.repo) {
        SideKind::Dir(d) => Evaluated {
            eval: attrs::evaluate(ev, &d, attrs, opts)?,
            meta: SideMeta {
                side: given.to_string(),
                commit: None,
                stores,
            },
            build: BuildHow::Dir(
                std::path::absolute(&d)
                    .unwrap_or(d.clone())
                    .display()
                    .to_string(),
            ),
        },
        SideKind::File(f) => {
            // A Nix file: its directory, with the file as --file names it
            // (absolute, so the directory part is moot).
            let abs = std::path::absolute(&f).unwrap_or(f.clone());
            let mut file_opts = opts.clone();
            file_opts.file = Some(abs.display().to_string());
            Evaluated {
                eval: attrs::evaluate(ev, Path::new("/"), attrs, &file_opts)?,
                meta: SideMeta {
                    side: given.to_string(),
                    commit: None,
                    stores,
                },
                build: BuildHow::File(abs.display().to_string()),
            }
        }
        SideKind::Git { repo, rev } => {
            let side = GitSide::checkout(&repo, &rev)?;
            let eval = attrs::evaluate(ev, side.path(), attrs, opts)?;
            let repo_abs = std::fs::canonicalize(&repo).unwrap_or(repo.clone());
            Evaluated {
                eval,
                meta: SideMeta {
                    side: given.to_string(),
                    commit: Some(side.commit().to_string()),
                    stores,
                },
                build: BuildHow::Git {
                    repo: repo_abs.display().to_string(),
                    commit: side.commit().to_string(),
                },
            }
        }
        SideKind::Flake(r) => Evaluated {
            eval: attrs::evaluate_flake(ev, &r, attrs, opts)?,
            meta: SideMeta {
                side: given.to_string(),
                commit: None,
                stores,
            },
            build: BuildHow::Flake(r),
        },
    };
    spinner.finish_and_clear();
    Ok(out)
}

/// The system whose nixpkgs-review results are read.
fn review_system(review: &ReviewDir, flag: Option<&str>) -> anyhow::Result<String> {
    if let Some(s) = flag {
        return Ok(s.to_string());
    }
    let here = format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS);
    if review.system(&here).is_some() || review.systems.len() != 1 {
        return Ok(here);
    }
    Ok(review.systems[0].system.clone())
}

/// The head side as a nixpkgs-review directory has it: built attributes
/// with the outputs their result links point to, failed builds as failed;
/// the other statuses (broken, non-existent, blacklisted) were never built
/// and are left to the evaluation of the base alone.
fn review_side(review: &ReviewDir, system: &str) -> anyhow::Result<Evaluation> {
    let sys = review.system(system).ok_or_else(|| {
        let have: Vec<&str> = review.systems.iter().map(|s| s.system.as_str()).collect();
        Error::Usage(format!(
            "{} has no results for {system} (it has: {}); pass --system",
            review.dir.display(),
            have.join(", ")
        ))
    })?;
    let mut eval = Evaluation::default();
    for status in ReviewStatus::ALL {
        for a in sys.attributes(status) {
            let outcome = match status {
                ReviewStatus::Built | ReviewStatus::Tests => Outcome::Evaluated {
                    drv_path: None,
                    outputs: a
                        .outputs
                        .iter()
                        .map(|o| {
                            (
                                o.output.clone().unwrap_or_else(|| "out".into()),
                                o.path.clone(),
                            )
                        })
                        .collect(),
                },
                ReviewStatus::Failed => {
                    Outcome::Failed("the build failed in nixpkgs-review".into())
                }
                // Not in the reviewed checkout: the change removed it.
                ReviewStatus::NonExistent => continue,
                ReviewStatus::Broken | ReviewStatus::Blacklisted => Outcome::Failed(format!(
                    "nixpkgs-review did not build it ({})",
                    status.as_str()
                )),
            };
            eval.attrs.insert(a.name.clone(), outcome);
        }
    }
    Ok(eval)
}

/// Removes the attributes whose evaluation failed only because the side
/// has no attribute of that name (Nix: "attribute 'x' missing", for the
/// name or a set on its path).
fn drop_missing(eval: &mut Evaluation) {
    eval.attrs.retain(|attr, o| match o {
        Outcome::Failed(m) => !attr
            .split('.')
            .any(|seg| m.contains(&format!("attribute '{seg}' missing"))),
        Outcome::Evaluated { .. } => true,
    });
}

/// Every attribute a nixpkgs-review report lists for `system`, whatever
/// its status (a removed one is "non-existent" there), sorted.
fn review_attrs(review: &ReviewDir, system: &str) -> Vec<String> {
    let mut out: Vec<String> = review
        .system(system)
        .map(|s| {
            ReviewStatus::ALL
                .into_iter()
                .flat_map(|st| s.attributes(st).iter().map(|a| a.name.clone()))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out.dedup();
    out
}

/// Compares the closures of every attribute the change touches and prints
/// the impact; exit code 4 when an attribute breaks a rule, else 3 for a
/// partial read, else 0.
pub fn run(ctx: &Context, args: &ImpactArgs) -> anyhow::Result<ExitCode> {
    let format = review::format(args.review.format.as_deref(), ctx.json, None)?;
    let at = args.review.checked()?;
    let rules = Rules {
        max_closure: args
            .max_closure
            .as_deref()
            .map(nix_heft_types::units::parse_size)
            .transpose()?,
        max_growth: args
            .max_growth
            .as_deref()
            .map(nix_heft_core::check::Growth::parse)
            .transpose()?,
        forbid: args
            .forbid
            .iter()
            .map(|p| Ok((p.clone(), nix_heft_core::roots::glob(p)?)))
            .collect::<nix_heft_types::Result<_>>()?,
    };
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
        .map_err(|e| Error::Usage(e.to_string()))?;
    if args.after.is_none() && review_dir.is_none() {
        return Err(
            Error::Usage("impact needs --after SIDE, or --nixpkgs-review DIR".into()).into(),
        );
    }
    let ev = evaluator(args);
    let named = named_attrs(args)?;
    let store_words = |given: &[String]| -> Vec<String> {
        if given.is_empty() {
            ctx.store_args(None)
                .chunks(2)
                .filter(|w| w[0] == "--store" || w[0] == "--substituters")
                .map(|w| w[1].clone())
                .collect::<Vec<_>>()
        } else {
            given.to_vec()
        }
    };
    let (bsrc, asrc) = (
        open_stores(ctx, &args.before_store)?,
        open_stores(ctx, &args.after_store)?,
    );
    let describe = |s: &dyn nix_heft_store::source::StoreSource, given: &[String]| {
        let w = store_words(given);
        if w.is_empty() { vec![s.describe()] } else { w }
    };

    // The nixpkgs-review directory read once: what it built or saw fail,
    // and every attribute it lists.
    let reviewed: Option<(Evaluation, Vec<String>)> = match &review_dir {
        Some(r) => {
            let system = review_system(r, args.system.as_deref())?;
            Some((review_side(r, &system)?, review_attrs(r, &system)))
        }
        None => None,
    };
    // The head first when it is a nixpkgs-review directory: its
    // attributes are the list the base is evaluated for.
    let (head, list): (Evaluated, Option<Vec<String>>) = match (&review_dir, &args.after) {
        (Some(r), None) => {
            let (eval, listed) = reviewed.clone().expect("read above");
            let list = named.clone().or(Some(listed));
            (
                Evaluated {
                    eval,
                    meta: SideMeta {
                        side: format!("nixpkgs-review {}", r.dir.display()),
                        commit: r.commit.clone(),
                        stores: describe(asrc.as_ref(), &args.after_store),
                    },
                    build: BuildHow::Review,
                },
                list,
            )
        }
        (_, Some(after)) => {
            let list = named
                .clone()
                .or_else(|| reviewed.as_ref().map(|(_, listed)| listed.clone()));
            let e = evaluate_side(
                ctx,
                &ev,
                after,
                args,
                list.as_deref(),
                describe(asrc.as_ref(), &args.after_store),
            )?;
            (e, list)
        }
        (None, None) => unreachable!("checked above"),
    };
    let base = evaluate_side(
        ctx,
        &ev,
        before,
        args,
        list.as_deref(),
        describe(bsrc.as_ref(), &args.before_store),
    )?;
    let mut head = head;
    if let (Some((review_eval, _)), Some(_)) = (reviewed, &args.after) {
        // Evaluated head, built by nixpkgs-review: its failures stand.
        for (a, o) in review_eval.attrs {
            if matches!(o, Outcome::Failed(_)) {
                head.eval.attrs.insert(a, o);
            }
        }
    }
    // Asked by name, an attribute one side lacks fails there with Nix's
    // "attribute 'x' missing": it is absent on that side (added or
    // removed by the change), not broken.
    let mut base = base;
    drop_missing(&mut base.eval);
    drop_missing(&mut head.eval);
    let attrs: Vec<String> = match list {
        Some(l) => l,
        None => attrs::changed(&base.eval, &head.eval)
            .all()
            .into_iter()
            .map(String::from)
            .collect(),
    };
    // A nixpkgs-review head links the outputs it built; the base is
    // compared over the same outputs so that both closures mean the same.
    let mut base_eval = base.eval.clone();
    if review_dir.is_some() && args.after.is_none() {
        for (a, o) in base_eval.attrs.iter_mut() {
            if let (
                Outcome::Evaluated { outputs, .. },
                Some(Outcome::Evaluated { outputs: hout, .. }),
            ) = (o, head.eval.attrs.get(a))
                && hout.keys().any(|k| outputs.contains_key(k))
            {
                outputs.retain(|k, _| hout.contains_key(k));
            }
        }
    }

    let impact = nix_heft_core::impact::impact(
        SideInput {
            src: bsrc.as_ref(),
            attrs: &base_eval.attrs,
        },
        SideInput {
            src: asrc.as_ref(),
            attrs: &head.eval.attrs,
        },
        &Request {
            attrs: &attrs,
            top: args.top,
            rules: &rules,
            evidence: !args.no_evidence,
            removed_evidence: args.removed_evidence,
        },
        (&ctx.read_bar(bsrc.as_ref()), &ctx.read_bar(asrc.as_ref())),
    )?;
    let opts = &ctx.installables;
    let build = |attr: &str, side: Side| match side {
        Side::Before => base.build.command(attr, opts),
        Side::After => head.build.command(attr, opts),
    };
    let report = ImpactReport::new(
        &impact,
        &nix_heft_report::impact::Context {
            before: base.meta.clone(),
            after: head.meta.clone(),
            evaluator: match (&review_dir, &args.after) {
                (Some(_), None) => format!("{} (base), nixpkgs-review (head)", ev.name()),
                _ => ev.name().to_string(),
            },
            build: &build,
        },
        Vec::new(),
    );
    super::context::print_warnings(bsrc.as_ref());
    review::emit(
        ctx,
        asrc.as_ref(),
        &report,
        format,
        &args.review,
        at.as_ref(),
        &TextOptions {
            exact_bytes: args.bytes,
            ..args.review.text_options(ctx)
        },
    )?;
    let partial = partial_code(nix_heft_report::Report::problems(&report));
    Ok(if report.broken() {
        ExitCode::from(EXIT_VIOLATION)
    } else {
        partial
    })
}

/// The stores `given` names, read as one; the run's stores when none.
fn open_stores(
    ctx: &Context,
    given: &[String],
) -> anyhow::Result<Box<dyn nix_heft_store::source::StoreSource>> {
    if given.is_empty() {
        return Ok(ctx.open()?);
    }
    Ok(ctx.open_stores(given)?)
}
