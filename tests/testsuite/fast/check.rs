//! `check`, the CI gate: exit code 4 when a rule is broken, 0 otherwise,
//! on budgets taken from Nix's recorded closure sizes.

use crate::common::fast_fixtures::*;

fn check(args: &[&str]) -> (i32, serde_json::Value) {
    let mut a = vec!["--json", "check"];
    a.extend_from_slice(args);
    let o = on_chroot(&a);
    assert!(o.code == 0 || o.code == 4, "exit {}: {}", o.code, o.stderr);
    (o.code, o.json())
}

#[test]
fn a_budget_passes_at_the_closure_size_and_fails_one_byte_under() {
    let hello = root("hello");
    let size = closure_size(hello);
    let (code, v) = check(&[hello, "--max-closure", &size.to_string()]);
    assert_eq!((code, &v["ok"]), (0, &serde_json::json!(true)), "{v}");
    let (code, v) = check(&[hello, "--max-closure", &(size - 1).to_string()]);
    assert_eq!(code, 4, "{v}");
    assert_eq!(v["violations"][0]["rule"], "max-closure", "{v}");
    assert_eq!(v["closure_size"].as_u64(), Some(size));
    // The largest contributor named is the manual (Nix's largest narSize
    // below hello, and nothing else hangs below it).
    assert_eq!(
        v["violations"][0]["contributors"][0]["path"],
        root("manual"),
        "{v}"
    );
    // Text says the same, with the same exit code.
    let o = on_chroot(&["check", hello, "--max-closure", "1KiB"]);
    assert_eq!(o.code, 4, "{}", o.stderr);
    assert!(o.stdout.contains("[max-closure]"), "{}", o.stdout);
}

#[test]
fn forbidden_verdicts_and_paths() {
    let (hello, hello2) = (root("hello"), root("hello-2"));
    let (code, v) = check(&[hello, "--forbid-verdict", "docs"]);
    assert_eq!(code, 4, "{v}");
    let detail = v["violations"][0]["detail"].as_str().unwrap();
    assert!(detail.contains(root("manual")), "{v}");
    assert!(detail.contains("share/doc/hello/README"), "{v}");
    // hello-2 dropped the manual: no docs-only reference is left.
    assert_eq!(check(&[hello2, "--forbid-verdict", "docs"]).0, 0);
    // Both versions carry libgreet's dev output at run time.
    for r in [hello, hello2] {
        let (code, v) = check(&[r, "--forbid", "*-dev"]);
        assert_eq!(code, 4, "{v}");
        assert_eq!(v["violations"][0]["rule"], "forbid", "{v}");
        let chain = v["violations"][0]["chain"].as_array().unwrap();
        assert_eq!(chain.last().unwrap(), root("libgreet-dev"), "{v}");
    }
    assert_eq!(check(&[hello2, "--forbid", "greet-manual*"]).0, 0);
    // Growth against a baseline: hello-2 is smaller than hello.
    assert_eq!(
        check(&[hello2, "--against", hello, "--max-growth", "0"]).0,
        0
    );
    assert_eq!(
        check(&[hello, "--against", hello2, "--max-growth", "1%"]).0,
        4
    );
}
