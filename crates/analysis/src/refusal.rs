//! Why Nix refuses an output (issues 33, 39): the checks a derivation asks
//! for (`disallowedReferences`, `disallowedRequisites`, `allowedReferences`,
//! `allowedRequisites`, per output with `__structuredAttrs`' `outputChecks`)
//! applied to the outputs' graph as Nix 2.8 applies them, the cycles between
//! outputs that make Nix stop with "cycle detected", and what would make
//! each pass.
//!
//! How Nix 2.8.0 reads the checks (`LocalDerivationGoal::checkOutputs`,
//! `src/libstore/build/local-derivation-goal.cc`; `ParsedDerivation::
//! getStringsAttr`, `src/libstore/parsed-derivations.cc`), followed here:
//! - without structured attributes, each check is an environment variable
//!   that applies to every output; a variable that is *set*, even to the
//!   empty string (`allowedReferences = [ ]`), is a check (an empty
//!   allow-list refuses every reference), one that is absent is none;
//! - with `__structuredAttrs`, only `outputChecks.<output>` counts, a key
//!   present (even `[ ]`) being a check;
//! - an entry is a store path or the name of one of the build's outputs;
//! - requisites are the output's closure, which holds the output itself;
//!   Nix drops the output from it only where `ignoreSelfRefs` holds, which
//!   is always without structured attributes and never with them: 2.8 sets
//!   it only in the legacy branch, and no Nix through 2.35
//!   (`DerivationOptions`, `src/libstore/derivation-options.cc`) reads it
//!   from `outputChecks`. So `outputChecks.out.allowedRequisites = [ ]`
//!   refuses the output's own path, and the fix is to list `"out"`.
//!
//! What a build has ([`BuildSpec`]) comes from its environment (the setup
//! hook, inside the build) or from its `.drv` (after a failure); the graph
//! is the outputs read as unregistered trees ([`nix_heft_scan::unregistered`]),
//! their references found as Nix finds them. This module is pure: the
//! caller loads the graph, reads the edges [`wants`] names and classifies
//! them; [`explained`] then gives each refusal its strongest chain, and
//! [`remedies`] and [`cycle_remedies`] what would drop it.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::plan::advise::snippet;
use nix_heft_format::quote;
use nix_heft_format::store_path::StorePath;
use nix_heft_graph::{Graph, NodeId, ReadRequest, chains, request};
use nix_heft_scan::classify::Classified;
use nix_heft_types::evidence::{Evidence, Kind, Verdict};

/// One of the four output checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Check {
    /// `disallowedReferences`: these may not be direct references.
    #[serde(rename = "disallowedReferences")]
    DisallowedReferences,
    /// `disallowedRequisites`: these may not be in the closure.
    #[serde(rename = "disallowedRequisites")]
    DisallowedRequisites,
    /// `allowedReferences`: only these may be direct references.
    #[serde(rename = "allowedReferences")]
    AllowedReferences,
    /// `allowedRequisites`: only these may be in the closure.
    #[serde(rename = "allowedRequisites")]
    AllowedRequisites,
}

impl Check {
    /// Every check, as the attributes are named.
    pub const ALL: [Check; 4] = [
        Check::DisallowedReferences,
        Check::DisallowedRequisites,
        Check::AllowedReferences,
        Check::AllowedRequisites,
    ];

    /// The attribute's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::DisallowedReferences => "disallowedReferences",
            Check::DisallowedRequisites => "disallowedRequisites",
            Check::AllowedReferences => "allowedReferences",
            Check::AllowedRequisites => "allowedRequisites",
        }
    }

    /// Whether the check is over the closure (requisites), not the direct
    /// references.
    pub fn recursive(self) -> bool {
        matches!(self, Check::DisallowedRequisites | Check::AllowedRequisites)
    }

    /// Whether the list names what may be there (`allowed*`), not what
    /// may not.
    pub fn allowed(self) -> bool {
        matches!(self, Check::AllowedReferences | Check::AllowedRequisites)
    }
}

/// The checks of one output: each list as given (store paths or output
/// names); a check not asked for is absent, one set to `[ ]` is present
/// and empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checks(pub BTreeMap<Check, Vec<String>>);

/// What a build knows: its outputs, their checks, and the store paths its
/// environment names (its inputs: the candidates Nix scans for).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildSpec {
    /// Output name → path.
    pub outputs: BTreeMap<String, StorePath>,
    /// Output name → its checks (an output without checks is absent).
    pub checks: BTreeMap<String, Checks>,
    /// Every store path the environment names (inputs, the checks' paths,
    /// the outputs).
    pub named: Vec<StorePath>,
    /// `__structuredAttrs`: the checks are `outputChecks.<output>`, and
    /// an output counts among its own requisites (see the module docs).
    pub structured: bool,
}

/// `__structuredAttrs`' attributes as the checks need them.
#[derive(Deserialize, Default)]
struct Structured {
    #[serde(default)]
    outputs: Option<serde_json::Value>,
    #[serde(default, rename = "outputChecks")]
    output_checks: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
}

