//! The CI gate (`check`): closure rules — a size budget, a growth budget
//! against a baseline, forbidden paths and forbidden verdicts — each
//! violation explained from the graph and the classified evidence.
//!
//! Two steps, so that the read stage reads only what the rules need:
//! [`prepare`] looks at the graph alone (sizes, what is new since the
//! baseline) and says which edges need evidence (every chain to a forbidden
//! path, every referrer of a path added since the baseline); [`check`]
//! turns the classified evidence (and advise's actions, when a budget is
//! broken) into [`Violation`]s, naming as the reason a path is present the
//! strongest chain or hold, as `why` ranks them: runtime first.
//!
//! Pure: the gate judges data. Reading the config and baseline files,
//! compiling and matching the forbidden globs against a closure, and the
//! store are the command's (the config file's keys are flags, merged with
//! the others by the binary); [`Settings::new`] turns the flags into
//! [`Rules`].

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::plan::advise::Action;
use crate::rules::{ClosureRules, Growth, RuleText};
use nix_heft_graph::{Graph, NodeId, ReadRequest, added_sizes, request};
use nix_heft_scan::classify::Classified;
use nix_heft_types::evidence::{Evidence, EvidenceGroup, Verdict};
use nix_heft_types::problem::{Problem, ProblemKind};

/// Parses `docs,build,dead` (any of the three).
pub fn parse_verdicts(items: &[String]) -> Result<Vec<Verdict>> {
    let mut out = Vec::new();
    for s in items.iter().flat_map(|s| s.split(',')) {
        let v = match s.trim() {
            "docs" => Verdict::Docs,
            "build" => Verdict::Build,
            "dead" => Verdict::Dead,
            other => {
                return Err(Error::UnknownVerdict(other.to_string()));
            }
        };
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

/// The rules to check, already parsed: the closure rules every gate
/// shares (their forbidden paths matched in the closure by the caller,
/// `nix_heft_ops::pipeline::check`, for [`prepare`]) and `check`'s own.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// Size, growth over the baseline, forbidden paths.
    pub closure: ClosureRules,
    /// Verdicts no edge may have as its strongest.
    pub forbid_verdict: Vec<Verdict>,
}

impl Rules {
    /// True when no rule is given.
    pub fn is_empty(&self) -> bool {
        self.closure.is_empty() && self.forbid_verdict.is_empty()
    }
}

/// The baseline of `--max-growth`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    /// What it is (the roots, or the file).
    pub label: String,
    /// Its closure size.
    pub closure_size: u64,
    /// Its paths, when known (a `size --json` lists them).
    #[serde(skip)]
    pub paths: Option<HashSet<String>>,
}

impl Baseline {
    /// A saved closure's sizes (a `nix-heft size --json`, which the command
    /// reads): its closure size, how many paths it has, and the paths it
    /// lists.
    pub fn from_sizes(
        label: String,
        closure_size: u64,
        path_count: usize,
        listed: impl IntoIterator<Item = String>,
    ) -> Baseline {
        let paths: HashSet<String> = listed.into_iter().collect();
        Baseline {
            label,
            closure_size,
            // `size --top` keeps only some paths; the set is then unknown.
            paths: (paths.len() == path_count).then_some(paths),
        }
    }

    /// The closure of `g`'s roots as a baseline.
    pub fn from_graph(g: &Graph) -> Baseline {
        let all = vec![true; g.len()];
        Baseline {
            label: g
                .roots()
                .iter()
                .map(|&r| g.path(r).to_string())
                .collect::<Vec<_>>()
                .join(", "),
            closure_size: g.size_of(&all),
            paths: Some(g.paths().iter().map(|p| p.to_string()).collect()),
        }
    }
}

/// A path a budget violation lists, with the referrers that may have
/// pulled it in, in order of preference, when the violation explains growth
/// since a baseline (empty otherwise): [`check`] names the one whose hold is
/// strongest once the evidence is read.
pub type Listed = (NodeId, Vec<NodeId>);

/// A rule of `check`, as the flags, the config file and the JSON name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// `--max-closure`: the closure's size.
    MaxClosure,
    /// `--max-growth`: growth over the baseline.
    MaxGrowth,
    /// `--forbid`: a path whose name matches a glob.
    Forbid,
    /// `--forbid-verdict`: a reference held only by such holds.
    ForbidVerdict,
}

