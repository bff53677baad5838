//! Turning command-line ROOT arguments into store paths.
//!
//! Accepted, as Nix users type them: a store path; a path inside one; a
//! symlink chain ending in either (`./result`, `/run/current-system`); a
//! package name (`llama-cpp-rocm`), which must match exactly one valid path;
//! or a glob (`rocm-llvm*`), which takes every valid path it matches.
//!
//! Symlinks are followed by hand rather than with `canonicalize`, because a
//! `result` link into a chroot store points at `/nix/store/...`, which need
//! not exist on this machine: the chain stops as soon as it reaches the store
//! directory.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use crate::error::{Error, Result, io_err};
use crate::source::StoreSource;
use crate::store_path::{StorePath, package_name};

/// Linux's own limit on symlinks followed in one lookup (`MAXSYMLINKS`).
const MAX_SYMLINKS: usize = 40;

/// Resolves every argument; duplicates are kept once, in first-seen order.
pub fn resolve_roots(src: &dyn StoreSource, args: &[String]) -> Result<Vec<StorePath>> {
    let mut all_paths: Option<Vec<StorePath>> = None;
    let mut out: Vec<StorePath> = Vec::new();
    for arg in args {
        let found = if looks_like_path(src.store_dir(), arg) {
            let p = resolve_path_arg(src.store_dir(), arg)?;
            if !src.is_valid(&p)? {
                return Err(Error::MissingPath {
                    path: p.to_string(),
                    store: src.describe(),
                });
            }
            vec![p]
        } else {
            if all_paths.is_none() {
                all_paths = Some(src.all_paths()?);
            }
            match_name(src, all_paths.as_deref().unwrap_or_default(), arg)?
        };
        for p in found {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    Ok(out)
}

/// Anything with a slash, or an existing file in the working directory
/// (`result`), is a path; the rest are names.
fn looks_like_path(store_dir: &str, arg: &str) -> bool {
    arg.starts_with(store_dir) || arg.contains('/') || Path::new(arg).symlink_metadata().is_ok()
}

/// Follows `arg` until it names something in `store_dir`.
pub fn resolve_path_arg(store_dir: &str, arg: &str) -> Result<StorePath> {
    let mut cur = PathBuf::from(arg);
    for _ in 0..=MAX_SYMLINKS {
        let s = cur.to_string_lossy();
        if s.starts_with(&format!("{store_dir}/")) {
            return StorePath::from_path_inside(store_dir, &normalize(&cur).to_string_lossy());
        }
        let meta = cur.symlink_metadata().map_err(io_err(&cur))?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&cur).map_err(io_err(&cur))?;
            cur = if target.is_absolute() {
                target
            } else {
                cur.parent().unwrap_or(Path::new("/")).join(target)
            };
            continue;
        }
        // A real file or directory: its canonical location may be in the
        // store (a bind mount or a directory symlinked higher up).
        let canon = cur.canonicalize().map_err(io_err(&cur))?;
        let cs = canon.to_string_lossy();
        if cs.starts_with(&format!("{store_dir}/")) {
            return StorePath::from_path_inside(store_dir, &cs);
        }
        return Err(Error::NotInStore {
            arg: arg.to_string(),
            resolved: canon,
            store_dir: store_dir.to_string(),
        });
    }
    Err(Error::SymlinkLoop(PathBuf::from(arg)))
}

/// Removes `.` and `..` components lexically (after the store directory no
/// symlinks are followed, as the store may not exist on this machine).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// Matches a name or glob against the names of `paths`. A pattern matches a
/// path if it matches the whole name (`rocblas-5.7.1`) or the package name
/// without version (`rocblas`). Derivations (`.drv`) only match patterns
/// that end in `.drv`.
pub fn match_name(
    src: &dyn StoreSource,
    paths: &[StorePath],
    pattern: &str,
) -> Result<Vec<StorePath>> {
    let matcher = glob(pattern)?;
    let want_drv = pattern.ends_with(".drv");
    let mut hits: Vec<StorePath> = paths
        .iter()
        .filter(|p| p.name().ends_with(".drv") == want_drv)
        .filter(|p| name_matches(&matcher, p.name()))
        .cloned()
        .collect();
    hits.sort();
    match hits.len() {
        0 => Err(Error::NoMatch {
            pattern: pattern.to_string(),
            store: src.describe(),
            candidates: similar_names(paths, pattern),
        }),
        1 => Ok(hits),
        _ if is_glob(pattern) => Ok(hits),
        _ => Err(Error::Ambiguous {
            pattern: pattern.to_string(),
            candidates: hits.iter().map(|p| p.to_string()).collect(),
        }),
    }
}

