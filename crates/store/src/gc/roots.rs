//! The roots of a local or chroot store as Nix 2.8's collector finds them
//! (`LocalStore::findRoots`, `findRuntimeRoots` and `findTempRoots` in
//! libstore/gc.cc), read without changing anything: where the collector
//! removes a stale link or a dead process's temporary roots file, this
//! lists it.
//!
//! - **Links** (`findRoots`): `STATE/gcroots` and `STATE/profiles`, walked
//!   without following symlinked directories. A symlink whose target is in
//!   the store (`/nix/store/…`, a path inside one included) is a root at the
//!   link. Any other symlink is *indirect*: its target, made absolute
//!   against the link's directory and normalised lexically, is a root when
//!   it is itself a symlink into the store (one level only; `auto/`'s links
//!   to `result` links, a profile's link to its current generation). A
//!   regular file whose name is a store path's base name is a root
//!   (Hydra's `hydra-roots`). A link to a path the store does not hold,
//!   and an `auto/` link whose target is gone, are stale.
//! - **Run-time roots** (`findRuntimeRoots`, Linux): for every process,
//!   `/proc/PID/exe`, `cwd` and each `fd/*` link, each mapping of
//!   `/proc/PID/maps`, every store path written in `/proc/PID/environ`, and
//!   `/proc/sys/kernel/{modprobe,fbsplash,poweroff_cmd}`. What cannot be
//!   read (another user's process, unless root) is skipped, as Nix skips it,
//!   and counted.
//! - **Temporary roots** (`findTempRoots`): `STATE/temproots/PID`, paths
//!   separated by NUL, of Nix processes that hold the file locked; an
//!   unlocked file belongs to a dead process and roots nothing. Matched by
//!   hash part, as the collector matches them.
//!
//! Run-time roots are the machine's processes: a chroot store's collector
//! reads them too (and counts a `/nix/store/…` path a process holds when
//! the chroot store has that path), so they are read for any store.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use rayon::prelude::*;

use nix_heft_format::store_path::StorePath;

/// The logical store directory every root names.
const STORE_DIR: &str = crate::source::DEFAULT_STORE_DIR;

/// Which tree of the state directory a root was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tree {
    /// `STATE/gcroots`.
    GcRoots,
    /// `STATE/profiles`.
    Profiles,
}

/// A root the collector finds in `gcroots/` or `profiles/`: a symlink (or
/// a file named after a path) that keeps a store path alive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkRoot {
    /// Where the root is: the link the collector registers (for an
    /// indirect root, the link the `gcroots` entry points at, such as
    /// `~/proj/result`).
    pub location: PathBuf,
    /// The entry of the walked tree that led to it, for an indirect root
    /// (`gcroots/auto/<hash>`); `None` for a root in the tree itself.
    pub via: Option<PathBuf>,
    /// The tree it was found in.
    pub tree: Tree,
    /// Where what the link says lies in [`Found::targets`]: a store path
    /// (checked when found, not yet for validity) or a file inside one;
    /// `None` for a file named after the store path it keeps. The store
    /// path is read from it ([`LinkRoot::store_base`]). All targets are in
    /// one buffer, not a string each: a million and a half strings freed
    /// once looked up would leave as many holes between the locations
    /// kept (150 MB of a 1.5-million-root store's memory).
    pub target: Option<std::ops::Range<usize>>,
    /// A file named after the path, not a link.
    pub file: bool,
    /// Modification time of the location (`lstat`), seconds since the
    /// epoch: when the link was made (Nix's generation "creation time").
    pub mtime: Option<i64>,
    /// When the location is a generation of a profile: the profile (an
    /// index into [`Found::profiles`]) and the generation's number.
    pub generation: Option<(usize, u64)>,
}

