//! What-if planning: simulated output splits, partitions and advice, computed from the files of existing store paths without rebuilding.

pub mod advise;
pub mod partition;
pub mod split;
pub mod tree;
pub mod whatif;
