//! What every command shares: the global flags, opening stores with them,
//! how text is laid out (width, colour), progress on a terminal, printing
//! a report and its exit code.

use std::io::IsTerminal;

use anyhow::Context as _;
use indicatif::ProgressBar;

use nix_heft_eval::installable::Options;
use nix_heft_format::StorePath;
use nix_heft_graph::NodeId;
use nix_heft_graph::{Graph, ReadRequest};
use nix_heft_ops::pipeline::{self};
pub use nix_heft_ops::resolve::Mapped;
use nix_heft_ops::resolve::{Resolve, Watch};
use nix_heft_report::TextOptions;
use nix_heft_scan::classify::Classified;
use nix_heft_store::open::{OpenError, Opener};
use nix_heft_store::source::build_graph::DerivationSource;
use nix_heft_store::source::{self, RunLog, StoreSource};
use nix_heft_trace::file::TraceSet;

mod output;
mod progress;

pub use output::{Emit, write_beside};

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

    /// The collector's settings for `store`, with the `--option`s given
    /// (`roots`, `why --roots`).
    pub fn collector_request(
        &self,
        store: &source::LocalStore,
    ) -> nix_heft_ops::Result<nix_heft_ops::gc::RootsRequest> {
        nix_heft_ops::gc::RootsRequest::for_collector(&self.installables.options, store.root())
    }

    /// `read` under a spinner naming the store whose roots are read (the
    /// collector's view of a large store takes seconds).
    pub fn reading_roots<T>(&self, store: &source::LocalStore, read: impl FnOnce() -> T) -> T {
        use nix_heft_store::source::PathMetadata;
        self.spinning(&format!("reading the roots of {}", store.describe()), read)
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

    /// Resolving arguments against `src` with this run's flags
    /// (`nix_heft_ops::resolve`): a spinner while `nix` evaluates, a note
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
        Ok(self.resolve(src, &watch).roots(args)?)
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
        Ok(self.resolve(src, &watch).one_root(arg)?)
    }

    /// A DEP argument within a loaded closure ([`Resolve::in_closure`]).
    pub fn in_closure(
        &self,
        src: &dyn StoreSource,
        g: &Graph,
        arg: &str,
    ) -> anyhow::Result<Vec<NodeId>> {
        let watch = CliWatch::new(self);
        Ok(self.resolve(src, &watch).in_closure(g, arg)?)
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
