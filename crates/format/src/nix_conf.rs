//! Nix's configuration (`nix.conf`) as Nix itself reads it: the same files
//! in the same order, the same syntax, the same `include`/`!include` and
//! `extra-` rules, so that `--substituters auto` and the trusted keys mean
//! what they mean to `nix`.
//!
//! The command layer reads `substituters` (`--substituters auto`),
//! `trusted-public-keys` and `require-sigs` (the signature policy) and the
//! collector's `keep-outputs` and `keep-derivations` (`roots`) from here,
//! and `netrc` reads `netrc-file`.
//!
//! The rules, as Nix 2.8 applies them (`loadConfFile` and
//! `getUserConfigFiles` in libstore/globals.cc, `AbstractConfig::applyConfig`
//! and `applyConfigFile` in libutil/config.cc), each checked against
//! `nix show-config`:
//!
//! * Files, earliest first, later settings overriding earlier ones:
//!   `$NIX_CONF_DIR/nix.conf` (else `/etc/nix/nix.conf`); then the user
//!   files, either `$NIX_USER_CONF_FILES` (`:`-separated) or
//!   `<dir>/nix/nix.conf` for `$XDG_CONFIG_HOME` (else `$HOME/.config`)
//!   followed by each of `$XDG_CONFIG_DIRS` (else `/etc/xdg`), that list
//!   applied *last entry first*, so the first entry wins; then the text of
//!   `$NIX_CONFIG`. A missing or unreadable top-level file is skipped
//!   silently, as Nix does.
//! * A line ends at `\n` only: there are no continuation lines (a trailing
//!   `\` is an ordinary token, and the next line stands alone). `#` starts a
//!   comment anywhere, even inside a word. The rest is split at spaces,
//!   tabs and `\r`; blank lines are skipped.
//! * `NAME = VALUE…`: the second word must be `=` on its own (`a=b` is an
//!   illegal line); the value is the remaining words joined by one space,
//!   and may be empty.
//! * `include PATH` and `!include PATH` (exactly two words), relative to
//!   the including file's directory (lexically normalised, as Nix's
//!   `absPath`); `include` of a missing file is an error, `!include` skips
//!   it. In `NIX_CONFIG` a relative include is an error, as in Nix ("not an
//!   absolute path").
//! * A list setting is replaced by `NAME = …` and appended to by
//!   `extra-NAME = …`, in the order the lines are applied; Nix's default
//!   value is what `extra-` appends to when nothing set the list before.
//! * Old names are aliases (`binary-caches` for `substituters`,
//!   `binary-cache-public-keys` for `trusted-public-keys`,
//!   `trusted-binary-caches` for `trusted-substituters`), `extra-` included.
//!
//! Where nix-heft is stricter than Nix, it says so rather than misbehave:
//! an include loop (Nix recurses until it crashes), includes nested more
//! than [`MAX_INCLUDE_DEPTH`] deep, more than [`MAX_FILES`] files, a file
//! over [`MAX_FILE_BYTES`], or a non-UTF-8 setting line are errors naming
//! the file and line.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// Deepest chain of includes followed; Nix has no limit (a loop crashes it).
pub const MAX_INCLUDE_DEPTH: usize = 32;
/// Most files read for one configuration, includes counted: a chain of
/// files each including the next twice would otherwise be exponential.
pub const MAX_FILES: usize = 1024;
/// Largest configuration file read; real ones are a few KiB, and an
/// `include /dev/zero` must not eat the memory.
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// `substituters` when no file sets it: Nix's default for `/nix/store`.
pub const DEFAULT_SUBSTITUTERS: &[&str] = &["https://cache.nixos.org/"];
/// `trusted-public-keys` when no file sets it: Nix's default.
pub const DEFAULT_TRUSTED_PUBLIC_KEYS: &[&str] =
    &["cache.nixos.org-1:6NCHdD59X431o0gWypbMrAURkbJ16ZPMQFGspcDShjY="];

/// Where a setting was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A configuration file (the path as Nix forms it, not canonicalised
    /// through symlinks).
    File(PathBuf),
    /// The `NIX_CONFIG` environment variable.
    Env,
    /// A command's `--option NAME VALUE`.
    CommandLine,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File(p) => write!(f, "{}", p.display()),
            Origin::Env => f.write_str("NIX_CONFIG"),
            Origin::CommandLine => f.write_str("--option"),
        }
    }
}

