//! The report stage: turning results into what a person or a program
//! reads. Every report is one serde struct, printed as JSON for `--json`
//! and rendered as text otherwise (the same struct, so the two never
//! disagree). Formatting only: reports never compute closures or read the
//! store.

pub mod advise;
pub mod partition;
pub mod refs;
pub mod size;
pub mod split;
pub mod table;
pub mod trace;
pub mod why;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::problem::Problem;
use crate::store_path::name_of;

/// How to render text.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    /// Exact byte counts instead of IEC units.
    pub exact_bytes: bool,
}

/// What every report offers: JSON through serde, text, and the problems
/// that make its result partial.
pub trait Report: Serialize {
    /// The text rendering, for a terminal or a pipe.
    fn render_text(&self, opts: &TextOptions) -> String;
    /// What could not be read or computed; non-empty means exit code 3.
    fn problems(&self) -> &[Problem] {
        &[]
    }
}

/// Short display names for store paths: the full name (`rocblas-5.7.1-dev`),
/// with the first 8 characters of the hash added where two different paths
/// shown together share a name.
pub fn display_names<'a>(paths: impl IntoIterator<Item = &'a str>) -> HashMap<String, String> {
    let mut by_name: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for p in paths {
        let v = by_name.entry(name_of(p)).or_default();
        if !v.contains(&p) {
            v.push(p);
        }
    }
    let mut out = HashMap::new();
    for (n, ps) in by_name {
        for p in &ps {
            let shown = if ps.len() > 1 {
                let base = p.rsplit('/').next().unwrap_or(p);
                format!("{n} ({})", base.get(..8).unwrap_or(base))
            } else {
                n.to_string()
            };
            out.insert(p.to_string(), shown);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn colliding_names_get_their_hash() {
        let a = "/nix/store/aaaaaaaabbbbbbbbccccccccdddddddd-rocblas-5.7.1";
        let b = "/nix/store/zzzzzzzzbbbbbbbbccccccccdddddddd-rocblas-5.7.1";
        let c = "/nix/store/aaaaaaaabbbbbbbbccccccccdddddddd-rocblas-5.7.1-source";
        let n = super::display_names([a, b, c, a]);
        assert_eq!(n[a], "rocblas-5.7.1 (aaaaaaaa)");
        assert_eq!(n[b], "rocblas-5.7.1 (zzzzzzzz)");
        assert_eq!(n[c], "rocblas-5.7.1-source");
    }
}
