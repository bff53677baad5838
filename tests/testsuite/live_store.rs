//! A live store and a shared scan cache: nix-heft reading while real
//! `nix-build` registers paths in the same database, while another process
//! changes it or garbage-collects a path mid-read; and its own cache of
//! HTTP results under runs killed mid-write, runs at the same time, and
//! entries damaged on disk.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::http_server::FileServer;
use crate::common::*;
use nix_heft_report::size::SizeReport;

/// A fresh derivation's output built by real `nix-build` into the local
/// store: a directory whose file names `dep` (so the path references it).
/// `tag` and the time make it new on every test run, so it is really built
/// and registered.
fn build_fresh(tag: &str, dep: &str) -> String {
    let stamp = format!("{tag}-{}", nonce());
    let expr = format!(
        r#"derivation {{
          name = "nix-heft-live-{tag}";
          system = builtins.currentSystem;
          builder = "/bin/sh";
          args = [ "-c" "/bin/mkdir $out && echo $dep > $out/dep && echo $stamp > $out/stamp" ];
          dep = builtins.storePath "{dep}";
          stamp = "{stamp}";
        }}"#
    );
    let out = run(Command::new("nix-build")
        .args(["--no-out-link", "-E", &expr])
        .args(["--option", "sandbox", "false"])
        .args(["--option", "substituters", ""])
        .args(["--option", "build-users-group", ""]));
    out.trim().to_string()
}

/// The closure size Nix reports for `root` in `store`.
fn nix_closure_size(store: Option<&str>, root: &str) -> u64 {
    nix_path_info(store, &[root])[root]["closureSize"]
        .as_u64()
        .unwrap()
}

