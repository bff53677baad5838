//! Store paths: `/nix/store/<32-char nix-base32 hash>-<name>`.
//!
//! Parsing follows the rules Nix enforces in `StorePath::StorePath` and
//! `checkName` (libstore/path.cc): a hash part of exactly 32 characters from
//! Nix's base-32 alphabet, then `-`, then a name of 1..=211 characters from
//! `[A-Za-z0-9+-._?=]` that does not start with a dot.
//!
//! This module also owns how a name is read: package name and version
//! ([`split_drv_name`], Nix's `DrvName`), the output suffix
//! ([`split_output`], nixpkgs' output names), both at once
//! ([`split_name`], or [`split_name_like_diff_closures`] as `nix store
//! diff-closures` reads names) and the kind of files a name promises
//! ([`OutputKind`]). Every other module asks these instead of looking at
//! suffixes itself.

use std::fmt;

use crate::nixbase32;

/// Length of the hash part of a store path's base name.
pub const HASH_LEN: usize = 32;
/// Longest name Nix accepts (`StorePath::MaxPathLen` minus the hash part).
pub const MAX_NAME_LEN: usize = 211;
const fn name_char_table() -> [bool; 256] {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric()
            || b == b'+'
            || b == b'-'
            || b == b'.'
            || b == b'_'
            || b == b'?'
            || b == b'=';
        c += 1;
    }
    t
}
const IS_NAME_CHAR: [bool; 256] = name_char_table();

/// A string that should be a store path and is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{path}' is not a valid store path: {reason}")]
pub struct InvalidStorePath {
    /// The offending string.
    pub path: String,
    /// Which rule it breaks.
    pub reason: &'static str,
}

/// A validated store path. Holds the full absolute path and remembers where
/// the base name starts, so the store directory need not be stored apart.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StorePath {
    full: Box<str>,
    base_start: u32,
}

impl StorePath {
    /// Parses `s`, which must be `<store_dir>/<hash>-<name>` exactly (no
    /// trailing components; see [`StorePath::from_path_inside`] for those).
    pub fn parse(store_dir: &str, s: &str) -> Result<Self, InvalidStorePath> {
        let invalid = |reason: &'static str| InvalidStorePath {
            path: s.to_string(),
            reason,
        };
        let rest = s
            .strip_prefix(store_dir)
            .and_then(|r| r.strip_prefix('/'))
            .ok_or_else(|| invalid("not inside the store directory"))?;
        check_base_name(rest).map_err(invalid)?;
        Ok(StorePath {
            full: s.into(),
            base_start: (s.len() - rest.len()) as u32,
        })
    }

    /// Parses a base name (`<hash>-<name>`) and joins it to `store_dir`.
    pub fn from_base_name(store_dir: &str, base: &str) -> Result<Self, InvalidStorePath> {
        Self::parse(store_dir, &format!("{store_dir}/{base}"))
    }

    /// The store path that contains `s`, which may name a file below it
    /// (`/nix/store/<hash>-foo/lib/libfoo.so` gives `/nix/store/<hash>-foo`).
    pub fn from_path_inside(store_dir: &str, s: &str) -> Result<Self, InvalidStorePath> {
        let rest = s
            .strip_prefix(store_dir)
            .and_then(|r| r.strip_prefix('/'))
            .ok_or_else(|| InvalidStorePath {
                path: s.to_string(),
                reason: "not inside the store directory",
            })?;
        let base = rest.split('/').next().unwrap_or("");
        Self::parse(store_dir, &s[..s.len() - rest.len() + base.len()])
    }

    /// The whole path, e.g. `/nix/store/<hash>-hello-2.12`.
    pub fn as_str(&self) -> &str {
        &self.full
    }
    /// The store directory this path lives in, e.g. `/nix/store`.
    pub fn store_dir(&self) -> &str {
        &self.full[..self.base_start as usize - 1]
    }
    /// `<hash>-<name>`.
    pub fn base_name(&self) -> &str {
        &self.full[self.base_start as usize..]
    }
    /// The 32-character hash part, which is what references are made of.
    pub fn hash_part(&self) -> &str {
        &self.base_name()[..HASH_LEN]
    }
    /// The name after the hash, e.g. `hello-2.12`.
    pub fn name(&self) -> &str {
        &self.base_name()[HASH_LEN + 1..]
    }
}

