//! `report`: one self-contained HTML page of the closure.

use crate::common::fast_fixtures::*;

#[test]
fn report_writes_a_page_naming_every_path() {
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("hello.html");
    let hello = root("hello");
    let o = on_chroot(&["report", hello, "-o", page.to_str().unwrap()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") || html.starts_with("<!doctype html>"));
    for p in closure(hello) {
        assert!(html.contains(&p), "the page lacks {p}");
    }
    // The advice is on the page with its evidence.
    assert!(html.contains("split-outputs"));
    assert!(html.contains("share/doc/hello/README"));
}
