//! `nix-heft browse`: a terminal browser of a closure in the spirit of
//! nix-tree, with three panes (the current path's referrers | its
//! references | details of the selected one), why-chains with the files
//! holding each edge, and the advice touching a path.
//!
//! [`App`] is the whole state and its key handling, drawn by [`ui::draw`]
//! onto any ratatui backend (the tests use `TestBackend`); the binary's
//! `browse_terminal` is the real terminal loop (this crate draws, it never
//! touches a terminal). Sizes are there from the start; evidence
//! (the same read and classify `refs` uses, and `advise`'s actions) arrives
//! later as [`Loaded`] from a background thread the caller runs.

#![warn(missing_docs)]

pub mod roots;
pub mod ui;

use std::collections::HashSet;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use nix_heft_analysis::plan::advise::Action;
use nix_heft_graph::{Graph, NodeId, added_sizes, closure_sizes};
use nix_heft_scan::classify::Classified;

/// Evidence and advice, once the background read is done.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Classified evidence of every edge.
    pub classified: Classified,
    /// `advise`'s actions.
    pub actions: Vec<Action>,
    /// Problems met while reading or simulating: counted on screen,
    /// printed once on leaving, as every command prints its problems.
    pub problems: Vec<nix_heft_types::problem::Problem>,
    /// False when the source has no file contents.
    pub available: bool,
}

impl From<nix_heft_ops::pipeline::Examined> for Loaded {
    fn from(ex: nix_heft_ops::pipeline::Examined) -> Loaded {
        Loaded {
            classified: ex.classified,
            actions: ex.actions,
            problems: ex.problems,
            available: ex.readable,
        }
    }
}

/// What the browser shows besides sizes when it browses the build graph
/// (`browse --derivation`): paths are derivations and sources, a
/// derivation's self size its outputs' where known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildGraph {
    /// Per path (by id): the outputs whose size is known in no store read
    /// (`name` or `name path`), counted as 0; empty when all are known.
    pub unknown: Vec<Vec<String>>,
}

impl BuildGraph {
    /// The outputs of unknown size (`unknown`, the build-graph source's
    /// answer) of each path of `g`; those not in `g` left out.
    pub fn new(g: &Graph, unknown: Vec<(nix_heft_format::StorePath, Vec<String>)>) -> BuildGraph {
        let mut by_id = vec![Vec::new(); g.len()];
        let index = g.index();
        for (p, outs) in unknown {
            if let Some(&v) = index.get(&p) {
                by_id[v as usize] = outs;
            }
        }
        BuildGraph { unknown: by_id }
    }

    /// How many derivations have an output of unknown size.
    pub fn unknown_count(&self) -> usize {
        self.unknown.iter().filter(|u| !u.is_empty()).count()
    }

    /// The unknown outputs of `v` (none for a path out of range).
    pub fn unknown_of(&self, v: NodeId) -> &[String] {
        self.unknown.get(v as usize).map_or(&[], Vec::as_slice)
    }
}

/// The order of the references list, largest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    /// Added size.
    Added,
    /// Closure size.
    Closure,
    /// Own NAR size.
    SelfSize,
}

impl SortBy {
    fn next(self) -> SortBy {
        match self {
            SortBy::Added => SortBy::Closure,
            SortBy::Closure => SortBy::SelfSize,
            SortBy::SelfSize => SortBy::Added,
        }
    }
    /// The name shown in the status line.
    pub fn as_str(self) -> &'static str {
        match self {
            SortBy::Added => "added",
            SortBy::Closure => "closure",
            SortBy::SelfSize => "self",
        }
    }
}

/// Which list the cursor keys move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    /// The referrers of the current path.
    Referrers,
    /// The references of the current path.
    References,
}

/// What fills the screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// The three panes.
    Main,
    /// Typing a search; results in the middle pane.
    Search {
        /// What was typed.
        query: String,
        /// Matching paths, largest added size first.
        hits: Vec<NodeId>,
        /// Cursor in `hits`.
        cursor: usize,
    },
    /// Why-chains to a path, scrolled by this many lines.
    Why(NodeId, u16),
    /// The advice touching a path.
    Advice(NodeId, u16),
    /// The key help.
    Help,
}

/// What the terminal loop must do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Keep going.
    Continue,
    /// Leave, restoring the terminal.
    Quit,
    /// Put this text on the clipboard (OSC 52).
    Copy(String),
}