impl fmt::Display for StorePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full)
    }
}
impl fmt::Debug for StorePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StorePath({})", self.full)
    }
}

/// Checks `<hash>-<name>`; returns why it is not a store path base name.
pub fn check_base_name(base: &str) -> Result<(), &'static str> {
    let b = base.as_bytes();
    if b.len() < HASH_LEN + 2 {
        return Err("base name is shorter than a 32-character hash, a dash and a name");
    }
    if !b[..HASH_LEN]
        .iter()
        .all(|&c| nixbase32::IS_BASE32[c as usize])
    {
        return Err("hash part is not 32 characters of Nix's base-32 alphabet");
    }
    if b[HASH_LEN] != b'-' {
        return Err("hash part is not followed by '-'");
    }
    let name = &b[HASH_LEN + 1..];
    if name.len() > MAX_NAME_LEN {
        return Err("name is longer than 211 characters");
    }
    if name[0] == b'.' {
        return Err("name starts with a dot");
    }
    if !name.iter().all(|&c| IS_NAME_CHAR[c as usize]) {
        return Err("name contains a character outside [A-Za-z0-9+-._?=]");
    }
    Ok(())
}

/// Whether `b` may appear in a store path's name (`[A-Za-z0-9+-._?=]`).
pub fn is_name_byte(b: u8) -> bool {
    IS_NAME_CHAR[b as usize]
}

/// Store paths written out in full in a byte stream: `STORE_DIR/`, a
/// 32-character hash, `-` and a name, each found once. Fed chunk by chunk
/// (a text in memory is one chunk, `last`); a path cut by a chunk boundary
/// is completed from a carry-over of the last bytes, bounded because a
/// name is at most [`MAX_NAME_LEN`] bytes.
#[derive(Debug)]
pub struct WrittenPaths {
    store_dir: String,
    prefix: Vec<u8>,
    carry: Vec<u8>,
    paths: std::collections::BTreeSet<StorePath>,
}

/// Longest store path text after the prefix: hash, `-`, a name.
const WRITTEN_MAX: usize = HASH_LEN + 1 + MAX_NAME_LEN;

impl WrittenPaths {
    /// A finder of paths under `store_dir`.
    pub fn new(store_dir: &str) -> WrittenPaths {
        WrittenPaths {
            store_dir: store_dir.to_string(),
            prefix: format!("{store_dir}/").into_bytes(),
            carry: Vec::new(),
            paths: Default::default(),
        }
    }

    /// Scans the next chunk; `last` at the end of the stream, where a path
    /// that reaches the end is complete.
    pub fn feed(&mut self, chunk: &[u8], last: bool) {
        // Scan carry + chunk: an occurrence that ended inside the carry was
        // taken last round; one that reaches the end of the data may go on
        // in the next chunk, and waits for it (unless this is the last).
        let mut data = std::mem::take(&mut self.carry);
        let carried = data.len();
        data.extend_from_slice(chunk);
        for at in memchr::memmem::find_iter(&data, &self.prefix) {
            let start = at + self.prefix.len();
            let end = data[start..]
                .iter()
                .position(|&b| !is_name_byte(b))
                .map_or(data.len(), |e| start + e);
            if end < carried {
                continue;
            }
            if !last && end == data.len() && end - start < WRITTEN_MAX {
                continue;
            }
            let text = &data[at..end.min(start + WRITTEN_MAX)];
            if let Ok(p) = std::str::from_utf8(text)
                .map_err(|_| ())
                .and_then(|t| StorePath::parse(&self.store_dir, t).map_err(|_| ()))
            {
                self.paths.insert(p);
            }
        }
        let keep = (self.prefix.len() + WRITTEN_MAX).min(data.len());
        self.carry = data[data.len() - keep..].to_vec();
    }

