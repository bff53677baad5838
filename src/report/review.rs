//! What `diff` and `check` share for review: the output [`Format`]s, the
//! grouped evidence as one phrase (text, annotations) or markdown, the
//! PR-comment rules (a hidden [`MARKER`], at most [`COMMENT_LIMIT`]
//! characters, the least important parts cut first by [`Fitter`]) and
//! GitHub workflow commands ([`Annotation`], escaped as GitHub requires).

use crate::evidence::{Evidence, EvidenceGroup};
use crate::units::iec;

/// Output formats of `diff` and `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Plain text.
    Text,
    /// The serde document.
    Json,
    /// GitHub Actions workflow commands (`::error ...`).
    Github,
    /// Markdown for a pull-request comment or a job summary.
    Markdown,
}

impl Format {
    /// Parses `text`, `json`, `github` or `markdown`.
    pub fn parse(s: &str) -> crate::Result<Format> {
        Ok(match s {
            "text" => Format::Text,
            "json" => Format::Json,
            "github" => Format::Github,
            "markdown" => Format::Markdown,
            _ => {
                return Err(crate::Error::Usage(format!(
                    "unknown format '{s}': use text, json, github or markdown"
                )));
            }
        })
    }
}

/// A report with the review formats: markdown for a PR comment or job
/// summary, GitHub workflow commands.
pub trait Reviewed: super::Report {
    /// Markdown of at most `limit` characters, [`MARKER`] first.
    fn render_markdown(&self, limit: usize) -> String;
    /// Workflow commands, pointing at `at` when given.
    fn render_github(&self, at: Option<&NixFile>) -> String;
}

/// The hidden first line of every markdown report, so that a bot (the
/// Action's sticky comment, a script) finds its comment and edits it
/// rather than posting a new one each push.
pub const MARKER: &str = "<!-- nix-heft -->";

/// GitHub refuses comment bodies over this many characters.
pub const COMMENT_LIMIT: usize = 65_536;

/// Annotations of one level (error, warning, notice) GitHub shows per
/// step; the rest it drops without a word.
pub const ANNOTATIONS_PER_LEVEL: usize = 10;

/// Groups shown per edge before "and N more".
pub const SHOWN_GROUPS: usize = 3;

/// Up to this many files a group names them all (no more than
/// [`crate::evidence::EXAMPLES`]); above it, it is counted and its
/// [`EvidenceGroup::examples`] named.
const LIST_AT: usize = 3;

/// The groups of `evs`: those given, or (for a report read from JSON
/// without them) grouped here without sizes.
pub fn groups_of(groups: &[EvidenceGroup], evs: &[Evidence]) -> Vec<EvidenceGroup> {
    if groups.is_empty() && !evs.is_empty() {
        crate::evidence::group(evs, |_| None)
    } else {
        groups.to_vec()
    }
}

/// `lib/rocblas/library/` for a directory, `./` for the top.
fn dir_shown(dir: &str) -> String {
    if dir.is_empty() {
        "./".into()
    } else {
        format!("{dir}/")
    }
}

/// One group in words: `share/doc/app/README (text, docs)` for a few
/// files, `612 symlink holds in lib/rocblas/library/ (612 files, 48.0 KiB,
/// runtime; e.g. a.dat, b.dat, c.dat)` for many.
pub fn group_phrase(g: &EvidenceGroup, code: fn(&str) -> String) -> String {
    let base = |f: &str| {
        f.strip_prefix(&g.dir)
            .and_then(|r| r.strip_prefix('/'))
            .unwrap_or(f)
            .to_string()
    };
    if g.files <= LIST_AT {
        let files: Vec<String> = g
            .examples
            .iter()
            .map(|f| code(if f.is_empty() { "." } else { f }))
            .collect();
        // A file that names the path many times says so.
        let holds = if g.holds > g.files {
            format!(", {} holds", g.holds)
        } else {
            String::new()
        };
        return format!(
            "{} ({}, {}{holds})",
            files.join(", "),
            g.kind.as_str(),
            g.verdict.as_str()
        );
    }
    let size = g.bytes.map(|b| format!(", {}", iec(b))).unwrap_or_default();
    let eg: Vec<String> = g.examples.iter().map(|f| code(&base(f))).collect();
    format!(
        "{} {} holds in {} ({} files{size}, {}; e.g. {})",
        g.holds,
        g.kind.as_str(),
        code(&dir_shown(&g.dir)),
        g.files,
        g.verdict.as_str(),
        eg.join(", ")
    )
}

