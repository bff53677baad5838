//! The library's error type. Every variant names the offending path, file or
//! value so the CLI can print one clear line without further context.

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

impl From<nix_heft_format::store_path::InvalidStorePath> for Error {
    fn from(e: nix_heft_format::store_path::InvalidStorePath) -> Self {
        Error::InvalidStorePath {
            path: e.path,
            reason: e.reason,
        }
    }
}

/// Errors from reading stores and resolving roots.
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
    /// A well-formed store path that the store does not hold.
    #[error("path '{path}' is not valid in {store}")]
    MissingPath {
        /// The path asked for.
        path: String,
        /// Description of the store that was asked.
        store: String,
    },
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
    /// An error of a crate above this one, as it says itself (the store's
    /// SQLite and thread errors: `nix_heft_store::error::Error`), so that
    /// this crate names neither SQLite nor rayon. Its message and causes
    /// are the inner error's; `downcast_ref` finds the inner error.
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync + 'static>),
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
    /// A path whose file contents were needed but could not be read (the
    /// source has none, or reading failed; the problems say which).
    #[error("no file tree of {path} could be read, which {purpose} needs")]
    NoContents {
        /// The store path.
        path: String,
        /// What needed it ("a split").
        purpose: String,
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
    /// An I/O error on a named file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
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
    /// A command line that asks for something impossible or nothing at all
    /// (a name that matches several paths where one is needed, a split
    /// without moves).
    #[error("{0}")]
    Usage(String),
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
    /// Nix's configuration (nix.conf, `NIX_CONFIG`) cannot be read as Nix
    /// reads it, or a setting nix-heft uses is invalid.
    #[error("nix.conf: {0}")]
    NixConf(String),
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
}

impl Error {
    /// Whether the error is in the command line itself (exit code 2): a
    /// name that matches no path or several, a pattern that does not
    /// compile, a command with nothing to do, a store or path that names
    /// no store or nothing in it. Everything else is a failure
    /// outside the command line (exit code 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::NoMatch { .. }
                | Error::Ambiguous { .. }
                | Error::BadPattern { .. }
                | Error::Usage(_)
                | Error::BadConfig { .. }
                | Error::UnsupportedStore { .. }
                | Error::NotInStore { .. }
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

/// The error that ended a run (and its causes, through
/// [`std::error::Error::source`]) as what to print and the exit code.
/// Shared by `nix-heft` and `nix-heft-survey`; each gives its `advice`:
/// what to do about a library [`Error`] in its own words (its flags),
/// said after that error's line. The library's messages say what is
/// wrong, never which flag fixes it.
pub fn failure(
    e: &(dyn std::error::Error + 'static),
    advice: &dyn Fn(&Error) -> Option<String>,
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
    // The chain once: library errors already carry their cause's text, so
    // a cause is repeated only when it adds something.
    let advised = |c: &(dyn std::error::Error + 'static)| {
        let text = c.to_string();
        match c.downcast_ref::<Error>().and_then(advice) {
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
    let usage = chain().any(|c| c.downcast_ref::<Error>().is_some_and(|e| e.is_usage()));
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
        let f = failure(&e, &|_| None);
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
        let f = failure(&io, &|_| None);
        assert_eq!(f.code, 1);
        assert_eq!(f.lines.len(), 1, "{:?}", f.lines);
    }

    #[test]
    fn advice_follows_the_line_of_the_error_it_is_about() {
        let e = Wrapped(Error::NoLocalStore("/nix".into()));
        let advice = |e: &Error| matches!(e, Error::NoLocalStore(_)).then(|| "; try X".to_string());
        let f = failure(&e, &advice);
        assert_eq!(f.lines[0], "reading the closure");
        assert_eq!(
            f.lines[1],
            "  caused by: no Nix store found: /nix does not exist; try X"
        );
        // The library's own message names no flag.
        assert!(
            !Error::NoLocalStore("/nix".into())
                .to_string()
                .contains("--")
        );
    }

    #[test]
    fn a_closed_pipe_is_no_failure() {
        let e = Error::Io {
            path: "-".into(),
            source: std::io::Error::from(std::io::ErrorKind::BrokenPipe),
        };
        let f = failure(&e, &|_| None);
        assert_eq!((f.code, f.lines.is_empty()), (0, true));
        assert_eq!(f.message("p"), "");
    }
}
