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

mod links;
mod runtime;
mod temp;

use links::{Entry, Walked, Walker, profiles_of};
use runtime::find_runtime;
use temp::find_temp;

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

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

#[cfg(test)]
mod tests {
    use super::links::{absolute, generation_name, parse_generation};
    use super::runtime::store_paths_in;
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