impl LinkRoot {
    /// What the link says, out of `targets` ([`Found::targets`]).
    pub fn target<'a>(&self, targets: &'a [u8]) -> Option<&'a [u8]> {
        targets.get(self.target.clone()?)
    }

    /// The base name (`<hash>-<name>`) of the store path it keeps
    /// (`targets`: [`Found::targets`]).
    pub fn store_base<'a>(&'a self, targets: &'a [u8]) -> &'a str {
        let bytes = match self.target(targets) {
            Some(t) => base_name(t),
            None => self
                .location
                .file_name()
                .map(|n| n.as_bytes())
                .unwrap_or_default(),
        };
        // Checked as a store path's base name when found.
        std::str::from_utf8(bytes).unwrap_or_default()
    }

    /// The store path it keeps, written out.
    pub fn store_path(&self, targets: &[u8]) -> String {
        format!("{STORE_DIR}/{}", self.store_base(targets))
    }

    /// The link's target when it names more than the store path (a file
    /// inside it).
    pub fn inside<'a>(&'a self, targets: &'a [u8]) -> Option<&'a [u8]> {
        let t = self.target(targets)?;
        (t.len() > STORE_DIR.len() + 1 + self.store_base(targets).len()).then_some(t)
    }
}

/// A profile some root is a generation of, as Nix 2.8's `profiles.cc`
/// reads one: its generations are the entries `NAME-N-link` of its
/// directory, the current one is what the profile's link names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The profile's link (`DIR/NAME`).
    pub path: PathBuf,
    /// What the link says, when it is one.
    pub target: Option<OsString>,
    /// The current generation: the number in the link's target when it is
    /// `NAME-N-link` (`findGenerations`); `None` otherwise.
    pub current: Option<u64>,
    /// Every generation in the directory, by number: its link and its
    /// creation time (`lstat`'s mtime), roots or not.
    pub generations: Vec<(u64, PathBuf, Option<i64>)>,
    /// Whether it is in `STATE/profiles` (or below), where
    /// `nix-collect-garbage --delete-old` looks.
    pub in_state_profiles: bool,
}

/// Why an entry of the root trees keeps nothing alive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StaleReason {
    /// An `auto/` link whose target is gone (the collector deletes it).
    TargetGone,
    /// An `auto/` link whose target is no longer a symlink (a `result`
    /// replaced by a directory or file): the collector ignores it.
    TargetNotALink,
    /// An `auto/` link whose target now points outside the store.
    TargetOutsideStore(OsString),
    /// A link into the store that names no store path
    /// (`/nix/store/.links/…`, a bad name).
    NotAStorePath(OsString),
}

/// An entry of the root trees that keeps nothing alive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleLink {
    /// The link (for an `auto/` link, its target: where the user's link
    /// was).
    pub location: PathBuf,
    /// The `auto/` link, when that is what was found.
    pub via: Option<PathBuf>,
    /// Why.
    pub reason: StaleReason,
}

/// A run-time root: a store path some process holds, with how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeRoot {
    /// The store path (parsed, not yet checked for validity).
    pub store_path: StorePath,
    /// What holds it: `/proc/PID/fd/3`, `/proc/PID/maps`, `/proc/PID/environ`,
    /// `/proc/sys/kernel/modprobe` …, sorted.
    pub holders: Vec<String>,
    /// The processes among them: pid and `comm`.
    pub processes: Vec<(u32, String)>,
}

/// A temporary roots file of a live Nix process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TempRoots {
    /// The file (`STATE/temproots/PID`).
    pub file: PathBuf,
    /// The process that holds it.
    pub pid: u32,
    /// Its `comm`, when readable.
    pub comm: Option<String>,
    /// The paths it roots, as written (by hash part they root every
    /// entry of the store directory with that hash).
    pub paths: Vec<StorePath>,
}

/// Everything found.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// Roots in the trees, each location once (in the order walked: the
    /// caller orders them by what they free).
    pub links: Vec<LinkRoot>,
    /// The links' targets, one after another ([`LinkRoot::target`]).
    pub targets: Vec<u8>,
    /// The profiles those roots are generations of.
    pub profiles: Vec<Profile>,
    /// Entries that root nothing.
    pub stale: Vec<StaleLink>,
    /// Entries that could not be read (`EACCES`, …), with the error: the
    /// collector skips them too ("cannot read potential root").
    pub unreadable: Vec<(PathBuf, String)>,
    /// Run-time roots, by store path.
    pub runtime: Vec<RuntimeRoot>,
    /// Processes whose open files, maps or environment could not be read
    /// (another user's, when not root): their run-time roots are unknown.
    pub unreadable_processes: usize,
    /// Temporary roots of live processes.
    pub temp: Vec<TempRoots>,
    /// Temporary roots files of dead processes (the collector deletes
    /// them), and files it could not make sense of.
    pub stale_temp: Vec<PathBuf>,
    /// What went wrong where the collector itself would have failed (an
    /// unreadable `temproots/` file name, an error other than a missing or
    /// forbidden file), said rather than hidden.
    pub warnings: Vec<String>,
}

