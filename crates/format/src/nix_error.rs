//! Nix's refusals of a build's outputs, read from its error text.
//!
//! Given what a user pastes (the output of `nix-build` or `nix build`, with
//! or without ANSI colours and the progress bar's carriage returns) this
//! finds every place Nix refused an output for what it refers to or weighs,
//! as a typed [`Refusal`] with the lines it spans ([`Span`]):
//!
//! - **[`Refusal::Forbidden`]**: an output check failed. Every Nix from 2.8
//!   (`LocalDerivationGoal::checkOutputs`,
//!   `src/libstore/build/local-derivation-goal.cc`) to 2.35 (`checkOutputs`,
//!   `src/libstore/build/derivation-check.cc`) throws the same words for
//!   `allowedReferences`, `allowedRequisites`, `disallowedReferences` and
//!   `disallowedRequisites`, plain or in `__structuredAttrs`' `outputChecks`
//!   (the four plain, and `outputChecks.out.disallowedRequisites`, checked
//!   with real Nix 2.8 builds, `tests/data/nix_error/`):
//!   `output '%s' is not allowed to refer to the following paths:%s`, the
//!   second `%s` being `"\n  " + path` for each path. Printed after
//!   `error: `, each path's line is indented by 9 spaces (7 for `error: `
//!   and Nix's own 2). The wording does not say which of the four checks
//!   failed, so `Refusal::Forbidden`'s `check` is `None` for every Nix
//!   version known; it is there for a wording that names it.
//! - **[`Refusal::Cycle`]**: the outputs of one build refer to each other.
//!   Nix 2.8 to 2.35 (`registerOutputs`; `src/libstore/unix/build/
//!   derivation-builder.cc` since 2.29): `cycle detected in build of '%s'
//!   in the references of output '%s' from output '%s'`, the derivation,
//!   then the output reached and the output it was reached from (`Cycle {
//!   path, parent }` of `topoSort`, `src/libutil/include/nix/util/
//!   topo-sort.hh`: `parent` refers to `path`). Between store paths (a
//!   closure being copied or registered, `Store::topoSortPaths` in
//!   `src/libstore/misc.cc`, `LocalStore::registerValidPaths`): `cycle
//!   detected in the references of '%s' from '%s'`, the same order.
//! - **[`Refusal::TooLarge`]**: `outputChecks`' `maxSize` and
//!   `maxClosureSize` (Nix 2.8 to 2.35, same files): `path '%s' is too large
//!   at %d bytes; limit is %d bytes` and `closure of path '%s' is too large
//!   at %d bytes; limit is %d bytes`.
//!
//! - **nix-heft's setup hook** (issue 39), in a build log: its header
//!   lines (`nix-heft: output 'out' (…) refers to …, which
//!   disallowedReferences refuses`, `… has in its closure …`, `nix-heft:
//!   the outputs refer to each other: out → dev → out`) are refusals
//!   [`Found::by_hook`], with the check named; and its failing the build
//!   (`nix-heft setup hook: failing the build`, with
//!   `NIX_HEFT_REFUSED_FAIL`, before Nix's checks run) is
//!   [`Refusal::HookFailed`], the derivation from Nix's `builder for
//!   '…drv' failed` after it. A hook's refusal that Nix's own message
//!   also reports (the hook explains, then Nix refuses) is left out.
//!
//! A message is found anywhere in a line, not only after `error: `, because
//! other commands wrap it: `build of '%s' on '%s' failed: %s` (the remote
//! build hook, `src/nix/build-remote/build-remote.cc`) and `failed to build
//! attribute '%s', build of '%s' failed: %s` (`nix flake check`).
//!
//! The derivation ([`Refusal::drv`]) is the one the message names (the
//! cycle's wording, or a wrapper's `build of '…drv'`); else, as an output
//! check's wording names only the output, the one derivation the text names
//! anywhere (`building '…drv'...`, `these derivations will be built:`)
//! whose name gives the output's: `<name>` for `out`, `<name>-<output>` for
//! the others. Two derivations of that name, or none, give `None`: a guess
//! would name the wrong build. `nix build`'s progress bar names no
//! derivation (`building nl-dis-1.0`), so its text often gives `None`.
//!
//! `nix log DRV` (and `nix-store -l`) prints only what the builder wrote:
//! Nix's refusal is not in it (checked with Nix 2.8), so its text gives no
//! refusal, only the derivation of its `got build log for '…'` line in
//! [`Parsed::derivations`].
//!
//! The text is any bytes (a log need not be UTF-8), read line by line
//! (`\n`), each line's ANSI escape sequences removed and `\r` treated as
//! space before matching. The work is linear in the text, whose last
//! [`MAX_TEXT`] bytes are read (Nix prints its errors last); at most
//! [`MAX_REFUSALS`] refusals and [`MAX_PATHS`] paths per refusal are kept.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use memchr::memmem;

use crate::store_path::{self, StorePath};

/// Most bytes of a text read: its last `MAX_TEXT` bytes, from the first
/// line that starts inside them. A build's whole output can be larger (a
/// Hydra log), and Nix's refusal comes at its end.
pub const MAX_TEXT: usize = 64 * 1024 * 1024;
/// Most refusals returned for one text.
pub const MAX_REFUSALS: usize = 10_000;
/// Most forbidden paths kept for one refusal (Nix lists each once).
pub const MAX_PATHS: usize = 100_000;
/// Most distinct derivations remembered from one text.
pub const MAX_DERIVATIONS: usize = 100_000;

/// One refusal of Nix's, as its message gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// An output refers to (or its closure holds) paths an output check
    /// forbids: `output '…' is not allowed to refer to the following
    /// paths:`.
    Forbidden {
        /// The derivation built (see the module's documentation for how it
        /// is found), `None` when the text does not say.
        drv: Option<StorePath>,
        /// The output refused.
        output: StorePath,
        /// The paths Nix lists, in its order (sorted by Nix): for the
        /// `disallowed*` checks the forbidden paths found, for `allowed*`
        /// the paths found that were not allowed. Empty when the text
        /// stops after the message's first line.
        paths: Vec<StorePath>,
        /// Which check (`disallowedRequisites`, …) when the wording says;
        /// no Nix version's wording does (2.8 to 2.35), so `None`.
        check: Option<String>,
    },
    /// The outputs of a build (or paths being registered) refer to each
    /// other: `from` refers to `to`, and `to` (through its references)
    /// back to `from`.
    Cycle {
        /// The derivation the message names (or, for the wording between
        /// store paths, a wrapper names), else `None`.
        drv: Option<StorePath>,
        /// The output (`out`) or store path that refers to `to`; Nix's
        /// second quoted name.
        from: String,
        /// The output (`dev`) or store path reached from `from` a second
        /// time; Nix's first quoted name.
        to: String,
    },
    /// An output, or its closure, is larger than `outputChecks` allow
    /// (`maxSize`, `maxClosureSize`).
    TooLarge {
        /// The derivation built, found as for [`Refusal::Forbidden`].
        drv: Option<StorePath>,
        /// The output refused.
        path: StorePath,
        /// `true` for `maxClosureSize` (`closure of path '…'`), `false`
        /// for `maxSize`.
        closure: bool,
        /// The NAR size (or closure size) Nix computed, in bytes.
        size: u64,
        /// The limit the derivation set, in bytes.
        limit: u64,
    },
    /// nix-heft's setup hook failed the build (`NIX_HEFT_REFUSED_FAIL`)
    /// because Nix would refuse its outputs: Nix's own checks never ran.
    HookFailed {
        /// The derivation whose builder failed, from Nix's `builder for
        /// '…' failed` after the hook's line.
        drv: Option<StorePath>,
    },
}

