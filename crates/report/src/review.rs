//! What `diff` and `check` share for review: the output [`Format`]s, the
//! grouped evidence as one phrase (text, annotations) or markdown, the
//! PR-comment rules (a hidden [`MARKER`], at most [`COMMENT_LIMIT`]
//! characters, the least important parts cut first by [`Fitter`]) and
//! GitHub workflow commands ([`Annotation`], escaped as GitHub requires).

use nix_heft_types::evidence::{Evidence, EvidenceGroup};
use nix_heft_types::units::iec;

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
    pub fn parse(s: &str) -> nix_heft_types::Result<Format> {
        Ok(match s {
            "text" => Format::Text,
            "json" => Format::Json,
            "github" => Format::Github,
            "markdown" => Format::Markdown,
            _ => {
                return Err(nix_heft_types::Error::Usage(format!(
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
/// [`nix_heft_types::evidence::EXAMPLES`]); above it, it is counted and its
/// [`EvidenceGroup::examples`] named.
const LIST_AT: usize = 3;

/// The groups of `evs`: those given, or (for a report read from JSON
/// without them) grouped here without sizes.
pub fn groups_of(groups: &[EvidenceGroup], evs: &[Evidence]) -> Vec<EvidenceGroup> {
    if groups.is_empty() && !evs.is_empty() {
        nix_heft_types::evidence::group(evs, |_| None)
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
    /// The parts cut (`added paths`).
    cut_parts: Vec<String>,
}

/// Fills a document with `fill` within `limit` characters: first with room
/// kept for the longest note on what was cut (every part of `parts` cut),
/// then, when something was cut, again with room for a note on only the
/// parts the first fill cut, so the document uses its budget. More room
/// never cuts a part the first fill kept whole; should it, the first fill
/// is kept.
pub fn fit(limit: usize, parts: &[(&str, usize)], how: &str, fill: impl Fn(&mut Fitter)) -> String {
    let mut f = Fitter::for_parts(limit, parts, how);
    fill(&mut f);
    if f.cut_parts.is_empty() {
        return f.finish(how);
    }
    let narrowed: Vec<(&str, usize)> = parts
        .iter()
        .filter(|(w, _)| f.cut_parts.iter().any(|c| c == w))
        .copied()
        .collect();
    let mut g = Fitter::for_parts(limit, &narrowed, how);
    fill(&mut g);
    if g.cut_parts.iter().all(|c| f.cut_parts.contains(c)) {
        g.finish(how)
    } else {
        f.finish(how)
    }
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
            cut_parts: Vec::new(),
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
            self.cut_parts.push(what.to_string());
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

/// Shares `room` characters among parts that need `(first, need,
/// weight)` each: first every part in turn gets `first` (its head, tail and
/// first item: less would show nothing of it) while room lasts, then the
/// rest goes in proportion to the weights, a part that needs less than its
/// share taking what it needs and leaving the rest to the others (so no
/// room stays unused while a part is cut).
pub fn shares(room: usize, parts: &[(usize, usize, usize)]) -> Vec<usize> {
    let mut out = vec![0usize; parts.len()];
    let mut left = room as u128;
    for (i, &(first, need, _)) in parts.iter().enumerate() {
        let first = first.min(need) as u128;
        if first > 0 && first <= left {
            out[i] = first as usize;
            left -= first;
        }
    }
    // Only parts that got their first item grow: another would still show
    // nothing.
    let mut open: Vec<usize> = (0..parts.len())
        .filter(|&i| out[i] > 0 && parts[i].1 > out[i])
        .collect();
    while !open.is_empty() {
        let w: u128 = open.iter().map(|&i| parts[i].2.max(1) as u128).sum();
        let share = |i: usize| left * parts[i].2.max(1) as u128 / w;
        let (met, short): (Vec<usize>, Vec<usize>) = open
            .iter()
            .partition(|&&i| (parts[i].1 - out[i]) as u128 <= share(i));
        if met.is_empty() {
            for &i in &short {
                out[i] = out[i].saturating_add(usize::try_from(share(i)).unwrap_or(usize::MAX));
            }
            break;
        }
        for &i in &met {
            left -= (parts[i].1 - out[i]) as u128;
            out[i] = parts[i].1;
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
    pub fn parse(s: &str) -> nix_heft_types::Result<NixFile> {
        if let Some((f, l)) = s.rsplit_once(':')
            && !l.is_empty()
            && l.bytes().all(|b| b.is_ascii_digit())
        {
            let line = l.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| {
                nix_heft_types::Error::Usage(format!("--nix-file {s}: bad line number"))
            })?;
            if f.is_empty() {
                return Err(nix_heft_types::Error::Usage(format!(
                    "--nix-file {s}: no file"
                )));
            }
            return Ok(NixFile {
                file: f.to_string(),
                line: Some(line),
            });
        }
        if s.is_empty() {
            return Err(nix_heft_types::Error::Usage("--nix-file: no file".into()));
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
        use nix_heft_types::evidence::{EvidenceGroup, Kind, Verdict};
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
    fn shares_give_each_part_its_first_item_then_what_is_left_by_weight() {
        // (first, need, weight)
        let parts = [(100, 1000, 1), (50, 60, 1), (100, 5000, 2)];
        let s = shares(900, &parts);
        // The small part takes what it needs; the others their first
        // items, then the rest by weight.
        assert_eq!(s[1], 60);
        assert!((838..=840).contains(&(s[0] + s[2])), "{s:?}");
        // Past the first items, 1:2.
        let (a, b) = (s[0] - 100, s[2] - 100);
        assert!(b + 2 >= 2 * a && b <= 2 * a + 2, "{s:?}");
        // Too little room for a part's first item: it gets nothing, and
        // the parts that show something share its room.
        assert_eq!(shares(120, &parts), vec![120, 0, 0]);
        assert_eq!(shares(usize::MAX, &[(1, 2, 1)]), vec![2]);
    }

    #[test]
    fn cap_keeps_ten_per_level_and_counts_the_rest() {
        let ann = |level: &'static str, i: usize| Annotation {
            level,
            title: format!("t{i}"),
            lines: vec![],
        };
        let mut all: Vec<Annotation> = (0..14).map(|i| ann("notice", i)).collect();
        all.push(ann("warning", 99));
        let out = cap(all, "tool", "see the summary");
        let notices: Vec<&Annotation> = out.iter().filter(|a| a.level == "notice").collect();
        assert_eq!(notices.len(), ANNOTATIONS_PER_LEVEL);
        assert_eq!(notices[8].title, "t8");
        assert_eq!(notices[9].title, "tool: 5 more notices");
        assert_eq!(notices[9].lines[1..], ["t9", "t10", "t11", "t12", "t13"]);
        assert_eq!(out.iter().filter(|a| a.level == "warning").count(), 1);
    }

    #[test]
    fn fit_uses_the_room_a_short_note_leaves() {
        let items: Vec<String> = (0..1000).map(|i| format!("- item {i}\n")).collect();
        let many: Vec<(String, usize)> = (0..20).map(|i| (format!("part {i}"), 1000)).collect();
        let mut parts: Vec<(&str, usize)> = vec![("items", 1000)];
        parts.extend(many.iter().map(|(w, n)| (w.as_str(), *n)));
        let out = fit(3000, &parts, "See all.", |f| {
            f.force("head\n");
            f.list("", &items, "", "items");
        });
        let n = out.chars().count();
        // The note names one part only: nearly all of the limit is used.
        assert!((2850..=3000).contains(&n), "{n}");
        assert!(
            out.contains("the 3000-character limit of `--markdown-limit 3000`"),
            "{out}"
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
