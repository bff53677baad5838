//! `roots` (issue 40's shape: one operation, [`analyse`], over a plain
//! [`RootsRequest`]): what removing each garbage-collector root of a local
//! or chroot store would free, exactly as Nix 2.8's collector counts it,
//! for every root at once and for groups of roots; what is dead now; the
//! commands that do it; and which roots keep a path alive.
//!
//! Read once, in parallel: the database (every valid path, its references
//! and the derivation links, `nix_heft_store::gc::WholeStore`), the roots
//! as the collector finds them (`nix_heft_store::gc::roots`) and the store
//! directory's entries. The liveness graph and its dominator tree
//! ([`liveness`]) give every root's figure at once; groups take one pass
//! per 64. With `--disk`, every inode of the store is counted once, a
//! hard-linked one (`nix-store --optimise`) freed only with its last name
//! outside `.links` ([`disk`]). Nothing is written, nothing deleted.

mod collector;
mod disk;
mod found;
mod groups;
pub mod liveness;
mod request;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::error::Result;
use nix_heft_graph::{Graph, NodeId, closures_of};
use nix_heft_store::gc::WholeStore;
use nix_heft_store::gc::roots::Look;
use nix_heft_store::source::LocalStore;
use nix_heft_types::error::io_err;

pub use collector::Collector;
pub use groups::GroupKind;
pub use liveness::EdgeKind;
pub use request::locations;

/// Links a group's commands name in a text report (the rest counted; the
/// JSON names every one).
pub const TEXT_LINKS: usize = 50;

/// What `roots` is asked.
#[derive(Debug, Clone, Default)]
pub struct RootsRequest {
    /// `keep-outputs`, as the collector will apply it.
    pub keep_outputs: bool,
    /// `keep-derivations`, as the collector will apply it.
    pub keep_derivations: bool,
    /// Settings to repeat in the commands shown (`--option NAME VALUE`,
    /// given to nix-heft rather than in nix.conf, which Nix reads itself).
    pub options: Vec<(String, String)>,
    /// How the store is named to Nix in commands: `None` for the local
    /// store, else the chroot store's root (`--store ROOT`).
    pub store_arg: Option<String>,
    /// Days for the "older than" groups.
    pub older_than_days: u64,
    /// Show only the roots at or below these locations (absolute,
    /// normalised), and group each.
    pub under: Vec<PathBuf>,
    /// Count bytes on disk: walks every inode of the store.
    pub disk: bool,
    /// Which roots get their closure and command.
    pub detail: Listing,
    /// List the paths each root and group frees, and the dead ones.
    pub list_paths: bool,
    /// The path `why --roots` asks about.
    pub why: Option<String>,
    /// Now, in seconds since the epoch: ages and the "older than" groups.
    pub now: i64,
}

/// Which roots get their closure (a walk of it each) and their command:
/// all for a report that lists all, the first rows for a table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Listing {
    /// Every root.
    #[default]
    All,
    /// The first `n` roots, in the order of what they free.
    Top(usize),
}

/// Paths and bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Figure {
    /// How many store paths.
    pub paths: u64,
    /// Their summed NAR size (what `nix path-info -S` and the
    /// collector's listing count).
    pub nar_bytes: u64,
    /// Bytes on disk (`du`'s count: blocks, each inode once, a
    /// hard-linked inode only with its last name), with `--disk`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_bytes: Option<u64>,
}

/// What kind of root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RootKind {
    /// A symlink into the store in `gcroots/` (`nix-store --add-root`
    /// makes one under `auto/` to a link elsewhere, such as `./result`).
    Link,
    /// A generation of a profile.
    Generation,
    /// A file in `gcroots/` named after a store path (Hydra's roots).
    File,
    /// A path a running process holds (open file, mapping, executable,
    /// working directory or environment).
    Runtime,
    /// A temporary root of a running Nix process.
    Temporary,
}

/// A generation's profile and number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Generation {
    /// The profile's link.
    pub profile: PathBuf,
    /// The generation's number.
    pub number: u64,
    /// Whether it is the profile's current generation.
    pub current: bool,
    /// The profile's index among those found (for the groups).
    #[serde(skip)]
    pub(crate) profile_index: usize,
}

