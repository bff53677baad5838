//! The `roots` report: every garbage-collector root with what removing it
//! frees, the groups, what is dead now and the commands, as
//! `nix_heft_ops::gc::analyse` computed them (this module only picks the
//! rows and formats); and `why --roots`, the roots that keep one path.

use serde::Serialize;

use super::table::{Align, Cell, Paint, Table};
use super::{Names, Report, TextOptions, style};
use nix_heft_ops::gc::{EdgeKind, Figure, Group, Root, RootKind, RootsAnalysis};
use nix_heft_types::units::iec;

/// Roots named under a store path several keep (the JSON has them all).
const SHARED_SHOWN: usize = 4;

/// The whole report; its JSON is the analysis (every root, whatever
/// `--top` shows).
#[derive(Debug, Clone, Serialize)]
pub struct RootsReport {
    /// What the analysis found.
    #[serde(flatten)]
    pub analysis: RootsAnalysis,
    /// Rows of the text table (all when `None`).
    #[serde(skip)]
    pub top: Option<usize>,
    /// Where the HTML page was written (`--html`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
}

/// A duration in the largest unit that keeps it above one: `45s`, `3h`,
/// `12d`, `5mo`, `2y`.
pub fn age(secs: i64) -> String {
    let s = secs.max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h", s / 3600),
        86_400..2_592_000 => format!("{}d", s / 86_400),
        2_592_000..31_536_000 => format!("{}mo", s / 2_592_000),
        _ => format!("{}y", s / 31_536_000),
    }
}

fn sized(f: &Figure, exact: bool) -> String {
    let b = |x: u64| if exact { x.to_string() } else { iec(x) };
    let paths = if f.paths == 1 { "path" } else { "paths" };
    match f.disk_bytes {
        Some(d) => format!(
            "{} ({} on disk) in {} {paths}",
            b(f.nar_bytes),
            b(d),
            f.paths
        ),
        None => format!("{} in {} {paths}", b(f.nar_bytes), f.paths),
    }
}

