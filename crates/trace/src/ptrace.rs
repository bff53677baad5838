//! The tracer: runs a command under ptrace with a seccomp-bpf filter, so
//! only the file-system calls stop (as `strace --seccomp-bpf` does), and
//! follows every thread, fork, vfork, clone and exec.
//!
//! Written on the `nix` crate's ptrace calls and `seccompiler`'s filter
//! compiler; what is by hand is the event loop itself, which no crate
//! provides for a tracer that must decode these particular calls.
//!
//! Each file-system call stops three times: at the seccomp filter (its
//! arguments are read then, while the strings are still in the tracee's
//! memory), at syscall entry, and at syscall exit (its result). Linux ≥ 5.3
//! is needed for `PTRACE_GET_SYSCALL_INFO`, which tells the stops apart on
//! every architecture.

use std::collections::{HashMap, HashSet};
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::ptrace::{self, Event, Options};
use nix::sys::signal::{self, SigHandler, Signal};
use nix::sys::uio::{RemoteIoVec, process_vm_readv};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

use super::file::Op;
use nix_heft_types::error::{Error, Result};

/// One recorded access, before symlinks are resolved: the path as the
/// process named it, made absolute against its working directory or
/// directory descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RawAccess {
    /// Absolute path (lexically joined, not resolved).
    pub path: Vec<u8>,
    /// The operation.
    pub op: Op,
    /// Whether the call succeeded.
    pub ok: bool,
    /// Whether the last component is followed when it is a symlink
    /// (false for lstat, readlink, `AT_SYMLINK_NOFOLLOW`, `O_NOFOLLOW`).
    pub follow: bool,
}

/// How the first process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Exited with this code.
    Code(i32),
    /// Killed by this signal.
    Signal(Signal),
    /// Still running when the trace ended: `--timeout` killed it.
    Running,
}

/// What a traced run produced.
#[derive(Debug)]
pub struct Run {
    /// Every distinct access, counted.
    pub accesses: HashMap<RawAccess, u64>,
    /// How the first process ended.
    pub ended: Ended,
    /// Processes and threads traced.
    pub processes: u64,
    /// True when the timeout ended the trace.
    pub timed_out: bool,
    /// Processes still running at the timeout, which were killed.
    pub killed_at_timeout: usize,
    /// Processes whose calls came in another ABI (32-bit programs), which
    /// ran untraced.
    pub foreign_abi: usize,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Command {
    /// The program, as given (searched in `PATH` when it has no `/`).
    pub program: OsString,
    /// Its arguments, without the program.
    pub args: Vec<OsString>,
    /// Kill whatever still runs after this long.
    pub timeout: Option<Duration>,
}

/// The syscalls that stop, by number, with what they are.
#[derive(Debug, Clone, Copy)]
enum Call {
    /// path at arg `p`, dirfd at arg `d` (or cwd), flags at arg `f`.
    Open {
        d: Option<usize>,
        p: usize,
    },
    /// openat2: dirfd 0, path 1, struct open_how at 2 (flags first).
    Openat2,
    Exec {
        d: Option<usize>,
        p: usize,
    },
    Stat {
        d: Option<usize>,
        p: usize,
        follow: StatFollow,
    },
    Access {
        d: Option<usize>,
        p: usize,
    },
    Readlink {
        d: Option<usize>,
        p: usize,
    },
    Getdents,
    Mmap,
}

#[derive(Debug, Clone, Copy)]
enum StatFollow {
    Always,
    Never,
    /// Follow unless arg `usize` has `AT_SYMLINK_NOFOLLOW`.
    Flag(usize),
}

fn calls() -> Vec<(i64, Call)> {
    use Call::*;
    let mut v: Vec<(i64, Call)> = vec![
        (libc::SYS_openat, Open { d: Some(0), p: 1 }),
        (libc::SYS_openat2, Openat2),
        (libc::SYS_execve, Exec { d: None, p: 0 }),
        (libc::SYS_execveat, Exec { d: Some(0), p: 1 }),
        (
            libc::SYS_newfstatat,
            Stat {
                d: Some(0),
                p: 1,
                follow: StatFollow::Flag(3),
            },
        ),
        (
            libc::SYS_statx,
            Stat {
                d: Some(0),
                p: 1,
                follow: StatFollow::Flag(2),
            },
        ),
        (libc::SYS_faccessat, Access { d: Some(0), p: 1 }),
        (libc::SYS_faccessat2, Access { d: Some(0), p: 1 }),
        (libc::SYS_readlinkat, Readlink { d: Some(0), p: 1 }),
        (libc::SYS_getdents64, Getdents),
        (libc::SYS_mmap, Mmap),
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        (libc::SYS_open, Open { d: None, p: 0 }),
        (libc::SYS_creat, Open { d: None, p: 0 }),
        (
            libc::SYS_stat,
            Stat {
                d: None,
                p: 0,
                follow: StatFollow::Always,
            },
        ),
        (
            libc::SYS_lstat,
            Stat {
                d: None,
                p: 0,
                follow: StatFollow::Never,
            },
        ),
        (libc::SYS_access, Access { d: None, p: 0 }),
        (libc::SYS_readlink, Readlink { d: None, p: 0 }),
        (libc::SYS_getdents, Getdents),
    ]);
    v
}