/// One root and what removing it frees. Kept small (a million and a half
/// of them on a Hydra): what only the rows shown have is boxed, and the
/// strings are boxed to their length.
#[derive(Debug, Clone, Serialize)]
pub struct Root {
    /// What kind of root.
    pub kind: RootKind,
    /// Where it is: the link the collector registers (for an indirect
    /// root the link `auto/` points at, `~/proj/result`), the file, the
    /// process (`/proc/PID`) or the temporary roots file.
    pub location: Box<Path>,
    /// The `gcroots` entry that leads to it, for an indirect root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<Box<Path>>,
    /// The store path it keeps (one string shared by its roots: a million
    /// roots keep far fewer paths).
    pub store_path: Arc<str>,
    /// What the link says, when that is more than the store path (a
    /// file inside it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_target: Option<Box<str>>,
    /// Seconds since the link was made (its `lstat` mtime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_secs: Option<i64>,
    /// For a generation: its profile and number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<Box<Generation>>,
    /// For run-time and temporary roots: the processes and what holds the
    /// path.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub held: Option<Box<Held>>,
    /// How many roots keep the same store path (this one included).
    pub same_path_roots: u32,
    /// What removing this root alone frees (nothing while another root
    /// keeps the same path).
    pub freed: Figure,
    /// What removing every root of its store path frees (the same as
    /// `freed` when it is the only one).
    pub freed_with_same_path: Figure,
    /// Its store path's closure (`nix path-info -rS`), when computed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closure: Option<Box<Figure>>,
    /// The command that removes it (a run-time or temporary root has
    /// none: it goes when its process ends), when computed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Box<str>>,
    /// With `list_paths`: the paths removing it frees.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub freed_paths: Box<[String]>,
}

/// What holds a run-time or temporary root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Held {
    /// The processes (pid, name).
    pub processes: Vec<(u32, String)>,
    /// For a run-time root: what holds the path (`/proc/PID/fd/3`,
    /// `/proc/PID/environ` …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held_by: Vec<String>,
}

/// A store path several roots keep: none frees anything alone, all of
/// them together free `freed`.
#[derive(Debug, Clone, Serialize)]
pub struct SharedPath {
    /// The store path.
    pub store_path: Arc<str>,
    /// Its roots, as indices into [`RootsAnalysis::roots`] (those shown).
    pub roots: Vec<usize>,
    /// How many roots keep it in all (more than `roots` when the
    /// locations asked leave some out).
    pub all_roots: u32,
    /// What removing every one of them frees.
    pub freed: Figure,
    /// The commands that remove them all, when they are all shown and the
    /// path is among those detailed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
}

/// An entry of the root trees that keeps nothing alive.
#[derive(Debug, Clone, Serialize)]
pub struct Stale {
    /// The link.
    pub location: PathBuf,
    /// The `gcroots` entry that leads to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<PathBuf>,
    /// Why it roots nothing.
    pub reason: String,
    /// The command that removes it, when it is worth removing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// Several roots removed together.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// What the group is.
    pub kind: GroupKind,
    /// The group in words.
    pub title: String,
    /// Its roots, as indices into [`RootsAnalysis::roots`].
    pub members: Vec<usize>,
    /// What removing them all frees (not the sum of theirs: what they
    /// share counts once, and what another root keeps not at all).
    pub freed: Figure,
    /// The commands that remove them (Nix's own where it has one), each
    /// command line short enough to run.
    pub commands: Vec<String>,
    /// Links the commands leave out: a text report names the first
    /// [`TEXT_LINKS`].
    #[serde(skip_serializing_if = "is_zero")]
    pub left_out: usize,
    /// Whether the commands run the collector too
    /// (`nix-collect-garbage`), which also deletes what is dead now.
    pub collects: bool,
    /// With `list_paths`: the paths it frees.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub freed_paths: Vec<String>,
}

/// What the collector deletes now, no root removed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Dead {
    /// The valid paths no root reaches.
    pub figure: Figure,
    /// Entries of the store directory that are no valid path (a killed
    /// build's output, a `.lock`), which the collector deletes too.
    pub invalid_entries: Vec<String>,
    /// `.links` entries no path uses any more, which the collector
    /// deletes: their count (their bytes are in `figure.disk_bytes`).
    pub unused_links: usize,
    /// With `list_paths`: the dead valid paths.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

/// One root that keeps the path `why --roots` asks about.
#[derive(Debug, Clone, Serialize)]
pub struct WhyRoot {
    /// The root, as an index into [`RootsAnalysis::roots`].
    pub root: usize,
    /// A shortest chain from the root's store path to the path, each step
    /// with how it is held (the first one the root's own).
    pub chain: Vec<(String, EdgeKind)>,
}

