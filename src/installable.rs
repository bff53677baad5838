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
//! [`crate::roots`]: a bare `nixpkgs` or `.` is a flake reference to `nix`,
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
//! is never written (`--no-write-lock-file`). `.drv` installables need no
//! evaluation: their outputs come from the file ([`crate::derivation`]).

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use serde::Deserialize;

use crate::derivation::{Derivation, ReadDrvError};
use crate::store_path::StorePath;

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
}

impl Default for Options {
    fn default() -> Self {
        Options {
            file: None,
            expr: None,
            impure: false,
            override_inputs: Vec::new(),
            options: Vec::new(),
            instantiate: false,
            nix: "nix".into(),
            store_dir: "/nix/store".into(),
            real_store_dir: None,
        }
    }
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
    /// `FLAKEREF#ATTRPATH`, e.g. `nixpkgs#hello`, `path:/dir#pkg`.
    Flake {
        /// The argument as given, outputs included, for messages.
        arg: String,
        /// `FLAKEREF#ATTRPATH` without the output selection, as `nix`
        /// takes it.
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
    #[error("evaluating '{arg}' failed:\n{stderr}")]
    Eval {
        /// The installable.
        arg: String,
        /// What `nix` wrote to standard error, trimmed.
        stderr: String,
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

impl Installable {
    /// `arg` as an installable, or `None` for the ROOT forms
    /// [`crate::roots`] resolves (store paths, `./result` links, names; see
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
        if arg.contains('#') {
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
/// `outputSpecified`, `meta.outputsToInstall`); a function is called with
/// no arguments, as Nix's `autoCallFunction` does for `-f FILE` without
/// `--arg`.
const APPLY: &str = r#"v:
let d = if builtins.isFunction v then v { } else v; in
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
    if opts.impure {
        cmd.arg("--impure");
    }
    for (input, reference) in &opts.override_inputs {
        cmd.args(["--override-input", input, reference]);
    }
    for (name, value) in &opts.options {
        cmd.args(["--option", name, value]);
    }
    if let Some(f) = &opts.file {
        cmd.args(["--file", f]);
    }
    if let Some(e) = &opts.expr {
        cmd.args(["--expr", e]);
    }
    // An empty attribute path is the value itself: `nix eval` takes no
    // installable then (with `--file`/`--expr`, "." is the value too).
    if !target.is_empty() {
        cmd.arg(target);
    }
    cmd.args(["--apply", APPLY]);
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
        return Err(InstallableError::Eval {
            arg: arg.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
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
}