/// The seccomp filter: trace the calls above, allow everything else. mmap
/// stops only when it maps a file descriptor (fd ≠ -1), since anonymous
/// mappings are most of them.
fn filter(calls: &[(i64, Call)]) -> Result<BpfProgram> {
    let err = |e: seccompiler::BackendError| Error::Trace(format!("seccomp filter: {e}"));
    let mut rules = std::collections::BTreeMap::new();
    for (nr, c) in calls {
        let r = match c {
            Call::Mmap => vec![
                SeccompRule::new(vec![
                    SeccompCondition::new(
                        4,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::Ne,
                        u64::from(u32::MAX),
                    )
                    .map_err(err)?,
                ])
                .map_err(err)?,
            ],
            _ => vec![],
        };
        rules.insert(*nr, r);
    }
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|_| Error::Trace(format!("no seccomp support for {}", std::env::consts::ARCH)))?;
    let f = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Trace(0), arch)
        .map_err(err)?;
    let mut prog: BpfProgram = f.try_into().map_err(err)?;
    // seccompiler kills a process whose calls come in another ABI (a
    // 32-bit program on x86_64). Stop it instead: the tracer cannot decode
    // those calls with this table, so it counts the process and lets every
    // call run, and the trace says it is incomplete.
    for ins in prog.iter_mut() {
        if ins.code == (BPF_RET | BPF_K) && ins.k == libc::SECCOMP_RET_KILL_PROCESS {
            ins.k = libc::SECCOMP_RET_TRACE | FOREIGN_ABI;
        }
    }
    Ok(prog)
}

/// BPF_RET | BPF_K (linux/bpf_common.h): return a constant.
const BPF_RET: u16 = 0x06;
const BPF_K: u16 = 0x00;
/// The SECCOMP_RET_DATA of a stop for a call in a foreign ABI.
const FOREIGN_ABI: u32 = 1;

/// Finds `program` as execvp(3) would: as given when it holds a `/`, else
/// the first executable file of that name in `PATH`.
pub fn find_program(program: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let is_exec = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.as_bytes().contains(&b'/') {
        let p = PathBuf::from(program);
        return is_exec(&p).then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_exec(p))
}

/// Per-tracee state between a call's seccomp stop and its exit stop.
#[derive(Debug)]
struct Pending {
    accesses: Vec<RawAccess>,
    exec: bool,
}

