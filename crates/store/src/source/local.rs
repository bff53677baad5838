//! A local or chroot Nix store, read straight from its SQLite database
//! (`ValidPaths`, `Refs`; schema in Nix's libstore/schema.sql).
//!
//! The database is opened read-only, and nix-heft never makes SQLite create
//! a file next to it. That and a writer (a `nix-build` registering paths
//! while nix-heft reads) decide how it is opened:
//!
//! - `-wal` and `-shm` exist (a writer or reader is around, or was killed),
//!   or the database uses a rollback journal: `mode=ro` with SQLite's
//!   normal locking. Every read is one read transaction, so a closure's
//!   paths and edges all come from one snapshot, and a writer's lock is
//!   waited for (busy timeout), never reported as "database is locked".
//!   From seeing the side files until SQLite holds its own lock, nix-heft
//!   holds a reader's lock on SQLite's shared range, so a writer closing
//!   meanwhile cannot remove them and make the open create them again.
//! - A WAL database without its side files: the normal state between
//!   builds, but a plain read-only open would make SQLite create them. It is
//!   read `immutable`, which ignores other processes, so each read is
//!   checked instead: the database file's identity (device, inode, size,
//!   modification and change times in nanoseconds) and the absence of the
//!   side files are taken before and after, and a read during which any of
//!   it changed is thrown away and done again on a fresh connection (with
//!   locking, once the side files exist). A writer writes into the `-wal`
//!   it creates first and rewrites the database only in a checkpoint, so a
//!   change shows (short of a whole writer session within one tick of the
//!   file system's clock after the write before it).
//! - Only when neither works (a lock held past the timeout, a file system
//!   that refuses the side files, a `-wal` without its `-shm`) is the
//!   database read `immutable` unchecked, with a warning.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::{
    DEFAULT_STORE_DIR, Nar, PathContents, PathInfo, PathMetadata, RawClosure, RunLog, StoreSource,
};
use crate::error::{Error, Result};
use nix_heft_format::store_path::StorePath;
use nix_heft_types::error::io_err;

/// How long a read waits for a writer's lock. Nix holds its write lock for
/// one registration at a time; a few seconds covers a busy machine.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How many times a checked immutable read is done again after the
/// database changed under it. After the first change the side files
/// normally exist and the next read takes the locking path, so running out
/// means a store being rewritten over and over.
const ATTEMPTS: usize = 5;

/// A local store (root `/`) or chroot store (any other root).
pub struct LocalStore {
    root: PathBuf,
    db_path: PathBuf,
    // rusqlite connections are Send but not Sync; queries are short, so one
    // mutex around one connection is simpler than a pool.
    db: Mutex<Db>,
    /// Where the fallbacks of [`connect`] are warned about.
    log: Arc<RunLog>,
    // Declared after `db`, so it is closed after the connection: closing
    // any descriptor of the file drops the process's POSIX locks on it,
    // SQLite's included.
    lock_file: std::fs::File,
    // `--verify`: NARs are serialised from disk and checked against the
    // database's `hash` column.
    verify: bool,
}

/// The open connection and what it can be trusted for.
struct Db {
    conn: Connection,
    mode: Mode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `mode=ro` with locking: each read is one read transaction.
    Locking,
    /// `immutable=1`, valid while the file is as it was at the open.
    Checked(Stamp),
    /// `immutable=1` because nothing else worked; warned about.
    Forced,
}

/// What a writer cannot avoid changing: the database file's identity and
/// times, and whether its WAL side files exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    wal: bool,
    shm: bool,
}

/// `db` with `ext` appended (`-wal`, `-shm`).
fn side_file(db: &Path, ext: &str) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(ext);
    PathBuf::from(s)
}

impl Stamp {
    fn take(db: &Path) -> Result<Stamp> {
        let m = std::fs::metadata(db).map_err(io_err(db))?;
        let exists = |ext: &str| std::fs::symlink_metadata(side_file(db, ext)).is_ok();
        Ok(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            wal: exists("-wal"),
            shm: exists("-shm"),
        })
    }
}

/// Set once the test pause (`NIX_HEFT_TEST_DB_PAUSE_MS`) has been taken.
static PAUSED: AtomicBool = AtomicBool::new(false);