impl Refusal {
    /// The derivation built, where the text says.
    pub fn drv(&self) -> Option<&StorePath> {
        match self {
            Refusal::Forbidden { drv, .. }
            | Refusal::Cycle { drv, .. }
            | Refusal::TooLarge { drv, .. }
            | Refusal::HookFailed { drv } => drv.as_ref(),
        }
    }
}

/// Where in the text a refusal was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The message's first line, counted from 1 in the whole text.
    pub first_line: usize,
    /// Its last line (the last forbidden path's), counted from 1.
    pub last_line: usize,
    /// The bytes of those lines in the text given, without the last line's
    /// `\n`.
    pub bytes: Range<usize>,
}

/// A refusal and where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// What Nix refused.
    pub refusal: Refusal,
    /// The lines that say so.
    pub span: Span,
    /// Said by nix-heft's setup hook in the build log, not by Nix.
    pub by_hook: bool,
}

/// Everything read from one text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Every refusal, in the text's order (a message written twice is
    /// found twice, each with its span).
    pub refusals: Vec<Found>,
    /// Every derivation the text names, each once, in the order of first
    /// mention.
    pub derivations: Vec<StorePath>,
    /// The build directories Nix kept (`note: keeping build directory
    /// '…'`, `--keep-failed`), each once, in order: `'…'` in Nix 2.8,
    /// `"…"` in current Nix (`PathFmt`).
    pub kept_build_dirs: Vec<String>,
    /// The text was longer than [`MAX_TEXT`], and only its end was read
    /// (or more than [`MAX_REFUSALS`] refusals were found and the rest
    /// left): what was returned is not all the text holds.
    pub truncated: bool,
}

/// Reads Nix's error text `text` (any bytes) for refusals, store paths being
/// in `store_dir` (`/nix/store`). Never fails: what is not understood is not
/// returned.
pub fn parse(store_dir: &str, text: &[u8]) -> Parsed {
    parse_capped(store_dir, text, MAX_TEXT)
}

/// [`parse`] with the cap on the text given, for the tests.
fn parse_capped(store_dir: &str, text: &[u8], cap: usize) -> Parsed {
    let mut parsed = Parsed::default();
    // Where reading starts: the first line beginning in the last `cap`
    // bytes, and how many lines came before it (for spans in the whole
    // text).
    let mut start = 0;
    let mut line_no = 1;
    if text.len() > cap {
        parsed.truncated = true;
        let cut = text.len() - cap;
        start = match memchr::memchr(b'\n', &text[cut..]) {
            Some(i) => cut + i + 1,
            None => text.len(),
        };
        line_no += memchr::memchr_iter(b'\n', &text[..start]).count();
    }

    let lines: Vec<Line> = split_lines(text, start, line_no);
    let prefix = format!("{store_dir}/");
    let mut drvs = Derivations::default();
    let mut kept = HashSet::new();
    for line in &lines {
        drvs.scan(store_dir, &prefix, &line.clean);
        if let Some(dir) = kept_build_dir(&line.clean)
            && kept.len() < MAX_REFUSALS
            && kept.insert(dir.clone())
        {
            parsed.kept_build_dirs.push(dir);
        }
    }

    let mut i = 0;
    while i < lines.len() {
        let line = &lines[i];
        let mut consumed = 1;
        let mut by_hook = false;
        let found = if let Some((output, drv)) = forbidden_header(store_dir, &line.clean) {
            let mut paths = Vec::new();
            while i + consumed < lines.len() {
                let next = lines[i + consumed].clean.trim();
                match StorePath::parse(store_dir, next) {
                    Ok(p) => {
                        if paths.len() < MAX_PATHS {
                            paths.push(p);
                        }
                        consumed += 1;
                    }
                    Err(_) => break,
                }
            }
            let drv = drv.or_else(|| drvs.producing(&output));
            Some(Refusal::Forbidden {
                drv,
                output,
                paths,
                check: None,
            })
        } else if let Some(r) = cycle(store_dir, &line.clean) {
            Some(r)
        } else if let Some(Refusal::TooLarge {
            drv,
            path,
            closure,
            size,
            limit,
        }) = too_large(store_dir, &line.clean)
        {
            let drv = drv.or_else(|| drvs.producing(&path));
            Some(Refusal::TooLarge {
                drv,
                path,
                closure,
                size,
                limit,
            })
        } else if let Some((output, path, check)) = hook_forbidden(store_dir, &line.clean) {
            by_hook = true;
            Some(Refusal::Forbidden {
                drv: drvs.producing(&output),
                output,
                paths: vec![path],
                check: Some(check),
            })
        } else if let Some((from, to)) = hook_cycle(&line.clean) {
            by_hook = true;
            Some(Refusal::Cycle {
                drv: builder_after(store_dir, &lines[i + 1..]),
                from,
                to,
            })
        } else if memmem::find(line.clean.as_bytes(), HOOK_FAILED.as_bytes()).is_some() {
            by_hook = true;
            // `nix-build` prints Nix's line after the log; `nix build`
            // prints it first, then the log's last lines.
            let before = &lines[i.saturating_sub(BUILDER_BEFORE)..i];
            Some(Refusal::HookFailed {
                drv: builder_after(store_dir, &lines[i + 1..])
                    .or_else(|| builder_before(store_dir, before)),
            })
        } else {
            None
        };
        if let Some(refusal) = found {
            if parsed.refusals.len() == MAX_REFUSALS {
                parsed.truncated = true;
                break;
            }
            let last = &lines[i + consumed - 1];
            parsed.refusals.push(Found {
                refusal,
                span: Span {
                    first_line: line.number,
                    last_line: last.number,
                    bytes: line.bytes.start..last.bytes.end,
                },
                by_hook,
            });
        }
        i += consumed;
    }
    drop_what_nix_says(&mut parsed.refusals);
    parsed.derivations = drvs.order;
    parsed
}

/// The hook's refusals that Nix's own messages report too (the hook
/// explained, then Nix refused): Nix's are kept.
fn drop_what_nix_says(found: &mut Vec<Found>) {
    let nix_outputs: HashSet<StorePath> = found
        .iter()
        .filter(|f| !f.by_hook)
        .filter_map(|f| match &f.refusal {
            Refusal::Forbidden { output, .. } => Some(output.clone()),
            _ => None,
        })
        .collect();
    let nix_cycles: Vec<Option<StorePath>> = found
        .iter()
        .filter(|f| !f.by_hook)
        .filter_map(|f| match &f.refusal {
            Refusal::Cycle { drv, .. } => Some(drv.clone()),
            _ => None,
        })
        .collect();
    found.retain(|f| {
        !f.by_hook
            || match &f.refusal {
                Refusal::Forbidden { output, .. } => !nix_outputs.contains(output),
                Refusal::Cycle { drv, .. } => !nix_cycles
                    .iter()
                    .any(|d| d.is_none() || drv.is_none() || d == drv),
                _ => true,
            }
    });
}

/// One line of the text: where it is, and its text without escapes.
struct Line {
    number: usize,
    bytes: Range<usize>,
    clean: String,
}

fn split_lines(text: &[u8], start: usize, first_number: usize) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut at = start;
    let mut number = first_number;
    while at < text.len() {
        let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |i| at + i);
        lines.push(Line {
            number,
            bytes: at..end,
            clean: clean(&text[at..end]),
        });
        number += 1;
        at = end + 1;
    }
    lines
}