/// A pattern matches a name whole (`rocblas-5.7.1`) or its package name
/// without version (`rocblas`).
fn name_matches(matcher: &GlobMatcher, name: &str) -> bool {
    matcher.is_match(name) || matcher.is_match(package_name(name))
}

/// Paths whose names contain the pattern (wildcards trimmed), sorted: the
/// suggestions of a "no match" error.
fn similar_names(paths: &[StorePath], pattern: &str) -> Vec<String> {
    let needle = pattern.trim_matches(['*', '?']).to_lowercase();
    let mut c: Vec<String> = paths
        .iter()
        .filter(|p| !needle.is_empty() && p.name().to_lowercase().contains(&needle))
        .map(|p| p.to_string())
        .collect();
    c.sort();
    c
}

/// Compiles a name glob (no path separators involved, so `*` matches all).
pub fn glob(pattern: &str) -> Result<GlobMatcher> {
    Ok(GlobBuilder::new(pattern)
        .literal_separator(false)
        .build()
        .map_err(|e| Error::BadPattern {
            pattern: pattern.to_string(),
            reason: e.to_string(),
        })?
        .compile_matcher())
}

/// Resolves a dependency argument within a loaded closure: a store path (or
/// a path inside one, or a symlink to one), or a name or glob matched
/// against the closure's paths, where any number of matches is fine.
pub fn resolve_in_closure(
    g: &crate::graph::Graph,
    store_dir: &str,
    arg: &str,
) -> Result<Vec<crate::graph::NodeId>> {
    let index = g.index();
    if looks_like_path(store_dir, arg) {
        let p = resolve_path_arg(store_dir, arg)?;
        return index
            .get(&p)
            .map(|&v| vec![v])
            .ok_or_else(|| Error::NoMatch {
                pattern: arg.to_string(),
                store: format!("the closure of {}", g.path(g.roots()[0])),
                candidates: Vec::new(),
            });
    }
    let matcher = glob(arg)?;
    let mut hits: Vec<crate::graph::NodeId> = (0..g.len() as crate::graph::NodeId)
        .filter(|&v| name_matches(&matcher, g.path(v).name()))
        .collect();
    hits.sort_by(|a, b| g.path(*a).cmp(g.path(*b)));
    if hits.is_empty() {
        return Err(Error::NoMatch {
            pattern: arg.to_string(),
            store: format!("the closure of {}", g.path(g.roots()[0])),
            candidates: similar_names(g.paths(), arg),
        });
    }
    Ok(hits)
}

/// The top-level paths that pull `path` in: its transitive referrers that
/// nothing references (derivations excluded). `None` when the source cannot
/// list referrers.
pub fn top_level_referrers(
    src: &dyn StoreSource,
    path: &StorePath,
) -> Result<Option<Vec<StorePath>>> {
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![path.clone()];
    let mut tops = Vec::new();
    seen.insert(path.clone());
    while let Some(p) = stack.pop() {
        let Some(refs) = src.referrers(&p)? else {
            return Ok(None);
        };
        let refs: Vec<StorePath> = refs
            .into_iter()
            .filter(|r| !r.name().ends_with(".drv"))
            .collect();
        if refs.is_empty() && &p != path {
            tops.push(p.clone());
        }
        for r in refs {
            if seen.insert(r.clone()) {
                stack.push(r);
            }
        }
    }
    tops.sort();
    Ok(Some(tops))
}
