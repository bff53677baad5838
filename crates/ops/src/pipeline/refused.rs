//! `refused`'s one operation (issues 33, 39): why Nix refuses (or would
//! refuse) a build's outputs, from inside the build (the setup hook) or
//! after it (a `.drv`, an output, or Nix's error text), each refusal with
//! its chain, the files that hold it and what would drop it.
//!
//! The sequence: what the build is ([`BuildSpec`], from the environment
//! and `.attrs.json`, or from the `.drv`) → its outputs where they are
//! ([`unregistered::left_outputs`]) → their graph, as Nix scans them
//! ([`Scanned`]) → [`refusal::refusals`] and [`refusal::cycles`] → the
//! edges they hang on read and classified ([`super::classified`]) → each
//! refusal's strongest chain and remedy. Each output is scanned once per
//! call (and the files that hold what is explained read again, for their
//! evidence), so the setup hook, which calls it once per build, reads
//! each output once.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use nix_heft_analysis::refusal::{self, BuildSpec, Refusal, Remedy};
use nix_heft_format::store_path::StorePath;
use nix_heft_graph::{Graph, NodeId};
use nix_heft_scan::classify::Classified;
use nix_heft_scan::unregistered::{self, Scanned};
use nix_heft_store::source::{RawClosure, StoreSource};
use nix_heft_types::problem::{Problem, ProblemKind};

use super::Progress;

/// What [`refused`] examines.
pub enum RefusedOf<'a> {
    /// Inside a build: the builder's environment (variables as given).
    /// No store is read: a sandbox has no database.
    Build(&'a BTreeMap<String, String>),
    /// After a build: a derivation, or an output of one (read as its
    /// derivation, that output's checks only), over `store`.
    Derivation {
        /// The store the derivation and its outputs are in.
        store: &'a dyn StoreSource,
        /// The `.drv` or output path.
        path: &'a StorePath,
    },
}

/// What Nix refuses of one build, and why.
#[derive(Debug)]
pub struct Refused {
    /// The derivation, when known (not inside a build).
    pub drv: Option<StorePath>,
    /// The build: its outputs and all their checks.
    pub spec: BuildSpec,
    /// The outputs' graph (empty when nothing could be refused).
    pub graph: Graph,
    /// The edges read, classified.
    pub classified: Classified,
    /// Each refused path.
    pub refusals: Vec<Refusal>,
    /// Each refusal's strongest chain, output first.
    pub chains: Vec<Vec<NodeId>>,
    /// What would drop each refusal.
    pub remedies: Vec<Remedy>,
    /// The cycles between outputs, each as `[out, dev, out]`.
    pub cycles: Vec<Vec<NodeId>>,
    /// What would break each cycle.
    pub cycle_remedies: Vec<Remedy>,
    /// What could not be read.
    pub problems: Vec<Problem>,
}

impl Refused {
    /// Whether Nix refuses anything.
    pub fn any(&self) -> bool {
        !self.refusals.is_empty() || !self.cycles.is_empty()
    }

    /// Each output examined, by its id in the graph.
    pub fn output_names(&self) -> BTreeMap<NodeId, String> {
        let index = self.graph.index();
        self.spec
            .outputs
            .iter()
            .filter_map(|(n, p)| index.get(p).map(|&v| (v, n.clone())))
            .collect()
    }
}

