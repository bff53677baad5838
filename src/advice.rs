//! What to do about a library error, in the command line's words: the
//! library's messages say what is wrong (a narinfo signed by no trusted
//! key, an output not in the store read); which flag or setting fixes it
//! is this binary's to say, appended to that error's line. Each crate has
//! its own error enum; this judge knows them all.

use nix_heft_ops::Error as OpsError;
use nix_heft_ops::error::Layers;
use nix_heft_scan::Error as ScanError;
use nix_heft_store::Error as StoreError;
use nix_heft_types::error::Judged;

/// Whether `e` is the command line's fault (exit 2), and what to do about
/// it when its fix is a flag or setting.
pub fn judge(e: &(dyn std::error::Error + 'static)) -> Judged {
    let s = Layers::of(e);
    Judged {
        usage: s.is_usage(),
        advice: advice(&s).map(str::to_string),
    }
}

fn advice(s: &Layers) -> Option<&'static str> {
    let ops = match s.ops {
        Some(OpsError::MissingOutput { .. }) => Some(
            ": read it from a binary cache that has it (--store https://cache.nixos.org), \
             or build it first (nix build)",
        ),
        Some(OpsError::DanglingLink { .. }) => Some(
            ": build it again (nix build), or read it from a binary cache that has it \
             (--store https://cache.nixos.org)",
        ),
        Some(OpsError::DeriverNotHere { .. }) => {
            Some(" (or give the installable with --derivation, which instantiates it)")
        }
        _ => None,
    };
    if ops.is_some() {
        return ops;
    }
    let scan = match s.scan {
        Some(ScanError::NoDeriver { .. }) => Some(" (--derivation reads the build graph)"),
        Some(ScanError::NoCandidates) => Some(": give --candidates FILE or --to PATH"),
        _ => None,
    };
    if scan.is_some() {
        return scan;
    }
    Some(match s.store? {
        StoreError::UntrustedNarinfo(u) if u.mismatched.is_empty() => {
            "; trust the cache's key with --trusted-public-keys or nix.conf's \
             trusted-public-keys, or accept such narinfos with --no-require-sigs"
        }
        StoreError::NoDerivation { .. } => " (--derivation reads the build graph)",
        StoreError::NoLocalStore(_) => {
            "; point nix-heft at one with --store: a chroot store root (--store /mnt), a binary \
             cache (--store file:///path/to/cache), or a `nix path-info --json` file \
             (--store closure.json)"
        }
        StoreError::UnsupportedStore { spec, .. } if spec.starts_with("s3://") => {
            " (--store https://BUCKET.s3.REGION.amazonaws.com)"
        }
        StoreError::NeedsCredentials { .. } => {
            "; put them in a netrc file (--netrc-file, nix.conf's netrc-file, or ~/.netrc)"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error as the binary meets it: in a context (anyhow's), its
    /// crate's error inside another crate's.
    fn failure(e: OpsError) -> nix_heft_types::error::Failure {
        let e = anyhow::Error::new(e).context("reading the closure");
        nix_heft_types::error::failure(e.as_ref(), &judge)
    }

    #[test]
    fn each_crates_errors_keep_their_exit_code_and_advice() {
        // The store's, inside core's: advice after its line, exit 1.
        let f = failure(StoreError::NoLocalStore("/nix".into()).into());
        assert_eq!(f.code, 1);
        assert_eq!(
            f.lines[1],
            "  caused by: no Nix store found: /nix does not exist; point nix-heft at one with \
             --store: a chroot store root (--store /mnt), a binary cache (--store \
             file:///path/to/cache), or a `nix path-info --json` file (--store closure.json)"
        );
        // A store that names nothing readable: the command line's (exit 2).
        let f = failure(
            StoreError::UnsupportedStore {
                spec: "s3://bucket".into(),
                reason: "not read".into(),
            }
            .into(),
        );
        assert_eq!(f.code, 2);
        assert!(f.lines[1].ends_with("(--store https://BUCKET.s3.REGION.amazonaws.com)"));
        // A name that matches nothing is exit 2, inside any crate's error.
        let f = failure(
            nix_heft_types::Error::NoMatch {
                pattern: "x".into(),
                store: "s".into(),
                closest: None,
                candidates: Vec::new(),
            }
            .into(),
        );
        assert_eq!(f.code, 2);
        // The scan's, inside the operations': its advice, its exit code.
        let f = failure(ScanError::NoDeriver { path: "/p".into() }.into());
        assert_eq!(f.code, 1);
        assert!(f.lines[1].ends_with(" (--derivation reads the build graph)"));
        let f = failure(ScanError::NoCandidates.into());
        assert_eq!(f.code, 2);
        assert_eq!(
            f.lines[1],
            "  caused by: no store to take the candidates from: give --candidates FILE or --to PATH"
        );
        // The graph's store error inside the operations': the store's advice.
        let f =
            failure(nix_heft_graph::Error::Store(StoreError::NoLocalStore("/nix".into())).into());
        assert_eq!(f.code, 1);
        assert!(f.lines[1].contains("point nix-heft at one with --store"));
        // The shared ones, through either crate: a usage error is exit 2.
        let f = failure(nix_heft_types::Error::Usage("give one root".into()).into());
        assert_eq!(
            (f.code, f.lines[1].as_str()),
            (2, "  caused by: give one root")
        );
        let f = failure(StoreError::Usage("no store to read".into()).into());
        assert_eq!(f.code, 2);
        // Eval's, as they are (never turned into strings): no `nix` is the
        // command line's (exit 2), through the resolver's error or alone,
        // and so is an `impact` side that is no checkout, inside the
        // preparing error that names its flag.
        let nix = || nix_heft_eval::installable::InstallableError::NixNotFound {
            arg: "nixpkgs#hello".into(),
            program: "nix".into(),
        };
        let resolved: nix_heft_ops::resolve::ResolveError = nix().into();
        let f = nix_heft_types::error::failure(
            anyhow::Error::new(resolved).context("resolving").as_ref(),
            &judge,
        );
        assert_eq!((f.code, f.lines.len()), (2, 2), "{:?}", f.lines);
        let f = nix_heft_types::error::failure(anyhow::Error::new(nix()).as_ref(), &judge);
        assert_eq!(f.code, 2, "{:?}", f.lines);
        let side = nix_heft_ops::impact::prepare::PrepareError::Before {
            given: "/nowhere".into(),
            source: nix_heft_eval::attrs::side::SideError::NotACheckout {
                repo: "/nowhere".into(),
                rev: "main".into(),
            },
        };
        let f = nix_heft_types::error::failure(anyhow::Error::new(side).as_ref(), &judge);
        assert_eq!((f.code, f.lines.len()), (2, 1), "{:?}", f.lines);
        assert!(
            f.lines[0].starts_with("--before /nowhere: "),
            "{:?}",
            f.lines
        );
        // A failed download is the store's: a failure, exit 1, no advice.
        let f = failure(
            StoreError::Http {
                url: "https://cache/x.narinfo".into(),
                reason: "500".into(),
            }
            .into(),
        );
        assert_eq!(f.code, 1);
        assert_eq!(f.lines[1], "  caused by: https://cache/x.narinfo: 500");
    }
}
