//! The trace file: what `nix-heft trace` writes and `--trace` reads.
//!
//! JSON, one object:
//!
//! ```json
//! { "version": 1, "command": ["python3", "-c", "import json"],
//!   "env": {"LD_LIBRARY_PATH": "..."}, "env_note": "CI run",
//!   "started": "2026-12-01T08:40:00Z", "seconds": 0.12,
//!   "kernel": "Linux 6.18.44 x86_64", "store_dir": "/nix/store",
//!   "exit": {"code": 0}, "complete": true, "timed_out": false, "processes": 3,
//!   "paths": { "/nix/store/<hash>-glibc-2.40": { "files": {
//!       "lib/libc.so.6": {"ops": {"open": 1, "mmap": 2}, "failed": {}, "size": 2105184},
//!       "lib/libfoo.so": {"ops": {}, "failed": {"open": 4}} } } } }
//! ```
//!
//! Per store path, per file (relative to the store path, `""` for the path
//! itself): successful operations and failed ones, counted. A symlink that
//! was followed gets the operation of the access that went through it, and
//! `link_to` the files it led to; a file reached through symlinks names
//! them in `via` (absolute paths) and each ordered chain in `chains`, so
//! the chain is kept in both directions.
//! Knows nothing of tracing or of stores beyond the store directory string.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use nix_heft_types::error::{Error, Result};

/// The trace format's version; readers refuse any other.
pub const VERSION: u32 = 1;

/// One file-system operation a traced process did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    /// open, openat, openat2, creat.
    Open,
    /// execve, execveat (and the interpreter the kernel loaded for a script).
    Exec,
    /// mmap of a file descriptor.
    Mmap,
    /// stat, lstat, newfstatat, statx.
    Stat,
    /// access, faccessat, faccessat2.
    Access,
    /// readlink, readlinkat.
    Readlink,
    /// getdents64 on a directory (a directory listed).
    List,
}

impl Op {
    /// Whether a successful operation of this kind *uses* the file (proof),
    /// rather than only looking at it.
    pub fn is_use(self) -> bool {
        matches!(self, Op::Open | Op::Exec | Op::Mmap)
    }

    /// The name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Open => "open",
            Op::Exec => "exec",
            Op::Mmap => "mmap",
            Op::Stat => "stat",
            Op::Access => "access",
            Op::Readlink => "readlink",
            Op::List => "list",
        }
    }
}

/// How the traced workload ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitInfo {
    /// Exit code of the first process, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// The signal that killed the first process (`SIGSEGV`), when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

/// What one file was subjected to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileTrace {
    /// Successful operations, counted.
    #[serde(default)]
    pub ops: BTreeMap<Op, u64>,
    /// Failed operations (a loader probing its search path), counted.
    #[serde(default)]
    pub failed: BTreeMap<Op, u64>,
    /// For a symlink that was followed: the files it led to (absolute).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub link_to: BTreeSet<String>,
    /// For a file reached through symlinks: those symlinks (absolute).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub via: BTreeSet<String>,
    /// Each distinct chain of symlinks that led to this file, in the order
    /// they were followed (the first is the one the process named).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub chains: BTreeSet<Vec<String>>,
    /// Size in bytes of the regular file, when it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

impl FileTrace {
    /// Whether the file was used: opened, executed or mapped, successfully.
    pub fn used(&self) -> bool {
        self.ops.iter().any(|(op, &n)| op.is_use() && n > 0)
    }

    /// Whether anything happened to the file at all.
    pub fn touched(&self) -> bool {
        self.ops
            .values()
            .chain(self.failed.values())
            .any(|&n| n > 0)
    }

    fn merge(&mut self, other: &FileTrace) {
        for (op, n) in &other.ops {
            let c = self.ops.entry(*op).or_default();
            *c = c.saturating_add(*n);
        }
        for (op, n) in &other.failed {
            let c = self.failed.entry(*op).or_default();
            *c = c.saturating_add(*n);
        }
        self.link_to.extend(other.link_to.iter().cloned());
        self.via.extend(other.via.iter().cloned());
        self.chains.extend(other.chains.iter().cloned());
        if self.size.is_none() {
            self.size = other.size;
        }
    }
}

/// The files of one store path that were touched.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathTrace {
    /// File relative to the store path (`""` for the path itself) → what
    /// happened to it.
    pub files: BTreeMap<String, FileTrace>,
}

impl PathTrace {
    /// Whether any file of the path was used (not only looked at).
    pub fn used(&self) -> bool {
        self.files.values().any(FileTrace::used)
    }

