//! The head of a comparison as a nixpkgs-review directory has it
//! ([`nix_heft_format::nixpkgs_review`]): each attribute it built with the
//! outputs its links point to; what it did not build as a [`Note`]; its
//! link problems as [`Problem`]s, said once and counted in the exit code.

use std::collections::BTreeMap;

use nix_heft_format::nixpkgs_review::{ReviewDir, Status as ReviewStatus};

use super::Note;
use nix_heft_eval::attrs::Outcome;
use nix_heft_types::problem::{Problem, ProblemKind};

/// One system of a nixpkgs-review directory, as a head side.
#[derive(Debug, Clone, Default)]
pub struct ReviewHead {
    /// The system read.
    pub system: String,
    /// Built attributes (and tests): their outputs, from the links.
    pub attrs: BTreeMap<String, Outcome>,
    /// Attributes it did not build, and why.
    pub notes: BTreeMap<String, Note>,
    /// Attributes listed as broken: broken, or missing from nixpkgs-review's
    /// checkout (every version files both under `broken`).
    pub broken: Vec<String>,
    /// Every attribute the system lists, sorted.
    pub listed: Vec<String>,
    /// Output name → link file name, per built attribute.
    pub links: BTreeMap<String, BTreeMap<String, String>>,
    /// The system's link problems.
    pub problems: Vec<Problem>,
}

