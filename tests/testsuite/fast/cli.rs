//! The commands that draw or print rather than compute: `browse` needs a
//! terminal, `completions` and `man` print what packagers install.

use crate::common::fast_fixtures::*;

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

/// clap's parse errors in nix-heft's words (issue 40): one prefix, typo
/// tips from the command's own flags before the globals, a prefix of a
/// flag suggested as that flag, and a negative count said as such rather
/// than `-- -1` (which would make it a ROOT). Each tip appears once.
#[test]
fn parse_errors_speak_with_one_prefix_and_the_commands_own_flags() {
    for (args, tip) in [
        (&["size", "--tpo", "3"][..], Some("--top")),
        (&["why", "--evidnce"][..], Some("--evidence")),
        (&["size", "--stor", "x"][..], Some("--store")),
        (&["size", "--jsn"][..], Some("--json")),
        (&["size", "--zzzzzz"][..], None),
    ] {
        let o = outcome(heft().args(args));
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
        let first = o.stderr.lines().next().unwrap_or_default();
        assert_eq!(
            first,
            format!("nix-heft: error: unexpected argument '{}' found", args[1]),
            "{args:?}: {}",
            o.stderr
        );
        let tips: Vec<&str> = o.stderr.lines().filter(|l| l.contains("tip:")).collect();
        match tip {
            Some(t) => assert_eq!(
                tips,
                [format!("  tip: a similar argument exists: '{t}'")],
                "{args:?}: {}",
                o.stderr
            ),
            None => assert!(tips.is_empty(), "{args:?}: {}", o.stderr),
        }
        assert_eq!(
            o.stderr.matches("error:").count(),
            1,
            "{args:?}: {}",
            o.stderr
        );
    }
    let o = outcome(heft().args(["size", "--top", "-1", "x"]));
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert_eq!(
        o.stderr.lines().next().unwrap_or_default(),
        "nix-heft: error: '-1' for '--top' must be a positive number",
        "{}",
        o.stderr
    );
    assert!(!o.stderr.contains("-- -1"), "{}", o.stderr);
    // Errors clap finds elsewhere keep its text, with the one prefix.
    let o = outcome(heft().args(["bogus"]));
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr
            .starts_with("nix-heft: error: unrecognized subcommand 'bogus'"),
        "{}",
        o.stderr
    );
    // Help is not an error.
    let o = outcome(heft().args(["size", "--help"]));
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("Usage: nix-heft size"), "{}", o.stdout);
}
