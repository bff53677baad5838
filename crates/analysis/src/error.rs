//! The analysis' errors: a plan without the files it needs, a command line
//! that asks for the impossible; over the errors every layer shares.

/// Errors of computing an answer from a read closure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A path whose file contents were needed but could not be read (the
    /// source has none, or reading failed; the problems say which).
    #[error("no file tree of {path} could be read, which {purpose} needs")]
    NoContents {
        /// The store path.
        path: String,
        /// What needed it ("a split").
        purpose: String,
    },
    /// A growth that is neither a size nor a percentage, or a negative or
    /// endless percentage.
    #[error("bad growth '{given}': {why}")]
    BadGrowth {
        /// As given.
        given: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A `--forbid` under the store directory that is no store path.
    #[error("--forbid {given}: {reason}")]
    BadForbid {
        /// As given.
        given: String,
        /// Why it is no store path.
        reason: String,
    },
    /// A `--forbid-verdict` that is none of the three.
    #[error("unknown verdict '{0}' for --forbid-verdict: use docs, build or dead")]
    UnknownVerdict(String),
    /// `check` with no root to check.
    #[error("no ROOT to check: give one, or `roots` in the config file")]
    NoRoots,
    /// `check` with both baselines.
    #[error("give one baseline: --against or --against-json")]
    TwoBaselines,
    /// `--max-growth` without a baseline to grow from.
    #[error("--max-growth needs a baseline: --against ROOT or --against-json FILE")]
    GrowthWithoutBaseline,
    /// `check` with no rule.
    #[error(
        "nothing to check: give --max-closure, --max-growth, --forbid or --forbid-verdict (or a config file)"
    )]
    NothingToCheck,
    /// `--targets` naming a target no per-target package has.
    #[error(
        "--targets {target}: no per-target package in the closure has that target{}",
        found.as_deref().map(|f| format!(" (targets found: {f})")).unwrap_or_default()
    )]
    NoSuchTarget {
        /// As given.
        target: String,
        /// The targets the packages have, each with its package, when
        /// there are any.
        found: Option<String>,
    },
    /// An error every layer shares, as it was.
    #[error(transparent)]
    Shared(#[from] nix_heft_types::Error),
}

impl Error {
    /// Whether the error is in the command line itself (exit code 2).
    pub fn is_usage(&self) -> bool {
        match self {
            Error::BadGrowth { .. }
            | Error::BadForbid { .. }
            | Error::UnknownVerdict(_)
            | Error::NoRoots
            | Error::TwoBaselines
            | Error::GrowthWithoutBaseline
            | Error::NothingToCheck
            | Error::NoSuchTarget { .. } => true,
            Error::Shared(e) => e.is_usage(),
            Error::NoContents { .. } => false,
        }
    }
}

/// The analysis crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
