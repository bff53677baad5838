//! The sides of an impact run as the command line names them, evaluated
//! into what [`super::impact`] compares: which attributes, what each side
//! says of each, the commits, how to build what is missing.
//!
//! A side is a revision, a directory, a Nix file or a flake
//! ([`nix_heft_eval::attrs::side`]); the head may instead be a nixpkgs-review
//! directory ([`super::review`]), whose listed attributes are then the
//! ones compared, whose nixpkgs configuration the base is evaluated with,
//! and whose `broken` entries (broken, or missing from its checkout) are
//! told apart by evaluating them at the head when the head can be
//! evaluated (`--after`, or the report's `commit` in the repository).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use nix_heft_format::nixpkgs_review::ReviewDir;

use super::review::{self, ReviewHead};
use super::{Note, SideInput};
use nix_heft_eval::attrs::side::{BuildHow, EvaluatedSide, SideError, SideSpec, evaluate_side};
use nix_heft_eval::attrs::{self, Evaluation, Evaluator, Outcome};
use nix_heft_eval::installable::{AutoArg, Options};
use nix_heft_store::source::StoreSource;
use nix_heft_types::problem::Problem;

/// How the command line named the sides.
pub struct Sides<'a> {
    /// `--before`.
    pub before: &'a str,
    /// `--after`; `None` when the head is the nixpkgs-review directory.
    pub after: Option<&'a str>,
    /// `--repo`: the checkout revisions are of.
    pub repo: Option<&'a Path>,
    /// `--nixpkgs-review`, read.
    pub review: Option<&'a ReviewDir>,
    /// `--system`: the review's system to read.
    pub system: Option<&'a str>,
    /// `--attr`/`--attr-file`, when given.
    pub named: Option<&'a [String]>,
    /// How attributes are evaluated.
    pub evaluator: &'a Evaluator,
    /// Nix's flags (`--arg`, `-I`, …).
    pub opts: &'a Options,
}

/// One side, evaluated.
#[derive(Debug, Clone)]
pub struct SideEval {
    /// What each attribute evaluated to.
    pub attrs: BTreeMap<String, Outcome>,
    /// What a nixpkgs-review directory says of attributes it did not
    /// build (the head only).
    pub notes: BTreeMap<String, Note>,
    /// The commit the side is at, when known.
    pub commit: Option<String>,
    /// A directory side with uncommitted changes.
    pub dirty: bool,
    /// How to build one of its attributes.
    pub build: BuildHow,
}

impl SideEval {
    /// The side as [`super::impact`] takes it, its outputs in `src`.
    pub fn input<'a>(&'a self, src: &'a dyn StoreSource) -> SideInput<'a> {
        SideInput {
            src,
            attrs: &self.attrs,
            notes: &self.notes,
        }
    }

    fn of(e: EvaluatedSide) -> SideEval {
        SideEval {
            attrs: e.eval.attrs,
            notes: BTreeMap::new(),
            commit: e.commit,
            dirty: e.dirty,
            build: e.build,
        }
    }
}

/// Both sides evaluated and the attributes to compare.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The attributes to compare (named sets expanded to what they stand
    /// for), sorted.
    pub attrs: Vec<String>,
    /// The base.
    pub before: SideEval,
    /// The head.
    pub after: SideEval,
    /// The options the sides were evaluated with (with nixpkgs-review's
    /// configuration when its directory was given): what a build command
    /// needs too.
    pub opts: Options,
    /// The nixpkgs-review directory's system and head, when given.
    pub review: Option<ReviewHead>,
    /// nixpkgs-review's `broken` entries of attributes the base has, whose
    /// head could not be evaluated to tell a broken attribute from one the
    /// change removed.
    pub undecided: Vec<String>,
    /// What could not be read (the review's links).
    pub problems: Vec<Problem>,
}

impl Prepared {
    /// What could not be read for `found`: the review's links, and those
    /// of its results the head's store (`head_store`) does not hold.
    pub fn problems(&self, found: &super::Impact, head_store: &str) -> Vec<Problem> {
        let mut problems = self.problems.clone();
        if let Some(h) = &self.review {
            problems.extend(review::unbuilt_links(h, found, head_store));
        }
        problems
    }