/// The line as a terminal shows its characters: ANSI escape sequences (CSI
/// `ESC [ … final`, OSC `ESC ] … BEL|ESC \`, and two-byte `ESC x`) removed,
/// `\r` and other control characters made spaces, bytes that are not UTF-8
/// replaced. Linear in the line.
fn clean(line: &[u8]) -> String {
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if b == 0x1b {
            i += 1;
            match line.get(i) {
                Some(b'[') => {
                    i += 1;
                    // Parameters and intermediates, then one final byte.
                    while i < line.len() && !(0x40..=0x7e).contains(&line[i]) {
                        i += 1;
                    }
                    i += 1;
                }
                Some(b']') => {
                    i += 1;
                    while i < line.len() {
                        if line[i] == 0x07 {
                            i += 1;
                            break;
                        }
                        if line[i] == 0x1b && line.get(i + 1) == Some(&b'\\') {
                            i += 2;
                            break;
                        }
                        i += 1;
                    }
                }
                Some(_) => i += 1,
                None => {}
            }
            continue;
        }
        out.push(if b < 0x20 || b == 0x7f { b' ' } else { b });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

const FORBIDDEN: &str = "' is not allowed to refer to the following paths:";
const CYCLE_IN_BUILD: &str = "cycle detected in build of '";
const CYCLE_OUTPUTS: &str = "' in the references of output '";
const CYCLE_FROM_OUTPUT: &str = "' from output '";
const CYCLE_PATHS: &str = "cycle detected in the references of '";
const CYCLE_FROM: &str = "' from '";
const TOO_LARGE: &str = "' is too large at ";
const LIMIT: &str = " bytes; limit is ";

/// `output '<path>' is not allowed to refer to the following paths:` in the
/// line: the output, and the derivation a wrapper names before it.
fn forbidden_header(store_dir: &str, line: &str) -> Option<(StorePath, Option<StorePath>)> {
    let at = memmem::find(line.as_bytes(), FORBIDDEN.as_bytes())?;
    let before = &line[..at];
    let open = before.rfind("output '")?;
    let output = StorePath::parse(store_dir, &before[open + "output '".len()..]).ok()?;
    Some((output, wrapper_drv(store_dir, &before[..open])))
}

/// The two cycle wordings.
fn cycle(store_dir: &str, line: &str) -> Option<Refusal> {
    if let Some(at) = memmem::find(line.as_bytes(), CYCLE_IN_BUILD.as_bytes()) {
        let rest = &line[at + CYCLE_IN_BUILD.len()..];
        let (drv, rest) = rest.split_once(CYCLE_OUTPUTS)?;
        let (to, rest) = rest.split_once(CYCLE_FROM_OUTPUT)?;
        let from = quoted(rest)?;
        if !is_output_name(to) || !is_output_name(from) {
            return None;
        }
        return Some(Refusal::Cycle {
            drv: StorePath::parse(store_dir, drv)
                .ok()
                .filter(|d| d.name().ends_with(".drv")),
            from: from.to_string(),
            to: to.to_string(),
        });
    }
    let at = memmem::find(line.as_bytes(), CYCLE_PATHS.as_bytes())?;
    let rest = &line[at + CYCLE_PATHS.len()..];
    let (to, rest) = rest.split_once(CYCLE_FROM)?;
    let from = quoted(rest)?;
    StorePath::parse(store_dir, to).ok()?;
    StorePath::parse(store_dir, from).ok()?;
    Some(Refusal::Cycle {
        drv: wrapper_drv(store_dir, &line[..at]),
        from: from.to_string(),
        to: to.to_string(),
    })
}

/// `[closure of ]path '<path>' is too large at N bytes; limit is M bytes`,
/// with the derivation a wrapper names before it.
fn too_large(store_dir: &str, line: &str) -> Option<Refusal> {
    let at = memmem::find(line.as_bytes(), TOO_LARGE.as_bytes())?;
    let before = &line[..at];
    let open = before.rfind("path '")?;
    let path = StorePath::parse(store_dir, &before[open + "path '".len()..]).ok()?;
    let lead = before[..open].strip_suffix("closure of ");
    let closure = lead.is_some();
    let rest = &line[at + TOO_LARGE.len()..];
    let (size, rest) = rest.split_once(LIMIT)?;
    let limit = rest.split_once(" bytes")?.0;
    Some(Refusal::TooLarge {
        drv: wrapper_drv(store_dir, lead.unwrap_or(&before[..open])),
        path,
        closure,
        size: size.parse().ok()?,
        limit: limit.parse().ok()?,
    })
}

/// The setup hook's header of a refused path (its report's text).
const HOOK_OUTPUT: &str = "nix-heft: output '";
/// The setup hook's header of a cycle.
const HOOK_CYCLE: &str = "nix-heft: the outputs refer to each other: ";
/// The setup hook's line when it fails the build itself.
pub const HOOK_FAILED: &str = "nix-heft setup hook: failing the build";
/// Nix's words for a builder that failed (2.8 to 2.35).
const BUILDER_FOR: &str = "builder for '";

/// `nix-heft: output 'NAME' (PATH) refers to PATH2[ (itself)], which
/// ATTR refuses` (or `has in its closure`): the output, the path and the
/// check (ATTR's last part: `outputChecks.out.allowedRequisites`).
fn hook_forbidden(store_dir: &str, line: &str) -> Option<(StorePath, StorePath, String)> {
    let at = memmem::find(line.as_bytes(), HOOK_OUTPUT.as_bytes())?;
    let rest = &line[at + HOOK_OUTPUT.len()..];
    let (name, rest) = rest.split_once("' (")?;
    if !is_output_name(name) {
        return None;
    }
    let (output, rest) = rest.split_once(") ")?;
    let output = StorePath::parse(store_dir, output).ok()?;
    let rest = rest
        .strip_prefix("refers to ")
        .or_else(|| rest.strip_prefix("has in its closure "))?;
    let (path, rest) = rest.split_once(", which ")?;
    let path = path.strip_suffix(" (itself)").unwrap_or(path);
    let path = StorePath::parse(store_dir, path).ok()?;
    let attr = rest.trim_end().strip_suffix(" refuses")?;
    let check = attr.rsplit('.').next()?;
    const CHECKS: [&str; 4] = [
        "allowedReferences",
        "allowedRequisites",
        "disallowedReferences",
        "disallowedRequisites",
    ];
    CHECKS
        .contains(&check)
        .then(|| (output, path, check.to_string()))
}

/// `nix-heft: the outputs refer to each other: out → dev → out …`: the
/// first output and the one it refers to.
fn hook_cycle(line: &str) -> Option<(String, String)> {
    let at = memmem::find(line.as_bytes(), HOOK_CYCLE.as_bytes())?;
    let rest = &line[at + HOOK_CYCLE.len()..];
    let mut names = rest.split(" → ");
    let from = names.next()?.trim();
    let to = names.next()?.split_whitespace().next()?;
    (is_output_name(from) && is_output_name(to)).then(|| (from.to_string(), to.to_string()))
}

/// Lines after a hook's line searched for Nix's `builder for` (the rest
/// of the hook's text comes between), so that the work stays linear.
const BUILDER_WITHIN: usize = 2000;

/// Lines before a hook's failing line searched for Nix's `builder for`:
/// `nix build` shows the log's last 10 lines after it, with a line or two
/// of its own.
const BUILDER_BEFORE: usize = 16;

/// The derivation of the first `builder for '<drv>' failed` in the first
/// [`BUILDER_WITHIN`] of `lines`.
fn builder_after(store_dir: &str, lines: &[Line]) -> Option<StorePath> {
    lines
        .iter()
        .take(BUILDER_WITHIN)
        .find_map(|l| builder_in(store_dir, l))
}

/// The derivation of the last `builder for '<drv>' failed` in `lines`.
fn builder_before(store_dir: &str, lines: &[Line]) -> Option<StorePath> {
    lines.iter().rev().find_map(|l| builder_in(store_dir, l))
}

/// The derivation of `builder for '<drv>' failed` in a line.
fn builder_in(store_dir: &str, l: &Line) -> Option<StorePath> {
    let at = memmem::find(l.clean.as_bytes(), BUILDER_FOR.as_bytes())?;
    let rest = &l.clean[at + BUILDER_FOR.len()..];
    let (drv, tail) = rest.split_once('\'')?;
    if !tail.starts_with(" failed") {
        return None;
    }
    StorePath::parse(store_dir, drv)
        .ok()
        .filter(|d| d.name().ends_with(".drv"))
}

/// The quoted name `rest` starts with (its closing `'` not included): an
/// output name or a store path, neither of which can hold a `'`.
fn quoted(rest: &str) -> Option<&str> {
    let name = rest.split_once('\'')?.0;
    (!name.is_empty()).then_some(name)
}

/// An output name as Nix allows it in an output path's name: non-empty,
/// of store path name characters only.
fn is_output_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= store_path::MAX_NAME_LEN && s.bytes().all(is_name_byte)
}

