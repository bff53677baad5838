//! A minimal aligned-column table. Hand-written because the tables here are
//! plain (no borders): a table crate would bring styling we must then turn
//! off when piped. Fits a width by wrapping the columns of prose and
//! shortening the others (names last, each keeping the part that tells it
//! apart), and paints cells after padding so colour never upsets alignment.

use std::ops::Range;

use super::names::{Names, Shown, shorten_path};
use super::style::{Style, truncate};
use nix_heft_types::evidence::Verdict;

/// Column alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right (text); such columns shrink to fit a width.
    Left,
    /// Pad on the left (numbers); never shortened.
    Right,
}

/// How a cell is painted (and shortened).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paint {
    /// As is.
    Plain,
    /// In a verdict's colour.
    Verdict(Verdict),
    /// A size, in bold.
    Size,
    /// Store paths: hash parts dimmed; shortened in the middle.
    Path,
}

/// How a cell's text is shortened to its column's width.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cut {
    /// `…` at the end (prose), or in the middle for [`Paint::Path`].
    Default,
    /// A display name, as [`Shown::fit`] shortens it.
    Name(Shown),
    /// A whole store path, hash first, then its name keeping these
    /// characters of the name ([`super::names::shorten_path`]).
    StorePath(Range<usize>),
}

/// One cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// The text, unpainted.
    pub text: String,
    /// How to paint it.
    pub paint: Paint,
    /// How to shorten it.
    pub cut: Cut,
}

impl Cell {
    /// A cell painted `paint`.
    pub fn new(text: impl Into<String>, paint: Paint) -> Cell {
        Cell {
            text: text.into(),
            paint,
            cut: Cut::Default,
        }
    }
    /// The display name of `path` among `names`, shortened keeping what
    /// tells it apart.
    pub fn name(names: &Names, path: &str) -> Cell {
        Cell {
            text: names.get(path).to_string(),
            paint: Paint::Path,
            cut: Cut::Name(names.shown(path)),
        }
    }
    /// A whole store path, shortened hash first.
    pub fn store_path(names: &Names, path: &str) -> Cell {
        Cell {
            text: path.to_string(),
            paint: Paint::Path,
            cut: Cut::StorePath(names.name_keep(path)),
        }
    }
    /// This cell's text within `w` characters.
    fn fit(&self, w: usize) -> String {
        match &self.cut {
            Cut::Default => truncate(&self.text, w, self.paint == Paint::Path),
            Cut::Name(s) => s.fit(w),
            Cut::StorePath(k) => shorten_path(&self.text, k.clone(), w),
        }
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell::new(text, Paint::Plain)
    }
}

/// A table of cells rendered with two spaces between columns.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<(String, Align)>,
    rows: Vec<Vec<Cell>>,
    /// Columns shortened only once the others are at their minimum.
    kept: Vec<usize>,
    /// Columns of prose, wrapped onto more lines rather than cut.
    wrapped: Vec<usize>,
}

/// Text columns are not shortened below this many characters.
const MIN_TEXT_COLUMN: usize = 12;
/// Names are not shortened below this many characters before prose is.
const MIN_NAME_COLUMN: usize = 20;
/// Wrapped columns keep at least this many characters a line while other
/// columns can still give room.
const MIN_WRAPPED_COLUMN: usize = 20;
/// Wrapped columns keep at least this many characters a line before names
/// go below [`MIN_NAME_COLUMN`].
const MIN_WRAPPED_NARROW: usize = 10;
/// Wrapped columns never go below this.
const MIN_WRAPPED_LAST: usize = 8;

impl Table {
    /// A table with these column headers.
    pub fn new(header: &[(&str, Align)]) -> Table {
        Table {
            header: header.iter().map(|(h, a)| (h.to_string(), *a)).collect(),
            rows: Vec::new(),
            kept: Vec::new(),
            wrapped: Vec::new(),
        }
    }
    /// Wraps column `col` onto more lines instead of cutting it (prose:
    /// reasons, file lists).
    pub fn wrap(&mut self, col: usize) -> &mut Self {
        self.wrapped.push(col);
        self
    }
    /// Shortens column `col` last when fitting a width (the names a row is
    /// read by).
    pub fn keep(&mut self, col: usize) -> &mut Self {
        self.kept.push(col);
        self
    }
    /// Appends a row of plain cells; it must have one cell per column.
    pub fn row(&mut self, cells: Vec<String>) {
        self.cells(cells.into_iter().map(Cell::from).collect());
    }
    /// Appends a row of cells; it must have one cell per column.
    pub fn cells(&mut self, cells: Vec<Cell>) {
        debug_assert_eq!(cells.len(), self.header.len());
        self.rows.push(cells);
    }
    /// Renders unpainted at full width.
    pub fn render(&self) -> String {
        self.render_fit(None, Style::default())
    }
    /// Renders with a trailing newline per line, within `width` columns
    /// when given (text columns shortened, widest first), painted by
    /// `style`. The last column is not padded, so long paths do not drag
    /// trailing spaces.
    pub fn render_fit(&self, width: Option<usize>, style: Style) -> String {
        let cols = self.header.len();
        let mut w: Vec<usize> = self.header.iter().map(|(h, _)| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.text.chars().count());
            }
        }
        if let Some(limit) = width {
            self.shrink(&mut w, limit);
        }
        let mut out = String::new();
        let line = |cells: Vec<Cell>, out: &mut String, header: bool| {
            // Each cell's lines: wrapped columns may take several.
            let parts: Vec<Vec<String>> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if self.wrapped.contains(&i) && c.text.chars().count() > w[i] {
                        wrap_cell(&c.text, w[i])
                    } else {
                        vec![c.fit(w[i])]
                    }
                })
                .collect();
            let height = parts.iter().map(Vec::len).max().unwrap_or(1);
            for k in 0..height {
                let mut s = String::new();
                for (i, c) in cells.iter().enumerate() {
                    if i > 0 {
                        s.push_str("  ");
                    }
                    let text = parts[i].get(k).cloned().unwrap_or_default();
                    let pad = w[i].saturating_sub(text.chars().count());
                    let painted = match c.paint {
                        _ if header => style.heading(&text),
                        Paint::Plain => text,
                        Paint::Verdict(v) => style.verdict(v, &text),
                        Paint::Size => style.size(&text),
                        Paint::Path => style.paths(&text),
                    };
                    let last = i + 1 == cols;
                    match self.header[i].1 {
                        Align::Right => {
                            s.push_str(&" ".repeat(pad));
                            s.push_str(&painted);
                        }
                        Align::Left => {
                            s.push_str(&painted);
                            if !last {
                                s.push_str(&" ".repeat(pad));
                            }
                        }
                    }
                }
                out.push_str(s.trim_end());
                out.push('\n');
            }
        };
        line(
            self.header
                .iter()
                .map(|(h, _)| Cell::from(h.clone()))
                .collect(),
            &mut out,
            true,
        );
        for r in &self.rows {
            line(r.clone(), &mut out, false);
        }
        out
    }
}

