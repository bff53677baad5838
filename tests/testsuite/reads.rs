//! The read stage on real stores: file trees equal Nix's own serialisation
//! and sizes, and a whole `advise` reads each store path once — each NAR
//! opened once from a binary cache, each regular file opened once from a
//! local store (counted through the library and with strace).

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::common::*;
use nix_heft_graph::{Graph, ReadRequest, request};
use nix_heft_format::StorePath;
use nix_heft_format::nar::tree::{FileTree, tree_of_nar};
use nix_heft_store::source::{Nar, PathContents, StoreSource};

/// The trees of `paths` in `src`, read by the read stage alone.
fn trees(src: &dyn StoreSource, paths: &[&str]) -> BTreeMap<String, Option<FileTree>> {
    let roots: Vec<StorePath> = paths
        .iter()
        .map(|p| StorePath::parse(src.store_dir(), p).unwrap())
        .collect();
    let g = Graph::load(src, &roots).unwrap();
    let wants: ReadRequest = g.roots().iter().map(|&r| (r, Vec::new())).collect();
    let reads = nix_heft_scan::read::read(src, &g, &wants, &|_| {});
    assert!(reads.problems.is_empty(), "{:?}", reads.problems);
    reads
        .paths
        .into_iter()
        .map(|(v, pr)| (g.path(v).to_string(), pr.tree))
        .collect()
}

fn nix_dump(path: &str) -> Vec<u8> {
    let out = nix_output(std::process::Command::new("nix-store")
        .args(["--dump", path]));
    assert!(out.status.success());
    out.stdout
}

/// Real store paths built by real Nix: the tree read from the local store
/// gives the `narSize` Nix registered and equals the tree of Nix's own
/// serialisation; the cache's NARs give the very same trees.
#[test]
fn trees_match_nix_on_disk_and_in_the_cache() {
    let f = fixture();
    let built: Vec<&str> = ["top", "loopy", "right", "oddnames"]
        .iter()
        .map(|a| f.small(a))
        .chain([f.rocm.as_str()])
        .collect();
    let info = nix_path_info(None, &built);
    let local = nix_heft_store::source::open(None).unwrap();
    let on_disk = trees(local.as_ref(), &built);
    let cache = nix_heft_store::source::open(Some(&f.cache.display().to_string())).unwrap();
    let from_nar = trees(cache.as_ref(), &built);
    for p in &built {
        let t = on_disk[*p].as_ref().unwrap();
        assert_eq!(t.nar_size(), info[*p]["narSize"].as_u64().unwrap(), "{p}");
        assert_eq!(*t, tree_of_nar(&nix_dump(p)[..]).unwrap().0, "{p}");
        assert_eq!(from_nar[*p].as_ref(), Some(t), "{p}: cache and disk");
    }
}

#[test]
fn a_source_without_contents_has_no_tree() {
    let f = fixture();
    let src = nix_heft_store::source::open(Some(&f.json_array.display().to_string())).unwrap();
    let t = trees(src.as_ref(), &[&f.rocm]);
    assert_eq!(t[&f.rocm], None);
}

/// A real source's contents, with every call to `nar()` counted.
struct CountingNars {
    inner: Box<dyn StoreSource>,
    opens: Mutex<BTreeMap<String, usize>>,
}

impl PathContents for CountingNars {
    fn nar(&self, path: &StorePath, check_file: bool) -> nix_heft_store::Result<Option<Nar>> {
        *self
            .opens
            .lock()
            .unwrap()
            .entry(path.to_string())
            .or_default() += 1;
        self.inner.nar(path, check_file)
    }
}

/// The whole advise pipeline through the library over the example's
/// cache: every path is read, and none twice.
#[test]
fn advise_opens_each_nar_once_through_the_library() {
    let cache = example_cache();
    let src = CountingNars {
        inner: nix_heft_store::source::open(Some(&cache.display().to_string())).unwrap(),
        opens: Mutex::new(BTreeMap::new()),
    };
    let root = StorePath::parse("/nix/store", &example_root()).unwrap();
    let g = Graph::load(src.inner.as_ref(), &[root]).unwrap();
    let reads = nix_heft_scan::read::read(&src, &g, &request::all_edges(&g), &|_| {});
    let c = nix_heft_scan::classify::classify(&g, reads);
    assert!(c.problems.is_empty(), "{:?}", c.problems);
    let (actions, problems) = nix_heft_analysis::plan::advise::advise(&g, &c, None, None);
    assert!(problems.is_empty(), "{problems:?}");
    assert!(actions.len() >= 4, "{actions:?}");
    let opens = src.opens.into_inner().unwrap();
    let twice: Vec<_> = opens.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "NARs opened more than once: {twice:?}");
    // Every path with a reference was read, and the RUNPATH targets' trees.
    let referrers = request::all_edges(&g).len();
    assert!(opens.len() >= referrers, "{} < {referrers}", opens.len());
}

/// `strace -f -e trace=openat` of the real binary: over a cache each NAR
/// file is opened at most once; over a chroot store each regular file of a
/// store path at most once.
#[test]
fn advise_opens_each_nar_and_each_file_once_under_strace() {
    let f = fixture();
    let out = scratch("strace-opens");
    std::fs::create_dir_all(&out).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("nix-heft");
    for (label, store, under) in [
        (
            "cache",
            example_cache().display().to_string(),
            format!("{}/nar/", example_cache().display()),
        ),
        (
            "chroot",
            f.chroot.display().to_string(),
            format!("{}/nix/store/", f.chroot.display()),
        ),
    ] {
        let log = out.join(format!("{label}.strace"));
        let root = if label == "cache" {
            example_root()
        } else {
            f.rocm.clone()
        };
        let st = std::process::Command::new("strace")
            .env("NIX_CONFIG", trusting_conf())
            .args(["-f", "-e", "trace=openat", "-o"])
            .arg(&log)
            .arg(&bin)
            .args(["--store", &store, "--json", "advise", &root])
            .output()
            .expect("strace must be installed (scripts/test.sh installs it)");
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        let text = std::fs::read_to_string(&log).unwrap();
        let mut opens: BTreeMap<String, usize> = BTreeMap::new();
        for line in text.lines() {
            // `PID openat(AT_FDCWD, "/path", O_RDONLY|O_CLOEXEC) = 3`
            let Some(start) = line.find("openat(") else {
                continue;
            };
            let rest = &line[start..];
            let Some(q) = rest.find('"') else { continue };
            let Some(len) = rest[q + 1..].find('"') else {
                continue;
            };
            let p = &rest[q + 1..q + 1 + len];
            if p.starts_with(&under) && !rest.contains("O_DIRECTORY") && !rest.contains("= -1") {
                *opens.entry(p.to_string()).or_default() += 1;
            }
        }
        // Every referrer is read: at least the 5 packages of the example
        // that hold references, so the log really shows reads.
        assert!(opens.len() > 5, "{label}: too few opens seen: {opens:?}");
        let twice: Vec<_> = opens.iter().filter(|(_, n)| **n > 1).collect();
        assert!(
            twice.is_empty(),
            "{label}: opened more than once: {twice:?}"
        );
    }
}
