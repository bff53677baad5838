//! Simulating a split of one store path into several outputs, the way
//! nixpkgs' `moveToOutput` would make it, from the files already built.
//!
//! Semantics follow `moveToOutput` in nixpkgs'
//! `pkgs/build-support/setup-hooks/multiple-outputs.sh`: moves apply in
//! order; a pattern is a shell glob relative to the output root, matched in
//! every output but the destination; a matched file or directory moves with
//! everything below it (merging into a directory of the same name); and a
//! directory left empty in the source is removed with its empty parents.
//! Whenever the result has a `dev` output besides `out`, `dev` also records
//! `out` in `nix-support/propagated-build-inputs`, as nixpkgs'
//! `_multioutPropagateDev` does for every multi-output build (fixupPhase
//! writes that file to the dev output too), which makes `dev` reference
//! `out`; `--no-propagate-dev` turns it off.
//!
//! Each output's references come from the evidence of the files it holds;
//! a file that mentions the path's own hash refers to `out`, which keeps the
//! original name.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use globset::GlobBuilder;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use nix_heft_format::nar::tree::{FileTree, TreeEntry, TreeNode};
use nix_heft_format::relpath::parent;
use nix_heft_graph::{Graph, NodeId};
use nix_heft_scan::classify::Classified;
use nix_heft_types::evidence::{Evidence, Kind, Verdict};
use nix_heft_types::problem::Problem;

/// One `moveToOutput PATTERN OUTPUT`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    /// Shell glob relative to the output root (`lib/cmake`, `share/doc/*`).
    pub pattern: String,
    /// Destination output name (`dev`).
    pub output: String,
}

impl std::str::FromStr for Move {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Move, String> {
        let (p, o) = s
            .rsplit_once('=')
            .ok_or_else(|| format!("'{s}' is not GLOB=OUTPUT"))?;
        let p = p.trim_matches('/');
        if p.is_empty() || o.is_empty() || o.contains('/') {
            return Err(format!("'{s}' is not GLOB=OUTPUT"));
        }
        Ok(Move {
            pattern: p.to_string(),
            output: o.to_string(),
        })
    }
}

/// The moves of nixpkgs' multiple-outputs hook, in the order it runs them
/// (`_multioutDevs`, then `_multioutDocs`), assuming the package declares
/// every output it needs.
pub fn nixpkgs_preset() -> Vec<Move> {
    [
        ("include", "dev"),
        ("lib/pkgconfig", "dev"),
        ("share/pkgconfig", "dev"),
        ("lib/cmake", "dev"),
        ("share/aclocal", "dev"),
        // fixupPhase writes propagated inputs to the dev output.
        ("nix-support/propagated-build-inputs", "dev"),
        ("share/info", "info"),
        ("share/doc", "doc"),
        ("share/gtk-doc", "devdoc"),
        ("share/devhelp/books", "devdoc"),
        ("share/man", "man"),
    ]
    .into_iter()
    .map(|(p, o)| Move {
        pattern: p.to_string(),
        output: o.to_string(),
    })
    .collect()
}

/// Which output each file of the path lands in.
#[derive(Debug, Clone)]
pub struct Assignment {
    /// Output names; `out` first.
    pub outputs: Vec<String>,
    /// For each output, the entries it holds (relative paths).
    pub files: Vec<BTreeSet<Vec<u8>>>,
    /// Patterns of moves that matched no file.
    pub unmatched: Vec<String>,
}

