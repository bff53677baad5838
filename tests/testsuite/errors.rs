//! Bad input: each a clear one-line error and exit code 1, never a panic,
//! and the store is never written to.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::*;

fn narinfo_of(cache: &std::path::Path, path: &str) -> std::path::PathBuf {
    let hash = &path["/nix/store/".len().."/nix/store/".len() + 32];
    cache.join(format!("{hash}.narinfo"))
}

#[test]
fn missing_path() {
    let f = fixture();
    let top = f.small("top");
    // Same shape, another hash: well-formed but not in the store.
    let missing = format!(
        "/nix/store/{}{}",
        "0".repeat(32),
        &top["/nix/store/".len() + 32..]
    );
    assert_error(
        &heft_run(None, &["size", &missing]),
        "is not valid in the local store",
    );
    let cache = format!("file://{}", f.cache.display());
    assert_error(
        &heft_run(Some(&cache), &["size", &missing]),
        "is not valid in binary cache",
    );
    let json = f.json_array.display().to_string();
    assert_error(
        &heft_run(Some(&json), &["size", &missing]),
        "is not valid in path-info JSON",
    );
}

#[test]
fn malformed_store_path() {
    fixture();
    assert_error(
        &heft_run(None, &["size", "/nix/store/abc-foo"]),
        "is not a valid store path",
    );
    let bad = format!("/nix/store/{}-foo", "e".repeat(32));
    assert_error(&heft_run(None, &["size", &bad]), "Nix's base-32 alphabet");
}

#[test]
fn ambiguous_and_unknown_names() {
    let f = fixture();
    let o = heft_run(None, &["size", "dup"]);
    assert_usage_error(&o, "'dup' is ambiguous");
    assert!(
        o.stderr.contains(f.small("dup1")) && o.stderr.contains(f.small("dup2")),
        "{}",
        o.stderr
    );
    let o = heft_run(None, &["size", "no-such-package"]);
    assert_usage_error(
        &o,
        "no valid path in the local store matches 'no-such-package'",
    );
    let o = heft_run(None, &["size", "rocblas-tensile"]);
    assert_usage_error(&o, "matches 'rocblas-tensile'");
    assert!(
        o.stderr.contains("rocblas-tensile-gfx90a-5.7.1"),
        "lists similar names: {}",
        o.stderr
    );
}

/// One exit-code rule for every command: anything wrong with the command
/// line itself is exit 2, as clap gives for an unknown flag.
#[test]
fn command_line_errors_exit_2() {
    let f = fixture();
    let store = f.chroot.display().to_string();
    let s = Some(store.as_str());
    assert_usage_error(
        &heft_run(s, &["size", "--no-such-flag", &f.rocm]),
        "--no-such-flag",
    );
    assert_usage_error(
        &heft_run(s, &["size", "--sort", "weight", &f.rocm]),
        "weight",
    );
    assert_usage_error(
        &heft_run(s, &["why", "rocblas-tensile-*", "rocm-llvm"]),
        "matches",
    );
    assert_usage_error(
        &heft_run(s, &["split", "rocblas-tensile-*", "--preset", "nixpkgs"]),
        "give one",
    );
    assert_usage_error(
        &heft_run(s, &["split", "rocblas-5.7.1"]),
        "nothing to split",
    );
    assert_usage_error(
        &heft_run(s, &["partition", "rocblas-5.7.1", "--by", "gfx("]),
        "bad pattern 'gfx('",
    );
    assert_usage_error(
        &heft_run(
            s,
            &[
                "partition",
                "rocblas-5.7.1",
                "--by",
                "gfx[0-9a-z]+",
                "--keep",
                "gfx1",
            ],
        ),
        "gfx1",
    );
    assert_usage_error(&heft_run(s, &["size", "rocm-[llvm"]), "rocm-[llvm");
    assert_usage_error(
        &heft_run(s, &["split", "rocblas-5.7.1", "--move", "lib/[x=dev"]),
        "lib/[x",
    );
    // A failure outside the command line stays exit 1.
    assert_error(
        &heft_run(
            s,
            &["size", "/nix/store/00000000000000000000000000000000-gone"],
        ),
        "not valid",
    );
}

