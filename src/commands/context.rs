//! What every command shares: the global flags, opening stores with them,
//! how text is laid out (width, colour), progress on a terminal, printing
//! a report and its exit code.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};

use nix_heft_core::classify::Classified;
use nix_heft_core::graph::NodeId;
use nix_heft_core::graph::{Graph, ReadRequest};
use nix_heft_core::pipeline::{self, Progress};
pub use nix_heft_core::resolve::Mapped;
use nix_heft_core::resolve::{Resolve, ResolveError, Watch};
use nix_heft_eval::installable::Options;
use nix_heft_format::StorePath;
use nix_heft_report::{Report, TextOptions};
use nix_heft_store::open::{OpenError, Opener};
use nix_heft_store::source::build_graph::DerivationSource;
use nix_heft_store::source::{self, RunLog, StoreSource};
use nix_heft_trace::file::TraceSet;
use nix_heft_types::problem::Problem;

/// What [`Context::emit`] prints on stdout.
pub enum Shown {
    /// The report: JSON with `--json`, else its text laid out so.
    Report(TextOptions),
    /// A rendering the command chose (markdown, workflow commands).
    Rendered(String),
    /// The report's text on stderr, whatever `--json` says (trace's
    /// summary: stdout is its workload's).
    Stderr(TextOptions),
}

/// `--color` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Color {
    /// On a terminal, unless NO_COLOR is set.
    Auto,
    /// Always, even when piped or NO_COLOR is set.
    Always,
    /// Never.
    Never,
}

/// The stores of a comparison ([`Context::open_sides`]).
pub struct Sides {
    both: Box<dyn StoreSource>,
    before: Option<Box<dyn StoreSource>>,
    after: Option<Box<dyn StoreSource>>,
}

impl Sides {
    /// Where BEFORE is read.
    pub fn before(&self) -> &dyn StoreSource {
        self.before.as_deref().unwrap_or(self.both.as_ref())
    }

    /// Where AFTER is read.
    pub fn after(&self) -> &dyn StoreSource {
        self.after.as_deref().unwrap_or(self.both.as_ref())
    }
}

/// The global flags, as every command sees them.
#[derive(Debug, Clone)]
pub struct Context {
    /// The first `--store`.
    pub store: Option<String>,
    /// Every `--store`, `--substituters`, `--trusted-public-keys`,
    /// `--no-require-sigs`, `--netrc-file`, `--refresh`, `--verify` and
    /// `--http-connections`: what opens the run's stores (the store
    /// crate's one way to open them).
    pub opener: Opener,
    /// `--show-store`.
    pub show_store: bool,
    /// `--json`.
    pub json: bool,
    /// `--color`.
    pub color: Color,
    /// `-f`/`--file`, `--expr`, `--impure`, `--override-input`, `--option`:
    /// how installables are evaluated.
    pub installables: Options,
    /// `--derivation`: ROOTs mean derivations (an installable its `.drv`,
    /// instantiated by `nix`; a `.drv` itself), read in the build graph.
    pub derivation: bool,
    /// With `--derivation`: the output paths given as ROOT or DEP that
    /// were read as their derivers, for the note and the JSON.
    pub mapped: std::sync::Arc<std::sync::Mutex<Vec<Mapped>>>,
    /// The run's log: every store the run opens writes its warnings here,
    /// and [`Context::finish`] prints them, each once.
    pub log: std::sync::Arc<RunLog>,
}

impl Context {
    /// Opens a store as `--store` names it (`spec`), with the HTTP options
    /// of the command line (netrc, refresh, verify).
    pub fn open_store(&self, spec: Option<&str>) -> nix_heft_store::Result<Box<dyn StoreSource>> {
        self.opener
            .open_one(spec, std::sync::Arc::clone(&self.log))
            .map_err(open_error)
    }