    /// The paths found, each once, sorted.
    pub fn into_paths(self) -> std::collections::BTreeSet<StorePath> {
        self.paths
    }
}

/// The name of a store path given as a string (`/nix/store/<hash>-rocblas-5.7.1`
/// gives `rocblas-5.7.1`); the string itself when it has no hash part.
pub fn name_of(path: &str) -> &str {
    let base = path.rsplit('/').next().unwrap_or(path);
    base.get(HASH_LEN + 1..).unwrap_or(base)
}

/// Splits a name into package name and version the way Nix's `DrvName`
/// (`builtins.parseDrvName`) does: the version starts after the first `-`
/// that is followed by a character that is not a letter
/// (`rocm-llvm-clang-5.7.1` → `rocm-llvm-clang`, `5.7.1`). The version,
/// when there is one, is never empty (`foo-` has none).
pub fn split_drv_name(name: &str) -> (&str, Option<&str>) {
    let b = name.as_bytes();
    for i in 0..b.len() {
        if b[i] == b'-' && i + 1 < b.len() && !b[i + 1].is_ascii_alphabetic() {
            return (&name[..i], Some(&name[i + 1..]));
        }
    }
    (name, None)
}

/// The package name of `name` as [`split_drv_name`] reads it, without
/// stripping an output suffix first (`rocblas-5.7.1-dev` → `rocblas`, but
/// `nixos-icons-lib` → `nixos-icons-lib`): what nixpkgs attribute names and
/// globs over names are matched against.
pub fn package_name(name: &str) -> &str {
    split_drv_name(name).0
}

/// Output names that nixpkgs gives a derivation's outputs other than `out`
/// (the multiple-outputs setup hook's `dev`, `bin`, `lib`, `doc`, `man` ...,
/// and `python`, `debug` as packages use them), `source` (what fetchers
/// name an unpacked source, `<name>-source`), and `out` itself. A path
/// named `<stem>-<one of these>` is that output of `<stem>`.
pub const OUTPUT_NAMES: &[&str] = &[
    "dev", "doc", "devdoc", "man", "devman", "info", "bin", "lib", "static", "debug", "source",
    "python", "out",
];

/// Splits the output suffix off a store path name: `(stem, Some(output))`
/// when the part after the last `-` is one of [`OUTPUT_NAMES`] and the
/// stem is not empty, else `(name, None)` (the `out` output, which Nix
/// names without a suffix).
///
/// This is the one output-suffix rule of nix-heft; [`split_name`],
/// [`output_suffix`] and [`OutputKind::of`] read names through it. Only
/// `diff` reads them another way, Nix's own (see
/// [`split_name_like_diff_closures`]).
pub fn split_output(name: &str) -> (&str, Option<&str>) {
    match name.rsplit_once('-') {
        Some((stem, suffix)) if !stem.is_empty() && OUTPUT_NAMES.contains(&suffix) => {
            (stem, Some(suffix))
        }
        _ => (name, None),
    }
}

/// The output suffix of a store path name (`rocblas-5.7.1-dev` → `dev`),
/// `None` for the `out` output; see [`split_output`].
pub fn output_suffix(name: &str) -> Option<&str> {
    split_output(name).1
}

/// A store path name read as package name, version and output, the way
/// Nix and nixpkgs name the outputs of a derivation
/// (`<pname>-<version>[-<output>]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreName<'a> {
    /// The package name (`rocblas`).
    pub name: &'a str,
    /// The version (`5.7.1`), `None` when the name has none.
    pub version: Option<&'a str>,
    /// The output suffix (`dev`), `None` for `out`.
    pub output: Option<&'a str>,
}

/// Splits a store path name into package name, version and output: the
/// output suffix first ([`split_output`]), then [`split_drv_name`] of what
/// is left (`python3-3.11.4-doc` → `python3`, `3.11.4`, `doc`).
pub fn split_name(name: &str) -> StoreName<'_> {
    let (stem, output) = split_output(name);
    let (name, version) = split_drv_name(stem);
    StoreName {
        name,
        version,
        output,
    }
}

