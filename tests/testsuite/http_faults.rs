//! HTTP binary caches that misbehave, on the bundled example's committed
//! cache and root (so no Nix is needed): a refused connection, a server
//! that never answers, a cache for another store directory, a directory
//! that is no cache, and names where a store path is needed. Served by
//! common/fault_server.rs on 127.0.0.1; tests/testsuite/http.rs runs the
//! same server over caches `nix copy` wrote, for the answers that must
//! equal Nix's.

use std::net::TcpListener;

use crate::common::fault_server::{Faults, Server, run_in};
use crate::common::*;

#[test]
fn refused_and_stalled_connections_are_clear_errors() {
    let root = example_root();
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let o = run_in(&scratch_dir("http-refused"), &url, &["size", &root]);
    assert_error(&o, "connection refused");
    assert!(o.stderr.contains(&url), "{}", o.stderr);

    let server = Server::start(
        &example_cache(),
        Faults {
            stall: true,
            ..Faults::default()
        },
    );
    let home = scratch_dir("http-stall");
    let o = heft_run_env(
        &[
            ("XDG_CACHE_HOME", home.to_str().unwrap()),
            ("NIX_HEFT_HTTP_TIMEOUT", "0.5"),
        ],
        Some(&server.url()),
        &["size", &root],
    );
    assert_error(&o, "timed out");
}

#[test]
fn names_and_globs_over_http_are_usage_errors() {
    let server = Server::start(&example_cache(), Faults::default());
    for arg in ["rocm-llvm", "rocm-llvm*"] {
        let o = run_in(&scratch_dir("http-names"), &server.url(), &["size", arg]);
        assert_usage_error(&o, "give a store path");
    }
}

#[test]
fn a_cache_for_another_store_dir_is_refused() {
    let root = example_root();
    let dir = scratch_dir("http-otherstore");
    std::fs::write(
        dir.join("nix-cache-info"),
        "StoreDir: /gnu/store\nWantMassQuery: 1\n",
    )
    .unwrap();
    let server = Server::start(&dir, Faults::default());
    let o = run_in(
        &scratch_dir("http-otherstore-x"),
        &server.url(),
        &["size", &root],
    );
    // A --store that names a cache nix-heft cannot read: exit 2.
    assert_usage_error(&o, "/gnu/store");
    let empty = scratch_dir("http-notacache");
    let server = Server::start(&empty, Faults::default());
    let o = run_in(
        &scratch_dir("http-notacache-x"),
        &server.url(),
        &["size", &root],
    );
    assert_error(&o, "not a Nix binary cache");
}
