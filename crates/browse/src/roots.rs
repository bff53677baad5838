//! `roots --browse`: the roots of a store in the terminal, most freed
//! first. Space marks a root; the status line says what removing every
//! marked root frees together (the collector's figure, computed again at
//! each mark: what they share counts once, what another root keeps not at
//! all); on leaving with `q`, the commands that remove the marked roots are
//! printed. State and keys here, drawn by [`draw`] on any backend.

use std::collections::BTreeSet;

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph, Wrap};

use nix_heft_ops::gc::{Collector, Figure, RootsAnalysis};
use nix_heft_report::roots::{age, root_label};
use nix_heft_types::units::iec;

/// The order of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootsSort {
    /// What removing it frees (then with its path's other roots).
    Freed,
    /// Oldest first.
    Age,
    /// By location.
    Location,
}

/// What the terminal loop does after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootsOutcome {
    /// Keep going.
    Continue,
    /// Leave; print these commands (none: leave without printing).
    Quit(Vec<String>),
}

/// The browser of roots.
pub struct RootsApp<'a> {
    /// What `roots` found.
    pub analysis: &'a RootsAnalysis,
    collector: &'a Collector,
    /// Roots in the order shown (indices into the analysis).
    pub order: Vec<usize>,
    /// Cursor in `order`.
    pub cursor: usize,
    /// The marked roots.
    pub marked: BTreeSet<usize>,
    /// What removing the marked roots frees together.
    pub joint: Figure,
    /// The order.
    pub sort: RootsSort,
    /// Whether the details pane shows.
    pub details: bool,
    /// No colours, only emphasis.
    pub no_color: bool,
}

impl<'a> RootsApp<'a> {
    /// A browser over `analysis`, asking `collector` for joint figures.
    pub fn new(analysis: &'a RootsAnalysis, collector: &'a Collector, no_color: bool) -> Self {
        RootsApp {
            order: (0..analysis.roots.len()).collect(),
            analysis,
            collector,
            cursor: 0,
            marked: BTreeSet::new(),
            joint: Figure::default(),
            sort: RootsSort::Freed,
            details: true,
            no_color,
        }
    }

    fn resort(&mut self) {
        let at = self.order.get(self.cursor).copied();
        let roots = &self.analysis.roots;
        self.order = (0..roots.len()).collect();
        match self.sort {
            // The analysis's own order.
            RootsSort::Freed => {}
            RootsSort::Age => self
                .order
                .sort_by_key(|&i| std::cmp::Reverse(roots[i].age_secs.unwrap_or(-1))),
            RootsSort::Location => self
                .order
                .sort_by(|&a, &b| roots[a].location.cmp(&roots[b].location)),
        }
        if let Some(at) = at {
            self.cursor = self.order.iter().position(|&i| i == at).unwrap_or(0);
        }
    }

    fn toggle(&mut self) {
        let Some(&i) = self.order.get(self.cursor) else {
            return;
        };
        if !self.marked.remove(&i) {
            self.marked.insert(i);
        }
        let marked: Vec<usize> = self.marked.iter().copied().collect();
        self.joint = self.collector.joint(&marked);
        self.cursor = (self.cursor + 1).min(self.order.len().saturating_sub(1));
    }

    /// The commands that remove the marked roots, then the collector's.
    pub fn commands(&self) -> Vec<String> {
        if self.marked.is_empty() {
            return Vec::new();
        }
        let marked: Vec<usize> = self.marked.iter().copied().collect();
        let mut out = self.collector.commands(&self.analysis.roots, &marked);
        out.push(self.analysis.gc_command.clone());
        out
    }

    /// Handles a key.
    pub fn on_key(&mut self, k: KeyEvent) -> RootsOutcome {
        let page = 10;
        let last = self.order.len().saturating_sub(1);
        match k.code {
            KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                return RootsOutcome::Quit(Vec::new());
            }
            KeyCode::Char('q') => return RootsOutcome::Quit(self.commands()),
            KeyCode::Char('Q') | KeyCode::Esc => return RootsOutcome::Quit(Vec::new()),
            KeyCode::Down | KeyCode::Char('j') => self.cursor = (self.cursor + 1).min(last),
            KeyCode::Up | KeyCode::Char('k') => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::PageDown => self.cursor = (self.cursor + page).min(last),
            KeyCode::PageUp => self.cursor = self.cursor.saturating_sub(page),
            KeyCode::Char('g') | KeyCode::Home => self.cursor = 0,
            KeyCode::Char('G') | KeyCode::End => self.cursor = last,
            KeyCode::Char(' ') => self.toggle(),
            KeyCode::Char('u') => {
                self.marked.clear();
                self.joint = Figure::default();
            }
            KeyCode::Char('s') => {
                self.sort = match self.sort {
                    RootsSort::Freed => RootsSort::Age,
                    RootsSort::Age => RootsSort::Location,
                    RootsSort::Location => RootsSort::Freed,
                };
                self.resort();
            }
            KeyCode::Enter | KeyCode::Char('d') => self.details = !self.details,
            _ => {}
        }
        RootsOutcome::Continue
    }
}