/// The groups of one edge in one line, at most [`SHOWN_GROUPS`] of them
/// and a count of the rest.
pub fn groups_phrase(groups: &[EvidenceGroup], code: fn(&str) -> String) -> String {
    let mut parts: Vec<String> = groups
        .iter()
        .take(SHOWN_GROUPS)
        .map(|g| group_phrase(g, code))
        .collect();
    if groups.len() > SHOWN_GROUPS {
        let rest = &groups[SHOWN_GROUPS..];
        parts.push(format!(
            "and {} more holds in {} more groups (--evidence lists all)",
            rest.iter().map(|g| g.holds).sum::<usize>(),
            rest.len()
        ));
    }
    parts.join(", ")
}

/// Text as it is: for plain text.
pub fn plain(s: &str) -> String {
    s.to_string()
}

/// A markdown code span of `s` (backticks in it made quotes, so the span
/// cannot end early; `|` escaped for table cells).
pub fn code(s: &str) -> String {
    format!("`{}`", s.replace('`', "'").replace('|', "\\|"))
}

/// Markdown text with what could start HTML, emphasis or a table cell
/// escaped.
pub fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '<' | '>' | '|' | '[' | ']' | '#'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Fills a markdown document up to a character limit, cutting the least
/// important parts first: the caller adds parts in order of importance;
/// [`Fitter::push`] refuses a part that would leave no room for the
/// reserve (the closing lines and the note on what was cut).
pub struct Fitter {
    out: String,
    limit: usize,
    reserve: usize,
    /// What was left out, in words (`120 of 300 added paths`).
    pub cut: Vec<String>,
}

impl Fitter {
    /// A document of at most `limit` characters, `reserve` of them kept
    /// for the end.
    pub fn new(limit: usize, reserve: usize) -> Fitter {
        Fitter {
            out: String::new(),
            limit,
            reserve,
            cut: Vec::new(),
        }
    }

    /// A document of at most `limit` characters whose parts are `parts`
    /// (what each lists, how many items): the room kept for the note on
    /// what was cut is the longest that note can be (every part cut), and
    /// nothing more, so the parts use the rest of the limit.
    pub fn for_parts(limit: usize, parts: &[(&str, usize)], how: &str) -> Fitter {
        let worst: Vec<String> = parts
            .iter()
            .map(|(what, n)| format!("{n} of {n} {what}"))
            .collect();
        let reserve = cut_note(limit, &worst, how).chars().count();
        Fitter::new(limit, reserve)
    }

    /// Characters still free for parts.
    pub fn room(&self) -> usize {
        self.limit
            .saturating_sub(self.reserve)
            .saturating_sub(self.out.chars().count())
    }

    /// Adds `part` whatever the room: the head, which every report has.
    pub fn force(&mut self, part: &str) {
        self.out.push_str(part);
    }

    /// Adds `part` when it fits; false (and nothing added) when not.
    pub fn push(&mut self, part: &str) -> bool {
        if part.chars().count() <= self.room() {
            self.out.push_str(part);
            true
        } else {
            false
        }
    }

    /// Adds as many of `items` as fit after `head` (nothing when not even
    /// `head` and one item fit), then `tail`; records the rest as cut
    /// under `what`. Returns how many were added.
    pub fn list(&mut self, head: &str, items: &[String], tail: &str, what: &str) -> usize {
        self.list_within(head, items, tail, what, usize::MAX)
    }

    /// [`Fitter::list`] using at most `max` characters, so that a long
    /// part leaves room for the next ones.
    pub fn list_within(
        &mut self,
        head: &str,
        items: &[String],
        tail: &str,
        what: &str,
        max: usize,
    ) -> usize {
        let fixed = head.chars().count() + tail.chars().count();
        let room = self.room().min(max);
        let mut n = 0;
        let mut len = fixed;
        for it in items {
            let l = it.chars().count();
            if len + l > room {
                break;
            }
            len += l;
            n += 1;
        }
        if n > 0 {
            self.out.push_str(head);
            for it in &items[..n] {
                self.out.push_str(it);
            }
            self.out.push_str(tail);
        }
        if n < items.len() {
            self.cut
                .push(format!("{} of {} {what}", items.len() - n, items.len()));
        }
        n
    }

