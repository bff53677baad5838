//! The build graph (`--derivation`) from the chroot store's `.drv` files,
//! compared with the recorded `nix-store -qR DRV`.

use std::collections::BTreeSet;

use crate::common::fast_fixtures::*;

/// A node's size as Nix's record gives it: a derivation's outputs' NAR
/// sizes (every path whose `deriver` it is), a source's own NAR size.
fn nix_node_size(node: &str) -> u64 {
    if node.ends_with(".drv") {
        nix_info()
            .values()
            .filter(|i| i["deriver"] == node)
            .map(|i| i["narSize"].as_u64().unwrap())
            .sum()
    } else {
        nar_size(node)
    }
}

#[test]
fn build_graph_nodes_equal_nix_store_qr_of_the_drv() {
    for attr in ["hello", "hello-2", "libgreet", "manual"] {
        let d = drv(attr);
        let v = json_on_chroot(&["size", "--derivation", d]);
        let nodes: BTreeSet<String> = v["paths"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["path"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            nodes,
            recorded_lines(&format!("drv-closure/{attr}")),
            "{attr}: {v}"
        );
        for p in v["paths"].as_array().unwrap() {
            let node = p["path"].as_str().unwrap();
            assert_eq!(p["nar_size"].as_u64(), Some(nix_node_size(node)), "{node}");
        }
    }
    // libgreet's derivation counts both of its outputs.
    let v = json_on_chroot(&["size", "--derivation", drv("libgreet")]);
    let own = v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == drv("libgreet"))
        .unwrap()["nar_size"]
        .as_u64();
    assert_eq!(
        own,
        Some(nar_size(root("libgreet")) + nar_size(root("libgreet-dev")))
    );
}

/// `why --derivation`: the chain of derivations, each edge held by its
/// `inputDrvs` entry in the `.drv` text (verdict build), never run-time
/// evidence.
#[test]
fn why_derivation_names_the_drv_input() {
    let v = json_on_chroot(&["why", "--derivation", drv("hello"), drv("libgreet")]);
    assert_eq!(
        v["best"][0]["chain"],
        serde_json::json!([drv("hello"), drv("libgreet")]),
        "{v}"
    );
    let ev = &v["edges"][0]["evidence"][0];
    assert_eq!(ev["kind"], "drv-input", "{v}");
    assert_eq!(ev["verdict"], "build", "{v}");
    // The .drv's text names the outputs hello uses: dev and out.
    let ctx = ev["context"].as_str().unwrap();
    assert!(ctx.contains(r#"["dev","out"]"#), "{v}");
    // The manual is an input of the build too, though docs at run time.
    let o = on_chroot(&["why", "--derivation", drv("hello"), drv("manual")]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("drv-input"), "{}", o.stdout);
    assert!(!o.stdout.contains("run time"), "{}", o.stdout);
}
