//! The output of `nix path-info --json` saved to a file.
//!
//! Three shapes exist, told apart by their structure (not by a Nix version,
//! since Lix and Nix diverged):
//!
//! * **array** (Nix ≤ 2.18, Lix): `[{"path": "/nix/store/…", "narSize": N,
//!   "references": ["/nix/store/…"], …}]`;
//! * **keyed object** (Nix 2.19+): `{"/nix/store/…": {…}}`, the same
//!   objects without `path`, and `null` for a path that is not valid;
//! * **version 2** (Nix 2.33+ `--json-format 2`): `{"version": 2,
//!   "storeDir": "/nix/store", "info": {"<base name>": {…}}}`, where
//!   `references` are base names, `ca` is an object and hashes are SRI
//!   strings; `narSize` is still a number.
//!
//! Only `narSize` and `references` are read. An entry that describes no valid
//! path (`null`, or `"valid": false`) is skipped with a warning; anything
//! else that does not fit is an error naming the file and the path.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::{DEFAULT_STORE_DIR, PathContents, PathInfo, PathMetadata, RunLog, StoreSource};
use crate::error::{Error, Result};
use nix_heft_format::store_path::StorePath;
use nix_heft_types::error::io_err;

/// Path metadata loaded from a `nix path-info --json` file.
pub struct PathInfoJson {
    file: PathBuf,
    store_dir: String,
    infos: HashMap<StorePath, PathInfo>,
    /// Where the entries skipped were warned about.
    log: Arc<RunLog>,
}

/// The version-2 format this reader understands.
const FORMAT_VERSION: u64 = 2;

impl PathInfoJson {
    /// Loads and validates the whole file, whichever of the three shapes it
    /// has; entries skipped are warned about in `log`.
    pub fn open(file: &Path, log: Arc<RunLog>) -> Result<Self> {
        let text = std::fs::read(file).map_err(io_err(file))?;
        Self::from_bytes(&text, file, log)
    }

    /// Parses `text`, the contents of `file` (named in errors); entries
    /// skipped are warned about in `log` once the whole file has parsed.
    pub fn from_bytes(text: &[u8], file: &Path, log: Arc<RunLog>) -> Result<Self> {
        let bad = |reason: String| Error::BadPathInfoJson {
            file: file.to_path_buf(),
            reason,
        };
        let v: Value = serde_json::from_slice(text).map_err(|e| bad(e.to_string()))?;
        // (key as written, entry); keys are full paths except in version 2.
        let (entries, explicit_store_dir): (Vec<(String, &Value)>, Option<String>) = match &v {
            Value::Array(items) => (
                items
                    .iter()
                    .map(|it| {
                        let p = it
                            .get("path")
                            .and_then(Value::as_str)
                            .ok_or_else(|| bad("an array entry has no \"path\" string".into()))?;
                        Ok((p.to_string(), it))
                    })
                    .collect::<Result<_>>()?,
                None,
            ),
            Value::Object(map) if is_versioned(map) => {
                match map.get("version").and_then(Value::as_u64) {
                    Some(FORMAT_VERSION) => {}
                    other => {
                        return Err(bad(format!(
                            "unsupported \"version\" {} (this reader knows version {FORMAT_VERSION}, \
                             the keyed object and the array)",
                            other.map_or_else(
                                || map.get("version").map_or("(none)".into(), Value::to_string),
                                |n| n.to_string()
                            )
                        )));
                    }
                }
                let store_dir = map
                    .get("storeDir")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("version 2 without a \"storeDir\" string".into()))?
                    .trim_end_matches('/')
                    .to_string();
                let info = map
                    .get("info")
                    .and_then(Value::as_object)
                    .ok_or_else(|| bad("version 2 without an \"info\" object".into()))?;
                (
                    info.iter().map(|(k, v)| (k.clone(), v)).collect(),
                    Some(store_dir),
                )
            }
            Value::Object(map) => (map.iter().map(|(k, v)| (k.clone(), v)).collect(), None),
            _ => return Err(bad("expected an array or an object at the top level".into())),
        };
        let store_dir = explicit_store_dir.unwrap_or_else(|| {
            entries
                .iter()
                .find_map(|(p, _)| p.rsplit_once('/').filter(|(d, _)| !d.is_empty()))
                .map(|(d, _)| d.to_string())
                .unwrap_or_else(|| DEFAULT_STORE_DIR.to_string())
        });
        // A key or reference is a full path in the older shapes and a base
        // name in version 2; each is recognised by its form, so a file that
        // mixes them still reads.
        let parse_path = |s: &str| {
            if s.starts_with('/') {
                StorePath::parse(&store_dir, s)
            } else {
                StorePath::from_base_name(&store_dir, s)
            }
        };
        let describe = format!("path-info JSON {}", file.display());
        let mut infos = HashMap::new();
        let mut warnings = Vec::new();
        for (p, item) in entries {
            let path = parse_path(&p).map_err(|e| bad(e.to_string()))?;
            if item.is_null() || item.get("valid").and_then(Value::as_bool) == Some(false) {
                // Nix prints this for a path it was asked about but does not
                // hold; it describes nothing, and a reference to it is
                // reported where it is followed.
                warnings.push(format!(
                    "{describe}: {path} is not a valid path (its entry is {}); skipped",
                    if item.is_null() {
                        "null"
                    } else {
                        "\"valid\": false"
                    }
                ));
                continue;
            }
            let nar_size = match item.get("narSize") {
                Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64().expect("checked"),
                Some(Value::Number(n)) if n.as_i64().is_some() => {
                    return Err(Error::NegativeNarSize {
                        path: path.to_string(),
                        nar_size: n.as_i64().expect("checked").into(),
                        store: describe,
                    });
                }
                Some(other) => {
                    return Err(bad(format!(
                        "{path} has \"narSize\" {other}, not a whole number of bytes below 2^64"
                    )));
                }
                None => return Err(bad(format!("{path} has no numeric \"narSize\""))),
            };
            let references = item
                .get("references")
                .and_then(Value::as_array)
                .ok_or_else(|| bad(format!("{path} has no \"references\" array")))?
                .iter()
                .map(|r| {
                    let s = r
                        .as_str()
                        .ok_or_else(|| bad(format!("{path} has a non-string reference")))?;
                    parse_path(s).map_err(|e| bad(format!("reference of {path}: {e}")))
                })
                .collect::<Result<Vec<_>>>()?;
            infos.insert(
                path.clone(),
                PathInfo {
                    path,
                    nar_size,
                    references,
                },
            );
        }
        for w in warnings {
            log.warn(w);
        }
        Ok(PathInfoJson {
            file: file.to_path_buf(),
            store_dir,
            infos,
            log,
        })
    }
}

