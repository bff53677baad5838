//! `roots --html`: a self-contained page of the roots, a treemap by what
//! removing each frees (the roots that share a store path one rectangle,
//! what removing them all frees; what is dead now one more), a sortable
//! table, the groups and every command. Formatting only: the figures are
//! `nix_heft_ops::gc`'s; the page (`assets/report/roots.{html,js}`, the
//! report's styles and the vendored d3-hierarchy) is inlined by
//! `include_str!`, the data once as JSON.

use serde::Serialize;

use nix_heft_ops::gc::{Figure, Root, RootKind, RootsAnalysis};

/// Most roots a page holds (those that free the most); a store with a
/// million roots would make a page of hundreds of megabytes.
pub const PAGE_ROOTS: usize = 5_000;

/// Most store paths kept by several roots a page holds, each with at most
/// [`PAGE_SHARED_ROOTS`] of its roots named.
pub const PAGE_SHARED: usize = 2_000;

/// Roots named per shared store path.
pub const PAGE_SHARED_ROOTS: usize = 20;

/// The page's data.
#[derive(Debug, Clone, Serialize)]
pub struct RootsPage {
    store: String,
    keep_outputs: bool,
    keep_derivations: bool,
    /// Whether the figures have bytes on disk (the treemap is by them).
    disk: bool,
    live: Figure,
    dead: Figure,
    invalid: usize,
    gc_command: String,
    all_roots: usize,
    roots: Vec<PageRoot>,
    shared: Vec<PageShared>,
    groups: Vec<PageGroup>,
}

/// One root, short keys to keep the page small.
#[derive(Debug, Clone, Serialize)]
struct PageRoot {
    /// Location.
    l: String,
    /// Store path.
    p: String,
    /// Kind.
    k: RootKind,
    /// Freed alone.
    f: Figure,
    /// Freed with the other roots of its path.
    w: Figure,
    /// Roots of its path.
    s: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    c: Option<Figure>,
    #[serde(skip_serializing_if = "Option::is_none")]
    a: Option<i64>,
    /// The command.
    #[serde(skip_serializing_if = "Option::is_none")]
    x: Option<String>,
    /// A generation, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    g: Option<String>,
}

/// A store path several roots keep.
#[derive(Debug, Clone, Serialize)]
struct PageShared {
    p: String,
    /// How many roots.
    n: usize,
    /// What removing them all frees.
    f: Figure,
    /// Some of their locations.
    l: Vec<String>,
    /// The commands that remove them (when every one is named).
    x: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
struct PageGroup {
    t: String,
    m: usize,
    f: Figure,
    c: Vec<String>,
    /// Links the commands leave out.
    o: usize,
    collects: bool,
}

fn page_root(r: &Root) -> PageRoot {
    PageRoot {
        l: super::roots::root_label(r),
        p: r.store_path.to_string(),
        k: r.kind,
        f: r.freed,
        w: r.freed_with_same_path,
        s: r.same_path_roots,
        c: r.closure.as_deref().copied(),
        a: r.age_secs,
        x: r.command.as_deref().map(str::to_string),
        g: r.generation.as_ref().map(|g| {
            format!(
                "generation {} of {}{}",
                g.number,
                g.profile.display(),
                if g.current { ", current" } else { "" }
            )
        }),
    }
}

impl RootsPage {
    /// The page of `a` (selection only: the roots that free the most,
    /// the shared paths that free the most).
    pub fn new(a: &RootsAnalysis) -> RootsPage {
        RootsPage {
            store: a.store.clone(),
            keep_outputs: a.keep_outputs,
            keep_derivations: a.keep_derivations,
            disk: a.totals.valid.disk_bytes.is_some(),
            live: a.totals.live,
            dead: a.dead.figure,
            invalid: a.dead.invalid_entries.len(),
            gc_command: a.gc_command.clone(),
            all_roots: a.all_roots,
            roots: a.roots.iter().take(PAGE_ROOTS).map(page_root).collect(),
            shared: a
                .shared
                .iter()
                .take(PAGE_SHARED)
                .map(|s| PageShared {
                    p: s.store_path.to_string(),
                    n: s.all_roots as usize,
                    f: s.freed,
                    l: s.roots
                        .iter()
                        .take(PAGE_SHARED_ROOTS)
                        .map(|&i| super::roots::root_label(&a.roots[i]))
                        .collect(),
                    x: s.commands.clone(),
                })
                .collect(),
            groups: a
                .groups
                .iter()
                .map(|g| PageGroup {
                    t: g.title.clone(),
                    m: g.members.len(),
                    f: g.freed,
                    c: g.commands.clone(),
                    o: g.left_out,
                    collects: g.collects,
                })
                .collect(),
        }
    }

    /// The whole page.
    pub fn render_html(&self) -> String {
        const TEMPLATE: &str = include_str!("../../../assets/report/roots.html");
        const CSS: &str = include_str!("../../../assets/report/report.css");
        const JS: &str = include_str!("../../../assets/report/roots.js");
        const D3: &str = include_str!("../../../assets/vendor/d3-hierarchy.min.js");
        const D3_LICENSE: &str = include_str!("../../../assets/vendor/d3-hierarchy.LICENSE");
        let data = serde_json::to_string(self).expect("roots page serialises");
        // As in the report's page: no "</" or "<!--" inside <script>.
        let data = data.replace('<', "\\u003c");
        TEMPLATE
            .replace("{{TITLE}}", &super::html::html_escape(&self.store))
            .replace("{{CSS}}", CSS)
            .replace("{{D3_LICENSE}}", &D3_LICENSE.replace("*/", "* /"))
            .replace("{{D3}}", D3)
            .replace("{{JS}}", JS)
            .replacen("{{DATA}}", &data, 1)
    }
}
