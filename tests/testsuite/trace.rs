//! `nix-heft trace` on real programs in a real store, checked against
//! strace's view of the same runs, and traces given to `--trace`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::*;
use serde_json::Value;

/// tests/fixtures/trace.nix built: attribute → store path.
fn programs() -> &'static BTreeMap<String, String> {
    static P: OnceLock<BTreeMap<String, String>> = OnceLock::new();
    P.get_or_init(|| {
        let attrs = ["hello", "spawner"];
        let paths = nix_build(&repo().join("tests/fixtures/trace.nix"), &attrs);
        attrs.iter().map(|s| s.to_string()).zip(paths).collect()
    })
}

fn rocm() -> &'static str {
    &fixture().rocm
}

const STORE: &str = "/nix/store";

/// The store path a path lies in, lexically.
fn store_of(p: &Path) -> Option<String> {
    let rest = p.strip_prefix(STORE).ok()?;
    let first = rest.components().next()?;
    let name = first.as_os_str().to_str()?;
    (!name.starts_with('.')).then(|| format!("{STORE}/{name}"))
}

/// `p` with symlinks resolved as far as it exists, the rest kept.
fn resolve(p: &Path) -> PathBuf {
    let mut head = p.to_path_buf();
    let mut tail = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(&head) {
            let mut out = c;
            for t in tail.iter().rev() {
                out.push(t);
            }
            return out;
        }
        match (head.file_name().map(|f| f.to_os_string()), head.parent()) {
            (Some(f), Some(par)) => {
                tail.push(f);
                head = par.to_path_buf();
            }
            _ => return p.to_path_buf(),
        }
    }
}

/// Store paths strace shows for a run of `cmd` (`-f -e trace=%file,execve`),
/// each path counted lexically and with its symlinks resolved.
fn strace_store_paths(
    name: &str,
    cmd: &[&str],
    env: &[(&str, &str)],
    cwd: &Path,
) -> BTreeSet<String> {
    let out = scratch_file(&format!("{name}.strace"));
    let st = Command::new("strace")
        .args(["-f", "-y", "-s", "65536", "-e", "trace=%file,execve", "-o"])
        .arg(&out)
        .args(cmd)
        .envs(env.iter().copied())
        .current_dir(cwd)
        .output()
        .expect("strace must be installed (scripts/test.sh installs it)");
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let quoted =
        regex::Regex::new(r#"^\d+\s+\w+\((?:(\w+)<([^>]*)>, )?"((?:[^"\\]|\\.)*)""#).unwrap();
    let mut set = BTreeSet::new();
    for line in text.lines() {
        let Some(c) = quoted.captures(line) else {
            continue;
        };
        let name = &c[3];
        let p = if name.starts_with('/') {
            PathBuf::from(name)
        } else if let Some(dir) = c.get(2) {
            Path::new(dir.as_str()).join(name)
        } else {
            cwd.join(name)
        };
        set.extend(store_of(&p));
        set.extend(store_of(&resolve(&p)));
    }
    set
}

fn scratch_file(name: &str) -> PathBuf {
    let d = fixture().tmp.join("trace-files");
    std::fs::create_dir_all(&d).unwrap();
    d.join(format!("{}-{name}", std::process::id()))
}

/// Runs `nix-heft trace -o FILE -- cmd` and returns the outcome and the
/// trace.
fn trace(cmd: &[&str], env: &[(&str, &str)], extra: &[&str], file: &str) -> (Outcome, Value) {
    let out = scratch_file(file);
    let _ = std::fs::remove_file(&out);
    let o_s = out.to_str().unwrap();
    let mut args = vec!["trace", "-o", o_s];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(cmd);
    let o = heft_run_env(env, None, &args);
    let t: Value = serde_json::from_slice(
        &std::fs::read(&out).unwrap_or_else(|e| panic!("no trace written ({e}): {}", o.stderr)),
    )
    .unwrap();
    (o, t)
}

fn traced_paths(t: &Value) -> BTreeSet<String> {
    t["paths"].as_object().unwrap().keys().cloned().collect()
}

fn file<'a>(t: &'a Value, path: &str, rel: &str) -> Option<&'a Value> {
    t["paths"].get(path)?["files"].get(rel)
}

fn used(f: &Value) -> bool {
    ["open", "exec", "mmap"]
        .iter()
        .any(|op| f["ops"].get(op).and_then(Value::as_u64).unwrap_or(0) > 0)
}

fn path_named(prefix_name: &str) -> String {
    nix_closure_paths(None, &[rocm()])
        .into_iter()
        .find(|p| p.split_once('-').unwrap().1 == prefix_name)
        .unwrap_or_else(|| panic!("no {prefix_name} in the example"))
}

