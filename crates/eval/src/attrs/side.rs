//! A side of a comparison as the command line names it (`--before`,
//! `--after`): a directory, a Nix file, a flake reference or a git
//! revision; evaluated into an [`Evaluation`], with the commit it is at
//! and the command that builds one of its attributes.

use std::path::{Path, PathBuf};

use super::git::{self, GitSide};
use super::{AttrsError, Evaluation, Evaluator};
use crate::installable::{AutoArg, Options};
use nix_heft_format::quote;

/// How a side was named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SideSpec {
    /// A directory: its `default.nix`, or `--file` inside it.
    Dir(PathBuf),
    /// A Nix file.
    File(PathBuf),
    /// A flake reference (`path:…`, `github:…`): its `legacyPackages`,
    /// else `packages`, of this system.
    Flake(String),
    /// A revision of the git checkout `repo`.
    Git {
        /// The checkout.
        repo: PathBuf,
        /// The revision, as given.
        rev: String,
    },
}

impl SideSpec {
    /// What `given` names: an existing directory or file, else a flake
    /// reference when it has a `:`, else a revision of `repo` (default the
    /// current directory).
    pub fn of(given: &str, repo: Option<&Path>) -> SideSpec {
        let p = Path::new(given);
        if p.is_dir() {
            SideSpec::Dir(p.to_path_buf())
        } else if p.is_file() {
            SideSpec::File(p.to_path_buf())
        } else if given.contains(':') {
            SideSpec::Flake(given.to_string())
        } else {
            SideSpec::Git {
                repo: repo.map_or_else(|| PathBuf::from("."), Path::to_path_buf),
                rev: given.to_string(),
            }
        }
    }
}

impl SideSpec {
    /// Checks what can be checked before evaluating: a revision's
    /// checkout and the revision itself.
    pub fn check(&self) -> Result<(), SideError> {
        if let SideSpec::Git { repo, rev } = self {
            if !git::is_checkout(repo) {
                return Err(SideError::NotACheckout {
                    repo: repo.clone(),
                    rev: rev.clone(),
                });
            }
            if git::resolve(repo, rev).is_none() {
                return Err(SideError::NoSuchRevision {
                    repo: repo.clone(),
                    rev: rev.clone(),
                });
            }
        }
        Ok(())
    }
}

/// Why a side could not be evaluated.
#[derive(Debug, thiserror::Error)]
pub enum SideError {
    /// A revision was named, but the directory is no git checkout.
    #[error("{} is not a git checkout (and '{rev}' is no directory, file or flake reference)", repo.display())]
    NotACheckout {
        /// The directory.
        repo: PathBuf,
        /// The revision named.
        rev: String,
    },
    /// The checkout has no such revision.
    #[error("no such revision in {}", repo.display())]
    NoSuchRevision {
        /// The checkout.
        repo: PathBuf,
        /// The revision named.
        rev: String,
    },
    /// Evaluating the side failed as a whole.
    #[error(transparent)]
    Attrs(#[from] AttrsError),
}

impl SideError {
    /// Whether the side was named wrong (a usage error) rather than
    /// failing to evaluate.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            SideError::NotACheckout { .. } | SideError::NoSuchRevision { .. }
        )
    }
}

/// A side evaluated.
#[derive(Debug, Clone)]
pub struct EvaluatedSide {
    /// What each attribute evaluated to.
    pub eval: Evaluation,
    /// The commit the side is at: a revision's, or the one a directory's
    /// checkout has checked out.
    pub commit: Option<String>,
    /// A directory side whose checkout has uncommitted changes.
    pub dirty: bool,
    /// How to build one of its attributes.
    pub build: BuildHow,
}

/// Evaluates `spec` with `evaluator`: `attrs` (dotted paths), or every
/// attribute `nix-env -qa` would list. A revision is checked out in a
/// temporary worktree, removed before this returns.
pub fn evaluate_side(
    spec: &SideSpec,
    evaluator: &Evaluator,
    attrs: Option<&[String]>,
    opts: &Options,
) -> Result<EvaluatedSide, SideError> {
    Ok(match spec {
        SideSpec::Dir(d) => {
            let (commit, dirty) = git::describe_dir(d);
            EvaluatedSide {
                eval: super::evaluate(evaluator, d, attrs, opts)?,
                commit,
                dirty,
                build: BuildHow::Dir(absolute(d)),
            }
        }
        SideSpec::File(f) => {
            // The file as `--file` names it, absolute, so the directory
            // given is moot.
            let abs = absolute(f);
            let mut file_opts = opts.clone();
            file_opts.file = Some(abs.display().to_string());
            // A file names itself: the commit of a checkout around it
            // says nothing of what it holds.
            EvaluatedSide {
                eval: super::evaluate(evaluator, Path::new("/"), attrs, &file_opts)?,
                commit: None,
                dirty: false,
                build: BuildHow::File(abs),
            }
        }
        SideSpec::Git { repo, rev } => {
            if !git::is_checkout(repo) {
                return Err(SideError::NotACheckout {
                    repo: repo.clone(),
                    rev: rev.clone(),
                });
            }
            let Some(commit) = git::resolve(repo, rev) else {
                return Err(SideError::NoSuchRevision {
                    repo: repo.clone(),
                    rev: rev.clone(),
                });
            };
            let side = GitSide::checkout(repo, &commit).map_err(AttrsError::from)?;
            EvaluatedSide {
                eval: super::evaluate(evaluator, side.path(), attrs, opts)?,
                commit: Some(commit.clone()),
                dirty: false,
                build: BuildHow::Git {
                    repo: std::fs::canonicalize(repo).unwrap_or_else(|_| absolute(repo)),
                    commit,
                },
            }
        }
        SideSpec::Flake(r) => EvaluatedSide {
            eval: super::evaluate_flake(evaluator, r, attrs, opts)?,
            commit: None,
            dirty: false,
            build: BuildHow::Flake(r.clone()),
        },
    })
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// What the command that builds a missing attribute starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildHow {
    /// `nix-build DIR -A attr`.
    Dir(PathBuf),
    /// `nix-build FILE -A attr`.
    File(PathBuf),
    /// `nix-build -E 'import (builtins.fetchGit {…})' -A attr`: the
    /// commit, from the checkout.
    Git {
        /// The checkout, absolute.
        repo: PathBuf,
        /// The commit, in full.
        commit: String,
    },
    /// `nix build REF#attr`.
    Flake(String),
    /// A nixpkgs-review directory: nixpkgs-review built it.
    Review,
}