impl BuildSpec {
    /// From a builder's environment: `outputs` (names) and one variable per
    /// output (its path), the four checks for every output; or, with
    /// `structured` (the text of `.attrs.json`, `__structuredAttrs`), its
    /// `outputs` and `outputChecks.<output>`.
    pub fn from_env(
        store_dir: &str,
        vars: &BTreeMap<String, String>,
        structured: Option<&str>,
    ) -> Result<BuildSpec, String> {
        let mut outputs = BTreeMap::new();
        if let Some(json) = structured {
            let s: Structured = serde_json::from_str(json)
                .map_err(|e| format!("the structured attributes are not JSON: {e}"))?;
            if let Some(serde_json::Value::Object(m)) = &s.outputs {
                for (name, v) in m {
                    if let Some(p) = v.as_str().and_then(|p| StorePath::parse(store_dir, p).ok()) {
                        outputs.insert(name.clone(), p);
                    }
                }
            }
        } else {
            let names = vars.get("outputs").map_or("out", String::as_str);
            for name in names.split_ascii_whitespace() {
                if let Some(p) = vars
                    .get(name)
                    .and_then(|p| StorePath::parse(store_dir, p).ok())
                {
                    outputs.insert(name.to_string(), p);
                }
            }
        }
        if outputs.is_empty() {
            return Err(if structured.is_some() {
                "the structured attributes name no output (no `outputs` object of paths)".into()
            } else {
                "the environment names no output (no `outputs`, no `out`)".into()
            });
        }
        BuildSpec::with_outputs(store_dir, outputs, vars, structured)
    }

    /// From a derivation: its outputs, and its environment as the builder
    /// gets it (`__json` holds the structured attributes, whose `outputs`,
    /// unlike the builder's `.attrs.json`, has no paths: the `.drv`'s
    /// outputs name them).
    pub fn from_drv(
        store_dir: &str,
        drv: &nix_heft_format::derivation::Derivation,
    ) -> Result<BuildSpec, String> {
        let mut vars: BTreeMap<String, String> = drv.env.iter().cloned().collect();
        let structured = vars.remove("__json");
        let outputs: BTreeMap<String, StorePath> = drv
            .outputs
            .iter()
            .filter_map(|o| Some((o.name.clone(), o.path.clone()?)))
            .collect();
        if outputs.is_empty() {
            return Err(
                "the derivation names no output path (a content-addressed derivation?)".into(),
            );
        }
        let mut spec = BuildSpec::with_outputs(store_dir, outputs, &vars, structured.as_deref())?;
        spec.named.extend(drv.input_srcs.iter().cloned());
        spec.named
            .extend(drv.input_drvs.iter().map(|(d, _)| d.clone()));
        spec.named.sort();
        spec.named.dedup();
        Ok(spec)
    }

    /// The checks and named paths of a build whose outputs are known.
    fn with_outputs(
        store_dir: &str,
        outputs: BTreeMap<String, StorePath>,
        vars: &BTreeMap<String, String>,
        structured: Option<&str>,
    ) -> Result<BuildSpec, String> {
        let mut texts: Vec<&str> = vars.values().map(String::as_str).collect();
        let checks = match structured {
            Some(json) => {
                texts.push(json);
                let s: Structured = serde_json::from_str(json)
                    .map_err(|e| format!("the structured attributes are not JSON: {e}"))?;
                structured_checks(&s)?
            }
            None => {
                let mut checks = Checks::default();
                for c in Check::ALL {
                    // Set, even to "", is a check; absent is none.
                    if let Some(v) = vars.get(c.as_str()) {
                        checks
                            .0
                            .insert(c, v.split_ascii_whitespace().map(String::from).collect());
                    }
                }
                if checks.0.is_empty() {
                    BTreeMap::new()
                } else {
                    outputs
                        .keys()
                        .map(|o| (o.clone(), checks.clone()))
                        .collect()
                }
            }
        };
        let mut named = store_paths_in(store_dir, &texts);
        named.extend(outputs.values().cloned());
        named.sort();
        named.dedup();
        Ok(BuildSpec {
            outputs,
            checks,
            named,
            structured: structured.is_some(),
        })
    }

    /// A check's entries as store paths: output names mapped to their
    /// paths (Nix allows `"out"` in these lists), the rest parsed; entries
    /// that are neither are left out.
    pub fn resolve(&self, store_dir: &str, entries: &[String]) -> Vec<StorePath> {
        entries
            .iter()
            .filter_map(|e| {
                self.outputs
                    .get(e)
                    .cloned()
                    .or_else(|| StorePath::parse(store_dir, e).ok())
            })
            .collect()
    }

    /// Whether Nix leaves an output out of its own requisites
    /// (`ignoreSelfRefs`): without structured attributes only.
    pub fn ignores_self(&self) -> bool {
        !self.structured
    }

    /// The attribute that sets `check` for `output`, as the derivation
    /// writes it: `allowedReferences`, or `outputChecks.out.allowedReferences`.
    pub fn attribute(&self, output: &str, check: Check) -> String {
        if self.structured {
            format!("outputChecks.{output}.{}", check.as_str())
        } else {
            check.as_str().to_string()
        }
    }

