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
pub(crate) fn git(repo: &Path, args: &[&std::ffi::OsStr]) -> Result<String, GitError> {
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

/// Held while git adds or removes a worktree of one repository. `git
/// worktree add` reads every entry under `.git/worktrees/` while another
/// `add` may be writing one ("failed to read .git/worktrees/…/commondir"),
/// so two nix-heft runs on one checkout at once (CI jobs, two terminals)
/// fail at random; they take turns instead. The lock is the operating
/// system's advisory lock on the repository's common git directory itself,
/// opened read-only: every run on the repository sees it whatever its
/// TMPDIR (a lock file in the temporary directory did not, and was left
/// behind), nothing is written, and a killed process releases it.
struct WorktreeLock(Option<std::fs::File>);

impl WorktreeLock {
    fn take(repo: &Path) -> WorktreeLock {
        let common = git(
            repo,
            &[
                "rev-parse".as_ref(),
                "--path-format=absolute".as_ref(),
                "--git-common-dir".as_ref(),
            ],
        )
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo.to_path_buf());
        // When the directory cannot be opened the runs go unserialised, as
        // before: the lock only prevents a race, it guards no data.
        let dir = std::fs::File::open(&common)
            .ok()
            .filter(|f| f.lock().is_ok());
        WorktreeLock(dir)
    }
}

impl Drop for WorktreeLock {
    fn drop(&mut self) {
        if let Some(f) = &self.0 {
            let _ = f.unlock();
        }
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
pub(crate) fn resolve(repo: &Path, rev: &str) -> Option<String> {
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
        // Git names the worktree's entry under `.git/worktrees/` after the
        // directory's last component: a name unique to this checkout, so
        // that two runs on one repository at once (CI jobs, a reviewer's
        // two terminals) never race for the same entry, as a fixed name
        // did ("could not create directory of '.git/worktrees/tree'").
        let dir = tmp
            .path()
            .join(tmp.path().file_name().unwrap_or("tree".as_ref()));
        let _lock = WorktreeLock::take(repo);
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
        let _lock = WorktreeLock::take(&self.repo);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git is needed by the tests");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    /// Two checkouts of one repository at once, many times over: each gets
    /// its own worktree entry (a fixed directory name raced in git's
    /// `.git/worktrees/`), and each entry is gone once dropped.
    #[test]
    fn concurrent_checkouts_of_one_repository_do_not_collide() {
        let repo = tempfile::tempdir().unwrap();
        let r = repo.path();
        run(r, &["init", "--quiet"]);
        std::fs::write(r.join("default.nix"), "{ }\n").unwrap();
        run(r, &["add", "."]);
        run(
            r,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "--quiet",
                "-m",
                "one",
            ],
        );
        for _ in 0..20 {
            let sides: Vec<_> = std::thread::scope(|s| {
                let h: Vec<_> = (0..8)
                    .map(|_| s.spawn(|| GitSide::checkout(r, "HEAD")))
                    .collect();
                h.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for side in &sides {
                let side = side.as_ref().expect("a concurrent checkout failed");
                assert!(side.path().join("default.nix").is_file());
            }
            drop(sides);
        }
        let entries = r.join(".git/worktrees");
        let left = std::fs::read_dir(&entries).map_or(0, |d| d.count());
        assert_eq!(left, 0, "worktree entries left in {}", entries.display());
    }
}