impl BuildHow {
    /// The command that builds `attr`, with the `-I`, `--arg` and
    /// `--argstr` of `opts`. Paths under `cwd` are written relative to it
    /// (`.`, `./pkgs`), so the command reads the same in any checkout of
    /// the repository (a CI runner's or yours), run from its root.
    pub fn command(&self, attr: &str, opts: &Options, cwd: &Path) -> String {
        let mut extra = String::new();
        for i in &opts.include {
            extra.push_str(&format!(" -I {}", quote::shell(i)));
        }
        for (n, v) in &opts.auto_args {
            match v {
                AutoArg::Expr(e) => {
                    extra.push_str(&format!(" --arg {} {}", quote::shell(n), quote::shell(e)))
                }
                AutoArg::Str(s) => extra.push_str(&format!(
                    " --argstr {} {}",
                    quote::shell(n),
                    quote::shell(s)
                )),
            }
        }
        let attr_word = quote::shell(attr);
        match self {
            BuildHow::Dir(d) => {
                let target = match &opts.file {
                    Some(f) => d.join(f),
                    None => d.clone(),
                };
                format!(
                    "nix-build {}{extra} -A {attr_word}",
                    quote::shell(&relative_word(&target, cwd))
                )
            }
            BuildHow::File(f) => format!(
                "nix-build {}{extra} -A {attr_word}",
                quote::shell(&relative_word(f, cwd))
            ),
            BuildHow::Git { repo, commit } => {
                let url = nix_path_or_string(repo, cwd);
                let src = format!("builtins.fetchGit {{ url = {url}; rev = \"{commit}\"; }}");
                let src = match &opts.file {
                    Some(f) => format!(
                        "({src}) + \"/{}\"",
                        f.trim_start_matches("./").replace(['"', '\\', '$'], "")
                    ),
                    None => src,
                };
                format!(
                    "nix-build -E {}{extra} -A {attr_word}",
                    quote::shell(&format!("import ({src})"))
                )
            }
            BuildHow::Flake(r) => format!("nix build {}", quote::shell(&format!("{r}#{attr}"))),
            BuildHow::Review => format!("nixpkgs-review (rebuild it there): {attr}"),
        }
    }
}

/// `p` relative to `cwd` when it is inside it (`.`, `./sub`), else as it
/// is.
fn relative_word(p: &Path, cwd: &Path) -> String {
    match p.strip_prefix(cwd) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => format!("./{}", rel.display()),
        Err(_) => p.display().to_string(),
    }
}

/// `p` as a Nix expression: a path literal relative to `cwd` (`./.`,
/// `./pkgs`) when it is inside it and the literal can spell it, else a
/// string of the absolute path.
fn nix_path_or_string(p: &Path, cwd: &Path) -> String {
    if let Ok(rel) = p.strip_prefix(cwd) {
        let rel = rel.display().to_string();
        let literal = |s: &str| {
            s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-+/".contains(&b))
        };
        if rel.is_empty() {
            return "./.".to_string();
        }
        if literal(&rel) {
            return format!("./{rel}");
        }
    }
    quote::nix_string(&p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_commands_are_relative_to_the_checkout() {
        let opts = Options::default();
        let cwd = Path::new("/home/runner/work/r/r");
        let git = BuildHow::Git {
            repo: cwd.to_path_buf(),
            commit: "ab".repeat(20),
        };
        assert_eq!(
            git.command("app", &opts, cwd),
            format!(
                "nix-build -E 'import (builtins.fetchGit {{ url = ./.; rev = \"{}\"; }})' -A app",
                "ab".repeat(20)
            )
        );
        assert_eq!(
            git.command("app", &opts, Path::new("/elsewhere")),
            format!(
                "nix-build -E 'import (builtins.fetchGit {{ url = \"/home/runner/work/r/r\"; rev = \"{}\"; }})' -A app",
                "ab".repeat(20)
            )
        );
        let dir = BuildHow::Dir(cwd.join("pkgs"));
        assert_eq!(dir.command("a.b", &opts, cwd), "nix-build ./pkgs -A a.b");
        assert_eq!(
            BuildHow::Dir(cwd.to_path_buf()).command("x", &opts, cwd),
            "nix-build . -A x"
        );
        let opts = Options {
            auto_args: vec![(
                "config".into(),
                AutoArg::Expr("{ allowUnfree = true; }".into()),
            )],
            ..Options::default()
        };
        assert_eq!(
            BuildHow::File(PathBuf::from("/x/y.nix")).command("it's", &opts, cwd),
            "nix-build /x/y.nix --arg config '{ allowUnfree = true; }' -A 'it'\\''s'"
        );
    }
}
