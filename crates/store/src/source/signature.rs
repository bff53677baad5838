//! Narinfo signatures, made and checked as Nix does: which bytes a cache
//! owner's key signs, how keys and `Sig:` lines are written, and whether a
//! narinfo carries a valid signature by a trusted key.
//!
//! Every narinfo a binary cache (`file://`, `http(s)://`) gives is checked
//! with [`SigPolicy::check`] before anything is made of it: kept in this
//! run, kept in the local cache, or used for a size. The policy comes from
//! `--trusted-public-keys`/`--no-require-sigs` or nix.conf
//! (`trusted-public-keys`, `extra-trusted-public-keys`, `require-sigs`),
//! as the command layer reads them with `nix_heft_format::nix_conf`.
//!
//! Nix's rules (2.8; `ValidPathInfo::fingerprint` in libstore/path-info.cc,
//! `Key`, `PublicKey` and `verifyDetached` in libstore/crypto.cc):
//!
//! * The signed bytes, the *fingerprint*, are
//!   `1;<store path>;sha256:<nix32 NarHash>;<NarSize>;<references>`, the
//!   references as full store paths, sorted and without duplicates (a
//!   `StorePathSet`), joined by `,`, a self reference included. The NAR
//!   hash is always rendered in nix-base32 with its `sha256:` prefix
//!   whatever form the narinfo wrote it in; a NarSize of 0 has no
//!   fingerprint.
//! * Keys and signatures are `NAME:BASE64`, split at the first `:`; an
//!   empty name or payload is corrupt. A public key is 32 bytes, a
//!   signature 64 (ed25519).
//! * A signature counts when a trusted key has its name and the ed25519
//!   signature of the fingerprint verifies under that key; keys with the
//!   same name: the first listed is the one used. A signature naming an
//!   untrusted key is skipped unread; one naming a trusted key that is not
//!   base64 of 64 bytes makes Nix throw, failing the narinfo whatever its
//!   other signatures (checked with `nix store verify`).
//!
//! Verification is ed25519-dalek's `verify_strict`, the check closest to
//! libsodium's `crypto_sign_verify_detached` that Nix calls (both refuse
//! non-canonical and small-order points); no cryptography is done here.
//!
//! * Before any signature, Nix trusts a narinfo whose `CA:` field proves
//!   its store path (`ValidPathInfo::isContentAddressed`, path-info.cc;
//!   `makeTextPath`/`makeFixedOutputPath`, store-api.cc): the path is
//!   recomputed from the content address, the name and the references,
//!   and must be the one described. [`content_addressed`] does the same
//!   for `text:` and `fixed:` SHA-256 addresses (other algorithms are not
//!   recomputed, and such a narinfo needs a signature).

use std::fmt;
use std::path::Path;

use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

use crate::source::narinfo::NarInfo;
use nix_heft_format::nar::hash::NarHash;

/// Bytes of an ed25519 public key.
pub const PUBLIC_KEY_BYTES: usize = 32;
/// Bytes of an ed25519 signature.
pub const SIGNATURE_BYTES: usize = 64;

/// Standard base64; padding optional, as Nix's `base64Decode` stops at the
/// first `=` and so never needs one.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Why a key, a signature or a narinfo's fingerprint is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SigError {
    /// Not `NAME:BASE64` with both parts non-empty.
    #[error("{what} '{text}' is not NAME:BASE64")]
    NotNamed {
        /// "public key" or "signature".
        what: &'static str,
        /// The text given.
        text: String,
    },
    /// The part after the name is not base64.
    #[error("{what} '{text}' is not valid base64 after its name")]
    BadBase64 {
        /// "public key" or "signature".
        what: &'static str,
        /// The text given.
        text: String,
    },
    /// Base64 of the wrong number of bytes.
    #[error("{what} '{text}' holds {len} bytes, not {want}")]
    WrongLength {
        /// "public key" or "signature".
        what: &'static str,
        /// The text given.
        text: String,
        /// Bytes decoded.
        len: usize,
        /// Bytes an ed25519 key or signature has.
        want: usize,
    },
    /// 32 bytes that are not an ed25519 public key.
    #[error("public key '{text}' is not a valid ed25519 key")]
    NotAKey {
        /// The text given.
        text: String,
    },
    /// The narinfo's `NarHash` is not a SHA-256 hash Nix could have written.
    #[error("{0}")]
    BadNarHash(String),
    /// `NarSize: 0`: Nix refuses to make (or check) a fingerprint.
    #[error("NarSize is 0: no fingerprint to check a signature against")]
    NoNarSize,
}

