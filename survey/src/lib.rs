//! nix-heft-survey: nix-heft's evidence for a whole package set, as
//! Parquet tables, on DataFusion in-process or on a Ballista cluster.
//!
//! `nix-heft-survey run [--store STORE] -o DIR|URL (ROOT... | --paths FILE | --all)`
//! reads every path of the surveyed set once with the `nix-heft` library
//! (`pipeline::classified`: read, then classify, the same reading and verdicts as
//! `nix-heft refs`) and writes four tables to `-o`, a directory or an
//! object store ([`output`]):
//!
//! | table | one row per | columns |
//! | --- | --- | --- |
//! | `paths` | store path | `path, hash, name, version, output, nar_size, closure_size, dependents, file_count, nar_hash, partition` |
//! | `edges` | registered reference (self references too) | `referrer, reference, verdict, kinds, holding_files, symlink_farm, saving_max, unavailable` |
//! | `evidence` | hold found in a file | `referrer, reference, file, kind, verdict, offset, line, reason` |
//! | `problems` | what could not be read | `path, file, kind, message` |
//!
//! The pipeline: [`run`] resolves the roots and loads their graph; the
//! map step is a DataFusion table, [`exec::SurveyMap`], whose plan
//! [`exec::SurveyMapExec`] has one partition per bucket of hash parts and
//! writes each partition's rows ([`map`]) under `parts/` as it
//! finishes; the graph step ([`graph_step`]) adds closure sizes,
//! `dependents` and per-edge `saving_max` from the library's graph
//! functions; the tables are then joined and written with DataFusion, and
//! [`report`] queries them for the ready-made report.
//!
//! With `run --cluster df://HOST:PORT` the same plan runs on Apache
//! DataFusion Ballista: [`cluster`] holds the extension codecs that ship
//! the map step to the executors, and the `scheduler` and `executor`
//! processes with them registered. The rows are the same as embedded.
//!
//! `nix-heft-survey query DIR|URL SQL [--json]` runs any SQL over the tables
//! ([`query`]). Three examples:
//!
//! ```sql
//! -- References held only by documentation, by what cutting each would save
//! SELECT referrer, reference, saving_max FROM edges
//! WHERE verdict = 'docs' ORDER BY saving_max DESC LIMIT 20;
//!
//! -- Bytes held by dead RUNPATH entries, per package name
//! SELECT p.name, count(*) AS entries, sum(e.saving_max) AS bytes
//! FROM evidence v JOIN edges e ON e.referrer = v.referrer AND e.reference = v.reference
//! JOIN paths p ON p.path = v.referrer
//! WHERE v.kind = 'elf-runpath' AND v.verdict = 'dead' GROUP BY p.name ORDER BY bytes DESC;
//!
//! -- -dev outputs that the most surveyed roots still carry
//! SELECT path, dependents, closure_size FROM paths
//! WHERE output = 'dev' ORDER BY dependents DESC, closure_size DESC LIMIT 10;
//! ```

#![warn(missing_docs)]

pub mod cluster;
pub mod exec;
pub mod graph_step;
pub mod map;
pub mod output;
pub mod query;
pub mod report;
pub mod run;
pub mod schema;

/// A command-line mistake (exit 2), as the core reports one.
pub(crate) fn usage(msg: String) -> anyhow::Error {
    nix_heft_types::Error::Usage(msg).into()
}
