//! Trees that are not (yet) valid store paths, read as if they were: an
//! output being built, a `--keep-failed` tree, an unpacked NAR, any
//! directory or file (issue 33).
//!
//! [`Scanned`] is a store source that answers for such trees the way Nix
//! registers a path: its references are the *candidates* whose hash part
//! occurs in its NAR serialisation (Nix's scanner looks for the hashes of
//! the build's inputs and outputs; here the candidates are every valid path
//! of the store, or the set given), its NAR size the length of that
//! serialisation. Every other path is the underlying store's. So the graph,
//! the read, the classifier and every report work on a tree unchanged:
//! same evidence, same grouping, same verdicts.
//!
//! Inside a sandboxed build there is no store database: a candidate the
//! store does not know (or no store at all) is scanned on disk where it
//! sits, as the build sees its inputs, so chains run through the inputs'
//! own files.
//!
//! Each path is serialised once (streamed, never held whole: memory is the
//! finder's carry-over and the memo of results).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::read::hash_finder::{HashFinder, Hit};
use nix_heft_format::store_path::{HASH_LEN, StorePath, WrittenPaths, is_name_byte};
use nix_heft_store::source::{Nar, PathContents, PathInfo, PathMetadata, RunLog, StoreSource};

/// A tree given to be read as the store path it is meant to become.
#[derive(Debug, Clone)]
pub struct Tree {
    /// The store path it stands for (`--as`; a self-reference is found by
    /// its hash).
    pub path: StorePath,
    /// Where its files are.
    pub dir: PathBuf,
}

/// The store path a tree outside the store stands for when none is given:
/// its name the tree's file name (as a store path name allows it), its
/// hash derived from the tree's absolute location, so that the same tree
/// gets the same path on every run and no real path is named.
pub fn placeholder_path(store_dir: &str, dir: &Path) -> StorePath {
    use sha2::Digest;
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let digest = sha2::Sha256::digest(abs.as_os_str().as_encoded_bytes());
    let hash = nix_heft_format::nixbase32::encode(&digest[..20]);
    let raw = abs
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Store path names allow letters, digits and `+-._?=`; anything else
    // becomes `-`, and a name must not start with a dot.
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii() && is_name_byte(c as u8) {
                c
            } else {
                '-'
            }
        })
        .collect();
    name = name.trim_start_matches('.').to_string();
    if name.is_empty() {
        name = "tree".into();
    }
    name.truncate(200);
    StorePath::parse(store_dir, &format!("{store_dir}/{hash}-{name}"))
        .or_else(|_| StorePath::parse(store_dir, &format!("{store_dir}/{hash}-tree")))
        .expect("a base-32 hash and a plain name make a valid store path")
}

/// Where a serialisation is written to be scanned: which wanted hashes
/// occur, which store paths are written out in full (when discovering),
/// and how many bytes passed.
struct ScanSink<'w> {
    finder: HashFinder<'w>,
    hits: Vec<Hit>,
    found: HashSet<u32>,
    written: Option<WrittenPaths>,
    size: u64,
}

impl std::io::Write for ScanSink<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.size = self.size.saturating_add(buf.len() as u64);
        self.finder.feed(buf, &mut self.hits);
        // Only which hashes occur matters here (the read stage finds each
        // hold again, with its file and offset): the hits are dropped as
        // they come, so memory stays the carry-over.
        self.found.extend(self.hits.drain(..).map(|h| h.target));
        self.finder.forget_pending();
        if let Some(w) = &mut self.written {
            w.feed(buf, false);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A source of the store's paths plus unregistered trees (see the module
/// docs).
pub struct Scanned<'a> {
    base: Option<&'a dyn StoreSource>,
    store_dir: String,
    trees: HashMap<StorePath, PathBuf>,
    candidates: Vec<StorePath>,
    wanted: HashMap<[u8; HASH_LEN], u32>,
    memo: Mutex<HashMap<StorePath, Option<PathInfo>>>,
    own_log: RunLog,
    scan_candidates: bool,
    discover: bool,
}

