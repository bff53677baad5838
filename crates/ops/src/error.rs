//! The operations' errors: links and roots that lead nowhere, outputs and
//! derivations not there, a source with nothing to advise from; over the
//! errors of the crates below, each as it says itself.

use std::path::PathBuf;

/// Errors of the operations.
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
    /// An argument that must name one path and names several.
    #[error("'{arg}' matches {count} paths; give one{hint}")]
    NotOne {
        /// As given.
        arg: String,
        /// How many it names.
        count: usize,
        /// How to name one (an installable's `^NAME`), or nothing.
        hint: &'static str,
    },
    /// An installable given as a dependency whose paths are not in the
    /// closure asked about.
    #[error("'{arg}' evaluates to {paths}, not in the closure of {root}")]
    NotInClosure {
        /// As given.
        arg: String,
        /// What it evaluates to, comma-separated.
        paths: String,
        /// The closure's first root.
        root: String,
    },
    /// An output named that the derivation does not have.
    #[error("no output '{output}': the derivation's outputs are {have}")]
    NoSuchOutput {
        /// As given.
        output: String,
        /// The outputs it has, comma-separated.
        have: String,
    },
    /// A build's log or environment that shows no refusal of Nix's.
    #[error("no refusal of Nix's found (an output check or a cycle){named}")]
    NoRefusal {
        /// `; it names …`: the derivations the log names, or nothing.
        named: String,
    },
    /// A builder's environment that does not say what it builds.
    #[error("{0}")]
    BadBuildEnv(String),
    /// `bisect` without a rule.
    #[error("bisect needs a rule: --max-closure SIZE, --max-growth SIZE|PCT or --forbid GLOB")]
    NoRule,
    /// The good (or bad) commit is not what the command line says.
    #[error("the {side} commit {commit} is {what}: give a {side} commit the stores hold")]
    NotAsSaid {
        /// `good` or `bad`.
        side: String,
        /// The commit.
        commit: String,
        /// What it is instead.
        what: String,
    },
    /// A `--revs-file` that lists no commit between good and bad.
    #[error("{} names no commit between the good and the bad commit", .file.display())]
    NoCommitListed {
        /// The file.
        file: PathBuf,
    },
    /// An `--attr-file` with no attribute in it.
    #[error("--attr-file names no attribute")]
    EmptyAttrFile,
    /// A usage error in what a build log says, named with the log.
    #[error("{}: {source}", .log.display())]
    InLog {
        /// The log file.
        log: PathBuf,
        /// The error.
        source: Box<Error>,
    },
    /// The commits of a history could not be listed (a range that names
    /// none is the command line's fault).
    #[error(transparent)]
    History(#[from] nix_heft_eval::history::HistoryError),
    /// An error of the graph, as it says itself (boxed: it holds a store
    /// error, and this enum is returned everywhere).
    #[error(transparent)]
    Graph(Box<nix_heft_graph::Error>),
    /// An error of the scan, as it says itself (boxed, as the graph's).
    #[error(transparent)]
    Scan(Box<nix_heft_scan::Error>),
    /// An error of the analysis, as it says itself.
    #[error(transparent)]
    Analysis(#[from] nix_heft_analysis::Error),
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

impl From<nix_heft_graph::Error> for Error {
    fn from(e: nix_heft_graph::Error) -> Self {
        Error::Graph(Box::new(e))
    }
}

impl From<nix_heft_scan::Error> for Error {
    fn from(e: nix_heft_scan::Error) -> Self {
        Error::Scan(Box::new(e))
    }
}

impl Error {
    /// Whether the error is in the command line itself (exit code 2): a
    /// name that matches no path or several, a pattern that does not
    /// compile, a root outside the store, a command with nothing to do, or
    /// such an error of the store or the shared kinds.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::NotInStore { .. }
            | Error::NotOne { .. }
            | Error::NotInClosure { .. }
            | Error::NoSuchOutput { .. }
            | Error::NoRefusal { .. }
            | Error::BadBuildEnv(_)
            | Error::NoRule
            | Error::NotAsSaid { .. }
            | Error::NoCommitListed { .. }
            | Error::EmptyAttrFile => true,
            Error::InLog { source, .. } => source.is_usage(),
            Error::Graph(e) => e.is_usage(),
            Error::Scan(e) => e.is_usage(),
            Error::Analysis(e) => e.is_usage(),
            Error::Store(e) => e.is_usage(),
            Error::Shared(e) => e.is_usage(),
            Error::History(e) => e.is_usage(),
            _ => false,
        }
    }
}

