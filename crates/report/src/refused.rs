//! `refused`'s report: each reference Nix refuses (or would refuse) in an
//! output, with the files that hold it, the chain for a requisite, what it
//! takes to drop it, and the cycles between outputs with both directions'
//! files.

use serde::Serialize;

use crate::names::Names;
use crate::{Report, TextOptions};
use nix_heft_core::classify::Classified;
use nix_heft_core::graph::{Graph, NodeId};
use nix_heft_core::refusal::Refusal;
use nix_heft_types::evidence::{Evidence, EvidenceGroup, Verdict};
use nix_heft_types::problem::Problem;

/// One edge of a chain, with its evidence.
#[derive(Debug, Clone, Serialize)]
pub struct Edge {
    /// The path that holds the reference.
    pub referrer: String,
    /// The path referred to.
    pub reference: String,
    /// Every hold: file, offset, kind, verdict.
    pub evidence: Vec<Evidence>,
    /// The holds grouped by kind and directory.
    pub groups: Vec<EvidenceGroup>,
}

/// A reference or requisite Nix refuses.
#[derive(Debug, Clone, Serialize)]
pub struct RefusedPath {
    /// The output's name.
    pub output: String,
    /// The output's path.
    pub output_path: String,
    /// The check: disallowedReferences, disallowedRequisites,
    /// allowedReferences or allowedRequisites.
    pub check: String,
    /// The path it may not have.
    pub path: String,
    /// From the output to the path, each edge with its holds.
    pub chain: Vec<Edge>,
    /// What would drop it, as lines of a build script.
    pub remedy: Vec<String>,
}

/// A cycle between outputs.
#[derive(Debug, Clone, Serialize)]
pub struct Cycle {
    /// The outputs' names, the first repeated at the end.
    pub outputs: Vec<String>,
    /// Each direction with its holds.
    pub edges: Vec<Edge>,
    /// What would break it.
    pub remedy: Vec<String>,
}

/// What the refusal stage found, for [`RefusedReport::new`].
pub struct Found<'a> {
    /// Each output's name, by its id in the graph.
    pub output_names: &'a std::collections::BTreeMap<NodeId, String>,
    /// The refusals.
    pub refusals: &'a [Refusal],
    /// Each refusal's chain, output first (`refusal::explained`).
    pub chains: &'a [Vec<NodeId>],
    /// The cycles between outputs (`refusal::cycles`).
    pub cycles: &'a [Vec<NodeId>],
}

/// `refused`'s report.
#[derive(Debug, Clone, Serialize)]
pub struct RefusedReport {
    /// The derivation, when known.
    pub drv: Option<String>,
    /// Every refused path.
    pub refused: Vec<RefusedPath>,
    /// Every cycle between outputs.
    pub cycles: Vec<Cycle>,
    /// What could not be read.
    pub problems: Vec<Problem>,
    #[serde(skip)]
    names: Vec<String>,
}

fn edge(g: &Graph, c: &Classified, from: NodeId, to: NodeId) -> Edge {
    Edge {
        referrer: g.path(from).to_string(),
        reference: g.path(to).to_string(),
        evidence: c.evidence(from, to).to_vec(),
        groups: c.groups(from, to),
    }
}

/// The shell that refers to an output in a build script (`$out`, `$dev`).
fn var(output: &str) -> String {
    format!("${output}")
}

/// What would drop the reference `e` holds from `output`: files that are
/// only documentation or only for building move to the output such files
/// belong in (or lose the reference); a run-time hold is real.
fn remedy(e: &Edge, output: &str, output_path: &str) -> Vec<String> {
    if e.evidence.is_empty() {
        return vec![format!(
            "# no file holds it: only {}'s own references (its NAR) name it",
            e.referrer
        )];
    }
    let in_output = e.referrer == output_path;
    let runtime = e
        .evidence
        .iter()
        .any(|h| matches!(h.verdict, Verdict::Runtime | Verdict::Unknown));
    let mut out = Vec::new();
    if runtime {
        let mut files: Vec<&str> = e
            .evidence
            .iter()
            .filter(|h| matches!(h.verdict, Verdict::Runtime | Verdict::Unknown))
            .map(|h| {
                if h.file.is_empty() {
                    "the path itself"
                } else {
                    h.file.as_str()
                }
            })
            .collect();
        files.dedup();
        let how = if e.evidence.iter().any(|h| h.verdict == Verdict::Runtime) {
            "at run time"
        } else {
            "maybe at run time (nix-heft cannot tell)"
        };
        out.push(format!(
            "# held {how} by {}: the reference is real; the dependency must go from the build, or the check must allow it",
            files.join(", ")
        ));
        return out;
    }
    if !in_output {
        out.push(format!(
            "# held inside {} (an input): the output keeps that input; drop the input's reference, or the input",
            e.referrer
        ));
        return out;
    }
    for g in &e.groups {
        let target = match g.verdict {
            Verdict::Docs => "doc",
            Verdict::Build => "dev",
            // A dead hold (a RUNPATH entry nothing loads from, debug
            // info) goes with the reference below, or by patchelf.
            _ => continue,
        };
        if target != output && !g.dir.is_empty() {
            out.push(format!("moveToOutput {} \"{}\"", g.dir, var(target)));
        }
    }
    let mut shrink: Vec<&str> = e
        .evidence
        .iter()
        .filter(|h| h.dead && h.kind == nix_heft_types::evidence::Kind::ElfRunpath)
        .map(|h| h.file.as_str())
        .collect();
    shrink.dedup();
    for f in shrink {
        out.push(format!("patchelf --shrink-rpath {}/{f}", var(output)));
    }
    let mut files: Vec<&str> = e.evidence.iter().map(|h| h.file.as_str()).collect();
    files.sort();
    files.dedup();
    let paths: Vec<String> = files
        .iter()
        .map(|f| {
            if f.is_empty() {
                var(output)
            } else {
                format!("{}/{f}", var(output))
            }
        })
        .collect();
    out.push(format!(
        "remove-references-to -t {} {}",
        e.reference,
        paths.join(" ")
    ));
    out
}