impl Rule {
    /// The rule's name, as its flag spells it (without `--`).
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::MaxClosure => "max-closure",
            Rule::MaxGrowth => "max-growth",
            Rule::Forbid => "forbid",
            Rule::ForbidVerdict => "forbid-verdict",
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A size budget found broken before any evidence is read.
#[derive(Debug, Clone)]
pub struct Budget {
    /// [`Rule::MaxClosure`] or [`Rule::MaxGrowth`].
    pub rule: Rule,
    /// What is wrong, in one line.
    pub detail: String,
    /// The paths to list as contributors, each with the referrers that may
    /// have pulled it in where the rule explains growth since a baseline.
    pub contributors: Vec<Listed>,
}

/// What `check` learns from the graph alone, and the edges it needs read.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Closure size of the roots.
    pub closure_size: u64,
    /// Broken budgets.
    pub budgets: Vec<Budget>,
    /// Forbidden paths found: (pattern, path). Their chains are chosen by
    /// [`check`] from the evidence: the strongest, as `why` chooses.
    pub forbidden: Vec<(String, NodeId)>,
    /// Edges whose evidence the violations need.
    pub wants: ReadRequest,
    /// Whether advise's actions are needed (a budget is broken).
    pub needs_advice: bool,
}

/// How many contributors a budget violation lists.
pub const TOP_CONTRIBUTORS: usize = 5;

/// Checks the size rules and finds the forbidden paths' chains; says what
/// to read. `forbidden` are the paths of the closure each forbidden pattern
/// matches, pattern by pattern, as the caller found them.
pub fn prepare(
    g: &Graph,
    rules: &Rules,
    baseline: Option<&Baseline>,
    forbidden: &[(String, NodeId)],
) -> Prepared {
    let all = vec![true; g.len()];
    let closure_size = g.size_of(&all);
    let roots: HashSet<NodeId> = g.roots().iter().copied().collect();
    let mut budgets = Vec::new();
    let need_added = rules.closure.max_closure.is_some_and(|m| closure_size > m)
        || (rules.closure.max_growth.is_some() && baseline.is_some());
    let added = if need_added {
        added_sizes(g)
    } else {
        Vec::new()
    };
    // Largest added size first, roots left out (a root's added size is the
    // whole closure it alone holds).
    let top = |filter: &dyn Fn(NodeId) -> bool| -> Vec<NodeId> {
        let mut v: Vec<NodeId> = (0..g.len() as NodeId)
            .filter(|v| !roots.contains(v) && filter(*v))
            .collect();
        v.sort_by(|a, b| {
            added[*b as usize]
                .cmp(&added[*a as usize])
                .then_with(|| g.path(*a).cmp(g.path(*b)))
        });
        v.truncate(TOP_CONTRIBUTORS);
        v
    };
    use nix_heft_types::units::iec;
    if let Some(max) = rules.closure.max_closure
        && closure_size > max
    {
        budgets.push(Budget {
            rule: Rule::MaxClosure,
            detail: format!(
                "closure is {} ({closure_size} bytes), over the budget of {} ({max} bytes) by {}",
                iec(closure_size),
                iec(max),
                iec(closure_size - max)
            ),
            contributors: top(&|_| true)
                .into_iter()
                .map(|v| (v, Vec::new()))
                .collect(),
        });
    }
    if let (Some(growth), Some(base)) = (rules.closure.max_growth, baseline) {
        let limit = growth.limit(base.closure_size);
        let grew = closure_size as i128 - base.closure_size as i128;
        if grew > limit as i128 {
            let shown = match growth {
                Growth::Percent(p) => format!("{p}% = {}", iec(limit)),
                Growth::Bytes(_) => iec(limit),
            };
            let pct = if base.closure_size > 0 {
                format!(" (+{:.1}%)", grew as f64 * 100.0 / base.closure_size as f64)
            } else {
                String::new()
            };
            let new_only = base.paths.as_ref();
            budgets.push(Budget {
                rule: Rule::MaxGrowth,
                detail: format!(
                    "closure grew by {}{pct}, from {} ({}) to {}, more than the allowed {shown}",
                    nix_heft_types::units::iec_delta(grew),
                    iec(base.closure_size),
                    base.label,
                    iec(closure_size)
                ),
                contributors: match new_only {
                    // Growth is explained by what came in since the
                    // baseline, as `diff` lists it, not by the largest
                    // paths: a big path that was there before did not grow.
                    Some(base_paths) => added_since(g, base_paths),
                    // A baseline without its path list (`size --top`):
                    // what is new cannot be told, so the largest paths.
                    None => top(&|_| true)
                        .into_iter()
                        .map(|v| (v, Vec::new()))
                        .collect(),
                },
            });
        }
    }
    let forbidden = forbidden.to_vec();
    let needs_advice = !budgets.is_empty();
    let mut wants = if needs_advice || !rules.forbid_verdict.is_empty() {
        request::all_edges(g)
    } else {
        ReadRequest::new()
    };
    // Every chain to a forbidden path is read, as `why` reads them: the
    // reason given must be the strongest chain, not the shortest one (a
    // dead RUNPATH entry straight into rocm-llvm while clr → comgr holds it
    // at run time).
    if !forbidden.is_empty() {
        let targets: Vec<NodeId> = forbidden.iter().map(|(_, v)| *v).collect();
        request::want(
            &mut wants,
            nix_heft_graph::chains::edges_toward(g, &targets)
                .into_iter()
                .flat_map(|(r, ts)| ts.into_iter().map(move |t| (r, t))),
        );
    }
    // Each added path's referrers, so the strongest hold names the one that
    // pulled it in.
    for b in &budgets {
        request::want(
            &mut wants,
            b.contributors
                .iter()
                .flat_map(|(v, rs)| rs.iter().map(move |&r| (r, *v))),
        );
    }
    Prepared {
        closure_size,
        budgets,
        forbidden,
        wants,
        needs_advice,
    }
}