/// Which kinds of roots to look for.
#[derive(Debug, Clone, Copy)]
pub struct Look {
    /// Run-time roots from `/proc`.
    pub runtime: bool,
    /// Temporary roots.
    pub temp: bool,
}

impl Default for Look {
    fn default() -> Self {
        Look {
            runtime: true,
            temp: true,
        }
    }
}

/// Finds the roots of the store whose state directory is `state`
/// (`ROOT/nix/var/nix`), as the collector does.
pub fn find(state: &Path, look: Look) -> Found {
    let gcroots = state.join("gcroots");
    let auto = gcroots.join("auto");
    let walker = Walker { auto: &auto };
    let (trees, (runtime, temp)) = rayon::join(
        || {
            let (mut out, mut profiles) = rayon::join(
                || walker.walk(&gcroots, Tree::GcRoots),
                || walker.walk(&state.join("profiles"), Tree::Profiles),
            );
            out.append(&mut profiles);
            out
        },
        || {
            rayon::join(
                || look.runtime.then(find_runtime),
                || look.temp.then(|| find_temp(&state.join("temproots"))),
            )
        },
    );
    let mut found = Found::default();
    let Walked { roots, mut other } = trees;
    // Moved, not `concat`ed (which clones every link and its strings),
    // each chunk's targets moved into one buffer.
    let mut links: Vec<LinkRoot> = Vec::with_capacity(roots.iter().map(|c| c.links.len()).sum());
    let mut targets: Vec<u8> = Vec::with_capacity(roots.iter().map(|c| c.targets.len()).sum());
    for chunk in roots {
        let base = targets.len();
        targets.extend_from_slice(&chunk.targets);
        links.extend(chunk.links.into_iter().map(|mut l| {
            l.target = l.target.map(|t| t.start + base..t.end + base);
            l
        }));
    }
    while let Some(e) = other.pop() {
        match e {
            Entry::Stale(s) => found.stale.push(s),
            Entry::Unreadable(p, e) => found.unreadable.push((p, e)),
            Entry::Warning(w) => found.warnings.push(w),
        }
    }
    // One root per location (Nix's root map is a set of links per path): a
    // profile's current generation is found as itself and through the
    // profile's link to it. The direct one is kept, else the one reached
    // from the first entry (by bytes): the same root whatever order the
    // parallel walk found them in. Only an indirect root's location can
    // come twice (a direct one is the entry walked, each once), so only
    // those are kept in a map, and the direct ones looked up in it on
    // every core.
    {
        use std::collections::hash_map::Entry as Slot;
        let mut indirect: HashMap<&[u8], usize, foldhash::fast::RandomState> = HashMap::default();
        let mut keep = vec![true; links.len()];
        let via = |i: usize| links[i].via.as_deref().map(|v| v.as_os_str().as_bytes());
        for (i, l) in links.iter().enumerate().filter(|(_, l)| l.via.is_some()) {
            match indirect.entry(l.location.as_os_str().as_bytes()) {
                Slot::Vacant(e) => {
                    e.insert(i);
                }
                Slot::Occupied(mut e) => {
                    let k = *e.get();
                    if via(i) < via(k) {
                        keep[k] = false;
                        e.insert(i);
                    } else {
                        keep[i] = false;
                    }
                }
            }
        }
        if !indirect.is_empty() {
            let shadowed: Vec<usize> = links
                .par_iter()
                .filter(|l| l.via.is_none())
                .filter_map(|l| indirect.get(l.location.as_os_str().as_bytes()).copied())
                .collect();
            for k in shadowed {
                keep[k] = false;
            }
        }
        let mut k = keep.iter();
        links.retain(|_| *k.next().expect("one flag per link"));
    }
    found.profiles = profiles_of(&mut links, &state.join("profiles"));
    found.links = links;
    found.targets = targets;
    // By location, then by the entry that leads to it.
    found.stale.sort_by(|a, b| {
        fn bytes(p: &Path) -> &[u8] {
            p.as_os_str().as_bytes()
        }
        bytes(&a.location).cmp(bytes(&b.location)).then_with(|| {
            a.via
                .as_deref()
                .map(bytes)
                .cmp(&b.via.as_deref().map(bytes))
        })
    });
    found.unreadable.sort();
    if let Some((runtime, unreadable)) = runtime {
        found.runtime = runtime;
        found.unreadable_processes = unreadable;
    }
    if let Some((temp, stale, warnings)) = temp {
        found.temp = temp;
        found.stale_temp = stale;
        found.warnings.extend(warnings);
    }
    found
}

