//! The run-time stage: which store files a workload really touches.
//!
//! `trace` runs a command under [`ptrace`] (seccomp-filtered, following
//! every process), resolves each path it named through its symlinks
//! ([`resolve`]) and groups the accesses under store paths into a
//! [`file::TraceFile`]. Traces feed classify (`classify::traced`), which
//! turns holds the trace used into proven run-time ones; the store reader
//! never sees them.

#![warn(missing_docs)]

pub mod file;
pub mod ptrace;
pub mod resolve;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Instant, SystemTime};

use file::{ExitInfo, FileTrace, Op, PathTrace, TraceFile, VERSION};
use ptrace::{Ended, Run};

use nix_heft_types::error::Result;

/// A finished trace: the file to write, and how the first process ended.
#[derive(Debug)]
pub struct Traced {
    /// The trace.
    pub trace: TraceFile,
    /// How the first process ended.
    pub ended: Ended,
    /// Processes still running at the timeout, which were killed.
    pub killed_at_timeout: usize,
    /// Processes in another ABI (32-bit programs), not traced.
    pub foreign_abi: usize,
}

impl Traced {
    /// What to tell the user about how the run ended, with the trace kept
    /// in `out`: the timeout's message whenever the timeout fired (the
    /// first process killed by it, or only what it left behind, its own
    /// exit code kept); a signal only when the timeout did not send it.
    pub fn ending(&self, out: &str) -> Option<String> {
        let n = self.killed_at_timeout;
        match self.ended {
            Ended::Signal(sig) => Some(format!(
                "{} was killed by {}; the partial trace is kept in {out}",
                self.trace.command[0],
                sig.as_str()
            )),
            Ended::Running | Ended::Code(_) if self.trace.timed_out => Some(format!(
                "--timeout reached: {n} process{} still running {} killed; the partial trace \
                 is kept in {out}",
                if n == 1 { "" } else { "es" },
                if n == 1 { "was" } else { "were" }
            )),
            _ => None,
        }
    }

    /// Why the trace is incomplete, when processes ran in another ABI.
    pub fn incomplete(&self) -> Option<String> {
        let n = self.foreign_abi;
        (n > 0).then(|| {
            format!(
                "{n} process{} ran in another ABI (a 32-bit program?) and {} not traced; the \
                 trace is incomplete",
                if n == 1 { "" } else { "es" },
                if n == 1 { "was" } else { "were" }
            )
        })
    }

    /// The exit code of the traced command as a shell reports it: its own
    /// code, 128 + the signal that killed it, or 124 when the timeout
    /// ended it first.
    pub fn exit_code(&self) -> u8 {
        use nix_heft_types::exit;
        match self.ended {
            Ended::Code(c) => u8::try_from(c & 0xff).unwrap_or(exit::ERROR),
            Ended::Signal(sig) => u8::try_from(128 + (sig as i32)).unwrap_or(exit::ERROR),
            Ended::Running => exit::TIMEOUT,
        }
    }
}

/// Runs `cmd` under the tracer and builds its trace, recording accesses
/// under `store_dir`. `env_note` is the user's note on the environment.
pub fn trace(cmd: &ptrace::Command, store_dir: &str, env_note: Option<String>) -> Result<Traced> {
    let started = SystemTime::now();
    let clock = Instant::now();
    let run = ptrace::run(cmd)?;
    let seconds = clock.elapsed().as_secs_f64();
    let mut command = vec![cmd.program.to_string_lossy().into_owned()];
    command.extend(cmd.args.iter().map(|a| a.to_string_lossy().into_owned()));
    let foreign_abi = run.foreign_abi;
    let (exit, complete) = match run.ended {
        Ended::Code(c) => (
            ExitInfo {
                code: Some(c),
                signal: None,
            },
            !run.timed_out,
        ),
        Ended::Signal(s) => (
            ExitInfo {
                code: None,
                signal: Some(s.as_str().to_string()),
            },
            false,
        ),
        Ended::Running => (ExitInfo::default(), false),
    };
    let ended = run.ended;
    let killed_at_timeout = run.killed_at_timeout;
    let trace = TraceFile {
        version: VERSION,
        command,
        env: loading_env(),
        env_note,
        started: humantime::format_rfc3339_seconds(started).to_string(),
        seconds,
        kernel: kernel(),
        store_dir: store_dir.to_string(),
        exit,
        complete: complete && foreign_abi == 0,
        timed_out: run.timed_out,
        processes: run.processes,
        paths: group(run, store_dir),
    };
    Ok(Traced {
        trace,
        ended,
        killed_at_timeout,
        foreign_abi,
    })
}

/// Environment variables that change what a program loads: `LD_*` and
/// every `*_PATH` (`PYTHONPATH` is `*PATH` too, so those as well).
fn loading_env() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(k, v)| {
            let k = k.to_string_lossy().into_owned();
            (k.starts_with("LD_") || k.ends_with("_PATH") || k.ends_with("PATH"))
                .then(|| (k, v.to_string_lossy().into_owned()))
        })
        .collect()
}

fn kernel() -> String {
    match nix::sys::utsname::uname() {
        Ok(u) => format!(
            "{} {} {}",
            u.sysname().to_string_lossy(),
            u.release().to_string_lossy(),
            u.machine().to_string_lossy()
        ),
        Err(_) => "unknown".into(),
    }
}

