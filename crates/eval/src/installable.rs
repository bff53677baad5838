//! Installables as `nix` takes them (`nixpkgs#hello`, `.#default^dev`,
//! `-f default.nix hello`, `--expr EXPR`, `/nix/store/…drv^out`), turned
//! into output paths by the user's own `nix` without building anything.
//!
//! Telling an installable from the other ROOT forms: with `--file` or
//! `--expr` every argument is an attribute path (Nix's
//! `SourceExprCommand::parseInstallables`, `src/libcmd/installables.cc`);
//! otherwise an argument with a `#` is a flake reference with its attribute
//! path, and a `.drv` path with `^OUTPUTS` (Nix ≥ 2.13) or `!OUTPUTS` (the
//! form Nix 2.8's `nix-instantiate` prints) or none names the derivation's
//! outputs. Anything else (store paths, `./result` links, names) is left to
//! core's `roots`: a bare `nixpkgs` or `.` is a flake reference to `nix`,
//! but a package name to nix-heft, so a flake needs its `#`.
//!
//! Output selection (`^out,dev`, `^*`) is parsed here, as Nix ≥ 2.9's
//! `parseOutputsSpec` (`src/libstore/path-with-outputs.cc`) does, and
//! applied to what `nix` reports, so it works with Nix 2.8 too, which has
//! no `^` syntax. Without one, the outputs are those `nix build` picks
//! (Nix ≥ 2.9, `InstallableFlake::toDerivedPaths` and
//! `InstallableAttrPath::toDerivedPaths`): the selected output when the
//! value has `outputSpecified = true` (nixpkgs' `pkg.dev`), else
//! `meta.outputsToInstall`, else, for a flake, `out`, and for `--file` or
//! `--expr`, every output (`DrvInfo::queryOutputs`). Nix 2.8 itself built
//! only `outputName` there.
//!
//! Evaluation runs `nix eval --json INSTALLABLE --apply F` (flags
//! `--extra-experimental-features 'nix-command flakes'`), where `F` returns
//! the derivation path, every output's path, `outputName`,
//! `outputSpecified` and `meta.outputsToInstall`. Evaluating `outPath` and
//! `drvPath` instantiates but never builds or substitutes; with
//! [`Options::instantiate`] off (the default) `--read-only` keeps even the
//! `.drv` files out of the store. Import from derivation, which would
//! build, is turned off (`--option allow-import-from-derivation false`,
//! which the user's own `--option` may override), and a flake's lock file
//! is never written (`--no-write-lock-file`); such a failure is told apart
//! ([`InstallableError::ImportFromDerivation`]) with the command that builds
//! only what the evaluation imports. `.drv` installables need no
//! evaluation: their outputs come from the file ([`nix_heft_format::derivation`]).
//!
//! `--arg`, `--argstr`, `-I` and `--show-trace` go to `nix` as given.
//! `nix eval` calls the functions along an attribute path with the
//! `--arg`s (`findAlongAttrPath`) but, unlike `nix build`, not the value
//! itself (a file that is a function, `-f FILE .`): `F` calls that one
//! with the same arguments, as Nix's `autoCallFunction` would (each
//! argument written into `F`, where Nix parses it the same way: from the
//! working directory, with the same `-I`).
//!
//! A flake reference without `#` but with its type (`path:/dir`,
//! `github:o/r`, `git+file:…`) means what it means to `nix build`: the
//! flake's default package (`packages.<system>.default`, else Nix 2.8's
//! `defaultPackage.<system>`); a flake without one is an error that says to
//! name an attribute.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use serde::Deserialize;

use nix_heft_format::derivation::{Derivation, ReadDrvError};
use nix_heft_format::quote;
use nix_heft_format::store_path::StorePath;

