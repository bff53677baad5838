//! The build-time graph as a store source: nodes are derivations (`.drv`
//! files) and sources, edges a derivation's `inputDrvs` and `inputSrcs`, as
//! `nix-store -qR DRV` walks them. The `.drv` files are read from a store
//! that has them on disk (the local store or a chroot store); a binary
//! cache normally has none.
//!
//! A derivation's size is the NAR size of its outputs where they are
//! known (valid in the `.drv` store or in the size store given, such as a
//! binary cache), which is what "how much does building X pull in" asks.
//! A derivation with an output known nowhere is counted with the outputs
//! that are known (zero when none) and listed by [`DerivationSource::unknown`],
//! never guessed. A source (an `inputSrcs` path, or anything else that is
//! not a `.drv`) is the store's own path: its NAR size and references.
//!
//! File contents ([`PathContents`]) and the log are the `.drv` store's, so
//! the read stage scans a `.drv` file like any file and finds each input's
//! path in its ATerm text (`("/nix/store/…-x.drv",["out"])`): the evidence
//! of a build-graph edge names the input and the outputs used.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::source::{Nar, PathContents, PathInfo, PathMetadata, RawClosure, RunLog, StoreSource};
use nix_heft_format::derivation::Derivation;
use nix_heft_format::nar::tree::FileTree;
use nix_heft_format::store_path::StorePath;

/// One output of a derivation in the graph, and its size where known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputSize {
    /// The output's name.
    pub name: String,
    /// Its path (none for a content-addressed output not yet built).
    pub path: Option<StorePath>,
    /// Its NAR size, where the output is valid in a store asked.
    pub nar_size: Option<u64>,
}

impl OutputSize {
    /// `name path`, or `name` for an output whose path is not known yet:
    /// how reports list an output of unknown size.
    pub fn label(&self) -> String {
        match &self.path {
            Some(p) => format!("{} {p}", self.name),
            None => self.name.clone(),
        }
    }
}

/// The build graph over the `.drv` files of `drvs`; see the module docs.
pub struct DerivationSource {
    drvs: Box<dyn StoreSource>,
    sizes: Option<Box<dyn StoreSource>>,
    /// Every derivation read so far: its outputs and their sizes.
    outputs: Mutex<BTreeMap<StorePath, Vec<OutputSize>>>,
    /// With [`DerivationSource::keeping_parsed`]: every derivation read,
    /// whole, for a comparison of two build graphs.
    parsed: Option<Mutex<HashMap<StorePath, Derivation>>>,
}

impl DerivationSource {
    /// The graph of the `.drv` files in `drvs`, with outputs' sizes from
    /// `drvs` and then `sizes` (a binary cache, say).
    pub fn new(drvs: Box<dyn StoreSource>, sizes: Option<Box<dyn StoreSource>>) -> Self {
        DerivationSource {
            drvs,
            sizes,
            outputs: Mutex::new(BTreeMap::new()),
            parsed: None,
        }
    }

    /// Keeps every derivation it reads, whole, for
    /// [`DerivationSource::parsed`] (`diff --derivation` compares them
    /// without reading each `.drv` file twice). Costs the memory of the
    /// `.drv` files read.
    pub fn keeping_parsed(mut self) -> Self {
        self.parsed = Some(Mutex::new(HashMap::new()));
        self
    }

    /// The derivations read so far, with [`DerivationSource::keeping_parsed`]
    /// (empty without).
    pub fn parsed(&self) -> HashMap<StorePath, Derivation> {
        self.parsed
            .as_ref()
            .and_then(|m| m.lock().ok().map(|m| m.clone()))
            .unwrap_or_default()
    }

