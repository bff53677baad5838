//! The `report` command's model: everything the self-contained HTML page
//! shows, as one serde struct embedded once as JSON, and the page itself
//! (template, styles, script and the vendored d3-hierarchy, all under
//! `assets/`, inlined by `include_str!`).
//!
//! Formatting only: it gets the graph's sizes and dominator tree
//! ([`Sizes`]), the classified evidence and the advice from the pipeline
//! and computes or reads nothing else. The page lays out its treemap from
//! the dominator tree given here (`idom` per path), so a path's rectangle
//! holds exactly the paths it alone keeps alive and its area is its added
//! size.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::diff::{DiffReport, Package};
use nix_heft_analysis::plan::advise::Action;
use nix_heft_format::store_path::{OutputKind, name_of};
use nix_heft_graph::{Graph, NodeId, Sizes};
use nix_heft_scan::classify::Classified;
use nix_heft_types::evidence::{Evidence, Kind, Traced, Verdict};
use nix_heft_types::problem::Problem;

/// Most pieces of evidence kept per edge in the page; the rest are
/// counted (`more`) and `nix-heft refs --evidence` lists them all. Keeps a
/// closure whose every file names glibc from growing the page without
/// bound.
pub const EVIDENCE_PER_EDGE: usize = 40;

/// Pieces of evidence the whole page keeps, about 200 bytes each: with
/// many edges each keeps fewer (at least [`EVIDENCE_MIN_PER_EDGE`]), so a
/// 10,000-path closure with evidence stays within a few megabytes.
pub const EVIDENCE_BUDGET: usize = 8_000;

/// The fewest pieces of evidence kept per edge however many edges there
/// are: the strongest ones, which decide its verdict.
pub const EVIDENCE_MIN_PER_EDGE: usize = 2;

/// Whether the page has file-level evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvidenceState {
    /// Every referrer was read.
    Available,
    /// Some referrers could not be read (see the problems).
    Partial,
    /// No file was read: a source without contents, or `--no-evidence`.
    Unavailable,
}

/// What `report` says after writing its page: where, how large, and
/// what the page holds (`--json`: this struct).
#[derive(Debug, Serialize)]
pub struct ReportWritten {
    /// The file written, or `-` for standard output.
    pub output: String,
    /// The page's bytes.
    pub bytes: usize,
    /// Paths on the page.
    pub paths: usize,
    /// Edges with at least one hold shown.
    pub edges_with_evidence: usize,
    /// Advice items.
    pub advice: usize,
    /// Whether the page has file-level evidence.
    pub evidence: EvidenceState,
    /// With --diff: paths new since BEFORE.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added: Option<usize>,
    /// With --diff: BEFORE's paths that left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed: Option<usize>,
    /// With --derivation: derivations whose outputs are of unknown size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown_outputs: Option<usize>,
    /// The page's problems, said on stderr.
    #[serde(skip)]
    pub problems: Vec<Problem>,
}

impl ReportWritten {
    /// The summary of `page`, `bytes` long, written to `output`.
    pub fn new(page: &HtmlReport, output: String, bytes: usize) -> ReportWritten {
        ReportWritten {
            output,
            bytes,
            paths: page.paths.len(),
            edges_with_evidence: page.edges.iter().filter(|e| !e.evidence.is_empty()).count(),
            advice: page.advice.len(),
            evidence: page.evidence_state,
            added: page.diff.as_ref().map(|d| d.added.len()),
            removed: page.diff.as_ref().map(|d| d.removed.len()),
            unknown_outputs: page.build_graph.as_ref().map(|b| b.unknown_outputs.len()),
            problems: page.problems.clone(),
        }
    }
}

