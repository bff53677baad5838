//! The output of `nix path-info --json` saved to a file.
//!
//! Two shapes exist: Nix up to 2.18 prints an array of objects each with a
//! `path` field; newer Nix prints an object keyed by store path, whose value
//! is `null` for a path that is not valid. Both carry `narSize` and
//! `references` (full store paths).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{DEFAULT_STORE_DIR, PathInfo, StoreSource};
use crate::error::{Error, Result, io_err};
use crate::store_path::StorePath;

/// Path metadata loaded from a `nix path-info --json` file.
pub struct PathInfoJson {
    file: PathBuf,
    store_dir: String,
    infos: HashMap<StorePath, PathInfo>,
}

impl PathInfoJson {
    /// Loads and validates the whole file.
    pub fn open(file: &Path) -> Result<Self> {
        let bad = |reason: String| Error::BadPathInfoJson {
            file: file.to_path_buf(),
            reason,
        };
        let text = std::fs::read(file).map_err(io_err(file))?;
        let v: Value = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
        let entries: Vec<(String, &Value)> = match &v {
            Value::Array(items) => items
                .iter()
                .map(|it| {
                    let p = it
                        .get("path")
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad("an array entry has no \"path\" string".into()))?;
                    Ok((p.to_string(), it))
                })
                .collect::<Result<_>>()?,
            Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
            _ => return Err(bad("expected an array or an object at the top level".into())),
        };
        let store_dir = entries
            .first()
            .and_then(|(p, _)| p.rsplit_once('/'))
            .map(|(d, _)| d.to_string())
            .unwrap_or_else(|| DEFAULT_STORE_DIR.to_string());
        let mut infos = HashMap::new();
        for (p, item) in entries {
            let path = StorePath::parse(&store_dir, &p).map_err(|e| bad(e.to_string()))?;
            if item.is_null() || item.get("valid").and_then(Value::as_bool) == Some(false) {
                continue; // not a valid path: Nix reports it, holds nothing
            }
            let nar_size = item
                .get("narSize")
                .and_then(Value::as_u64)
                .ok_or_else(|| bad(format!("{p} has no numeric \"narSize\"")))?;
            let references = item
                .get("references")
                .and_then(Value::as_array)
                .ok_or_else(|| bad(format!("{p} has no \"references\" array")))?
                .iter()
                .map(|r| {
                    let s = r
                        .as_str()
                        .ok_or_else(|| bad(format!("{p} has a non-string reference")))?;
                    StorePath::parse(&store_dir, s).map_err(|e| bad(e.to_string()))
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
        Ok(PathInfoJson {
            file: file.to_path_buf(),
            store_dir,
            infos,
        })
    }
}

impl StoreSource for PathInfoJson {
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
