//! The Arrow schemas of the survey's tables, in the form the map step
//! writes them (per partition) and in their final form (after the graph
//! step added its columns).

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};

/// The four tables, by the names `query` registers them under.
pub const TABLES: [&str; 4] = ["paths", "edges", "evidence", "problems"];

fn utf8(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}

fn u64(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::UInt64, nullable)
}

/// `paths` as the map step writes it: one row per surveyed path.
pub fn map_paths() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("path", false),
        utf8("hash", false),
        utf8("name", false),
        utf8("version", true),
        utf8("output", false),
        u64("nar_size", false),
        u64("file_count", true),
        utf8("nar_hash", true),
        Field::new("partition", DataType::UInt32, false),
    ]))
}

/// The list type of `edges.kinds`.
pub fn kinds_type() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)))
}

/// `edges` as the map step writes it: one row per registered reference,
/// self references included.
pub fn map_edges() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("referrer", false),
        utf8("reference", false),
        utf8("verdict", true),
        Field::new("kinds", kinds_type(), false),
        u64("holding_files", false),
        Field::new("symlink_farm", DataType::Boolean, false),
        Field::new("unavailable", DataType::Boolean, false),
    ]))
}

/// `evidence`: one row per hold found.
pub fn evidence() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("referrer", false),
        utf8("reference", false),
        utf8("file", false),
        utf8("kind", false),
        utf8("verdict", false),
        u64("offset", false),
        u64("line", true),
        utf8("reason", false),
    ]))
}

/// `problems`: what could not be read or classified.
pub fn problems() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("path", false),
        utf8("file", true),
        utf8("kind", false),
        utf8("message", false),
    ]))
}

/// The map step's schema of table `name`.
pub fn map_schema(name: &str) -> SchemaRef {
    match name {
        "paths" => map_paths(),
        "edges" => map_edges(),
        "evidence" => evidence(),
        _ => problems(),
    }
}

/// What the graph step adds to `paths`.
pub fn graph_paths() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("path", false),
        u64("closure_size", false),
        u64("dependents", false),
    ]))
}

/// What the graph step adds to `edges`.
pub fn graph_edges() -> SchemaRef {
    Arc::new(Schema::new(vec![
        utf8("referrer", false),
        utf8("reference", false),
        u64("saving_max", false),
    ]))
}

/// One row per partition of the map step: what it read and wrote.
pub fn summary() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("partition", DataType::UInt32, false),
        u64("paths", false),
        u64("edges", false),
        u64("evidence", false),
        u64("problems", false),
        u64("nar_bytes", false),
        Field::new("skipped", DataType::Boolean, false),
    ]))
}