impl Assignment {
    /// Applies `moves` in order to the files of `tree`.
    pub fn apply(tree: &FileTree, moves: &[Move]) -> Result<Assignment> {
        let mut a = Assignment {
            outputs: vec!["out".to_string()],
            files: vec![tree.entries.iter().map(|e| e.path.clone()).collect()],
            unmatched: Vec::new(),
        };
        for m in moves {
            let glob = GlobBuilder::new(&m.pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| nix_heft_types::Error::BadPattern {
                    pattern: m.pattern.clone(),
                    reason: e.to_string(),
                })?
                .compile_matcher();
            let dst = match a.outputs.iter().position(|o| *o == m.output) {
                Some(i) => i,
                None => {
                    a.outputs.push(m.output.clone());
                    a.files.push(BTreeSet::new());
                    a.files.len() - 1
                }
            };
            let mut matched = false;
            for src in 0..a.outputs.len() {
                if src == dst {
                    continue;
                }
                // Top-level matches only: whatever is below moves with them.
                let tops: Vec<Vec<u8>> = a.files[src]
                    .iter()
                    .filter(|p| !p.is_empty() && glob.is_match(String::from_utf8_lossy(p).as_ref()))
                    .cloned()
                    .collect();
                // Range queries on the sorted sets, never a scan of every
                // file per match: a glob can match 100,000 entries of a
                // directory of a million.
                let mut moved_tops: HashSet<Vec<u8>> = HashSet::new();
                for t in tops {
                    let mut q = Some(t.as_slice());
                    if std::iter::from_fn(|| {
                        let d = q?;
                        q = parent(d);
                        Some(d)
                    })
                    .any(|d| moved_tops.contains(d))
                    {
                        continue;
                    }
                    let sub: Vec<Vec<u8>> = std::iter::once(&t)
                        .filter(|t| a.files[src].contains(*t))
                        .chain(strictly_below(&a.files[src], &t))
                        .cloned()
                        .collect();
                    for p in sub {
                        a.files[src].remove(&p);
                        a.files[dst].insert(p);
                    }
                    // mkdir -p of the destination's parents.
                    let mut q = parent(&t);
                    while let Some(d) = q {
                        a.files[dst].insert(d.to_vec());
                        q = parent(d);
                    }
                    // rmdir -p of parents left empty in the source (never
                    // the output root).
                    let mut q = parent(&t);
                    while let Some(d) = q {
                        if d.is_empty() || strictly_below(&a.files[src], d).next().is_some() {
                            break;
                        }
                        a.files[src].remove(d);
                        q = parent(d);
                    }
                    moved_tops.insert(t);
                }
                matched |= !moved_tops.is_empty();
            }
            if !matched {
                a.unmatched.push(m.pattern.clone());
            }
        }
        // Outputs that received nothing are not created.
        let keep: Vec<bool> = a
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| i == 0 || f.len() > 1 || f.iter().any(|p| !p.is_empty()))
            .collect();
        let mut outputs = Vec::new();
        let mut files = Vec::new();
        for (i, k) in keep.into_iter().enumerate() {
            if k {
                outputs.push(a.outputs[i].clone());
                files.push(std::mem::take(&mut a.files[i]));
            }
        }
        Ok(Assignment {
            outputs,
            files,
            unmatched: a.unmatched,
        })
    }

    /// The output holding `file` (an entry path); for a directory kept in
    /// several outputs, `out` if it is one of them.
    pub fn output_of(&self, file: &[u8]) -> Option<usize> {
        (0..self.outputs.len()).find(|&i| self.files[i].contains(file))
    }
}

/// The paths of `set` strictly below the non-empty path `dir`: in byte
/// order they are exactly those from `dir/` up to `dir0` (`0` follows `/`).
fn strictly_below<'a>(
    set: &'a BTreeSet<Vec<u8>>,
    dir: &[u8],
) -> impl Iterator<Item = &'a Vec<u8>> + 'a {
    let mut lo = dir.to_vec();
    lo.push(b'/');
    let mut hi = dir.to_vec();
    hi.push(b'/' + 1);
    set.range(lo..hi)
}

/// Applies `moves`; with `propagate`, when the result has a `dev` output,
/// `nix-support/propagated-build-inputs` goes there last, since fixupPhase
/// writes that file to the dev output whatever the moves.
pub fn assign(tree: &FileTree, moves: &[Move], propagate: bool) -> Result<Assignment> {
    let a = Assignment::apply(tree, moves)?;
    if !propagate || !a.outputs.iter().any(|o| o == "dev") {
        return Ok(a);
    }
    // A set of every path, per output: not kept while the next is made.
    drop(a);
    let mut all = moves.to_vec();
    all.push(Move {
        pattern: "nix-support/propagated-build-inputs".into(),
        output: "dev".into(),
    });
    Assignment::apply(tree, &all)
}

/// How an existing output of a path's package was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FoundBy {
    /// Registered with the same deriver as the path (certain).
    Deriver,
    /// No deriver recorded: the same name and version with that output's
    /// suffix, referencing the path where several match (assumed).
    Name,
}

impl FoundBy {
    /// How the sibling was found, in words, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            FoundBy::Deriver => "same deriver",
            FoundBy::Name => "assumed from the name (no deriver recorded)",
        }
    }
}

