//! The `check` report: whether every rule holds, and each violation with
//! its explanation, as text, JSON, GitHub workflow annotations or a
//! markdown summary for a pull-request comment.

use serde::{Deserialize, Serialize};

use super::diff::files_of;
use super::{Report, TextOptions};
use crate::gate::{Baseline, Violation};
use crate::problem::Problem;
use crate::store_path::name_of;
use crate::units::{iec, iec_delta};

/// Output formats of `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Plain text.
    Text,
    /// The serde document.
    Json,
    /// GitHub Actions workflow commands (`::error ...`).
    Github,
    /// A markdown summary.
    Markdown,
}

impl Format {
    /// Parses `text`, `json`, `github` or `markdown`.
    pub fn parse(s: &str) -> crate::Result<Format> {
        Ok(match s {
            "text" => Format::Text,
            "json" => Format::Json,
            "github" => Format::Github,
            "markdown" => Format::Markdown,
            _ => {
                return Err(crate::Error::Usage(format!(
                    "unknown format '{s}': use text, json, github or markdown"
                )));
            }
        })
    }
}

/// The whole report; also the `--json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    /// True when every rule holds.
    pub ok: bool,
    /// The roots checked.
    pub roots: Vec<String>,
    /// Their closure size.
    pub closure_size: u64,
    /// The baseline of `--max-growth`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
    /// The rules, as given.
    pub rules: Vec<String>,
    /// Every broken rule.
    pub violations: Vec<Violation>,
    /// What could not be read.
    pub problems: Vec<Problem>,
}

impl CheckReport {
    /// The display names of every path the report shows ([`super::Names`]).
    fn names(&self) -> super::Names {
        let label = self
            .baseline
            .iter()
            .flat_map(|b| b.label.split(", "))
            .filter(|p| p.contains('/'));
        let mut paths: Vec<&str> = self.roots.iter().map(String::as_str).chain(label).collect();
        for v in &self.violations {
            paths.extend(v.chain.iter().flatten().map(String::as_str));
            for e in v.evidence.iter().flatten() {
                paths.push(&e.referrer);
                paths.push(&e.reference);
            }
            for c in &v.contributors {
                paths.push(&c.path);
                paths.extend(c.referrer.as_deref());
            }
            paths.extend(v.actions.iter().map(|a| a.action.package.as_str()));
        }
        super::Names::new(paths)
    }

