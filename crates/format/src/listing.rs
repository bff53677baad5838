//! NAR listings (`<hash>.ls`), which binary caches written with
//! `write-nar-listing=1` (and cache.nixos.org, for every path) keep next to
//! each narinfo:
//!
//! ```json
//! {"version":1,"root":{"type":"directory","entries":{"bin":{"type":"directory","entries":{
//!   "hello":{"type":"regular","size":42,"executable":true,"narOffset":400}}},
//!   "lib":{"type":"symlink","target":"../x"}}}}
//! ```
//!
//! A listing gives the whole [`FileTree`] (names, types, sizes, executable
//! bits, symlink targets) without the NAR, so the exact NAR size of any
//! subtree and every hold in a symlink target or a file name come without
//! downloading file contents. `narOffset` is not needed and ignored.

use serde_json::Value;

use crate::nar::tree::{FileTree, TreeEntry, TreeNode};
use crate::nar::{MAX_NAME_LEN, MAX_PATH_LEN};

/// Parses listing JSON into a tree in NAR order, or says what is wrong.
///
/// Names that are not valid file names (empty, `.`, `..`, containing `/` or
/// NUL) are refused, as the NAR reader refuses them: a listing is data from
/// whoever wrote the cache; so are the NAR reader's limits (names past
/// `NAME_MAX`, symlink targets and paths past `PATH_MAX`), so a listing
/// never admits a tree its NAR would not. serde_json's nesting limit (128)
/// bounds the depth; a deeper tree is refused and read from its NAR
/// instead.
pub fn parse(bytes: &[u8]) -> Result<FileTree, String> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    match v.get("version").and_then(Value::as_u64) {
        Some(1) => {}
        other => return Err(format!("unknown listing version {other:?}")),
    }
    let root = v.get("root").ok_or("no 'root'")?;
    let mut entries = Vec::new();
    // Iterative, children in byte order of their names: NAR order.
    let mut stack: Vec<(Vec<u8>, &Value)> = vec![(Vec::new(), root)];
    while let Some((path, node)) = stack.pop() {
        let kind = node.get("type").and_then(Value::as_str);
        let shown = || String::from_utf8_lossy(&path).into_owned();
        let tree_node = match kind {
            Some("directory") => {
                let mut children: Vec<(&String, &Value)> = match node.get("entries") {
                    None => Vec::new(),
                    Some(Value::Object(m)) => m.iter().collect(),
                    Some(_) => return Err(format!("'{}': entries is not an object", shown())),
                };
                for (name, _) in &children {
                    if name.is_empty()
                        || *name == "."
                        || *name == ".."
                        || name.contains('/')
                        || name.contains('\0')
                    {
                        return Err(format!("'{}': bad entry name {name:?}", shown()));
                    }
                    if name.len() > MAX_NAME_LEN {
                        return Err(format!(
                            "'{}': a name of {} bytes is longer than the {MAX_NAME_LEN}-byte limit (NAME_MAX)",
                            shown(),
                            name.len()
                        ));
                    }
                    if path.len() + 1 + name.len() > MAX_PATH_LEN {
                        return Err(format!(
                            "'{}': a path below it is longer than the {MAX_PATH_LEN}-byte limit (PATH_MAX)",
                            shown()
                        ));
                    }
                }
                children.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                for (name, child) in children.into_iter().rev() {
                    let mut p = path.clone();
                    if !p.is_empty() {
                        p.push(b'/');
                    }
                    p.extend_from_slice(name.as_bytes());
                    stack.push((p, child));
                }
                TreeNode::Directory
            }
            Some("regular") => TreeNode::Regular {
                size: node
                    .get("size")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| format!("'{}': regular file without a size", shown()))?,
                executable: node
                    .get("executable")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            },
            Some("symlink") => {
                let target = node
                    .get("target")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("'{}': symlink without a target", shown()))?;
                if target.len() > MAX_PATH_LEN {
                    return Err(format!(
                        "'{}': a symlink target of {} bytes is longer than the {MAX_PATH_LEN}-byte limit (PATH_MAX)",
                        shown(),
                        target.len()
                    ));
                }
                TreeNode::Symlink {
                    target: target.as_bytes().to_vec(),
                }
            }
            other => return Err(format!("'{}': unknown type {other:?}", shown())),
        };
        entries.push(TreeEntry {
            path,
            node: tree_node,
        });
    }
    Ok(FileTree { entries })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nar_order_and_nodes() {
        let t = parse(
            br#"{"version":1,"root":{"type":"directory","entries":{
            "b":{"type":"symlink","target":"a/x"},
            "a-b":{"type":"regular","size":3},
            "a":{"type":"directory","entries":{"x":{"type":"regular","size":5,"executable":true,"narOffset":9}}}}}}"#,
        )
        .unwrap();
        let paths: Vec<&[u8]> = t.entries.iter().map(|e| e.path.as_slice()).collect();
        assert_eq!(paths, [&b""[..], b"a", b"a/x", b"a-b", b"b"]);
        assert_eq!(
            t.entries[2].node,
            TreeNode::Regular {
                size: 5,
                executable: true
            }
        );
        assert_eq!(
            t.entries[4].node,
            TreeNode::Symlink {
                target: b"a/x".to_vec()
            }
        );
    }

    #[test]
    fn bad_listings_are_refused() {
        for bad in [
            &br#"{"version":2,"root":{"type":"regular","size":1}}"#[..],
            br#"{"version":1,"root":{"type":"directory","entries":{"..":{"type":"regular","size":1}}}}"#,
            br#"{"version":1,"root":{"type":"regular"}}"#,
            br#"{"version":1,"root":{"type":"fifo"}}"#,
            b"{",
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    /// The NAR reader's limits hold for listings too: a listing is refused
    /// (and the NAR, which the reader refuses, read instead).
    #[test]
    fn listings_past_nix_limits_are_refused() {
        let link = |n: usize| {
            format!(
                r#"{{"version":1,"root":{{"type":"directory","entries":{{"l":{{"type":"symlink","target":"{}"}}}}}}}}"#,
                "t".repeat(n)
            )
        };
        parse(link(MAX_PATH_LEN).as_bytes()).unwrap();
        let e = parse(link(MAX_PATH_LEN + 1).as_bytes()).unwrap_err();
        assert!(e.contains("PATH_MAX"), "{e}");
        let named = |n: usize| {
            format!(
                r#"{{"version":1,"root":{{"type":"directory","entries":{{"{}":{{"type":"regular","size":1}}}}}}}}"#,
                "n".repeat(n)
            )
        };
        parse(named(MAX_NAME_LEN).as_bytes()).unwrap();
        let e = parse(named(MAX_NAME_LEN + 1).as_bytes()).unwrap_err();
        assert!(e.contains("NAME_MAX"), "{e}");
    }
}
