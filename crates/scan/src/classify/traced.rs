//! Run-time proof from traces: a hold the traced workload used becomes
//! `runtime` ("used by the traced workload"), whatever the inference said;
//! a hold in an unused file of a used path gets a `not used` note and
//! keeps its verdict (a trace covers only what was run, so it never makes
//! anything `dead`).
//!
//! Used *through this hold* means: for a symlink, the link was followed to
//! a file that was used (the trace records the use on the link too); for
//! a RUNPATH entry, its file was loaded and a library in that directory was
//! loaded; for any other hold, its file was read and the path the string
//! names was used (the file itself, or a file under it when it names a
//! directory).
//! Opening a program does not make every string in it run-time.

use nix_heft_graph::Graph;
use nix_heft_trace::file::TraceSet;
use nix_heft_types::evidence::{Evidence, Kind, Traced, Verdict};

use super::Classified;

/// Applies the traces to every piece of evidence in `c`.
pub fn apply(g: &Graph, c: &mut Classified, traces: &TraceSet) {
    for (&from, pe) in c.paths.iter_mut() {
        let referrer = g.path(from).as_str();
        let path_used = traces.paths.get(referrer).is_some_and(|p| p.used());
        for (&to, evs) in pe.by_reference.iter_mut() {
            let target = g.path(to).as_str();
            for ev in evs.iter_mut() {
                if let Some(proof) = used_through(traces, referrer, target, ev) {
                    ev.traced = Some(Traced::Used);
                    ev.verdict = Verdict::Runtime;
                    ev.reason = format!("used by the traced workload ({proof})");
                } else if path_used && !traces.file(referrer, &ev.file).is_some_and(|f| f.touched())
                {
                    ev.traced = Some(Traced::NotUsed);
                }
            }
        }
    }
}

/// The file of the target path a hold names (`lib/x.so` from
/// `-name/lib/x.so`), `""` for the path itself.
fn named_file(pointed: &[u8]) -> String {
    match pointed.iter().position(|&b| b == b'/') {
        Some(i) => String::from_utf8_lossy(&pointed[i + 1..])
            .trim_end_matches('/')
            .to_string(),
        None => String::new(),
    }
}

/// How the trace used `target` through `ev` (for the reason), if it did.
fn used_through(traces: &TraceSet, referrer: &str, target: &str, ev: &Evidence) -> Option<String> {
    let holder_used = || traces.file(referrer, &ev.file).is_some_and(|f| f.used());
    match ev.kind {
        Kind::Symlink => {
            let f = traces.file(referrer, &ev.file)?;
            if !f.used() {
                return None;
            }
            let trace = traces.used_by(referrer, &ev.file)?;
            let to: Vec<&str> = f
                .link_to
                .iter()
                .map(String::as_str)
                .filter(|t| {
                    *t == target || t.strip_prefix(target).is_some_and(|r| r.starts_with('/'))
                })
                .collect();
            if to.is_empty() {
                return None;
            }
            Some(format!(
                "{}: followed {} to {}",
                trace.display(),
                ev.file,
                to.join(", ")
            ))
        }
        Kind::ElfRunpath => {
            if !holder_used() {
                return None;
            }
            let dir = named_file(&ev.pointed);
            let (trace, lib) = traces.used_in_dir(target, &dir)?;
            Some(format!(
                "{}: {} loaded {}/{lib}",
                trace.display(),
                ev.file,
                nix_heft_format::store_path::name_of(target)
            ))
        }
        _ => {
            // A string in a file the workload never read cannot be what
            // led it to the path.
            if !holder_used() {
                return None;
            }
            let rel = named_file(&ev.pointed);
            let (trace, file) = traces.used_at_or_under(target, &rel)?;
            Some(format!(
                "{}: opened {}{}{file}",
                trace.display(),
                target,
                if file.is_empty() { "" } else { "/" }
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_file_follows_the_name() {
        assert_eq!(named_file(b"-rocblas-5.7.1/lib/x.so"), "lib/x.so");
        assert_eq!(named_file(b"-rocblas-5.7.1/lib/"), "lib");
        assert_eq!(named_file(b"-rocblas-5.7.1"), "");
    }
}