    /// The global flags that open the stores this run read and say which
    /// narinfos it trusts, as words to put after `nix-heft` in a command
    /// that must read the same (the HTML page's "copy why command"):
    /// every `--store`, `--substituters`, `--netrc-file`,
    /// `--trusted-public-keys`, `--no-require-sigs`. Paths and `file://`
    /// URLs relative to this directory are made absolute, so the command
    /// runs from anywhere. `stores` replaces `--store` when given (the
    /// store a `--diff` page's AFTER was read from).
    pub fn store_args(&self, stores: Option<&[String]>) -> Vec<String> {
        let spec = self.opener.spec();
        let mut out = Vec::new();
        for s in stores.unwrap_or(&spec.stores) {
            out.push("--store".to_string());
            out.push(nix_heft_store::source::absolute_spec(s));
        }
        if let Some(s) = &spec.substituters {
            let urls: Vec<String> = s
                .split_ascii_whitespace()
                .map(nix_heft_store::source::absolute_spec)
                .collect();
            out.push("--substituters".to_string());
            out.push(urls.join(" "));
        }
        if let Some(f) = &spec.options.netrc_file {
            out.push("--netrc-file".to_string());
            let f = std::path::absolute(f).unwrap_or_else(|_| f.clone());
            out.push(f.display().to_string());
        }
        if let Some(k) = &spec.trusted_public_keys {
            out.push("--trusted-public-keys".to_string());
            out.push(k.clone());
        }
        if spec.no_require_sigs {
            out.push("--no-require-sigs".to_string());
        }
        out
    }

    /// This context for the build graph (`--derivation`).
    pub fn for_derivations(&self) -> Context {
        Context {
            derivation: true,
            ..self.clone()
        }
    }

    /// The build graph (`--derivation`): `.drv` files from the store
    /// `--store` names when it has files on disk (local or chroot), else
    /// from the local store, with outputs' sizes from the local store and
    /// then that cache.
    pub fn open_derivations(&self) -> nix_heft_store::Result<DerivationSource> {
        let src = self.open()?;
        if source::files_dir(src.as_ref()).is_some() {
            return Ok(DerivationSource::new(src, None));
        }
        let local = self.open_store(None)?;
        Ok(DerivationSource::new(local, Some(src)))
    }

    /// The store `--store` names (the local store by default), or, when
    /// several are named (`--store` repeated, `--substituters`), all of
    /// them read as one ([`source::Layered`]), with the run's signature
    /// policy: [`Opener::open`].
    pub fn open(&self) -> nix_heft_store::Result<Box<dyn StoreSource>> {
        self.opener
            .open_logged(std::sync::Arc::clone(&self.log))
            .map_err(open_error)
    }

    /// The one local or chroot store `--store` names, as itself (what
    /// reads the store's database and state directory: `roots`).
    pub fn open_local(&self) -> nix_heft_store::Result<source::LocalStore> {
        self.opener.open_local().map_err(open_error)
    }

    /// The stores `stores` names (`--before-store` repeated), read as one
    /// with the run's signature policy, HTTP options and no substituters:
    /// the run's own stores are replaced, not added to. The run's stores
    /// when none is named.
    pub fn open_stores(&self, stores: &[String]) -> nix_heft_store::Result<Box<dyn StoreSource>> {
        if stores.is_empty() {
            return self.open();
        }
        let mut spec = self.opener.spec().clone();
        spec.stores = stores.to_vec();
        spec.substituters = None;
        nix_heft_store::open::Opener::new(spec)
            .open_logged(std::sync::Arc::clone(&self.log))
            .map_err(open_error)
    }

    /// How the stores `open_stores(given)` reads are named in a report:
    /// as given, else the run's `--store`s and substituters, else `src`'s
    /// description (the local store).
    pub fn store_names(&self, given: &[String], src: &dyn StoreSource) -> Vec<String> {
        if !given.is_empty() {
            return given.to_vec();
        }
        let run: Vec<String> = self
            .store_args(None)
            .chunks(2)
            .filter(|w| w[0] == "--store" || w[0] == "--substituters")
            .map(|w| w[1].clone())
            .collect();
        if run.is_empty() {
            vec![src.describe()]
        } else {
            run
        }
    }