/// What a walk found: roots, in chunks (a directory's each), and the
/// rest.
#[derive(Default)]
struct Walked {
    roots: Vec<Chunk>,
    other: Vec<Entry>,
}

impl Walked {
    fn append(&mut self, other: &mut Walked) {
        self.roots.append(&mut other.roots);
        self.other.append(&mut other.other);
    }
}

/// The roots of one directory, their targets in a buffer of their own
/// (merged into [`Found::targets`] after the walk).
#[derive(Default)]
struct Chunk {
    links: Vec<LinkRoot>,
    targets: Vec<u8>,
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
enum Found1 {
    /// A root, with what its link says (copied into its directory's
    /// [`Chunk`] at once, the string freed: no hole left behind).
    Root(LinkRoot, Option<OsString>),
    Other(Entry),
    Dir(Walked),
    Indirect(Indirect),
}

/// One entry of a root tree that is no root, as walked.
enum Entry {
    Stale(StaleLink),
    Unreadable(PathBuf, String),
    Warning(String),
}

/// Nix's `isInStore`: `/nix/store/` and at least one more character.
fn in_store(target: &[u8]) -> bool {
    target.len() >= STORE_DIR.len() + 2
        && target.starts_with(STORE_DIR.as_bytes())
        && target[STORE_DIR.len()] == b'/'
}

/// Nix's `toStorePath(target).first`: the store path a path in the store
/// is in, or `None` when it names no store path (`BadStorePath`).
pub fn to_store_path(target: &[u8]) -> Option<StorePath> {
    if !in_store(target) {
        return None;
    }
    let base = std::str::from_utf8(base_name(target)).ok()?;
    StorePath::from_base_name(STORE_DIR, base).ok()
}

/// Whether [`to_store_path`] finds a store path in `target`, nothing
/// allocated (asked of every link).
fn names_store_path(target: &[u8]) -> bool {
    in_store(target)
        && std::str::from_utf8(base_name(target))
            .is_ok_and(|b| nix_heft_format::store_path::check_base_name(b).is_ok())
}

/// The first name after the store directory in `target` (a path in the
/// store): the base name of the store path it is in.
fn base_name(target: &[u8]) -> &[u8] {
    let rest = target.get(STORE_DIR.len() + 1..).unwrap_or_default();
    rest.split(|&b| b == b'/').next().unwrap_or(rest)
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
fn absolute(target: &Path, dir: &Path) -> PathBuf {
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

struct Walker<'a> {
    /// `STATE/gcroots/auto`: where a link to nothing is stale.
    auto: &'a Path,
}

impl Walker<'_> {
    /// `findRoots(dir)`: every entry below `dir`, the entries of each
    /// directory in parallel (a Hydra's `hydra-roots` holds a million
    /// files) and its subdirectories too.
    fn walk(&self, dir: &Path, tree: Tree) -> Walked {
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
        let mut others: Vec<Found1> = Vec::new();
        for (_, name, ty) in rest {
            match self.entry(&d, name, ty, tree) {
                Some(Found1::Root(r, t)) => chunk.add(r, t),
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
                Found1::Other(e) => out.other.push(e),
                Found1::Dir(mut w) => out.append(&mut w),
                Found1::Indirect(i) => pending.push(i),
                Found1::Root(..) => {}
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
    ) -> Option<Found1> {
        let ty = match ty {
            Some(t) => t,
            None => match std::fs::symlink_metadata(d.path.join(&name)) {
                Ok(m) => m.file_type(),
                Err(e) => {
                    return Some(Found1::Other(
                        self.unreadable_or_warn(&d.path.join(&name), &e),
                    ));
                }
            },
        };
        if ty.is_dir() {
            // Only when the directory listing did not give the type.
            return Some(Found1::Dir(self.walk(&d.path.join(&name), tree)));
        }
        if ty.is_symlink() {
            return match self.link(d, name, tree) {
                Ok(e) => e,
                Err((path, e)) => Some(Found1::Other(self.unreadable_or_warn(&path, &e))),
            };
        }
        if ty.is_file() {
            // A file named after a store path roots it (its contents are
            // not read).
            name.to_str()
                .filter(|n| nix_heft_format::store_path::check_base_name(n).is_ok())?;
            return Some(Found1::Root(
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
    ) -> Result<Option<Found1>, (PathBuf, std::io::Error)> {
        let target = d.read_link(&name).map_err(|e| (d.path.join(&name), e))?;
        if in_store(target.as_bytes()) {
            let mtime = d.mtime(&name);
            let location = join(d.path, &name);
            return Ok(Some(if names_store_path(target.as_bytes()) {
                Found1::Root(
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
                Found1::Other(Entry::Stale(StaleLink {
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
        Ok(Some(Found1::Indirect(Indirect {
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
                Ok(Some(Found1::Root(r, t))) => roots.add(r, t),
                Ok(Some(Found1::Other(e))) => other.push(e),
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
    ) -> Result<Option<Found1>, (PathBuf, std::io::Error)> {
        let Indirect {
            path,
            at,
            tree,
            in_auto,
        } = i;
        let stale = |reason, at: PathBuf, path: PathBuf| {
            Ok(in_auto.then_some(Found1::Other(Entry::Stale(StaleLink {
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
            Found1::Root(
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
            Found1::Other(Entry::Stale(StaleLink {
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
fn generation_name(file: &[u8]) -> Option<(&[u8], u64)> {
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
fn parse_generation(profile: &[u8], name: &[u8]) -> Option<u64> {
    let s = name.strip_prefix(profile)?.strip_prefix(b"-")?;
    let p = memchr::memmem::find(s, b"-link")?;
    std::str::from_utf8(&s[..p]).ok()?.parse().ok()
}

/// The profiles `links` are generations of (a link `DIR/NAME-N-link`
/// whose `DIR/NAME` is a symlink), each read once with its directory's
/// generations; each such link is marked with its profile and number.
fn profiles_of(links: &mut [LinkRoot], state_profiles: &Path) -> Vec<Profile> {
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

/// `findRuntimeRoots` on Linux: the run-time roots by store path, and how
/// many processes could not be read.
fn find_runtime() -> (Vec<RuntimeRoot>, usize) {
    let pids: Vec<u32> = match std::fs::read_dir("/proc") {
        Ok(rd) => rd
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .collect(),
        Err(_) => return (Vec::new(), 0),
    };
    let per_pid: Vec<ProcessRefs> = pids.par_iter().map(|&pid| process_refs(pid)).collect();
    let mut unreadable = 0;
    let mut by_path: HashMap<StorePath, (Vec<String>, Vec<u32>)> = HashMap::new();
    let mut add = |target: &[u8], holder: String, pid: Option<u32>| {
        if let Some(sp) = to_store_path(target) {
            let e = by_path.entry(sp).or_default();
            e.0.push(holder);
            if let Some(pid) = pid {
                e.1.push(pid);
            }
        }
    };
    for (&pid, (refs, blocked)) in pids.iter().zip(per_pid) {
        unreadable += usize::from(blocked);
        for (target, holder) in refs {
            add(&target, holder, Some(pid));
        }
    }
    for f in [
        "/proc/sys/kernel/modprobe",
        "/proc/sys/kernel/fbsplash",
        "/proc/sys/kernel/poweroff_cmd",
    ] {
        // The whole file, newline included, as Nix reads it: a path ending
        // the file names no store path, one with a file below it does.
        if let Ok(text) = std::fs::read(f) {
            add(&text, f.to_string(), None);
        }
    }
    let mut out: Vec<RuntimeRoot> = by_path
        .into_iter()
        .map(|(store_path, (mut holders, mut pids))| {
            holders.sort();
            holders.dedup();
            pids.sort_unstable();
            pids.dedup();
            let processes = pids.into_iter().map(|p| (p, comm(p))).collect();
            RuntimeRoot {
                store_path,
                holders,
                processes,
            }
        })
        .collect();
    out.sort_by(|a, b| a.store_path.cmp(&b.store_path));
    (out, unreadable)
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default()
}

/// A process's candidate run-time roots (target, holder) and whether some
/// of it was forbidden.
type ProcessRefs = (Vec<(Vec<u8>, String)>, bool);

/// One process's candidate run-time roots (targets, with what holds
/// each), and whether some of it was forbidden. The order and the skips
/// are Nix's: a process whose `fd/` cannot be listed is skipped whole, and
/// its `environ` is read only after its `maps`.
fn process_refs(pid: u32) -> ProcessRefs {
    let mut out = Vec::new();
    let mut blocked = false;
    let mut proc_link =
        |file: String, out: &mut Vec<(Vec<u8>, String)>| match std::fs::read_link(&file) {
            Ok(t) => {
                let t = t.into_os_string().into_vec();
                if t.first() == Some(&b'/') {
                    out.push((t, file));
                }
            }
            Err(e) => blocked |= e.raw_os_error() == Some(libc::EACCES),
        };
    proc_link(format!("/proc/{pid}/exe"), &mut out);
    proc_link(format!("/proc/{pid}/cwd"), &mut out);
    let fd_dir = format!("/proc/{pid}/fd");
    match std::fs::read_dir(&fd_dir) {
        Ok(rd) => {
            for e in rd.flatten() {
                let name = e.file_name();
                if !name.as_bytes().starts_with(b".") {
                    proc_link(format!("{fd_dir}/{}", name.to_string_lossy()), &mut out);
                }
            }
        }
        Err(e) => {
            blocked |= e.raw_os_error() == Some(libc::EACCES);
            return (out, blocked);
        }
    }
    let maps_file = format!("/proc/{pid}/maps");
    match std::fs::read(&maps_file) {
        Ok(maps) => {
            for line in maps.split(|&b| b == b'\n') {
                // Six fields, the last a path without spaces (Nix's
                // regex: a "(deleted)" mapping does not match).
                let fields: Vec<&[u8]> = line
                    .split(|b| b.is_ascii_whitespace())
                    .filter(|f| !f.is_empty())
                    .collect();
                if fields.len() == 6 && fields[5].first() == Some(&b'/') {
                    out.push((fields[5].to_vec(), maps_file.clone()));
                }
            }
        }
        Err(e) => {
            blocked |= e.raw_os_error() == Some(libc::EACCES);
            return (out, blocked);
        }
    }
    let env_file = format!("/proc/{pid}/environ");
    match std::fs::read(&env_file) {
        Ok(env) => {
            for p in store_paths_in(&env) {
                out.push((p.to_vec(), env_file.clone()));
            }
        }
        Err(e) => blocked |= e.raw_os_error() == Some(libc::EACCES),
    }
    (out, blocked)
}

/// The matches of Nix's `/nix/store/[0-9a-z]+[0-9a-zA-Z+\-._?=]*` in
/// `text`, leftmost first, not overlapping, each as long as it goes.
fn store_paths_in(text: &[u8]) -> Vec<&[u8]> {
    let prefix = format!("{STORE_DIR}/");
    let finder = memchr::memmem::Finder::new(prefix.as_bytes());
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = finder.find(&text[at..]) {
        let start = at + i;
        let body = start + prefix.len();
        let first = text.get(body).copied();
        if !first.is_some_and(|c| c.is_ascii_digit() || c.is_ascii_lowercase()) {
            at = start + 1;
            continue;
        }
        let mut end = body;
        while end < text.len()
            && (text[end].is_ascii_alphanumeric() || b"+-._?=".contains(&text[end]))
        {
            end += 1;
        }
        out.push(&text[start..end]);
        at = end;
    }
    out
}

type TempFound = (Vec<TempRoots>, Vec<PathBuf>, Vec<String>);

/// `findTempRoots`: the files of processes that still hold their lock.
fn find_temp(dir: &Path) -> TempFound {
    let (mut live, mut stale, mut warnings) = (Vec::new(), Vec::new(), Vec::new());
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (live, stale, warnings),
        Err(e) => {
            warnings.push(format!("{}: {e}", dir.display()));
            return (live, stale, warnings);
        }
    };
    let mut names: Vec<OsString> = rd.flatten().map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        if name.as_bytes().first() == Some(&b'.') {
            continue;
        }
        let file = dir.join(&name);
        // Nix reads the leading digits (`std::stoi`); a name without any
        // stops its collector.
        let digits: String = name
            .to_string_lossy()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let Ok(pid) = digits.parse::<u32>() else {
            warnings.push(format!(
                "{}: not a process id (Nix's collector fails on it)",
                file.display()
            ));
            continue;
        };
        let f = match std::fs::File::open(&file) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                warnings.push(format!("{}: {e}", file.display()));
                continue;
            }
        };
        if !locked(&f) {
            stale.push(file);
            continue;
        }
        let Ok(text) = std::fs::read(&file) else {
            continue;
        };
        let mut paths = Vec::new();
        for p in text.split(|&b| b == 0).filter(|p| !p.is_empty()) {
            match std::str::from_utf8(p)
                .ok()
                .and_then(|s| StorePath::parse(STORE_DIR, s).ok())
            {
                Some(sp) => paths.push(sp),
                None => warnings.push(format!(
                    "{}: {:?} is not a store path (Nix's collector fails on it)",
                    file.display(),
                    String::from_utf8_lossy(p)
                )),
            }
        }
        live.push(TempRoots {
            comm: std::fs::metadata(format!("/proc/{pid}"))
                .ok()
                .map(|_| comm(pid)),
            file,
            pid,
            paths,
        });
    }
    (live, stale, warnings)
}

/// Whether some process holds a lock on `f`, which is what makes a
/// temporary roots file live: its Nix process holds an exclusive `flock`
/// for as long as it runs. Tested as the collector tests it, by asking for
/// a lock without waiting, but a shared one, released at once: nothing is
/// written, and a live owner's exclusive lock refuses it all the same.
fn locked(f: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this function borrows; no memory is
    // involved.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    if r == 0 {
        // SAFETY: as above.
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_UN) };
        return false;
    }
    std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_names_as_profiles_cc_parses_them() {
        assert_eq!(
            generation_name(b"profile-12-link"),
            Some((&b"profile"[..], 12))
        );
        assert_eq!(generation_name(b"a-b-3-link"), Some((&b"a-b"[..], 3)));
        assert_eq!(generation_name(b"-3-link"), None);
        assert_eq!(generation_name(b"result"), None);
        assert_eq!(parse_generation(b"p", b"p-7-link"), Some(7));
        assert_eq!(parse_generation(b"p", b"p-7-link.tmp-1-2"), Some(7));
        assert_eq!(parse_generation(b"p", b"/abs/p-7-link"), None);
        assert_eq!(parse_generation(b"p", b"q-7-link"), None);
    }

    #[test]
    fn absolute_is_lexical() {
        let d = Path::new("/a/b");
        assert_eq!(absolute(Path::new("../c/./d"), d), Path::new("/a/c/d"));
        assert_eq!(absolute(Path::new("/x//y/.."), d), Path::new("/x"));
        assert_eq!(absolute(Path::new("../../../.."), d), Path::new("/"));
    }

    #[test]
    fn store_paths_in_an_environment_as_nix_s_regex_finds_them() {
        let h = "0".repeat(32);
        let env = format!(
            "PATH=/nix/store/{h}-a/bin:/nix/store/{h}-b\0X=/nix/store/-bad /nix/store/Zz\0Y=/nix/store/{h}-c?d=e f"
        );
        let got: Vec<&str> = store_paths_in(env.as_bytes())
            .into_iter()
            .map(|p| std::str::from_utf8(p).unwrap())
            .collect();
        assert_eq!(
            got,
            [
                format!("/nix/store/{h}-a"),
                format!("/nix/store/{h}-b"),
                format!("/nix/store/{h}-c?d=e"),
            ]
        );
    }

    #[test]
    fn to_store_path_takes_the_path_a_file_is_in() {
        let h = "1".repeat(32);
        let sp = to_store_path(format!("/nix/store/{h}-kmod/bin/modprobe\n").as_bytes()).unwrap();
        assert_eq!(sp.name(), "kmod");
        assert!(to_store_path(format!("/nix/store/{h}-kmod\n").as_bytes()).is_none());
        assert!(to_store_path(b"/nix/store/").is_none());
        assert!(to_store_path(b"/nix/storex/a").is_none());
    }

    #[test]
    fn a_tree_of_links_as_the_collector_reads_it() {
        let d = tempfile::tempdir().unwrap();
        let state = d.path().join("nix/var/nix");
        let auto = state.join("gcroots/auto");
        std::fs::create_dir_all(&auto).unwrap();
        std::fs::create_dir_all(state.join("profiles")).unwrap();
        let h = |c: char| c.to_string().repeat(32);
        let sp = |c: char, n: &str| format!("/nix/store/{}-{n}", h(c));
        let home = d.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let ln = |t: &str, l: &Path| std::os::unix::fs::symlink(t, l).unwrap();
        // A result link through auto/, a direct root, a file root, a
        // profile with two generations, and stale links of each kind.
        ln(&sp('a', "app"), &home.join("result"));
        ln(home.join("result").to_str().unwrap(), &auto.join("r1"));
        ln(
            &format!("{}/bin/x", sp('b', "tool")),
            &state.join("gcroots/direct"),
        );
        std::fs::write(state.join("gcroots").join(format!("{}-file", h('c'))), "").unwrap();
        ln(&sp('d', "env-1"), &state.join("profiles/p-1-link"));
        ln(&sp('f', "env-2"), &state.join("profiles/p-2-link"));
        ln("p-2-link", &state.join("profiles/p"));
        ln("/gone", &auto.join("gone"));
        std::fs::create_dir(home.join("dir")).unwrap();
        ln(home.join("dir").to_str().unwrap(), &auto.join("dir"));
        ln("/etc/hostname", &home.join("outside"));
        ln(
            home.join("outside").to_str().unwrap(),
            &auto.join("outside"),
        );
        ln("/nix/store/.links/x", &state.join("gcroots/links"));
        // A link to a directory outside auto/ is a structure, not stale.
        ln(
            state.join("profiles").to_str().unwrap(),
            &state.join("gcroots/profiles"),
        );
        let f = find(
            &state,
            Look {
                runtime: false,
                temp: false,
            },
        );
        assert_eq!(f.profiles.len(), 1);
        let p = &f.profiles[0];
        assert_eq!(p.current, Some(2));
        assert!(p.in_state_profiles);
        assert_eq!(
            p.generations.iter().map(|g| g.0).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(f.links.iter().filter(|l| l.generation.is_some()).count(), 2);
        let mut roots: Vec<(String, String, bool)> = f
            .links
            .iter()
            .map(|r| {
                (
                    r.location
                        .strip_prefix(d.path())
                        .unwrap()
                        .display()
                        .to_string(),
                    r.store_base(&f.targets)[33..].to_string(),
                    r.via.is_some(),
                )
            })
            .collect();
        roots.sort();
        let s = |a: &str, b: &str, c| (a.to_string(), b.to_string(), c);
        assert_eq!(
            roots,
            [
                s("home/result", "app", true),
                s(
                    &format!("nix/var/nix/gcroots/{}-file", h('c')),
                    "file",
                    false
                ),
                s("nix/var/nix/gcroots/direct", "tool", false),
                s("nix/var/nix/profiles/p-1-link", "env-1", false),
                s("nix/var/nix/profiles/p-2-link", "env-2", false),
            ]
        );
        let stale: Vec<(String, &StaleReason)> = f
            .stale
            .iter()
            .map(|s| (s.location.display().to_string(), &s.reason))
            .collect();
        assert_eq!(stale.len(), 4, "{stale:?}");
        assert!(stale.contains(&("/gone".into(), &StaleReason::TargetGone)));
        assert!(
            stale
                .iter()
                .any(|(l, r)| l.ends_with("home/dir") && **r == StaleReason::TargetNotALink)
        );
        assert!(
            stale.iter().any(|(l, r)| l.ends_with("home/outside")
                && matches!(r, StaleReason::TargetOutsideStore(_)))
        );
        assert!(stale.iter().any(
            |(l, r)| l.ends_with("gcroots/links") && matches!(r, StaleReason::NotAStorePath(_))
        ));
    }
}
