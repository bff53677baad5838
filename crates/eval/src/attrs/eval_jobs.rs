//! `nix-eval-jobs` as each version runs (read from nix-community/
//! nix-eval-jobs at every tag, v2.9.0 to v2.33.0): its flags, how to tell
//! what the installed one has, and its JSON lines.
//!
//! - **Flags.** `--workers N` (default **1** in every version, `nrWorkers
//!   = 1` in `MyArgs`) and `--max-memory-size MIB` (default 4096, per
//!   worker: a worker past it is restarted) since v2.9.0; `--impure`,
//!   `--show-trace` and Nix's own `--arg`, `--argstr`, `-I`, `--option`.
//!   `--no-instantiate` since **v2.31.0** (commit `f6a620a`, named
//!   `--read-only` before any release): it sets Nix's read-only mode, so
//!   `drvPath` is computed and no `.drv` is written. Without it every
//!   version writes the `.drv` of each derivation it evaluates to the
//!   store (as `nix-instantiate` does; no garbage collector root unless
//!   `--gc-roots-dir`).
//! - **What it has** is read from `--help`, which every version prints as
//!   `USAGE: nix-eval-jobs [options] expr`, a blank line, then one
//!   `  --NAME  DESCRIPTION` line per flag (`MyArgs`'s `help` handler):
//!   [`Flags::parse_help`].
//! - **Lines.** One JSON object per line, keys sorted (`nlohmann::json`):
//!   `attr` (the path joined with `.`, a name holding a dot quoted),
//!   `attrPath` (the names), and for a derivation `drvPath`, `name`,
//!   `outputs` (name → path, `null` for a content-addressed output),
//!   `system`, with `inputDrvs` from v2.16.0 to v2.24.x (with
//!   `--show-input-drvs` only from v2.26.0) and `requiredSystemFeatures`
//!   when instantiating from v2.33.0; for an attribute whose evaluation
//!   failed, `error` (Nix's message, colours removed) instead.
//! - **v2.9.0** (and its branch up to commit `cb81265`, 2022-09-09, which
//!   v2.11.0 includes) prints an `error` line for every value that is not
//!   a derivation, a set or `null` — `recurseForDerivations = true` itself
//!   among them: `attribute '[…]' is a Boolean, which is not supported`
//!   (a `TypeError` thrown in its `worker`) — and a line with only `attr`
//!   and `attrPath` for `null`. Neither is an attribute that failed:
//!   [`read_lines`] leaves both out. Later versions print nothing for
//!   them.
//! - **A failure of the whole expression** (the file does not evaluate)
//!   ends the run with a non-zero status and `worker error: …` on
//!   standard error, every version.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde::Deserialize;

use super::{AttrsError, Evaluation, Outcome, outcome};

/// nix-eval-jobs' own default of `--max-memory-size` (MiB per worker), in
/// every version; nixpkgs-review passes the same.
pub const DEFAULT_MAX_MEMORY_SIZE: u64 = 4096;

/// How nix-heft runs `nix-eval-jobs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvalJobs {
    /// The program, found on `PATH` unless it has a `/`.
    pub program: OsString,
    /// `--workers`: always passed, as the tool's own default is one.
    pub workers: usize,
    /// `--max-memory-size`, MiB per worker.
    pub max_memory_size: u64,
    /// Whether to pass `--no-instantiate`; `None` asks the program's
    /// `--help` ([`Flags`]).
    pub no_instantiate: Option<bool>,
}

impl EvalJobs {
    /// `program` with a worker per core (as Nix's `max-jobs = auto`
    /// counts them) and the tool's memory default; `--no-instantiate` as
    /// the installed version allows.
    pub fn new(program: impl Into<OsString>) -> EvalJobs {
        EvalJobs {
            program: program.into(),
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            max_memory_size: DEFAULT_MAX_MEMORY_SIZE,
            no_instantiate: None,
        }
    }

    /// The flags of the run, before Nix's and the file: `--workers`,
    /// `--max-memory-size`, and `--no-instantiate` when the program has
    /// it.
    pub fn flags(&self) -> Result<Vec<String>, AttrsError> {
        let no_instantiate = match self.no_instantiate {
            Some(b) => b,
            None => Flags::of(&self.program)?.has("no-instantiate"),
        };
        let mut f = vec![
            "--workers".to_string(),
            self.workers.max(1).to_string(),
            "--max-memory-size".to_string(),
            self.max_memory_size.max(1).to_string(),
        ];
        if no_instantiate {
            f.push("--no-instantiate".into());
        }
        Ok(f)
    }
}

/// The long flags an installed `nix-eval-jobs` lists in its `--help`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flags(BTreeSet<String>);

impl Flags {
    /// Runs `program --help` and reads it.
    pub fn of(program: &OsString) -> Result<Flags, AttrsError> {
        let what = || format!("{} --help", program.to_string_lossy());
        let mut cmd = Command::new(program);
        cmd.arg("--help");
        let out = super::output(cmd, what)?;
        let text = String::from_utf8_lossy(&out);
        Flags::parse_help(&text).ok_or_else(|| AttrsError::Output {
            program: what(),
            detail: "no `USAGE: nix-eval-jobs` line".into(),
        })
    }

