//! The report stage: turning results into what a person or a program
//! reads. Every report is one serde struct, printed as JSON for `--json`
//! and rendered as text otherwise (the same struct, so the two never
//! disagree). Formatting only: reports never compute closures, sizes,
//! chains or dominators, and never read the store. Their constructors take
//! what earlier stages computed (the graph's [`nix_heft_graph::Sizes`],
//! [`nix_heft_analysis::explain`]'s chains, plans, a [`nix_heft_analysis::diff::ClosureDiff`]) and
//! only select, sort and name it.

//!
//! The whole path as a library caller writes it (the `nix-heft size`
//! command is this, plus flags and a progress spinner):
//!
//! ```no_run
//! use nix_heft_report::Report;
//! use nix_heft_store::open::{Opener, StoreSpec};
//!
//! // cache.nixos.org, its key trusted as nix.conf would trust it.
//! let src = Opener::new(StoreSpec {
//!     stores: vec!["https://cache.nixos.org".into()],
//!     trusted_public_keys: Some(
//!         "cache.nixos.org-1:6NCHdD59X431o0gWypbMrAURkbJ16ZPMQFGspcDShjY=".into(),
//!     ),
//!     ..Default::default()
//! })
//! .open()?;
//! let roots = nix_heft_ops::roots::resolve_roots(src.as_ref(), &["./result".into()])?;
//! let g = nix_heft_graph::Graph::load(src.as_ref(), &roots)?;
//! let sizes = nix_heft_graph::Sizes::compute(&g);
//! let report = nix_heft_report::size::SizeReport::new(&g, &sizes, Default::default());
//! print!("{}", report.render_text(&Default::default()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod advise;
pub mod bisect;
pub mod check;
pub mod diff;
pub mod drv_diff;
pub mod history;
pub mod html;
pub mod impact;
pub mod names;
pub use names::Names;
pub mod partition;
pub mod refs;
pub mod refused;
pub mod review;
pub mod roots;
pub mod roots_page;
pub mod size;
pub mod split;
pub mod style;
pub mod table;
pub mod trace;
pub mod why;

use std::collections::HashMap;

use serde::Serialize;

use nix_heft_types::problem::Problem;

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

/// Evidence as text, by file: each occurrence's kind, line, offset and
/// excerpt, then its verdict and reason. Without
/// [`TextOptions::every_line`], a group of more than [`GROUP_AT`] holds of
/// one kind and verdict in one directory ([`nix_heft_types::evidence::group`]: the
/// one way every command and format shows evidence) becomes one line, in
/// the words of [`review::group_phrase`] ("51 symlink holds in
/// lib/rocblas/library/ (51 files, 2.0 KiB, runtime; e.g. …)"); `groups`
/// are the report's groups with the holding files' bytes (grouped here,
/// without bytes, when empty). The JSON always has every hold.
pub fn evidence_lines(
    evs: &[nix_heft_types::evidence::Evidence],
    groups: &[nix_heft_types::evidence::EvidenceGroup],
    opts: &TextOptions,
) -> String {
    use nix_heft_types::evidence::Evidence;
    let dir_of = |f: &str| f.rfind('/').map_or("", |i| &f[..i]).to_string();
    let grouped: Vec<nix_heft_types::evidence::EvidenceGroup> = if opts.every_line {
        Vec::new()
    } else {
        review::groups_of(groups, evs)
            .into_iter()
            .filter(|g| g.holds > GROUP_AT)
            .collect()
    };
    let group_of = |e: &Evidence| {
        let dir = dir_of(&e.file);
        grouped
            .iter()
            .position(|g| g.kind == e.kind && g.verdict == e.verdict && g.dir == dir)
    };
    let mut shown = vec![false; grouped.len()];
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
    for e in evs {
        if let Some(i) = group_of(e) {
            if !std::mem::replace(&mut shown[i], true) {
                // Wrapped, not cut: the counts, bytes and files named are
                // the point of the line.
                out.push_str(&style::wrap_hanging(
                    &review::group_phrase(&grouped[i], review::plain),
                    opts.width,
                    "  ",
                    "      ",
                ));
                out.push_str(&verdict_line(e));
                last_file = None;
            }
            continue;
        }
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
        if e.traced == Some(nix_heft_types::evidence::Traced::NotUsed) {
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
    out
}

/// `1 path`, `2 paths`: a count and a regular English noun, the one way
/// every report counts things.
pub fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("{n} {what}")
    } else {
        format!("{n} {what}s")
    }
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
