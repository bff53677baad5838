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
        let delta = self.closure_size_after as i128 - self.closure_size_before as i128;
        // BEFORE and AFTER often share names: the hash tells them apart,
        // wherever a name is shown twice.
        let names = self.names();
        let name_of = |p: &'_ str| names.get(p).to_string();
        let (n_added, n_changed, n_removed) = self.counts();
        let mut out = crate::style::wrap_hanging(&self.roots_line(&name_of), opts.width, "", "  ");
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
        if self.packages.is_empty() {
            out.push_str("\nno package changed\n");
        } else {
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
            out.push('\n');
            out.push_str(&t.render_fit(opts.width, opts.style));
        }
        let (added, changed, removed) = self.entries();
        let every = |out: &mut String, c: &ChangedPath, indent: &str| {
            if opts.every_line && !c.why.evidence.is_empty() {
                for l in crate::evidence_lines(&c.why.evidence, &c.why.groups, opts).lines() {
                    out.push_str(&format!("{indent}{l}\n"));
                }
            }
        };
        let line = |out: &mut String, e: &Entry| {
            let text = self.entry_line(e, &name_of, review::plain, &size);
            out.push_str(&opts.style.paths(&crate::style::wrap_hanging(
                &text, opts.width, "  ", "      ",
            )));
            match e {
                Entry::Added(c) | Entry::Removed(c) | Entry::Changed(c, _) => every(out, c, "    "),
                // Every path of a group with `--evidence`; the line alone
                // says it otherwise.
                Entry::Group(g) if opts.every_line => {
                    for c in &g.members {
                        out.push_str(&opts.style.paths(&format!(
                            "    {} ({}{})\n",
                            name_of(&c.path),
                            if g.new { "+" } else { "-" },
                            size(c.nar_size)
                        )));
                        every(out, c, "      ");
                    }
                }
                Entry::Group(_) => {}
            }
        };
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
                line(&mut out, e);
            }
        }
        if let Some(d) = &self.derivations {
            out.push_str(&d.render_text(opts));
        }
        crate::refs::append_problems(&mut out, &self.problems, opts.width);
        out
    }
}