    /// Whether any output has a check.
    pub fn has_checks(&self) -> bool {
        self.checks.values().any(|c| !c.0.is_empty())
    }

    /// Whether any check is over a closure: then the inputs' own files
    /// must be read, not only the outputs'.
    pub fn has_recursive_checks(&self) -> bool {
        self.checks
            .values()
            .any(|c| c.0.keys().any(|k| k.recursive()))
    }

    /// The name of the output at `path`, when it is one of the build's.
    pub fn output_named(&self, path: &StorePath) -> Option<&str> {
        self.outputs
            .iter()
            .find(|(_, p)| *p == path)
            .map(|(n, _)| n.as_str())
    }
}

fn structured_checks(s: &Structured) -> Result<BTreeMap<String, Checks>, String> {
    let mut out = BTreeMap::new();
    for (output, m) in &s.output_checks {
        let mut checks = Checks::default();
        for c in Check::ALL {
            let Some(v) = m.get(c.as_str()) else { continue };
            // As Nix: a list of strings, or the build fails.
            let items = v.as_array().ok_or_else(|| {
                format!(
                    "outputChecks.{output}.{} is not a list of strings",
                    c.as_str()
                )
            })?;
            let mut list = Vec::new();
            for i in items {
                list.push(
                    i.as_str()
                        .ok_or_else(|| {
                            format!(
                                "outputChecks.{output}.{} is not a list of strings",
                                c.as_str()
                            )
                        })?
                        .to_string(),
                );
            }
            checks.0.insert(c, list);
        }
        if !checks.0.is_empty() {
            out.insert(output.clone(), checks);
        }
    }
    Ok(out)
}

/// Every `STORE_DIR/<32 base-32>-<name>` in `texts`, as store paths.
fn store_paths_in(store_dir: &str, texts: &[&str]) -> Vec<StorePath> {
    let mut out = Vec::new();
    for t in texts {
        let mut w = nix_heft_format::store_path::WrittenPaths::new(store_dir);
        w.feed(t.as_bytes(), true);
        out.extend(w.into_paths());
    }
    out
}

/// One path an output may not have: which check, for which output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The output's name.
    pub output: String,
    /// The output, in the graph.
    pub output_node: NodeId,
    /// The check it breaks.
    pub check: Check,
    /// The path it may not have (the output itself for a self-reference,
    /// or, under structured attributes, for a requisite check).
    pub path: NodeId,
}

/// The refusals Nix would make, output by output, check by check, path by
/// path (ascending store path). Outputs missing from `g` are skipped.
pub fn refusals(g: &Graph, spec: &BuildSpec, store_dir: &str) -> Vec<Refusal> {
    let index = g.index();
    let mut out = Vec::new();
    for (name, path) in &spec.outputs {
        let Some(&o) = index.get(path) else { continue };
        let Some(checks) = spec.checks.get(name) else {
            continue;
        };
        let closure = g.closure_of(&[o]);
        for (&check, entries) in &checks.0 {
            let listed: HashSet<StorePath> = spec.resolve(store_dir, entries).into_iter().collect();
            let used: Vec<NodeId> = if check.recursive() {
                // The closure holds the output itself; Nix drops it only
                // where ignoreSelfRefs holds.
                (0..g.len() as NodeId)
                    .filter(|&v| closure[v as usize] && !(v == o && spec.ignores_self()))
                    .collect()
            } else {
                let mut r: Vec<NodeId> = g.references(o).to_vec();
                if g.references_self(o) {
                    r.push(o);
                }
                r
            };
            let mut bad: Vec<NodeId> = used
                .into_iter()
                .filter(|&v| listed.contains(g.path(v)) != check.allowed())
                .collect();
            bad.sort_by(|x, y| g.path(*x).cmp(g.path(*y)));
            bad.dedup();
            out.extend(bad.into_iter().map(|path| Refusal {
                output: name.clone(),
                output_node: o,
                check,
                path,
            }));
        }
    }
    out
}

/// The edges to read to explain `refusals` and `cycles`: a reference's one
/// edge; every edge on a chain from the output to a requisite (so the
/// strongest can be chosen, and every edge from the output that brings it
/// in is known for the fix); each cycle's edges.
pub fn wants(g: &Graph, refusals: &[Refusal], cycles: &[Vec<NodeId>]) -> ReadRequest {
    let mut w = ReadRequest::new();
    for r in refusals {
        if r.path == r.output_node {
            if g.references_self(r.output_node) {
                request::want(&mut w, [(r.output_node, r.path)]);
            }
        } else if r.check.recursive() {
            let mut is_dep = vec![false; g.len()];
            is_dep[r.path as usize] = true;
            let all = chains::edges_of_all_chains(g, &[r.output_node], &is_dep);
            request::want(
                &mut w,
                all.into_iter()
                    .flat_map(|(f, ts)| ts.into_iter().map(move |t| (f, t))),
            );
        } else {
            request::want(&mut w, [(r.output_node, r.path)]);
        }
    }
    for c in cycles {
        request::want(&mut w, c.windows(2).map(|e| (e[0], e[1])));
    }
    w
}

