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

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use nix_heft_analysis::plan::split::FoundBy;
use nix_heft_analysis::rules::{glob, name_matches};
use nix_heft_format::store_path::{StorePath, output_suffix, package_name, split_output};
use nix_heft_store::source::PathMetadata;
use nix_heft_types::error::io_err;

/// Linux's own limit on symlinks followed in one lookup (`MAXSYMLINKS`).
const MAX_SYMLINKS: usize = 40;

/// Resolves every argument; duplicates are kept once, in first-seen order.
pub fn resolve_roots(src: &dyn PathMetadata, args: &[String]) -> Result<Vec<StorePath>> {
    // Paths are followed first and their validity asked in one batch (one
    // database transaction for a local store, parallel lookups for a
    // cache): a whole store's roots are tens of thousands of arguments.
    // Errors are still reported for the first bad argument in order.
    let followed: Vec<Option<Result<StorePath>>> = args
        .iter()
        .map(|arg| {
            looks_like_path(src.store_dir(), arg).then(|| resolve_path_arg(src.store_dir(), arg))
        })
        .collect();
    let to_check: Vec<StorePath> = followed
        .iter()
        .filter_map(|f| f.as_ref()?.as_ref().ok().cloned())
        .collect();
    let mut valid = src.are_valid(&to_check)?.into_iter();
    let mut all_paths: Option<Vec<StorePath>> = None;
    let mut seen: HashSet<StorePath> = HashSet::with_capacity(args.len());
    let mut out: Vec<StorePath> = Vec::new();
    for (arg, followed) in args.iter().zip(followed) {
        let found = match followed {
            Some(p) => {
                let p = p?;
                if !valid.next().unwrap_or(false) {
                    // A link that was followed names the link, so the user
                    // knows which one is stale.
                    if Path::new(arg).is_symlink() {
                        return Err(Error::DanglingLink {
                            link: arg.clone(),
                            path: p.to_string(),
                            store: src.describe(),
                        });
                    }
                    return Err(nix_heft_store::Error::MissingPath {
                        path: p.to_string(),
                        store: src.describe(),
                    }
                    .into());
                }
                vec![p]
            }
            None => {
                if all_paths.is_none() {
                    all_paths = Some(src.all_paths()?);
                }
                match_name(src, all_paths.as_deref().unwrap_or_default(), arg)?
            }
        };
        for p in found {
            if seen.insert(p.clone()) {
                out.push(p);
            }
        }
    }
    Ok(out)
}

/// Anything with a slash, or an existing file in the working directory
/// (`result`), is a path; the rest are names.
pub fn looks_like_path(store_dir: &str, arg: &str) -> bool {
    arg.starts_with(store_dir) || arg.contains('/') || Path::new(arg).symlink_metadata().is_ok()
}

/// Follows `arg` until it names something in `store_dir`.
pub fn resolve_path_arg(store_dir: &str, arg: &str) -> Result<StorePath> {
    let mut cur = PathBuf::from(arg);
    for _ in 0..=MAX_SYMLINKS {
        let s = cur.to_string_lossy();
        if s.starts_with(&format!("{store_dir}/")) {
            return Ok(StorePath::from_path_inside(
                store_dir,
                &normalize(&cur).to_string_lossy(),
            )?);
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
            return Ok(StorePath::from_path_inside(store_dir, &cs)?);
        }
        return Err(Error::NotInStore {
            arg: arg.to_string(),
            flake: canon.join("flake.nix").is_file(),
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
    src: &dyn PathMetadata,
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
        0 => Err(nix_heft_types::Error::NoMatch {
            pattern: pattern.to_string(),
            store: src.describe(),
            closest: closest_name(paths.iter().map(StorePath::name), pattern),
            candidates: similar_names(paths, pattern),
        }
        .into()),
        1 => Ok(hits),
        _ if is_glob(pattern) => Ok(hits),
        _ => match preferred_out(&hits) {
            Some(out) => Ok(vec![out.clone()]),
            None => Err(nix_heft_types::Error::Ambiguous {
                pattern: pattern.to_string(),
                candidates: describe_candidates(src, &hits),
            }
            .into()),
        },
    }
}

/// When the matches are one `out` path and other outputs of the same
/// derivation (`x-1.0`, `x-1.0-dev`, `x-1.0-doc`), the `out` path: that is
/// what a user naming the package means.
fn preferred_out(hits: &[StorePath]) -> Option<&StorePath> {
    let outs: Vec<&StorePath> = hits
        .iter()
        .filter(|p| output_suffix(p.name()).is_none())
        .collect();
    let [out] = outs[..] else {
        return None;
    };
    let base = out.name();
    hits.iter()
        .all(|p| p == out || matches!(split_output(p.name()), (stem, Some(_)) if stem == base))
        .then_some(out)
}

/// Candidates of an ambiguous name, newest first, each with its NAR size
/// and registration time where the source knows them.
fn describe_candidates(src: &dyn PathMetadata, hits: &[StorePath]) -> Vec<String> {
    let mut rows: Vec<(Option<i64>, String)> = hits
        .iter()
        .map(|p| {
            let size = src
                .path_info(p)
                .ok()
                .flatten()
                .map(|i| nix_heft_types::units::iec(i.nar_size));
            let time = src.registration_time(p).ok().flatten();
            let mut extra: Vec<String> = size.into_iter().collect();
            if let Some(t) = time.and_then(format_time) {
                extra.push(format!("registered {t}"));
            }
            let shown = if extra.is_empty() {
                p.to_string()
            } else {
                format!("{p}  ({})", extra.join(", "))
            };
            (time, shown)
        })
        .collect();
    rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    rows.into_iter().map(|(_, s)| s).collect()
}

/// Seconds since the epoch as a UTC `YYYY-MM-DD HH:MM`, written by hand to
/// spare a date crate for one line of an error message.
fn format_time(secs: i64) -> Option<String> {
    if !(0..=253_402_300_799).contains(&secs) {
        return None; // before 1970 or after 9999: not a real registration
    }
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm), valid for all i64 days here.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    Some(format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60
    ))
}

