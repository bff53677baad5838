//! `nix-heft browse`'s real terminal (the browse crate draws onto any
//! backend and touches no terminal): raw mode and the alternate screen through ratatui's
//! crossterm backend (restored on exit, on error and, through ratatui's
//! panic hook, on panic), keys and resizes, evidence arriving from the
//! caller's background thread, and OSC 52 for copying.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyEventKind};

use nix_heft_browse::{App, BuildGraph, Loaded, Outcome};
use nix_heft_graph::Graph;

/// The OSC 52 sequence that puts `text` on the clipboard of the terminal
/// (and of the machine running it, over ssh).
pub fn osc52(text: &str) -> String {
    use base64::Engine;
    format!(
        "\x1b]52;c;{}\x07",
        base64::engine::general_purpose::STANDARD.encode(text)
    )
}

/// Where the browser's late data comes from.
pub struct Feeds<'a> {
    /// Closure sizes, once computed.
    pub closure: Receiver<Vec<u64>>,
    /// The classified evidence and advice, once read.
    pub evidence: Receiver<Loaded>,
    /// Bytes read so far.
    pub progress: &'a AtomicU64,
    /// Bytes to read.
    pub total: u64,
    /// Where each path came from, by node id (see [`App::origins`]).
    pub origins: Vec<Option<String>>,
}

/// Runs the browser until the user quits, drawing the first screen before
/// closure sizes and evidence arrive through `feeds`; `build` when `g` is
/// the build graph.
pub fn run(
    g: &Graph,
    feeds: Feeds,
    no_color: bool,
    build: Option<BuildGraph>,
) -> std::io::Result<Vec<nix_heft_types::problem::Problem>> {
    let Feeds {
        closure,
        evidence,
        progress,
        total,
        origins,
    } = feeds;
    let mut app = App::without_closure_sizes(g, no_color);
    app.progress = (0, total);
    app.build = build;
    app.origins = origins;
    let mut terminal = ratatui::try_init()?;
    let result = (|| -> std::io::Result<()> {
        let mut waiting = true;
        loop {
            app.progress.0 = progress.load(Ordering::Relaxed);
            if !app.closure_ready
                && let Ok(c) = closure.try_recv()
            {
                app.set_closure_sizes(c);
            }
            if waiting {
                match evidence.try_recv() {
                    Ok(l) => {
                        app.loaded = Some(l);
                        waiting = false;
                    }
                    Err(TryRecvError::Empty) => {}
                    Err(TryRecvError::Disconnected) => {
                        // The reader ended without a result (it failed):
                        // say so rather than wait for ever.
                        app.loaded = Some(Loaded::default());
                        waiting = false;
                    }
                }
            }
            terminal.draw(|f| nix_heft_browse::ui::draw(f, &app))?;
            // Poll briefly while evidence loads, so the indicator moves.
            let busy = waiting || !app.closure_ready;
            if !event::poll(Duration::from_millis(if busy { 150 } else { 1000 }))? {
                continue;
            }
            match event::read()? {
                Event::Key(k) if k.kind != KeyEventKind::Release => match app.on_key(k) {
                    Outcome::Quit => return Ok(()),
                    Outcome::Copy(text) => {
                        let mut out = std::io::stdout().lock();
                        out.write_all(osc52(&text).as_bytes())?;
                        out.flush()?;
                    }
                    Outcome::Continue => {}
                },
                // The next draw uses the new size.
                Event::Resize(..) => terminal.autoresize()?,
                _ => {}
            }
        }
    })();
    ratatui::try_restore()?;
    result?;
    // The problems of the evidence read, when it ended before leaving.
    Ok(app.loaded.map(|l| l.problems).unwrap_or_default())
}

/// Runs the browser of roots until the user quits; the commands to print
/// (those that remove the marked roots, when left with `q`).
pub fn run_roots(app: &mut nix_heft_browse::roots::RootsApp) -> std::io::Result<Vec<String>> {
    use nix_heft_browse::roots::RootsOutcome;
    let mut terminal = ratatui::try_init()?;
    let result = (|| -> std::io::Result<Vec<String>> {
        loop {
            terminal.draw(|f| nix_heft_browse::roots::draw(f, app))?;
            match event::read()? {
                Event::Key(k) if k.kind != KeyEventKind::Release => {
                    if let RootsOutcome::Quit(commands) = app.on_key(k) {
                        return Ok(commands);
                    }
                }
                Event::Resize(..) => terminal.autoresize()?,
                _ => {}
            }
        }
    })();
    ratatui::try_restore()?;
    result
}

#[cfg(test)]
mod tests {
    #[test]
    fn osc52_is_base64_of_the_text() {
        assert_eq!(
            super::osc52("/nix/store/x"),
            "\x1b]52;c;L25peC9zdG9yZS94\x07"
        );
    }
}
