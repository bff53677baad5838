//! Evidence: where a store path holds a reference, what kind of hold it
//! is, and whether it is needed at run time.
//!
//! A leaf module: the read stage finds holds, classify turns them into
//! [`Evidence`] with a [`Verdict`], and plan and report consume it, so the
//! types sit below all of them and import nothing of the crate.

use serde::{Deserialize, Serialize};

/// Most bytes after a hash kept in [`Evidence::pointed`]: longer than any
/// real path below a store path's name, short enough to keep per hold.
pub const POINTED_MAX: usize = 4096;

/// Whether a reference is needed, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// A program uses it when it runs.
    Runtime,
    /// Could be either (a string in an ELF's data, an opaque binary).
    Unknown,
    /// Only builds against the path use it (headers, pkg-config, CMake).
    Build,
    /// Only documentation mentions it.
    Docs,
    /// Nothing uses it (a dead RUNPATH entry, debug info, .comment).
    Dead,
}

impl Verdict {
    /// Name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Runtime => "runtime",
            Verdict::Unknown => "unknown",
            Verdict::Build => "build",
            Verdict::Docs => "docs",
            Verdict::Dead => "dead",
        }
    }
}

/// What a trace (`--trace`) showed of one hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Traced {
    /// The traced workload used the referenced path through this hold (a
    /// symlink followed to a file it opened, a library loaded from this
    /// RUNPATH directory, or the path this string names opened).
    #[serde(rename = "used")]
    Used,
    /// The holding file is in a path the workload used, but the trace never
    /// touched it. Only a note: a trace covers only what was run.
    #[serde(rename = "not used")]
    NotUsed,
}

/// What holds a reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The target of a symlink.
    Symlink,
    /// The name of a file or directory.
    FileName,
    /// The ELF program interpreter (PT_INTERP).
    ElfInterpreter,
    /// An entry of DT_RUNPATH / DT_RPATH.
    ElfRunpath,
    /// A DT_NEEDED entry.
    ElfNeeded,
    /// A string in loaded data (.rodata, .data, .dynstr ...).
    ElfString,
    /// Debug information (.debug_*).
    ElfDebug,
    /// .comment or .note* sections.
    ElfComment,
    /// Elsewhere in an ELF file (code, symbol tables, no section).
    ElfOther,
    /// The `#!` line of a script.
    Shebang,
    /// A file under `nix-support/` (propagated inputs, setup hooks).
    NixSupport,
    /// A text file.
    Text,
    /// Any other file.
    Binary,
    /// An input named in a store derivation (`.drv`): an `inputDrvs`
    /// entry with the outputs used, or an `inputSrcs` path (the build
    /// graph, `--derivation`).
    DrvInput,
}

impl Kind {
    /// The name used in output (`elf-runpath`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Symlink => "symlink",
            Kind::FileName => "file-name",
            Kind::ElfInterpreter => "elf-interpreter",
            Kind::ElfRunpath => "elf-runpath",
            Kind::ElfNeeded => "elf-needed",
            Kind::ElfString => "elf-string",
            Kind::ElfDebug => "elf-debug",
            Kind::ElfComment => "elf-comment",
            Kind::ElfOther => "elf-other",
            Kind::Shebang => "shebang",
            Kind::NixSupport => "nix-support",
            Kind::Text => "text",
            Kind::Binary => "binary",
            Kind::DrvInput => "drv-input",
        }
    }
}

/// One place where a path holds a reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// File relative to the referrer's store path (`""` for the path itself);
    /// names that are not UTF-8 are shown with U+FFFD.
    pub file: String,
    /// The same relative path as raw bytes, for matching against file trees
    /// (not in JSON).
    #[serde(skip)]
    pub file_raw: Vec<u8>,
    /// What kind of hold it is.
    pub kind: Kind,
    /// Byte offset of the hash in the file (or in the symlink target / name).
    pub offset: u64,
    /// 1-based line number, for text files and scripts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// A short printable excerpt around the hash.
    pub context: String,
    /// True for a RUNPATH entry that provides none of the file's needed or
    /// dlopen()ed libraries.
    #[serde(default)]
    pub dead: bool,
    /// For a RUNPATH entry: the sonames the file needs or may dlopen() that
    /// this directory provides.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub serves: Vec<String>,
    /// For a RUNPATH entry: the file's whole RUNPATH (or RPATH) as written,
    /// and which entry this is, so that an edit can drop this entry and
    /// keep the others exactly (not in JSON).
    #[serde(skip)]
    pub runpath: Option<(Vec<String>, usize)>,
    /// Extra explanation (e.g. why an ELF file was treated as binary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// A program in the same store path that finds this file by a relative
    /// directory name (e.g. `lib/librocblas.so` names `rocblas/library`),
    /// which makes it run-time data whatever its location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_by: Option<String>,
    /// The same as data: the ELF file (relative) and the directory name it
    /// looks up, for planners that move files apart (not in JSON).
    #[serde(skip)]
    pub looked_up_by: Option<(String, String)>,
    /// What follows the hash, up to the first byte that cannot be part of
    /// a path (at most [`POINTED_MAX`] bytes): `-rocblas-5.7.1/lib/x.so`.
    /// Split uses it to find which file of the referenced path this hold
    /// points into (not in JSON).
    #[serde(skip)]
    pub pointed: Vec<u8>,
    /// What the traces given with `--trace` showed of this hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traced: Option<Traced>,
    /// Whether this hold is needed at run time.
    pub verdict: Verdict,
    /// Why, in one line.
    pub reason: String,
}

impl Evidence {
    /// Evidence of `kind` at `offset` in `file` (raw relative path), not
    /// yet judged.
    pub fn new(file: &[u8], kind: Kind, offset: u64, context: String) -> Evidence {
        Evidence {
            file: String::from_utf8_lossy(file).into_owned(),
            file_raw: file.to_vec(),
            kind,
            offset,
            line: None,
            context,
            dead: false,
            serves: Vec::new(),
            runpath: None,
            note: None,
            used_by: None,
            looked_up_by: None,
            pointed: Vec::new(),
            traced: None,
            verdict: Verdict::Unknown,
            reason: String::new(),
        }
    }
}
