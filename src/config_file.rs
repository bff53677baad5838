//! `check`'s config file (`--config FILE`, or `./nix-heft.toml` when
//! present): every flag `check` takes, the global ones included, is a key
//! spelled as the flag. The keys are not listed anywhere: they are read off
//! the command line's own definitions (clap's), and the file becomes
//! arguments that clap parses with the command line, so the file and the
//! flags cannot drift apart.
//!
//! A flag given on the command line overrides its key; a list (`forbid`,
//! `forbid-verdict`, …) adds up: the command line's items, then the
//! file's; ROOTs and `--store` given replace the file's `roots` and
//! `store`. Paths in the file are
//! taken from the file's directory: the values of path flags
//! (`against-json`, `netrc-file`, …) when relative, and any other value
//! that begins with `./` or `../` (a ROOT, `against`, a chroot `store`);
//! `nix-file`, a name for GitHub's annotations, is kept as written.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, ValueHint};

use nix_heft_types::Error;

/// Keys whose values are names written for someone else, kept as written:
/// `nix-file` is the package's file as the repository names it, for
/// GitHub's `file=` (a path from the config file's directory would be one
/// GitHub does not know), though its completion offers files.
const AS_WRITTEN: &[&str] = &["nix-file"];

/// The lists whose items on the command line replace the file's rather
/// than add to them: the ROOTs and `--store`.
const REPLACED: &[&str] = &["roots", "store"];

/// The command line with `check`'s config file in it, when the command is
/// `check` and a file applies; `None` otherwise. `cmd` is the built
/// command (each subcommand holding the global flags), `args` the command
/// line, `matches` clap's parse of it.
pub fn arguments(
    cmd: &clap::Command,
    args: &[OsString],
    matches: &ArgMatches,
) -> Result<Option<Vec<OsString>>, Error> {
    let Some(("check", given)) = matches.subcommand() else {
        return Ok(None);
    };
    let default = Path::new("nix-heft.toml");
    let file: PathBuf = match given.get_one::<PathBuf>("config") {
        Some(f) => f.clone(),
        None if default.is_file() => default.to_path_buf(),
        None => return Ok(None),
    };
    let text = std::fs::read_to_string(&file).map_err(|source| Error::Io {
        path: file.clone(),
        source,
    })?;
    let check = cmd.find_subcommand("check").expect("check is a subcommand");
    let (options, roots) = tokens(check, &file, &text, given)?;
    // The file's options before a `--` the user typed (after it, all is
    // ROOTs), its ROOTs last.
    let dashes = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let mut out: Vec<OsString> = args[..dashes].to_vec();
    out.extend(options);
    out.extend(args[dashes..].iter().cloned());
    if !roots.is_empty() {
        if dashes == args.len() {
            out.push("--".into());
        }
        out.extend(roots);
    }
    Ok(Some(out))
}