impl SigError {
    /// The key name a malformed key or signature text starts with
    /// (`NAME:`), when it has one.
    pub fn named(&self) -> Option<&str> {
        match self {
            SigError::NotNamed { text, .. }
            | SigError::BadBase64 { text, .. }
            | SigError::WrongLength { text, .. }
            | SigError::NotAKey { text } => text
                .split_once(':')
                .map(|(n, _)| n)
                .filter(|n| !n.is_empty()),
            SigError::BadNarHash(_) | SigError::NoNarSize => None,
        }
    }
}

/// Splits `NAME:PAYLOAD` at the first colon, as Nix's `split`: both parts
/// must be non-empty.
fn split_named<'a>(what: &'static str, s: &'a str) -> Result<(&'a str, &'a str), SigError> {
    match s.split_once(':') {
        Some((n, p)) if !n.is_empty() && !p.is_empty() => Ok((n, p)),
        _ => Err(SigError::NotNamed {
            what,
            text: s.to_string(),
        }),
    }
}

fn decode<const N: usize>(what: &'static str, s: &str, payload: &str) -> Result<[u8; N], SigError> {
    let bytes = BASE64.decode(payload).map_err(|_| SigError::BadBase64 {
        what,
        text: s.to_string(),
    })?;
    bytes
        .as_slice()
        .try_into()
        .map_err(|_| SigError::WrongLength {
            what,
            text: s.to_string(),
            len: bytes.len(),
            want: N,
        })
}

/// A named ed25519 public key, `NAME:BASE64` as
/// `nix-store --generate-binary-cache-key` writes it.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    name: String,
    key: ed25519_dalek::VerifyingKey,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self)
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.name, BASE64.encode(self.key.as_bytes()))
    }
}

impl PublicKey {
    /// Parses `NAME:BASE64` of 32 bytes. Nix checks only the length; a
    /// 32-byte string that is no ed25519 point could never verify anything,
    /// so it is refused here with the key named.
    pub fn parse(s: &str) -> Result<PublicKey, SigError> {
        let what = "public key";
        let (name, payload) = split_named(what, s)?;
        let bytes = decode::<PUBLIC_KEY_BYTES>(what, s, payload)?;
        let key =
            ed25519_dalek::VerifyingKey::from_bytes(&bytes).map_err(|_| SigError::NotAKey {
                text: s.to_string(),
            })?;
        Ok(PublicKey {
            name: name.to_string(),
            key,
        })
    }

    /// The key's name (`cache.nixos.org-1`).
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// One `Sig:` value: the signing key's name and the 64-byte signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The name of the key that made it.
    pub key_name: String,
    bytes: [u8; SIGNATURE_BYTES],
}

impl Signature {
    /// Parses `NAME:BASE64` of 64 bytes.
    pub fn parse(s: &str) -> Result<Signature, SigError> {
        let what = "signature";
        let (name, payload) = split_named(what, s)?;
        Ok(Signature {
            key_name: name.to_string(),
            bytes: decode::<SIGNATURE_BYTES>(what, s, payload)?,
        })
    }
}

/// The public keys a narinfo's signature may be by (Nix's `PublicKeys`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedKeys {
    keys: Vec<PublicKey>,
}

impl TrustedKeys {
    /// Parses every key, as `trusted-public-keys` lists them; any corrupt
    /// key is an error (Nix's `getDefaultPublicKeys` throws too).
    pub fn parse<S: AsRef<str>>(list: impl IntoIterator<Item = S>) -> Result<Self, SigError> {
        let keys = list
            .into_iter()
            .map(|s| PublicKey::parse(s.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TrustedKeys { keys })
    }

    /// The key named `name`: the first of that name, as Nix's map keeps it.
    pub fn get(&self, name: &str) -> Option<&PublicKey> {
        self.keys.iter().find(|k| k.name == name)
    }

    /// The keys' names, in the order given.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|k| k.name.as_str())
    }

