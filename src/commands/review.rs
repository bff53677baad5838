//! Not a command: the review options `diff` and `check` share
//! (`--format`, `--evidence`, `--nix-file`, `--markdown-limit`) and how
//! their report is printed, and appended as markdown to the job summary
//! when `GITHUB_STEP_SUMMARY` names one.

use std::io::Write;

use clap::Args;

use nix_heft_report::TextOptions;
use nix_heft_report::review::{COMMENT_LIMIT, Format, NixFile, Reviewed};

use super::{Context, Emit};

/// The smallest `--markdown-limit`: the summary and the note on what was
/// cut must fit.
const MIN_LIMIT: usize = 1800;

/// The review options of `diff` and `check`.
#[derive(Args, Debug, Clone)]
pub struct ReviewArgs {
    /// Output: text, json, github (workflow annotations) or markdown (a PR
    /// comment). With every format, `--json` too, the markdown is also
    /// appended to $GITHUB_STEP_SUMMARY when that is set.
    #[arg(long, value_name = "FORMAT", value_parser = super::OneOf(&["text", "json", "github", "markdown"]))]
    pub format: Option<String>,
    /// List every hold of every edge instead of grouping them by kind and
    /// directory (text; JSON always has both).
    #[arg(long)]
    pub evidence: bool,
    /// The package's Nix file, for `file=` and `line=` in github
    /// annotations (FILE or FILE:LINE, as the repository names it).
    #[arg(long, value_name = "FILE[:LINE]", value_hint = clap::ValueHint::FilePath)]
    pub nix_file: Option<String>,
    /// Most characters of the markdown (PR comment and job summary);
    /// GitHub refuses comments over 65536. The least important parts are
    /// cut first, and the markdown says what was cut.
    #[arg(long, value_name = "CHARS", default_value_t = COMMENT_LIMIT, value_hint = clap::ValueHint::Other)]
    pub markdown_limit: usize,
}

/// The output format: `--format`, `--json` (which must agree), else
/// `file` (a config file's `format`), else text.
pub fn format(flag: Option<&str>, json: bool, file: Option<&str>) -> anyhow::Result<Format> {
    Ok(match (flag, json) {
        (Some(f), true) if f != "json" => {
            return Err(nix_heft_types::Error::Usage(format!(
                "--json and --format {f} disagree; give one"
            ))
            .into());
        }
        (Some(f), _) => Format::parse(f)?,
        (None, true) => Format::Json,
        (None, false) => Format::parse(file.unwrap_or("text"))?,
    })
}

impl ReviewArgs {
    /// The flags checked before any store is opened: `--markdown-limit`
    /// leaves room for the summary and the note on what was cut; the
    /// parsed `--nix-file`.
    pub fn checked(&self) -> anyhow::Result<Option<NixFile>> {
        if self.markdown_limit < MIN_LIMIT {
            return Err(nix_heft_types::Error::Usage(format!(
                "--markdown-limit {}: at least {MIN_LIMIT} characters",
                self.markdown_limit
            ))
            .into());
        }
        Ok(self.nix_file.as_deref().map(NixFile::parse).transpose()?)
    }

    /// Text options with `--evidence`.
    pub fn text_options(&self, ctx: &Context) -> TextOptions {
        self.text_options_bytes(ctx, false)
    }

    /// [`ReviewArgs::text_options`], with exact byte counts when `bytes`
    /// (the `--bytes` of `diff` and `impact`).
    pub fn text_options_bytes(&self, ctx: &Context, bytes: bool) -> TextOptions {
        TextOptions {
            every_line: self.evidence,
            exact_bytes: bytes,
            ..ctx.text_options()
        }
    }
}

/// Prints `report` as `format` asks, then appends its markdown to
/// `$GITHUB_STEP_SUMMARY` when that is set (as GitHub's own steps do: the
/// file collects every step's summary). Returns the exit code of its
/// problems (0, or 3 for a partial result), each printed once on stderr
/// whatever the format.
pub fn emit<R: Reviewed>(
    ctx: &Context,
    src: &dyn nix_heft_store::source::StoreSource,
    report: &R,
    format: Format,
    args: &ReviewArgs,
    at: Option<&NixFile>,
    opts: &TextOptions,
) -> anyhow::Result<std::process::ExitCode> {
    // JSON and text as every command prints them: the JSON with where
    // each path came from (`origins`), the text with it under
    // `--show-store`.
    let ctx = &Context {
        json: matches!(format, Format::Json),
        ..ctx.clone()
    };
    let shown = match format {
        Format::Json | Format::Text => Emit::Report(*opts),
        Format::Github => Emit::Rendered(report.render_github(at)),
        Format::Markdown => Emit::Rendered(report.render_markdown(args.markdown_limit)),
    };
    let code = ctx.emit(Some(src), report, shown)?;
    if let Some(file) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|f| !f.is_empty()) {
        let path = std::path::PathBuf::from(file);
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&path)?;
            f.write_all(report.render_markdown(args.markdown_limit).as_bytes())?;
            f.write_all(b"\n")
        };
        write().map_err(|source| nix_heft_types::Error::Io { path, source })?;
    }
    Ok(code)
}