    /// The command that builds `attr` on `side`, run from `cwd`.
    pub fn build_command(&self, attr: &str, side: super::Side, cwd: &Path) -> String {
        match side {
            super::Side::Before => self.before.build.command(attr, &self.opts, cwd),
            super::Side::After => self.after.build.command(attr, &self.opts, cwd),
        }
    }
}

/// Why the sides could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// `--before`'s side.
    #[error("--before {given}: {source}")]
    Before {
        /// As given.
        given: String,
        /// Why.
        source: SideError,
    },
    /// `--after`'s side.
    #[error("--after {given}: {source}")]
    After {
        /// As given.
        given: String,
        /// Why.
        source: SideError,
    },
    /// The nixpkgs-review directory has no results to read.
    #[error("--nixpkgs-review: {0}")]
    Review(String),
    /// The evaluator does not run as it should.
    #[error(transparent)]
    Evaluator(nix_heft_eval::attrs::AttrsError),
    /// Named attributes that neither side has.
    #[error(
        "{}: no such attribute at the base ({before}) or at the head ({after})",
        attrs.iter().map(|a| format!("--attr {a}")).collect::<Vec<_>>().join(", ")
    )]
    Unmatched {
        /// The attributes.
        attrs: Vec<String>,
        /// The base as given.
        before: String,
        /// The head as given, or `nixpkgs-review`.
        after: String,
    },
}

impl PrepareError {
    /// Whether a flag named something wrong (exit 2) rather than an
    /// evaluation failing (exit 1).
    pub fn is_usage(&self) -> bool {
        match self {
            PrepareError::Before { source, .. } | PrepareError::After { source, .. } => {
                source.is_usage()
            }
            PrepareError::Review(_) | PrepareError::Unmatched { .. } => true,
            PrepareError::Evaluator(_) => false,
        }
    }
}