/// What went wrong reading the configuration; every variant names the
/// file (or `NIX_CONFIG`) and, where there is one, the line.
#[derive(Debug, thiserror::Error)]
pub enum NixConfError {
    /// A line that is neither `NAME = VALUE` nor an include.
    #[error("{origin}:{line}: illegal configuration line '{text}'")]
    IllegalLine {
        /// Where.
        origin: Origin,
        /// 1-based line number.
        line: usize,
        /// The line, comment removed.
        text: String,
    },
    /// `include` of a file that does not exist.
    #[error("{origin}:{line}: included file '{}' not found", path.display())]
    IncludeNotFound {
        /// Where the include is.
        origin: Origin,
        /// 1-based line number.
        line: usize,
        /// The file asked for, resolved.
        path: PathBuf,
    },
    /// A relative include in `NIX_CONFIG`, which has no directory.
    #[error("{origin}:{line}: include of '{path}' is not an absolute path")]
    RelativeInclude {
        /// Where the include is.
        origin: Origin,
        /// 1-based line number.
        line: usize,
        /// The path as written.
        path: String,
    },
    /// A file that includes itself, directly or through others.
    #[error("{origin}:{line}: include loop: '{}' is already being read", path.display())]
    IncludeLoop {
        /// Where the include is.
        origin: Origin,
        /// 1-based line number.
        line: usize,
        /// The file included again.
        path: PathBuf,
    },
    /// Includes nested deeper than [`MAX_INCLUDE_DEPTH`].
    #[error("{origin}:{line}: includes nested more than {MAX_INCLUDE_DEPTH} deep")]
    TooDeep {
        /// Where the include is.
        origin: Origin,
        /// 1-based line number.
        line: usize,
    },
    /// More than [`MAX_FILES`] files read.
    #[error("{origin}:{line}: more than {MAX_FILES} configuration files included")]
    TooManyFiles {
        /// Where the include is.
        origin: Origin,
        /// 1-based line number.
        line: usize,
    },
    /// A file over [`MAX_FILE_BYTES`].
    #[error("{}: configuration file larger than {MAX_FILE_BYTES} bytes", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// A setting line that is not UTF-8 (comments may be anything).
    #[error("{origin}:{line}: not UTF-8 text")]
    NotUtf8 {
        /// Where.
        origin: Origin,
        /// 1-based line number.
        line: usize,
    },
    /// A Boolean setting with a value Nix refuses too.
    #[error(
        "{origin}:{line}: setting '{name}' has invalid value '{value}' (Nix takes true/yes/1 or false/no/0)"
    )]
    BadBool {
        /// Where it was set.
        origin: Origin,
        /// 1-based line number.
        line: usize,
        /// The setting's name as written.
        name: String,
        /// The value.
        value: String,
    },
}

/// The environment variables Nix consults to find its configuration,
/// passed in so that tests (and callers) never depend on the process's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfEnv {
    vars: BTreeMap<String, String>,
}

/// The variables [`ConfEnv::from_process`] takes.
pub const CONF_VARS: &[&str] = &[
    "NIX_CONF_DIR",
    "NIX_USER_CONF_FILES",
    "XDG_CONFIG_HOME",
    "XDG_CONFIG_DIRS",
    "HOME",
    "NIX_CONFIG",
];

impl ConfEnv {
    /// The variables of [`CONF_VARS`] this process has (non-Unicode values
    /// are left out, as no path Nix could use from them would be one).
    pub fn from_process() -> Self {
        Self::from_pairs(
            CONF_VARS
                .iter()
                .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v))),
        )
    }

    /// An environment of exactly these variables.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        ConfEnv {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    fn get(&self, k: &str) -> Option<&str> {
        self.vars.get(k).map(String::as_str)
    }

    /// Nix's configuration directory: `$NIX_CONF_DIR`, else `/etc/nix`
    /// (Debian's and upstream's build-time default). An empty value counts
    /// as unset.
    pub fn nix_conf_dir(&self) -> PathBuf {
        match self.get("NIX_CONF_DIR") {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => PathBuf::from("/etc/nix"),
        }
    }

    /// The user configuration files, highest precedence first (Nix's
    /// `getUserConfigFiles`; it applies them in reverse).
    pub fn user_conf_files(&self) -> Vec<PathBuf> {
        if let Some(list) = self.get("NIX_USER_CONF_FILES") {
            return list
                .split(':')
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
                .collect();
        }
        // getConfigDirs: the config home first, then XDG_CONFIG_DIRS.
        let home = match self.get("XDG_CONFIG_HOME") {
            Some(h) => Some(h.to_string()),
            None => self.get("HOME").map(|h| format!("{h}/.config")),
        };
        let dirs = self.get("XDG_CONFIG_DIRS").unwrap_or("/etc/xdg");
        home.into_iter()
            .chain(dirs.split(':').filter(|s| !s.is_empty()).map(String::from))
            .map(|d| PathBuf::from(format!("{d}/nix/nix.conf")))
            .collect()
    }
}

/// One `NAME = VALUE` line, in the order Nix applies them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The name as written (`extra-` prefix and old aliases kept).
    pub name: String,
    /// The words after `=`, joined by one space.
    pub value: String,
    /// Where it was read from.
    pub origin: Origin,
    /// 1-based line number.
    pub line: usize,
}

/// One parsed line of a configuration text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// `NAME = VALUE…`.
    Set {
        /// Name as written.
        name: String,
        /// Words after `=`, joined by one space.
        value: String,
        /// 1-based line number.
        line: usize,
    },
    /// `include PATH` or `!include PATH`.
    Include {
        /// The path as written.
        path: String,
        /// `!include`: a missing file is skipped.
        optional: bool,
        /// 1-based line number.
        line: usize,
    },
}

