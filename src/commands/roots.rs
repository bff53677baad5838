//! `nix-heft roots [PATH…]`: what removing each garbage-collector root of
//! a local or chroot store would free, exactly as Nix's collector counts
//! it (issue 41). Flags → a [`RootsRequest`] → `gc::analyse` → one report.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use nix_heft_ops::gc::{self, Listing, RootsRequest};
use nix_heft_report::TextOptions;
use nix_heft_report::roots::{MarkedReport, RootsReport};
use nix_heft_report::roots_page::{PAGE_ROOTS, RootsPage};

use super::Context;
use super::context::Emit;

/// Rows of the text table when `--top` is not given.
const DEFAULT_TOP: usize = 25;

/// What removing each garbage-collector root of a local or chroot
/// store would free, exactly as Nix's collector counts it: every root
/// (links in gcroots and profiles, result links, generations, run-time
/// and temporary roots) with where it is, what it keeps, its age, its
/// closure and what removing it alone frees; stale links; groups
/// removed together (a profile's old generations, result links, direnv
/// roots, roots older than --older-than), counted jointly; what is dead
/// now; and the commands that do it. Honours nix.conf's keep-outputs
/// and keep-derivations (and --option). Reads only: nix-heft deletes
/// nothing.
#[derive(Args, Debug)]
pub struct RootsArgs {
    /// Show only the roots at or below these locations (a `result` link, a
    /// project directory, a profile's directory), and what removing all of
    /// them together frees.
    #[arg(value_name = "PATH", value_hint = clap::ValueHint::AnyPath)]
    paths: Vec<PathBuf>,
    /// Rows of the table: the N roots that free the most (default 25;
    /// `--json` lists every root).
    #[arg(long, value_name = "N", value_hint = clap::ValueHint::Other)]
    top: Option<usize>,
    /// Every root in the table.
    #[arg(long, conflicts_with = "top")]
    all: bool,
    /// Days for the groups of old roots and generations (`30` or `30d`):
    /// a profile's generations as `nix-env --delete-generations 30d`
    /// picks them, every root older than that.
    #[arg(long, value_name = "DAYS", default_value = "30", value_parser = days, value_hint = clap::ValueHint::Other)]
    older_than: u64,
    /// Count bytes on disk too, as `du` does: every inode once, a file
    /// hard-linked by `nix-store --optimise` freed only with its last link
    /// outside `.links`. Reads every file's metadata in the store.
    #[arg(long)]
    disk: bool,
    /// List the store paths each root and group frees, and those dead now
    /// (JSON: `freed_paths`, `dead.paths`).
    #[arg(long)]
    list_paths: bool,
    /// Print exact byte counts instead of IEC units.
    #[arg(long)]
    bytes: bool,
    /// Also write a self-contained HTML page to FILE: a treemap of the
    /// roots by what each frees, a sortable table, the groups and every
    /// command (the 5,000 roots that free the most).
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    html: Option<PathBuf>,
    /// Browse the roots in the terminal instead: mark roots with space and
    /// see what removing them together frees; on leaving with q, the
    /// commands that remove the marked ones are printed.
    #[arg(long, conflicts_with = "html")]
    browse: bool,
}

impl RootsArgs {
    /// What both the table and the browser ask: the locations, the days
    /// and the disk figure, over the collector's settings.
    fn request(
        &self,
        ctx: &Context,
        store: &nix_heft_store::source::LocalStore,
    ) -> nix_heft_ops::Result<RootsRequest> {
        Ok(RootsRequest {
            older_than_days: self.older_than,
            under: self.paths.iter().flat_map(|p| gc::locations(p)).collect(),
            disk: self.disk,
            ..ctx.collector_request(store)?
        })
    }
}

/// `30` or `30d`: a positive number of days.
fn days(s: &str) -> Result<u64, String> {
    let n = s.strip_suffix('d').unwrap_or(s);
    match n.parse::<u64>() {
        Ok(d) if d > 0 => Ok(d),
        _ => Err(format!("'{s}' is not a number of days (30 or 30d)")),
    }
}

/// Reads the roots and prints what each frees.
pub fn run(ctx: &Context, args: &RootsArgs) -> anyhow::Result<ExitCode> {
    if args.browse {
        return browse(ctx, args);
    }
    let store = ctx.open_local()?;
    let top = (!args.all).then(|| args.top.unwrap_or(DEFAULT_TOP));
    let req = RootsRequest {
        list_paths: args.list_paths,
        detail: match (ctx.json, top) {
            (false, Some(n)) if args.html.is_some() => Listing::Top(n.max(PAGE_ROOTS)),
            (false, Some(n)) => Listing::Top(n),
            _ => Listing::All,
        },
        ..args.request(ctx, &store)?
    };
    let analysis = ctx.reading_roots(&store, || gc::analyse(&store, &req))?;
    let page = match &args.html {
        Some(file) => {
            let html = RootsPage::new(&analysis).render_html();
            super::context::write_beside(file, html.as_bytes())?;
            Some(file.display().to_string())
        }
        None => None,
    };
    let report = RootsReport {
        analysis,
        top,
        page,
    };
    let shown = ctx.emit(
        None,
        &report,
        Emit::Report(TextOptions {
            exact_bytes: args.bytes,
            ..ctx.text_options()
        }),
    );
    super::keep_until_exit(report);
    shown
}

/// `roots --browse`: the terminal browser of roots; the commands for the
/// marked ones printed on leaving.
fn browse(ctx: &Context, args: &RootsArgs) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(nix_heft_types::Error::Usage(
            "roots --browse needs a terminal; use roots or roots --json when piped".into(),
        )
        .into());
    }
    let store = ctx.open_local()?;
    let req = RootsRequest {
        detail: Listing::Top(BROWSE_DETAIL),
        ..args.request(ctx, &store)?
    };
    let (analysis, collector) = ctx.reading_roots(&store, || gc::analyse_with(&store, &req))?;
    let mut app = nix_heft_browse::roots::RootsApp::new(&analysis, &collector, !ctx.colour(true));
    let commands = crate::browse_terminal::run_roots(&mut app)?;
    if commands.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    ctx.emit(
        None,
        &MarkedReport {
            marked: app.marked.len(),
            freed: app.joint,
            commands,
        },
        Emit::Report(ctx.text_options()),
    )
}

/// Roots the browser gets closures and commands for (those further down
/// show without).
const BROWSE_DETAIL: usize = 2_000;