impl Table {
    /// Narrows the columns `w` until the table fits `limit`, in stages:
    /// prose and other text down to a readable minimum first (names kept),
    /// then names to theirs, then everything to the last minimum. Numbers
    /// are never cut; a table that cannot fit stays as narrow as it gets.
    fn shrink(&self, w: &mut [usize], limit: usize) {
        let cols = w.len();
        let total = |w: &[usize]| w.iter().sum::<usize>() + 2 * cols.saturating_sub(1);
        let head = |i: usize| self.header[i].0.chars().count();
        let kept = |i: usize| self.kept.contains(&i);
        let wrapped = |i: usize| self.wrapped.contains(&i);
        // Each stage: the floor of each column (`None`: not shortened).
        let stages: [&dyn Fn(usize) -> Option<usize>; 5] = [
            &|i| {
                (!kept(i)).then_some(if wrapped(i) {
                    MIN_WRAPPED_COLUMN
                } else {
                    MIN_TEXT_COLUMN
                })
            },
            &|i| kept(i).then_some(MIN_NAME_COLUMN),
            &|i| (!kept(i)).then_some(if wrapped(i) { MIN_WRAPPED_NARROW } else { 0 }),
            &|i| kept(i).then_some(MIN_TEXT_COLUMN),
            &|i| wrapped(i).then_some(MIN_WRAPPED_LAST),
        ];
        for floor in stages {
            while total(w) > limit {
                let widest = (0..cols)
                    .filter(|&i| self.header[i].1 == Align::Left)
                    .filter(|&i| floor(i).is_some_and(|f| w[i] > f.max(head(i))))
                    .max_by_key(|&i| w[i]);
                let Some(i) = widest else { break };
                w[i] -= 1;
            }
        }
    }
}

/// A cell's text wrapped at spaces to `w` characters, words longer than
/// that broken.
fn wrap_cell(text: &str, w: usize) -> Vec<String> {
    let opts = textwrap::Options::new(w.max(1))
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .break_words(true)
        // First fit: the optimal-fit default may let a line run past
        // the width to avoid a short one.
        .wrap_algorithm(textwrap::WrapAlgorithm::FirstFit);
    textwrap::wrap(text, opts)
        .into_iter()
        .map(|l| l.into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn aligns() {
        let mut t = Table::new(&[("SIZE", Align::Right), ("NAME", Align::Left)]);
        t.row(vec!["1.5 KiB".into(), "a".into()]);
        t.row(vec!["10 B".into(), "bbb".into()]);
        assert_eq!(t.render(), "   SIZE  NAME\n1.5 KiB  a\n   10 B  bbb\n");
    }

    #[test]
    fn fits_a_width_by_shortening_text_columns() {
        let mut t = Table::new(&[
            ("SIZE", Align::Right),
            ("FROM", Align::Left),
            ("FILES", Align::Left),
        ]);
        t.cells(vec![
            Cell::new("1 KiB", Paint::Size),
            Cell::new(
                "/nix/store/aqmjhza31wwx74k1rsrnvbjqqmi0id4s-rocblas-5.7.1",
                Paint::Path,
            ),
            Cell::new("lib/a lib/b lib/c lib/d lib/e lib/f lib/g", Paint::Plain),
        ]);
        let out = t.render_fit(Some(60), Style::default());
        assert!(out.lines().all(|l| l.chars().count() <= 60), "{out}");
        assert!(out.contains('…'), "{out}");
        let full = t.render_fit(None, Style::default());
        assert!(
            full.contains("lib/g") && full.contains("rocblas-5.7.1"),
            "{full}"
        );
        // Colour does not change what is visible or its alignment.
        let coloured = t.render_fit(Some(60), Style { color: true });
        let stripped: String = {
            let mut s = String::new();
            let mut esc = false;
            for ch in coloured.chars() {
                match (esc, ch) {
                    (false, '\u{1b}') => esc = true,
                    (true, 'm') => esc = false,
                    (true, _) => {}
                    (false, c) => s.push(c),
                }
            }
            s
        };
        assert_eq!(stripped, out);
    }
}
