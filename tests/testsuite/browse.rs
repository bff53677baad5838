//! `nix-heft browse`: the screens drawn on ratatui's `TestBackend` at
//! 80×24 over the bundled example (the same library pipeline as the
//! binary: load, read, classify, advise), snapshotted with insta; and the
//! real binary driven once in tmux.

use std::process::Command;
use std::time::{Duration, Instant};

use nix_heft_browse::{App, Loaded, Outcome, key, ui};
use nix_heft_core::graph::{Graph, request};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::KeyCode;

use crate::common::*;

fn example_graph() -> (Graph, Loaded) {
    let cache = example_cache().display().to_string();
    let src = nix_heft_store::source::open(Some(&cache)).unwrap();
    let roots = nix_heft_core::roots::resolve_roots(src.as_ref(), &[example_root()]).unwrap();
    let g = Graph::load(src.as_ref(), &roots).unwrap();
    let reads = nix_heft_core::read::read(src.as_ref(), &g, &request::all_edges(&g), &|_| {});
    let c = nix_heft_core::classify::classify(&g, reads);
    let (actions, sim) = nix_heft_core::plan::advise::advise(&g, &c, None, None);
    let loaded = Loaded {
        problems: c.problems.len() + sim.len(),
        classified: c,
        actions,
        available: true,
    };
    (g, loaded)
}