/// The paths of `g`'s closure not in `base_paths`, largest NAR first (then
/// by path), each with its referrers in the order [`crate::diff::diff`]
/// prefers them: a referrer whose package (name and output, as `nix store
/// diff-closures` reads names) is in the baseline too, then the one nearest
/// the roots, then by path ([`check`] then takes the strongest hold among
/// them). Only the baseline's
/// path names are needed, so a saved `size --json` serves as well as a
/// graph.
fn added_since(g: &Graph, base_paths: &HashSet<String>) -> Vec<Listed> {
    let key = |name: &str| {
        let n = nix_heft_format::store_path::split_name_like_diff_closures(name);
        (n.name.to_string(), n.output.unwrap_or("").to_string())
    };
    let base_keys: HashSet<(String, String)> = base_paths
        .iter()
        .map(|p| key(nix_heft_format::store_path::name_of(p)))
        .collect();
    // Each path's package looked up once, not once per comparison.
    let in_base: Vec<bool> = (0..g.len() as NodeId)
        .map(|v| base_keys.contains(&key(g.path(v).name())))
        .collect();
    let depth = nix_heft_graph::chains::depths_from_roots(g);
    let roots: HashSet<NodeId> = g.roots().iter().copied().collect();
    let mut added: Vec<NodeId> = (0..g.len() as NodeId)
        .filter(|&v| !base_paths.contains(g.path(v).as_str()))
        .collect();
    added.sort_by(|a, b| {
        g.nar_size(*b)
            .cmp(&g.nar_size(*a))
            .then_with(|| g.path(*a).cmp(g.path(*b)))
    });
    added
        .into_iter()
        .map(|v| {
            if roots.contains(&v) {
                return (v, Vec::new());
            }
            let mut rs = g.referrers(v).to_vec();
            rs.sort_by(|x, y| {
                let rank = |r: NodeId| (!in_base[r as usize], depth[r as usize]);
                rank(*x)
                    .cmp(&rank(*y))
                    .then_with(|| g.path(*x).cmp(g.path(*y)))
            });
            (v, rs)
        })
        .collect()
}

/// Files named in a violation's one-line detail; the rest are counted (the
/// evidence lists them all).
const FEW_FILES: usize = 3;

