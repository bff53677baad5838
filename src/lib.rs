//! nix-heft: why a Nix closure is heavy, and how to cut it.
//!
//! The library follows the data's path, one way: [`source`] reads store
//! metadata (local or chroot store, binary cache, path-info JSON), [`roots`]
//! turns arguments into store paths, [`graph`] holds the closure, computes
//! closure and added sizes and says which edges a question needs, [`read`]
//! reads each needed store path once (file tree and raw holds), [`classify`]
//! turns holds into [`evidence`] with verdicts, [`explain`] finds the
//! chains that hold a dependency, [`plan`] simulates splits, partitions and
//! advice from those alone, [`diff`] compares two closures, [`check`] is the
//! CI gate (`check`'s rules) over their results, and [`report`] renders
//! results (computing nothing) as tables or the serde structs behind
//! `--json`. [`pipeline`] runs the stages after the graph in order for
//! every caller. [`evidence`], [`problem`] and [`store_path`] (with Nix's
//! naming rules) are leaves every stage shares; [`nixbase32`] is Nix's
//! base-32, [`nar`] and [`elf`] are the file formats. The `nix-heft` binary
//! is a thin CLI over these.
//!
//! ```no_run
//! let src = nix_heft::source::open(None)?;
//! let roots = nix_heft::roots::resolve_roots(src.as_ref(), &["./result".into()])?;
//! let g = nix_heft::graph::Graph::load(src.as_ref(), &roots)?;
//! let sizes = nix_heft::graph::Sizes::compute(&g);
//! let report = nix_heft::report::size::SizeReport::new(&g, &sizes, Default::default());
//! use nix_heft::report::Report;
//! print!("{}", report.render_text(&Default::default()));
//! # Ok::<(), nix_heft::Error>(())
//! ```

#![warn(missing_docs)]

pub mod browse;
pub mod check;
pub mod classify;
pub mod derivation;
pub mod diff;
pub mod elf;
pub mod error;
pub mod evidence;
pub mod explain;
#[doc(hidden)]
pub mod fuzzing;
pub mod graph;
pub mod installable;
pub mod local_cache;
pub mod nar;
pub mod nix_conf;
pub mod nixbase32;
pub mod pipeline;
pub mod plan;
pub mod problem;
pub mod read;
pub mod relpath;
pub mod report;
pub mod roots;
pub mod source;
pub mod store_path;
#[cfg(test)]
pub(crate) mod testutil;
pub mod trace;
pub mod units;

pub use error::{Error, Result};
pub use store_path::StorePath;
