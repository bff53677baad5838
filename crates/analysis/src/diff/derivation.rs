//! Why two build graphs differ, derivation by derivation: nix-diff's
//! question. Starting from BEFORE's and AFTER's root derivations, each pair
//! of derivations that differ is compared field by field (outputs, system,
//! builder, arguments, input sources, input derivations and the outputs
//! used of each, environment), and the walk follows every changed input
//! down to the pairs whose own attributes differ: the *root causes*.
//!
//! Pure: it takes derivations already parsed (by the command layer through
//! `source::build_graph`) and opens nothing.
//!
//! What "own attributes differ" means. A derivation whose input changed
//! changes too, because its environment and arguments name the input's
//! output paths (and its own outputs' paths follow from its text). So
//! before comparing, every path of BEFORE's side that has a counterpart on
//! AFTER's (the matched inputs' `.drv` and output paths, a source replaced
//! by one of the same name, the derivation's own outputs) is rewritten to
//! that counterpart; what still differs is the derivation's own change. A
//! derivation is a root cause when it has such a change, whether or not
//! an input changed too; one whose differences are all explained by its
//! inputs is listed as changed because of the root causes below it.
//!
//! Inputs are matched by package name (`split_drv_name`: `zlib-1.3` and
//! `zlib-1.3.1` are one input that changed version), like `nvd` and `dix`
//! and unlike nix-diff, which matches whole names and so reports a version
//! bump as one input removed and another added. Several inputs of one
//! package are matched by whole name first, then one to one when a single
//! one is left on each side; the rest are added or removed.
//!
//! Long values (a `buildInputs` list, a build script) are shown as a
//! compact diff ([`diff_value`]): words (or lines, for a value with line
//! breaks) aligned with Myers' algorithm, only the changed part with a few
//! unchanged tokens of context either side.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use serde::{Deserialize, Serialize};

use nix_heft_format::derivation::Derivation;
use nix_heft_format::store_path::{StorePath, package_name};

/// Unchanged words kept either side of a change in a one-line value.
const WORD_CONTEXT: usize = 3;
/// Unchanged lines kept either side of a change in a value with lines.
const LINE_CONTEXT: usize = 1;
/// Changed text longer than this (characters) is shortened in the middle.
const MAX_CHANGED: usize = 160;
/// A value at most this long, on one line, is shown whole on both sides.
const SHORT_VALUE: usize = 80;
/// Lines of a compact diff before the rest is counted instead.
const MAX_DIFF_LINES: usize = 24;

/// Which side of a change a line of a compact diff shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tag {
    /// Unchanged context.
    Same,
    /// BEFORE's text.
    Removed,
    /// AFTER's text.
    Added,
    /// A note that unchanged or further lines were left out.
    Cut,
}

/// One line of a compact diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffLine {
    /// Which side it shows.
    pub tag: Tag,
    /// The text: for a one-line value, the changed words with their
    /// context, `…` where text was left out.
    pub text: String,
    /// In a one-line value's hunk, the characters of `text` that changed
    /// (the rest is context): what a narrow terminal keeps.
    #[serde(skip)]
    pub changed: Option<std::ops::Range<usize>>,
}

/// One attribute of a derivation that differs from its counterpart, after
/// the counterparts' paths are taken as equal (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OwnChange {
    /// An output only AFTER has.
    OutputAdded {
        /// The output's name.
        name: String,
    },
    /// An output only BEFORE has.
    OutputRemoved {
        /// The output's name.
        name: String,
    },
    /// A fixed output whose expected hash (or hash algorithm) changed.
    OutputHash {
        /// The output's name.
        name: String,
        /// `algo:hash` before.
        before: String,
        /// `algo:hash` after.
        after: String,
    },
    /// The system it builds on.
    System {
        /// Before.
        before: String,
        /// After.
        after: String,
    },
    /// The builder program.
    Builder {
        /// Before.
        before: String,
        /// After.
        after: String,
    },
    /// The builder's arguments (compared as lines, one per argument).
    Args {
        /// The compact diff.
        diff: Vec<DiffLine>,
    },
    /// An input source only AFTER has.
    SourceAdded {
        /// The source.
        path: String,
    },
    /// An input source only BEFORE has.
    SourceRemoved {
        /// The source.
        path: String,
    },
    /// An input source replaced by another of the same name: its contents
    /// changed.
    SourceChanged {
        /// BEFORE's.
        before: String,
        /// AFTER's.
        after: String,
    },
    /// An input derivation only AFTER has (no input of its package before).
    InputAdded {
        /// The `.drv`.
        path: String,
        /// The outputs used.
        outputs: Vec<String>,
    },
    /// An input derivation only BEFORE has.
    InputRemoved {
        /// The `.drv`.
        path: String,
        /// The outputs used.
        outputs: Vec<String>,
    },
    /// A matched input of which other outputs are used.
    InputOutputs {
        /// AFTER's `.drv`.
        path: String,
        /// Outputs used before.
        before: Vec<String>,
        /// Outputs used after.
        after: Vec<String>,
    },
    /// An environment variable only AFTER has.
    EnvAdded {
        /// Its name.
        name: String,
        /// Its value.
        value: String,
    },
    /// An environment variable only BEFORE has.
    EnvRemoved {
        /// Its name.
        name: String,
        /// Its value.
        value: String,
    },
    /// An environment variable whose value changed.
    EnvChanged {
        /// Its name.
        name: String,
        /// BEFORE's value, as the `.drv` has it.
        before: String,
        /// AFTER's value.
        after: String,
        /// The compact diff (paths of changed inputs taken as equal).
        diff: Vec<DiffLine>,
    },
}