/// Splits `/nix/store/<hash>-<name>/rest` into the store path and `rest`.
pub fn split_store_path<'a>(store_dir: &str, path: &'a [u8]) -> Option<(&'a [u8], &'a [u8])> {
    let sd = store_dir.trim_end_matches('/').as_bytes();
    let rest = path.strip_prefix(sd)?.strip_prefix(b"/")?;
    let (name, rel) = match rest.iter().position(|&b| b == b'/') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &b""[..]),
    };
    if name.is_empty() || name == b"." || name == b".." || name.starts_with(b".") {
        return None;
    }
    Some((&path[..sd.len() + 1 + name.len()], rel))
}

/// Resolves every access and groups those under the store by store path.
fn group(run: Run, store_dir: &str) -> BTreeMap<String, PathTrace> {
    let mut res = resolve::Resolver::default();
    let mut out: BTreeMap<String, PathTrace> = BTreeMap::new();
    fn entry<'o>(
        out: &'o mut BTreeMap<String, PathTrace>,
        store_dir: &str,
        abs: &[u8],
    ) -> Option<&'o mut FileTrace> {
        let (sp, rel) = split_store_path(store_dir, abs)?;
        let sp = String::from_utf8_lossy(sp).into_owned();
        let rel = String::from_utf8_lossy(rel)
            .trim_end_matches('/')
            .to_string();
        Some(out.entry(sp).or_default().files.entry(rel).or_default())
    }
    let count = |m: &mut BTreeMap<Op, u64>, op: Op, n: u64| {
        let c = m.entry(op).or_default();
        *c = c.saturating_add(n);
    };
    for (a, n) in run.accesses {
        let r = res.resolve(&a.path, a.follow);
        let target = String::from_utf8_lossy(&r.target).into_owned();
        let links: Vec<String> = r
            .links
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect();
        if let Some(f) = entry(&mut out, store_dir, &r.target) {
            count(if a.ok { &mut f.ops } else { &mut f.failed }, a.op, n);
            f.via.extend(links.iter().cloned());
            if !links.is_empty() {
                f.chains.insert(links.clone());
            }
            if f.size.is_none() {
                f.size = std::fs::symlink_metadata(Path::new(OsStr::from_bytes(&r.target)))
                    .ok()
                    .filter(|m| m.is_file())
                    .map(|m| m.len());
            }
        }
        for l in &r.links {
            if let Some(f) = entry(&mut out, store_dir, l) {
                count(if a.ok { &mut f.ops } else { &mut f.failed }, a.op, n);
                f.link_to.insert(target.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_through_a_two_link_chain_land_on_every_hop() {
        let d = tempfile::tempdir().unwrap();
        let sd = std::fs::canonicalize(d.path()).unwrap();
        let sds = sd.to_str().unwrap().to_string();
        for p in ["aaa-x", "bbb-y", "ccc-z/lib"] {
            std::fs::create_dir_all(sd.join(p)).unwrap();
        }
        std::fs::write(sd.join("ccc-z/lib/f.so"), b"12345").unwrap();
        std::os::unix::fs::symlink(sd.join("bbb-y/l2"), sd.join("aaa-x/l1")).unwrap();
        std::os::unix::fs::symlink(sd.join("ccc-z/lib/f.so"), sd.join("bbb-y/l2")).unwrap();
        let l1 = format!("{sds}/aaa-x/l1");
        let run = Run {
            accesses: [(
                ptrace::RawAccess {
                    path: l1.clone().into_bytes(),
                    op: Op::Open,
                    ok: true,
                    follow: true,
                },
                2,
            )]
            .into_iter()
            .collect(),
            ended: Ended::Code(0),
            processes: 1,
            timed_out: false,
            killed_at_timeout: 0,
            foreign_abi: 0,
        };
        let g = group(run, &sds);
        let f = &g[&format!("{sds}/ccc-z")].files["lib/f.so"];
        assert_eq!(f.ops[&Op::Open], 2);
        assert_eq!(f.size, Some(5));
        let chain = vec![l1.clone(), format!("{sds}/bbb-y/l2")];
        assert_eq!(f.chains.iter().collect::<Vec<_>>(), vec![&chain]);
        for (p, rel) in [("aaa-x", "l1"), ("bbb-y", "l2")] {
            let l = &g[&format!("{sds}/{p}")].files[rel];
            assert!(l.used(), "{p}/{rel}");
            assert_eq!(
                l.link_to.iter().collect::<Vec<_>>(),
                vec![&format!("{sds}/ccc-z/lib/f.so")]
            );
        }
    }

    #[test]
    fn splits_store_paths() {
        let s = "/nix/store";
        assert_eq!(
            split_store_path(s, b"/nix/store/abc-x/lib/a.so"),
            Some((&b"/nix/store/abc-x"[..], &b"lib/a.so"[..]))
        );
        assert_eq!(
            split_store_path(s, b"/nix/store/abc-x"),
            Some((&b"/nix/store/abc-x"[..], &b""[..]))
        );
        assert_eq!(split_store_path(s, b"/nix/store"), None);
        assert_eq!(split_store_path(s, b"/nix/store/.links/x"), None);
        assert_eq!(split_store_path(s, b"/nix/storefoo/x"), None);
        assert_eq!(split_store_path(s, b"/usr/lib/x"), None);
    }
}