    /// The outputs of every derivation read, with their sizes where known.
    pub fn outputs(&self) -> BTreeMap<StorePath, Vec<OutputSize>> {
        self.outputs.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// The derivations read that have an output of unknown size (not
    /// valid in any store asked), in path order, with those outputs'
    /// labels ([`OutputSize::label`]), as reports list them.
    pub fn unknown(&self) -> Vec<(StorePath, Vec<String>)> {
        self.outputs()
            .into_iter()
            .filter_map(|(d, outs)| {
                let missing: Vec<String> = outs
                    .iter()
                    .filter(|o| o.nar_size.is_none())
                    .map(OutputSize::label)
                    .collect();
                (!missing.is_empty()).then_some((d, missing))
            })
            .collect()
    }

    /// The NAR size of each of `outs` where known: from the `.drv` store,
    /// then from the size store for the rest; one lookup of each store for
    /// all of them.
    fn output_sizes(&self, outs: &[StorePath]) -> Result<Vec<Option<u64>>> {
        if outs.is_empty() {
            return Ok(Vec::new());
        }
        let mut sizes: Vec<Option<u64>> = self
            .drvs
            .path_infos(outs)?
            .into_iter()
            .map(|i| i.map(|i| i.nar_size))
            .collect();
        if let Some(s) = &self.sizes {
            let missing: Vec<usize> = (0..outs.len()).filter(|&i| sizes[i].is_none()).collect();
            if !missing.is_empty() {
                let paths: Vec<StorePath> = missing.iter().map(|&i| outs[i].clone()).collect();
                for (i, info) in missing.into_iter().zip(s.path_infos(&paths)?) {
                    sizes[i] = info.map(|i| i.nar_size);
                }
            }
        }
        Ok(sizes)
    }

    /// A valid derivation's `.drv` file, parsed.
    fn parse(&self, path: &StorePath) -> Result<Derivation> {
        let Some(file) = self.drvs.real_path(path) else {
            return Err(Error::NoDerivation {
                path: path.to_string(),
                store: self.drvs.describe(),
            });
        };
        Derivation::read(self.drvs.store_dir(), &file).map_err(|e| Error::BadDerivation {
            path: path.to_string(),
            reason: e.to_string(),
        })
    }

    /// The infos of `paths`, in order. Many at once, because each lookup
    /// in the local store costs most per call (a snapshot of the database
    /// checked or a transaction): the sources' infos in one lookup, the
    /// derivations' validity in one, the valid ones' files parsed in
    /// parallel, their outputs' sizes in one more.
    fn infos(&self, paths: &[StorePath]) -> Result<Vec<Option<PathInfo>>> {
        use rayon::prelude::*;
        let is_drv = |p: &StorePath| p.name().ends_with(".drv");
        let (drvs, srcs): (Vec<usize>, Vec<usize>) =
            (0..paths.len()).partition(|&i| is_drv(&paths[i]));
        let pick =
            |at: &[usize]| -> Vec<StorePath> { at.iter().map(|&i| paths[i].clone()).collect() };
        let mut out: Vec<Option<PathInfo>> = vec![None; paths.len()];
        if !srcs.is_empty() {
            for (&i, info) in srcs.iter().zip(self.drvs.path_infos(&pick(&srcs))?) {
                out[i] = info;
            }
        }
        if drvs.is_empty() {
            return Ok(out);
        }
        // A derivation's references are its file's, not the database's:
        // only its validity is looked up.
        let valid = self.drvs.are_valid(&pick(&drvs))?;
        let drv_at: Vec<usize> = drvs
            .iter()
            .zip(valid)
            .filter_map(|(&i, v)| v.then_some(i))
            .collect();
        let parsed: Vec<Derivation> = drv_at
            .par_iter()
            .map(|&i| self.parse(&paths[i]))
            .collect::<Result<_>>()?;
        let outputs: Vec<StorePath> = parsed
            .iter()
            .flat_map(|d| d.outputs.iter().filter_map(|o| o.path.clone()))
            .collect();
        // In the order of `outputs`: each output with a path takes the next.
        let mut sizes = self.output_sizes(&outputs)?.into_iter();
        if let Some(keep) = &self.parsed
            && let Ok(mut m) = keep.lock()
        {
            m.extend(
                drv_at
                    .iter()
                    .zip(&parsed)
                    .map(|(&i, d)| (paths[i].clone(), d.clone())),
            );
        }
        let mut recorded = Vec::with_capacity(drv_at.len());
        for (&i, d) in drv_at.iter().zip(parsed) {
            let mut outs = Vec::with_capacity(d.outputs.len());
            let mut nar_size = 0u64;
            for o in d.outputs {
                let size = match o.path {
                    Some(_) => sizes.next().flatten(),
                    None => None,
                };
                nar_size = nar_size.saturating_add(size.unwrap_or(0));
                outs.push(OutputSize {
                    name: o.name,
                    path: o.path,
                    nar_size: size,
                });
            }
            let mut references: Vec<StorePath> = d.input_drvs.into_iter().map(|(p, _)| p).collect();
            references.extend(d.input_srcs);
            out[i] = Some(PathInfo {
                path: paths[i].clone(),
                nar_size,
                references,
            });
            recorded.push((paths[i].clone(), outs));
        }
        if let Ok(mut m) = self.outputs.lock() {
            m.extend(recorded);
        }
        Ok(out)
    }
}

impl PathMetadata for DerivationSource {
    fn store_dir(&self) -> &str {
        self.drvs.store_dir()
    }

    fn describe(&self) -> String {
        // The store the `.drv` files come from, as errors name it.
        self.drvs.describe()
    }

    fn path_info(&self, path: &StorePath) -> Result<Option<PathInfo>> {
        Ok(self.infos(std::slice::from_ref(path))?.pop().flatten())
    }

    fn path_infos(&self, paths: &[StorePath]) -> Result<Vec<Option<PathInfo>>> {
        self.infos(paths)
    }

    fn closure(&self, roots: &[StorePath]) -> Result<RawClosure> {
        // A level of the graph per batch: a few lookups per level rather
        // than two per derivation.
        crate::source::closure::closure_by_batches(roots, &self.describe(), |ps| self.infos(ps))
    }

    fn is_valid(&self, path: &StorePath) -> Result<bool> {
        self.drvs.is_valid(path)
    }

    fn registration_time(&self, path: &StorePath) -> Result<Option<i64>> {
        self.drvs.registration_time(path)
    }

    /// The deriver of an output as the `.drv` store records it, else as
    /// the size store (a binary cache's narinfo) does.
    fn deriver(&self, path: &StorePath) -> Result<Option<StorePath>> {
        if let Some(d) = self.drvs.deriver(path)? {
            return Ok(Some(d));
        }
        match &self.sizes {
            Some(s) => s.deriver(path),
            None => Ok(None),
        }
    }

    fn all_paths(&self) -> Result<Vec<StorePath>> {
        self.drvs.all_paths()
    }
}

impl PathContents for DerivationSource {
    fn real_path(&self, path: &StorePath) -> Option<PathBuf> {
        self.drvs.real_path(path)
    }

    fn nar(&self, path: &StorePath, check_file: bool) -> Result<Option<Nar>> {
        self.drvs.nar(path, check_file)
    }

    fn listing(&self, path: &StorePath) -> Result<Option<FileTree>> {
        self.drvs.listing(path)
    }

    fn expected_nar_hash(&self, path: &StorePath) -> Option<String> {
        self.drvs.expected_nar_hash(path)
    }
}

impl StoreSource for DerivationSource {
    fn log(&self) -> &RunLog {
        self.drvs.log()
    }
}