/// Parses one configuration text into its lines, following nothing: the
/// syntax alone (see the module docs). `origin` only names it in errors.
pub fn parse_lines(text: &[u8], origin: &Origin) -> Result<Vec<Line>, NixConfError> {
    let mut out = Vec::new();
    for (n, raw) in text.split(|&b| b == b'\n').enumerate() {
        let line = n + 1;
        // `#` cuts the line wherever it is (config.cc: line.find('#')).
        let raw = match memchr::memchr(b'#', raw) {
            Some(i) => &raw[..i],
            None => raw,
        };
        let text = std::str::from_utf8(raw).map_err(|_| NixConfError::NotUtf8 {
            origin: origin.clone(),
            line,
        })?;
        // tokenizeString's default separators: space, tab, \n, \r.
        let words: Vec<&str> = text
            .split([' ', '\t', '\r'])
            .filter(|w| !w.is_empty())
            .collect();
        if words.is_empty() {
            continue;
        }
        let illegal = || NixConfError::IllegalLine {
            origin: origin.clone(),
            line,
            text: text.trim().to_string(),
        };
        if words.len() < 2 {
            return Err(illegal());
        }
        // Nix checks for an include before it looks for `=`, so
        // `include = x` is an illegal include, not a setting.
        if words[0] == "include" || words[0] == "!include" {
            if words.len() != 2 {
                return Err(illegal());
            }
            out.push(Line::Include {
                path: words[1].to_string(),
                optional: words[0] == "!include",
                line,
            });
            continue;
        }
        if words[1] != "=" {
            return Err(illegal());
        }
        out.push(Line::Set {
            name: words[0].to_string(),
            value: words[2..].join(" "),
            line,
        });
    }
    Ok(out)
}

/// The old names Nix still takes for a setting (`aliases` of its
/// `Setting`s in libstore/globals.hh), for the settings nix-heft reads.
const ALIASES: &[(&str, &str)] = &[
    ("binary-caches", "substituters"),
    ("binary-cache-public-keys", "trusted-public-keys"),
    ("trusted-binary-caches", "trusted-substituters"),
    ("gc-keep-outputs", "keep-outputs"),
    ("gc-keep-derivations", "keep-derivations"),
];

fn canonical(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, real)| real)
}

/// How a file is looked at: the real file system, or (for the fuzz
/// target) a map in memory.
enum Fetched {
    Missing,
    /// Exists but cannot be read (a directory, no permission): Nix's
    /// `applyConfigFile` skips it silently.
    Unreadable,
    Text(Vec<u8>),
}

trait Files {
    fn fetch(&self, path: &Path) -> Result<Fetched, NixConfError>;
}

struct RealFiles;

impl Files for RealFiles {
    fn fetch(&self, path: &Path) -> Result<Fetched, NixConfError> {
        // pathExists follows symlinks (stat), as does File::open.
        if std::fs::metadata(path).is_err() {
            return Ok(Fetched::Missing);
        }
        let Ok(f) = std::fs::File::open(path) else {
            return Ok(Fetched::Unreadable);
        };
        let mut buf = Vec::new();
        match f.take(MAX_FILE_BYTES + 1).read_to_end(&mut buf) {
            Ok(_) if buf.len() as u64 > MAX_FILE_BYTES => Err(NixConfError::TooLarge {
                path: path.to_path_buf(),
            }),
            Ok(_) => Ok(Fetched::Text(buf)),
            Err(_) => Ok(Fetched::Unreadable),
        }
    }
}

/// Nix's configuration: every setting line in the order Nix applies them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NixConf {
    assignments: Vec<Assignment>,
    files: Vec<PathBuf>,
    nix_conf_dir: PathBuf,
}

/// State of one load: the include stack and the count of files read.
struct Loader<'a> {
    files: &'a dyn Files,
    conf: NixConf,
    stack: Vec<PathBuf>,
}