#[test]
fn elf_with_runpath_matches_strace() {
    let server = format!("{}/bin/llama-server", rocm());
    let env = [("ROCBLAS_GPU_TARGET", "gfx90a")];
    let cwd = fixture().tmp.clone();
    let want = strace_store_paths("server", &[&server], &env, &cwd);
    let (o, t) = trace(&[&server], &env, &[], "server.json");
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("loaded gfx90a kernels"), "{}", o.stdout);
    assert_eq!(traced_paths(&t), want);
    // The libraries were loaded from their RUNPATH directories: opened and
    // mapped.
    let glibc = path_named("glibc-2.36");
    let libc = file(&t, &glibc, "lib/libc.so.6").expect("libc.so.6 traced");
    assert!(libc["ops"]["open"].as_u64().unwrap() >= 1, "{libc}");
    assert!(libc["ops"]["mmap"].as_u64().unwrap() >= 1, "{libc}");
    // The loader's probes of hwcaps directories are failed look-ups.
    let probes: Vec<_> = t["paths"][&glibc]["files"]
        .as_object()
        .unwrap()
        .values()
        .filter(|f| !used(f) && f["failed"].as_object().is_some_and(|m| !m.is_empty()))
        .collect();
    assert!(!probes.is_empty());
    assert_eq!(t["exit"]["code"], 0);
    assert_eq!(t["complete"], true);
    assert_eq!(
        t["env"]["PATH"].as_str(),
        std::env::var("PATH").ok().as_deref()
    );
    assert!(t["kernel"].as_str().unwrap().starts_with("Linux "));
}

#[test]
fn script_with_store_shebang_matches_strace() {
    let convert = format!("{}/bin/llama-convert", rocm());
    let cwd = fixture().tmp.clone();
    let want = strace_store_paths("convert", &[&convert, "model.safetensors"], &[], &cwd);
    let (o, t) = trace(&[&convert, "model.safetensors"], &[], &[], "convert.json");
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("would convert model.safetensors"));
    assert_eq!(traced_paths(&t), want);
    let python = path_named("python3-3.11.6");
    assert!(
        t["paths"][&python]["files"]
            .as_object()
            .unwrap()
            .values()
            .any(used),
        "the shebang's interpreter was used: {}",
        t["paths"][&python]
    );
}

#[test]
fn fork_vfork_thread_and_exec_match_strace() {
    let spawner = format!("{}/bin/spawner", programs()["spawner"]);
    let hello = &programs()["hello"];
    let cwd = fixture().tmp.clone();
    let want = strace_store_paths("spawner", &[&spawner], &[], &cwd);
    let (o, t) = trace(&[&spawner], &[], &[], "spawner.json");
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, "hello: hello data\nhello: hello data\n");
    assert_eq!(traced_paths(&t), want);
    // main, its thread, the forked child and the posix_spawn()ed one.
    assert!(t["processes"].as_u64().unwrap() >= 4, "{}", t["processes"]);
    let data = file(&t, hello, "share/hello.txt").unwrap();
    assert_eq!(data["ops"]["open"], 2, "{data}");
    assert!(
        data["ops"]["stat"].as_u64().unwrap() >= 1,
        "the thread's stat"
    );
    assert_eq!(file(&t, hello, "bin/hello").unwrap()["ops"]["exec"], 2);
    assert!(file(&t, hello, "share/unused.txt").is_none());
}