    /// The document, with a note on what was cut and how to see all of
    /// it (`how`), within the limit whatever was added.
    pub fn finish(mut self, how: &str) -> String {
        if !self.cut.is_empty() {
            let note = cut_note(self.limit, &self.cut, how);
            self.out.push_str(&note);
        }
        // The reserve covers the note; this only guards a reserve given too
        // small, cutting at a character boundary.
        if self.out.chars().count() > self.limit {
            self.out = self.out.chars().take(self.limit).collect();
        }
        self.out
    }
}

/// The last line of a cut document: what was left out, the limit in
/// force (GitHub's for a comment, or the one `--markdown-limit` gave) and
/// how to see all of it.
fn cut_note(limit: usize, cut: &[String], how: &str) -> String {
    let whose = if limit == COMMENT_LIMIT {
        format!("GitHub's {COMMENT_LIMIT}-character limit for a comment")
    } else {
        format!("the {limit}-character limit of `--markdown-limit {limit}`")
    };
    format!(
        "\n> ✂️ Cut to fit {whose}: {} left out. {how}\n",
        cut.join(", ")
    )
}

/// Shares `room` characters among parts that need `(need, weight)` each:
/// in proportion to the weights, a part that needs less than its share
/// taking what it needs and leaving the rest to the others (so no room
/// stays unused while a part is cut).
pub fn shares(room: usize, parts: &[(usize, usize)]) -> Vec<usize> {
    let mut out = vec![0; parts.len()];
    let mut open: Vec<usize> = (0..parts.len()).filter(|&i| parts[i].0 > 0).collect();
    let mut left = room as u128;
    while !open.is_empty() {
        let w: u128 = open.iter().map(|&i| parts[i].1.max(1) as u128).sum();
        let share = |i: usize| left * parts[i].1.max(1) as u128 / w;
        let (met, short): (Vec<usize>, Vec<usize>) =
            open.iter().partition(|&&i| parts[i].0 as u128 <= share(i));
        if met.is_empty() {
            for &i in &short {
                out[i] = usize::try_from(share(i)).unwrap_or(usize::MAX);
            }
            break;
        }
        for &i in &met {
            out[i] = parts[i].0;
            left -= parts[i].0 as u128;
        }
        open = short;
    }
    out
}

/// Keeps at most [`ANNOTATIONS_PER_LEVEL`] annotations of each level, in
/// the order given (the most important first): past that, the last kept
/// one says how many more there are and where they are (`where_`).
pub fn cap(anns: Vec<Annotation>, tool: &str, where_: &str) -> Vec<Annotation> {
    let mut out = Vec::new();
    for level in ["error", "warning", "notice"] {
        let of: Vec<&Annotation> = anns.iter().filter(|a| a.level == level).collect();
        if of.len() <= ANNOTATIONS_PER_LEVEL {
            out.extend(of.into_iter().cloned());
            continue;
        }
        out.extend(of[..ANNOTATIONS_PER_LEVEL - 1].iter().map(|a| (*a).clone()));
        let rest = &of[ANNOTATIONS_PER_LEVEL - 1..];
        let mut lines = vec![format!(
            "{} more {level}s than GitHub shows per step; {where_}:",
            rest.len()
        )];
        lines.extend(rest.iter().map(|a| a.title.clone()));
        out.push(Annotation {
            level: of[0].level,
            title: format!("{tool}: {} more {level}s", rest.len()),
            lines,
        });
    }
    out
}

/// Cuts `s` to at most `max` characters, marking the cut with `…`.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Where annotations point: the package's Nix file (`--nix-file
/// FILE[:LINE]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NixFile {
    /// The file, as the workflow's checkout names it.
    pub file: String,
    /// The line, when given.
    pub line: Option<u64>,
}

impl NixFile {
    /// Parses `FILE` or `FILE:LINE`.
    pub fn parse(s: &str) -> crate::Result<NixFile> {
        if let Some((f, l)) = s.rsplit_once(':')
            && !l.is_empty()
            && l.bytes().all(|b| b.is_ascii_digit())
        {
            let line =
                l.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
                    crate::Error::Usage(format!("--nix-file {s}: bad line number"))
                })?;
            if f.is_empty() {
                return Err(crate::Error::Usage(format!("--nix-file {s}: no file")));
            }
            return Ok(NixFile {
                file: f.to_string(),
                line: Some(line),
            });
        }
        if s.is_empty() {
            return Err(crate::Error::Usage("--nix-file: no file".into()));
        }
        Ok(NixFile {
            file: s.to_string(),
            line: None,
        })
    }
}

