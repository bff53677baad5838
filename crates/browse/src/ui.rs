//! Drawing the browser onto a ratatui frame: three panes and a status
//! line, or a full-screen view (why, advice, help). Verdicts are always
//! written out in words, so the screen reads the same without colour.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph, Wrap};

use super::{App, Focus, Mode};
use nix_heft_graph::NodeId;
use nix_heft_types::evidence::Verdict;
use nix_heft_types::units::iec;

/// The key help, one line per key.
pub const HELP: &[(&str, &str)] = &[
    ("↑ ↓  j k", "move in the list"),
    ("→ l Enter", "open the selected path (list its references)"),
    ("← h", "back (or up to the heaviest referrer)"),
    ("Tab", "switch between referrers and references"),
    ("PgUp PgDn g G", "page, first, last"),
    ("s", "sort by added, closure or self size"),
    ("/", "search by name (Enter opens, Esc cancels)"),
    ("w", "why: chains from the roots, files holding each edge"),
    ("a", "advice touching the selected path"),
    ("y", "copy the store path (OSC 52, works over ssh)"),
    ("?", "this help"),
    ("q Esc", "quit (Esc closes a view first)"),
    ("", ""),
    ("[run]", "the edge is used at run time"),
    ("[unkn]", "could be either (a string in data)"),
    ("[build]", "only builds use it (headers, pkg-config, CMake)"),
    ("[docs]", "only documentation mentions it"),
    ("[dead]", "nothing uses it (dead RUNPATH, debug info)"),
    ("[-]", "registered, but no file holds it"),
];

fn verdict_style(app: &App, v: Option<Verdict>) -> Style {
    if app.no_color {
        return match v {
            Some(Verdict::Runtime) => Style::default(),
            _ => Style::default().add_modifier(Modifier::ITALIC),
        };
    }
    Style::default().fg(match v {
        Some(Verdict::Runtime) => Color::Blue,
        Some(Verdict::Unknown) => Color::Gray,
        Some(Verdict::Build) => Color::Yellow,
        Some(Verdict::Docs) => Color::Magenta,
        Some(Verdict::Dead) => Color::Red,
        None => Color::DarkGray,
    })
}

fn highlight(app: &App, active: bool) -> Style {
    if app.no_color || !active {
        Style::default().add_modifier(Modifier::REVERSED)
    } else {
        Style::default()
            .bg(Color::Blue)
            .fg(Color::White)
            .add_modifier(Modifier::BOLD)
    }
}

/// The strongest verdict on the edge `from → to`, once evidence is there.
fn edge_verdict(app: &App, from: NodeId, to: NodeId) -> Option<Verdict> {
    let l = app.loaded.as_ref()?;
    l.classified
        .evidence(from, to)
        .iter()
        .map(|e| e.verdict)
        .min()
}

/// A verdict in at most five letters, for list rows (the details pane and
/// the why view spell it out; `?` lists them).
fn short(v: Verdict) -> &'static str {
    match v {
        Verdict::Runtime => "run",
        Verdict::Unknown => "unkn",
        Verdict::Build => "build",
        Verdict::Docs => "docs",
        Verdict::Dead => "dead",
    }
}

fn size_of(app: &App, v: NodeId) -> u64 {
    match app.sort {
        super::SortBy::Closure if !app.closure_ready => app.added[v as usize],
        super::SortBy::Added => app.added[v as usize],
        super::SortBy::Closure => app.closure[v as usize],
        super::SortBy::SelfSize => app.g.nar_size(v),
    }
}