/// Opens `db` the way its state allows (see the module docs); the warning
/// says why when it had to be read unchecked.
fn connect(db: &Path, lock_file: &std::fs::File) -> Result<(Db, Option<String>)> {
    // A writer opening or closing the database leaves a moment with the
    // `-wal` but not yet (or no longer) the `-shm`: wait that out before
    // taking it for a killed writer's leftovers.
    for _ in 0..HALF_STATE_WAITS {
        if let Some(c) = connect_once(db, lock_file, false)? {
            return Ok(c);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    connect_once(db, lock_file, true)?.ok_or_else(|| Error::Database {
        path: db.to_path_buf(),
        source: rusqlite::Error::InvalidQuery,
    })
}

/// How many times (20 ms apart) a `-wal` without its `-shm` is looked at
/// again before it is read immutably with a warning.
const HALF_STATE_WAITS: usize = 50;

/// One attempt of [`connect`]; `None` when the side files were half there
/// and `last` is not set.
fn connect_once(
    db: &Path,
    lock_file: &std::fs::File,
    last: bool,
) -> Result<Option<(Db, Option<String>)>> {
    let db_err = |source| Error::Database {
        path: db.to_path_buf(),
        source,
    };
    let header = read_header(db)?;
    let wal = header[18] == 2 || header[19] == 2;
    // Held until SQLite holds its own lock: side files seen now cannot be
    // removed by a closing writer before the open below uses them.
    let _hold = wal.then(|| SharedHold::take(lock_file));
    // Taken before the open, so a change during the open shows too.
    let stamp = Stamp::take(db)?;
    let forced = |why: String| -> Result<(Db, Option<String>)> {
        let conn = open_db(db, true).map_err(db_err)?;
        let warning = format!(
            "database {} {why}; reading it in immutable mode, so changes being made right \
             now may not be seen",
            db.display()
        );
        Ok((
            Db {
                conn,
                mode: Mode::Forced,
            },
            Some(warning),
        ))
    };
    if wal && !(stamp.wal && stamp.shm) {
        if stamp.wal {
            if !last {
                return Ok(None);
            }
            // Committed transactions can sit in a `-wal` whose writer was
            // killed; reading them needs the `-shm` SQLite would create.
            return forced("has a -wal file but no -shm file".into()).map(Some);
        }
        let conn = open_db(db, true).map_err(db_err)?;
        return Ok(Some((
            Db {
                conn,
                mode: Mode::Checked(stamp),
            },
            None,
        )));
    }
    let conn = open_db(db, false).map_err(db_err)?;
    match in_transaction(&conn, |c| probe(c).map_err(db_err)) {
        Ok(()) => Ok(Some((
            Db {
                conn,
                mode: Mode::Locking,
            },
            None,
        ))),
        Err(Error::Database { source, .. }) if is_lock_error(&source) => {
            forced(format!("is locked ({source})")).map(Some)
        }
        Err(Error::Database { source, .. }) if is_read_only_error(&source) => {
            forced(format!("cannot be opened with locking ({source})")).map(Some)
        }
        Err(e) => Err(e),
    }
}

/// SQLite's lock bytes (os_unix.c): readers lock the shared range, and a
/// connection closing must lock it exclusively before it removes the WAL
/// side files.
const SHARED_FIRST: i64 = 0x4000_0000 + 2;
const SHARED_SIZE: i64 = 510;

/// A read lock on SQLite's shared range, as an open-file-description lock:
/// it blocks a writer's close from removing the side files, like any
/// reader's, and, unlike a process-wide POSIX lock, neither disturbs nor is
/// disturbed by SQLite's own locks in this process. Released (never by
/// closing the file) when dropped. Without it, side files seen a moment
/// before the open could be removed by a closing writer, and the open would
/// make SQLite create them again.
struct SharedHold<'a> {
    file: Option<&'a std::fs::File>,
}

impl<'a> SharedHold<'a> {
    /// Waits up to the busy timeout for a writer's exclusive lock (a close
    /// in progress). Best effort: where the lock cannot be had, the open
    /// goes on without it.
    fn take(file: &'a std::fs::File) -> SharedHold<'a> {
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        loop {
            match set_lock(file, libc::F_RDLCK) {
                Ok(()) => return SharedHold { file: Some(file) },
                Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EACCES)
                    if std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return SharedHold { file: None },
            }
        }
    }
}

impl Drop for SharedHold<'_> {
    fn drop(&mut self) {
        if let Some(f) = self.file {
            let _ = set_lock(f, libc::F_UNLCK);
        }
    }
}

fn set_lock(file: &std::fs::File, kind: libc::c_int) -> nix::Result<()> {
    let lock = libc::flock {
        l_type: kind as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: SHARED_FIRST,
        l_len: SHARED_SIZE,
        l_pid: 0,
    };
    nix::fcntl::fcntl(file, nix::fcntl::FcntlArg::F_OFD_SETLK(&lock)).map(|_| ())
}

/// Runs `f` inside one read transaction, so all it reads is one snapshot.
/// `E` is the caller's error: the store's own, or the shared one its
/// traits answer with.
fn in_transaction<T, E: From<Error>>(
    c: &Connection,
    f: impl FnOnce(&Connection) -> Result<T, E>,
) -> Result<T, E> {
    let begin = |e| {
        E::from(Error::Database {
            path: c.path().map(PathBuf::from).unwrap_or_default(),
            source: e,
        })
    };
    c.execute_batch("BEGIN DEFERRED").map_err(begin)?;
    let r = f(c);
    // A read transaction has nothing to undo; ending it releases the
    // snapshot either way.
    let end = c.execute_batch(if r.is_ok() { "COMMIT" } else { "ROLLBACK" });
    match (r, end) {
        (Ok(v), Ok(())) => Ok(v),
        (Ok(_), Err(e)) => Err(begin(e)),
        (Err(e), _) => Err(e),
    }
}