/// `a, b, c and 9 more files`.
fn few_files(files: &BTreeSet<&str>) -> String {
    let shown: Vec<&str> = files
        .iter()
        .take(FEW_FILES)
        .map(|f| if f.is_empty() { "." } else { *f })
        .collect();
    let mut s = shown.join(", ");
    if files.len() > FEW_FILES {
        s.push_str(&format!(" and {} more files", files.len() - FEW_FILES));
    }
    s
}

/// One edge with the files that hold it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EdgeFiles {
    /// Holder of the reference.
    pub referrer: String,
    /// The referenced path.
    pub reference: String,
    /// Every hold of it in the referrer's files.
    pub evidence: Vec<Evidence>,
    /// The same holds grouped by kind, verdict and directory, with the
    /// holding files' sizes.
    #[serde(default)]
    pub groups: Vec<EvidenceGroup>,
    /// True when the source has no file contents for the referrer (a
    /// path-info JSON file), so the holds are unknown.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unavailable: bool,
}

/// A path that adds much to the closure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contributor {
    /// The store path.
    pub path: String,
    /// Bytes that leave the closure without it.
    pub added_size: u64,
    /// For growth over a baseline: the path's own NAR size (what `diff`
    /// counts for an added path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nar_size: Option<u64>,
    /// For growth over a baseline: the path that pulled it in (`null` for
    /// a root, or for a budget that is not about growth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub referrer: Option<String>,
    /// The referrer's holds of the reference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
    /// The same holds grouped, with the holding files' sizes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<EvidenceGroup>,
}

/// One of advise's actions, judged against a budget on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetAction {
    /// The action as advise gives it.
    #[serde(flatten)]
    pub action: Action,
    /// The closure after this action alone.
    pub closure_after: Option<u64>,
    /// Whether this action alone brings the closure within the budget.
    pub enough_alone: bool,
}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    /// The rule broken.
    pub rule: Rule,
    /// What is wrong, in one line.
    pub detail: String,
    /// For a forbidden path: the strongest chain from a root to it (as
    /// `why` ranks chains: runtime first, then shortest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<Vec<String>>,
    /// For a forbidden path, each edge of the chain with its files; for a
    /// forbidden verdict, the edge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Vec<EdgeFiles>>,
    /// For a budget: the largest contributors by added size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contributors: Vec<Contributor>,
    /// For a budget: advise's single actions, each on its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<BudgetAction>,
    /// For a budget: how to read the actions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// For a budget: the closure with every non-breaking action applied
    /// together (advise's joint plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_closure_after: Option<u64>,
}

/// Most actions listed under a budget violation.
pub const TOP_ACTIONS: usize = 5;

/// Says why savings are listed one by one and where the joint answer is.
pub const OVERLAP_NOTE: &str = "each action's saving is computed on its own; savings overlap \
     and do not add up";

/// What the rules could not check because the source has no file contents
/// for some referrers they needed (a path-info JSON file): one problem that
/// counts them, so that `--forbid-verdict` never passes silently unchecked.
pub fn unchecked(g: &Graph, c: &Classified, p: &Prepared) -> Vec<Problem> {
    let missing: Vec<NodeId> = p
        .wants
        .iter()
        .filter(|(_, t)| !t.is_empty())
        .map(|(&v, _)| v)
        .filter(|v| c.paths.get(v).is_none_or(|pe| !pe.available))
        .collect();
    let Some(&first) = missing.first() else {
        return Vec::new();
    };
    vec![Problem::new(
        g.path(first).as_str(),
        ProblemKind::NoContents,
        format!(
            "the source has no file contents for {} path(s) whose references the rules needed \
             to read (this one{}): their holds and verdicts are unknown",
            missing.len(),
            if missing.len() > 1 { " and others" } else { "" }
        ),
    )]
}