impl Loader<'_> {
    /// One top-level file: skipped when missing or unreadable.
    fn top_file(&mut self, path: &Path) -> Result<(), NixConfError> {
        let path = normalise(path);
        if let Fetched::Text(t) = self.files.fetch(&path)? {
            self.conf.files.push(path.clone());
            self.stack.push(path.clone());
            self.text(&t, &Origin::File(path))?;
            self.stack.pop();
        }
        Ok(())
    }

    fn text(&mut self, text: &[u8], origin: &Origin) -> Result<(), NixConfError> {
        for l in parse_lines(text, origin)? {
            match l {
                Line::Set { name, value, line } => self.conf.assignments.push(Assignment {
                    name,
                    value,
                    origin: origin.clone(),
                    line,
                }),
                Line::Include {
                    path,
                    optional,
                    line,
                } => self.include(&path, optional, origin, line)?,
            }
        }
        Ok(())
    }

    fn include(
        &mut self,
        written: &str,
        optional: bool,
        origin: &Origin,
        line: usize,
    ) -> Result<(), NixConfError> {
        let path = match origin {
            Origin::File(f) => normalise(&f.parent().unwrap_or(Path::new("/")).join(written)),
            Origin::Env | Origin::CommandLine if written.starts_with('/') => {
                normalise(Path::new(written))
            }
            Origin::Env | Origin::CommandLine => {
                return Err(NixConfError::RelativeInclude {
                    origin: origin.clone(),
                    line,
                    path: written.to_string(),
                });
            }
        };
        if self.stack.contains(&path) {
            return Err(NixConfError::IncludeLoop {
                origin: origin.clone(),
                line,
                path,
            });
        }
        if self.stack.len() > MAX_INCLUDE_DEPTH {
            return Err(NixConfError::TooDeep {
                origin: origin.clone(),
                line,
            });
        }
        if self.conf.files.len() >= MAX_FILES {
            return Err(NixConfError::TooManyFiles {
                origin: origin.clone(),
                line,
            });
        }
        match self.files.fetch(&path)? {
            Fetched::Missing if optional => Ok(()),
            Fetched::Missing => Err(NixConfError::IncludeNotFound {
                origin: origin.clone(),
                line,
                path,
            }),
            Fetched::Unreadable => Ok(()),
            Fetched::Text(t) => {
                self.conf.files.push(path.clone());
                self.stack.push(path.clone());
                self.text(&t, &Origin::File(path))?;
                self.stack.pop();
                Ok(())
            }
        }
    }
}

/// `.` and `..` removed lexically, as Nix's `absPath`/`canonPath` do
/// (symlinks are not resolved: `a/link/..` is `a`). A relative path (from
/// a relative `NIX_CONF_DIR` or `NIX_USER_CONF_FILES` entry) is left as it
/// is, to be opened from the working directory as Nix's `readFile` would.
fn normalise(p: &Path) -> PathBuf {
    if !p.is_absolute() {
        return p.to_path_buf();
    }
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(s) => out.push(s),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

impl NixConf {
    /// Reads the configuration Nix would read in the environment `env`:
    /// the system file, the user files and `NIX_CONFIG`, includes
    /// followed (see the module docs for the order and rules).
    pub fn load(env: &ConfEnv) -> Result<NixConf, NixConfError> {
        Self::load_with(env, &RealFiles)
    }

    fn load_with(env: &ConfEnv, files: &dyn Files) -> Result<NixConf, NixConfError> {
        let nix_conf_dir = env.nix_conf_dir();
        let mut l = Loader {
            files,
            conf: NixConf {
                nix_conf_dir: nix_conf_dir.clone(),
                ..NixConf::default()
            },
            stack: Vec::new(),
        };
        l.top_file(&nix_conf_dir.join("nix.conf"))?;
        // globals.cc loadConfFile: the user files in reverse, so the first
        // listed (the config home) is applied last and wins.
        for f in env.user_conf_files().iter().rev() {
            l.top_file(f)?;
        }
        if let Some(text) = env.get("NIX_CONFIG") {
            l.text(text.as_bytes(), &Origin::Env)?;
        }
        Ok(l.conf)
    }

    /// Every `NAME = VALUE` line read, in the order applied.
    pub fn assignments(&self) -> &[Assignment] {
        &self.assignments
    }

    /// This configuration with `options` (`--option NAME VALUE`, in the
    /// order given) applied after everything read, as Nix applies a
    /// command's `--option`s.
    pub fn with_options(mut self, options: &[(String, String)]) -> NixConf {
        for (name, value) in options {
            self.assignments.push(Assignment {
                name: name.clone(),
                value: value.split_ascii_whitespace().collect::<Vec<_>>().join(" "),
                origin: Origin::CommandLine,
                line: 0,
            });
        }
        self
    }

    /// Every file read, includes too, in the order read.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The last value set for `name` (or its old alias), as Nix stores it:
    /// the words joined by one space. `extra-NAME` lines are not part of
    /// it: use [`NixConf::list`] for list settings.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.last(name).map(|a| a.value.as_str())
    }

    fn last(&self, name: &str) -> Option<&Assignment> {
        let name = canonical(name);
        self.assignments
            .iter()
            .rev()
            .find(|a| canonical(&a.name) == name)
    }

    /// A list setting as Nix computes it, starting from nothing: each
    /// `NAME = …` replaces the list, each `extra-NAME = …` appends, in the
    /// order applied; values split at whitespace.
    pub fn list(&self, name: &str) -> Vec<String> {
        self.list_from(name, &[])
    }

    /// [`NixConf::list`] starting from Nix's default value `default` (what
    /// `extra-NAME` appends to when no line set the list).
    pub fn list_from(&self, name: &str, default: &[&str]) -> Vec<String> {
        let name = canonical(name);
        let mut out: Vec<String> = default.iter().map(|s| s.to_string()).collect();
        for a in &self.assignments {
            let (extra, n) = match a.name.strip_prefix("extra-") {
                Some(rest) => (true, canonical(rest)),
                None => (false, canonical(&a.name)),
            };
            if n != name {
                continue;
            }
            if !extra {
                out.clear();
            }
            out.extend(a.value.split_ascii_whitespace().map(String::from));
        }
        out
    }

    /// `substituters` (with `extra-substituters`), from Nix's default
    /// `https://cache.nixos.org/`.
    pub fn substituters(&self) -> Vec<String> {
        self.list_from("substituters", DEFAULT_SUBSTITUTERS)
    }

    /// `trusted-public-keys` (with `extra-trusted-public-keys`), from
    /// Nix's default, cache.nixos.org's key.
    pub fn trusted_public_keys(&self) -> Vec<String> {
        self.list_from("trusted-public-keys", DEFAULT_TRUSTED_PUBLIC_KEYS)
    }

    /// `require-sigs`, true unless set otherwise (Nix's default); a value
    /// other than Nix's `true/yes/1/false/no/0` is an error naming the line.
    pub fn require_sigs(&self) -> Result<bool, NixConfError> {
        self.boolean("require-sigs", true)
    }

    /// `keep-outputs` (old name `gc-keep-outputs`), false unless set: the
    /// garbage collector keeps the outputs of a live derivation.
    pub fn keep_outputs(&self) -> Result<bool, NixConfError> {
        self.boolean("keep-outputs", false)
    }

    /// `keep-derivations` (old name `gc-keep-derivations`), true unless
    /// set (Nix's default): the collector keeps the derivation a live
    /// path was built by.
    pub fn keep_derivations(&self) -> Result<bool, NixConfError> {
        self.boolean("keep-derivations", true)
    }

    /// A boolean setting as Nix 2.8 parses one (`true/yes/1`,
    /// `false/no/0`), `default` when no line sets it; any other value is an
    /// error naming the line.
    fn boolean(&self, name: &str, default: bool) -> Result<bool, NixConfError> {
        let Some(a) = self.last(name) else {
            return Ok(default);
        };
        match a.value.as_str() {
            "true" | "yes" | "1" => Ok(true),
            "false" | "no" | "0" => Ok(false),
            v => Err(NixConfError::BadBool {
                origin: a.origin.clone(),
                line: a.line,
                name: a.name.clone(),
                value: v.to_string(),
            }),
        }
    }

    /// `netrc-file`, else Nix's default `<NIX_CONF_DIR>/netrc`. `None`
    /// when set to the empty string.
    pub fn netrc_file(&self) -> Option<PathBuf> {
        match self.get("netrc-file") {
            Some("") => None,
            Some(p) => Some(PathBuf::from(p)),
            None => Some(self.nix_conf_dir.join("netrc")),
        }
    }
}