/// An output the package already has (a sibling store path, see
/// `nix_heft_ops::roots::sibling_outputs`): files moved to an output of that
/// name join its files, as `moveToOutput` into an existing `$dev` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Existing {
    /// Output name (`dev`).
    pub output: String,
    /// Its store path.
    pub path: String,
    /// Its node in the graph, when the graph has it (its files and holds
    /// then come from the read and the moved files merge into it); an
    /// output outside the graph only names what the package has.
    pub node: Option<NodeId>,
    /// How it was found.
    pub found_by: FoundBy,
}

/// A simulated output.
#[derive(Debug, Clone)]
pub struct SimOutput {
    /// Output name.
    pub name: String,
    /// The existing output it is merged into (its node and how it was
    /// found), `None` for `out` and for an output the split creates.
    pub existing: Option<(NodeId, FoundBy)>,
    /// Its files.
    pub tree: FileTree,
    /// NAR size of `tree`.
    pub nar_size: u64,
    /// Store paths it references (graph nodes; the split path itself means
    /// `out`).
    pub references: BTreeSet<NodeId>,
    /// Other outputs of the split it references, by index.
    pub output_refs: BTreeSet<usize>,
}

/// Builds the outputs' trees and reference sets.
///
/// `path_name` is the store path's full name (`/nix/store/...-x`), used for
/// the length of the propagated-build-inputs line; `self_id` is the path's
/// node; `evidence` maps each referenced node to the path's evidence for it;
/// `propagate` adds `dev`'s `nix-support/propagated-build-inputs` entry.
pub fn build_outputs(
    tree: &FileTree,
    a: &Assignment,
    self_id: NodeId,
    path_name: &str,
    evidence: &BTreeMap<NodeId, Vec<Evidence>>,
    propagate: bool,
) -> Vec<SimOutput> {
    // Each output's entries are picked from the tree by membership in its
    // set: no map of every path on top of the tree and the sets.
    let mut outs: Vec<SimOutput> = a
        .outputs
        .iter()
        .zip(&a.files)
        .map(|(name, files)| {
            let entries: Vec<TreeEntry> = tree
                .entries
                .iter()
                .filter(|e| files.contains(&e.path))
                .cloned()
                .collect();
            SimOutput {
                name: name.clone(),
                existing: None,
                tree: FileTree::from_entries(entries),
                nar_size: 0,
                references: BTreeSet::new(),
                output_refs: BTreeSet::new(),
            }
        })
        .collect();
    for (&target, evs) in evidence {
        for ev in evs {
            let Some(o) = a.output_of(&ev.file_raw) else {
                continue;
            };
            if target == self_id {
                if o != 0 {
                    outs[o].output_refs.insert(0);
                } else {
                    outs[0].references.insert(self_id);
                }
            } else {
                outs[o].references.insert(target);
            }
        }
    }
    if propagate && let Some(dev) = a.outputs.iter().position(|o| o == "dev") {
        // _multioutPropagateDev: `echo -n " ${!output}" >> .../propagated-build-inputs`
        // for each propagated output; by default that is `out` alone when
        // there are no bin/lib outputs.
        let line = 1 + path_name.len() as u64;
        let file = b"nix-support/propagated-build-inputs".to_vec();
        let mut entries = std::mem::take(&mut outs[dev].tree.entries);
        match entries.iter_mut().find(|e| e.path == file) {
            Some(TreeEntry {
                node: TreeNode::Regular { size, .. },
                ..
            }) => *size += line,
            _ => entries.push(TreeEntry {
                path: file,
                node: TreeNode::Regular {
                    size: line,
                    executable: false,
                },
            }),
        }
        outs[dev].tree = FileTree::from_entries(entries);
        outs[dev].output_refs.insert(0);
    }
    for o in &mut outs {
        o.nar_size = o.tree.nar_size();
    }
    outs
}

