//! The store crate's own errors: those whose causes are its own
//! dependencies' errors (SQLite's, rayon's), which the shared
//! [`nix_heft_types::Error`] cannot name, over the shared ones.
//!
//! The store's traits (`source::PathMetadata`, `source::PathContents`)
//! still answer with [`nix_heft_types::Error`]: an [`Error`] crosses them
//! as [`nix_heft_types::Error::Store`], its message and causes unchanged,
//! and the binary finds it again with `downcast_ref` on the error's chain.

use std::path::PathBuf;

/// Errors of the store crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The SQLite database could not be opened or queried.
    #[error("cannot read Nix database {}: {source}", path.display())]
    Database {
        /// The database file.
        path: PathBuf,
        /// SQLite's own error.
        #[source]
        source: rusqlite::Error,
    },
    /// The operating system would not start the threads a store needs (a
    /// limit on processes or memory): not the command line's fault.
    #[error("cannot start threads for {what}: {source}")]
    Threads {
        /// What the threads were for.
        what: String,
        /// Rayon's reason.
        #[source]
        source: rayon::ThreadPoolBuildError,
    },
    /// An error every layer shares (a missing path, a file that cannot be
    /// read), as it was.
    #[error(transparent)]
    Shared(#[from] nix_heft_types::Error),
}

/// The store crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for nix_heft_types::Error {
    /// A shared error stays itself; the store's own cross as
    /// [`nix_heft_types::Error::Store`].
    fn from(e: Error) -> Self {
        match e {
            Error::Shared(e) => e,
            own => nix_heft_types::Error::Store(Box::new(own)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_error_crosses_the_shared_type_unchanged() {
        let own = Error::Database {
            path: "/nix/var/nix/db/db.sqlite".into(),
            source: rusqlite::Error::InvalidQuery,
        };
        let text = own.to_string();
        let shared: nix_heft_types::Error = own.into();
        assert_eq!(shared.to_string(), text);
        assert!(
            text.starts_with("cannot read Nix database /nix/var/nix/db/db.sqlite: "),
            "{text}"
        );
        // The binary finds the store's error again, and its cause.
        let nix_heft_types::Error::Store(inner) = &shared else {
            panic!("{shared:?}")
        };
        assert!(matches!(
            inner.downcast_ref::<Error>(),
            Some(Error::Database { .. })
        ));
        let f = nix_heft_types::error::failure(&shared, &|_| None);
        assert_eq!((f.code, f.lines.len()), (1, 1), "{:?}", f.lines);
        // A shared error wrapped and unwrapped is itself.
        let back: nix_heft_types::Error =
            Error::from(nix_heft_types::Error::Usage("x".into())).into();
        assert!(matches!(back, nix_heft_types::Error::Usage(_)));
    }
}
