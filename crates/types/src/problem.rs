//! Problems: what could not be read or computed, while the run went on.
//!
//! A leaf module: every stage (read, classify, plan) records problems and
//! every report lists them, so the type sits below all of them. A run with
//! any problem is a partial result (exit code 3).

use serde::{Deserialize, Serialize};

/// What kind of thing went wrong. Later sources (HTTP caches, integrity
/// checks, limits) add variants here; reports and exit codes only look at
/// whether there is a problem, so a new kind needs no other change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProblemKind {
    /// The NAR ends before the archive does.
    TruncatedNar,
    /// The NAR is damaged: bad syntax, names, order or padding, or a
    /// decompressor that rejects its input.
    CorruptNar,
    /// The narinfo names a compression nix-heft cannot decode.
    UnknownCompression,
    /// The narinfo's NAR URL points outside the cache.
    BadNarUrl,
    /// The path or file disappeared while it was read (garbage collection).
    Vanished,
    /// A file or directory that exists but cannot be read.
    Unreadable,
    /// An ELF file whose headers do not parse; its holds count as binary.
    BadElf,
    /// The source has no file contents for the path (a path-info JSON
    /// file), so nothing in it could be examined.
    NoContents,
    /// An action or what-if that could not be simulated.
    Simulation,
    /// The NAR's bytes do not hash to the narinfo's `NarHash`: it is not
    /// the path it claims to be, and nothing read from it is used.
    HashMismatch,
    /// A nixpkgs-review result link that is missing, unreadable, not a
    /// store path, or points to a path the store read does not hold.
    ReviewLink,
    /// What was read cannot settle the question: `bisect` ends with
    /// several commits that could be the first bad one.
    Undecided,
}

impl ProblemKind {
    /// The name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::TruncatedNar => "truncated-nar",
            ProblemKind::CorruptNar => "corrupt-nar",
            ProblemKind::UnknownCompression => "unknown-compression",
            ProblemKind::BadNarUrl => "bad-nar-url",
            ProblemKind::Vanished => "vanished",
            ProblemKind::Unreadable => "unreadable",
            ProblemKind::BadElf => "bad-elf",
            ProblemKind::NoContents => "no-contents",
            ProblemKind::Simulation => "simulation",
            ProblemKind::HashMismatch => "hash-mismatch",
            ProblemKind::ReviewLink => "review-link",
            ProblemKind::Undecided => "undecided",
        }
    }
}

/// Something that could not be read or computed; the run went on without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// The store path concerned.
    pub path: String,
    /// The file inside it, if the problem is with one file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// What kind of problem.
    pub kind: ProblemKind,
    /// What went wrong, in one line.
    pub message: String,
}

impl Problem {
    /// A problem with `path` as a whole.
    pub fn new(path: impl Into<String>, kind: ProblemKind, message: impl Into<String>) -> Problem {
        Problem {
            path: path.into(),
            file: None,
            kind,
            message: message.into(),
        }
    }

    /// The same problem, about one file of the path.
    pub fn in_file(mut self, file: impl Into<String>) -> Problem {
        self.file = Some(file.into());
        self
    }

    /// `path/file: message`, as printed on stderr.
    pub fn display(&self) -> String {
        format!(
            "{}{}: {}",
            self.path,
            self.file
                .as_deref()
                .map(|f| format!("/{f}"))
                .unwrap_or_default(),
            self.message
        )
    }
}