/// Bytes read at a time from a serialisation.
const CHUNK: usize = 256 * 1024;

impl<'a> Scanned<'a> {
    /// `trees` over `base` (none inside a build), scanned for the hashes
    /// of `candidates` (the trees' own paths are always candidates, so a
    /// self-reference is found).
    pub fn new(
        base: Option<&'a dyn StoreSource>,
        store_dir: &str,
        trees: Vec<Tree>,
        candidates: Vec<StorePath>,
    ) -> Scanned<'a> {
        let mut all: Vec<StorePath> = candidates;
        all.extend(trees.iter().map(|t| t.path.clone()));
        all.sort();
        all.dedup();
        let wanted = all
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let h: [u8; HASH_LEN] = p.hash_part().as_bytes().try_into().ok()?;
                Some((h, i as u32))
            })
            .collect();
        Scanned {
            base,
            store_dir: store_dir.to_string(),
            trees: trees.into_iter().map(|t| (t.path, t.dir)).collect(),
            candidates: all,
            wanted,
            memo: Mutex::new(HashMap::new()),
            own_log: RunLog::default(),
            scan_candidates: true,
            discover: false,
        }
    }

    /// Also takes as references the store paths written out in full
    /// (`/nix/store/<hash>-<name>`) that exist on this machine's disk,
    /// whether or not they are candidates: inside a sandbox only the
    /// build's input closure exists, so these are the inputs Nix's scanner
    /// would find that the environment does not name (glibc through a
    /// compiler wrapper, an input's own dependencies).
    pub fn discovering(mut self) -> Self {
        self.discover = true;
        self
    }

    /// Candidates the store does not hold become leaves (no references,
    /// size 0) instead of being scanned on disk: enough to know a tree's
    /// direct references, without reading every input of a build.
    pub fn candidates_as_leaves(mut self) -> Self {
        self.scan_candidates = false;
        self
    }

    /// Where a path's files are: a tree's directory, the store's own
    /// answer, or (a candidate the store does not hold, inside a build)
    /// the store path itself on this machine's disk.
    fn files_of(&self, path: &StorePath) -> Option<PathBuf> {
        if let Some(d) = self.trees.get(path) {
            return Some(d.clone());
        }
        // The store's answer counts where the files are there (a local
        // store names where a path would be, held or not).
        if let Some(r) = self.base.and_then(|b| b.real_path(path))
            && std::fs::symlink_metadata(&r).is_ok()
        {
            return Some(r);
        }
        let on_disk = PathBuf::from(path.as_str());
        std::fs::symlink_metadata(&on_disk)
            .is_ok()
            .then_some(on_disk)
    }

    /// The NAR serialisation of `dir` scanned: its length and the
    /// candidates whose hash occurs in it.
    fn scan(&self, path: &StorePath, dir: &Path) -> nix_heft_store::Result<PathInfo> {
        // The serialisation is written straight into the scanner (no pipe,
        // no thread): a buffered writer lets each file be read into its
        // buffer directly, so every byte is copied once.
        let mut sink = std::io::BufWriter::with_capacity(
            CHUNK,
            ScanSink {
                finder: HashFinder::new(&self.wanted),
                hits: Vec::new(),
                found: HashSet::new(),
                written: self.discover.then(|| WrittenPaths::new(&self.store_dir)),
                size: 0,
            },
        );
        let done = nix_heft_format::nar::dump::dump(dir, &mut sink).and_then(|()| sink.flush());
        done.map_err(|source| nix_heft_types::Error::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let ScanSink {
            found,
            written,
            size,
            ..
        } = sink.into_inner().map_err(|e| nix_heft_types::Error::Io {
            path: dir.to_path_buf(),
            source: e.into_error(),
        })?;
        let mut references: Vec<StorePath> = found
            .into_iter()
            .map(|i| self.candidates[i as usize].clone())
            .collect();
        if let Some(mut written) = written {
            written.feed(&[], true);
            references.extend(
                written
                    .into_paths()
                    .into_iter()
                    .filter(|p| p != path && self.files_of(p).is_some()),
            );
        }
        references.sort();
        references.dedup();
        Ok(PathInfo {
            path: path.clone(),
            nar_size: size,
            references,
        })
    }
}