/// A pair of derivations that differ: BEFORE's and its counterpart in
/// AFTER.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrvChange {
    /// BEFORE's `.drv`.
    pub before: StorePath,
    /// AFTER's `.drv`.
    pub after: StorePath,
    /// Its own changes; non-empty makes it a root cause.
    pub own: Vec<OwnChange>,
    /// Its inputs that changed, as indices into
    /// [`DrvComparison::changes`].
    pub inputs: Vec<usize>,
    /// The root causes below it (through changed inputs, itself not
    /// included), as indices into [`DrvComparison::changes`].
    pub because_of: Vec<usize>,
}

impl DrvChange {
    /// Whether its own attributes differ.
    pub fn is_root_cause(&self) -> bool {
        !self.own.is_empty()
    }
}

/// A root cause and how much of AFTER's build graph it drags along.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RootCause {
    /// The change, an index into [`DrvComparison::changes`].
    pub change: usize,
    /// How many derivations of AFTER's build graph depend on it (and so
    /// changed because of it).
    pub dependents: usize,
    /// The outputs' NAR sizes of it and those dependents, where known.
    pub bytes: u64,
    /// How many of it and its dependents have no output of known size.
    pub unknown_size: usize,
}

/// The whole comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DrvComparison {
    /// Every pair that differs, from the roots down (breadth first).
    pub changes: Vec<DrvChange>,
    /// The root causes, most dependents first (then by path).
    pub root_causes: Vec<RootCause>,
    /// Derivations the walk needed that were not given.
    pub unread: Vec<StorePath>,
}

/// Compares the derivations of `before_roots` with those of `after_roots`
/// (paired by package name, or one with one), following changed inputs.
/// `drvs` holds the parsed `.drv` files of both build graphs (at least of
/// every pair that differs and of AFTER's graph, for the dependents'
/// count); a derivation the walk needs that is missing is listed in
/// [`DrvComparison::unread`]. `output_bytes` gives a derivation's outputs'
/// NAR sizes summed, for those with an output of known size.
pub fn compare(
    before_roots: &[StorePath],
    after_roots: &[StorePath],
    drvs: &HashMap<StorePath, Derivation>,
    output_bytes: &HashMap<StorePath, u64>,
) -> DrvComparison {
    let mut out = DrvComparison::default();
    let mut index: HashMap<(StorePath, StorePath), usize> = HashMap::new();
    let mut queue: VecDeque<usize> = VecDeque::new();
    let mut unread = BTreeSet::new();
    // The index of the pair (b, a), queued for comparison when new.
    let mut pair = |b: &StorePath,
                    a: &StorePath,
                    out: &mut DrvComparison,
                    queue: &mut VecDeque<usize>|
     -> usize {
        let key = (b.clone(), a.clone());
        if let Some(&i) = index.get(&key) {
            return i;
        }
        let i = out.changes.len();
        out.changes.push(DrvChange {
            before: b.clone(),
            after: a.clone(),
            own: Vec::new(),
            inputs: Vec::new(),
            because_of: Vec::new(),
        });
        index.insert(key, i);
        queue.push_back(i);
        i
    };
    let (bs, as_): (Vec<&StorePath>, Vec<&StorePath>) =
        (before_roots.iter().collect(), after_roots.iter().collect());
    // Roots given one on each side are the comparison asked for, whatever
    // their names.
    let pairs = match (bs.as_slice(), as_.as_slice()) {
        ([b], [a]) => vec![(*b, *a)],
        _ => match_by_package(&bs, &as_).0,
    };
    for (b, a) in pairs {
        if b != a {
            pair(b, a, &mut out, &mut queue);
        }
    }
    while let Some(i) = queue.pop_front() {
        let (b, a) = (out.changes[i].before.clone(), out.changes[i].after.clone());
        let (Some(db), Some(da)) = (drvs.get(&b), drvs.get(&a)) else {
            for p in [&b, &a] {
                if !drvs.contains_key(p) {
                    unread.insert(p.clone());
                }
            }
            continue;
        };
        let cmp = compare_pair(db, da, drvs);
        let inputs = cmp
            .inputs
            .iter()
            .map(|(ib, ia)| pair(ib, ia, &mut out, &mut queue))
            .collect();
        out.changes[i].own = cmp.own;
        out.changes[i].inputs = inputs;
    }
    because_of(&mut out.changes);
    out.root_causes = rank(&out.changes, after_roots, drvs, output_bytes);
    out.unread = unread.into_iter().collect();
    out
}

