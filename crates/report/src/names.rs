//! The one display-name rule, for every table, line, heading and format:
//! a store path is shown by its full name (`rocblas-5.7.1-dev`), with the
//! first 8 characters of its hash added (`rocblas-5.7.1 (cvafbxx6)`)
//! wherever another path of the same name is shown with it, roots
//! included. And the one way to shorten such a name to a width: in the
//! middle, keeping the part that tells it from the names shown beside it
//! (`gfx942` of `rocblas-tensile-gfx942-5.7.1`, the hash of a repeated name).

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use nix_heft_format::store_path::name_of;

/// How one path is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// The display name.
    pub text: String,
    /// The characters of the name to keep when it is shortened: the part
    /// that differs from the most similar other name shown.
    pub keep: Range<usize>,
    /// The length of the ` (hash)` after the name, 0 when there is none;
    /// never shortened (it tells the path from its namesakes).
    pub hash_len: usize,
}

impl Shown {
    /// The text in at most `width` characters: the hash kept whole, the
    /// name shortened by [`shorten`].
    pub fn fit(&self, width: usize) -> String {
        let n = self.text.len() - self.hash_len;
        if self.text.len() <= width || self.hash_len == 0 || width < self.hash_len + 4 {
            return shorten(&self.text, self.keep.clone(), width);
        }
        let w = width - self.hash_len;
        let name = if self.keep.start == 0 && self.keep.end >= n {
            // Nothing in the name tells it apart: the hash does, and the
            // name's start says what it is.
            super::style::truncate(&self.text[..n], w, false)
        } else {
            shorten(&self.text[..n], self.keep.clone(), w)
        };
        format!("{name}{}", &self.text[n..])
    }
}

/// Display names of the paths shown together (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Names {
    shown: HashMap<String, Shown>,
}

impl Names {
    /// The names of `paths`, all shown together (duplicates are fine).
    pub fn new<'a>(paths: impl IntoIterator<Item = &'a str>) -> Names {
        let mut by_name: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for p in paths {
            let v = by_name.entry(name_of(p)).or_default();
            if !v.contains(&p) {
                v.push(p);
            }
        }
        let distinct: Vec<&str> = by_name.keys().copied().collect();
        let mut shown = HashMap::new();
        for (n, ps) in &by_name {
            let span = distinct_span(n, &distinct);
            for p in ps {
                let s = if ps.len() > 1 {
                    let base = p.rsplit('/').next().unwrap_or(p);
                    let text = format!("{n} ({})", base.get(..8).unwrap_or(base));
                    Shown {
                        hash_len: text.len() - n.len(),
                        text,
                        keep: span.clone(),
                    }
                } else {
                    Shown {
                        text: n.to_string(),
                        keep: span.clone(),
                        hash_len: 0,
                    }
                };
                shown.insert(p.to_string(), s);
            }
        }
        Names { shown }
    }

    /// The display name of `path` (its plain name for a path not given to
    /// [`Names::new`]).
    pub fn get<'a>(&'a self, path: &'a str) -> &'a str {
        self.shown
            .get(path)
            .map_or_else(|| name_of(path), |s| s.text.as_str())
    }

    /// The display name with what to keep when it is shortened.
    pub fn shown(&self, path: &str) -> Shown {
        self.shown.get(path).cloned().unwrap_or_else(|| {
            let n = name_of(path);
            Shown {
                text: n.to_string(),
                keep: 0..n.len(),
                hash_len: 0,
            }
        })
    }

    /// What to keep of `path`'s plain name when it is shortened (the part
    /// [`distinct_span`] found).
    pub fn name_keep(&self, path: &str) -> Range<usize> {
        let n = name_of(path).len();
        self.shown.get(path).map_or(0..n, |s| s.keep.clone())
    }

    /// The display name of `path` within `width` characters, when given.
    pub fn fit(&self, path: &str, width: Option<usize>) -> String {
        let s = self.shown(path);
        match width {
            Some(w) => s.fit(w),
            None => s.text,
        }
    }

    /// As a map from path to display name.
    pub fn into_map(self) -> HashMap<String, String> {
        self.shown.into_iter().map(|(k, v)| (k, v.text)).collect()
    }
}

/// The part of `name` that tells it from the most similar other name of
/// `all` (the one sharing most leading `-`-separated words, then most
/// trailing ones): the words between what they share, as a byte range
/// (names are ASCII). The whole name when no other name shares a word, or
/// when they differ only by what one of them adds at an end.
pub fn distinct_span(name: &str, all: &[&str]) -> Range<usize> {
    let words: Vec<&str> = name.split('-').collect();
    let mut best: Option<(usize, usize)> = None;
    for o in all {
        if *o == name {
            continue;
        }
        let ow: Vec<&str> = o.split('-').collect();
        let max = words.len().min(ow.len());
        let p = words.iter().zip(&ow).take_while(|(a, b)| a == b).count();
        let q = words
            .iter()
            .rev()
            .zip(ow.iter().rev())
            .take(max - p)
            .take_while(|(a, b)| a == b)
            .count();
        if p + q == 0 {
            continue;
        }
        if best.is_none_or(|b| (p, q) > b) {
            best = Some((p, q));
        }
    }
    let Some((p, q)) = best else {
        return 0..name.len();
    };
    if p + q >= words.len() {
        return 0..name.len();
    }
    let start: usize = words[..p].iter().map(|w| w.len() + 1).sum();
    let end: usize = name.len()
        - words[words.len() - q..]
            .iter()
            .map(|w| w.len() + 1)
            .sum::<usize>();
    start..end
}

