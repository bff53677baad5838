//! The map step of one partition: each of its store paths read once with
//! the nix-heft library (`pipeline::classified`: read, then classify), reduced
//! to rows of `paths`, `edges`, `evidence` and `problems`, and encoded as
//! Parquet files for [`crate::output`] to write.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, ListBuilder, RecordBatch, StringBuilder, UInt32Builder, UInt64Builder,
};
use datafusion::arrow::error::ArrowError;
use datafusion::parquet::arrow::ArrowWriter;
use nix_heft_analysis::explain::summarise;
use nix_heft_format::StorePath;
use nix_heft_format::nar::tree::TreeNode;
use nix_heft_format::store_path::split_name;
use nix_heft_graph::{Graph, NodeId, ReadRequest, request};
use nix_heft_store::source::{RawClosure, StoreSource};
use nix_heft_types::evidence::Kind;
use nix_heft_types::problem::{Problem, ProblemKind};

use crate::schema;

/// The rows of one partition, one batch per table.
#[derive(Debug)]
pub struct PartitionFacts {
    /// Batches in the order of [`schema::TABLES`].
    pub batches: [RecordBatch; 4],
    /// Bytes of file contents read (what the progress bar counts).
    pub nar_bytes: u64,
}

impl PartitionFacts {
    /// Rows of table `i` (in [`schema::TABLES`] order).
    pub fn rows(&self, i: usize) -> u64 {
        self.batches[i].num_rows() as u64
    }
}

/// Reads and classifies `paths` (one partition) from `src`.
///
/// The graph given to the read stage is the partition's paths and their
/// direct references, built from the source's own path infos, so that a
/// process holding nothing but the store (a remote executor) computes the
/// same rows as the coordinator. The read stage looks at nothing beyond a
/// path's direct references (the trees of RUNPATH targets), and no size of
/// a reference is used, so references outside the partition enter with
/// NAR size 0: sizes come from the coordinator's graph step.
pub fn survey_partition(
    src: &dyn StoreSource,
    paths: &[StorePath],
    partition: u32,
    progress: &(dyn Fn(u64) + Sync),
) -> datafusion::common::Result<PartitionFacts> {
    // The store's errors and core's, as DataFusion carries them.
    let ext = |e: nix_heft_ops::Error| datafusion::common::DataFusionError::External(Box::new(e));
    let mut problems: Vec<Problem> = Vec::new();
    let mut raw = RawClosure::default();
    let mut index: std::collections::HashMap<StorePath, u32> = Default::default();
    let mut refs: Vec<(u32, Vec<StorePath>)> = Vec::new();
    for p in paths {
        match src.path_info(p).map_err(|e| ext(e.into()))? {
            Some(info) => {
                let id = raw.push(p.clone(), info.nar_size);
                index.insert(p.clone(), id);
                refs.push((id, info.references));
            }
            None => problems.push(Problem::new(
                p.as_str(),
                ProblemKind::Vanished,
                format!("is no longer in {}", src.describe()),
            )),
        }
    }
    let own = raw.len();
    for (id, rs) in refs {
        for r in rs {
            let to = match index.get(&r) {
                Some(&to) => to,
                None => {
                    let to = raw.push(r.clone(), 0);
                    index.insert(r, to);
                    to
                }
            };
            raw.add_reference(id, to);
        }
    }
    let g = Graph::try_from_raw(raw, own).map_err(|e| ext(e.into()))?;
    // Every path of the partition is read: scanned for its references, or
    // for its tree alone when it has none (its file count).
    let wants: ReadRequest = (0..own as NodeId)
        .map(|v| (v, request::references_of(&g, v)))
        .collect();
    let nar_bytes = AtomicU64::new(0);
    let c = nix_heft_ops::pipeline::classified(src, &g, &wants, None, &|n: u64| {
        nar_bytes.fetch_add(n, Ordering::Relaxed);
        progress(n);
    });
    problems.extend(c.problems.iter().cloned());

    let mut p = PathsBuilder::default();
    let mut e = EdgesBuilder::default();
    let mut ev = EvidenceBuilder::default();
    for v in 0..own as NodeId {
        let sp = g.path(v);
        // Package name, version and output as the library reads names;
        // the `out` output has no suffix.
        let name = split_name(sp.name());
        p.path.append_value(sp.as_str());
        p.hash.append_value(sp.hash_part());
        p.name.append_value(name.name);
        p.version.append_option(name.version);
        p.output.append_value(name.output.unwrap_or("out"));
        p.nar_size.append_value(g.nar_size(v));
        p.file_count.append_option(c.trees.get(&v).map(|t| {
            t.entries
                .iter()
                .filter(|e| !matches!(e.node, TreeNode::Directory))
                .count() as u64
        }));
        p.nar_hash.append_option(src.expected_nar_hash(sp));
        p.partition.append_value(partition);
        for t in request::references_of(&g, v) {
            let s = summarise(&g, &c, v, t, false);
            e.referrer.append_value(&s.referrer);
            e.reference.append_value(&s.reference);
            e.verdict.append_option(s.verdict.map(|v| v.as_str()));
            for k in s.kinds.keys() {
                e.kinds.values().append_value(k.as_str());
            }
            e.kinds.append(true);
            e.holding_files.append_value(s.files.len() as u64);
            e.symlink_farm.append_value(is_symlink_farm(&s.kinds));
            e.unavailable.append_value(s.unavailable);
            for x in c.evidence(v, t) {
                ev.referrer.append_value(&s.referrer);
                ev.reference.append_value(&s.reference);
                ev.file.append_value(&x.file);
                ev.kind.append_value(x.kind.as_str());
                ev.verdict.append_value(x.verdict.as_str());
                ev.offset.append_value(x.offset);
                ev.line.append_option(x.line);
                ev.reason.append_value(&x.reason);
            }
        }
    }
    let mut pr = ProblemsBuilder::default();
    for x in &problems {
        pr.path.append_value(&x.path);
        pr.file.append_option(x.file.as_deref());
        pr.kind.append_value(x.kind.as_str());
        pr.message.append_value(&x.message);
    }
    let batches = [p.finish()?, e.finish()?, ev.finish()?, pr.finish()?];
    Ok(PartitionFacts {
        batches,
        nar_bytes: nar_bytes.into_inner(),
    })
}