impl LocalStore {
    /// Opens the store whose root directory is `root` (`/` for the system
    /// store), i.e. the database `root/nix/var/nix/db/db.sqlite`; warnings
    /// go to `log`.
    pub fn open(root: &Path, log: Arc<RunLog>) -> Result<Self> {
        let db_path = root.join("nix/var/nix/db/db.sqlite");
        let lock_file = std::fs::File::open(&db_path).map_err(io_err(&db_path))?;
        let (db, warning) = connect(&db_path, &lock_file)?;
        // Before the probe, which may warn again (see `LocalStore::read`).
        if let Some(w) = warning {
            log.warn(w);
        }
        let store = LocalStore {
            root: root.to_path_buf(),
            db_path,
            db: Mutex::new(db),
            log,
            lock_file,
            verify: false,
        };
        store.read(false, |c| probe(c).map_err(|e| store.db_err(e)))?;
        Ok(store)
    }

    /// With `verify`, every path read is serialised as a NAR from disk and
    /// its hash compared with the one the database recorded when the path
    /// was registered (`nix-store --verify --check-contents`): a file
    /// edited in place is a `hash-mismatch` problem.
    pub fn with_verify(mut self, verify: bool) -> Self {
        self.verify = verify;
        self
    }

    /// Runs `f` on one consistent snapshot of the database: inside one
    /// read transaction, or, on an immutable connection (where SQLite
    /// checks nothing), checked against the file's [`Stamp`] before and
    /// after and run again on a fresh connection when the database
    /// changed. `f` may run more than once, so it must only read. `pause`
    /// marks the closure read, where tests pause (see `crate::test_hooks`).
    pub(crate) fn read<T>(
        &self,
        pause: bool,
        mut f: impl FnMut(&Connection) -> Result<T>,
    ) -> Result<T> {
        let mut db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        for _ in 0..ATTEMPTS {
            match db.mode {
                Mode::Locking => {
                    return in_transaction(&db.conn, |c| {
                        let r = f(c);
                        if pause {
                            crate::test_hooks::pause("NIX_HEFT_TEST_DB_PAUSE_MS", &PAUSED);
                        }
                        r
                    });
                }
                Mode::Forced => return f(&db.conn),
                Mode::Checked(stamp) => {
                    if Stamp::take(&self.db_path)? == stamp {
                        let r = f(&db.conn);
                        if pause {
                            crate::test_hooks::pause("NIX_HEFT_TEST_DB_PAUSE_MS", &PAUSED);
                        }
                        if Stamp::take(&self.db_path)? == stamp {
                            return r;
                        }
                    }
                    // Changed: whatever was read may be torn or stale.
                    let (fresh, warning) = connect(&self.db_path, &self.lock_file)?;
                    *db = fresh;
                    if let Some(w) = warning {
                        self.log.warn(w);
                    }
                }
            }
        }
        Err(self.db_err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some(format!(
                "the database changed during each of {ATTEMPTS} reads; try again"
            )),
        )))
    }

    /// The store's root directory (`/` for the system store).
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn db_err(&self, source: rusqlite::Error) -> Error {
        Error::Database {
            path: self.db_path.clone(),
            source,
        }
    }

    pub(crate) fn parse_db_path(&self, s: &str) -> Result<StorePath> {
        Ok(StorePath::parse(DEFAULT_STORE_DIR, s)?)
    }

    /// `ValidPaths.narSize` as a size. SQLite stores it as a signed 64-bit
    /// integer, so a corrupt row can hold a negative one, which must not
    /// turn into a size near 2^64. NULL (databases from before Nix
    /// recorded sizes) counts as 0, as Nix itself reads it.
    pub(crate) fn nar_size(&self, path: &dyn std::fmt::Display, nar: Option<i64>) -> Result<u64> {
        let n = nar.unwrap_or(0);
        u64::try_from(n).map_err(|_| Error::NegativeNarSize {
            path: path.to_string(),
            nar_size: n.into(),
            store: self.describe(),
        })
    }

    /// The closure from one pass over `Refs` and one over `ValidPaths`,
    /// for closures that cover much of the store. `root_ids` are distinct
    /// and `root_paths` their paths, in the same order.
    ///
    /// Database ids are row ids, not dense: a database can hold ids near
    /// `i64::MAX` (rows inserted with explicit ids, or after `VACUUM` of an
    /// edited file). So every array here is indexed by the position of an id
    /// in the sorted list of ids actually present, never by the id itself.
    fn closure_by_table_scan(
        &self,
        conn: &Connection,
        root_ids: &[i64],
        root_paths: &[StorePath],
    ) -> Result<RawClosure> {
        let mut db_ids: Vec<i64> = Vec::new();
        {
            let mut st = conn
                .prepare("SELECT id FROM ValidPaths")
                .map_err(|e| self.db_err(e))?;
            let mut rows = st.query([]).map_err(|e| self.db_err(e))?;
            while let Some(r) = rows.next().map_err(|e| self.db_err(e))? {
                db_ids.push(r.get(0).map_err(|e| self.db_err(e))?);
            }
        }
        // `id` is the primary key, so already unique; sorting makes the
        // dense index a position in the sorted ids.
        db_ids.sort_unstable();
        db_ids.dedup();
        let ids = DenseIds::new(db_ids.clone());
        let dense = |id: i64| ids.get(id);
        let n = db_ids.len();
        // Compressed adjacency by dense index: count, then fill. References
        // to ids that are not in ValidPaths (a database without foreign key
        // enforcement) are dropped here, as the per-path walk's join does.
        let mut edges: Vec<(u32, u32)> = Vec::new();
        {
            let mut st = conn
                .prepare("SELECT referrer, reference FROM Refs")
                .map_err(|e| self.db_err(e))?;
            let mut rows = st.query([]).map_err(|e| self.db_err(e))?;
            while let Some(r) = rows.next().map_err(|e| self.db_err(e))? {
                let a: i64 = r.get(0).map_err(|e| self.db_err(e))?;
                let b: i64 = r.get(1).map_err(|e| self.db_err(e))?;
                if let (Some(a), Some(b)) = (dense(a), dense(b)) {
                    edges.push((a, b));
                }
            }
        }
        // Grouped by referrer with a counting sort: linear, where sorting
        // millions of pairs is not.
        let mut off = vec![0u32; n + 1];
        for &(a, _) in &edges {
            off[a as usize + 1] += 1;
        }
        for i in 0..n {
            off[i + 1] += off[i];
        }
        let edges = {
            let mut fill = off[..n].to_vec();
            let mut grouped = vec![(0u32, 0u32); edges.len()];
            for e in edges {
                grouped[fill[e.0 as usize] as usize] = e;
                fill[e.0 as usize] += 1;
            }
            grouped
        };
        // Breadth-first from the roots, assigning closure indices.
        let mut index = vec![u32::MAX; n];
        let mut order: Vec<u32> = Vec::new();
        for &r in root_ids {
            let d = dense(r).ok_or_else(|| Error::DanglingReference {
                referrer: "a root".into(),
                reference: format!("database id {r}"),
                store: self.describe(),
            })?;
            index[d as usize] = order.len() as u32;
            order.push(d);
        }
        let mut i = 0;
        while i < order.len() {
            let v = order[i] as usize;
            for &(_, w) in &edges[off[v] as usize..off[v + 1] as usize] {
                if index[w as usize] == u32::MAX {
                    index[w as usize] = order.len() as u32;
                    order.push(w);
                }
            }
            i += 1;
        }
        let mut paths: Vec<Option<StorePath>> = vec![None; order.len()];
        let mut nar_sizes = vec![0u64; order.len()];
        for (k, p) in root_paths.iter().enumerate() {
            paths[k] = Some(p.clone());
        }
        {
            let mut st = conn
                .prepare("SELECT id, path, narSize FROM ValidPaths")
                .map_err(|e| self.db_err(e))?;
            let mut rows = st.query([]).map_err(|e| self.db_err(e))?;
            while let Some(r) = rows.next().map_err(|e| self.db_err(e))? {
                let id: i64 = r.get(0).map_err(|e| self.db_err(e))?;
                let Some(d) = dense(id) else {
                    continue;
                };
                let k = index[d as usize];
                if k == u32::MAX {
                    continue;
                }
                if paths[k as usize].is_none() {
                    let s = r.get_ref(1).map_err(|e| self.db_err(e))?;
                    let s = s.as_str().map_err(|e| self.db_err(e.into()))?;
                    paths[k as usize] = Some(self.parse_db_path(s)?);
                }
                let nar: Option<i64> = r.get(2).map_err(|e| self.db_err(e))?;
                nar_sizes[k as usize] =
                    self.nar_size(paths[k as usize].as_ref().expect("just set"), nar)?;
            }
        }
        let mut references = Vec::with_capacity(order.len());
        for &v in &order {
            let v = v as usize;
            references.push(
                edges[off[v] as usize..off[v + 1] as usize]
                    .iter()
                    .map(|&(_, w)| index[w as usize])
                    .collect(),
            );
        }
        let paths = paths
            .into_iter()
            .enumerate()
            .map(|(k, p)| {
                p.ok_or_else(|| Error::DanglingReference {
                    referrer: "a path in the closure".into(),
                    reference: format!("database id {}", db_ids[order[k] as usize]),
                    store: self.describe(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RawClosure {
            paths,
            nar_sizes,
            references,
        })
    }
}

/// Database ids → dense indices (positions in the order the paths were
/// read). Ids are row ids and need not be dense (see
/// `closure_by_table_scan`): a table indexed by id when they nearly are, a
/// binary search otherwise.
pub(crate) struct DenseIds {
    /// `(id, position)`, ascending by id.
    sorted: Vec<(i64, u32)>,
    /// `table[id - min]`, `u32::MAX` for no path; empty when ids are sparse.
    table: Vec<u32>,
}

impl DenseIds {
    /// `ids` in the order their paths were read (by id for a table scan,
    /// but no order is assumed).
    pub(crate) fn new(ids: Vec<i64>) -> DenseIds {
        let mut sorted: Vec<(i64, u32)> = ids
            .into_iter()
            .enumerate()
            .map(|(k, id)| (id, k as u32))
            .collect();
        if !sorted.is_sorted() {
            sorted.sort_unstable();
        }
        let (Some(&(min, _)), Some(&(max, _))) = (sorted.first(), sorted.last()) else {
            return DenseIds {
                sorted,
                table: Vec::new(),
            };
        };
        let span = max.abs_diff(min);
        let table = if span < 4 * sorted.len() as u64 + 1024 {
            let mut t = vec![u32::MAX; span as usize + 1];
            for &(id, k) in &sorted {
                t[(id - min) as usize] = k;
            }
            t
        } else {
            Vec::new()
        };
        DenseIds { sorted, table }
    }

    pub(crate) fn get(&self, id: i64) -> Option<u32> {
        if self.table.is_empty() {
            let k = self.sorted.binary_search_by_key(&id, |&(i, _)| i).ok()?;
            return Some(self.sorted[k].1);
        }
        let off = usize::try_from(id.checked_sub(self.sorted.first()?.0)?).ok()?;
        self.table.get(off).copied().filter(|&k| k != u32::MAX)
    }
}

/// Reads and checks SQLite's 100-byte header, so a file that is no database
/// gets a clear error before SQLite is involved.
fn read_header(db: &Path) -> Result<[u8; 100]> {
    use std::io::Read;
    let mut f = std::fs::File::open(db).map_err(io_err(db))?;
    let mut h = [0u8; 100];
    f.read_exact(&mut h).map_err(|_| Error::Database {
        path: db.to_path_buf(),
        source: rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_NOTADB),
            Some("file is shorter than a SQLite header".into()),
        ),
    })?;
    if &h[..16] != b"SQLite format 3\0" {
        return Err(Error::Database {
            path: db.to_path_buf(),
            source: rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_NOTADB),
                Some("file is not a SQLite database".into()),
            ),
        });
    }
    Ok(h)
}