impl crate::Report for ReportWritten {
    fn render_text(&self, _: &crate::TextOptions) -> String {
        format!(
            "wrote {} ({}, {} paths, {}{} edges with evidence, {} actions{}{})\n",
            self.output,
            nix_heft_types::units::iec(self.bytes as u64),
            self.paths,
            match (self.added, self.removed) {
                (Some(a), Some(r)) => format!("{a} added, {r} removed, "),
                _ => String::new(),
            },
            self.edges_with_evidence,
            self.advice,
            match self.evidence {
                EvidenceState::Unavailable => ", evidence unavailable",
                EvidenceState::Partial => ", evidence partial",
                EvidenceState::Available => "",
            },
            match self.unknown_outputs {
                Some(n) if n > 0 => format!(", {n} derivation(s) with outputs of unknown size"),
                _ => String::new(),
            }
        )
    }

    fn problems(&self) -> &[Problem] {
        &self.problems
    }
}

/// One store path of the closure.
#[derive(Debug, Clone, Serialize)]
pub struct PathNode {
    /// The store path.
    #[serde(rename = "p")]
    pub path: String,
    /// Short unambiguous name ([`super::Names`]: the full name, with 8
    /// hash characters where two paths shown share one).
    #[serde(rename = "n")]
    pub name: String,
    /// What to keep of the name when a label shortens it, as a character
    /// range of the name ([`super::names::Shown::keep`]); the hash after it
    /// is always kept.
    #[serde(rename = "ks")]
    pub keep: [usize; 2],
    /// The length of the ` (hash)` ending `n`, 0 when there is none.
    #[serde(rename = "kh")]
    pub hash_len: usize,
    /// Own NAR size.
    #[serde(rename = "s")]
    pub nar_size: u64,
    /// Closure size (`nix path-info -S`).
    #[serde(rename = "c")]
    pub closure_size: u64,
    /// Added size: its subtree in the dominator tree.
    #[serde(rename = "a")]
    pub added_size: u64,
    /// Immediate dominator (index into `paths`), `-1` under the virtual
    /// root over all roots.
    #[serde(rename = "d")]
    pub idom: i64,
    /// Output kind from the name ([`OutputKind`]: `out`, `dev`, `lib`, `doc` ...).
    #[serde(rename = "k")]
    pub kind: &'static str,
    /// The strongest verdict of the edges that hold this path (what keeps
    /// it in the closure); `root` for a root, `none` without evidence.
    #[serde(rename = "v")]
    pub verdict: &'static str,
    /// References, as indices into `paths` (itself excluded).
    #[serde(rename = "r")]
    pub references: Vec<NodeId>,
    /// Where it came from (the store, and the key that signed its narinfo,
    /// `Provenance::label`), when the store says; set by the command.
    #[serde(rename = "o", skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// One piece of evidence, short field names to keep the page small.
#[derive(Debug, Clone, Serialize)]
pub struct EvidenceItem {
    /// File relative to the referrer.
    #[serde(rename = "f")]
    pub file: String,
    /// Kind of hold.
    #[serde(rename = "k")]
    pub kind: Kind,
    /// Verdict.
    #[serde(rename = "v")]
    pub verdict: Verdict,
    /// Why.
    #[serde(rename = "r")]
    pub reason: String,
    /// Byte offset of the hash.
    #[serde(rename = "o")]
    pub offset: u64,
    /// Line, for text.
    #[serde(rename = "l", skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// Excerpt around the hash.
    #[serde(rename = "x")]
    pub context: String,
    /// What `--trace` showed of this hold.
    #[serde(rename = "t", skip_serializing_if = "Option::is_none")]
    pub traced: Option<Traced>,
}

impl From<&Evidence> for EvidenceItem {
    fn from(e: &Evidence) -> Self {
        EvidenceItem {
            file: e.file.clone(),
            kind: e.kind,
            verdict: e.verdict,
            reason: e.reason.clone(),
            offset: e.offset,
            line: e.line,
            context: e.context.clone(),
            traced: e.traced,
        }
    }
}

/// One reference edge that was read.
#[derive(Debug, Clone, Serialize)]
pub struct EdgeNode {
    /// Referrer index.
    pub from: NodeId,
    /// Reference index.
    pub to: NodeId,
    /// Strongest verdict; `None` when the reference was registered but no
    /// hold was found.
    pub verdict: Option<Verdict>,
    /// Reason of the strongest piece of evidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// With `--trace`: `used` when the workload used any of its holds,
    /// `not used` when some hold's file was never touched and none was
    /// used (as `refs --json` says it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traced: Option<Traced>,
    /// Occurrences per kind.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub kinds: BTreeMap<Kind, usize>,
    /// Distinct files holding it.
    pub files: usize,
    /// The holds grouped by kind, verdict and directory, in the words
    /// every command uses ([`super::review::group_phrase`]: "51 symlink
    /// holds in lib/rocblas/library/ (51 files, 3.9 KiB, runtime; e.g. …)").
    #[serde(rename = "g", skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The first pieces of evidence, strongest first (at most
    /// [`EVIDENCE_PER_EDGE`], fewer on large closures).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<EvidenceItem>,
    /// How many more there are.
    #[serde(skip_serializing_if = "is_zero")]
    pub more: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One piece of advice, with the paths it touches.
#[derive(Debug, Clone, Serialize)]
pub struct AdviceItem {
    /// The action, as `advise --json` prints it.
    #[serde(flatten)]
    pub action: Action,
    /// Indices of the package, the references it cuts and the paths that
    /// leave: the paths whose detail panel lists this advice.
    pub touches: Vec<NodeId>,
}

/// The report's data: the JSON embedded in the page.
#[derive(Debug, Clone, Serialize)]
pub struct HtmlReport {
    /// Format version of this JSON.
    pub version: u32,
    /// `nix-heft VERSION`.
    pub generator: String,
    /// Where the closure was read from.
    pub source: String,
    /// Root indices.
    pub roots: Vec<NodeId>,
    /// The roots' combined closure size.
    pub closure_size: u64,
    /// Whether evidence is there.
    pub evidence_state: EvidenceState,
    /// Every path of the closure.
    pub paths: Vec<PathNode>,
    /// Every edge that was read.
    pub edges: Vec<EdgeNode>,
    /// Advice, biggest saving first.
    pub advice: Vec<AdviceItem>,
    /// What advise's joint plan saves: every non-breaking action applied
    /// together, each path counted once.
    pub plan_saving: Option<u64>,
    /// The traces applied (`--trace`), as `advise` names them; `None`
    /// without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traces: Option<String>,
    /// With `report --diff`: what came and went since BEFORE (this page
    /// is AFTER's closure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<DiffSection>,
    /// With `report --derivation`: the page is the build graph (paths are
    /// derivations and sources, a derivation's size its outputs').
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_graph: Option<BuildGraph>,
    /// The words of the `why` command the detail panel offers to copy, up
    /// to ROOT and DEP (which the page appends, shell-quoting each word):
    /// `nix-heft`, the flags that opened the page's stores and said which
    /// narinfos to trust, `why` and its own flags (`--derivation`,
    /// `--trace`), so that the copied command reads what the page shows.
    pub why_command: Vec<String>,
    /// What could not be read or simulated.
    pub problems: Vec<Problem>,
}

/// What a build-graph page says besides its paths.
#[derive(Debug, Clone, Serialize)]
pub struct BuildGraph {
    /// The derivations whose outputs are valid in no store read: counted
    /// with the outputs that are known (zero when none), listed here.
    pub unknown_outputs: Vec<super::size::UnknownOutputs>,
}

/// Why a path of the page is new since BEFORE.
#[derive(Debug, Clone, Serialize)]
pub struct AddedNode {
    /// Index into `paths`.
    pub i: NodeId,
    /// The referrer (index into `paths`) that pulls it in; `None` for a
    /// root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub referrer: Option<NodeId>,
    /// `new` (the edge appeared: the page's evidence for it says why),
    /// `renamed` (the same packages were linked before; only a hash or
    /// version changed) or `root`, as `diff --json` says it.
    pub edge: super::diff::Edge,
    /// BEFORE's paths of the same package that it replaces.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replaces: Vec<String>,
    /// `rebuilt` (a path of the same name left: another hash of the same
    /// package and version), `updated` (it replaces another version of
    /// its package) or `added` (new).
    pub change: &'static str,
    /// The index into `groups` of the paths added with it for the same
    /// reason through the same referrer, when it is one of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<usize>,
}

/// Paths added for one reason through one referrer, shown as one line as
/// `diff` shows them (`12 tensile-gfx* paths (+328 MiB) are new: …`).
#[derive(Debug, Clone, Serialize)]
pub struct AddedGroup {
    /// The line, in `diff`'s words.
    pub line: String,
    /// Its paths (indices into `paths`), largest first.
    pub members: Vec<NodeId>,
}

/// A path of BEFORE's closure that is not in this page's closure.
#[derive(Debug, Clone, Serialize)]
pub struct RemovedNode {
    /// The store path.
    pub path: String,
    /// Its name (as `paths` names them).
    pub name: String,
    /// Its NAR size.
    pub nar_size: u64,
    /// The referrer in BEFORE that held it; `None` for a root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub referrer: Option<String>,
    /// `gone`, `renamed` or `root`, as `diff --json` says it.
    pub edge: super::diff::Edge,
    /// The paths of the page (indices) that replace it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replaced_by: Vec<NodeId>,
    /// The files of the referrer that held it before, with their kinds and
    /// verdicts (`diff`'s text), for a `gone` edge.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub held_by: String,
    /// BEFORE's source has no file contents for the referrer.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unavailable: bool,
    /// For a path that left with its referrer (whose package is gone too):
    /// the names of the chain that held it, from the nearest path that
    /// stayed (or a root) to the path, as `diff` says "left with".
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_chain: Vec<String>,
}

/// `report --diff`: the comparison with BEFORE, from `diff`'s report.
#[derive(Debug, Clone, Serialize)]
pub struct DiffSection {
    /// BEFORE's roots.
    pub before: Vec<String>,
    /// Their display names, among the page's.
    pub before_names: Vec<String>,
    /// BEFORE's closure size.
    pub closure_size_before: u64,
    /// Paths in BEFORE's closure.
    pub paths_before: usize,
    /// Changed packages, largest absolute size change first.
    pub packages: Vec<Package>,
    /// Paths new since BEFORE, largest first.
    pub added: Vec<AddedNode>,
    /// Paths that left, largest first.
    pub removed: Vec<RemovedNode>,
    /// Paths added together (each `added` entry's `group`).
    pub groups: Vec<AddedGroup>,
}

impl HtmlReport {
    /// Builds the model from the pipeline's results: `g`'s `sizes` (from
    /// [`Sizes::compute`]), the classified evidence (`None` when no file
    /// was read, `--no-evidence`) and the advice.
    pub fn new(
        g: &Graph,
        sizes: &Sizes,
        source: String,
        c: Option<&Classified>,
        advice: Vec<Action>,
        plan_saving: Option<u64>,
        problems: Vec<Problem>,
    ) -> HtmlReport {
        let names = super::Names::new(g.paths().iter().map(|p| p.as_str()));
        let mut is_root = vec![false; g.len()];
        for &r in g.roots() {
            is_root[r as usize] = true;
        }
        let holding = c.map_or_else(
            || vec![None; g.len()],
            |c| nix_heft_analysis::explain::holding(g, c),
        );
        let mut edges = Vec::new();
        let mut read_any = false;
        let mut blind_any = false;
        let per_edge = c.map_or(EVIDENCE_PER_EDGE, |c| {
            let with = c
                .paths
                .values()
                .flat_map(|p| p.by_reference.values())
                .filter(|e| !e.is_empty())
                .count();
            (EVIDENCE_BUDGET / with.max(1)).clamp(EVIDENCE_MIN_PER_EDGE, EVIDENCE_PER_EDGE)
        });
        if let Some(c) = c {
            for (&from, pe) in &c.paths {
                if !pe.available {
                    blind_any = true;
                    continue;
                }
                read_any = true;
                for &to in g.references(from) {
                    let ev = c.evidence(from, to);
                    let mut kinds = BTreeMap::new();
                    let mut files = std::collections::HashSet::new();
                    for e in ev {
                        *kinds.entry(e.kind).or_insert(0) += 1;
                        files.insert(e.file.as_str());
                    }
                    let mut sorted: Vec<&Evidence> = ev.iter().collect();
                    // Strongest first, and among equals the holds a trace
                    // saw used: what decides the verdict is kept when the
                    // rest is cut.
                    sorted.sort_by_key(|e| (e.verdict, e.traced != Some(Traced::Used)));
                    let strongest = sorted.first().map(|e| e.verdict);
                    edges.push(EdgeNode {
                        from,
                        to,
                        verdict: strongest,
                        reason: sorted.first().map(|e| e.reason.clone()),
                        traced: ev.iter().filter_map(|e| e.traced).min(),
                        kinds,
                        files: files.len(),
                        groups: c
                            .groups(from, to)
                            .iter()
                            .map(|g| super::review::group_phrase(g, super::review::plain))
                            .collect(),
                        more: sorted.len().saturating_sub(per_edge),
                        evidence: sorted
                            .into_iter()
                            .take(per_edge)
                            .map(EvidenceItem::from)
                            .collect(),
                    });
                }
            }
        }
        let evidence_state = match (read_any, blind_any) {
            (false, _) => EvidenceState::Unavailable,
            (true, true) => EvidenceState::Partial,
            (true, false) if problems.is_empty() => EvidenceState::Available,
            (true, false) => EvidenceState::Partial,
        };
        let paths = (0..g.len() as NodeId)
            .map(|v| {
                let p = g.path(v).as_str();
                let shown = names.shown(p);
                PathNode {
                    path: p.to_string(),
                    name: shown.text,
                    keep: [shown.keep.start, shown.keep.end],
                    hash_len: shown.hash_len,
                    nar_size: g.nar_size(v),
                    closure_size: sizes.closure[v as usize],
                    added_size: sizes.added[v as usize],
                    idom: sizes.idom(v).map_or(-1, i64::from),
                    kind: OutputKind::of(name_of(p)).as_str(),
                    verdict: if is_root[v as usize] {
                        "root"
                    } else {
                        holding[v as usize].map_or("none", Verdict::as_str)
                    },
                    references: g.references(v).to_vec(),
                    origin: None,
                }
            })
            .collect();
        let index = g.index();
        let id_of = |s: &str| {
            nix_heft_format::StorePath::parse(g.path(0).store_dir(), s)
                .ok()
                .and_then(|p| index.get(&p).copied())
        };
        let advice = advice
            .into_iter()
            .map(|a| {
                let mut touches: Vec<NodeId> = std::iter::once(&a.package)
                    .chain(&a.cuts)
                    .chain(&a.removes)
                    .filter_map(|s| id_of(s))
                    .collect();
                touches.sort_unstable();
                touches.dedup();
                AdviceItem { action: a, touches }
            })
            .collect();
        HtmlReport {
            version: 1,
            generator: format!("nix-heft {}", env!("CARGO_PKG_VERSION")),
            source,
            roots: g.roots().to_vec(),
            closure_size: sizes.total,
            evidence_state,
            paths,
            edges,
            advice,
            plan_saving,
            traces: None,
            diff: None,
            build_graph: None,
            why_command: vec!["nix-heft".to_string(), "why".to_string()],
            problems,
        }
    }

