//! Paths relative to a store path, as raw bytes: `lib/librocblas.so`, with
//! the empty path for the store path itself. One set of helpers for the
//! NAR reader, the file trees, the planners and the verdict rules.

/// The parent of a relative path; `None` for the root (the empty path).
pub fn parent(p: &[u8]) -> Option<&[u8]> {
    if p.is_empty() {
        return None;
    }
    Some(match p.iter().rposition(|&b| b == b'/') {
        Some(i) => &p[..i],
        None => b"",
    })
}

/// Whether `path` is `prefix` or lies below it (`prefix` empty: always).
pub fn is_under(path: &[u8], prefix: &[u8]) -> bool {
    prefix.is_empty()
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
}

/// Appends the component `name` to `path`.
pub fn push(path: &mut Vec<u8>, name: &[u8]) {
    if !path.is_empty() {
        path.push(b'/');
    }
    path.extend_from_slice(name);
}

/// The last component; the whole path when it has one component.
pub fn file_name(p: &[u8]) -> &[u8] {
    match p.iter().rposition(|&b| b == b'/') {
        Some(i) => &p[i + 1..],
        None => p,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(parent(b"a/b/c"), Some(&b"a/b"[..]));
        assert_eq!(parent(b"a"), Some(&b""[..]));
        assert_eq!(parent(b""), None);
        assert!(is_under(b"lib/cmake/x", b"lib/cmake"));
        assert!(is_under(b"lib/cmake", b"lib/cmake"));
        assert!(!is_under(b"lib/cmakefoo", b"lib/cmake"));
        assert!(is_under(b"x", b""));
        let mut p = Vec::new();
        push(&mut p, b"a");
        push(&mut p, b"b");
        assert_eq!(p, b"a/b");
        assert_eq!(file_name(b"a/b"), b"b");
        assert_eq!(file_name(b"b"), b"b");
    }
}