/// What comparing one pair finds: its own changes and its matched inputs
/// that differ.
struct PairCmp<'d> {
    own: Vec<OwnChange>,
    inputs: Vec<(&'d StorePath, &'d StorePath)>,
}

/// The package an input is matched by: the name without `.drv` and
/// version.
fn package_key(p: &StorePath) -> &str {
    let name = p.name();
    package_name(name.strip_suffix(".drv").unwrap_or(name))
}

/// Matches two lists of paths: those on both sides dropped, then per
/// package, equal names first, then one with one when one is left on each
/// side. Returns the pairs (BEFORE, AFTER), the rest of BEFORE and the
/// rest of AFTER.
#[allow(clippy::type_complexity)]
fn match_by_package<'p>(
    before: &[&'p StorePath],
    after: &[&'p StorePath],
) -> (
    Vec<(&'p StorePath, &'p StorePath)>,
    Vec<&'p StorePath>,
    Vec<&'p StorePath>,
) {
    let in_after: HashSet<&StorePath> = after.iter().copied().collect();
    let in_before: HashSet<&StorePath> = before.iter().copied().collect();
    let mut by_key: BTreeMap<&str, (Vec<&StorePath>, Vec<&StorePath>)> = BTreeMap::new();
    for &b in before.iter().filter(|b| !in_after.contains(*b)) {
        by_key.entry(package_key(b)).or_default().0.push(b);
    }
    for &a in after.iter().filter(|a| !in_before.contains(*a)) {
        by_key.entry(package_key(a)).or_default().1.push(a);
    }
    let (mut pairs, mut gone, mut new) = (Vec::new(), Vec::new(), Vec::new());
    for (_, (mut bs, mut as_)) in by_key {
        bs.sort();
        as_.sort();
        let mut rest_b = Vec::new();
        for b in bs {
            match as_.iter().position(|a| a.name() == b.name()) {
                Some(j) => pairs.push((b, as_.remove(j))),
                None => rest_b.push(b),
            }
        }
        if rest_b.len() == 1 && as_.len() == 1 {
            pairs.push((rest_b[0], as_[0]));
        } else {
            gone.extend(rest_b);
            new.extend(as_);
        }
    }
    (pairs, gone, new)
}

/// Compares one pair of derivations (see the module docs).
fn compare_pair<'d>(
    b: &'d Derivation,
    a: &'d Derivation,
    drvs: &HashMap<StorePath, Derivation>,
) -> PairCmp<'d> {
    let mut own = Vec::new();
    // BEFORE's paths that have a counterpart in AFTER.
    let mut subst: Vec<(String, String)> = Vec::new();

    for ob in &b.outputs {
        match a.output(&ob.name) {
            None => own.push(OwnChange::OutputRemoved {
                name: ob.name.clone(),
            }),
            Some(oa) => {
                if let (Some(pb), Some(pa)) = (&ob.path, &oa.path) {
                    subst.push((pb.to_string(), pa.to_string()));
                }
                if (ob.hash_algo.as_str(), ob.hash.as_str()) != (&oa.hash_algo, &oa.hash) {
                    own.push(OwnChange::OutputHash {
                        name: ob.name.clone(),
                        before: format!("{}:{}", ob.hash_algo, ob.hash),
                        after: format!("{}:{}", oa.hash_algo, oa.hash),
                    });
                }
            }
        }
    }
    for oa in &a.outputs {
        if b.output(&oa.name).is_none() {
            own.push(OwnChange::OutputAdded {
                name: oa.name.clone(),
            });
        }
    }

    // Sources: matched by whole name (a source's name has no version to
    // speak of; one with another name is another source).
    let srcs_b: Vec<&StorePath> = b.input_srcs.iter().collect();
    let srcs_a: Vec<&StorePath> = a.input_srcs.iter().collect();
    let in_a: HashSet<&StorePath> = srcs_a.iter().copied().collect();
    let in_b: HashSet<&StorePath> = srcs_b.iter().copied().collect();
    let mut new_by_name: BTreeMap<&str, Vec<&StorePath>> = BTreeMap::new();
    for &s in srcs_a.iter().filter(|s| !in_b.contains(*s)) {
        new_by_name.entry(s.name()).or_default().push(s);
    }
    for &s in srcs_b.iter().filter(|s| !in_a.contains(*s)) {
        match new_by_name.get_mut(s.name()).and_then(|v| v.pop()) {
            Some(n) => {
                subst.push((s.to_string(), n.to_string()));
                own.push(OwnChange::SourceChanged {
                    before: s.to_string(),
                    after: n.to_string(),
                });
            }
            None => own.push(OwnChange::SourceRemoved {
                path: s.to_string(),
            }),
        }
    }
    for s in new_by_name.into_values().flatten() {
        own.push(OwnChange::SourceAdded {
            path: s.to_string(),
        });
    }

    // Input derivations.
    let outs_of = |d: &'d Derivation, p: &StorePath| -> &'d [String] {
        d.input_drvs
            .iter()
            .find(|(q, _)| q == p)
            .map_or(&[][..], |(_, o)| o.as_slice())
    };
    let drvs_b: Vec<&StorePath> = b.input_drvs.iter().map(|(p, _)| p).collect();
    let drvs_a: Vec<&StorePath> = a.input_drvs.iter().map(|(p, _)| p).collect();
    let (pairs, gone, new) = match_by_package(&drvs_b, &drvs_a);
    // The same input used through other outputs.
    for (p, outs) in &a.input_drvs {
        if drvs_b.contains(&p) {
            let before = outs_of(b, p);
            if sorted(before) != sorted(outs) {
                own.push(OwnChange::InputOutputs {
                    path: p.to_string(),
                    before: before.to_vec(),
                    after: outs.clone(),
                });
            }
        }
    }
    let mut inputs = Vec::new();
    for &(pb, pa) in &pairs {
        subst.push((pb.to_string(), pa.to_string()));
        if let (Some(ib), Some(ia)) = (drvs.get(pb), drvs.get(pa)) {
            for o in &ib.outputs {
                if let (Some(xb), Some(xa)) =
                    (&o.path, ia.output(&o.name).and_then(|x| x.path.as_ref()))
                {
                    subst.push((xb.to_string(), xa.to_string()));
                }
            }
        }
        let (ob, oa) = (outs_of(b, pb), outs_of(a, pa));
        if sorted(ob) != sorted(oa) {
            own.push(OwnChange::InputOutputs {
                path: pa.to_string(),
                before: ob.to_vec(),
                after: oa.to_vec(),
            });
        }
        inputs.push((pb, pa));
    }
    for p in gone {
        own.push(OwnChange::InputRemoved {
            path: p.to_string(),
            outputs: outs_of(b, p).to_vec(),
        });
    }
    for p in new {
        own.push(OwnChange::InputAdded {
            path: p.to_string(),
            outputs: outs_of(a, p).to_vec(),
        });
    }

    // Everything else, with BEFORE's paths rewritten to their
    // counterparts.
    let rw = Rewriter::new(subst);
    if rw.apply(&b.platform) != a.platform {
        own.push(OwnChange::System {
            before: b.platform.clone(),
            after: a.platform.clone(),
        });
    }
    if rw.apply(&b.builder) != a.builder {
        own.push(OwnChange::Builder {
            before: b.builder.clone(),
            after: a.builder.clone(),
        });
    }
    let args_b: Vec<String> = b.args.iter().map(|s| rw.apply(s)).collect();
    if args_b != a.args {
        // Line by line, an argument's lines each their own (a `-c`
        // script is one argument of many lines).
        let lines = |v: &[String]| -> Vec<String> {
            v.iter()
                .flat_map(|s| s.split('\n'))
                .map(str::to_string)
                .collect()
        };
        own.push(OwnChange::Args {
            diff: diff_lines(&lines(&args_b), &lines(&a.args)),
        });
    }
    let env_a: BTreeMap<&str, &str> = a
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let env_b: BTreeMap<&str, &str> = b
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    for (&k, &vb) in &env_b {
        match env_a.get(k) {
            None => own.push(OwnChange::EnvRemoved {
                name: k.to_string(),
                value: vb.to_string(),
            }),
            Some(&va) => {
                let nb = rw.apply(vb);
                if nb != va {
                    own.push(OwnChange::EnvChanged {
                        name: k.to_string(),
                        before: vb.to_string(),
                        after: va.to_string(),
                        diff: diff_value(&nb, va),
                    });
                }
            }
        }
    }
    for (&k, &va) in &env_a {
        if !env_b.contains_key(k) {
            own.push(OwnChange::EnvAdded {
                name: k.to_string(),
                value: va.to_string(),
            });
        }
    }
    PairCmp { own, inputs }
}