/// `text` in at most `width` characters, `…` where characters were left
/// out: from before `keep` first (what the names shown share), so `keep`
/// and what follows it stay; when even those do not fit, `keep` with as
/// much after it as fits; in the middle when `keep` is all of `text`.
pub fn shorten(text: &str, keep: Range<usize>, width: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    if n <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let keep = keep.start.min(n)..keep.end.min(n);
    let whole = keep.start == 0 && keep.end >= n || keep.is_empty();
    if whole {
        return super::style::truncate(text, width, true);
    }
    let s = |r: Range<usize>| chars[r].iter().collect::<String>();
    let tail = n - keep.start;
    if tail < width {
        let head = width - 1 - tail;
        return format!("{}…{}", s(0..head), s(keep.start..n));
    }
    // The kept part and what follows, cut at the end.
    let before = usize::from(keep.start > 0);
    if width > before + 1 && keep.len() < width - before {
        let upto = keep.start + (width - before - 1);
        let lead = if before == 1 { "…" } else { "" };
        return format!("{lead}{}…", s(keep.start..upto));
    }
    super::style::truncate(&s(keep), width, true)
}

/// A store path (`/nix/store/HASH-NAME`) in at most `width` characters:
/// the hash cut first (at least 8 of its characters stay), then the name
/// as [`shorten`] cuts it, keeping `keep` (a range in the name).
pub fn shorten_path(path: &str, keep: Range<usize>, width: usize) -> String {
    let n = path.chars().count();
    if n <= width {
        return path.to_string();
    }
    let name = name_of(path);
    if name.len() == path.len() || !path.is_ascii() {
        return super::style::truncate(path, width, true);
    }
    let head = &path[..path.len() - name.len() - 1];
    let hash_at = head.rfind('/').map_or(0, |i| i + 1);
    // "HEAD…-NAME": as much of the head as fits, with 8 hash characters.
    if width > name.len() + 1 + hash_at + 8 {
        let h = width - name.len() - 2;
        return format!("{}…-{name}", &head[..h]);
    }
    let hash8 = &head[hash_at..(hash_at + 8).min(head.len())];
    if width > hash8.len() + 2 {
        return format!("{hash8}…-{}", shorten(name, keep, width - hash8.len() - 2));
    }
    super::style::truncate(path, width, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "/nix/store/aaaaaaaabbbbbbbbccccccccdddddddd-rocblas-5.7.1";
    const B: &str = "/nix/store/zzzzzzzzbbbbbbbbccccccccdddddddd-rocblas-5.7.1";
    const T1: &str = "/nix/store/aaaaaaaabbbbbbbbccccccccdddddddd-rocblas-tensile-gfx942-5.7.1";
    const T2: &str = "/nix/store/zzzzzzzzbbbbbbbbccccccccdddddddd-rocblas-tensile-gfx90a-5.7.1";

    #[test]
    fn repeated_names_get_their_hash_and_keep_it() {
        let n = Names::new([A, B, T1, A]);
        assert_eq!(n.get(A), "rocblas-5.7.1 (aaaaaaaa)");
        assert_eq!(n.get(B), "rocblas-5.7.1 (zzzzzzzz)");
        assert_eq!(n.get(T1), "rocblas-tensile-gfx942-5.7.1");
        let short = n.fit(A, Some(16));
        assert_eq!(short, "rocb… (aaaaaaaa)");
        assert_eq!(short.chars().count(), 16);
        let short = n.fit(A, Some(20));
        assert_eq!(short, "rocblas-… (aaaaaaaa)");
        assert_eq!(short.chars().count(), 20);
    }

    #[test]
    fn shortening_keeps_the_part_that_differs() {
        let n = Names::new([A, T1, T2]);
        assert_eq!(n.shown(T1).keep, 16..22);
        for w in [8, 12, 16, 20, 27] {
            let s = n.fit(T1, Some(w));
            assert!(s.chars().count() <= w, "{w}: {s}");
            assert!(s.contains("gfx942"), "{w}: {s}");
        }
        assert_eq!(n.fit(T1, Some(16)), "roc…gfx942-5.7.1");
        assert_eq!(n.fit(T1, Some(10)), "…gfx942-5…");
        // No other name like it: the middle goes.
        assert_eq!(shorten("llama-cpp-rocm-1710", 0..19, 10), "llam…-1710");
        assert_eq!(shorten("hipblas-5.7.1", 0..7, 8), "hipblas…");
        assert_eq!(
            distinct_span("rocblas-5.7.1-dev", &["rocblas-5.7.1", "rocblas-5.7.1-dev"]),
            14..17
        );
    }

    #[test]
    fn store_paths_lose_hash_characters_first() {
        let n = Names::new([T1, T2]);
        let k = n.shown(T1).keep;
        let s = shorten_path(T1, k.clone(), 50);
        assert_eq!(s, "/nix/store/aaaaaaaab…-rocblas-tensile-gfx942-5.7.1");
        assert_eq!(s.chars().count(), 50);
        let s = shorten_path(T1, k, 24);
        assert_eq!(s, "aaaaaaaa…-r…gfx942-5.7.1");
    }
}
