//! The commits a closure's history reads: a range of a repository's
//! first-parent history, the commits since a date, or a list of commits (the
//! ones a binary cache holds: channel bumps, Hydra's evaluations), each with
//! its date and subject, oldest first; and an even sample of them.

use std::path::{Path, PathBuf};

use crate::attrs::git::git;
use crate::attrs::side::SideSpec;
use crate::attrs::{Evaluator, GitError, GitSide, eval_flags, flake_target, target};
use crate::eval_store::EvalStore;
use crate::installable::Options;
use nix_heft_format::derivation::Derivation;
use nix_heft_format::store_path::StorePath;

/// One commit as `history` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CommitInfo {
    /// The full hash.
    pub id: String,
    /// Committer date, ISO 8601 (`%cI`).
    pub date: String,
    /// Committer date, seconds since the epoch.
    #[serde(skip)]
    pub time: i64,
    /// The first line of its message.
    pub subject: String,
}

/// Which commits to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Range {
    /// `A..B`: A, then every first-parent commit of B after A.
    Revs {
        /// The first commit (the baseline row).
        from: String,
        /// The last.
        to: String,
    },
    /// The first-parent commits of `end` committed since a date (and
    /// until one), as `git log --since`.
    Since {
        /// `--since`'s date, as git reads it.
        since: String,
        /// `--until`'s.
        until: Option<String>,
        /// Where history is walked from (default HEAD).
        end: String,
    },
    /// The commits a file lists, one revision a line (`#` comments).
    File(PathBuf),
}

/// Why the commits could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// Git failed (not a checkout, a revision it does not know).
    #[error(transparent)]
    Git(#[from] GitError),
    /// The range names no commit.
    #[error("{0} names no commit")]
    Empty(String),
    /// A revision is not in the repository.
    #[error("{repo}: no commit {rev}")]
    NoSuchRevision {
        /// The repository.
        repo: PathBuf,
        /// As given.
        rev: String,
    },
    /// `A..B` where A is not an ancestor of B.
    #[error(
        "{from} is not an ancestor of {to}: --revs A..B reads B's first-parent history after A"
    )]
    NotAncestor {
        /// A.
        from: String,
        /// B.
        to: String,
    },
    /// The scratch store a flake's commits are evaluated into.
    #[error(transparent)]
    EvalStore(#[from] crate::eval_store::EvalStoreError),
    /// Some attributes are a flake's (`.#app`) and some not.
    #[error("give every attribute as a flake's (.#app) or none: each commit is read one way")]
    MixedTargets,
    /// A revision file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl HistoryError {
    /// Whether the range was named wrong (a usage error) rather than git
    /// failing.
    pub fn is_usage(&self) -> bool {
        !matches!(self, HistoryError::Git(_) | HistoryError::EvalStore(_))
    }
}

/// Git's fields of a commit, one record each: hash, date, epoch, subject.
const FORMAT: &str = "--format=%H%x1f%cI%x1f%ct%x1f%s%x1e";

fn parse_log(out: &str) -> Vec<CommitInfo> {
    out.split('\x1e')
        .filter_map(|rec| {
            let mut f = rec.trim_start_matches('\n').split('\x1f');
            let id = f.next()?.trim().to_string();
            if id.is_empty() {
                return None;
            }
            Some(CommitInfo {
                id,
                date: f.next()?.to_string(),
                time: f.next()?.parse().ok()?,
                subject: f.next().unwrap_or("").to_string(),
            })
        })
        .collect()
}

fn resolve(repo: &Path, rev: &str) -> Result<String, HistoryError> {
    crate::attrs::git::resolve(repo, rev).ok_or_else(|| HistoryError::NoSuchRevision {
        repo: repo.to_path_buf(),
        rev: rev.to_string(),
    })
}