/// Merges the existing output `e`, when the graph has it, into the
/// simulated output `o` of the
/// same name: its files join the moved ones (a moved file replaces one of
/// the same name, as `mv` would, with a problem saying so), its holds join
/// the moved files' references (a hold on the split path is a reference to
/// `out`, one on itself none), and its NAR size is the merged tree's. With
/// `propagate`, an existing `nix-support/propagated-build-inputs` already
/// names `out` (the build that made it ran `_multioutPropagateDev`), so
/// the line the simulation added for `out` is not added twice.
fn merge_existing(
    g: &Graph,
    c: &Classified,
    path: NodeId,
    o: &mut SimOutput,
    e: &Existing,
    propagate: bool,
    problems: &mut Vec<Problem>,
) {
    // An output outside the graph is not in any closure measured: the
    // split creates its node as for a new output.
    let Some(node) = e.node else {
        return;
    };
    o.existing = Some((node, e.found_by));
    let (Some(tree), Some(read)) = (
        c.trees.get(&node),
        c.paths.get(&node).filter(|p| p.available),
    ) else {
        // Its references are known from the graph, not its files.
        problems.push(Problem::new(
            g.path(node).as_str(),
            nix_heft_types::problem::ProblemKind::Simulation,
            format!(
                "the existing '{}' output could not be read: its own files are not in the \
                 predicted NAR size",
                e.output
            ),
        ));
        for &r in g.references(node) {
            if r == path {
                o.output_refs.insert(0);
            } else if r != node {
                o.references.insert(r);
            }
        }
        return;
    };
    let pbi: &[u8] = b"nix-support/propagated-build-inputs";
    let had_pbi = tree.entries.iter().any(|x| x.path == pbi);
    let moved = std::mem::take(&mut o.tree.entries);
    let mut merged: BTreeMap<Vec<u8>, TreeEntry> = tree
        .entries
        .iter()
        .map(|x| (x.path.clone(), x.clone()))
        .collect();
    for m in moved {
        let is_dir = matches!(m.node, TreeNode::Directory);
        match merged.get(&m.path) {
            Some(_) if is_dir => {}
            // The line `build_outputs` appended for `out` is already there.
            Some(_) if propagate && m.path == pbi && had_pbi => {}
            Some(_) => {
                problems.push(Problem::new(
                    g.path(node).as_str(),
                    nix_heft_types::problem::ProblemKind::Simulation,
                    format!(
                        "{} is both moved from out and already in the '{}' output: the moved \
                         one is assumed to replace it",
                        String::from_utf8_lossy(&m.path),
                        e.output
                    ),
                ));
                merged.insert(m.path.clone(), m);
            }
            None => {
                merged.insert(m.path.clone(), m);
            }
        }
    }
    o.tree = FileTree::from_entries(merged.into_values().collect());
    o.nar_size = o.tree.nar_size();
    for (&target, evs) in &read.by_reference {
        if evs.is_empty() || target == node {
            continue;
        }
        if target == path {
            o.output_refs.insert(0);
        } else {
            o.references.insert(target);
        }
    }
}

/// Which entry of `tree` a hold points into: the longest entry that the
/// path bytes after the hash (`-name/lib/libx.so`) begin with, past the
/// name; `""` (the path itself) when none does.
pub fn pointed_entry(tree_entries: &HashSet<&[u8]>, pointed: &[u8]) -> Vec<u8> {
    let Some(slash) = pointed.iter().position(|&b| b == b'/') else {
        return Vec::new();
    };
    let cand = &pointed[slash + 1..];
    (1..=cand.len())
        .rev()
        .map(|n| cand[..n].strip_suffix(b"/").unwrap_or(&cand[..n]))
        .find(|p| tree_entries.contains(p))
        .map(<[u8]>::to_vec)
        .unwrap_or_default()
}

/// What a direct consumer of a split path keeps.
#[derive(Debug, Clone)]
pub struct Consumer {
    /// The consumer.
    pub node: NodeId,
    /// Indices of the outputs it keeps referencing.
    pub keeps: BTreeSet<usize>,
    /// Files it uses at run time that moved out of `out`, with their output.
    pub moved_runtime: Vec<(String, usize)>,
}

/// Everything a split simulation found.
#[derive(Debug, Clone)]
pub struct Simulation {
    /// The outputs, `out` first.
    pub outputs: Vec<SimOutput>,
    /// Node of each output in `whatif` (`out` is the original path's node).
    pub output_nodes: Vec<NodeId>,
    /// Each direct consumer of the path.
    pub consumers: Vec<Consumer>,
    /// Closure size of every output under the split.
    pub output_closures: Vec<u64>,
    /// Patterns of moves that matched no file.
    pub unmatched: Vec<String>,
    /// Files the split parts from the ELF file that finds them by relative
    /// path: each breaks that file at run time.
    pub breaks: Vec<String>,
    /// What could not be simulated exactly.
    pub problems: Vec<Problem>,
}

