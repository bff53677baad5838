//! The library's error type. Every variant names the offending path, file or
//! value so the CLI can print one clear line without further context.

use std::path::PathBuf;

impl From<nix_heft_format::store_path::InvalidStorePath> for Error {
    fn from(e: nix_heft_format::store_path::InvalidStorePath) -> Self {
        Error::InvalidStorePath {
            path: e.path,
            reason: e.reason,
        }
    }
}

/// The errors every layer shares: a file that cannot be read, a string
/// that is no store path, a command line that asks for nothing or the
/// impossible, and the files the binary and the trace stage read. Each
/// crate above has its own enum for its own errors (`nix_heft_store::Error`,
/// graph's, scan's, analysis's, ops', eval's), with this one inside it.
/// A name or pattern given on the command line that matches nothing or too
/// much is this crate's, as every layer that matches one says it alike.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A string that should be a store path is not one.
    #[error("'{path}' is not a valid store path: {reason}")]
    InvalidStorePath {
        /// The offending string.
        path: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// An I/O error on a named file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A command line that asks for something impossible or nothing at all
    /// (a name that matches several paths where one is needed, a split
    /// without moves).
    #[error("{0}")]
    Usage(String),
    /// A name or glob that matches no valid path.
    #[error(
        "no valid path in {store} matches '{pattern}'{}{}",
        closest.as_deref().map(|c| format!("; did you mean {c}?")).unwrap_or_default(),
        list_candidates("similar names", candidates)
    )]
    NoMatch {
        /// The pattern as given.
        pattern: String,
        /// The store searched.
        store: String,
        /// The closest name by edit distance, when one is near.
        closest: Option<String>,
        /// Names that contain the pattern, to help the user.
        candidates: Vec<String>,
    },
    /// A plain name that matches several valid paths.
    #[error("'{pattern}' is ambiguous: it matches {} paths; give one of them (or a glob to take all){}", candidates.len(), list_candidates("candidates", candidates))]
    Ambiguous {
        /// The name as given.
        pattern: String,
        /// Every matching path.
        candidates: Vec<String>,
    },
    /// A glob pattern that does not compile.
    #[error("bad pattern '{pattern}': {reason}")]
    BadPattern {
        /// The pattern as given.
        pattern: String,
        /// The glob compiler's complaint.
        reason: String,
    },
    /// A `--against-json` baseline that is not a saved `size --json`.
    #[error("cannot read baseline {}: {reason}", file.display())]
    BadBaseline {
        /// The file.
        file: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A `check` config file that does not parse or has an unknown key (a
    /// usage error: the file stands for the command line).
    #[error("bad config {}: {reason}", file.display())]
    BadConfig {
        /// The file.
        file: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A trace file (`--trace`) that cannot be read or does not parse.
    #[error("cannot use trace file {}: {reason}", file.display())]
    BadTrace {
        /// The trace file.
        file: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Tracing a workload failed (the tracer itself, not the workload).
    #[error("tracing failed: {0}")]
    Trace(String),
}

impl Error {
    /// Whether the error is in the command line itself (exit code 2): a
    /// command with nothing to do, a config file that stands for the
    /// command line, a name or pattern that matches nothing, too much or
    /// does not compile. Everything else is a failure outside the command line
    /// (exit code 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::Usage(_)
                | Error::BadConfig { .. }
                | Error::NoMatch { .. }
                | Error::Ambiguous { .. }
                | Error::BadPattern { .. }
        )
    }
}

fn list_candidates(label: &str, c: &[String]) -> String {
    if c.is_empty() {
        return String::new();
    }
    let mut s = format!("; {label}:");
    for x in c.iter().take(20) {
        s.push_str("\n  ");
        s.push_str(x);
    }
    if c.len() > 20 {
        s.push_str(&format!("\n  ... and {} more", c.len() - 20));
    }
    s
}

/// Shorthand used across the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Attaches a path to an I/O error.
pub fn io_err(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}

/// What a command-line program says about the error that ended its run
/// and the code it exits with: [`failure`]'s answer, which the program
/// prints (the library prints nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The lines for stderr, each without the program's name: the error,
    /// then `caused by:` lines for causes that add something. Empty for a
    /// closed pipe.
    pub lines: Vec<String>,
    /// 0 for a closed pipe (`nix-heft size ... | head` is not a failure),
    /// [`crate::exit::USAGE`] for a usage error, else 1.
    pub code: u8,
}

