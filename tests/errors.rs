//! Bad input: each a clear one-line error and exit code 1, never a panic,
//! and the store is never written to.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::*;

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
    assert_error(&o, "'dup' is ambiguous");
    assert!(
        o.stderr.contains(f.small("dup1")) && o.stderr.contains(f.small("dup2")),
        "{}",
        o.stderr
    );
    let o = heft_run(None, &["size", "no-such-package"]);
    assert_error(
        &o,
        "no valid path in the local store matches 'no-such-package'",
    );
    let o = heft_run(None, &["size", "rocblas-tensile"]);
    assert_error(&o, "matches 'rocblas-tensile'");
    assert!(
        o.stderr.contains("rocblas-tensile-gfx90a-5.7.1"),
        "lists similar names: {}",
        o.stderr
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
    // A directory that is no store at all.
    let empty = scratch("empty-store");
    assert_error(
        &heft_run(Some(&empty.display().to_string()), &["size", top]),
        "holds neither nix-cache-info",
    );
    assert_error(
        &heft_run(Some("/no/such/dir"), &["size", top]),
        "cannot use store '/no/such/dir'",
    );
    assert_error(
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
    let outside = dir.display().to_string();
    assert_error(
        &heft_run(None, &["size", &outside]),
        "is not in the store /nix/store",
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
    let r: nix_heft::report::size::SizeReport = serde_json::from_str(&o.stdout).unwrap();
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
    assert!(o.stderr.contains("--store"), "{}", o.stderr);
}
