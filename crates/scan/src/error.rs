//! The scan's errors: a tree without the derivation that would build it,
//! a candidate list that cannot be read; over the store's errors and those
//! every layer shares.

/// Errors of reading trees and the derivations behind them.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `--derivation` given an output whose deriver no store read records
    /// (a path added rather than built, or unknown to every store).
    #[error(
        "{path} is not a derivation, and it has no deriver recorded in any store read \
         (nix path-info --derivation would name none): the build graph is read from a \
         .drv; give the .drv that builds it"
    )]
    NoDeriver {
        /// The output path given.
        path: String,
    },
    /// Candidates to be taken from the store when no store was opened
    /// and none were named.
    #[error("no store to take the candidates from")]
    NoCandidates,
    /// A line of a `--candidates` file that is no store path.
    #[error("{}:{line}: {reason}", .file.display())]
    BadCandidate {
        /// The file.
        file: std::path::PathBuf,
        /// The line, from 1.
        line: usize,
        /// Why it is no store path.
        reason: String,
    },
    /// An error of the store read, as it says itself.
    #[error(transparent)]
    Store(#[from] nix_heft_store::Error),
    /// An error every layer shares, as it was.
    #[error(transparent)]
    Shared(#[from] nix_heft_types::Error),
}

impl Error {
    /// Whether the error is in the command line itself (exit code 2).
    pub fn is_usage(&self) -> bool {
        match self {
            Error::BadCandidate { .. } | Error::NoCandidates => true,
            Error::Store(e) => e.is_usage(),
            Error::Shared(e) => e.is_usage(),
            Error::NoDeriver { .. } => false,
        }
    }
}

/// The scan crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
