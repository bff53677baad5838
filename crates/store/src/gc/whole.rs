//! The whole store as the collector reads it: every valid path with its
//! NAR size and references, and the derivation links `keep-outputs` and
//! `keep-derivations` follow, in one snapshot of the database. Here, not
//! in the store source: the source reads closures, the collector's view is
//! this module's (and the source then names nothing of `gc`).

use rusqlite::Connection;

use super::{PathIndex, WholeStore};
use crate::Result;
use crate::source::local::{DenseIds, LocalStore};

/// Every valid path of `store` with its references, in one snapshot of
/// its database, as the garbage collector sees them; with `derivers`, also
/// the derivation links `keep-outputs` and `keep-derivations` follow
/// (`DerivationOutputs` and the `deriver` column), which take a third of
/// the time.
pub fn read(store: &LocalStore, derivers: bool) -> Result<WholeStore> {
    store.read(false, |conn| read_in(store, conn, derivers))
}

fn read_in(store: &LocalStore, conn: &Connection, derivers: bool) -> Result<WholeStore> {
    let e = |x| store.db_err(x);
    let count: i64 = conn
        .query_row("SELECT count(*) FROM ValidPaths", [], |r| r.get(0))
        .map_err(e)?;
    let cap = usize::try_from(count).unwrap_or(0);
    let mut ids: Vec<i64> = Vec::with_capacity(cap);
    let mut whole = WholeStore {
        paths: Vec::with_capacity(cap),
        nar_sizes: Vec::with_capacity(cap),
        ..Default::default()
    };
    let mut deriver_of: Vec<Option<Box<str>>> = Vec::new();
    {
        let sql = if derivers {
            "SELECT id, path, narSize, deriver FROM ValidPaths"
        } else {
            "SELECT id, path, narSize FROM ValidPaths"
        };
        let mut st = conn.prepare(sql).map_err(e)?;
        let mut rows = st.query([]).map_err(e)?;
        while let Some(r) = rows.next().map_err(e)? {
            ids.push(r.get(0).map_err(e)?);
            let s = r.get_ref(1).map_err(e)?;
            let s = s.as_str().map_err(|x| e(x.into()))?;
            let p = store.parse_db_path(s)?;
            let nar: Option<i64> = r.get(2).map_err(e)?;
            whole.nar_sizes.push(store.nar_size(&p, nar)?);
            whole.paths.push(p);
            if derivers {
                let d = r.get_ref(3).map_err(e)?;
                deriver_of.push(match d {
                    rusqlite::types::ValueRef::Text(t) if !t.is_empty() => {
                        std::str::from_utf8(t).ok().map(Box::from)
                    }
                    _ => None,
                });
            }
        }
    }
    let dense = DenseIds::new(ids);
    let n = whole.paths.len();
    // References: read in row order, then laid out by referrer with a
    // counting pass (rows come grouped by registration, not sorted).
    let mut edges: Vec<(u32, u32)> = Vec::new();
    {
        let mut st = conn
            .prepare("SELECT referrer, reference FROM Refs")
            .map_err(e)?;
        let mut rows = st.query([]).map_err(e)?;
        while let Some(r) = rows.next().map_err(e)? {
            let a: i64 = r.get(0).map_err(e)?;
            let b: i64 = r.get(1).map_err(e)?;
            // A reference to an id not in ValidPaths (a database without
            // foreign keys enforced) is dropped, as the closure reads do.
            if let (Some(a), Some(b)) = (dense.get(a), dense.get(b))
                && a != b
            {
                edges.push((a, b));
            }
        }
    }
    let mut offsets = vec![0u32; n + 1];
    for &(a, _) in &edges {
        offsets[a as usize + 1] += 1;
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets[..n].to_vec();
    let mut refs = vec![0u32; edges.len()];
    for &(a, b) in &edges {
        refs[fill[a as usize] as usize] = b;
        fill[a as usize] += 1;
    }
    drop(edges);
    // Sorted and deduplicated per referrer, compacted in place.
    let mut w = 0usize;
    let mut start = 0usize;
    for i in 0..n {
        let end = offsets[i + 1] as usize;
        refs[start..end].sort_unstable();
        let from = w;
        for k in start..end {
            if w == from || refs[w - 1] != refs[k] {
                refs[w] = refs[k];
                w += 1;
            }
        }
        start = end;
        offsets[i + 1] = w as u32;
    }
    refs.truncate(w);
    whole.ref_offsets = offsets;
    whole.refs = refs;
    whole.index = PathIndex::new(&whole.paths);
    if derivers {
        let deriver: Vec<u32> = deriver_of
            .iter()
            .map(|d| d.as_deref().and_then(|d| whole.find(d)).unwrap_or(u32::MAX))
            .collect();
        drop(deriver_of);
        let mut st = conn
            .prepare("SELECT drv, path FROM DerivationOutputs")
            .map_err(e)?;
        let mut rows = st.query([]).map_err(e)?;
        while let Some(r) = rows.next().map_err(e)? {
            let drv: i64 = r.get(0).map_err(e)?;
            let out = r.get_ref(1).map_err(e)?;
            let out = out.as_str().map_err(|x| e(x.into()))?;
            let (Some(drv), Some(out)) = (dense.get(drv), whole.find(out)) else {
                continue;
            };
            whole.drv_outputs.push((drv, out));
            if deriver[out as usize] == drv {
                whole.output_derivers.push((out, drv));
            }
        }
    }
    Ok(whole)
}
