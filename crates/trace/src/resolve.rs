//! Resolving a traced path through its symlinks, component by component,
//! remembering every symlink passed, so that an access through a farm
//! (`rocblas/lib/rocblas/library/X.dat` → `tensile-gfx90a/.../X.dat`)
//! is recorded on the link and on the file it leads to.
//!
//! By hand because `std::fs::canonicalize` resolves without telling which
//! links it passed, and fails for a path that does not exist (a failed
//! probe still names a store path). The store is immutable, so resolving
//! after the run sees what the workload saw there.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Most symlinks followed in one resolution, as Linux's MAXSYMLINKS.
const MAX_LINKS: usize = 40;

/// A resolved path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The final path, absolute and without `.`, `..` or symlinks in it
    /// (the part past a missing component kept lexically).
    pub target: Vec<u8>,
    /// The symlinks passed, in order, as absolute paths of the links.
    pub links: Vec<Vec<u8>>,
}

/// Resolves paths, caching what each symlink's parent directory resolves to.
#[derive(Debug, Default)]
pub struct Resolver {
    /// A directory prefix already resolved → its result.
    dirs: HashMap<Vec<u8>, Resolved>,
}

impl Resolver {
    /// Resolves `path` (absolute). `follow`: whether a symlink as the last
    /// component is followed.
    pub fn resolve(&mut self, path: &[u8], follow: bool) -> Resolved {
        // Split off the last component: the directory part is cached.
        let trimmed = trim_slashes(path);
        let (dir, last) = match trimmed.iter().rposition(|&b| b == b'/') {
            Some(i) => (&trimmed[..i], &trimmed[i + 1..]),
            None => (&b""[..], trimmed),
        };
        let mut r = self.resolve_dir(dir);
        if last.is_empty() {
            return r;
        }
        let mut budget = MAX_LINKS.saturating_sub(r.links.len());
        step(&mut r, last, follow, &mut budget);
        r
    }

    fn resolve_dir(&mut self, dir: &[u8]) -> Resolved {
        if let Some(r) = self.dirs.get(dir) {
            return r.clone();
        }
        let mut r = Resolved {
            target: Vec::new(),
            links: Vec::new(),
        };
        let mut budget = MAX_LINKS;
        for comp in dir.split(|&b| b == b'/').filter(|c| !c.is_empty()) {
            step(&mut r, comp, true, &mut budget);
        }
        self.dirs.insert(dir.to_vec(), r.clone());
        r
    }
}

fn trim_slashes(p: &[u8]) -> &[u8] {
    let mut end = p.len();
    while end > 1 && p[end - 1] == b'/' {
        end -= 1;
    }
    &p[..end]
}

/// Appends one component to `r.target`, following it when it is a symlink
/// (and `follow`), recursively through the link's own components.
fn step(r: &mut Resolved, comp: &[u8], follow: bool, budget: &mut usize) {
    match comp {
        b"" | b"." => return,
        b".." => {
            if let Some(i) = r.target.iter().rposition(|&b| b == b'/') {
                r.target.truncate(i);
            }
            return;
        }
        _ => {}
    }
    let parent_len = r.target.len();
    r.target.push(b'/');
    r.target.extend_from_slice(comp);
    if !follow || *budget == 0 {
        return;
    }
    let p = Path::new(OsStr::from_bytes(&r.target));
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return;
    };
    if !meta.file_type().is_symlink() {
        return;
    }
    let Ok(to) = std::fs::read_link(p) else {
        return;
    };
    *budget -= 1;
    r.links.push(r.target.clone());
    let to = to.as_os_str().as_bytes().to_vec();
    if to.first() == Some(&b'/') {
        r.target.clear();
    } else {
        r.target.truncate(parent_len);
    }
    for c in to.split(|&b| b == b'/') {
        step(r, c, true, budget);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn follows_chains_and_records_links() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        let b = |p: &Path| p.as_os_str().as_bytes().to_vec();
        std::fs::create_dir_all(root.join("real/lib")).unwrap();
        std::fs::write(root.join("real/lib/f.dat"), b"x").unwrap();
        symlink(root.join("real/lib"), root.join("farm")).unwrap();
        symlink("farm/f.dat", root.join("rel")).unwrap();
        let mut res = Resolver::default();
        let r = res.resolve(&b(&root.join("rel")), true);
        assert_eq!(r.target, b(&root.join("real/lib/f.dat")));
        assert_eq!(r.links, vec![b(&root.join("rel")), b(&root.join("farm"))]);
        // Not following the last component: the link itself.
        let r = res.resolve(&b(&root.join("rel")), false);
        assert_eq!(r.target, b(&root.join("rel")));
        assert!(r.links.is_empty());
        // A missing file under a link still resolves the directory part.
        let r = res.resolve(&b(&root.join("farm/../lib/missing")), true);
        assert_eq!(r.target, b(&root.join("real/lib/missing")));
        // A loop ends.
        symlink(root.join("loop"), root.join("loop")).unwrap();
        let r = res.resolve(&b(&root.join("loop")), true);
        assert_eq!(r.links.len(), MAX_LINKS);
    }
}
