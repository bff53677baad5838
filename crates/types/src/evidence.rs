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

/// Evidence summarised for a reviewer: the holds of one kind, with one
/// verdict, in one directory of the referrer. [`group`] builds them; every
/// command and format that shows evidence shows these (and lists each
/// hold only when asked: `--evidence`, JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceGroup {
    /// What kind of hold.
    pub kind: Kind,
    /// Their verdict.
    pub verdict: Verdict,
    /// The directory of the holding files, relative to the referrer (`""`
    /// for its top).
    pub dir: String,
    /// How many holds.
    pub holds: usize,
    /// How many distinct files hold them.
    pub files: usize,
    /// The size of those files together (a symlink counts its target's
    /// length), when the referrer's file tree was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The most telling files (largest first, then by name), at most
    /// [`EXAMPLES`], relative to the referrer.
    pub examples: Vec<String>,
    /// The first hold's reason for the verdict.
    pub reason: String,
}

/// Files named per group.
pub const EXAMPLES: usize = 3;

/// Groups `evs` by kind, verdict and directory: strongest verdict first,
/// then the most bytes, then the most holds. `size_of` gives a holding
/// file's size where the referrer's tree is known.
pub fn group(evs: &[Evidence], size_of: impl Fn(&Evidence) -> Option<u64>) -> Vec<EvidenceGroup> {
    use std::collections::BTreeMap;
    // Per group: its holds in order, and each distinct file's size.
    type Files = BTreeMap<String, Option<u64>>;
    let mut groups: BTreeMap<(Kind, Verdict, String), (usize, Files, String)> = BTreeMap::new();
    for e in evs {
        let dir = e.file.rfind('/').map_or("", |i| &e.file[..i]).to_string();
        let g = groups
            .entry((e.kind, e.verdict, dir))
            .or_insert_with(|| (0, Files::new(), e.reason.clone()));
        g.0 += 1;
        if !g.1.contains_key(&e.file) {
            g.1.insert(e.file.clone(), size_of(e));
        }
    }
    let mut out: Vec<EvidenceGroup> = groups
        .into_iter()
        .map(|((kind, verdict, dir), (holds, files, reason))| {
            let known: Vec<u64> = files.values().flatten().copied().collect();
            let bytes =
                (!known.is_empty()).then(|| known.iter().fold(0u64, |a, &b| a.saturating_add(b)));
            let mut ranked: Vec<(&String, Option<u64>)> =
                files.iter().map(|(f, s)| (f, *s)).collect();
            ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
            EvidenceGroup {
                kind,
                verdict,
                dir,
                holds,
                files: files.len(),
                bytes,
                examples: ranked
                    .iter()
                    .take(EXAMPLES)
                    .map(|(f, _)| (*f).clone())
                    .collect(),
                reason,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        a.verdict
            .cmp(&b.verdict)
            .then(b.bytes.cmp(&a.bytes))
            .then(b.holds.cmp(&a.holds))
            .then_with(|| a.dir.cmp(&b.dir))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(file: &str, kind: Kind, verdict: Verdict) -> Evidence {
        let mut e = Evidence::new(file.as_bytes(), kind, 0, String::new());
        e.verdict = verdict;
        e.reason = format!("{} because", verdict.as_str());
        e
    }

    #[test]
    fn groups_by_kind_verdict_and_directory() {
        let mut evs: Vec<Evidence> = (0..100)
            .map(|i| {
                ev(
                    &format!("lib/farm/f{i:03}"),
                    Kind::Symlink,
                    Verdict::Runtime,
                )
            })
            .collect();
        evs.push(ev("share/doc/README", Kind::Text, Verdict::Docs));
        evs.push(ev("bin/app", Kind::ElfRunpath, Verdict::Runtime));
        // Two holds in one file count one file.
        evs.push(ev("bin/app", Kind::ElfRunpath, Verdict::Runtime));
        let gs = group(&evs, |e| {
            Some(if e.file == "bin/app" {
                5000
            } else {
                10 + e.file.len() as u64 % 7
            })
        });
        assert_eq!(gs.len(), 3);
        // Runtime first, the group holding most bytes before the other.
        assert_eq!((gs[0].kind, gs[0].dir.as_str()), (Kind::ElfRunpath, "bin"));
        assert_eq!((gs[0].holds, gs[0].files, gs[0].bytes), (2, 1, Some(5000)));
        assert_eq!(gs[1].dir, "lib/farm");
        assert_eq!((gs[1].holds, gs[1].files), (100, 100));
        assert_eq!(gs[1].examples.len(), EXAMPLES);
        let total: u64 = (0..100)
            .map(|i| 10 + format!("lib/farm/f{i:03}").len() as u64 % 7)
            .sum();
        assert_eq!(gs[1].bytes, Some(total));
        assert_eq!(gs[2].verdict, Verdict::Docs);
        assert_eq!(gs[2].reason, "docs because");
        // Unknown sizes: no byte total, examples by name.
        let gs = group(&evs[..5], |_| None);
        assert_eq!(gs[0].bytes, None);
        assert_eq!(
            gs[0].examples,
            ["lib/farm/f000", "lib/farm/f001", "lib/farm/f002"]
        );
    }
}