    /// The flags of `--help`'s text; `None` when it is not nix-eval-jobs'.
    pub fn parse_help(text: &str) -> Option<Flags> {
        let mut lines = text.lines();
        if !lines.next()?.starts_with("USAGE: nix-eval-jobs") {
            return None;
        }
        Some(Flags(
            lines
                .filter_map(|l| l.strip_prefix("  --"))
                .filter_map(|l| l.split_whitespace().next())
                .map(String::from)
                .collect(),
        ))
    }

    /// Whether `--name` is listed.
    pub fn has(&self, name: &str) -> bool {
        self.0.contains(name)
    }
}

/// v2.9.0's error for a value that is neither a derivation, a set nor
/// `null`: `attribute '%s' is %s, which is not supported`.
fn unsupported_value(error: &str) -> bool {
    let e = error.trim();
    let e = e.strip_prefix("error:").unwrap_or(e).trim_start();
    e.starts_with("attribute '")
        && e.lines()
            .next()
            .is_some_and(|l| l.ends_with(", which is not supported"))
}

/// One line of `nix-eval-jobs`' output, the part read here.
#[derive(Deserialize)]
struct EvalJobsLine {
    attr: Option<String>,
    /// The path as a list (newer versions): exact where `attr` would need
    /// quoting.
    #[serde(rename = "attrPath")]
    attr_path: Option<Vec<String>>,
    #[serde(rename = "drvPath")]
    drv_path: Option<String>,
    #[serde(default)]
    outputs: BTreeMap<String, Option<String>>,
    error: Option<String>,
}

/// Reads `nix-eval-jobs`' JSON lines: per attribute its outputs and
/// `.drv`, or its `error`. Blank lines are skipped, and so are v2.9.0's
/// lines for values that are no derivation (see the module's
/// documentation); an output without a path (a content-addressed
/// derivation's) is left out.
pub fn read_lines(input: impl BufRead, store_dir: &str) -> Result<Evaluation, String> {
    let mut eval = Evaluation::default();
    for (n, line) in input.lines().enumerate() {
        let line = line.map_err(|e| e.to_string())?;
        if line.trim().is_empty() {
            continue;
        }
        let item: EvalJobsLine =
            serde_json::from_str(&line).map_err(|e| format!("line {}: {e}", n + 1))?;
        let attr = match (item.attr_path, item.attr) {
            (Some(p), _) => p.join("."),
            (None, Some(a)) => a,
            (None, None) => return Err(format!("line {}: no attribute", n + 1)),
        };
        let outcome = match item.error {
            Some(e) if unsupported_value(&e) => continue,
            Some(e) => Outcome::Failed(e),
            // v2.9.0's line for `null`: neither a derivation nor an error.
            None if item.drv_path.is_none() && item.outputs.is_empty() => continue,
            None => {
                let outputs: BTreeMap<String, String> = item
                    .outputs
                    .into_iter()
                    .filter_map(|(k, v)| Some((k, v?)))
                    .collect();
                outcome(item.drv_path.as_deref(), &outputs, store_dir)
                    .map_err(|e| format!("line {}: {e}", n + 1))?
            }
        };
        eval.attrs.insert(attr, outcome);
    }
    Ok(eval)
}