/// The derivation of `build of '<drv>' failed: ` or `build of '<drv>' on
/// '<uri>' failed: ` ending the text before a message.
fn wrapper_drv(store_dir: &str, before: &str) -> Option<StorePath> {
    let open = before.rfind("build of '")?;
    let rest = &before[open + "build of '".len()..];
    let close = rest.find('\'')?;
    let tail = &rest[close + 1..];
    let wrapped =
        tail.ends_with(" failed: ") || (tail.starts_with(" on '") && tail.ends_with("' failed: "));
    if !wrapped {
        return None;
    }
    let drv = StorePath::parse(store_dir, &rest[..close]).ok()?;
    drv.name().ends_with(".drv").then_some(drv)
}

/// `note: keeping build directory '<dir>'` (Nix 2.8) or `"<dir>"` (current
/// Nix).
fn kept_build_dir(line: &str) -> Option<String> {
    const NOTE: &str = "keeping build directory ";
    let at = memmem::find(line.as_bytes(), NOTE.as_bytes())?;
    let rest = line[at + NOTE.len()..].trim_end();
    let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = rest[1..].strip_suffix(quote)?;
    (!inner.is_empty()).then(|| inner.to_string())
}

/// The derivations a text names, and by name, to find which built an
/// output.
#[derive(Default)]
struct Derivations {
    order: Vec<StorePath>,
    seen: HashSet<StorePath>,
    /// Derivation name (without `.drv`) → the distinct derivations of that
    /// name seen, at most two (two already make it ambiguous).
    by_name: HashMap<String, Vec<StorePath>>,
}

impl Derivations {
    /// Every `<store_dir>/<hash>-<name>.drv` in the line.
    fn scan(&mut self, store_dir: &str, prefix: &str, line: &str) {
        let bytes = line.as_bytes();
        for at in memmem::find_iter(bytes, prefix.as_bytes()) {
            let base_start = at + prefix.len();
            let len = bytes[base_start..]
                .iter()
                .take_while(|b| is_name_byte(**b))
                .count();
            let candidate = &line[at..base_start + len];
            let Ok(drv) = StorePath::parse(store_dir, candidate) else {
                continue;
            };
            let Some(name) = drv.name().strip_suffix(".drv") else {
                continue;
            };
            if self.order.len() >= MAX_DERIVATIONS || !self.seen.insert(drv.clone()) {
                continue;
            }
            let of_name = self.by_name.entry(name.to_string()).or_default();
            if of_name.len() < 2 {
                of_name.push(drv.clone());
            }
            self.order.push(drv);
        }
    }

    /// The one derivation whose name gives `output`'s name (`<name>` or
    /// `<name>-<output name>`), preferring the longest such name.
    fn producing(&self, output: &StorePath) -> Option<StorePath> {
        let name = output.name();
        let exact = std::iter::once(name.len());
        let dashes = name.match_indices('-').map(|(i, _)| i).rev();
        for end in exact.chain(dashes) {
            if let Some(seen) = self.by_name.get(&name[..end]) {
                return match seen.as_slice() {
                    [one] => Some(one.clone()),
                    _ => None,
                };
            }
        }
        None
    }
}

/// An evaluation error that says an attribute is not there: Nix's
/// `attribute '%1%' missing` (`EvalState::getAttr`/`ExprSelect::eval`,
/// Nix 2.8 to 2.35), and where Nix says the selection that failed is
/// written (the first `at FILE:LINE:COL:` line after the message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingAttribute {
    /// The attribute's name (one name, not a dotted path).
    pub name: String,
    /// The file of the selection, when Nix prints a position (`«string»`
    /// and `«stdin»` for expressions given on the command line).
    pub file: Option<String>,
    /// Its line, counted from 1.
    pub line: Option<u32>,
}

/// What Nix's error text says in one line: its first `error:` line
/// without the prefix (else its first line), trimmed; the trace and the
/// position that follow are left out, as a table cell or a probe's reason
/// shows an evaluation's failure.
pub fn headline(text: &str) -> &str {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("error:"))
        .or_else(|| text.lines().next())
        .unwrap_or("");
    line.strip_prefix("error:").unwrap_or(line).trim()
}

/// The first "attribute 'x' missing" error of Nix's text (ANSI colours
/// and `\r` tolerated, as in [`parse`]). Callers that selected the
/// attribute themselves tell "no such attribute" from an attribute whose
/// own evaluation selects something missing by the file of the position.
pub fn missing_attribute(text: &str) -> Option<MissingAttribute> {
    let lines: Vec<String> = text.lines().map(|l| clean(l.as_bytes())).collect();
    let (i, name) = lines.iter().enumerate().find_map(|(i, l)| {
        let at = l.find("attribute '")?;
        let rest = &l[at + "attribute '".len()..];
        let end = rest.find("' missing")?;
        // Nix quotes the name as it is: a name holding `'` ends at the
        // last `' missing`, the only end this wording has.
        let end = rest.rfind("' missing").filter(|&e| e >= end).unwrap_or(end);
        Some((i, rest[..end].to_string()))
    })?;
    let position = lines[i + 1..].iter().find_map(|l| {
        let p = l.trim().strip_prefix("at ")?.strip_suffix(':')?;
        let (rest, _col) = p.rsplit_once(':')?;
        let (file, line) = rest.rsplit_once(':')?;
        Some((file.to_string(), line.parse::<u32>().ok()?))
    });
    Some(MissingAttribute {
        name,
        file: position.as_ref().map(|(f, _)| f.clone()),
        line: position.map(|(_, l)| l),
    })
}

/// A byte a store path's base name may hold (Nix's `checkName`).
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.' | b'_' | b'?' | b'=')
}

#[cfg(test)]
mod tests {
    //! The `NIX28_*` texts are real Nix 2.8.0 output (Debian's nix-bin, as
    //! root, `--option sandbox false --option substituters ''`), captured
    //! from the derivations of `tests/data/nix_error/r.nix` into the files
    //! beside it (see its README.md for the commands). The newer texts are
    //! built from Nix's format strings, cited at each.

    use super::*;

    #[test]
    fn the_headline_is_the_first_error_line() {
        let text = "warning: something\nerror: attribute 'libcoreX' missing\n\n       at /x/default.nix:62:58:\nerror: second";
        assert_eq!(headline(text), "attribute 'libcoreX' missing");
        assert_eq!(headline("no error prefix\nmore"), "no error prefix");
        assert_eq!(headline(""), "");
    }

