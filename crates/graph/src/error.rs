//! The graph's errors: sizes that cannot be, and the store read that
//! could not give the closure.

/// Errors of building a [`crate::Graph`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A closure whose NAR sizes add up to more than a `u64` holds: no real
    /// closure is 16 EiB, so the sizes are corrupt. Checked once when a
    /// graph is built, so that every sum over a subset of it is exact.
    #[error(
        "closure of {roots} is larger than 16 EiB (u64): NAR sizes are corrupt \
         (they add up to {total} bytes; the largest is {largest_path} with {largest_size} bytes)"
    )]
    ClosureTooLarge {
        /// The roots of the closure, as given.
        roots: String,
        /// The exact sum of all NAR sizes.
        total: u128,
        /// The path with the largest NAR size.
        largest_path: String,
        /// Its NAR size.
        largest_size: u64,
    },
    /// An error of the store read, as it says itself.
    #[error(transparent)]
    Store(#[from] nix_heft_store::Error),
}

impl Error {
    /// Whether the error is in the command line itself (exit code 2): only
    /// a store's can be.
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Store(e) if e.is_usage())
    }
}

/// The graph crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
