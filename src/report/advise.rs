//! The `advise` report: ranked actions with savings, evidence, safety and
//! snippets.

use serde::{Deserialize, Serialize};

use super::{Report, TextOptions};
use crate::plan::advise::Action;
use crate::problem::Problem;

/// The `advise` report; also its `--json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdviceReport {
    /// The roots.
    pub roots: Vec<String>,
    /// Their closure size now.
    pub closure_size: u64,
    /// Actions, biggest saving first (unsimulated ones last).
    pub actions: Vec<Action>,
    /// The `--min-saving` threshold in bytes: referrers whose bound is
    /// below it were not read.
    pub min_saving: u64,
    /// Referrers not read because no action on them could save
    /// `min_saving` ([`crate::graph::bounds`]), largest bound first.
    pub not_examined: Vec<NotExamined>,
    /// Files or paths that could not be read.
    pub problems: Vec<Problem>,
}

/// A referrer `advise` did not read, with the most any action on it could
/// save.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotExamined {
    /// The store path.
    pub referrer: String,
    /// Upper bound on any saving from changing it, in bytes.
    pub max_saving: u64,
}

impl Report for AdviceReport {
    fn problems(&self) -> &[Problem] {
        &self.problems
    }

    fn render_text(&self, _: &TextOptions) -> String {
        use crate::units::iec;
        let names = super::display_names(
            self.roots
                .iter()
                .chain(
                    self.actions
                        .iter()
                        .flat_map(|a| a.removes.iter().chain([&a.package])),
                )
                .map(String::as_str),
        );
        let pkg_name = |p: &String| names[p].as_str();
        let mut out = format!(
            "closure of {}: {}; {} action(s)\n",
            self.roots
                .iter()
                .map(&pkg_name)
                .collect::<Vec<_>>()
                .join(", "),
            iec(self.closure_size),
            self.actions.len()
        );
        for (i, a) in self.actions.iter().enumerate() {
            let saving = match (a.saving, a.saving_percent) {
                (Some(s), Some(p)) => format!("saves {} ({p:.1}%)", iec(s)),
                _ => "saving not simulated".to_string(),
            };
            out.push_str(&format!(
                "\n{}. [{}] {} in {} — {saving}, {}\n   {}\n",
                i + 1,
                serde_json::to_value(a.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                if a.removes.is_empty() {
                    "no reference".to_string()
                } else {
                    a.removes
                        .iter()
                        .map(&pkg_name)
                        .collect::<Vec<_>>()
                        .join(", ")
                },
                pkg_name(&a.package),
                serde_json::to_value(a.safety)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                a.reason
            ));
            if !a.evidence.is_empty() {
                let shown: Vec<&str> = a.evidence.iter().take(4).map(String::as_str).collect();
                let more = a.evidence.len().saturating_sub(4);
                out.push_str(&format!(
                    "   evidence: {}{}\n",
                    shown.join(", "),
                    if more > 0 {
                        format!(" (+{more} more)")
                    } else {
                        String::new()
                    }
                ));
            }
            for l in a.snippet.lines() {
                out.push_str(&format!("   | {l}\n"));
            }
        }
        if !self.not_examined.is_empty() {
            out.push_str(&format!(
                "\n{} referrer(s) not examined: no action on them could save {} \
                 (--min-saving; 0 reads everything)\n",
                self.not_examined.len(),
                iec(self.min_saving)
            ));
        }
        super::refs::append_problems(&mut out, &self.problems);
        out
    }
}