impl RefusedReport {
    /// The report of what `found` holds, read into `c`.
    pub fn new(
        g: &Graph,
        c: &Classified,
        drv: Option<String>,
        found: &Found,
        problems: Vec<Problem>,
    ) -> RefusedReport {
        let Found {
            output_names,
            refusals,
            chains,
            cycles,
        } = *found;
        let refused: Vec<RefusedPath> = refusals
            .iter()
            .zip(chains)
            .map(|(r, chain)| {
                let edges: Vec<Edge> = chain.windows(2).map(|w| edge(g, c, w[0], w[1])).collect();
                let output_path = g.path(r.output_node).to_string();
                let remedy = match edges.last() {
                    Some(e) if edges.len() == 1 => remedy(e, &r.output, &output_path),
                    Some(_) => {
                        // A requisite: the first edge is what the output
                        // holds; dropping it drops the chain.
                        remedy(&edges[0], &r.output, &output_path)
                    }
                    None => vec![
                        "# the output refers to itself: allow it, or drop the self-reference"
                            .into(),
                    ],
                };
                RefusedPath {
                    output: r.output.clone(),
                    output_path,
                    check: r.check.as_str().into(),
                    path: g.path(r.path).to_string(),
                    chain: edges,
                    remedy,
                }
            })
            .collect();
        let name_of = |v: NodeId| output_names.get(&v).cloned().unwrap_or_default();
        let cycles: Vec<Cycle> = cycles
            .iter()
            .map(|cy| {
                let edges: Vec<Edge> = cy.windows(2).map(|w| edge(g, c, w[0], w[1])).collect();
                // Break it where a reference is held by build-time or
                // documentation files only: those move to the output
                // they refer to.
                let mut remedy = Vec::new();
                for (w, e) in cy.windows(2).zip(&edges) {
                    // Files move to the output they belong in: build-time
                    // files to a dev output, documentation to a doc one.
                    let to = name_of(w[1]);
                    let belongs = |v: Verdict| match v {
                        Verdict::Build => to.starts_with("dev"),
                        Verdict::Docs => ["doc", "devdoc", "man", "info"].contains(&to.as_str()),
                        _ => false,
                    };
                    let movable = !e.evidence.is_empty() && e.evidence.iter().all(|h| belongs(h.verdict));
                    if movable {
                        let mut dirs: Vec<&str> = e.groups.iter().map(|g| g.dir.as_str()).collect();
                        dirs.sort();
                        dirs.dedup();
                        for d in dirs.into_iter().filter(|d| !d.is_empty()) {
                            remedy.push(format!(
                                "moveToOutput {d} \"{}\"   # {}'s files that refer to {} move there",
                                var(&name_of(w[1])),
                                name_of(w[0]),
                                name_of(w[1])
                            ));
                        }
                    }
                }
                if remedy.is_empty() {
                    remedy.push(
                        "# every direction is held at run time: one output must stop referring to the other"
                            .into(),
                    );
                }
                Cycle {
                    outputs: cy.iter().map(|&v| name_of(v)).collect(),
                    edges,
                    remedy,
                }
            })
            .collect();
        let mut names: Vec<String> = (0..g.len() as NodeId)
            .map(|v| g.path(v).to_string())
            .collect();
        names.sort();
        RefusedReport {
            drv,
            refused,
            cycles,
            problems,
            names,
        }
    }

    /// Whether Nix refuses anything.
    pub fn any(&self) -> bool {
        !self.refused.is_empty() || !self.cycles.is_empty()
    }
}

fn edge_text(e: &Edge, names: &Names, opts: &TextOptions, out: &mut String) {
    out.push_str(&format!(
        "  {} → {}\n",
        names.get(&e.referrer),
        names.get(&e.reference)
    ));
    let lines = crate::evidence_lines(&e.evidence, &e.groups, opts);
    for l in lines.lines().filter(|l| !l.trim().is_empty()) {
        out.push_str("  ");
        out.push_str(l);
        out.push('\n');
    }
}

impl Report for RefusedReport {
    fn render_text(&self, opts: &TextOptions) -> String {
        let names = Names::new(self.names.iter().map(String::as_str));
        let mut out = String::new();
        if !self.any() {
            out.push_str("nix-heft: no output check refuses a reference, and no outputs refer to each other\n");
            return out;
        }
        for r in &self.refused {
            let what = if r.check.ends_with("Requisites") {
                "has in its closure"
            } else {
                "refers to"
            };
            out.push_str(&format!(
                "nix-heft: output '{}' ({}) {what} {}, which {} refuses\n",
                r.output, r.output_path, r.path, r.check
            ));
            for e in &r.chain {
                edge_text(e, &names, opts, &mut out);
            }
            for l in &r.remedy {
                out.push_str(&format!("  to drop it: {l}\n"));
            }
            out.push('\n');
        }
        for c in &self.cycles {
            out.push_str(&format!(
                "nix-heft: the outputs refer to each other: {} (Nix: \"cycle detected\")\n",
                c.outputs.join(" → ")
            ));
            for e in &c.edges {
                edge_text(e, &names, opts, &mut out);
            }
            for l in &c.remedy {
                out.push_str(&format!("  to break it: {l}\n"));
            }
            out.push('\n');
        }
        out
    }

    fn problems(&self) -> &[Problem] {
        &self.problems
    }
}