impl PathMetadata for Scanned<'_> {
    fn store_dir(&self) -> &str {
        &self.store_dir
    }

    fn describe(&self) -> String {
        let trees: Vec<String> = self
            .trees
            .values()
            .map(|d| d.display().to_string())
            .collect();
        match self.base {
            Some(b) => format!(
                "{} (and the unregistered {})",
                b.describe(),
                trees.join(", ")
            ),
            None => format!(
                "the unregistered {} and the files of its candidates",
                trees.join(", ")
            ),
        }
    }

    fn path_info(&self, path: &StorePath) -> nix_heft_store::Result<Option<PathInfo>> {
        if let Some(i) = self
            .memo
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
        {
            return Ok(i.clone());
        }
        let info = if let Some(dir) = self.trees.get(path) {
            Some(self.scan(path, dir)?)
        } else {
            match self.base.map(|b| b.path_info(path)).transpose()?.flatten() {
                Some(i) => Some(i),
                None if self.wanted.contains_key(path.hash_part().as_bytes())
                    || (self.discover && self.files_of(path).is_some()) =>
                {
                    match self.files_of(path) {
                        Some(d) if self.scan_candidates => Some(self.scan(path, &d)?),
                        // Not scanned, or nowhere to read (a candidate
                        // named with --to that no store holds): a leaf,
                        // so that the tree's reference to it is still
                        // shown with the files that hold it.
                        _ => Some(PathInfo {
                            path: path.clone(),
                            nar_size: 0,
                            references: Vec::new(),
                        }),
                    }
                }
                None => None,
            }
        };
        self.memo
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.clone(), info.clone());
        Ok(info)
    }

    fn all_paths(&self) -> nix_heft_store::Result<Vec<StorePath>> {
        let mut all = match self.base {
            Some(b) => b.all_paths()?,
            None => Vec::new(),
        };
        all.extend(self.trees.keys().cloned());
        Ok(all)
    }
}

impl PathContents for Scanned<'_> {
    fn real_path(&self, path: &StorePath) -> Option<PathBuf> {
        self.files_of(path)
    }

    fn nar(&self, path: &StorePath, check_file: bool) -> nix_heft_store::Result<Option<Nar>> {
        if !self.trees.contains_key(path)
            && let Some(b) = self.base
            && let Some(n) = b.nar(path, check_file)?
        {
            return Ok(Some(n));
        }
        let Some(dir) = self.files_of(path) else {
            return Ok(None);
        };
        let reader = nix_heft_format::nar::dump::reader(&dir).map_err(|source| {
            nix_heft_types::Error::Io {
                path: dir.clone(),
                source,
            }
        })?;
        Ok(Some(Nar {
            reader,
            file_check: None,
            downloaded: false,
        }))
    }

    fn listing(
        &self,
        path: &StorePath,
    ) -> nix_heft_store::Result<Option<nix_heft_format::nar::tree::FileTree>> {
        match self.base {
            Some(b) if !self.trees.contains_key(path) => b.listing(path),
            _ => Ok(None),
        }
    }
}

impl StoreSource for Scanned<'_> {
    fn log(&self) -> &RunLog {
        match self.base {
            Some(b) => b.log(),
            None => &self.own_log,
        }
    }
}

/// What `refs`, `why` and `size` are asked to read as a tree (`--dir`,
/// `--as`, `--candidates`, `--to`): a directory or file that is not a
/// valid store path, the path it stands for, and its candidates.
#[derive(Debug, Clone, Default)]
pub struct TreeRequest {
    /// The tree; `None` to read a ROOT that names an unregistered path of
    /// the store as its tree (or the store alone).
    pub dir: Option<PathBuf>,
    /// The store path it stands for (default: its own path when it is
    /// under the store directory, else [`placeholder_path`]).
    pub as_path: Option<StorePath>,
    /// A file of candidates, one store path per line (`#` comments).
    pub candidates_file: Option<PathBuf>,
    /// Candidates given one by one.
    pub to: Vec<StorePath>,
}

