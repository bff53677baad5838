//! The closure rules the gates share (`check`, `impact`, `bisect`): a size
//! budget, a growth budget over a baseline each gate chooses, and paths a
//! closure must not hold, each given as a name glob or as one store path
//! exactly. Parsed once here, so that the three commands take the same
//! words the same way.

use globset::{GlobBuilder, GlobMatcher};

use crate::error::{Error, Result};
use nix_heft_format::store_path::{StorePath, package_name};
use nix_heft_graph::{Graph, NodeId};

/// A growth limit: bytes, or a percentage of the baseline's closure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Growth {
    /// At most this many bytes more.
    Bytes(u64),
    /// At most this percentage more.
    Percent(f64),
}

impl Growth {
    /// Parses `10%`, `50MiB` or `1.5GB`.
    pub fn parse(s: &str) -> Result<Growth> {
        if let Some(p) = s.trim().strip_suffix('%') {
            let v: f64 = p.trim().parse().map_err(|_| Error::BadGrowth {
                given: s.to_string(),
                why: "expected a size (50MiB) or a percentage (10%)",
            })?;
            if !v.is_finite() || v < 0.0 {
                return Err(Error::BadGrowth {
                    given: s.to_string(),
                    why: "the percentage must be a finite number ≥ 0",
                });
            }
            return Ok(Growth::Percent(v));
        }
        Ok(nix_heft_types::units::parse_size(s).map(Growth::Bytes)?)
    }

    /// The limit in bytes over a baseline of `base` bytes.
    pub fn limit(self, base: u64) -> u64 {
        match self {
            Growth::Bytes(b) => b,
            // f64 is exact enough for a budget; the cast saturates.
            Growth::Percent(p) => (base as f64 * p / 100.0) as u64,
        }
    }
}

/// A path a closure must not hold.
#[derive(Debug, Clone)]
pub enum Forbidden {
    /// Paths whose name (or package name, output suffix stripped) matches
    /// a glob, as `nix-heft size NAME` matches names.
    Name {
        /// The glob as given.
        pattern: String,
        /// It, compiled.
        matcher: GlobMatcher,
    },
    /// One store path, exactly (one taken from `diff`, say).
    Path(StorePath),
}

impl Forbidden {
    /// A `--forbid` argument: a whole store path under `store_dir` is that
    /// path; anything else a glob on names.
    pub fn parse(store_dir: &str, given: &str) -> Result<Forbidden> {
        let dir = format!("{}/", store_dir.trim_end_matches('/'));
        if given.starts_with(&dir) {
            return StorePath::parse(store_dir, given)
                .map(Forbidden::Path)
                .map_err(|e| Error::BadForbid {
                    given: given.to_string(),
                    reason: e.to_string(),
                });
        }
        Ok(Forbidden::Name {
            pattern: given.to_string(),
            matcher: glob(given)?,
        })
    }

    /// The argument as given.
    pub fn given(&self) -> &str {
        match self {
            Forbidden::Name { pattern, .. } => pattern,
            Forbidden::Path(p) => p.as_str(),
        }
    }

    /// Whether `path` is forbidden by this.
    pub fn matches(&self, path: &StorePath) -> bool {
        match self {
            Forbidden::Name { matcher, .. } => name_matches(matcher, path.name()),
            Forbidden::Path(p) => p == path,
        }
    }
}

/// Compiles a name glob (no path separators involved, so `*` matches all).
pub fn glob(pattern: &str) -> nix_heft_types::Result<GlobMatcher> {
    Ok(GlobBuilder::new(pattern)
        .literal_separator(false)
        .build()
        .map_err(|e| nix_heft_types::Error::BadPattern {
            pattern: pattern.to_string(),
            reason: e.to_string(),
        })?
        .compile_matcher())
}

/// Whether a path's name matches a glob: the whole name (`rocblas-5.7.1`),
/// or its package name without version (`rocblas`), as ROOT names and
/// `--forbid` match.
pub fn name_matches(matcher: &GlobMatcher, name: &str) -> bool {
    matcher.is_match(name) || matcher.is_match(package_name(name))
}

/// The rules as written on the command line (or in `check`'s config file).
#[derive(Debug, Clone, Copy, Default)]
pub struct RuleText<'a> {
    /// `--max-closure SIZE`.
    pub max_closure: Option<&'a str>,
    /// `--max-growth SIZE|PCT`.
    pub max_growth: Option<&'a str>,
    /// `--forbid GLOB|PATH`, each.
    pub forbid: &'a [String],
}