/// Runs `nix-eval-jobs`, reading its lines as they come.
pub(super) fn run(
    mut cmd: Command,
    program: &OsString,
    store_dir: &str,
) -> Result<Evaluation, AttrsError> {
    let name = || program.to_string_lossy().to_string();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| AttrsError::Spawn {
            program: name(),
            source,
        })?;
    // Standard error is drained on its own thread, so that a chatty
    // evaluation cannot fill its pipe while standard output is read.
    let stderr = child.stderr.take().map(|mut e| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut e, &mut s);
            s
        })
    });
    let read = match child.stdout.take() {
        Some(out) => read_lines(BufReader::new(out), store_dir),
        None => Err("no standard output".into()),
    };
    let status = child.wait().map_err(|source| AttrsError::Spawn {
        program: name(),
        source,
    })?;
    let stderr = stderr
        .and_then(|h| h.join().ok())
        .unwrap_or_default()
        .trim()
        .to_string();
    let eval = match read {
        Ok(eval) => eval,
        // A run that failed as a whole says why on standard error rather
        // than in what it printed before.
        Err(_) if !status.success() => {
            return Err(AttrsError::Failed {
                program: name(),
                stderr,
            });
        }
        Err(detail) => {
            return Err(AttrsError::Output {
                program: name(),
                detail,
            });
        }
    };
    // Versions differ on the exit status when attributes fail (their own
    // tests do not check it): a failed run that reported failed attributes
    // is those failures; one that reported none failed as a whole (a
    // worker that died, an expression that does not evaluate).
    let reported_failures = eval.attrs.values().any(|o| matches!(o, Outcome::Failed(_)));
    if !status.success() && !reported_failures {
        return Err(AttrsError::Failed {
            program: name(),
            stderr,
        });
    }
    Ok(eval)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--help` as its handler prints it (`"  --%-20s %s\n"` per flag of
    /// the sorted map), with v2.30.0's and v2.31.0's own flags and
    /// descriptions (src/eval-args.cc at each tag).
    fn help(flags: &[(&str, &str)]) -> String {
        let mut sorted = flags.to_vec();
        sorted.sort();
        let mut s = String::from("USAGE: nix-eval-jobs [options] expr\n\n");
        for (name, desc) in sorted {
            s.push_str(&format!("  --{name:<20} {desc}\n"));
        }
        s
    }

    const V2_30: &[(&str, &str)] = &[
        ("help", "show usage information"),
        ("impure", "allow impure expressions"),
        ("workers", "number of evaluate workers"),
        (
            "max-memory-size",
            "maximum evaluation memory size in megabyte (4GiB per worker by default)",
        ),
        (
            "show-input-drvs",
            "Show input derivations in the output for each derivation. This is useful to get direct dependencies of a derivation.",
        ),
        (
            "reference-lock-file",
            "Read the given lock file instead of `flake.lock` within the top-level flake.",
        ),
    ];

    #[test]
    fn help_tells_whether_no_instantiate_is_there() {
        let old = Flags::parse_help(&help(V2_30)).unwrap();
        assert!(old.has("workers") && old.has("reference-lock-file"));
        assert!(!old.has("no-instantiate"));
        let mut v2_31 = V2_30.to_vec();
        v2_31.push((
            "no-instantiate",
            "don't instantiate (write) derivations, only evaluate (faster)",
        ));
        assert!(
            Flags::parse_help(&help(&v2_31))
                .unwrap()
                .has("no-instantiate")
        );
        // A description that mentions a flag is not a flag.
        assert!(
            !Flags::parse_help(&help(&[("select", "see --no-instantiate")]))
                .unwrap()
                .has("no-instantiate")
        );
        assert_eq!(Flags::parse_help("nix-env (Nix) 2.8.0\n"), None);
    }

    const STORE: &str = "/nix/store";

    /// v2.9.0's lines for a set with `recurseForDerivations` (its worker
    /// evaluates every name of the set, the flag too, and throws its
    /// `TypeError` for the Boolean), a `null` and a string beside a
    /// derivation and a real failure: only those two are kept.
    #[test]
    fn v2_9_lines_for_values_that_are_no_derivation_are_left_out() {
        let text = concat!(
            r#"{"attr":"tools.recurseForDerivations","attrPath":["tools","recurseForDerivations"],"error":"error: attribute '[\"tools\",\"recurseForDerivations\"]' is a Boolean, which is not supported"}"#,
            "\n",
            r#"{"attr":"version","attrPath":["version"],"error":"error: attribute '[\"version\"]' is a string, which is not supported"}"#,
            "\n",
            r#"{"attr":"nothing","attrPath":["nothing"]}"#,
            "\n",
            r#"{"attr":"tools.a","attrPath":["tools","a"],"drvPath":"/nix/store/fmbqzaq8mim1423879lhn9whs6imx5w4-tools-a-1.0.drv","name":"tools-a-1.0","outputs":{"out":"/nix/store/gfni9sbhhwhxxfqziq1fs3n82bvw962l-tools-a-1.0"},"system":"x86_64-linux"}"#,
            "\n",
            r#"{"attr":"bad","attrPath":["bad"],"error":"error: boom\n\n       at /tmp/all.nix:3:9:"}"#,
            "\n",
        );
        let eval = read_lines(text.as_bytes(), STORE).unwrap();
        assert_eq!(
            eval.attrs.keys().map(String::as_str).collect::<Vec<_>>(),
            ["bad", "tools.a"]
        );
        assert!(matches!(&eval.attrs["bad"], Outcome::Failed(m) if m.contains("boom")));
        assert!(unsupported_value(
            "error: attribute '[\"f\"]' is a function, which is not supported\n"
        ));
        assert!(!unsupported_value("error: boom"));
    }

    #[test]
    fn flags_always_pass_workers_and_memory() {
        let ej = EvalJobs {
            program: "nix-eval-jobs".into(),
            workers: 3,
            max_memory_size: 2048,
            no_instantiate: Some(true),
        };
        assert_eq!(
            ej.flags().unwrap(),
            [
                "--workers",
                "3",
                "--max-memory-size",
                "2048",
                "--no-instantiate"
            ]
        );
        let ej = EvalJobs {
            no_instantiate: Some(false),
            ..EvalJobs::new("x")
        };
        let f = ej.flags().unwrap();
        assert_eq!(
            f[..2],
            [
                "--workers".to_string(),
                std::thread::available_parallelism()
                    .unwrap()
                    .get()
                    .to_string()
            ]
        );
        assert_eq!(f[2..], ["--max-memory-size", "4096"]);
    }
}