/// The strongest chain from each refusal's output to its path (output
/// first; the output alone for its own path), from the classified edges.
pub fn explained(g: &Graph, c: &Classified, refusals: &[Refusal]) -> Vec<Vec<NodeId>> {
    refusals
        .iter()
        .map(|r| {
            if r.path == r.output_node {
                return if g.references_self(r.output_node) {
                    vec![r.output_node, r.output_node]
                } else {
                    vec![r.output_node]
                };
            }
            crate::explain::best_chains(g, c, &[r.output_node], &[r.path])
                .into_iter()
                .next()
                .map(|e| e.chain)
                .unwrap_or_else(|| vec![r.output_node, r.path])
        })
        .collect()
}

/// Cycles between outputs, as Nix refuses them: each as the outputs in
/// order, the first repeated at the end (`[out, dev, out]`), found along
/// direct references between outputs (a cycle through another path cannot
/// happen: nothing else refers to an output being built). Each cycle once,
/// starting from its first output in `outputs`' order (the caller's: by
/// name, so that the text does not depend on the hashes).
pub fn cycles(g: &Graph, outputs: &[NodeId]) -> Vec<Vec<NodeId>> {
    let set: HashSet<NodeId> = outputs.iter().copied().collect();
    let mut found: Vec<Vec<NodeId>> = Vec::new();
    let sorted = outputs.to_vec();
    // Few outputs: a walk from each, through later outputs only, finds
    // every elementary cycle once (from its first member).
    for (i, &start) in sorted.iter().enumerate() {
        let allowed: HashSet<NodeId> = sorted[i..].iter().copied().collect();
        let mut stack = vec![(start, vec![start])];
        while let Some((v, path)) = stack.pop() {
            for &w in g.references(v) {
                if !set.contains(&w) || !allowed.contains(&w) || w == v {
                    continue;
                }
                if w == start {
                    let mut c = path.clone();
                    c.push(start);
                    found.push(c);
                } else if !path.contains(&w) && path.len() < outputs.len() {
                    let mut p = path.clone();
                    p.push(w);
                    stack.push((w, p));
                }
            }
        }
    }
    let rank = |v: &NodeId| sorted.iter().position(|x| x == v);
    found.sort_by_key(|c| c.iter().map(rank).collect::<Vec<_>>());
    found.dedup();
    found
}

/// One way to make a refusal or a cycle go: each passes on its own (with
/// the fixes of the build's other refusals), as the tests check by
/// applying it to the derivation and building it with Nix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Fix {
    /// Shell lines for the build, after the install and before the
    /// fixup (`postInstall`): each moves, edits or removes what holds
    /// the path, with nixpkgs' `moveToOutput`, `remove-references-to`
    /// (`removeReferencesTo` in `nativeBuildInputs`) and `patchelf`.
    Script {
        /// The lines, in order.
        lines: Vec<String>,
    },
    /// The check changed to accept the path: `entry` added to an
    /// allow-list, or taken off a disallow-list.
    Check {
        /// The attribute (`allowedReferences`,
        /// `outputChecks.out.allowedRequisites`).
        attribute: String,
        /// The entry: the output's name for one of the build's outputs
        /// (Nix accepts names), else the store path.
        entry: String,
        /// Added (`allowed*`), or removed (`disallowed*`).
        add: bool,
        /// The attribute's list after the change.
        list: Vec<String>,
    },
}

/// What holds a refused path, as far as it decides the fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "held", rename_all = "kebab-case")]
pub enum Held {
    /// Only files nothing needs at run time (documentation, build-time
    /// files, dead RUNPATH entries): the reference can go.
    Removable,
    /// Files that use it at run time: the dependency is real, and only
    /// allowing it passes without breaking the program.
    AtRunTime {
        /// The files, relative to the output.
        files: Vec<String>,
    },
    /// Files that may use it at run time (nix-heft cannot tell).
    Unsure {
        /// The files, relative to the output.
        files: Vec<String>,
    },
    /// Nothing: it is the output itself, which Nix counts among its own
    /// requisites under `__structuredAttrs`.
    OwnPath,
    /// No file that was read: only the output's references name it.
    Unread,
}

/// What would drop a refusal or break a cycle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Remedy {
    /// What holds it.
    #[serde(flatten)]
    pub held: Held,
    /// The fixes, the one to try first first; empty when none passes.
    pub fixes: Vec<Fix>,
}

/// Files named on one line of a script before the rest are counted.
pub const FILES_PER_LINE: usize = 3;

/// The directories nixpkgs' stdenv moves whole between outputs
/// (`_multioutDocs`, `_multioutDevs`, `pkgs/build-support/setup-hooks/
/// multiple-outputs.sh`): a fix moves such a directory, anything else
/// file by file, so that nothing a program needs moves with it.
const MOVED_WHOLE: &[&str] = &[
    "share/doc",
    "share/info",
    "share/man",
    "share/gtk-doc",
    "share/devhelp/books",
    "include",
    "lib/pkgconfig",
    "share/pkgconfig",
    "lib/cmake",
    "share/aclocal",
];