    /// A watch for a long library operation that names each step as it
    /// starts (`Some`) and when all is done (`None`): one spinner for the
    /// step under way.
    pub fn step_spinner(&self) -> impl Fn(Option<String>) + '_ {
        let spinner = std::sync::Mutex::new(None::<ProgressBar>);
        move |msg: Option<String>| {
            let mut s = spinner.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(pb) = s.take() {
                pb.finish_and_clear();
            }
            *s = msg.map(|m| self.spinner(&m));
        }
    }

    /// Whether more than one store is named (`--store` repeated or
    /// `--substituters`).
    pub fn several_stores(&self) -> bool {
        let spec = self.opener.spec();
        spec.stores.len() > 1 || spec.substituters.is_some()
    }

    /// The store a `--before-store` / `--after-store` flag names, if given.
    pub fn optional_store(
        &self,
        spec: &Option<String>,
    ) -> nix_heft_store::Result<Option<Box<dyn StoreSource>>> {
        spec.as_deref()
            .map(|s| self.open_store(Some(s)))
            .transpose()
    }

    /// The stores of a comparison: `--store`'s, and BEFORE's and AFTER's
    /// own when `--before-store` / `--after-store` name them.
    pub fn open_sides(
        &self,
        before_store: &Option<String>,
        after_store: &Option<String>,
    ) -> anyhow::Result<Sides> {
        Ok(Sides {
            both: self.open()?,
            before: self.optional_store(before_store)?,
            after: self.optional_store(after_store)?,
        })
    }

    /// Whether to colour what goes to a terminal (`tty`): `--color always`
    /// or `never` decide; `auto` colours a terminal unless NO_COLOR is set
    /// (no-color.org) or TERM is dumb. The one place this is decided, for
    /// text output and the browser alike.
    pub fn colour(&self, tty: bool) -> bool {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        match self.color {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => tty && !no_color && !dumb,
        }
    }

    /// How text is laid out for this run: the width of the terminal (or
    /// `COLUMNS`), full lines when piped; colour per [`Context::colour`].
    pub fn text_options(&self) -> TextOptions {
        let tty = std::io::stdout().is_terminal();
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|&w| w > 0)
            .or_else(|| {
                tty.then(terminal_size::terminal_size)
                    .flatten()
                    .map(|(w, _)| w.0 as usize)
            });
        TextOptions {
            width,
            style: nix_heft_report::style::Style {
                color: self.colour(tty),
            },
            ..TextOptions::default()
        }
    }

    /// A spinner on stderr while something slow runs, only for a person at
    /// a terminal and never with `--json`.
    pub fn spinner(&self, msg: &str) -> ProgressBar {
        if self.json
            || !std::io::stderr().is_terminal()
            || std::env::var_os("TERM").is_some_and(|t| t == "dumb")
        {
            return ProgressBar::hidden();
        }
        let pb = ProgressBar::new_spinner();
        pb.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("static template"),
        );
        pb.set_message(msg.to_string());
        pb.enable_steady_tick(std::time::Duration::from_millis(120));
        pb
    }

    /// `work` under a [`Context::spinner`] saying `msg`, cleared after.
    pub fn spinning<T>(&self, msg: &str, work: impl FnOnce() -> T) -> T {
        let pb = self.spinner(msg);
        let out = work();
        pb.finish_and_clear();
        out
    }

    /// Resolving arguments against `src` with this run's flags
    /// (`nix_heft_core::resolve`): a spinner while `nix` evaluates, a note
    /// on stderr for each output read as its deriver.
    fn resolve<'a>(&'a self, src: &'a dyn StoreSource, watch: &'a CliWatch<'a>) -> Resolve<'a> {
        Resolve {
            src,
            options: &self.installables,
            derivation: self.derivation,
            watch,
        }
    }

    /// ROOT arguments → store paths ([`Resolve::roots`]).
    pub fn roots(&self, src: &dyn StoreSource, args: &[String]) -> anyhow::Result<Vec<StorePath>> {
        let watch = CliWatch::new(self);
        self.resolve(src, &watch).roots(args).map_err(resolve_error)
    }

    /// Whether `arg` is an installable (evaluated by `nix`) rather than a
    /// store path, link or name.
    pub fn is_installable(&self, src: &dyn StoreSource, arg: &str) -> bool {
        let watch = CliWatch::new(self);
        self.resolve(src, &watch).is_installable(arg)
    }

    /// One ROOT argument that must name one path ([`Resolve::one_root`]).
    pub fn one_root(&self, src: &dyn StoreSource, arg: &str) -> anyhow::Result<StorePath> {
        let watch = CliWatch::new(self);
        self.resolve(src, &watch)
            .one_root(arg)
            .map_err(resolve_error)
    }

    /// A DEP argument within a loaded closure ([`Resolve::in_closure`]).
    pub fn in_closure(
        &self,
        src: &dyn StoreSource,
        g: &Graph,
        arg: &str,
    ) -> anyhow::Result<Vec<NodeId>> {
        let watch = CliWatch::new(self);
        self.resolve(src, &watch)
            .in_closure(g, arg)
            .map_err(resolve_error)
    }

    /// Resolve and load: the roots' closure as a graph, a spinner meanwhile.
    pub fn load(
        &self,
        src: &dyn StoreSource,
        roots: &[nix_heft_format::StorePath],
    ) -> anyhow::Result<Graph> {
        self.spinning(&format!("reading closure from {}", src.describe()), || {
            Graph::load(src, roots).context("loading the closure")
        })
    }

    /// BEFORE's and AFTER's closures, loaded at once behind one spinner.
    pub fn load_pair(
        &self,
        before: (&dyn StoreSource, &[nix_heft_format::StorePath]),
        after: (&dyn StoreSource, &[nix_heft_format::StorePath]),
    ) -> anyhow::Result<(Graph, Graph)> {
        let (bg, ag) = self.spinning("reading both closures", || {
            pipeline::load_pair(before, after)
        });
        Ok((
            bg.context("loading BEFORE's closure")?,
            ag.context("loading AFTER's closure")?,
        ))
    }

    /// The progress of a read from `src`: a byte bar on a terminal, gone
    /// when the read ends.
    pub fn read_bar<'a>(&self, src: &'a dyn StoreSource) -> ReadBar<'a> {
        ReadBar {
            pb: self.spinner(""),
            src,
            scanned: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// [`pipeline::classified`] with a progress bar: each path `wants`
    /// names read once, classified, traces applied.
    pub fn classified(
        &self,
        src: &dyn StoreSource,
        g: &Graph,
        wants: &ReadRequest,
        traces: Option<&TraceSet>,
    ) -> Classified {
        pipeline::classified(src, g, wants, traces, &self.read_bar(src))
    }

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
        shown: Shown,
    ) -> anyhow::Result<ExitCode> {
        let mut out = std::io::stdout().lock();
        match shown {
            Shown::Rendered(text) => out.write_all(text.as_bytes())?,
            Shown::Stderr(opts) => {
                std::io::stderr().write_all(report.render_text(&opts).as_bytes())?
            }
            Shown::Report(opts) => {
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

/// A resolving error for the binary: a missing `nix` or conflicting
/// flags are usage errors (exit 2), a failed evaluation a failure (exit 1,
/// with Nix's own message).
fn resolve_error(e: ResolveError) -> anyhow::Error {
    match e {
        ResolveError::Installable(e) if e.is_usage() => {
            nix_heft_types::Error::Usage(e.to_string()).into()
        }
        ResolveError::Installable(e) => e.into(),
        ResolveError::Store(e) => e.into(),
    }
}

/// What the command line shows of resolving: a spinner while `nix`
/// evaluates (only for a person at a terminal), and each output read as
/// its deriver noted once on stderr and kept for the JSON (`derivers`).
struct CliWatch<'a> {
    ctx: &'a Context,
    spinner: std::sync::Mutex<Option<ProgressBar>>,
}

impl<'a> CliWatch<'a> {
    fn new(ctx: &'a Context) -> Self {
        CliWatch {
            ctx,
            spinner: Default::default(),
        }
    }
}

impl Watch for CliWatch<'_> {
    fn evaluating(&self, arg: &str) {
        let pb = self.ctx.spinner(&format!("evaluating {arg} with nix"));
        *self.spinner.lock().unwrap_or_else(|e| e.into_inner()) = Some(pb);
    }

    fn evaluated(&self) {
        if let Some(pb) = self
            .spinner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            pb.finish_and_clear();
        }
    }

    fn mapped(&self, m: &Mapped) {
        let mut mapped = self.ctx.mapped.lock().unwrap_or_else(|e| e.into_inner());
        if mapped.contains(m) {
            return;
        }
        let given = if m.arg == m.output {
            String::new()
        } else {
            format!(" ({})", m.arg)
        };
        self.ctx.note(&format!(
            "{}{given} is an output, not a derivation: --derivation reads its deriver {} (as \
             nix path-info --derivation names it)",
            m.output, m.deriver
        ));
        mapped.push(m.clone());
    }
}

