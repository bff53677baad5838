//! How a command's result reaches the user: the one emit of a report,
//! the run's warnings and problems once, notes, and what every report's
//! JSON gains (derivers, origins).

use std::io::Write;

use anyhow::Context as _;
use std::process::ExitCode;

use nix_heft_report::{Report, TextOptions};
use nix_heft_store::source::{self, StoreSource};
use nix_heft_types::problem::Problem;

use super::{Context, Mapped};

/// What [`Context::emit`] prints on stdout.
pub enum Emit {
    /// The report: JSON with `--json`, else its text laid out so.
    Report(TextOptions),
    /// A rendering the command chose (markdown, workflow commands).
    Rendered(String),
    /// The report's text on stderr, whatever `--json` says (trace's
    /// summary: stdout is its workload's).
    Stderr(TextOptions),
}

impl Context {
    /// The one place the binary prints a report: `shown` on stdout (the
    /// report as JSON with `--json`, else as text; or the rendering a
    /// command chose, markdown or workflow commands), then every warning
    /// of the run and the report's problems through [`Context::finish`].
    /// Returns the exit code. With `src`, the JSON gains `origins`, each
    /// store path it mentions with the store that answered for it and the
    /// key that signed its narinfo (when `src` knows: binary caches,
    /// several stores); text with `--show-store` ends with the same,
    /// grouped by store.
    pub fn emit<R: Report>(
        &self,
        src: Option<&dyn StoreSource>,
        report: &R,
        shown: Emit,
    ) -> anyhow::Result<ExitCode> {
        // Stdout is line-buffered with a 1 KiB buffer: a large JSON report
        // would be tens of thousands of writes (72,000 for `size` of a
        // 500,000-path store) without a buffer of our own.
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        match shown {
            Emit::Rendered(text) => out.write_all(text.as_bytes())?,
            Emit::Stderr(opts) => {
                std::io::stderr().write_all(report.render_text(&opts).as_bytes())?
            }
            Emit::Report(opts) => {
                // A store that names no origins (a local store) costs nothing.
                let origins = match src {
                    Some(src) if (self.json || self.show_store) && src.has_provenance() => {
                        origins_of(src, &serde_json::to_value(report)?)
                    }
                    _ => Default::default(),
                };
                let origins = (!origins.is_empty()).then_some(&origins);
                if self.json {
                    self.write_json(&mut out, report, origins)?;
                } else {
                    out.write_all(report.render_text(&opts).as_bytes())?;
                    if let Some(origins) = origins.filter(|_| self.show_store) {
                        write_origins(&mut out, origins)?;
                    }
                }
            }
        }
        out.flush()?;
        Ok(self.finish(report.problems()))
    }

    /// A note on stderr, said as it happens (a report's problems wait for
    /// [`Context::finish`]).
    pub fn note(&self, text: &str) {
        eprintln!("nix-heft: note: {text}");
    }

    /// The one place the binary prints a warning: the run's warnings (those
    /// its stores logged, taken from the log so none is said twice), then
    /// `problems`, each once on stderr. The exit code of a result with
    /// these problems: 0 when none, else [`nix_heft_types::exit::PARTIAL`].
    /// [`Context::emit`] calls it; a command with no report (browse) and a
    /// run that fails call it alone.
    pub fn finish(&self, problems: &[Problem]) -> ExitCode {
        for w in self.log.take_warnings() {
            eprintln!("nix-heft: warning: {w}");
        }
        for p in problems {
            eprintln!("nix-heft: warning: {}", p.display());
        }
        ExitCode::from(if problems.is_empty() {
            nix_heft_types::exit::SUCCESS
        } else {
            nix_heft_types::exit::PARTIAL
        })
    }

    /// The outputs read as their derivers this run (`--derivation`).
    pub fn derivers(&self) -> Vec<Mapped> {
        self.mapped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A report's JSON on one line, with `derivers` (outputs read as
    /// their derivers, when any) and `origins` (when given) appended as its
    /// last keys: the report's own keys stay in the order its struct gives
    /// them.
    fn write_json<R: Report>(
        &self,
        out: &mut impl Write,
        report: &R,
        origins: Option<&std::collections::BTreeMap<String, source::Provenance>>,
    ) -> anyhow::Result<()> {
        let derivers = self.derivers();
        serde_json::to_writer(
            &mut *out,
            &RunJson {
                report,
                derivers,
                origins,
            },
        )?;
        writeln!(out)?;
        Ok(())
    }
}

/// A report's JSON with what the run adds to every command's: the outputs
/// read as their derivers (`derivers`, with `--derivation`) and where each
/// store path it names came from (`origins`, for stores that know), as
/// fields after the report's own.
#[derive(serde::Serialize)]
struct RunJson<'a, R: serde::Serialize> {
    #[serde(flatten)]
    report: &'a R,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    derivers: Vec<Mapped>,
    #[serde(skip_serializing_if = "Option::is_none")]
    origins: Option<&'a std::collections::BTreeMap<String, source::Provenance>>,
}

/// Where each path of a report came from, grouped by store, after its
/// text (`--show-store`).
fn write_origins(
    out: &mut impl Write,
    origins: &std::collections::BTreeMap<String, source::Provenance>,
) -> std::io::Result<()> {
    let mut by_store: std::collections::BTreeMap<String, Vec<&String>> = Default::default();
    for (p, o) in origins {
        by_store.entry(o.label()).or_default().push(p);
    }
    writeln!(out, "\nwhere the paths came from:")?;
    for (store, paths) in by_store {
        writeln!(out, "  {store}:")?;
        for p in paths {
            writeln!(out, "    {p}")?;
        }
    }
    Ok(())
}

/// Each store path `value` mentions (in any string: a path, a file under
/// it) with where `src` says it came from.
fn origins_of(
    src: &dyn StoreSource,
    value: &serde_json::Value,
) -> std::collections::BTreeMap<String, source::Provenance> {
    fn walk(v: &serde_json::Value, f: &mut dyn FnMut(&str)) {
        match v {
            serde_json::Value::String(s) => f(s),
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, f)),
            serde_json::Value::Object(m) => m.values().for_each(|x| walk(x, f)),
            _ => {}
        }
    }
    let dir = format!("{}/", src.store_dir());
    let mut out = std::collections::BTreeMap::new();
    walk(value, &mut |s| {
        let Some(rest) = s.strip_prefix(&dir) else {
            return;
        };
        let base = rest.split('/').next().unwrap_or(rest);
        let full = format!("{dir}{base}");
        if out.contains_key(&full) {
            return;
        }
        if let Ok(p) = nix_heft_format::StorePath::parse(src.store_dir(), &full)
            && let Some(o) = src.provenance(&p)
        {
            out.insert(full, o);
        }
    });
    out
}

/// Writes `bytes` to `output` through a temporary file beside it, renamed
/// over it: a failed run never leaves half a report where the last one was.
pub fn write_beside(output: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)
        .with_context(|| format!("creating a file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .with_context(|| format!("writing {}", output.display()))?;
    // A report is for sharing: readable by all, as files written without a
    // temporary would be (tempfile creates them 0600).
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.persist(output)
        .with_context(|| format!("writing {}", output.display()))?;
    Ok(())
}
