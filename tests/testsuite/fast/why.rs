//! `why`: the chain to a dependency and the file that holds each edge, on
//! the chroot store.

use crate::common::fast_fixtures::*;

/// The manual is named only by hello's README: one chain, `docs`, held
/// by a text line of share/doc/hello/README that names the manual's file.
#[test]
fn a_docs_only_reference_is_held_by_the_readme() {
    let (hello, manual) = (root("hello"), root("manual"));
    let v = json_on_chroot(&["why", hello, "greet-manual"]);
    assert_eq!(v["deps"][0], manual, "{v}");
    assert_eq!(v["chain_count"], 1, "{v}");
    assert_eq!(v["best"][0]["verdict"], "docs", "{v}");
    assert_eq!(
        v["best"][0]["chain"],
        serde_json::json!([hello, manual]),
        "{v}"
    );
    let ev = &v["edges"][0]["evidence"];
    assert_eq!(ev.as_array().unwrap().len(), 1, "{v}");
    assert_eq!(ev[0]["file"], "share/doc/hello/README", "{v}");
    assert_eq!(ev[0]["kind"], "text", "{v}");
    assert_eq!(ev[0]["verdict"], "docs", "{v}");
    // The offset is where the path's hash part starts in the README's
    // bytes (after "/nix/store/").
    let readme = std::fs::read(
        fixtures()
            .join("store")
            .join(&hello[1..])
            .join("share/doc/hello/README"),
    )
    .unwrap();
    let at = ev[0]["offset"].as_u64().unwrap() as usize;
    let hash_and_name = &manual["/nix/store/".len()..];
    assert_eq!(
        &readme[at - "/nix/store/".len()..at + hash_and_name.len()],
        manual.as_bytes()
    );
    // The text says so too.
    let o = on_chroot(&["why", hello, manual]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("[docs] hello-1.0 → greet-manual-1.0"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("share/doc/hello/README"), "{}", o.stdout);
}

/// libgreet is held at run time by bin/hello's RUNPATH (gcc's
/// `-Wl,-rpath`), which provides the library bin/hello NEEDs.
#[test]
fn a_library_is_held_by_the_elf_runpath() {
    let (hello, lib) = (root("hello"), root("libgreet"));
    let v = json_on_chroot(&["why", "--evidence", hello, lib]);
    assert_eq!(v["best"][0]["verdict"], "runtime", "{v}");
    let ev = v["edges"][0]["evidence"].as_array().unwrap();
    let runpath = ev
        .iter()
        .find(|e| e["kind"] == "elf-runpath")
        .unwrap_or_else(|| panic!("no RUNPATH hold: {v}"));
    assert_eq!(runpath["file"], "bin/hello", "{v}");
    assert_eq!(runpath["verdict"], "runtime", "{v}");
    assert!(
        runpath["reason"].as_str().unwrap().contains("libgreet.so"),
        "{v}"
    );
    // A dependency that is not in the closure is an error, not an answer.
    let o = on_chroot(&["why", hello, root("data")]);
    assert_ne!(o.code, 0, "{}", o.stdout);
    assert!(o.stderr.contains("nix-heft: error: "), "{}", o.stderr);
}