/// Examines `of`'s outputs (`outputs`, or all when empty; an output path
/// given alone means that output) against its checks.
pub fn refused(of: RefusedOf<'_>, outputs: &[String], progress: &dyn Progress) -> Result<Refused> {
    let (spec, base, store_dir, drv, mut chosen) = match of {
        RefusedOf::Build(vars) => {
            let store_dir = vars
                .get("NIX_STORE")
                .cloned()
                .unwrap_or_else(|| nix_heft_store::source::DEFAULT_STORE_DIR.to_string());
            let json = unregistered::structured_attrs(vars)?;
            let spec = BuildSpec::from_env(&store_dir, vars, json.as_deref())
                .map_err(Error::BadBuildEnv)?;
            (spec, None, store_dir, None, Vec::new())
        }
        RefusedOf::Derivation { store, path } => {
            let (drv, output) = unregistered::derivation_of(store, path)?;
            let d = unregistered::read_derivation(store, &drv)?;
            let spec = BuildSpec::from_drv(store.store_dir(), &d).map_err(|reason| {
                nix_heft_store::Error::BadDerivation {
                    path: drv.to_string(),
                    reason,
                }
            })?;
            let chosen: Vec<String> = output
                .and_then(|o| spec.output_named(&o).map(str::to_string))
                .into_iter()
                .collect();
            (
                spec,
                Some(store),
                store.store_dir().to_string(),
                Some(drv),
                chosen,
            )
        }
    };
    if !outputs.is_empty() {
        chosen = outputs.to_vec();
    }
    for o in &chosen {
        if !spec.outputs.contains_key(o) {
            let have: Vec<&str> = spec.outputs.keys().map(String::as_str).collect();
            return Err(Error::NoSuchOutput {
                output: o.to_string(),
                have: have.join(", "),
            });
        }
    }
    if chosen.is_empty() {
        chosen = spec.outputs.keys().cloned().collect();
    }
    let nothing = |spec: BuildSpec, drv: Option<StorePath>| Refused {
        drv,
        spec,
        graph: Graph::from_raw(RawClosure::default(), 0),
        classified: Classified::default(),
        refusals: Vec::new(),
        chains: Vec::new(),
        remedies: Vec::new(),
        cycles: Vec::new(),
        cycle_remedies: Vec::new(),
        problems: Vec::new(),
    };
    // No check and one output: nothing Nix could refuse, nothing to read.
    if !spec.has_checks() && spec.outputs.len() < 2 {
        return Ok(nothing(spec, drv));
    }
    let trees = unregistered::left_outputs(base, spec.outputs.values())?;
    let present: Vec<StorePath> = spec
        .outputs
        .values()
        .filter(|p| {
            trees.iter().any(|t| &t.path == *p)
                || base.is_some_and(|b| b.is_valid(p).unwrap_or(false))
        })
        .cloned()
        .collect();
    if present.is_empty() {
        return Err(Error::OutputsGone {
            drv: drv
                .as_ref()
                .map_or_else(|| "the build".into(), |d| d.to_string()),
            outputs: spec
                .outputs
                .values()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    // As Nix's scanner: every path the build could name; after the build,
    // every valid path (a superset), and the outputs.
    let candidates = match base {
        Some(b) => {
            let mut c = b.all_paths()?;
            c.extend(spec.outputs.values().cloned());
            c
        }
        None => spec.named.clone(),
    };
    let mut scanned = Scanned::new(base, &store_dir, trees, candidates);
    if base.is_none() {
        // Inside a build: the inputs the environment does not name are
        // found written out in the outputs and inputs (only the input
        // closure exists in a sandbox); closure checks read the inputs'
        // own files, the others stop at the outputs' direct references.
        scanned = scanned.discovering();
        if !spec.has_recursive_checks() {
            scanned = scanned.candidates_as_leaves();
        }
    }
    let graph = Graph::load(&scanned, &present)?;
    // Only the outputs asked about; the others' checks still count for
    // the fixes (a move to an output another check covers does not pass).
    let mut refusals = refusal::refusals(&graph, &spec, &store_dir);
    refusals.retain(|r| chosen.contains(&r.output));
    let mut result = nothing(spec, drv);
    result.graph = graph;
    let g = &result.graph;
    let names = result.output_names();
    let mut ids: Vec<NodeId> = names.keys().copied().collect();
    ids.sort_by_key(|v| &names[v]);
    let cycles: Vec<Vec<NodeId>> = refusal::cycles(g, &ids)
        .into_iter()
        .filter(|c| {
            c.iter()
                .any(|v| names.get(v).is_some_and(|n| chosen.contains(n)))
        })
        .collect();
    let wants = refusal::wants(g, &refusals, &cycles);
    let c = super::classified(&scanned, g, &wants, None, progress);
    result.chains = refusal::explained(g, &c, &refusals);
    result.remedies = refusal::remedies(g, &c, &result.spec, &store_dir, &refusals);
    result.cycle_remedies = refusal::cycle_remedies(g, &c, &result.spec, &cycles);
    result.problems = c.problems.clone();
    result.refusals = refusals;
    result.cycles = cycles;
    result.classified = c;
    Ok(result)
}

/// Whether the files of a refusal Nix reported are still there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Left {
    /// Valid, or left on disk unregistered: examined below.
    Files,
    /// Gone: deleted with a sandbox (a cycle under Nix 2.8), by a later
    /// build of the derivation, or by the garbage collector.
    Gone,
    /// Not known: the text names no derivation or output to look for.
    Unknown,
}

/// One refusal of a log, and whether its files are there.
#[derive(Debug, Clone)]
pub struct LogRefusal {
    /// What the text says.
    pub found: nix_heft_format::nix_error::Found,
    /// The derivation, from the text or the output's recorded derivation.
    pub drv: Option<StorePath>,
    /// Whether the files are there.
    pub left: Left,
}

/// What Nix's error text says and what its builds' files show.
#[derive(Debug)]
pub struct RefusedLog {
    /// Each refusal the text holds, in its order.
    pub refusals: Vec<LogRefusal>,
    /// Each derivation whose outputs are there, examined.
    pub builds: Vec<Refused>,
    /// What could not be examined: the outputs that are gone, a
    /// derivation that cannot be read.
    pub problems: Vec<Problem>,
    /// Only the text's end was read.
    pub truncated: bool,
}

/// Reads Nix's error text `text` (what `nix-build` or `nix build`
/// printed, a build log with the setup hook's text) for refusals, then
/// examines each derivation whose outputs are still there. A text without
/// a refusal is a usage error (it is not what `--log` takes).
pub fn refused_log(
    store: &dyn StoreSource,
    text: &[u8],
    progress: &dyn Progress,
) -> Result<RefusedLog> {
    let parsed = nix_heft_format::nix_error::parse(store.store_dir(), text);
    if parsed.refusals.is_empty() {
        let names: Vec<String> = parsed
            .derivations
            .iter()
            .take(3)
            .map(|p| p.to_string())
            .collect();
        return Err(Error::NoRefusal {
            named: match parsed.derivations.len() {
                0 => String::new(),
                n if n > 3 => format!("; it names {} and {} more", names.join(", "), n - 3),
                _ => format!("; it names {}", names.join(", ")),
            },
        });
    }
    let on_disk = |p: &StorePath| -> Result<bool> {
        Ok(store.is_valid(p)?
            || unregistered::left_outputs(Some(store), [p])
                .map(|t| !t.is_empty())
                .unwrap_or(false))
    };
    let mut out = RefusedLog {
        refusals: Vec::new(),
        builds: Vec::new(),
        problems: Vec::new(),
        truncated: parsed.truncated,
    };
    let mut drvs: Vec<StorePath> = Vec::new();
    for f in parsed.refusals {
        let output = match &f.refusal {
            nix_heft_format::nix_error::Refusal::Forbidden { output, .. } => Some(output.clone()),
            nix_heft_format::nix_error::Refusal::TooLarge { path, .. } => Some(path.clone()),
            _ => None,
        };
        // A text that names no derivation (`nix build`'s progress bar):
        // the output's derivation, as the store records it.
        let drv = f.refusal.drv().cloned().or_else(|| {
            output
                .as_ref()
                .and_then(|o| unregistered::derivation_of(store, o).ok())
                .map(|(d, _)| d)
        });
        let left = match (&output, &drv) {
            (Some(o), _) => {
                if on_disk(o)? {
                    Left::Files
                } else {
                    Left::Gone
                }
            }
            (None, Some(d)) => match unregistered::read_derivation(store, d) {
                Ok(d) => {
                    let mut any = false;
                    for o in d.outputs.iter().filter_map(|o| o.path.as_ref()) {
                        any |= on_disk(o)?;
                    }
                    if any { Left::Files } else { Left::Gone }
                }
                Err(_) => Left::Gone,
            },
            (None, None) => Left::Unknown,
        };
        if let Some(d) = &drv {
            if left == Left::Files && !drvs.contains(d) {
                drvs.push(d.clone());
            }
            if left == Left::Gone && !out.problems.iter().any(|p| p.path == d.as_str()) {
                out.problems.push(Problem::new(
                    d.to_string(),
                    ProblemKind::Vanished,
                    "Nix refused its outputs, and their files are gone (deleted with the \
                     sandbox, by a later build of the derivation or by the garbage collector): \
                     build it again with nix-heft's setup hook to see them"
                        .to_string(),
                ));
            }
        }
        out.refusals.push(LogRefusal {
            found: f,
            drv,
            left,
        });
    }
    for d in &drvs {
        match refused(RefusedOf::Derivation { store, path: d }, &[], progress) {
            Ok(r) => out.builds.push(r),
            Err(e) => out.problems.push(Problem::new(
                d.to_string(),
                ProblemKind::Unreadable,
                e.to_string(),
            )),
        }
    }
    Ok(out)
}
