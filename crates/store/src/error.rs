//! The store crate's errors: what reading a store, a binary cache or a
//! path-info file can go wrong with, SQLite's and rayon's errors among
//! them (which the shared [`nix_heft_types::Error`] never names), over the
//! errors every layer shares.

use std::path::PathBuf;

/// What [`Error::UntrustedNarinfo`] names (boxed: errors stay small).
#[derive(Debug)]
pub struct Untrusted {
    /// The store path described.
    pub path: String,
    /// The cache (its URL).
    pub cache: String,
    /// The key names of the narinfo's well-formed signatures, or "none".
    pub found: String,
    /// The names of the trusted keys, or "none".
    pub trusted: String,
    /// What is wrong with each signature, or that there is none.
    pub why: String,
    /// The trusted key names that a signature of the narinfo named but
    /// that did not verify it (or that a malformed signature named): the
    /// narinfo, or the key trusted under that name, is not what was
    /// signed. Empty when no signature named a trusted key.
    pub mismatched: Vec<String>,
}

impl std::fmt::Display for Untrusted {
    /// One line: what is refused and why. A signature that names a
    /// trusted key yet does not verify is a warning sign, said here; a
    /// narinfo signed by no trusted key is a missing setting, for the
    /// caller to advise on in its own words (its flags).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "refusing the narinfo of {} from {}: it has no valid signature by a trusted key \
             ({}; signatures by: {}; trusted keys: {})",
            self.path, self.cache, self.why, self.found, self.trusted
        )?;
        if self.mismatched.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = self.mismatched.iter().map(|k| format!("'{k}'")).collect();
        write!(
            f,
            "; the narinfo may have been tampered with (changed after it was signed), or the key \
             trusted as {} is not the one the cache signs with (the same name, other key \
             bytes); check that key with the cache's owner before trusting this cache",
            names.join(", ")
        )
    }
}

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
    /// A well-formed store path that the store does not hold.
    #[error("path '{path}' is not valid in {store}")]
    MissingPath {
        /// The path asked for.
        path: String,
        /// Description of the store that was asked.
        store: String,
    },
    /// A `.drv` file of the build graph that cannot be read or parsed.
    #[error("cannot read the derivation {path}: {reason}")]
    BadDerivation {
        /// The `.drv` store path.
        path: String,
        /// Why, as the parser or the system says.
        reason: String,
    },
    /// The build graph asked of a store that holds no `.drv` files.
    #[error(
        "{path} is not a derivation in {store}: the build graph is read from \
         .drv files, which live in the local store or a chroot store where they were \
         instantiated; a binary cache normally has none"
    )]
    NoDerivation {
        /// The path asked for.
        path: String,
        /// Description of the store.
        store: String,
    },
    /// No `--store` given and no local store present.
    #[error("no Nix store found: {} does not exist", .0.display())]
    NoLocalStore(PathBuf),
    /// A `--store` argument that names nothing nix-heft can read.
    #[error("cannot use store '{spec}': {reason}")]
    UnsupportedStore {
        /// The argument as given.
        spec: String,
        /// Why it was refused.
        reason: String,
    },
    /// A narinfo file that is missing for a path the closure needs.
    #[error("binary cache {cache} has no narinfo for {path} (expected {file})")]
    MissingNarinfo {
        /// The path whose narinfo is missing.
        path: String,
        /// The cache directory.
        cache: PathBuf,
        /// The file that was looked for.
        file: PathBuf,
    },
    /// A binary cache's narinfo without a valid signature by a trusted key,
    /// while signatures are required.
    #[error("{0}")]
    UntrustedNarinfo(Box<Untrusted>),
    /// A narinfo file that does not parse.
    #[error("corrupt narinfo {file}: {reason}")]
    BadNarinfo {
        /// The narinfo file.
        file: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A NAR file that cannot be read or decoded.
    #[error("corrupt NAR {}: {source}", file.display())]
    BadNar {
        /// The NAR file.
        file: PathBuf,
        /// What is wrong with it, as the NAR reader says.
        #[source]
        source: nix_heft_format::nar::NarError,
    },
    /// A path-info JSON file that does not have the expected shape.
    #[error("cannot read path-info JSON {file}: {reason}")]
    BadPathInfoJson {
        /// The JSON file.
        file: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A reference to a path that the source does not describe.
    #[error("{referrer} references {reference}, which {store} does not hold")]
    DanglingReference {
        /// The path whose references were read.
        referrer: String,
        /// The reference that could not be found.
        reference: String,
        /// The store that was read.
        store: String,
    },
    /// A NAR size that cannot be one: the source stores sizes as signed
    /// integers (SQLite) or JSON numbers, and a negative one means the
    /// database or file is corrupt.
    #[error("{path} has a negative NAR size ({nar_size}) in {store}: its metadata is corrupt")]
    NegativeNarSize {
        /// The path whose size was read.
        path: String,
        /// The size as stored.
        nar_size: i128,
        /// Description of the source that was read.
        store: String,
    },
    /// A narinfo whose `URL` would make nix-heft read a file outside the
    /// binary cache (an absolute path, a `..` component, or a symlink that
    /// leads out).
    #[error("narinfo {} has URL '{url}', which {reason}; refusing to read outside the binary cache {}", narinfo.display(), cache.display())]
    NarUrlOutsideCache {
        /// The narinfo file.
        narinfo: PathBuf,
        /// The `URL` field as written.
        url: String,
        /// Why it was refused.
        reason: String,
        /// The cache directory.
        cache: PathBuf,
    },
    /// An HTTP request that failed for good (after retries), or an answer
    /// that cannot be used. The URL never carries credentials.
    #[error("{url}: {reason}")]
    Http {
        /// The URL requested.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// An HTTP cache that wants credentials none were given for.
    #[error("{url}: 401 Unauthorized: the cache needs credentials")]
    NeedsCredentials {
        /// The URL requested.
        url: String,
    },
    /// Nix's configuration (nix.conf, `NIX_CONFIG`) cannot be read as Nix
    /// reads it, or a setting nix-heft uses is invalid.
    #[error("nix.conf: {0}")]
    NixConf(String),
    /// A command line that asks for nothing (no store to read) or names a
    /// path wrongly.
    #[error("{0}")]
    Usage(String),
    /// An error every layer shares (a string that is no store path), as it
    /// was.
    #[error(transparent)]
    Shared(#[from] nix_heft_types::Error),
}

impl From<nix_heft_format::store_path::InvalidStorePath> for Error {
    fn from(e: nix_heft_format::store_path::InvalidStorePath) -> Self {
        Error::Shared(e.into())
    }
}

impl Error {
    /// Whether the error is in the command line itself (exit code 2): a
    /// `--store` that names nothing nix-heft can read, or a shared usage
    /// error.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::UnsupportedStore { .. } | Error::Usage(_) => true,
            Error::Shared(e) => e.is_usage(),
            _ => false,
        }
    }
}

/// The store crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_store_that_names_nothing_readable_is_the_command_lines_fault() {
        let unsupported = Error::UnsupportedStore {
            spec: "s3://x".into(),
            reason: "no".into(),
        };
        assert!(unsupported.is_usage());
        let db = Error::Database {
            path: "/nix/var/nix/db/db.sqlite".into(),
            source: rusqlite::Error::InvalidQuery,
        };
        assert!(!db.is_usage());
        assert!(
            db.to_string()
                .starts_with("cannot read Nix database /nix/var/nix/db/db.sqlite: ")
        );
        // A shared error keeps its own message and class.
        let shared = Error::from(nix_heft_types::Error::Usage("give one root".into()));
        assert_eq!(shared.to_string(), "give one root");
        assert!(shared.is_usage());
    }
}
