//! Git revisions as evaluation sides: a revision checked out in a
//! temporary worktree ([`GitSide`]), and what a directory's checkout is
//! at ([`describe_dir`]), for a report's heading.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::AttrsError;

/// A git revision of a local checkout, checked out as a detached worktree
/// in a temporary directory outside the user's tree (`git worktree add
/// --detach`, hooks off), and removed when dropped. The user's working
/// tree and index are never touched; only git's list of worktrees holds
/// it while it lives.
#[derive(Debug)]
pub struct GitSide {
    repo: PathBuf,
    commit: String,
    dir: PathBuf,
    // Kept for its drop: removes whatever `git worktree remove` left.
    _tmp: tempfile::TempDir,
}

/// Why a git side could not be made.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// `git` could not be started.
    #[error("cannot run git: {0}")]
    Spawn(std::io::Error),
    /// `git` failed.
    #[error("git {what} failed: {stderr}")]
    Failed {
        /// What was asked.
        what: String,
        /// Its standard error, trimmed.
        stderr: String,
    },
    /// A temporary directory could not be made.
    #[error("cannot make a temporary directory: {0}")]
    Temp(std::io::Error),
}

impl From<GitError> for AttrsError {
    fn from(e: GitError) -> AttrsError {
        match e {
            GitError::Spawn(source) => AttrsError::Spawn {
                program: "git".into(),
                source,
            },
            GitError::Failed { what, stderr } => AttrsError::Failed {
                program: format!("git {what}"),
                stderr,
            },
            GitError::Temp(e) => AttrsError::Temp(e),
        }
    }
}

/// `git -C repo ARGS`, hooks off, its trimmed standard output.
fn git(repo: &Path, args: &[&std::ffi::OsStr]) -> Result<String, GitError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "core.hooksPath=/dev/null"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(GitError::Spawn)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(GitError::Failed {
            what: args
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Whether `dir` is inside a git work tree.
pub(super) fn is_checkout(dir: &Path) -> bool {
    git(
        dir,
        &["rev-parse".as_ref(), "--is-inside-work-tree".as_ref()],
    )
    .is_ok_and(|s| s == "true")
}

/// The commit `rev` names in `repo` (anything `git rev-parse` takes), in
/// full; `None` when there is none.
pub(super) fn resolve(repo: &Path, rev: &str) -> Option<String> {
    git(
        repo,
        &[
            "rev-parse".as_ref(),
            "--verify".as_ref(),
            "--quiet".as_ref(),
            "--end-of-options".as_ref(),
            format!("{rev}^{{commit}}").as_ref(),
        ],
    )
    .ok()
    .filter(|c| !c.is_empty())
}

/// The commit a directory's checkout has checked out, and whether the
/// directory's tracked files have uncommitted changes (untracked files,
/// such as a CI job's own, are not part of what was evaluated from git's
/// view); `(None, false)` outside a checkout.
pub(super) fn describe_dir(dir: &Path) -> (Option<String>, bool) {
    if !is_checkout(dir) {
        return (None, false);
    }
    let commit = resolve(dir, "HEAD");
    let dirty = git(
        dir,
        &[
            "status".as_ref(),
            "--porcelain".as_ref(),
            "--untracked-files=no".as_ref(),
            "--".as_ref(),
            ".".as_ref(),
        ],
    )
    .is_ok_and(|s| !s.is_empty());
    (commit, dirty)
}

impl GitSide {
    /// Checks out `rev` (anything `git rev-parse` takes) of the repository
    /// at `repo`.
    pub fn checkout(repo: &Path, rev: &str) -> Result<GitSide, GitError> {
        let commit = git(
            repo,
            &[
                "rev-parse".as_ref(),
                "--verify".as_ref(),
                "--end-of-options".as_ref(),
                format!("{rev}^{{commit}}").as_ref(),
            ],
        )?;
        let tmp = tempfile::Builder::new()
            .prefix("nix-heft-side-")
            .tempdir()
            .map_err(GitError::Temp)?;
        let dir = tmp.path().join("tree");
        git(
            repo,
            &[
                "worktree".as_ref(),
                "add".as_ref(),
                "--detach".as_ref(),
                "--quiet".as_ref(),
                dir.as_os_str(),
                commit.as_ref(),
            ],
        )?;
        Ok(GitSide {
            repo: repo.to_path_buf(),
            commit,
            dir,
            _tmp: tmp,
        })
    }

    /// The checked-out tree.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The commit checked out, in full.
    pub fn commit(&self) -> &str {
        &self.commit
    }
}

impl Drop for GitSide {
    fn drop(&mut self) {
        // A failure here leaves a stale worktree entry that `git worktree
        // prune` clears once the directory is gone (the temporary directory
        // is removed right after); nothing to report from a drop.
        let _ = git(
            &self.repo,
            &[
                "worktree".as_ref(),
                "remove".as_ref(),
                "--force".as_ref(),
                self.dir.as_os_str(),
            ],
        );
    }
}
