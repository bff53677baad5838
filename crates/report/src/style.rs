//! Colour and width for text output. Colour only on a terminal (or with
//! `--color always`), never with `NO_COLOR`; verdicts, sizes and store-path
//! hash parts are highlighted, as `nix why-depends` highlights hashes.
//! Width is the terminal's (or `COLUMNS`); piped output keeps full lines.

use anstyle::{AnsiColor, Effects, Style as Ansi};

use nix_heft_format::nixbase32::IS_BASE32;
use nix_heft_format::store_path::HASH_LEN;
use nix_heft_types::evidence::Verdict;

/// How text is painted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    /// Whether to emit ANSI colour sequences.
    pub color: bool,
}

fn paint(style: Ansi, text: &str) -> String {
    // The reset goes before a closing line break, so that it does not
    // start a line of its own (a line of escapes alone reads as blank).
    let (body, end) = match text.strip_suffix('\n') {
        Some(b) => (b, "\n"),
        None => (text, ""),
    };
    format!("{}{body}{}{end}", style.render(), style.render_reset())
}

impl Style {
    /// A verdict word (or any text about it) in the verdict's colour.
    pub fn verdict(&self, v: Verdict, text: &str) -> String {
        if !self.color {
            return text.to_string();
        }
        let c = match v {
            Verdict::Runtime => AnsiColor::Green,
            Verdict::Unknown => AnsiColor::Yellow,
            Verdict::Build | Verdict::Docs => AnsiColor::Cyan,
            Verdict::Dead => AnsiColor::Red,
        };
        paint(Ansi::new().fg_color(Some(c.into())), text)
    }

    /// A size, in bold.
    pub fn size(&self, text: &str) -> String {
        if !self.color {
            return text.to_string();
        }
        paint(Ansi::new().effects(Effects::BOLD), text)
    }

    /// A heading, in bold.
    pub fn heading(&self, text: &str) -> String {
        self.size(text)
    }

    /// Text with every store hash part dimmed, so names stand out.
    pub fn paths(&self, text: &str) -> String {
        if !self.color {
            return text.to_string();
        }
        let b = text.as_bytes();
        let mut out = String::with_capacity(text.len() + 16);
        let mut last = 0;
        let mut i = 0;
        while i + HASH_LEN <= b.len() {
            let at_start = i == 0 || !IS_BASE32[b[i - 1] as usize];
            let run = b[i..i + HASH_LEN].iter().all(|&c| IS_BASE32[c as usize]);
            let ends = b.get(i + HASH_LEN) == Some(&b'-');
            if at_start && run && ends {
                out.push_str(&text[last..i]);
                out.push_str(&paint(
                    Ansi::new().effects(Effects::DIMMED),
                    &text[i..i + HASH_LEN],
                ));
                i += HASH_LEN;
                last = i;
            } else {
                i += 1;
            }
        }
        out.push_str(&text[last..]);
        out
    }
}

/// Shortens `s` to at most `width` characters with `…`: in the middle for
/// store paths (hash and name ends both tell), at the end otherwise.
pub fn truncate(s: &str, width: usize, middle: bool) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let keep = width - 1;
    if middle {
        let head = keep / 2;
        let tail = keep - head;
        let a: String = s.chars().take(head).collect();
        let b: String = s.chars().skip(n - tail).collect();
        format!("{a}…{b}")
    } else {
        let a: String = s.chars().take(keep).collect();
        format!("{a}…")
    }
}

/// One line shortened in the middle to fit `width`, when given.
pub fn fit_line(line: &str, width: Option<usize>) -> String {
    match width {
        Some(w) => truncate(line, w, true),
        None => line.to_string(),
    }
}

/// Wraps `text` to `width` (when given) with `indent` before every line
/// after the first as well as the first; long words are not broken.
pub fn wrap(text: &str, width: Option<usize>, indent: &str) -> String {
    wrap_hanging(text, width, indent, indent)
}

