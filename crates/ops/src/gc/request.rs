//! What a [`RootsRequest`] starts from: the collector's settings as the
//! collector will read them, and the locations a user names roots by.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};
use nix_heft_format::nix_conf::{ConfEnv, NixConf, NixConfError};

use super::RootsRequest;

/// The settings given on nix-heft's command line (`--option NAME VALUE`)
/// that change what the collector keeps, in each spelling Nix accepts.
const GC_SETTINGS: [&str; 4] = [
    "keep-outputs",
    "gc-keep-outputs",
    "keep-derivations",
    "gc-keep-derivations",
];

impl RootsRequest {
    /// The settings every question about roots shares: `keep-outputs`
    /// and `keep-derivations` as the collector will read them (nix.conf,
    /// then `options`, the `--option`s given), the collector's settings
    /// among `options` to repeat in the commands shown, how to name the
    /// store `root` to Nix, and now.
    pub fn for_collector(options: &[(String, String)], root: &Path) -> Result<RootsRequest> {
        let gc_options: Vec<(String, String)> = options
            .iter()
            .filter(|(k, _)| GC_SETTINGS.contains(&k.as_str()))
            .cloned()
            .collect();
        let bad = |e: NixConfError| Error::from(nix_heft_store::Error::NixConf(e.to_string()));
        let conf = NixConf::load(&ConfEnv::from_process())
            .map_err(bad)?
            .with_options(&gc_options);
        Ok(RootsRequest {
            keep_outputs: conf.keep_outputs().map_err(bad)?,
            keep_derivations: conf.keep_derivations().map_err(bad)?,
            options: gc_options,
            store_arg: (root != Path::new("/")).then(|| root.display().to_string()),
            older_than_days: 30,
            now: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
            ..Default::default()
        })
    }
}

/// A location as roots may be written under it ([`RootsRequest::under`]):
/// absolute and normalised, and through its directory's real path when
/// that differs (the last component is not followed: it may be the root,
/// a `result` link).
pub fn locations(p: &Path) -> Vec<PathBuf> {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut lexical = PathBuf::from("/");
    for c in abs.components() {
        match c {
            Component::Normal(n) => lexical.push(n),
            Component::ParentDir => {
                lexical.pop();
            }
            _ => {}
        }
    }
    let mut out = vec![lexical.clone()];
    if let (Some(dir), Some(name)) = (lexical.parent(), lexical.file_name())
        && let Ok(real) = std::fs::canonicalize(dir)
    {
        let r = real.join(name);
        if r != lexical {
            out.push(r);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_is_absolute_normalised_and_through_its_real_directory() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = std::fs::canonicalize(dir.path()).unwrap();
        let real = tmp.join("real");
        std::fs::create_dir_all(&real).unwrap();
        std::os::unix::fs::symlink(&real, tmp.join("link")).unwrap();
        let got = locations(&tmp.join("link/./x/../result"));
        assert_eq!(got, vec![tmp.join("link/result"), real.join("result")]);
        // The last component is never followed: it may be the root.
        assert_eq!(locations(&tmp.join("link")), vec![tmp.join("link")]);
    }

    #[test]
    fn only_the_collectors_settings_are_repeated() {
        let options = [
            ("keep-outputs".to_string(), "true".to_string()),
            ("substituters".to_string(), "x".to_string()),
        ];
        let r = RootsRequest::for_collector(&options, Path::new("/tmp/chroot")).unwrap();
        assert!(r.keep_outputs);
        assert_eq!(r.options, options[..1]);
        assert_eq!(r.store_arg.as_deref(), Some("/tmp/chroot"));
        assert_eq!(
            RootsRequest::for_collector(&[], Path::new("/"))
                .unwrap()
                .store_arg,
            None
        );
    }
}