    /// No key at all: nothing can be verified.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Whether the narinfo's `CA` field proves its store path, so that Nix
/// trusts it unsigned (see the module docs): `text:sha256:H` is
/// `makeTextPath(name, H, references)`, `fixed:r:sha256:H` is
/// `makeFixedOutputPath` of a recursive SHA-256 (type `source`, a self
/// reference as `:self`), `fixed:sha256:H` a flat one (type `output:out`
/// over `fixed:out:sha256:<hex>:`, no references allowed).
pub fn content_addressed(info: &NarInfo) -> bool {
    use sha2::{Digest, Sha256};
    let Some(ca) = info.ca.as_deref() else {
        return false;
    };
    let (kind, rest) = match ca.split_once(':') {
        Some(("text", rest)) => ("text", rest),
        Some(("fixed", rest)) => match rest.strip_prefix("r:") {
            Some(r) => ("recursive", r),
            None => ("flat", rest),
        },
        _ => return false,
    };
    let Some(hash) = rest.strip_prefix("sha256:") else {
        return false;
    };
    let Ok(hash) = NarHash::parse(&format!("sha256:{hash}")) else {
        return false;
    };
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let path = &info.store_path;
    let store_dir = path.store_dir();
    let mut refs: Vec<&str> = info
        .references
        .iter()
        .filter(|r| *r != path)
        .map(|r| r.as_str())
        .collect();
    refs.sort_unstable();
    refs.dedup();
    let self_ref = info.references.iter().any(|r| r == path);
    let typed = |t: &str| {
        let mut s = t.to_string();
        for r in &refs {
            s.push(':');
            s.push_str(r);
        }
        s
    };
    let (ty, inner) = match kind {
        // Text paths cannot refer to themselves.
        "text" if !self_ref => (typed("text"), hex(&hash.0)),
        "recursive" => {
            let mut t = typed("source");
            if self_ref {
                t.push_str(":self");
            }
            (t, hex(&hash.0))
        }
        "flat" if refs.is_empty() && !self_ref => {
            let fixed = format!("fixed:out:sha256:{}:", hex(&hash.0));
            (
                "output:out".to_string(),
                hex(&Sha256::digest(fixed.as_bytes())),
            )
        }
        _ => return false,
    };
    let s = format!("{ty}:sha256:{inner}:{store_dir}:{}", path.name());
    let digest = Sha256::digest(s.as_bytes());
    let mut compressed = [0u8; 20];
    for (i, b) in digest.iter().enumerate() {
        compressed[i % 20] ^= b;
    }
    nix_heft_format::nixbase32::encode(&compressed) == path.hash_part()
}

/// The bytes Nix signs for a narinfo (see the module docs).
pub fn fingerprint(info: &NarInfo) -> Result<String, SigError> {
    if info.nar_size == 0 {
        return Err(SigError::NoNarSize);
    }
    let hash = NarHash::parse(&info.nar_hash).map_err(SigError::BadNarHash)?;
    let mut refs: Vec<&str> = info.references.iter().map(|r| r.as_str()).collect();
    refs.sort_unstable();
    refs.dedup();
    Ok(format!(
        "1;{};{};{};{}",
        info.store_path.as_str(),
        hash.to_nix32(),
        info.nar_size,
        refs.join(",")
    ))
}

/// Why one signature (or the lack of any) does not make a narinfo trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SigProblem {
    /// No `Sig:` line at all.
    Unsigned,
    /// A `Sig:` value that is not `NAME:BASE64` of 64 bytes, not naming
    /// a trusted key (Nix skips it unread).
    Malformed(SigError),
    /// A malformed `Sig:` value naming a trusted key. Nix then fails the
    /// whole check ("signature is not valid", "invalid character in Base64
    /// string"), even when another signature verifies, and so does
    /// [`verify`]: the narinfo is not trusted.
    MalformedTrusted(SigError),
    /// A well-formed signature by a key not among the trusted ones.
    UntrustedKey(String),
    /// A trusted key's signature that does not verify: the signed fields
    /// (path, NarHash, NarSize, References) were changed after signing, or
    /// the key trusted under that name is another key.
    Mismatch(String),
    /// No fingerprint can be made (bad NarHash, NarSize 0), so nothing
    /// verifies.
    NoFingerprint(SigError),
}