/// Names in a directory, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// While a background loop builds fresh derivations with real `nix-build`
/// (registering new paths in the local store's database) and copies each
/// into a chroot store with `nix copy` (registering it there), `size`,
/// `refs` and `advise` on fixture roots, on both stores, answer exactly
/// what they answered before the loop (paths added elsewhere do not change
/// a closure) and what Nix answers, with exit 0 and no warning (no
/// "database is locked", no immutable fallback). The chroot store's
/// database has no other user, so its side files come and go with each
/// copy: reads meet it both with a live writer and between writers.
#[test]
fn answers_stay_exact_while_nix_build_registers_paths() {
    let f = fixture();
    let top = f.small("top").to_string();
    let base = f.small("base").to_string();
    let chroot = scratch("live-chroot").join("store");
    copy_tree(&f.chroot, &chroot);
    let chroot_store = chroot.display().to_string();
    let stores: [Option<&str>; 2] = [None, Some(&chroot_store)];
    let commands: Vec<Vec<String>> = [
        vec!["--json", "size", "--references", &f.rocm],
        vec!["--json", "refs", &top],
        vec!["--json", "advise", "--min-saving", "0", &top],
    ]
    .iter()
    .map(|v| v.iter().map(|s| s.to_string()).collect())
    .collect();
    let answer = |store: Option<&str>, args: &[String]| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = heft_run(store, &a);
        assert_eq!(o.code, 0, "{store:?} {a:?}: {}", o.stderr);
        assert!(o.stderr.is_empty(), "{store:?} {a:?}: {}", o.stderr);
        o.stdout
    };
    let want: Vec<String> = commands.iter().map(|a| answer(None, a)).collect();
    // `size --references` agrees with `nix path-info -rsS` path by path
    // (every answer later is compared with this one, byte for byte).
    let r: SizeReport = serde_json::from_str(&want[0]).unwrap();
    for store in stores {
        let nix = nix_path_info(store, &[&f.rocm]);
        assert_eq!(r.path_count, nix.len());
        assert_eq!(
            r.closure_size,
            nix[&f.rocm]["closureSize"].as_u64().unwrap()
        );
        for p in &r.paths {
            let n = &nix[&p.path];
            assert_eq!(p.nar_size, n["narSize"].as_u64().unwrap(), "{}", p.path);
            assert_eq!(
                p.closure_size,
                n["closureSize"].as_u64().unwrap(),
                "{}",
                p.path
            );
            let mut refs: Vec<&str> = n["references"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .filter(|x| *x != p.path)
                .collect();
            let mut ours: Vec<&str> = p
                .references
                .as_ref()
                .unwrap()
                .iter()
                .map(String::as_str)
                .collect();
            refs.sort();
            ours.sort();
            ours.retain(|x| *x != p.path);
            assert_eq!(ours, refs, "{}", p.path);
        }
    }

    let stop = Arc::new(AtomicBool::new(false));
    let built = Arc::new(AtomicUsize::new(0));
    let builder = {
        let (stop, built, base, chroot) =
            (stop.clone(), built.clone(), base.clone(), chroot.clone());
        std::thread::spawn(move || {
            let mut paths = Vec::new();
            // Bounded on its own; the readers stop it sooner.
            for i in 0..60 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let p = build_fresh(&format!("loop{i}"), &base);
                run(nix()
                    .args(["copy", "--no-check-sigs", "--to"])
                    .arg(&chroot)
                    .arg(&p));
                paths.push(p);
                built.fetch_add(1, Ordering::Relaxed);
            }
            paths
        })
    };
    // Wait for the first registration, so reads overlap the builds.
    let deadline = Instant::now() + Duration::from_secs(180);
    while built.load(Ordering::Relaxed) == 0 && !builder.is_finished() {
        assert!(Instant::now() < deadline, "nix-build never finished once");
        std::thread::sleep(Duration::from_millis(50));
    }
    let first = built.load(Ordering::Relaxed);
    let mut rounds = 0;
    // How often a writer had each database open (its side files present)
    // as a read began.
    let wal = [
        PathBuf::from("/nix/var/nix/db/db.sqlite-wal"),
        chroot.join("nix/var/nix/db/db.sqlite-wal"),
    ];
    let mut live = [0usize; 2];
    let mut quiet = [0usize; 2];
    while rounds < 15 && Instant::now() < deadline && !builder.is_finished() {
        for (k, store) in stores.iter().enumerate() {
            for (args, w) in commands.iter().zip(&want) {
                if wal[k].exists() {
                    live[k] += 1;
                } else {
                    quiet[k] += 1;
                }
                let got = answer(*store, args);
                same(&got, w, &format!("round {rounds} {store:?} {}", args[1]));
            }
        }
        rounds += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let paths = builder.join().unwrap();
    let during = paths.len() - first;
    eprintln!(
        "{rounds} rounds, {during} builds meanwhile; reads with a live WAL {live:?}, without {quiet:?}"
    );
    assert!(rounds >= 3, "only {rounds} rounds ran");
    assert!(during >= 2, "only {during} builds ran while reading");
    assert!(
        live.iter().sum::<usize>() >= 1,
        "no read began while a writer had a database open"
    );
    assert!(quiet[1] >= 1, "no read of the chroot store between writers");
    // The paths registered meanwhile are read like any other, and agree
    // with Nix.
    let last = paths.last().unwrap();
    for store in stores {
        let o = heft_run(store, &["--json", "size", last]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let r: SizeReport = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(r.closure_size, nix_closure_size(store, last));
    }
}

/// A fresh path for the file a paused run creates (the library prints
/// nothing, so it says it has paused by this file).
fn pause_file() -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let f = scratch("pause-files").join(format!("paused-{}-{n}", std::process::id()));
    let _ = std::fs::remove_file(&f);
    f
}

