//! The `.narinfo` format of binary caches.
//!
//! Grammar (Nix's libstore/nar-info.cc): lines of `Key: value`; `StorePath`,
//! `URL`, `NarHash` and `NarSize` are required; `References` is a
//! space-separated list of base names (may be empty); `Compression` defaults
//! to `bzip2` when absent, as in Nix; `Sig` may appear several times.
//! Unknown keys are ignored, as Nix does.

use std::path::Path;

use crate::error::{Error, Result};
use nix_heft_format::store_path::StorePath;

/// One parsed narinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NarInfo {
    /// The path described.
    pub store_path: StorePath,
    /// Where the (compressed) NAR is, relative to the cache root.
    pub url: String,
    /// `xz`, `zstd`, `bzip2`, `none`, ...
    pub compression: String,
    /// Size of the uncompressed NAR.
    pub nar_size: u64,
    /// `NarHash` as written.
    pub nar_hash: String,
    /// References as full store paths.
    pub references: Vec<StorePath>,
    /// `Deriver`, a base name, if present.
    pub deriver: Option<String>,
    /// `FileHash`, the hash of the compressed file as written, if present.
    pub file_hash: Option<String>,
    /// `FileSize`, the size of the compressed file, if present.
    pub file_size: Option<u64>,
    /// Every `Sig:` value (`KEYNAME:BASE64`), in order, as written: what
    /// `source::signature::verify` checks.
    pub sigs: Vec<String>,
    /// `CA:`, the content address, if present (kept, not yet used to
    /// trust an unsigned narinfo as Nix can).
    pub ca: Option<String>,
}

impl NarInfo {
    /// Parses the narinfo a cache gave for `path` (from a file or over
    /// HTTP; `file` names it in errors) and checks that it describes that
    /// path: `None` when it describes another path of the same hash (Nix
    /// looks paths up by hash too, then checks the whole path).
    pub fn parse_for(
        bytes: Vec<u8>,
        store_dir: &str,
        path: &StorePath,
        file: &Path,
    ) -> Result<Option<Self>> {
        let text = String::from_utf8(bytes).map_err(|_| Error::BadNarinfo {
            file: file.to_path_buf(),
            reason: "not UTF-8 text".into(),
        })?;
        let info = NarInfo::parse(&text, store_dir, file)?;
        if info.store_path.hash_part() != path.hash_part() {
            return Err(Error::BadNarinfo {
                file: file.to_path_buf(),
                reason: format!("describes {}, not {}", info.store_path, path),
            });
        }
        if info.store_path != *path {
            return Ok(None);
        }
        Ok(Some(info))
    }