impl fmt::Display for SigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SigProblem::Unsigned => f.write_str("no signature"),
            SigProblem::Malformed(e) => write!(f, "malformed: {e}"),
            SigProblem::MalformedTrusted(e) => {
                write!(f, "malformed signature naming a trusted key: {e}")
            }
            SigProblem::UntrustedKey(k) => write!(f, "signed by '{k}', which is not trusted"),
            SigProblem::Mismatch(k) => write!(
                f,
                "signature by '{k}', a trusted key's name, does not verify"
            ),
            SigProblem::NoFingerprint(e) => write!(f, "cannot check signatures: {e}"),
        }
    }
}

/// The outcome of checking one narinfo's signatures.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verdict {
    /// The trusted key whose signature verified (the first, in `Sig:`
    /// order); `None` means the narinfo is not trusted.
    pub signed_by: Option<String>,
    /// What was wrong with the other signatures, or why there is no valid
    /// one; may be non-empty even when `signed_by` is set (another,
    /// untrusted signature), which does not lessen the trust.
    pub problems: Vec<SigProblem>,
    /// The key names of every well-formed signature, for messages.
    pub keys_found: Vec<String>,
}

impl Verdict {
    /// Signed by a trusted key.
    pub fn is_trusted(&self) -> bool {
        self.signed_by.is_some()
    }

    /// The trusted key names that a signature named without verifying
    /// (a mismatch, or a malformed signature under a trusted name), each
    /// once, in `Sig:` order: what makes a refusal a sign of tampering
    /// rather than of a key not configured.
    pub fn mismatched(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in &self.problems {
            let name = match p {
                SigProblem::Mismatch(k) => k.clone(),
                SigProblem::MalformedTrusted(e) => match e.named() {
                    Some(n) => n.to_string(),
                    None => continue,
                },
                _ => continue,
            };
            if !out.contains(&name) {
                out.push(name);
            }
        }
        out
    }
}

/// Checks `sigs` (the `Sig:` values) of the narinfo `info` against `keys`.
pub fn verify(info: &NarInfo, sigs: &[&str], keys: &TrustedKeys) -> Verdict {
    let mut v = Verdict::default();
    let fp = fingerprint(info);
    let mut poisoned = false;
    if sigs.is_empty() {
        v.problems.push(SigProblem::Unsigned);
    }
    for s in sigs {
        let sig = match Signature::parse(s) {
            Ok(sig) => sig,
            Err(e) => {
                // Nix looks the name up before decoding (crypto.cc
                // verifyDetached): only a trusted name makes it throw.
                let name = s.split_once(':').map_or("", |(n, _)| n);
                if !name.is_empty() && keys.get(name).is_some() {
                    poisoned = true;
                    v.problems.push(SigProblem::MalformedTrusted(e));
                } else {
                    v.problems.push(SigProblem::Malformed(e));
                }
                continue;
            }
        };
        v.keys_found.push(sig.key_name.clone());
        let Some(key) = keys.get(&sig.key_name) else {
            v.problems.push(SigProblem::UntrustedKey(sig.key_name));
            continue;
        };
        let fp = match &fp {
            Ok(fp) => fp,
            Err(e) => {
                if !v.problems.contains(&SigProblem::NoFingerprint(e.clone())) {
                    v.problems.push(SigProblem::NoFingerprint(e.clone()));
                }
                continue;
            }
        };
        let ed = ed25519_dalek::Signature::from_bytes(&sig.bytes);
        if key.key.verify_strict(fp.as_bytes(), &ed).is_ok() {
            if v.signed_by.is_none() {
                v.signed_by = Some(sig.key_name);
            }
        } else {
            v.problems.push(SigProblem::Mismatch(sig.key_name));
        }
    }
    if poisoned {
        v.signed_by = None;
    }
    v
}

/// Parses a narinfo's text (`file` names it in errors) and checks its
/// `Sig:` lines against `keys`.
pub fn verify_narinfo(
    text: &str,
    store_dir: &str,
    file: &Path,
    keys: &TrustedKeys,
) -> crate::Result<(NarInfo, Verdict)> {
    let info = NarInfo::parse(text, store_dir, file)?;
    let sigs: Vec<&str> = info.sigs.iter().map(String::as_str).collect();
    let verdict = verify(&info, &sigs, keys);
    Ok((info, verdict))
}

/// Which narinfos a run accepts: those signed by one of `keys`, or, when
/// signatures are not required, every one (with one warning for the run,
/// however many stores and narinfos). Shared by every binary cache a run
/// opens (an `Arc` in `OpenOptions::signatures`).
#[derive(Debug, Default)]
pub struct SigPolicy {
    keys: TrustedKeys,
    require: bool,
    /// The one warning about an accepted narinfo was given.
    warned: std::sync::atomic::AtomicBool,
}