/// How installables are read and evaluated: the `nix` flags that shape
/// them, passed through to `nix` as given.
#[derive(Clone, Debug)]
pub struct Options {
    /// `--file FILE` / `-f FILE`: arguments are attribute paths of this Nix
    /// file (or `<nixpkgs>`, as `nix` reads it). Not `-`: each installable
    /// is one `nix eval`, and standard input is not passed to them.
    pub file: Option<String>,
    /// `--expr EXPR`: arguments are attribute paths of this expression's
    /// value (`.` or empty for the value itself).
    pub expr: Option<String>,
    /// `--impure`.
    pub impure: bool,
    /// `--override-input INPUT FLAKEREF`, in order.
    pub override_inputs: Vec<(String, String)>,
    /// `--option NAME VALUE`, in order.
    pub options: Vec<(String, String)>,
    /// `--arg NAME EXPR` and `--argstr NAME STRING`, in the order given
    /// (a name given twice: the last wins, as in Nix).
    pub auto_args: Vec<(String, AutoArg)>,
    /// `-I PATH` or `-I NAME=PATH`: where `<NAME>` lookups search, in
    /// order, before `NIX_PATH`.
    pub include: Vec<String>,
    /// `--show-trace`: Nix's errors with the whole evaluation trace.
    pub show_trace: bool,
    /// Let `nix` write the `.drv` files it instantiates into the store
    /// (what `nix eval` does by default), for callers that read them next
    /// (the build graph). Off, `nix` runs with `--read-only` and writes no
    /// derivation; some flakes (those that import a path they make during
    /// evaluation) fail then, with Nix's error.
    pub instantiate: bool,
    /// The program to run, found on `PATH` unless it has a `/`.
    pub nix: OsString,
    /// The store directory the paths live in.
    pub store_dir: String,
    /// Where the store directory's files are on this machine when not at
    /// `store_dir` itself (a chroot store's `ROOT/nix/store`): `.drv`
    /// installables are read from there.
    pub real_store_dir: Option<std::path::PathBuf>,
    /// The root of a scratch chroot store ([`crate::eval_store`]) that
    /// flake evaluations copy their sources into, never the user's store.
    /// `None`: each run of evaluations that needs one makes its own.
    pub eval_store: Option<std::path::PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            file: None,
            expr: None,
            impure: false,
            override_inputs: Vec::new(),
            options: Vec::new(),
            auto_args: Vec::new(),
            include: Vec::new(),
            show_trace: false,
            instantiate: false,
            nix: "nix".into(),
            store_dir: "/nix/store".into(),
            real_store_dir: None,
            eval_store: None,
        }
    }
}

/// An argument for the function an installable's value is (Nix's
/// `--arg` / `--argstr`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AutoArg {
    /// `--arg NAME EXPR`: a Nix expression.
    Expr(String),
    /// `--argstr NAME STRING`: a string.
    Str(String),
}

/// Which outputs an installable asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputsSpec {
    /// None given: those `nix build` would pick (see the module docs).
    Default,
    /// `^*`: every output.
    All,
    /// `^a,b`: these, in the order given.
    Names(Vec<String>),
}

/// An argument that `nix` would take as an installable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Installable {
    /// `FLAKEREF#ATTRPATH`, e.g. `nixpkgs#hello`, `path:/dir#pkg`, or a
    /// flake reference with its type and no `#` (`path:/dir`: its default
    /// package).
    Flake {
        /// The argument as given, outputs included, for messages.
        arg: String,
        /// `FLAKEREF#ATTRPATH` (or `FLAKEREF`) without the output
        /// selection, as `nix` takes it.
        reference: String,
        /// The outputs asked for.
        outputs: OutputsSpec,
    },
    /// An attribute path of `--file` or `--expr` (empty for the value
    /// itself).
    Attr {
        /// The argument as given.
        arg: String,
        /// The attribute path.
        attr: String,
        /// The outputs asked for.
        outputs: OutputsSpec,
    },
    /// A store derivation and the outputs asked for (`All` when none are
    /// named, as `nix path-info DRV` means in Nix 2.8).
    Derivation {
        /// The argument as given.
        arg: String,
        /// The `.drv` path.
        drv: String,
        /// The outputs asked for.
        outputs: OutputsSpec,
    },
}

/// An installable evaluated: its derivation and the output paths asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evaluated {
    /// The argument as given.
    pub arg: String,
    /// The derivation.
    pub drv_path: StorePath,
    /// The outputs selected, name and path: in the order `^a,b` gave, else
    /// in the value's `outputs` list order (the `.drv` file's sorted order
    /// for a `.drv` installable).
    pub outputs: Vec<(String, StorePath)>,
}