/// The browser's state.
pub struct App<'g> {
    /// The closure.
    pub g: &'g Graph,
    /// Closure size per path (zeros until `closure_ready`).
    pub closure: Vec<u64>,
    /// False while closure sizes are still being computed elsewhere.
    pub closure_ready: bool,
    /// Added size per path.
    pub added: Vec<u64>,
    /// Short unambiguous names.
    pub names: Vec<String>,
    /// The path whose references the middle pane lists; `None` = the
    /// roots.
    pub current: Option<NodeId>,
    history: Vec<(Option<NodeId>, usize)>,
    /// The middle list, sorted.
    pub items: Vec<NodeId>,
    /// Cursor in `items`.
    pub cursor: usize,
    /// The left list (referrers of `current`), sorted.
    pub left: Vec<NodeId>,
    /// Cursor in `left`.
    pub left_cursor: usize,
    /// Which list moves.
    pub focus: Focus,
    /// Order of both lists.
    pub sort: SortBy,
    /// What is shown.
    pub mode: Mode,
    /// Evidence and advice, once loaded.
    pub loaded: Option<Loaded>,
    /// Bytes read so far and to read, for the progress indicator.
    pub progress: (u64, u64),
    /// A one-line message (copied, no match ...).
    pub status: String,
    /// No colours, only emphasis (NO_COLOR).
    pub no_color: bool,
    /// Set when browsing the build graph.
    pub build: Option<BuildGraph>,
    /// Where each path came from (the store, and the key that signed its
    /// narinfo), by node id, as the details pane shows it; empty when the
    /// store does not say (a single local store).
    pub origins: Vec<Option<String>>,
}