fn sized(f: &Figure) -> String {
    format!("{} in {} path(s)", iec(f.nar_bytes), f.paths)
        + &f.disk_bytes
            .map(|d| format!(", {} on disk", iec(d)))
            .unwrap_or_default()
}

/// Draws the browser: the list of roots, the details of the one under the
/// cursor, and the status line with the marked roots' joint figure.
pub fn draw(f: &mut Frame, app: &RootsApp) {
    let a = app.analysis;
    let area = f.area();
    let [head, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(2),
    ])
    .areas(area);
    f.render_widget(
        Paragraph::new(format!(
            "roots of {}: {} root(s); dead now {}",
            a.store,
            a.all_roots,
            sized(&a.dead.figure)
        )),
        head,
    );
    let panes = if app.details {
        Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)]).split(body)
    } else {
        Layout::horizontal([Constraint::Percentage(100)]).split(body)
    };
    let items: Vec<ListItem> = app
        .order
        .iter()
        .map(|&i| {
            let r = &a.roots[i];
            let mark = if app.marked.contains(&i) {
                "[x]"
            } else {
                "[ ]"
            };
            ListItem::new(format!(
                "{mark} {:>10} {:>4}  {}",
                iec(r.freed.nar_bytes),
                r.age_secs.map(age).unwrap_or_default(),
                root_label(r)
            ))
        })
        .collect();
    let hl = if app.no_color {
        Style::default().add_modifier(Modifier::REVERSED)
    } else {
        Style::default()
            .add_modifier(Modifier::REVERSED)
            .add_modifier(Modifier::BOLD)
    };
    let mut state = ListState::default().with_selected(Some(app.cursor));
    f.render_stateful_widget(
        List::new(items)
            .block(Block::default().borders(Borders::ALL).title(format!(
                " roots ({}) by {} ",
                app.order.len(),
                match app.sort {
                    RootsSort::Freed => "what each frees",
                    RootsSort::Age => "age",
                    RootsSort::Location => "location",
                }
            )))
            .highlight_style(hl)
            .highlight_symbol("▶"),
        panes[0],
        &mut state,
    );
    if app.details
        && let Some(&i) = app.order.get(app.cursor)
    {
        let r = &a.roots[i];
        let mut lines = vec![
            Line::from(Span::styled(
                root_label(r),
                Style::default().add_modifier(Modifier::BOLD),
            )),
            Line::from(format!("keeps   {}", r.store_path)),
            Line::from(format!("frees   {}", sized(&r.freed))),
        ];
        if r.same_path_roots > 1 {
            lines.push(Line::from(format!(
                "        {} roots keep its path; all of them free {}",
                r.same_path_roots,
                sized(&r.freed_with_same_path)
            )));
        }
        if let Some(c) = &r.closure {
            lines.push(Line::from(format!("closure {}", sized(c))));
        }
        if let Some(s) = r.age_secs {
            lines.push(Line::from(format!("age     {}", age(s))));
        }
        match &r.command {
            Some(c) => lines.push(Line::from(format!("remove  {c}"))),
            None if r.held.is_some() => {
                lines.push(Line::from("held by a running process: goes when it ends"))
            }
            None => {}
        }
        f.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .block(Block::default().borders(Borders::ALL).title(" details ")),
            panes[1],
        );
    }
    let marked = if app.marked.is_empty() {
        "nothing marked".to_string()
    } else {
        format!(
            "{} marked: together they free {}",
            app.marked.len(),
            sized(&app.joint)
        )
    };
    f.render_widget(
        Paragraph::new(vec![
            Line::from(marked),
            Line::from(
                "space mark · u unmark all · s sort · d details · q quit and print the commands · Esc quit",
            ),
        ]),
        status,
    );
}