/// Why an installable could not be evaluated. Each names the installable.
#[derive(Debug, thiserror::Error)]
pub enum InstallableError {
    /// The scratch store a flake is evaluated in could not be made.
    #[error(transparent)]
    EvalStore(#[from] crate::eval_store::EvalStoreError),
    /// No `nix` to evaluate with (the CLI's exit 2: a set-up problem, not
    /// a failure of the installable).
    #[error(
        "'{arg}' is an installable, and evaluating it needs Nix's `{program}` command, \
         which was not found on PATH: install Nix, or give a store path instead"
    )]
    NixNotFound {
        /// The installable.
        arg: String,
        /// The program looked for.
        program: String,
    },
    /// `nix` could not be run for another reason.
    #[error("cannot run `{program}` to evaluate '{arg}': {source}")]
    Spawn {
        /// The installable.
        arg: String,
        /// The program.
        program: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// `nix` failed; its own error text.
    #[error("evaluating '{arg}' failed:\n{stderr}{}", hint.as_deref().map(|h| format!("\n{h}")).unwrap_or_default())]
    Eval {
        /// The installable.
        arg: String,
        /// What `nix` wrote to standard error, trimmed.
        stderr: String,
        /// What to do about it, when nix-heft knows more than Nix said (a
        /// flake reference without `#` whose flake has no default
        /// package).
        hint: Option<String>,
    },
    /// The evaluation imports from a derivation (IFD) that is not built:
    /// nix-heft evaluates read-only and never builds.
    #[error(
        "evaluating '{arg}' failed:\n{stderr}\n\
         '{arg}' imports from a derivation{}: evaluating it needs that built, and nix-heft \
         evaluates read-only with import from derivation off, never building. Build what the \
         evaluation imports (only that, not the package), unless it is built already:\n  \
         {build}\nthen run nix-heft again with `--option allow-import-from-derivation true`",
        path.as_deref().map(|d| format!(" ({d})")).unwrap_or_default()
    )]
    ImportFromDerivation {
        /// The installable.
        arg: String,
        /// The derivation (or the output of one) the evaluation imports,
        /// when Nix named it.
        path: Option<String>,
        /// What `nix` wrote to standard error, trimmed.
        stderr: String,
        /// The shell command that builds what the evaluation imports:
        /// `nix path-info --derivation` of the same installable, with the
        /// same flags, which evaluates with the store writable.
        build: String,
    },
    /// The value is not a derivation.
    #[error("'{arg}' is not a derivation (it is a {found})")]
    NotDerivation {
        /// The installable.
        arg: String,
        /// Nix's `builtins.typeOf` of the value.
        found: String,
    },
    /// An output asked for that the derivation does not have.
    #[error("the derivation of '{arg}' has no output '{output}' (it has {})", available.join(", "))]
    NoSuchOutput {
        /// The installable.
        arg: String,
        /// The output asked for.
        output: String,
        /// The outputs it has.
        available: Vec<String>,
    },
    /// `meta.outputsToInstall` names an output the derivation lacks (Nix:
    /// "this derivation has bad 'meta.outputsToInstall'").
    #[error("'{arg}' has bad 'meta.outputsToInstall': no output '{output}'")]
    BadOutputsToInstall {
        /// The installable.
        arg: String,
        /// The missing output.
        output: String,
    },
    /// An output whose path is not known before it is built (a
    /// content-addressed derivation).
    #[error("output '{output}' of {drv} has no path until it is built (content-addressed)")]
    UnknownOutputPath {
        /// The derivation.
        drv: String,
        /// The output.
        output: String,
    },
    /// `--file` and `--expr` together (Nix: "'--file' and '--expr' are
    /// exclusive").
    #[error("'--file' and '--expr' are exclusive")]
    FileAndExpr,
    /// What `nix` printed is not what was asked for.
    #[error("unexpected output of `nix eval` for '{arg}': {reason}")]
    BadNixOutput {
        /// The installable.
        arg: String,
        /// What was wrong.
        reason: String,
    },
    /// A `.drv` installable that is not a store path of the store
    /// directory given.
    #[error("'{arg}' is not a derivation in the store: {reason}")]
    BadDrvPath {
        /// The installable.
        arg: String,
        /// Why.
        reason: String,
    },
    /// A `.drv` installable whose file cannot be read.
    #[error(transparent)]
    Drv(#[from] ReadDrvError),
}

impl InstallableError {
    /// Whether this is a set-up or command-line problem (exit 2) rather
    /// than a failed evaluation (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::NixNotFound { .. } | Self::FileAndExpr)
    }
}

/// The `^…` output selection off the end of `s`, as Nix's
/// `parseOutputsSpec`: `^*`, or `^` and comma-separated names. Names use
/// the characters of a store path name (Nix 2.9 took only `[a-z]+`; later
/// versions widened it).
fn split_outputs(s: &str, sep: char) -> (&str, OutputsSpec) {
    let Some((prefix, spec)) = s.rsplit_once(sep) else {
        return (s, OutputsSpec::Default);
    };
    if spec == "*" {
        return (prefix, OutputsSpec::All);
    }
    let names: Vec<&str> = spec.split(',').collect();
    let ok = |n: &&str| {
        !n.is_empty()
            && n.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.' | b'_' | b'?' | b'=')
            })
    };
    if names.iter().all(ok) {
        (
            prefix,
            OutputsSpec::Names(names.into_iter().map(str::to_string).collect()),
        )
    } else {
        (s, OutputsSpec::Default)
    }
}

/// Whether `arg` is a flake reference that says its type (`path:/dir`,
/// `github:o/r`, `git+file:///dir`, `flake:nixpkgs`, a tarball's
/// `https://…`): Nix's input schemes. Without a type (`nixpkgs`, `.`,
/// `./dir`) an argument stays a name or a path for core's `roots`; no
/// store path, link or package name starts with a URL scheme.
fn is_typed_flake_ref(arg: &str) -> bool {
    let Some((scheme, rest)) = arg.split_once(':') else {
        return false;
    };
    if rest.is_empty() {
        return false;
    }
    matches!(
        scheme,
        "path" | "git" | "github" | "gitlab" | "sourcehut" | "flake" | "http" | "https" | "file"
    ) || ["git+", "hg+", "tarball+", "file+"]
        .iter()
        .any(|p| scheme.starts_with(p) && scheme.len() > p.len())
}

