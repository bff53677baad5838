//! Verdicts: is a held reference needed at run time?
//!
//! Each piece of evidence gets a [`Verdict`] with a one-line reason, from
//! its kind and where its file sits in the store path. The locations follow
//! what nixpkgs' multiple-outputs setup hook moves out of `out`: headers,
//! pkg-config and CMake files and `nix-support/` go to `dev`, manuals and
//! documentation to `man`/`doc`/`info`/`devdoc`; whatever the hook leaves in
//! `out` (bin, lib, libexec, share data, etc) is what programs load.

use nix_heft_types::evidence::Verdict;
use nix_heft_types::evidence::{Evidence, Kind};

/// Prefixes (relative to the store path) that nixpkgs' `_multioutDevs` and
/// the dev conventions send to `dev`.
pub const BUILD_PREFIXES: &[&str] = &[
    "include",
    "lib/pkgconfig",
    "share/pkgconfig",
    "lib/cmake",
    "share/cmake",
    "share/aclocal",
    "nix-support",
];

/// Prefixes that `_multioutDocs` sends to `doc`, `man`, `info`, `devdoc`.
pub const DOC_PREFIXES: &[&str] = &[
    "share/doc",
    "share/man",
    "share/info",
    "share/gtk-doc",
    "share/devhelp",
];

/// True when `file` is `prefix` or lies below it.
pub fn under(file: &str, prefix: &str) -> bool {
    nix_heft_format::relpath::is_under(file.as_bytes(), prefix.as_bytes())
}

/// Location class of a file, from its path inside the store path.
pub fn location(file: &str) -> Option<Verdict> {
    if BUILD_PREFIXES.iter().any(|p| under(file, p))
        || file.ends_with(".la")
        || file.ends_with(".a")
    {
        return Some(Verdict::Build);
    }
    if DOC_PREFIXES.iter().any(|p| under(file, p)) {
        return Some(Verdict::Docs);
    }
    None
}

/// The verdict for one piece of evidence, with its reason.
pub fn judge(ev: &Evidence) -> (Verdict, String) {
    use Kind::*;
    if let Some(by) = &ev.used_by {
        return (Verdict::Runtime, format!("run-time data: {by}"));
    }
    match ev.kind {
        ElfInterpreter => (
            Verdict::Runtime,
            "ELF interpreter: the loader runs it".into(),
        ),
        ElfRunpath if ev.dead => (
            Verdict::Dead,
            "RUNPATH entry provides none of the file's needed or dlopen()ed libraries".into(),
        ),
        ElfRunpath => (
            Verdict::Runtime,
            format!(
                "RUNPATH entry provides {}",
                if ev.serves.is_empty() {
                    "libraries".to_string()
                } else {
                    ev.serves.join(", ")
                }
            ),
        ),
        ElfNeeded => (Verdict::Runtime, "DT_NEEDED names it".into()),
        ElfDebug => (
            Verdict::Dead,
            "only in debug information (strip or separateDebugInfo)".into(),
        ),
        ElfComment => (
            Verdict::Dead,
            "only in .comment/.note sections (strip)".into(),
        ),
        Shebang => (Verdict::Runtime, "script interpreter (#! line)".into()),
        NixSupport => (Verdict::Build, "nix-support/ is read only by builds".into()),
        DrvInput => (
            Verdict::Build,
            "an input of the derivation: the build reads it".into(),
        ),
        _ => match location(&ev.file) {
            Some(Verdict::Build) => (
                Verdict::Build,
                format!("{} is a build-time file (dev output)", ev.file),
            ),
            Some(v) => (v, format!("{} is documentation", ev.file)),
            None => match ev.kind {
                ElfString | ElfOther => (
                    Verdict::Unknown,
                    "a string in the ELF's data: a path it opens, or only a message".into(),
                ),
                Binary if ev.note.is_some() => (Verdict::Unknown, "unparsed binary file".into()),
                Binary => (Verdict::Unknown, "opaque binary file".into()),
                _ => (
                    Verdict::Runtime,
                    format!(
                        "{} sits where programs read at run time",
                        if ev.file.is_empty() {
                            "the path"
                        } else {
                            &ev.file
                        }
                    ),
                ),
            },
        },
    }
}

/// An edge's verdict: the strongest of its evidence's (`runtime` beats
/// `unknown` beats `build` beats `docs` beats `dead`).
pub fn edge_verdict(evidence: &[Evidence]) -> Option<Verdict> {
    evidence.iter().map(|e| judge(e).0).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(file: &str, kind: Kind) -> Evidence {
        Evidence::new(file.as_bytes(), kind, 0, String::new())
    }

    #[test]
    fn locations_and_kinds() {
        assert_eq!(
            judge(&ev("lib/cmake/x/x-config.cmake", Kind::Text)).0,
            Verdict::Build
        );
        assert_eq!(
            judge(&ev("lib/pkgconfig/x.pc", Kind::Text)).0,
            Verdict::Build
        );
        assert_eq!(judge(&ev("include/x.h", Kind::Text)).0, Verdict::Build);
        assert_eq!(
            judge(&ev("share/doc/x/README", Kind::Text)).0,
            Verdict::Docs
        );
        assert_eq!(
            judge(&ev("share/man/man1/x.1", Kind::Text)).0,
            Verdict::Docs
        );
        assert_eq!(
            judge(&ev("lib/rocblas/library/k.hsaco", Kind::Symlink)).0,
            Verdict::Runtime
        );
        assert_eq!(judge(&ev("bin/x", Kind::Shebang)).0, Verdict::Runtime);
        assert_eq!(
            judge(&ev("lib/libx.so", Kind::ElfString)).0,
            Verdict::Unknown
        );
        assert_eq!(judge(&ev("lib/libx.so", Kind::ElfDebug)).0, Verdict::Dead);
        let mut d = ev("lib/libx.so", Kind::ElfRunpath);
        d.dead = true;
        assert_eq!(judge(&d).0, Verdict::Dead);
        assert_eq!(
            judge(&ev("nix-support/propagated-build-inputs", Kind::NixSupport)).0,
            Verdict::Build
        );
        assert_eq!(
            judge(&ev("lib/cmakefoo", Kind::Text)).0,
            Verdict::Runtime,
            "prefix must end at a slash"
        );
    }

    #[test]
    fn strongest_wins() {
        let mut d = ev("lib/libx.so", Kind::ElfRunpath);
        d.dead = true;
        let v = vec![
            d,
            ev("share/doc/a", Kind::Text),
            ev("lib/cmake/a", Kind::Text),
        ];
        assert_eq!(edge_verdict(&v), Some(Verdict::Build));
        let v = vec![
            ev("share/doc/a", Kind::Text),
            ev("lib/libx.so", Kind::ElfString),
        ];
        assert_eq!(edge_verdict(&v), Some(Verdict::Unknown));
        assert_eq!(edge_verdict(&[]), None);
    }
}