    /// Nix 2.8.0's text for `top."nosuch"` in a file (captured from
    /// `nix-env -f chunk.nix -qaP --out-path --json`), and the same with
    /// colours, as `nix-eval-jobs` passes Nix's message on.
    #[test]
    fn missing_attributes_with_their_position() {
        let text = "error: attribute 'nosuch' missing\n\n       at /tmp/exp38/chunk.nix:6:8:\n\n            5|   p1 = top.\"alias\";\n            6|   p2 = top.\"nosuch\";\n             |        ^\n            7| }\n";
        let m = missing_attribute(text).unwrap();
        assert_eq!(m.name, "nosuch");
        assert_eq!(m.file.as_deref(), Some("/tmp/exp38/chunk.nix"));
        assert_eq!(m.line, Some(6));
        let coloured = "\u{1b}[31;1merror:\u{1b}[0m attribute '\u{1b}[35;1mnosuch\u{1b}[0m' missing\n\n       at \u{1b}[35;1m/tmp/c.nix:2:3\u{1b}[0m:\n";
        let m = missing_attribute(coloured).unwrap();
        assert_eq!((m.name.as_str(), m.line), ("nosuch", Some(2)));
        assert_eq!(m.file.as_deref(), Some("/tmp/c.nix"));
        assert_eq!(missing_attribute("error: boom\n"), None);
        let bare = missing_attribute("error: attribute 'x' missing").unwrap();
        assert_eq!((bare.file, bare.line), (None, None));
    }

    const STORE: &str = "/nix/store";

    macro_rules! data {
        ($name:literal) => {
            include_bytes!(concat!("../tests/data/nix_error/", $name))
        };
    }

    // `nix-build r.nix -A NAME`: stderr.
    const NIX28_DISALLOWED: &[u8] = data!("nix-2.8-disallowed.nix-build.txt");
    const NIX28_REQUISITES: &[u8] = data!("nix-2.8-requisites.nix-build.txt");
    const NIX28_ALLOWED: &[u8] = data!("nix-2.8-allowed.nix-build.txt");
    const NIX28_ALLOWED_REQ: &[u8] = data!("nix-2.8-allowedReq.nix-build.txt");
    const NIX28_MANY: &[u8] = data!("nix-2.8-many.nix-build.txt");
    const NIX28_STRUCTURED: &[u8] = data!("nix-2.8-structured.nix-build.txt");
    const NIX28_CYCLE: &[u8] = data!("nix-2.8-cycle.nix-build.txt");
    const NIX28_MAX_SIZE: &[u8] = data!("nix-2.8-maxSize.nix-build.txt");
    const NIX28_MAX_CLOSURE: &[u8] = data!("nix-2.8-maxClosure.nix-build.txt");
    // `nix build -f r.nix NAME` (stderr not a terminal).
    const NIX28_NEW_CLI: &[u8] = data!("nix-2.8-disallowed.nix-build-new-cli.txt");
    // `script -qec "nix build -L -f r.nix NAME"`: a terminal's bytes, with
    // colours, the progress bar and carriage returns.
    const NIX28_TTY_DISALLOWED: &[u8] = data!("nix-2.8-disallowed.nix-build-L-tty.txt");
    const NIX28_TTY_MANY: &[u8] = data!("nix-2.8-many.nix-build-L-tty.txt");
    const NIX28_TTY_CYCLE: &[u8] = data!("nix-2.8-cycle.nix-build-L-tty.txt");
    // `nix log` of the failed `disallowed` derivation.
    const NIX28_LOG: &[u8] = data!("nix-2.8-disallowed.nix-log.txt");
    // tests/fixtures/refused with nix-heft's setup hook (issue 39): it
    // explains, then Nix refuses; with NIX_HEFT_REFUSED_FAIL=1 it fails
    // the build itself (`nix-build`, `nix build` with its last 10 log
    // lines, `nix build -L` on a terminal).
    const NIX28_HOOK: &[u8] = data!("nix-2.8-hook.nix-build.txt");
    const NIX28_HOOK_FAIL: &[u8] = data!("nix-2.8-hook-fail.nix-build.txt");
    const NIX28_HOOK_FAIL_CYCLE: &[u8] = data!("nix-2.8-hook-fail-cycle.nix-build-new-cli.txt");
    const NIX28_HOOK_FAIL_TTY: &[u8] = data!("nix-2.8-hook-fail.nix-build-L-tty.txt");

    const ALL_NIX28: &[&[u8]] = &[
        NIX28_DISALLOWED,
        NIX28_REQUISITES,
        NIX28_ALLOWED,
        NIX28_ALLOWED_REQ,
        NIX28_MANY,
        NIX28_STRUCTURED,
        NIX28_CYCLE,
        NIX28_MAX_SIZE,
        NIX28_MAX_CLOSURE,
        NIX28_NEW_CLI,
        NIX28_TTY_DISALLOWED,
        NIX28_TTY_MANY,
        NIX28_TTY_CYCLE,
        NIX28_LOG,
        NIX28_HOOK,
        NIX28_HOOK_FAIL,
        NIX28_HOOK_FAIL_CYCLE,
        NIX28_HOOK_FAIL_TTY,
    ];

    const DEP: &str = "/nix/store/0917k6x1nq6bpy5a738180h15l0caahy-nl-dep-1.0";
    const MID: &str = "/nix/store/gsbnf9cnkc9sdv1hbjp23p5znwpww700-nl-mid-1.0";

    fn sp(s: &str) -> StorePath {
        StorePath::parse(STORE, s).unwrap()
    }

    fn only(text: &[u8]) -> Found {
        let parsed = parse(STORE, text);
        assert_eq!(parsed.refusals.len(), 1, "{parsed:#?}");
        assert!(!parsed.truncated);
        parsed.refusals.into_iter().next().unwrap()
    }

    fn forbidden(drv: Option<&str>, output: &str, paths: &[&str]) -> Refusal {
        Refusal::Forbidden {
            drv: drv.map(sp),
            output: sp(output),
            paths: paths.iter().map(|p| sp(p)).collect(),
            check: None,
        }
    }

