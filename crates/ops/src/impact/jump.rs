//! What `history` and `bisect` share to explain a jump of one attribute's
//! closure between two commits: the closure change, read as `impact` reads
//! a pull request's, and the change of the attribute's derivation, both
//! commits instantiated into a scratch store and compared as
//! `diff --derivation` compares them.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use rayon::prelude::*;

use super::{Impact, Request, Rules, SideInput};
use nix_heft_analysis::diff::derivation::{DrvComparison, compare};
use nix_heft_eval::attrs::{Evaluator, Outcome};
use nix_heft_eval::history::{HistoryError, build_graph_outputs, instantiate_at};
use nix_heft_eval::installable::Options;
use nix_heft_format::derivation::Derivation;
use nix_heft_format::store_path::StorePath;
use nix_heft_store::source::StoreSource;

/// How `attr` changed from the evaluation `before` to `after` (attribute →
/// outcome), both read from `src`: the packages added and removed, the
/// chain to each and, with `evidence`, the file that holds it; the `top`
/// largest. No notes, no rules, no progress shown: a jump is explained,
/// not judged.
pub fn explain(
    src: &dyn StoreSource,
    before: &BTreeMap<String, Outcome>,
    after: &BTreeMap<String, Outcome>,
    attr: &str,
    top: usize,
    evidence: bool,
) -> crate::Result<Impact> {
    let no_notes = BTreeMap::new();
    let quiet = |_: u64| {};
    super::impact(
        SideInput {
            src,
            attrs: before,
            notes: &no_notes,
        },
        SideInput {
            src,
            attrs: after,
            notes: &no_notes,
        },
        &Request {
            attrs: &[attr.to_string()],
            top,
            rules: &Rules::default(),
            evidence,
            removed_evidence: false,
        },
        (&quiet, &quiet),
    )
}

/// Each `(commit, attribute)` of `repo` instantiated into the scratch
/// store at `root`, all at once (each a Nix process of its own), in
/// order: the `.drv`, or why that commit does not instantiate. Fails only
/// when git cannot give a commit.
pub fn instantiate_each(
    repo: &Path,
    at: &[(&str, &str)],
    flake: bool,
    evaluator: &Evaluator,
    options: &Options,
    root: &Path,
) -> crate::Result<Vec<Result<StorePath, String>>> {
    at.par_iter()
        .map(|&(commit, attr)| {
            instantiate_at(repo, commit, flake, attr, evaluator, options, root)
                .map_err(|e| HistoryError::from(e).into())
        })
        .collect()
}

/// The derivations `before` and `after`, in the scratch store at `root`,
/// compared as `diff --derivation` compares two: which input changed, down
/// to the variable. `parsed` keeps every derivation read, for the next
/// comparison.
pub fn derivation_change(
    root: &Path,
    before: &StorePath,
    after: &StorePath,
    parsed: &mut HashMap<StorePath, Derivation>,
    store_dir: &str,
) -> DrvComparison {
    for d in [before, after] {
        build_graph_outputs(root, d, parsed, store_dir);
    }
    compare(
        std::slice::from_ref(before),
        std::slice::from_ref(after),
        parsed,
        &HashMap::new(),
    )
}
