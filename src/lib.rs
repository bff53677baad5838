//! nix-heft: why a Nix closure is heavy, and how to cut it.
//!
//! The library follows the data's path, one way: [`source`] reads store
//! metadata (local or chroot store, binary cache, path-info JSON), [`roots`]
//! turns arguments into store paths, [`graph`] holds the closure, computes
//! closure and added sizes and says which edges a question needs, [`read`]
//! reads each needed store path once (file tree and raw holds), [`classify`]
//! turns holds into [`evidence`] with verdicts, [`plan`] simulates splits,
//! partitions and advice from those alone, and [`report`] renders results
//! as tables or the serde structs behind `--json`. [`evidence`] and
//! [`problem`] are leaves every stage shares; [`nar`] and [`elf`] are the
//! file formats. The `nix-heft` binary is a thin CLI over these.
//!
//! ```no_run
//! let src = nix_heft::source::open(None)?;
//! let roots = nix_heft::roots::resolve_roots(src.as_ref(), &["./result".into()])?;
//! let g = nix_heft::graph::Graph::load(src.as_ref(), &roots)?;
//! let report = nix_heft::report::size::SizeReport::compute(&g, Default::default());
//! use nix_heft::report::Report;
//! print!("{}", report.render_text(&Default::default()));
//! # Ok::<(), nix_heft::Error>(())
//! ```

#![warn(missing_docs)]

pub mod browse;
pub mod classify;
pub mod elf;
pub mod error;
pub mod evidence;
#[doc(hidden)]
pub mod fuzzing;
pub mod graph;
pub mod nar;
pub mod nix_conf;
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