fn open_db(db: &Path, immutable: bool) -> rusqlite::Result<Connection> {
    // URI filenames need '%', '?' and '#' escaped.
    let mut uri = String::from("file:");
    for ch in db.to_string_lossy().chars() {
        match ch {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str(if immutable {
        "?immutable=1"
    } else {
        "?mode=ro"
    });
    let c = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    c.busy_timeout(BUSY_TIMEOUT)?;
    Ok(c)
}

fn probe(c: &Connection) -> rusqlite::Result<()> {
    c.query_row("SELECT count(*) FROM ValidPaths", [], |_| Ok(()))?;
    c.query_row("SELECT count(*) FROM Refs WHERE referrer = -1", [], |_| {
        Ok(())
    })
}

fn is_lock_error(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// SQLite could not use the side files with locking (a read-only file
/// system, or side files nix-heft may not open for writing).
fn is_read_only_error(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen)
    )
}

impl PathMetadata for LocalStore {
    fn store_dir(&self) -> &str {
        DEFAULT_STORE_DIR
    }

    fn describe(&self) -> String {
        if self.root == Path::new("/") {
            "the local store".to_string()
        } else {
            format!("chroot store {}", self.root.display())
        }
    }

    fn path_info(&self, path: &StorePath) -> Result<Option<PathInfo>> {
        self.read(false, |conn| self.path_info_in(conn, path))
    }

    fn path_infos(&self, paths: &[StorePath]) -> Result<Vec<Option<PathInfo>>> {
        // One snapshot for all: one transaction (or one stamp check), where
        // each path_info would take its own.
        self.read(false, |conn| {
            paths.iter().map(|p| self.path_info_in(conn, p)).collect()
        })
    }

    fn registration_time(&self, path: &StorePath) -> Result<Option<i64>> {
        self.read(false, |conn| {
            conn.prepare_cached("SELECT registrationTime FROM ValidPaths WHERE path = ?1")
                .and_then(|mut s| {
                    s.query_row([path.as_str()], |r| r.get::<_, Option<i64>>(0))
                        .optional()
                })
                .map(Option::flatten)
                .map_err(|e| self.db_err(e))
        })
    }

    fn is_valid(&self, path: &StorePath) -> Result<bool> {
        self.are_valid(std::slice::from_ref(path)).map(|v| v[0])
    }

    fn are_valid(&self, paths: &[StorePath]) -> Result<Vec<bool>> {
        self.read(false, |conn| {
            let mut st = conn
                .prepare_cached("SELECT 1 FROM ValidPaths WHERE path = ?1")
                .map_err(|e| self.db_err(e))?;
            paths
                .iter()
                .map(|p| st.exists([p.as_str()]).map_err(|e| self.db_err(e)))
                .collect()
        })
    }

    fn referrers(&self, path: &StorePath) -> Result<Option<Vec<StorePath>>> {
        self.read(false, |conn| self.referrers_in(conn, path))
    }

    fn deriver(&self, path: &StorePath) -> Result<Option<StorePath>> {
        let d: Option<String> = self.read(false, |conn| {
            conn.prepare_cached("SELECT deriver FROM ValidPaths WHERE path = ?1")
                .and_then(|mut s| {
                    s.query_row([path.as_str()], |r| r.get::<_, Option<String>>(0))
                        .optional()
                })
                .map(Option::flatten)
                .map_err(|e| self.db_err(e))
        })?;
        // Nix writes an empty string, or nothing, for "no deriver".
        d.filter(|d| !d.is_empty())
            .map(|d| self.parse_db_path(&d))
            .transpose()
    }

    fn valid_derivers(&self, path: &StorePath) -> Result<Vec<StorePath>> {
        // Nix 2.8's own query (`QueryValidDerivers`, local-store.cc).
        let rows: Vec<String> = self.read(false, |conn| {
            conn.prepare_cached(
                "SELECT v.path FROM DerivationOutputs d JOIN ValidPaths v ON d.drv = v.id \
                 WHERE d.path = ?1",
            )
            .and_then(|mut s| {
                s.query_map([path.as_str()], |r| r.get::<_, String>(0))
                    .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
            })
            .map_err(|e| self.db_err(e))
        })?;
        let mut out = rows
            .iter()
            .map(|d| self.parse_db_path(d))
            .collect::<Result<Vec<_>>>()?;
        out.sort();
        Ok(out)
    }

    fn same_deriver_many(
        &self,
        paths: &[StorePath],
    ) -> Result<Option<HashMap<StorePath, Vec<StorePath>>>> {
        let wanted: std::collections::HashSet<&str> = paths.iter().map(|p| p.as_str()).collect();
        // No index on `deriver`: one scan of ValidPaths for all the paths
        // asked about, grouped here.
        let rows: Vec<(String, String)> = self.read(false, |conn| {
            conn.prepare_cached(
                "SELECT path, deriver FROM ValidPaths WHERE deriver IS NOT NULL AND deriver != ''",
            )
            .and_then(|mut s| {
                s.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
                    .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
            })
            .map_err(|e| self.db_err(e))
        })?;
        let mut by_deriver: HashMap<&str, Vec<&str>> = HashMap::new();
        for (p, d) in &rows {
            by_deriver.entry(d.as_str()).or_default().push(p.as_str());
        }
        let mut out = HashMap::new();
        for (p, d) in &rows {
            if wanted.contains(p.as_str()) {
                let same = by_deriver[d.as_str()]
                    .iter()
                    .map(|s| self.parse_db_path(s))
                    .collect::<Result<Vec<_>>>()?;
                out.insert(self.parse_db_path(p)?, same);
            }
        }
        Ok(Some(out))
    }

    fn all_paths(&self) -> Result<Vec<StorePath>> {
        self.read(false, |conn| {
            let mut stmt = conn
                .prepare("SELECT path FROM ValidPaths")
                .map_err(|e| self.db_err(e))?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| self.db_err(e))?;
            rows.iter().map(|s| self.parse_db_path(s)).collect()
        })
    }

    fn closure_closed(&self) -> bool {
        true
    }

    /// One snapshot of the database for the whole closure (see
    /// `LocalStore::read`).
    fn closure(&self, roots: &[StorePath]) -> Result<RawClosure> {
        self.read(true, |conn| self.closure_in(conn, roots))
    }
}