#[test]
fn corrupt_and_missing_narinfo() {
    let f = fixture();
    let dir = scratch("bad-cache");
    let cache = dir.join("cache");
    copy_tree(&f.cache, &cache);
    let url = format!("file://{}", cache.display());
    // Truncate the narinfo of a dependency (rocblas) in the middle.
    let rocblas = nix_path_info(None, &[&f.rocm])
        .into_keys()
        .find(|p| p.ends_with("-rocblas-5.7.1"))
        .unwrap();
    let file = narinfo_of(&cache, &rocblas);
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, &text[..text.find("NarSize").unwrap()]).unwrap();
    let o = heft_run(Some(&url), &["size", &f.rocm]);
    assert_error(&o, "corrupt narinfo");
    assert!(
        o.stderr.contains("no NarSize") && o.stderr.contains(&*file.to_string_lossy()),
        "{}",
        o.stderr
    );
    // Garbage.
    std::fs::write(&file, b"\x00\xffnot a narinfo").unwrap();
    assert_error(&heft_run(Some(&url), &["size", &f.rocm]), "corrupt narinfo");
    // Gone.
    std::fs::remove_file(&file).unwrap();
    let o = heft_run(Some(&url), &["size", &f.rocm]);
    assert_error(&o, "has no narinfo for");
    assert!(o.stderr.contains("referenced by"), "{}", o.stderr);
}

#[test]
fn corrupt_unreadable_or_absent_database() {
    let f = fixture();
    let dir = scratch("bad-db");
    let root = dir.join("store");
    copy_tree(&f.chroot, &root);
    let db = root.join("nix/var/nix/db/db.sqlite");
    let store = root.display().to_string();
    let top = f.small("top");
    std::fs::write(&db, vec![0x42u8; 8192]).unwrap();
    assert_error(
        &heft_run(Some(&store), &["size", top]),
        "not a SQLite database",
    );
    std::fs::write(&db, b"SQLite").unwrap();
    assert_error(
        &heft_run(Some(&store), &["size", top]),
        "shorter than a SQLite header",
    );
    // A valid SQLite file without Nix's tables.
    std::fs::remove_file(&db).unwrap();
    run(Command::new("python3")
        .args([
            "-c",
            "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('create table x(y)')",
        ])
        .arg(&db));
    assert_error(
        &heft_run(Some(&store), &["size", top]),
        "no such table: ValidPaths",
    );
    // Unreadable: a directory where the file should be (root ignores mode bits).
    std::fs::remove_file(&db).unwrap();
    std::fs::create_dir(&db).unwrap();
    assert_error(&heft_run(Some(&store), &["size", top]), "db.sqlite");
    // A --store that names no store is a bad value on the command line
    // (exit 2), whether a directory that is no store, none at all, or a
    // scheme nix-heft does not read.
    let empty = scratch("empty-store");
    assert_usage_error(
        &heft_run(Some(&empty.display().to_string()), &["size", top]),
        "holds neither nix-cache-info",
    );
    assert_usage_error(
        &heft_run(Some("/no/such/dir"), &["size", top]),
        "cannot use store '/no/such/dir'",
    );
    assert_usage_error(
        &heft_run(Some("ssh://host"), &["size", top]),
        "cannot use store 'ssh://host'",
    );
}

#[test]
fn symlink_loop_root() {
    fixture();
    let dir = scratch("loop");
    std::os::unix::fs::symlink(dir.join("b"), dir.join("a")).unwrap();
    std::os::unix::fs::symlink(dir.join("a"), dir.join("b")).unwrap();
    let a = dir.join("a").display().to_string();
    assert_error(
        &heft_run(None, &["size", &a]),
        "too many levels of symbolic links",
    );
    // A path outside the store is a bad ROOT (exit 2).
    let outside = dir.display().to_string();
    assert_usage_error(
        &heft_run(None, &["size", &outside]),
        "is not in the store /nix/store",
    );
    assert_usage_error(
        &heft_run(None, &["size", "/etc/passwd"]),
        "'/etc/passwd' is not in the store /nix/store",
    );
}