/// Which roots keep a path, and how.
#[derive(Debug, Clone, Serialize)]
pub struct WhyRoots {
    /// The path asked about.
    pub path: String,
    /// The roots that reach it, nearest first.
    pub roots: Vec<WhyRoot>,
    /// The group of those of them that can be removed, as an index into
    /// [`RootsAnalysis::groups`]: what removing them all frees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<usize>,
    /// Whether removing that group frees the path (no run-time or
    /// temporary root keeps it too).
    pub freed_by_group: bool,
}

/// The store's totals.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Totals {
    /// Every valid path.
    pub valid: Figure,
    /// Those some root reaches.
    pub live: Figure,
}

/// Everything [`analyse`] finds.
#[derive(Debug, Clone, Serialize)]
pub struct RootsAnalysis {
    /// The store, in words.
    pub store: String,
    /// `keep-outputs` as applied.
    pub keep_outputs: bool,
    /// `keep-derivations` as applied.
    pub keep_derivations: bool,
    /// The store's totals.
    pub totals: Totals,
    /// Every root (or those under the locations asked), most freed first.
    pub roots: Vec<Root>,
    /// How many roots there are in all (more than `roots` when the
    /// locations asked leave some out).
    pub all_roots: usize,
    /// Store paths several roots keep, whose removing them all frees
    /// something, most freed first.
    pub shared: Vec<SharedPath>,
    /// Entries of the root trees that keep nothing alive.
    pub stale: Vec<Stale>,
    /// Entries of the root trees that could not be read, with the error
    /// (the collector skips them as well).
    pub unreadable: Vec<(PathBuf, String)>,
    /// Groups of roots removed together.
    pub groups: Vec<Group>,
    /// What is dead now.
    pub dead: Dead,
    /// The command that runs the collector on this store.
    pub gc_command: String,
    /// The answer to `why --roots`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<WhyRoots>,
    /// What could not be read or may make a figure differ from the
    /// collector's, in words.
    pub warnings: Vec<String>,
}

/// The question of `roots`, answered over `store` (read-only).
pub fn analyse(store: &LocalStore, req: &RootsRequest) -> Result<RootsAnalysis> {
    analyse_with(store, req).map(|(a, _)| a)
}

