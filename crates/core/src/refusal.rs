//! Why Nix refuses an output (issue 33): the checks a derivation asks for
//! (`disallowedReferences`, `disallowedRequisites`, `allowedReferences`,
//! `allowedRequisites`, per output with `__structuredAttrs`' `outputChecks`)
//! applied to the outputs' graph as Nix 2.8 applies them, and the cycles
//! between outputs that make Nix stop with "cycle detected".
//!
//! What a build has ([`BuildSpec`]) comes from its environment (the setup
//! hook, inside the build) or from its `.drv` (after a failure); the graph
//! is the outputs read as unregistered trees ([`crate::unregistered`]),
//! their references found as Nix finds them. This module is pure: the
//! caller loads the graph, reads the edges [`wants`] names and classifies
//! them; [`explained`] then gives each refusal its strongest chain.

use std::collections::{BTreeMap, HashSet};

use serde::Deserialize;

use crate::classify::Classified;
use crate::graph::{Graph, NodeId, ReadRequest, chains, request};
use nix_heft_format::store_path::StorePath;

/// One of the four output checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
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
    /// references. Nix ignores an output's own path in the closure checks,
    /// not in the reference checks.
    pub fn recursive(self) -> bool {
        matches!(self, Check::DisallowedRequisites | Check::AllowedRequisites)
    }

    fn allowed(self) -> bool {
        matches!(self, Check::AllowedReferences | Check::AllowedRequisites)
    }
}

/// The checks of one output: each list as given (store paths or output
/// names), `None` when the check is not asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checks(pub BTreeMap<Check, Vec<String>>);

/// What a build knows: its outputs, their checks, and the store paths its
/// environment names (its inputs: the candidates Nix scans for).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildSpec {
    /// Output name → path.
    pub outputs: BTreeMap<String, StorePath>,
    /// Output name → its checks.
    pub checks: BTreeMap<String, Checks>,
    /// Every store path the environment names (inputs, the checks' paths,
    /// the outputs).
    pub named: Vec<StorePath>,
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
        let mut spec = BuildSpec::default();
        let mut texts: Vec<&str> = vars.values().map(String::as_str).collect();
        if let Some(json) = structured {
            texts.push(json);
            let s: Structured = serde_json::from_str(json)
                .map_err(|e| format!("the structured attributes are not JSON: {e}"))?;
            if let Some(serde_json::Value::Object(m)) = &s.outputs {
                for (name, v) in m {
                    if let Some(p) = v.as_str().and_then(|p| StorePath::parse(store_dir, p).ok()) {
                        spec.outputs.insert(name.clone(), p);
                    }
                }
            }
            spec.checks = structured_checks(&s);
        } else {
            let names = vars.get("outputs").map_or("out", String::as_str);
            for name in names.split_ascii_whitespace() {
                if let Some(p) = vars
                    .get(name)
                    .and_then(|p| StorePath::parse(store_dir, p).ok())
                {
                    spec.outputs.insert(name.to_string(), p);
                }
            }
            let mut checks = Checks::default();
            for c in Check::ALL {
                if let Some(v) = vars.get(c.as_str()) {
                    checks
                        .0
                        .insert(c, v.split_ascii_whitespace().map(String::from).collect());
                }
            }
            for name in spec.outputs.keys() {
                spec.checks.insert(name.clone(), checks.clone());
            }
        }
        if spec.outputs.is_empty() {
            return Err("the environment names no output (no `outputs`, no `out`)".into());
        }
        spec.named = store_paths_in(store_dir, &texts);
        spec.named.extend(spec.outputs.values().cloned());
        spec.named.sort();
        spec.named.dedup();
        Ok(spec)
    }

    /// From a derivation: its outputs, and its environment as the builder
    /// gets it (`__json` holds the structured attributes).
    pub fn from_drv(
        store_dir: &str,
        drv: &nix_heft_format::derivation::Derivation,
    ) -> Result<BuildSpec, String> {
        let mut vars: BTreeMap<String, String> = drv.env.iter().cloned().collect();
        let structured = vars.remove("__json");
        let mut spec = BuildSpec::from_env(store_dir, &vars, structured.as_deref())?;
        // Structured attributes name outputs without paths: the .drv has them.
        for o in &drv.outputs {
            if let Some(p) = &o.path {
                spec.outputs.insert(o.name.clone(), p.clone());
            }
        }
        if structured.is_some() {
            let checks = spec.checks.clone();
            spec.checks = spec
                .outputs
                .keys()
                .map(|o| (o.clone(), checks.get(o).cloned().unwrap_or_default()))
                .collect();
        }
        let mut inputs: Vec<StorePath> = drv.input_srcs.clone();
        inputs.extend(drv.input_drvs.iter().map(|(d, _)| d.clone()));
        spec.named.extend(inputs);
        spec.named.extend(spec.outputs.values().cloned());
        spec.named.sort();
        spec.named.dedup();
        Ok(spec)
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
}