/// Splits a store path name the way `nix store diff-closures` groups
/// paths: any last `-` part of lower-case letters, or `lib32`/`lib64`, is
/// taken as the output name (the regex `(.*)-([a-z]+|lib32|lib64)` of
/// Nix's `diff-closures.cc`), then [`split_drv_name`] of the rest.
///
/// Nix's rule is wider than [`split_output`]'s and ambiguous (`foo-unstable`
/// loses `unstable` as an output name, and the stem may be empty); `diff`
/// uses it as is so that both tools group packages alike.
pub fn split_name_like_diff_closures(name: &str) -> StoreName<'_> {
    let (stem, output) = match name.rsplit_once('-') {
        Some((stem, suffix))
            if (!suffix.is_empty() && suffix.bytes().all(|b| b.is_ascii_lowercase()))
                || suffix == "lib32"
                || suffix == "lib64" =>
        {
            (stem, Some(suffix))
        }
        _ => (name, None),
    };
    let (name, version) = split_drv_name(stem);
    StoreName {
        name,
        version,
        output,
    }
}

/// What kind of files a store path holds, as its name says: the output
/// (`dev`, `lib` ...; outputs of one purpose share a kind), a fetched
/// source, or a derivation. The `report` page colours paths by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// `out`, and outputs with no kind of their own (`python`).
    Out,
    /// `dev`: headers, pkg-config and CMake files.
    Dev,
    /// `doc`, `devdoc` and `info`.
    Doc,
    /// `man` and `devman`.
    Man,
    /// `lib`.
    Lib,
    /// `bin`.
    Bin,
    /// `static`.
    Static,
    /// `debug`.
    Debug,
    /// `<name>-source`, and tarballs and patches fetched as files
    /// (`.tar.gz`, `.tar.xz`, `.tar.bz2`, `.patch`).
    Source,
    /// A derivation (`.drv`).
    Drv,
}

impl OutputKind {
    /// The kind of the path named `name`: its output suffix
    /// ([`split_output`]) when it has one, else what its file name ends in.
    pub fn of(name: &str) -> OutputKind {
        match output_suffix(name) {
            Some("dev") => OutputKind::Dev,
            Some("doc" | "devdoc" | "info") => OutputKind::Doc,
            Some("man" | "devman") => OutputKind::Man,
            Some("lib") => OutputKind::Lib,
            Some("bin") => OutputKind::Bin,
            Some("static") => OutputKind::Static,
            Some("debug") => OutputKind::Debug,
            Some("source") => OutputKind::Source,
            Some(_) => OutputKind::Out,
            None if name.ends_with(".drv") => OutputKind::Drv,
            None if [".tar.gz", ".tar.xz", ".tar.bz2", ".patch"]
                .iter()
                .any(|e| name.ends_with(e)) =>
            {
                OutputKind::Source
            }
            None => OutputKind::Out,
        }
    }