    #[test]
    fn nix28_output_checks_name_drv_output_and_paths() {
        // (text, derivation, output, paths): every check, plain and in
        // `outputChecks`, says the same words.
        let cases: &[(&[u8], &str, &str, &[&str])] = &[
            (
                NIX28_DISALLOWED,
                "/nix/store/nhkl6jl62cddfrc0ablgh0cm9rmp6cdq-nl-dis-1.0.drv",
                "/nix/store/42z1msg9lmqbzjcvcj4f20jfhk799psd-nl-dis-1.0",
                &[DEP],
            ),
            (
                NIX28_REQUISITES,
                "/nix/store/d5lhnhssln8qhlcpdy6g1d6zk7pic7w5-nl-req-1.0.drv",
                "/nix/store/l2fdyx1zpzqylg8q12avnyclb3pqb85q-nl-req-1.0",
                &[DEP],
            ),
            (
                NIX28_ALLOWED,
                "/nix/store/g9ld9dg1a3ya9lhr5qb67kn7hdgjdpr5-nl-allow-1.0.drv",
                "/nix/store/mz2j5r89b2fzqybg2k3vjg2ncm700fy0-nl-allow-1.0",
                &[DEP],
            ),
            (
                NIX28_ALLOWED_REQ,
                "/nix/store/zjksgp2b0hvr78iy3sinmlpgj1b7a7ic-nl-allowreq-1.0.drv",
                "/nix/store/rccx165vf6q2rikrjfkm853hqbkbvqrf-nl-allowreq-1.0",
                &[DEP, MID],
            ),
            (
                NIX28_MANY,
                "/nix/store/lhd4hagzc8r3mkxibjz8vf4lwyaj68r0-nl-many-1.0.drv",
                "/nix/store/akx526gd9zr0gnav6hmdvy81q8gsw3mn-nl-many-1.0",
                &[DEP, MID],
            ),
            (
                NIX28_STRUCTURED,
                "/nix/store/2scplrzbfq8jmi5sqqii8zixacig0m00-nl-sa-1.0.drv",
                "/nix/store/slg3pg5vwffbwd20igljllgnr9ybx1k8-nl-sa-1.0",
                &[DEP],
            ),
        ];
        for (text, drv, output, paths) in cases {
            let found = only(text);
            assert_eq!(found.refusal, forbidden(Some(drv), output, paths));
            let said = std::str::from_utf8(&text[found.span.bytes.clone()]).unwrap();
            assert!(said.starts_with("error: output '"), "{said}");
            assert!(said.ends_with(paths.last().unwrap()), "{said}");
            assert_eq!(
                found.span.last_line - found.span.first_line,
                paths.len(),
                "one line per path after the message's"
            );
            let lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
            assert!(lines[found.span.first_line - 1].starts_with(b"error: output"));
        }
    }

    #[test]
    fn nix28_span_and_derivations_of_a_two_derivation_build() {
        let parsed = parse(STORE, NIX28_DISALLOWED);
        // Lines: "these 2 derivations will be built:", two drvs, two
        // "building" lines, the builder's "building dis", then the error.
        assert_eq!(parsed.refusals[0].span.first_line, 7);
        assert_eq!(parsed.refusals[0].span.last_line, 8);
        assert_eq!(
            parsed.derivations,
            vec![
                sp("/nix/store/bc4lqcy2brspmwq4s7zqfgy316dj1whs-nl-dep-1.0.drv"),
                sp("/nix/store/nhkl6jl62cddfrc0ablgh0cm9rmp6cdq-nl-dis-1.0.drv"),
            ]
        );
        assert!(parsed.kept_build_dirs.is_empty());
    }

    #[test]
    fn nix28_cycle_between_outputs() {
        for text in [NIX28_CYCLE, NIX28_TTY_CYCLE] {
            let found = only(text);
            assert_eq!(
                found.refusal,
                Refusal::Cycle {
                    drv: Some(sp(
                        "/nix/store/2qpcslwavk125bqxvsdairlwl0i9l3kb-nl-cyc-1.0.drv"
                    )),
                    from: "out".into(),
                    to: "dev".into(),
                }
            );
            assert_eq!(found.span.first_line, found.span.last_line);
        }
    }

    #[test]
    fn nix28_max_size_and_max_closure_size() {
        assert_eq!(
            only(NIX28_MAX_SIZE).refusal,
            Refusal::TooLarge {
                drv: Some(sp(
                    "/nix/store/d4pkgl3j1q0yn309gxixsgvyd36cgg4r-nl-big-1.0.drv"
                )),
                path: sp("/nix/store/jvkm0c1zcfvj6d8rdj2ia96aqc4jdibx-nl-big-1.0"),
                closure: false,
                size: 4616,
                limit: 1000,
            }
        );
        assert_eq!(
            only(NIX28_MAX_CLOSURE).refusal,
            Refusal::TooLarge {
                drv: Some(sp(
                    "/nix/store/8jq617w9skzn19n8zjn2rg95xwnyp8m0-nl-bigclosure-1.0.drv"
                )),
                path: sp("/nix/store/m7p4snxbbcq5mf14jjwjl99r7lc3pgvk-nl-bigclosure-1.0"),
                closure: true,
                size: 4904,
                limit: 4700,
            }
        );
    }

    #[test]
    fn nix28_new_cli_and_terminal_output() {
        let dis_out = "/nix/store/42z1msg9lmqbzjcvcj4f20jfhk799psd-nl-dis-1.0";
        assert_eq!(
            only(NIX28_NEW_CLI).refusal,
            forbidden(
                Some("/nix/store/nhkl6jl62cddfrc0ablgh0cm9rmp6cdq-nl-dis-1.0.drv"),
                dis_out,
                &[DEP]
            )
        );
        // The progress bar names the package, not the derivation: no drv.
        assert_eq!(
            only(NIX28_TTY_DISALLOWED).refusal,
            forbidden(None, dis_out, &[DEP])
        );
        let many = only(NIX28_TTY_MANY);
        assert_eq!(
            many.refusal,
            forbidden(
                None,
                "/nix/store/akx526gd9zr0gnav6hmdvy81q8gsw3mn-nl-many-1.0",
                &[DEP, MID]
            )
        );
        // The span is the raw lines, escapes and all.
        assert!(NIX28_TTY_MANY[many.span.bytes.clone()].contains(&0x1b));
        assert_eq!(many.span.last_line, many.span.first_line + 2);
    }

    #[test]
    fn nix28_log_holds_no_refusal_but_names_the_derivation() {
        let parsed = parse(STORE, NIX28_LOG);
        assert!(parsed.refusals.is_empty());
        assert_eq!(
            parsed.derivations,
            vec![sp(
                "/nix/store/nhkl6jl62cddfrc0ablgh0cm9rmp6cdq-nl-dis-1.0.drv"
            )]
        );
    }

    /// The store path written in `text` whose name ends with `suffix`.
    fn named(text: &[u8], suffix: &str) -> StorePath {
        let text = String::from_utf8_lossy(text);
        let at = text
            .match_indices("/nix/store/")
            .map(|(i, _)| &text[i..])
            .map(|t| {
                &t[..t
                    .find(|c: char| !(c.is_ascii_alphanumeric() || "/+-._?=".contains(c)))
                    .unwrap_or(t.len())]
            })
            .find(|p| p.ends_with(suffix))
            .unwrap_or_else(|| panic!("no {suffix}"));
        sp(at)
    }

    #[test]
    fn the_hooks_text_when_nix_refuses_after_it_is_nixs_refusal_once() {
        let parsed = parse(STORE, NIX28_HOOK);
        assert_eq!(parsed.refusals.len(), 1, "{parsed:#?}");
        let f = &parsed.refusals[0];
        assert!(!f.by_hook);
        assert_eq!(
            f.refusal,
            forbidden(
                Some(named(NIX28_HOOK, "-text-and-elf-1.0.drv").as_str()),
                named(NIX28_HOOK, "-text-and-elf-1.0").as_str(),
                &[named(NIX28_HOOK, "-dep-1.0").as_str()]
            )
        );
    }

    #[test]
    fn the_hook_failing_the_build_is_read_from_its_text() {
        for text in [NIX28_HOOK_FAIL, NIX28_HOOK_FAIL_TTY] {
            let parsed = parse(STORE, text);
            let drv = named(text, "-text-and-elf-1.0.drv");
            assert_eq!(parsed.refusals.len(), 2, "{parsed:#?}");
            assert!(parsed.refusals.iter().all(|f| f.by_hook));
            assert_eq!(
                parsed.refusals[0].refusal,
                Refusal::Forbidden {
                    drv: Some(drv.clone()),
                    output: named(text, "-text-and-elf-1.0"),
                    paths: vec![named(text, "-dep-1.0")],
                    check: Some("disallowedReferences".into()),
                }
            );
            assert_eq!(
                parsed.refusals[1].refusal,
                Refusal::HookFailed { drv: Some(drv) }
            );
        }
        // `nix build`: Nix's line first, then the log's last 10 lines
        // (the cycle's header is cut; the failing line is there).
        let parsed = parse(STORE, NIX28_HOOK_FAIL_CYCLE);
        assert_eq!(parsed.refusals.len(), 1, "{parsed:#?}");
        assert_eq!(
            parsed.refusals[0].refusal,
            Refusal::HookFailed {
                drv: Some(named(NIX28_HOOK_FAIL_CYCLE, "-cycle-1.0.drv"))
            }
        );
    }

