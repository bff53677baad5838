//! A nixpkgs-shaped expression's attributes evaluated into their out
//! paths without building anything, as nixpkgs' CI does for every pull
//! request, and the attributes whose out paths differ between two such
//! evaluations ([`changed`]).
//!
//! Evaluation runs the user's own tools ([`Evaluator`]):
//! - `nix-eval-jobs` when it is on `PATH`: one run over all attributes,
//!   with `--workers` (a worker per core: the tool's own default is one)
//!   and `--max-memory-size`, read line by line ([`eval_jobs`]: its flags
//!   and lines in every version, v2.9.0's error lines for values that are
//!   no derivation left out);
//! - else `nix-env -qaP --out-path --json` in chunks of attributes, as
//!   nixpkgs' `ci/eval` does: first the attribute paths are listed
//!   (`nix-instantiate --eval --strict --json` of a walk like `ci/eval`'s
//!   `attrpaths.nix`: derivations, and sets with
//!   `recurseForDerivations = true`, each step under `tryEval`, so an
//!   attribute that fails is listed and reported rather than aborting the
//!   whole side), then each chunk is one `nix-env` over an expression that
//!   names the chunk's attributes (`ci/eval`'s `chunk.nix`). `nix-env`
//!   lists a derivation once: an attribute it leaves out is asked about
//!   alone, so an alias of a listed one gets its outputs too.
//!
//! Before either, one `nix-instantiate` checks that the side evaluates to
//! a set ([`AttrsError::Unevaluable`], [`AttrsError::NotASet`]): a side
//! that does not evaluate is an error of the run, never every attribute
//! failed. An attribute asked for by name that the side does not have
//! (Nix's "attribute 'x' missing" at nix-heft's own selection of it,
//! [`nix_heft_format::nix_error::missing_attribute`]) is left out of the
//! side's [`Evaluation`]; a set with `recurseForDerivations` stands for
//! the derivations inside it ([`Evaluation::stands_for`]).
//!
//! Nothing is built or substituted: `nix-env` and `nix-instantiate` run
//! with `--readonly-mode`, so not even a `.drv` file is written, and so
//! does `nix-eval-jobs` from v2.31.0 (`--no-instantiate`, passed when its
//! `--help` lists it); older versions write the `.drv` of each derivation
//! they evaluate, as they always do (no garbage collector roots asked
//! for).
//!
//! Both evaluate a small generated file (in a temporary directory, never in
//! the evaluated tree) that imports the side's file and calls it, when it is
//! a function, with the `--arg`/`--argstr` values it declares (Nix passes
//! every one to a function with `...`, which the Nix language cannot tell
//! apart, as in [`crate::installable`]). `-I`, `--option` and
//! `--show-trace` are passed as given; `--impure` to `nix-eval-jobs` only
//! (`nix-env` is always impure). `--expr` and flake inputs have no meaning
//! here.
//!
//! A side is a directory, or a git revision of a local checkout
//! ([`GitSide`]): a detached worktree made in a temporary directory and
//! removed when dropped, so the user's working tree and index are never
//! touched. [`side`] says which a command-line argument names and how to
//! build an attribute of it.
//!
//! Attribute paths are dotted strings (`set.c`); a name that itself holds a
//! dot cannot be asked for by [`evaluate`]'s list, but is reported as Nix
//! walks it.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;

use crate::installable::{AutoArg, Options};
use nix_heft_format::quote::nix_string;
use nix_heft_format::store_path::StorePath;

pub mod eval_jobs;
pub(crate) mod git;
pub mod side;

pub use eval_jobs::{EvalJobs, read_lines as read_eval_jobs};
pub use git::{GitError, GitSide};

/// The chunk size nixpkgs' `ci/eval` uses by default.
pub const DEFAULT_CHUNK_SIZE: usize = 5000;

/// Which tool evaluates the attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evaluator {
    /// `nix-eval-jobs`, in parallel (see [`eval_jobs`]).
    NixEvalJobs(EvalJobs),
    /// `nix-env -qaP --out-path --json`, chunk by chunk.
    NixEnv {
        /// The `nix-env` program.
        nix_env: OsString,
        /// The `nix-instantiate` program, which lists the attributes.
        nix_instantiate: OsString,
        /// Attributes per `nix-env` run.
        chunk_size: usize,
    },
}

impl Evaluator {
    /// `nix-eval-jobs` when it is on `PATH`, else `nix-env` with
    /// nixpkgs' chunk size.
    pub fn detect() -> Evaluator {
        if on_path("nix-eval-jobs") {
            Evaluator::NixEvalJobs(EvalJobs::new("nix-eval-jobs"))
        } else {
            Evaluator::nix_env()
        }
    }

    /// `nix-env` and `nix-instantiate` from `PATH`, nixpkgs' chunk size.
    pub fn nix_env() -> Evaluator {
        Evaluator::NixEnv {
            nix_env: "nix-env".into(),
            nix_instantiate: "nix-instantiate".into(),
            chunk_size: DEFAULT_CHUNK_SIZE,
        }
    }

    /// The evaluator `tool` names (`nix-eval-jobs`, `nix-env`, else the
    /// one [`Evaluator::detect`] finds), with its settings where given:
    /// nix-eval-jobs' workers and memory per worker (MiB), nix-env's
    /// attributes per run (at least one).
    pub fn chosen(
        tool: &str,
        workers: Option<usize>,
        max_memory_size: Option<u64>,
        chunk: Option<usize>,
    ) -> Evaluator {
        let mut e = match tool {
            "nix-env" => Evaluator::nix_env(),
            "nix-eval-jobs" => Evaluator::NixEvalJobs(EvalJobs::new("nix-eval-jobs")),
            _ => Evaluator::detect(),
        };
        match &mut e {
            Evaluator::NixEvalJobs(ej) => {
                if let Some(w) = workers {
                    ej.workers = w;
                }
                if let Some(m) = max_memory_size {
                    ej.max_memory_size = m;
                }
            }
            Evaluator::NixEnv { chunk_size, .. } => {
                if let Some(n) = chunk {
                    *chunk_size = n.max(1);
                }
            }
        }
        e
    }

