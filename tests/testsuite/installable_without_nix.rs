//! Installables when Nix is not there: a distinct error (exit 2 for the
//! CLI) naming the program, whether `nix` is missing from PATH or given by
//! a path that does not exist. Needs no Nix; the installables Nix
//! evaluates are tests/testsuite/installable.rs.

use crate::common::{in_child, is_child};
use nix_heft_eval::installable::{Installable, InstallableError, Options, evaluate};

/// PATH is the process's, so the check runs in a child process with a
/// PATH of one empty directory.
#[test]
fn missing_nix_is_a_distinct_error() {
    if is_child() {
        let opts = Options::default();
        let i = Installable::parse("nixpkgs#hello", &opts).unwrap();
        let e = evaluate(&[i], &opts).unwrap_err();
        assert!(
            matches!(&e, InstallableError::NixNotFound { arg, program } if arg == "nixpkgs#hello" && program == "nix"),
            "{e}"
        );
        assert!(e.is_usage());
        assert!(e.to_string().contains("not found on PATH"), "{e}");
        return;
    }
    let empty = tempfile::tempdir().unwrap();
    in_child(
        "missing_nix_is_a_distinct_error",
        &[("PATH", empty.path().as_os_str())],
    );
    // A program given by path that is not there is the same error.
    let opts = Options {
        nix: empty.path().join("nix").into(),
        ..Options::default()
    };
    let i = Installable::parse("path:/nonexistent#clr", &opts).unwrap();
    assert!(matches!(
        evaluate(&[i], &opts),
        Err(InstallableError::NixNotFound { .. })
    ));
}
