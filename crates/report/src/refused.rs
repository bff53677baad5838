//! `refused`'s reports (issues 33, 39): each reference Nix refuses (or
//! would refuse) in an output, with the files that hold it, the chain for
//! a requisite and the fixes core found; the cycles between outputs with
//! both directions' files; and, for `--log`, what Nix's error text says
//! with each build's report after it. The setup hook prints the same
//! text into the build log, which `nix_heft_format::nix_error` reads back.

use serde::Serialize;

use crate::names::Names;
use crate::{Report, TextOptions};
use nix_heft_analysis::refusal::{Fix, Held, Remedy};
use nix_heft_format::nix_error;
use nix_heft_graph::{Graph, NodeId};
use nix_heft_ops::pipeline::refused::{Left, Refused, RefusedLog};
use nix_heft_scan::classify::Classified;
use nix_heft_types::evidence::{Evidence, EvidenceGroup};
use nix_heft_types::problem::Problem;

/// One edge of a chain, with its evidence.
#[derive(Debug, Clone, Serialize)]
pub struct Edge {
    /// The path that holds the reference.
    pub referrer: String,
    /// The path referred to.
    pub reference: String,
    /// Every hold: file, offset (of the hash), kind, verdict.
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
    /// The attribute that sets it (`outputChecks.out.allowedRequisites`
    /// under structured attributes).
    pub attribute: String,
    /// The path it may not have.
    pub path: String,
    /// From the output to the path, each edge with its holds (empty for
    /// the output's own path as its requisite).
    pub chain: Vec<Edge>,
    /// What holds it and what would drop it.
    pub remedy: Remedy,
}

/// A cycle between outputs.
#[derive(Debug, Clone, Serialize)]
pub struct Cycle {
    /// The outputs' names, the first repeated at the end.
    pub outputs: Vec<String>,
    /// Each direction with its holds.
    pub edges: Vec<Edge>,
    /// What would break it.
    pub remedy: Remedy,
}

/// `refused`'s report of one build.
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
    #[serde(skip)]
    store_dir: String,
}

fn edge(g: &Graph, c: &Classified, from: NodeId, to: NodeId) -> Edge {
    Edge {
        referrer: g.path(from).to_string(),
        reference: g.path(to).to_string(),
        evidence: c.evidence(from, to).to_vec(),
        groups: c.groups(from, to),
    }
}

impl RefusedReport {
    /// The report of what `r` found.
    pub fn new(r: &Refused) -> RefusedReport {
        let g = &r.graph;
        let c = &r.classified;
        let names = r.output_names();
        let name_of = |v: NodeId| names.get(&v).cloned().unwrap_or_default();
        let refused = r
            .refusals
            .iter()
            .zip(&r.chains)
            .zip(&r.remedies)
            .map(|((f, chain), remedy)| RefusedPath {
                output: f.output.clone(),
                output_path: g.path(f.output_node).to_string(),
                check: f.check.as_str().into(),
                attribute: r.spec.attribute(&f.output, f.check),
                path: g.path(f.path).to_string(),
                chain: chain.windows(2).map(|w| edge(g, c, w[0], w[1])).collect(),
                remedy: remedy.clone(),
            })
            .collect();
        let cycles = r
            .cycles
            .iter()
            .zip(&r.cycle_remedies)
            .map(|(cy, remedy)| Cycle {
                outputs: cy.iter().map(|&v| name_of(v)).collect(),
                edges: cy.windows(2).map(|w| edge(g, c, w[0], w[1])).collect(),
                remedy: remedy.clone(),
            })
            .collect();
        let mut all: Vec<String> = (0..g.len() as NodeId)
            .map(|v| g.path(v).to_string())
            .collect();
        all.sort();
        let store_dir = r
            .spec
            .outputs
            .values()
            .next()
            .map_or_else(|| "/nix/store".to_string(), |p| p.store_dir().to_string());
        RefusedReport {
            drv: r.drv.as_ref().map(|d| d.to_string()),
            refused,
            cycles,
            problems: r.problems.clone(),
            names: all,
            store_dir,
        }
    }

    /// Whether Nix refuses anything.
    pub fn any(&self) -> bool {
        !self.refused.is_empty() || !self.cycles.is_empty()
    }