impl SigPolicy {
    /// Narinfos must be signed by one of `keys` (`require`, Nix's
    /// `require-sigs = true`), or are accepted anyway with a warning.
    pub fn new(keys: TrustedKeys, require: bool) -> Self {
        SigPolicy {
            keys,
            require,
            warned: Default::default(),
        }
    }

    /// The trusted keys.
    pub fn keys(&self) -> &TrustedKeys {
        &self.keys
    }

    /// Whether a narinfo without a trusted signature is refused.
    pub fn required(&self) -> bool {
        self.require
    }

    /// Checks the narinfo `info` that `cache` (its URL, for messages) gave:
    /// the name of the trusted key that signed it, `None` when it is
    /// accepted unsigned (not required: the run's one warning goes to
    /// `log`), or [`crate::Error::UntrustedNarinfo`] naming the path, the
    /// cache, the keys found and why none counts.
    pub fn check(
        &self,
        info: &NarInfo,
        cache: &str,
        log: &crate::source::RunLog,
    ) -> crate::Result<Option<String>> {
        let sigs: Vec<&str> = info.sigs.iter().map(String::as_str).collect();
        let v = verify(info, &sigs, &self.keys);
        if let Some(k) = v.signed_by {
            return Ok(Some(k));
        }
        // Trusted as Nix trusts it: its path is its content's address.
        if content_addressed(info) {
            return Ok(None);
        }
        let why = v
            .problems
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("; ");
        if !self.require {
            if !self.warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
                log.warn(format!(
                    "accepting {} from {cache} without a valid signature by a trusted key \
                     ({why}), and every other such narinfo of this run: signatures are not \
                     required by this run (its policy: require-sigs off)",
                    info.store_path
                ));
            }
            return Ok(None);
        }
        let names = |it: &mut dyn Iterator<Item = &str>| {
            let v: Vec<&str> = it.collect();
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        Err(crate::Error::UntrustedNarinfo(Box::new(
            crate::error::Untrusted {
                path: info.store_path.to_string(),
                cache: cache.to_string(),
                found: names(&mut v.keys_found.iter().map(String::as_str)),
                trusted: names(&mut self.keys.names()),
                why,
                mismatched: v.mismatched(),
            },
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path `builtins.toFile "heft-ca-probe" "hello ca\n"` made, its
    /// narinfo as `nix copy` wrote it unsigned (Nix 2.8, which accepts it:
    /// `nix store verify --sigs-needed 1`); tests/testsuite/substituters.rs checks
    /// more kinds against Nix.
    #[test]
    fn a_text_path_is_proved_by_its_content_address() {
        let text = "StorePath: /nix/store/ihdgm6fsbz4hc8wnazm67l1ss9dq0wis-heft-ca-probe\n\
URL: nar/x.nar.xz\nCompression: xz\n\
NarHash: sha256:1b25p565bqlixnc4rz5gq341id9l3acr2r2xcw680f71f28yjgvl\n\
NarSize: 128\nReferences: \n\
CA: text:sha256:1ffb67ynwdxr2p5rvycx7prnzdrb65g7ljq8xg2bsm1fz7kx0y4f\n";
        let info = NarInfo::parse(text, "/nix/store", Path::new("t")).unwrap();
        assert!(content_addressed(&info));
        // Another content, another name, a reference added: not proved.
        for edited in [
            text.replace("1ffb67", "1ffb68"),
            text.replace("-heft-ca-probe", "-heft-ca-probf"),
            text.replace(
                "References: ",
                "References: hh8rrl9zyj2zn11rk4kjmydn879vzcdh-glibc-2.36",
            ),
            text.replace("CA: text:", "CA: fixed:r:"),
            text.replace("CA: text:sha256:", "CA: text:sha1:"),
        ] {
            let info = NarInfo::parse(&edited, "/nix/store", Path::new("t")).unwrap();
            assert!(!content_addressed(&info), "{edited}");
        }
        let policy = SigPolicy::new(TrustedKeys::default(), true);
        let info = NarInfo::parse(text, "/nix/store", Path::new("t")).unwrap();
        assert_eq!(
            policy
                .check(&info, "file:///c", &Default::default())
                .unwrap(),
            None
        );
    }

    // Written by Nix 2.8: `nix-store --generate-binary-cache-key test-1`,
    // then `nix copy --to 'file://…?secret-key=…'` of a path referring to
    // itself and to one dependency.
    const KEY: &str = "test-1:p2VkyP9EJ9lK4yt5aERUf7pYPGQyBwnvBvOBgRA+FkY=";
    const SIG_B64: &str =
        "8qT6FMNVvU7BOBk2O9jHmigwHi88tHj7kahj6dpMtDp7EbQ0J9T8xbp71lErqXwcdVbHAnrHVtM4lmlER/5rAg==";
    const TEXT: &str = "StorePath: /nix/store/hgn31rkl74g6jmklrnn74m5inar53fah-sigtop\n\
URL: nar/0wjgfcw9cdjg0y4v3zvpxb36zak7fhj2y5x016d9b0a7lmd6bby4.nar\n\
Compression: none\n\
FileHash: sha256:0wjgfcw9cdjg0y4v3zvpxb36zak7fhj2y5x016d9b0a7lmd6bby4\n\
FileSize: 216\n\
NarHash: sha256:0wjgfcw9cdjg0y4v3zvpxb36zak7fhj2y5x016d9b0a7lmd6bby4\n\
NarSize: 216\n\
References: hgn31rkl74g6jmklrnn74m5inar53fah-sigtop g9kl5mlg5x76h6zs76bd9icl5fbcfhk8-sigdep\n\
Deriver: ncyff3cbz1df6zxga8lcw4cndshq9rps-sigtop.drv\n\
Sig: test-1:8qT6FMNVvU7BOBk2O9jHmigwHi88tHj7kahj6dpMtDp7EbQ0J9T8xbp71lErqXwcdVbHAnrHVtM4lmlER/5rAg==\n";

    fn keys() -> TrustedKeys {
        TrustedKeys::parse([KEY]).unwrap()
    }

    fn check(text: &str) -> Verdict {
        verify_narinfo(text, "/nix/store", Path::new("t.narinfo"), &keys())
            .unwrap()
            .1
    }

    #[test]
    fn fingerprint_is_nixs() {
        // References written in another order than Nix sorts them, to show
        // the sort; the signature above verifies only over this string.
        let info = NarInfo::parse(TEXT, "/nix/store", Path::new("t")).unwrap();
        assert_eq!(
            fingerprint(&info).unwrap(),
            "1;/nix/store/hgn31rkl74g6jmklrnn74m5inar53fah-sigtop;\
             sha256:0wjgfcw9cdjg0y4v3zvpxb36zak7fhj2y5x016d9b0a7lmd6bby4;216;\
             /nix/store/g9kl5mlg5x76h6zs76bd9icl5fbcfhk8-sigdep,\
             /nix/store/hgn31rkl74g6jmklrnn74m5inar53fah-sigtop"
        );
    }

    #[test]
    fn nix_signed_narinfo_verifies() {
        let v = check(TEXT);
        assert_eq!(v.signed_by.as_deref(), Some("test-1"), "{v:?}");
        assert!(v.problems.is_empty());
        assert_eq!(v.keys_found, ["test-1"]);
    }

    #[test]
    fn nar_hash_in_other_forms_gives_the_same_fingerprint() {
        let h =
            NarHash::parse("sha256:0wjgfcw9cdjg0y4v3zvpxb36zak7fhj2y5x016d9b0a7lmd6bby4").unwrap();
        let hex: String = h.0.iter().map(|b| format!("{b:02x}")).collect();
        let sri = format!(
            "sha256-{}",
            base64::engine::general_purpose::STANDARD.encode(h.0)
        );
        for form in [format!("sha256:{hex}"), sri] {
            let t = TEXT.replace(
                "NarHash: sha256:0wjgfcw9cdjg0y4v3zvpxb36zak7fhj2y5x016d9b0a7lmd6bby4",
                &format!("NarHash: {form}"),
            );
            assert!(check(&t).is_trusted(), "{form}");
        }
    }

    #[test]
    fn edited_fields_break_the_signature() {
        for (from, to) in [
            ("NarSize: 216", "NarSize: 217"),
            (
                "References: hgn31rkl74g6jmklrnn74m5inar53fah-sigtop ",
                "References: ",
            ),
            ("NarHash: sha256:0wjg", "NarHash: sha256:1wjg"),
        ] {
            let v = check(&TEXT.replace(from, to));
            assert_eq!(v.signed_by, None, "{to}");
            assert_eq!(v.problems, [SigProblem::Mismatch("test-1".into())], "{to}");
        }
        // Fields outside the fingerprint may change (Nix does not sign them).
        assert!(check(&TEXT.replace("Compression: none", "Compression: xz")).is_trusted());
        let v = check(&TEXT.replace("NarSize: 216", "NarSize: 0"));
        assert_eq!(v.problems, [SigProblem::NoFingerprint(SigError::NoNarSize)]);
    }

    #[test]
    fn unsigned_untrusted_and_malformed() {
        let unsigned: String = TEXT
            .lines()
            .filter(|l| !l.starts_with("Sig"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(check(&unsigned).problems, [SigProblem::Unsigned]);

        let other = TEXT.replace("Sig: test-1:", "Sig: other-1:");
        let v = check(&other);
        assert_eq!(v.problems, [SigProblem::UntrustedKey("other-1".into())]);
        assert_eq!(v.keys_found, ["other-1"]);

        for (sig, want, trusted_name) in [
            ("test-1:!!notbase64!!", "is not valid base64", true),
            ("test-1:AAAA", "holds 3 bytes, not 64", true),
            ("test-1:", "is not NAME:BASE64", true),
            ("other-1:AAAA", "holds 3 bytes, not 64", false),
            (":AAAA", "is not NAME:BASE64", false),
            ("nocolon", "is not NAME:BASE64", false),
        ] {
            let t = format!("{unsigned}Sig: {sig}\n");
            let v = check(&t);
            assert!(!v.is_trusted());
            let e = match (v.problems.as_slice(), trusted_name) {
                ([SigProblem::MalformedTrusted(e)], true) => e,
                ([SigProblem::Malformed(e)], false) => e,
                _ => panic!("{sig}: {v:?}"),
            };
            assert!(e.to_string().contains(want), "{sig}: {e}");
            // With the good signature too: only a malformed one naming a
            // trusted key spoils it, as in Nix.
            let v = check(&format!("{t}Sig: test-1:{SIG_B64}\n"));
            assert_eq!(v.is_trusted(), !trusted_name, "{sig}: {v:?}");
        }
        // A good signature among others by untrusted keys counts.
        let t = format!("{unsigned}Sig: other-1:{SIG_B64}\nSig: test-1:{SIG_B64}\n");
        let v = check(&t);
        assert_eq!(v.signed_by.as_deref(), Some("test-1"));
        assert_eq!(v.problems, [SigProblem::UntrustedKey("other-1".into())]);
        assert_eq!(v.keys_found, ["other-1", "test-1"]);
    }

    #[test]
    fn public_keys() {
        let k = PublicKey::parse(KEY).unwrap();
        assert_eq!(k.name(), "test-1");
        assert_eq!(k.to_string(), KEY);
        // Unpadded base64 is accepted, as Nix's decoder stops at `=` anyway.
        assert!(PublicKey::parse(KEY.trim_end_matches('=')).is_ok());
        for (bad, want) in [
            ("test-1", "is not NAME:BASE64"),
            ("test-1:AAAA", "holds 3 bytes, not 32"),
            ("test-1:%%%%", "not valid base64"),
        ] {
            let e = TrustedKeys::parse([KEY, bad]).unwrap_err();
            assert!(e.to_string().contains(want), "{bad}: {e}");
            assert!(e.to_string().contains(bad), "{e}");
        }
        // Two keys of one name: the first is used, as in Nix's map.
        let same_name = "test-1:6NCHdD59X431o0gWypbMrAURkbJ16ZPMQFGspcDShjY=";
        let first_wrong = TrustedKeys::parse([same_name, KEY]).unwrap();
        let v = verify_narinfo(TEXT, "/nix/store", Path::new("t"), &first_wrong).unwrap();
        assert_eq!(v.1.problems, [SigProblem::Mismatch("test-1".into())]);
        let two = TrustedKeys::parse([
            KEY,
            "cache.nixos.org-1:6NCHdD59X431o0gWypbMrAURkbJ16ZPMQFGspcDShjY=",
        ])
        .unwrap();
        assert_eq!(
            two.names().collect::<Vec<_>>(),
            ["test-1", "cache.nixos.org-1"]
        );
    }
}