/// The outputs documentation and build-time files belong in, in nixpkgs'
/// order of preference (`outputDoc`, `outputDevdoc`, `outputMan`,
/// `outputInfo`; `outputDev`).
fn homes(v: Verdict) -> &'static [&'static str] {
    match v {
        Verdict::Docs => &["doc", "devdoc", "man", "info"],
        Verdict::Build => &["dev"],
        _ => &[],
    }
}

/// A remedy for each refusal (in order): the edges from the output that
/// bring the path in, and what holds them, decide.
///
/// A reference held only by files nothing needs at run time is dropped by
/// a script: `remove-references-to` (or `patchelf --shrink-rpath` for an
/// ELF file whose only hold is a dead RUNPATH entry, `rm` for a symlink),
/// and, under structured attributes, moving the files to an output that
/// exists, that no check covers and that the output does not refer to
/// (without structured attributes every output has the same checks, so
/// a move never passes). A run-time hold is real: the fix is the check's.
/// An output's own path as its requisite is allowed by its name.
pub fn remedies(
    g: &Graph,
    c: &Classified,
    spec: &BuildSpec,
    store_dir: &str,
    refusals: &[Refusal],
) -> Vec<Remedy> {
    refusals
        .iter()
        .map(|r| remedy(g, c, spec, store_dir, r))
        .collect()
}

fn remedy(g: &Graph, c: &Classified, spec: &BuildSpec, store_dir: &str, r: &Refusal) -> Remedy {
    let o = r.output_node;
    let check = check_fix(g, spec, store_dir, r);
    if r.path == o && !g.references_self(o) {
        return Remedy {
            held: Held::OwnPath,
            fixes: check.into_iter().collect(),
        };
    }
    // The edges to cut: from the output to the path, or, for a requisite,
    // to every reference whose closure holds it.
    let cut: Vec<NodeId> = if r.path == o || !r.check.recursive() {
        vec![r.path]
    } else {
        g.references(o)
            .iter()
            .copied()
            .filter(|&y| y == r.path || g.closure_of(&[y])[r.path as usize])
            .collect()
    };
    let holds: Vec<(NodeId, &Evidence)> = cut
        .iter()
        .flat_map(|&y| c.evidence(o, y).iter().map(move |e| (y, e)))
        .collect();
    let files_with = |keep: &dyn Fn(Verdict) -> bool| -> Vec<String> {
        let mut f: Vec<String> = holds
            .iter()
            .filter(|(_, e)| keep(e.verdict))
            .map(|(_, e)| e.file.clone())
            .collect();
        f.sort();
        f.dedup();
        f
    };
    // Every cut edge must be held by a file read, else a script cannot
    // be known to drop it.
    if cut.iter().any(|&y| c.evidence(o, y).is_empty()) {
        return Remedy {
            held: Held::Unread,
            fixes: check.into_iter().collect(),
        };
    }
    let runtime = files_with(&|v| v == Verdict::Runtime);
    if !runtime.is_empty() {
        return Remedy {
            held: Held::AtRunTime { files: runtime },
            fixes: check.into_iter().collect(),
        };
    }
    let unsure = files_with(&|v| v == Verdict::Unknown);
    let held = if unsure.is_empty() {
        Held::Removable
    } else {
        Held::Unsure { files: unsure }
    };
    let mut fixes = Vec::new();
    if matches!(held, Held::Removable)
        && let Some(lines) = move_lines(g, spec, r, &holds)
    {
        fixes.push(Fix::Script { lines });
    }
    if let Some(lines) = script_lines(g, &r.output, &holds) {
        fixes.push(Fix::Script { lines });
    }
    if !matches!(held, Held::Removable) || fixes.is_empty() {
        fixes.extend(check);
    }
    Remedy { held, fixes }
}

/// The check's own fix: the path allowed (by the output's name when it is
/// one of the build's outputs), or taken off the disallow-list.
fn check_fix(g: &Graph, spec: &BuildSpec, store_dir: &str, r: &Refusal) -> Option<Fix> {
    let entries = spec.checks.get(&r.output)?.0.get(&r.check)?;
    let path = g.path(r.path);
    let entry = spec
        .output_named(path)
        .map_or_else(|| path.to_string(), str::to_string);
    let list: Vec<String> = if r.check.allowed() {
        entries.iter().cloned().chain([entry.clone()]).collect()
    } else {
        entries
            .iter()
            .filter(|e| spec.resolve(store_dir, std::slice::from_ref(e)).first() != Some(path))
            .cloned()
            .collect()
    };
    Some(Fix::Check {
        attribute: spec.attribute(&r.output, r.check),
        entry,
        add: r.check.allowed(),
        list,
    })
}

