//! The core crate's errors: roots that name nothing or too much, a
//! graph whose sizes cannot be, a plan without the files it needs, a
//! build-graph question about a path without its derivation; over the
//! store's errors and those every layer shares.

use std::path::PathBuf;

/// Errors of the core crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A link given on the command line (`./result`) that points to a
    /// store path the store read does not hold: a build's link after a
    /// garbage collection, or one made on another machine.
    #[error("'{link}' points to {path}, which {store} does not hold")]
    DanglingLink {
        /// The argument as given.
        link: String,
        /// The store path it points to.
        path: String,
        /// Description of the store that was asked.
        store: String,
    },
    /// An installable's output that the store read does not hold: nix-heft
    /// evaluates installables but never builds or substitutes.
    #[error(
        "output '{output}' of '{installable}' ({path}) is not valid in {store}; nix-heft evaluates \
         but never builds"
    )]
    MissingOutput {
        /// The installable as given.
        installable: String,
        /// The output's name.
        output: String,
        /// The output's store path.
        path: String,
        /// Description of the store that was asked.
        store: String,
    },
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
    /// `--derivation` given an output whose recorded deriver is not in the
    /// store the `.drv` files are read from.
    #[error(
        "{path} was built by {deriver}, which is not valid in {store}: the build graph \
         is read from that .drv file; instantiate it again (nix-instantiate) or give a .drv \
         that is there"
    )]
    DeriverNotHere {
        /// The output path given.
        path: String,
        /// Its recorded deriver.
        deriver: String,
        /// Description of the store the `.drv` files are read from.
        store: String,
    },
    /// A build's outputs, none of which is there to read: never built,
    /// deleted with a sandbox, by a later build or by the garbage
    /// collector.
    #[error(
        "none of the outputs of {drv} is there to read ({outputs}): not built yet, or \
         deleted after the build (with the sandbox, by a later build of the derivation or by \
         the garbage collector)"
    )]
    OutputsGone {
        /// The derivation, or what stands for it.
        drv: String,
        /// Its outputs' paths.
        outputs: String,
    },
    /// A path whose file contents were needed but could not be read (the
    /// source has none, or reading failed; the problems say which).
    #[error("no file tree of {path} could be read, which {purpose} needs")]
    NoContents {
        /// The store path.
        path: String,
        /// What needed it ("a split").
        purpose: String,
    },
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
    /// A chain of symlinks that does not end.
    #[error("too many levels of symbolic links resolving '{}'", .0.display())]
    SymlinkLoop(PathBuf),
    /// A root argument that is a file outside the store.
    #[error(
        "'{arg}' is not in the store {store_dir} (it resolves to '{}'){}",
        resolved.display(),
        if *flake {
            format!(
                "; it is a flake: to nix-heft, a flake needs its `#` \
                 ('{arg}#default' for its default package, or '{arg}#NAME')"
            )
        } else {
            String::new()
        }
    )]
    NotInStore {
        /// The argument as given.
        arg: String,
        /// Where it led.
        resolved: PathBuf,
        /// The store directory expected.
        store_dir: String,
        /// Whether it is a directory with a `flake.nix`: a flake given
        /// without `#`, which `nix` would take for its default package.
        flake: bool,
    },
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
    /// `advise` on a source that has no file contents for any path read (a
    /// path-info JSON file): no reference could be examined, so any advice
    /// would be a guess.
    #[error(
        "cannot advise from {store}: it has no file contents, so no reference could be \
         examined; read the local store, a chroot store or a binary cache"
    )]
    NothingToAdvise {
        /// Description of the source.
        store: String,
    },
    /// A command line that asks for something impossible or nothing at all
    /// (a name that matches several paths where one is needed, a split
    /// without moves).
    #[error("{0}")]
    Usage(String),
    /// The commits of a history could not be listed (a range that names
    /// none is the command line's fault).
    #[error(transparent)]
    History(#[from] nix_heft_eval::history::HistoryError),
    /// An error of the store read, as it says itself.
    #[error(transparent)]
    Store(#[from] nix_heft_store::Error),
    /// An error every layer shares, as it was.
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
    /// name that matches no path or several, a pattern that does not
    /// compile, a root outside the store, a command with nothing to do, or
    /// such an error of the store or the shared kinds.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::NoMatch { .. }
            | Error::Ambiguous { .. }
            | Error::BadPattern { .. }
            | Error::NotInStore { .. }
            | Error::Usage(_) => true,
            Error::Store(e) => e.is_usage(),
            Error::Shared(e) => e.is_usage(),
            Error::History(e) => e.is_usage(),
            _ => false,
        }
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

/// The core crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