/// Whether a top-level object is the version-2 envelope rather than an
/// object keyed by store path: store paths are absolute, so a key such as
/// `version` or `info` cannot be one.
fn is_versioned(map: &Map<String, Value>) -> bool {
    ["version", "info", "storeDir"]
        .iter()
        .any(|k| map.contains_key(*k))
}

impl PathMetadata for PathInfoJson {
    fn store_dir(&self) -> &str {
        &self.store_dir
    }
    fn describe(&self) -> String {
        format!("path-info JSON {}", self.file.display())
    }
    fn path_info(&self, path: &StorePath) -> Result<Option<PathInfo>> {
        Ok(self.infos.get(path).cloned())
    }
    fn all_paths(&self) -> Result<Vec<StorePath>> {
        Ok(self.infos.keys().cloned().collect())
    }
}

/// A path-info JSON file holds no file contents.
impl PathContents for PathInfoJson {}

impl StoreSource for PathInfoJson {
    fn log(&self) -> &RunLog {
        &self.log
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_text(text: &str) -> Result<PathInfoJson> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.json");
        std::fs::write(&file, text).unwrap();
        PathInfoJson::open(&file, Default::default())
    }

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-a";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb-b";

    #[test]
    fn version_2_reads_base_names_and_skips_null_with_a_warning() {
        let src = open_text(&format!(
            r#"{{"version":2,"storeDir":"/nix/store","info":{{
                "{A}":{{"narSize":7,"references":["{B}","{A}"],"ca":{{"method":"nar","hash":"sha256-x"}}}},
                "{B}":{{"narSize":3,"references":[]}},
                "cccccccccccccccccccccccccccccccc-c":null}}}}"#
        ))
        .unwrap();
        let a = StorePath::from_base_name("/nix/store", A).unwrap();
        let info = src.path_info(&a).unwrap().unwrap();
        assert_eq!(info.nar_size, 7);
        assert_eq!(info.references.len(), 2);
        assert_eq!(info.references[0].as_str(), format!("/nix/store/{B}"));
        assert_eq!(src.all_paths().unwrap().len(), 2);
        let w = src.log().warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("-c is not a valid path") && w[0].contains("null"),
            "{w:?}"
        );
    }

    #[test]
    fn unknown_version_and_negative_sizes_are_errors() {
        let e = open_text(r#"{"version":3,"storeDir":"/nix/store","info":{}}"#)
            .err()
            .unwrap();
        assert!(e.to_string().contains("unsupported \"version\" 3"), "{e}");
        let e = open_text(&format!(
            r#"[{{"path":"/nix/store/{A}","narSize":-5,"references":[]}}]"#
        ))
        .err()
        .unwrap();
        assert!(
            e.to_string()
                .contains(&format!("/nix/store/{A} has a negative NAR size (-5)")),
            "{e}"
        );
        let e = open_text(&format!(
            r#"{{"/nix/store/{A}":{{"narSize":1.5,"references":[]}}}}"#
        ))
        .err()
        .unwrap();
        assert!(e.to_string().contains("not a whole number"), "{e}");
    }
}