/// The fuzz target's entry point: `data` as `NIX_CONFIG` and as every file
/// under `/fuzz/` (so includes, loops and depth limits are exercised
/// without touching the disk); the typed accessors run on the result.
#[doc(hidden)]
pub fn fuzz(data: &[u8]) {
    struct Same<'a>(&'a [u8]);
    impl Files for Same<'_> {
        fn fetch(&self, path: &Path) -> Result<Fetched, NixConfError> {
            Ok(if path.starts_with("/fuzz") {
                Fetched::Text(self.0.to_vec())
            } else {
                Fetched::Missing
            })
        }
    }
    let env = ConfEnv::from_pairs([
        ("NIX_CONF_DIR", "/fuzz"),
        ("NIX_USER_CONF_FILES", "/fuzz/user/nix.conf"),
        ("NIX_CONFIG", &*String::from_utf8_lossy(data)),
    ]);
    if let Ok(c) = NixConf::load_with(&env, &Same(data)) {
        let _ = (c.substituters(), c.trusted_public_keys(), c.require_sigs());
        let _ = (c.netrc_file(), c.get("substituters"), c.list("extra-x"));
    }
}

/// nix.conf's `http-connections` (Nix's setting, which `--http-connections`
/// overrides) as the process's environment finds nix.conf, when it is set
/// to a number. A configuration that cannot be read, or another value,
/// gives none: the commands that need nix.conf say what is wrong with it.
pub fn http_connections() -> Option<usize> {
    let conf = NixConf::load(&ConfEnv::from_process()).ok()?;
    conf.get("http-connections")?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory with `files` (relative path → content) written.
    fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (p, c) in files {
            let p = d.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, c).unwrap();
        }
        d
    }

    /// An environment with only the system directory `d` and no user
    /// files.
    fn env_in(d: &Path, more: &[(&str, &str)]) -> ConfEnv {
        let mut v: Vec<(String, String)> = vec![
            ("NIX_CONF_DIR".into(), d.display().to_string()),
            ("NIX_USER_CONF_FILES".into(), String::new()),
        ];
        v.extend(more.iter().map(|(k, x)| (k.to_string(), x.to_string())));
        ConfEnv::from_pairs(v)
    }

    fn load(files: &[(&str, &str)]) -> (tempfile::TempDir, Result<NixConf, NixConfError>) {
        let d = dir_with(files);
        let r = NixConf::load(&env_in(d.path(), &[]));
        (d, r)
    }

    #[test]
    fn settings_comments_and_blank_lines() {
        let (_d, c) = load(&[(
            "nix.conf",
            "# a comment\n\n  substituters =   a\tb  # trailing\r\nsandbox = false\nempty =\n",
        )]);
        let c = c.unwrap();
        assert_eq!(c.get("substituters"), Some("a b"));
        assert_eq!(c.get("sandbox"), Some("false"));
        assert_eq!(c.get("empty"), Some(""));
        assert_eq!(c.get("absent"), None);
        assert_eq!(c.assignments()[0].line, 3);
    }

    #[test]
    fn hash_cuts_inside_a_word() {
        // Nix: `substituters = a#b c` is `a` (checked with nix show-config).
        let (_d, c) = load(&[("nix.conf", "substituters = a#b c\n")]);
        assert_eq!(c.unwrap().substituters(), ["a"]);
    }

    #[test]
    fn no_continuation_lines() {
        // A trailing backslash is a word of its own, and the next line
        // stands alone: Nix 2.8 says "illegal configuration line '  b'".
        let (_d, c) = load(&[("nix.conf", "substituters = a \\\n")]);
        assert_eq!(c.unwrap().substituters(), ["a", "\\"]);
        let (_d, e) = load(&[("nix.conf", "substituters = a \\\n  b\n")]);
        let e = e.unwrap_err();
        assert!(
            matches!(e, NixConfError::IllegalLine { line: 2, .. }),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains("nix.conf:2: illegal configuration line 'b'")
        );
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        for (text, line) in [
            ("ok = 1\nsubstituters=a\n", 2),
            ("lonely\n", 1),
            ("a b c\n", 1),
            ("include a b\n", 1),
            ("include = x\n", 1),
        ] {
            let (d, e) = load(&[("nix.conf", text)]);
            let e = e.unwrap_err();
            let want = format!("{}:{line}:", d.path().join("nix.conf").display());
            assert!(e.to_string().starts_with(&want), "{text:?}: {e}");
        }
        let (_d, e) = load(&[("nix.conf", "# \u{e9}\u{ff}\nok = 1\n")]);
        assert!(e.is_ok(), "a comment may hold any bytes");
        let d = dir_with(&[]);
        std::fs::write(d.path().join("nix.conf"), b"ok = \xff\n").unwrap();
        let e = NixConf::load(&env_in(d.path(), &[])).unwrap_err();
        assert!(matches!(e, NixConfError::NotUtf8 { line: 1, .. }), "{e}");
    }

    #[test]
    fn extra_appends_and_plain_replaces_in_order() {
        let (_d, c) = load(&[(
            "nix.conf",
            "extra-substituters = d\nsubstituters = x\nextra-substituters = y z\n",
        )]);
        let c = c.unwrap();
        assert_eq!(c.substituters(), ["x", "y", "z"]);
        assert_eq!(c.get("substituters"), Some("x"));
        // Only extra-: appended to Nix's default.
        let (_d, c) = load(&[("nix.conf", "extra-trusted-public-keys = k:1\n")]);
        let c = c.unwrap();
        assert_eq!(
            c.trusted_public_keys(),
            [DEFAULT_TRUSTED_PUBLIC_KEYS[0], "k:1"]
        );
        assert_eq!(c.list("trusted-public-keys"), ["k:1"]);
    }

    #[test]
    fn aliases_are_the_same_setting() {
        let (_d, c) = load(&[(
            "nix.conf",
            "binary-caches = x\nextra-binary-caches = y\nextra-substituters = z\n\
             binary-cache-public-keys = k:1\nextra-trusted-public-keys = k:2\n",
        )]);
        let c = c.unwrap();
        assert_eq!(c.substituters(), ["x", "y", "z"]);
        assert_eq!(c.trusted_public_keys(), ["k:1", "k:2"]);
        assert_eq!(c.get("substituters"), Some("x"));
    }

    #[test]
    fn the_collector_s_settings_with_their_old_names() {
        let (_d, c) = load(&[]);
        let c = c.unwrap();
        assert!(!c.keep_outputs().unwrap());
        assert!(c.keep_derivations().unwrap());
        let (_d, c) = load(&[("nix.conf", "gc-keep-outputs = yes\nkeep-derivations = 0\n")]);
        let c = c.unwrap();
        assert!(c.keep_outputs().unwrap());
        assert!(!c.keep_derivations().unwrap());
        let c = c.with_options(&[("keep-derivations".into(), "true".into())]);
        assert!(c.keep_derivations().unwrap());
        let (_d, c) = load(&[("nix.conf", "keep-outputs = maybe\n")]);
        let e = c.unwrap().keep_outputs().unwrap_err();
        assert!(matches!(e, NixConfError::BadBool { line: 1, .. }), "{e}");
    }

    #[test]
    fn defaults() {
        let (_d, c) = load(&[]);
        let c = c.unwrap();
        assert!(c.files().is_empty());
        assert_eq!(c.substituters(), DEFAULT_SUBSTITUTERS);
        assert_eq!(c.trusted_public_keys(), DEFAULT_TRUSTED_PUBLIC_KEYS);
        assert!(c.require_sigs().unwrap());
        let (d, c) = load(&[("nix.conf", "substituters =\n")]);
        let c = c.unwrap();
        assert!(c.substituters().is_empty());
        assert_eq!(c.netrc_file(), Some(d.path().join("netrc")));
    }

    #[test]
    fn require_sigs_and_netrc() {
        for (v, want) in [("true", true), ("yes", true), ("1", true), ("no", false)] {
            let (_d, c) = load(&[("nix.conf", &format!("require-sigs = {v}\n"))]);
            assert_eq!(c.unwrap().require_sigs().unwrap(), want, "{v}");
        }
        let (_d, c) = load(&[("nix.conf", "a = 1\nrequire-sigs = maybe\n")]);
        let e = c.unwrap().require_sigs().unwrap_err();
        assert!(
            e.to_string()
                .contains(":2: setting 'require-sigs' has invalid value 'maybe'"),
            "{e}"
        );
        let (_d, c) = load(&[("nix.conf", "netrc-file = /x/netrc\n")]);
        assert_eq!(c.unwrap().netrc_file(), Some(PathBuf::from("/x/netrc")));
        let (_d, c) = load(&[("nix.conf", "netrc-file =\n")]);
        assert_eq!(c.unwrap().netrc_file(), None);
    }

    #[test]
    fn precedence_system_then_user_files_then_nix_config() {
        // As checked with Nix 2.8: "sys d2 d1 home" then NIX_CONFIG.
        let d = dir_with(&[
            ("etc/nix.conf", "substituters = sys\nsandbox = false\n"),
            ("home/nix/nix.conf", "extra-substituters = home\n"),
            (
                "d1/nix/nix.conf",
                "extra-substituters = d1\nsandbox = true\n",
            ),
            ("d2/nix/nix.conf", "extra-substituters = d2\n"),
        ]);
        let p = |s: &str| d.path().join(s).display().to_string();
        let env = ConfEnv::from_pairs([
            ("NIX_CONF_DIR", p("etc")),
            ("XDG_CONFIG_HOME", p("home")),
            ("XDG_CONFIG_DIRS", format!("{}:{}", p("d1"), p("d2"))),
            (
                "NIX_CONFIG",
                "extra-substituters = env\nsandbox = relaxed".into(),
            ),
        ]);
        let c = NixConf::load(&env).unwrap();
        assert_eq!(c.substituters(), ["sys", "d2", "d1", "home", "env"]);
        assert_eq!(c.get("sandbox"), Some("relaxed"));
        let last = c.assignments().last().unwrap();
        assert_eq!((&last.origin, last.line), (&Origin::Env, 2));
        assert_eq!(c.files().len(), 4);

        // HOME's .config when XDG_CONFIG_HOME is unset; /etc/xdg when
        // XDG_CONFIG_DIRS is.
        let env = ConfEnv::from_pairs([("NIX_CONF_DIR", p("etc")), ("HOME", p("h"))]);
        assert_eq!(
            env.user_conf_files(),
            [
                d.path().join("h/.config/nix/nix.conf"),
                PathBuf::from("/etc/xdg/nix/nix.conf")
            ]
        );
        // NIX_USER_CONF_FILES replaces them, first listed wins.
        let env = ConfEnv::from_pairs([
            ("NIX_CONF_DIR", p("etc")),
            (
                "NIX_USER_CONF_FILES",
                format!("{}:{}", p("d1/nix/nix.conf"), p("d2/nix/nix.conf")),
            ),
        ]);
        let c = NixConf::load(&env).unwrap();
        assert_eq!(c.substituters(), ["sys", "d2", "d1"]);
        assert_eq!(c.get("sandbox"), Some("true"));
    }

    #[test]
    fn relative_user_file_is_read_from_the_working_directory() {
        let d = dir_with(&[("u.conf", "substituters = rel\n")]);
        let up = std::env::current_dir().unwrap().components().count() - 1;
        let rel = "../".repeat(up)
            + d.path()
                .join("u.conf")
                .to_str()
                .unwrap()
                .trim_start_matches('/');
        let env = ConfEnv::from_pairs([
            ("NIX_CONF_DIR", "/nonexistent/nix-heft".to_string()),
            ("NIX_USER_CONF_FILES", rel.clone()),
        ]);
        let c = NixConf::load(&env).unwrap();
        assert_eq!(c.substituters(), ["rel"]);
        assert_eq!(c.files(), [PathBuf::from(rel)]);
    }

    #[test]
    fn missing_top_level_files_are_skipped() {
        let env = ConfEnv::from_pairs([
            ("NIX_CONF_DIR", "/nonexistent/nix-heft"),
            ("XDG_CONFIG_HOME", "/nonexistent/home"),
            ("XDG_CONFIG_DIRS", "/nonexistent/xdg"),
        ]);
        let c = NixConf::load(&env).unwrap();
        assert!(c.assignments().is_empty());
        assert_eq!(
            c.netrc_file(),
            Some(PathBuf::from("/nonexistent/nix-heft/netrc"))
        );
        // A directory where a file should be is skipped too.
        let d = dir_with(&[]);
        std::fs::create_dir(d.path().join("nix.conf")).unwrap();
        assert!(NixConf::load(&env_in(d.path(), &[])).is_ok());
    }

    #[test]
    fn include_and_optional_include() {
        let (d, c) = load(&[
            ("nix.conf", "substituters = a\ninclude sub/inc.conf\n"),
            (
                "sub/inc.conf",
                "extra-substituters = inc\n!include ../missing.conf\n!include other.conf\n",
            ),
            ("sub/other.conf", "extra-substituters = other\n"),
        ]);
        let c = c.unwrap();
        assert_eq!(c.substituters(), ["a", "inc", "other"]);
        assert_eq!(
            c.files(),
            [
                d.path().join("nix.conf"),
                d.path().join("sub/inc.conf"),
                d.path().join("sub/other.conf")
            ]
        );
        // `include` of a missing file: the resolved path and the line.
        let (d, e) = load(&[
            ("nix.conf", "include sub/inc.conf\n"),
            ("sub/inc.conf", "\ninclude ../missing.conf\n"),
        ]);
        let e = e.unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}:2: included file '{}' not found",
                d.path().join("sub/inc.conf").display(),
                d.path().join("missing.conf").display()
            )
        );
        // Absolute includes work from NIX_CONFIG, relative ones do not.
        let d = dir_with(&[("abs.conf", "substituters = abs\n")]);
        let inc = format!("include {}", d.path().join("abs.conf").display());
        let c = NixConf::load(&env_in(d.path(), &[("NIX_CONFIG", &inc)])).unwrap();
        assert_eq!(c.substituters(), ["abs"]);
        let e =
            NixConf::load(&env_in(d.path(), &[("NIX_CONFIG", "include abs.conf")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "NIX_CONFIG:1: include of 'abs.conf' is not an absolute path"
        );
    }

    #[test]
    fn include_loops_and_depth_are_errors() {
        let (d, e) = load(&[
            ("nix.conf", "include a.conf\n"),
            ("a.conf", "include a.conf\n"),
        ]);
        let e = e.unwrap_err();
        assert!(matches!(e, NixConfError::IncludeLoop { .. }), "{e}");
        assert!(
            e.to_string()
                .contains(&d.path().join("a.conf").display().to_string())
        );
        let (_d, e) = load(&[
            ("nix.conf", "include a.conf\n"),
            ("a.conf", "include b.conf\n"),
            ("b.conf", "!include nix.conf\n"),
        ]);
        assert!(matches!(e.unwrap_err(), NixConfError::IncludeLoop { .. }));
        // A file included twice, not inside itself, is fine (Nix reads it
        // twice too).
        let (_d, c) = load(&[
            ("nix.conf", "include a.conf\ninclude a.conf\n"),
            ("a.conf", "extra-substituters = a\n"),
        ]);
        assert_eq!(c.unwrap().list("substituters"), ["a", "a"]);
        // A chain deeper than the limit, each file a new one.
        let mut files: Vec<(String, String)> = (0..MAX_INCLUDE_DEPTH + 2)
            .map(|i| (format!("f{i}.conf"), format!("include f{}.conf\n", i + 1)))
            .collect();
        files.push(("nix.conf".into(), "include f0.conf\n".into()));
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let (_d, e) = load(&refs);
        assert!(matches!(e.unwrap_err(), NixConfError::TooDeep { .. }));
    }

    #[test]
    fn exponential_includes_stop_at_the_file_limit() {
        // f(i) includes f(i+1) twice: 2^20 reads without a limit.
        let mut files: Vec<(String, String)> = (0..20)
            .map(|i| {
                let n = format!("f{}.conf", i + 1);
                (format!("f{i}.conf"), format!("include {n}\ninclude {n}\n"))
            })
            .collect();
        files.push(("f20.conf".into(), "a = 1\n".into()));
        files.push(("nix.conf".into(), "include f0.conf\n".into()));
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let (_d, e) = load(&refs);
        assert!(matches!(e.unwrap_err(), NixConfError::TooManyFiles { .. }));
    }

    #[test]
    fn huge_file_is_refused_unread() {
        let d = dir_with(&[]);
        let f = std::fs::File::create(d.path().join("nix.conf")).unwrap();
        f.set_len(MAX_FILE_BYTES + 1).unwrap();
        let e = NixConf::load(&env_in(d.path(), &[])).unwrap_err();
        assert!(matches!(e, NixConfError::TooLarge { .. }), "{e}");
    }

    #[test]
    fn parse_lines_alone() {
        let l = parse_lines(b"!include x\nn = a  b\n", &Origin::Env).unwrap();
        assert_eq!(
            l,
            [
                Line::Include {
                    path: "x".into(),
                    optional: true,
                    line: 1
                },
                Line::Set {
                    name: "n".into(),
                    value: "a b".into(),
                    line: 2
                }
            ]
        );
    }

    #[test]
    fn fuzz_entry_handles_self_inclusion() {
        fuzz(b"include nix.conf\n");
        fuzz(b"!include x/../y\nsubstituters = a\n");
        fuzz(b"\xff\n");
    }
}