    /// The explanation lines of one violation, without the headline.
    fn explain(v: &Violation, names: &super::Names) -> Vec<String> {
        let name_of = |p: &'_ str| names.get(p).to_string();
        let mut out = Vec::new();
        if v.contributors.iter().any(|c| c.nar_size.is_some()) {
            // Growth over a baseline whose paths are known: what is new, as
            // `diff` lists it, each with what pulled it in.
            out.push("paths added since the baseline, largest first:".to_string());
            for c in &v.contributors {
                let why = match &c.referrer {
                    None => "a root".to_string(),
                    Some(r) if c.evidence.is_empty() => format!("pulled in by {}", name_of(r)),
                    Some(r) => {
                        format!("pulled in by {} from {}", name_of(r), files_of(&c.evidence))
                    }
                };
                out.push(format!(
                    "  {:>10}  {}  {why}",
                    iec(c.nar_size.unwrap_or(0)),
                    name_of(&c.path)
                ));
            }
        } else if !v.contributors.is_empty() {
            out.push("top contributors by added size:".to_string());
            for c in &v.contributors {
                out.push(format!("  {:>10}  {}", iec(c.added_size), name_of(&c.path)));
            }
        }
        if !v.actions.is_empty() {
            out.push("single actions from advise (savings overlap, do not add up):".to_string());
            for a in &v.actions {
                let saving = a.action.saving.map(iec).unwrap_or_default();
                out.push(format!(
                    "  saves {saving}{}: {} in {} — {}",
                    if a.enough_alone { ", enough alone" } else { "" },
                    serde_json::to_value(a.action.kind)
                        .ok()
                        .and_then(|k| k.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    name_of(&a.action.package),
                    a.action.reason
                ));
            }
        }
        if let Some(n) = &v.note {
            out.push(format!("note: {n}"));
        }
        if let Some(chain) = &v.chain {
            let shown: Vec<String> = chain.iter().map(|p| name_of(p)).collect();
            out.push(format!("chain: {}", shown.join(" → ")));
        }
        for e in v.evidence.iter().flatten() {
            let held = if e.unavailable {
                "(no file contents in this source)".to_string()
            } else if e.evidence.is_empty() {
                "(registered, but no occurrence found)".to_string()
            } else {
                files_of(&e.evidence)
            };
            out.push(format!(
                "{} → {}: {held}",
                name_of(&e.referrer),
                name_of(&e.reference)
            ));
        }
        out
    }

    fn roots_shown(&self, names: &super::Names) -> String {
        short(&self.roots.join(", "), names)
    }

    /// GitHub Actions workflow commands: one `::error` per violation (its
    /// explanation on the following lines of the same annotation), a
    /// `::warning` per problem, a `::notice` when all holds.
    pub fn render_github(&self) -> String {
        // Workflow-command escaping: data escapes %, CR and LF; properties
        // also escape : and ,.
        let data = |s: &str| {
            s.replace('%', "%25")
                .replace('\r', "%0D")
                .replace('\n', "%0A")
        };
        let prop = |s: &str| data(s).replace(':', "%3A").replace(',', "%2C");
        let names = self.names();
        let mut out = String::new();
        for v in &self.violations {
            let mut msg = vec![v.detail.clone()];
            msg.extend(Self::explain(v, &names));
            out.push_str(&format!(
                "::error title={}::{}\n",
                prop(&format!("nix-heft check: {}", v.rule)),
                data(&msg.join("\n"))
            ));
        }
        for p in &self.problems {
            out.push_str(&format!(
                "::warning title={}::{}\n",
                prop("nix-heft check: partial read"),
                data(&p.display())
            ));
        }
        if self.ok {
            out.push_str(&format!(
                "::notice title={}::{}\n",
                prop("nix-heft check"),
                data(&format!(
                    "closure of {} is {}; every rule holds",
                    self.roots_shown(&names),
                    iec(self.closure_size)
                ))
            ));
        }
        out
    }

    /// A markdown summary: before/after table, then the violations.
    pub fn render_markdown(&self) -> String {
        let cell = |s: &str| s.replace('|', "\\|");
        let names = self.names();
        let mut out = format!(
            "### nix-heft check: {}\n\n",
            if self.ok {
                "✅ every rule holds".to_string()
            } else {
                format!("❌ {} violation(s)", self.violations.len())
            }
        );
        out.push_str("| | closure |\n| --- | ---: |\n");
        if let Some(b) = &self.baseline {
            out.push_str(&format!(
                "| before ({}) | {} |\n",
                cell(&short(&b.label, &names)),
                iec(b.closure_size)
            ));
        }
        out.push_str(&format!(
            "| {} ({}) | {} |\n",
            if self.baseline.is_some() {
                "after"
            } else {
                "now"
            },
            cell(&self.roots_shown(&names)),
            iec(self.closure_size)
        ));
        if let Some(b) = &self.baseline {
            out.push_str(&format!(
                "| change | {} |\n",
                iec_delta(self.closure_size as i128 - b.closure_size as i128)
            ));
        }
        if !self.rules.is_empty() {
            out.push_str(&format!(
                "\nRules: {}\n",
                self.rules
                    .iter()
                    .map(|r| format!("`{r}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !self.violations.is_empty() {
            out.push_str("\n| rule | violation |\n| --- | --- |\n");
            for v in &self.violations {
                out.push_str(&format!("| `{}` | {} |\n", v.rule, cell(&v.detail)));
            }
            for (i, v) in self.violations.iter().enumerate() {
                let lines = Self::explain(v, &names);
                if lines.is_empty() {
                    continue;
                }
                out.push_str(&format!(
                    "\n<details><summary>{}. {}</summary>\n\n```\n{}\n```\n</details>\n",
                    i + 1,
                    v.rule,
                    lines.join("\n")
                ));
            }
        }
        if !self.problems.is_empty() {
            out.push_str(&format!(
                "\n⚠️ partial read, {} problem(s):\n\n",
                self.problems.len()
            ));
            for p in &self.problems {
                out.push_str(&format!("- {}\n", cell(&p.display())));
            }
        }
        out
    }
}

/// Store paths in a comma-separated list by their display names (other
/// items, such as a file name, as they are).
fn short(list: &str, names: &super::Names) -> String {
    list.split(", ")
        .map(|p| {
            if p.contains('/') && name_of(p).len() < p.len() {
                names.get(p).to_string()
            } else {
                p.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Report for CheckReport {
    fn problems(&self) -> &[Problem] {
        &self.problems
    }

    fn render_text(&self, opts: &TextOptions) -> String {
        use super::style::wrap_hanging;
        let names = self.names();
        let mut head = format!(
            "closure of {}: {}",
            self.roots_shown(&names),
            iec(self.closure_size)
        );
        if let Some(b) = &self.baseline {
            head.push_str(&format!(
                " (baseline {}: {}, {})",
                short(&b.label, &names),
                iec(b.closure_size),
                iec_delta(self.closure_size as i128 - b.closure_size as i128)
            ));
        }
        let mut out = wrap_hanging(&head, opts.width, "", "  ");
        if self.ok {
            out.push_str(&wrap_hanging(
                &format!("ok: every rule holds ({})", self.rules.join(", ")),
                opts.width,
                "",
                "  ",
            ));
        } else {
            out.push_str(&format!("{} violation(s):\n", self.violations.len()));
            for v in &self.violations {
                out.push('\n');
                out.push_str(&wrap_hanging(
                    &format!("[{}] {}", v.rule, v.detail),
                    opts.width,
                    "",
                    "  ",
                ));
                for l in Self::explain(v, &names) {
                    // Keep each line's own indent; continuation lines
                    // deeper.
                    let text = l.trim_start();
                    let lead = format!("  {}", &l[..l.len() - text.len()]);
                    out.push_str(&opts.style.paths(&wrap_hanging(
                        text,
                        opts.width,
                        &lead,
                        &format!("{lead}    "),
                    )));
                }
            }
        }
        super::refs::append_problems(&mut out, &self.problems, opts.width);
        out
    }
}