/// Runs `cmd` under the tracer until every traced process has exited (or
/// the timeout), passing stdin, stdout and stderr through.
pub fn run(cmd: &Command) -> Result<Run> {
    let program = find_program(&cmd.program).ok_or_else(|| {
        Error::Usage(format!(
            "cannot run '{}': no such executable file{}",
            cmd.program.to_string_lossy(),
            if cmd.program.as_bytes().contains(&b'/') {
                ""
            } else {
                " in PATH"
            }
        ))
    })?;
    let table = calls();
    let by_nr: HashMap<u64, Call> = table.iter().map(|&(n, c)| (n as u64, c)).collect();
    let bpf = filter(&table)?;
    let c_program = CString::new(program.as_os_str().as_bytes())
        .map_err(|_| Error::Usage("the command contains a NUL byte".into()))?;
    let mut c_args = vec![
        CString::new(cmd.program.as_bytes())
            .map_err(|_| Error::Usage("the command contains a NUL byte".into()))?,
    ];
    for a in &cmd.args {
        c_args.push(
            CString::new(a.as_bytes())
                .map_err(|_| Error::Usage("an argument contains a NUL byte".into()))?,
        );
    }
    let mut argv: Vec<*const libc::c_char> = c_args.iter().map(|c| c.as_ptr()).collect();
    argv.push(std::ptr::null());
    // The child reports a failed execve through this pipe (close-on-exec,
    // so a successful exec closes it with nothing written).
    let (rd, wr) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| Error::Trace(format!("pipe: {e}")))?;

    // SAFETY: the child only calls async-signal-safe functions (ptrace,
    // raise, prctl, seccomp, execv, write, _exit) on memory prepared
    // before the fork.
    let child = match unsafe { fork() }.map_err(|e| Error::Trace(format!("fork: {e}")))? {
        ForkResult::Child => unsafe {
            use std::os::fd::AsRawFd;
            let fail = |step: i32| -> ! {
                let e = *libc::__errno_location();
                let msg = [step, e];
                libc::write(
                    wr.as_raw_fd(),
                    msg.as_ptr().cast(),
                    std::mem::size_of_val(&msg),
                );
                libc::_exit(127)
            };
            if libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) != 0 {
                fail(1);
            }
            libc::raise(libc::SIGSTOP);
            if seccompiler::apply_filter(&bpf).is_err() {
                fail(2);
            }
            libc::execv(c_program.as_ptr(), argv.as_ptr());
            fail(3)
        },
        ForkResult::Parent { child } => child,
    };
    drop(wr);

    // The workload gets ^C and ^\; the tracer stays to write the trace.
    // SAFETY: setting a disposition to SIG_IGN runs no handler code.
    let old_int = unsafe { signal::signal(Signal::SIGINT, SigHandler::SigIgn) }.ok();
    let old_quit = unsafe { signal::signal(Signal::SIGQUIT, SigHandler::SigIgn) }.ok();
    let result = trace_loop(child, &by_nr, cmd.timeout);
    // SAFETY: restoring the dispositions saved above.
    unsafe {
        if let Some(h) = old_int {
            let _ = signal::signal(Signal::SIGINT, h);
        }
        if let Some(h) = old_quit {
            let _ = signal::signal(Signal::SIGQUIT, h);
        }
    }
    let run = result?;
    let mut buf = [0u8; 8];
    let n = nix::unistd::read(&rd, &mut buf).unwrap_or(0);
    if n == 8 {
        let step = i32::from_ne_bytes(buf[0..4].try_into().unwrap_or_default());
        let errno = Errno::from_raw(i32::from_ne_bytes(buf[4..8].try_into().unwrap_or_default()));
        let what = match step {
            1 => "cannot trace it (PTRACE_TRACEME)".to_string(),
            2 => "cannot install the seccomp filter".to_string(),
            _ => format!("cannot execute {}", program.display()),
        };
        return Err(Error::Trace(format!(
            "'{}': {what}: {}",
            cmd.program.to_string_lossy(),
            errno.desc()
        )));
    }
    Ok(run)
}