/// [`wrap`] with a deeper indent for continuation lines. Breaks only at
/// spaces, and never inside a size (`1.9 GiB`) or between a name and its
/// hash (`rocblas-5.7.1 (cvafbxx6)`): names like `rocblas-5.7.1` stay
/// whole. A word longer than a line is shortened in the middle, so every
/// line fits.
pub fn wrap_hanging(text: &str, width: Option<usize>, first: &str, rest: &str) -> String {
    let indent = first;
    match width {
        Some(w) if w > rest.len().max(first.len()) + 10 => {
            let opts = textwrap::Options::new(w)
                .initial_indent(first)
                .subsequent_indent(rest)
                .word_separator(textwrap::WordSeparator::AsciiSpace)
                .word_splitter(textwrap::WordSplitter::NoHyphenation)
                .break_words(false)
                // First fit: the optimal-fit default may let a line run past
                // the width to avoid a short one.
                .wrap_algorithm(textwrap::WrapAlgorithm::FirstFit);
            let mut s = String::new();
            for l in textwrap::wrap(&glue(text), opts) {
                let l = l.replace(NBSP, " ");
                if textwrap::core::display_width(&l) > w {
                    s.push_str(&truncate(&l, w, true));
                } else {
                    s.push_str(&l);
                }
                s.push('\n');
            }
            s
        }
        _ => format!("{indent}{text}\n"),
    }
}

/// Stands for a space that [`wrap_hanging`] must not break at.
const NBSP: char = '\u{a0}';

/// `text` with the spaces inside sizes (`1.9 GiB`), after a count (`20
/// paths`), between a flag and its number (`--min-saving 0`) and before a
/// name's hash (`name (cvafbxx6)`) made unbreakable.
fn glue(text: &str) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    for (i, ch) in text.char_indices() {
        if ch == ' ' && i > 0 {
            let after = &text[i + 1..];
            let unit = b[i - 1].is_ascii_digit()
                && UNITS.iter().any(|u| {
                    after.starts_with(u)
                        && after[u.len()..]
                            .chars()
                            .next()
                            .is_none_or(|c| !c.is_ascii_alphanumeric())
                });
            let hash = after.len() >= 10
                && after.as_bytes()[0] == b'('
                && after.as_bytes()[9] == b')'
                && after.as_bytes()[1..9]
                    .iter()
                    .all(|&c| IS_BASE32[c as usize]);
            // A count stays with what it counts ("20 paths").
            let word = text[..i].rsplit([' ', NBSP]).next().unwrap_or("");
            let count = !word.is_empty() && word.bytes().all(|c| c.is_ascii_digit() || c == b',');
            // A flag stays with its number ("--min-saving 0").
            let flag = word.trim_start_matches(['(', '[', '`']).starts_with("--")
                && after.starts_with(|c: char| c.is_ascii_digit());
            if unit || hash || count || flag {
                out.push(NBSP);
                continue;
            }
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glued_spaces_are_sizes_counts_flags_and_hashes() {
        let g = glue("saves 1.2 MiB in 20 paths; --min-saving 0; x (cvafbxx6) (--all 2) -x");
        assert_eq!(
            g,
            "saves 1.2\u{a0}MiB in 20\u{a0}paths; --min-saving\u{a0}0; x\u{a0}(cvafbxx6) (--all\u{a0}2) -x"
        );
    }

    #[test]
    fn truncation_and_hash_dimming() {
        assert_eq!(truncate("abcdefghij", 5, false), "abcd…");
        assert_eq!(truncate("abcdefghij", 5, true), "ab…ij");
        assert_eq!(truncate("abc", 5, true), "abc");
        let p = "/nix/store/aqmjhza31wwx74k1rsrnvbjqqmi0id4s-rocblas-5.7.1";
        assert_eq!(Style { color: false }.paths(p), p);
        let c = Style { color: true }.paths(p);
        assert!(
            c.contains("\u{1b}[2maqmjhza31wwx74k1rsrnvbjqqmi0id4s\u{1b}[0m-rocblas"),
            "{c:?}"
        );
        assert_eq!(wrap("a b c", None, "  "), "  a b c\n");
        assert_eq!(
            wrap("aaaa bbbb cccc dddd", Some(15), "  "),
            "  aaaa bbbb\n  cccc dddd\n"
        );
        // Never inside a size or between a name and its hash; a word too
        // long for a line is shortened.
        assert_eq!(
            wrap("closure: 1.9 GiB, x (+12.5 KiB)", Some(18), ""),
            "closure: 1.9 GiB,\nx (+12.5 KiB)\n"
        );
        assert_eq!(
            wrap("see hipblas-5.7.1 (g18j3saw) now", Some(26), ""),
            "see\nhipblas-5.7.1 (g18j3saw)\nnow\n"
        );
        let long = wrap(&format!("x {}", "y".repeat(40)), Some(20), "");
        assert!(long.lines().all(|l| l.chars().count() <= 20), "{long}");
    }
}
