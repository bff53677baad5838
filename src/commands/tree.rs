//! Not a command: `--dir`, `--as`, `--candidates` and `--to`, which let
//! `refs`, `why` and `size` read a tree that is not a valid store path (an
//! output being built, a `--keep-failed` tree, an unpacked NAR), and the
//! same for a ROOT that names an unregistered path under the store
//! directory (issue 33).

use std::path::PathBuf;

use clap::Args;

use nix_heft_format::StorePath;
use nix_heft_scan::unregistered::{Opened, TreeRequest, open_tree};

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

impl TreeArgs {
    /// The flags as the library's request (store paths parsed here, so
    /// that a bad one is said in the flag's words).
    fn request(&self, store_dir: &str) -> anyhow::Result<TreeRequest> {
        let parse = |flag: &str, p: &str| {
            StorePath::parse(store_dir, p)
                .map_err(|e| nix_heft_types::Error::Usage(format!("{flag} {p}: {e}")))
        };
        Ok(TreeRequest {
            dir: self.dir.clone(),
            as_path: self
                .as_path
                .as_deref()
                .map(|p| parse("--as", p))
                .transpose()?,
            candidates_file: self.candidates.clone(),
            to: self
                .to
                .iter()
                .map(|t| parse("--to", t))
                .collect::<Result<_, _>>()?,
        })
    }
}

/// Opens the run's store and, with `--dir` (or when `root` names a path
/// under the store directory that exists but is not valid), the tree
/// over it. Without a database (inside a build), the store is left out
/// when candidates are given: they are read from disk.
pub fn open(ctx: &Context, args: &TreeArgs, root: Option<&str>) -> anyhow::Result<Opened> {
    let store_dir = ctx.installables.store_dir.clone();
    let req = args.request(&store_dir)?;
    let base = match ctx.open() {
        Ok(b) => Some(b),
        Err(e) if req.names_candidates() => {
            ctx.note(&format!(
                "no store to read ({e}); the candidates are read from disk"
            ));
            None
        }
        Err(e) => return Err(e.into()),
    };
    if base.is_none() && req.dir.is_none() {
        return Err(nix_heft_types::Error::Usage(
            "no store could be opened: give --dir PATH to read a tree with the candidates".into(),
        )
        .into());
    }
    Ok(open_tree(base, &store_dir, &req, root)?)
}

/// The error of a tree command left with nothing to read (`open` fails
/// before that happens).
pub fn no_source() -> anyhow::Error {
    nix_heft_types::Error::Usage("no store could be opened, and no tree given".into()).into()
}