#[test]
fn tensile_loader_opens_one_targets_kernels_through_the_farm() {
    let server = format!("{}/bin/llama-server", rocm());
    let (o, t) = trace(
        &[&server],
        &[("ROCBLAS_GPU_TARGET", "gfx90a")],
        &[],
        "tensile.json",
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let rocblas = path_named("rocblas-5.7.1");
    let gfx90a = path_named("rocblas-tensile-gfx90a-5.7.1");
    let link = "lib/rocblas/library/TensileLibrary_gfx90a.dat";
    let kernel = file(&t, &gfx90a, link).expect("the kernel file in the target's path");
    assert_eq!(kernel["ops"]["open"], 1, "{kernel}");
    assert_eq!(
        kernel["via"],
        serde_json::json!([format!("{rocblas}/{link}")])
    );
    assert_eq!(
        kernel["chains"],
        serde_json::json!([[format!("{rocblas}/{link}")]])
    );
    let l = file(&t, &rocblas, link).expect("the farm's symlink");
    assert!(used(l), "{l}");
    assert_eq!(
        l["link_to"],
        serde_json::json!([format!("{gfx90a}/{link}")])
    );
    // Every other target was only looked at (stat through the farm).
    let mut others = 0;
    for (p, pt) in t["paths"].as_object().unwrap() {
        if p.contains("-rocblas-tensile-") && *p != gfx90a {
            others += 1;
            for (f, ft) in pt["files"].as_object().unwrap() {
                assert!(!used(ft), "{p}/{f} used: {ft}");
            }
        }
    }
    assert_eq!(
        others, 5,
        "gfx900, gfx906, gfx1030, gfx1100, fallback looked at"
    );
    // The loader listed the farm (getdents64) and stat()ed every file
    // through it: look-ups, recorded on the link and on its target.
    let farm = file(&t, &rocblas, "lib/rocblas/library").expect("the farm directory");
    assert!(farm["ops"]["list"].as_u64().unwrap() >= 1, "{farm}");
    let gfx1100 = path_named("rocblas-tensile-gfx1100-5.7.1");
    let other = "lib/rocblas/library/TensileLibrary_gfx1100.dat";
    let looked = file(&t, &gfx1100, other).unwrap();
    assert_eq!(looked["ops"]["stat"], 1, "{looked}");
    assert_eq!(
        looked["via"],
        serde_json::json!([format!("{rocblas}/{other}")])
    );
    assert_eq!(file(&t, &rocblas, other).unwrap()["ops"]["stat"], 1);
    // The summary: touched paths, with bytes used against the path's size.
    assert!(
        o.stderr.contains("rocblas-tensile-gfx90a-5.7.1"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("never touched"), "{}", o.stderr);
    assert!(o.stderr.contains("rocm-docs-5.7.1"), "{}", o.stderr);
}

#[test]
fn stdin_stdout_stderr_and_exit_code_pass_through() {
    let out = scratch_file("pass.json");
    let o = heft()
        .args(["trace", "-o", out.to_str().unwrap(), "--", "sh", "-c"])
        .arg("read x; echo \"got $x\"; echo err >&2; exit 7")
        .write_stdin("abc\n")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(7));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "got abc\n");
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("err\n"));
    // --json: the summary on stdout, after the workload's own output.
    let (o, _) = trace(
        &["echo", "hi"],
        &[],
        &["--json", "--env-note", "CI run 42"],
        "j.json",
    );
    assert_eq!(o.code, 0);
    let (first, rest) = o.stdout.split_once('\n').unwrap();
    assert_eq!(first, "hi");
    let v: Value = serde_json::from_str(rest).unwrap();
    assert_eq!(v["exit_code"], 0);
    let t: Value = serde_json::from_slice(&std::fs::read(scratch_file("j.json")).unwrap()).unwrap();
    assert_eq!(t["env_note"], "CI run 42");
    assert_eq!(t["command"], serde_json::json!(["echo", "hi"]));
}

#[test]
fn a_command_that_does_not_exist_is_a_usage_error() {
    let o = heft_run(
        None,
        &["trace", "-o", "/dev/null", "--", "no-such-command-xyz"],
    );
    assert_usage_error(
        &o,
        "cannot run 'no-such-command-xyz': no such executable file in PATH",
    );
    let o = heft_run(
        None,
        &["trace", "-o", "/dev/null", "--", "/nonexistent/bin/x"],
    );
    assert_usage_error(&o, "cannot run '/nonexistent/bin/x'");
    let o = heft_run(None, &["trace", "--timeout", "-1", "--", "true"]);
    assert_usage_error(&o, "--timeout");
}

#[test]
fn a_workload_killed_by_a_signal_keeps_its_partial_trace() {
    let hello = &programs()["hello"];
    let script = format!("cat {hello}/share/hello.txt >/dev/null; kill -KILL $$");
    let (o, t) = trace(&["sh", "-c", &script], &[], &[], "killed.json");
    assert_eq!(o.code, 128 + 9, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("was killed by SIGKILL; the partial trace is kept in"),
        "{}",
        o.stderr
    );
    assert_eq!(t["exit"]["signal"], "SIGKILL");
    assert_eq!(t["complete"], false);
    assert!(used(file(&t, hello, "share/hello.txt").unwrap()));
}

#[test]
fn a_daemon_is_traced_until_it_exits() {
    let hello = &programs()["hello"];
    // The first process exits at once; its background child reads later.
    let script = format!("( sleep 1; cat {hello}/share/hello.txt >/dev/null ) & exit 0");
    let (o, t) = trace(&["sh", "-c", &script], &[], &[], "daemon.json");
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(t["complete"], true);
    assert!(used(
        file(&t, hello, "share/hello.txt").expect("read after the parent exited")
    ));
    // With --timeout, what still runs is killed and the trace kept.
    let script = format!("cat {hello}/share/hello.txt >/dev/null; ( sleep 300 ) & exit 3");
    let (o, t) = trace(
        &["sh", "-c", &script],
        &[],
        &["--timeout", "1"],
        "timeout.json",
    );
    assert_eq!(o.code, 3, "the first process's code: {}", o.stderr);
    assert!(o.stderr.contains("--timeout reached"), "{}", o.stderr);
    assert_eq!(t["timed_out"], true);
    assert_eq!(t["complete"], false);
    assert!(used(file(&t, hello, "share/hello.txt").unwrap()));
}