/// The file's keys as `--flag=value` arguments and ROOTs, less the keys
/// the command line (`given`) overrides.
fn tokens(
    check: &clap::Command,
    file: &Path,
    text: &str,
    given: &ArgMatches,
) -> Result<(Vec<OsString>, Vec<OsString>), Error> {
    let bad = |reason: String| Error::BadConfig {
        file: file.to_path_buf(),
        reason,
    };
    let table: toml::Table = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut options = Vec::new();
    let mut roots = Vec::new();
    for (key, value) in &table {
        let Some(arg) = check
            .get_arguments()
            .find(|a| key_of(a).as_deref() == Some(key.as_str()))
        else {
            return Err(bad(format!(
                "unknown key '{key}': a key is one of check's flags, spelled as the flag ({})",
                keys(check).join(", ")
            )));
        };
        let id = arg.get_id().as_str();
        let list = arg.is_positional() || matches!(arg.get_action(), ArgAction::Append);
        let on_command_line = given_on_command_line(given, id);
        // A flag given overrides its key; a list adds to it, except the
        // ROOTs and the stores, which replace the file's (a store named on
        // the command line is the one to read, not one more layer).
        if on_command_line && (!list || REPLACED.contains(&id)) {
            continue;
        }
        // Two flags that say one thing (the output format): the command
        // line's says it, whichever of the two it gave.
        // A flag the command line gave that clap says conflicts with this
        // key's (`--against-json` with `against`, `--expr` with `file`)
        // overrides it too.
        let conflicting = check.get_arguments().any(|c| {
            let c_id = c.get_id().as_str();
            given_on_command_line(given, c_id)
                && (check
                    .get_arg_conflicts_with(arg)
                    .iter()
                    .any(|x| x.get_id() == c.get_id())
                    || check
                        .get_arg_conflicts_with(c)
                        .iter()
                        .any(|x| x.get_id() == arg.get_id()))
        });
        let said_otherwise = conflicting
            || SAME_THING.iter().any(|(a, b)| {
                (id == *a && given_on_command_line(given, b))
                    || (id == *b && given_on_command_line(given, a))
            });
        if said_otherwise {
            continue;
        }
        if matches!(arg.get_action(), ArgAction::SetTrue) {
            match value {
                toml::Value::Boolean(true) => options.push(format!("--{key}").into()),
                toml::Value::Boolean(false) => {}
                _ => return Err(bad(format!("'{key}' is true or false"))),
            }
            continue;
        }
        // A flag of several values a time (`override-input INPUT
        // FLAKEREF`): each given as a list of that many.
        let per_use = arg.get_num_args().map_or(1, |r| r.min_values()).max(1);
        if per_use > 1 {
            let uses: Vec<&toml::Value> = match value {
                toml::Value::Array(items) if items.iter().all(|i| i.is_array()) => {
                    items.iter().collect()
                }
                other => vec![other],
            };
            for u in uses {
                let words: Vec<&str> = u
                    .as_array()
                    .map(|a| a.iter().filter_map(|w| w.as_str()).collect())
                    .unwrap_or_default();
                if words.len() != per_use {
                    return Err(bad(format!("'{key}' takes lists of {per_use} strings")));
                }
                options.push(format!("--{key}").into());
                options.extend(words.iter().map(OsString::from));
            }
            continue;
        }
        let values: Vec<&toml::Value> = match value {
            toml::Value::Array(items) if list => items.iter().collect(),
            toml::Value::Array(_) => {
                return Err(bad(format!("'{key}' takes one value, not a list")));
            }
            one => vec![one],
        };
        for v in values {
            let v = match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                _ => return Err(bad(format!("'{key}' takes text or a number"))),
            };
            let v = if AS_WRITTEN.contains(&key.as_str()) {
                PathBuf::from(v)
            } else {
                from_file_dir(dir, arg.get_value_hint(), v)
            };
            if arg.is_positional() {
                roots.push(v.into());
            } else {
                let mut t = OsString::from(format!("--{key}="));
                t.push(v);
                options.push(t);
            }
        }
    }
    Ok((options, roots))
}

/// Pairs of flags that say the same thing (`--json` is `--format json`):
/// one given on the command line overrides the other's key.
const SAME_THING: &[(&str, &str)] = &[("format", "json")];

/// Whether the command line (not a default) gave the flag `id`.
fn given_on_command_line(given: &ArgMatches, id: &str) -> bool {
    matches!(
        given.value_source(id),
        Some(ValueSource::CommandLine | ValueSource::EnvVariable)
    )
}

/// The key of a flag: its long name; `roots` for the ROOTs; none for
/// `--config` itself and clap's own `--help`.
fn key_of(arg: &clap::Arg) -> Option<String> {
    if arg.is_positional() {
        return Some(arg.get_id().as_str().to_string());
    }
    let long = arg.get_long()?;
    (!matches!(long, "config" | "help" | "version")).then(|| long.to_string())
}

/// Every key, sorted, for the message about an unknown one.
fn keys(check: &clap::Command) -> Vec<String> {
    let mut k: Vec<String> = check.get_arguments().filter_map(key_of).collect();
    k.sort();
    k
}