/// The lines that drop every hold in `holds` from `output`'s files
/// (`None` when one cannot be dropped by a script: a file name).
fn script_lines(g: &Graph, output: &str, holds: &[(NodeId, &Evidence)]) -> Option<Vec<String>> {
    if holds.iter().any(|(_, e)| e.kind == Kind::FileName) {
        return None;
    }
    let mut lines = Vec::new();
    // Per reference: symlinks removed, ELF files whose every hold of it is
    // a dead RUNPATH entry shrunk, the rest edited.
    let mut targets: Vec<NodeId> = holds.iter().map(|(y, _)| *y).collect();
    targets.sort();
    targets.dedup();
    for y in targets {
        let of_y: Vec<&Evidence> = holds
            .iter()
            .filter(|(t, _)| *t == y)
            .map(|(_, e)| *e)
            .collect();
        let mut files: Vec<&str> = of_y.iter().map(|e| e.file.as_str()).collect();
        files.sort();
        files.dedup();
        let mut edit = Vec::new();
        for f in files {
            let in_file: Vec<&&Evidence> = of_y.iter().filter(|e| e.file == f).collect();
            if in_file.iter().any(|e| e.kind == Kind::Symlink) {
                lines.push(format!("rm {}", snippet::output_file(output, f)));
            } else if in_file.iter().all(|e| e.dead && e.kind == Kind::ElfRunpath) {
                lines.push(format!(
                    "patchelf --shrink-rpath {}",
                    snippet::output_file(output, f)
                ));
            } else {
                edit.push(f);
            }
        }
        if edit.is_empty() {
            continue;
        }
        let target = g.path(y).to_string();
        if edit.len() <= FILES_PER_LINE {
            let named: Vec<String> = edit
                .iter()
                .map(|f| snippet::output_file(output, f))
                .collect();
            lines.push(format!(
                "remove-references-to -t {target} {}",
                named.join(" ")
            ));
        } else {
            // Every regular file under the files' common directory: the
            // line stays short, and the files not named are counted.
            let dir = common_dir(&edit);
            let shown: Vec<&str> = edit.iter().take(FILES_PER_LINE).copied().collect();
            lines.push(format!(
                "# {} files: {} and {} more",
                edit.len(),
                shown.join(", "),
                edit.len() - FILES_PER_LINE
            ));
            lines.push(format!(
                "find {} -type f -exec remove-references-to -t {target} {{}} +",
                snippet::output_file(output, &dir)
            ));
        }
    }
    Some(lines)
}

/// The longest directory every file of `files` is under (`""` for the
/// output's top).
fn common_dir(files: &[&str]) -> String {
    let parts: Vec<Vec<&str>> = files
        .iter()
        .map(|f| {
            let mut p: Vec<&str> = f.split('/').collect();
            p.pop();
            p
        })
        .collect();
    let mut common: Vec<&str> = parts.first().cloned().unwrap_or_default();
    for p in &parts[1..] {
        let n = common.iter().zip(p).take_while(|(a, b)| a == b).count();
        common.truncate(n);
    }
    common.join("/")
}

/// The moves that take the holding files to the outputs they belong in,
/// under structured attributes only, and only when every target exists,
/// has no check, and is not in the output's closure (so the output does
/// not reach the moved files); dead ELF holds are shrunk in place. `None`
/// when no such move drops every hold.
fn move_lines(
    g: &Graph,
    spec: &BuildSpec,
    r: &Refusal,
    holds: &[(NodeId, &Evidence)],
) -> Option<Vec<String>> {
    if !spec.structured || r.path == r.output_node {
        return None;
    }
    let index = g.index();
    let closure = g.closure_of(&[r.output_node]);
    let usable = |t: &str| {
        t != r.output
            && spec.outputs.contains_key(t)
            && !spec.checks.contains_key(t)
            && spec
                .outputs
                .get(t)
                .and_then(|p| index.get(p))
                .is_none_or(|&v| !closure[v as usize])
    };
    let mut moves: BTreeMap<String, String> = BTreeMap::new();
    let mut rest: Vec<(NodeId, &Evidence)> = Vec::new();
    for &(y, e) in holds {
        if e.dead && e.kind == Kind::ElfRunpath {
            rest.push((y, e));
            continue;
        }
        let to = homes(e.verdict).iter().find(|t| usable(t))?;
        if e.file.is_empty() || e.file.contains(['*', '?', '[']) {
            return None;
        }
        let what = MOVED_WHOLE
            .iter()
            .find(|d| nix_heft_format::relpath::is_under(e.file.as_bytes(), d.as_bytes()))
            .map_or(e.file.clone(), |d| d.to_string());
        moves.insert(what, to.to_string());
    }
    if moves.is_empty() {
        return None;
    }
    let mut lines: Vec<String> = moves
        .iter()
        .map(|(what, to)| format!("moveToOutput {} \"${to}\"", quote::shell(what)))
        .collect();
    lines.extend(script_lines(g, &r.output, &rest)?);
    Some(lines)
}