#[test]
fn a_workload_the_timeout_ends_exits_124_with_the_timeout_message() {
    // docs/guide/trace.md's and --help's promise, for exactly this command.
    let (o, t) = trace(
        &["bash", "-c", "sleep 10"],
        &[],
        &["--timeout", "2"],
        "timeout-124.json",
    );
    assert_eq!(o.code, 124, "{}", o.stderr);
    assert!(
        o.stderr.contains(
            "nix-heft: note: --timeout reached: 1 process still running was killed; the partial trace is kept in"
        ),
        "{}",
        o.stderr
    );
    assert!(!o.stderr.contains("killed by SIGKILL"), "{}", o.stderr);
    assert!(
        o.stderr.contains("still running when the trace ended"),
        "{}",
        o.stderr
    );
    assert_eq!(t["timed_out"], true);
    assert_eq!(t["complete"], false);
    // The timeout's own kill is not a signal the workload got.
    assert_eq!(t["exit"], serde_json::json!({}));
    // --json: the same code, and the summary says no exit code.
    let (o, _) = trace(
        &["bash", "-c", "sleep 10"],
        &[],
        &["--timeout", "1", "--json"],
        "timeout-124-json.json",
    );
    assert_eq!(o.code, 124, "{}", o.stderr);
    let v: Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["exit_code"], Value::Null);
    assert_eq!(v["signal"], Value::Null);
    assert_eq!(v["complete"], false);
}

#[test]
fn a_workload_that_ends_before_the_timeout_keeps_its_own_code() {
    let (o, t) = trace(
        &["bash", "-c", "exit 5"],
        &[],
        &["--timeout", "30"],
        "before-timeout.json",
    );
    assert_eq!(o.code, 5, "{}", o.stderr);
    assert!(!o.stderr.contains("--timeout reached"), "{}", o.stderr);
    assert_eq!(t["timed_out"], false);
    assert_eq!(t["exit"]["code"], 5);
    // A SIGKILL the workload sends itself is still 128 + 9, not the
    // timeout's 124.
    let (o, t) = trace(
        &["bash", "-c", "kill -KILL $$"],
        &[],
        &["--timeout", "30"],
        "killed-before-timeout.json",
    );
    assert_eq!(o.code, 128 + 9, "{}", o.stderr);
    assert!(o.stderr.contains("was killed by SIGKILL"), "{}", o.stderr);
    assert_eq!(t["timed_out"], false);
    assert_eq!(t["exit"]["signal"], "SIGKILL");
}

/// A trace of llama-server with `ROCBLAS_GPU_TARGET=target`, written once
/// per target and shared: two tests read gfx90a's, and writing it again
/// (`trace` removes the file first) while the other reads it failed one of
/// them at `--test-threads 8` (issue 52).
fn server_trace(target: &str) -> String {
    static WRITTEN: std::sync::Mutex<BTreeMap<String, String>> =
        std::sync::Mutex::new(BTreeMap::new());
    let mut written = WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(file) = written.get(target) {
        return file.clone();
    }
    let server = format!("{}/bin/llama-server", rocm());
    let name = format!("server-{target}.json");
    let (o, _) = trace(&[&server], &[("ROCBLAS_GPU_TARGET", target)], &[], &name);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let file = scratch_file(&name).to_str().unwrap().to_string();
    written.insert(target.to_string(), file.clone());
    file
}

/// A trace of what CMake does with rocblas-config.cmake: read it, then
/// include the rocm-cmake module it names.
fn cmake_trace() -> String {
    let rocblas = path_named("rocblas-5.7.1");
    let script = format!(
        "d=$(sed -n 's/.*ROCM_CMAKE_MODULE_DIR \"\\(.*\\)\")/\\1/p' {rocblas}/lib/cmake/rocblas/rocblas-config.cmake)\n\
         cat \"$d/ROCMPackageConfigHelpers.cmake\" >/dev/null\n"
    );
    let (o, _) = trace(&["sh", "-c", &script], &[], &[], "cmake.json");
    assert_eq!(o.code, 0, "{}", o.stderr);
    scratch_file("cmake.json").to_str().unwrap().to_string()
}

fn json_of(o: &Outcome) -> Value {
    assert_eq!(o.code, 0, "{}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap()
}

fn action<'a>(advice: &'a Value, kind: &str, package: &str) -> Option<&'a Value> {
    advice["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == kind && a["package"] == package)
}

