//! What a person at a terminal sees while work runs: spinners and the
//! read's byte bar, never with `--json` or when stderr is not a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

use nix_heft_ops::pipeline::Progress;
use nix_heft_store::source::StoreSource;

use super::Context;

impl Context {
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

    /// The progress of a read from `src`: a byte bar on a terminal, gone
    /// when the read ends.
    pub fn read_bar<'a>(&self, src: &'a dyn StoreSource) -> ReadBar<'a> {
        ReadBar {
            pb: self.spinner(""),
            src,
            scanned: std::sync::atomic::AtomicUsize::new(0),
        }
    }
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
