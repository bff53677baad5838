//! The ready-made report of a survey, computed with SQL over its tables:
//! the packages with the most savable bytes per verdict, references held
//! only by documentation or only for builds, dead RUNPATH entries, and
//! symlink farms. Text (aligned tables, IEC sizes) or JSON.

use std::fmt::Write;

use datafusion::prelude::SessionContext;
use nix_heft_format::store_path::name_of;
use nix_heft_report::table::{Align, Table};
use nix_heft_types::units::iec;
use serde::{Deserialize, Serialize};

use crate::query::rows;
use crate::run::RunSummary;

/// A referrer with the bytes its references of one verdict hold.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TopPackage {
    /// The verdict of the edges counted.
    pub verdict: String,
    /// The referrer.
    pub referrer: String,
    /// Its edges with that verdict.
    pub edges: u64,
    /// Sum over those edges of `saving_max` (each edge cut alone).
    pub saving: u64,
    /// Surveyed roots whose closure holds the referrer.
    pub dependents: u64,
}

/// One edge of a list.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EdgeRow {
    /// The referrer.
    pub referrer: String,
    /// The reference.
    pub reference: String,
    /// The edge's verdict.
    pub verdict: Option<String>,
    /// Files holding it.
    pub holding_files: u64,
    /// What cutting it alone saves from the referrer's closure.
    pub saving_max: u64,
    /// Surveyed roots whose closure holds the referrer.
    pub dependents: u64,
}

/// A dead RUNPATH entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeadRunpath {
    /// The ELF file's store path.
    pub referrer: String,
    /// The path the entry names.
    pub reference: String,
    /// The ELF file.
    pub file: String,
    /// Why it is dead.
    pub reason: String,
    /// The edge's verdict: `dead` when nothing else holds the reference.
    pub edge_verdict: Option<String>,
    /// What cutting the whole edge saves.
    pub saving_max: u64,
}

/// A problem of the survey.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProblemRow {
    /// The path concerned.
    pub path: String,
    /// The file, if one.
    pub file: Option<String>,
    /// The problem kind.
    pub kind: String,
    /// What happened.
    pub message: String,
}

/// The report; also the `--json` document of `run` and `report`.
#[derive(Debug, Clone, Serialize)]
pub struct SurveyReport {
    /// What the run did.
    pub survey: RunSummary,
    /// Per verdict (every one but runtime), the top referrers by savable bytes.
    pub top_by_verdict: Vec<TopPackage>,
    /// Edges held only by documentation.
    pub docs_only: Vec<EdgeRow>,
    /// Edges held only by build-time files.
    pub build_only: Vec<EdgeRow>,
    /// Dead RUNPATH entries.
    pub dead_runpaths: Vec<DeadRunpath>,
    /// Edges held by symlinks alone, most links first.
    pub symlink_farms: Vec<EdgeRow>,
    /// What could not be read.
    pub problems: Vec<ProblemRow>,
}

const EDGE_COLUMNS: &str = "e.referrer, e.reference, e.verdict, e.holding_files, e.saving_max, \
     p.dependents FROM edges e JOIN paths p ON p.path = e.referrer";

impl SurveyReport {
    /// Computes the report from the tables registered in `ctx`, `top` rows
    /// per list.
    pub async fn compute(
        ctx: &SessionContext,
        survey: RunSummary,
        top: usize,
    ) -> anyhow::Result<SurveyReport> {
        let top_by_verdict = rows(
            ctx,
            &format!(
                "SELECT verdict, referrer, edges, saving, dependents FROM ( \
                   SELECT *, row_number() OVER (PARTITION BY verdict \
                     ORDER BY saving DESC, referrer) AS rank FROM ( \
                     SELECT e.verdict, e.referrer, count(*) AS edges, \
                            sum(e.saving_max) AS saving, max(p.dependents) AS dependents \
                     FROM edges e JOIN paths p ON p.path = e.referrer \
                     WHERE e.verdict IS NOT NULL AND e.verdict <> 'runtime' \
                           AND e.referrer <> e.reference \
                     GROUP BY e.verdict, e.referrer)) \
                 WHERE rank <= {top} AND saving > 0 \
                 ORDER BY CASE verdict WHEN 'dead' THEN 0 WHEN 'docs' THEN 1 \
                   WHEN 'build' THEN 2 ELSE 3 END, saving DESC, referrer"
            ),
        )
        .await?;
        let only = |v: &str| {
            format!(
                "SELECT {EDGE_COLUMNS} WHERE e.verdict = '{v}' AND e.referrer <> e.reference \
                 ORDER BY e.saving_max DESC, e.referrer, e.reference LIMIT {top}"
            )
        };
        let docs_only = rows(ctx, &only("docs")).await?;
        let build_only = rows(ctx, &only("build")).await?;
        let dead_runpaths = rows(
            ctx,
            &format!(
                "SELECT v.referrer, v.reference, v.file, v.reason, e.verdict AS edge_verdict, \
                   e.saving_max FROM evidence v JOIN edges e \
                   ON e.referrer = v.referrer AND e.reference = v.reference \
                 WHERE v.kind = 'elf-runpath' AND v.verdict = 'dead' \
                 ORDER BY e.saving_max DESC, v.referrer, v.file, v.reference LIMIT {top}"
            ),
        )
        .await?;
        let symlink_farms = rows(
            ctx,
            &format!(
                "SELECT {EDGE_COLUMNS} WHERE e.symlink_farm \
                 ORDER BY e.holding_files DESC, e.saving_max DESC, e.referrer, e.reference \
                 LIMIT {top}"
            ),
        )
        .await?;
        let problems = rows(ctx, "SELECT path, file, kind, message FROM problems").await?;
        Ok(SurveyReport {
            survey,
            top_by_verdict,
            docs_only,
            build_only,
            dead_runpaths,
            symlink_farms,
            problems,
        })
    }

