//! The link roots (`findRoots`): `STATE/gcroots` and `STATE/profiles`
//! walked as the collector walks them, each link read once from its
//! directory's descriptor, and the profiles their generations belong to.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use rayon::prelude::*;

use super::*;

/// What a walk found: roots, in chunks (a directory's each), and the
/// rest.
#[derive(Default)]
pub(super) struct Walked {
    pub(super) roots: Vec<Chunk>,
    pub(super) other: Vec<Entry>,
}

impl Walked {
    pub(super) fn append(&mut self, other: &mut Walked) {
        self.roots.append(&mut other.roots);
        self.other.append(&mut other.other);
    }
}

/// The roots of one directory, their targets in a buffer of their own
/// (merged into [`Found::targets`] after the walk).
#[derive(Default)]
pub(super) struct Chunk {
    pub(super) links: Vec<LinkRoot>,
    pub(super) targets: Vec<u8>,
}

impl Chunk {
    /// Adds a root, its link's target `target`.
    fn add(&mut self, mut l: LinkRoot, target: Option<OsString>) {
        if let Some(t) = target {
            let at = self.targets.len();
            self.targets.extend_from_slice(t.as_bytes());
            l.target = Some(at..self.targets.len());
        }
        self.links.push(l);
    }
}

/// An indirect link of a root tree (`auto/<hash>` → `~/proj/result`): the
/// second links are read once the directory's entries are, all those of
/// one directory from one descriptor of it.
struct Indirect {
    /// The entry of the tree.
    path: PathBuf,
    /// What it points to, absolute and normalised.
    at: PathBuf,
    tree: Tree,
    /// Below `auto/`, where a link to nothing is stale.
    in_auto: bool,
}

/// A root found, or one entry of a root tree that is no root.
enum Seen {
    /// A root, with what its link says (copied into its directory's
    /// [`Chunk`] at once, the string freed: no hole left behind).
    Root(LinkRoot, Option<OsString>),
    Other(Entry),
    Dir(Walked),
    Indirect(Indirect),
}

/// One entry of a root tree that is no root, as walked.
pub(super) enum Entry {
    Stale(StaleLink),
    Unreadable(PathBuf, String),
    Warning(String),
}

/// `dir/name` in a buffer of its size: `Path::join` grows its buffer as a
/// vector grows (up to twice what it holds), and a million roots keep
/// their locations.
fn join(dir: &Path, name: &std::ffi::OsStr) -> PathBuf {
    let dir = dir.as_os_str().as_bytes();
    let sep = !dir.ends_with(b"/");
    let mut v = Vec::with_capacity(dir.len() + usize::from(sep) + name.len());
    v.extend_from_slice(dir);
    if sep {
        v.push(b'/');
    }
    v.extend_from_slice(name.as_bytes());
    PathBuf::from(OsString::from_vec(v))
}

/// Nix's `absPath(target, dir)` without resolving symlinks: `target`
/// against `dir` when relative, then `.`, `..` and repeated slashes
/// removed lexically (`canonPath`).
pub(super) fn absolute(target: &Path, dir: &Path) -> PathBuf {
    let joined = if target.is_absolute() {
        target.to_path_buf()
    } else {
        dir.join(target)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// The errors the collector passes over (`EACCES`, `ENOENT`, `ENOTDIR`):
/// "cannot read potential root".
fn ignorable(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EACCES) | Some(libc::ENOENT) | Some(libc::ENOTDIR)
    )
}

fn io(e: nix::errno::Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e as i32)
}

/// A directory being walked: its path, and a descriptor the lookups of its
/// entries start from (a million roots in one directory: no path is
/// resolved again for each).
struct Dir<'a> {
    path: &'a Path,
    fd: std::os::fd::OwnedFd,
}

impl Dir<'_> {
    fn read_link(&self, name: &std::ffi::OsStr) -> std::io::Result<OsString> {
        read_link_at(&self.fd, name)
    }
    fn mtime(&self, name: &std::ffi::OsStr) -> Option<i64> {
        nix::sys::stat::fstatat(&self.fd, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
            .ok()
            .map(|st| st.st_mtime)
    }
}