fn sorted(v: &[String]) -> Vec<&str> {
    let mut s: Vec<&str> = v.iter().map(String::as_str).collect();
    s.sort_unstable();
    s
}

/// Rewrites BEFORE's paths to their AFTER counterparts in one pass over a
/// string (Aho-Corasick, longest match first, so a path is never cut by a
/// shorter one that is its prefix).
struct Rewriter {
    ac: Option<aho_corasick::AhoCorasick>,
    to: Vec<String>,
}

impl Rewriter {
    fn new(subst: Vec<(String, String)>) -> Rewriter {
        let subst: Vec<(String, String)> = subst.into_iter().filter(|(f, t)| f != t).collect();
        let ac = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .build(subst.iter().map(|(f, _)| f.as_str()))
            .ok()
            .filter(|_| !subst.is_empty());
        Rewriter {
            ac,
            to: subst.into_iter().map(|(_, t)| t).collect(),
        }
    }

    fn apply(&self, s: &str) -> String {
        match &self.ac {
            Some(ac) => ac.replace_all(s, &self.to),
            None => s.to_string(),
        }
    }
}

/// Fills each change's `because_of`: the root causes reachable through its
/// changed inputs. Children are done before parents (an iterative
/// post-order; the pair graph is acyclic as build graphs are).
fn because_of(changes: &mut [DrvChange]) {
    let n = changes.len();
    let mut done = vec![false; n];
    let mut below: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    for start in 0..n {
        if done[start] {
            continue;
        }
        let mut stack = vec![(start, false)];
        while let Some((v, expanded)) = stack.pop() {
            if done[v] {
                continue;
            }
            if !expanded {
                stack.push((v, true));
                for &c in &changes[v].inputs {
                    if !done[c] {
                        stack.push((c, false));
                    }
                }
                continue;
            }
            let mut set = BTreeSet::new();
            for &c in &changes[v].inputs {
                if changes[c].is_root_cause() {
                    set.insert(c);
                }
                set.extend(below[c].iter().copied());
            }
            below[v] = set;
            done[v] = true;
        }
    }
    for (c, b) in changes.iter_mut().zip(below) {
        c.because_of = b.into_iter().collect();
    }
}

