//! From what the store crate found (links, processes, temporary roots
//! files) to roots over the graph's paths: each with the path it keeps,
//! links to paths the store does not hold turned stale.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Arc;

use super::{Figure, Generation, Held, Root, RootKind, Stale, groups};
use nix_heft_graph::{Graph, NodeId};
use nix_heft_store::gc::PathIndex;
use nix_heft_store::gc::roots::{LinkRoot, Profile, StaleReason, Tree};

/// A root before its figures, with what the figures need.
pub(super) struct Found {
    pub root: Root,
    /// The path it keeps.
    pub node: NodeId,
    /// A link or file the user can remove (not a process).
    pub removable: bool,
}

/// Every root found, and what is not one.
pub(super) struct Assembled {
    pub roots: Vec<Found>,
    pub stale: Vec<Stale>,
    pub unreadable: Vec<(PathBuf, String)>,
    /// Hash parts temporary roots name: an entry of the store directory
    /// with one is alive, valid or not.
    pub temp_hashes: HashSet<String>,
    pub profiles: Vec<Profile>,
    pub warnings: Vec<String>,
}

/// Whether a temporary root names the hash part of the store directory's
/// entry `name` (a build's output being made, its `.lock`).
pub(super) fn temp_rooted(name: &OsStr, temp_hashes: &HashSet<String>) -> bool {
    name.as_bytes()
        .get(..32)
        .and_then(|h| std::str::from_utf8(h).ok())
        .is_some_and(|h| temp_hashes.contains(h))
}

fn root(kind: RootKind, location: PathBuf, store_path: Arc<str>) -> Root {
    Root {
        kind,
        location: location.into_boxed_path(),
        via: None,
        store_path,
        link_target: None,
        age_secs: None,
        generation: None,
        held: None,
        same_path_roots: 0,
        freed: Figure::default(),
        freed_with_same_path: Figure::default(),
        closure: None,
        command: None,
        freed_paths: Box::default(),
    }
}

fn stale_reason(r: &StaleReason) -> String {
    match r {
        StaleReason::TargetGone => {
            "the link it points to is gone (the collector deletes this entry)".to_string()
        }
        StaleReason::TargetNotALink => "no longer a symlink (the collector ignores it)".to_string(),
        StaleReason::TargetOutsideStore(t) => format!(
            "points outside the store, to {} (the collector ignores it)",
            String::from_utf8_lossy(t.as_bytes())
        ),
        StaleReason::NotAStorePath(t) => format!(
            "points to {}, which is no store path (the collector ignores it)",
            String::from_utf8_lossy(t.as_bytes())
        ),
    }
}

/// The root link `l` makes (`looked`: the path it keeps, and the text
/// wanted of its target), or the stale entry it is when the store does not
/// hold that path.
fn make_root(
    l: LinkRoot,
    looked: (Option<NodeId>, Option<Box<str>>),
    profiles: &[Profile],
    name: &(impl Fn(NodeId) -> Arc<str> + Sync),
    now: i64,
) -> Result<Found, Stale> {
    let (node, text) = looked;
    let Some(node) = node else {
        return Err(Stale {
            command: Some(groups::rm_command(std::slice::from_ref(&l.location))),
            reason: format!(
                "points to {}, which the store does not hold (the collector skips it)",
                text.as_deref().unwrap_or_default()
            ),
            location: l.location,
            via: l.via,
        });
    };
    let generation = l.generation.map(|(p, number)| {
        let profile = &profiles[p];
        Box::new(Generation {
            profile: profile.path.clone(),
            number,
            current: profile.current == Some(number),
            profile_index: p,
        })
    });
    let kind = if generation.is_some() {
        RootKind::Generation
    } else if l.file {
        RootKind::File
    } else {
        RootKind::Link
    };
    let mut r = root(kind, l.location, name(node));
    r.via = l.via.map(PathBuf::into_boxed_path);
    r.link_target = text;
    r.age_secs = l.mtime.map(|m| now - m);
    r.generation = generation;
    Ok(Found {
        root: r,
        node,
        removable: matches!(l.tree, Tree::GcRoots | Tree::Profiles),
    })
}