/// The commits `range` names in `repo`, oldest first, each once.
pub fn commits(repo: &Path, range: &Range) -> Result<Vec<CommitInfo>, HistoryError> {
    // A directory that is no checkout is git's error, said as git says it.
    git(repo, &["rev-parse".as_ref(), "--git-dir".as_ref()])?;
    let out = match range {
        Range::Revs { from, to } => {
            let (a, b) = (resolve(repo, from)?, resolve(repo, to)?);
            let is_ancestor = git(
                repo,
                &[
                    "merge-base".as_ref(),
                    "--is-ancestor".as_ref(),
                    a.as_ref(),
                    b.as_ref(),
                ],
            );
            if is_ancestor.is_err() {
                return Err(HistoryError::NotAncestor {
                    from: from.clone(),
                    to: to.clone(),
                });
            }
            let first = git(
                repo,
                &["log".as_ref(), "-1".as_ref(), FORMAT.as_ref(), a.as_ref()],
            )?;
            let rest = git(
                repo,
                &[
                    "log".as_ref(),
                    "--first-parent".as_ref(),
                    "--reverse".as_ref(),
                    FORMAT.as_ref(),
                    format!("{a}..{b}").as_ref(),
                ],
            )?;
            let mut all = parse_log(&first);
            all.extend(parse_log(&rest));
            all
        }
        Range::Since { since, until, end } => {
            let end = resolve(repo, end)?;
            let mut args: Vec<String> = vec![
                "log".into(),
                "--first-parent".into(),
                "--reverse".into(),
                FORMAT.into(),
                format!("--since={since}"),
            ];
            if let Some(u) = until {
                args.push(format!("--until={u}"));
            }
            args.push(end);
            let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
            parse_log(&git(repo, &args)?)
        }
        Range::File(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| HistoryError::Read {
                path: path.clone(),
                source,
            })?;
            let mut ids: Vec<String> = Vec::new();
            for line in text.lines() {
                let rev = line.split('#').next().unwrap_or("").trim();
                if rev.is_empty() {
                    continue;
                }
                let id = resolve(repo, rev)?;
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            if ids.is_empty() {
                return Err(HistoryError::Empty(path.display().to_string()));
            }
            let mut args: Vec<&std::ffi::OsStr> = vec![
                "log".as_ref(),
                "--no-walk=unsorted".as_ref(),
                FORMAT.as_ref(),
            ];
            args.extend(ids.iter().map(|i| std::ffi::OsStr::new(i.as_str())));
            let mut all = parse_log(&git(repo, &args)?);
            // Oldest first by committer date; a file's order breaks ties.
            all.sort_by_key(|c| c.time);
            all
        }
    };
    if out.is_empty() {
        return Err(HistoryError::Empty(match range {
            Range::Revs { from, to } => format!("--revs {from}..{to}"),
            Range::Since { since, .. } => format!("--since {since}"),
            Range::File(p) => p.display().to_string(),
        }));
    }
    Ok(out)
}

/// `n` of `commits`, evenly spaced by position, the first and the last
/// always among them; all of them when there are no more than `n`.
pub fn sample(commits: Vec<CommitInfo>, n: usize) -> Vec<CommitInfo> {
    let len = commits.len();
    if n >= len {
        return commits;
    }
    if n <= 1 {
        return commits.into_iter().last().into_iter().collect();
    }
    // Position i·(len−1)/(n−1), rounded: distinct because len > n.
    let keep: Vec<usize> = (0..n)
        .map(|i| (i * (len - 1) + (n - 1) / 2) / (n - 1))
        .collect();
    commits
        .into_iter()
        .enumerate()
        .filter(|(i, _)| keep.binary_search(i).is_ok())
        .map(|(_, c)| c)
        .collect()
}

/// A link to a commit of `repo` (`{commit}` for its hash), from its
/// `origin` remote when that is on GitHub, GitLab or Codeberg.
pub fn commit_url(repo: &Path) -> Option<String> {
    let url = git(
        repo,
        &[
            "config".as_ref(),
            "--get".as_ref(),
            "remote.origin.url".as_ref(),
        ],
    )
    .ok()?;
    commit_url_of(&url)
}

fn commit_url_of(remote: &str) -> Option<String> {
    let r = remote.trim().trim_end_matches('/').trim_end_matches(".git");
    // `git@host:owner/repo` and `https://host/owner/repo`, `ssh://git@host/…`.
    let (host, path) = if let Some(rest) = r.strip_prefix("git@") {
        rest.split_once(':')?
    } else {
        let rest = r.split_once("://")?.1;
        let rest = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
        rest.split_once('/')?
    };
    match host {
        "github.com" | "codeberg.org" => Some(format!("https://{host}/{path}/commit/{{commit}}")),
        "gitlab.com" => Some(format!("https://{host}/{path}/-/commit/{{commit}}")),
        _ => None,
    }
}

/// How each commit's attributes are read: as paths of the checked-out
/// tree's expression (`app`: its `default.nix`, or `--file`), or, written
/// `.#app`, of the repository as a flake at the commit (as `nix build
/// .#app` in a checkout of it would read them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Targets {
    /// Whether the attributes are the flake's.
    pub flake: bool,
    /// The attribute paths, without `.#`, in the order given.
    pub names: Vec<String>,
}

