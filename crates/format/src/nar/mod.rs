//! NAR, the Nix ARchive format: the streaming [`reader`], the [`tree`] of
//! a store path with the exact NAR size of any tree, and [`decompress`]ion
//! of the files binary caches hold, and the [`dump`] of a tree on disk. Knows nothing of stores or scans; the
//! read stage uses it for binary caches, the planners for sizes.

mod decompress;
pub mod dump;
pub mod hash;
pub mod reader;
#[cfg(any(test, feature = "testutil"))]
#[doc(hidden)]
pub mod testsupport;
pub mod tree;

pub use decompress::decompress;
pub use reader::{MAX_NAME_LEN, MAX_PATH_LEN, NarError, NarNode, NarVisitor, walk_nar};
