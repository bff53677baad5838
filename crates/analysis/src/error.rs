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
    /// A command line that asks for something impossible or nothing at all
    /// (a split without moves, a target named twice).
    #[error("{0}")]
    Usage(String),
    /// An error every layer shares, as it was.
    #[error(transparent)]
    Shared(#[from] nix_heft_types::Error),
}

impl Error {
    /// Whether the error is in the command line itself (exit code 2).
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Usage(_) => true,
            Error::Shared(e) => e.is_usage(),
            Error::NoContents { .. } => false,
        }
    }
}

/// The analysis crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
