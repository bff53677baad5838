//! The one place advise's snippets are rendered as Nix (and as the shell
//! inside Nix's indented strings): a snippet a maintainer pastes must
//! parse whatever the names in it are (a target list is space-separated,
//! a name with `"`, `\` or `${` is escaped, a package name that is not a
//! Nix identifier is quoted). Hand-written: no crate renders Nix syntax.

/// Nix's keywords, which cannot be bare attribute names or variables.
const KEYWORDS: &[&str] = &[
    "assert", "else", "if", "in", "inherit", "let", "or", "rec", "then", "with",
];

use nix_heft_format::quote;

/// A Nix list of strings: `[ "a" "b" ]` (elements are separated by
/// spaces, never commas).
pub(crate) fn list<S: AsRef<str>>(items: &[S]) -> String {
    let mut out = String::from("[");
    for i in items {
        out.push(' ');
        out.push_str(&quote::nix_string(i.as_ref()));
    }
    out.push_str(" ]");
    out
}

/// Whether `s` is a Nix identifier (`[a-zA-Z_][a-zA-Z0-9_'-]*`, not a
/// keyword), usable bare as a variable or attribute name.
fn is_identifier(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'\'' | b'-'))
        && !KEYWORDS.contains(&s)
}

/// The package `name` as an expression in nixpkgs' scope: the bare name
/// when it is an identifier (`rocblas`), else `pkgs."libsigc++"`.
pub(crate) fn package(name: &str) -> String {
    if is_identifier(name) {
        name.to_string()
    } else {
        format!("pkgs.{}", quote::nix_string(name))
    }
}

/// A file of the package as a builder's shell names it: `$out/lib/x.so`,
/// the relative part quoted when it needs to be (`$out` stays expanded).
pub(crate) fn out_file(rel: &str) -> String {
    output_file("out", rel)
}

/// A file of the output `output` as a builder's shell names it
/// (`$dev/lib/x.pc`), as [`out_file`] does for `out`; the output itself
/// when `rel` is empty.
pub(crate) fn output_file(output: &str, rel: &str) -> String {
    if rel.is_empty() {
        return format!("\"${output}\"");
    }
    let w = quote::shell(rel);
    if w.starts_with('\'') {
        format!("\"${output}\"/{w}")
    } else {
        format!("${output}/{w}")
    }
}

/// Shell text as it is written inside a Nix indented string (`'' … ''`):
/// `''` as `'''` and `${` as `''${`, so that the builder runs exactly `s`.
pub(crate) fn indented(s: &str) -> String {
    s.replace("''", "'''").replace("${", "''${")
}

/// Shell `lines` as a Nix indented string bound to `attr`
/// (`postFixup = ''` … `'';`), each line indented by two spaces; `''` and
/// `${` in the shell text are escaped as Nix wants (`'''`, `''${`), so the
/// builder runs exactly `lines`.
pub(crate) fn shell_hook(attr: &str, lines: &[String]) -> String {
    let mut out = format!("{attr} = ''\n");
    for l in lines {
        out.push_str("  ");
        out.push_str(&indented(l));
        out.push('\n');
    }
    out.push_str("'';");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_space_separated() {
        assert_eq!(list(&["gfx90a", "gfx1100"]), r#"[ "gfx90a" "gfx1100" ]"#);
        assert_eq!(list(&["one"]), r#"[ "one" ]"#);
        assert_eq!(list::<&str>(&[]), "[ ]");
        assert_eq!(list(&["x\"y"]), r#"[ "x\"y" ]"#);
    }

    #[test]
    fn package_names_quoted_when_not_identifiers() {
        assert_eq!(package("rocm-llvm"), "rocm-llvm");
        assert_eq!(package("libsigc++"), "pkgs.\"libsigc++\"");
        assert_eq!(package("3proxy"), "pkgs.\"3proxy\"");
        assert_eq!(package("rec"), "pkgs.\"rec\"");
    }

    #[test]
    fn shell_words_and_hooks() {
        assert_eq!(out_file("lib/a b.so"), "\"$out\"/'lib/a b.so'");
        assert_eq!(
            shell_hook("postFixup", &["echo 'a'\\''b' ${x}".into()]),
            "postFixup = ''\n  echo 'a'\\'''b' ''${x}\n'';"
        );
    }

    /// What Nix itself makes of every renderer's output, on names that
    /// need quoting: `nix-instantiate --eval` gives back the same strings.
    #[test]
    #[cfg_attr(not(feature = "nix-tests"), ignore = "runs Nix: scripts/test.sh")]
    fn nix_reads_back_what_was_rendered() {
        let names = [
            "gfx90a",
            r#"q"uote"#,
            r"back\slash",
            "${antiquote}",
            "$dollar",
            "tab\there",
            "it's ''x''",
        ];
        let expr = format!(
            "{{ l = {}; h = let x = 1; in {{ {} }}.postFixup; }}",
            list(&names),
            shell_hook(
                "postFixup",
                &names.iter().map(|n| n.to_string()).collect::<Vec<_>>()
            )
        );
        let out = nix_heft_format::testutil::run(
            std::process::Command::new("nix-instantiate")
                .args(["--eval", "--strict", "--json", "--expr"])
                .arg(&expr),
        );
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let got: Vec<&str> = v["l"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        assert_eq!(got, names);
        let want: String = names.iter().map(|n| format!("{n}\n")).collect();
        assert_eq!(v["h"].as_str().unwrap(), want);
        // A package expression that is not an identifier parses.
        for p in ["libsigc++", "3proxy", "rec"] {
            let e = format!(
                "let pkgs = {{ {} = 1; }}; in {}",
                quote::nix_string(p),
                package(p)
            );
            let out = nix_heft_format::testutil::run(
                std::process::Command::new("nix-instantiate")
                    .args(["--eval", "--expr"])
                    .arg(&e),
            );
            assert_eq!(String::from_utf8_lossy(&out).trim(), "1", "{p}");
        }
    }
}