/// The root causes, each with the number of derivations of AFTER's build
/// graph (walked from `after_roots` through `drvs`) that depend on it and
/// the outputs' sizes of it and them where known; the most dependents
/// first, then the most bytes.
fn rank(
    changes: &[DrvChange],
    after_roots: &[StorePath],
    drvs: &HashMap<StorePath, Derivation>,
    output_bytes: &HashMap<StorePath, u64>,
) -> Vec<RootCause> {
    // AFTER's graph, reversed: each derivation's dependents.
    let mut dependents: HashMap<&StorePath, Vec<&StorePath>> = HashMap::new();
    let mut seen: HashSet<&StorePath> = after_roots.iter().collect();
    let mut queue: VecDeque<&StorePath> = after_roots.iter().collect();
    while let Some(p) = queue.pop_front() {
        let Some(d) = drvs.get(p) else { continue };
        for (i, _) in &d.input_drvs {
            dependents.entry(i).or_default().push(p);
            if seen.insert(i) {
                queue.push_back(i);
            }
        }
    }
    let mut out: Vec<RootCause> = changes
        .iter()
        .enumerate()
        .filter(|(_, c)| c.is_root_cause())
        .map(|(i, c)| {
            let mut seen: HashSet<&StorePath> = HashSet::new();
            let mut stack = vec![&c.after];
            while let Some(p) = stack.pop() {
                for &r in dependents.get(p).map_or(&[][..], Vec::as_slice) {
                    if seen.insert(r) {
                        stack.push(r);
                    }
                }
            }
            let dependents = seen.len();
            seen.insert(&c.after);
            let known: Vec<u64> = seen
                .iter()
                .filter_map(|p| output_bytes.get(*p).copied())
                .collect();
            RootCause {
                change: i,
                dependents,
                bytes: known.iter().fold(0, |a, &b| a.saturating_add(b)),
                unknown_size: seen.len() - known.len(),
            }
        })
        .collect();
    out.sort_by(|x, y| {
        y.dependents
            .cmp(&x.dependents)
            .then_with(|| y.bytes.cmp(&x.bytes))
            .then_with(|| changes[x.change].after.cmp(&changes[y.change].after))
    });
    out
}

/// A compact diff of two values: both whole when short and on one line;
/// else by lines when either has a line break, by words otherwise, only
/// the changed parts with a little context.
pub fn diff_value(before: &str, after: &str) -> Vec<DiffLine> {
    let one_line = !before.contains('\n') && !after.contains('\n');
    if one_line && before.chars().count() <= SHORT_VALUE && after.chars().count() <= SHORT_VALUE {
        return vec![
            DiffLine {
                tag: Tag::Removed,
                text: before.to_string(),
                changed: None,
            },
            DiffLine {
                tag: Tag::Added,
                text: after.to_string(),
                changed: None,
            },
        ];
    }
    if one_line {
        diff_words(before, after)
    } else {
        let lines = |s: &str| s.split('\n').map(str::to_string).collect::<Vec<_>>();
        diff_lines(&lines(before), &lines(after))
    }
}

