//! `nix-heft browse`: the screens drawn on ratatui's `TestBackend` at
//! 80×24 over the bundled example (the same library pipeline as the
//! binary: load, read, classify, advise), snapshotted with insta; and the
//! binary without a terminal. The real binary in tmux is
//! tests/testsuite/browse_tmux.rs.

use nix_heft_browse::{App, Loaded, Outcome, key, ui};
use nix_heft_graph::{Graph, request};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::KeyCode;

use crate::common::*;

fn example_graph() -> (Graph, Loaded) {
    let cache = example_cache().display().to_string();
    let src = nix_heft_store::source::open(Some(&cache)).unwrap();
    let roots = nix_heft_ops::roots::resolve_roots(src.as_ref(), &[example_root()]).unwrap();
    let g = Graph::load(src.as_ref(), &roots).unwrap();
    let reads = nix_heft_scan::read::read(src.as_ref(), &g, &request::all_edges(&g), &|_| {});
    let c = nix_heft_scan::classify::classify(&g, reads);
    let (actions, sim) = nix_heft_analysis::plan::advise::advise(&g, &c, None, None);
    let loaded = Loaded {
        problems: c.problems.iter().cloned().chain(sim).collect(),
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
    app.set_closure_sizes(nix_heft_graph::closure_sizes(&g));
    assert_ne!(app.items, by_added);
    assert!(screen(&app).contains("closure 108.1 MiB"));
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
    let roots = nix_heft_ops::roots::resolve_roots(src.as_ref(), &[example_root()]).unwrap();
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
