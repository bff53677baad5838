//! `diff --format markdown`: the pull-request comment or job summary,
//! within a limit.

use super::entry::Entry;
use super::{DiffReport, plural, review};
use nix_heft_types::units::{iec, iec_delta};

/// How to see what a cut markdown report left out.
const SEE_ALL: &str = "`nix-heft diff --format text BEFORE AFTER` lists everything \
                       (`--evidence` every hold); a CI job can keep it as an artifact.";

/// Changes shown open at the top of the markdown, largest first.
const TOP: usize = 5;

impl DiffReport {
    /// The closure's part, then `--derivation`'s section, within `limit`.
    pub(super) fn markdown(&self, limit: usize) -> String {
        // `--derivation`'s section after the closure's, within one limit:
        // what the closure's part leaves, or up to half of the limit (the
        // closure's part then cut to the rest, keeping its reserve).
        let Some(d) = &self.derivations else {
            return self.render_markdown_within(limit);
        };
        let closure = self.render_markdown_within(limit);
        let free = limit.saturating_sub(closure.chars().count());
        // The closure's part keeps at least this much: its headline, the
        // largest changes and the note on what was cut.
        const CLOSURE_MIN: usize = 3000;
        let room = free.max((limit / 2).min(limit.saturating_sub(CLOSURE_MIN)));
        if room < 500 {
            return closure;
        }
        let own = d.render_markdown(room);
        let n = own.chars().count();
        let mut out = if n <= free {
            closure
        } else {
            self.render_markdown_within(limit - n)
        };
        out.push_str(&own);
        out
    }

    /// Markdown for a pull-request comment or a job summary: [`MARKER`],
    /// the summary as a heading, the roots labelled old and new, the
    /// largest changes open with what pulls each in (the chain, the
    /// grouped holds), then in closed `<details>` the packages by size
    /// impact and the rest of the added, changed and removed paths. At
    /// most `limit` characters: the largest changes first, the other parts
    /// sharing the room left (added paths twice as much), a part that needs
    /// less leaving its share to the rest; what was cut is said, with the
    /// limit in force.
    ///
    /// [`MARKER`]: review::MARKER
    fn render_markdown_within(&self, limit: usize) -> String {
        let names = self.names();
        let name = |p: &str| review::code(names.get(p));
        let (added, changed, removed) = self.entries();
        let lists = [&added, &changed, &removed];
        let line = |e: &Entry| self.markdown_line(e, &name);
        let top = largest(&lists);
        let top_items: Vec<String> = top
            .iter()
            .map(|&(k, i)| format!("- {}\n", line(&lists[k][i])))
            .collect();
        let mut parts: Vec<Closed> = self.packages_part().into_iter().collect();
        for (k, what, weight) in [(0, "added", 2), (1, "changed", 1), (2, "removed", 1)] {
            let rest: Vec<&Entry> = lists[k]
                .iter()
                .enumerate()
                .filter(|(i, _)| !top.contains(&(k, *i)))
                .map(|(_, e)| e)
                .collect();
            // "more" when some of this list is among the largest above.
            let more = !top.is_empty() && rest.len() < lists[k].len();
            parts.extend(rest_part(&rest, what, weight, more, &line));
        }
        let problems: Vec<String> = self
            .problems
            .iter()
            .map(|p| format!("- {}\n", review::clip(&review::md(&p.display()), 500)))
            .collect();
        let mut cuts: Vec<(&str, usize)> = vec![("largest changes", top_items.len())];
        cuts.extend(parts.iter().map(|p| (p.what.as_str(), p.items.len())));
        cuts.push(("problems", problems.len()));
        let head = self.markdown_head(&name);
        let total: usize = lists.iter().map(|l| l.len()).sum();
        let top_head = if top_items.len() == total {
            "\n**Changes**, largest first:\n\n".to_string()
        } else {
            format!("\n**Largest changes** of {total}, by size (the rest below):\n\n")
        };
        let needs: Vec<(usize, usize, usize)> = parts.iter().map(Closed::needs).collect();
        review::fit(limit, &cuts, SEE_ALL, |f| {
            f.force(&head);
            if !self.problems.is_empty() {
                f.push(&format!(
                    "\n⚠️ partial read: {} problem(s), listed at the end as room allows\n",
                    self.problems.len()
                ));
            }
            if !top_items.is_empty() {
                f.list(&top_head, &top_items, "", "largest changes");
            }
            // The problems get what is left: the head says the read was
            // partial.
            let shares = review::shares(f.room(), &needs);
            for (p, share) in parts.iter().zip(shares) {
                f.list_within(&p.head, &p.items, CLOSE, &p.what, share);
            }
            if !problems.is_empty() {
                let head = format!("\n⚠️ partial read, {} problem(s):\n\n", self.problems.len());
                f.list(&head, &problems, "", "problems");
            }
        })
    }