impl PathContents for LocalStore {
    fn real_path(&self, path: &StorePath) -> Option<PathBuf> {
        Some(self.root.join(path.as_str().trim_start_matches('/')))
    }

    /// The NAR serialised from disk (`nix-store --dump`): what `--verify`
    /// hashes. No compressed file stands behind it to check.
    fn nar(&self, path: &StorePath, _check_file: bool) -> Result<Option<Nar>> {
        let real = self.root.join(path.as_str().trim_start_matches('/'));
        let reader = nix_heft_format::nar::dump::reader(&real).map_err(io_err(&real))?;
        Ok(Some(Nar {
            reader,
            file_check: None,
            downloaded: false,
        }))
    }

    fn expected_nar_hash(&self, path: &StorePath) -> Option<String> {
        if !self.verify {
            return None;
        }
        // A path without a recorded hash cannot be checked: the empty
        // string makes that a problem for the path, not a silent pass.
        let hash = self.read(false, |c| {
            c.query_row(
                "SELECT hash FROM ValidPaths WHERE path = ?1",
                [path.as_str()],
                |r| r.get::<_, String>(0),
            )
            .map_err(|e| self.db_err(e))
        });
        Some(hash.unwrap_or_default())
    }
}

impl StoreSource for LocalStore {
    fn log(&self) -> &RunLog {
        &self.log
    }
}