    #[test]
    fn the_hooks_cycle_line() {
        let text = format!(
            "building '{X_DRV}'...\nnix-heft: the outputs refer to each other: dev → out → dev (Nix: \"cycle detected\")\n  x\n"
        );
        let found = only(text.as_bytes());
        assert!(found.by_hook);
        assert_eq!(
            found.refusal,
            Refusal::Cycle {
                drv: None,
                from: "dev".into(),
                to: "out".into()
            }
        );
        // Nix's own cycle message after it: Nix's is kept.
        let both = format!(
            "{text}error: cycle detected in build of '{X_DRV}' in the references of output 'out' from output 'dev'\n"
        );
        let found = only(both.as_bytes());
        assert!(!found.by_hook);
    }

    // Texts of current Nix (master at 88b09c64fbea of NixOS/nix, after 2.35.2), built
    // from its format strings: the output check in
    // src/libstore/build/derivation-check.cc (`badPathsStr += "\n  "`), the
    // remote builder's wrapper in src/nix/build-remote/build-remote.cc
    // (`build of '%s' on '%s' failed: %s`), `nix flake check`'s in
    // src/nix/flake.cc, the cycles in
    // src/libstore/unix/build/derivation-builder.cc and src/libstore/misc.cc,
    // the kept directory in derivation-builder.cc's `cleanupBuild`
    // (`PathFmt` quotes with `"`, `makeTempPath` names `nix-<pid>-<n>`,
    // `build-dir` defaults to `/nix/var/nix/builds` since 2.30, and a
    // sandboxed build's directory is its `build` subdirectory). `HintFmt`
    // colours each argument `ANSI_WARNING` (`\x1b[35;1m`), as Nix 2.8 did.
    const X: &str = "/nix/store/1n1a6k3p6q3hb4v0mw1pqm6zj4x9l7ar-x-1.0";
    const X_DRV: &str = "/nix/store/9c5a0a2xgq2lq3n7v0a4cs8qgqf6bw1k-x-1.0.drv";
    const Y: &str = "/nix/store/0s5d4qh2f2ah3kaf0lgjzhfc4ab3vyrm-y-2.0";

    #[test]
    fn current_nix_wrappers_name_the_derivation() {
        let remote = format!(
            "error: build of '{X_DRV}' on 'ssh://builder' failed: output '{X}' is not allowed to refer to the following paths:\n         {Y}\n"
        );
        let flake = format!(
            "error: failed to build attribute 'checks.x86_64-linux.x', build of '{X_DRV}' failed: output '{X}' is not allowed to refer to the following paths:\n         {Y}\n"
        );
        let size = format!(
            "error: build of '{X_DRV}' on 'ssh://builder' failed: closure of path '{X}' is too large at 5000 bytes; limit is 4096 bytes\n"
        );
        assert_eq!(
            only(size.as_bytes()).refusal,
            Refusal::TooLarge {
                drv: Some(sp(X_DRV)),
                path: sp(X),
                closure: true,
                size: 5000,
                limit: 4096
            }
        );
        for text in [remote, flake] {
            assert_eq!(
                only(text.as_bytes()).refusal,
                forbidden(Some(X_DRV), X, &[Y]),
                "{text}"
            );
        }
    }

    #[test]
    fn current_nix_cycles_and_kept_directory() {
        let text = format!(
            "building '\x1b[35;1m{X_DRV}\x1b[0m'...\n\
             note: keeping build directory \"/nix/var/nix/builds/nix-4242-17/build\"\n\
             \x1b[31;1merror:\x1b[0m cycle detected in build of '\x1b[35;1m{X_DRV}\x1b[0m' in the references of output '\x1b[35;1mdev\x1b[0m' from output '\x1b[35;1mbin\x1b[0m'\n\
             error: cycle detected in the references of '{Y}' from '{X}'\n"
        );
        let parsed = parse(STORE, text.as_bytes());
        let refusals: Vec<Refusal> = parsed.refusals.into_iter().map(|f| f.refusal).collect();
        assert_eq!(
            refusals,
            vec![
                Refusal::Cycle {
                    drv: Some(sp(X_DRV)),
                    from: "bin".into(),
                    to: "dev".into()
                },
                Refusal::Cycle {
                    drv: None,
                    from: X.into(),
                    to: Y.into()
                },
            ]
        );
        assert_eq!(
            parsed.kept_build_dirs,
            vec!["/nix/var/nix/builds/nix-4242-17/build".to_string()]
        );
        // Nix 2.8's quotes.
        let old = parse(
            STORE,
            b"note: keeping build directory '/tmp/nix-build-lv-dis-1.0.drv-0'\n",
        );
        assert_eq!(old.kept_build_dirs, vec!["/tmp/nix-build-lv-dis-1.0.drv-0"]);
    }

    #[test]
    fn output_of_another_output_finds_its_derivation_by_name() {
        let dev = "/nix/store/1n1a6k3p6q3hb4v0mw1pqm6zj4x9l7ar-x-1.0-dev";
        let text = format!(
            "building '{X_DRV}'...\nerror: output '{dev}' is not allowed to refer to the following paths:\n  {Y}\n"
        );
        assert_eq!(
            only(text.as_bytes()).refusal,
            forbidden(Some(X_DRV), dev, &[Y])
        );
        // Two derivations of that name: which one built it is not known.
        let other = "/nix/store/7c5a0a2xgq2lq3n7v0a4cs8qgqf6bw1k-x-1.0.drv";
        let third = "/nix/store/8c5a0a2xgq2lq3n7v0a4cs8qgqf6bw1k-x-1.0.drv";
        let text = format!("building '{other}'...\n{third}\n{third}\n{other}\n{text}");
        let parsed = parse(STORE, text.as_bytes());
        assert_eq!(parsed.refusals[0].refusal, forbidden(None, dev, &[Y]));
        // Each named once, in order of first mention.
        assert_eq!(parsed.derivations, vec![sp(other), sp(third), sp(X_DRV)]);
        // A derivation of another name is not taken for it.
        let text = format!(
            "building '{other}'...\nerror: output '{Y}' is not allowed to refer to the following paths:\n  {X}\n"
        );
        assert_eq!(only(text.as_bytes()).refusal, forbidden(None, Y, &[X]));
    }

    #[test]
    fn elided_or_foreign_paths_are_not_refusals() {
        // As quoted in a bug report, paths shortened with `...`.
        let elided = b"error: build of '/nix/store/...-stdenv-linux.drv' failed: output '/nix/store/...-stdenv-linux' is not allowed to refer to the following paths:\n        /nix/store/...-pcre2-10.43-dev\n";
        assert!(parse(STORE, elided).refusals.is_empty());
        // Another store directory than the one asked for.
        let text =
            format!("error: output '{X}' is not allowed to refer to the following paths:\n  {Y}\n");
        assert!(parse("/gnu/store", text.as_bytes()).refusals.is_empty());
        let other = text.replace("/nix/store", "/test-root/store");
        let found = only_in("/test-root/store", other.as_bytes());
        assert!(matches!(found.refusal, Refusal::Forbidden { ref paths, .. } if paths.len() == 1));
        // The list ends at the first line that is not a store path alone.
        let text = format!(
            "error: output '{X}' is not allowed to refer to the following paths:\n  {Y}\n  {Y}/bin/y\n  {X}\n"
        );
        assert_eq!(only(text.as_bytes()).refusal, forbidden(None, X, &[Y]));
        // Numbers that do not fit are not a size refusal.
        let text = format!(
            "error: path '{X}' is too large at 99999999999999999999999 bytes; limit is 1 bytes\n"
        );
        assert!(parse(STORE, text.as_bytes()).refusals.is_empty());
    }

