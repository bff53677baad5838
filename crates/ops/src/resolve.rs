//! ROOT and DEP arguments as `nix` users write them → store paths: the
//! one way every caller (the command line, and what comes after it)
//! resolves them. Installables (`nixpkgs#hello`, `-f FILE ATTR`, `--expr`,
//! `DRV^out`) are evaluated by the user's `nix` ([`nix_heft_eval::installable`]),
//! never built, each output required valid in the store read; store paths,
//! `./result` links, names and globs go to [`crate::roots`]. In the build
//! graph an installable means its `.drv` and an output path its deriver,
//! as `nix path-info --derivation` maps it.
//!
//! What a person should see meanwhile (an evaluation that takes seconds, an
//! output read as its deriver) is told to a [`Watch`]; this module prints
//! nothing.

use crate::error::Error;
use nix_heft_eval::installable::{self, Evaluated, Installable, InstallableError, Options};
use nix_heft_format::StorePath;
use nix_heft_graph::{Graph, NodeId};
use nix_heft_store::source::StoreSource;

/// An output path read as the derivation that built it (with the build
/// graph), as `nix path-info --derivation` maps it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Mapped {
    /// The argument as given (`./result`, a store path, a name).
    pub arg: String,
    /// The output path it names.
    pub output: String,
    /// The derivation read in its place.
    pub deriver: String,
}

/// Told what resolving does that a person should see.
pub trait Watch: Sync {
    /// `nix` starts evaluating `arg` (seconds, for a flake).
    fn evaluating(&self, _arg: &str) {}
    /// That evaluation is over.
    fn evaluated(&self) {}
    /// An output was read as its deriver (once per output and argument is
    /// the watcher's to keep).
    fn mapped(&self, _m: &Mapped) {}
}

/// A watcher that is told nothing.
impl Watch for () {}

/// Why arguments could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// From the store, or an argument that names nothing (or too much).
    #[error(transparent)]
    Store(#[from] Error),
    /// `nix` could not evaluate an installable (or is not there).
    #[error(transparent)]
    Installable(#[from] InstallableError),
}

impl From<nix_heft_store::Error> for ResolveError {
    fn from(e: nix_heft_store::Error) -> Self {
        ResolveError::Store(e.into())
    }
}

/// The results of this module.
pub type Result<T, E = ResolveError> = std::result::Result<T, E>;

/// Resolving arguments against one store.
pub struct Resolve<'a> {
    /// The store the paths must be valid in.
    pub src: &'a dyn StoreSource,
    /// How installables are evaluated (file, expression, Nix's flags).
    pub options: &'a Options,
    /// The build graph: an installable means its `.drv`, an output path
    /// its deriver.
    pub derivation: bool,
    /// Told of evaluations and of outputs read as derivers.
    pub watch: &'a dyn Watch,
}