    /// Adds what came and went since BEFORE: `d` is `diff`'s report of
    /// BEFORE against this page's graph `g` (AFTER), with BEFORE's evidence
    /// for the removed paths; its problems join the page's.
    pub fn set_diff(&mut self, g: &Graph, d: DiffReport) {
        let index = g.index();
        let id_of = |s: &str| {
            nix_heft_format::StorePath::parse(g.path(0).store_dir(), s)
                .ok()
                .and_then(|p| index.get(&p).copied())
        };
        // What the page shows: its paths, BEFORE's roots and what left;
        // names shared among them get their hash, on the map too.
        let names = super::Names::new(
            self.paths
                .iter()
                .map(|p| p.path.as_str())
                .chain(d.before.iter().map(String::as_str))
                .chain(d.removed.iter().map(|c| c.path.as_str())),
        );
        for p in &mut self.paths {
            let shown = names.shown(&p.path);
            p.name = shown.text;
            p.keep = [shown.keep.start, shown.keep.end];
            p.hash_len = shown.hash_len;
        }
        let left: std::collections::HashSet<&str> = d
            .removed
            .iter()
            .map(|c| name_of(&c.path))
            .chain(d.before.iter().map(|p| name_of(p)))
            .collect();
        let groups: Vec<AddedGroup> = d
            .added_groups(&|p| names.get(p).to_string())
            .into_iter()
            .map(|(paths, line)| AddedGroup {
                line,
                members: paths.iter().filter_map(|p| id_of(p)).collect(),
            })
            .collect();
        let group_of: std::collections::HashMap<NodeId, usize> = groups
            .iter()
            .enumerate()
            .flat_map(|(k, g)| g.members.iter().map(move |&i| (i, k)))
            .collect();
        let added = d
            .added
            .iter()
            .filter_map(|c| {
                let change = if left.contains(name_of(&c.path)) {
                    "rebuilt"
                } else if c.why.edge == super::diff::Edge::Renamed && !c.why.renamed.is_empty() {
                    "updated"
                } else {
                    "added"
                };
                let i = id_of(&c.path)?;
                Some(AddedNode {
                    group: group_of.get(&i).copied(),
                    i,
                    referrer: c.why.referrer.as_deref().and_then(id_of),
                    edge: c.why.edge,
                    replaces: c.why.renamed.clone(),
                    change,
                })
            })
            .collect();
        let removed = d
            .removed
            .iter()
            .map(|c| RemovedNode {
                name: names.get(&c.path).to_string(),
                path: c.path.clone(),
                nar_size: c.nar_size,
                referrer: c.why.referrer.clone(),
                edge: c.why.edge,
                replaced_by: c.why.renamed.iter().filter_map(|s| id_of(s)).collect(),
                held_by: super::review::groups_phrase(
                    &super::review::groups_of(&c.why.groups, &c.why.evidence),
                    super::review::plain,
                ),
                unavailable: c.why.unavailable,
                left_chain: if c.why.left_with.is_some() {
                    c.why
                        .left_chain
                        .iter()
                        .map(|p| name_of(p).to_string())
                        .collect()
                } else {
                    Vec::new()
                },
            })
            .collect();
        self.problems.extend(d.problems);
        self.diff = Some(DiffSection {
            before_names: d.before.iter().map(|p| names.get(p).to_string()).collect(),
            before: d.before,
            closure_size_before: d.closure_size_before,
            paths_before: d.paths_before,
            packages: d.packages,
            added,
            removed,
            groups,
        });
    }

