//! The two languages nix-heft writes commands and snippets in: a word for
//! the POSIX shell ([`shell`], [`single_quoted`]), and a Nix string literal
//! ([`nix_string`]). Every command nix-heft prints for a user to paste
//! (`nix build …` for an output not built, advise's snippets, an import
//! from derivation's build command) quotes through here, so the set of
//! characters left bare is one set. Hand-written: the crates that quote
//! for a shell (`shell-escape`, `shlex`) each leave a different set bare
//! and none quotes Nix.

/// Whether `c` can stand bare anywhere in a word: nothing any POSIX shell
/// (dash, bash, zsh when a user pastes there) expands, splits or treats
/// as an operator. `~` is left out (tilde expansion), as are globs,
/// quotes, `$`, backticks, `!` (bash's and zsh's history), `^` (zsh) and
/// every non-ASCII byte (its meaning depends on the locale).
fn safe_anywhere(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"/._-+:,@%".contains(&c)
}

/// `s` as one shell word: bare when every character is safe (`=` and `#`
/// too, except first, where `#` starts a comment and zsh expands `=cmd`),
/// else single-quoted ([`single_quoted`]). The empty string is `''`.
pub fn shell(s: &str) -> String {
    let b = s.as_bytes();
    let bare = match b.split_first() {
        None => false,
        Some((first, rest)) => {
            safe_anywhere(*first)
                && rest
                    .iter()
                    .all(|&c| safe_anywhere(c) || c == b'=' || c == b'#')
        }
    };
    if bare {
        s.to_string()
    } else {
        single_quoted(s)
    }
}

/// `s` single-quoted for the shell, always: inside single quotes every
/// character is itself, and a `'` is written `'\''` (close, an escaped
/// quote, open). Used alone where a value is shown as one word even when
/// it needs no quoting (a RUNPATH entry, a glob of `moveToOutput`).
pub fn single_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `s` as a Nix double-quoted string literal: `"`, `\` and `${` escaped
/// (and the control characters Nix has escapes for); a `$` not before `{`
/// is literal in Nix and stays as it is.
pub fn nix_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // `${` would start an antiquotation; a lone `$` is literal.
            '$' if chars.peek() == Some(&'{') => out.push_str("\\$"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Strings a shell would mangle unquoted, one or more of each kind.
    const TRICKY: &[&str] = &[
        "",
        " ",
        "a b",
        "  two  spaces  ",
        "tab\there",
        "new\nline",
        "\n",
        "it's",
        "'",
        "''",
        "\"double\"",
        "\\",
        "back\\slash\\",
        "$HOME",
        "${x}",
        "$(echo no)",
        "$",
        "`echo no`",
        "*",
        "*.so",
        "?",
        "[ab]",
        "{a,b}",
        "a;b",
        "a&b",
        "a|b",
        "a>b",
        "<a",
        "(a)",
        "!x",
        "^x",
        "#comment",
        "a#b",
        "~",
        "~root",
        "a=~",
        "=",
        "=ls",
        "a=b",
        "-n",
        "--",
        "-e x",
        "é",
        "日本語 ✓",
        "path:/tmp/x#a",
        "nixpkgs#hello^out,dev",
        "lib/libx.so",
        "$ORIGIN/../lib",
        "'\\''",
        "%1",
        "@x",
        "a\rb",
        "\u{7f}",
        "\u{1}ctl",
    ];

    /// `shell -c 'set -- WORD; …'`: the word is exactly one argument and
    /// its bytes are `s`'s.
    fn through(shell_name: &str, s: &str) {
        let quoted = shell(s);
        let out = Command::new(shell_name)
            .arg("-c")
            .arg(format!(
                "set -- {quoted}; printf '%s:' \"$#\"; printf %s \"$1\""
            ))
            .output()
            .unwrap_or_else(|e| panic!("cannot run {shell_name}: {e}"));
        assert!(out.status.success(), "{shell_name} on {quoted}: {out:?}");
        let mut want = b"1:".to_vec();
        want.extend_from_slice(s.as_bytes());
        assert_eq!(
            out.stdout,
            want,
            "{shell_name} read {quoted} as {:?}, not {s:?}",
            String::from_utf8_lossy(&out.stdout)
        );
    }

    /// A small seeded generator (xorshift64*): the same strings every run.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn pick<T: Copy>(&mut self, from: &[T]) -> T {
            from[(self.next() % from.len() as u64) as usize]
        }
    }

    /// Every character but NUL (which no argument can hold) is likely:
    /// ASCII's printable ones and controls, and some beyond.
    fn random_string(rng: &mut Rng) -> String {
        let pool: Vec<char> = (1u8..=0x7f)
            .map(char::from)
            .chain(['é', '✓', '日', '\u{a0}', '\u{2028}'])
            .collect();
        let len = (rng.next() % 12) as usize;
        (0..len).map(|_| rng.pick(&pool)).collect()
    }

    #[test]
    fn every_word_reads_back_as_itself_in_sh_and_bash() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let random: Vec<String> = (0..300).map(|_| random_string(&mut rng)).collect();
        for sh in ["sh", "bash"] {
            for s in TRICKY
                .iter()
                .copied()
                .chain(random.iter().map(String::as_str))
            {
                through(sh, s);
            }
        }
    }

    #[test]
    fn safe_words_stay_bare_and_the_rest_are_quoted() {
        let first: Vec<u8> = (0u8..=0x7f).filter(|&c| safe_anywhere(c)).collect();
        let later: Vec<u8> = first.iter().copied().chain([b'=', b'#']).collect();
        assert_eq!(first.len(), 26 * 2 + 10 + 9);
        let mut rng = Rng(42);
        for _ in 0..2000 {
            let len = 1 + (rng.next() % 16) as usize;
            let mut w = vec![rng.pick(&first)];
            w.extend((1..len).map(|_| rng.pick(&later)));
            let w = String::from_utf8(w).unwrap();
            assert_eq!(shell(&w), w);
        }
        // One unsafe character anywhere quotes the word.
        for s in TRICKY {
            let bare = shell(s) == *s;
            let all_safe = !s.is_empty()
                && s.bytes()
                    .enumerate()
                    .all(|(i, c)| safe_anywhere(c) || (i > 0 && (c == b'=' || c == b'#')));
            assert_eq!(bare, all_safe, "{s:?}");
        }
        assert_eq!(shell("path:/tmp/x#a"), "path:/tmp/x#a");
        assert_eq!(shell("nix-command flakes"), "'nix-command flakes'");
        assert_eq!(shell("it's"), r"'it'\''s'");
        assert_eq!(shell("#x"), "'#x'");
        assert_eq!(shell("=x"), "'=x'");
        assert_eq!(shell("~"), "'~'");
        assert_eq!(shell(""), "''");
        assert_eq!(single_quoted("lib"), "'lib'");
    }

    #[test]
    fn nix_strings_escape_what_nix_interprets() {
        assert_eq!(nix_string("gfx90a"), "\"gfx90a\"");
        assert_eq!(nix_string(r#"a"b\c${d}$e"#), r#""a\"b\\c\${d}$e""#);
        assert_eq!(nix_string("a\nb\tc\rd"), "\"a\\nb\\tc\\rd\"");
    }
}