/// Simulates splitting `path` with `moves`, editing `w` so that consumers
/// point at the outputs they use. Everything comes from `c`: the path's
/// tree and evidence, each consumer's evidence for it, and the files and
/// holds of the `existing` outputs the package already has (moved files
/// join an existing output of their destination's name). `propagate`
/// models `_multioutPropagateDev`. Precondition: `w` is unedited for `path`
/// and its consumers.
pub fn simulate(
    g: &Graph,
    c: &Classified,
    w: &mut super::whatif::WhatIf<'_>,
    path: NodeId,
    moves: &[Move],
    propagate: bool,
    existing: &[Existing],
) -> Result<Simulation> {
    let tree = super::tree_of(g, c, path, "a split")?;
    let mut problems: Vec<Problem> = Vec::new();
    let empty = BTreeMap::new();
    let evidence = c.paths.get(&path).map_or(&empty, |p| &p.by_reference);
    let a = assign(tree, moves, propagate)?;
    let mut outputs = build_outputs(tree, &a, path, g.path(path).as_str(), evidence, propagate);
    for o in outputs.iter_mut().skip(1) {
        if let Some(e) = existing.iter().find(|e| e.output == o.name) {
            merge_existing(g, c, path, o, e, propagate, &mut problems);
        }
    }
    // Nodes: `out` replaces the path; an existing output keeps its node;
    // the others are new.
    let mut nodes = vec![path];
    for o in &outputs[1..] {
        match o.existing {
            Some((n, _)) => {
                w.set_nar(n, o.nar_size);
                nodes.push(n);
            }
            None => nodes.push(w.add_node(o.nar_size)),
        }
    }
    w.set_nar(path, outputs[0].nar_size);
    for (i, o) in outputs.iter().enumerate() {
        let mut refs: Vec<NodeId> = o
            .references
            .iter()
            .copied()
            .filter(|&r| r != path)
            .collect();
        refs.extend(o.output_refs.iter().map(|&j| nodes[j]));
        w.set_refs(nodes[i], refs);
    }
    // Consumers keep the outputs their evidence points into.
    let entries: HashSet<&[u8]> = tree.entries.iter().map(|e| e.path.as_slice()).collect();
    let mut consumers = Vec::new();
    for &cons in g.referrers(path) {
        // An existing output merged into is an output of the split now,
        // not a consumer: its references were set above.
        if nodes[1..].contains(&cons) {
            continue;
        }
        if !c.paths.contains_key(&cons) {
            problems.push(Problem::new(
                g.path(cons).as_str(),
                nix_heft_types::problem::ProblemKind::Simulation,
                format!(
                    "was not read, so the split assumes it keeps {}'s out",
                    g.path(path).name()
                ),
            ));
        }
        let evs = c.evidence(cons, path);
        let mut keeps = BTreeSet::new();
        let mut moved_runtime = Vec::new();
        for ev in evs {
            let sub = pointed_entry(&entries, &ev.pointed);
            // A RUNPATH entry names a directory; what the consumer needs
            // from it are the libraries it serves, wherever they move.
            let mut targets: Vec<Vec<u8>> = Vec::new();
            if ev.kind == Kind::ElfRunpath {
                for soname in &ev.serves {
                    let mut f = sub.clone();
                    nix_heft_format::relpath::push(&mut f, soname.as_bytes());
                    if entries.contains(f.as_slice()) {
                        targets.push(f);
                    }
                }
            }
            if targets.is_empty() {
                targets.push(sub);
            }
            for t in targets {
                let o = a.output_of(&t).unwrap_or(0);
                keeps.insert(o);
                if o != 0 && ev.verdict == Verdict::Runtime {
                    moved_runtime.push((String::from_utf8_lossy(&t).into_owned(), o));
                }
            }
        }
        if evs.is_empty() {
            // Nothing readable: assume it keeps `out`, as a reference to
            // the path's name does.
            keeps.insert(0);
        }
        let mut refs: Vec<NodeId> = w
            .references(cons)
            .iter()
            .copied()
            .filter(|&r| r != path)
            .collect();
        refs.extend(keeps.iter().map(|&o| nodes[o]));
        w.set_refs(cons, refs);
        consumers.push(Consumer {
            node: cons,
            keeps,
            moved_runtime,
        });
    }
    // Run-time data found by relative path must stay beside the ELF file
    // that looks it up: a split that parts them breaks that file, and
    // whoever uses it then needs the data's output too.
    let mut breaks: Vec<String> = Vec::new();
    let mut needs: BTreeSet<(usize, usize)> = BTreeSet::new();
    for ev in evidence.values().flatten() {
        let Some((elf, dir)) = &ev.looked_up_by else {
            continue;
        };
        let (Some(of), Some(oe)) = (a.output_of(&ev.file_raw), a.output_of(elf.as_bytes())) else {
            continue;
        };
        if of != oe && needs.insert((oe, of)) {
            breaks.push(format!(
                "breaks run time: {elf} looks files up under {dir}, which would be in output '{}' while it is in '{}'",
                a.outputs[of], a.outputs[oe]
            ));
        }
    }
    for cons in &mut consumers {
        let extra: Vec<usize> = needs
            .iter()
            .filter(|(oe, of)| cons.keeps.contains(oe) && !cons.keeps.contains(of))
            .map(|&(_, of)| of)
            .collect();
        if extra.is_empty() {
            continue;
        }
        cons.keeps.extend(extra.iter().copied());
        let mut refs = w.references(cons.node).to_vec();
        refs.extend(extra.iter().map(|&o| nodes[o]));
        refs.sort_unstable();
        refs.dedup();
        w.set_refs(cons.node, refs);
    }
    let output_closures = nodes.iter().map(|&n| w.closure_size(&[n])).collect();
    Ok(Simulation {
        outputs,
        output_nodes: nodes,
        consumers,
        output_closures,
        unmatched: a.unmatched.clone(),
        breaks,
        problems,
    })
}

