//! The classify stage: raw holds from the read stage become [`Evidence`]
//! with a [`Kind`], RUNPATH entries are judged against the directory they
//! name (in the referenced path's tree, from the same read), files that a
//! program of their own path finds by relative directory become run-time
//! data, and every piece of evidence gets its [`Verdict`](nix_heft_types::evidence::Verdict).
//!
//! Pure: it never touches the store. Everything it needs is in [`Reads`].

mod lookups;
mod runpath;
pub mod traced;
pub mod verdict;

use std::collections::BTreeMap;

use crate::read::{PathRead, Reads, Site};
use nix_heft_format::elf::ElfHold;
use nix_heft_format::nar::tree::FileTree;
use nix_heft_graph::{Graph, NodeId};
use nix_heft_types::evidence::{Evidence, Kind};
use nix_heft_types::problem::{Problem, ProblemKind};

/// Evidence found in one referrer, by reference.
#[derive(Debug, Default, Clone)]
pub struct PathEvidence {
    /// Evidence per referenced node, in file order.
    pub by_reference: BTreeMap<NodeId, Vec<Evidence>>,
    /// False when the source has no file contents for this path.
    pub available: bool,
}

/// The classified result of a read: what later stages use.
#[derive(Debug, Default)]
pub struct Classified {
    /// Per scanned referrer.
    pub paths: BTreeMap<NodeId, PathEvidence>,
    /// The file tree of every path read in full, scanned or not.
    pub trees: BTreeMap<NodeId, FileTree>,
    /// Everything that could not be read or classified.
    pub problems: Vec<Problem>,
}

impl Classified {
    /// `from`'s evidence for `to`, empty when none was found or read.
    pub fn evidence(&self, from: NodeId, to: NodeId) -> &[Evidence] {
        self.paths
            .get(&from)
            .and_then(|p| p.by_reference.get(&to))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The size of `file` (raw, relative) in `v`, when `v`'s tree was
    /// read: a regular file's bytes, a symlink's target length.
    pub fn file_size(&self, v: NodeId, file: &[u8]) -> Option<u64> {
        use nix_heft_format::nar::tree::TreeNode;
        let e = self.trees.get(&v)?.under(file).next()?;
        if e.path != file {
            return None;
        }
        Some(match &e.node {
            TreeNode::Regular { size, .. } => *size,
            TreeNode::Symlink { target } => target.len() as u64,
            TreeNode::Directory => 0,
        })
    }

    /// `from`'s evidence for `to`, grouped for a reviewer
    /// ([`nix_heft_types::evidence::group`]), with the holding files' sizes.
    pub fn groups(&self, from: NodeId, to: NodeId) -> Vec<nix_heft_types::evidence::EvidenceGroup> {
        nix_heft_types::evidence::group(self.evidence(from, to), |e| {
            self.file_size(from, &e.file_raw)
        })
    }
}

/// Classifies everything `reads` holds.
pub fn classify(g: &Graph, reads: Reads) -> Classified {
    let Reads {
        paths,
        mut problems,
    } = reads;
    let mut out = Classified::default();
    for (v, pr) in &paths {
        if pr.searched {
            let pe = classify_path(g, *v, pr, &paths, &mut problems);
            out.paths.insert(*v, pe);
        }
    }
    for (v, pr) in paths {
        if let Some(t) = pr.tree {
            out.trees.insert(v, t);
        }
    }
    out.problems = problems;
    out
}

fn classify_path(
    g: &Graph,
    v: NodeId,
    pr: &PathRead,
    all: &BTreeMap<NodeId, PathRead>,
    problems: &mut Vec<Problem>,
) -> PathEvidence {
    let mut evs: Vec<(NodeId, Evidence)> = Vec::with_capacity(pr.holds.len());
    let mut bad_elf: Vec<&[u8]> = Vec::new();
    for h in &pr.holds {
        let mut ev = Evidence::new(&h.file, Kind::Binary, h.offset, h.context.clone());
        ev.pointed = h.pointed.clone();
        let nix_support = nix_heft_format::relpath::is_under(&h.file, b"nix-support");
        match &h.site {
            Site::FileName => ev.kind = Kind::FileName,
            Site::Symlink => ev.kind = Kind::Symlink,
            _ if nix_support => {
                ev.kind = Kind::NixSupport;
                if let Site::Text { line } = h.site {
                    ev.line = Some(line);
                }
            }
            Site::Elf { hold, elf } => {
                let facts = &pr.elf_files[*elf];
                ev.kind = match hold {
                    ElfHold::Interpreter => Kind::ElfInterpreter,
                    ElfHold::Needed { .. } => Kind::ElfNeeded,
                    ElfHold::Runpath { entry } => {
                        ev.runpath = Some((facts.runpath.clone(), *entry));
                        if let Some(dir) = facts.runpath.get(*entry) {
                            let tree = all.get(&h.target).and_then(|r| r.tree.as_ref());
                            runpath::judge(g, h.target, tree, dir, facts, &mut ev);
                        }
                        Kind::ElfRunpath
                    }
                    ElfHold::String { .. } => Kind::ElfString,
                    ElfHold::Debug { .. } => Kind::ElfDebug,
                    ElfHold::Comment { .. } => Kind::ElfComment,
                    ElfHold::Other { .. } => Kind::ElfOther,
                };
            }
            Site::BadElf { error } => {
                ev.note = Some(format!("malformed ELF, treated as binary: {error}"));
                if bad_elf.last() != Some(&h.file.as_slice()) {
                    bad_elf.push(&h.file);
                    problems.push(
                        Problem::new(
                            g.path(v).as_str(),
                            ProblemKind::BadElf,
                            format!("malformed ELF, its holds are judged as binary: {error}"),
                        )
                        .in_file(String::from_utf8_lossy(&h.file)),
                    );
                }
            }
            Site::Shebang => {
                ev.kind = Kind::Shebang;
                ev.line = Some(1);
            }
            // A `.drv` file names its inputs: the build graph's edges.
            Site::Text { .. } if h.file.is_empty() && g.path(v).name().ends_with(".drv") => {
                ev.kind = Kind::DrvInput;
            }
            Site::Text { line } => {
                ev.kind = Kind::Text;
                ev.line = Some(*line);
            }
            Site::Binary => {}
        }
        evs.push((h.target, ev));
    }
    lookups::mark(pr, &mut evs);
    let mut by_reference: BTreeMap<NodeId, Vec<Evidence>> = BTreeMap::new();
    for (t, mut ev) in evs {
        let (verdict, reason) = verdict::judge(&ev);
        ev.verdict = verdict;
        ev.reason = reason;
        by_reference.entry(t).or_default().push(ev);
    }
    PathEvidence {
        by_reference,
        available: pr.available,
    }
}