    /// The tool's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Evaluator::NixEvalJobs(_) => "nix-eval-jobs",
            Evaluator::NixEnv { .. } => "nix-env",
        }
    }

    /// The `nix-instantiate` that checks a side evaluates before its
    /// attributes are (and, with `nix-env`, lists them).
    pub fn nix_instantiate(&self) -> OsString {
        match self {
            Evaluator::NixEnv {
                nix_instantiate, ..
            } => nix_instantiate.clone(),
            Evaluator::NixEvalJobs(_) => "nix-instantiate".into(),
        }
    }
}

/// Nix's name for this machine (`x86_64-linux`, `aarch64-darwin`):
/// `builtins.currentSystem` as the user's `nix-instantiate` says it (which
/// honours nix.conf's `system`), as nixpkgs-review asks it. Never from
/// `uname`, whose names differ (`-macos`).
pub fn current_system(nix_instantiate: &OsString) -> Result<String, AttrsError> {
    let mut cmd = Command::new(nix_instantiate);
    cmd.args(["--eval", "--json", "--expr", "builtins.currentSystem"]);
    let what = || {
        format!(
            "{} --eval builtins.currentSystem",
            nix_instantiate.to_string_lossy()
        )
    };
    let out = output(cmd, what)?;
    serde_json::from_slice(&out).map_err(|e| AttrsError::Output {
        program: what(),
        detail: e.to_string(),
    })
}

/// Whether an executable file called `name` is in a `PATH` directory.
fn on_path(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|d| {
        std::fs::metadata(d.join(name))
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    })
}

/// What one attribute evaluated to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A derivation: its outputs' paths, and its `.drv` when the evaluator
    /// says it (`nix-eval-jobs` does, `nix-env` is not asked).
    Evaluated {
        /// The derivation's store path.
        drv_path: Option<StorePath>,
        /// Output name → out path.
        outputs: BTreeMap<String, StorePath>,
    },
    /// The evaluation failed, or the attribute is not a derivation: the
    /// evaluator's message.
    Failed(String),
}

/// One side's attributes, by dotted attribute path. An attribute asked
/// for that the side does not have is not in the map.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evaluation {
    /// Attribute path → what it evaluated to.
    pub attrs: BTreeMap<String, Outcome>,
}

impl Evaluation {
    /// The attributes `name` stands for on this side: itself, or, for a
    /// set with `recurseForDerivations` (whose derivations were evaluated
    /// in its place), the attributes inside it; empty when the side has
    /// neither.
    pub fn stands_for(&self, name: &str) -> Vec<String> {
        if self.attrs.contains_key(name) {
            return vec![name.to_string()];
        }
        let inside = format!("{name}.");
        self.attrs
            .range(inside.clone()..)
            .take_while(|(k, _)| k.starts_with(&inside))
            .map(|(k, _)| k.clone())
            .collect()
    }
}

/// The attributes whose out paths differ between two evaluations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Only in the head.
    pub added: BTreeSet<String>,
    /// Only in the base.
    pub removed: BTreeSet<String>,
    /// In both, with different outputs (names or paths), or evaluated on
    /// one side and failed on the other.
    pub changed: BTreeSet<String>,
}

impl Changes {
    /// Every attribute that is added, removed or changed.
    pub fn all(&self) -> BTreeSet<&str> {
        self.added
            .iter()
            .chain(&self.removed)
            .chain(&self.changed)
            .map(String::as_str)
            .collect()
    }
}

/// The attributes whose out paths differ from `base` to `head`, as
/// nixpkgs' CI counts rebuilds: by out paths only (a `.drv` that changes
/// without changing an out path rebuilds nothing). An attribute that fails
/// on both sides is not a change: nothing can be said of it.
pub fn changed(base: &Evaluation, head: &Evaluation) -> Changes {
    let mut out = Changes::default();
    for (attr, b) in &base.attrs {
        match (b, head.attrs.get(attr)) {
            (_, None) => {
                out.removed.insert(attr.clone());
            }
            (Outcome::Failed(_), Some(Outcome::Failed(_))) => {}
            (
                Outcome::Evaluated { outputs: bo, .. },
                Some(Outcome::Evaluated { outputs: ho, .. }),
            ) => {
                if bo != ho {
                    out.changed.insert(attr.clone());
                }
            }
            _ => {
                out.changed.insert(attr.clone());
            }
        }
    }
    for attr in head.attrs.keys() {
        if !base.attrs.contains_key(attr) {
            out.added.insert(attr.clone());
        }
    }
    out
}

