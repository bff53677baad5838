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
    /// Every non-breaking action applied together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::plan::joint::Plan>,
    /// Files or paths that could not be read.
    pub problems: Vec<Problem>,
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
        if let Some(plan) = self.plan.as_ref().filter(|p| !p.actions.is_empty()) {
            let saved = plan.closure_before.saturating_sub(plan.closure_after);
            out.push_str(&format!(
                "\nplan: every non-breaking action together, lowest package first: closure {} → {} (saves {})\n",
                iec(plan.closure_before),
                iec(plan.closure_after),
                iec(saved)
            ));
            if let Some(t) = &plan.targets {
                out.push_str(&format!("  targets: {t}\n"));
            }
            for (i, st) in plan.actions.iter().enumerate() {
                out.push_str(&format!(
                    "  {}. [{}] {}: share {} (alone {})\n",
                    i + 1,
                    serde_json::to_value(st.kind)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    crate::store_path::name_of(&st.package),
                    iec(st.share),
                    iec(st.saving_alone)
                ));
                for l in st.snippet.lines() {
                    out.push_str(&format!("     | {l}\n"));
                }
            }
            for r in &plan.rebuilds {
                out.push_str(&format!(
                    "  rebuilt: {} (depends on {})\n",
                    crate::store_path::name_of(&r.path),
                    r.because
                        .iter()
                        .map(|b| crate::store_path::name_of(b))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        super::refs::append_problems(&mut out, &self.problems);
        out
    }
}
