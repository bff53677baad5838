//! Store paths: `/nix/store/<32-char nix-base32 hash>-<name>`.
//!
//! Parsing follows the rules Nix enforces in `StorePath::StorePath` and
//! `checkName` (libstore/path.cc): a hash part of exactly 32 characters from
//! Nix's base-32 alphabet, then `-`, then a name of 1..=211 characters from
//! `[A-Za-z0-9+-._?=]` that does not start with a dot.

use std::fmt;

use crate::error::Error;
use crate::nixbase32;

/// Length of the hash part of a store path's base name.
pub const HASH_LEN: usize = 32;
/// Longest name Nix accepts (`StorePath::MaxPathLen` minus the hash part).
pub const MAX_NAME_LEN: usize = 211;
const fn name_char_table() -> [bool; 256] {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric()
            || b == b'+'
            || b == b'-'
            || b == b'.'
            || b == b'_'
            || b == b'?'
            || b == b'=';
        c += 1;
    }
    t
}
const IS_NAME_CHAR: [bool; 256] = name_char_table();

/// A validated store path. Holds the full absolute path and remembers where
/// the base name starts, so the store directory need not be stored apart.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StorePath {
    full: Box<str>,
    base_start: u32,
}

impl StorePath {
    /// Parses `s`, which must be `<store_dir>/<hash>-<name>` exactly (no
    /// trailing components; see [`StorePath::from_path_inside`] for those).
    pub fn parse(store_dir: &str, s: &str) -> Result<Self, Error> {
        let invalid = |reason: &'static str| Error::InvalidStorePath {
            path: s.to_string(),
            reason,
        };
        let rest = s
            .strip_prefix(store_dir)
            .and_then(|r| r.strip_prefix('/'))
            .ok_or_else(|| invalid("not inside the store directory"))?;
        check_base_name(rest).map_err(invalid)?;
        Ok(StorePath {
            full: s.into(),
            base_start: (s.len() - rest.len()) as u32,
        })
    }

    /// Parses a base name (`<hash>-<name>`) and joins it to `store_dir`.
    pub fn from_base_name(store_dir: &str, base: &str) -> Result<Self, Error> {
        Self::parse(store_dir, &format!("{store_dir}/{base}"))
    }

    /// The store path that contains `s`, which may name a file below it
    /// (`/nix/store/<hash>-foo/lib/libfoo.so` gives `/nix/store/<hash>-foo`).
    pub fn from_path_inside(store_dir: &str, s: &str) -> Result<Self, Error> {
        let rest = s
            .strip_prefix(store_dir)
            .and_then(|r| r.strip_prefix('/'))
            .ok_or_else(|| Error::InvalidStorePath {
                path: s.to_string(),
                reason: "not inside the store directory",
            })?;
        let base = rest.split('/').next().unwrap_or("");
        Self::parse(store_dir, &s[..s.len() - rest.len() + base.len()])
    }

    /// The whole path, e.g. `/nix/store/<hash>-hello-2.12`.
    pub fn as_str(&self) -> &str {
        &self.full
    }
    /// The store directory this path lives in, e.g. `/nix/store`.
    pub fn store_dir(&self) -> &str {
        &self.full[..self.base_start as usize - 1]
    }
    /// `<hash>-<name>`.
    pub fn base_name(&self) -> &str {
        &self.full[self.base_start as usize..]
    }
    /// The 32-character hash part, which is what references are made of.
    pub fn hash_part(&self) -> &str {
        &self.base_name()[..HASH_LEN]
    }
    /// The name after the hash, e.g. `hello-2.12`.
    pub fn name(&self) -> &str {
        &self.base_name()[HASH_LEN + 1..]
    }
}

impl fmt::Display for StorePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full)
    }
}
impl fmt::Debug for StorePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StorePath({})", self.full)
    }
}

/// Checks `<hash>-<name>`; returns why it is not a store path base name.
pub fn check_base_name(base: &str) -> Result<(), &'static str> {
    let b = base.as_bytes();
    if b.len() < HASH_LEN + 2 {
        return Err("base name is shorter than a 32-character hash, a dash and a name");
    }
    if !b[..HASH_LEN]
        .iter()
        .all(|&c| nixbase32::IS_BASE32[c as usize])
    {
        return Err("hash part is not 32 characters of Nix's base-32 alphabet");
    }
    if b[HASH_LEN] != b'-' {
        return Err("hash part is not followed by '-'");
    }
    let name = &b[HASH_LEN + 1..];
    if name.len() > MAX_NAME_LEN {
        return Err("name is longer than 211 characters");
    }
    if name[0] == b'.' {
        return Err("name starts with a dot");
    }
    if !name.iter().all(|&c| IS_NAME_CHAR[c as usize]) {
        return Err("name contains a character outside [A-Za-z0-9+-._?=]");
    }
    Ok(())
}

/// The name of a store path given as a string (`/nix/store/<hash>-rocblas-5.7.1`
/// gives `rocblas-5.7.1`); the string itself when it has no hash part.
pub fn name_of(path: &str) -> &str {
    let base = path.rsplit('/').next().unwrap_or(path);
    base.get(HASH_LEN + 1..).unwrap_or(base)
}

/// Splits a derivation name into package name and version the way Nix's
/// `DrvName` does: the version starts at the first `-` that is followed by a
/// character that is not a letter (`rocm-llvm-clang-5.7.1` → `rocm-llvm-clang`).
pub fn package_name(name: &str) -> &str {
    let b = name.as_bytes();
    for i in 0..b.len() {
        if b[i] == b'-' && i + 1 < b.len() && !b[i + 1].is_ascii_alphabetic() {
            return &name[..i];
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = "02hmm3h249gbm141s547nrgi1r420ji4";

    #[test]
    fn parses_parts() {
        let p = StorePath::parse("/nix/store", &format!("/nix/store/{H}-hello-2.12")).unwrap();
        assert_eq!(p.hash_part(), H);
        assert_eq!(p.name(), "hello-2.12");
        assert_eq!(p.store_dir(), "/nix/store");
        assert_eq!(p.base_name(), format!("{H}-hello-2.12"));
    }

    #[test]
    fn path_inside() {
        let p = StorePath::from_path_inside("/nix/store", &format!("/nix/store/{H}-a/lib/x.so"))
            .unwrap();
        assert_eq!(p.name(), "a");
    }

    #[test]
    fn rejects_bad_paths() {
        for bad in [
            format!("/nix/store/{}-a", &H[..31]),
            format!("/nix/store/{}e-a", &H[..31]),
            format!("/nix/store/{H}_a"),
            format!("/nix/store/{H}-"),
            format!("/nix/store/{H}-.a"),
            format!("/nix/store/{H}-a b"),
            format!("/nix/store/{H}-{}", "x".repeat(212)),
            format!("/other/{H}-a"),
            format!("/nix/store/{H}-a/b"),
        ] {
            assert!(StorePath::parse("/nix/store", &bad).is_err(), "{bad}");
        }
        assert!(
            StorePath::parse("/nix/store", &format!("/nix/store/{H}-{}", "x".repeat(211))).is_ok()
        );
    }

    #[test]
    fn package_names() {
        assert_eq!(package_name("rocm-llvm-clang-5.7.1"), "rocm-llvm-clang");
        assert_eq!(package_name("llama-cpp-rocm-0.0.0"), "llama-cpp-rocm");
        assert_eq!(package_name("rocblas-5.7.1-dev"), "rocblas");
        assert_eq!(package_name("hello"), "hello");
        assert_eq!(package_name("foo-"), "foo-");
    }
}