    /// Bytes of the distinct regular files used.
    pub fn bytes_used(&self) -> u64 {
        self.files
            .values()
            .filter(|f| f.used())
            .filter_map(|f| f.size)
            .fold(0u64, u64::saturating_add)
    }

    /// Bytes of the distinct regular files touched, used or looked at.
    pub fn bytes_touched(&self) -> u64 {
        self.files
            .values()
            .filter_map(|f| f.size)
            .fold(0u64, u64::saturating_add)
    }
}

/// One trace file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceFile {
    /// Format version, [`VERSION`].
    pub version: u32,
    /// The traced command and its arguments.
    pub command: Vec<String>,
    /// Environment variables that affect loading (`LD_*`, `*_PATH`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The user's `--env-note`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_note: Option<String>,
    /// When the workload started (RFC 3339, UTC).
    pub started: String,
    /// How long it ran, in seconds.
    pub seconds: f64,
    /// The kernel it ran on (`Linux 6.1.0 x86_64`).
    pub kernel: String,
    /// The store directory whose paths were recorded.
    pub store_dir: String,
    /// How the first process ended.
    pub exit: ExitInfo,
    /// False when the trace stopped early (signal, timeout): what was
    /// recorded is kept, but more may have been touched.
    pub complete: bool,
    /// True when `--timeout` ended the trace.
    #[serde(default)]
    pub timed_out: bool,
    /// How many processes and threads were traced.
    pub processes: u64,
    /// Store path → the files of it that were touched.
    pub paths: BTreeMap<String, PathTrace>,
}

impl TraceFile {
    /// Reads and checks a trace file.
    pub fn load(file: &Path) -> Result<TraceFile> {
        let bad = |reason: String| Error::BadTrace {
            file: file.to_path_buf(),
            reason,
        };
        let text = std::fs::read(file).map_err(|e| bad(e.to_string()))?;
        let v: serde_json::Value = serde_json::from_slice(&text).map_err(|e| {
            bad(format!(
                "not JSON ({e}); is it a file `nix-heft trace -o` wrote?"
            ))
        })?;
        match v.get("version").and_then(|x| x.as_u64()) {
            Some(n) if n == u64::from(VERSION) => {}
            Some(n) => {
                return Err(bad(format!(
                    "format version {n}, this nix-heft reads {VERSION}"
                )));
            }
            None => {
                return Err(bad(
                    "no \"version\": not a trace file that `nix-heft trace -o` wrote".into(),
                ));
            }
        }
        let t: TraceFile = serde_json::from_value(v).map_err(|e| bad(e.to_string()))?;
        let prefix = format!("{}/", t.store_dir.trim_end_matches('/'));
        for p in t.paths.keys() {
            let name = p.strip_prefix(&prefix).unwrap_or("");
            if name.is_empty() || name.contains('/') {
                return Err(bad(format!(
                    "'{p}' is not a store path under {}",
                    t.store_dir
                )));
            }
        }
        Ok(t)
    }
}

/// Several trace files merged into one picture, remembering which file
/// each use came from.
#[derive(Debug, Clone, Default)]
pub struct TraceSet {
    /// The files, as given.
    pub files: Vec<PathBuf>,
    /// Store path → merged files touched.
    pub paths: BTreeMap<String, PathTrace>,
    /// Store path → relative file → the trace files that used it.
    used_in: BTreeMap<String, BTreeMap<String, BTreeSet<usize>>>,
}

impl TraceSet {
    /// Loads and merges the trace files. Traces from different store
    /// directories cannot be merged.
    pub fn load(files: &[PathBuf]) -> Result<TraceSet> {
        let mut set = TraceSet::default();
        let mut store_dir: Option<String> = None;
        for f in files {
            let t = TraceFile::load(f)?;
            if let Some(sd) = &store_dir
                && *sd != t.store_dir
            {
                return Err(Error::BadTrace {
                    file: f.clone(),
                    reason: format!(
                        "recorded store {} but an earlier trace recorded {sd}",
                        t.store_dir
                    ),
                });
            }
            store_dir = Some(t.store_dir.clone());
            set.add(f.clone(), &t);
        }
        Ok(set)
    }

    /// Adds one trace.
    pub fn add(&mut self, name: PathBuf, t: &TraceFile) {
        let idx = self.files.len();
        self.files.push(name);
        for (p, pt) in &t.paths {
            let dst = self.paths.entry(p.clone()).or_default();
            for (rel, ft) in &pt.files {
                dst.files.entry(rel.clone()).or_default().merge(ft);
                if ft.used() {
                    self.used_in
                        .entry(p.clone())
                        .or_default()
                        .entry(rel.clone())
                        .or_default()
                        .insert(idx);
                }
            }
        }
    }

