//! The programs a run executed, as the kernel saw them: the run under
//! `strace -ff -e trace=execve` (one file per process, so concurrent
//! children's lines never interleave), each successful `execve` read back
//! as its argument vector.

use std::path::Path;
use std::process::Command;

/// Runs `cmd` (program and arguments) under strace, its per-process
/// traces written to `dir/trace.PID`; returns the command's output.
pub fn traced(dir: &Path, cmd: &mut Command) -> std::process::Output {
    let program = cmd.get_program().to_owned();
    let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
    let envs: Vec<_> = cmd
        .get_envs()
        .map(|(k, v)| (k.to_owned(), v.map(|v| v.to_owned())))
        .collect();
    let mut s = Command::new("strace");
    s.args([
        "-ff",
        "-qq",
        "-s",
        "4096",
        "-e",
        "trace=execve",
        "-e",
        "signal=none",
        "-o",
    ])
    .arg(dir.join("trace"))
    .arg(program)
    .args(args);
    for (k, v) in envs {
        match v {
            Some(v) => s.env(k, v),
            None => s.env_remove(k),
        };
    }
    s.output().expect("strace runs")
}

/// Every successful `execve` in the traces under `dir`: its argv.
pub fn execs(dir: &Path) -> Vec<Vec<String>> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if !path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("trace."))
        {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            if line.starts_with("execve(") && line.ends_with(" = 0") {
                all.push(argv(line));
            }
        }
    }
    assert!(!all.is_empty(), "no execve traced in {}", dir.display());
    all
}

/// The argument vector of one strace `execve("…", ["a", "b"], …) = 0`
/// line: the quoted strings inside the first `[…]`, C escapes undone.
fn argv(line: &str) -> Vec<String> {
    let start = line.find('[').expect("an argv") + 1;
    let mut out = Vec::new();
    let mut chars = line[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            ']' => break,
            '"' => {
                let mut s = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some('n') => s.push('\n'),
                            Some('t') => s.push('\t'),
                            Some(o) => s.push(o),
                            None => break,
                        },
                        c => s.push(c),
                    }
                }
                out.push(s);
            }
            _ => {}
        }
    }
    out
}

/// Whether an argv runs the program called `name` (by its file name).
pub fn runs(argv: &[String], name: &str) -> bool {
    argv.first()
        .and_then(|p| Path::new(p).file_name())
        .is_some_and(|n| n == name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn argv_reads_strace_quoting() {
        let l = r#"execve("/usr/bin/git", ["git", "-C", "/tmp/a \"b\"", "worktree"], 0x7ffd /* 30 vars */) = 0"#;
        assert_eq!(super::argv(l), ["git", "-C", "/tmp/a \"b\"", "worktree"]);
    }
}