fn row<'a>(app: &'a App, v: NodeId, edge: Option<(NodeId, NodeId)>, width: u16) -> ListItem<'a> {
    let size = format!("{:>9} ", iec(size_of(app, v)));
    let verdict = edge.and_then(|(f, t)| edge_verdict(app, f, t));
    let tag = match (edge, verdict, &app.loaded) {
        (None, _, _) => String::new(),
        (Some(_), Some(v), _) => format!(" [{}]", short(v)),
        (Some(_), None, Some(l)) if l.available => " [-]".to_string(),
        (Some(_), None, _) => String::new(),
    };
    let room = (width as usize).saturating_sub(size.chars().count() + tag.chars().count() + 2);
    let mut name = app.names[v as usize].clone();
    if name.chars().count() > room {
        name = name
            .chars()
            .take(room.saturating_sub(1))
            .collect::<String>()
            + "…";
    }
    ListItem::new(Line::from(vec![
        Span::raw(size),
        Span::raw(name),
        Span::styled(tag, verdict_style(app, verdict)),
    ]))
}

/// One list pane; `at` is the cursor and whether the pane has the focus.
fn list(
    app: &App,
    f: &mut Frame,
    area: Rect,
    title: String,
    items: &[NodeId],
    (cursor, active): (usize, bool),
    edge: impl Fn(NodeId) -> Option<(NodeId, NodeId)>,
) {
    let inner = area.width.saturating_sub(2);
    let rows: Vec<ListItem> = items.iter().map(|&v| row(app, v, edge(v), inner)).collect();
    let block = Block::default().borders(Borders::ALL).title(title);
    let block = if active && !app.no_color {
        block.border_style(Style::default().fg(Color::Cyan))
    } else if active {
        block.border_style(Style::default().add_modifier(Modifier::BOLD))
    } else {
        block
    };
    let w = List::new(rows)
        .block(block)
        .highlight_style(highlight(app, active))
        .highlight_symbol(if active { "▶" } else { " " });
    let mut state = ListState::default();
    if !items.is_empty() {
        state.select(Some(cursor.min(items.len() - 1)));
    }
    f.render_stateful_widget(w, area, &mut state);
}

fn details(app: &App, v: NodeId) -> Vec<Line<'static>> {
    let g = app.g;
    let mut out = vec![
        Line::from(Span::styled(
            app.names[v as usize].clone(),
            Style::default().add_modifier(Modifier::BOLD),
        )),
        Line::from(g.path(v).to_string()),
    ];
    if let Some(Some(o)) = app.origins.get(v as usize) {
        out.push(Line::from(format!("from    {o}")));
    }
    out.extend([
        Line::from(""),
        Line::from(format!("added   {}", iec(app.added[v as usize]))),
        Line::from(match &app.build {
            Some(_) if g.path(v).name().ends_with(".drv") => {
                format!("self    {} (its outputs)", iec(g.nar_size(v)))
            }
            _ => format!("self    {}", iec(g.nar_size(v))),
        }),
        Line::from(if app.closure_ready {
            format!("closure {}", iec(app.closure[v as usize]))
        } else {
            "closure … (computing)".to_string()
        }),
        Line::from(format!(
            "{} references, {} referrers",
            g.references(v).len(),
            g.referrers(v).len()
        )),
        Line::from(""),
    ]);
    if let Some(b) = &app.build
        && !b.unknown_of(v).is_empty()
    {
        // Never guessed: said, and counted as nothing.
        // After the sizes and counts, before the blank line.
        let at = out.len() - 1;
        out.insert(at, Line::from("outputs of unknown size (as 0):"));
        for (i, o) in b.unknown_of(v).iter().enumerate() {
            out.insert(at + 1 + i, Line::from(format!("  {o}")));
        }
    }
    let from = match app.focus {
        Focus::References => app.current.map(|c| (c, v)),
        Focus::Referrers => app.current.map(|c| (v, c)),
    };
    match (&app.loaded, from) {
        (None, Some(_)) => out.push(Line::from(format!(
            "evidence: reading… {}",
            progress_text(app)
        ))),
        (Some(l), Some((a, b))) if l.available => {
            let ev = l.classified.evidence(a, b);
            let verdict = ev.iter().map(|e| e.verdict).min();
            out.push(Line::from(vec![
                Span::raw(format!(
                    "{} → {}: ",
                    app.names[a as usize], app.names[b as usize]
                )),
                Span::styled(
                    verdict.map_or("no hold found".to_string(), |v| v.as_str().to_string()),
                    verdict_style(app, verdict),
                ),
            ]));
            let mut files: Vec<&str> = ev.iter().map(|e| e.file.as_str()).collect();
            files.dedup();
            for e in ev.iter().take(6) {
                out.push(Line::from(format!(
                    "  {} {} [{}]",
                    if e.file.is_empty() {
                        "(itself)"
                    } else {
                        &e.file
                    },
                    e.kind.as_str(),
                    e.verdict.as_str()
                )));
            }
            if ev.len() > 6 {
                out.push(Line::from(format!("  … {} more (w)", ev.len() - 6)));
            }
        }
        (Some(_), Some(_)) => out.push(Line::from("evidence: unavailable (no file contents)")),
        _ => {}
    }
    let adv = app.advice_for(v);
    if !adv.is_empty() {
        out.push(Line::from(""));
        out.push(Line::from(format!("{} actions touch it (a)", adv.len())));
    }
    out
}