    /// What happened to `rel` in store path `path`, if anything.
    pub fn file(&self, path: &str, rel: &str) -> Option<&FileTrace> {
        self.paths.get(path)?.files.get(rel)
    }

    /// The first trace file (its name) that used `rel` in `path`.
    pub fn used_by(&self, path: &str, rel: &str) -> Option<&Path> {
        let i = *self.used_in.get(path)?.get(rel)?.iter().next()?;
        Some(&self.files[i])
    }

    /// The first trace file that used `rel` in `path` or, when `rel` is a
    /// directory, a file under it, with the file used. An empty `rel` (the
    /// store path itself) matches only the path itself: a string naming a
    /// package's root does not become used by any use inside it.
    pub fn used_at_or_under(&self, path: &str, rel: &str) -> Option<(&Path, &str)> {
        let files = self.used_in.get(path)?;
        let under = |f: &str| {
            f == rel || (!rel.is_empty() && f.strip_prefix(rel).is_some_and(|r| r.starts_with('/')))
        };
        files
            .iter()
            .filter(|(f, _)| under(f))
            .find_map(|(f, idx)| Some((self.files[*idx.iter().next()?].as_path(), f.as_str())))
    }

    /// The first trace file that used any file directly in directory `dir`
    /// of `path` (a library loaded from a RUNPATH directory), with the file.
    pub fn used_in_dir(&self, path: &str, dir: &str) -> Option<(&Path, &str)> {
        let files = self.used_in.get(path)?;
        for (rel, idx) in files {
            let parent = rel.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
            if parent == dir
                && let Some(&i) = idx.iter().next()
            {
                return Some((&self.files[i], rel));
            }
        }
        None
    }

    /// The names of the trace files, joined for a message.
    pub fn names(&self) -> String {
        self.files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TraceFile {
        let mut files = BTreeMap::new();
        files.insert(
            "lib/libz.so.1".to_string(),
            FileTrace {
                ops: [(Op::Open, 1), (Op::Mmap, 2)].into_iter().collect(),
                size: Some(100),
                ..Default::default()
            },
        );
        files.insert(
            "lib/libq.so".to_string(),
            FileTrace {
                failed: [(Op::Open, 3)].into_iter().collect(),
                ..Default::default()
            },
        );
        TraceFile {
            version: VERSION,
            command: vec!["x".into()],
            env: BTreeMap::new(),
            env_note: None,
            started: "2026-01-01T00:00:00Z".into(),
            seconds: 0.5,
            kernel: "Linux".into(),
            store_dir: "/nix/store".into(),
            exit: ExitInfo {
                code: Some(0),
                signal: None,
            },
            complete: true,
            timed_out: false,
            processes: 1,
            paths: [("/nix/store/aaaa-zlib".to_string(), PathTrace { files })]
                .into_iter()
                .collect(),
        }
    }

    #[test]
    fn round_trip_and_merge_counts() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        std::fs::write(&a, serde_json::to_string(&sample()).unwrap()).unwrap();
        assert_eq!(TraceFile::load(&a).unwrap(), sample());
        let set = TraceSet::load(&[a.clone(), a.clone()]).unwrap();
        let f = set.file("/nix/store/aaaa-zlib", "lib/libz.so.1").unwrap();
        assert_eq!(f.ops[&Op::Mmap], 4);
        assert!(f.used());
        let q = set.file("/nix/store/aaaa-zlib", "lib/libq.so").unwrap();
        assert!(!q.used() && q.touched());
        assert_eq!(
            set.used_in_dir("/nix/store/aaaa-zlib", "lib").unwrap().1,
            "lib/libz.so.1"
        );
        assert!(set.used_by("/nix/store/aaaa-zlib", "lib/libq.so").is_none());
    }

    #[test]
    fn refuses_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t.json");
        std::fs::write(&f, b"{\"version\": 1, \"paths\": ").unwrap();
        assert!(
            TraceFile::load(&f)
                .unwrap_err()
                .to_string()
                .contains("not JSON")
        );
        std::fs::write(&f, b"{\"version\": 9}").unwrap();
        assert!(
            TraceFile::load(&f)
                .unwrap_err()
                .to_string()
                .contains("version 9")
        );
        let mut t = sample();
        let pt = t.paths.remove("/nix/store/aaaa-zlib").unwrap();
        t.paths.insert("/etc/passwd".into(), pt);
        std::fs::write(&f, serde_json::to_string(&t).unwrap()).unwrap();
        assert!(
            TraceFile::load(&f)
                .unwrap_err()
                .to_string()
                .contains("not a store path")
        );
    }
}