impl TreeRequest {
    /// Whether the candidates are given (then no store is needed: they
    /// are read from disk).
    pub fn names_candidates(&self) -> bool {
        self.candidates_file.is_some() || !self.to.is_empty()
    }
}

/// A tree opened over the run's store, as a [`TreeRequest`] asks.
pub struct Opened {
    /// The run's store, when it could be opened (none inside a build).
    pub base: Option<Box<dyn StoreSource>>,
    /// The tree's store path and where its files are, when there is one.
    pub tree: Option<(StorePath, PathBuf)>,
    candidates: Vec<StorePath>,
}

/// Opens `req`'s tree over `base`: `req.dir`, or, without one, the ROOT
/// `root` when it names a path under the store directory that exists on
/// disk but is not valid (a failed build's output). A missing tree is an
/// I/O error (exit 1, as a missing path); without a tree, the store alone.
pub fn open_tree(
    base: Option<Box<dyn StoreSource>>,
    store_dir: &str,
    req: &TreeRequest,
    root: Option<&str>,
) -> Result<Opened> {
    let dir = match (&req.dir, root) {
        (Some(d), _) => Some(d.clone()),
        (None, Some(r)) => unregistered_root(base.as_deref(), store_dir, r)?,
        (None, None) => None,
    };
    let Some(dir) = dir else {
        return Ok(Opened {
            base,
            tree: None,
            candidates: Vec::new(),
        });
    };
    std::fs::symlink_metadata(&dir).map_err(|source| nix_heft_types::Error::Io {
        path: dir.clone(),
        source,
    })?;
    let path = match &req.as_path {
        Some(p) => p.clone(),
        None => {
            let abs = std::path::absolute(&dir).unwrap_or(dir.clone());
            StorePath::parse(store_dir, &abs.to_string_lossy())
                .unwrap_or_else(|_| placeholder_path(store_dir, &dir))
        }
    };
    let mut candidates = given_candidates(store_dir, req)?;
    if candidates.is_empty() {
        candidates = match &base {
            Some(b) => b.all_paths()?,
            None => {
                return Err(Error::NoCandidates);
            }
        };
    }
    Ok(Opened {
        base,
        tree: Some((path, dir)),
        candidates,
    })
}

/// The candidates `req` gives: its file's lines, then `to`.
fn given_candidates(store_dir: &str, req: &TreeRequest) -> Result<Vec<StorePath>> {
    let mut out = Vec::new();
    if let Some(f) = &req.candidates_file {
        let text = std::fs::read_to_string(f).map_err(|source| nix_heft_types::Error::Io {
            path: f.clone(),
            source,
        })?;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            out.push(
                StorePath::parse(store_dir, line).map_err(|e| Error::BadCandidate {
                    file: f.clone(),
                    line: n + 1,
                    reason: e.to_string(),
                })?,
            );
        }
    }
    out.extend(req.to.iter().cloned());
    Ok(out)
}

/// Where the files of `p` are in `base` (or at its own path without a
/// store that has files on disk).
fn files_in(base: Option<&dyn StoreSource>, p: &StorePath) -> PathBuf {
    base.and_then(nix_heft_store::source::files_dir)
        .map(|d| d.join(p.base_name()))
        .unwrap_or_else(|| PathBuf::from(p.as_str()))
}

/// A ROOT that names a path under the store directory which exists on
/// disk but is not valid (a failed build's output): its files.
fn unregistered_root(
    base: Option<&dyn StoreSource>,
    store_dir: &str,
    root: &str,
) -> Result<Option<PathBuf>> {
    let Ok(p) = StorePath::parse(store_dir, root) else {
        return Ok(None);
    };
    let Some(b) = base else {
        return Ok(None);
    };
    if b.is_valid(&p)? {
        return Ok(None);
    }
    let on_disk = files_in(base, &p);
    Ok(std::fs::symlink_metadata(&on_disk)
        .is_ok()
        .then_some(on_disk))
}