/// The roots `found` names over `g`'s paths (`index` their index), ages
/// counted from `now`. Consumes what was found, so that a million links
/// are not held twice.
pub(super) fn assemble(
    found: nix_heft_store::gc::roots::Found,
    g: &Graph,
    index: &PathIndex,
    now: i64,
) -> Assembled {
    let nix_heft_store::gc::roots::Found {
        mut links,
        targets,
        profiles,
        stale: found_stale,
        unreadable,
        runtime,
        unreadable_processes,
        temp,
        stale_temp: _,
        warnings: mut found_warnings,
    } = found;
    let mut warnings = Vec::new();
    warnings.append(&mut found_warnings);
    if unreadable_processes > 0 {
        warnings.push(format!(
            "the open files of {unreadable_processes} process(es) could not be read (permission \
             denied); the collector skips them too, unless it runs with more rights"
        ));
    }
    let mut roots: Vec<Found> = Vec::new();
    let mut stale: Vec<Stale> = Vec::new();
    // The lookups (a hash and a comparison each, cache misses mostly) on
    // every core, with the little text wanted of the targets (a file inside
    // the path, or the path of a stale link), so that the targets' buffer
    // goes before the roots are made.
    use rayon::prelude::*;
    let mut looked: Vec<(Option<NodeId>, Option<Box<str>>)> = links
        .par_iter()
        .with_min_len(4096)
        .map(|l| {
            let node = index.find_base(g.paths(), l.store_base(&targets));
            let text = match node {
                Some(_) => l
                    .inside(&targets)
                    .map(|t| Box::from(String::from_utf8_lossy(t).as_ref())),
                None => Some(Box::from(l.store_path(&targets).as_str())),
            };
            (node, text)
        })
        .collect();
    drop(targets);
    // One string per path kept, shared by its roots: made once, before the
    // roots are, so that they can be made on every core.
    let mut wanted = vec![false; g.len()];
    for (node, _) in &looked {
        if let Some(v) = node {
            wanted[*v as usize] = true;
        }
    }
    let mut names: Vec<Option<Arc<str>>> = wanted
        .into_par_iter()
        .enumerate()
        .map(|(v, w)| w.then(|| Arc::from(g.path(v as NodeId).as_str())))
        .collect();
    let name = |v: NodeId| -> Arc<str> {
        names[v as usize]
            .clone()
            .unwrap_or_else(|| Arc::from(g.path(v).as_str()))
    };
    // Made a slice at a time from the end, on every core, the links'
    // vector shrunk as the roots' grows (both by `mremap`, no copy, at
    // this size), so that the two are not held whole at once; reversed
    // after.
    const STEP: usize = 1 << 16;
    while !links.is_empty() {
        let from = links.len().saturating_sub(STEP);
        let slice: Vec<LinkRoot> = links.drain(from..).collect();
        let texts: Vec<(Option<NodeId>, Option<Box<str>>)> = looked.drain(from..).collect();
        links.shrink_to_fit();
        looked.shrink_to_fit();
        let batch: Vec<Result<Found, Stale>> = slice
            .into_par_iter()
            .zip(texts)
            .with_min_len(1024)
            .map(|(l, looked)| make_root(l, looked, &profiles, &name, now))
            .collect();
        roots.reserve_exact(batch.len());
        for m in batch.into_iter().rev() {
            match m {
                Ok(f) => roots.push(f),
                Err(s) => stale.push(s),
            }
        }
    }
    // Back in the links' order (the stale ones so far are theirs only).
    roots.reverse();
    stale.reverse();
    let mut name = |v: NodeId| -> Arc<str> {
        names[v as usize]
            .get_or_insert_with(|| Arc::from(g.path(v).as_str()))
            .clone()
    };
    for s in found_stale {
        stale.push(Stale {
            command: s
                .via
                .as_ref()
                .map(|v| groups::rm_command(std::slice::from_ref(v))),
            reason: stale_reason(&s.reason),
            location: s.location,
            via: s.via,
        });
    }
    for r in runtime {
        let Some(node) = index.find(g.paths(), r.store_path.as_str()) else {
            continue;
        };
        let location = match r.processes.first() {
            Some((pid, _)) => PathBuf::from(format!("/proc/{pid}")),
            None => PathBuf::from(r.holders.first().map_or("/proc", String::as_str)),
        };
        let mut root = root(RootKind::Runtime, location, name(node));
        root.held = Some(Box::new(Held {
            processes: r.processes,
            held_by: r.holders,
        }));
        roots.push(Found {
            root,
            node,
            removable: false,
        });
    }
    let mut temp_hashes: HashSet<String> = HashSet::new();
    for t in temp {
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
            let mut root = root(RootKind::Temporary, t.file.clone(), name(node));
            root.held = Some(Box::new(Held {
                processes: vec![(t.pid, t.comm.clone().unwrap_or_default())],
                held_by: Vec::new(),
            }));
            roots.push(Found {
                root,
                node,
                removable: false,
            });
        }
    }
    Assembled {
        roots,
        stale,
        unreadable,
        temp_hashes,
        profiles,
        warnings,
    }
}
