//! One attribute's added and removed paths paired as `nix store
//! diff-closures` (and `diff`) pairs them: by package and output name
//! ([`store_path::split_name_like_diff_closures`]), so a rebuilt or bumped
//! path counts by its net change against the path it replaces, and every
//! added and removed path is in exactly one [`Unit`]: the units' net
//! changes add up to the attribute's closure change.

use std::collections::BTreeMap;

use nix_heft_format::store_path::split_name_like_diff_closures;
use nix_heft_graph::{Graph, NodeId};

/// The paths of one package (and output) that changed in one attribute's
/// closure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// The package as `nix store diff-closures` names it (with `-dev` for
    /// an output other than `out`).
    pub package: String,
    /// Its added paths (head graph), largest first.
    pub added: Vec<NodeId>,
    /// Its removed paths (base graph), largest first.
    pub removed: Vec<NodeId>,
    /// Added NAR sizes minus removed ones.
    pub net: i128,
}

impl Unit {
    /// The path its change is explained by: the largest added one, else
    /// the largest removed one (`true` for a head path).
    pub fn explained_by(&self) -> (NodeId, bool) {
        match (self.added.first(), self.removed.first()) {
            (Some(&a), _) => (a, true),
            (None, Some(&r)) => (r, false),
            (None, None) => unreachable!("a unit has a path"),
        }
    }
}

/// The package key of a path: diff-closures' package name and output.
fn key(g: &Graph, v: NodeId) -> (String, String) {
    let n = split_name_like_diff_closures(g.path(v).name());
    (n.name.to_string(), n.output.unwrap_or("").to_string())
}

/// The units of one attribute, largest net change (by magnitude) first,
/// then by package name.
pub fn units(base: &Graph, removed: &[NodeId], head: &Graph, added: &[NodeId]) -> Vec<Unit> {
    let mut by_key: BTreeMap<(String, String), (Vec<NodeId>, Vec<NodeId>)> = BTreeMap::new();
    for &v in added {
        by_key.entry(key(head, v)).or_default().0.push(v);
    }
    for &v in removed {
        by_key.entry(key(base, v)).or_default().1.push(v);
    }
    let size = |g: &Graph, vs: &[NodeId]| vs.iter().map(|&v| g.nar_size(v) as i128).sum::<i128>();
    let largest = |g: &Graph, vs: &mut Vec<NodeId>| {
        vs.sort_by(|&x, &y| {
            g.nar_size(y)
                .cmp(&g.nar_size(x))
                .then_with(|| g.path(x).cmp(g.path(y)))
        })
    };
    let mut out: Vec<Unit> = by_key
        .into_iter()
        .map(|((name, output), (mut a, mut r))| {
            largest(head, &mut a);
            largest(base, &mut r);
            let net = size(head, &a) - size(base, &r);
            Unit {
                package: if output.is_empty() {
                    name
                } else {
                    format!("{name}-{output}")
                },
                added: a,
                removed: r,
                net,
            }
        })
        .collect();
    out.sort_by(|x, y| {
        y.net
            .unsigned_abs()
            .cmp(&x.net.unsigned_abs())
            .then_with(|| x.package.cmp(&y.package))
    });
    out
}

/// [`nix_heft_graph::Chooser`] for impact: the paths that explain the `top`
/// units of largest net change (each unit's largest added path, or its
/// largest removed one when it only lost paths).
pub fn choose(
    base: &Graph,
    removed: &[NodeId],
    head: &Graph,
    added: &[NodeId],
    top: usize,
) -> (Vec<NodeId>, Vec<NodeId>) {
    let mut a = Vec::new();
    let mut r = Vec::new();
    for u in units(base, removed, head, added).into_iter().take(top) {
        match u.explained_by() {
            (v, true) => a.push(v),
            (v, false) => r.push(v),
        }
    }
    (a, r)
}

/// The versions of a unit's paths on one side, as diff-closures reads
/// them (`""` for a path without one), sorted, each once.
pub fn versions(g: &Graph, vs: &[NodeId]) -> Vec<String> {
    let mut out: Vec<String> = vs
        .iter()
        .map(|&v| {
            split_name_like_diff_closures(g.path(v).name())
                .version
                .unwrap_or("")
                .to_string()
        })
        .collect();
    out.sort();
    out.dedup();
    out
}