    /// The kind's name in output (`out`, `dev`, `doc` ...).
    pub fn as_str(self) -> &'static str {
        match self {
            OutputKind::Out => "out",
            OutputKind::Dev => "dev",
            OutputKind::Doc => "doc",
            OutputKind::Man => "man",
            OutputKind::Lib => "lib",
            OutputKind::Bin => "bin",
            OutputKind::Static => "static",
            OutputKind::Debug => "debug",
            OutputKind::Source => "source",
            OutputKind::Drv => "drv",
        }
    }

    /// An output that nixpkgs' multiple-outputs hook fills with build-time
    /// files or documentation (`dev`, `doc`, `devdoc`, `man`, `devman`,
    /// `info`): where such files belong, so no split is advised for it.
    pub fn is_dev_or_docs(self) -> bool {
        matches!(self, OutputKind::Dev | OutputKind::Doc | OutputKind::Man)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn written_paths_are_found_across_chunks_and_at_the_end() {
        let a = format!("/nix/store/{}-alpha-1.0", "a".repeat(32));
        let b = format!("/nix/store/{}-beta", "b".repeat(32));
        let text = format!("x {a}/lib y\0{b}");
        for cut in 0..text.len() {
            let mut w = WrittenPaths::new("/nix/store");
            w.feed(&text.as_bytes()[..cut], false);
            w.feed(&text.as_bytes()[cut..], false);
            w.feed(&[], true);
            let got: Vec<String> = w.into_paths().iter().map(|p| p.to_string()).collect();
            assert_eq!(got, vec![a.clone(), b.clone()], "cut at {cut}");
        }
    }

    use super::*;

    const H: &str = "02hmm3h249gbm141s547nrgi1r420ji4";

    #[test]
    fn parses_parts() {
        let p = StorePath::parse("/nix/store", &format!("/nix/store/{H}-hello-2.12")).unwrap();
        assert_eq!(p.hash_part(), H);
        assert_eq!(p.name(), "hello-2.12");
        assert_eq!(p.store_dir(), "/nix/store");
        assert_eq!(p.base_name(), format!("{H}-hello-2.12"));
    }

    #[test]
    fn path_inside() {
        let p = StorePath::from_path_inside("/nix/store", &format!("/nix/store/{H}-a/lib/x.so"))
            .unwrap();
        assert_eq!(p.name(), "a");
    }

    #[test]
    fn rejects_bad_paths() {
        for bad in [
            format!("/nix/store/{}-a", &H[..31]),
            format!("/nix/store/{}e-a", &H[..31]),
            format!("/nix/store/{H}_a"),
            format!("/nix/store/{H}-"),
            format!("/nix/store/{H}-.a"),
            format!("/nix/store/{H}-a b"),
            format!("/nix/store/{H}-{}", "x".repeat(212)),
            format!("/other/{H}-a"),
            format!("/nix/store/{H}-a/b"),
        ] {
            assert!(StorePath::parse("/nix/store", &bad).is_err(), "{bad}");
        }
        assert!(
            StorePath::parse("/nix/store", &format!("/nix/store/{H}-{}", "x".repeat(211))).is_ok()
        );
    }

    #[test]
    fn drv_name_split_like_parse_drv_name() {
        // `builtins.parseDrvName`: the version starts at the first dash
        // followed by a non-letter, digits inside the name do not count.
        for (name, want) in [
            ("rocm-llvm-clang-5.7.1", ("rocm-llvm-clang", Some("5.7.1"))),
            (
                "python3.11-numpy-1.26.4",
                ("python3.11-numpy", Some("1.26.4")),
            ),
            ("gst-plugins-base-1.22", ("gst-plugins-base", Some("1.22"))),
            ("foo-2bar-baz", ("foo", Some("2bar-baz"))),
            (
                "foo-unstable-2024-01-01",
                ("foo-unstable", Some("2024-01-01")),
            ),
            ("hello", ("hello", None)),
            ("foo-", ("foo-", None)),
            ("-1", ("", Some("1"))),
            ("", ("", None)),
        ] {
            assert_eq!(split_drv_name(name), want, "{name}");
        }
    }

    #[test]
    fn names_split_into_package_version_and_output() {
        let sn = |name, version, output| StoreName {
            name,
            version,
            output,
        };
        for (name, want) in [
            (
                "rocblas-5.7.1-dev",
                sn("rocblas", Some("5.7.1"), Some("dev")),
            ),
            ("rocblas-5.7.1", sn("rocblas", Some("5.7.1"), None)),
            (
                "rocblas-5.7.1-source",
                sn("rocblas", Some("5.7.1"), Some("source")),
            ),
            ("source", sn("source", None, None)),
            (
                "python3-3.11.4-doc",
                sn("python3", Some("3.11.4"), Some("doc")),
            ),
            ("glibc-2.38-bin", sn("glibc", Some("2.38"), Some("bin"))),
            (
                "util-linux-2.39-devdoc",
                sn("util-linux", Some("2.39"), Some("devdoc")),
            ),
            ("nixos-icons-lib", sn("nixos-icons", None, Some("lib"))),
            ("foo-bin-1.0", sn("foo-bin", Some("1.0"), None)),
            ("hello-2.12.tar.gz", sn("hello", Some("2.12.tar.gz"), None)),
            // Not nixpkgs output names: part of the name.
            ("rocm-llvm", sn("rocm-llvm", None, None)),
            ("glibc-2.38-lib64", sn("glibc", Some("2.38-lib64"), None)),
            // No stem: a name, not an output of anything.
            ("dev", sn("dev", None, None)),
            ("-dev", sn("-dev", None, None)),
            ("hello", sn("hello", None, None)),
        ] {
            assert_eq!(split_name(name), want, "{name}");
            assert_eq!(output_suffix(name), want.output, "{name}");
        }
        assert_eq!(split_output("x-1.0-man"), ("x-1.0", Some("man")));
        assert_eq!(split_output("x-1.0"), ("x-1.0", None));
    }

    #[test]
    fn diff_closures_reads_any_lower_case_suffix_as_an_output() {
        let g = |n| {
            let s = split_name_like_diff_closures(n);
            (s.name, s.version.unwrap_or(""), s.output.unwrap_or(""))
        };
        assert_eq!(g("rocblas-5.7.1-dev"), ("rocblas", "5.7.1", "dev"));
        assert_eq!(g("hello-2.12"), ("hello", "2.12", ""));
        assert_eq!(g("glibc-2.38-lib64"), ("glibc", "2.38", "lib64"));
        assert_eq!(g("top-app-1.0"), ("top-app", "1.0", ""));
        // Nix's ambiguity, kept: a lower-case last part is an output name,
        // even with nothing before it.
        assert_eq!(g("rocm-llvm"), ("rocm", "", "llvm"));
        assert_eq!(g("foo-unstable"), ("foo", "", "unstable"));
        assert_eq!(g("-dev"), ("", "", "dev"));
        assert_eq!(g("foo-Dev"), ("foo-Dev", "", ""));
        assert_eq!(g("hello"), ("hello", "", ""));
        assert_eq!(g("foo-"), ("foo-", "", ""));
    }

    #[test]
    fn kinds_from_names() {
        for (name, kind) in [
            ("rocblas-5.7.1-dev", OutputKind::Dev),
            ("rocblas-5.7.1", OutputKind::Out),
            ("glibc-2.36-bin", OutputKind::Bin),
            ("glibc-2.36-lib", OutputKind::Lib),
            ("x-1-doc", OutputKind::Doc),
            ("x-1-devdoc", OutputKind::Doc),
            ("x-1-info", OutputKind::Doc),
            ("x-1-man", OutputKind::Man),
            ("x-1-devman", OutputKind::Man),
            ("x-1-static", OutputKind::Static),
            ("x-1-debug", OutputKind::Debug),
            ("x-1-python", OutputKind::Out),
            ("x-1-out", OutputKind::Out),
            ("rocblas-5.7.1-source", OutputKind::Source),
            ("hello-2.12.tar.gz", OutputKind::Source),
            ("fix-build.patch", OutputKind::Source),
            ("hello-2.12.drv", OutputKind::Drv),
            ("hello-source.drv", OutputKind::Drv),
            ("dev", OutputKind::Out),
        ] {
            assert_eq!(OutputKind::of(name), kind, "{name}");
        }
        let dev_or_docs: Vec<&str> = OUTPUT_NAMES
            .iter()
            .copied()
            .filter(|o| OutputKind::of(&format!("x-{o}")).is_dev_or_docs())
            .collect();
        assert_eq!(
            dev_or_docs,
            ["dev", "doc", "devdoc", "man", "devman", "info"]
        );
    }

    #[test]
    fn package_names() {
        assert_eq!(package_name("rocm-llvm-clang-5.7.1"), "rocm-llvm-clang");
        assert_eq!(package_name("llama-cpp-rocm-0.0.0"), "llama-cpp-rocm");
        assert_eq!(package_name("rocblas-5.7.1-dev"), "rocblas");
        assert_eq!(package_name("hello"), "hello");
        assert_eq!(package_name("foo-"), "foo-");
    }
}