    fn shows_evidence(&self) -> bool {
        self.refused
            .iter()
            .flat_map(|r| &r.chain)
            .chain(self.cycles.iter().flat_map(|c| &c.edges))
            .any(|e| !e.evidence.is_empty())
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

/// Files named in a sentence before the rest are counted.
const FILES_SAID: usize = 3;

fn files_said(files: &[String]) -> String {
    let mut s = files
        .iter()
        .take(FILES_SAID)
        .map(|f| if f.is_empty() { "the path itself" } else { f })
        .collect::<Vec<_>>()
        .join(", ");
    if files.len() > FILES_SAID {
        s.push_str(&format!(" and {} more", files.len() - FILES_SAID));
    }
    s
}

/// A remedy as text: what holds it, then each fix, the first to try
/// first; `verb` is "drop it" or "break it".
fn remedy_text(r: &Remedy, verb: &str, out: &mut String) {
    match &r.held {
        Held::Removable if r.fixes.is_empty() => out.push_str(
            "  no fix found: no direction is held only by files that belong in the output it refers to\n",
        ),
        Held::Removable => {}
        Held::AtRunTime { files } => out.push_str(&format!(
            "  held at run time by {}: the dependency is real; the program must stop using it, or the check allow it\n",
            files_said(files)
        )),
        Held::Unsure { files } => out.push_str(&format!(
            "  {} may use it at run time (nix-heft cannot tell): check before dropping it\n",
            files_said(files)
        )),
        Held::OwnPath => out.push_str(
            "  it is the output itself: under __structuredAttrs Nix counts an output among its own requisites (it leaves it out only without them)\n",
        ),
        Held::Unread => out.push_str("  no file that was read holds it\n"),
    }
    let mut first = true;
    for f in &r.fixes {
        match f {
            Fix::Script { lines } => {
                out.push_str(&format!(
                    "  {} in postInstall:\n",
                    if first {
                        format!("to {verb},")
                    } else {
                        "or,".into()
                    }
                ));
                for l in lines {
                    out.push_str(&format!("    {l}\n"));
                }
            }
            Fix::Check {
                attribute,
                entry,
                add,
                ..
            } => {
                let entry = if entry.contains('/') {
                    entry.clone()
                } else {
                    format!("\"{entry}\"")
                };
                out.push_str(&format!(
                    "  {}allow it: {} {entry} {} {attribute}\n",
                    if first { "" } else { "or " },
                    if *add { "add" } else { "take" },
                    if *add { "to" } else { "off" },
                ));
            }
        }
        first = false;
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
            let itself = if r.path == r.output_path {
                " (itself)"
            } else {
                ""
            };
            out.push_str(&format!(
                "nix-heft: output '{}' ({}) {what} {}{itself}, which {} refuses\n",
                r.output, r.output_path, r.path, r.attribute
            ));
            for e in &r.chain {
                edge_text(e, &names, opts, &mut out);
            }
            remedy_text(&r.remedy, "drop it", &mut out);
        }
        for c in &self.cycles {
            out.push_str(&format!(
                "nix-heft: the outputs refer to each other: {} (Nix: \"cycle detected\")\n",
                c.outputs.join(" → ")
            ));
            for e in &c.edges {
                edge_text(e, &names, opts, &mut out);
            }
            remedy_text(&c.remedy, "break it", &mut out);
        }
        if self.shows_evidence() {
            out.push_str(&format!(
                "nix-heft: an offset (@N) is where the path's hash starts in the file, {} bytes after {}/\n",
                self.store_dir.len() + 1,
                self.store_dir
            ));
        }
        out
    }

    fn problems(&self) -> &[Problem] {
        &self.problems
    }
}

/// One refusal of Nix's error text.
#[derive(Debug, Clone, Serialize)]
pub struct LogEntry {
    /// `forbidden`, `cycle`, `too-large` or `hook-failed`.
    pub kind: &'static str,
    /// Who said it: `nix`, or `setup-hook` (nix-heft's, in the build log).
    pub by: &'static str,
    /// The derivation, from the text or the store.
    pub drv: Option<String>,
    /// The output refused (`forbidden`, `too-large`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The paths it may not have (`forbidden`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The check, where the text names it (the hook's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// The outputs of a cycle: the one that refers, and the one referred
    /// to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle: Option<(String, String)>,
    /// Size and limit in bytes (`too-large`), and whether of the closure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<(u64, u64, bool)>,
    /// Whether the files are there (examined in `builds`).
    pub left: Left,
    /// The lines of the text that say it, counted from 1.
    pub lines: (usize, usize),
}

/// `refused --log`'s report: what the text says, then each build examined.
#[derive(Debug, Clone, Serialize)]
pub struct RefusedLogReport {
    /// Each refusal of the text.
    pub log: Vec<LogEntry>,
    /// Each build whose outputs are there, as `refused DRV` reports it.
    pub builds: Vec<RefusedReport>,
    /// What could not be examined, the builds' own problems included.
    pub problems: Vec<Problem>,
    /// Only the end of a long text was read.
    pub truncated: bool,
}

impl RefusedLogReport {
    /// The report of `log`.
    pub fn new(log: &RefusedLog) -> RefusedLogReport {
        use nix_error::Refusal as R;
        let entries = log
            .refusals
            .iter()
            .map(|l| {
                let mut e = LogEntry {
                    kind: "",
                    by: if l.found.by_hook { "setup-hook" } else { "nix" },
                    drv: l.drv.as_ref().map(|d| d.to_string()),
                    output: None,
                    paths: Vec::new(),
                    check: None,
                    cycle: None,
                    size: None,
                    left: l.left,
                    lines: (l.found.span.first_line, l.found.span.last_line),
                };
                match &l.found.refusal {
                    R::Forbidden {
                        output,
                        paths,
                        check,
                        ..
                    } => {
                        e.kind = "forbidden";
                        e.output = Some(output.to_string());
                        e.paths = paths.iter().map(|p| p.to_string()).collect();
                        e.check = check.clone();
                    }
                    R::Cycle { from, to, .. } => {
                        e.kind = "cycle";
                        e.cycle = Some((from.clone(), to.clone()));
                    }
                    R::TooLarge {
                        path,
                        closure,
                        size,
                        limit,
                        ..
                    } => {
                        e.kind = "too-large";
                        e.output = Some(path.to_string());
                        e.size = Some((*size, *limit, *closure));
                    }
                    R::HookFailed { .. } => e.kind = "hook-failed",
                }
                e
            })
            .collect();
        let builds: Vec<RefusedReport> = log.builds.iter().map(RefusedReport::new).collect();
        let mut problems = log.problems.clone();
        for b in &builds {
            problems.extend(b.problems.iter().cloned());
        }
        RefusedLogReport {
            log: entries,
            builds,
            problems,
            truncated: log.truncated,
        }
    }