impl Resolve<'_> {
    /// The installable options for arguments read against `src`: its
    /// store directory; with the build graph, `nix` instantiates (writes
    /// the `.drv` files, never builds).
    fn installable_options(&self) -> Options {
        let mut o = self.options.clone();
        o.store_dir = self.src.store_dir().to_string();
        o.instantiate = self.derivation;
        o
    }

    /// Each argument evaluated when it is an installable (`None` for the
    /// store paths, links and names [`crate::roots`] resolves).
    fn evaluate(&self, args: &[String]) -> Result<Vec<Option<Evaluated>>> {
        let mut opts = self.installable_options();
        if args.iter().any(|a| Installable::parse(a, &opts).is_some()) {
            // Where a chroot store's files are, when not at its store
            // directory.
            opts.real_store_dir = nix_heft_store::source::files_dir(self.src)
                .filter(|d| d.as_os_str() != self.src.store_dir());
        }
        if opts.file.is_some() && opts.expr.is_some() {
            return Err(InstallableError::FileAndExpr.into());
        }
        args.iter()
            .map(|a| {
                let Some(i) = Installable::parse(a, &opts) else {
                    return Ok(None);
                };
                // In the build graph a `.drv` is itself: nothing to read
                // or evaluate (its validity is checked by the caller). A
                // link to it (`nix-instantiate --add-root`) is followed.
                if let (true, Installable::Derivation { drv, .. }) = (self.derivation, &i) {
                    return Ok(Some(Evaluated {
                        arg: a.clone(),
                        drv_path: crate::roots::resolve_path_arg(&opts.store_dir, drv)?,
                        outputs: Vec::new(),
                    }));
                }
                let slow = !matches!(i, Installable::Derivation { .. });
                if slow {
                    self.watch.evaluating(a);
                }
                let e = installable::evaluate(std::slice::from_ref(&i), &opts);
                if slow {
                    self.watch.evaluated();
                }
                Ok(e?.pop())
            })
            .collect()
    }

    /// ROOT arguments → store paths: installables evaluated, each output
    /// required valid in the store (nothing is built); the rest by
    /// [`crate::roots::resolve_roots`]. Duplicates kept once, in order.
    pub fn roots(&self, args: &[String]) -> Result<Vec<StorePath>> {
        let src = self.src;
        let evaluated = self.evaluate(args)?;
        if !self.derivation && evaluated.iter().all(Option::is_none) {
            return Ok(crate::roots::resolve_roots(src, args)?);
        }
        let mut out: Vec<StorePath> = Vec::new();
        for (arg, e) in args.iter().zip(evaluated) {
            let found = match e {
                Some(e) if self.derivation => {
                    if !src.is_valid(&e.drv_path)? {
                        return Err(nix_heft_store::Error::NoDerivation {
                            path: e.drv_path.to_string(),
                            store: src.describe(),
                        }
                        .into());
                    }
                    vec![e.drv_path]
                }
                Some(e) => {
                    for (name, p) in &e.outputs {
                        if !src.is_valid(p)? {
                            return Err(Error::MissingOutput {
                                installable: e.arg.clone(),
                                output: name.clone(),
                                path: p.to_string(),
                                store: src.describe(),
                            }
                            .into());
                        }
                    }
                    e.outputs.into_iter().map(|(_, p)| p).collect()
                }
                None if self.derivation => self.derivation_roots(arg)?,
                None => crate::roots::resolve_roots(src, std::slice::from_ref(arg))?,
            };
            for p in found {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        Ok(out)
    }

    /// A ROOT that is no installable, in the build graph: a `.drv` is
    /// itself; an output path (a store path, a `./result` link, a name
    /// matching outputs) is its deriver, as `nix path-info --derivation`
    /// maps it, or an error when that is unknown or not here. Never the
    /// output itself: its references are the run-time graph's.
    fn derivation_roots(&self, arg: &str) -> Result<Vec<StorePath>> {
        let src = self.src;
        let dir = src.store_dir();
        let found = if crate::roots::looks_like_path(dir, arg) {
            let p = crate::roots::resolve_path_arg(dir, arg)?;
            if p.name().ends_with(".drv") {
                // Checked valid as any ROOT path is.
                return Ok(crate::roots::resolve_roots(src, &[arg.to_string()])?);
            }
            // An output need not be in the `.drv` store (a binary cache's
            // narinfo may name its deriver): no validity check here.
            vec![p]
        } else {
            crate::roots::resolve_roots(src, &[arg.to_string()])?
        };
        found.into_iter().map(|p| self.deriver_of(arg, p)).collect()
    }

    /// `p` itself when it is a `.drv`, else the derivation that built it
    /// (valid in the store), told to the watcher.
    fn deriver_of(&self, arg: &str, p: StorePath) -> Result<StorePath> {
        let src = self.src;
        if p.name().ends_with(".drv") {
            return Ok(p);
        }
        let Some(d) = src.deriver(&p)? else {
            return Err(Error::from(nix_heft_scan::Error::NoDeriver {
                path: p.to_string(),
            })
            .into());
        };
        if !src.is_valid(&d)? {
            return Err(Error::DeriverNotHere {
                path: p.to_string(),
                deriver: d.to_string(),
                store: src.describe(),
            }
            .into());
        }
        self.watch.mapped(&Mapped {
            arg: arg.to_string(),
            output: p.to_string(),
            deriver: d.to_string(),
        });
        Ok(d)
    }

    /// Whether `arg` is an installable (evaluated by `nix`) rather than a
    /// store path, link or name.
    pub fn is_installable(&self, arg: &str) -> bool {
        Installable::parse(arg, &self.installable_options()).is_some()
    }

    /// One ROOT argument that must name one path (an installable with one
    /// output selected, or a store path, link or name matching one path).
    pub fn one_root(&self, arg: &str) -> Result<StorePath> {
        let mut p = self.roots(&[arg.to_string()])?;
        if p.len() != 1 {
            let hint = if self.is_installable(arg) {
                " (select one output with ^NAME)"
            } else {
                ""
            };
            return Err(Error::NotOne {
                arg: arg.to_string(),
                count: p.len(),
                hint,
            }
            .into());
        }
        Ok(p.remove(0))
    }

    /// A DEP argument within a loaded closure: an installable's selected
    /// outputs that are in it (at least one must be), or a path, name or
    /// glob as [`crate::roots::resolve_in_closure`] takes it.
    pub fn in_closure(&self, g: &Graph, arg: &str) -> Result<Vec<NodeId>> {
        let src = self.src;
        let Some(e) = self.evaluate(&[arg.to_string()])?.pop().flatten() else {
            let dir = src.store_dir();
            // In the build graph an output path is its deriver, unless it
            // is a node itself (a source).
            if self.derivation && crate::roots::looks_like_path(dir, arg) {
                let p = crate::roots::resolve_path_arg(dir, arg)?;
                if !p.name().ends_with(".drv") && !g.index().contains_key(&p) {
                    let d = self.deriver_of(arg, p)?;
                    return Ok(crate::roots::resolve_in_closure(g, dir, d.as_str())?);
                }
            }
            return Ok(crate::roots::resolve_in_closure(g, dir, arg)?);
        };
        let index = g.index();
        let ids: Vec<NodeId> = if self.derivation {
            index.get(&e.drv_path).copied().into_iter().collect()
        } else {
            e.outputs
                .iter()
                .filter_map(|(_, p)| index.get(p).copied())
                .collect()
        };
        if ids.is_empty() {
            let paths: Vec<String> = if self.derivation {
                vec![e.drv_path.to_string()]
            } else {
                e.outputs.iter().map(|(_, p)| p.to_string()).collect()
            };
            return Err(Error::NotInClosure {
                arg: arg.to_string(),
                paths: paths.join(", "),
                root: g.path(g.roots()[0]).to_string(),
            }
            .into());
        }
        Ok(ids)
    }
}