impl Installable {
    /// `arg` as an installable, or `None` for the ROOT forms
    /// core's `roots` resolves (store paths, `./result` links, names; see
    /// the module docs).
    pub fn parse(arg: &str, opts: &Options) -> Option<Installable> {
        if opts.file.is_some() || opts.expr.is_some() {
            let (attr, outputs) = split_outputs(arg, '^');
            let attr = if attr == "." { "" } else { attr };
            return Some(Installable::Attr {
                arg: arg.to_string(),
                attr: attr.to_string(),
                outputs,
            });
        }
        for sep in ['^', '!'] {
            let (drv, outputs) = split_outputs(arg, sep);
            if drv.contains('/') && drv.ends_with(".drv") && !drv.contains('#') {
                return Some(Installable::Derivation {
                    arg: arg.to_string(),
                    drv: drv.to_string(),
                    outputs: match outputs {
                        OutputsSpec::Default => OutputsSpec::All,
                        o => o,
                    },
                });
            }
        }
        if arg.contains('#') || is_typed_flake_ref(arg) {
            let (reference, outputs) = split_outputs(arg, '^');
            return Some(Installable::Flake {
                arg: arg.to_string(),
                reference: reference.to_string(),
                outputs,
            });
        }
        None
    }

    /// The argument as given.
    pub fn arg(&self) -> &str {
        match self {
            Installable::Flake { arg, .. }
            | Installable::Attr { arg, .. }
            | Installable::Derivation { arg, .. } => arg,
        }
    }
}

/// What the `--apply` function returns for one value. It mirrors the
/// attributes Nix's installables read (`drvPath`, `outputs`, `outputName`,
/// `outputSpecified`, `meta.outputsToInstall`); a function is called, as
/// Nix's `autoCallFunction` does for `nix build -f FILE`, with the
/// `--arg`/`--argstr` values it names (`autoArgs`, which [`apply`] puts
/// before this).
const APPLY: &str = r#"v:
let d = if builtins.isFunction v then v (builtins.intersectAttrs (builtins.functionArgs v) autoArgs) else v; in
if !(builtins.isAttrs d) || (d.type or null) != "derivation" then
  { notDerivation = if builtins.isAttrs d then "set that is not a derivation" else builtins.typeOf d; }
else {
  drvPath = d.drvPath;
  outputs = map (o: [ o d.${o}.outPath ]) (d.outputs or [ "out" ]);
  outputName = d.outputName or "out";
  outputSpecified = d.outputSpecified or null;
  outputsToInstall =
    if d ? meta && builtins.isAttrs d.meta && d.meta ? outputsToInstall
    then d.meta.outputsToInstall else null;
}"#;

/// The `--apply` function: [`APPLY`] with `autoArgs`, the `--arg` and
/// `--argstr` values (the last of a name given twice, as Nix keeps it).
/// An `--arg` expression is written in parentheses on lines of its own, so
/// a trailing comment cannot swallow the rest; `nix` has already parsed it
/// alone (it reads every `--arg` before applying), so nothing else could
/// close the parentheses early. Only the names a function declares are
/// passed: Nix passes every one to a function with `...`, which the Nix
/// language cannot tell apart.
fn apply(auto_args: &[(String, AutoArg)]) -> String {
    let mut set = String::from("{");
    for (i, (name, value)) in auto_args.iter().enumerate() {
        if auto_args[i + 1..].iter().any(|(later, _)| later == name) {
            continue;
        }
        set.push_str("\n  ");
        set.push_str(&quote::nix_string(name));
        match value {
            AutoArg::Expr(e) => set.push_str(&format!(" = (\n{e}\n);")),
            AutoArg::Str(v) => set.push_str(&format!(" = {};", quote::nix_string(v))),
        }
    }
    set.push_str("\n}");
    format!("let autoArgs = {set}; in\n{APPLY}")
}