impl Targets {
    /// Reads the attributes as given: all `.#…` or none.
    pub fn of(given: &[String]) -> Result<Targets, HistoryError> {
        let flake = given.iter().filter(|a| a.starts_with(".#")).count();
        if flake != 0 && flake != given.len() {
            return Err(HistoryError::MixedTargets);
        }
        Ok(Targets {
            flake: flake != 0,
            names: given
                .iter()
                .map(|a| a.strip_prefix(".#").unwrap_or(a).to_string())
                .collect(),
        })
    }

    /// What `commit` of `repo` is evaluated as: the flake of the
    /// repository at that commit (`git+file:///REPO?rev=C`, read from git
    /// itself: no checkout), or the tree checked out in a worktree.
    pub fn side_at(&self, repo: &Path, commit: &str) -> SideSpec {
        if self.flake {
            SideSpec::Flake(flake_at(repo, commit))
        } else {
            SideSpec::Git {
                repo: repo.to_path_buf(),
                rev: commit.to_string(),
            }
        }
    }
}

impl Targets {
    /// A flake's commits are evaluated into one scratch store (each copies
    /// the flake's source, and its inputs, into the store it is evaluated
    /// in; never the user's), made before the evaluations run at once; and
    /// the options that name it. A tree's need none.
    pub fn scratch_store(
        &self,
        evaluator: &Evaluator,
        options: &Options,
    ) -> Result<(Option<EvalStore>, Options), crate::eval_store::EvalStoreError> {
        let mut options = options.clone();
        if !self.flake || options.eval_store.is_some() {
            return Ok((None, options));
        }
        let store = EvalStore::new(&evaluator.nix_instantiate())?;
        options.eval_store = Some(store.root().to_path_buf());
        Ok((Some(store), options))
    }
}

/// Every output path of the build graph of `drv` in the chroot store
/// `root` (where [`instantiate_at`] wrote it), reading each `.drv` once
/// (kept in `parsed`); a `.drv` that cannot be read is left out.
pub fn build_graph_outputs(
    root: &Path,
    drv: &StorePath,
    parsed: &mut std::collections::HashMap<StorePath, Derivation>,
    store_dir: &str,
) -> Vec<StorePath> {
    let mut out = Vec::new();
    let mut seen: std::collections::BTreeSet<StorePath> = std::collections::BTreeSet::new();
    let mut stack = vec![drv.clone()];
    while let Some(d) = stack.pop() {
        if !seen.insert(d.clone()) {
            continue;
        }
        if !parsed.contains_key(&d) {
            let file = root.join(d.as_str().trim_start_matches('/'));
            match Derivation::read(store_dir, &file) {
                Ok(x) => {
                    parsed.insert(d.clone(), x);
                }
                Err(_) => continue,
            }
        }
        let Some(x) = parsed.get(&d) else { continue };
        out.extend(x.outputs.iter().filter_map(|o| o.path.clone()));
        stack.extend(x.input_drvs.iter().map(|(p, _)| p.clone()));
    }
    out
}

/// The flake reference of `repo` at `commit`.
fn flake_at(repo: &Path, commit: &str) -> String {
    let abs = std::fs::canonicalize(repo)
        .or_else(|_| std::path::absolute(repo))
        .unwrap_or_else(|_| repo.to_path_buf());
    format!("git+file://{}?rev={commit}", abs.display())
}

/// Instantiates `attr` of `commit` (its tree checked out in a temporary
/// worktree, or, with `flake`, the repository's flake at the commit) into
/// the chroot store at `eval_store` (`nix-instantiate --eval-store
/// local?root=DIR`): its `.drv` and every `.drv` it depends on are written
/// there, never into the user's store. Returns the `.drv`'s path, or Nix's
/// message when it does not evaluate.
///
/// A fresh chroot store must be made by one process alone (concurrent
/// first uses race for its directories); later instantiations may run at
/// once.
#[allow(clippy::too_many_arguments)]
pub fn instantiate_at(
    repo: &Path,
    commit: &str,
    flake: bool,
    attr: &str,
    evaluator: &Evaluator,
    opts: &Options,
    eval_store: &Path,
) -> Result<Result<StorePath, String>, GitError> {
    // A flake is read from git itself; a tree needs a checkout.
    let (side, expr) = if flake {
        (None, flake_target(&flake_at(repo, commit)))
    } else {
        let side = GitSide::checkout(repo, commit)?;
        let expr = target(side.path(), opts);
        (Some(side), expr)
    };
    let mut opts = if flake {
        crate::attrs::flake_options(opts)
    } else {
        opts.clone()
    };
    opts.eval_store = Some(eval_store.to_path_buf());
    let out = std::process::Command::new(evaluator.nix_instantiate())
        .arg("--eval-store")
        .arg(crate::eval_store::url(eval_store))
        .arg("-E")
        .arg(expr)
        .args(["-A", attr])
        .args(eval_flags(&opts, false))
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(GitError::Spawn)?;
    drop(side);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Ok(Err(stderr.trim().to_string()));
    }
    let line = stdout.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    Ok(StorePath::parse(&opts.store_dir, line.trim())
        .map_err(|e| format!("nix-instantiate printed {line:?}: {e}")))
}

