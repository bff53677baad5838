//! The run-time roots (`findRuntimeRoots`, Linux): what every process
//! holds of the store, read from `/proc`.

use std::collections::HashMap;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use rayon::prelude::*;

use nix_heft_format::store_path::StorePath;

use super::*;

/// `findRuntimeRoots` on Linux: the run-time roots by store path, and how
/// many processes could not be read.
pub(super) fn find_runtime() -> (Vec<RuntimeRoot>, usize) {
    let pids: Vec<u32> = match std::fs::read_dir("/proc") {
        Ok(rd) => rd
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .collect(),
        Err(_) => return (Vec::new(), 0),
    };
    let per_pid: Vec<ProcessRefs> = pids.par_iter().map(|&pid| process_refs(pid)).collect();
    let mut unreadable = 0;
    let mut by_path: HashMap<StorePath, (Vec<String>, Vec<u32>)> = HashMap::new();
    let mut add = |target: &[u8], holder: String, pid: Option<u32>| {
        if let Some(sp) = to_store_path(target) {
            let e = by_path.entry(sp).or_default();
            e.0.push(holder);
            if let Some(pid) = pid {
                e.1.push(pid);
            }
        }
    };
    for (&pid, (refs, blocked)) in pids.iter().zip(per_pid) {
        unreadable += usize::from(blocked);
        for (target, holder) in refs {
            add(&target, holder, Some(pid));
        }
    }
    for f in [
        "/proc/sys/kernel/modprobe",
        "/proc/sys/kernel/fbsplash",
        "/proc/sys/kernel/poweroff_cmd",
    ] {
        // The whole file, newline included, as Nix reads it: a path ending
        // the file names no store path, one with a file below it does.
        if let Ok(text) = std::fs::read(f) {
            add(&text, f.to_string(), None);
        }
    }
    let mut out: Vec<RuntimeRoot> = by_path
        .into_iter()
        .map(|(store_path, (mut holders, mut pids))| {
            holders.sort();
            holders.dedup();
            pids.sort_unstable();
            pids.dedup();
            let processes = pids.into_iter().map(|p| (p, comm(p))).collect();
            RuntimeRoot {
                store_path,
                holders,
                processes,
            }
        })
        .collect();
    out.sort_by(|a, b| a.store_path.cmp(&b.store_path));
    (out, unreadable)
}

pub(super) fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default()
}

/// A process's candidate run-time roots (target, holder) and whether some
/// of it was forbidden.
type ProcessRefs = (Vec<(Vec<u8>, String)>, bool);

/// One process's candidate run-time roots (targets, with what holds
/// each), and whether some of it was forbidden. The order and the skips
/// are Nix's: a process whose `fd/` cannot be listed is skipped whole, and
/// its `environ` is read only after its `maps`.
fn process_refs(pid: u32) -> ProcessRefs {
    let mut out = Vec::new();
    let mut blocked = false;
    let mut proc_link =
        |file: String, out: &mut Vec<(Vec<u8>, String)>| match std::fs::read_link(&file) {
            Ok(t) => {
                let t = t.into_os_string().into_vec();
                if t.first() == Some(&b'/') {
                    out.push((t, file));
                }
            }
            Err(e) => blocked |= e.raw_os_error() == Some(libc::EACCES),
        };
    proc_link(format!("/proc/{pid}/exe"), &mut out);
    proc_link(format!("/proc/{pid}/cwd"), &mut out);
    let fd_dir = format!("/proc/{pid}/fd");
    match std::fs::read_dir(&fd_dir) {
        Ok(rd) => {
            for e in rd.flatten() {
                let name = e.file_name();
                if !name.as_bytes().starts_with(b".") {
                    proc_link(format!("{fd_dir}/{}", name.to_string_lossy()), &mut out);
                }
            }
        }
        Err(e) => {
            blocked |= e.raw_os_error() == Some(libc::EACCES);
            return (out, blocked);
        }
    }
    let maps_file = format!("/proc/{pid}/maps");
    match std::fs::read(&maps_file) {
        Ok(maps) => {
            for line in maps.split(|&b| b == b'\n') {
                // Six fields, the last a path without spaces (Nix's
                // regex: a "(deleted)" mapping does not match).
                let fields: Vec<&[u8]> = line
                    .split(|b| b.is_ascii_whitespace())
                    .filter(|f| !f.is_empty())
                    .collect();
                if fields.len() == 6 && fields[5].first() == Some(&b'/') {
                    out.push((fields[5].to_vec(), maps_file.clone()));
                }
            }
        }
        Err(e) => {
            blocked |= e.raw_os_error() == Some(libc::EACCES);
            return (out, blocked);
        }
    }
    let env_file = format!("/proc/{pid}/environ");
    match std::fs::read(&env_file) {
        Ok(env) => {
            for p in store_paths_in(&env) {
                out.push((p.to_vec(), env_file.clone()));
            }
        }
        Err(e) => blocked |= e.raw_os_error() == Some(libc::EACCES),
    }
    (out, blocked)
}

/// The matches of Nix's `/nix/store/[0-9a-z]+[0-9a-zA-Z+\-._?=]*` in
/// `text`, leftmost first, not overlapping, each as long as it goes.
pub(super) fn store_paths_in(text: &[u8]) -> Vec<&[u8]> {
    let prefix = format!("{STORE_DIR}/");
    let finder = memchr::memmem::Finder::new(prefix.as_bytes());
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = finder.find(&text[at..]) {
        let start = at + i;
        let body = start + prefix.len();
        let first = text.get(body).copied();
        if !first.is_some_and(|c| c.is_ascii_digit() || c.is_ascii_lowercase()) {
            at = start + 1;
            continue;
        }
        let mut end = body;
        while end < text.len()
            && (text[end].is_ascii_alphanumeric() || b"+-._?=".contains(&text[end]))
        {
            end += 1;
        }
        out.push(&text[start..end]);
        at = end;
    }
    out
}