impl<'g> App<'g> {
    /// A browser over `g`, sizes computed, no evidence yet.
    pub fn new(g: &'g Graph, no_color: bool) -> App<'g> {
        let mut app = App::without_closure_sizes(g, no_color);
        app.set_closure_sizes(closure_sizes(g));
        app
    }

    /// A browser that draws at once with self and added sizes; closure
    /// sizes (the slow part on a large closure) come later through
    /// [`App::set_closure_sizes`].
    pub fn without_closure_sizes(g: &'g Graph, no_color: bool) -> App<'g> {
        let names = nix_heft_report::display_names(g.paths().iter().map(|p| p.as_str()));
        let names = g
            .paths()
            .iter()
            .map(|p| {
                names
                    .get(p.as_str())
                    .cloned()
                    .unwrap_or_else(|| p.name().into())
            })
            .collect();
        let mut app = App {
            g,
            closure: vec![0; g.len()],
            closure_ready: false,
            added: added_sizes(g),
            names,
            current: match g.roots() {
                [r] => Some(*r),
                _ => None,
            },
            history: Vec::new(),
            items: Vec::new(),
            cursor: 0,
            left: Vec::new(),
            left_cursor: 0,
            focus: Focus::References,
            sort: SortBy::Added,
            mode: Mode::Main,
            loaded: None,
            progress: (0, 0),
            status: String::new(),
            no_color,
            build: None,
            origins: Vec::new(),
        };
        app.refill();
        app
    }

    /// Installs the closure sizes and re-sorts.
    pub fn set_closure_sizes(&mut self, closure: Vec<u64>) {
        if closure.len() == self.g.len() {
            self.closure = closure;
            self.closure_ready = true;
            self.refill();
        }
    }

    fn key_of(&self, v: NodeId) -> u64 {
        match self.sort {
            // Until closure sizes arrive, that order falls back to added.
            SortBy::Closure if !self.closure_ready => self.added[v as usize],
            SortBy::Added => self.added[v as usize],
            SortBy::Closure => self.closure[v as usize],
            SortBy::SelfSize => self.g.nar_size(v),
        }
    }

    fn sorted(&self, mut v: Vec<NodeId>) -> Vec<NodeId> {
        v.sort_by(|a, b| {
            self.key_of(*b)
                .cmp(&self.key_of(*a))
                .then_with(|| self.g.path(*a).cmp(self.g.path(*b)))
        });
        v
    }

    /// Recomputes both lists for `current`, keeping the cursor on the same
    /// path when it is still listed.
    fn refill(&mut self) {
        let keep = self.items.get(self.cursor).copied();
        let keep_left = self.left.get(self.left_cursor).copied();
        let items = match self.current {
            None => self.g.roots().to_vec(),
            Some(c) => self.g.references(c).to_vec(),
        };
        self.items = self.sorted(items);
        let left = match self.current {
            None => Vec::new(),
            Some(c) => self.g.referrers(c).to_vec(),
        };
        self.left = self.sorted(left);
        self.cursor = keep
            .and_then(|k| self.items.iter().position(|&v| v == k))
            .unwrap_or(0);
        self.left_cursor = keep_left
            .and_then(|k| self.left.iter().position(|&v| v == k))
            .unwrap_or(0);
        if self.left.is_empty() {
            self.focus = Focus::References;
        }
    }

    /// The path the details pane describes.
    pub fn selected(&self) -> Option<NodeId> {
        match (&self.mode, self.focus) {
            (Mode::Search { hits, cursor, .. }, _) => hits.get(*cursor).copied(),
            (_, Focus::Referrers) => self.left.get(self.left_cursor).copied(),
            (_, Focus::References) => self.items.get(self.cursor).copied(),
        }
    }

    fn go_to(&mut self, v: NodeId) {
        self.history.push((self.current, self.cursor));
        self.current = Some(v);
        self.items.clear();
        self.left.clear();
        self.cursor = 0;
        self.left_cursor = 0;
        self.focus = Focus::References;
        self.refill();
    }

    fn back(&mut self) {
        if let Some((c, cur)) = self.history.pop() {
            let from = self.current;
            self.current = c;
            self.items.clear();
            self.refill();
            self.cursor = from
                .and_then(|f| self.items.iter().position(|&v| v == f))
                .unwrap_or(cur.min(self.items.len().saturating_sub(1)));
        } else if let Some(&r) = self.left.first() {
            // No history: up to the heaviest referrer, as a parent.
            let from = self.current;
            self.current = Some(r);
            self.items.clear();
            self.refill();
            if let Some(p) = from.and_then(|f| self.items.iter().position(|&v| v == f)) {
                self.cursor = p;
            }
        } else if self.current.is_some() && self.g.roots().len() > 1 {
            let from = self.current;
            self.current = None;
            self.items.clear();
            self.refill();
            if let Some(p) = from.and_then(|f| self.items.iter().position(|&v| v == f)) {
                self.cursor = p;
            }
        }
    }

    fn move_cursor(&mut self, delta: isize) {
        let (len, cur) = match (&mut self.mode, self.focus) {
            (Mode::Search { hits, cursor, .. }, _) => (hits.len(), cursor),
            (_, Focus::Referrers) => (self.left.len(), &mut self.left_cursor),
            (_, Focus::References) => (self.items.len(), &mut self.cursor),
        };
        if len == 0 {
            return;
        }
        let next = (*cur as isize + delta).clamp(0, len as isize - 1);
        *cur = next as usize;
    }

    fn search(&self, query: &str) -> Vec<NodeId> {
        let q = query.to_lowercase();
        if q.is_empty() {
            return Vec::new();
        }
        let mut hits: Vec<NodeId> = (0..self.g.len() as NodeId)
            .filter(|&v| self.g.path(v).as_str().to_lowercase().contains(&q))
            .collect();
        hits.sort_by(|a, b| self.added[*b as usize].cmp(&self.added[*a as usize]));
        hits
    }

    /// Handles one key press.
    pub fn on_key(&mut self, key: KeyEvent) -> Outcome {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Outcome::Quit;
        }
        let page = 10;
        match &mut self.mode {
            Mode::Search { query, .. } => {
                match key.code {
                    KeyCode::Esc => self.mode = Mode::Main,
                    KeyCode::Enter => {
                        let pick = self.selected();
                        self.mode = Mode::Main;
                        match pick {
                            Some(v) => self.go_to(v),
                            None => self.status = "no path matches".into(),
                        }
                    }
                    KeyCode::Up => self.move_cursor(-1),
                    KeyCode::Down => self.move_cursor(1),
                    KeyCode::Backspace => {
                        query.pop();
                        let q = query.clone();
                        let hits = self.search(&q);
                        self.mode = Mode::Search {
                            query: q,
                            hits,
                            cursor: 0,
                        };
                    }
                    KeyCode::Char(c) => {
                        query.push(c);
                        let q = query.clone();
                        let hits = self.search(&q);
                        self.status = format!("{} matches", hits.len());
                        self.mode = Mode::Search {
                            query: q,
                            hits,
                            cursor: 0,
                        };
                    }
                    _ => {}
                }
                return Outcome::Continue;
            }
            Mode::Why(_, scroll) | Mode::Advice(_, scroll) => {
                match key.code {
                    KeyCode::Char('q') => return Outcome::Quit,
                    KeyCode::Esc | KeyCode::Char('w') | KeyCode::Char('a') | KeyCode::Left => {
                        self.mode = Mode::Main
                    }
                    KeyCode::Char('h') => self.mode = Mode::Main,
                    KeyCode::Down | KeyCode::Char('j') => *scroll = scroll.saturating_add(1),
                    KeyCode::Up | KeyCode::Char('k') => *scroll = scroll.saturating_sub(1),
                    KeyCode::PageDown | KeyCode::Char(' ') => *scroll = scroll.saturating_add(page),
                    KeyCode::PageUp => *scroll = scroll.saturating_sub(page),
                    KeyCode::Char('?') => self.mode = Mode::Help,
                    _ => {}
                }
                return Outcome::Continue;
            }
            Mode::Help => {
                match key.code {
                    KeyCode::Char('q') => return Outcome::Quit,
                    _ => self.mode = Mode::Main,
                }
                return Outcome::Continue;
            }
            Mode::Main => {}
        }
        self.status.clear();
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => return Outcome::Quit,
            KeyCode::Down | KeyCode::Char('j') => self.move_cursor(1),
            KeyCode::Up | KeyCode::Char('k') => self.move_cursor(-1),
            KeyCode::PageDown => self.move_cursor(page as isize),
            KeyCode::PageUp => self.move_cursor(-(page as isize)),
            KeyCode::Home | KeyCode::Char('g') => self.move_cursor(isize::MIN / 2),
            KeyCode::End | KeyCode::Char('G') => self.move_cursor(isize::MAX / 2),
            KeyCode::Right | KeyCode::Char('l') | KeyCode::Enter => {
                if let Some(v) = self.selected() {
                    self.go_to(v);
                }
            }
            KeyCode::Left | KeyCode::Char('h') => self.back(),
            KeyCode::Tab if !self.left.is_empty() => {
                self.focus = match self.focus {
                    Focus::References => Focus::Referrers,
                    Focus::Referrers => Focus::References,
                };
            }
            KeyCode::Char('s') => {
                self.sort = self.sort.next();
                self.refill();
                self.status = if self.sort == SortBy::Closure && !self.closure_ready {
                    "closure sizes still computing: sorted by added until then".into()
                } else {
                    format!("sorted by {} size", self.sort.as_str())
                };
            }
            KeyCode::Char('/') => {
                self.mode = Mode::Search {
                    query: String::new(),
                    hits: Vec::new(),
                    cursor: 0,
                }
            }
            KeyCode::Char('w') => {
                if let Some(v) = self.selected() {
                    self.mode = Mode::Why(v, 0);
                }
            }
            KeyCode::Char('a') => {
                if let Some(v) = self.selected() {
                    self.mode = Mode::Advice(v, 0);
                }
            }
            KeyCode::Char('?') => self.mode = Mode::Help,
            KeyCode::Char('y') => {
                if let Some(v) = self.selected() {
                    let p = self.g.path(v).to_string();
                    self.status = format!("copied {p} (OSC 52)");
                    return Outcome::Copy(p);
                }
            }
            _ => {}
        }
        Outcome::Continue
    }

    /// The advice whose package, cuts or removed paths include `v`.
    pub fn advice_for(&self, v: NodeId) -> Vec<&Action> {
        let p = self.g.path(v).as_str();
        self.loaded
            .iter()
            .flat_map(|l| &l.actions)
            .filter(|a| {
                a.package == p || a.cuts.iter().any(|c| c == p) || a.removes.iter().any(|c| c == p)
            })
            .collect()
    }

    /// Chains from the roots to `v`: the best by verdict once evidence is
    /// there, the shortest before.
    pub fn chains_to(&self, v: NodeId) -> Vec<Vec<NodeId>> {
        if let Some(l) = &self.loaded
            && l.available
        {
            return nix_heft_analysis::explain::best_chains(
                self.g,
                &l.classified,
                self.g.roots(),
                &[v],
            )
            .into_iter()
            .map(|e| e.chain)
            .collect();
        }
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for &r in self.g.roots() {
            let (_, mut ch) = nix_heft_graph::chains::chains(self.g, r, &[v], false);
            if let Some(c) = ch.pop()
                && seen.insert(c.clone())
            {
                out.push(c);
                break;
            }
        }
        out
    }
}

/// A key press, for tests and callers that synthesise keys.
pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}
