//! `diff --format github`: workflow annotations, within what GitHub shows
//! per step.

use super::entry::Entry;
use super::{DiffReport, review};
use nix_heft_types::units::{iec, iec_delta};

/// Changes annotated one by one in `--format github`: with the summary
/// before and the count of the rest after, ten notices, what GitHub shows
/// per step.
const ANNOTATED: usize = review::ANNOTATIONS_PER_LEVEL - 2;

impl DiffReport {
    /// The closure's annotations, then `--derivation`'s.
    pub(super) fn github(&self, at: Option<&review::NixFile>) -> String {
        let mut out = self.render_github_at(at);
        if let Some(d) = &self.derivations {
            out.push_str(&d.render_github(at));
        }
        out
    }

    /// GitHub workflow commands, within what GitHub shows per step (ten
    /// notices): a notice with the summary and the largest package
    /// changes, one per largest change (paths added together as one) with
    /// what pulls it in, then one that counts the rest and says where they
    /// are; a warning for a partial read. `at` is the package's Nix file.
    fn render_github_at(&self, at: Option<&review::NixFile>) -> String {
        let names = self.names();
        let name = |p: &str| names.get(p).to_string();
        let mut out = self.summary_annotation(&name).render(at);
        let (added, changed, removed) = self.entries();
        let mut all: Vec<&Entry> = added
            .iter()
            .chain(&changed)
            .chain(&removed)
            // Roots are in the summary already.
            .filter(
                |e| !matches!(e, Entry::Added(c) | Entry::Removed(c) if c.why.referrer.is_none()),
            )
            .collect();
        all.sort_by_key(|e| std::cmp::Reverse(e.impact().unsigned_abs()));
        for e in all.iter().take(ANNOTATED) {
            out.push_str(&self.entry_annotation(e, &name).render(at));
        }
        if all.len() > ANNOTATED {
            out.push_str(&rest_annotation(&all[ANNOTATED..]).render(at));
        }
        if !self.problems.is_empty() {
            out.push_str(
                &review::Annotation {
                    level: "warning",
                    title: "nix-heft diff: partial read".into(),
                    lines: self.problems.iter().map(|p| p.display()).collect(),
                }
                .render(at),
            );
        }
        out
    }

    /// The first notice: the summary, the roots, the four largest package
    /// changes and how many more.
    fn summary_annotation(&self, name: &dyn Fn(&str) -> String) -> review::Annotation {
        let mut lines = vec![self.summary(), self.roots_line(name)];
        for p in self.packages_by_impact().iter().take(4) {
            lines.push(format!(
                "{} {} ({})",
                p.name,
                p.transition,
                iec_delta(p.size_delta)
            ));
        }
        if self.packages.len() > 4 {
            lines.push(format!(
                "and {} more packages changed",
                self.packages.len() - 4
            ));
        }
        review::Annotation {
            level: "notice",
            title: "nix-heft diff".into(),
            lines,
        }
    }

    /// One change's notice: its line, the chain above it, a group's paths.
    fn entry_annotation(&self, e: &Entry, name: &dyn Fn(&str) -> String) -> review::Annotation {
        let mut lines = vec![self.entry_line(e, name, review::plain, &iec)];
        let chain = Self::chain_note(e, name);
        if let Some(c) = chain.strip_prefix("; ") {
            lines.push(c.to_string());
        }
        if let Entry::Group(g) = e {
            let sign = if g.new { "+" } else { "-" };
            let all: Vec<String> = g
                .members
                .iter()
                .map(|c| format!("{} ({sign}{})", name(&c.path), iec(c.nar_size)))
                .collect();
            lines.push(format!("paths: {}", all.join(", ")));
        }
        let title = match e {
            Entry::Group(g) => format!(
                "nix-heft diff: {} {}paths {}",
                g.members.len(),
                g.pattern
                    .as_deref()
                    .map(|p| format!("{p} "))
                    .unwrap_or_default(),
                if g.new { "added" } else { "removed" }
            ),
            Entry::Added(c) => format!("nix-heft diff: {} added", name(&c.path)),
            Entry::Changed(c, _) => format!("nix-heft diff: {} changed", name(&c.path)),
            Entry::Removed(c) => format!("nix-heft diff: {} removed", name(&c.path)),
        };
        review::Annotation {
            level: "notice",
            title: format!("{title} ({})", iec_delta(e.impact())),
            lines,
        }
    }
}

/// The last notice: how many changes were not annotated, and where they
/// are.
fn rest_annotation(rest: &[&Entry]) -> review::Annotation {
    review::Annotation {
        level: "notice",
        title: "nix-heft diff: more changes".into(),
        lines: vec![format!(
            "{} more changes ({} paths, {}): the job summary lists them, \
             `nix-heft diff --format text` all of them",
            rest.len(),
            rest.iter().map(|e| e.paths()).sum::<usize>(),
            iec_delta(rest.iter().map(|e| e.impact()).sum())
        )],
    }
}