/// Builds `attr` at `commit` in the user's own store with the user's
/// settings, as they would build it by hand: `nix-build` of the tree
/// checked out in a temporary worktree, or `nix build` of the repository's
/// flake at the commit (`targets.flake`). Only `bisect --build` asks for
/// this: the one write nix-heft makes, and only when told. A derivation's
/// build makes all its outputs. No result link is left. Returns Nix's
/// last lines when the build fails.
pub fn build_at(
    repo: &Path,
    commit: &str,
    targets: &Targets,
    attr: &str,
    opts: &Options,
) -> Result<Result<(), String>, GitError> {
    // The user's store, never the scratch one evaluations write into.
    let mut opts = opts.clone();
    opts.eval_store = None;
    let (side, mut cmd) = if targets.flake {
        let mut cmd = std::process::Command::new("nix");
        cmd.args([
            "--extra-experimental-features",
            "nix-command flakes",
            "build",
        ])
        .args(["--no-link", "--no-write-lock-file"])
        .arg(format!("{}#{attr}", flake_at(repo, commit)));
        (None, cmd)
    } else {
        let side = GitSide::checkout(repo, commit)?;
        let mut cmd = std::process::Command::new("nix-build");
        cmd.arg("--no-out-link")
            .arg("-E")
            .arg(target(side.path(), &opts))
            .args(["-A", attr]);
        (Some(side), cmd)
    };
    // `--impure` is the new CLI's; `nix-build` is impure already.
    let out = cmd
        .args(eval_flags(&opts, targets.flake))
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(GitError::Spawn)?;
    drop(side);
    if out.status.success() {
        return Ok(Ok(()));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.trim_end().lines().collect();
    Ok(Err(lines[lines.len().saturating_sub(5)..].join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(i: usize) -> CommitInfo {
        CommitInfo {
            id: format!("{i:040}"),
            date: String::new(),
            time: i as i64,
            subject: String::new(),
        }
    }

    #[test]
    fn a_sample_is_evenly_spaced_with_both_ends() {
        let all: Vec<CommitInfo> = (0..200).map(c).collect();
        let s: Vec<i64> = sample(all.clone(), 20).iter().map(|c| c.time).collect();
        assert_eq!(s.len(), 20);
        assert_eq!((s[0], s[19]), (0, 199));
        let gaps: Vec<i64> = s.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|&g| g == 10 || g == 11), "{gaps:?}");
        assert_eq!(sample(all.clone(), 500).len(), 200);
        assert_eq!(
            sample(all.clone(), 2)
                .iter()
                .map(|c| c.time)
                .collect::<Vec<_>>(),
            [0, 199]
        );
        assert_eq!(
            sample(all, 1).iter().map(|c| c.time).collect::<Vec<_>>(),
            [199]
        );
    }

    #[test]
    fn commit_links_follow_the_forge() {
        for (remote, want) in [
            (
                "https://github.com/NixOS/nixpkgs.git",
                Some("https://github.com/NixOS/nixpkgs/commit/{commit}"),
            ),
            (
                "git@github.com:NixOS/nixpkgs.git",
                Some("https://github.com/NixOS/nixpkgs/commit/{commit}"),
            ),
            (
                "ssh://git@gitlab.com/a/b",
                Some("https://gitlab.com/a/b/-/commit/{commit}"),
            ),
            (
                "https://codeberg.org/a/b/",
                Some("https://codeberg.org/a/b/commit/{commit}"),
            ),
            ("/srv/git/pkgs", None),
            ("https://example.org/a/b", None),
        ] {
            assert_eq!(commit_url_of(remote).as_deref(), want, "{remote}");
        }
    }

    #[test]
    fn git_log_records_are_read_with_any_subject() {
        let out = "aaa\x1f2025-01-01T00:00:00+00:00\x1f1735689600\x1fpkgs: init\x1e\n\
                   bbb\x1f2025-01-01T01:00:00+00:00\x1f1735693200\x1fa: 1 -> 2; b|c\x1e\n";
        let got = parse_log(out);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].id, "bbb");
        assert_eq!(got[1].subject, "a: 1 -> 2; b|c");
        assert_eq!(got[1].time, 1735693200);
    }
}