impl Failure {
    /// The lines as a program prints them to stderr, the first behind
    /// `PROGRAM: error: `; empty for a closed pipe.
    pub fn message(&self, program: &str) -> String {
        let mut out = String::new();
        for (i, l) in self.lines.iter().enumerate() {
            if i == 0 {
                out.push_str(&format!("{program}: error: {l}\n"));
            } else {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }
}

/// What a program knows about one error of a run's chain that this crate
/// cannot: whether it is the command line's fault and what to do about it
/// in the program's words. Each program judges the errors of the crates it
/// uses (`downcast_ref` to each crate's enum); this crate judges its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Judged {
    /// A usage error: exit code 2.
    pub usage: bool,
    /// Said after the error's line (its fix is a flag or setting).
    pub advice: Option<String>,
}

/// The error that ended a run (and its causes, through
/// [`std::error::Error::source`]) as what to print and the exit code.
/// Shared by `nix-heft` and `nix-heft-survey`; each gives its `judge` of
/// the errors of the crates above this one (their usage errors, and what
/// to do about them in its own words: its flags), said after that
/// error's line. The library's messages say what is wrong, never which
/// flag fixes it.
pub fn failure(
    e: &(dyn std::error::Error + 'static),
    judge: &dyn Fn(&(dyn std::error::Error + 'static)) -> Judged,
) -> Failure {
    let chain = || std::iter::successors(Some(e), |c| c.source());
    let broken = |k: Option<std::io::ErrorKind>| k == Some(std::io::ErrorKind::BrokenPipe);
    if chain().any(|c| {
        broken(c.downcast_ref::<std::io::Error>().map(|io| io.kind()))
            || broken(
                c.downcast_ref::<serde_json::Error>()
                    .and_then(|j| j.io_error_kind()),
            )
    }) {
        return Failure {
            lines: Vec::new(),
            code: 0,
        };
    }
    let judged = |c: &(dyn std::error::Error + 'static)| {
        let mut j = judge(c);
        j.usage |= c.downcast_ref::<Error>().is_some_and(Error::is_usage);
        j
    };
    // The chain once: library errors already carry their cause's text, so
    // a cause is repeated only when it adds something.
    let advised = |c: &(dyn std::error::Error + 'static)| {
        let text = c.to_string();
        match judged(c).advice {
            Some(a) => (text.clone(), format!("{text}{a}")),
            None => (text.clone(), text),
        }
    };
    let (bare, line) = advised(e);
    let mut printed = bare;
    let mut lines = vec![line];
    for cause in chain().skip(1) {
        let (c, line) = advised(cause);
        if !printed.contains(&c) {
            lines.push(format!("  caused by: {line}"));
            printed.push_str(&c);
        }
    }
    let usage = chain().any(|c| judged(c).usage);
    Failure {
        lines,
        code: if usage {
            crate::exit::USAGE
        } else {
            crate::exit::ERROR
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error with a cause of its own, as a context wraps one.
    #[derive(Debug, thiserror::Error)]
    #[error("reading the closure")]
    struct Wrapped(#[source] Error);

    #[test]
    fn a_usage_error_exits_2_and_its_cause_is_said_once() {
        let e = Wrapped(Error::Usage("give one root".into()));
        let f = failure(&e, &|_| Judged::default());
        assert_eq!(f.code, crate::exit::USAGE);
        assert_eq!(f.lines[0], "reading the closure");
        assert_eq!(f.lines[1], "  caused by: give one root");
        assert_eq!(
            f.message("p"),
            "p: error: reading the closure\n  caused by: give one root\n"
        );
        // A cause whose text is already said is not repeated.
        let io = Error::Io {
            path: "/x".into(),
            source: std::io::Error::other("disk on fire"),
        };
        let f = failure(&io, &|_| Judged::default());
        assert_eq!(f.code, 1);
        assert_eq!(f.lines.len(), 1, "{:?}", f.lines);
    }

    /// An error of a crate above, which this one cannot name.
    #[derive(Debug, thiserror::Error)]
    #[error("no Nix store found: /nix does not exist")]
    struct Above;

    #[test]
    fn the_programs_judge_adds_advice_and_usage_after_the_line_it_is_about() {
        let judge = |e: &(dyn std::error::Error + 'static)| Judged {
            usage: e.is::<Above>(),
            advice: e.is::<Above>().then(|| "; try X".to_string()),
        };
        #[derive(Debug, thiserror::Error)]
        #[error("reading the closure")]
        struct Outer(#[source] Above);
        let f = failure(&Outer(Above), &judge);
        assert_eq!(f.lines[0], "reading the closure");
        assert_eq!(
            f.lines[1],
            "  caused by: no Nix store found: /nix does not exist; try X"
        );
        assert_eq!(f.code, crate::exit::USAGE);
        // Without the judge's word, an error this crate does not know is
        // a failure (exit 1), said as it says itself.
        let f = failure(&Outer(Above), &|_| Judged::default());
        assert_eq!((f.code, f.lines.len()), (1, 2));
    }

    #[test]
    fn a_closed_pipe_is_no_failure() {
        let e = Error::Io {
            path: "-".into(),
            source: std::io::Error::from(std::io::ErrorKind::BrokenPipe),
        };
        let f = failure(&e, &|_| Judged::default());
        assert_eq!((f.code, f.lines.is_empty()), (0, true));
        assert_eq!(f.message("p"), "");
    }
}