/// The closure rules, parsed.
#[derive(Debug, Clone, Default)]
pub struct ClosureRules {
    /// Largest closure allowed.
    pub max_closure: Option<u64>,
    /// Largest growth over the gate's baseline.
    pub max_growth: Option<Growth>,
    /// Paths the closure must not hold.
    pub forbid: Vec<Forbidden>,
}

impl ClosureRules {
    /// The rules `text` writes: sizes IEC or SI, a growth a size or a
    /// percentage, a forbidden path a glob or a store path under
    /// `store_dir`. A bad one is a usage error naming it.
    pub fn parse(text: RuleText, store_dir: &str) -> Result<ClosureRules> {
        Ok(ClosureRules {
            max_closure: text
                .max_closure
                .map(nix_heft_types::units::parse_size)
                .transpose()?,
            max_growth: text.max_growth.map(Growth::parse).transpose()?,
            forbid: text
                .forbid
                .iter()
                .map(|f| Forbidden::parse(store_dir, f))
                .collect::<Result<_>>()?,
        })
    }

    /// True when no rule is given.
    pub fn is_empty(&self) -> bool {
        self.max_closure.is_none() && self.max_growth.is_none() && self.forbid.is_empty()
    }

    /// The paths of `g` each forbidden pattern matches, with the pattern
    /// as given: a path matched by two patterns comes once for each.
    pub fn forbidden_in(&self, g: &Graph) -> Vec<(String, NodeId)> {
        let mut out = Vec::new();
        for f in &self.forbid {
            match f {
                // One path: a scan for it, not a closure-sized index.
                Forbidden::Path(p) => {
                    if let Some(v) = g.paths().iter().position(|q| q == p) {
                        out.push((f.given().to_string(), v as NodeId));
                    }
                }
                Forbidden::Name { .. } => out.extend(
                    (0..g.len() as NodeId)
                        .filter(|&v| f.matches(g.path(v)))
                        .map(|v| (f.given().to_string(), v)),
                ),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: &str = "/nix/store";
    const P: &str = "/nix/store/0123456789abcdfghijklmnpqrsvwxyz-rocblas-5.7.1-dev";

    #[test]
    fn a_store_path_is_exact_and_anything_else_a_glob() {
        let p = StorePath::parse(DIR, P).unwrap();
        let other = StorePath::parse(
            DIR,
            "/nix/store/1123456789abcdfghijklmnpqrsvwxyz-rocblas-5.7.1-dev",
        )
        .unwrap();
        let exact = Forbidden::parse(DIR, P).unwrap();
        assert!(exact.matches(&p) && !exact.matches(&other));
        let glob = Forbidden::parse(DIR, "rocblas").unwrap();
        assert!(glob.matches(&p) && glob.matches(&other));
        assert_eq!((exact.given(), glob.given()), (P, "rocblas"));
        // Under the store directory but no store path: the command line's
        // mistake, named.
        let e = Forbidden::parse(DIR, "/nix/store/not-a-hash").unwrap_err();
        assert!(e.is_usage(), "{e}");
        assert!(
            e.to_string()
                .starts_with("--forbid /nix/store/not-a-hash: "),
            "{e}"
        );
        let e = Forbidden::parse(DIR, "[").unwrap_err();
        assert!(e.is_usage(), "{e}");
    }

    #[test]
    fn rules_parse_each_kind_and_say_when_none_is_given() {
        let forbid = vec!["gcc-*".to_string(), P.to_string()];
        let r = ClosureRules::parse(
            RuleText {
                max_closure: Some("1GiB"),
                max_growth: Some("5%"),
                forbid: &forbid,
            },
            DIR,
        )
        .unwrap();
        assert_eq!(r.max_closure, Some(1 << 30));
        assert_eq!(r.max_growth, Some(Growth::Percent(5.0)));
        assert!(matches!(r.forbid[1], Forbidden::Path(_)));
        assert!(!r.is_empty());
        assert!(
            ClosureRules::parse(RuleText::default(), DIR)
                .unwrap()
                .is_empty()
        );
        let e = ClosureRules::parse(
            RuleText {
                max_closure: Some("lots"),
                ..RuleText::default()
            },
            DIR,
        )
        .unwrap_err();
        assert!(e.is_usage(), "{e}");
    }
}
