//! The section `diff --derivation` adds to the closure diff: why the two
//! build graphs differ, as [`nix_heft_analysis::diff::derivation`] found it. The root
//! causes first, most dependents first, each with its own changes
//! (environment, sources, inputs, builder, arguments, system, outputs;
//! long values as a compact diff), then every derivation that changed only
//! because of them. Text, markdown, one GitHub notice, and JSON
//! (`root_causes`, `derivation_changes`) in the `diff` document.

use serde::{Deserialize, Serialize};

use super::review;
use super::{Names, TextOptions, plural};
use nix_heft_analysis::diff::derivation::{DiffLine, DrvComparison, OwnChange, Tag};

/// A root cause: a derivation whose own attributes differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootCauseEntry {
    /// BEFORE's `.drv`.
    pub before: String,
    /// AFTER's `.drv`.
    pub after: String,
    /// How many derivations of AFTER's build graph depend on it, and so
    /// changed because of it: the order of the list (then `bytes`).
    pub dependents: usize,
    /// The outputs' NAR sizes of it and its dependents, where known (in a
    /// store this run read: outputs already built or in the cache).
    pub bytes: u64,
    /// How many of it and its dependents have no output of known size.
    pub unknown_size: usize,
    /// What differs in it.
    pub changes: Vec<OwnChange>,
}

/// A changed input of a derivation: BEFORE's `.drv` and AFTER's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrvPair {
    /// BEFORE's `.drv`.
    pub before: String,
    /// AFTER's `.drv`.
    pub after: String,
}

/// A derivation that differs between the two graphs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrvChangeEntry {
    /// BEFORE's `.drv`.
    pub before: String,
    /// AFTER's `.drv`.
    pub after: String,
    /// Whether its own attributes differ (it is in `root_causes`).
    pub root_cause: bool,
    /// Its own changes (empty when it changed only because of its inputs).
    pub changes: Vec<OwnChange>,
    /// Its input derivations that differ.
    pub changed_inputs: Vec<DrvPair>,
    /// The root causes below it (AFTER's `.drv` of each), reached through
    /// `changed_inputs`.
    pub because_of: Vec<String>,
}

/// Why the derivations differ; flattened into the `diff` JSON document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrvDiffReport {
    /// The root causes, most dependents first.
    pub root_causes: Vec<RootCauseEntry>,
    /// Every derivation that differs, from the roots down.
    pub derivation_changes: Vec<DrvChangeEntry>,
    /// Derivations the comparison needed but could not read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread_derivations: Vec<String>,
}

/// Root causes named in the GitHub notice.
const NOTICE_CAUSES: usize = 5;

impl DrvDiffReport {
    /// The report of a comparison.
    pub fn new(c: &DrvComparison) -> DrvDiffReport {
        let s = |p: &nix_heft_format::store_path::StorePath| p.to_string();
        DrvDiffReport {
            root_causes: c
                .root_causes
                .iter()
                .map(|r| {
                    let ch = &c.changes[r.change];
                    RootCauseEntry {
                        before: s(&ch.before),
                        after: s(&ch.after),
                        dependents: r.dependents,
                        bytes: r.bytes,
                        unknown_size: r.unknown_size,
                        changes: ch.own.clone(),
                    }
                })
                .collect(),
            derivation_changes: c
                .changes
                .iter()
                .map(|ch| DrvChangeEntry {
                    before: s(&ch.before),
                    after: s(&ch.after),
                    root_cause: ch.is_root_cause(),
                    changes: ch.own.clone(),
                    changed_inputs: ch
                        .inputs
                        .iter()
                        .map(|&i| DrvPair {
                            before: s(&c.changes[i].before),
                            after: s(&c.changes[i].after),
                        })
                        .collect(),
                    because_of: ch
                        .because_of
                        .iter()
                        .map(|&i| s(&c.changes[i].after))
                        .collect(),
                })
                .collect(),
            unread_derivations: c.unread.iter().map(s).collect(),
        }
    }