fn trace_loop(child: Pid, by_nr: &HashMap<u64, Call>, timeout: Option<Duration>) -> Result<Run> {
    let fail = |what: &str, e: Errno| Error::Trace(format!("{what}: {}", e.desc()));
    match waitpid(child, Some(WaitPidFlag::__WALL)).map_err(|e| fail("waitpid", e))? {
        WaitStatus::Stopped(_, Signal::SIGSTOP) => {}
        other => {
            return Err(Error::Trace(format!(
                "the child did not stop for the tracer ({other:?})"
            )));
        }
    }
    ptrace::setoptions(
        child,
        Options::PTRACE_O_TRACESYSGOOD
            | Options::PTRACE_O_TRACEFORK
            | Options::PTRACE_O_TRACEVFORK
            | Options::PTRACE_O_TRACECLONE
            | Options::PTRACE_O_TRACEEXEC
            | Options::PTRACE_O_TRACESECCOMP
            // A tracee left without its tracer would get ENOSYS from every
            // filtered call, so it dies with the tracer instead.
            | Options::PTRACE_O_EXITKILL,
    )
    .map_err(|e| fail("PTRACE_SETOPTIONS", e))?;
    ptrace::cont(child, None).map_err(|e| fail("PTRACE_CONT", e))?;

    let live: Arc<Mutex<HashSet<Pid>>> = Arc::new(Mutex::new([child].into_iter().collect()));
    let timed_out = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let killed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // Set before the watchdog's SIGKILL reaches the first process, so that
    // its death is read as the timeout's doing (`Ended::Running`, exit 124)
    // and not as a signal the workload got (128 + 9).
    let first_killed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let watchdog = timeout.map(|t| {
        let live = Arc::clone(&live);
        let timed_out = Arc::clone(&timed_out);
        let killed = Arc::clone(&killed);
        let first_killed = Arc::clone(&first_killed);
        std::thread::spawn(move || {
            if done_rx.recv_timeout(t) == Err(mpsc::RecvTimeoutError::Timeout) {
                timed_out.store(true, std::sync::atomic::Ordering::SeqCst);
                let pids: Vec<Pid> = live
                    .lock()
                    .map(|s| s.iter().copied().collect())
                    .unwrap_or_default();
                killed.store(pids.len(), std::sync::atomic::Ordering::SeqCst);
                first_killed.store(pids.contains(&child), std::sync::atomic::Ordering::SeqCst);
                for p in pids {
                    let _ = signal::kill(p, Signal::SIGKILL);
                }
            }
        })
    });

    let mut accesses: HashMap<RawAccess, u64> = HashMap::new();
    let mut pending: HashMap<Pid, Pending> = HashMap::new();
    let mut awaiting_stop: HashSet<Pid> = HashSet::new();
    let mut known: HashSet<Pid> = [child].into_iter().collect();
    let mut ended = Ended::Running;
    let mut processes: u64 = 1;
    let mut foreign: HashSet<Pid> = HashSet::new();
    let record = |a: RawAccess, acc: &mut HashMap<RawAccess, u64>| {
        let c = acc.entry(a).or_default();
        *c = c.saturating_add(1);
    };
    let forget = |p: Pid, known: &mut HashSet<Pid>| {
        known.remove(&p);
        if let Ok(mut l) = live.lock() {
            l.remove(&p);
        }
    };

    loop {
        let st = match waitpid(None, Some(WaitPidFlag::__WALL)) {
            Ok(s) => s,
            Err(Errno::ECHILD) => break,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(fail("waitpid", e)),
        };
        match st {
            WaitStatus::Exited(p, code) => {
                if p == child {
                    ended = Ended::Code(code);
                }
                pending.remove(&p);
                forget(p, &mut known);
            }
            WaitStatus::Signaled(p, sig, _) => {
                if p == child {
                    // A first process that had already exited (a zombie
                    // not yet reaped when the watchdog fired) reports its
                    // own code above; only the watchdog's SIGKILL counts.
                    ended = if sig == Signal::SIGKILL
                        && first_killed.load(std::sync::atomic::Ordering::SeqCst)
                    {
                        Ended::Running
                    } else {
                        Ended::Signal(sig)
                    };
                }
                pending.remove(&p);
                forget(p, &mut known);
            }
            WaitStatus::PtraceEvent(p, _, ev) => {
                if ev == Event::PTRACE_EVENT_SECCOMP as i32 {
                    if ptrace::getevent(p).is_ok_and(|d| d == i64::from(FOREIGN_ABI)) {
                        foreign.insert(p);
                        resume(ptrace::cont(p, None));
                        continue;
                    }
                    let acc = decode(p, by_nr);
                    match acc {
                        Some(pd) if !pd.accesses.is_empty() => {
                            pending.insert(p, pd);
                            // Stop again at its exit, for the result.
                            resume(ptrace::syscall(p, None));
                        }
                        _ => resume(ptrace::cont(p, None)),
                    }
                } else if ev == Event::PTRACE_EVENT_EXEC as i32 {
                    // The exec succeeded. A non-leader thread that execs
                    // takes over the leader's id: its pending call moves.
                    if let Ok(former) = ptrace::getevent(p) {
                        let former = Pid::from_raw(former as i32);
                        if former != p {
                            if let Some(pd) = pending.remove(&former) {
                                pending.insert(p, pd);
                            }
                            forget(former, &mut known);
                        }
                    }
                    let mut named = Vec::new();
                    if let Some(pd) = pending.remove(&p) {
                        for a in pd.accesses {
                            if let Ok(c) = std::fs::canonicalize(OsStr::from_bytes(&a.path)) {
                                named.push(c);
                            }
                            record(RawAccess { ok: true, ..a }, &mut accesses);
                        }
                    }
                    // The kernel loads a script's interpreter itself, with
                    // no call to see: /proc/PID/exe names what runs.
                    if let Ok(exe) = std::fs::read_link(format!("/proc/{p}/exe"))
                        && !named.contains(&exe)
                    {
                        record(
                            RawAccess {
                                path: exe.into_os_string().into_vec(),
                                op: Op::Exec,
                                ok: true,
                                follow: true,
                            },
                            &mut accesses,
                        );
                    }
                    resume(ptrace::cont(p, None));
                } else if ev == Event::PTRACE_EVENT_FORK as i32
                    || ev == Event::PTRACE_EVENT_VFORK as i32
                    || ev == Event::PTRACE_EVENT_CLONE as i32
                {
                    if let Ok(n) = ptrace::getevent(p) {
                        let n = Pid::from_raw(n as i32);
                        if known.insert(n) {
                            awaiting_stop.insert(n);
                            processes = processes.saturating_add(1);
                            if let Ok(mut l) = live.lock() {
                                l.insert(n);
                            }
                        }
                    }
                    resume(ptrace::cont(p, None));
                } else {
                    resume(ptrace::cont(p, None));
                }
            }
            WaitStatus::PtraceSyscall(p) => {
                let info = ptrace::syscall_info(p);
                match info {
                    Ok(i) if i.op == libc::PTRACE_SYSCALL_INFO_ENTRY => {
                        resume(ptrace::syscall(p, None));
                    }
                    Ok(i) if i.op == libc::PTRACE_SYSCALL_INFO_EXIT => {
                        // SAFETY: op says the exit member is the valid one.
                        let is_error = unsafe { i.u.exit.is_error } != 0;
                        if let Some(pd) = pending.remove(&p) {
                            for a in pd.accesses {
                                record(RawAccess { ok: !is_error, ..a }, &mut accesses);
                            }
                        }
                        resume(ptrace::cont(p, None));
                    }
                    _ => resume(ptrace::cont(p, None)),
                }
            }
            WaitStatus::Stopped(p, sig) => {
                if sig == Signal::SIGSTOP && awaiting_stop.remove(&p) {
                    // A new child's first stop, after its creation event.
                    resume(ptrace::cont(p, None));
                } else if sig == Signal::SIGSTOP && !known.contains(&p) {
                    // A new child's first stop, before its creation event.
                    known.insert(p);
                    processes = processes.saturating_add(1);
                    if let Ok(mut l) = live.lock() {
                        l.insert(p);
                    }
                    resume(ptrace::cont(p, None));
                } else {
                    // A signal for the workload: deliver it. A stop signal
                    // then reports a group-stop, which this resumes too:
                    // without PTRACE_SEIZE and PTRACE_LISTEN a tracer cannot
                    // hold a tracee stopped and still see its SIGCONT, so
                    // job control stops do not stop a traced workload (as
                    // under strace without --seize).
                    resume(ptrace::cont(p, Some(sig)));
                }
            }
            _ => {}
        }
    }
    // A creation event whose child's first stop never came (it died at
    // once) leaves nothing to wait for: waitpid reported ECHILD.
    let _ = done_tx.send(());
    if let Some(w) = watchdog {
        let _ = w.join();
    }
    Ok(Run {
        accesses,
        ended,
        processes,
        timed_out: timed_out.load(std::sync::atomic::Ordering::SeqCst),
        killed_at_timeout: killed.load(std::sync::atomic::Ordering::SeqCst),
        foreign_abi: foreign.len(),
    })
}

