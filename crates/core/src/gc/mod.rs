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

mod disk;
mod groups;
pub mod liveness;

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use serde::Serialize;

use crate::error::{Error, Result, io_err};
use crate::graph::{Dominators, Graph, NodeId, closures_of};
use crate::source::LocalStore;
use nix_heft_store::gc::roots::{self as found_roots, Look, StaleReason, Tree};
use nix_heft_store::gc::{self as store_gc, WholeStore};

pub use groups::GroupKind;
pub use liveness::EdgeKind;

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
    /// Which roots get their closure computed.
    pub closures: Closures,
    /// List the paths each root and group frees, and the dead ones.
    pub list_paths: bool,
    /// The path `why --roots` asks about.
    pub why: Option<String>,
    /// Now, in seconds since the epoch: ages and the "older than" groups.
    pub now: i64,
}

/// Which roots' closures to compute (each costs a walk of the closure).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Closures {
    /// Every root's.
    #[default]
    All,
    /// The first `n` roots', in the order of what they free.
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
}

/// One root and what removing it frees.
#[derive(Debug, Clone, Serialize)]
pub struct Root {
    /// What kind of root.
    pub kind: RootKind,
    /// Where it is: the link the collector registers (for an indirect
    /// root the link `auto/` points at, `~/proj/result`), the file, the
    /// process (`/proc/PID`) or the temporary roots file.
    pub location: PathBuf,
    /// The `gcroots` entry that leads to it, for an indirect root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<PathBuf>,
    /// The store path it keeps.
    pub store_path: String,
    /// What the link says, when that is more than the store path (a
    /// file inside it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_target: Option<String>,
    /// Seconds since the link was made (its `lstat` mtime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_secs: Option<i64>,
    /// For a generation: its profile and number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<Generation>,
    /// For run-time and temporary roots: the processes (pid, name).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<(u32, String)>,
    /// For run-time roots: what holds the path (`/proc/PID/fd/3` …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held_by: Vec<String>,
    /// How many roots keep the same store path (this one included).
    pub same_path_roots: usize,
    /// What removing this root alone frees (nothing while another root
    /// keeps the same path).
    pub freed: Figure,
    /// What removing every root of its store path frees (the same as
    /// `freed` when it is the only one).
    pub freed_with_same_path: Figure,
    /// Its store path's closure (`nix path-info -rS`), when computed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closure: Option<Figure>,
    /// The command that removes it (a run-time or temporary root has
    /// none: it goes when its process ends).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// With `list_paths`: the paths removing it frees.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub freed_paths: Vec<String>,
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
    /// The commands that remove them (Nix's own where it has one).
    pub commands: Vec<String>,
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

/// A root before its figures: where it is and which path it holds.
struct Found {
    root: Root,
    node: NodeId,
    removable: bool,
    /// The profile index and number of a generation.
    generation: Option<(usize, u64)>,
    mtime: Option<i64>,
}

/// The question of `roots`, answered over `store` (read-only).
pub fn analyse(store: &LocalStore, req: &RootsRequest) -> Result<RootsAnalysis> {
    use crate::source::PathMetadata;
    let root_dir = store.root().to_path_buf();
    let state = store_gc::state_dir(&root_dir);
    let real = store_gc::real_store_dir(&root_dir);
    let derivers = req.keep_outputs || req.keep_derivations;
    // The database on this thread; the root trees, /proc and the store
    // directory on the others.
    let (whole, (found, entries)) = rayon::join(
        || store.whole_store(derivers),
        || {
            rayon::join(
                || found_roots::find(&state, Look::default()),
                || store_gc::disk::entries(&real),
            )
        },
    );
    let whole = whole?;
    let entries = entries.map_err(io_err(&real))?;
    let WholeStore {
        paths,
        nar_sizes,
        ref_offsets,
        refs,
        drv_outputs,
        output_derivers,
        index,
    } = whole;
    let g = Graph::from_adjacency(paths, nar_sizes, ref_offsets, refs, Vec::new())?;
    let n = g.len();
    let mut warnings: Vec<String> = found.warnings.clone();
    if found.unreadable_processes > 0 {
        warnings.push(format!(
            "the open files of {} process(es) could not be read (permission denied); the \
             collector skips them too, unless it runs with more rights",
            found.unreadable_processes
        ));
    }

    // Every root, with the node of the path it keeps.
    let mut roots: Vec<Found> = Vec::new();
    let mut stale: Vec<Stale> = Vec::new();
    for l in &found.links {
        let Some(node) = index.find(g.paths(), l.store_path.as_str()) else {
            stale.push(Stale {
                command: Some(groups::rm_command(std::slice::from_ref(&l.location))),
                location: l.location.clone(),
                via: l.via.clone(),
                reason: format!(
                    "points to {}, which the store does not hold (the collector skips it)",
                    l.store_path
                ),
            });
            continue;
        };
        let generation = l.generation.map(|(p, number)| {
            let profile = &found.profiles[p];
            Generation {
                profile: profile.path.clone(),
                number,
                current: profile.current == Some(number),
            }
        });
        let kind = if generation.is_some() {
            RootKind::Generation
        } else if l.target.is_none() {
            RootKind::File
        } else {
            RootKind::Link
        };
        let link_target = l
            .target
            .as_ref()
            .map(|t| String::from_utf8_lossy(t.as_bytes()).into_owned())
            .filter(|t| t != l.store_path.as_str());
        roots.push(Found {
            root: Root {
                kind,
                location: l.location.clone(),
                via: l.via.clone(),
                store_path: l.store_path.to_string(),
                link_target,
                age_secs: l.mtime.map(|m| req.now - m),
                generation,
                processes: Vec::new(),
                held_by: Vec::new(),
                same_path_roots: 0,
                freed: Figure::default(),
                freed_with_same_path: Figure::default(),
                closure: None,
                command: None,
                freed_paths: Vec::new(),
            },
            node,
            removable: l.tree == Tree::GcRoots || l.tree == Tree::Profiles,
            generation: l.generation,
            mtime: l.mtime,
        });
    }
    for s in &found.stale {
        let reason = match &s.reason {
            StaleReason::TargetGone => {
                "the link it points to is gone (the collector deletes this entry)".to_string()
            }
            StaleReason::TargetNotALink => {
                "no longer a symlink (the collector ignores it)".to_string()
            }
            StaleReason::TargetOutsideStore(t) => format!(
                "points outside the store, to {} (the collector ignores it)",
                String::from_utf8_lossy(t.as_bytes())
            ),
            StaleReason::NotAStorePath(t) => format!(
                "points to {}, which is no store path (the collector ignores it)",
                String::from_utf8_lossy(t.as_bytes())
            ),
        };
        stale.push(Stale {
            command: s
                .via
                .as_ref()
                .map(|v| groups::rm_command(std::slice::from_ref(v))),
            location: s.location.clone(),
            via: s.via.clone(),
            reason,
        });
    }
    for r in &found.runtime {
        let Some(node) = index.find(g.paths(), r.store_path.as_str()) else {
            continue;
        };
        let location = match r.processes.first() {
            Some((pid, _)) => PathBuf::from(format!("/proc/{pid}")),
            None => PathBuf::from(r.holders.first().map_or("/proc", String::as_str)),
        };
        roots.push(Found {
            root: Root {
                kind: RootKind::Runtime,
                location,
                via: None,
                store_path: r.store_path.to_string(),
                link_target: None,
                age_secs: None,
                generation: None,
                processes: r.processes.clone(),
                held_by: r.holders.clone(),
                same_path_roots: 0,
                freed: Figure::default(),
                freed_with_same_path: Figure::default(),
                closure: None,
                command: None,
                freed_paths: Vec::new(),
            },
            node,
            removable: false,
            generation: None,
            mtime: None,
        });
    }
    let mut temp_hashes: std::collections::HashSet<String> = Default::default();
    for t in &found.temp {
        let mut seen: Vec<NodeId> = Vec::new();
        for p in &t.paths {
            temp_hashes.insert(p.hash_part().to_string());
            // By hash part, as the collector matches them.
            let Some(node) = index.find_hash(p.hash_part()) else {
                continue;
            };
            if seen.contains(&node) {
                continue;
            }
            seen.push(node);
            roots.push(Found {
                root: Root {
                    kind: RootKind::Temporary,
                    location: t.file.clone(),
                    via: None,
                    store_path: g.path(node).to_string(),
                    link_target: None,
                    age_secs: None,
                    generation: None,
                    processes: vec![(t.pid, t.comm.clone().unwrap_or_default())],
                    held_by: Vec::new(),
                    same_path_roots: 0,
                    freed: Figure::default(),
                    freed_with_same_path: Figure::default(),
                    closure: None,
                    command: None,
                    freed_paths: Vec::new(),
                },
                node,
                removable: false,
                generation: None,
                mtime: None,
            });
        }
    }

    // One root node per path some root keeps.
    let mut targets: Vec<NodeId> = roots.iter().map(|r| r.node).collect();
    targets.sort_unstable();
    targets.dedup();
    let mut target_of = vec![u32::MAX; n];
    for (k, &t) in targets.iter().enumerate() {
        target_of[t as usize] = k as u32;
    }
    let mut holders: Vec<Vec<usize>> = vec![Vec::new(); targets.len()];
    for (i, r) in roots.iter().enumerate() {
        holders[target_of[r.node as usize] as usize].push(i);
    }
    let keep_outputs = if req.keep_outputs {
        drv_outputs.clone()
    } else {
        Vec::new()
    };
    let keep_derivations = if req.keep_derivations {
        output_derivers.clone()
    } else {
        Vec::new()
    };
    drop((drv_outputs, output_derivers));
    let live = liveness::Liveness::new(&g, keep_outputs, keep_derivations, targets.clone());
    let dom = Dominators::compute_flow(&live);
    let nodes = n + targets.len();
    let count_w: Vec<u64> = (0..nodes).map(|v| u64::from(v < n)).collect();
    let nar_w: Vec<u64> = (0..nodes)
        .map(|v| if v < n { g.nar_size(v as NodeId) } else { 0 })
        .collect();
    let counts = dom.subtree_sums(count_w);
    let bytes = dom.subtree_sums(nar_w);

    // The store directory: valid paths missing on disk, entries that are
    // no valid path (dead unless a temporary root names their hash).
    let entry_node: Vec<Option<NodeId>> = entries
        .iter()
        .map(|e| {
            let s = format!(
                "{}/{}",
                crate::source::DEFAULT_STORE_DIR,
                e.to_string_lossy()
            );
            index.find(g.paths(), &s)
        })
        .collect();
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
    let kept_entry = |name: &std::ffi::OsStr| {
        name.as_bytes()
            .get(..32)
            .and_then(|h| std::str::from_utf8(h).ok())
            .is_some_and(|h| temp_hashes.contains(h))
    };
    let invalid_entries: Vec<usize> = (0..entries.len())
        .filter(|&e| entry_node[e].is_none() && !kept_entry(&entries[e]))
        .collect();

    // Bytes on disk.
    let disk = if req.disk {
        let usage = store_gc::disk::disk_use(&real, &entries);
        for p in usage.problems.iter().take(20) {
            warnings.push(format!("on disk: {p}"));
        }
        let dead_entry: Vec<bool> = (0..entries.len())
            .map(|e| entry_node[e].is_none() && !kept_entry(&entries[e]))
            .collect();
        Some(disk::attribute(
            &dom,
            nodes,
            &entry_node,
            &dead_entry,
            usage,
        ))
    } else {
        None
    };
    let disk_sub = disk.as_ref().map(|d| dom.subtree_sums(d.node.clone()));

    // Per root.
    let fig = |v: NodeId| Figure {
        paths: counts[v as usize],
        nar_bytes: bytes[v as usize],
        disk_bytes: disk_sub.as_ref().map(|d| d[v as usize]),
    };
    for (k, hs) in holders.iter().enumerate() {
        let all = fig(live.root_node(k));
        for &i in hs {
            let r = &mut roots[i].root;
            r.same_path_roots = hs.len();
            r.freed_with_same_path = all;
            r.freed = if hs.len() == 1 {
                all
            } else {
                Figure {
                    disk_bytes: all.disk_bytes.map(|_| 0),
                    ..Figure::default()
                }
            };
        }
    }
    let all_roots = roots.len();
    // The locations asked, and the order: most freed first.
    if !req.under.is_empty() {
        roots.retain(|r| req.under.iter().any(|u| r.root.location.starts_with(u)));
    }
    roots.sort_by(|a, b| {
        b.root
            .freed
            .nar_bytes
            .cmp(&a.root.freed.nar_bytes)
            .then_with(|| {
                b.root
                    .freed_with_same_path
                    .nar_bytes
                    .cmp(&a.root.freed_with_same_path.nar_bytes)
            })
            .then_with(|| a.root.location.cmp(&b.root.location))
    });

    // Paths each root node frees alone, by the top of their dominator
    // chain.
    let top = tops(&dom, nodes);
    if req.list_paths {
        let mut by_top: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
        for v in 0..n as NodeId {
            if dom.is_reached(v) && top[v as usize] as usize >= n {
                by_top.entry(top[v as usize]).or_default().push(v);
            }
        }
        for r in &mut roots {
            if r.root.same_path_roots == 1 {
                let k = target_of[r.node as usize] as usize;
                r.root.freed_paths = by_top
                    .get(&live.root_node(k))
                    .map(|vs| names(&g, vs))
                    .unwrap_or_default();
            }
        }
    }

    // Closures.
    let want: Vec<NodeId> = {
        let upto = match req.closures {
            Closures::All => roots.len(),
            Closures::Top(k) => k.min(roots.len()),
        };
        let mut t: Vec<NodeId> = roots[..upto].iter().map(|r| r.node).collect();
        t.sort_unstable();
        t.dedup();
        t
    };
    let closures: HashMap<NodeId, (u64, u64)> =
        want.iter().copied().zip(closures_of(&g, &want)).collect();
    for r in &mut roots {
        if let Some(&(c, b)) = closures.get(&r.node) {
            r.root.closure = Some(Figure {
                paths: c,
                nar_bytes: b,
                disk_bytes: None,
            });
        }
    }

    // Commands, groups, and why.
    let ctx = groups::Context {
        store_arg: req.store_arg.as_deref(),
        profiles: &found.profiles,
    };
    for r in &mut roots {
        if r.removable {
            r.root.command = groups::remove_commands(&ctx, &[&r.root]).into_iter().next();
        }
    }
    let view: Vec<groups::Member> = roots
        .iter()
        .map(|r| groups::Member {
            root: &r.root,
            removable: r.removable,
            generation: r.generation,
            mtime: r.mtime,
        })
        .collect();
    let mut defs = groups::define(&ctx, &view, req);
    let why = match &req.why {
        None => None,
        Some(p) => {
            let Some(target) = index.find(g.paths(), p) else {
                return Err(Error::MissingPath {
                    path: p.clone(),
                    store: store.describe(),
                });
            };
            Some(why_roots(&g, &live, &roots, target, &mut defs, &ctx, &view))
        }
    };
    drop(view);
    let group_figures = group_figures(
        &live,
        &g,
        &roots,
        &holders,
        &target_of,
        &defs,
        disk.as_ref(),
        req.list_paths,
    );
    let groups: Vec<Group> = defs
        .into_iter()
        .zip(group_figures)
        .map(|(d, (freed, freed_paths))| Group {
            kind: d.kind,
            title: d.title,
            members: d.members,
            freed,
            commands: d.commands,
            collects: d.collects,
            freed_paths,
        })
        .collect();

    // What is dead now, and the totals.
    let mut dead = Dead::default();
    let mut totals = Totals::default();
    for v in 0..n as NodeId {
        let s = g.nar_size(v);
        totals.valid.paths += 1;
        totals.valid.nar_bytes += s;
        if dom.is_reached(v) {
            totals.live.paths += 1;
            totals.live.nar_bytes += s;
        } else {
            dead.figure.paths += 1;
            dead.figure.nar_bytes += s;
            if req.list_paths {
                dead.paths.push(g.path(v).to_string());
            }
        }
    }
    dead.figure.disk_bytes = disk.as_ref().map(|d| d.dead);
    dead.unused_links = disk.as_ref().map_or(0, |d| d.unused_links);
    dead.invalid_entries = invalid_entries
        .iter()
        .map(|&e| {
            format!(
                "{}/{}",
                crate::source::DEFAULT_STORE_DIR,
                entries[e].to_string_lossy()
            )
        })
        .collect();
    if let Some(d) = &disk {
        totals.valid.disk_bytes = Some(d.total);
        totals.live.disk_bytes = Some(d.total.saturating_sub(d.dead));
        if d.outside > 0 {
            warnings.push(format!(
                "{} on disk are hard-linked from outside the store's paths and .links, and are \
                 freed by no deletion",
                crate::units::iec(d.outside)
            ));
        }
    }
    let gc_command = groups::gc_command(&ctx, &req.options);
    Ok(RootsAnalysis {
        store: store.describe(),
        keep_outputs: req.keep_outputs,
        keep_derivations: req.keep_derivations,
        totals,
        roots: roots.into_iter().map(|r| r.root).collect(),
        all_roots,
        stale,
        unreadable: found.unreadable.clone(),
        groups,
        dead,
        gc_command,
        why,
        warnings,
    })
}

/// Store paths of `vs`, sorted.
fn names(g: &Graph, vs: &[NodeId]) -> Vec<String> {
    let mut out: Vec<String> = vs.iter().map(|&v| g.path(v).to_string()).collect();
    out.sort_unstable();
    out
}

/// For every reached node, the top of its dominator chain (the node just
/// below the virtual root: a root node, or a path several keep).
fn tops(dom: &Dominators, nodes: usize) -> Vec<NodeId> {
    let mut top = vec![u32::MAX; nodes];
    for &v in dom.postorder().iter().rev() {
        top[v as usize] = match dom.idom(v) {
            None => v,
            Some(d) => top[d as usize],
        };
    }
    top
}

/// The roots that keep `target`, each with a shortest chain, and the group
/// of the removable ones (added to `defs`).
#[allow(clippy::too_many_arguments)]
fn why_roots(
    g: &Graph,
    live: &liveness::Liveness,
    roots: &[Found],
    target: NodeId,
    defs: &mut Vec<groups::Def>,
    ctx: &groups::Context,
    view: &[groups::Member],
) -> WhyRoots {
    let next = live.toward(target);
    // Root nodes that reach it, nearest first.
    let mut reaching: Vec<(usize, Vec<(String, EdgeKind)>)> = Vec::new();
    for k in 0..live.targets.len() {
        let rn = live.root_node(k);
        if next[rn as usize] == u32::MAX {
            continue;
        }
        let mut chain = Vec::new();
        let mut v = rn;
        while v != target {
            let w = next[v as usize];
            chain.push((g.path(w).to_string(), live.edge_kind(g, v, w)));
            v = w;
        }
        reaching.push((k, chain));
    }
    reaching.sort_by_key(|(_, c)| c.len());
    let mut out = Vec::new();
    let mut members = Vec::new();
    let mut all_removable = true;
    for (k, chain) in reaching {
        let node = live.targets[k];
        for (i, r) in roots.iter().enumerate() {
            if r.node == node {
                out.push(WhyRoot {
                    root: i,
                    chain: chain.clone(),
                });
                if r.removable {
                    members.push(i);
                } else {
                    all_removable = false;
                }
            }
        }
    }
    let group = (!members.is_empty()).then(|| {
        defs.push(groups::keeping(
            ctx,
            view,
            &members,
            g.path(target).as_str(),
        ));
        defs.len() - 1
    });
    WhyRoots {
        path: g.path(target).to_string(),
        roots: out,
        freed_by_group: group.is_some() && all_removable,
        group,
    }
}

/// What each group frees: root nodes all of whose roots are in it go, 64
/// groups a pass.
#[allow(clippy::too_many_arguments)]
fn group_figures(
    live: &liveness::Liveness,
    g: &Graph,
    roots: &[Found],
    holders: &[Vec<usize>],
    target_of: &[u32],
    defs: &[groups::Def],
    disk: Option<&disk::Weights>,
    list_paths: bool,
) -> Vec<(Figure, Vec<String>)> {
    let n = g.len();
    let mut out: Vec<(Figure, Vec<String>)> = Vec::with_capacity(defs.len());
    if defs.is_empty() {
        return out;
    }
    let (order, comp) = live.components();
    for batch in defs.chunks(64) {
        let mut removed = vec![0u64; live.targets.len()];
        for (i, d) in batch.iter().enumerate() {
            // Members holding each root node; the node goes when all of
            // its roots are members.
            let mut count: HashMap<u32, usize> = HashMap::new();
            for &m in &d.members {
                *count.entry(target_of[roots[m].node as usize]).or_default() += 1;
            }
            for (k, c) in count {
                if c == holders[k as usize].len() {
                    removed[k as usize] |= 1 << i;
                }
            }
        }
        let freed = live.freed_by_groups(&order, &comp, &removed);
        let mut figs = vec![
            Figure {
                disk_bytes: disk.map(|_| 0),
                ..Figure::default()
            };
            batch.len()
        ];
        let mut lists: Vec<Vec<NodeId>> = vec![Vec::new(); batch.len()];
        for v in 0..n {
            let mut bits = freed[v];
            while bits != 0 {
                let i = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                figs[i].paths += 1;
                figs[i].nar_bytes += g.nar_size(v as NodeId);
                if let (Some(d), Some(b)) = (disk, figs[i].disk_bytes.as_mut()) {
                    *b += d.own[v];
                }
                if list_paths {
                    lists[i].push(v as NodeId);
                }
            }
        }
        if let Some(d) = disk {
            for (bytes, holders) in &d.shared {
                let mut all = u64::MAX;
                for &h in holders {
                    all &= freed[h as usize];
                }
                let mut bits = all;
                while bits != 0 {
                    let i = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    if let Some(b) = figs[i].disk_bytes.as_mut() {
                        *b += bytes;
                    }
                }
            }
        }
        for (f, l) in figs.into_iter().zip(lists) {
            out.push((f, names(g, &l)));
        }
    }
    out
}