    /// Parses narinfo text; `file` only names the source in errors.
    pub fn parse(text: &str, store_dir: &str, file: &Path) -> Result<Self> {
        let bad = |reason: String| Error::BadNarinfo {
            file: file.to_path_buf(),
            reason,
        };
        let mut store_path = None;
        let mut url = None;
        let mut compression = None;
        let mut nar_size = None;
        let mut nar_hash = None;
        let mut references = None;
        let mut deriver = None;
        let mut file_hash = None;
        let mut file_size = None;
        let mut sigs = Vec::new();
        let mut ca = None;
        for (n, line) in text.lines().enumerate() {
            if line.is_empty() {
                continue;
            }
            let (key, value) = line
                .split_once(": ")
                .or_else(|| line.split_once(':'))
                .ok_or_else(|| bad(format!("line {} is not 'Key: value': {line:?}", n + 1)))?;
            match key {
                "StorePath" => {
                    store_path =
                        Some(StorePath::parse(store_dir, value).map_err(|e| bad(e.to_string()))?)
                }
                "URL" => url = Some(value.to_string()),
                "Compression" => compression = Some(value.to_string()),
                "NarHash" => nar_hash = Some(value.to_string()),
                "NarSize" => {
                    nar_size = Some(value.parse::<u64>().map_err(|_| {
                        bad(format!(
                            "NarSize '{value}' on line {} is not a number",
                            n + 1
                        ))
                    })?)
                }
                "References" => {
                    references = Some(
                        value
                            .split_ascii_whitespace()
                            .map(|b| {
                                StorePath::from_base_name(store_dir, b)
                                    .map_err(|e| bad(format!("reference: {e}")))
                            })
                            .collect::<Result<Vec<_>>>()?,
                    )
                }
                "Deriver" if value != "unknown-deriver" => deriver = Some(value.to_string()),
                "FileHash" => file_hash = Some(value.to_string()),
                "FileSize" => {
                    file_size = Some(value.parse::<u64>().map_err(|_| {
                        bad(format!(
                            "FileSize '{value}' on line {} is not a number",
                            n + 1
                        ))
                    })?)
                }
                "Sig" => sigs.push(value.to_string()),
                "CA" => ca = Some(value.to_string()),
                _ => {}
            }
        }
        let missing = |k: &str| bad(format!("no {k} field (truncated file?)"));
        Ok(NarInfo {
            store_path: store_path.ok_or_else(|| missing("StorePath"))?,
            url: url.ok_or_else(|| missing("URL"))?,
            compression: compression.unwrap_or_else(|| "bzip2".to_string()),
            nar_size: nar_size.ok_or_else(|| missing("NarSize"))?,
            nar_hash: nar_hash.ok_or_else(|| missing("NarHash"))?,
            // Nix treats a missing References line as no references, but a
            // cache written by `nix copy` always has one; its absence in a
            // file that also lost other lines means truncation, caught above.
            references: references.unwrap_or_default(),
            deriver,
            file_hash,
            file_size,
            sigs,
            ca,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "StorePath: /nix/store/ql3g6qnarjnqcm4p102iqqwfm5fyrmnw-top\n\
URL: nar/0qgj8jirrszqr9s48rvqs18n7h6bvdihjb3ckzj58ip16h1dxgcx.nar.xz\n\
Compression: xz\n\
FileHash: sha256:0qgj8jirrszqr9s48rvqs18n7h6bvdihjb3ckzj58ip16h1dxgcx\n\
FileSize: 208\n\
NarHash: sha256:0n751fqccr8zb9rm5m14k38944v4mp5fr8b0ylcch78bqchxvdjm\n\
NarSize: 328\n\
References: 02hmm3h249gbm141s547nrgi1r420ji4-dep\n\
Deriver: jldb6bhc011sq2xm70pyxfmb2svrgdxd-top.drv\n";

    #[test]
    fn parses_nix_copy_output() {
        let n = NarInfo::parse(TEXT, "/nix/store", Path::new("x.narinfo")).unwrap();
        assert_eq!(n.nar_size, 328);
        assert_eq!(n.compression, "xz");
        assert_eq!(n.references.len(), 1);
        assert_eq!(n.references[0].name(), "dep");
        assert_eq!(n.file_size, Some(208));
        assert_eq!(
            n.file_hash.as_deref(),
            Some("sha256:0qgj8jirrszqr9s48rvqs18n7h6bvdihjb3ckzj58ip16h1dxgcx")
        );
    }

    #[test]
    fn truncated_is_an_error() {
        let cut = &TEXT[..TEXT.find("NarSize").unwrap()];
        let e = NarInfo::parse(cut, "/nix/store", Path::new("x.narinfo")).unwrap_err();
        assert!(e.to_string().contains("no NarSize"), "{e}");
        let e =
            NarInfo::parse("StorePath: /nix/store/xyz", "/nix/store", Path::new("x")).unwrap_err();
        assert!(e.to_string().contains("not a valid store path"), "{e}");
        let e = NarInfo::parse(
            &TEXT.replace("NarSize: 328", "NarSize: 3x"),
            "/nix/store",
            Path::new("x"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("not a number"), "{e}");
    }
}