/// One error of a run's chain as each library crate's enum sees it: a
/// crate's error that wraps a lower crate's is looked through (with
/// `#[error(transparent)]` their messages and sources are the inner
/// error's, so a chain walk never meets the inner one), so a program's
/// judge can name the inner error's fix. The binary and the survey judge
/// with it.
#[derive(Debug, Default, Clone, Copy)]
pub struct Layers<'a> {
    /// This crate's error.
    pub ops: Option<&'a Error>,
    /// The graph's, on its own or inside this crate's.
    pub graph: Option<&'a nix_heft_graph::Error>,
    /// The scan's.
    pub scan: Option<&'a nix_heft_scan::Error>,
    /// The analysis'.
    pub analysis: Option<&'a nix_heft_analysis::Error>,
    /// The store's, inside any of the above or on its own.
    pub store: Option<&'a nix_heft_store::Error>,
    /// The kinds every layer shares, inside any of the above or on its own.
    pub shared: Option<&'a nix_heft_types::Error>,
    /// An installable that could not be evaluated (or no `nix` to do it),
    /// on its own or inside a [`crate::resolve::ResolveError`].
    pub installable: Option<&'a nix_heft_eval::installable::InstallableError>,
    /// An `impact` side named wrong or failing to evaluate.
    pub side: Option<&'a nix_heft_eval::attrs::side::SideError>,
    /// `impact`'s sides as prepared.
    pub prepare: Option<&'a crate::impact::prepare::PrepareError>,
}

impl<'a> Layers<'a> {
    /// The layers of `e`, one error of a chain.
    pub fn of(e: &'a (dyn std::error::Error + 'static)) -> Layers<'a> {
        let mut l = Layers {
            ops: e.downcast_ref(),
            graph: e.downcast_ref(),
            scan: e.downcast_ref(),
            analysis: e.downcast_ref(),
            store: e.downcast_ref(),
            shared: e.downcast_ref(),
            installable: e.downcast_ref(),
            side: e.downcast_ref(),
            prepare: e.downcast_ref(),
        };
        match e.downcast_ref::<crate::resolve::ResolveError>() {
            Some(crate::resolve::ResolveError::Store(o)) => l.ops = Some(o),
            Some(crate::resolve::ResolveError::Installable(i)) => l.installable = Some(i),
            None => {}
        }
        // Top down, so that each wrapper found fills the layers below it.
        match l.ops {
            Some(Error::Graph(g)) => l.graph = Some(g),
            Some(Error::Scan(s)) => l.scan = Some(s),
            Some(Error::Analysis(a)) => l.analysis = Some(a),
            Some(Error::Store(s)) => l.store = Some(s),
            Some(Error::Shared(t)) => l.shared = Some(t),
            _ => {}
        }
        if let Some(nix_heft_analysis::Error::Shared(t)) = l.analysis {
            l.shared = Some(t);
        }
        match l.scan {
            Some(nix_heft_scan::Error::Store(s)) => l.store = Some(s),
            Some(nix_heft_scan::Error::Shared(t)) => l.shared = Some(t),
            _ => {}
        }
        if let Some(nix_heft_graph::Error::Store(s)) = l.graph {
            l.store = Some(s);
        }
        if let Some(nix_heft_store::Error::Shared(t)) = l.store {
            l.shared = Some(t);
        }
        l
    }

    /// Whether the error is the command line's fault (exit code 2) at
    /// any layer.
    pub fn is_usage(&self) -> bool {
        self.ops.is_some_and(Error::is_usage)
            || self.graph.is_some_and(nix_heft_graph::Error::is_usage)
            || self.scan.is_some_and(nix_heft_scan::Error::is_usage)
            || self
                .analysis
                .is_some_and(nix_heft_analysis::Error::is_usage)
            || self.store.is_some_and(nix_heft_store::Error::is_usage)
            || self.shared.is_some_and(nix_heft_types::Error::is_usage)
            || self
                .installable
                .is_some_and(nix_heft_eval::installable::InstallableError::is_usage)
            || self
                .side
                .is_some_and(nix_heft_eval::attrs::side::SideError::is_usage)
            || self
                .prepare
                .is_some_and(crate::impact::prepare::PrepareError::is_usage)
    }
}

/// The operations' result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