/// What opening the stores says, in the command line's words: keys and
/// stores it names are flags here.
fn open_error(e: OpenError) -> nix_heft_store::Error {
    match e {
        OpenError::BadTrustedKeys(e) => {
            nix_heft_store::Error::Usage(format!("--trusted-public-keys: {e}"))
        }
        OpenError::NoStore => nix_heft_store::Error::Usage(
            "--substituters names no store (and nix.conf's substituters none for auto)".into(),
        ),
        OpenError::Store(e) => e,
    }
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

impl Context {
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

/// The byte bar of a read; see [`Context::read_bar`].
pub struct ReadBar<'a> {
    pb: ProgressBar,
    src: &'a dyn StoreSource,
    /// Paths to scan, for the "NARs fetched" message.
    scanned: std::sync::atomic::AtomicUsize,
}

impl Progress for ReadBar<'_> {
    fn start(&self, paths: usize, bytes: u64) {
        self.scanned
            .store(paths, std::sync::atomic::Ordering::Relaxed);
        // The bar counts the paths scanned, not the whole closure: paths
        // with no references need no scan.
        if !self.pb.is_hidden() {
            self.pb.set_length(bytes);
            self.pb.set_style(
                ProgressStyle::with_template(
                    "reading {bar:30} {bytes}/{total_bytes} to scan {bytes_per_sec} ({eta}) {msg}",
                )
                .expect("static template"),
            );
        }
    }

    fn advance(&self, bytes: u64) {
        self.pb.inc(bytes);
        // Over a network: NARs and (compressed) bytes fetched so far.
        if !self.pb.is_hidden()
            && let Some((nars, fetched)) = self.src.log().fetched()
        {
            let scanned = self.scanned.load(std::sync::atomic::Ordering::Relaxed);
            let mut msg = format!(
                "{nars}/{scanned} NARs, {} fetched",
                nix_heft_types::units::iec(fetched)
            );
            // Several stores that download: what came from each.
            let each = self.src.log().downloads();
            if each.len() > 1 {
                let parts: Vec<String> = each
                    .iter()
                    .map(|d| {
                        format!(
                            "{} {}",
                            d.store,
                            nix_heft_types::units::iec(
                                d.bytes.load(std::sync::atomic::Ordering::Relaxed)
                            )
                        )
                    })
                    .collect();
                msg.push_str(&format!(" ({})", parts.join(", ")));
            }
            self.pb.set_message(msg);
        }
    }

    fn finish(&self) {
        self.pb.finish_and_clear();
    }
}