    /// Display names of every path shown (a hash where two share a name,
    /// as BEFORE's and AFTER's versions of a derivation do).
    fn names(&self) -> Names {
        let mut all: Vec<&str> = Vec::new();
        for c in &self.derivation_changes {
            all.extend([c.before.as_str(), c.after.as_str()]);
            for o in &c.changes {
                all.extend(change_paths(o));
            }
        }
        Names::new(all)
    }

    /// The derivations that changed only because of their inputs.
    fn followers(&self) -> impl Iterator<Item = &DrvChangeEntry> {
        self.derivation_changes.iter().filter(|c| !c.root_cause)
    }

    /// `1 root cause; 3 derivations changed only because of it`.
    fn summary(&self) -> String {
        let n = self.root_causes.len();
        let f = self.followers().count();
        if self.derivation_changes.is_empty() {
            return "the derivations are identical".into();
        }
        format!(
            "{}; {} changed only because of {}",
            plural(n, "root cause"),
            plural(f, "derivation"),
            if n == 1 { "it" } else { "them" }
        )
    }
}

/// The store paths an own change names.
fn change_paths(o: &OwnChange) -> Vec<&str> {
    match o {
        OwnChange::SourceAdded { path }
        | OwnChange::SourceRemoved { path }
        | OwnChange::InputAdded { path, .. }
        | OwnChange::InputRemoved { path, .. }
        | OwnChange::InputOutputs { path, .. } => vec![path.as_str()],
        OwnChange::SourceChanged { before, after } => vec![before.as_str(), after.as_str()],
        _ => Vec::new(),
    }
}

/// `no derivation of AFTER depends on it`, `3 derivations of AFTER
/// depend on it`.
fn dependents(n: usize) -> String {
    match n {
        0 => "no derivation of AFTER depends on it".into(),
        1 => "1 derivation of AFTER depends on it".into(),
        n => format!("{n} derivations of AFTER depend on it"),
    }
}

/// How much a root cause drags along: its dependents, and with them
/// the outputs' sizes where any is known (`; 4.1 MiB of outputs with it,
/// 2 of unknown size`).
fn weight(r: &RootCauseEntry) -> String {
    let mut s = dependents(r.dependents);
    if r.bytes > 0 {
        s.push_str(&format!(
            "; {} of outputs with it",
            nix_heft_types::units::iec(r.bytes)
        ));
        if r.unknown_size > 0 {
            s.push_str(&format!(", {} of unknown size", r.unknown_size));
        }
    }
    s
}

/// A value shown inline: short and on one line.
fn inline(v: &str) -> bool {
    !v.contains('\n') && v.chars().count() <= 60
}

/// One own change in words (`name` shows a store path, `code` a value),
/// and the lines of its compact diff, if any.
fn describe(
    o: &OwnChange,
    name: &dyn Fn(&str) -> String,
    code: fn(&str) -> String,
    key: fn(&str) -> String,
) -> (String, Vec<DiffLine>) {
    let outs = |v: &[String]| {
        if v.is_empty() {
            "no output".to_string()
        } else {
            v.join(", ")
        }
    };
    match o {
        OwnChange::OutputAdded { name: n } => (format!("output {} added", key(n)), vec![]),
        OwnChange::OutputRemoved { name: n } => (format!("output {} removed", key(n)), vec![]),
        OwnChange::OutputHash {
            name: n,
            before,
            after,
        } => (
            format!(
                "fixed output {}'s hash: {} → {}",
                key(n),
                code(before),
                code(after)
            ),
            vec![],
        ),
        OwnChange::System { before, after } => (
            format!("system: {} → {}", code(before), code(after)),
            vec![],
        ),
        OwnChange::Builder { before, after } => (
            format!("builder: {} → {}", code(before), code(after)),
            vec![],
        ),
        OwnChange::Args { diff } => ("builder arguments:".into(), diff.clone()),
        OwnChange::SourceAdded { path } => (format!("input source added: {}", name(path)), vec![]),
        OwnChange::SourceRemoved { path } => {
            (format!("input source removed: {}", name(path)), vec![])
        }
        OwnChange::SourceChanged { before, after } => (
            format!(
                "input source changed: {} replaces {}",
                name(after),
                name(before)
            ),
            vec![],
        ),
        OwnChange::InputAdded { path, outputs } => (
            format!("input derivation added: {} ({})", name(path), outs(outputs)),
            vec![],
        ),
        OwnChange::InputRemoved { path, outputs } => (
            format!(
                "input derivation removed: {} ({})",
                name(path),
                outs(outputs)
            ),
            vec![],
        ),
        OwnChange::InputOutputs {
            path,
            before,
            after,
        } => (
            format!(
                "outputs used of {}: {} → {}",
                name(path),
                outs(before),
                outs(after)
            ),
            vec![],
        ),
        OwnChange::EnvAdded { name: n, value } => (
            format!(
                "environment variable {} added: {}",
                key(n),
                code(&review::clip(value, 60))
            ),
            vec![],
        ),
        OwnChange::EnvRemoved { name: n, value } => (
            format!(
                "environment variable {} removed (was {})",
                key(n),
                code(&review::clip(value, 60))
            ),
            vec![],
        ),
        OwnChange::EnvChanged {
            name: n,
            before,
            after,
            diff,
        } => {
            if inline(before) && inline(after) {
                (
                    format!(
                        "environment variable {}: {} → {}",
                        key(n),
                        code(before),
                        code(after)
                    ),
                    vec![],
                )
            } else {
                (
                    format!(
                        "environment variable {} ({} → {} characters):",
                        key(n),
                        before.chars().count(),
                        after.chars().count()
                    ),
                    diff.clone(),
                )
            }
        }
    }
}