/// Starts a Python process that opens `db` with `setup` (Python lines
/// using `c` and `sys`), says "ready", and holds it until its stdin closes.
fn hold_database(setup: &str, db: &std::path::Path) -> (std::process::Child, String) {
    let mut child = Command::new("python3")
        .args([
            "-c",
            &format!("import sqlite3,sys\n{setup}print('ready', flush=True)\nsys.stdin.read()\n"),
        ])
        .arg(db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    (child, line)
}

fn listing(dir: &std::path::Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                m.len(),
                m.modified().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// A chroot store whose database uses a rollback journal (Nix's
/// `use-sqlite-wal = false`), held under an exclusive lock by another
/// process: nix-heft must warn, read it immutably, and still be right.
#[test]
fn locked_database_falls_back_to_immutable_with_a_warning() {
    let f = fixture();
    let dir = scratch("locked");
    let root = dir.join("store");
    copy_tree(&f.chroot, &root);
    let db = root.join("nix/var/nix/db/db.sqlite");
    run(Command::new("python3")
        .args(["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma journal_mode=delete').fetchall(); c.close()"])
        .arg(&db));
    let (mut locker, line) = hold_database(
        "c=sqlite3.connect(sys.argv[1], isolation_level=None)\n\
         c.execute('begin exclusive')\n",
        &db,
    );
    assert_eq!(line.trim(), "ready");
    let o = heft_run(
        Some(&root.display().to_string()),
        &["--json", "size", f.small("top")],
    );
    locker.stdin.take().unwrap().write_all(b"").unwrap();
    locker.wait().unwrap();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stderr.contains("is locked") && o.stderr.contains("immutable"),
        "{}",
        o.stderr
    );
    let r: nix_heft_report::size::SizeReport = serde_json::from_str(&o.stdout).unwrap();
    let nix = nix_path_info(None, &[f.small("top")]);
    assert_eq!(
        r.closure_size,
        nix[f.small("top")]["closureSize"].as_u64().unwrap()
    );
}

/// Reading never creates, changes or removes a file next to the database,
/// whether or not Nix's WAL side files exist.
#[test]
fn store_database_is_never_written() {
    let f = fixture();
    let dir = scratch("readonly");
    let root = dir.join("store");
    copy_tree(&f.chroot, &root);
    let dbdir = root.join("nix/var/nix/db");
    let store = root.display().to_string();
    let before = listing(&dbdir);
    let o = heft_run(Some(&store), &["size", "top-app"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(listing(&dbdir), before, "without WAL side files");
    // With a live WAL (another reader holds the database open).
    let (mut holder, _) = hold_database(
        "c=sqlite3.connect(sys.argv[1])\n\
         c.execute('select count(*) from ValidPaths').fetchall()\n",
        &dbdir.join("db.sqlite"),
    );
    let before = listing(&dbdir);
    assert!(
        before.iter().any(|(n, _, _)| n == "db.sqlite-shm"),
        "{before:?}"
    );
    let o = heft_run(Some(&store), &["size", "top-app"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.is_empty(), "{}", o.stderr);
    assert_eq!(listing(&dbdir), before, "with WAL side files");
    drop(holder.stdin.take());
    holder.wait().unwrap();
}

#[test]
fn no_local_store_says_how_to_point_at_one() {
    // Runs in a mount-less way: point the default at an empty root via
    // local?root=, which must give the same guidance as a missing /nix.
    fixture();
    let empty = scratch("no-store");
    let o = heft_run(
        Some(&format!("local?root={}", empty.display())),
        &["size", "x"],
    );
    assert_error(&o, "no Nix store found");
    // The library says what is wrong; the command line adds its flag.
    assert!(
        o.stderr
            .contains("; point nix-heft at one with --store: a chroot store root"),
        "{}",
        o.stderr
    );
}

/// The array form of `nix path-info -rsS --json` for the fixture, with
/// `edit` applied to the entries whose path is in `paths`.
fn edited_path_info(
    name: &str,
    paths: &[&str],
    edit: impl Fn(&mut serde_json::Value),
) -> std::path::PathBuf {
    let f = fixture();
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&f.json_array).unwrap()).unwrap();
    let mut hit = 0;
    for it in v.as_array_mut().unwrap() {
        if paths.contains(&it["path"].as_str().unwrap()) {
            edit(it);
            hit += 1;
        }
    }
    assert_eq!(hit, paths.len(), "every path to edit is in the file");
    let file = scratch(name).join("path-info.json");
    std::fs::write(&file, serde_json::to_vec(&v).unwrap()).unwrap();
    file
}

/// Sizes whose sum does not fit in a u64 stop with an error (exit 1) before
/// any sum is taken: nothing on stdout, so no wrapped number is printed.
#[test]
fn nar_sizes_adding_up_past_u64_are_an_error() {
    let f = fixture();
    let top = f.small("top");
    let base = f.small("base");
    let file = edited_path_info("u64-overflow", &[top, base], |it| {
        it["narSize"] = serde_json::json!(u64::MAX);
    });
    let store = file.display().to_string();
    for args in [
        vec!["size", top],
        vec!["--json", "size", top],
        vec!["refs", top],
    ] {
        let o = heft_run(Some(&store), &args);
        assert_error(&o, "is larger than 16 EiB (u64): NAR sizes are corrupt");
        assert!(o.stderr.contains(top), "names the root: {}", o.stderr);
    }
    // Each size alone is representable: a closure holding only one of them
    // is read and reported exactly.
    let o = heft_run(Some(&store), &["--json", "size", base]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let r: nix_heft_report::size::SizeReport = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(r.closure_size, u64::MAX);

    // Through a chroot store: SQLite holds at most i64::MAX per path, and
    // three of them exceed u64::MAX.
    let dir = scratch("u64-overflow-db");
    let root = dir.join("store");
    copy_tree(&f.chroot, &root);
    let closure = nix_closure_paths(None, &[top]);
    assert!(closure.len() >= 3, "{closure:?}");
    sqlite_edit(
        &root.join("nix/var/nix/db/db.sqlite"),
        "for p in sys.argv[2:]: c.execute('update ValidPaths set narSize = 9223372036854775807 where path = ?', (p,))",
        &closure[..3].iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let store = root.display().to_string();
    // Per-path queries, and one pass over the tables.
    for env in [&[][..], &[("NIX_HEFT_TABLE_SCAN_AT", "0")][..]] {
        let o = heft_run_env(env, Some(&store), &["size", top]);
        assert_error(&o, "is larger than 16 EiB (u64)");
    }
}

#[test]
fn negative_nar_size_is_an_error_naming_the_path() {
    let f = fixture();
    let top = f.small("top");
    let base = f.small("base");
    // path-info JSON.
    let file = edited_path_info("negative-json", &[base], |it| {
        it["narSize"] = serde_json::json!(-5);
    });
    let o = heft_run(Some(&file.display().to_string()), &["size", top]);
    assert_error(&o, &format!("{base} has a negative NAR size (-5)"));
    assert!(o.stderr.contains("path-info JSON"), "{}", o.stderr);

    // The database, through both ways of reading a closure, with the bad
    // row as a dependency and as the root itself.
    let dir = scratch("negative-db");
    let root = dir.join("store");
    copy_tree(&f.chroot, &root);
    sqlite_edit(
        &root.join("nix/var/nix/db/db.sqlite"),
        "c.execute('update ValidPaths set narSize = -5 where path = ?', (sys.argv[2],))",
        &[base],
    );
    let store = root.display().to_string();
    for arg in [top, base] {
        for env in [&[][..], &[("NIX_HEFT_TABLE_SCAN_AT", "0")][..]] {
            let o = heft_run_env(env, Some(&store), &["size", arg]);
            assert_error(&o, &format!("{base} has a negative NAR size (-5)"));
            assert!(o.stderr.contains("chroot store"), "{}", o.stderr);
        }
    }
}

/// A narinfo's URL that leads outside the cache (`..`, an absolute path, a
/// symlink) is refused and reported as a problem of that path (exit 3);
/// the file outside, a working copy of the real NAR, is never read.
#[test]
fn narinfo_url_outside_the_cache_is_refused() {
    let dir = scratch("nar-url");
    let cache = dir.join("cache");
    copy_tree(&example_cache(), &cache);
    let root = example_root();
    let narinfo = narinfo_of(&cache, &root);
    let original = std::fs::read_to_string(&narinfo).unwrap();
    let url = original
        .lines()
        .find_map(|l| l.strip_prefix("URL: "))
        .unwrap()
        .to_string();
    // The NAR, moved out of the cache: had nix-heft followed the URL there,
    // the root's references would have evidence.
    let outside = dir.join("outside");
    std::fs::create_dir(&outside).unwrap();
    let moved = outside.join("moved.nar.xz");
    std::fs::rename(cache.join(&url), &moved).unwrap();
    let store = cache.display().to_string();
    let refs = |o: &Outcome| -> serde_json::Value { serde_json::from_str(&o.stdout).unwrap() };
    let root_kinds = |v: &serde_json::Value| -> usize {
        v["edges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["referrer"] == root.as_str())
            .map(|e| e["kinds"].as_object().unwrap().len())
            .sum()
    };
    // Control: the same NAR at an in-cache URL gives the root's evidence.
    std::fs::copy(&moved, cache.join("nar/inside.nar.xz")).unwrap();
    std::fs::write(
        &narinfo,
        original.replace(&format!("URL: {url}"), "URL: nar/inside.nar.xz"),
    )
    .unwrap();
    let o = heft_run(Some(&store), &["--json", "refs", &root]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(root_kinds(&refs(&o)) > 0, "{}", o.stdout);
    std::fs::remove_file(cache.join("nar/inside.nar.xz")).unwrap();

    std::os::unix::fs::symlink(&moved, cache.join("nar/link.nar.xz")).unwrap();
    let moved_abs = moved.display().to_string();
    for (bad_url, why) in [
        ("../../../../../../../../etc/passwd", "has a '..' component"),
        ("../outside/moved.nar.xz", "has a '..' component"),
        ("nar/../../outside/moved.nar.xz", "has a '..' component"),
        (moved_abs.as_str(), "is an absolute path"),
        ("/etc/passwd", "is an absolute path"),
        ("nar/link.nar.xz", "resolves through a symlink to"),
    ] {
        std::fs::write(
            &narinfo,
            original.replace(&format!("URL: {url}"), &format!("URL: {bad_url}")),
        )
        .unwrap();
        let o = heft_run(Some(&store), &["--json", "refs", &root]);
        assert_eq!(o.code, 3, "{bad_url}: {}{}", o.stdout, o.stderr);
        let v = refs(&o);
        let problems = v["problems"].as_array().unwrap();
        assert_eq!(problems.len(), 1, "{bad_url}: {problems:?}");
        assert_eq!(problems[0]["path"], root.as_str());
        let msg = problems[0]["message"].as_str().unwrap();
        assert!(
            msg.contains(&format!("has URL '{bad_url}'"))
                && msg.contains(why)
                && msg.contains("refusing to read outside the binary cache")
                && msg.contains(&*narinfo.file_name().unwrap().to_string_lossy()),
            "{bad_url}: {msg}"
        );
        assert!(o.stderr.contains(bad_url), "{}", o.stderr);
        // Nothing was read for the root: no evidence on any of its edges.
        assert_eq!(root_kinds(&v), 0, "{bad_url}: {}", o.stdout);
        // Sizes need no NAR, so they are unaffected.
        let o = heft_run(Some(&store), &["--json", "size", &root]);
        assert_eq!(o.code, 0, "{bad_url}: {}", o.stderr);
    }
}

/// Long chains in a hand-made path-info JSON (Nix never makes a chain
/// this deep, but a file can): chain counting and listing, closure and
/// added sizes all run without recursion, so nothing overflows the stack.
#[test]
fn long_chains_do_not_overflow_the_stack() {
    let dir = scratch("long-chain");
    std::fs::create_dir_all(&dir).unwrap();
    let n = 100_000usize;
    // (The closure sizes of a chain cost n²/2 steps, so `size` is asked on
    // a shorter one below.)
    let path = |i: usize| {
        // 32 nix-base32 characters from the index.
        let alphabet = b"0123456789abcdfghijklmnpqrsvwxyz";
        let mut h = [b'0'; 32];
        let mut x = i;
        for c in h.iter_mut().rev() {
            *c = alphabet[x % 32];
            x /= 32;
        }
        format!("/nix/store/{}-link-{i}", String::from_utf8_lossy(&h))
    };
    let items: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let refs: Vec<String> = if i + 1 < n { vec![path(i + 1)] } else { vec![] };
            serde_json::json!({"path": path(i), "narSize": 1000, "references": refs})
        })
        .collect();
    let file = dir.join("chain.json");
    std::fs::write(&file, serde_json::to_string(&items).unwrap()).unwrap();
    let store = file.display().to_string();
    let o = heft_run(
        Some(&store),
        &["--json", "why", "--all", &path(0), &path(n - 1)],
    );
    assert_eq!(o.code, 3, "partial: no file contents: {}", o.stderr);
    let w: nix_heft_report::why::WhyReport = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(w.chain_count, 1);
    assert_eq!(w.chains[0].len(), n);
    let o = heft_run(Some(&store), &["--json", "size", &path(n - 2000)]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let r: nix_heft_report::size::SizeReport = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(r.closure_size, 1000 * 2000);
    // A closed pipe is not an error.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("nix-heft"))
        .args([
            "--store",
            &store,
            "--json",
            "why",
            "--all",
            &path(0),
            &path(n - 1),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The example's cache in `dir`, its root's NAR unreadable (a problem of
/// the read) and its root's narinfo unsigned (a warning its store logs
/// when read with --no-require-sigs).
pub(crate) fn warned_cache(dir: &std::path::Path) -> std::path::PathBuf {
    let cache = dir.join("cache");
    copy_tree(&example_cache(), &cache);
    let narinfo = narinfo_of(&cache, &example_root());
    let text = std::fs::read_to_string(&narinfo).unwrap();
    let url = text.lines().find_map(|l| l.strip_prefix("URL: ")).unwrap();
    std::fs::write(cache.join(url), b"not xz at all").unwrap();
    let unsigned: String = text
        .lines()
        .filter(|l| !l.starts_with("Sig: "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&narinfo, unsigned).unwrap();
    cache
}

/// Every warning once, whatever the command and its format: a cache whose
/// root's NAR is unreadable (a problem of the read) and whose root's
/// narinfo is unsigned, accepted with --no-require-sigs (a warning its
/// store logs). Each command prints each warning line exactly once (the
/// one emit prints the run's warnings and the report's problems), the
/// NAR's problem once for every command that reads the root's files.
/// (`impact` needs an evaluation: impact::warnings_are_printed_once counts
/// its warnings the same way, browse_tmux::browse_prints_each_warning_once
/// `browse`'s; `refused` reads a failed build: not counted here; it prints
/// through the same `Context::finish`.)
#[test]
fn each_warning_is_printed_once_by_every_command() {
    let dir = scratch("warned-once");
    let cache = warned_cache(&dir);
    let root = example_root();
    let store = cache.display().to_string();
    let dep = "/nix/store/rhvs5b1sd25nmf0a9062hz63pia5qi17-rocblas-5.7.1";
    let hipblas = "/nix/store/ifmchpsq22gd3qfvmzj864jp1m7qk9yf-hipblas-5.7.1";
    let html = dir.join("report.html").display().to_string();
    let traced = dir.join("trace.json").display().to_string();
    // (arguments, whether the root's files are read, exit code)
    let runs: Vec<(Vec<&str>, bool, i32)> = vec![
        (vec!["size", &root], false, 0),
        (vec!["why", &root, dep], true, 3),
        (vec!["refs", &root], true, 3),
        (vec!["advise", &root], true, 3),
        (vec!["diff", hipblas, &root], true, 3),
        (vec!["check", &root, "--max-closure", "1T"], false, 0),
        (vec!["check", &root, "--forbid-verdict", "docs"], true, 4),
        (vec!["report", &root, "-o", &html], true, 3),
        // The root's files are read by a split or partition of a path it
        // refers to (its holds decide what it keeps): a warning, partial.
        (vec!["split", dep, "--preset", "nixpkgs", "--root", &root], true, 3),
        (vec!["partition", dep, "--by", "gfx[0-9a-z]+", "--root", &root], false, 0),
        // A partition of the root itself needs its files: an error (not
        // a warning), after the store's warning, once.
        (vec!["partition", &root, "--by", "gfx[0-9a-z]+"], false, 1),
        // The closure of what CMD touched is read from the store given:
        // its warning once, after CMD's own output, and CMD's exit code.
        (vec!["trace", "-o", &traced, "--", "ls", &root], false, 0),
    ];
    let formats: [&[&str]; 4] = [
        &[],
        &["--json"],
        &["--format", "markdown"],
        &["--format", "github"],
    ];
    for (args, reads, code) in runs {
        let reviewed = matches!(args[0], "diff" | "check");
        for format in formats.iter().filter(|f| reviewed || f.len() < 2) {
            let mut all = vec!["--no-require-sigs"];
            // After `trace`'s `--` every word is CMD's: its format goes
            // first (`--json` is global).
            if args[0] == "trace" {
                all.extend(format.iter());
                all.extend(args.iter());
            } else {
                all.extend(args.iter());
                all.extend(format.iter());
            }
            let o = heft_run(Some(&store), &all);
            let what = format!("{all:?}: {}", o.stderr);
            assert_eq!(o.code, code, "{what}");
            let warnings: Vec<&str> = o
                .stderr
                .lines()
                .filter(|l| l.starts_with("nix-heft: warning: "))
                .collect();
            let count = |needle: &str| warnings.iter().filter(|l| l.contains(needle)).count();
            assert_eq!(count("without a valid signature"), 1, "{what}");
            let nar = format!("warning: {root}: NAR");
            assert_eq!(count(&nar), usize::from(reads), "{what}");
            // Nothing else, and no line twice.
            assert_eq!(warnings.len(), 1 + usize::from(reads), "{what}");
            let errors = o.stderr.lines().filter(|l| l.starts_with("nix-heft: error: "));
            assert_eq!(errors.count(), usize::from(code == 1), "{what}");
        }
    }
}
