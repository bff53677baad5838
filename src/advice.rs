//! What to do about a library error, in the command line's words: the
//! library's messages say what is wrong (a narinfo signed by no trusted
//! key, an output not in the store read); which flag or setting fixes it
//! is this binary's to say, appended to that error's line.

use nix_heft_types::Error;

/// The advice said after `e`'s message, if its fix is a flag or setting.
pub fn advice(e: &Error) -> Option<String> {
    let text = match e {
        Error::UntrustedNarinfo(u) if u.mismatched.is_empty() => {
            "; trust the cache's key with --trusted-public-keys or nix.conf's \
             trusted-public-keys, or accept such narinfos with --no-require-sigs"
        }
        Error::MissingOutput { .. } => {
            ": read it from a binary cache that has it (--store https://cache.nixos.org), \
             or build it first (nix build)"
        }
        Error::DanglingLink { .. } => {
            ": build it again (nix build), or read it from a binary cache that has it \
             (--store https://cache.nixos.org)"
        }
        Error::NoDerivation { .. } | Error::NoDeriver { .. } => {
            " (--derivation reads the build graph)"
        }
        Error::DeriverNotHere { .. } => {
            " (or give the installable with --derivation, which instantiates it)"
        }
        Error::NoLocalStore(_) => {
            "; point nix-heft at one with --store: a chroot store root (--store /mnt), a binary \
             cache (--store file:///path/to/cache), or a `nix path-info --json` file \
             (--store closure.json)"
        }
        Error::UnsupportedStore { spec, .. } if spec.starts_with("s3://") => {
            " (--store https://BUCKET.s3.REGION.amazonaws.com)"
        }
        Error::NeedsCredentials { .. } => {
            "; put them in a netrc file (--netrc-file, nix.conf's netrc-file, or ~/.netrc)"
        }
        _ => return None,
    };
    Some(text.to_string())
}