/// A tracee may vanish between its stop and the resume (killed by another
/// thread's exit_group): ESRCH is expected and nothing to act on.
fn resume(r: nix::Result<()>) {
    let _ = r;
}

/// Decodes the call a tracee stopped in at its seccomp stop.
fn decode(p: Pid, by_nr: &HashMap<u64, Call>) -> Option<Pending> {
    let info = ptrace::syscall_info(p).ok()?;
    if info.op != libc::PTRACE_SYSCALL_INFO_SECCOMP {
        return None;
    }
    // SAFETY: op says the seccomp member is the valid one.
    let (nr, args) = unsafe { (info.u.seccomp.nr, info.u.seccomp.args) };
    let call = *by_nr.get(&nr)?;
    let mut out = Vec::new();
    let mut exec = false;
    let mut push = |path: Option<Vec<u8>>, op: Op, follow: bool| {
        if let Some(path) = path {
            out.push(RawAccess {
                path,
                op,
                ok: false,
                follow,
            });
        }
    };
    let dirfd = |d: Option<usize>| d.map(|i| args[i] as i32).unwrap_or(libc::AT_FDCWD);
    match call {
        Call::Open { d, p: pi } => {
            let flags = if d.is_some() { args[2] } else { 0 };
            let follow = flags & libc::O_NOFOLLOW as u64 == 0;
            push(at_path(p, dirfd(d), args[pi], false), Op::Open, follow);
        }
        Call::Openat2 => {
            let flags = read_u64(p, args[2]).unwrap_or(0);
            let follow = flags & libc::O_NOFOLLOW as u64 == 0;
            push(at_path(p, args[0] as i32, args[1], false), Op::Open, follow);
        }
        Call::Exec { d, p: pi } => {
            exec = true;
            let empty_ok = d.is_some() && args[4] & libc::AT_EMPTY_PATH as u64 != 0;
            push(at_path(p, dirfd(d), args[pi], empty_ok), Op::Exec, true);
        }
        Call::Stat { d, p: pi, follow } => {
            let (follow, empty_ok) = match follow {
                StatFollow::Always => (true, false),
                StatFollow::Never => (false, false),
                StatFollow::Flag(i) => (
                    args[i] & libc::AT_SYMLINK_NOFOLLOW as u64 == 0,
                    args[i] & libc::AT_EMPTY_PATH as u64 != 0,
                ),
            };
            push(at_path(p, dirfd(d), args[pi], empty_ok), Op::Stat, follow);
        }
        Call::Access { d, p: pi } => {
            push(at_path(p, dirfd(d), args[pi], false), Op::Access, true);
        }
        Call::Readlink { d, p: pi } => {
            push(at_path(p, dirfd(d), args[pi], false), Op::Readlink, false);
        }
        Call::Getdents => push(fd_path(p, args[0] as i32), Op::List, true),
        Call::Mmap => push(fd_path(p, args[4] as i32), Op::Mmap, true),
    }
    Some(Pending {
        accesses: out,
        exec,
    })
    .filter(|pd| !pd.accesses.is_empty() || pd.exec)
}