/// Turns what [`prepare`] found and the classified evidence into
/// violations. `actions` are advise's actions (used when a budget is
/// broken).
pub fn check(
    g: &Graph,
    c: &Classified,
    rules: &Rules,
    baseline: Option<&Baseline>,
    p: &Prepared,
    actions: &[Action],
    plan: Option<&crate::plan::joint::Plan>,
) -> Vec<Violation> {
    let mut out = Vec::new();
    let path = |v: NodeId| g.path(v).to_string();
    let files = |a: NodeId, b: NodeId| EdgeFiles {
        referrer: path(a),
        reference: path(b),
        evidence: c.evidence(a, b).to_vec(),
        groups: c.groups(a, b),
        unavailable: c.paths.get(&a).is_none_or(|p| !p.available),
    };
    let added = if p.budgets.iter().any(|b| !b.contributors.is_empty()) {
        added_sizes(g)
    } else {
        Vec::new()
    };
    for Budget {
        rule,
        detail,
        contributors,
    } in &p.budgets
    {
        let budget = match rule {
            Rule::MaxClosure => rules.closure.max_closure.unwrap_or(0),
            _ => match (rules.closure.max_growth, baseline) {
                (Some(gr), Some(b)) => b.closure_size.saturating_add(gr.limit(b.closure_size)),
                _ => 0,
            },
        };
        let acts: Vec<BudgetAction> = actions
            .iter()
            .filter(|a| a.saving.is_some_and(|s| s > 0))
            .take(TOP_ACTIONS)
            .map(|a| {
                let after = a.saving.map(|s| p.closure_size.saturating_sub(s));
                BudgetAction {
                    action: a.clone(),
                    closure_after: after,
                    enough_alone: after.is_some_and(|x| x <= budget),
                }
            })
            .collect();
        out.push(Violation {
            rule: *rule,
            detail: detail.clone(),
            chain: None,
            evidence: None,
            contributors: contributors
                .iter()
                .map(|(v, rs)| (*v, crate::explain::strongest_referrer(c, *v, rs)))
                .map(|(v, r)| Contributor {
                    path: path(v),
                    added_size: added[v as usize],
                    nar_size: (*rule == Rule::MaxGrowth
                        && baseline.is_some_and(|b| b.paths.is_some()))
                    .then(|| g.nar_size(v)),
                    referrer: r.map(path),
                    evidence: r.map(|r| c.evidence(r, v).to_vec()).unwrap_or_default(),
                    groups: r.map(|r| c.groups(r, v)).unwrap_or_default(),
                })
                .collect(),
            note: (!acts.is_empty()).then(|| match plan {
                // The joint plan answers what the single savings cannot.
                Some(pl) if !pl.actions.is_empty() => format!(
                    "{OVERLAP_NOTE}; all {} non-breaking actions together (advise's plan) give \
                     {} → {}, {} the budget of {}",
                    pl.actions.len(),
                    nix_heft_types::units::iec(pl.closure_before),
                    nix_heft_types::units::iec(pl.closure_after),
                    if pl.closure_after <= budget {
                        "within"
                    } else {
                        "still over"
                    },
                    nix_heft_types::units::iec(budget)
                ),
                _ => OVERLAP_NOTE.to_string(),
            }),
            plan_closure_after: plan
                .filter(|pl| !pl.actions.is_empty())
                .map(|pl| pl.closure_after),
            actions: acts,
        });
    }
    // The most important first (the order annotations keep when GitHub
    // shows only some): the largest forbidden path, then by path.
    let mut forbidden: Vec<&(String, NodeId)> = p.forbidden.iter().collect();
    forbidden.sort_by(|(_, x), (_, y)| {
        g.nar_size(*y)
            .cmp(&g.nar_size(*x))
            .then_with(|| g.path(*x).cmp(g.path(*y)))
    });
    for (pat, v) in forbidden {
        // The strongest chain, as `why` gives it: a dead or build-only edge
        // is never the reason when a runtime chain keeps the path. The
        // report shows it with the display names of everything it shows.
        let chain = crate::explain::best_chains(g, c, g.roots(), &[*v])
            .pop()
            .map_or_else(|| vec![*v], |e| e.chain);
        out.push(Violation {
            rule: Rule::Forbid,
            detail: format!("{} matches the forbidden pattern '{pat}'", g.path(*v),),
            chain: Some(chain.iter().map(|&x| path(x)).collect()),
            evidence: Some(chain.windows(2).map(|w| files(w[0], w[1])).collect()),
            contributors: Vec::new(),
            actions: Vec::new(),
            note: None,
            plan_closure_after: None,
        });
    }
    if !rules.forbid_verdict.is_empty() {
        // The edge to the largest path first, as for forbidden paths.
        let mut edges: Vec<(NodeId, NodeId, &Vec<nix_heft_types::evidence::Evidence>)> = Vec::new();
        for (&from, pe) in &c.paths {
            for (&to, evs) in &pe.by_reference {
                edges.push((from, to, evs));
            }
        }
        edges.sort_by(|x, y| {
            g.nar_size(y.1)
                .cmp(&g.nar_size(x.1))
                .then_with(|| g.path(x.1).cmp(g.path(y.1)))
                .then_with(|| g.path(x.0).cmp(g.path(y.0)))
        });
        for (from, to, evs) in edges {
            let Some(strongest) = evs.iter().map(|e| e.verdict).min() else {
                continue;
            };
            if to == from || !rules.forbid_verdict.contains(&strongest) {
                continue;
            }
            let held: BTreeSet<&str> = evs.iter().map(|e| e.file.as_str()).collect();
            let what = match strongest {
                Verdict::Docs => "only by documentation",
                Verdict::Build => "only by build-time files",
                Verdict::Dead => "only by dead holds",
                _ => "only by",
            };
            out.push(Violation {
                rule: Rule::ForbidVerdict,
                detail: format!(
                    // Whole paths: the report's display names (with a
                    // hash where one name is shown twice) are in the
                    // edge's lines, this stage cannot know them.
                    "{} references {} {what} ({}): {}",
                    g.path(from),
                    g.path(to),
                    strongest.as_str(),
                    few_files(&held)
                ),
                chain: None,
                evidence: Some(vec![files(from, to)]),
                contributors: Vec::new(),
                actions: Vec::new(),
                note: None,
                plan_closure_after: None,
            });
        }
    }
    out
}

