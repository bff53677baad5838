//! The commands that draw or print rather than compute: `browse` needs a
//! terminal, `completions` and `man` print what packagers install.

use crate::common::*;

#[test]
fn browse_without_a_terminal_is_a_usage_error() {
    let o = on_chroot(&["browse", root("hello")]);
    assert_error(&o, 2, "browse needs a terminal");
}

#[test]
fn completions_and_man_name_every_command() {
    let commands = [
        "size",
        "why",
        "refs",
        "split",
        "partition",
        "advise",
        "diff",
        "check",
        "trace",
        "report",
        "browse",
    ];
    let o = outcome(heft().args(["completions", "bash"]));
    assert_eq!(o.code, 0, "{}", o.stderr);
    let tmp = tempfile::tempdir().unwrap();
    let m = outcome(heft().args(["man", "--out-dir", tmp.path().to_str().unwrap()]));
    assert_eq!(m.code, 0, "{}", m.stderr);
    let main = std::fs::read_to_string(tmp.path().join("nix-heft.1")).unwrap();
    for c in commands {
        assert!(o.stdout.contains(c), "completions lack {c}");
        // roff escapes the hyphens of the page names it refers to.
        assert!(
            main.contains(&format!("nix\\-heft\\-{c}(1)")),
            "nix-heft.1 lacks {c}"
        );
        let page = std::fs::read_to_string(tmp.path().join(format!("nix-heft-{c}.1")))
            .unwrap_or_else(|e| panic!("nix-heft-{c}.1: {e}"));
        assert!(page.contains(".TH"), "nix-heft-{c}.1");
    }
}