fn structured_checks(s: &Structured) -> BTreeMap<String, Checks> {
    let mut out = BTreeMap::new();
    for (output, m) in &s.output_checks {
        let mut checks = Checks::default();
        for c in Check::ALL {
            if let Some(serde_json::Value::Array(items)) = m.get(c.as_str()) {
                checks.0.insert(
                    c,
                    items
                        .iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect(),
                );
            }
        }
        out.insert(output.clone(), checks);
    }
    out
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
    /// The path it may not have.
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
                (0..g.len() as NodeId)
                    .filter(|&v| closure[v as usize] && v != o)
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
/// strongest can be chosen); each cycle's edges.
pub fn wants(g: &Graph, refusals: &[Refusal], cycles: &[Vec<NodeId>]) -> ReadRequest {
    let mut w = ReadRequest::new();
    for r in refusals {
        if r.check.recursive() {
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
/// first), from the classified edges.
pub fn explained(g: &Graph, c: &Classified, refusals: &[Refusal]) -> Vec<Vec<NodeId>> {
    refusals
        .iter()
        .map(|r| {
            if r.path == r.output_node {
                return vec![r.output_node];
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
/// starting from its least output.
pub fn cycles(g: &Graph, outputs: &[NodeId]) -> Vec<Vec<NodeId>> {
    let set: HashSet<NodeId> = outputs.iter().copied().collect();
    let mut found: Vec<Vec<NodeId>> = Vec::new();
    let mut sorted = outputs.to_vec();
    sorted.sort_by(|x, y| g.path(*x).cmp(g.path(*y)));
    // Few outputs: a walk from each, through greater outputs only, finds
    // every elementary cycle once (from its least member).
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
    found.sort();
    found.dedup();
    found
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
        // The output's own path counts among its references, not among
        // its requisites.
        set(&mut spec, Check::AllowedReferences, &["dev", GCC]);
        assert_eq!(names(&spec), ["foo"]);
        set(&mut spec, Check::AllowedRequisites, &["dev", GCC, DEP]);
        assert_eq!(names(&spec), Vec::<String>::new());
        let r = refusals(&g, &spec, "/nix/store");
        assert!(r.is_empty());
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
                "outputChecks": {{"out": {{"allowedReferences": ["{DEP}"], "maxSize": 5}}}}}}"#
        );
        let spec = BuildSpec::from_env("/nix/store", &vars(&[]), Some(&json)).unwrap();
        assert_eq!(spec.outputs.len(), 2);
        assert_eq!(
            spec.checks["out"].0[&Check::AllowedReferences],
            vec![DEP.to_string()]
        );
        assert!(!spec.checks.contains_key("dev"));
        assert!(BuildSpec::from_env("/nix/store", &vars(&[]), Some("{")).is_err());
        assert!(BuildSpec::from_env("/nix/store", &vars(&[]), None).is_err());
    }
}