    /// One entry as a list item's text: its line and the chain above it,
    /// clipped.
    fn markdown_line(&self, e: &Entry, name: &dyn Fn(&str) -> String) -> String {
        review::clip(
            &format!(
                "{}{}",
                self.entry_line(e, name, review::code, &iec),
                Self::chain_note(e, name)
            ),
            2000,
        )
    }

    /// The marker, the summary as a heading, the roots and the counts.
    fn markdown_head(&self, name: &dyn Fn(&str) -> String) -> String {
        format!(
            "{}\n### nix-heft diff: {}\n\n{}: {} → {} paths, {} changed\n",
            review::MARKER,
            self.summary(),
            self.roots_line(name),
            self.paths_before,
            self.paths_after,
            plural(self.packages.len(), "package")
        )
    }

    /// The packages by size impact, as a closed table.
    fn packages_part(&self) -> Option<Closed> {
        let rows: Vec<String> = self
            .packages_by_impact()
            .iter()
            .map(|p| {
                review::clip(
                    &format!(
                        "| {} | {} | {} |\n",
                        review::md(&p.name),
                        review::md(&p.transition),
                        iec_delta(p.size_delta)
                    ),
                    600,
                )
            })
            .collect();
        (!rows.is_empty()).then(|| Closed {
            head: format!(
                "\n<details><summary>{} changed, by size impact</summary>\n\n\
                 | package | versions | size Δ |\n| --- | --- | ---: |\n",
                plural(rows.len(), "package")
            ),
            items: rows,
            what: "changed packages".into(),
            weight: 1,
        })
    }
}

/// How a closed part ends.
const CLOSE: &str = "\n</details>\n";

/// A closed part of the comment: a `<details>` head, its items, what they
/// are (for the note on what was cut) and its weight in sharing the room.
struct Closed {
    head: String,
    items: Vec<String>,
    what: String,
    weight: usize,
}

impl Closed {
    /// The room it needs to show its first item, and all of them, and its
    /// weight: what [`review::shares`] divides the room by.
    fn needs(&self) -> (usize, usize, usize) {
        let fixed = self.head.chars().count() + CLOSE.len();
        let first = self.items.first().map_or(0, |i| i.chars().count());
        let all: usize = self.items.iter().map(|i| i.chars().count()).sum();
        (fixed + first, fixed + all, self.weight)
    }
}

/// The [`TOP`] largest changes of the three lists, as (list, index).
fn largest(lists: &[&Vec<Entry>; 3]) -> Vec<(usize, usize)> {
    let mut all: Vec<(usize, usize)> = Vec::new();
    for (k, list) in lists.iter().enumerate() {
        all.extend((0..list.len()).map(|i| (k, i)));
    }
    all.sort_by_key(|&(k, i)| std::cmp::Reverse(lists[k][i].impact().unsigned_abs()));
    all.truncate(TOP);
    all
}

/// The rest of one list (`what`: added, changed or removed), closed: its
/// paths and bytes in the summary, `more` when some are shown above.
fn rest_part(
    es: &[&Entry],
    what: &str,
    weight: usize,
    more: bool,
    line: &dyn Fn(&Entry) -> String,
) -> Option<Closed> {
    if es.is_empty() {
        return None;
    }
    let n: usize = es.iter().map(|e| e.paths()).sum();
    let bytes: i128 = es.iter().map(|e| e.impact()).sum();
    let other = if more { "more " } else { "" };
    let kind = if what == "changed" {
        ", rebuilt or another version"
    } else {
        ""
    };
    Some(Closed {
        head: format!(
            "\n<details><summary>{n} {other}path{} {what}{kind}: {}</summary>\n\n",
            if n == 1 { "" } else { "s" },
            iec_delta(bytes)
        ),
        items: es.iter().map(|e| format!("- {}\n", line(e))).collect(),
        what: format!("{what} paths"),
        weight,
    })
}