impl Opened {
    /// Runs `f` with the source to read: the tree over the store, or the
    /// store alone (`None` without either).
    pub fn with_source<T>(&self, f: impl FnOnce(&dyn StoreSource) -> T) -> Option<T> {
        match (&self.tree, &self.base) {
            (Some((path, dir)), base) => {
                let store_dir = base
                    .as_deref()
                    .map_or(nix_heft_store::source::DEFAULT_STORE_DIR, |b| b.store_dir());
                let s = Scanned::new(
                    base.as_deref(),
                    store_dir,
                    vec![Tree {
                        path: path.clone(),
                        dir: dir.clone(),
                    }],
                    self.candidates.clone(),
                );
                Some(f(&s))
            }
            (None, Some(b)) => Some(f(b.as_ref())),
            (None, None) => None,
        }
    }

    /// The tree's store path, the ROOT the command reads.
    pub fn root(&self) -> Option<String> {
        self.tree.as_ref().map(|(p, _)| p.to_string())
    }

    /// Whether `path` is an unregistered path whose files are on disk but
    /// that is no candidate of the tree (a sibling output of a failed
    /// build): what a tree's reader cannot see unless it is named.
    pub fn unnamed_unregistered(&self, store_dir: &str, path: &str) -> bool {
        let Ok(p) = StorePath::parse(store_dir, path) else {
            return false;
        };
        self.tree.is_some()
            && !self.candidates.contains(&p)
            && !self
                .base
                .as_deref()
                .is_some_and(|b| b.is_valid(&p).unwrap_or(true))
            && std::fs::symlink_metadata(files_in(self.base.as_deref(), &p)).is_ok()
    }
}

/// The text of a build's structured attributes (`.attrs.json`), read
/// where the builder can reach it: `NIX_ATTRS_JSON_FILE` when that file
/// exists, else `.attrs.json` in `NIX_BUILD_TOP`. Nix 2.8 sets
/// `NIX_ATTRS_JSON_FILE` to the host's build directory, which a sandboxed
/// builder sees as `/build` (NixOS/nix#6736): stdenv's `setup.sh` falls
/// back the same way. `None` for a build without structured attributes.
pub fn structured_attrs(
    vars: &std::collections::BTreeMap<String, String>,
) -> Result<Option<String>> {
    let named = vars.get("NIX_ATTRS_JSON_FILE").map(PathBuf::from);
    let beside = vars
        .get("NIX_BUILD_TOP")
        .map(|t| PathBuf::from(t).join(".attrs.json"));
    let Some(file) = named
        .iter()
        .chain(beside.iter())
        .find(|f| f.is_file())
        .cloned()
    else {
        return Ok(None);
    };
    Ok(std::fs::read_to_string(&file)
        .map(Some)
        .map_err(nix_heft_types::error::io_err(file))?)
}

/// The outputs among `outputs` whose files are on disk, as trees: inside
/// a build (no `base`) every one that exists; after it, those `base` does
/// not hold whose files a failed build left where the store keeps them.
pub fn left_outputs<'p>(
    base: Option<&dyn StoreSource>,
    outputs: impl IntoIterator<Item = &'p StorePath>,
) -> Result<Vec<Tree>> {
    let mut trees = Vec::new();
    for p in outputs {
        if let Some(b) = base
            && b.is_valid(p)?
        {
            continue;
        }
        let dir = files_in(base, p);
        if std::fs::symlink_metadata(&dir).is_ok() {
            trees.push(Tree {
                path: p.clone(),
                dir,
            });
        }
    }
    Ok(trees)
}

/// The derivation `path` names, and the output it is when it is one: a
/// `.drv` itself; an output's deriver as the store records it (`nix
/// path-info --derivation`); or, for an output a failed build left
/// unregistered (no deriver recorded), the valid derivation that lists it
/// as an output (Nix's `queryValidDerivers`).
pub fn derivation_of(
    base: &dyn StoreSource,
    path: &StorePath,
) -> Result<(StorePath, Option<StorePath>)> {
    if path.name().ends_with(".drv") {
        return Ok((path.clone(), None));
    }
    let deriver = match base.deriver(path)? {
        Some(d) => Some(d),
        None => base.valid_derivers(path)?.into_iter().next(),
    };
    match deriver {
        Some(d) => Ok((d, Some(path.clone()))),
        None => Err(Error::NoDeriver {
            path: path.to_string(),
        }),
    }
}

