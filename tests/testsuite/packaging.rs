//! The command line's own documents, generated from the clap definitions:
//! completions and the man pages (`nix-heft(1)` and one
//! `nix-heft-COMMAND(1)` per subcommand; snapshots, and every flag of
//! `--help` in its page); each page has EXIT STATUS and ENVIRONMENT (every
//! variable the code reads), bash completes flag values in a real bash, and
//! each `--help` lists the command's own flags before the global ones. The
//! Nix package that installs them is tests/testsuite/package_nix.rs.

use std::process::Command;

use crate::common::*;

#[test]
fn completions_and_man_page() {
    for shell in ["bash", "zsh", "fish"] {
        let o = heft_run(None, &["completions", shell]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        // Every subcommand is completed.
        for sub in [
            "size",
            "why",
            "refs",
            "split",
            "partition",
            "advise",
            "report",
        ] {
            assert!(o.stdout.contains(sub), "{shell} completion lacks {sub}");
        }
        insta::assert_snapshot!(format!("completions_{shell}"), o.stdout);
    }
    let o = heft_run(None, &["man"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains(".TH nix-heft 1"));
    insta::assert_snapshot!("man", o.stdout);
    let o = heft_run(None, &["man", "advise"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    insta::assert_snapshot!("man_advise", o.stdout);
    // A shell it does not know is a usage error.
    let o = heft_run(None, &["completions", "tcsh"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
}

/// Roff text as read: `\-` is a hyphen.
fn unroff(page: &str) -> String {
    page.replace("\\-", "-")
}

/// The subcommands the main page names as `nix-heft-COMMAND(1)`.
pub(crate) fn paged_commands() -> Vec<String> {
    let o = heft_run(None, &["man"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let re = regex::Regex::new(r"(?m)^nix-heft-([a-z-]+)\(1\)$").unwrap();
    re.captures_iter(&unroff(&o.stdout))
        .map(|c| c[1].to_string())
        .collect()
}

/// The subcommands `nix-heft --help` lists (but `help`).
fn help_commands() -> Vec<String> {
    let o = heft_run(None, &["--help"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let section = o.stdout.split("Commands:\n").nth(1).unwrap();
    let section = section.split("\n\n").next().unwrap();
    section
        .lines()
        // A command's line; its wrapped description is indented further.
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The long flags `nix-heft COMMAND --help` shows (`--store`, ...).
fn long_flags(command: &str) -> Vec<String> {
    let o = heft_run(None, &[command, "--help"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let re = regex::Regex::new(r"(?m)^  (?:-\w, |    )(--[a-z0-9][a-z0-9-]*)").unwrap();
    let flags: Vec<String> = re
        .captures_iter(&o.stdout)
        .map(|c| c[1].to_string())
        .collect();
    assert!(flags.contains(&"--help".to_string()), "{}", o.stdout);
    flags
}

#[test]
fn man_page_of_every_subcommand_has_its_flags() {
    let paged = paged_commands();
    // The main page names a page for every command --help lists, and no
    // other (no nix-heft-help(1)).
    assert_eq!(paged, help_commands());
    assert!(paged.contains(&"advise".to_string()), "{paged:?}");
    for command in &paged {
        let o = heft_run(None, &["man", command]);
        assert_eq!(o.code, 0, "man {command}: {}", o.stderr);
        let page = unroff(&o.stdout);
        assert!(
            page.contains(&format!(".TH nix-heft-{command} 1")),
            "man {command}: {page}"
        );
        assert!(
            page.contains(&format!("\n.SH NAME\nnix-heft-{command} - ")),
            "man {command}: {page}"
        );
        assert!(
            page.contains(&format!("\\fBnix-heft {command}\\fR")),
            "man {command}: synopsis: {page}"
        );
        assert!(
            page.contains(".SH \"SEE ALSO\"\nnix-heft(1)"),
            "man {command}: {page}"
        );
        // Every long flag of its --help, the global ones included.
        let flags = long_flags(command);
        for global in ["--store", "--json", "--color", "--verify"] {
            assert!(flags.iter().any(|f| f == global), "{command} --help");
        }
        for flag in &flags {
            assert!(
                page.contains(&format!("\\fB{flag}\\fR")),
                "man {command} lacks {flag}"
            );
        }
    }
    let advise = unroff(&heft_run(None, &["man", "advise"]).stdout);
    for flag in ["--targets", "--min-saving"] {
        assert!(advise.contains(&format!("\\fB{flag}\\fR")), "{advise}");
    }
}

/// Each page's SYNOPSIS, as man renders it, names every flag with its
/// value as `--help` names it (`[--store STORE]`, not `[--store]`), marks
/// what may be repeated with `...`, and puts the operands last.
#[test]
fn man_synopsis_names_each_flags_value_and_what_repeats() {
    let valued = regex::Regex::new(r"(?m)^  (?:-\w, |    )(--[a-z0-9-]+)((?: <[^>]+>)+)").unwrap();
    let mut checked = 0;
    for command in paged_commands() {
        let page = rendered(&heft_run(None, &["man", &command]).stdout);
        let synopsis = section(&page, "SYNOPSIS").unwrap_or_else(|| panic!("{command}: {page}"));
        let synopsis = synopsis.split_whitespace().collect::<Vec<_>>().join(" ");
        let help = heft_run(None, &[&command, "--help"]).stdout;
        for c in valued.captures_iter(&help) {
            let values = c[2].replace(['<', '>'], "");
            // `[--flag VALUE]`, or `--flag VALUE` when it is required.
            let want = format!("{}{values}", &c[1]);
            let found = synopsis
                .match_indices(&want)
                .filter(|(i, _)| {
                    let next = synopsis[i + want.len()..].chars().next();
                    matches!(next, None | Some(']' | ' '))
                })
                .count();
            assert_eq!(found, 1, "man {command}: {want} in {synopsis}");
            checked += 1;
        }
        assert_eq!(
            synopsis.matches("[--store STORE]...").count(),
            1,
            "{command}: {synopsis}"
        );
        // Nothing after the operands but the end: the last word is not a
        // flag.
        let last = synopsis.split(' ').next_back().unwrap();
        if ["size", "why", "refused", "split"].contains(&command.as_str()) {
            assert!(!last.contains("--"), "{command}: {synopsis}");
        }
    }
    assert!(checked > 100, "{checked}");
    let refused = rendered(&heft_run(None, &["man", "refused"]).stdout);
    let s = section(&refused, "SYNOPSIS").unwrap();
    assert!(s.contains("[--output NAME]..."), "{s}");
    assert!(s.trim_end().ends_with("[DRV]"), "{s}");
    let size = rendered(&heft_run(None, &["man", "size"]).stdout);
    assert!(
        section(&size, "SYNOPSIS")
            .unwrap()
            .trim_end()
            .ends_with(" ROOT..."),
        "{size}"
    );
}

#[test]
fn man_of_an_unknown_command_is_a_usage_error() {
    let o = heft_run(None, &["man", "nosuch"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stdout.is_empty(), "{}", o.stdout);
    assert!(
        o.stderr.contains("invalid value 'nosuch' for '[COMMAND]'"),
        "{}",
        o.stderr
    );
    // It names every command that has a page.
    for command in paged_commands() {
        assert!(o.stderr.contains(&command), "{command}: {}", o.stderr);
    }
    // The help subcommand has no page.
    let o = heft_run(None, &["man", "help"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
}

/// The page `roff` as `man -l` renders it for a reader (man-db, no pager).
fn rendered(roff: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("page.1");
    std::fs::write(&file, roff).unwrap();
    let out = Command::new("man")
        .arg("-l")
        .arg(&file)
        .env("MANWIDTH", "200")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .output()
        .expect("man is needed (scripts/test.sh installs man-db)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The text of section `name` of a rendered page (up to the next one).
fn section<'a>(page: &'a str, name: &str) -> Option<&'a str> {
    let start = page.find(&format!("\n{name}\n"))? + name.len() + 2;
    let rest = &page[start..];
    // Section headings start at column 0; everything else is indented.
    let end = rest
        .match_indices('\n')
        .map(|(i, _)| i + 1)
        .find(|&i| rest[i..].starts_with(|c: char| c.is_ascii_uppercase()))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// Every environment variable nix-heft's code reads by name
/// (`std::env::var("X")`, `var_os("X")`), plus the ones read from a list:
/// nix.conf's (`nix_conf::CONF_VARS`) and the TLS bundle's. The test
/// suite's own hooks (`NIX_HEFT_TEST_*`) are not for users.
fn variables_read() -> std::collections::BTreeSet<String> {
    let re = regex::Regex::new(r#"env::var(?:_os)?\(\s*"([A-Z_][A-Z0-9_]*)"\s*\)"#).unwrap();
    let mut found = std::collections::BTreeSet::new();
    let mut dirs = vec![repo().join("src"), repo().join("crates")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("testutil.rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                found.extend(re.captures_iter(&text).map(|c| c[1].to_string()));
            }
        }
    }
    found.extend(
        nix_heft_format::nix_conf::CONF_VARS
            .iter()
            .map(|v| v.to_string()),
    );
    let tls =
        std::fs::read_to_string(repo().join("crates/store/src/source/transport/http.rs")).unwrap();
    assert!(tls.contains(r#"["NIX_SSL_CERT_FILE", "SSL_CERT_FILE"]"#));
    found.extend(["NIX_SSL_CERT_FILE".to_string(), "SSL_CERT_FILE".to_string()]);
    // `refused --in-build` reads the builder's environment as a map (the
    // variables Nix sets), and the setup hook reads its own switch.
    let build = std::fs::read_to_string(repo().join("crates/scan/src/unregistered.rs")).unwrap();
    for v in ["NIX_ATTRS_JSON_FILE", "NIX_BUILD_TOP"] {
        assert!(
            build.contains(&format!("vars.get(\"{v}\")"))
                || build.contains(&format!(".get(\"{v}\")")),
            "{v}"
        );
        found.insert(v.to_string());
    }
    let hook = std::fs::read_to_string(repo().join("nix/setup-hook.sh")).unwrap();
    assert!(hook.contains("${NIX_HEFT_REFUSED_FAIL:-0}"));
    found.insert("NIX_HEFT_REFUSED_FAIL".to_string());
    found.retain(|v| !v.starts_with("NIX_HEFT_TEST_"));
    found
}

/// The variable names an ENVIRONMENT section's entries name.
fn documented(env: &str) -> std::collections::BTreeSet<String> {
    let re = regex::Regex::new(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_?").unwrap();
    env.lines()
        // An entry's names are on a line of their own, less indented than
        // its text (or alone before it).
        .filter(|l| l.starts_with("       ") && !l.starts_with("        "))
        .flat_map(|l| {
            let names = l.trim().split("   ").next().unwrap_or("").to_string();
            re.find_iter(&names)
                .map(|m| m.as_str().to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn man_pages_have_exit_status_and_environment() {
    let page = rendered(&heft_run(None, &["man"]).stdout);
    // In man(7)'s order, before VERSION.
    let at = |s: &str| {
        page.find(&format!("\n{s}\n"))
            .unwrap_or_else(|| panic!("no {s}: {page}"))
    };
    assert!(at("OPTIONS") < at("EXIT STATUS"), "{page}");
    assert!(at("EXIT STATUS") < at("ENVIRONMENT"), "{page}");
    assert!(at("ENVIRONMENT") < at("VERSION"), "{page}");
    let exit = section(&page, "EXIT STATUS").unwrap();
    for code in ["0", "1", "2", "3", "4", "124"] {
        assert!(
            exit.lines()
                .any(|l| l.trim_start().starts_with(&format!("{code} "))),
            "exit code {code}: {exit}"
        );
    }
    assert!(exit.contains("128"), "{exit}");
    // The exit-code paragraph of --help is not repeated as an EXTRA.
    assert!(!page.contains("\nEXTRA\n"), "{page}");

    // Exactly the variables nix-heft reads, and the ones reqwest reads
    // for it (HTTP proxies) and trace records (LD_*, *PATH).
    let env = section(&page, "ENVIRONMENT").unwrap();
    let read = variables_read();
    let shown = documented(env);
    for v in [
        "NIX_CONFIG",
        "NIX_CONF_DIR",
        "NIX_USER_CONF_FILES",
        "XDG_CACHE_HOME",
        "NO_COLOR",
        "GITHUB_STEP_SUMMARY",
    ] {
        assert!(read.contains(v), "{v} is no longer read: {read:?}");
    }
    let missing: Vec<&String> = read.iter().filter(|v| !shown.contains(*v)).collect();
    assert!(missing.is_empty(), "not in ENVIRONMENT: {missing:?}\n{env}");
    let besides = ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "LD_"];
    let extra: Vec<&String> = shown
        .iter()
        .filter(|v| !read.contains(*v) && !besides.contains(&v.as_str()))
        .collect();
    assert!(
        extra.is_empty(),
        "documented but never read: {extra:?}\n{env}"
    );

    // Each subcommand's page: the codes and variables that apply to it.
    let page_of = |c: &str| rendered(&heft_run(None, &["man", c]).stdout);
    let check = page_of("check");
    let exit = section(&check, "EXIT STATUS").unwrap();
    assert!(
        exit.contains("rule is broken") && !exit.contains("124"),
        "{exit}"
    );
    assert!(
        section(&check, "ENVIRONMENT")
            .unwrap()
            .contains("GITHUB_STEP_SUMMARY")
    );
    let size = page_of("size");
    let exit = section(&size, "EXIT STATUS").unwrap();
    assert!(
        exit.contains("partial") && !exit.contains("rule is broken"),
        "{exit}"
    );
    let env = section(&size, "ENVIRONMENT").unwrap();
    assert!(
        env.contains("NIX_CONFIG") && !env.contains("GITHUB_STEP_SUMMARY"),
        "{env}"
    );
    let trace = page_of("trace");
    assert!(section(&trace, "EXIT STATUS").unwrap().contains("124"));
    assert!(
        section(&trace, "ENVIRONMENT")
            .unwrap()
            .contains("NIX_STORE_DIR")
    );
    // What `refused --in-build` reads of the build's environment, on its
    // page only.
    let refused = page_of("refused");
    let env = section(&refused, "ENVIRONMENT").unwrap();
    let names = documented(env);
    for v in [
        "NIX_ATTRS_JSON_FILE",
        "NIX_BUILD_TOP",
        "NIX_HEFT_REFUSED_FAIL",
    ] {
        assert!(names.contains(v), "{v}: {env}");
    }
    for v in ["outputs, out", "disallowedReferences, disallowedRequisites"] {
        assert_eq!(env.matches(v).count(), 1, "{v}: {env}");
    }
    assert!(
        !section(&size, "ENVIRONMENT")
            .unwrap()
            .contains("NIX_BUILD_TOP")
    );
    let man = page_of("man");
    assert!(section(&man, "EXIT STATUS").is_some(), "{man}");
    assert!(section(&man, "ENVIRONMENT").is_none(), "{man}");
}

/// What bash's completion of `words` (the last one being completed)
/// offers, run in `cwd` with the script `nix-heft completions bash` prints.
fn bash_completes(cwd: &std::path::Path, words: &[&str]) -> Vec<String> {
    let script = heft_run(None, &["completions", "bash"]).stdout;
    let file = cwd.join("nix-heft.bash");
    std::fs::write(&file, script).unwrap();
    let quoted: Vec<String> = words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
        .collect();
    let program = format!(
        r#"source {file}
COMP_WORDS=(nix-heft {words})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
_nix__heft nix-heft "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}" 2>/dev/null
printf '%s\n' "${{COMPREPLY[@]}}""#,
        file = file.display(),
        words = quoted.join(" ")
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(program)
        .current_dir(cwd)
        .output()
        .expect("bash is needed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_flag_values_not_file_names() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("some-file.nix"), "").unwrap();
    let d = dir.path();
    assert_eq!(
        bash_completes(d, &["check", "--format", ""]),
        ["text", "json", "github", "markdown"]
    );
    assert_eq!(bash_completes(d, &["diff", "--format", "m"]), ["markdown"]);
    assert_eq!(
        bash_completes(d, &["check", "--forbid-verdict", ""]),
        ["docs", "build", "dead"]
    );
    assert_eq!(
        bash_completes(d, &["size", "--sort", ""]),
        ["added", "self", "closure", "name"]
    );
    // A subcommand's own flags, and a size is no file name; a FILE is.
    assert_eq!(bash_completes(d, &["size", "--to"]), ["--top"]);
    assert!(bash_completes(d, &["check", "--max-closure", ""]).is_empty());
    assert_eq!(
        bash_completes(d, &["check", "--config", ""]),
        ["nix-heft.bash", "some-file.nix"]
    );
    let man = bash_completes(d, &["man", ""]);
    assert!(man.contains(&"advise".to_string()), "{man:?}");
}

#[test]
fn help_lists_own_flags_before_the_global_ones() {
    let globals = [
        "--store",
        "--json",
        "--color",
        "--file",
        "--arg",
        "--argstr",
        "--include",
        "--show-trace",
    ];
    let flag_re = regex::Regex::new(r"(?m)^  (?:-\w, |    )(--[a-z0-9][a-z0-9-]*)").unwrap();
    for command in paged_commands() {
        let o = heft_run(None, &[command.as_str(), "--help"]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let (own, global) = o
            .stdout
            .split_once("\nGlobal options:\n")
            .unwrap_or_else(|| panic!("{command}: no Global options heading: {}", o.stdout));
        let flags_in = |text: &str| -> Vec<String> {
            flag_re
                .captures_iter(text)
                .map(|c| c[1].to_string())
                .collect()
        };
        let (own, global) = (flags_in(own), flags_in(global));
        for flag in globals {
            assert!(
                !own.iter().any(|f| f == flag),
                "{command}: {flag} among its own flags"
            );
            assert!(
                global.iter().any(|f| f == flag),
                "{command}: {flag} not under the global headings"
            );
        }
        assert!(own.iter().any(|f| f == "--help"), "{command}: {own:?}");
    }
    let o = heft_run(None, &["size", "--help"]);
    let (own, _) = o.stdout.split_once("\nGlobal options:\n").unwrap();
    let own = own.split_once("\nOptions:\n").unwrap().1;
    for flag in [
        "--sort",
        "--top",
        "--bytes",
        "--references",
        "--derivation",
        "--help",
    ] {
        assert!(own.contains(flag), "size's own {flag}: {own}");
    }
    // diff and check tell where their markdown also goes, --json or not.
    for command in ["diff", "check"] {
        let help = heft_run(None, &[command, "--help"]).stdout;
        assert!(
            help.contains("GITHUB_STEP_SUMMARY") && help.contains("whatever --format or --json"),
            "{command}: {help}"
        );
    }
}

/// The exit codes of one table (`nix_heft_types::exit::TABLE`), said alike
/// by README's table, `--help` and every man page's EXIT STATUS (the codes
/// that apply to that command, each with the table's words); and no code
/// of the binary spells an exit code as a number or a constant of its own.
#[test]
fn exit_codes_agree_everywhere() {
    use nix_heft_types::exit::TABLE;
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    // README: exactly the table's rows, in its order.
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let rows: Vec<&str> = readme
        .lines()
        .skip_while(|l| *l != "## Exit codes")
        .skip_while(|l| !l.starts_with("| code |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let want: Vec<String> = TABLE
        .iter()
        .map(|e| format!("| `{}` | {} |", e.code, e.when))
        .collect();
    assert_eq!(rows, want, "README's exit codes differ from the table");
    // --help: the paragraph, as clap wraps it.
    let help = heft_run(None, &["--help"]);
    assert_eq!(help.code, 0);
    assert!(
        squash(&help.stdout).contains(&squash(&nix_heft_types::exit::paragraph())),
        "{}",
        help.stdout
    );
    // Each page: each code that applies to its command, and no other.
    let pages = std::iter::once(None).chain(
        [
            "size",
            "check",
            "impact",
            "refused",
            "trace",
            "man",
            "completions",
        ]
        .into_iter()
        .map(Some),
    );
    for name in pages {
        let args: Vec<&str> = std::iter::once("man").chain(name).collect();
        let page = rendered(&heft_run(None, &args).stdout);
        let exit = squash(section(&page, "EXIT STATUS").unwrap());
        for e in TABLE {
            let applies = match (name, e.commands) {
                (Some(n), Some(list)) => list.contains(&n),
                _ => true,
            };
            let entry = format!("{} {}", e.code, e.when);
            assert_eq!(
                exit.contains(&entry),
                applies,
                "{name:?}, code {}: {exit}",
                e.code
            );
        }
    }
    // The binary's code takes its codes from the table.
    for f in walk_rs(&repo().join("src")) {
        let text = std::fs::read_to_string(&f).unwrap();
        for bad in [
            "const EXIT_",
            "ExitCode::from(1",
            "ExitCode::from(2",
            "ExitCode::from(3",
            "ExitCode::from(4",
            "ExitCode::from(124",
        ] {
            assert!(!text.contains(bad), "{}: {bad}", f.display());
        }
    }
}

/// The `.rs` files under `dir`, recursively.
fn walk_rs(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk_rs(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}