/// Why a side could not be evaluated or checked out.
#[derive(Debug, thiserror::Error)]
pub enum AttrsError {
    /// A program could not be started.
    #[error("cannot run {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// A program failed as a whole (not one attribute of it).
    #[error("{program} failed: {stderr}")]
    Failed {
        /// The program and what it did.
        program: String,
        /// Its standard error, trimmed.
        stderr: String,
    },
    /// A program printed something that is not what it documents.
    #[error("{program} printed what nix-heft cannot read: {detail}")]
    Output {
        /// The program.
        program: String,
        /// What was wrong.
        detail: String,
    },
    /// `--expr` was given: a side is a file or directory.
    #[error("--expr cannot name a side to evaluate; give a directory or --file")]
    Expr,
    /// The side's expression does not evaluate at all (before any
    /// attribute): Nix's message.
    #[error("does not evaluate: {0}")]
    Unevaluable(String),
    /// The side evaluates to something else than a set of attributes.
    #[error("evaluates to a {0}, not an attribute set of packages")]
    NotASet(String),
    /// A temporary directory or file could not be made.
    #[error("cannot make a temporary file: {0}")]
    Temp(std::io::Error),
    /// The scratch store the evaluation writes into could not be made.
    #[error(transparent)]
    EvalStore(#[from] crate::eval_store::EvalStoreError),
}

/// The file `opts` names inside `dir` (`--file`, relative to `dir`, or
/// `<NAME>` as Nix looks it up), or `dir` itself, as a Nix expression.
pub(crate) fn target(dir: &Path, opts: &Options) -> String {
    // The generated file sits elsewhere: a relative path would mean
    // nothing there (and Nix refuses a relative string path).
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let dir = dir.as_path();
    let file = match &opts.file {
        Some(f) if f.starts_with('<') && f.ends_with('>') => f.clone(),
        Some(f) => nix_string(&dir.join(f).to_string_lossy()),
        None => nix_string(&dir.to_string_lossy()),
    };
    format!("import {file}")
}

/// A flake's package set, as `nix build REF#attr` looks attributes up:
/// `legacyPackages` of this system (nixpkgs'), else `packages`.
pub(crate) fn flake_target(flake_ref: &str) -> String {
    format!(
        "let fl = builtins.getFlake {}; s = builtins.currentSystem; in \
         fl.legacyPackages.${{s}} or fl.packages.${{s}} or \
         (throw \"the flake has neither legacyPackages nor packages for ${{s}}\")",
        nix_string(flake_ref)
    )
}

/// The generated file's text: the side's value as `top`, then `body`.
fn entry(target: &str, body: &str) -> String {
    format!(
        "{{ ... }}@args:\n\
         let\n  \
           f = {target};\n  \
           top = if builtins.isFunction f\n    \
             then f (builtins.intersectAttrs (builtins.functionArgs f) args)\n    \
             else f;\n\
         in\n{body}\n"
    )
}

/// The walk `nix-env -qa` does (the top level, then sets with
/// `recurseForDerivations = true`) as a list of attribute paths, each step
/// under `tryEval` so that an attribute that fails is listed (and reported
/// later with its message) instead of failing the list; as nixpkgs'
/// `ci/eval/attrpaths.nix`.
const LIST_BODY: &str = r#"let
  walk = path: v:
    let r = builtins.tryEval (
      if !(builtins.isAttrs v) then [ ]
      else if (v.type or null) == "derivation" then [ path ]
      else if path == [ ] || (v.recurseForDerivations or false) == true then
        builtins.concatLists (map (n: walk (path ++ [ n ]) v.${n}) (builtins.attrNames v))
      else [ ]);
    in if r.success then builtins.deepSeq r.value r.value else [ path ];
in walk [ ] top"#;

/// `top` selected along `path`, each name quoted.
fn select(path: &[String]) -> String {
    let mut s = String::from("top");
    for n in path {
        s.push('.');
        s.push_str(&nix_string(n));
    }
    s
}

/// A set naming the chunk's attributes `p0`, `p1`, … (names Nix needs no
/// quoting for, whatever the attribute paths hold), read back by index.
fn chunk_body(paths: &[Vec<String>]) -> String {
    let mut s = String::from("{\n");
    for (i, p) in paths.iter().enumerate() {
        s.push_str(&format!("  p{i} = {};\n", select(p)));
    }
    s.push('}');
    s
}

/// The attribute path a key of the chunk's set stands for: `p3` is
/// `paths[3]`, `p3.x` an attribute `x` inside it (a set Nix recursed into).
fn unchunk(key: &str, paths: &[Vec<String>]) -> Option<String> {
    let (head, rest) = match key.split_once('.') {
        Some((h, r)) => (h, Some(r)),
        None => (key, None),
    };
    let i: usize = head.strip_prefix('p')?.parse().ok()?;
    let mut attr = paths.get(i)?.join(".");
    if let Some(r) = rest {
        attr.push('.');
        attr.push_str(r);
    }
    Some(attr)
}

/// The user's flags that apply to evaluation, in `nix`'s spelling.
pub(crate) fn eval_flags(opts: &Options, impure: bool) -> Vec<String> {
    let mut f = Vec::new();
    if impure && opts.impure {
        f.push("--impure".to_string());
    }
    if opts.show_trace {
        f.push("--show-trace".to_string());
    }
    for path in &opts.include {
        f.extend(["-I".to_string(), path.clone()]);
    }
    for (name, value) in &opts.auto_args {
        match value {
            AutoArg::Expr(e) => f.extend(["--arg".into(), name.clone(), e.clone()]),
            AutoArg::Str(v) => f.extend(["--argstr".into(), name.clone(), v.clone()]),
        }
    }
    for (name, value) in &opts.options {
        f.extend(["--option".into(), name.clone(), value.clone()]);
    }
    // The scratch store what the evaluation writes goes to: `nix-env`
    // evaluates in the `store` setting's store (it ignores
    // `--eval-store`), as `nix-instantiate` does when given no other.
    if let Some(root) = &opts.eval_store {
        f.extend([
            "--option".into(),
            "store".into(),
            crate::eval_store::url(root),
        ]);
    }
    f
}

/// Evaluates the attributes of the expression in `dir` (`opts.file` inside
/// it, else its `default.nix`): those given in `attrs` (dotted paths; a
/// set with `recurseForDerivations` stands for the derivations inside), or
/// every one `nix-env -qa` would list. An attribute that fails is an
/// [`Outcome::Failed`]; only a failure of the whole side is an error.
pub fn evaluate(
    evaluator: &Evaluator,
    dir: &Path,
    attrs: Option<&[String]>,
    opts: &Options,
) -> Result<Evaluation, AttrsError> {
    evaluate_target(evaluator, &target(dir, opts), attrs, opts)
}

/// [`evaluate`] for a flake: its `legacyPackages` (else `packages`) of the
/// current system, as `nix build REF#attr` finds attributes, with
/// [`flake_options`].
pub fn evaluate_flake(
    evaluator: &Evaluator,
    flake_ref: &str,
    attrs: Option<&[String]>,
    opts: &Options,
) -> Result<Evaluation, AttrsError> {
    let mut opts = flake_options(opts);
    // The flake's source is copied into the store it is evaluated in,
    // read-only mode or not: a scratch store, never the user's.
    let scratch = match opts.eval_store {
        Some(_) => None,
        None => {
            let s = crate::eval_store::EvalStore::new(&evaluator.nix_instantiate())?;
            opts.eval_store = Some(s.root().to_path_buf());
            Some(s)
        }
    };
    let eval = evaluate_target(evaluator, &flake_target(flake_ref), attrs, &opts);
    drop(scratch);
    eval
}

/// `opts` for evaluating a flake through `builtins.getFlake`: flakes are
/// an experimental feature of the Nix versions this runs with, so it is
/// enabled for these evaluations only, and they run impure
/// (`nix-eval-jobs` needs it for an unlocked reference; `nix-env` is
/// always impure).
pub(crate) fn flake_options(opts: &Options) -> Options {
    let mut opts = opts.clone();
    opts.options.push((
        "extra-experimental-features".into(),
        "nix-command flakes".into(),
    ));
    opts.impure = true;
    opts
}

fn evaluate_target(
    evaluator: &Evaluator,
    target: &str,
    attrs: Option<&[String]>,
    opts: &Options,
) -> Result<Evaluation, AttrsError> {
    if opts.expr.is_some() {
        return Err(AttrsError::Expr);
    }
    let tmp = tempfile::Builder::new()
        .prefix("nix-heft-attrs-")
        .tempdir()
        .map_err(AttrsError::Temp)?;
    // The side as a whole first: a side that does not evaluate (a syntax
    // error, a `throw` at the top) is the run's error, not a failure of
    // every attribute (nor, listing with `nix-env`, an attribute named "").
    probe_top(&evaluator.nix_instantiate(), tmp.path(), target, opts)?;
    let requested: Option<Vec<Vec<String>>> = attrs.map(|a| {
        a.iter()
            .map(|s| s.split('.').map(String::from).collect())
            .collect()
    });
    match evaluator {
        Evaluator::NixEvalJobs(ej) => {
            let body = match &requested {
                Some(paths) => chunk_body(paths),
                None => "top".to_string(),
            };
            let file = write_entry(tmp.path(), "all.nix", &entry(target, &body))?;
            let flags = ej.flags()?;
            // Without `--no-instantiate` (before v2.31.0) it writes the
            // `.drv` of each derivation it evaluates: into a scratch store.
            let scratch =
                if opts.eval_store.is_none() && !flags.iter().any(|f| f == "--no-instantiate") {
                    Some(crate::eval_store::EvalStore::new(
                        &evaluator.nix_instantiate(),
                    )?)
                } else {
                    None
                };
            let mut ej_opts;
            let opts = match &scratch {
                Some(s) => {
                    ej_opts = opts.clone();
                    ej_opts.eval_store = Some(s.root().to_path_buf());
                    &ej_opts
                }
                None => opts,
            };
            let mut cmd = Command::new(&ej.program);
            cmd.args(flags).args(eval_flags(opts, true));
            // Every version reads Nix's `--eval-store` (`MixEvalArgs`);
            // v2.9.0 opens the `store` setting's store instead, which
            // `eval_flags` sets too.
            if let Some(root) = &opts.eval_store {
                cmd.args(["--eval-store", &crate::eval_store::url(root)]);
            }
            cmd.arg(&file);
            let mut eval = eval_jobs::run(cmd, &ej.program, &opts.store_dir)?;
            if let Some(paths) = &requested {
                let mut keyed = Evaluation::default();
                let mut absent = BTreeSet::new();
                for (key, outcome) in std::mem::take(&mut eval.attrs) {
                    let attr = unchunk(&key, paths).ok_or_else(|| AttrsError::Output {
                        program: ej.program.to_string_lossy().into(),
                        detail: format!("an attribute not asked for: {key}"),
                    })?;
                    if is_missing(&outcome, &attr, &file) {
                        absent.insert(attr);
                    } else {
                        keyed.attrs.insert(attr, outcome);
                    }
                }
                eval = keyed;
                for p in paths {
                    let attr = p.join(".");
                    if !covered(&eval, &attr) && !absent.contains(&attr) {
                        eval.attrs
                            .insert(attr, Outcome::Failed(NOT_A_DERIVATION.into()));
                    }
                }
            }
            Ok(eval)
        }
        Evaluator::NixEnv {
            nix_env,
            nix_instantiate,
            chunk_size,
        } => {
            let paths = match requested {
                Some(p) => p,
                None => list(nix_instantiate, tmp.path(), target, opts)?,
            };
            let mut eval = Evaluation::default();
            for chunk in paths.chunks((*chunk_size).max(1)) {
                nix_env_chunk(
                    nix_env,
                    nix_instantiate,
                    tmp.path(),
                    target,
                    chunk,
                    opts,
                    &mut eval,
                )?;
            }
            Ok(eval)
        }
    }
}

/// Whether `outcome` says `attr` is not there: Nix's "attribute 'x'
/// missing" for one of its names, at the selection in nix-heft's own
/// generated `file` (an attribute whose own evaluation selects something
/// missing elsewhere has failed, it is not absent).
fn is_missing(outcome: &Outcome, attr: &str, file: &Path) -> bool {
    let Outcome::Failed(message) = outcome else {
        return false;
    };
    nix_heft_format::nix_error::missing_attribute(message).is_some_and(|m| {
        attr.split('.').any(|n| n == m.name) && m.file.as_deref().map(Path::new) == Some(file)
    })
}

/// Checks that the side evaluates to a set of attributes
/// (`builtins.typeOf` of it, one `nix-instantiate`).
fn probe_top(
    nix_instantiate: &OsString,
    tmp: &Path,
    target: &str,
    opts: &Options,
) -> Result<(), AttrsError> {
    let file = write_entry(tmp, "top.nix", &entry(target, "builtins.typeOf top"))?;
    let mut cmd = Command::new(nix_instantiate);
    cmd.args(["--readonly-mode", "--eval", "--json"])
        .args(eval_flags(opts, false))
        .args(AUTO_CALL)
        .arg(&file);
    match output(cmd, || nix_instantiate.to_string_lossy().into()) {
        Ok(out) => {
            let t: String = serde_json::from_slice(&out).map_err(|e| AttrsError::Output {
                program: nix_instantiate.to_string_lossy().into(),
                detail: e.to_string(),
            })?;
            if t == "set" {
                Ok(())
            } else {
                Err(AttrsError::NotASet(t))
            }
        }
        Err(AttrsError::Failed { stderr, .. }) => Err(AttrsError::Unevaluable(stderr)),
        Err(e) => Err(e),
    }
}

/// What an attribute asked for that yields no derivation is.
const NOT_A_DERIVATION: &str = "not a derivation, nor a set with recurseForDerivations";

/// Whether `attr` or an attribute inside it was evaluated.
fn covered(eval: &Evaluation, attr: &str) -> bool {
    let inside = format!("{attr}.");
    eval.attrs.contains_key(attr)
        || eval
            .attrs
            .range(inside.clone()..)
            .next()
            .is_some_and(|(k, _)| k.starts_with(&inside))
}

/// `nix-instantiate --eval` calls the file's function only when some
/// `--arg` is given (Nix 2.8 leaves it a lambda otherwise, "cannot convert
/// a function to JSON"); the generated file takes `{ ... }`, so one more
/// argument, never passed on to the side's own file, makes the call sure.
const AUTO_CALL: [&str; 3] = ["--arg", "nixHeftAutoCall", "true"];

fn write_entry(dir: &Path, name: &str, text: &str) -> Result<PathBuf, AttrsError> {
    let file = dir.join(name);
    std::fs::write(&file, text).map_err(AttrsError::Temp)?;
    Ok(file)
}

/// Runs `cmd`, returning its standard output, or its standard error as
/// the error when it fails.
pub(super) fn output(mut cmd: Command, what: impl Fn() -> String) -> Result<Vec<u8>, AttrsError> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|source| AttrsError::Spawn {
            program: what(),
            source,
        })?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(AttrsError::Failed {
            program: what(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Every attribute path `nix-env -qa` would list ([`LIST_BODY`]).
fn list(
    nix_instantiate: &OsString,
    tmp: &Path,
    target: &str,
    opts: &Options,
) -> Result<Vec<Vec<String>>, AttrsError> {
    let file = write_entry(tmp, "list.nix", &entry(target, LIST_BODY))?;
    let mut cmd = Command::new(nix_instantiate);
    cmd.args(["--readonly-mode", "--eval", "--strict", "--json"])
        .args(eval_flags(opts, false))
        .args(AUTO_CALL)
        .arg(&file);
    let what = || format!("{} (listing attributes)", nix_instantiate.to_string_lossy());
    let out = output(cmd, what)?;
    serde_json::from_slice(&out).map_err(|e| AttrsError::Output {
        program: what(),
        detail: e.to_string(),
    })
}

/// `nix-env --json`'s record of one derivation, the part read here.
#[derive(Deserialize)]
struct NixEnvItem {
    #[serde(default)]
    outputs: BTreeMap<String, String>,
    #[serde(rename = "drvPath")]
    drv_path: Option<String>,
}

/// One chunk through `nix-env`, into `eval`. A chunk that fails as a whole
/// is split until the attributes that fail are alone, each with its
/// message; an attribute `nix-env` leaves out (it skips some failures, and
/// what is not a derivation) is asked about alone ([`why_missing`]).
#[allow(clippy::too_many_arguments)]
fn nix_env_chunk(
    nix_env: &OsString,
    nix_instantiate: &OsString,
    tmp: &Path,
    target: &str,
    chunk: &[Vec<String>],
    opts: &Options,
    eval: &mut Evaluation,
) -> Result<(), AttrsError> {
    let file = write_entry(tmp, "chunk.nix", &entry(target, &chunk_body(chunk)))?;
    let mut cmd = Command::new(nix_env);
    cmd.args(["--readonly-mode", "-f"])
        .arg(&file)
        .args(["-qaP", "--out-path", "--json"])
        .args(eval_flags(opts, false));
    let what = || format!("{} -qaP --out-path --json", nix_env.to_string_lossy());
    let out = match output(cmd, what) {
        Ok(out) => out,
        Err(AttrsError::Failed { stderr, .. }) => {
            if let [one] = chunk {
                let attr = one.join(".");
                let failed = Outcome::Failed(stderr);
                // Not there at all: absent from the evaluation, as the
                // side does not have it.
                if !is_missing(&failed, &attr, &file) {
                    eval.attrs.insert(attr, failed);
                }
                return Ok(());
            }
            let (a, b) = chunk.split_at(chunk.len() / 2);
            for half in [a, b] {
                nix_env_chunk(nix_env, nix_instantiate, tmp, target, half, opts, eval)?;
            }
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let items: BTreeMap<String, NixEnvItem> =
        serde_json::from_slice(&out).map_err(|e| AttrsError::Output {
            program: what(),
            detail: e.to_string(),
        })?;
    for (key, item) in items {
        let attr = unchunk(&key, chunk).ok_or_else(|| AttrsError::Output {
            program: what(),
            detail: format!("an attribute not asked for: {key}"),
        })?;
        // nix-env lists a derivation whose paths throw (what nixpkgs' meta
        // checks do to a package marked broken) without `outputs`: it is
        // asked about alone, for Nix's message.
        if item.outputs.is_empty() {
            if key.contains('.') {
                let path: Vec<String> = attr.split('.').map(String::from).collect();
                let what = why_missing(nix_instantiate, tmp, target, &path, opts)?;
                eval.attrs.insert(attr, what);
            }
            continue;
        }
        let outcome = outcome(item.drv_path.as_deref(), &item.outputs, &opts.store_dir).map_err(
            |detail| AttrsError::Output {
                program: what(),
                detail,
            },
        )?;
        eval.attrs.insert(attr, outcome);
    }
    for p in chunk {
        let attr = p.join(".");
        if !covered(eval, &attr) {
            let what = why_missing(nix_instantiate, tmp, target, p, opts)?;
            eval.attrs.insert(attr, what);
        }
    }
    Ok(())
}

/// What `path` is, when `nix-env` left it out: a derivation it listed
/// under another name (nix-env lists a derivation once, so an alias's is
/// dropped), with its outputs (and, as what `nix-env` lists, no `.drv`);
/// else the error its evaluation gives, or that it is not a derivation.
fn why_missing(
    nix_instantiate: &OsString,
    tmp: &Path,
    target: &str,
    path: &[String],
    opts: &Options,
) -> Result<Outcome, AttrsError> {
    let body = format!(
        "let v = {}; in\n\
         if builtins.isAttrs v && (v.type or null) == \"derivation\" then {{\n  \
           outputs = builtins.listToAttrs (map (o: {{ name = o; value = v.${{o}}.outPath; }})\n    \
             (v.outputs or [ \"out\" ]));\n\
         }} else \"other\"",
        select(path)
    );
    let file = write_entry(tmp, "probe.nix", &entry(target, &body))?;
    let mut cmd = Command::new(nix_instantiate);
    cmd.args(["--readonly-mode", "--eval", "--strict", "--json"])
        .args(eval_flags(opts, false))
        .args(AUTO_CALL)
        .arg(&file);
    let what = || nix_instantiate.to_string_lossy().to_string();
    match output(cmd, what) {
        Ok(out) => {
            let v: serde_json::Value =
                serde_json::from_slice(&out).map_err(|e| AttrsError::Output {
                    program: what(),
                    detail: e.to_string(),
                })?;
            if v.is_string() {
                return Ok(Outcome::Failed(NOT_A_DERIVATION.into()));
            }
            let item: NixEnvItem = serde_json::from_value(v).map_err(|e| AttrsError::Output {
                program: what(),
                detail: e.to_string(),
            })?;
            outcome(item.drv_path.as_deref(), &item.outputs, &opts.store_dir).map_err(|detail| {
                AttrsError::Output {
                    program: what(),
                    detail,
                }
            })
        }
        Err(AttrsError::Failed { stderr, .. }) => Ok(Outcome::Failed(stderr)),
        Err(e) => Err(e),
    }
}

/// An outcome from an evaluator's paths.
fn outcome(
    drv_path: Option<&str>,
    outputs: &BTreeMap<String, String>,
    store_dir: &str,
) -> Result<Outcome, String> {
    let parse = |s: &str| StorePath::parse(store_dir, s).map_err(|e| format!("{s}: {e}"));
    let drv_path = drv_path.map(parse).transpose()?;
    let outputs = outputs
        .iter()
        .map(|(name, path)| Ok((name.clone(), parse(path)?)))
        .collect::<Result<_, String>>()?;
    Ok(Outcome::Evaluated { drv_path, outputs })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORE: &str = "/nix/store";

    fn sp(s: &str) -> StorePath {
        StorePath::parse(STORE, s).unwrap()
    }

    /// Lines as nix-eval-jobs' README documents them (`attr`, `attrPath`,
    /// `drvPath`, `inputDrvs`, `name`, `outputs`, `system`), one with two
    /// outputs, one with an `error`, and one from an older version with
    /// `attr` only.
    #[test]
    fn reads_nix_eval_jobs_lines() {
        let text = r#"{"attr":"coverage","attrPath":["coverage"],"drvPath":"/nix/store/fmbqzaq8mim1423879lhn9whs6imx5w4-patchelf-coverage-0.18.0.drv","inputDrvs":{"/nix/store/23632hx2c98lbbjld279dx0w08lxn6kp-hook.drv":["out"]},"name":"patchelf-coverage-0.18.0","outputs":{"out":"/nix/store/gfni9sbhhwhxxfqziq1fs3n82bvw962l-patchelf-coverage-0.18.0"},"system":"x86_64-linux"}
{"attr":"set.lib","attrPath":["set","lib"],"drvPath":"/nix/store/3xpwg8f623dpkh6cblv2fzcq5n99xl0j-lib-1.0.drv","name":"lib-1.0","outputs":{"dev":"/nix/store/72pz5awc7gpwdqxrdsy8j0bvg2n7z78q-lib-1.0-dev","out":"/nix/store/d0mzprvv3vhasj23r1a6qn8qip0srbc4-lib-1.0"},"system":"x86_64-linux"}

{"attr":"broken","attrPath":["broken"],"error":"error: boom\n       at /tmp/default.nix:3:12"}
{"attr":"old","drvPath":"/nix/store/s38l0fg5ja6j8qpws7slw2ws0c6v0qcf-old-1.drv","outputs":{"out":"/nix/store/w8r4h1xk71fryb99df8aszp83kfhw3bc-old-1"}}
"#;
        let eval = read_eval_jobs(text.as_bytes(), STORE).unwrap();
        assert_eq!(eval.attrs.len(), 4);
        assert_eq!(
            eval.attrs["coverage"],
            Outcome::Evaluated {
                drv_path: Some(sp(
                    "/nix/store/fmbqzaq8mim1423879lhn9whs6imx5w4-patchelf-coverage-0.18.0.drv"
                )),
                outputs: [(
                    "out".to_string(),
                    sp("/nix/store/gfni9sbhhwhxxfqziq1fs3n82bvw962l-patchelf-coverage-0.18.0")
                )]
                .into(),
            }
        );
        let Outcome::Evaluated { outputs, .. } = &eval.attrs["set.lib"] else {
            panic!("set.lib: {:?}", eval.attrs["set.lib"]);
        };
        assert_eq!(
            outputs.keys().map(String::as_str).collect::<Vec<_>>(),
            ["dev", "out"]
        );
        assert_eq!(
            outputs["dev"].as_str(),
            "/nix/store/72pz5awc7gpwdqxrdsy8j0bvg2n7z78q-lib-1.0-dev"
        );
        assert_eq!(
            eval.attrs["broken"],
            Outcome::Failed("error: boom\n       at /tmp/default.nix:3:12".into())
        );
        assert!(
            matches!(&eval.attrs["old"], Outcome::Evaluated { outputs, .. } if outputs.len() == 1)
        );
    }

    #[test]
    fn nix_eval_jobs_lines_that_are_not_its_format_are_errors() {
        let err = read_eval_jobs("{\"attr\":\"a\"}\nnot json\n".as_bytes(), STORE).unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
        let err = read_eval_jobs(
            "{\"attr\":\"a\",\"outputs\":{\"out\":\"/elsewhere/x\"}}\n".as_bytes(),
            STORE,
        )
        .unwrap_err();
        assert!(err.contains("/elsewhere/x"), "{err}");
    }

    fn evaluated(outputs: &[(&str, &str)]) -> Outcome {
        Outcome::Evaluated {
            drv_path: None,
            outputs: outputs
                .iter()
                .map(|(n, p)| (n.to_string(), sp(p)))
                .collect(),
        }
    }

    #[test]
    fn changed_counts_out_paths_as_nixpkgs_ci_does() {
        let a1 = "/nix/store/q342baw1dw26i8zxbxlgmc0v6hw2llpc-a-1";
        let a2 = "/nix/store/mwapqjfj0lyr55z4hzn99pc1a357x0gy-a-2";
        let dev = "/nix/store/y6dh7xf9g39qbbnqwhzwc32cafqns89m-b-1-dev";
        let b = "/nix/store/kj4w9dyag4ldfrkw4miplc4viwdm31k6-b-1";
        let drv1 = "/nix/store/fmbqzaq8mim1423879lhn9whs6imx5w4-same-1.drv";
        let drv2 = "/nix/store/3xpwg8f623dpkh6cblv2fzcq5n99xl0j-same-1.drv";
        let base = Evaluation {
            attrs: [
                ("same".into(), evaluated(&[("out", a1)])),
                ("bumped".into(), evaluated(&[("out", a1)])),
                ("split".into(), evaluated(&[("out", b)])),
                ("gone".into(), evaluated(&[("out", b)])),
                ("fails".into(), Outcome::Failed("x".into())),
                ("fixed".into(), Outcome::Failed("x".into())),
                (
                    "newdrv".into(),
                    Outcome::Evaluated {
                        drv_path: Some(sp(drv1)),
                        outputs: [("out".into(), sp(a1))].into(),
                    },
                ),
            ]
            .into(),
        };
        let head = Evaluation {
            attrs: [
                ("same".into(), evaluated(&[("out", a1)])),
                ("bumped".into(), evaluated(&[("out", a2)])),
                ("split".into(), evaluated(&[("out", b), ("dev", dev)])),
                ("new".into(), evaluated(&[("out", a2)])),
                ("fails".into(), Outcome::Failed("y".into())),
                ("fixed".into(), evaluated(&[("out", a1)])),
                (
                    "newdrv".into(),
                    Outcome::Evaluated {
                        drv_path: Some(sp(drv2)),
                        outputs: [("out".into(), sp(a1))].into(),
                    },
                ),
            ]
            .into(),
        };
        let c = changed(&base, &head);
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(c.added, set(&["new"]));
        assert_eq!(c.removed, set(&["gone"]));
        assert_eq!(c.changed, set(&["bumped", "fixed", "split"]));
        assert_eq!(c.all().len(), 5);
        assert_eq!(changed(&head, &head), Changes::default());
    }

    #[test]
    fn chunk_keys_map_back_to_attribute_paths() {
        let paths = vec![
            vec!["a".to_string()],
            vec!["set".to_string(), "with space".to_string()],
        ];
        assert_eq!(
            chunk_body(&paths),
            "{\n  p0 = top.\"a\";\n  p1 = top.\"set\".\"with space\";\n}"
        );
        assert_eq!(unchunk("p0", &paths).as_deref(), Some("a"));
        assert_eq!(
            unchunk("p1.x.y", &paths).as_deref(),
            Some("set.with space.x.y")
        );
        assert_eq!(unchunk("p2", &paths), None);
        assert_eq!(unchunk("q0", &paths), None);
    }

    /// The nixpkgs-shaped expression the Nix-backed test evaluates:
    /// derivations over `/bin/sh` (never built), one with two outputs, a
    /// set Nix recurses into and one it does not, and one that throws.
    fn default_nix(a_version: &str, last: &str) -> String {
        format!(
            r#"{{ salt ? "s" }}:
let
  mk = name: extra: derivation ({{
    inherit name;
    system = builtins.currentSystem;
    builder = "/bin/sh";
    args = [ "-c" "echo ${{salt}} > $out" ];
  }} // extra);
in rec {{
  a = mk "a-{a_version}" {{ }};
  alias = a;
  b = mk "b-1" {{ outputs = [ "out" "dev" ]; args = [ "-c" "echo > $out; echo > $dev" ]; }};
  set = {{ recurseForDerivations = true; c = mk "c-1" {{ }}; d = mk "d-1" {{ }}; }};
  hidden = {{ e = mk "e-1" {{ }}; }};
  bad = throw "boom";
  {last} = mk "{last}-1" {{ }};
}}
"#
        )
    }

    fn run(cmd: &mut Command) -> String {
        let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn git_in(repo: &Path, args: &[&str]) -> String {
        run(Command::new("git").arg("-C").arg(repo).args(args))
    }

    /// Attribute → outputs, by the test's own `nix-env` run on a file.
    fn nix_env_by_hand(file: &Path, salt: &str) -> BTreeMap<String, BTreeMap<String, String>> {
        let out = run(Command::new("nix-env")
            .arg("--readonly-mode")
            .arg("-f")
            .arg(file)
            .args(["-qaP", "--out-path", "--json", "--argstr", "salt", salt]));
        let v: BTreeMap<String, serde_json::Value> = serde_json::from_str(&out).unwrap();
        v.into_iter()
            .map(|(k, v)| {
                let outs = v["outputs"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(n, p)| (n.clone(), p.as_str().unwrap().to_string()))
                    .collect();
                (k, outs)
            })
            .collect()
    }

    fn outputs_of(eval: &Evaluation) -> BTreeMap<String, BTreeMap<String, String>> {
        eval.attrs
            .iter()
            .filter_map(|(k, o)| match o {
                Outcome::Evaluated { outputs, .. } => Some((
                    k.clone(),
                    outputs
                        .iter()
                        .map(|(n, p)| (n.clone(), p.as_str().to_string()))
                        .collect(),
                )),
                Outcome::Failed(_) => None,
            })
            .collect()
    }

    /// Real `nix-env` on a git repository with a base and a head commit:
    /// the head bumps `a`, removes `gone` and adds `new`; `changed` finds
    /// exactly those, every out path is the one the test's own `nix-env`
    /// and `nix-instantiate --eval` give, and the user's dirty tree, index
    /// and worktree list are as they were once the sides are dropped.
    #[test]
    #[cfg_attr(not(feature = "nix-tests"), ignore = "runs Nix: scripts/test.sh")]
    fn nix_env_evaluates_git_sides_and_finds_the_changed_attributes() {
        let tmp = tempfile::tempdir().unwrap();
        // A salt of this run, so that no earlier run wrote its derivations.
        let salt = tmp
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        let repo = tmp.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git_in(&repo, &["init", "-q"]);
        git_in(&repo, &["config", "user.email", "t@example.org"]);
        git_in(&repo, &["config", "user.name", "t"]);
        std::fs::write(repo.join("default.nix"), default_nix("1", "gone")).unwrap();
        std::fs::write(repo.join("README"), "base\n").unwrap();
        git_in(&repo, &["add", "."]);
        git_in(&repo, &["commit", "-q", "-m", "base"]);
        std::fs::write(repo.join("default.nix"), default_nix("2", "new")).unwrap();
        git_in(&repo, &["commit", "-q", "-am", "head"]);
        // The user's tree is dirty: a change in the index, one in the
        // working tree (to the evaluated file itself) and an untracked file.
        std::fs::write(repo.join("README"), "staged\n").unwrap();
        git_in(&repo, &["add", "README"]);
        std::fs::write(repo.join("default.nix"), "throw \"work in progress\"\n").unwrap();
        std::fs::write(repo.join("untracked"), "x\n").unwrap();
        let status = || {
            (
                git_in(
                    &repo,
                    &["status", "--porcelain=v1", "--untracked-files=all"],
                ),
                git_in(&repo, &["diff"]),
                git_in(&repo, &["diff", "--cached"]),
                git_in(&repo, &["worktree", "list", "--porcelain"]),
                git_in(&repo, &["rev-parse", "HEAD"]),
            )
        };
        let before = status();

        // The test's own evaluation of each commit's file.
        let by_hand = |rev: &str| {
            let dir = tmp.path().join(rev.replace('~', "-"));
            std::fs::create_dir(&dir).unwrap();
            let file = dir.join("default.nix");
            std::fs::write(
                &file,
                git_in(&repo, &["show", &format!("{rev}:default.nix")]),
            )
            .unwrap();
            let all = nix_env_by_hand(&file, &salt);
            let eval_nix = |what: &str| {
                let out = run(Command::new("nix-instantiate")
                    .args(["--readonly-mode", "--eval", "--strict", "--json", "-E"])
                    .arg(format!(
                        "(import {} {{ salt = {}; }}).{what}",
                        file.display(),
                        nix_string(&salt)
                    )));
                serde_json::from_str::<String>(&out).unwrap()
            };
            (all, eval_nix("set.c.outPath"), eval_nix("b.drvPath"))
        };
        let (base_hand, base_c, base_b_drv) = by_hand("HEAD~1");
        let (head_hand, head_c, head_b_drv) = by_hand("HEAD");

        let opts = Options {
            auto_args: vec![("salt".into(), AutoArg::Str(salt.clone()))],
            ..Options::default()
        };
        let evaluator = Evaluator::nix_env();
        let (base, head, kept) = {
            let base_side = GitSide::checkout(&repo, "HEAD~1").unwrap();
            let head_side = GitSide::checkout(&repo, "HEAD").unwrap();
            assert_ne!(base_side.commit(), head_side.commit());
            assert!(!base_side.path().starts_with(&repo));
            let base = evaluate(&evaluator, base_side.path(), None, &opts).unwrap();
            let head = evaluate(&evaluator, head_side.path(), None, &opts).unwrap();
            (base, head, head_side.path().to_path_buf())
        };
        assert!(!kept.exists(), "{} is left after drop", kept.display());
        // Evaluated without writing a derivation to the store.
        for drv in [&base_b_drv, &head_b_drv] {
            assert!(!Path::new(drv).exists(), "{drv} was written");
        }
        assert_eq!(status(), before, "the user's repository changed");

        // Every attribute nix-env lists, with the same outputs; `hidden` is
        // not recursed into; `bad` is reported with its message.
        // nix-env lists a derivation once: `alias`, which is `a`, is not in
        // its own answer, and is found all the same.
        for (mine, hand) in [(&base, &base_hand), (&head, &head_hand)] {
            let mut mine = outputs_of(mine);
            let alias = mine.remove("alias").expect("alias is evaluated");
            assert!(!hand.contains_key("alias"));
            assert_eq!(alias, hand["a"]);
            assert_eq!(&mine, hand);
        }
        assert_eq!(
            head.attrs.keys().map(String::as_str).collect::<Vec<_>>(),
            ["a", "alias", "b", "bad", "new", "set.c", "set.d"]
        );
        let Outcome::Failed(why) = &head.attrs["bad"] else {
            panic!("bad: {:?}", head.attrs["bad"]);
        };
        assert!(why.contains("boom"), "{why}");
        assert_eq!(outputs_of(&base)["set.c"]["out"], base_c);
        assert_eq!(outputs_of(&head)["set.c"]["out"], head_c);
        assert_eq!(outputs_of(&head)["b"].len(), 2);

        let c = changed(&base, &head);
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(c.added, set(&["new"]));
        assert_eq!(c.removed, set(&["gone"]));
        assert_eq!(c.changed, set(&["a", "alias"]));
        // The same, from the test's own evaluations.
        let hand_changed: BTreeSet<String> = base_hand
            .keys()
            .chain(head_hand.keys())
            .filter(|k| base_hand.get(*k) != head_hand.get(*k))
            .cloned()
            .chain(["alias".to_string()])
            .collect();
        assert_eq!(c.all(), hand_changed.iter().map(String::as_str).collect());

        // An explicit list in chunks of two, on a plain directory: a set
        // stands for its derivations, a failure and a missing name are
        // told with their messages, and the rest agrees with the whole.
        let dir = tmp.path().join("HEAD");
        let chunked = Evaluator::NixEnv {
            nix_env: "nix-env".into(),
            nix_instantiate: "nix-instantiate".into(),
            chunk_size: 2,
        };
        let asked: Vec<String> = [
            "a", "set", "bad", "nope", "b", "hidden", "alias", "set.nope",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let some = evaluate(&chunked, &dir, Some(&asked), &opts).unwrap();
        // A name the side does not have is not there (`nope`, `set.nope`).
        assert_eq!(
            some.attrs.keys().map(String::as_str).collect::<Vec<_>>(),
            ["a", "alias", "b", "bad", "hidden", "set.c", "set.d"]
        );
        for k in ["a", "alias", "b", "set.c", "set.d"] {
            assert_eq!(some.attrs[k], head.attrs[k], "{k}");
        }
        assert!(matches!(&some.attrs["bad"], Outcome::Failed(m) if m.contains("boom")));
        assert_eq!(
            some.attrs["hidden"],
            Outcome::Failed(NOT_A_DERIVATION.into())
        );
        assert_eq!(some.stands_for("set"), ["set.c", "set.d"]);
        assert_eq!(some.stands_for("a"), ["a"]);
        assert!(some.stands_for("nope").is_empty());

        // A side that does not evaluate at all (the user's work in
        // progress) is an error of the side, whichever way it is asked.
        for asked in [None, Some(&asked[..])] {
            let e = evaluate(&evaluator, &repo, asked, &opts).unwrap_err();
            assert!(
                matches!(&e, AttrsError::Unevaluable(m) if m.contains("work in progress")),
                "{e}"
            );
        }
    }
}