/// A root's closure before and after a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootClosure {
    /// The root.
    pub root: NodeId,
    /// Closure size now.
    pub before: u64,
    /// Closure size after the change.
    pub after: u64,
}

/// A split simulated and measured against roots.
#[derive(Debug, Clone)]
pub struct SplitPlan {
    /// The simulation.
    pub sim: Simulation,
    /// Each root's closure before and after.
    pub roots: Vec<RootClosure>,
}

/// Simulates the split of `path` (moved files joining the `existing`
/// outputs of their destination's name) and measures each root's closure
/// before and after it.
pub fn split(
    g: &Graph,
    c: &Classified,
    path: NodeId,
    moves: &[Move],
    propagate: bool,
    roots: &[NodeId],
    existing: &[Existing],
) -> Result<SplitPlan> {
    let base = super::whatif::WhatIf::new(g);
    let mut w = super::whatif::WhatIf::new(g);
    let sim = simulate(g, c, &mut w, path, moves, propagate, existing)?;
    let roots = roots
        .iter()
        .map(|&r| RootClosure {
            root: r,
            before: base.closure_size(&[r]),
            after: w.closure_size(&[r]),
        })
        .collect();
    Ok(SplitPlan { sim, roots })
}

#[cfg(test)]
mod range_tests {
    use super::*;

    fn tree(paths: &[&str]) -> FileTree {
        let mut entries: Vec<TreeEntry> = paths
            .iter()
            .map(|p| TreeEntry {
                path: p.as_bytes().to_vec(),
                node: if p.ends_with('/') || ["", "a", "a/b", "a/b0"].contains(p) {
                    TreeNode::Directory
                } else {
                    TreeNode::Regular {
                        size: 1,
                        executable: false,
                    }
                },
            })
            .collect();
        entries.sort_by(|x, y| x.path.cmp(&y.path));
        FileTree { entries }
    }

    fn names(set: &BTreeSet<Vec<u8>>) -> Vec<String> {
        set.iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()
    }

    /// What is below a moved directory is found by range, and neighbours
    /// that sort around it (`a/b-x` before `a/b/`, `a/b0` after) stay.
    #[test]
    fn moves_take_exactly_what_is_below() {
        let t = tree(&[
            "", "a", "a/b", "a/b/c", "a/b/d", "a/b-x", "a/b0", "a/b0/e", "z",
        ]);
        let mv = |p: &str| Move {
            pattern: p.into(),
            output: "dev".into(),
        };
        let a = Assignment::apply(&t, &[mv("a/b")]).unwrap();
        assert_eq!(names(&a.files[1]), ["", "a", "a/b", "a/b/c", "a/b/d"]);
        assert_eq!(
            names(&a.files[0]),
            ["", "a", "a/b-x", "a/b0", "a/b0/e", "z"]
        );
        // Every child of a: the directory left empty is removed from out.
        let a = Assignment::apply(&t, &[mv("a/*")]).unwrap();
        assert_eq!(names(&a.files[0]), ["", "z"]);
        assert_eq!(a.files[1].len(), 8);
        // A top below one already moved is skipped, not moved twice.
        let a = Assignment::apply(&t, &[mv("a"), mv("a/b")]).unwrap();
        assert_eq!(names(&a.files[0]), ["", "z"]);
        assert!(a.unmatched.is_empty() || a.unmatched == ["a/b"]);
    }
}
