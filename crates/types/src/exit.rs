//! The exit codes of nix-heft's programs, in one table: the code uses the
//! constants, and `--help`, the man pages' EXIT STATUS and README's table
//! are written from [`TABLE`] (a test compares README's with it), so that
//! what a script is told and what it gets cannot drift apart.

/// Success (also when standard output is a pipe closed early).
pub const SUCCESS: u8 = 0;
/// A failure outside the command line.
pub const ERROR: u8 = 1;
/// Anything wrong with the command line.
pub const USAGE: u8 = 2;
/// A partial result: some file or path could not be read or simulated.
pub const PARTIAL: u8 = 3;
/// A rule is broken (`check`, `impact`) or a reference refused (`refused
/// --fail`).
pub const VIOLATION: u8 = 4;
/// `trace --timeout` ended the workload first (`timeout(1)`'s code).
pub const TIMEOUT: u8 = 124;

/// One exit code as the documentation says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// The code.
    pub code: u8,
    /// The commands that can exit with it; `None`: every command.
    pub commands: Option<&'static [&'static str]>,
    /// When, in plain words (no markup: the same text goes to `--help`,
    /// roff and a markdown table).
    pub when: &'static str,
}

/// The commands that read a closure and so may give a partial result.
pub const READERS: &[&str] = &[
    "size",
    "why",
    "refs",
    "split",
    "partition",
    "advise",
    "diff",
    "check",
    "impact",
    "history",
    "bisect",
    "refused",
    "report",
    "browse",
];

/// Every exit code, in order.
pub const TABLE: &[Exit] = &[
    Exit {
        code: SUCCESS,
        commands: None,
        when: "success, also when standard output is a pipe closed early (as by head)",
    },
    Exit {
        code: ERROR,
        commands: None,
        when: "a failure outside the command line: a missing or unreadable path or file, a \
               corrupt store, cache or database, a failed download, a narinfo without a trusted \
               signature, a failed evaluation of an installable (with Nix's own message)",
    },
    Exit {
        code: USAGE,
        commands: None,
        when: "anything wrong with the command line: an unknown flag, a bad value (a store that \
               is none, a path outside the store), a regex or glob, a name that matches no path \
               or several where one is needed, nothing to do, no nix to evaluate an installable \
               with",
    },
    Exit {
        code: PARTIAL,
        commands: Some(READERS),
        when: "a partial result: some file or path could not be read or simulated; each problem \
               is named once on standard error and in the JSON's problems, everything else was \
               read and reported",
    },
    Exit {
        code: VIOLATION,
        commands: Some(&["check", "impact", "refused"]),
        when: "check or impact: a rule is broken (by some attribute, for impact); refused \
               --fail: Nix refuses a reference or outputs refer to each other (with --log: the \
               text holds a refusal); even when the read was also partial",
    },
    Exit {
        code: TIMEOUT,
        commands: Some(&["trace"]),
        when: "trace: --timeout ended CMD first (otherwise trace exits with CMD's own code, \
               128 + the signal when a signal killed it)",
    },
];

/// The table as one paragraph, for `--help`.
pub fn paragraph() -> String {
    let mut s = String::from("Exit codes:");
    for (i, e) in TABLE.iter().enumerate() {
        let sep = if i == 0 { " " } else { "; " };
        s.push_str(&format!("{sep}{} {}", e.code, e.when));
    }
    s.push('.');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_in_order_once_and_plain_text() {
        let codes: Vec<u8> = TABLE.iter().map(|e| e.code).collect();
        assert_eq!(codes, [0, 1, 2, 3, 4, 124]);
        for e in TABLE {
            // Markup or a pipe would break the markdown table or roff.
            assert!(!e.when.contains(['`', '|', '*', '\\']), "{}", e.when);
        }
        let p = paragraph();
        assert!(p.starts_with("Exit codes: 0 success") && p.contains("; 124 trace: --timeout"));
    }
}