/// `readlinkat(2)` into a buffer on the stack, the target allocated once
/// at its size: `nix::fcntl::readlinkat` allocates `PATH_MAX` bytes, then
/// shrinks and copies, three allocations a link (a million and a half
/// links here).
fn read_link_at(
    dir: &impl std::os::fd::AsRawFd,
    name: &std::ffi::OsStr,
) -> std::io::Result<OsString> {
    // The name NUL-terminated on the stack too (a file name is at most
    // `NAME_MAX` bytes): no `CString` allocated for each link.
    let name = name.as_bytes();
    let mut c_name = [0u8; 256];
    if name.len() >= c_name.len() {
        return Err(std::io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    if name.contains(&0) {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    c_name[..name.len()].copy_from_slice(name);
    let mut buf = [0u8; libc::PATH_MAX as usize];
    // SAFETY: `c_name` is NUL-terminated; the kernel writes at most
    // `buf.len()` bytes into `buf`, which outlives the call.
    let n = unsafe {
        libc::readlinkat(
            dir.as_raw_fd(),
            c_name.as_ptr().cast(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let n = n as usize;
    if n >= buf.len() {
        // Possibly cut: no link Nix makes is this long.
        return Err(std::io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    Ok(OsString::from_vec(buf[..n].to_vec()))
}

pub(super) struct Walker<'a> {
    /// `STATE/gcroots/auto`: where a link to nothing is stale.
    pub(super) auto: &'a Path,
}

impl Walker<'_> {
    /// `findRoots(dir)`: every entry below `dir`, the entries of each
    /// directory in parallel (a Hydra's `hydra-roots` holds a million
    /// files) and its subdirectories too.
    pub(super) fn walk(&self, dir: &Path, tree: Tree) -> Walked {
        let failed = |e: Entry| Walked {
            other: vec![e],
            ..Walked::default()
        };
        let opened = nix::fcntl::open(
            dir,
            nix::fcntl::OFlag::O_RDONLY
                | nix::fcntl::OFlag::O_DIRECTORY
                | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        );
        let fd = match opened {
            Ok(fd) => fd,
            // The tree itself may be missing (a fresh chroot store).
            Err(nix::errno::Errno::ENOENT) => return Walked::default(),
            Err(e) => return failed(self.unreadable_or_warn(dir, &io(e))),
        };
        let d = Dir { path: dir, fd };
        let rd = match std::fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) => return failed(self.unreadable_or_warn(dir, &e)),
        };
        let mut entries: Vec<(u64, OsString, Option<std::fs::FileType>)> = Vec::new();
        for e in rd {
            match e {
                Ok(e) => {
                    use std::os::unix::fs::DirEntryExt;
                    entries.push((e.ino(), e.file_name(), e.file_type().ok()))
                }
                Err(e) => return failed(self.unreadable_or_warn(dir, &e)),
            }
        }
        // In inode order, not the directory's hash order: a cold cache
        // then reads the inode tables front to back (the walk of a
        // million links is otherwise bound by random reads).
        entries.sort_unstable_by_key(|e| e.0);
        let (dirs, rest): (Vec<_>, Vec<_>) = entries
            .into_iter()
            .partition(|(_, _, t)| t.is_some_and(|t| t.is_dir()));
        // One directory's links on one thread: two threads reading links
        // of the same directory contend in the kernel (on a 450,000-link
        // directory, twice the system time of one thread and a longer
        // wall time); directories are spread over the threads below.
        let mut chunk = Chunk::default();
        let mut others: Vec<Seen> = Vec::new();
        for (_, name, ty) in rest {
            match self.entry(&d, name, ty, tree) {
                Some(Seen::Root(r, t)) => chunk.add(r, t),
                Some(other) => others.push(other),
                None => {}
            }
        }
        let mut out = Walked {
            roots: vec![chunk],
            ..Walked::default()
        };
        let mut pending = Vec::new();
        for f in others {
            match f {
                Seen::Other(e) => out.other.push(e),
                Seen::Dir(mut w) => out.append(&mut w),
                Seen::Indirect(i) => pending.push(i),
                Seen::Root(..) => {}
            }
        }
        // This directory's second links read while its subdirectories are
        // walked: the thread done with a directory goes on with another's
        // work rather than wait for the largest to be walked (`auto/`'s
        // 600,000 links beside a 800,000-link directory).
        let (mut resolved, below) = rayon::join(
            || self.resolve(pending),
            || {
                dirs.into_par_iter()
                    .map(|(_, name, _)| self.walk(&dir.join(name), tree))
                    .collect::<Vec<Walked>>()
            },
        );
        out.append(&mut resolved);
        for mut w in below {
            out.append(&mut w);
        }
        out
    }

    fn unreadable_or_warn(&self, p: &Path, e: &std::io::Error) -> Entry {
        if ignorable(e) {
            Entry::Unreadable(p.to_path_buf(), e.to_string())
        } else {
            Entry::Warning(format!(
                "{}: {e} (the collector stops here; nix-heft went on)",
                p.display()
            ))
        }
    }

    fn entry(
        &self,
        d: &Dir,
        name: OsString,
        ty: Option<std::fs::FileType>,
        tree: Tree,
    ) -> Option<Seen> {
        let ty = match ty {
            Some(t) => t,
            None => match std::fs::symlink_metadata(d.path.join(&name)) {
                Ok(m) => m.file_type(),
                Err(e) => {
                    return Some(Seen::Other(
                        self.unreadable_or_warn(&d.path.join(&name), &e),
                    ));
                }
            },
        };
        if ty.is_dir() {
            // Only when the directory listing did not give the type.
            return Some(Seen::Dir(self.walk(&d.path.join(&name), tree)));
        }
        if ty.is_symlink() {
            return match self.link(d, name, tree) {
                Ok(e) => e,
                Err((path, e)) => Some(Seen::Other(self.unreadable_or_warn(&path, &e))),
            };
        }
        if ty.is_file() {
            // A file named after a store path roots it (its contents are
            // not read).
            name.to_str()
                .filter(|n| nix_heft_format::store_path::check_base_name(n).is_ok())?;
            return Some(Seen::Root(
                LinkRoot {
                    mtime: d.mtime(&name),
                    location: join(d.path, &name),
                    via: None,
                    tree,
                    target: None,
                    file: true,
                    generation: None,
                },
                None,
            ));
        }
        // Sockets, fifos, devices: no root.
        None
    }

    #[allow(clippy::result_large_err)]
    fn link(
        &self,
        d: &Dir,
        name: OsString,
        tree: Tree,
    ) -> Result<Option<Seen>, (PathBuf, std::io::Error)> {
        let target = d.read_link(&name).map_err(|e| (d.path.join(&name), e))?;
        if in_store(target.as_bytes()) {
            let mtime = d.mtime(&name);
            let location = join(d.path, &name);
            return Ok(Some(if names_store_path(target.as_bytes()) {
                Seen::Root(
                    LinkRoot {
                        location,
                        via: None,
                        tree,
                        target: None,
                        file: false,
                        mtime,
                        generation: None,
                    },
                    Some(target),
                )
            } else {
                Seen::Other(Entry::Stale(StaleLink {
                    location,
                    via: None,
                    reason: StaleReason::NotAStorePath(target),
                }))
            }));
        }
        // Indirect: one more link, read with the directory's others once
        // its entries are (`resolve`).
        let path = join(d.path, &name);
        let mut at = absolute(Path::new(&target), d.path);
        at.shrink_to_fit();
        // Below `auto/` (bytes: a path compared component by component a
        // million times costs seconds).
        let in_auto = path
            .as_os_str()
            .as_bytes()
            .strip_prefix(self.auto.as_os_str().as_bytes())
            .is_some_and(|r| r.first() == Some(&b'/'));
        Ok(Some(Seen::Indirect(Indirect {
            path,
            at,
            tree,
            in_auto,
        })))
    }

    /// The second links of indirect roots: grouped by the directory they
    /// are in (a `result` link's project), each directory opened once and
    /// its links read from that descriptor (`fstatat` and `readlinkat` of
    /// one name, not of a path resolved again from `/`), the directories
    /// in parallel; the directories in order, each one's links by path
    /// (then by the entry that leads to it): the order does not depend on
    /// the walk's.
    fn resolve(&self, pending: Vec<Indirect>) -> Walked {
        // Grouped by hash of the directory, each group then sorted: no
        // sort of every link by its whole path (a million paths compared
        // byte by byte showed in profiles).
        let mut by_dir: HashMap<Vec<u8>, Vec<Indirect>, foldhash::fast::RandomState> =
            HashMap::default();
        for i in pending {
            let parent = i.at.parent().map_or(&b""[..], |p| p.as_os_str().as_bytes());
            match by_dir.get_mut(parent) {
                Some(g) => g.push(i),
                None => {
                    by_dir.insert(parent.to_vec(), vec![i]);
                }
            }
        }
        let mut groups: Vec<(Vec<u8>, Vec<Indirect>)> = by_dir.into_iter().collect();
        groups.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let groups: Vec<Vec<Indirect>> = groups.into_iter().map(|(_, g)| g).collect();
        let done: Vec<(Chunk, Vec<Entry>)> = groups
            .into_par_iter()
            .map(|g| self.resolve_dir(g))
            .collect();
        let mut out = Walked::default();
        for (roots, mut other) in done {
            out.roots.push(roots);
            out.other.append(&mut other);
        }
        out
    }

    /// The indirect links `group` whose second links are all in one
    /// directory.
    fn resolve_dir(&self, mut group: Vec<Indirect>) -> (Chunk, Vec<Entry>) {
        group.sort_unstable_by(|a, b| {
            (a.at.as_os_str().as_bytes(), a.path.as_os_str().as_bytes())
                .cmp(&(b.at.as_os_str().as_bytes(), b.path.as_os_str().as_bytes()))
        });
        let mut roots = Chunk {
            links: Vec::with_capacity(group.len()),
            targets: Vec::new(),
        };
        let mut other = Vec::new();
        let dir = group
            .first()
            .and_then(|i| i.at.parent())
            .map(|p| p.to_path_buf());
        // `O_PATH`: a descriptor to look names up from, whatever the
        // directory's permissions for reading.
        let fd = dir.as_ref().map(|d| {
            nix::fcntl::open(
                d,
                nix::fcntl::OFlag::O_PATH
                    | nix::fcntl::OFlag::O_DIRECTORY
                    | nix::fcntl::OFlag::O_CLOEXEC,
                nix::sys::stat::Mode::empty(),
            )
            .map_err(io)
        });
        for i in group {
            let name = i.at.file_name().map(|n| n.to_os_string());
            let looked = match (&fd, &name) {
                (Some(Ok(fd)), Some(name)) => second_link(fd, name),
                (Some(Err(e)), _) => Err(std::io::Error::from_raw_os_error(
                    e.raw_os_error().unwrap_or(libc::EIO),
                )),
                // `/` itself, or a path without a last name: no link.
                _ => Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
            };
            match self.indirect(i, looked) {
                Ok(Some(Seen::Root(r, t))) => roots.add(r, t),
                Ok(Some(Seen::Other(e))) => other.push(e),
                Ok(_) => {}
                Err((path, e)) => other.push(self.unreadable_or_warn(&path, &e)),
            }
        }
        (roots, other)
    }

    /// An indirect root, from what its second link is: `Ok(None)` for a
    /// path that is no symlink, else its mtime and target.
    #[allow(clippy::result_large_err)]
    fn indirect(
        &self,
        i: Indirect,
        looked: std::io::Result<Option<(i64, OsString)>>,
    ) -> Result<Option<Seen>, (PathBuf, std::io::Error)> {
        let Indirect {
            path,
            at,
            tree,
            in_auto,
        } = i;
        let stale = |reason, at: PathBuf, path: PathBuf| {
            Ok(in_auto.then_some(Seen::Other(Entry::Stale(StaleLink {
                location: at,
                via: Some(path),
                reason,
            }))))
        };
        let (mtime, target2) = match looked {
            Ok(Some(t)) => t,
            Ok(None) => return stale(StaleReason::TargetNotALink, at, path),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => {
                return stale(StaleReason::TargetGone, at, path);
            }
            // `/` as a target: an existing directory, no link.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                return stale(StaleReason::TargetNotALink, at, path);
            }
            Err(e) => return Err((at, e)),
        };
        if !in_store(target2.as_bytes()) {
            return stale(StaleReason::TargetOutsideStore(target2), at, path);
        }
        Ok(Some(if names_store_path(target2.as_bytes()) {
            Seen::Root(
                LinkRoot {
                    location: at,
                    via: Some(path),
                    tree,
                    target: None,
                    file: false,
                    mtime: Some(mtime),
                    generation: None,
                },
                Some(target2),
            )
        } else {
            Seen::Other(Entry::Stale(StaleLink {
                location: at,
                via: Some(path),
                reason: StaleReason::NotAStorePath(target2),
            }))
        }))
    }
}

/// The entry `name` of the directory `dir`: `None` when it is no symlink,
/// else its mtime (`lstat`'s) and what it says.
fn second_link(
    dir: &std::os::fd::OwnedFd,
    name: &std::ffi::OsStr,
) -> std::io::Result<Option<(i64, OsString)>> {
    let st =
        nix::sys::stat::fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW).map_err(io)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFLNK {
        return Ok(None);
    }
    Ok(Some((st.st_mtime, read_link_at(dir, name)?)))
}

/// `NAME-N-link` → (`NAME`, `N`): the name of a generation link, as
/// `createGeneration` makes it.
pub(super) fn generation_name(file: &[u8]) -> Option<(&[u8], u64)> {
    let rest = file.strip_suffix(b"-link")?;
    let dash = rest.iter().rposition(|&b| b == b'-')?;
    let (name, num) = (&rest[..dash], &rest[dash + 1..]);
    if name.is_empty() || num.is_empty() || !num.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some((name, std::str::from_utf8(num).ok()?.parse().ok()?))
}

/// Nix's `parseName(profileName, name)`: `PROFILE-N…-link…` → `N` (the
/// digits up to the first `-link`).
pub(super) fn parse_generation(profile: &[u8], name: &[u8]) -> Option<u64> {
    let s = name.strip_prefix(profile)?.strip_prefix(b"-")?;
    let p = memchr::memmem::find(s, b"-link")?;
    std::str::from_utf8(&s[..p]).ok()?.parse().ok()
}

/// The profiles `links` are generations of (a link `DIR/NAME-N-link`
/// whose `DIR/NAME` is a symlink), each read once with its directory's
/// generations; each such link is marked with its profile and number.
pub(super) fn profiles_of(links: &mut [LinkRoot], state_profiles: &Path) -> Vec<Profile> {
    let mut by_path: HashMap<PathBuf, usize> = HashMap::new();
    let mut out: Vec<Profile> = Vec::new();
    // The names parsed on every core (a million and a half links, a few
    // generations among them), as bytes.
    let named: Vec<(usize, std::ops::Range<usize>, u64)> = links
        .par_iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let path = l.location.as_os_str().as_bytes();
            let start = memchr::memrchr(b'/', path)? + 1;
            let (name, number) = generation_name(&path[start..])?;
            Some((i, start..start + name.len(), number))
        })
        .collect();
    for (i, name, number) in named {
        let l = &mut links[i];
        let name = &l.location.as_os_str().as_bytes()[name];
        let dir = l.location.parent().unwrap_or(Path::new("/"));
        let profile = dir.join(std::ffi::OsStr::from_bytes(name));
        let k = match by_path.get(&profile) {
            Some(&k) => k,
            None => {
                let Ok(meta) = std::fs::symlink_metadata(&profile) else {
                    continue;
                };
                if !meta.file_type().is_symlink() {
                    continue;
                }
                let target = std::fs::read_link(&profile)
                    .ok()
                    .map(|t| t.into_os_string());
                let current = target
                    .as_ref()
                    .and_then(|t| parse_generation(name, t.as_bytes()));
                let mut generations: Vec<(u64, PathBuf, Option<i64>)> = std::fs::read_dir(dir)
                    .map(|rd| {
                        rd.flatten()
                            .filter_map(|e| {
                                let n = parse_generation(name, e.file_name().as_bytes())?;
                                let p = e.path();
                                let m = e.metadata().ok().map(|m| m.mtime());
                                Some((n, p, m))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                generations.sort();
                out.push(Profile {
                    in_state_profiles: profile.starts_with(state_profiles),
                    path: profile.clone(),
                    target,
                    current,
                    generations,
                });
                by_path.insert(profile, out.len() - 1);
                out.len() - 1
            }
        };
        l.generation = Some((k, number));
    }
    // By path, whatever order the parallel walk found them in: the groups
    // come in this order.
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by(|&a, &b| {
        out[a]
            .path
            .as_os_str()
            .as_bytes()
            .cmp(out[b].path.as_os_str().as_bytes())
    });
    let mut new_index = vec![0; out.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    for l in links.iter_mut() {
        if let Some((k, _)) = l.generation.as_mut() {
            *k = new_index[*k];
        }
    }
    let mut slots: Vec<Option<Profile>> = out.into_iter().map(Some).collect();
    order
        .into_iter()
        .map(|k| slots[k].take().expect("each profile once"))
        .collect()
}