/// How a root is named in a table or a line: its location, or the
/// process that holds it.
pub fn root_label(r: &Root) -> String {
    let (processes, held_by) = r
        .held
        .as_deref()
        .map_or((&[][..], &[][..]), |h| (&h.processes[..], &h.held_by[..]));
    let procs = || {
        processes
            .iter()
            .map(|(p, c)| {
                if c.is_empty() {
                    format!("{p}")
                } else {
                    format!("{p} ({c})")
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match r.kind {
        RootKind::Runtime if !processes.is_empty() => format!("process {}", procs()),
        RootKind::Runtime => format!("held by {}", held_by.join(", ")),
        RootKind::Temporary => format!("temporary root of process {}", procs()),
        RootKind::Generation if r.generation.as_ref().is_some_and(|g| g.current) => {
            format!("{} (current)", r.location.display())
        }
        _ => r.location.display().to_string(),
    }
}

impl RootsReport {
    fn header(&self, opts: &TextOptions) -> String {
        let a = &self.analysis;
        let exact = opts.exact_bytes;
        let mut out = format!(
            "roots of {}: {} root(s) keep {}; {} dead now",
            a.store,
            a.all_roots,
            sized(&a.totals.live, exact),
            sized(&a.dead.figure, exact),
        );
        if !a.dead.invalid_entries.is_empty() {
            out.push_str(&format!(
                " and {} entries that are no valid path",
                a.dead.invalid_entries.len()
            ));
        }
        out.push_str(&format!(
            " (keep-outputs = {}, keep-derivations = {})",
            a.keep_outputs, a.keep_derivations
        ));
        opts.style
            .paths(&style::wrap_hanging(&out, opts.width, "", "  "))
    }

    fn table(&self, opts: &TextOptions) -> String {
        let a = &self.analysis;
        let exact = opts.exact_bytes;
        let b = |x: u64| if exact { x.to_string() } else { iec(x) };
        let disk = a.totals.valid.disk_bytes.is_some();
        let mut cols = vec![("FREES", Align::Right)];
        if disk {
            cols.push(("ON DISK", Align::Right));
        }
        cols.extend([
            ("PATHS", Align::Right),
            ("CLOSURE", Align::Right),
            ("AGE", Align::Right),
            ("ROOT", Align::Left),
            ("STORE PATH", Align::Left),
        ]);
        let mut t = Table::new(&cols);
        let root_col = cols.len() - 2;
        t.keep(root_col).keep(root_col + 1);
        if a.roots.is_empty() {
            return "no root keeps anything: the collector deletes every path\n".into();
        }
        let shown = self.top.unwrap_or(a.roots.len()).min(a.roots.len());
        let names = Names::new(a.roots[..shown].iter().map(|r| &*r.store_path));
        for r in &a.roots[..shown] {
            let mut row = vec![Cell::new(b(r.freed.nar_bytes), Paint::Size)];
            if disk {
                row.push(Cell::new(
                    r.freed.disk_bytes.map(b).unwrap_or_default(),
                    Paint::Plain,
                ));
            }
            row.push(Cell::new(r.freed.paths.to_string(), Paint::Plain));
            row.push(Cell::new(
                r.closure
                    .as_deref()
                    .map(|c| b(c.nar_bytes))
                    .unwrap_or_default(),
                Paint::Plain,
            ));
            row.push(Cell::new(
                r.age_secs.map(age).unwrap_or_default(),
                Paint::Plain,
            ));
            // Cut in the middle, so the link's own name stays.
            row.push(Cell::new(root_label(r), Paint::Path));
            row.push(Cell::name(&names, &r.store_path));
            t.cells(row);
        }
        let mut out = t.render_fit(opts.width, opts.style);
        if shown < a.roots.len() {
            out.push_str(&format!(
                "({shown} of {} roots shown; --top N shows more, --json all)\n",
                a.roots.len()
            ));
        }
        out
    }

    /// Roots sharing their store path with others: each frees nothing
    /// alone, all together free the figure.
    fn shared(&self, opts: &TextOptions) -> String {
        let a = &self.analysis;
        if a.shared.is_empty() {
            return String::new();
        }
        let mut out = opts.style.heading(
            "\nstore paths kept by several roots (one removed frees nothing; all of them):\n",
        );
        for s in a.shared.iter().take(self.top.unwrap_or(usize::MAX)) {
            out.push_str(&opts.style.paths(&style::wrap_hanging(
                &format!(
                    "{}: {} roots, together {}",
                    s.store_path,
                    s.all_roots,
                    sized(&s.freed, opts.exact_bytes)
                ),
                opts.width,
                "  ",
                "    ",
            )));
            for &i in s.roots.iter().take(SHARED_SHOWN) {
                out.push_str(&style::fit_line(
                    &format!("    {}", root_label(&a.roots[i])),
                    opts.width,
                ));
                out.push('\n');
            }
            if s.all_roots as usize > SHARED_SHOWN {
                out.push_str(&format!(
                    "    and {} more\n",
                    s.all_roots as usize - SHARED_SHOWN
                ));
            }
        }
        out
    }

    fn groups(&self, opts: &TextOptions) -> String {
        let a = &self.analysis;
        if a.groups.is_empty() {
            return String::new();
        }
        // Those that free nothing are counted (the JSON lists them).
        let mut gs: Vec<&Group> = a.groups.iter().filter(|g| g.freed.paths > 0).collect();
        let idle = a.groups.len() - gs.len();
        gs.sort_by_key(|x| std::cmp::Reverse(x.freed.nar_bytes));
        let mut out = opts
            .style
            .heading("\nremoved together (what they share counted once):\n");
        for g in gs {
            let also = if g.collects {
                format!(
                    ", and the collector it runs deletes what is dead now ({})",
                    sized(&a.dead.figure, opts.exact_bytes)
                )
            } else {
                String::new()
            };
            out.push_str(&opts.style.paths(&style::wrap_hanging(
                &format!(
                    "{}: {} root(s), frees {}{also}",
                    g.title,
                    g.members.len(),
                    sized(&g.freed, opts.exact_bytes)
                ),
                opts.width,
                "  ",
                "    ",
            )));
            for c in &g.commands {
                out.push_str(
                    &opts
                        .style
                        .paths(&style::wrap_hanging(c, opts.width, "    $ ", "      ")),
                );
            }
            if g.left_out > 0 {
                out.push_str(&format!(
                    "    and {} more link(s) to remove (--json gives every command)\n",
                    g.left_out
                ));
            }
        }
        if idle > 0 {
            out.push_str(&format!(
                "  and {idle} group(s) that free nothing (other roots keep what they keep; \
                 --json lists them)\n"
            ));
        }
        out
    }

    fn rest(&self, opts: &TextOptions) -> String {
        let a = &self.analysis;
        let mut out = String::new();
        let best: Vec<&Root> = a
            .roots
            .iter()
            .filter(|r| r.command.is_some() && r.freed.paths > 0)
            .take(5)
            .collect();
        if !best.is_empty() {
            out.push_str(
                &opts
                    .style
                    .heading("\nthe roots that free the most alone:\n"),
            );
            for r in best {
                out.push_str(&opts.style.paths(&style::wrap_hanging(
                    &format!(
                        "{}  # frees {}",
                        r.command.as_deref().unwrap_or_default(),
                        sized(&r.freed, opts.exact_bytes)
                    ),
                    opts.width,
                    "  $ ",
                    "    ",
                )));
            }
        }
        if !a.stale.is_empty() {
            out.push_str(&opts.style.heading(&format!(
                "\nstale: {} link(s) that keep nothing:\n",
                a.stale.len()
            )));
            for s in a.stale.iter().take(self.top.unwrap_or(usize::MAX)) {
                out.push_str(&opts.style.paths(&style::wrap_hanging(
                    &format!("{}: {}", s.location.display(), s.reason),
                    opts.width,
                    "  ",
                    "    ",
                )));
            }
        }
        if !a.unreadable.is_empty() {
            out.push_str(&format!(
                "\n{} entries of the root trees could not be read (the collector skips them too), e.g. {}: {}\n",
                a.unreadable.len(),
                a.unreadable[0].0.display(),
                a.unreadable[0].1
            ));
        }
        out.push('\n');
        out.push_str(&opts.style.paths(&style::wrap_hanging(
            &format!(
                "nix-heft deletes nothing. After removing roots, the collector frees what they \
                 kept and what is dead now ({}): {}",
                sized(&a.dead.figure, opts.exact_bytes),
                a.gc_command
            ),
            opts.width,
            "",
            "  ",
        )));
        for w in &a.warnings {
            out.push_str(&style::wrap_hanging(
                &format!("note: {w}"),
                opts.width,
                "",
                "  ",
            ));
        }
        out
    }
}

impl Report for RootsReport {
    fn render_text(&self, opts: &TextOptions) -> String {
        let mut out = self.header(opts);
        if let Some(p) = &self.page {
            out.push_str(&format!("page written to {p}\n"));
        }
        out.push('\n');
        out.push_str(&self.table(opts));
        out.push_str(&self.shared(opts));
        out.push_str(&self.groups(opts));
        out.push_str(&self.rest(opts));
        out
    }
}

/// `why --roots PATH`: the roots that keep a path, each with a chain and
/// what removing it frees, and what removing them all frees.
#[derive(Debug, Clone, Serialize)]
pub struct WhyRootsReport {
    /// The path asked about.
    pub path: String,
    /// Whether no root keeps it (the collector deletes it now).
    pub dead: bool,
    /// The roots that keep it, nearest first, each with its chain.
    pub roots: Vec<KeptBy>,
    /// The group of the removable ones, and what removing them frees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all: Option<Group>,
    /// Whether removing that group frees the path.
    pub freed_by_all: bool,
    /// The command that runs the collector.
    pub gc_command: String,
    /// `keep-outputs` as applied.
    pub keep_outputs: bool,
    /// `keep-derivations` as applied.
    pub keep_derivations: bool,
}

/// One root that keeps the path.
#[derive(Debug, Clone, Serialize)]
pub struct KeptBy {
    /// The root, with what removing it alone frees.
    pub root: Root,
    /// From the root's store path to the path: each path and how the one
    /// before it holds it.
    pub chain: Vec<(String, EdgeKind)>,
}

impl WhyRootsReport {
    /// The `why` part of `analysis` (selection only; `analysis.why` must
    /// be set).
    pub fn new(analysis: &RootsAnalysis) -> WhyRootsReport {
        let why = analysis.why.as_ref();
        WhyRootsReport {
            path: why.map(|w| w.path.clone()).unwrap_or_default(),
            dead: why.is_some_and(|w| w.roots.is_empty()),
            roots: why
                .map(|w| {
                    w.roots
                        .iter()
                        .map(|r| KeptBy {
                            root: analysis.roots[r.root].clone(),
                            chain: r.chain.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            all: why
                .and_then(|w| w.group)
                .map(|g| analysis.groups[g].clone()),
            freed_by_all: why.is_some_and(|w| w.freed_by_group),
            gc_command: analysis.gc_command.clone(),
            keep_outputs: analysis.keep_outputs,
            keep_derivations: analysis.keep_derivations,
        }
    }
}

fn edge_word(k: EdgeKind) -> &'static str {
    match k {
        EdgeKind::Root => "",
        EdgeKind::Reference => "→",
        EdgeKind::KeepOutputs => "→ (keep-outputs)",
        EdgeKind::KeepDerivations => "→ (keep-derivations)",
    }
}

impl Report for WhyRootsReport {
    fn render_text(&self, opts: &TextOptions) -> String {
        let exact = opts.exact_bytes;
        if self.dead {
            return opts.style.paths(&style::wrap_hanging(
                &format!(
                    "no root keeps {}: the collector deletes it now ({})",
                    self.path, self.gc_command
                ),
                opts.width,
                "",
                "  ",
            ));
        }
        let mut out = opts.style.paths(&style::wrap_hanging(
            &format!(
                "{} is kept by {} root(s) (keep-outputs = {}, keep-derivations = {})",
                self.path,
                self.roots.len(),
                self.keep_outputs,
                self.keep_derivations
            ),
            opts.width,
            "",
            "  ",
        ));
        let names = Names::new(
            self.roots
                .iter()
                .flat_map(|r| r.chain.iter().map(|(p, _)| p.as_str())),
        );
        for k in &self.roots {
            let alone = if k.root.same_path_roots > 1 {
                format!(
                    "frees nothing alone ({} roots keep {}; all of them free {})",
                    k.root.same_path_roots,
                    names.get(&k.root.store_path),
                    sized(&k.root.freed_with_same_path, exact)
                )
            } else {
                format!("frees {}", sized(&k.root.freed, exact))
            };
            out.push('\n');
            out.push_str(&opts.style.paths(&style::wrap_hanging(
                &format!("{}: {alone}", root_label(&k.root)),
                opts.width,
                "  ",
                "    ",
            )));
            let mut chain = String::new();
            for (p, e) in &k.chain {
                let w = edge_word(*e);
                if !w.is_empty() {
                    chain.push(' ');
                    chain.push_str(w);
                    chain.push(' ');
                }
                chain.push_str(names.get(p));
            }
            out.push_str(
                &opts
                    .style
                    .paths(&style::wrap_hanging(&chain, opts.width, "    ", "      ")),
            );
            if let Some(c) = &k.root.command {
                out.push_str(
                    &opts
                        .style
                        .paths(&style::wrap_hanging(c, opts.width, "    $ ", "      ")),
                );
            }
        }
        if let Some(g) = &self.all {
            out.push('\n');
            out.push_str(&opts.style.paths(&style::wrap_hanging(
                &format!(
                    "removing the {} removable root(s) together frees {}{}:",
                    g.members.len(),
                    sized(&g.freed, exact),
                    if self.freed_by_all {
                        ", the path included"
                    } else {
                        " (a process keeps the path still)"
                    }
                ),
                opts.width,
                "",
                "  ",
            )));
            for c in &g.commands {
                out.push_str(
                    &opts
                        .style
                        .paths(&style::wrap_hanging(c, opts.width, "  $ ", "    ")),
                );
            }
            out.push_str(&opts.style.paths(&style::wrap_hanging(
                &self.gc_command,
                opts.width,
                "  $ ",
                "    ",
            )));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ages_in_the_largest_unit() {
        assert_eq!(super::age(5), "5s");
        assert_eq!(super::age(3 * 3600 + 5), "3h");
        assert_eq!(super::age(45 * 86_400), "1mo");
        assert_eq!(super::age(400 * 86_400), "1y");
        assert_eq!(super::age(-3), "0s");
    }
}

/// What `roots --browse` prints on leaving: the commands that remove the
/// roots marked, and what removing them frees together.
#[derive(Debug, Clone, Serialize)]
pub struct MarkedReport {
    /// How many roots were marked.
    pub marked: usize,
    /// What removing them frees together.
    pub freed: Figure,
    /// The commands that remove them, then the collector's.
    pub commands: Vec<String>,
}

impl Report for MarkedReport {
    fn render_text(&self, opts: &TextOptions) -> String {
        let mut out = format!(
            "# {} root(s) marked: together they free {}\n",
            self.marked,
            sized(&self.freed, opts.exact_bytes)
        );
        for c in &self.commands {
            out.push_str(c);
            out.push('\n');
        }
        out
    }
}