/// The flags of `opts` the user gave for `nix`, in `nix`'s spelling and
/// the order `nix` reads them: both the evaluation and the build command
/// an import from derivation is told to run take them.
fn user_flags(opts: &Options) -> Vec<String> {
    let mut f: Vec<String> = Vec::new();
    let mut push = |words: &[&str]| f.extend(words.iter().map(|w| w.to_string()));
    if opts.impure {
        push(&["--impure"]);
    }
    if opts.show_trace {
        push(&["--show-trace"]);
    }
    for path in &opts.include {
        push(&["-I", path]);
    }
    for (name, value) in &opts.auto_args {
        match value {
            AutoArg::Expr(e) => push(&["--arg", name, e]),
            AutoArg::Str(v) => push(&["--argstr", name, v]),
        }
    }
    for (input, reference) in &opts.override_inputs {
        push(&["--override-input", input, reference]);
    }
    for (name, value) in &opts.options {
        push(&["--option", name, value]);
    }
    if let Some(file) = &opts.file {
        push(&["--file", file]);
    }
    if let Some(e) = &opts.expr {
        push(&["--expr", e]);
    }
    f
}

/// What an import from derivation looks like in `nix`'s error, and the
/// path it names: `allow-import-from-derivation` off (Nix: "cannot build
/// '…drv' during evaluation because the option
/// 'allow-import-from-derivation' is disabled"), the `.drv` never written
/// by a read-only evaluation ("path '…drv' is not valid"), or allowed but
/// the store read-only ("cannot substitute path '…' - no write access",
/// "cannot build … read-only").
fn import_from_derivation(stderr: &str) -> Option<Option<String>> {
    let quoted = |line: &str, after: &str| {
        let rest = &line[line.find(after)? + after.len()..];
        rest.split('\'').next().map(str::to_string)
    };
    for line in stderr.lines() {
        if line.contains("'allow-import-from-derivation' is disabled") {
            return Some(quoted(line, "cannot build '"));
        }
        if let Some(p) = quoted(line, "error: path '")
            && p.ends_with(".drv")
            && line.ends_with("' is not valid")
        {
            return Some(Some(p));
        }
        if line.contains("no write access to the Nix store")
            || (line.contains("cannot build") && line.contains("read-only"))
        {
            return Some(
                quoted(line, "cannot substitute path '").or_else(|| quoted(line, "cannot build '")),
            );
        }
    }
    None
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Applied {
    not_derivation: Option<String>,
    drv_path: Option<String>,
    #[serde(default)]
    outputs: Vec<(String, String)>,
    output_name: Option<String>,
    output_specified: Option<bool>,
    outputs_to_install: Option<Vec<String>>,
}

/// Evaluates each installable with the user's `nix` (one `nix eval` each)
/// to its derivation and selected output paths. Nothing is built.
pub fn evaluate(
    installables: &[Installable],
    opts: &Options,
) -> Result<Vec<Evaluated>, InstallableError> {
    if opts.file.is_some() && opts.expr.is_some() {
        return Err(InstallableError::FileAndExpr);
    }
    // A flake's source is copied into the store it is evaluated in: a
    // scratch one, shared by the flakes of this run.
    let scratch;
    let mut with_store;
    let opts = if opts.eval_store.is_none()
        && installables
            .iter()
            .any(|i| matches!(i, Installable::Flake { .. }))
    {
        scratch = crate::eval_store::EvalStore::empty()?;
        with_store = opts.clone();
        with_store.eval_store = Some(scratch.root().to_path_buf());
        &with_store
    } else {
        opts
    };
    installables.iter().map(|i| evaluate_one(i, opts)).collect()
}

fn evaluate_one(inst: &Installable, opts: &Options) -> Result<Evaluated, InstallableError> {
    let arg = inst.arg();
    let bad = |reason: String| InstallableError::BadNixOutput {
        arg: arg.to_string(),
        reason,
    };
    let (target, outputs, is_flake) = match inst {
        Installable::Derivation { drv, outputs, .. } => return from_drv(arg, drv, outputs, opts),
        Installable::Flake {
            reference, outputs, ..
        } => (reference.as_str(), outputs, true),
        Installable::Attr { attr, outputs, .. } => (attr.as_str(), outputs, false),
    };
    let mut cmd = Command::new(&opts.nix);
    cmd.args([
        "--extra-experimental-features",
        "nix-command flakes",
        "eval",
        "--json",
        "--no-write-lock-file",
        "--option",
        "allow-import-from-derivation",
        "false",
    ]);
    if !opts.instantiate {
        cmd.arg("--read-only");
    }
    if is_flake && let Some(root) = &opts.eval_store {
        cmd.args(["--eval-store", &crate::eval_store::url(root)]);
    }
    cmd.args(user_flags(opts));
    // An empty attribute path is the value itself: `nix eval` takes no
    // installable then (with `--file`/`--expr`, "." is the value too).
    if !target.is_empty() {
        cmd.arg(target);
    }
    cmd.args(["--apply", &apply(&opts.auto_args)]);
    let out = cmd.output().map_err(|source| {
        let program = opts.nix.to_string_lossy().into_owned();
        if source.kind() == std::io::ErrorKind::NotFound {
            InstallableError::NixNotFound {
                arg: arg.to_string(),
                program,
            }
        } else {
            InstallableError::Spawn {
                arg: arg.to_string(),
                program,
                source,
            }
        }
    })?;
    if !out.status.success() {
        return Err(eval_error(
            inst,
            target,
            opts,
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    let a: Applied = serde_json::from_slice(&out.stdout).map_err(|e| bad(e.to_string()))?;
    if let Some(found) = a.not_derivation {
        return Err(InstallableError::NotDerivation {
            arg: arg.to_string(),
            found,
        });
    }
    let sp = |s: &str| StorePath::parse(&opts.store_dir, s).map_err(|e| bad(e.to_string()));
    let drv_path = sp(a
        .drv_path
        .as_deref()
        .ok_or_else(|| bad("no drvPath".into()))?)?;
    let all: Vec<(String, StorePath)> = a
        .outputs
        .iter()
        .map(|(n, p)| Ok((n.clone(), sp(p)?)))
        .collect::<Result<_, InstallableError>>()?;
    let names = select(
        arg,
        outputs,
        &all.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
        &a,
        is_flake,
    )?;
    Ok(Evaluated {
        arg: arg.to_string(),
        drv_path,
        outputs: pick(arg, &all, &names)?,
    })
}

/// A failed evaluation, told apart where nix-heft can say more than Nix:
/// an import from derivation (with the command that builds what it
/// imports), a flake reference without `#` whose flake has no default
/// package.
fn eval_error(
    inst: &Installable,
    target: &str,
    opts: &Options,
    stderr: String,
) -> InstallableError {
    let arg = inst.arg().to_string();
    if let Some(path) = import_from_derivation(&stderr) {
        // `nix path-info --derivation` evaluates with the store writable
        // and import from derivation allowed (Nix's default), so it builds
        // what the evaluation imports, and instantiates the rest, without
        // building the package itself.
        let mut words: Vec<String> = [
            "nix",
            "--extra-experimental-features",
            "nix-command flakes",
            "path-info",
            "--derivation",
        ]
        .map(str::to_string)
        .to_vec();
        words.extend(user_flags(opts));
        words.push(if target.is_empty() { "." } else { target }.to_string());
        let build = words
            .iter()
            .map(|w| quote::shell(w))
            .collect::<Vec<_>>()
            .join(" ");
        return InstallableError::ImportFromDerivation {
            arg,
            path,
            stderr,
            build,
        };
    }
    let hint = match inst {
        Installable::Flake { reference, .. }
            if !reference.contains('#') && stderr.contains("does not provide attribute") =>
        {
            Some(format!(
                "'{reference}' names no attribute, so it means the flake's default package, \
                 as in `nix build` (packages.<system>.default, or defaultPackage.<system>), \
                 and this flake has none: add `#` and an attribute ('{reference}#NAME')"
            ))
        }
        _ => None,
    };
    InstallableError::Eval { arg, stderr, hint }
}

/// The output names `nix build` would take (see the module docs).
fn select(
    arg: &str,
    spec: &OutputsSpec,
    all: &[String],
    a: &Applied,
    is_flake: bool,
) -> Result<Vec<String>, InstallableError> {
    let mut names = match spec {
        OutputsSpec::Names(n) => return Ok(n.clone()),
        OutputsSpec::All => return Ok(all.to_vec()),
        OutputsSpec::Default => Vec::new(),
    };
    if let Some(specified) = a.output_specified {
        // Nix reads `outputSpecified` whenever it is present, and then
        // never `meta.outputsToInstall`.
        if specified {
            names.extend(a.output_name.clone());
        }
    } else if let Some(to_install) = &a.outputs_to_install {
        for o in to_install {
            if !all.contains(o) {
                return Err(InstallableError::BadOutputsToInstall {
                    arg: arg.to_string(),
                    output: o.clone(),
                });
            }
        }
        names = to_install.clone();
    } else if !is_flake {
        names = all.to_vec();
    }
    if names.is_empty() {
        names.push("out".into());
    }
    Ok(names)
}

fn pick(
    arg: &str,
    all: &[(String, StorePath)],
    names: &[String],
) -> Result<Vec<(String, StorePath)>, InstallableError> {
    let mut picked: Vec<(String, StorePath)> = Vec::new();
    for n in names {
        let Some(o) = all.iter().find(|(name, _)| name == n) else {
            return Err(InstallableError::NoSuchOutput {
                arg: arg.to_string(),
                output: n.clone(),
                available: all.iter().map(|(n, _)| n.clone()).collect(),
            });
        };
        if !picked.iter().any(|(p, _)| p == n) {
            picked.push(o.clone());
        }
    }
    Ok(picked)
}

/// A `.drv` installable: its outputs from the file itself.
fn from_drv(
    arg: &str,
    drv: &str,
    spec: &OutputsSpec,
    opts: &Options,
) -> Result<Evaluated, InstallableError> {
    let drv_path =
        StorePath::parse(&opts.store_dir, drv).map_err(|e| InstallableError::BadDrvPath {
            arg: arg.to_string(),
            reason: e.to_string(),
        })?;
    let file = match &opts.real_store_dir {
        Some(dir) => dir.join(drv_path.base_name()),
        None => Path::new(drv).to_path_buf(),
    };
    let d = Derivation::read(&opts.store_dir, &file)?;
    let mut all = Vec::new();
    let names: Vec<String> = match spec {
        OutputsSpec::Names(n) => n.clone(),
        _ => d.outputs.iter().map(|o| o.name.clone()).collect(),
    };
    for o in &d.outputs {
        if !names.contains(&o.name) {
            continue;
        }
        let Some(p) = &o.path else {
            return Err(InstallableError::UnknownOutputPath {
                drv: drv.to_string(),
                output: o.name.clone(),
            });
        };
        all.push((o.name.clone(), p.clone()));
    }
    let outputs = match spec {
        OutputsSpec::Names(n) => pick(arg, &all, n).map_err(|e| match e {
            InstallableError::NoSuchOutput { arg, output, .. } => InstallableError::NoSuchOutput {
                arg,
                output,
                available: d.outputs.iter().map(|o| o.name.clone()).collect(),
            },
            e => e,
        })?,
        _ => all,
    };
    Ok(Evaluated {
        arg: arg.to_string(),
        drv_path,
        outputs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(arg: &str) -> Option<Installable> {
        Installable::parse(arg, &Options::default())
    }

    #[test]
    fn tells_installables_from_paths_and_names() {
        // Store paths, links and names stay with `roots`.
        for arg in [
            "/nix/store/l1vfphyb47mampa8vp15h4dikvwqplmf-left-2.1",
            "./result",
            "hello",
            "nixpkgs",
            ".",
            "hello^out",
            "/nix/store/l1vfphyb47mampa8vp15h4dikvwqplmf-left-2.1^out",
        ] {
            assert_eq!(parse(arg), None, "{arg}");
        }
        assert_eq!(
            parse("nixpkgs#hello"),
            Some(Installable::Flake {
                arg: "nixpkgs#hello".into(),
                reference: "nixpkgs#hello".into(),
                outputs: OutputsSpec::Default
            })
        );
        assert_eq!(
            parse("path:/tmp/x#pkgs.a^out,dev"),
            Some(Installable::Flake {
                arg: "path:/tmp/x#pkgs.a^out,dev".into(),
                reference: "path:/tmp/x#pkgs.a".into(),
                outputs: OutputsSpec::Names(vec!["out".into(), "dev".into()])
            })
        );
        assert!(matches!(
            parse(".#default^*"),
            Some(Installable::Flake { reference, outputs: OutputsSpec::All, .. }) if reference == ".#default"
        ));
        // Not an output selection: stays part of the reference.
        assert!(matches!(
            parse("github:o/r#a^b c"),
            Some(Installable::Flake { reference, outputs: OutputsSpec::Default, .. }) if reference == "github:o/r#a^b c"
        ));
        let drv = "/nix/store/mk6v5qf0b1xim8w2r4db7f7lw4y00vl9-multi-1.0.drv";
        for (arg, outputs) in [
            (drv.to_string(), OutputsSpec::All),
            (format!("{drv}^*"), OutputsSpec::All),
            (format!("{drv}^dev"), OutputsSpec::Names(vec!["dev".into()])),
            (format!("{drv}!dev"), OutputsSpec::Names(vec!["dev".into()])),
        ] {
            assert_eq!(
                parse(&arg),
                Some(Installable::Derivation {
                    arg: arg.clone(),
                    drv: drv.into(),
                    outputs
                }),
                "{arg}"
            );
        }
    }

    #[test]
    fn with_file_or_expr_every_argument_is_an_attribute_path() {
        let opts = Options {
            file: Some("default.nix".into()),
            ..Options::default()
        };
        let p = |a| Installable::parse(a, &opts).unwrap();
        assert_eq!(
            p("variants.hipblas-split^dev,doc"),
            Installable::Attr {
                arg: "variants.hipblas-split^dev,doc".into(),
                attr: "variants.hipblas-split".into(),
                outputs: OutputsSpec::Names(vec!["dev".into(), "doc".into()])
            }
        );
        assert!(matches!(p("."), Installable::Attr { attr, .. } if attr.is_empty()));
        assert!(matches!(p("hello"), Installable::Attr { attr, .. } if attr == "hello"));
        assert!(matches!(p("a#b"), Installable::Attr { attr, .. } if attr == "a#b"));
    }

    fn applied(name: &str, specified: Option<bool>, to_install: Option<&[&str]>) -> Applied {
        Applied {
            not_derivation: None,
            drv_path: None,
            outputs: Vec::new(),
            output_name: Some(name.into()),
            output_specified: specified,
            outputs_to_install: to_install.map(|v| v.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn default_outputs_as_nix_build_picks_them() {
        let all: Vec<String> = ["out", "dev", "doc"].map(String::from).to_vec();
        let sel = |a: &Applied, flake| select("x", &OutputsSpec::Default, &all, a, flake).unwrap();
        // Nothing said: a flake means out, a file or expression every output.
        assert_eq!(sel(&applied("out", None, None), true), ["out"]);
        assert_eq!(sel(&applied("out", None, None), false), all);
        // meta.outputsToInstall, unless outputSpecified is present.
        let a = applied("out", None, Some(&["out", "doc"]));
        assert_eq!(sel(&a, true), ["out", "doc"]);
        assert_eq!(sel(&a, false), ["out", "doc"]);
        let a = applied("dev", Some(true), Some(&["out", "doc"]));
        assert_eq!(sel(&a, true), ["dev"]);
        assert_eq!(sel(&a, false), ["dev"]);
        let a = applied("dev", Some(false), Some(&["doc"]));
        assert_eq!(sel(&a, true), ["out"]);
        let a = applied("out", None, Some(&["bin"]));
        assert!(matches!(
            select("x", &OutputsSpec::Default, &all, &a, true),
            Err(InstallableError::BadOutputsToInstall { .. })
        ));
        // Explicit selections win.
        assert_eq!(select("x", &OutputsSpec::All, &all, &a, true).unwrap(), all);
    }

    #[test]
    fn typed_flake_references_without_a_fragment_are_flakes() {
        for arg in [
            "path:/tmp/x",
            "github:o/r",
            "git+file:///tmp/x?ref=main",
            "flake:nixpkgs",
            "https://example.org/x.tar.gz",
            "tarball+https://example.org/x",
        ] {
            assert_eq!(
                parse(arg),
                Some(Installable::Flake {
                    arg: arg.into(),
                    reference: arg.into(),
                    outputs: OutputsSpec::Default
                }),
                "{arg}"
            );
        }
        assert!(matches!(
            parse("path:/tmp/x^dev"),
            Some(Installable::Flake { reference, outputs: OutputsSpec::Names(n), .. })
                if reference == "path:/tmp/x" && n == ["dev"]
        ));
        // No scheme Nix knows, or nothing after it: left to `roots`.
        for arg in ["path:", "foo:bar", "git+:x", "./path:x", "rocm-llvm*"] {
            assert_eq!(parse(arg), None, "{arg}");
        }
    }

    #[test]
    fn auto_args_keep_the_last_of_a_name_and_quote_strings() {
        let f = apply(&[
            ("greeting".into(), AutoArg::Expr("1 # a comment".into())),
            ("b c".into(), AutoArg::Str("say \"${hi}\" \\ $x".into())),
            ("greeting".into(), AutoArg::Str("later".into())),
        ]);
        assert!(f.starts_with("let autoArgs = {"), "{f}");
        assert!(f.contains(r#""b c" = "say \"\${hi}\" \\ $x";"#), "{f}");
        assert!(f.contains(r#""greeting" = "later";"#), "{f}");
        assert!(!f.contains("a comment"), "{f}");
        // An expression stays on lines of its own: a comment ends there.
        let f = apply(&[("n".into(), AutoArg::Expr("2 # two".into()))]);
        assert!(f.contains("\"n\" = (\n2 # two\n);"), "{f}");
        assert!(apply(&[]).starts_with("let autoArgs = {\n}; in\nv:"));
    }

    #[test]
    fn import_from_derivation_is_told_from_nix_errors() {
        // Nix 2.8's words in each case (import from derivation off; the
        // `.drv` not written by --read-only; allowed, but the store
        // read-only).
        let drv = "/nix/store/9kz9qw8fad2v4f5ba6zyqiq1mpfwqm0b-ifd-1.drv";
        let out = "/nix/store/i4rc11ys1fld4azgx1cnh6g2pahfn662-ifd-1";
        for (stderr, path) in [
            (
                format!(
                    "error: cannot build '{drv}' during evaluation because the option \
                     'allow-import-from-derivation' is disabled\n(use '--show-trace' …)"
                ),
                drv,
            ),
            (format!("error: path '{drv}' is not valid"), drv),
            (
                format!("error: cannot substitute path '{out}' - no write access to the Nix store"),
                out,
            ),
        ] {
            assert_eq!(
                import_from_derivation(&stderr),
                Some(Some(path.to_string())),
                "{stderr}"
            );
        }
        for other in [
            format!("error: path '{out}' is not valid"),
            "error: attribute 'nosuch' missing".to_string(),
        ] {
            assert_eq!(import_from_derivation(&other), None, "{other}");
        }
    }
}