/// Waits (at most a minute) until the run has created `signal`, and
/// returns which pause it took; a run that exits first fails the test.
fn wait_for_pause(signal: &std::path::Path, child: &mut Child) -> String {
    let start = std::time::Instant::now();
    loop {
        if let Ok(what) = std::fs::read_to_string(signal) {
            return what;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("nix-heft exited ({status}) before it paused");
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "nix-heft did not pause within a minute"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Starts nix-heft with the test pause inside its closure read and waits
/// until it has read the closure once and is paused.
fn spawn_paused(store: &str, args: &[&str]) -> (Child, BufReader<std::process::ChildStderr>) {
    let signal = pause_file();
    let mut child = Command::new(env!("CARGO_BIN_EXE_nix-heft"))
        .env("NIX_HEFT_TEST_DB_PAUSE_MS", "3000")
        .env("NIX_HEFT_TEST_PAUSE_FILE", &signal)
        .args(["--store", store])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert_eq!(
        wait_for_pause(&signal, &mut child),
        "NIX_HEFT_TEST_DB_PAUSE_MS",
        "nix-heft did not pause in its read"
    );
    let err = BufReader::new(child.stderr.take().unwrap());
    (child, err)
}

/// The rest of a paused run: exit code, stdout, the rest of stderr.
fn finish(child: Child, mut err: BufReader<std::process::ChildStderr>) -> Outcome {
    let out = child.wait_with_output().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut err, &mut stderr).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    }
}

/// A Python sqlite3 process on `db` running `script` (with `p` the
/// argument), printing `ready` and holding its connection until stdin
/// closes.
fn writer(db: &Path, script: &str, arg: &str) -> Child {
    let mut child = Command::new("python3")
        .args([
            "-c",
            &format!(
                "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1], isolation_level=None)\n\
                 p=sys.argv[2]\n{script}\nprint('ready', flush=True)\nsys.stdin.read()\nc.close()\n"
            ),
        ])
        .arg(db)
        .arg(arg)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    child
}

fn close(mut child: Child) {
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
}

/// A chroot copy of the fixture with no WAL side files (the state between
/// builds), and a path inside `top`'s closure that is not `top`.
fn quiet_chroot(name: &str) -> (PathBuf, PathBuf, String) {
    let f = fixture();
    let root = scratch(name).join("store");
    copy_tree(&f.chroot, &root);
    let db = root.join("nix/var/nix/db/db.sqlite");
    let dbdir = db.parent().unwrap();
    assert!(
        !names(dbdir)
            .iter()
            .any(|n| n.ends_with("-wal") || n.ends_with("-shm")),
        "{:?}",
        names(dbdir)
    );
    (root, db, f.small("base").to_string())
}

/// A database without side files is read immutably, which sees no other
/// process: so a read during which a writer appeared and changed it must be
/// thrown away and done again. nix-heft pauses right after its closure read;
/// meanwhile another process changes a size in `top`'s closure and commits.
/// The answer must be the database after the change (as Nix reads it), not
/// the one read before it; both while the writer still holds the database
/// open (its `-wal` then holds the change) and after it closed (the change
/// checkpointed into the file, the side files removed again).
#[test]
fn a_read_the_database_changed_under_is_done_again() {
    let f = fixture();
    let top = f.small("top");
    for keep_open in [true, false] {
        let (root, db, base) = quiet_chroot(&format!("changed-{keep_open}"));
        let store = root.display().to_string();
        let before = nix_closure_size(Some(&store), top);
        let listing = names(db.parent().unwrap());
        let (child, err) = spawn_paused(&store, &["--json", "size", top]);
        let mut w = Some(writer(
            &db,
            "c.execute('update ValidPaths set narSize = narSize + 4096 where path = ?', (p,))",
            &base,
        ));
        if !keep_open {
            close(w.take().unwrap());
        }
        let o = finish(child, err);
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert!(o.stderr.is_empty(), "keep_open={keep_open}: {}", o.stderr);
        let r: SizeReport = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(
            r.closure_size,
            before + 4096,
            "keep_open={keep_open}: the read before the change was used"
        );
        if let Some(w) = w {
            close(w);
        }
        assert_eq!(names(db.parent().unwrap()), listing);
        assert_eq!(r.closure_size, nix_closure_size(Some(&store), top));
    }
}

/// A root whose directory garbage collection removed while its row stays
/// (GC deletes the files and the row in turn), and a root `nix-store
/// --delete` removes for real between nix-heft's closure read and its file
/// read: each is a problem naming the root, kind `vanished`, exit 3, and the
/// size from the database is still exact.
#[test]
fn a_root_garbage_collected_mid_scan_is_reported_vanished() {
    let f = fixture();
    let check = |o: &Outcome, root: &str, what: &str| {
        assert_eq!(o.code, 3, "{what}: {}{}", o.stdout, o.stderr);
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        let problems = v["problems"].as_array().unwrap();
        assert!(
            problems
                .iter()
                .any(|p| p["path"] == root && p["kind"] == "vanished"),
            "{what}: {problems:?}"
        );
        assert!(o.stderr.contains(root), "{what}: {}", o.stderr);
    };

    // Files gone, row kept.
    let root_path = build_fresh("vanish", f.small("base"));
    let root = scratch("vanished-root").join("store");
    copy_tree(&f.chroot, &root);
    run(nix()
        .args(["copy", "--no-check-sigs", "--to"])
        .arg(&root)
        .arg(&root_path));
    let store = root.display().to_string();
    let want = nix_closure_size(Some(&store), &root_path);
    let on_disk = root.join(root_path.trim_start_matches('/'));
    run(Command::new("chmod").arg("-R").arg("u+w").arg(&on_disk));
    std::fs::remove_dir_all(&on_disk).unwrap();
    for cmd in ["refs", "advise"] {
        let o = heft_run(Some(&store), &["--json", cmd, &root_path]);
        check(&o, &root_path, cmd);
    }
    let o = heft_run(Some(&store), &["--json", "size", &root_path]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let r: SizeReport = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(r.closure_size, want);

    // A real `nix-store --delete` while nix-heft holds its read (another
    // process keeps the side files, so the read is a locking transaction
    // and Nix's delete commits alongside it).
    let root_path = build_fresh("gc", f.small("base"));
    let root = scratch("gc-root").join("store");
    copy_tree(&f.chroot, &root);
    run(nix()
        .args(["copy", "--no-check-sigs", "--to"])
        .arg(&root)
        .arg(&root_path));
    let store = root.display().to_string();
    let db = root.join("nix/var/nix/db/db.sqlite");
    let holder = writer(
        &db,
        "c.execute('select count(*) from ValidPaths').fetchall()",
        "",
    );
    let (child, err) = spawn_paused(&store, &["--json", "refs", &root_path]);
    run(Command::new("nix-store").args(["--store", &store, "--delete", &root_path]));
    assert!(!root.join(root_path.trim_start_matches('/')).exists());
    let o = finish(child, err);
    close(holder);
    check(&o, &root_path, "refs under nix-store --delete");
}

/// Runs nix-heft against an HTTP cache with `xdg` as its cache home.
fn cached_command(xdg: &Path, url: &str, args: &[&str]) -> Command {
    let home = xdg.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_nix-heft"));
    c.env("XDG_CACHE_HOME", xdg)
        .env("NIX_CONFIG", trusting_conf())
        .env("HOME", &home)
        .env("NIX_CONF_DIR", &home)
        .env("NIX_HEFT_HTTP_TIMEOUT", "5")
        .args(["--store", url])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn cached_run(xdg: &Path, url: &str, args: &[&str]) -> Outcome {
    let out = cached_command(xdg, url, args).output().unwrap();
    let o = Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
    o
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// Whether `bytes` are a whole local-cache entry: the header line
/// `nix-heft-cache LEN SHA256` and a body of that length and hash.
fn whole_entry(bytes: &[u8]) -> bool {
    use sha2::Digest;
    let Some(nl) = bytes.iter().position(|&b| b == b'\n') else {
        return false;
    };
    let head = String::from_utf8_lossy(&bytes[..nl]);
    let f: Vec<&str> = head.split(' ').collect();
    let body = &bytes[nl + 1..];
    let hex: String = sha2::Sha256::digest(body)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    f.len() == 3 && f[0] == "nix-heft-cache" && f[1] == body.len().to_string() && f[2] == hex
}

/// The arguments of the cached runs: evidence of every edge of the
/// example, so every NAR is downloaded and scanned (and its scan kept).
fn scan_args(f: &Fixture) -> Vec<&str> {
    vec!["--json", "refs", "--evidence", &f.rocm]
}

/// Runs at the same time with one cache home all give the single run's
/// answer; so does a run warm from what they kept, which downloads no NAR.
#[test]
fn runs_at_the_same_time_share_the_scan_cache() {
    let f = fixture();
    let server = FileServer::start(&f.cache);
    let args = scan_args(f);
    let want = cached_run(&scratch("xdg-single"), &server.url(), &args);
    assert_eq!(want.code, 0, "{}", want.stderr);
    let xdg = scratch("xdg-shared");
    for round in 0..2 {
        let children: Vec<Child> = (0..4)
            .map(|_| cached_command(&xdg, &server.url(), &args).spawn().unwrap())
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "round {round}: {stderr}");
            same(
                &String::from_utf8_lossy(&out.stdout),
                &want.stdout,
                &format!("round {round}: a concurrent run"),
            );
        }
    }
    server.clear();
    let warm = cached_run(&xdg, &server.url(), &args);
    assert_eq!(warm.code, 0, "{}", warm.stderr);
    same(&warm.stdout, &want.stdout, "warm after concurrent runs");
    assert_eq!(server.nars(), Vec::<String>::new());
}

/// Runs killed with SIGKILL at many points of their work leave nothing a
/// later run trusts wrongly: the rerun's answer is exact, and once it has
/// run, the cache is complete (no NAR downloaded again). Whatever the kills
/// left besides whole entries is a temporary file, never an entry.
#[test]
fn runs_killed_mid_write_leave_no_entry_a_later_run_trusts() {
    let f = fixture();
    let server = FileServer::start(&f.cache);
    let args = scan_args(f);
    let want = cached_run(&scratch("xdg-kill-want"), &server.url(), &args);
    assert_eq!(want.code, 0, "{}", want.stderr);
    let xdg = scratch("xdg-kill");
    // Killed for certain halfway through writing an entry (each run's
    // first write pauses, so nothing whole is written): the half-written
    // file is a temporary one, never an entry, and nothing a later run
    // reads.
    for _ in 0..3 {
        let signal = pause_file();
        let mut c = cached_command(&xdg, &server.url(), &args)
            .env("NIX_HEFT_TEST_CACHE_PAUSE_MS", "5000")
            .env("NIX_HEFT_TEST_PAUSE_FILE", &signal)
            .spawn()
            .unwrap();
        assert_eq!(
            wait_for_pause(&signal, &mut c),
            "NIX_HEFT_TEST_CACHE_PAUSE_MS"
        );
        let now = files_under(&xdg.join("nix-heft"));
        let _ = c.kill();
        assert!(c.wait().unwrap().code().is_none());
        assert!(
            now.iter()
                .any(|p| p.file_name().unwrap().to_string_lossy().starts_with(".tmp")),
            "no half-written temporary file: {now:?}"
        );
    }
    let mut killed = 0;
    let mut temporaries = 0;
    for delay in [0u64, 2, 5, 10, 20, 35, 50, 80, 120, 200, 300, 500] {
        let mut c = cached_command(&xdg, &server.url(), &args).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(delay));
        // SIGKILL: no destructor, no flush, no rename of a temporary file.
        let _ = c.kill();
        let status = c.wait().unwrap();
        if status.code().is_none() {
            killed += 1;
        }
        // Every file that is not a temporary one is a whole entry: the
        // runs after it rely on that.
        for file in files_under(&xdg.join("nix-heft")) {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with(".tmp") {
                temporaries += 1;
                continue;
            }
            let bytes = std::fs::read(&file).unwrap();
            assert!(
                whole_entry(&bytes),
                "{} is not a whole entry",
                file.display()
            );
        }
    }
    eprintln!("{killed} runs killed; temporary files seen after kills: {temporaries}");
    assert!(
        killed >= 3,
        "only {killed} runs were killed before finishing"
    );
    let rerun = cached_run(&xdg, &server.url(), &args);
    assert_eq!(rerun.code, 0, "{}", rerun.stderr);
    same(&rerun.stdout, &want.stdout, "rerun after kills");
    server.clear();
    let warm = cached_run(&xdg, &server.url(), &args);
    same(&warm.stdout, &want.stdout, "warm rerun after kills");
    assert_eq!(server.nars(), Vec::<String>::new());
}

/// Entries damaged on disk (a narinfo cut short before its references, a
/// scan result with one offset changed but still valid JSON, a listing cut
/// in half) are never trusted: they are fetched again and the answer stays
/// exact.
#[test]
fn damaged_cache_entries_are_fetched_again_not_trusted() {
    let f = fixture();
    let server = FileServer::start(&f.cache);
    let args = scan_args(f);
    let xdg = scratch("xdg-damaged");
    let want = cached_run(&xdg, &server.url(), &args);
    assert_eq!(want.code, 0, "{}", want.stderr);
    let files = files_under(&xdg.join("nix-heft"));
    let narinfo = files
        .iter()
        .find(|p| p.to_string_lossy().ends_with("-rocblas-5.7.1.narinfo"))
        .expect("a kept narinfo of rocblas");
    let bytes = std::fs::read(narinfo).unwrap();
    let cut = bytes
        .windows(11)
        .position(|w| w == b"References:")
        .expect("the narinfo has references");
    std::fs::write(narinfo, &bytes[..cut]).unwrap();
    // A scan result with one hold's offset changed: still JSON.
    let (scan, text) = files
        .iter()
        .filter(|p| {
            let s = p.to_string_lossy();
            s.contains("-hipblas-5.7.1.") && s.ends_with(".scan")
        })
        .map(|p| (p, String::from_utf8(std::fs::read(p).unwrap()).unwrap()))
        .find(|(_, t)| t.contains("\"offset\":"))
        .expect("a kept scan of hipblas with a hold");
    std::fs::write(scan, text.replacen("\"offset\":", "\"offset\":1", 1)).unwrap();

    server.clear();
    let again = cached_run(&xdg, &server.url(), &args);
    assert_eq!(again.code, 0, "{}", again.stderr);
    same(&again.stdout, &want.stdout, "run over damaged entries");
    let log = server.log();
    assert!(
        log.iter()
            .any(|p| p.ends_with(".narinfo") && narinfo.to_string_lossy().contains(&p[1..33])),
        "the cut narinfo was not fetched again: {log:?}"
    );
    assert_eq!(server.nars().len(), 1, "only hipblas's NAR again: {log:?}");
}