    /// The text rendering: a summary line and one table per list.
    pub fn render_text(&self, width: Option<usize>) -> String {
        let s = &self.survey;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "surveyed {} paths ({} roots) of {} in {} partitions ({} already written), \
             {} read; tables in {}",
            s.paths,
            s.roots,
            s.store,
            s.partitions,
            s.partitions_skipped,
            iec(s.bytes_read),
            s.dir
        );
        let section = |out: &mut String, title: &str, t: Option<Table>| {
            let _ = writeln!(out, "\n{title}");
            match t {
                Some(t) => out.push_str(&t.render_fit(width, Default::default())),
                None => out.push_str("  (none)\n"),
            }
        };
        let t = (!self.top_by_verdict.is_empty()).then(|| {
            let mut t = Table::new(&[
                ("VERDICT", Align::Left),
                ("PACKAGE", Align::Left),
                ("EDGES", Align::Right),
                ("SAVABLE", Align::Right),
                ("DEPENDENTS", Align::Right),
            ]);
            t.keep(1);
            for r in &self.top_by_verdict {
                t.row(vec![
                    r.verdict.clone(),
                    name_of(&r.referrer).to_string(),
                    r.edges.to_string(),
                    iec(r.saving),
                    r.dependents.to_string(),
                ]);
            }
            t
        });
        section(
            &mut out,
            "Top packages by savable bytes (each edge cut alone, summed), per verdict:",
            t,
        );
        let edges = |rows: &[EdgeRow], files: &str| {
            (!rows.is_empty()).then(|| {
                let mut t = Table::new(&[
                    ("REFERRER", Align::Left),
                    ("REFERENCE", Align::Left),
                    (files, Align::Right),
                    ("SAVING", Align::Right),
                    ("DEPENDENTS", Align::Right),
                ]);
                t.keep(0);
                for r in rows {
                    t.row(vec![
                        name_of(&r.referrer).to_string(),
                        name_of(&r.reference).to_string(),
                        r.holding_files.to_string(),
                        iec(r.saving_max),
                        r.dependents.to_string(),
                    ]);
                }
                t
            })
        };
        section(
            &mut out,
            "References held only by documentation:",
            edges(&self.docs_only, "FILES"),
        );
        section(
            &mut out,
            "References held only for builds (headers, pkg-config, CMake):",
            edges(&self.build_only, "FILES"),
        );
        let t = (!self.dead_runpaths.is_empty()).then(|| {
            let mut t = Table::new(&[
                ("REFERRER", Align::Left),
                ("FILE", Align::Left),
                ("RUNPATH ENTRY INTO", Align::Left),
                ("EDGE", Align::Left),
                ("SAVING", Align::Right),
            ]);
            t.keep(0);
            for r in &self.dead_runpaths {
                t.row(vec![
                    name_of(&r.referrer).to_string(),
                    r.file.clone(),
                    name_of(&r.reference).to_string(),
                    r.edge_verdict.clone().unwrap_or_default(),
                    iec(r.saving_max),
                ]);
            }
            t
        });
        section(&mut out, "Dead RUNPATH entries:", t);
        section(
            &mut out,
            "Symlink farms (references held by symlinks alone):",
            edges(&self.symlink_farms, "LINKS"),
        );
        if !self.problems.is_empty() {
            let _ = writeln!(
                out,
                "\n{} problems; see the problems table",
                self.problems.len()
            );
        }
        out
    }
}