    /// The whole page: template with styles, d3-hierarchy, the data (once,
    /// as JSON in a `<script type="application/json">`) and the script.
    pub fn render_html(&self) -> String {
        const TEMPLATE: &str = include_str!("../../../assets/report/report.html");
        const CSS: &str = include_str!("../../../assets/report/report.css");
        const JS: &str = include_str!("../../../assets/report/report.js");
        const D3: &str = include_str!("../../../assets/vendor/d3-hierarchy.min.js");
        const D3_LICENSE: &str = include_str!("../../../assets/vendor/d3-hierarchy.LICENSE");
        let data = serde_json::to_string(self).expect("report model serialises");
        // Inside <script>, "</" could end the element early and "<!--"
        // could open a comment: escape "<" in the JSON (valid JSON still).
        let data = data.replace('<', "\\u003c");
        let title = match self.roots.as_slice() {
            [r] => self.paths[*r as usize].name.clone(),
            rs => format!("{} roots", rs.len()),
        };
        TEMPLATE
            .replace("{{TITLE}}", &html_escape(&title))
            .replace("{{CSS}}", CSS)
            .replace("{{D3_LICENSE}}", &D3_LICENSE.replace("*/", "* /"))
            .replace("{{D3}}", D3)
            .replace("{{JS}}", JS)
            .replacen("{{DATA}}", &data, 1)
    }
}

/// Escapes text for HTML element content.
pub(crate) fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix_heft_graph::testgraph::random_dag;