/// [`analyse`], and the [`Collector`] that answers further questions
/// about the same roots (what marking several frees together, for the
/// browser).
pub fn analyse_with(store: &LocalStore, req: &RootsRequest) -> Result<(RootsAnalysis, Collector)> {
    use nix_heft_store::source::PathMetadata;
    let root_dir = store.root().to_path_buf();
    let state = nix_heft_store::gc::state_dir(&root_dir);
    let real = nix_heft_store::gc::real_store_dir(&root_dir);
    let derivers = req.keep_outputs || req.keep_derivations;
    // The database on this thread; the root trees, /proc and the store
    // directory on the others.
    let (whole, (found, entries)) = rayon::join(
        || nix_heft_store::gc::whole::read(store, derivers),
        || {
            rayon::join(
                || nix_heft_store::gc::roots::find(&state, Look::default()),
                || nix_heft_store::gc::disk::entries(&real),
            )
        },
    );
    let WholeStore {
        paths,
        nar_sizes,
        ref_offsets,
        refs,
        drv_outputs,
        output_derivers,
        index,
    } = whole?;
    let entries = entries.map_err(io_err(&real))?;
    let g = Graph::from_adjacency(paths, nar_sizes, ref_offsets, refs, Vec::new())?;
    let why =
        match &req.why {
            None => None,
            Some(p) => Some(index.find(g.paths(), p).ok_or_else(|| {
                nix_heft_store::Error::MissingPath {
                    path: p.clone(),
                    store: store.describe(),
                }
            })?),
        };
    let found::Assembled {
        mut roots,
        stale,
        unreadable,
        temp_hashes,
        profiles,
        mut warnings,
    } = found::assemble(found, &g, &index, req.now);
    release_freed_memory();
    let keep_outputs = if req.keep_outputs {
        drv_outputs
    } else {
        Vec::new()
    };
    let keep_derivations = if req.keep_derivations {
        output_derivers
    } else {
        Vec::new()
    };
    let mut c = Collector::new(g, keep_outputs, keep_derivations, &roots, profiles, req);

    // The store directory: valid paths missing on disk, and entries that
    // are no valid path (dead unless a temporary root names their hash).
    let n = c.g.len();
    let entry_node: Vec<Option<NodeId>> = entries
        .iter()
        // By base name: no path written out for each entry (a name that is
        // no UTF-8 is no valid path's).
        .map(|e| e.to_str().and_then(|b| index.find_base(c.g.paths(), b)))
        .collect();
    drop(index);
    let on_disk = entry_node.iter().flatten().count();
    if on_disk < n {
        warnings.push(format!(
            "{} valid path(s) are missing from {} (a damaged store: nix-store --verify \
             --repair); the collector lists such a path among the dead only when it refers \
             to one it deletes, so its figures may differ by them",
            n - on_disk,
            real.display()
        ));
    }
    let dead_entry: Vec<bool> = entries
        .iter()
        .zip(&entry_node)
        .map(|(e, v)| v.is_none() && !found::temp_rooted(e, &temp_hashes))
        .collect();
    if req.disk {
        let usage = nix_heft_store::gc::disk::disk_use(&real, &entries);
        for p in usage.problems.iter().take(20) {
            warnings.push(format!("on disk: {p}"));
        }
        c.weigh_disk(&entry_node, &dead_entry, usage);
        if let Some(d) = &c.disk
            && d.outside > 0
        {
            warnings.push(format!(
                "{} on disk are hard-linked from outside the store's paths and .links, and \
                 are freed by no deletion",
                nix_heft_types::units::iec(d.outside)
            ));
        }
    }

    // Every root's figures, the locations asked, and the order: most
    // freed first.
    c.figure_roots(&mut roots);
    let all_roots = roots.len();
    if !req.under.is_empty() {
        roots.retain(|r| req.under.iter().any(|u| r.root.location.starts_with(u)));
    }
    let mut roots = most_freed_first(roots);
    c.index_roots(&roots);
    if req.list_paths {
        c.list_freed(&mut roots);
    }
    let upto = match req.detail {
        Listing::All => roots.len(),
        Listing::Top(k) => k.min(roots.len()),
    };
    let ctx = c.context();
    let mut defs = groups::define(&ctx, &roots, req);
    let why = why.map(|target| c.why(&roots, target, &mut defs));
    // The rows shown, and the roots `why` names.
    let mut detailed: Vec<usize> = (0..upto).collect();
    if let Some(w) = &why {
        detailed.extend(w.roots.iter().map(|r| r.root));
    }
    c.detail(&mut roots, &detailed);
    let members: Vec<&[usize]> = defs.iter().map(|d| d.members.as_slice()).collect();
    let figures = c.figures(&members, req.list_paths);
    let groups: Vec<Group> = defs
        .into_iter()
        .zip(figures)
        .map(|(d, (freed, freed_paths))| Group {
            kind: d.kind,
            title: d.title,
            members: d.members,
            freed,
            commands: d.commands,
            left_out: d.left_out,
            collects: d.collects,
            freed_paths,
        })
        .collect();
    let shared = shared_paths(&c, &roots, upto);
    let (totals, mut dead) = c.totals(req.list_paths);
    dead.invalid_entries = entries
        .iter()
        .zip(&dead_entry)
        .filter(|(_, d)| **d)
        .map(|(e, _)| {
            format!(
                "{}/{}",
                nix_heft_store::source::DEFAULT_STORE_DIR,
                e.to_string_lossy()
            )
        })
        .collect();
    let analysis = RootsAnalysis {
        store: store.describe(),
        keep_outputs: req.keep_outputs,
        keep_derivations: req.keep_derivations,
        totals,
        roots: roots.into_iter().map(|r| r.root).collect(),
        all_roots,
        shared,
        stale,
        unreadable,
        groups,
        dead,
        gc_command: groups::gc_command(&c.context(), &req.options),
        why,
        warnings,
    };
    Ok((analysis, c))
}

/// Hands the pages of what was freed back to the system. Finding a
/// million roots leaves the walk's strings (names, targets, paths of
/// indirect links) freed between the locations kept, which glibc's
/// allocator keeps as resident memory until the process ends: on 1.5
/// million roots, 88 MB of the peak (1.09 GB against 1.01 GB;
/// bench/roots.sh). `malloc_trim` gives back every whole free page, not
/// only the heap's top; other allocators return theirs themselves.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases memory the allocator holds free;
    // it touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// `roots` most freed first, then most freed with the other roots of
