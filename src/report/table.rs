//! A minimal aligned-column table. Hand-written because the tables here are
//! plain (no borders, no wrapping) and a table crate would bring styling we
//! must then turn off when piped.

/// Column alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right (text).
    Left,
    /// Pad on the left (numbers).
    Right,
}

/// A table of strings rendered with two spaces between columns.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(header: &[(&str, Align)]) -> Table {
        Table {
            header: header.iter().map(|(h, a)| (h.to_string(), *a)).collect(),
            rows: Vec::new(),
        }
    }
    /// Appends a row; it must have one cell per column.
    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.header.len());
        self.rows.push(cells);
    }
    /// Renders with a trailing newline per line; the last column is not
    /// padded, so long paths do not drag trailing spaces.
    pub fn render(&self) -> String {
        let cols = self.header.len();
        let mut width = vec![0usize; cols];
        for (i, (h, _)) in self.header.iter().enumerate() {
            width[i] = h.chars().count();
        }
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        let line = |cells: Vec<&str>, out: &mut String| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                if i > 0 {
                    s.push_str("  ");
                }
                let pad = width[i] - c.chars().count();
                let last = i + 1 == cols;
                match self.header[i].1 {
                    Align::Right => {
                        s.push_str(&" ".repeat(pad));
                        s.push_str(c);
                    }
                    Align::Left => {
                        s.push_str(c);
                        if !last {
                            s.push_str(&" ".repeat(pad));
                        }
                    }
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        line(
            self.header.iter().map(|(h, _)| h.as_str()).collect(),
            &mut out,
        );
        for r in &self.rows {
            line(r.iter().map(String::as_str).collect(), &mut out);
        }
        out
    }
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
}