impl LocalStore {
    fn path_info_in(&self, conn: &Connection, path: &StorePath) -> Result<Option<PathInfo>> {
        let row: Option<(i64, Option<i64>)> = conn
            .prepare_cached("SELECT id, narSize FROM ValidPaths WHERE path = ?1")
            .and_then(|mut s| {
                s.query_row([path.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(|e| self.db_err(e))?;
        let Some((id, nar)) = row else {
            return Ok(None);
        };
        let mut stmt = conn
            .prepare_cached(
                "SELECT v.path FROM Refs r JOIN ValidPaths v ON v.id = r.reference \
                 WHERE r.referrer = ?1",
            )
            .map_err(|e| self.db_err(e))?;
        let refs = stmt
            .query_map([id], |r| r.get::<_, String>(0))
            .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.db_err(e))?;
        let references = refs
            .iter()
            .map(|s| self.parse_db_path(s))
            .collect::<Result<_>>()?;
        Ok(Some(PathInfo {
            path: path.clone(),
            nar_size: self.nar_size(path, nar)?,
            references,
        }))
    }

    fn referrers_in(&self, conn: &Connection, path: &StorePath) -> Result<Option<Vec<StorePath>>> {
        let mut stmt = conn
            .prepare_cached(
                "SELECT v.path FROM Refs r JOIN ValidPaths v ON v.id = r.referrer \
                 WHERE r.reference = (SELECT id FROM ValidPaths WHERE path = ?1) AND r.referrer != r.reference",
            )
            .map_err(|e| self.db_err(e))?;
        let rows = stmt
            .query_map([path.as_str()], |r| r.get::<_, String>(0))
            .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.db_err(e))?;
        rows.iter()
            .map(|s| self.parse_db_path(s))
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// Walks `Refs` by integer id, so each path's string is read and parsed
    /// once, not once per edge that points at it.
    fn closure_in(&self, conn: &Connection, roots: &[StorePath]) -> Result<RawClosure> {
        let mut by_id: HashMap<i64, u32> = HashMap::new();
        let mut ids: Vec<i64> = Vec::new();
        let mut out = RawClosure::default();
        let mut get_path = conn
            .prepare_cached("SELECT id, narSize FROM ValidPaths WHERE path = ?1")
            .map_err(|e| self.db_err(e))?;
        for r in roots {
            let row: Option<(i64, Option<i64>)> = get_path
                .query_row([r.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()
                .map_err(|e| self.db_err(e))?;
            let Some((id, nar)) = row else {
                return Err(Error::MissingPath {
                    path: r.to_string(),
                    store: self.describe(),
                });
            };
            if let std::collections::hash_map::Entry::Vacant(v) = by_id.entry(id) {
                v.insert(out.push(r.clone(), self.nar_size(r, nar)?));
                ids.push(id);
            }
        }
        // Roots given twice were merged above: only the distinct ones lead
        // the closure.
        let root_count = ids.len();
        let mut refs_stmt = conn
            .prepare_cached("SELECT reference FROM Refs WHERE referrer = ?1")
            .map_err(|e| self.db_err(e))?;
        let mut by_id_stmt = conn
            .prepare_cached("SELECT path, narSize FROM ValidPaths WHERE id = ?1")
            .map_err(|e| self.db_err(e))?;
        // Per-path queries cost a few microseconds each; past a fraction of
        // the store, one sequential pass over both tables is cheaper.
        let total: i64 = conn
            .query_row("SELECT count(*) FROM ValidPaths", [], |r| r.get(0))
            .map_err(|e| self.db_err(e))?;
        // NIX_HEFT_TABLE_SCAN_AT overrides the switch point (the tests use
        // it to run both strategies on the same store).
        let switch_at = std::env::var("NIX_HEFT_TABLE_SCAN_AT")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or((total as usize / 8).max(20_000));
        // So many roots that their closure is surely past the switch point
        // (a whole store's roots): no walk at all.
        let walk_first = root_count.saturating_mul(8) < switch_at;
        let mut next = 0;
        while next < ids.len() {
            if !walk_first || ids.len() > switch_at {
                let roots_ids: Vec<i64> = ids[..root_count].to_vec();
                drop(refs_stmt);
                drop(by_id_stmt);
                drop(get_path);
                return self.closure_by_table_scan(conn, &roots_ids, &out.paths[..roots_ids.len()]);
            }
            let mut rows = refs_stmt.query([ids[next]]).map_err(|e| self.db_err(e))?;
            let mut refs = Vec::new();
            while let Some(row) = rows.next().map_err(|e| self.db_err(e))? {
                let rid: i64 = row.get(0).map_err(|e| self.db_err(e))?;
                refs.push(rid);
            }
            drop(rows);
            for rid in refs {
                let idx = match by_id.get(&rid) {
                    Some(&i) => i,
                    None => {
                        let (p, nar): (String, Option<i64>) = by_id_stmt
                            .query_row([rid], |r| Ok((r.get(0)?, r.get(1)?)))
                            .map_err(|e| self.db_err(e))?;
                        let p = self.parse_db_path(&p)?;
                        let nar = self.nar_size(&p, nar)?;
                        let i = out.push(p, nar);
                        by_id.insert(rid, i);
                        ids.push(rid);
                        i
                    }
                };
                out.references[next].push(idx);
            }
            next += 1;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store root whose database has Nix's two tables, in WAL mode, and
    /// a writer connection to it (which keeps the side files while open).
    fn store_with_writer() -> (tempfile::TempDir, Connection) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("nix/var/nix/db");
        std::fs::create_dir_all(&dir).unwrap();
        let w = Connection::open(dir.join("db.sqlite")).unwrap();
        w.pragma_update(None, "journal_mode", "wal").unwrap();
        w.execute_batch(
            "CREATE TABLE ValidPaths (id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, \
             narSize INTEGER, registrationTime INTEGER);
             CREATE TABLE Refs (referrer INTEGER, reference INTEGER);",
        )
        .unwrap();
        add(&w, 1);
        (d, w)
    }

    fn add(w: &Connection, n: usize) {
        w.execute(
            "INSERT INTO ValidPaths (path, narSize) VALUES (?1, 1)",
            [format!("/nix/store/{}-p{n}", "a".repeat(32))],
        )
        .unwrap();
    }

    fn count(c: &Connection) -> Result<i64> {
        Ok(
            c.query_row("SELECT count(*) FROM ValidPaths", [], |r| r.get(0))
                .unwrap(),
        )
    }

    #[test]
    fn with_a_live_writer_each_read_is_one_snapshot() {
        let (d, w) = store_with_writer();
        let store = LocalStore::open(d.path(), Default::default()).unwrap();
        assert_eq!(store.db.lock().unwrap().mode, Mode::Locking);
        let mut n = 0;
        let (a, b) = store
            .read(false, |c| {
                let a = count(c)?;
                n += 1;
                add(&w, n + 1);
                Ok((a, count(c)?))
            })
            .unwrap();
        assert_eq!((a, b), (1, 1), "a commit showed inside the read");
        assert_eq!(store.read(false, count).unwrap(), 2);
        assert!(store.log().warnings().is_empty());
    }

    #[test]
    fn without_side_files_a_read_the_database_changed_under_is_redone() {
        let (d, w) = store_with_writer();
        drop(w);
        let db = d.path().join("nix/var/nix/db/db.sqlite");
        assert!(!side_file(&db, "-wal").exists() && !side_file(&db, "-shm").exists());
        let store = LocalStore::open(d.path(), Default::default()).unwrap();
        assert!(matches!(store.db.lock().unwrap().mode, Mode::Checked(_)));
        // The first read lets a writer in and commit; its result is thrown
        // away, and the read again (with locking now) sees the commit.
        let mut writer = None;
        let got = store
            .read(false, |c| {
                let seen = count(c)?;
                if writer.is_none() {
                    let w = Connection::open(&db).unwrap();
                    add(&w, 2);
                    writer = Some(w);
                }
                Ok(seen)
            })
            .unwrap();
        assert_eq!(got, 2);
        assert_eq!(store.db.lock().unwrap().mode, Mode::Locking);
        // nix-heft's own connection now keeps the side files (a closing
        // writer is not the last user), so later commits are seen too.
        drop(writer);
        assert!(side_file(&db, "-wal").exists());
        add(&Connection::open(&db).unwrap(), 3);
        assert_eq!(store.read(false, count).unwrap(), 3);
        assert!(store.log().warnings().is_empty());
    }

    #[test]
    fn a_closing_writer_keeps_the_side_files_while_a_connection_is_made() {
        let (d, w) = store_with_writer();
        let db = d.path().join("nix/var/nix/db/db.sqlite");
        let file = std::fs::File::open(&db).unwrap();
        let hold = SharedHold::take(&file);
        assert!(hold.file.is_some());
        drop(w);
        assert!(side_file(&db, "-wal").exists() && side_file(&db, "-shm").exists());
        drop(hold);
        // Released: the next writer to close, the last one, removes them.
        let w = Connection::open(&db).unwrap();
        count(&w).unwrap();
        drop(w);
        assert!(!side_file(&db, "-wal").exists() && !side_file(&db, "-shm").exists());
    }

    #[test]
    fn a_wal_without_its_shm_is_read_immutable_with_a_warning() {
        let (d, w) = store_with_writer();
        drop(w);
        let db = d.path().join("nix/var/nix/db/db.sqlite");
        std::fs::write(side_file(&db, "-wal"), b"").unwrap();
        let store = LocalStore::open(d.path(), Default::default()).unwrap();
        assert_eq!(store.db.lock().unwrap().mode, Mode::Forced);
        let w = store.log().warnings();
        assert!(
            w.len() == 1 && w[0].contains("-wal file but no -shm"),
            "{w:?}"
        );
        assert!(!side_file(&db, "-shm").exists());
    }
}