/// their path, then by location (as bytes): their keys sorted with their
/// indices, then the roots put in that order in place, cycle by cycle (a second vector of a million
/// and a half roots would double the analysis's peak memory).
fn most_freed_first(mut roots: Vec<found::Found>) -> Vec<found::Found> {
    use rayon::prelude::*;
    use std::os::unix::ffi::OsStrExt;
    // The keys side by side, not reached through each root: a million and
    // a half roots sorted with their locations compared (most free
    // nothing alone) are bound by cache misses.
    let mut keyed: Vec<(u64, u64, &[u8], u32)> = roots
        .par_iter()
        .enumerate()
        .map(|(i, f)| {
            let r = &f.root;
            (
                u64::MAX - r.freed.nar_bytes,
                u64::MAX - r.freed_with_same_path.nar_bytes,
                r.location.as_os_str().as_bytes(),
                i as u32,
            )
        })
        .collect();
    keyed.par_sort_unstable();
    let order: Vec<u32> = keyed.into_iter().map(|k| k.3).collect();
    permute(&mut roots, &order);
    roots
}

/// Puts `v` in `order` in place: position `k` takes what was at
/// `order[k]` (a permutation of `v`'s positions), one swap an element
/// along each cycle.
fn permute<T>(v: &mut [T], order: &[u32]) {
    let mut placed = vec![false; v.len()];
    for start in 0..v.len() {
        if placed[start] {
            continue;
        }
        let mut at = start;
        loop {
            placed[at] = true;
            let from = order[at] as usize;
            if from == start {
                break;
            }
            v.swap(at, from);
            at = from;
        }
    }
}

/// Store paths of `vs`, sorted.
fn names(g: &Graph, vs: &[NodeId]) -> Vec<String> {
    let mut out: Vec<String> = vs.iter().map(|&v| g.path(v).to_string()).collect();
    out.sort_unstable();
    out
}

/// The closure of the path of each of `roots` at `which`.
fn closures(g: &Graph, roots: &mut [found::Found], which: &[usize]) {
    let mut want: Vec<NodeId> = which.iter().map(|&i| roots[i].node).collect();
    want.sort_unstable();
    want.dedup();
    let got: HashMap<NodeId, (u64, u64)> =
        want.iter().copied().zip(closures_of(g, &want)).collect();
    for &i in which {
        let (paths, nar_bytes) = got[&roots[i].node];
        roots[i].root.closure = Some(Box::new(Figure {
            paths,
            nar_bytes,
            disk_bytes: None,
        }));
    }
}

/// The store paths several of `roots` keep and that removing all of them
/// frees something, most freed first; the first `detailed` with their
/// commands.
fn shared_paths(c: &Collector, roots: &[found::Found], detailed: usize) -> Vec<SharedPath> {
    let mut at: HashMap<NodeId, usize> = HashMap::new();
    let mut out: Vec<SharedPath> = Vec::new();
    for (i, r) in roots.iter().enumerate() {
        let root = &r.root;
        if root.same_path_roots < 2 || root.freed_with_same_path.paths == 0 {
            continue;
        }
        match at.get(&r.node) {
            Some(&k) => out[k].roots.push(i),
            None => {
                at.insert(r.node, out.len());
                out.push(SharedPath {
                    store_path: root.store_path.clone(),
                    roots: vec![i],
                    all_roots: root.same_path_roots,
                    freed: root.freed_with_same_path,
                    commands: Vec::new(),
                });
            }
        }
    }
    out.sort_by(|a, b| {
        b.freed
            .nar_bytes
            .cmp(&a.freed.nar_bytes)
            .then_with(|| a.store_path.cmp(&b.store_path))
    });
    for s in out.iter_mut().take(detailed) {
        if s.roots.len() == s.all_roots as usize {
            let rs: Vec<&Root> = s.roots.iter().map(|&i| &roots[i].root).collect();
            s.commands = groups::remove_commands(&c.context(), &rs).0;
        }
    }
    out
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::permute;

    #[test]
    fn permute_puts_each_element_where_the_order_says() {
        // Cycles of one, two and three, and a shuffled longer one.
        let cases: [&[u32]; 4] = [&[0], &[1, 0], &[2, 0, 1, 3], &[4, 2, 5, 0, 1, 3, 7, 6]];
        for order in cases {
            let mut v: Vec<u32> = (0..order.len() as u32).map(|i| i * 10).collect();
            let want: Vec<u32> = order.iter().map(|&i| i * 10).collect();
            permute(&mut v, order);
            assert_eq!(v, want, "order {order:?}");
        }
    }
}