/// The screen as text, one line per row.
fn screen(app: &App) -> String {
    let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
    t.draw(|f| ui::draw(f, app)).unwrap();
    let buf = t.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn press(app: &mut App, keys: &[KeyCode]) {
    for &k in keys {
        assert_eq!(app.on_key(key(k)), Outcome::Continue, "{k:?}");
    }
}

#[test]
fn first_screen_before_and_after_evidence() {
    let (g, loaded) = example_graph();
    let mut app = App::new(&g, false);
    app.progress = (0, 123_456_789);
    let s = screen(&app);
    // Sizes at once: the root's references by added size, heaviest first.
    assert!(s.contains("evidence: reading 0%"), "{s}");
    insta::assert_snapshot!("first_screen_loading", s);
    app.loaded = Some(loaded);
    let s = screen(&app);
    assert!(s.contains("evidence: ready"), "{s}");
    assert!(s.contains("[run]"), "{s}");
    insta::assert_snapshot!("first_screen", s);
}

#[test]
fn sort_cycles_added_closure_self() {
    let (g, loaded) = example_graph();
    let mut app = App::new(&g, false);
    app.loaded = Some(loaded);
    let by_added = app.items.clone();
    press(&mut app, &[KeyCode::Char('s')]);
    assert!(
        app.items
            .windows(2)
            .all(|w| app.closure[w[0] as usize] >= app.closure[w[1] as usize])
    );
    assert_ne!(app.items, by_added, "closure order equals added order here");
    insta::assert_snapshot!("sorted_by_closure", screen(&app));
    press(&mut app, &[KeyCode::Char('s')]);
    assert!(
        app.items
            .windows(2)
            .all(|w| g.nar_size(w[0]) >= g.nar_size(w[1]))
    );
    press(&mut app, &[KeyCode::Char('s')]);
    assert_eq!(app.items, by_added);
}

#[test]
fn why_view_lists_files_holding_each_edge() {
    let (g, loaded) = example_graph();
    let mut app = App::new(&g, false);
    app.loaded = Some(loaded);
    // Into rocblas (the heaviest), then to a tensile library it holds.
    press(&mut app, &[KeyCode::Char('l')]);
    assert_eq!(g.path(app.current.unwrap()).name(), "rocblas-5.7.1");
    let gfx = app
        .items
        .iter()
        .position(|&v| g.path(v).name() == "rocblas-tensile-gfx90a-5.7.1")
        .unwrap();
    for _ in 0..gfx {
        press(&mut app, &[KeyCode::Char('j')]);
    }
    press(&mut app, &[KeyCode::Char('w')]);
    let s = screen(&app);
    assert!(s.contains("Why is rocblas-tensile-gfx90a-5.7.1"), "{s}");
    assert!(
        s.contains("rocblas-5.7.1 → rocblas-tensile-gfx90a-5.7.1"),
        "{s}"
    );
    assert!(
        s.contains("symlink") || s.contains("text") || s.contains("elf-"),
        "{s}"
    );
    insta::assert_snapshot!("why", s);
    press(&mut app, &[KeyCode::Esc]);
    assert_eq!(app.mode, nix_heft_browse::Mode::Main);
    // Advice touching rocblas-tensile-gfx90a: the partition action.
    press(&mut app, &[KeyCode::Char('a')]);
    let s = screen(&app);
    assert!(s.contains("partition-targets"), "{s}");
}

#[test]
fn help_search_copy_back_and_quit() {
    let (g, loaded) = example_graph();
    let mut app = App::new(&g, true);
    app.loaded = Some(loaded);
    press(&mut app, &[KeyCode::Char('?')]);
    let s = screen(&app);
    insta::assert_snapshot!("help", s);
    press(&mut app, &[KeyCode::Char('x')]);
    // Search: typed, Enter opens the best match.
    press(&mut app, &[KeyCode::Char('/')]);
    for c in "gfx1100".chars() {
        press(&mut app, &[KeyCode::Char(c)]);
    }
    assert!(screen(&app).contains("search: gfx1100 (1)"));
    press(&mut app, &[KeyCode::Enter]);
    assert_eq!(
        g.path(app.current.unwrap()).name(),
        "rocblas-tensile-gfx1100-5.7.1"
    );
    // Its referrer is rocblas; Tab moves there, y copies its path.
    press(&mut app, &[KeyCode::Tab]);
    let sel = app.selected().unwrap();
    assert_eq!(g.path(sel).name(), "rocblas-5.7.1");
    assert_eq!(
        app.on_key(key(KeyCode::Char('y'))),
        Outcome::Copy(g.path(sel).to_string())
    );
    press(&mut app, &[KeyCode::Char('h')]);
    assert_eq!(g.path(app.current.unwrap()).name(), "llama-cpp-rocm-0.0.0");
    assert_eq!(app.on_key(key(KeyCode::Char('q'))), Outcome::Quit);
}

#[test]
fn no_color_draws_without_colours() {
    let (g, loaded) = example_graph();
    let mut app = App::new(&g, true);
    app.loaded = Some(loaded);
    let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
    t.draw(|f| ui::draw(f, &app)).unwrap();
    let buf = t.backend().buffer();
    for c in buf.content() {
        assert_eq!(c.fg, ratatui::style::Color::Reset, "{c:?}");
        assert_eq!(c.bg, ratatui::style::Color::Reset, "{c:?}");
    }
    // With colour, the selected row is coloured.
    app.no_color = false;
    t.draw(|f| ui::draw(f, &app)).unwrap();
    assert!(
        t.backend()
            .buffer()
            .content()
            .iter()
            .any(|c| c.bg != ratatui::style::Color::Reset)
    );
}

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux")
        .args(args)
        .output()
        .expect("tmux is needed (scripts/test.sh installs it)");
    assert!(out.status.success(), "tmux {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A tmux session on a private server socket (so the test never touches
/// anyone's tmux) running one command; the server is killed when dropped.
pub(crate) struct Tmux {
    sock: String,
    session: String,
}

impl Tmux {
    pub(crate) fn start(name: &str, columns: u16, rows: u16, cmd: &str) -> Tmux {
        let t = Tmux {
            sock: format!("heft-test-{name}-{}", std::process::id()),
            session: format!("heft-{name}-{}", std::process::id()),
        };
        let (x, y) = (columns.to_string(), rows.to_string());
        t.tmux(&[
            "new-session",
            "-d",
            "-s",
            &t.session,
            "-x",
            &x,
            "-y",
            &y,
            cmd,
        ]);
        t
    }

    pub(crate) fn tmux(&self, a: &[&str]) -> String {
        let mut v = vec!["-L", self.sock.as_str()];
        v.extend_from_slice(a);
        tmux(&v)
    }

    /// Sends `key` to the session.
    pub(crate) fn keys(&self, key: &str) {
        self.tmux(&["send-keys", "-t", &self.session, key]);
    }

    /// The screen once `done` holds of it, within `secs` seconds.
    pub(crate) fn until(&self, secs: u64, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.tmux(&["capture-pane", "-p", "-t", &self.session]);
            if done(&s) {
                return s;
            }
            assert!(start.elapsed() < Duration::from_secs(secs), "{what}:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The screen once it shows `needle`.
    pub(crate) fn wait(&self, needle: &str) -> String {
        self.until(30, &format!("{needle:?} never shown"), |s| {
            s.contains(needle)
        })
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.sock, "kill-server"])
            .status();
    }
}

#[test]
fn real_binary_in_tmux_starts_moves_resizes_and_quits_cleanly() {
    let bin = assert_cmd::cargo::cargo_bin("nix-heft");
    // The example cache's key trusted as heft() trusts it.
    let cmd = format!(
        "NIX_CONFIG='{}' {} --store {} browse {}; echo EXITED rc=$?; sleep 60",
        trusting_conf(),
        bin.display(),
        example_cache().display(),
        example_root()
    );
    let t = Tmux::start("browse", 80, 24, &cmd);
    let s = t.wait("evidence: ready");
    let row = |s: &str, name: &str| s.lines().position(|l| l.contains(name));
    let first = s.lines().find(|l| l.contains('▶')).unwrap().to_string();
    assert!(first.contains("rocbl"), "{s}");
    t.keys("j");
    // clr is listed from the start: wait for the cursor to reach it.
    let s = t.until(30, "never moved", |s| {
        s.lines()
            .any(|l| l.contains('▶') && l.contains("clr-5.7.1"))
    });
    let moved = s.lines().find(|l| l.contains('▶')).unwrap();
    assert_ne!(moved, first, "cursor did not move:\n{s}");
    assert!(row(&s, "▶") > Some(1), "{s}");
    // Resize: the panes follow the new width.
    t.tmux(&["resize-window", "-t", &t.session, "-x", "120", "-y", "30"]);
    t.until(10, "no redraw at 120 columns", |s| {
        s.lines().next().is_some_and(|l| l.chars().count() > 100)
    });
    t.keys("q");
    let s = t.wait("EXITED rc=0");
    // The alternate screen is gone: no pane border is left on screen.
    assert!(!s.contains("details"), "screen not restored:\n{s}");
}

#[test]
fn browse_without_a_terminal_is_a_usage_error() {
    let cache = example_cache().display().to_string();
    let o = heft_run(Some(&cache), &["browse", &example_root()]);
    assert_usage_error(&o, "needs a terminal");
}

#[test]
fn first_screen_draws_before_closure_sizes_arrive() {
    let (g, _) = example_graph();
    let mut app = App::without_closure_sizes(&g, false);
    let s = screen(&app);
    assert!(s.contains("closure … (computing)"), "{s}");
    assert!(s.contains("65.0 MiB rocblas-5.7.1"), "{s}");
    let by_added = app.items.clone();
    press(&mut app, &[KeyCode::Char('s')]);
    assert_eq!(app.items, by_added, "closure order before closure sizes");
    assert!(app.status.contains("still computing"));
    app.set_closure_sizes(nix_heft_core::graph::closure_sizes(&g));
    assert_ne!(app.items, by_added);
    assert!(screen(&app).contains("closure 108.1 MiB"));
}

/// `browse --derivation` through the real binary: the build graph of a
/// derivation over the example whose own output nobody built. The status
/// line counts `nix-store -qR`'s paths and the one derivation of unknown
/// size; a derivation's self size is its outputs' (`nix path-info`); the
/// unbuilt one, reached as a referrer, lists its output as unknown.
#[test]
fn real_binary_browses_the_build_graph_in_tmux() {
    let (drv, unbuilt_out) = unbuilt_over_example();
    let n = run(Command::new("nix-store").args(["-qR", drv]))
        .lines()
        .count();
    let bin = assert_cmd::cargo::cargo_bin("nix-heft");
    let cmd = format!(
        "{} browse --derivation {drv}; echo EXITED rc=$?; sleep 60",
        bin.display()
    );
    let t = Tmux::start("browse-drv", 160, 30, &cmd);
    let s = t.wait("evidence: ready");
    assert!(s.contains(&format!("| {n} paths, 1 unknown size |")), "{s}");
    assert!(s.contains(" details (build graph) "), "{s}");
    // The root's one input: the example's derivation, sized by its output.
    let cursor = s.lines().find(|l| l.contains('▶')).unwrap();
    assert!(cursor.contains("llama-cpp-rocm-0.0.0.drv"), "{s}");
    let input = run(Command::new("nix-store").args(["-q", "--references", drv]));
    let input = input.trim();
    assert!(input.ends_with("-llama-cpp-rocm-0.0.0.drv"), "{input}");
    let own = nix_heft_types::units::iec(build_graph_size(input));
    assert!(
        s.contains(&format!("self    {own} (its outputs)")),
        "{own}:\n{s}"
    );
    assert!(s.contains("drv-input [build]"), "{s}");
    // Into it, then over to its referrer: the unbuilt derivation.
    t.keys("l");
    t.wait("referrers (1)");
    t.keys("Tab");
    let s = t.wait("outputs of unknown size (as 0):");
    let hash = &unbuilt_out["/nix/store/".len()..][..32];
    assert!(s.contains(hash), "{s}");
    t.keys("q");
    t.wait("EXITED rc=0");
}

/// The details pane says where the selected path came from, as the store
/// the command opened says (a signed cache: its URL and the key).
#[test]
fn details_show_where_the_path_came_from() {
    use nix_heft_store::source::signature::{SigPolicy, TrustedKeys};
    let cache = example_cache().display().to_string();
    let opts = nix_heft_store::source::OpenOptions {
        signatures: Some(std::sync::Arc::new(SigPolicy::new(
            TrustedKeys::parse([example_key()]).unwrap(),
            true,
        ))),
        ..Default::default()
    };
    let src = nix_heft_store::source::open_with(Some(&cache), &opts).unwrap();
    let roots = nix_heft_core::roots::resolve_roots(src.as_ref(), &[example_root()]).unwrap();
    let g = Graph::load(src.as_ref(), &roots).unwrap();
    let mut app = App::new(&g, true);
    app.origins = g
        .paths()
        .iter()
        .map(|p| src.provenance(p).map(|o| o.label()))
        .collect();
    let want = format!(
        "file://{} (signed by rocm-mini-example-1)",
        std::path::absolute(&cache).unwrap().display()
    );
    assert!(
        app.origins
            .iter()
            .all(|o| o.as_deref() == Some(want.as_str())),
        "{:?}",
        app.origins
    );
    let s = screen(&app);
    // The pane wraps the URL onto the next lines.
    assert!(s.contains("│from "), "{s}");
}