/// Words and the separators between them (whitespace, `:`, `;`, `,`),
/// each its own token, so that a `PATH`-like list diffs by entry.
fn tokens(s: &str) -> Vec<&str> {
    let is_sep = is_separator;
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if is_sep(c) {
            if start < i {
                out.push(&s[start..i]);
            }
            out.push(&s[i..i + c.len_utf8()]);
            start = i + c.len_utf8();
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// What separates words in a one-line value.
fn is_separator(c: char) -> bool {
    c.is_whitespace() || matches!(c, ':' | ';' | ',')
}

/// Hunks of a token diff: ranges of changed tokens in both (old range,
/// new range), with runs of unchanged tokens between them shorter than
/// `2 * context` merged in.
fn hunks<T: std::hash::Hash + Ord>(
    old: &[T],
    new: &[T],
    context: usize,
) -> Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    let ops = similar::capture_diff_slices_deadline(
        similar::Algorithm::Myers,
        old,
        new,
        Some(std::time::Instant::now() + std::time::Duration::from_secs(1)),
    );
    let mut out: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> = Vec::new();
    for op in ops {
        if matches!(op, similar::DiffOp::Equal { .. }) {
            continue;
        }
        let (o, n) = (op.old_range(), op.new_range());
        match out.last_mut() {
            Some((lo, ln)) if o.start.saturating_sub(lo.end) < 2 * context.max(1) => {
                lo.end = o.end;
                ln.end = n.end;
            }
            _ => out.push((o, n)),
        }
    }
    out
}

/// Shortens changed text longer than [`MAX_CHANGED`] in the middle.
fn clip_middle(s: &str) -> String {
    let n = s.chars().count();
    if n <= MAX_CHANGED {
        return s.to_string();
    }
    let half = MAX_CHANGED / 2;
    let head: String = s.chars().take(half).collect();
    let tail: String = s.chars().skip(n - half).collect();
    format!("{head}…({} characters)…{tail}", n - 2 * half)
}

/// Word diff of one-line values: for each hunk, BEFORE's words and
/// AFTER's with [`WORD_CONTEXT`] unchanged words either side.
fn diff_words(before: &str, after: &str) -> Vec<DiffLine> {
    cap(word_hunks(before, after))
}

/// [`diff_words`] without the cap on lines.
fn word_hunks(before: &str, after: &str) -> Vec<DiffLine> {
    let (old, new) = (tokens(before), tokens(after));
    let is_word = |t: &str| t.chars().next().is_some_and(|c| !is_separator(c));
    let mut out = Vec::new();
    // Hunks closer than twice the context share it; separators count as
    // tokens, so twice as many tokens as words.
    for (o, n) in hunks(&old, &new, 2 * WORD_CONTEXT) {
        // Back to the WORD_CONTEXT-th word before the change, forward to
        // the one after it, separators between them included.
        let mut pre_start = o.start;
        let mut words = 0;
        while pre_start > 0 && words < WORD_CONTEXT {
            pre_start -= 1;
            words += is_word(old[pre_start]) as usize;
        }
        let mut post_end = o.end;
        let mut words = 0;
        while post_end < old.len() && words < WORD_CONTEXT {
            words += is_word(old[post_end]) as usize;
            post_end += 1;
        }
        let pre = old[pre_start..o.start].concat();
        let post = old[o.end..post_end].concat();
        let lead = if pre_start > 0 { "…" } else { "" };
        let trail = if post_end < old.len() { "…" } else { "" };
        let line = |tag, changed: String| {
            let at = lead.chars().count() + pre.chars().count();
            DiffLine {
                tag,
                changed: Some(at..at + changed.chars().count()),
                text: format!("{lead}{pre}{changed}{post}{trail}"),
            }
        };
        out.push(line(Tag::Removed, clip_middle(&old[o.clone()].concat())));
        out.push(line(Tag::Added, clip_middle(&new[n].concat())));
    }
    out
}

/// Line diff: each hunk's unchanged lines of context, BEFORE's lines and
/// AFTER's, a note where unchanged lines are left out.
fn diff_lines(before: &[String], after: &[String]) -> Vec<DiffLine> {
    let mut out = Vec::new();
    let mut shown_to = 0;
    for (o, n) in hunks(before, after, LINE_CONTEXT) {
        let pre = o.start.saturating_sub(LINE_CONTEXT).max(shown_to);
        if pre > shown_to {
            out.push(DiffLine {
                tag: Tag::Cut,
                text: format!("… {} unchanged line(s)", pre - shown_to),
                changed: None,
            });
        }
        let line = |tag, s: &String| DiffLine {
            tag,
            text: clip_middle(s),
            changed: None,
        };
        out.extend(before[pre..o.start].iter().map(|s| line(Tag::Same, s)));
        if o.len() == n.len() {
            // Line for line: a long line's changed words, not the line
            // cut in the middle where the change may be.
            for (b, a) in before[o.clone()].iter().zip(&after[n]) {
                if b == a {
                    out.push(line(Tag::Same, b));
                } else if b.chars().count() > SHORT_VALUE || a.chars().count() > SHORT_VALUE {
                    out.extend(word_hunks(b, a));
                } else {
                    out.extend([line(Tag::Removed, b), line(Tag::Added, a)]);
                }
            }
        } else {
            out.extend(before[o.clone()].iter().map(|s| line(Tag::Removed, s)));
            out.extend(after[n].iter().map(|s| line(Tag::Added, s)));
        }
        let post = (o.end + LINE_CONTEXT).min(before.len());
        out.extend(before[o.end..post].iter().map(|s| line(Tag::Same, s)));
        shown_to = post;
    }
    if shown_to < before.len() && !out.is_empty() {
        out.push(DiffLine {
            tag: Tag::Cut,
            text: format!("… {} unchanged line(s)", before.len() - shown_to),
            changed: None,
        });
    }
    cap(out)
}

/// At most [`MAX_DIFF_LINES`] lines, the rest counted.
fn cap(mut lines: Vec<DiffLine>) -> Vec<DiffLine> {
    if lines.len() > MAX_DIFF_LINES {
        let rest = lines.len() - (MAX_DIFF_LINES - 1);
        lines.truncate(MAX_DIFF_LINES - 1);
        lines.push(DiffLine {
            tag: Tag::Cut,
            text: format!("… {rest} more line(s) of difference"),
            changed: None,
        });
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix_heft_format::derivation::DrvOutput;

    fn sp(hash: char, name: &str) -> StorePath {
        StorePath::parse(
            "/nix/store",
            &format!("/nix/store/{}-{name}", hash.to_string().repeat(32)),
        )
        .unwrap()
    }

    /// A derivation named `name` whose `out` is `out`, using `deps`'
    /// outputs (named in `env.deps`, as a builder's inputs are).
    fn drv(
        out: &StorePath,
        deps: &[(&StorePath, &StorePath)],
        extra: &[(&str, &str)],
    ) -> Derivation {
        let mut env = vec![
            ("out".to_string(), out.to_string()),
            (
                "deps".to_string(),
                deps.iter()
                    .map(|(_, o)| o.to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
        ];
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Derivation {
            outputs: vec![DrvOutput {
                name: "out".into(),
                path: Some(out.clone()),
                hash_algo: String::new(),
                hash: String::new(),
            }],
            input_drvs: deps
                .iter()
                .map(|(d, _)| ((*d).clone(), vec!["out".to_string()]))
                .collect(),
            input_srcs: Vec::new(),
            platform: "x86_64-linux".into(),
            builder: "/bin/sh".into(),
            args: vec![],
            env,
        }
    }

    #[test]
    fn a_deep_change_is_the_one_root_cause() {
        // leaf ← mid ← top, leaf's `v` changed: mid and top change only
        // because of it.
        let mut m = HashMap::new();
        let (l1, l1o, l2, l2o) = (
            sp('a', "leaf.drv"),
            sp('b', "leaf"),
            sp('c', "leaf.drv"),
            sp('d', "leaf"),
        );
        let (m1, m1o, m2, m2o) = (
            sp('f', "mid.drv"),
            sp('g', "mid"),
            sp('h', "mid.drv"),
            sp('i', "mid"),
        );
        let (t1, t1o, t2, t2o) = (
            sp('j', "top.drv"),
            sp('k', "top"),
            sp('l', "top.drv"),
            sp('m', "top"),
        );
        m.insert(l1.clone(), drv(&l1o, &[], &[("v", "1")]));
        m.insert(l2.clone(), drv(&l2o, &[], &[("v", "2")]));
        m.insert(m1.clone(), drv(&m1o, &[(&l1, &l1o)], &[]));
        m.insert(m2.clone(), drv(&m2o, &[(&l2, &l2o)], &[]));
        m.insert(t1.clone(), drv(&t1o, &[(&m1, &m1o)], &[]));
        m.insert(t2.clone(), drv(&t2o, &[(&m2, &m2o)], &[]));
        let c = compare(&[t1], &[t2], &m, &HashMap::new());
        assert_eq!(c.changes.len(), 3);
        assert_eq!(c.root_causes.len(), 1);
        let rc = &c.changes[c.root_causes[0].change];
        assert_eq!(rc.after, l2);
        assert_eq!(c.root_causes[0].dependents, 2);
        assert!(matches!(&rc.own[..], [OwnChange::EnvChanged { name, .. }] if name == "v"));
        for ch in &c.changes {
            if ch.after != l2 {
                assert!(ch.own.is_empty(), "{ch:?}");
                assert_eq!(ch.because_of, vec![c.root_causes[0].change]);
            }
        }
    }

    #[test]
    fn added_inputs_and_a_renamed_version() {
        let (z1, z1o, z2, z2o) = (
            sp('a', "zlib-1.2.drv"),
            sp('b', "zlib-1.2"),
            sp('c', "zlib-1.3.drv"),
            sp('d', "zlib-1.3"),
        );
        let (x, xo) = (sp('n', "extra.drv"), sp('p', "extra"));
        let (t1, t1o, t2, t2o) = (
            sp('j', "top.drv"),
            sp('k', "top"),
            sp('l', "top.drv"),
            sp('m', "top"),
        );
        let mut m = HashMap::new();
        m.insert(z1.clone(), drv(&z1o, &[], &[("version", "1.2")]));
        m.insert(z2.clone(), drv(&z2o, &[], &[("version", "1.3")]));
        m.insert(x.clone(), drv(&xo, &[], &[]));
        m.insert(t1.clone(), drv(&t1o, &[(&z1, &z1o)], &[]));
        m.insert(t2.clone(), drv(&t2o, &[(&z2, &z2o), (&x, &xo)], &[]));
        let c = compare(&[t1], std::slice::from_ref(&t2), &m, &HashMap::new());
        // zlib's version bump is matched (one input, not an add and a
        // remove); top adds `extra` (and its env names it): both are root
        // causes.
        assert_eq!(c.root_causes.len(), 2, "{c:?}");
        let top = c.changes.iter().find(|ch| ch.after == t2).unwrap();
        assert!(
            top.own
                .iter()
                .any(|o| matches!(o, OwnChange::InputAdded { path, .. } if *path == x.to_string()))
        );
        assert_eq!(top.inputs.len(), 1);
        assert_eq!(c.changes[top.inputs[0]].after, z2);
    }

    #[test]
    fn long_values_diff_compactly() {
        let words: Vec<String> = (0..500).map(|i| format!("word{i}")).collect();
        let before = words.join(" ");
        let mut w = words.clone();
        w[250] = "CHANGED".into();
        let after = w.join(" ");
        let d = diff_value(&before, &after);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(
            d[0].text,
            "…word247 word248 word249 word250 word251 word252 word253…"
        );
        assert_eq!(
            d[1].text,
            "…word247 word248 word249 CHANGED word251 word252 word253…"
        );
        // By lines when there are lines.
        let before = words.join("\n");
        let after = w.join("\n");
        let d = diff_value(&before, &after);
        let shown: Vec<(Tag, &str)> = d.iter().map(|l| (l.tag, l.text.as_str())).collect();
        assert_eq!(
            shown,
            [
                (Tag::Cut, "… 249 unchanged line(s)"),
                (Tag::Same, "word249"),
                (Tag::Removed, "word250"),
                (Tag::Added, "CHANGED"),
                (Tag::Same, "word251"),
                (Tag::Cut, "… 248 unchanged line(s)"),
            ]
        );
        // A long line among lines: its changed words, line for line.
        let long: Vec<String> = (0..40).map(|i| format!("-L/lib{i}")).collect();
        let mut long2 = long.clone();
        long2[20] = "-L/new".into();
        let d = diff_value(
            &format!("a\n{}\nb", long.join(" ")),
            &format!("a\n{}\nb", long2.join(" ")),
        );
        let shown: Vec<(Tag, &str)> = d.iter().map(|l| (l.tag, l.text.as_str())).collect();
        assert_eq!(
            shown,
            [
                (Tag::Same, "a"),
                (
                    Tag::Removed,
                    "…-L/lib17 -L/lib18 -L/lib19 -L/lib20 -L/lib21 -L/lib22 -L/lib23…"
                ),
                (
                    Tag::Added,
                    "…-L/lib17 -L/lib18 -L/lib19 -L/new -L/lib21 -L/lib22 -L/lib23…"
                ),
                (Tag::Same, "b"),
            ]
        );
        // Short values whole.
        let d = diff_value("a b", "a c");
        assert_eq!((d[0].text.as_str(), d[1].text.as_str()), ("a b", "a c"));
        // A long run of change is shortened in the middle.
        let d = diff_value(&"x".repeat(1000), &"y".repeat(1000));
        assert!(d[0].text.chars().count() < 200, "{d:?}");
    }
}