/// One GitHub workflow command: `::error title=…,file=…,line=…::message`.
#[derive(Debug, Clone)]
pub struct Annotation {
    /// `error`, `warning` or `notice`.
    pub level: &'static str,
    /// The annotation's title.
    pub title: String,
    /// The message's lines (a few: GitHub shows annotations in a narrow
    /// box).
    pub lines: Vec<String>,
}

/// Lines of one annotation's message.
pub const ANNOTATION_LINES: usize = 10;
/// Characters of one line of an annotation's message.
pub const ANNOTATION_WIDTH: usize = 300;

/// Workflow-command data: `%`, CR and LF escaped.
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow-command property value: data escaping, and `:` and `,`.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

impl Annotation {
    /// The command line, with `file=`/`line=` when a Nix file is given;
    /// lines past [`ANNOTATION_LINES`] are counted, long ones clipped.
    pub fn render(&self, at: Option<&NixFile>) -> String {
        let mut props = vec![format!("title={}", escape_property(&self.title))];
        if let Some(f) = at {
            props.push(format!("file={}", escape_property(&f.file)));
            if let Some(l) = f.line {
                props.push(format!("line={l}"));
            }
        }
        let mut lines: Vec<String> = self
            .lines
            .iter()
            .take(ANNOTATION_LINES)
            .map(|l| clip(l, ANNOTATION_WIDTH))
            .collect();
        if self.lines.len() > ANNOTATION_LINES {
            lines.push(format!(
                "… {} more lines in the job summary and `--format text`",
                self.lines.len() - ANNOTATION_LINES
            ));
        }
        format!(
            "::{} {}::{}\n",
            self.level,
            props.join(","),
            escape_data(&lines.join("\n"))
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nix_file_forms() {
        assert_eq!(
            NixFile::parse("pkgs/llama.nix:12").unwrap(),
            NixFile {
                file: "pkgs/llama.nix".into(),
                line: Some(12)
            }
        );
        assert_eq!(NixFile::parse("a.nix").unwrap().line, None);
        assert!(NixFile::parse(":3").is_err());
        assert!(NixFile::parse("a.nix:0").is_err());
    }

    #[test]
    fn escaping() {
        let a = Annotation {
            level: "error",
            title: "a: b, 100%".into(),
            lines: vec!["x\ry".into(), "50%".into()],
        };
        let at = NixFile::parse("dir,x/a:b.nix:3").unwrap();
        assert_eq!(
            a.render(Some(&at)),
            "::error title=a%3A b%2C 100%25,file=dir%2Cx/a%3Ab.nix,line=3::x%0Dy%0A50%25\n"
        );
    }

    #[test]
    fn phrases_name_few_files_and_count_many() {
        use crate::evidence::{EvidenceGroup, Kind, Verdict};
        let g = |files: usize, holds: usize| EvidenceGroup {
            kind: Kind::Symlink,
            verdict: Verdict::Runtime,
            dir: "lib/farm".into(),
            holds,
            files,
            bytes: Some(2048),
            examples: (0..files.min(3))
                .map(|i| format!("lib/farm/k{i}"))
                .collect(),
            reason: String::new(),
        };
        assert_eq!(
            group_phrase(&g(2, 2), plain),
            "lib/farm/k0, lib/farm/k1 (symlink, runtime)"
        );
        assert_eq!(
            group_phrase(&g(1, 9), plain),
            "lib/farm/k0 (symlink, runtime, 9 holds)"
        );
        assert_eq!(
            group_phrase(&g(40, 40), code),
            "40 symlink holds in `lib/farm/` (40 files, 2.0 KiB, runtime; e.g. `k0`, `k1`, `k2`)"
        );
        let many: Vec<EvidenceGroup> = (0..5).map(|_| g(1, 1)).collect();
        assert!(
            groups_phrase(&many, plain)
                .ends_with("and 2 more holds in 2 more groups (--evidence lists all)")
        );
    }

    #[test]
    fn fitter_cuts_and_says_so() {
        let mut f = Fitter::new(300, 200);
        assert!(f.push("head\n"));
        let items: Vec<String> = (0..100).map(|i| format!("- item {i}\n")).collect();
        let n = f.list("", &items, "", "items");
        assert!(n > 0 && n < 100);
        let out = f.finish("See all with --format text.");
        assert!(out.chars().count() <= 300, "{out}");
        assert!(out.contains(&format!("{} of 100 items", 100 - n)), "{out}");
    }
}