/// A remedy for each cycle (in order): a direction whose every hold is a
/// file that belongs in the output it refers to (build-time files in a
/// dev output, documentation in a doc one) is broken by moving those
/// files there, as nixpkgs' stdenv itself does; a cycle with no such
/// direction has no fix but to stop one output referring to the other.
pub fn cycle_remedies(
    g: &Graph,
    c: &Classified,
    spec: &BuildSpec,
    cycles: &[Vec<NodeId>],
) -> Vec<Remedy> {
    let name = |v: NodeId| spec.output_named(g.path(v)).unwrap_or_default().to_string();
    cycles
        .iter()
        .map(|cy| {
            let mut fixes = Vec::new();
            let mut runtime = Vec::new();
            let mut unsure = Vec::new();
            for w in cy.windows(2) {
                let (from, to) = (name(w[0]), name(w[1]));
                let holds = c.evidence(w[0], w[1]);
                for e in holds {
                    match e.verdict {
                        Verdict::Runtime => runtime.push(format!("{from}: {}", e.file)),
                        Verdict::Unknown => unsure.push(format!("{from}: {}", e.file)),
                        _ => {}
                    }
                }
                let belongs = |e: &Evidence| {
                    homes(e.verdict).contains(&to.as_str())
                        || (e.dead && e.kind == Kind::ElfRunpath)
                };
                if holds.is_empty() || !holds.iter().all(belongs) {
                    continue;
                }
                let mut lines: Vec<String> = Vec::new();
                let mut dead: Vec<(NodeId, &Evidence)> = Vec::new();
                for e in holds {
                    if e.dead && e.kind == Kind::ElfRunpath {
                        dead.push((w[1], e));
                        continue;
                    }
                    let what = MOVED_WHOLE
                        .iter()
                        .find(|d| {
                            nix_heft_format::relpath::is_under(e.file.as_bytes(), d.as_bytes())
                        })
                        .map_or(e.file.clone(), |d| d.to_string());
                    let line = format!("moveToOutput {} \"${to}\"", quote::shell(&what));
                    if !lines.contains(&line) {
                        lines.push(line);
                    }
                }
                if let Some(more) = script_lines(g, &from, &dead) {
                    lines.extend(more);
                    fixes.push(Fix::Script { lines });
                }
            }
            runtime.sort();
            runtime.dedup();
            unsure.sort();
            unsure.dedup();
            let held = if !fixes.is_empty() {
                Held::Removable
            } else if !runtime.is_empty() {
                Held::AtRunTime { files: runtime }
            } else if !unsure.is_empty() {
                Held::Unsure { files: unsure }
            } else {
                Held::Unread
            };
            Remedy { held, fixes }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const OUT: &str = "/nix/store/11111111111111111111111111111111-foo";
    const DEV: &str = "/nix/store/22222222222222222222222222222222-foo-dev";
    const DEP: &str = "/nix/store/33333333333333333333333333333333-dep";
    const GCC: &str = "/nix/store/44444444444444444444444444444444-gcc";

    #[test]
    fn the_environment_names_outputs_checks_and_inputs() {
        let spec = BuildSpec::from_env(
            "/nix/store",
            &vars(&[
                ("outputs", "out dev"),
                ("out", OUT),
                ("dev", DEV),
                ("disallowedReferences", &format!("{DEP} dev")),
                ("nativeBuildInputs", &format!("{GCC}/bin:{DEP}")),
            ]),
            None,
        )
        .unwrap();
        assert_eq!(spec.outputs.len(), 2);
        let c = &spec.checks["out"].0[&Check::DisallowedReferences];
        assert_eq!(
            spec.resolve("/nix/store", c),
            vec![
                StorePath::parse("/nix/store", DEP).unwrap(),
                StorePath::parse("/nix/store", DEV).unwrap()
            ]
        );
        let named: Vec<String> = spec.named.iter().map(|p| p.to_string()).collect();
        assert_eq!(named, [OUT, DEV, DEP, GCC]);
        assert!(spec.ignores_self());
        assert_eq!(
            spec.attribute("out", Check::AllowedReferences),
            "allowedReferences"
        );
    }

    #[test]
    fn a_check_set_to_empty_is_a_check_and_an_absent_one_is_none() {
        // `allowedReferences = [ ]` reaches the builder as an empty
        // variable: the strictest check there is.
        let set = BuildSpec::from_env(
            "/nix/store",
            &vars(&[("out", OUT), ("allowedReferences", "")]),
            None,
        )
        .unwrap();
        assert_eq!(
            set.checks["out"].0.get(&Check::AllowedReferences),
            Some(&Vec::new())
        );
        assert!(set.has_checks());
        let unset = BuildSpec::from_env("/nix/store", &vars(&[("out", OUT)]), None).unwrap();
        assert!(!unset.has_checks());
        assert!(unset.checks.is_empty());
    }

    fn graph(entries: &[(&str, &[&str])], roots: usize) -> Graph {
        let mut raw = nix_heft_store::source::RawClosure::default();
        for (p, _) in entries {
            raw.push(StorePath::parse("/nix/store", p).unwrap(), 100);
        }
        for (i, (_, refs)) in entries.iter().enumerate() {
            raw.references[i] = refs
                .iter()
                .map(|r| entries.iter().position(|e| e.0 == *r).unwrap() as NodeId)
                .collect();
        }
        Graph::from_raw(raw, roots)
    }

    #[test]
    fn checks_as_nix_applies_them() {
        // out refers to itself, dev and gcc; gcc to dep; dev to out.
        let g = graph(
            &[
                (OUT, &[OUT, DEV, GCC]),
                (DEV, &[OUT]),
                (GCC, &[DEP]),
                (DEP, &[]),
            ],
            2,
        );
        let mut spec = BuildSpec::from_env(
            "/nix/store",
            &vars(&[("outputs", "out dev"), ("out", OUT), ("dev", DEV)]),
            None,
        )
        .unwrap();
        spec.checks.insert("out".into(), Checks::default());
        let set = |spec: &mut BuildSpec, c: Check, v: &[&str]| {
            spec.checks.get_mut("out").unwrap().0 =
                BTreeMap::from([(c, v.iter().map(|s| s.to_string()).collect())]);
        };
        let names = |spec: &BuildSpec| -> Vec<String> {
            refusals(&g, spec, "/nix/store")
                .iter()
                .map(|r| g.path(r.path).name().to_string())
                .collect()
        };
        set(&mut spec, Check::DisallowedReferences, &[DEP, "dev"]);
        assert_eq!(names(&spec), ["foo-dev"]);
        set(&mut spec, Check::DisallowedRequisites, &[DEP]);
        assert_eq!(names(&spec), ["dep"]);
        // The output's own path counts among its references; among its
        // requisites only under structured attributes.
        set(&mut spec, Check::AllowedReferences, &["dev", GCC]);
        assert_eq!(names(&spec), ["foo"]);
        set(&mut spec, Check::AllowedRequisites, &["dev", GCC, DEP]);
        assert_eq!(names(&spec), Vec::<String>::new());
        spec.structured = true;
        assert_eq!(names(&spec), ["foo"]);
        set(
            &mut spec,
            Check::AllowedRequisites,
            &["dev", GCC, DEP, "out"],
        );
        assert_eq!(names(&spec), Vec::<String>::new());
        spec.structured = false;
        set(&mut spec, Check::AllowedReferences, &[]);
        assert_eq!(names(&spec), ["foo", "foo-dev", "gcc"]);
        set(&mut spec, Check::DisallowedRequisites, &[DEP]);
        let r = refusals(&g, &spec, "/nix/store");
        let w = wants(&g, &r, &[]);
        assert!(w.contains_key(&0) && w.contains_key(&2), "{w:?}");
        assert_eq!(cycles(&g, &[0, 1]), vec![vec![0, 1, 0]]);
        assert!(cycles(&g, &[0]).is_empty());
    }

    #[test]
    fn structured_attributes_give_per_output_checks() {
        let json = format!(
            r#"{{"outputs": {{"out": "{OUT}", "dev": "{DEV}"}},
                "outputChecks": {{"out": {{"allowedReferences": ["{DEP}"], "maxSize": 5}},
                                 "dev": {{"maxSize": 5}}}}}}"#
        );
        let spec = BuildSpec::from_env("/nix/store", &vars(&[]), Some(&json)).unwrap();
        assert_eq!(spec.outputs.len(), 2);
        assert_eq!(
            spec.checks["out"].0[&Check::AllowedReferences],
            vec![DEP.to_string()]
        );
        assert!(
            !spec.checks.contains_key("dev"),
            "maxSize is no reference check"
        );
        assert!(!spec.ignores_self());
        assert_eq!(
            spec.attribute("out", Check::AllowedRequisites),
            "outputChecks.out.allowedRequisites"
        );
        assert!(BuildSpec::from_env("/nix/store", &vars(&[]), Some("{")).is_err());
        assert!(BuildSpec::from_env("/nix/store", &vars(&[]), None).is_err());
        let bad = r#"{"outputs": {"out": "/nix/store/11111111111111111111111111111111-foo"},
                      "outputChecks": {"out": {"allowedReferences": "x"}}}"#;
        assert!(BuildSpec::from_env("/nix/store", &vars(&[]), Some(bad)).is_err());
    }

    #[test]
    fn a_structured_drv_names_its_outputs_from_the_drv() {
        // The `.drv`'s `__json` has no output paths (Nix adds them to the
        // builder's `.attrs.json` only).
        let json =
            format!(r#"{{"outputChecks": {{"out": {{"allowedRequisites": []}}}}, "x": "{DEP}"}}"#);
        let drv_text = format!(
            r#"Derive([("out","{OUT}","","")],[],[],"x86_64-linux","/bin/bash",[],[("__json",{}),("out","{OUT}")])"#,
            serde_json::to_string(&json).unwrap()
        );
        let drv = nix_heft_format::derivation::Derivation::parse("/nix/store", drv_text.as_bytes())
            .unwrap();
        let spec = BuildSpec::from_drv("/nix/store", &drv).unwrap();
        assert!(spec.structured);
        assert_eq!(spec.outputs["out"].as_str(), OUT);
        assert_eq!(
            spec.checks["out"].0[&Check::AllowedRequisites],
            Vec::<String>::new()
        );
        assert!(spec.named.iter().any(|p| p.as_str() == DEP));
    }

    #[test]
    fn common_directories() {
        assert_eq!(common_dir(&["share/doc/a/x", "share/doc/b/y"]), "share/doc");
        assert_eq!(common_dir(&["bin/x", "share/y"]), "");
        assert_eq!(common_dir(&["a/b/c"]), "a/b");
    }
}