    /// Whether the text holds a refusal (it always does: a text without
    /// one is refused before) or a build examined refuses something.
    pub fn any(&self) -> bool {
        !self.log.is_empty() || self.builds.iter().any(RefusedReport::any)
    }
}

fn left_text(left: Left, what: &str) -> String {
    match left {
        Left::Files => format!("{what} files are still there (below)"),
        Left::Gone => format!(
            "{what} files are gone: build it again with nix-heft's setup hook (nativeBuildInputs = [ nix-heft ]) to see them"
        ),
        Left::Unknown => "the text names no derivation to look at".into(),
    }
}

impl Report for RefusedLogReport {
    fn render_text(&self, opts: &TextOptions) -> String {
        let mut out = String::new();
        for e in &self.log {
            let of = e
                .drv
                .as_deref()
                .map(|d| format!(" of {d}"))
                .unwrap_or_default();
            let who = if e.by == "nix" {
                "Nix"
            } else {
                "nix-heft's setup hook"
            };
            let line = match e.kind {
                "forbidden" => format!(
                    "{who} refused output {}{of}{}: it refers to (or its closure holds) {}; {}",
                    e.output.as_deref().unwrap_or_default(),
                    e.check
                        .as_deref()
                        .map(|c| format!(" ({c})"))
                        .unwrap_or_default(),
                    e.paths.join(", "),
                    left_text(e.left, "its")
                ),
                "cycle" => {
                    let (from, to) = e.cycle.clone().unwrap_or_default();
                    format!(
                        "{who} found a cycle{}: {from} refers to {to}, which refers back; {}",
                        e.drv
                            .as_deref()
                            .map(|d| format!(" in {d}"))
                            .unwrap_or_default(),
                        left_text(e.left, "the outputs'")
                    )
                }
                "too-large" => {
                    let (size, limit, closure) = e.size.unwrap_or_default();
                    format!(
                        "Nix refused {}: its {} is {size} bytes, over the limit of {limit}; `nix-heft size` and `advise` on it say what is heavy",
                        e.output.as_deref().unwrap_or_default(),
                        if closure { "closure" } else { "NAR" },
                    )
                }
                _ => format!(
                    "nix-heft's setup hook failed the build{of} (NIX_HEFT_REFUSED_FAIL) because Nix would refuse its outputs; {}",
                    left_text(e.left, "their")
                ),
            };
            out.push_str(&format!("nix-heft: {line}\n"));
        }
        for b in &self.builds {
            out.push_str(&b.render_text(opts));
        }
        out
    }

    fn problems(&self) -> &[Problem] {
        &self.problems
    }
}
