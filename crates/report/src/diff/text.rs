//! `diff`'s text: aligned, fitted to the terminal's width.

use super::entry::Entry;
use super::{ChangedPath, DiffReport, review};
use crate::TextOptions;
use crate::table::{Align, Table};
use nix_heft_types::units::{iec, iec_delta};

impl DiffReport {
    /// The text: the roots, the summary, the packages' table, then the
    /// added, changed and removed paths one line each.
    pub(super) fn text(&self, opts: &TextOptions) -> String {
        let size = |b: u64| {
            if opts.exact_bytes {
                b.to_string()
            } else {
                iec(b)
            }
        };
        // BEFORE and AFTER often share names: the hash tells them apart,
        // wherever a name is shown twice.
        let names = self.names();
        let name_of = |p: &'_ str| names.get(p).to_string();
        let mut out = self.text_head(opts, &name_of, &size);
        out.push_str(&self.packages_table(opts));
        let (added, changed, removed) = self.entries();
        let (n_added, n_changed, n_removed) = self.counts();
        // Ranked by drag (diff --derivation), the order says so.
        let ranked = self
            .added
            .iter()
            .chain(&self.removed)
            .any(|c| c.drags.is_some());
        let (order, order_removed) = if ranked {
            (", by what each drags in", ", by what went with each")
        } else {
            ("", "")
        };
        for (list, n, what, ord) in [
            (&added, n_added, "added", order),
            (
                &changed,
                n_changed,
                "changed (rebuilt or another version)",
                order,
            ),
            (&removed, n_removed, "removed", order_removed),
        ] {
            if list.is_empty() {
                continue;
            }
            out.push_str(&format!("\n{n} path(s) {what}{ord}:\n"));
            for e in list {
                out.push_str(&self.entry_text(e, opts, &name_of, &size));
            }
        }
        if let Some(d) = &self.derivations {
            out.push_str(&d.render_text(opts));
        }
        crate::refs::append_problems(&mut out, &self.problems, opts.width);
        out
    }

    /// The roots, then paths and closure before → after with the counts.
    fn text_head(
        &self,
        opts: &TextOptions,
        name: &dyn Fn(&str) -> String,
        size: &dyn Fn(u64) -> String,
    ) -> String {
        let delta = self.closure_size_after as i128 - self.closure_size_before as i128;
        let (n_added, n_changed, n_removed) = self.counts();
        let mut out = crate::style::wrap_hanging(&self.roots_line(name), opts.width, "", "  ");
        out.push_str(&crate::style::wrap_hanging(
            &format!(
                "paths {} → {}, closure {} → {} ({}): {n_added} added, {n_changed} changed, \
                 {n_removed} removed",
                self.paths_before,
                self.paths_after,
                size(self.closure_size_before),
                size(self.closure_size_after),
                iec_delta(delta)
            ),
            opts.width,
            "",
            "  ",
        ));
        out
    }

    /// The changed packages as a table, or that none changed.
    fn packages_table(&self, opts: &TextOptions) -> String {
        if self.packages.is_empty() {
            return "\nno package changed\n".into();
        }
        let mut t = Table::new(&[
            ("PACKAGE", Align::Left),
            ("VERSIONS", Align::Left),
            ("SIZE Δ", Align::Right),
        ]);
        t.keep(0).wrap(1);
        for p in &self.packages {
            t.row(vec![
                p.name.clone(),
                p.transition.clone(),
                iec_delta(p.size_delta),
            ]);
        }
        format!("\n{}", t.render_fit(opts.width, opts.style))
    }

    /// One entry's line, wrapped; with `--evidence`, every hold under it
    /// (and a group's every path).
    fn entry_text(
        &self,
        e: &Entry,
        opts: &TextOptions,
        name: &dyn Fn(&str) -> String,
        size: &dyn Fn(u64) -> String,
    ) -> String {
        let text = self.entry_line(e, name, review::plain, size);
        let mut out = opts.style.paths(&crate::style::wrap_hanging(
            &text, opts.width, "  ", "      ",
        ));
        match e {
            Entry::Added(c) | Entry::Removed(c) | Entry::Changed(c, _) => {
                out.push_str(&every_hold(c, opts, "    "))
            }
            // Every path of a group with `--evidence`; the line alone says
            // it otherwise.
            Entry::Group(g) if opts.every_line => {
                for c in &g.members {
                    out.push_str(&opts.style.paths(&format!(
                        "    {} ({}{})\n",
                        name(&c.path),
                        if g.new { "+" } else { "-" },
                        size(c.nar_size)
                    )));
                    out.push_str(&every_hold(c, opts, "      "));
                }
            }
            Entry::Group(_) => {}
        }
        out
    }
}

/// With `--evidence`, every hold of `c`'s edge, indented.
fn every_hold(c: &ChangedPath, opts: &TextOptions, indent: &str) -> String {
    let mut out = String::new();
    if opts.every_line && !c.why.evidence.is_empty() {
        for l in crate::evidence_lines(&c.why.evidence, &c.why.groups, opts).lines() {
            out.push_str(&format!("{indent}{l}\n"));
        }
    }
    out
}