/// `check`'s flags that make its rules (the config file's keys are among
/// them: the binary reads the file as flags).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// The ROOTs.
    pub roots: Vec<String>,
    /// `--store`.
    pub store: Option<String>,
    /// `--max-closure`.
    pub max_closure: Option<String>,
    /// `--max-growth`.
    pub max_growth: Option<String>,
    /// `--against`.
    pub against: Option<String>,
    /// `--against-json`.
    pub against_json: Option<PathBuf>,
    /// `--forbid`, a list.
    pub forbid: Vec<String>,
    /// `--forbid-verdict`, a list (each item may be comma-separated).
    pub forbid_verdict: Vec<String>,
    /// `--format`.
    pub format: Option<String>,
}

/// Where `--max-growth`'s baseline comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaselineFrom {
    /// The closure of this root, in the same store (`--against`).
    Root(String),
    /// A saved `nix-heft size --json` (`--against-json`).
    SizeJson(PathBuf),
}

/// What `check` is asked: the config file's keys with the command line's
/// flags over them, validated.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The roots to check.
    pub roots: Vec<String>,
    /// The store (`--store`, else the file's `store`).
    pub store: Option<String>,
    /// The baseline of `--max-growth`, if any.
    pub baseline: Option<BaselineFrom>,
    /// The rules, parsed.
    pub rules: Rules,
    /// The rules as given, for the report (`max-closure 1GiB`, …).
    pub shown: Vec<String>,
}