fn progress_text(app: &App) -> String {
    let (done, total) = app.progress;
    if total == 0 {
        return String::new();
    }
    format!(
        "{}% ({} of {})",
        (done.min(total) as u128 * 100 / total as u128),
        iec(done.min(total)),
        iec(total)
    )
}

fn status_line(app: &App) -> Line<'static> {
    let ev = match &app.loaded {
        None => format!("evidence: reading {}", progress_text(app)),
        Some(l) if !l.available => "evidence: unavailable".to_string(),
        Some(l) if !l.problems.is_empty() => {
            format!("evidence: ready, {} problems", l.problems.len())
        }
        Some(_) => "evidence: ready".to_string(),
    };
    let mode = match &app.mode {
        Mode::Search { query, hits, .. } => format!("/{query}  ({} matches)", hits.len()),
        _ => app.status.clone(),
    };
    let paths = match &app.build {
        // Short enough for 80 columns; the details pane's title says it
        // is the build graph.
        Some(b) => format!("{} paths, {} unknown size", app.g.len(), b.unknown_count()),
        None => format!("{} paths", app.g.len()),
    };
    Line::from(format!(
        " sort: {} | {} | {} | ? help, q quit {}",
        app.sort.as_str(),
        ev,
        paths,
        if mode.is_empty() {
            String::new()
        } else {
            format!("| {mode}")
        }
    ))
}

fn why_lines(app: &App, v: NodeId) -> Vec<Line<'static>> {
    let mut out = vec![Line::from(Span::styled(
        format!("Why is {} in the closure?", app.names[v as usize]),
        Style::default().add_modifier(Modifier::BOLD),
    ))];
    if app.loaded.is_none() {
        out.push(Line::from(format!(
            "(evidence still loading {}: shortest chain shown)",
            progress_text(app)
        )));
    }
    for chain in app.chains_to(v) {
        out.push(Line::from(""));
        let names: Vec<&str> = chain
            .iter()
            .map(|&c| app.names[c as usize].as_str())
            .collect();
        out.push(Line::from(names.join(" → ")));
        for w in chain.windows(2) {
            let (a, b) = (w[0], w[1]);
            out.push(Line::from(""));
            let verdict = edge_verdict(app, a, b);
            out.push(Line::from(vec![
                Span::raw(format!(
                    "{} → {}  ",
                    app.names[a as usize], app.names[b as usize]
                )),
                Span::styled(
                    match (&app.loaded, verdict) {
                        (_, Some(v)) => v.as_str().to_string(),
                        (Some(l), None) if !l.available => "unavailable".to_string(),
                        (Some(_), None) => "no hold found".to_string(),
                        (None, None) => "…".to_string(),
                    },
                    verdict_style(app, verdict),
                ),
            ]));
            if let Some(l) = &app.loaded {
                for e in l.classified.evidence(a, b) {
                    out.push(Line::from(format!(
                        "    {}  {}{}  [{}] {}",
                        if e.file.is_empty() {
                            "(itself)"
                        } else {
                            &e.file
                        },
                        e.kind.as_str(),
                        e.line.map_or(String::new(), |l| format!(" line {l}")),
                        e.verdict.as_str(),
                        e.reason
                    )));
                }
            }
        }
    }
    out
}

