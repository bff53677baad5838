//! Credentials for private HTTP caches (Cachix, Attic), from a netrc file
//! as Nix reads it: `--netrc-file`, else nix.conf's `netrc-file` setting,
//! else Nix's default `$NIX_CONF_DIR/netrc`, else `~/.netrc`.
//!
//! The netrc grammar is small (whitespace-separated tokens: `machine NAME`,
//! `default`, `login`, `password`, `account`, and `macdef` bodies ending at
//! a blank line), and no well-kept crate reads it, so it is parsed here.
//! Credentials are kept in [`Credentials`], whose `Debug` hides them; no
//! error message ever includes one.

use std::path::{Path, PathBuf};

use crate::nix_conf::{ConfEnv, NixConf};

/// A login and password for one host.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The login.
    pub login: String,
    /// The password.
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials(<hidden>)")
    }
}

/// The credentials `text` (netrc syntax) gives for `host`: its `machine`
/// entry, else the `default` entry.
pub fn lookup(text: &str, host: &str) -> Option<Credentials> {
    let mut toks = Tokens::new(text);
    let mut found: Option<Credentials> = None;
    let mut default: Option<Credentials> = None;
    // Which entry the login/password tokens now belong to.
    #[derive(PartialEq)]
    enum Cur {
        None,
        Match,
        Default,
        Other,
    }
    let mut cur = Cur::None;
    let mut login = String::new();
    let mut password = String::new();
    let flush = |cur: &Cur,
                 login: &mut String,
                 password: &mut String,
                 found: &mut Option<Credentials>,
                 default: &mut Option<Credentials>| {
        let c = Credentials {
            login: std::mem::take(login),
            password: std::mem::take(password),
        };
        match cur {
            Cur::Match if found.is_none() => *found = Some(c),
            Cur::Default if default.is_none() => *default = Some(c),
            _ => {}
        }
    };
    while let Some(t) = toks.next() {
        match t {
            "machine" => {
                flush(&cur, &mut login, &mut password, &mut found, &mut default);
                cur = match toks.next() {
                    Some(h) if h.eq_ignore_ascii_case(host) => Cur::Match,
                    _ => Cur::Other,
                };
            }
            "default" => {
                flush(&cur, &mut login, &mut password, &mut found, &mut default);
                cur = Cur::Default;
            }
            "login" => login = toks.next().unwrap_or_default().to_string(),
            "password" => password = toks.next().unwrap_or_default().to_string(),
            "account" => {
                toks.next();
            }
            "macdef" => {
                toks.next();
                toks.skip_macro();
            }
            _ => {}
        }
    }
    flush(&cur, &mut login, &mut password, &mut found, &mut default);
    found.or(default)
}

struct Tokens<'a> {
    rest: &'a str,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str) -> Self {
        Tokens { rest: text }
    }

    fn next(&mut self) -> Option<&'a str> {
        self.rest = self.rest.trim_start();
        if self.rest.is_empty() {
            return None;
        }
        let end = self
            .rest
            .find(|c: char| c.is_whitespace())
            .unwrap_or(self.rest.len());
        let (t, r) = self.rest.split_at(end);
        self.rest = r;
        Some(t)
    }

    /// A macro body runs to the next empty line.
    fn skip_macro(&mut self) {
        match self.rest.find("\n\n") {
            Some(i) => self.rest = &self.rest[i + 2..],
            None => self.rest = "",
        }
    }
}

/// The netrc file to use: `explicit` (`--netrc-file`) when given, else
/// nix.conf's `netrc-file` as Nix reads its configuration
/// ([`crate::nix_conf`]: the system and user files, `NIX_CONFIG`,
/// includes), else Nix's default `$NIX_CONF_DIR/netrc` if it exists, else
/// `~/.netrc` if it exists. A nix.conf that cannot be read gives no
/// setting (the run then fails, if at all, where it needs one).
pub fn netrc_path(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    let env = ConfEnv::from_process();
    if let Ok(conf) = NixConf::load(&env)
        && conf.get("netrc-file").is_some()
    {
        return conf.netrc_file();
    }
    let default = env.nix_conf_dir().join("netrc");
    if default.is_file() {
        return Some(default);
    }
    std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".netrc"))
        .filter(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_then_default() {
        let text = "machine other.example login o password op\n\
                    macdef init\ncd /\nput x\n\n\
                    machine Cache.Example login alice password s3cret\n\
                    default login anon password guest\n";
        let c = lookup(text, "cache.example").unwrap();
        assert_eq!((c.login.as_str(), c.password.as_str()), ("alice", "s3cret"));
        let d = lookup(text, "elsewhere").unwrap();
        assert_eq!(d.login, "anon");
        assert!(lookup("machine a login b password c", "z").is_none());
        assert!(!format!("{c:?}").contains("s3cret"));
    }
}