impl Settings {
    /// Validates the flags: `format` is left to the caller, which alone
    /// knows `--json`.
    ///
    /// A forbidden store path is one under `store_dir`.
    /// Usage errors, in this order: no root, two baselines, a bad size,
    /// growth, glob or verdict, `--max-growth` without a baseline, no rule.
    pub fn new(flags: Config, store_dir: &str) -> Result<Settings> {
        let roots = flags.roots;
        if roots.is_empty() {
            return Err(Error::NoRoots);
        }
        let forbid = flags.forbid;
        let verdicts = flags.forbid_verdict;
        let max_closure = flags.max_closure;
        let max_growth = flags.max_growth;
        let baseline = match (flags.against, flags.against_json) {
            (Some(_), Some(_)) => {
                return Err(Error::TwoBaselines);
            }
            (Some(r), None) => Some(BaselineFrom::Root(r)),
            (None, Some(f)) => Some(BaselineFrom::SizeJson(f)),
            (None, None) => None,
        };
        let closure = ClosureRules::parse(
            RuleText {
                max_closure: max_closure.as_deref(),
                max_growth: max_growth.as_deref(),
                forbid: &forbid,
            },
            store_dir,
        )?;
        let rules = Rules {
            closure,
            forbid_verdict: parse_verdicts(&verdicts)?,
        };
        if rules.closure.max_growth.is_some() && baseline.is_none() {
            return Err(Error::GrowthWithoutBaseline);
        }
        if rules.is_empty() {
            return Err(Error::NothingToCheck);
        }
        let mut shown = Vec::new();
        if let Some(s) = &max_closure {
            shown.push(format!("max-closure {s}"));
        }
        if let Some(s) = &max_growth {
            shown.push(format!("max-growth {s}"));
        }
        shown.extend(forbid.iter().map(|f| format!("forbid {f}")));
        if !rules.forbid_verdict.is_empty() {
            let v: Vec<&str> = rules.forbid_verdict.iter().map(|v| v.as_str()).collect();
            shown.push(format!("forbid-verdict {}", v.join(",")));
        }
        Ok(Settings {
            roots,
            store: flags.store,
            baseline,
            rules,
            shown,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_and_verdicts_parse() {
        assert_eq!(Growth::parse("10%").unwrap(), Growth::Percent(10.0));
        assert_eq!(Growth::parse("1KiB").unwrap(), Growth::Bytes(1024));
        assert_eq!(Growth::Percent(10.0).limit(1000), 100);
        assert!(Growth::parse("-5%").unwrap_err().is_usage());
        assert!(Growth::parse("5 furlongs").unwrap_err().is_usage());
        assert_eq!(
            parse_verdicts(&["docs,dead".into(), "docs".into()]).unwrap(),
            [Verdict::Docs, Verdict::Dead]
        );
        assert!(parse_verdicts(&["runtime".into()]).unwrap_err().is_usage());
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_flags_make_the_rules() {
        let flags = Config {
            roots: strings(&["./result"]),
            store: Some("file:///cache".into()),
            max_closure: Some("900MB".into()),
            max_growth: Some("5%".into()),
            against: Some("/nix/store/x".into()),
            forbid: strings(&["*-dev", "rocm-llvm*"]),
            forbid_verdict: strings(&["dead,docs"]),
            ..Config::default()
        };
        let s = Settings::new(flags, "/nix/store").unwrap();
        assert_eq!(s.roots, ["./result"]);
        assert_eq!(s.store.as_deref(), Some("file:///cache"));
        assert_eq!(s.rules.closure.max_closure, Some(900_000_000));
        assert_eq!(s.rules.closure.max_growth, Some(Growth::Percent(5.0)));
        assert_eq!(s.baseline, Some(BaselineFrom::Root("/nix/store/x".into())));
        assert_eq!(s.rules.closure.forbid.len(), 2);
        assert_eq!(s.rules.forbid_verdict, [Verdict::Dead, Verdict::Docs]);
        assert_eq!(
            s.shown,
            [
                "max-closure 900MB",
                "max-growth 5%",
                "forbid *-dev",
                "forbid rocm-llvm*",
                "forbid-verdict dead,docs"
            ]
        );
    }

    #[test]
    fn settings_refuse_what_cannot_be_checked() {
        let err = |flags: Config| {
            let e = Settings::new(flags, "/nix/store").unwrap_err();
            assert!(e.is_usage(), "{e}");
            e.to_string()
        };
        let root = || Config {
            roots: strings(&["/nix/store/x"]),
            ..Config::default()
        };
        let budget = Config {
            max_closure: Some("1GiB".into()),
            ..Config::default()
        };
        assert!(err(budget.clone()).contains("no ROOT"));
        assert!(err(root()).contains("nothing to check"));
        assert!(
            err(Config {
                against: Some("/nix/store/y".into()),
                against_json: Some("b.json".into()),
                ..root()
            })
            .contains("one baseline")
        );
        assert!(
            err(Config {
                max_growth: Some("10%".into()),
                ..root()
            })
            .contains("needs a baseline")
        );
        // The glob is reported before the verdict, as the flags are read.
        assert!(
            err(Config {
                forbid: strings(&["rocm-[llvm"]),
                forbid_verdict: strings(&["runtime"]),
                ..root()
            })
            .contains("rocm-[llvm")
        );
    }
}