/// Evaluates the sides `s` names; `watch` is told what is being evaluated
/// (`Some`) and when it is done (`None`).
pub fn prepare(s: &Sides, watch: &dyn Fn(Option<String>)) -> Result<Prepared, PrepareError> {
    // Both sides named right before either is evaluated.
    SideSpec::of(s.before, s.repo)
        .check()
        .map_err(|source| PrepareError::Before {
            given: s.before.to_string(),
            source,
        })?;
    if let Some(a) = s.after {
        SideSpec::of(a, s.repo)
            .check()
            .map_err(|source| PrepareError::After {
                given: a.to_string(),
                source,
            })?;
    }
    // What the installed nix-eval-jobs can do, asked once for both sides.
    let mut evaluator = s.evaluator.clone();
    if let Evaluator::NixEvalJobs(ej) = &mut evaluator
        && ej.no_instantiate.is_none()
    {
        let flags = attrs::eval_jobs::Flags::of(&ej.program).map_err(PrepareError::Evaluator)?;
        ej.no_instantiate = Some(flags.has("no-instantiate"));
    }
    let s = &Sides {
        evaluator: &evaluator,
        ..*s
    };
    let mut opts = s.opts.clone();
    let mut problems = Vec::new();
    let review_head = match s.review {
        Some(r) => {
            let system = review::system(r, s.system, || {
                attrs::current_system(&"nix-instantiate".into()).ok()
            })
            .map_err(PrepareError::Review)?;
            // nixpkgs-review's configuration, unless the user gave one.
            if !opts.auto_args.iter().any(|(n, _)| n == "config") {
                opts.auto_args
                    .push(("config".into(), AutoArg::Expr(review::nixpkgs_config(r))));
            }
            let h = review::head(r, &system);
            problems.extend(h.problems.iter().cloned());
            Some(h)
        }
        None => None,
    };
    let named: Option<Vec<String>> = s.named.map(<[String]>::to_vec);
    let list: Option<Vec<String>> = named
        .clone()
        .or_else(|| review_head.as_ref().map(|h| h.listed.clone()));

    let side = |given: &str, list: Option<&[String]>| {
        watch(Some(format!(
            "evaluating {given} with {}",
            s.evaluator.name()
        )));
        let r = evaluate_side(&SideSpec::of(given, s.repo), s.evaluator, list, &opts);
        watch(None);
        r
    };
    let mut after =
        match (s.after, &review_head) {
            (Some(given), _) => SideEval::of(side(given, list.as_deref()).map_err(|source| {
                PrepareError::After {
                    given: given.to_string(),
                    source,
                }
            })?),
            (None, Some(h)) => SideEval {
                attrs: h.attrs.clone(),
                notes: BTreeMap::new(),
                commit: s.review.and_then(|r| r.commit.clone()),
                dirty: false,
                build: BuildHow::Review,
            },
            (None, None) => unreachable!("the head is --after or a nixpkgs-review directory"),
        };
    let before =
        SideEval::of(
            side(s.before, list.as_deref()).map_err(|source| PrepareError::Before {
                given: s.before.to_string(),
                source,
            })?,
        );

    // What nixpkgs-review did not build: its notes stand over an
    // evaluated head, but an attribute listed broken that the evaluated
    // head lacks was removed by the change.
    let mut undecided = Vec::new();
    if let Some(h) = &review_head {
        for (a, n) in &h.notes {
            if s.after.is_some() && *n == Note::SkippedBroken && !after.attrs.contains_key(a) {
                continue;
            }
            after.attrs.remove(a);
            after.notes.insert(a.clone(), n.clone());
        }
        if s.after.is_none() {
            let unsure: Vec<String> = h
                .broken
                .iter()
                .filter(|a| before.attrs.contains_key(*a))
                .cloned()
                .collect();
            match removed_at_head(s, &opts, &unsure, watch) {
                Some(missing) => {
                    for a in missing {
                        after.notes.remove(&a);
                    }
                }
                None => undecided = unsure,
            }
        }
    }

    let mut unmatched = Vec::new();
    let attrs: Vec<String> = match &list {
        Some(l) => {
            let mut out = BTreeSet::new();
            for name in l {
                let mut stands: BTreeSet<String> = BTreeSet::new();
                for side in [&before, &after] {
                    let e = Evaluation {
                        attrs: side.attrs.clone(),
                    };
                    stands.extend(e.stands_for(name));
                    if side.notes.contains_key(name) {
                        stands.insert(name.clone());
                    }
                }
                if stands.is_empty() && named.is_some() {
                    unmatched.push(name.clone());
                }
                out.extend(stands);
            }
            out.into_iter().collect()
        }
        None => attrs::changed(
            &Evaluation {
                attrs: before.attrs.clone(),
            },
            &Evaluation {
                attrs: after.attrs.clone(),
            },
        )
        .all()
        .into_iter()
        .map(String::from)
        .collect(),
    };

    // A nixpkgs-review head links the outputs it built; the base is
    // compared over the same outputs so that both closures mean the same.
    let mut before = before;
    if review_head.is_some() && s.after.is_none() {
        for (a, o) in before.attrs.iter_mut() {
            if let (
                Outcome::Evaluated { outputs, .. },
                Some(Outcome::Evaluated { outputs: hout, .. }),
            ) = (o, after.attrs.get(a))
                && hout.keys().any(|k| outputs.contains_key(k))
            {
                outputs.retain(|k, _| hout.contains_key(k));
            }
        }
    }
    if !unmatched.is_empty() {
        return Err(PrepareError::Unmatched {
            attrs: unmatched,
            before: s.before.to_string(),
            after: s.after.unwrap_or("nixpkgs-review").to_string(),
        });
    }
    Ok(Prepared {
        attrs,
        before,
        after,
        opts,
        review: review_head,
        undecided,
        problems,
    })
}

/// Of `unsure` (listed broken by nixpkgs-review, present at the base),
/// those the head lacks, evaluated at the report's `commit` in the
/// repository; `None` when that commit cannot be evaluated here (no
/// commit in the report, before 3.4.0, or not in the repository).
fn removed_at_head(
    s: &Sides,
    opts: &Options,
    unsure: &[String],
    watch: &dyn Fn(Option<String>),
) -> Option<Vec<String>> {
    if unsure.is_empty() {
        return Some(Vec::new());
    }
    let commit = s.review?.commit.as_deref()?;
    let spec = SideSpec::Git {
        repo: s.repo.map_or_else(|| ".".into(), Path::to_path_buf),
        rev: commit.to_string(),
    };
    watch(Some(format!(
        "evaluating the attributes nixpkgs-review lists as broken at {commit}"
    )));
    let head = evaluate_side(&spec, s.evaluator, Some(unsure), opts);
    watch(None);
    let head = head.ok()?;
    Some(
        unsure
            .iter()
            .filter(|a| head.eval.stands_for(a).is_empty())
            .cloned()
            .collect(),
    )
}