/// `value` as the file means it: a relative path from the file's
/// directory.
fn from_file_dir(dir: &Path, hint: ValueHint, value: String) -> PathBuf {
    let path_flag = matches!(
        hint,
        ValueHint::FilePath | ValueHint::DirPath | ValueHint::AnyPath | ValueHint::ExecutablePath
    );
    let relative = value.starts_with("./") || value.starts_with("../");
    // `<nixpkgs>` is a search-path look-up, not a path.
    let lookup = value.starts_with('<') && value.ends_with('>');
    if relative || (path_flag && !lookup && !value.is_empty() && Path::new(&value).is_relative()) {
        dir.join(value)
    } else {
        PathBuf::from(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built() -> clap::Command {
        let mut c = crate::command();
        c.build();
        c
    }

    fn parse(cmd: &clap::Command, line: &[&str]) -> ArgMatches {
        cmd.clone()
            .try_get_matches_from(line.iter().map(OsString::from))
            .unwrap()
    }

    /// The arguments a file makes for the command line `line`, parsed.
    fn with_file(line: &[&str], text: &str) -> (Vec<OsString>, ArgMatches) {
        let cmd = built();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, text).unwrap();
        // `--config FILE` right after the command, before any `--`.
        let f = file.to_str().unwrap().to_string();
        let mut line: Vec<&str> = line.to_vec();
        let at = line.iter().position(|a| *a == "check").unwrap() + 1;
        line.splice(at..at, ["--config", f.as_str()]);
        let m = parse(&cmd, &line);
        let args: Vec<OsString> = line.iter().map(OsString::from).collect();
        let out = arguments(&cmd, &args, &m).unwrap().unwrap();
        let m = cmd.clone().try_get_matches_from(&out).unwrap();
        (out, m)
    }

    /// Every flag `check` takes, global ones included, is a key the file
    /// accepts and the command then sees, as given on the command line.
    #[test]
    fn every_flag_of_check_is_a_key() {
        let cmd = built();
        let check = cmd.find_subcommand("check").unwrap();
        let mut n = 0;
        for arg in check.get_arguments() {
            let Some(key) = key_of(arg) else { continue };
            let value = if matches!(arg.get_action(), ArgAction::SetTrue) {
                "true".to_string()
            } else if arg.get_num_args().is_some_and(|r| r.min_values() == 2) {
                "[[\"a\", \"b\"]]".to_string()
            } else if let Some(p) = arg.get_possible_values().first() {
                format!("\"{}\"", p.get_name())
            } else {
                "\"1\"".to_string()
            };
            let (_, m) = with_file(&["nix-heft", "check"], &format!("{key} = {value}\n"));
            let sub = m.subcommand_matches("check").unwrap();
            assert_eq!(
                sub.value_source(arg.get_id().as_str()),
                Some(ValueSource::CommandLine),
                "{key}"
            );
            n += 1;
        }
        // The keys the guide names are among them.
        for k in [
            "roots",
            "store",
            "max-closure",
            "nix-file",
            "markdown-limit",
            "evidence",
        ] {
            assert!(keys(check).contains(&k.to_string()), "{k}");
        }
        assert!(n >= 25, "only {n} flags");
    }

    #[test]
    fn flags_override_keys_lists_add_up_and_roots_replace() {
        let text = "roots = [\"./a\"]\nmax-closure = \"1GiB\"\nforbid = [\"x*\"]\n\
                    store = [\"./s\"]\nno-require-sigs = true\n";
        let (_, m) = with_file(
            &[
                "nix-heft",
                "check",
                "--max-closure",
                "2GiB",
                "--forbid",
                "y*",
                "/r",
            ],
            text,
        );
        let sub = m.subcommand_matches("check").unwrap();
        let strings = |id: &str| -> Vec<String> {
            sub.get_many::<String>(id)
                .map(|v| v.cloned().collect())
                .unwrap_or_default()
        };
        assert_eq!(strings("max_closure"), ["2GiB"]);
        // The command line's items first, then the file's.
        assert_eq!(strings("forbid"), ["y*", "x*"]);
        assert_eq!(strings("roots"), ["/r"]);
        assert!(sub.get_flag("no_require_sigs"));
        // A store on the command line replaces the file's.
        let (_, m) = with_file(&["nix-heft", "--store", "/cli", "check", "/r"], text);
        let sub = m.subcommand_matches("check").unwrap();
        let stores: Vec<&String> = sub.get_many::<String>("store").unwrap().collect();
        assert_eq!(stores, ["/cli"]);
        // Paths from the file's directory.
        let (_, m) = with_file(&["nix-heft", "check", "/r"], text);
        let sub = m.subcommand_matches("check").unwrap();
        let strings = |id: &str| -> Vec<String> {
            sub.get_many::<String>(id)
                .map(|v| v.cloned().collect())
                .unwrap_or_default()
        };
        let store = strings("store");
        assert_eq!(store.len(), 1);
        assert!(store[0].ends_with("/./s") && store[0] != "./s", "{store:?}");
        let (_, m) = with_file(&["nix-heft", "check"], text);
        let sub = m.subcommand_matches("check").unwrap();
        let roots: Vec<&String> = sub.get_many::<String>("roots").unwrap().collect();
        assert!(roots[0].ends_with("/./a"), "{roots:?}");
    }

    /// A path flag's value is taken from the file's directory, but
    /// `nix-file`, the repository's name for GitHub, is kept as written.
    #[test]
    fn nix_file_is_kept_as_the_repository_names_it() {
        let text = "nix-file = \"pkgs/app/package.nix:12\"\nagainst-json = \"base.json\"\n";
        let (_, m) = with_file(&["nix-heft", "check", "/r"], text);
        let sub = m.subcommand_matches("check").unwrap();
        let nix_file = sub.get_one::<String>("nix_file").unwrap();
        assert_eq!(nix_file, "pkgs/app/package.nix:12");
        let against = sub.get_one::<PathBuf>("against_json").unwrap();
        assert!(
            against.is_absolute() && against.ends_with("base.json"),
            "{against:?}"
        );
    }

    /// `--json` on the command line overrides the file's `format`, and
    /// `--format` the file's `json`, as a flag overrides its key.
    #[test]
    fn json_and_format_override_each_others_keys() {
        let (_, m) = with_file(
            &["nix-heft", "--json", "check", "/r"],
            "format = \"github\"\n",
        );
        let sub = m.subcommand_matches("check").unwrap();
        assert_eq!(sub.get_one::<String>("format"), None);
        assert!(sub.get_flag("json"));
        let (_, m) = with_file(
            &["nix-heft", "check", "--format", "markdown", "/r"],
            "json = true\n",
        );
        let sub = m.subcommand_matches("check").unwrap();
        assert!(!sub.get_flag("json"));
        assert_eq!(sub.get_one::<String>("format").unwrap(), "markdown");
        // Without the other on the command line, the key holds.
        let (_, m) = with_file(&["nix-heft", "check", "/r"], "format = \"github\"\n");
        let sub = m.subcommand_matches("check").unwrap();
        assert_eq!(sub.get_one::<String>("format").unwrap(), "github");
    }

    /// A flag clap says conflicts with a key's overrides the key too, and
    /// `<nixpkgs>` stays a look-up.
    #[test]
    fn conflicting_flags_override_keys_and_lookups_stay() {
        let (_, m) = with_file(
            &["nix-heft", "check", "--against-json", "/b.json", "/r"],
            "against = \"/nix/var/nix/profiles/system\"\nfile = \"<nixpkgs>\"\n",
        );
        let sub = m.subcommand_matches("check").unwrap();
        assert_eq!(sub.get_one::<String>("against"), None);
        assert_eq!(sub.get_one::<String>("file").unwrap(), "<nixpkgs>");
        let (_, m) = with_file(
            &["nix-heft", "--expr", "import <nixpkgs> {}", "check", "/r"],
            "file = \"default.nix\"\n",
        );
        let sub = m.subcommand_matches("check").unwrap();
        assert_eq!(sub.get_one::<String>("file"), None);
    }

    #[test]
    fn unknown_keys_and_wrong_shapes_are_named() {
        let cmd = built();
        let dir = tempfile::tempdir().unwrap();
        for (text, said) in [
            ("max-clousre = \"1GiB\"\n", "unknown key 'max-clousre'"),
            ("config = \"x\"\n", "unknown key 'config'"),
            (
                "max-closure = [\"1\", \"2\"]\n",
                "'max-closure' takes one value",
            ),
            ("json = \"yes\"\n", "'json' is true or false"),
            ("forbid = [{ a = 1 }]\n", "'forbid' takes text"),
            ("max-closure = \n", "max-closure"),
        ] {
            let file = dir.path().join("c.toml");
            std::fs::write(&file, text).unwrap();
            let f = file.to_str().unwrap();
            let line = ["nix-heft", "check", "--config", f];
            let m = parse(&cmd, &line);
            let args: Vec<OsString> = line.iter().map(OsString::from).collect();
            let e = arguments(&cmd, &args, &m).unwrap_err().to_string();
            assert!(e.contains(said), "{text}: {e}");
            assert_eq!(e.matches(f).count(), 1, "{e}");
        }
    }

    #[test]
    fn a_double_dash_keeps_the_file_options_before_it() {
        let (out, m) = with_file(
            &["nix-heft", "check", "--", "-odd-root"],
            "max-closure = \"1\"\n",
        );
        let dashes = out.iter().position(|a| a == "--").unwrap();
        assert!(out[..dashes].iter().any(|a| a == "--max-closure=1"));
        let sub = m.subcommand_matches("check").unwrap();
        let roots: Vec<&String> = sub.get_many::<String>("roots").unwrap().collect();
        assert_eq!(roots, ["-odd-root"]);
    }
}
