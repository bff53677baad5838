//! `diff` of hello-1.0 and hello-2.0: the manual left with the README
//! line that held it, greet-data came with the file that pulled it in.

use std::collections::BTreeSet;

use crate::common::fast_fixtures::*;
use serde_json::Value;

fn paths(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn diff_of_two_versions_equals_the_closures_difference() {
    let (before, after) = (root("hello"), root("hello-2"));
    let v = json_on_chroot(&["diff", before, after]);
    let (cb, ca) = (closure(before), closure(after));
    assert_eq!(paths(&v["added"]), &ca - &cb, "{v}");
    assert_eq!(paths(&v["removed"]), &cb - &ca, "{v}");
    assert_eq!(
        v["closure_size_before"].as_u64(),
        Some(closure_size(before))
    );
    assert_eq!(v["closure_size_after"].as_u64(), Some(closure_size(after)));
    // Per package, as `nix store diff-closures` names them.
    let pkg = |name: &str| {
        v["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("no package {name}: {v}"))
            .clone()
    };
    assert_eq!(pkg("hello")["versions_before"], serde_json::json!(["1.0"]));
    assert_eq!(pkg("hello")["versions_after"], serde_json::json!(["2.0"]));
    assert_eq!(
        pkg("greet-manual")["size_delta"].as_i64(),
        Some(-(nar_size(root("manual")) as i64))
    );
    assert_eq!(
        pkg("greet-data")["size_delta"].as_i64(),
        Some(nar_size(root("data")) as i64)
    );
    // Why each moved: the holding file on each side.
    let find = |list: &str, p: &str| {
        v[list]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["path"] == p)
            .unwrap()
            .clone()
    };
    let gone = find("removed", root("manual"));
    assert_eq!(gone["why"]["referrer"], before, "{gone}");
    assert_eq!(gone["why"]["evidence"][0]["file"], "share/doc/hello/README");
    let new = find("added", root("data"));
    assert_eq!(new["why"]["referrer"], after, "{new}");
    assert_eq!(new["why"]["edge"], "new", "{new}");
    assert_eq!(new["why"]["evidence"][0]["file"], "share/hello/data-path");
    // The same closure on both sides: nothing added or removed.
    let same = json_on_chroot(&["diff", before, before]);
    assert_eq!(same["added"], serde_json::json!([]), "{same}");
    assert_eq!(same["removed"], serde_json::json!([]), "{same}");
}