/// The name closest to `pattern` by edit distance (on whole names and on
/// package names), when it is near enough to be a typo.
fn closest_name<'a>(names: impl Iterator<Item = &'a str>, pattern: &str) -> Option<String> {
    let pattern = pattern.to_lowercase();
    let limit = (pattern.chars().count() / 3).max(1);
    names
        .filter(|n| !n.ends_with(".drv"))
        .flat_map(|n| [n, package_name(n)])
        .map(|n| (strsim::damerau_levenshtein(&n.to_lowercase(), &pattern), n))
        .filter(|(d, _)| *d > 0 && *d <= limit)
        .min()
        .map(|(_, n)| n.to_string())
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

/// Resolves a dependency argument within a loaded closure: a store path (or
/// a path inside one, or a symlink to one), or a name or glob matched
/// against the closure's paths, where any number of matches is fine.
pub fn resolve_in_closure(
    g: &nix_heft_graph::Graph,
    store_dir: &str,
    arg: &str,
) -> Result<Vec<nix_heft_graph::NodeId>> {
    let index = g.index();
    if looks_like_path(store_dir, arg) {
        let p = resolve_path_arg(store_dir, arg)?;
        return index.get(&p).map(|&v| vec![v]).ok_or_else(|| {
            nix_heft_types::Error::NoMatch {
                pattern: arg.to_string(),
                store: format!("the closure of {}", g.path(g.roots()[0])),
                closest: None,
                candidates: Vec::new(),
            }
            .into()
        });
    }
    let matcher = glob(arg)?;
    let mut hits: Vec<nix_heft_graph::NodeId> = (0..g.len() as nix_heft_graph::NodeId)
        .filter(|&v| name_matches(&matcher, g.path(v).name()))
        .collect();
    hits.sort_by(|a, b| g.path(*a).cmp(g.path(*b)));
    if hits.is_empty() {
        return Err(nix_heft_types::Error::NoMatch {
            pattern: arg.to_string(),
            store: format!("the closure of {}", g.path(g.roots()[0])),
            closest: closest_name(g.paths().iter().map(StorePath::name), arg),
            candidates: similar_names(g.paths(), arg),
        }
        .into());
    }
    Ok(hits)
}

/// Resolves one PATH argument within a loaded closure first: a name or glob
/// that matches exactly one path of the closure (or one `out` and its other
/// outputs) is that path. `Ok(None)` when nothing in the closure matches,
/// so the caller can look in the whole store.
pub fn resolve_one_in_closure(
    g: &nix_heft_graph::Graph,
    store_dir: &str,
    arg: &str,
) -> Result<Option<nix_heft_graph::NodeId>> {
    if looks_like_path(store_dir, arg) {
        let p = resolve_path_arg(store_dir, arg)?;
        return Ok(g.index().get(&p).copied());
    }
    let matcher = glob(arg)?;
    let hits: Vec<StorePath> = g
        .paths()
        .iter()
        .filter(|p| !p.name().ends_with(".drv") && name_matches(&matcher, p.name()))
        .cloned()
        .collect();
    let chosen = match hits.len() {
        0 => return Ok(None),
        1 => hits[0].clone(),
        _ => match preferred_out(&hits) {
            Some(p) => p.clone(),
            None => {
                let mut c: Vec<String> = hits.iter().map(|p| p.to_string()).collect();
                c.sort();
                return Err(nix_heft_types::Error::Ambiguous {
                    pattern: arg.to_string(),
                    candidates: c,
                }
                .into());
            }
        },
    };
    Ok(g.index().get(&chosen).copied())
}

/// The top-level paths that pull `path` in: its transitive referrers that
/// nothing references (derivations excluded). `None` when the source cannot
/// list referrers.
pub fn top_level_referrers(
    src: &dyn PathMetadata,
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

/// An output the package of a path already has, other than the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiblingOutput {
    /// Output name (`dev`; `out` for the unsuffixed one).
    pub output: String,
    /// Its store path.
    pub path: StorePath,
    /// How it was found.
    pub found_by: FoundBy,
}

/// The other outputs of `path`'s package that the source holds: the paths
/// with the same deriver, else (no deriver recorded, or a source that
/// cannot say) the valid paths named like `path` with an output suffix
/// (`rocm-lib-5.7.1-dev` beside `rocm-lib-5.7.1`). Where several paths have
/// one name, the one that references `path` (as a `dev` output names `out`
/// in `nix-support/propagated-build-inputs`) is taken; when none or several
/// do, that output is left out rather than guessed. A source that can list
/// neither (a binary cache) gives none.
pub fn sibling_outputs(src: &dyn PathMetadata, path: &StorePath) -> Result<Vec<SiblingOutput>> {
    Ok(sibling_outputs_many(src, std::slice::from_ref(path))?
        .remove(path)
        .unwrap_or_default())
}

/// [`sibling_outputs`] of many paths, with one scan of the source's
/// derivers and at most one listing of its paths for all of them; paths
/// with no sibling are absent.
pub fn sibling_outputs_many(
    src: &dyn PathMetadata,
    paths: &[StorePath],
) -> Result<std::collections::HashMap<StorePath, Vec<SiblingOutput>>> {
    let by_deriver = src.same_deriver_many(paths)?.unwrap_or_default();
    let mut all: Option<Vec<StorePath>> = None;
    let mut out = std::collections::HashMap::new();
    for path in paths {
        let base = split_output(path.name()).0;
        let output_of = |p: &StorePath| -> Option<String> {
            let n = p.name();
            if n == base {
                return Some("out".to_string());
            }
            let o = n.strip_prefix(base)?.strip_prefix('-')?;
            (output_suffix(n) == Some(o)).then(|| o.to_string())
        };
        let mut found: Vec<SiblingOutput> = Vec::new();
        if let Some(same) = by_deriver.get(path) {
            for p in same {
                if p != path
                    && let Some(output) = output_of(p)
                {
                    found.push(SiblingOutput {
                        output,
                        path: p.clone(),
                        found_by: FoundBy::Deriver,
                    });
                }
            }
        } else {
            if all.is_none() {
                // A source that cannot list its paths has no siblings to
                // offer: not an error for the caller.
                all = Some(src.all_paths().unwrap_or_default());
            }
            let mut by_output: std::collections::BTreeMap<String, Vec<&StorePath>> =
                std::collections::BTreeMap::new();
            for p in all.iter().flatten() {
                if p == path || p.name().ends_with(".drv") {
                    continue;
                }
                if let Some(o) = output_of(p) {
                    by_output.entry(o).or_default().push(p);
                }
            }
            for (output, cands) in by_output {
                let mut holding = Vec::new();
                for &c in &cands {
                    let refs = src.path_info(c)?.map(|i| i.references).unwrap_or_default();
                    if refs.contains(path) {
                        holding.push(c);
                    }
                }
                let pick = match (holding.len(), cands.len()) {
                    (1, _) => holding.pop(),
                    (0, 1) => cands.first().copied(),
                    _ => None,
                };
                if let Some(p) = pick {
                    found.push(SiblingOutput {
                        output,
                        path: p.clone(),
                        found_by: FoundBy::Name,
                    });
                }
            }
        }
        if !found.is_empty() {
            found.sort_by(|a, b| a.output.cmp(&b.output).then_with(|| a.path.cmp(&b.path)));
            out.insert(path.clone(), found);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(name: &str, h: char) -> StorePath {
        StorePath::parse(
            "/nix/store",
            &format!("/nix/store/{}-{name}", h.to_string().repeat(32)),
        )
        .unwrap()
    }

    #[test]
    fn out_is_preferred_over_its_other_outputs() {
        let out = sp("x-1.0", 'a');
        let hits = vec![sp("x-1.0-dev", 'b'), out.clone(), sp("x-1.0-doc", 'c')];
        assert_eq!(preferred_out(&hits), Some(&out));
        // Another version is a real ambiguity.
        let hits = vec![out.clone(), sp("x-2.0", 'd')];
        assert_eq!(preferred_out(&hits), None);
        let hits = vec![sp("x-1.0-dev", 'b'), sp("x-1.0-doc", 'c')];
        assert_eq!(preferred_out(&hits), None);
    }

    #[test]
    fn closest_names_and_times() {
        let names = ["llama-cpp-rocm-0.0.0", "rocblas-5.7.1", "hipblas-5.7.1"];
        assert_eq!(
            closest_name(names.iter().copied(), "llama-cpp-rcom").as_deref(),
            Some("llama-cpp-rocm")
        );
        assert_eq!(closest_name(names.iter().copied(), "firefox"), None);
        assert_eq!(format_time(0).as_deref(), Some("1970-01-01 00:00"));
        assert_eq!(
            format_time(1_700_000_000).as_deref(),
            Some("2023-11-14 22:13")
        );
        assert_eq!(format_time(-1), None);
    }
}