/// The system whose results are read: `flag` when given, else this
/// machine's (Nix's name for it, `here`) when the report has it, else the
/// only one the report has. An error names the systems it has.
pub fn system(
    review: &ReviewDir,
    flag: Option<&str>,
    here: impl FnOnce() -> Option<String>,
) -> Result<String, String> {
    let have = || {
        review
            .systems
            .iter()
            .map(|s| s.system.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(s) = flag {
        return if review.system(s).is_some() {
            Ok(s.to_string())
        } else {
            Err(format!(
                "{} has no results for {s} (it has: {}); pass --system",
                review.dir.display(),
                have()
            ))
        };
    }
    if let [only] = &review.systems[..] {
        return Ok(only.system.clone());
    }
    match here() {
        Some(h) if review.system(&h).is_some() => Ok(h),
        h => Err(format!(
            "{} has results for {}, none of them this machine's{}; pass --system",
            review.dir.display(),
            have(),
            h.map(|h| format!(" ({h})")).unwrap_or_default()
        )),
    }
}

/// The head `system` of `review` has.
pub fn head(review: &ReviewDir, system: &str) -> ReviewHead {
    let mut h = ReviewHead {
        system: system.to_string(),
        ..ReviewHead::default()
    };
    for a in review.reviewed(system).unwrap_or_default() {
        h.listed.push(a.name.clone());
        match a.status {
            ReviewStatus::Built | ReviewStatus::Tests => {
                h.links.insert(a.name.clone(), a.links.clone());
                h.attrs.insert(
                    a.name.clone(),
                    Outcome::Evaluated {
                        drv_path: None,
                        outputs: a.outputs,
                    },
                );
            }
            ReviewStatus::Failed => {
                h.notes.insert(a.name, Note::BuildFailed);
            }
            ReviewStatus::Broken => {
                h.broken.push(a.name.clone());
                h.notes.insert(a.name, Note::SkippedBroken);
            }
            ReviewStatus::Blacklisted => {
                h.notes.insert(a.name, Note::Skipped);
            }
            // No version writes it (see the format's documentation); what
            // is not in the checkout is not at the head.
            ReviewStatus::NonExistent => {}
        }
    }
    h.listed.sort();
    h.listed.dedup();
    if let Some(sys) = review.system(system) {
        h.problems = sys
            .problems
            .iter()
            .map(|p| {
                Problem::new(
                    p.link.display().to_string(),
                    ProblemKind::ReviewLink,
                    format!("{} (nixpkgs-review's link of {})", p.kind, p.attribute),
                )
            })
            .collect();
    }
    h
}

/// The nixpkgs configuration nixpkgs-review evaluated with, as a Nix
/// expression for `--arg config`: `Buildenv`'s (`allowUnfree`,
/// `allowBroken`, `checkMeta`, then `--extra-nixpkgs-config`, which
/// `report.json` keeps from 2.9.0), with `evalAttrs.nix`'s `allowBroken =
/// false` over it (2.9.2 on), so the base evaluates what the head's review
/// evaluated: an unfree package evaluates on both sides.
pub fn nixpkgs_config(review: &ReviewDir) -> String {
    let extra = review
        .extra_nixpkgs_config
        .as_deref()
        .filter(|e| {
            let e = e.trim();
            e.starts_with('{') && e.ends_with('}')
        })
        .unwrap_or("{ }");
    format!(
        "({{ allowUnfree = true; allowBroken = true; checkMeta = true; }} // {extra}) // {{ allowBroken = false; }}"
    )
}

/// A problem for each output of an attribute nixpkgs-review built whose
/// link points to a path `store` (the head's store, as it describes
/// itself) does not hold: the directory says it was built, the store
/// disagrees, so the row is "not built" and the run partial.
pub fn unbuilt_links(head: &ReviewHead, impact: &super::Impact, store: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    for r in &impact.rows {
        let (Some(links), Some(after)) = (head.links.get(&r.attr), &r.after) else {
            continue;
        };
        for o in &after.missing {
            if let (Some(link), Some(path)) = (links.get(o), after.outputs.get(o)) {
                out.push(Problem::new(
                    format!("results/{link}"),
                    ProblemKind::ReviewLink,
                    format!(
                        "nixpkgs-review's link of {} ({o}) points to {path}, which {store} does not hold: give the store it was built in (--after-store), or build it",
                        r.attr
                    ),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_systems() -> (tempfile::TempDir, ReviewDir) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("report.json"),
            r#"{"pkgs": null, "result": {"aarch64-darwin": {"built": []}, "x86_64-linux": {"built": []}},
               "systems": ["x86_64-linux", "aarch64-darwin"]}"#,
        )
        .unwrap();
        let r = ReviewDir::open(dir.path()).unwrap();
        (dir, r)
    }

    /// `--system` first, then this machine's as Nix names it (asked only
    /// when the report has several), never a name of uname's.
    #[test]
    fn the_system_read_is_nixs_name_for_this_machine() {
        let (_d, r) = two_systems();
        let here = |s: &'static str| move || Some(s.to_string());
        assert_eq!(
            system(&r, None, here("aarch64-darwin")).unwrap(),
            "aarch64-darwin"
        );
        assert_eq!(
            system(&r, Some("x86_64-linux"), here("aarch64-darwin")).unwrap(),
            "x86_64-linux"
        );
        let e = system(&r, None, here("aarch64-macos")).unwrap_err();
        assert!(
            e.contains("none of them this machine's (aarch64-macos); pass --system"),
            "{e}"
        );
        let e = system(&r, Some("riscv64-linux"), here("x86_64-linux")).unwrap_err();
        assert!(
            e.contains("no results for riscv64-linux (it has: x86_64-linux, aarch64-darwin)"),
            "{e}"
        );
        // One system: that one, Nix not asked.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("report.json"),
            r#"{"system": "aarch64-darwin", "built": []}"#,
        )
        .unwrap();
        let one = ReviewDir::open(dir.path()).unwrap();
        assert_eq!(
            system(&one, None, || panic!("asked Nix for one system")).unwrap(),
            "aarch64-darwin"
        );
    }

    /// Per `extra-nixpkgs-config` of the report, over nixpkgs-review's own.
    #[test]
    fn the_base_gets_nixpkgs_reviews_config() {
        let (_d, mut r) = two_systems();
        assert_eq!(
            nixpkgs_config(&r),
            "({ allowUnfree = true; allowBroken = true; checkMeta = true; } // { }) // { allowBroken = false; }"
        );
        r.extra_nixpkgs_config = Some("{ cudaSupport = true; }".into());
        assert!(nixpkgs_config(&r).contains("// { cudaSupport = true; })"));
        // Not a set: nixpkgs-review refuses it, so nothing is taken.
        r.extra_nixpkgs_config = Some("builtins.exec".into());
        assert!(nixpkgs_config(&r).contains("// { })"));
    }
}