    #[test]
    fn added_sizes_nest_under_dominators_and_data_is_embedded_once() {
        let g = random_dag(7, 300, 3);
        let r = HtmlReport::new(
            &g,
            &Sizes::compute(&g),
            "test".into(),
            None,
            Vec::new(),
            None,
            Vec::new(),
        );
        // A path's added size is its own size plus its dominator-tree
        // children's added sizes: what the treemap draws.
        let mut sum: Vec<u64> = r.paths.iter().map(|p| p.nar_size).collect();
        for p in &r.paths {
            if p.idom >= 0 {
                sum[p.idom as usize] += p.added_size;
            }
        }
        for (p, s) in r.paths.iter().zip(&sum) {
            assert_eq!(p.added_size, *s, "{}", p.path);
        }
        let roots_added: u64 = r
            .paths
            .iter()
            .filter(|p| p.idom < 0)
            .map(|p| p.added_size)
            .sum();
        assert_eq!(roots_added, r.closure_size);
        assert_eq!(r.evidence_state, EvidenceState::Unavailable);
        let html = r.render_html();
        assert_eq!(html.matches(&r.paths[0].path).count(), 1);
        assert!(!html.contains("{{"), "unfilled placeholder");
    }

    #[test]
    fn diff_marks_the_new_paths_by_index_and_lists_the_gone_ones_once() {
        // random_dag names paths by index: the larger graph has paths the
        // smaller lacks, so each direction adds or removes some.
        for (nb, na) in [(60, 45), (45, 60)] {
            let before = random_dag(3, nb, 2);
            let after = random_dag(4, na, 3);
            let d = nix_heft_analysis::diff::diff(&before, &after);
            let dr = DiffReport::new(
                &before,
                &after,
                d,
                Classified::default(),
                Classified::default(),
            );
            let (want_added, want_removed) = (dr.added.len(), dr.removed.len());
            assert!(want_added + want_removed > 0);
            let mut r = HtmlReport::new(
                &after,
                &Sizes::compute(&after),
                "t".into(),
                None,
                Vec::new(),
                None,
                Vec::new(),
            );
            r.set_diff(&after, dr);
            let section = r.diff.as_ref().unwrap();
            let in_before: std::collections::HashSet<&str> =
                before.paths().iter().map(|p| p.as_str()).collect();
            let added: std::collections::BTreeSet<usize> =
                section.added.iter().map(|a| a.i as usize).collect();
            assert_eq!(added.len(), want_added);
            for (i, p) in r.paths.iter().enumerate() {
                assert_eq!(
                    added.contains(&i),
                    !in_before.contains(p.path.as_str()),
                    "{}",
                    p.path
                );
            }
            assert_eq!(section.removed.len(), want_removed);
            let html = r.render_html();
            for g in &section.removed {
                assert_eq!(html.matches(&g.path).count(), 1, "{}", g.path);
                assert!(g.nar_size > 0);
            }
        }
    }

    #[test]
    fn script_end_in_data_is_escaped() {
        let g = random_dag(1, 5, 1);
        let mut r = HtmlReport::new(
            &g,
            &Sizes::compute(&g),
            "</script><!--".into(),
            None,
            Vec::new(),
            None,
            Vec::new(),
        );
        r.generator = "x".into();
        let html = r.render_html();
        assert!(!html.contains("</script><!--"));
        assert!(html.contains("\\u003c/script>"));
    }
}
