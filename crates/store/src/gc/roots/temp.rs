//! The temporary roots (`findTempRoots`): the files of Nix processes that
//! still hold their lock.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix_heft_format::store_path::StorePath;

use super::runtime::comm;
use super::*;

type TempFound = (Vec<TempRoots>, Vec<PathBuf>, Vec<String>);

/// `findTempRoots`: the files of processes that still hold their lock.
pub(super) fn find_temp(dir: &Path) -> TempFound {
    let (mut live, mut stale, mut warnings) = (Vec::new(), Vec::new(), Vec::new());
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (live, stale, warnings),
        Err(e) => {
            warnings.push(format!("{}: {e}", dir.display()));
            return (live, stale, warnings);
        }
    };
    let mut names: Vec<OsString> = rd.flatten().map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        if name.as_bytes().first() == Some(&b'.') {
            continue;
        }
        let file = dir.join(&name);
        // Nix reads the leading digits (`std::stoi`); a name without any
        // stops its collector.
        let digits: String = name
            .to_string_lossy()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let Ok(pid) = digits.parse::<u32>() else {
            warnings.push(format!(
                "{}: not a process id (Nix's collector fails on it)",
                file.display()
            ));
            continue;
        };
        let f = match std::fs::File::open(&file) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                warnings.push(format!("{}: {e}", file.display()));
                continue;
            }
        };
        if !locked(&f) {
            stale.push(file);
            continue;
        }
        let Ok(text) = std::fs::read(&file) else {
            continue;
        };
        let mut paths = Vec::new();
        for p in text.split(|&b| b == 0).filter(|p| !p.is_empty()) {
            match std::str::from_utf8(p)
                .ok()
                .and_then(|s| StorePath::parse(STORE_DIR, s).ok())
            {
                Some(sp) => paths.push(sp),
                None => warnings.push(format!(
                    "{}: {:?} is not a store path (Nix's collector fails on it)",
                    file.display(),
                    String::from_utf8_lossy(p)
                )),
            }
        }
        live.push(TempRoots {
            comm: std::fs::metadata(format!("/proc/{pid}"))
                .ok()
                .map(|_| comm(pid)),
            file,
            pid,
            paths,
        });
    }
    (live, stale, warnings)
}

/// Whether some process holds a lock on `f`, which is what makes a
/// temporary roots file live: its Nix process holds an exclusive `flock`
/// for as long as it runs. Tested as the collector tests it, by asking for
/// a lock without waiting, but a shared one, released at once: nothing is
/// written, and a live owner's exclusive lock refuses it all the same.
fn locked(f: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this function borrows; no memory is
    // involved.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    if r == 0 {
        // SAFETY: as above.
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_UN) };
        return false;
    }
    std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}