    fn only_in(store: &str, text: &[u8]) -> Found {
        let mut parsed = parse(store, text);
        assert_eq!(parsed.refusals.len(), 1, "{parsed:#?}");
        parsed.refusals.remove(0)
    }

    #[test]
    fn reads_the_end_of_a_text_longer_than_the_cap() {
        let mut text = NIX28_DISALLOWED.to_vec();
        let filler = "building something unrelated\n".repeat(100);
        text.extend_from_slice(filler.as_bytes());
        let cycle_at = text.len();
        text.extend_from_slice(NIX28_CYCLE);
        let lines_before = text[..cycle_at].iter().filter(|b| **b == b'\n').count();
        let cap = NIX28_CYCLE.len() + 10;
        let parsed = parse_capped(STORE, &text, cap);
        assert!(parsed.truncated);
        assert_eq!(parsed.refusals.len(), 1);
        let found = &parsed.refusals[0];
        assert!(matches!(found.refusal, Refusal::Cycle { .. }));
        // Line numbers and bytes are the whole text's.
        let cycle_line = lines_before + NIX28_CYCLE.split(|b| *b == b'\n').count() - 1;
        assert_eq!(found.span.first_line, cycle_line);
        assert!(text[found.span.bytes.clone()].starts_with(b"error: cycle detected"));
        // Uncapped, both are found.
        assert_eq!(parse(STORE, &text).refusals.len(), 2);
    }

    #[test]
    fn refusals_are_capped() {
        let line = format!("error: cycle detected in the references of '{Y}' from '{X}'\n");
        let text = line.repeat(MAX_REFUSALS + 1);
        let parsed = parse(STORE, text.as_bytes());
        assert_eq!(parsed.refusals.len(), MAX_REFUSALS);
        assert!(parsed.truncated);
    }

    /// What any result must satisfy, whatever the text.
    fn check_invariants(text: &[u8], parsed: &Parsed) {
        let line_count = text.split(|b| *b == b'\n').count();
        let mut last_end = 0;
        for found in &parsed.refusals {
            let span = &found.span;
            assert!(span.first_line >= 1 && span.first_line <= span.last_line);
            assert!(span.last_line <= line_count);
            assert!(span.bytes.start <= span.bytes.end && span.bytes.end <= text.len());
            assert!(span.bytes.start >= last_end, "spans in order, apart");
            last_end = span.bytes.end;
            let newlines = text[span.bytes.clone()]
                .iter()
                .filter(|b| **b == b'\n')
                .count();
            assert_eq!(newlines, span.last_line - span.first_line);
            match &found.refusal {
                Refusal::Forbidden { output, paths, .. } => {
                    assert_eq!(output.store_dir(), STORE);
                    if found.by_hook {
                        assert_eq!((paths.len(), span.first_line), (1, span.last_line));
                    } else {
                        assert_eq!(paths.len(), span.last_line - span.first_line);
                    }
                }
                Refusal::HookFailed { .. } => assert_eq!(span.first_line, span.last_line),
                Refusal::Cycle { from, to, .. } => assert!(!from.is_empty() && !to.is_empty()),
                Refusal::TooLarge { .. } => assert_eq!(span.first_line, span.last_line),
            }
            if let Some(drv) = found.refusal.drv() {
                assert!(drv.name().ends_with(".drv"));
            }
        }
        assert!(parsed.refusals.len() <= MAX_REFUSALS);
    }

    #[test]
    fn every_prefix_and_every_deletion_of_real_texts() {
        for text in ALL_NIX28 {
            for end in 0..=text.len() {
                let t = &text[..end];
                check_invariants(t, &parse(STORE, t));
            }
            for gone in 0..text.len() {
                let mut t = text.to_vec();
                t.remove(gone);
                check_invariants(&t, &parse(STORE, &t));
            }
        }
    }

    #[test]
    fn mutated_texts_never_panic() {
        // A fixed xorshift, so a failure is reproducible from its seed.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // Pieces that steer the parser into its branches.
        let pieces: &[&[u8]] = &[
            b"'",
            b"\n",
            b"\r",
            b"\x1b[",
            b"\x1b]",
            b"\x1b",
            b"\xff\xfe",
            b"\xe2\x80",
            b"/nix/store/",
            b".drv",
            b"output '",
            FORBIDDEN.as_bytes(),
            CYCLE_IN_BUILD.as_bytes(),
            CYCLE_OUTPUTS.as_bytes(),
            CYCLE_FROM_OUTPUT.as_bytes(),
            CYCLE_PATHS.as_bytes(),
            CYCLE_FROM.as_bytes(),
            TOO_LARGE.as_bytes(),
            LIMIT.as_bytes(),
            b"closure of path '",
            b"build of '",
            b"' failed: ",
            b"keeping build directory \"",
            b"0917k6x1nq6bpy5a738180h15l0caahy-",
            HOOK_OUTPUT.as_bytes(),
            b"' (/nix/store/0917k6x1nq6bpy5a738180h15l0caahy-x) refers to ",
            b", which disallowedReferences refuses",
            HOOK_CYCLE.as_bytes(),
            b" \xe2\x86\x92 ",
            HOOK_FAILED.as_bytes(),
            BUILDER_FOR.as_bytes(),
        ];
        let mut found_any = 0;
        for round in 0..3000 {
            let base = ALL_NIX28[round % ALL_NIX28.len()];
            let mut t = base.to_vec();
            for _ in 0..(1 + next() % 6) {
                let at = if t.is_empty() {
                    0
                } else {
                    (next() as usize) % (t.len() + 1)
                };
                match next() % 5 {
                    0 => {
                        let p = pieces[(next() as usize) % pieces.len()];
                        t.splice(at..at, p.iter().copied());
                    }
                    1 if at < t.len() => t[at] = next() as u8,
                    2 if at < t.len() => {
                        let end = (at + (next() as usize) % 40).min(t.len());
                        t.drain(at..end);
                    }
                    3 => {
                        // Repeat a stretch of the text (a duplicated line).
                        let end = (at + (next() as usize) % 200).min(t.len());
                        let copy = t[at..end].to_vec();
                        t.splice(at..at, copy);
                    }
                    _ => t.truncate(at),
                }
            }
            let parsed = parse(STORE, &t);
            found_any += parsed.refusals.len();
            check_invariants(&t, &parsed);
        }
        // The mutations left most texts readable: the test did reach the
        // branches that build refusals.
        assert!(found_any > 500, "{found_any}");
    }

    #[test]
    fn arbitrary_bytes_and_long_lines() {
        let mut all: Vec<u8> = (0..=255u8).collect();
        all.extend(all.clone().iter().rev());
        check_invariants(&all, &parse(STORE, &all));
        // One long line of escapes and quotes: linear, no refusal.
        let long = b"\x1b[1m'".repeat(200_000);
        assert!(parse(STORE, &long).refusals.is_empty());
        let unterminated = b"\x1b]8;;".repeat(100_000);
        assert!(parse(STORE, &unterminated).refusals.is_empty());
    }
}
