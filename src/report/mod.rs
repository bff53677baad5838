//! The report stage: turning results into what a person or a program
//! reads. Every report is one serde struct, printed as JSON for `--json`
//! and rendered as text otherwise (the same struct, so the two never
//! disagree). Formatting only: reports never compute closures, sizes,
//! chains or dominators, and never read the store. Their constructors take
//! what earlier stages computed (the graph's [`crate::graph::Sizes`],
//! [`crate::explain`]'s chains, plans, a [`crate::diff::ClosureDiff`]) and
//! only select, sort and name it.

pub mod advise;
pub mod check;
pub mod diff;
pub mod html;
pub mod names;
pub use names::Names;
pub mod partition;
pub mod refs;
pub mod review;
pub mod size;
pub mod split;
pub mod style;
pub mod table;
pub mod trace;
pub mod why;

use std::collections::HashMap;

use serde::Serialize;

use crate::problem::Problem;

/// How to render text.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    /// Exact byte counts instead of IEC units.
    pub exact_bytes: bool,
    /// Fit lines within this many columns (a terminal); `None` keeps full
    /// lines (piped output).
    pub width: Option<usize>,
    /// Colours and emphasis.
    pub style: style::Style,
    /// List every line instead of grouped summaries (`--evidence`, `--all`).
    pub every_line: bool,
}

/// What every report offers: JSON through serde, text, and the problems
/// that make its result partial.
pub trait Report: Serialize {
    /// The text rendering, for a terminal or a pipe.
    fn render_text(&self, opts: &TextOptions) -> String;
    /// What could not be read or computed; non-empty means exit code 3.
    fn problems(&self) -> &[Problem] {
        &[]
    }
}

/// Evidence as text, grouped by file: each occurrence's kind, line,
/// offset and excerpt, then its verdict and reason. Without
/// [`TextOptions::every_line`], more than [`GROUP_AT`] occurrences of one
/// kind in one directory become one line ("51 symlinks in
/// lib/rocblas/library/ (e.g. …)"); the JSON always has every one.
pub fn evidence_lines(evs: &[crate::evidence::Evidence], opts: &TextOptions) -> String {
    use crate::evidence::Evidence;
    let dir_of = |f: &str| f.rfind('/').map_or("", |i| &f[..i]).to_string();
    let mut groups: Vec<((crate::evidence::Kind, String), Vec<&Evidence>)> = Vec::new();
    for e in evs {
        let key = (e.kind, dir_of(&e.file));
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(e),
            None => groups.push((key, vec![e])),
        }
    }
    let fit = |s: String| match opts.width {
        Some(w) => style::truncate(&s, w, false),
        None => s,
    };
    let verdict_line = |e: &Evidence| {
        let text = format!("{}: {}", e.verdict.as_str(), e.reason);
        opts.style
            .verdict(e.verdict, &style::wrap(&text, opts.width, "      "))
    };
    let mut out = String::new();
    let mut last_file: Option<&str> = None;
    for ((kind, dir), members) in &groups {
        if !opts.every_line && members.len() > GROUP_AT {
            let e = members[0];
            let example = match kind {
                crate::evidence::Kind::Symlink => format!("{} → {}", e.file, e.context),
                _ => e.file.clone(),
            };
            out.push_str(&fit(format!(
                "  {} {} holds in {}/ (e.g. {example})",
                members.len(),
                kind.as_str(),
                if dir.is_empty() { "." } else { dir }
            )));
            out.push('\n');
            out.push_str(&verdict_line(e));
            last_file = None;
            continue;
        }
        for e in members {
            if last_file != Some(e.file.as_str()) {
                let f = if e.file.is_empty() {
                    "."
                } else {
                    e.file.as_str()
                };
                out.push_str(&format!("  {f}\n"));
                last_file = Some(e.file.as_str());
            }
            let mut tag = e.kind.as_str().to_string();
            if let Some(l) = e.line {
                tag.push_str(&format!(" line {l}"));
            }
            if e.dead {
                tag.push_str(" DEAD");
            } else if !e.serves.is_empty() {
                tag.push_str(&format!(" serves {}", e.serves.join(",")));
            }
            let line = fit(format!("    {tag} @{}: {}", e.offset, e.context));
            out.push_str(&opts.style.paths(&line));
            out.push('\n');
            out.push_str(&verdict_line(e));
            if e.traced == Some(crate::evidence::Traced::NotUsed) {
                out.push_str(&style::wrap(
                    "traced: not used (never touched in the trace)",
                    opts.width,
                    "      ",
                ));
            }
            if let Some(n) = &e.note {
                out.push_str(&style::wrap(&format!("note: {n}"), opts.width, "      "));
            }
        }
    }
    out
}

/// More occurrences than this of one kind in one directory are grouped.
pub const GROUP_AT: usize = 3;

/// Short display names for store paths: the full name (`rocblas-5.7.1-dev`),
/// with the first 8 characters of the hash added where two different paths
/// shown together share a name. The one rule, [`names::Names`], as a map.
pub fn display_names<'a>(paths: impl IntoIterator<Item = &'a str>) -> HashMap<String, String> {
    names::Names::new(paths).into_map()
}

#[cfg(test)]
mod tests {
    #[test]
    fn colliding_names_get_their_hash() {
        let a = "/nix/store/aaaaaaaabbbbbbbbccccccccdddddddd-rocblas-5.7.1";
        let b = "/nix/store/zzzzzzzzbbbbbbbbccccccccdddddddd-rocblas-5.7.1";
        let c = "/nix/store/aaaaaaaabbbbbbbbccccccccdddddddd-rocblas-5.7.1-source";
        let n = super::display_names([a, b, c, a]);
        assert_eq!(n[a], "rocblas-5.7.1 (aaaaaaaa)");
        assert_eq!(n[b], "rocblas-5.7.1 (zzzzzzzz)");
        assert_eq!(n[c], "rocblas-5.7.1-source");
    }
}