/// Whether an edge is held the way a symlink farm holds its targets: by
/// symlinks alone (a `buildEnv`, or a package linking per-target
/// derivations' files into its own tree). One wrapper link counts too; the
/// report orders farms by how many links they hold.
fn is_symlink_farm(kinds: &std::collections::BTreeMap<Kind, usize>) -> bool {
    !kinds.is_empty() && kinds.keys().all(|k| *k == Kind::Symlink)
}

fn batch(
    schema: datafusion::arrow::datatypes::SchemaRef,
    cols: Vec<ArrayRef>,
) -> Result<RecordBatch, ArrowError> {
    RecordBatch::try_new(schema, cols)
}

#[derive(Default)]
struct PathsBuilder {
    path: StringBuilder,
    hash: StringBuilder,
    name: StringBuilder,
    version: StringBuilder,
    output: StringBuilder,
    nar_size: UInt64Builder,
    file_count: UInt64Builder,
    nar_hash: StringBuilder,
    partition: UInt32Builder,
}

impl PathsBuilder {
    fn finish(mut self) -> Result<RecordBatch, ArrowError> {
        batch(
            schema::map_paths(),
            vec![
                Arc::new(self.path.finish()),
                Arc::new(self.hash.finish()),
                Arc::new(self.name.finish()),
                Arc::new(self.version.finish()),
                Arc::new(self.output.finish()),
                Arc::new(self.nar_size.finish()),
                Arc::new(self.file_count.finish()),
                Arc::new(self.nar_hash.finish()),
                Arc::new(self.partition.finish()),
            ],
        )
    }
}

#[derive(Default)]
struct EdgesBuilder {
    referrer: StringBuilder,
    reference: StringBuilder,
    verdict: StringBuilder,
    kinds: ListBuilder<StringBuilder>,
    holding_files: UInt64Builder,
    symlink_farm: BooleanBuilder,
    unavailable: BooleanBuilder,
}

impl EdgesBuilder {
    fn finish(mut self) -> Result<RecordBatch, ArrowError> {
        batch(
            schema::map_edges(),
            vec![
                Arc::new(self.referrer.finish()),
                Arc::new(self.reference.finish()),
                Arc::new(self.verdict.finish()),
                Arc::new(self.kinds.finish()),
                Arc::new(self.holding_files.finish()),
                Arc::new(self.symlink_farm.finish()),
                Arc::new(self.unavailable.finish()),
            ],
        )
    }
}

#[derive(Default)]
struct EvidenceBuilder {
    referrer: StringBuilder,
    reference: StringBuilder,
    file: StringBuilder,
    kind: StringBuilder,
    verdict: StringBuilder,
    offset: UInt64Builder,
    line: UInt64Builder,
    reason: StringBuilder,
}

impl EvidenceBuilder {
    fn finish(mut self) -> Result<RecordBatch, ArrowError> {
        batch(
            schema::evidence(),
            vec![
                Arc::new(self.referrer.finish()),
                Arc::new(self.reference.finish()),
                Arc::new(self.file.finish()),
                Arc::new(self.kind.finish()),
                Arc::new(self.verdict.finish()),
                Arc::new(self.offset.finish()),
                Arc::new(self.line.finish()),
                Arc::new(self.reason.finish()),
            ],
        )
    }
}

#[derive(Default)]
struct ProblemsBuilder {
    path: StringBuilder,
    file: StringBuilder,
    kind: StringBuilder,
    message: StringBuilder,
}

impl ProblemsBuilder {
    fn finish(mut self) -> Result<RecordBatch, ArrowError> {
        batch(
            schema::problems(),
            vec![
                Arc::new(self.path.finish()),
                Arc::new(self.file.finish()),
                Arc::new(self.kind.finish()),
                Arc::new(self.message.finish()),
            ],
        )
    }
}

/// A partition's files: each table's name and its Parquet bytes.
pub type PartitionFiles = Vec<(&'static str, bytes::Bytes)>;

/// The four Parquet files of a partition, encoded in memory: a
/// partition's rows are a few hundred paths' worth, and an object store
/// takes each file in one PUT.
pub fn encode_partition(facts: &PartitionFacts) -> Result<PartitionFiles, ArrowError> {
    schema::TABLES
        .iter()
        .zip(&facts.batches)
        .map(|(name, b)| {
            let mut w = ArrowWriter::try_new(Vec::new(), b.schema(), None)
                .map_err(|e| ArrowError::ExternalError(Box::new(e)))?;
            w.write(b)
                .map_err(|e| ArrowError::ExternalError(Box::new(e)))?;
            let bytes = w
                .into_inner()
                .map_err(|e| ArrowError::ExternalError(Box::new(e)))?;
            Ok((*name, bytes::Bytes::from(bytes)))
        })
        .collect()
}