/// The path a `*at` call names: absolute as given, else joined to the
/// directory of `dirfd` (or the working directory). `empty_ok`: an empty
/// path names `dirfd` itself (`AT_EMPTY_PATH`).
fn at_path(p: Pid, dirfd: i32, addr: u64, empty_ok: bool) -> Option<Vec<u8>> {
    let name = read_cstr(p, addr)?;
    if name.first() == Some(&b'/') {
        return Some(name);
    }
    let base = if dirfd == libc::AT_FDCWD {
        std::fs::read_link(format!("/proc/{p}/cwd")).ok()?
    } else {
        std::fs::read_link(format!("/proc/{p}/fd/{dirfd}")).ok()?
    };
    let mut b = base.into_os_string().into_vec();
    if b.first() != Some(&b'/') {
        // A pipe, socket or anonymous inode: no path.
        return None;
    }
    if name.is_empty() {
        return empty_ok.then_some(b);
    }
    if b.last() != Some(&b'/') {
        b.push(b'/');
    }
    b.extend_from_slice(&name);
    Some(b)
}

/// The file a descriptor names, when it is a file with a path.
fn fd_path(p: Pid, fd: i32) -> Option<Vec<u8>> {
    if fd < 0 {
        return None;
    }
    let t = std::fs::read_link(format!("/proc/{p}/fd/{fd}")).ok()?;
    let b = t.into_os_string().into_vec();
    // "/x (deleted)" files and non-files do not name a store file.
    (b.first() == Some(&b'/') && !b.ends_with(b" (deleted)")).then_some(b)
}

