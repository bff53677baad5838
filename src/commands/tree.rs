//! Not a command: `--dir`, `--as`, `--candidates` and `--to`, which let
//! `refs`, `why` and `size` read a tree that is not a valid store path (an
//! output being built, a `--keep-failed` tree, an unpacked NAR), and the
//! same for a ROOT that names an unregistered path under the store
//! directory (issue 33).

use std::path::PathBuf;

use clap::Args;

use nix_heft_core::unregistered::{Scanned, Tree, placeholder_path};
use nix_heft_format::StorePath;
use nix_heft_store::source::StoreSource;
use nix_heft_types::Error;

use super::Context;

/// The tree options.
#[derive(Args, Debug, Clone, Default)]
pub struct TreeArgs {
    /// Read this directory or file as a store path that is not (yet)
    /// valid: an output being built, a --keep-failed tree, an unpacked
    /// NAR. Its references are the candidates whose hash it holds, as Nix
    /// finds them; it is the ROOT.
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::AnyPath)]
    pub dir: Option<PathBuf>,
    /// The store path the tree is meant to have, so that its
    /// self-references are found (default: the tree's own path when it is
    /// under the store directory, else a placeholder named after it).
    #[arg(long = "as", value_name = "STORE-PATH", requires = "dir")]
    pub as_path: Option<String>,
    /// The candidate references, one store path per line (default: every
    /// valid path of the store). A candidate the store does not hold is
    /// read from disk where it is, as inside a build.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub candidates: Option<PathBuf>,
    /// A candidate reference; repeatable, with or instead of --candidates.
    #[arg(long, value_name = "STORE-PATH")]
    pub to: Vec<String>,
}

/// The stores a tree command reads: the run's store (none inside a build,
/// where there is no database), and the tree over it.
pub struct Opened {
    /// The run's store, when it could be opened.
    pub base: Option<Box<dyn StoreSource>>,
    /// The unregistered trees' paths, when there is one.
    pub tree: Option<(StorePath, PathBuf)>,
    candidates: Vec<StorePath>,
}

impl TreeArgs {
    fn given_candidates(&self, store_dir: &str) -> anyhow::Result<Vec<StorePath>> {
        let mut out = Vec::new();
        if let Some(f) = &self.candidates {
            let text = std::fs::read_to_string(f).map_err(|source| Error::Io {
                path: f.clone(),
                source,
            })?;
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                out.push(
                    StorePath::parse(store_dir, line)
                        .map_err(|e| Error::Usage(format!("{}:{}: {e}", f.display(), n + 1)))?,
                );
            }
        }
        for t in &self.to {
            out.push(
                StorePath::parse(store_dir, t)
                    .map_err(|e| Error::Usage(format!("--to {t}: {e}")))?,
            );
        }
        Ok(out)
    }
}

/// Opens the run's store and, with `--dir` (or when `root` names a path
/// under the store directory that exists but is not valid), the tree
/// over it. Without a database (inside a build), the store is left out
/// when candidates are given: they are read from disk.
pub fn open(ctx: &Context, args: &TreeArgs, root: Option<&str>) -> anyhow::Result<Opened> {
    let store_dir = ctx.installables.store_dir.clone();
    let base = match ctx.open() {
        Ok(b) => Some(b),
        Err(e) if args.candidates.is_some() || !args.to.is_empty() => {
            eprintln!("nix-heft: note: no store to read ({e}); the candidates are read from disk");
            None
        }
        Err(e) => return Err(e.into()),
    };
    let dir = match (&args.dir, root) {
        (Some(d), _) => Some(d.clone()),
        (None, Some(r)) => unregistered_root(base.as_deref(), &store_dir, r)?,
        (None, None) => None,
    };
    let Some(dir) = dir else {
        if base.is_none() {
            return Err(Error::Usage(
                "no store could be opened: give --dir PATH to read a tree with the candidates"
                    .into(),
            )
            .into());
        }
        return Ok(Opened {
            base,
            tree: None,
            candidates: Vec::new(),
        });
    };
    if std::fs::symlink_metadata(&dir).is_err() {
        return Err(Error::Usage(format!(
            "--dir {}: no such file or directory",
            dir.display()
        ))
        .into());
    }
    let path = match &args.as_path {
        Some(p) => {
            StorePath::parse(&store_dir, p).map_err(|e| Error::Usage(format!("--as {p}: {e}")))?
        }
        None => {
            let abs = std::path::absolute(&dir).unwrap_or(dir.clone());
            StorePath::parse(&store_dir, &abs.to_string_lossy())
                .unwrap_or_else(|_| placeholder_path(&store_dir, &dir))
        }
    };
    let mut candidates = args.given_candidates(&store_dir)?;
    if candidates.is_empty() {
        candidates = match &base {
            Some(b) => b.all_paths()?,
            None => {
                return Err(Error::Usage(
                    "no store to take the candidates from: give --candidates FILE or --to PATH"
                        .into(),
                )
                .into());
            }
        };
    }
    Ok(Opened {
        base,
        tree: Some((path, dir)),
        candidates,
    })
}

/// A ROOT that names a path under the store directory which exists on
/// disk but is not valid (a failed build's output): read as a tree.
fn unregistered_root(
    base: Option<&dyn StoreSource>,
    store_dir: &str,
    root: &str,
) -> anyhow::Result<Option<PathBuf>> {
    let Ok(p) = StorePath::parse(store_dir, root) else {
        return Ok(None);
    };
    let Some(base) = base else {
        return Ok(None);
    };
    if base.is_valid(&p)? {
        return Ok(None);
    }
    let on_disk = nix_heft_store::source::files_dir(base)
        .map(|d| d.join(p.base_name()))
        .unwrap_or_else(|| PathBuf::from(p.as_str()));
    Ok(std::fs::symlink_metadata(&on_disk)
        .is_ok()
        .then_some(on_disk))
}

impl Opened {
    /// Runs `f` with the source to read: the tree over the store, or the
    /// store alone.
    pub fn with_source<T>(&self, f: impl FnOnce(&dyn StoreSource) -> T) -> T {
        match (&self.tree, &self.base) {
            (Some((path, dir)), base) => {
                let store_dir = base
                    .as_deref()
                    .map_or(nix_heft_store::source::DEFAULT_STORE_DIR, |b| b.store_dir());
                let s = Scanned::new(
                    base.as_deref(),
                    store_dir,
                    vec![Tree {
                        path: path.clone(),
                        dir: dir.clone(),
                    }],
                    self.candidates.clone(),
                );
                f(&s)
            }
            (None, Some(b)) => f(b.as_ref()),
            (None, None) => unreachable!("without a store, open() asks for a tree or fails"),
        }
    }

    /// The tree's store path, the ROOT the command reads.
    pub fn root(&self) -> Option<String> {
        self.tree.as_ref().map(|(p, _)| p.to_string())
    }
}