fn advice_lines(app: &App, v: NodeId) -> Vec<Line<'static>> {
    let mut out = vec![Line::from(Span::styled(
        format!("Advice touching {}", app.names[v as usize]),
        Style::default().add_modifier(Modifier::BOLD),
    ))];
    match &app.loaded {
        None => out.push(Line::from(format!(
            "(evidence still loading {})",
            progress_text(app)
        ))),
        Some(l) if !l.available => out.push(Line::from("none: no file contents in this source")),
        Some(_) => {}
    }
    let adv = app.advice_for(v);
    if app.loaded.is_some() && adv.is_empty() {
        out.push(Line::from("none"));
    }
    for a in adv {
        out.push(Line::from(""));
        out.push(Line::from(format!(
            "{}  {}  saves {}  safety: {}",
            a.kind.as_str(),
            // The browser's display names (report::names), as in its lists.
            app.g
                .paths()
                .iter()
                .position(|p| p.as_str() == a.package)
                .map_or_else(
                    || nix_heft_format::store_path::name_of(&a.package).to_string(),
                    |i| app.names[i].clone()
                ),
            a.saving.map_or("?".to_string(), iec),
            a.safety.as_str()
        )));
        out.push(Line::from(format!("  {}", a.reason)));
        for l in a.snippet.lines() {
            out.push(Line::from(format!("    {l}")));
        }
    }
    out
}

/// Draws the whole screen.
pub fn draw(f: &mut Frame, app: &App) {
    let [body, status] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(f.area());
    f.render_widget(Paragraph::new(status_line(app)), status);
    let full = |f: &mut Frame, title: &str, lines: Vec<Line<'static>>, scroll: u16| {
        f.render_widget(Clear, body);
        f.render_widget(
            Paragraph::new(lines)
                .block(
                    Block::default()
                        .borders(Borders::ALL)
                        .title(title.to_string()),
                )
                .wrap(Wrap { trim: false })
                .scroll((scroll, 0)),
            body,
        );
    };
    match &app.mode {
        Mode::Why(v, s) => return full(f, " why (Esc back) ", why_lines(app, *v), *s),
        Mode::Advice(v, s) => return full(f, " advice (Esc back) ", advice_lines(app, *v), *s),
        Mode::Help => {
            let lines = HELP
                .iter()
                .map(|(k, d)| Line::from(format!("  {k:<14} {d}")))
                .collect();
            return full(f, " keys (any key closes) ", lines, 0);
        }
        _ => {}
    }
    let [left, mid, right] = Layout::horizontal([
        Constraint::Percentage(24),
        Constraint::Percentage(44),
        Constraint::Percentage(32),
    ])
    .areas(body);
    let cur_name = app
        .current
        .map_or("roots".to_string(), |c| app.names[c as usize].clone());
    let current = app.current;
    list(
        app,
        f,
        left,
        format!(" referrers ({}) ", app.left.len()),
        &app.left,
        (app.left_cursor, app.focus == Focus::Referrers),
        |v| current.map(|c| (v, c)),
    );
    match &app.mode {
        Mode::Search {
            query,
            hits,
            cursor,
        } => list(
            app,
            f,
            mid,
            format!(" search: {query} ({}) ", hits.len()),
            hits,
            (*cursor, true),
            |_| None,
        ),
        _ => list(
            app,
            f,
            mid,
            format!(" {cur_name} ({}) ", app.items.len()),
            &app.items,
            (app.cursor, app.focus == Focus::References),
            |v| current.map(|c| (c, v)),
        ),
    }
    let lines = app.selected().map(|v| details(app, v)).unwrap_or_default();
    f.render_widget(
        Paragraph::new(lines)
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(match app.build {
                        Some(_) => " details (build graph) ",
                        None => " details ",
                    }),
            )
            .wrap(Wrap { trim: false }),
        right,
    );
}
