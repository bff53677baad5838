//! A scratch chroot store that evaluations write into instead of the
//! user's store.
//!
//! Some evaluations write even when Nix is told not to. On the Nix versions
//! users run (checked on 2.8), evaluating a flake copies its source (and
//! each input's) into the store whatever `--readonly-mode` or `--read-only`
//! say, and instantiating writes `.drv` files. nix-heft never writes to the
//! user's store, so these evaluations get a store of their own: a chroot
//! store (`local?root=DIR`, store directory still `/nix/store`, so every
//! path is the one the user's store would have) in a temporary directory,
//! removed when the [`EvalStore`] is dropped.
//!
//! The cost: Nix's fetcher cache keeps a source only while its path is
//! valid in the store evaluated into (`lookupExpired` checks
//! `isValidPath`), so a flake's remote inputs are fetched again by each run
//! that evaluates them (one fetch per run, shared by all its evaluations).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A temporary chroot store, made and initialised by [`EvalStore::new`].
#[derive(Debug)]
pub struct EvalStore {
    dir: Option<tempfile::TempDir>,
}

/// Why the scratch store could not be made.
#[derive(Debug, thiserror::Error)]
pub enum EvalStoreError {
    /// The temporary directory.
    #[error("cannot make a scratch store for evaluation in {}: {source}", std::env::temp_dir().display())]
    Temp {
        /// Why.
        source: std::io::Error,
    },
    /// Nix did not initialise it.
    #[error("{program} could not initialise the scratch store {url}: {detail}")]
    Init {
        /// The program run.
        program: String,
        /// The store.
        url: String,
        /// Its message, or why it did not run.
        detail: String,
    },
}

impl EvalStore {
    /// A new scratch store, initialised by one `nix-instantiate` alone:
    /// processes that open a fresh chroot store at once race to make its
    /// directories ("creating symlink … File exists"); once made, many may
    /// use it together.
    pub fn new(nix_instantiate: &OsStr) -> Result<EvalStore, EvalStoreError> {
        let store = EvalStore::empty()?;
        let url = url(store.root());
        let init = |detail: String| EvalStoreError::Init {
            program: nix_instantiate.to_string_lossy().into_owned(),
            url: url.clone(),
            detail,
        };
        let out = Command::new(nix_instantiate)
            .args(["--option", "store", &url, "--eval", "--expr", "null"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| init(e.to_string()))?;
        if !out.status.success() {
            return Err(init(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        Ok(store)
    }

    /// A new scratch store that Nix makes on its first use: for
    /// evaluations that run one at a time.
    pub fn empty() -> Result<EvalStore, EvalStoreError> {
        let dir = tempfile::Builder::new()
            .prefix("nix-heft-eval-store-")
            .tempdir()
            .map_err(|source| EvalStoreError::Temp { source })?;
        Ok(EvalStore { dir: Some(dir) })
    }

    /// The directory the store is rooted at.
    pub fn root(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new("/"), |d| d.path())
    }
}

impl Drop for EvalStore {
    fn drop(&mut self) {
        // Nix makes what it adds read-only (directories 0555): an owner who
        // is not root could not remove them, so write access comes first.
        if let Some(dir) = self.dir.take() {
            let path: PathBuf = dir.path().to_path_buf();
            make_writable(&path);
            let _ = dir.close();
        }
    }
}

fn make_writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let mut perm = meta.permissions();
    perm.set_mode(perm.mode() | 0o700);
    let _ = std::fs::set_permissions(dir, perm);
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            make_writable(&e.path());
        }
    }
}

/// The store URL of a chroot store rooted at `root`, as Nix spells it.
pub fn url(root: &Path) -> String {
    format!("local?root={}", root.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_only_tree_is_removed() {
        use std::os::unix::fs::PermissionsExt;
        let store = EvalStore {
            dir: Some(tempfile::tempdir().unwrap()),
        };
        let root = store.root().to_path_buf();
        let path = root.join("nix/store/x-source/sub");
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join("f"), "x").unwrap();
        for d in [&path, &root.join("nix/store/x-source")] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        drop(store);
        assert!(!root.exists());
    }

    #[test]
    fn urls_are_nix_chroot_stores() {
        assert_eq!(url(Path::new("/tmp/s")), "local?root=/tmp/s");
    }
}
