//! A local or chroot Nix store, read straight from its SQLite database
//! (`ValidPaths`, `Refs`; schema in Nix's libstore/schema.sql).
//!
//! The database is opened read-only and nix-heft never makes SQLite create a
//! file next to it: Nix keeps its database in WAL mode, and a plain read-only
//! open of a WAL database whose `-wal`/`-shm` files are absent creates them.
//! So when they are absent (no live writer), the file is opened `immutable`;
//! when they exist, it is opened `mode=ro` with normal locking, and only if
//! that fails because another process holds a lock does nix-heft fall back to
//! `immutable` and say so.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::{DEFAULT_STORE_DIR, PathInfo, RawClosure, StoreSource};
use crate::error::{Error, Result, io_err};
use crate::store_path::StorePath;

/// A local store (root `/`) or chroot store (any other root).
pub struct LocalStore {
    root: PathBuf,
    db_path: PathBuf,
    // rusqlite connections are Send but not Sync; queries are short, so one
    // mutex around one connection is simpler than a pool.
    conn: Mutex<Connection>,
    warnings: Vec<String>,
    // `--verify`: NARs are serialised from disk and checked against the
    // database's `hash` column.
    verify: bool,
}

impl LocalStore {
    /// Opens the store whose root directory is `root` (`/` for the system
    /// store), i.e. the database `root/nix/var/nix/db/db.sqlite`.
    pub fn open(root: &Path) -> Result<Self> {
        let db_path = root.join("nix/var/nix/db/db.sqlite");
        let db_err = |source| Error::Database {
            path: db_path.clone(),
            source,
        };
        let header = read_header(&db_path)?;
        let wal = header[18] == 2 || header[19] == 2;
        let side = |ext: &str| {
            let mut s = db_path.clone().into_os_string();
            s.push(ext);
            PathBuf::from(s).exists()
        };
        let live_wal = side("-wal") && side("-shm");
        let mut warnings = Vec::new();
        let conn = if wal && !live_wal {
            open_db(&db_path, true).map_err(db_err)?
        } else {
            let c = open_db(&db_path, false).map_err(db_err)?;
            match probe(&c) {
                Ok(()) => c,
                Err(e) if is_lock_error(&e) => {
                    warnings.push(format!(
                        "database {} is locked ({e}); reading it in immutable mode, so changes \
                         being made right now may not be seen",
                        db_path.display()
                    ));
                    open_db(&db_path, true).map_err(db_err)?
                }
                Err(e) => return Err(db_err(e)),
            }
        };
        probe(&conn).map_err(db_err)?;
        Ok(LocalStore {
            root: root.to_path_buf(),
            db_path,
            conn: Mutex::new(conn),
            warnings,
            verify: false,
        })
    }

    /// With `verify`, every path read is serialised as a NAR from disk and
    /// its hash compared with the one the database recorded when the path
    /// was registered (`nix-store --verify --check-contents`): a file
    /// edited in place is a `hash-mismatch` problem.
    pub fn with_verify(mut self, verify: bool) -> Self {
        self.verify = verify;
        self
    }

    fn db_err(&self, source: rusqlite::Error) -> Error {
        Error::Database {
            path: self.db_path.clone(),
            source,
        }
    }

    fn parse_db_path(&self, s: &str) -> Result<StorePath> {
        StorePath::parse(DEFAULT_STORE_DIR, s)
    }

    /// `ValidPaths.narSize` as a size. SQLite stores it as a signed 64-bit
    /// integer, so a corrupt row can hold a negative one, which must not
    /// turn into a size near 2^64. NULL (databases from before Nix
    /// recorded sizes) counts as 0, as Nix itself reads it.
    fn nar_size(&self, path: &dyn std::fmt::Display, nar: Option<i64>) -> Result<u64> {
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
        // dense index a binary search.
        db_ids.sort_unstable();
        db_ids.dedup();
        let dense = |id: i64| db_ids.binary_search(&id).ok().map(|k| k as u32);
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
        edges.sort_unstable();
        let mut off = vec![0u32; n + 1];
        for &(a, _) in &edges {
            off[a as usize + 1] += 1;
        }
        for i in 0..n {
            off[i + 1] += off[i];
        }
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
    c.busy_timeout(std::time::Duration::from_millis(500))?;
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

impl StoreSource for LocalStore {
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
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
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

    fn registration_time(&self, path: &StorePath) -> Result<Option<i64>> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        conn.prepare_cached("SELECT registrationTime FROM ValidPaths WHERE path = ?1")
            .and_then(|mut s| {
                s.query_row([path.as_str()], |r| r.get::<_, Option<i64>>(0))
                    .optional()
            })
            .map(Option::flatten)
            .map_err(|e| self.db_err(e))
    }

    fn is_valid(&self, path: &StorePath) -> Result<bool> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        conn.prepare_cached("SELECT 1 FROM ValidPaths WHERE path = ?1")
            .and_then(|mut s| s.exists([path.as_str()]))
            .map_err(|e| self.db_err(e))
    }

    fn referrers(&self, path: &StorePath) -> Result<Option<Vec<StorePath>>> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
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

    fn all_paths(&self) -> Result<Vec<StorePath>> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let mut stmt = conn
            .prepare("SELECT path FROM ValidPaths")
            .map_err(|e| self.db_err(e))?;
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.db_err(e))?;
        rows.iter().map(|s| self.parse_db_path(s)).collect()
    }

    /// Walks `Refs` by integer id, so each path's string is read and parsed
    /// once, not once per edge that points at it.
    fn closure(&self, roots: &[StorePath]) -> Result<RawClosure> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
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
        let mut next = 0;
        while next < ids.len() {
            if ids.len() > switch_at {
                let roots_ids: Vec<i64> = ids[..root_count].to_vec();
                drop(refs_stmt);
                drop(by_id_stmt);
                drop(get_path);
                return self.closure_by_table_scan(
                    &conn,
                    &roots_ids,
                    &out.paths[..roots_ids.len()],
                );
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

    fn real_path(&self, path: &StorePath) -> Option<PathBuf> {
        Some(self.root.join(path.as_str().trim_start_matches('/')))
    }

    fn nar(&self, path: &StorePath) -> Result<Option<Box<dyn std::io::Read + Send>>> {
        let real = self.root.join(path.as_str().trim_start_matches('/'));
        crate::nar::dump::reader(&real)
            .map(Some)
            .map_err(io_err(&real))
    }

    fn expected_nar_hash(&self, path: &StorePath) -> Option<String> {
        if !self.verify {
            return None;
        }
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        // A path without a recorded hash cannot be checked: the empty
        // string makes that a problem for the path, not a silent pass.
        Some(
            conn.query_row(
                "SELECT hash FROM ValidPaths WHERE path = ?1",
                [path.as_str()],
                |r| r.get::<_, String>(0),
            )
            .unwrap_or_default(),
        )
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }
}