/// Reads a NUL-terminated string (at most PATH_MAX bytes) from the tracee,
/// one page at a time so that a string ending just before an unmapped
/// page is still read.
fn read_cstr(p: Pid, addr: u64) -> Option<Vec<u8>> {
    const PAGE: u64 = 4096;
    const MAX: usize = libc::PATH_MAX as usize;
    if addr == 0 {
        return None;
    }
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < MAX {
        let chunk = (PAGE - at % PAGE) as usize;
        let mut buf = vec![0u8; chunk];
        let n = process_vm_readv(
            p,
            &mut [std::io::IoSliceMut::new(&mut buf)],
            &[RemoteIoVec {
                base: at as usize,
                len: chunk,
            }],
        )
        .ok()?;
        if n == 0 {
            return None;
        }
        if let Some(z) = memchr::memchr(0, &buf[..n]) {
            out.extend_from_slice(&buf[..z]);
            return Some(out);
        }
        out.extend_from_slice(&buf[..n]);
        at = at.checked_add(n as u64)?;
    }
    None
}

fn read_u64(p: Pid, addr: u64) -> Option<u64> {
    let mut buf = [0u8; 8];
    let n = process_vm_readv(
        p,
        &mut [std::io::IoSliceMut::new(&mut buf)],
        &[RemoteIoVec {
            base: addr as usize,
            len: 8,
        }],
    )
    .ok()?;
    (n == 8).then(|| u64::from_ne_bytes(buf))
}