/// A diff line's mark: `-`, `+`, a space for context, `…`'s own line.
fn mark(l: &DiffLine) -> &'static str {
    match l.tag {
        Tag::Removed => "- ",
        Tag::Added => "+ ",
        Tag::Same => "  ",
        Tag::Cut => "  ",
    }
}

/// A string in quotes for text (so that an empty one shows), as it is in
/// markdown.
fn quoted(s: &str) -> String {
    format!("\"{s}\"")
}

impl DrvDiffReport {
    /// The section as plain text, after the closure diff's.
    pub fn render_text(&self, opts: &TextOptions) -> String {
        let names = self.names();
        let name = |p: &str| names.get(p).to_string();
        let wrap = |s: &str, first: &str, rest: &str| {
            super::style::wrap_hanging(s, opts.width, first, rest)
        };
        let mut out = String::from("\n");
        out.push_str(&wrap(
            &format!("why the derivations differ: {}", self.summary()),
            "",
            "  ",
        ));
        for (i, r) in self.root_causes.iter().enumerate() {
            out.push_str(&opts.style.paths(&wrap(
                &format!(
                    "{}. {} replaces {}: {}",
                    i + 1,
                    name(&r.after),
                    name(&r.before),
                    weight(r)
                ),
                "",
                "     ",
            )));
            for o in &r.changes {
                let (line, diff) = describe(o, &name, quoted, review::plain);
                out.push_str(&wrap(&line, "     ", "       "));
                for l in &diff {
                    // A diff line is shown as it is: wrapping would blur
                    // which side a continuation belongs to.
                    // Narrow, the changed words stay and context goes.
                    let text = match opts.width {
                        Some(w) => super::names::shorten(
                            &l.text,
                            l.changed.clone().unwrap_or(0..l.text.chars().count()),
                            w.saturating_sub(9).max(20),
                        ),
                        None => l.text.clone(),
                    };
                    out.push_str(&format!("       {}{text}\n", mark(l)));
                }
            }
            let below = self
                .derivation_changes
                .iter()
                .find(|c| c.after == r.after && c.before == r.before)
                .map(|c| c.because_of.as_slice())
                .unwrap_or_default();
            if !below.is_empty() {
                let b: Vec<String> = below.iter().map(|p| name(p)).collect();
                out.push_str(&wrap(
                    &format!("and changed because of {}", b.join(", ")),
                    "     ",
                    "       ",
                ));
            }
        }
        let followers: Vec<&DrvChangeEntry> = self.followers().collect();
        if !followers.is_empty() {
            out.push_str(&format!(
                "\n{} changed only because of a root cause:\n",
                plural(followers.len(), "derivation")
            ));
            for c in followers {
                out.push_str(
                    &opts
                        .style
                        .paths(&wrap(&follower_line(c, &name), "  ", "      ")),
                );
            }
        }
        if !self.unread_derivations.is_empty() {
            out.push_str(&format!(
                "\nnot compared (no .drv file read): {}\n",
                self.unread_derivations
                    .iter()
                    .map(|p| name(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        out
    }

    /// The section as markdown, at most `limit` characters (root causes
    /// first; the derivations that only followed them cut first).
    pub fn render_markdown(&self, limit: usize) -> String {
        let names = self.names();
        let name = |p: &str| review::code(names.get(p));
        let mut f = review::Fitter::new(limit, 400);
        f.force(&format!(
            "\n#### Why the derivations differ\n\n{}.\n",
            self.summary()
        ));
        let causes: Vec<String> = self
            .root_causes
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut s = format!(
                    "\n{}. {} replaces {}: {}\n",
                    i + 1,
                    name(&r.after),
                    name(&r.before),
                    weight(r)
                );
                for o in &r.changes {
                    let (line, diff) = describe(o, &name, review::code, review::code);
                    s.push_str(&format!("   - {}\n", review::clip(&line, 1000)));
                    if !diff.is_empty() {
                        s.push_str("\n     ```diff\n");
                        for l in &diff {
                            s.push_str(&format!(
                                "     {}{}\n",
                                mark(l),
                                review::clip(&l.text, 400).replace("```", "'''")
                            ));
                        }
                        s.push_str("     ```\n\n");
                    }
                }
                s
            })
            .collect();
        f.list("", &causes, "", "root causes");
        let followers: Vec<String> = self
            .followers()
            .map(|c| format!("- {}\n", review::clip(&follower_line(c, &name), 1000)))
            .collect();
        if !followers.is_empty() {
            f.list(
                &format!(
                    "\n<details><summary>{} changed only because of a root cause</summary>\n\n",
                    plural(followers.len(), "derivation")
                ),
                &followers,
                "\n</details>\n",
                "derivations that followed a root cause",
            );
        }
        f.finish("`nix-heft diff --derivation --format text BEFORE AFTER` lists everything.")
    }

    /// One GitHub notice: the summary and the first root causes, each
    /// with what differs in it in a few words.
    pub fn render_github(&self, at: Option<&review::NixFile>) -> String {
        let names = self.names();
        let mut lines = vec![self.summary()];
        for r in self.root_causes.iter().take(NOTICE_CAUSES) {
            let what: Vec<String> = r
                .changes
                .iter()
                .map(|o| describe(o, &|p| names.get(p).to_string(), quoted, review::plain).0)
                .map(|s| review::clip(s.trim_end_matches(':'), 120))
                .collect();
            lines.push(format!(
                "{} ({}): {}",
                names.get(&r.after),
                weight(r),
                what.join("; ")
            ));
        }
        if self.root_causes.len() > NOTICE_CAUSES {
            lines.push(format!(
                "and {} more root causes; the job summary lists them",
                self.root_causes.len() - NOTICE_CAUSES
            ));
        }
        review::Annotation {
            level: "notice",
            title: "nix-heft diff --derivation: why the derivations differ".into(),
            lines,
        }
        .render(at)
    }
}

/// `top.drv (…) replaces top.drv (…): because of leaf.drv (…), through
/// mid.drv (…)`: a derivation that changed only because of its inputs.
fn follower_line(c: &DrvChangeEntry, name: &dyn Fn(&str) -> String) -> String {
    let causes: Vec<String> = c.because_of.iter().map(|p| name(p)).collect();
    // The inputs it changed through, when they are not the causes
    // themselves.
    let through: Vec<String> = c
        .changed_inputs
        .iter()
        .filter(|i| !c.because_of.contains(&i.after))
        .map(|i| name(&i.after))
        .collect();
    let mut s = format!(
        "{} replaces {}: because of {}",
        name(&c.after),
        name(&c.before),
        if causes.is_empty() {
            "inputs not compared".to_string()
        } else {
            causes.join(", ")
        }
    );
    if !through.is_empty() {
        s.push_str(&format!(", through {}", through.join(", ")));
    }
    s
}