/// The `.drv` at `drv`, read where `base` keeps its files.
pub fn read_derivation(
    base: &dyn StoreSource,
    drv: &StorePath,
) -> Result<nix_heft_format::derivation::Derivation> {
    let file = base
        .real_path(drv)
        .unwrap_or_else(|| PathBuf::from(drv.as_str()));
    nix_heft_format::derivation::Derivation::read(base.store_dir(), &file).map_err(|e| {
        nix_heft_store::Error::BadDerivation {
            path: drv.to_string(),
            reason: e.to_string(),
        }
        .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(hash_char: char, name: &str) -> StorePath {
        let hash: String = std::iter::repeat_n(hash_char, 32).collect();
        StorePath::parse("/nix/store", &format!("/nix/store/{hash}-{name}")).unwrap()
    }

    #[test]
    fn a_tree_references_the_candidates_it_names_and_itself() {
        let tmp = tempfile::tempdir().unwrap();
        let dep = sp('1', "dep");
        let other = sp('2', "other");
        let me = sp('3', "me");
        let dir = tmp.path().join("out");
        std::fs::create_dir_all(dir.join("share")).unwrap();
        std::fs::write(
            dir.join("share/README"),
            format!("see {dep}/bin and {me}/lib\n"),
        )
        .unwrap();
        std::os::unix::fs::symlink(format!("{dep}/lib"), dir.join("link")).unwrap();
        let s = Scanned::new(
            None,
            "/nix/store",
            vec![Tree {
                path: me.clone(),
                dir: dir.clone(),
            }],
            vec![dep.clone(), other.clone()],
        );
        let info = s.path_info(&me).unwrap().unwrap();
        assert_eq!(info.references, vec![dep.clone(), me.clone()]);
        // The length of the NAR serialisation, as Nix registers it.
        let mut nar = Vec::new();
        nix_heft_format::nar::dump::dump(&dir, &mut nar).unwrap();
        assert_eq!(info.nar_size, nar.len() as u64);
        // A candidate neither in a store nor on disk is a leaf.
        let leaf = s.path_info(&other).unwrap().unwrap();
        assert_eq!((leaf.nar_size, leaf.references.len()), (0, 0));
        // A path that is no candidate is not there.
        assert_eq!(s.path_info(&sp('9', "nothing")).unwrap(), None);
        assert_eq!(s.real_path(&me), Some(dir));
    }

    #[test]
    fn placeholders_are_valid_and_stable() {
        let a = placeholder_path("/nix/store", Path::new("/tmp/x y/.out"));
        assert_eq!(
            a,
            placeholder_path("/nix/store", Path::new("/tmp/x y/.out"))
        );
        assert_eq!(a.name(), "out");
        let b = placeholder_path("/nix/store", Path::new("/"));
        assert_eq!(b.name(), "tree");
        assert_ne!(a.hash_part(), b.hash_part());
    }

    #[test]
    fn a_hash_across_chunks_is_found() {
        let tmp = tempfile::tempdir().unwrap();
        let dep = sp('4', "dep");
        let me = sp('5', "me");
        let file = tmp.path().join("big");
        // The hash straddles the first chunk boundary of the serialisation.
        let mut bytes = vec![0u8; CHUNK - 150];
        bytes.extend_from_slice(dep.as_str().as_bytes());
        bytes.extend(vec![7u8; 1000]);
        std::fs::write(&file, &bytes).unwrap();
        let s = Scanned::new(
            None,
            "/nix/store",
            vec![Tree {
                path: me.clone(),
                dir: file,
            }],
            vec![dep.clone()],
        );
        assert_eq!(s.path_info(&me).unwrap().unwrap().references, vec![dep]);
    }
}