#[test]
fn advise_with_a_trace_keeps_the_traced_target() {
    let t = server_trace("gfx90a");
    let rocblas = path_named("rocblas-5.7.1");
    let advice = json_of(&heft_run(
        None,
        &["--json", "advise", rocm(), "--trace", &t],
    ));
    let a = action(&advice, "partition-targets", &rocblas).expect("a partition action");
    assert!(
        a["snippet"]
            .as_str()
            .unwrap()
            .contains("gpuTargets = [ \"gfx90a\" ]"),
        "{a}"
    );
    assert!(
        a["reason"].as_str().unwrap().contains("used only gfx90a"),
        "{a}"
    );
    // The saving of keeping gfx90a: the other four targets' paths leave
    // (each referenced only by rocblas), as Nix sizes them.
    let info = nix_path_info(None, &[rocm()]);
    let gone: u64 = info
        .iter()
        .filter(|(p, _)| p.contains("-rocblas-tensile-gfx") && !p.contains("-gfx90a-"))
        .map(|(_, v)| v["narSize"].as_u64().unwrap())
        .sum();
    // rocblas itself loses the other targets' links from its farm: its NAR
    // without them, as nix-store --dump writes it.
    let copy = scratch("rocblas-gfx90a-only").join("rocblas");
    run(Command::new("cp").arg("-a").arg(&rocblas).arg(&copy));
    run(Command::new("chmod").arg("-R").arg("u+w").arg(&copy));
    for e in std::fs::read_dir(copy.join("lib/rocblas/library")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let target = std::fs::read_link(e.path())
            .map(|t| t.to_string_lossy().into_owned())
            .unwrap_or_default();
        if per_target_build_drops(&name, &target, "gfx90a") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    let dump = nix_output(Command::new("nix-store")
        .arg("--dump")
        .arg(&copy));
    assert!(dump.status.success());
    let shrink = info[&rocblas]["narSize"].as_u64().unwrap() - dump.stdout.len() as u64;
    assert!(shrink > 0);
    assert_eq!(a["saving"].as_u64().unwrap(), gone + shrink);
    let removes: BTreeSet<&str> = a["removes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(removes.iter().all(|r| !r.contains("gfx90a")), "{removes:?}");
    assert_eq!(removes.len(), 4);
    // Without the trace the costliest target is kept instead.
    let plain = json_of(&heft_run(None, &["--json", "advise", rocm()]));
    let b = action(&plain, "partition-targets", &rocblas).unwrap();
    assert!(b["snippet"].as_str().unwrap().contains("gfx1100"), "{b}");
    assert_ne!(a["saving"], b["saving"]);
    // partition --trace says which groups the workload used.
    let part = json_of(&heft_run(
        None,
        &[
            "--json",
            "partition",
            &rocblas,
            "--by",
            "gfx[0-9]+[a-z]?",
            "--trace",
            &t,
        ],
    ));
    assert_eq!(part["traced_groups"], serde_json::json!(["gfx90a"]));
}

#[test]
fn merged_traces_keep_every_traced_target() {
    let a = server_trace("gfx90a");
    let b = server_trace("gfx1100");
    let rocblas = path_named("rocblas-5.7.1");
    let part = json_of(&heft_run(
        None,
        &[
            "--json",
            "partition",
            &rocblas,
            "--by",
            "gfx[0-9]+[a-z]?",
            "--trace",
            &a,
            "--trace",
            &b,
        ],
    ));
    let mut groups: Vec<&str> = part["traced_groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    groups.sort();
    assert_eq!(groups, ["gfx1100", "gfx90a"]);
    let advice = json_of(&heft_run(
        None,
        &["--json", "advise", rocm(), "--trace", &a, "--trace", &b],
    ));
    let act = action(&advice, "partition-targets", &rocblas).unwrap();
    let snippet = act["snippet"].as_str().unwrap();
    assert!(snippet.contains("[ \"gfx1100\" \"gfx90a\" ]"), "{snippet}");
    assert_eq!(act["removes"].as_array().unwrap().len(), 3);
}

fn evidence_of(refs: &Value, referrer: &str, reference_name: &str) -> Vec<Value> {
    refs["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["referrer"] == referrer && e["reference"].as_str().unwrap().ends_with(reference_name)
        })
        .flat_map(|e| e["evidence"].as_array().unwrap().clone())
        .collect()
}

#[test]
fn a_build_file_the_trace_used_becomes_runtime_and_moving_it_breaks_runtime() {
    let t = cmake_trace();
    let rocblas = path_named("rocblas-5.7.1");
    let config = "lib/cmake/rocblas/rocblas-config.cmake";
    let plain = json_of(&heft_run(None, &["--json", "refs", rocm(), "--evidence"]));
    let before = evidence_of(&plain, &rocblas, "-rocm-cmake-5.7.1");
    let ev = before.iter().find(|e| e["file"] == config).unwrap();
    assert_eq!(ev["verdict"], "build");
    assert!(ev.get("traced").is_none());

    let traced = json_of(&heft_run(
        None,
        &["--json", "refs", rocm(), "--evidence", "--trace", &t],
    ));
    let after = evidence_of(&traced, &rocblas, "-rocm-cmake-5.7.1");
    let ev = after.iter().find(|e| e["file"] == config).unwrap();
    assert_eq!(ev["verdict"], "runtime", "{ev}");
    assert_eq!(ev["traced"], "used");
    let reason = ev["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("used by the traced workload ("),
        "{reason}"
    );
    assert!(reason.contains(&t), "names the trace: {reason}");
    // The .pc file names the same directory, but the workload never read
    // it: a note, and its inferred verdict stays.
    let pc = after
        .iter()
        .find(|e| e["file"] == "lib/pkgconfig/rocblas.pc")
        .unwrap();
    assert_eq!(pc["traced"], "not used");
    assert_eq!(pc["verdict"], "build");
    // No trace makes anything dead: every verdict is the inferred one
    // except the holds the trace used, which are runtime.
    for (e0, e1) in plain["edges"]
        .as_array()
        .unwrap()
        .iter()
        .zip(traced["edges"].as_array().unwrap())
    {
        for (a, b) in e0["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .zip(e1["evidence"].as_array().unwrap())
        {
            if b["traced"] == "used" {
                assert_eq!(b["verdict"], "runtime");
            } else {
                assert_eq!(a["verdict"], b["verdict"], "{b}");
            }
        }
    }

    let safe = json_of(&heft_run(None, &["--json", "advise", rocm()]));
    assert_eq!(
        action(&safe, "split-outputs", &rocblas).unwrap()["safety"],
        "safe"
    );
    let advice = json_of(&heft_run(
        None,
        &["--json", "advise", rocm(), "--trace", &t],
    ));
    let split = action(&advice, "split-outputs", &rocblas).unwrap();
    assert_eq!(split["safety"], "breaks-runtime", "{split}");
    let reason = split["reason"].as_str().unwrap();
    assert!(reason.contains(config) && reason.contains(&t), "{reason}");
    // Ranked down: after every action that does not break the workload.
    let actions = advice["actions"].as_array().unwrap();
    let pos = actions.iter().position(|a| a == split).unwrap();
    assert!(
        actions[pos..]
            .iter()
            .all(|a| a["safety"] == "breaks-runtime")
    );
    // The refs table marks the edge.
    let text = heft_run(None, &["refs", rocm(), "--trace", &t]);
    let line = text
        .stdout
        .lines()
        .find(|l| l.starts_with("rocblas-5.7.1 ") && l.contains("rocm-cmake-5.7.1"))
        .unwrap();
    assert!(line.contains("(traced: used)"), "{line}");
    // why and split see the same evidence.
    let why = heft_run(None, &["why", rocm(), "rocm-cmake-5.7.1", "--trace", &t]);
    assert_eq!(why.code, 0, "{}", why.stderr);
    assert!(
        why.stdout.contains("used by the traced workload"),
        "{}",
        why.stdout
    );
}

#[test]
fn a_corrupt_trace_file_is_a_clear_error() {
    let d = scratch("bad-traces");
    let truncated = d.join("truncated.json");
    let good = std::fs::read_to_string(server_trace("gfx906")).unwrap();
    std::fs::write(&truncated, &good[..good.len() / 2]).unwrap();
    let other = d.join("other.json");
    std::fs::write(&other, "{\"paths\": {}}").unwrap();
    let missing = d.join("missing.json");
    let rocblas = path_named("rocblas-5.7.1");
    for (f, needle) in [
        (&truncated, "not JSON"),
        (&other, "no \"version\""),
        (&missing, "No such file"),
    ] {
        let f = f.to_str().unwrap();
        for cmd in [
            vec!["refs", rocm()],
            vec!["why", rocm(), "rocm-cmake-5.7.1"],
            vec!["split", &rocblas, "--preset", "nixpkgs"],
            vec!["partition", &rocblas, "--by", "gfx[0-9]+"],
            vec!["advise", rocm()],
        ] {
            let mut args = cmd.clone();
            args.extend(["--trace", f]);
            let o = heft_run(None, &args);
            assert_error(&o, &format!("cannot use trace file {f}"));
            assert!(o.stderr.contains(needle), "{:?}: {}", cmd, o.stderr);
        }
    }
}

/// Whether a build for `keep` only leaves out this entry of rocblas' farm:
/// it names another target, and it is not a link into a store path that
/// stays (the fallbacks, which the kept files still need: a per-target
/// build links whole paths, so such a link costs only itself;
/// tests/testsuite/partition.rs checks the rule against a real one-target rebuild).
fn per_target_build_drops(name: &str, target: &str, keep: &str) -> bool {
    let re = regex::Regex::new("gfx[0-9]+[a-z]?").unwrap();
    let hay = format!("lib/rocblas/library/{name} {target}");
    if re.find(&hay).is_none_or(|m| m.as_str() == keep) {
        return false;
    }
    match target.strip_prefix("/nix/store/") {
        Some(rest) => re.is_match(rest.split('/').next().unwrap_or(rest)),
        None => true,
    }
}

/// NAR size of a copy of `path` with `remove` (relative paths) and every
/// entry of `lib/rocblas/library` for a target other than `keep` removed,
/// then directories left empty removed, as `nix-store --dump` writes it.
fn nar_size_without(path: &str, remove: &[&str], keep_target: Option<&str>) -> u64 {
    let copy = scratch(&format!("lean-{}", path.rsplit('/').next().unwrap())).join("p");
    run(Command::new("cp").arg("-a").arg(path).arg(&copy));
    run(Command::new("chmod").arg("-R").arg("u+w").arg(&copy));
    for r in remove {
        let _ = std::fs::remove_dir_all(copy.join(r));
        let _ = std::fs::remove_file(copy.join(r));
    }
    if let Some(keep) = keep_target {
        for e in std::fs::read_dir(copy.join("lib/rocblas/library")).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let target = std::fs::read_link(e.path())
                .map(|t| t.to_string_lossy().into_owned())
                .unwrap_or_default();
            if per_target_build_drops(&name, &target, keep) {
                std::fs::remove_file(e.path()).unwrap();
            }
        }
    }
    // Directories emptied by the moves go too.
    run(Command::new("find").arg(&copy).args([
        "-mindepth",
        "1",
        "-type",
        "d",
        "-empty",
        "-delete",
    ]));
    let dump = nix_output(Command::new("nix-store")
        .arg("--dump")
        .arg(&copy));
    assert!(dump.status.success());
    dump.stdout.len() as u64
}

#[test]
fn the_plan_applies_every_non_breaking_action_together() {
    let rocblas = path_named("rocblas-5.7.1");
    let hipblas = path_named("hipblas-5.7.1");
    let advice = json_of(&heft_run(
        None,
        &["--json", "advise", rocm(), "--targets", "gfx90a"],
    ));
    let plan = &advice["plan"];
    let kinds: Vec<(&str, &str)> = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["kind"].as_str().unwrap(), a["package"].as_str().unwrap()))
        .collect();
    // Lowest package first: rocblas (split, then partition) before hipblas.
    assert_eq!(
        kinds,
        [
            ("split-outputs", rocblas.as_str()),
            ("partition-targets", rocblas.as_str()),
            ("split-outputs", hipblas.as_str()),
            ("dead-runpath", hipblas.as_str()),
        ]
    );
    let part = action(&advice, "partition-targets", &rocblas).unwrap();
    assert_eq!(part["keeps"], serde_json::json!(["gfx90a"]));
    // The lean closure computed without nix-heft: Nix's graph of the
    // closure with the cut references removed, the paths that leave
    // dropped, and rocblas and hipblas at the NAR sizes of copies with the
    // moved and dropped files removed.
    let info = nix_path_info(None, &[rocm()]);
    let cut = |from: &str, to: &str| from.ends_with(to);
    let mut seen = BTreeSet::new();
    let mut stack = vec![rocm().to_string()];
    let mut total = 0u64;
    while let Some(p) = stack.pop() {
        if !seen.insert(p.clone()) {
            continue;
        }
        total += if p == rocblas {
            nar_size_without(
                &p,
                &["include", "lib/cmake", "lib/pkgconfig"],
                Some("gfx90a"),
            )
        } else if p == hipblas {
            nar_size_without(&p, &["include", "share/doc"], None)
        } else {
            info[&p]["narSize"].as_u64().unwrap()
        };
        for r in info[&p]["references"].as_array().unwrap() {
            let r = r.as_str().unwrap();
            let dropped = (p == rocblas
                && (cut(r, "-rocm-cmake-5.7.1")
                    || (r.contains("-rocblas-tensile-gfx") && !r.contains("-gfx90a-"))))
                || (p == hipblas && (cut(r, "-rocm-docs-5.7.1") || cut(r, "-rocm-smi-5.7.1")));
            if r != p && !dropped {
                stack.push(r.to_string());
            }
        }
    }
    assert_eq!(plan["closure_after"].as_u64().unwrap(), total);
    assert_eq!(
        plan["closure_before"].as_u64().unwrap(),
        info[rocm()]["closureSize"].as_u64().unwrap()
    );
    // Consumers of the changed packages are rebuilt.
    let rebuilds: Vec<&str> = plan["rebuilds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(rebuilds, [rocm()]);
    // --targets must name a target that exists.
    let o = heft_run(None, &["advise", rocm(), "--targets", "gfx9999"]);
    assert_usage_error(&o, "--targets gfx9999");
}

/// A file's size as the NAR holds it (contents padded to 8 bytes).
fn pad8_of(path: &str) -> u64 {
    std::fs::metadata(path).unwrap().len().div_ceil(8) * 8
}

#[test]
fn the_plan_matches_the_lean_rebuild() {
    // examples/rocm-mini's variants.lean: every action of the plan applied
    // for real (rocblas for gfx90a and split, hipblas split and relinked
    // without the dead rocm-smi entry, llama-cpp relinked).
    let lean = nix_build(
        &repo().join("examples/rocm-mini/default.nix"),
        &["variants.lean"],
    )
    .pop()
    .unwrap();
    let run_it = Command::new(format!("{lean}/bin/llama-server"))
        .env("ROCBLAS_GPU_TARGET", "gfx90a")
        .output()
        .unwrap();
    assert!(run_it.status.success(), "the lean build runs");
    let advice = json_of(&heft_run(
        None,
        &["--json", "advise", rocm(), "--targets", "gfx90a"],
    ));
    let predicted = advice["plan"]["closure_after"].as_u64().unwrap();
    let info = nix_path_info(None, &[&lean]);
    let real = info[&lean]["closureSize"].as_u64().unwrap();
    let named = |name: &str| {
        info.keys()
            .find(|p| p.split_once('-').unwrap().1 == name)
            .unwrap()
            .clone()
    };
    let (rocblas, hipblas) = (path_named("rocblas-5.7.1"), path_named("hipblas-5.7.1"));
    let (lean_rocblas, lean_hipblas) = (named("rocblas-5.7.1"), named("hipblas-5.7.1"));
    // Two files differ in bytes, not only in what they are: the one-target
    // TensileManifest.txt lists fewer kernels, and patchelf shrinks
    // libhipblas.so when the RUNPATH is set without the dead entry (the
    // plan keeps the file's size: a shorter RUNPATH is rewritten in place).
    let manifest = "lib/rocblas/library/TensileManifest.txt";
    let residual = pad8_of(&format!("{rocblas}/{manifest}"))
        - pad8_of(&format!("{lean_rocblas}/{manifest}"))
        + pad8_of(&format!("{hipblas}/lib/libhipblas.so"))
        - pad8_of(&format!("{lean_hipblas}/lib/libhipblas.so"));
    assert_eq!(
        predicted - real,
        residual,
        "predicted {predicted}, real {real}"
    );
    // The same paths leave: the lean closure has one Tensile target and no
    // rocm-cmake, rocm-docs or rocm-smi.
    let names: BTreeSet<&str> = info.keys().map(|p| p.split_once('-').unwrap().1).collect();
    for gone in [
        "rocm-cmake-5.7.1",
        "rocm-docs-5.7.1",
        "rocm-smi-5.7.1",
        "rocblas-tensile-gfx900-5.7.1",
        "rocblas-tensile-gfx906-5.7.1",
        "rocblas-tensile-gfx1030-5.7.1",
        "rocblas-tensile-gfx1100-5.7.1",
    ] {
        assert!(!names.contains(gone), "{gone} left in the lean closure");
    }
    assert!(names.contains("rocblas-tensile-gfx90a-5.7.1"));
    assert_eq!(names.len(), 17 - 7);
}

#[test]
fn a_32_bit_program_runs_and_the_trace_says_it_was_not_decoded() {
    // The filter stops calls made in another ABI instead of killing the
    // process; the tracer cannot decode them with the 64-bit table.
    let d = scratch("m32");
    let src = d.join("m32.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\nint main(void) { FILE *f = fopen(\"/etc/hostname\", \"r\"); printf(\"32-bit %s\\n\", f ? \"ok\" : \"no\"); return 5; }\n",
    )
    .unwrap();
    let exe = d.join("m32");
    run(Command::new("gcc")
        .arg("-m32")
        .arg("-o")
        .arg(&exe)
        .arg(&src));
    let (o, t) = trace(&[exe.to_str().unwrap()], &[], &[], "m32.json");
    assert_eq!(o.code, 5, "{}", o.stderr);
    assert_eq!(o.stdout, "32-bit ok\n");
    assert!(o.stderr.contains("ran in another ABI"), "{}", o.stderr);
    assert_eq!(t["complete"], false);
}

#[test]
fn a_trace_that_used_no_target_file_is_warned_about() {
    // llama-server with no GPU named loads no kernel library: the trace
    // lists the Tensile directory but uses no per-target file.
    let server = format!("{}/bin/llama-server", rocm());
    let (o, t) = trace(
        &[&server],
        &[("ROCBLAS_GPU_TARGET", "")],
        &[],
        "no-gpu.json",
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let rocblas = path_named("rocblas-5.7.1");
    assert!(t["paths"].get(&rocblas).is_some(), "rocblas untouched: {t}");
    let used_targets: Vec<&str> = t["paths"][&rocblas]["files"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(_, f)| used(f))
                .map(|(k, _)| k.as_str())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        used_targets.iter().all(|f| !f.contains("gfx")),
        "the workload used per-target files: {used_targets:?}"
    );
    let file = scratch_file("no-gpu.json");
    let file = file.to_str().unwrap();
    let with = heft_run(None, &["--json", "advise", rocm(), "--trace", file]);
    let without = json_of(&heft_run(None, &["--json", "advise", rocm()]));
    let with_json = json_of(&with);
    let warning =
        "used no per-target file of rocblas-5.7.1: it says nothing about which targets are used";
    assert!(
        with.stderr.contains("nix-heft: warning: the trace ("),
        "{}",
        with.stderr
    );
    assert!(with.stderr.contains(warning), "{}", with.stderr);
    let warnings = with_json["plan"]["warnings"]
        .as_array()
        .expect("plan warnings");
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains(warning)),
        "{warnings:?}"
    );
    // The trace changed nothing about targets: the same partition as
    // without it.
    let part = |v: &Value| action(v, "partition-targets", &rocblas).map(|a| a["snippet"].clone());
    assert_eq!(part(&with_json), part(&without));
    assert!(
        without["plan"].get("warnings").is_none(),
        "{}",
        without["plan"]
    );
    // Text output warns on stderr too.
    let text = heft_run(None, &["advise", rocm(), "--trace", file]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stderr.contains(warning), "{}", text.stderr);
}
