//! Store derivations (`.drv` files): the ATerm text Nix writes for every
//! derivation it instantiates, parsed into [`Derivation`].
//!
//! Hand-written because no well-kept crate parses it (crates.io's
//! `nix-compat` is a `0.0.0-pre` placeholder) and the format is small. The
//! grammar, as Nix writes it (`Derivation::unparse`) and reads it
//! (`parseDerivation`, both in Nix's `src/libstore/derivations.cc`):
//!
//! ```text
//! drv       = 'Derive(' '[' outputs ']' ',' '[' inputDrvs ']' ','
//!             '[' strings ']' ',' string ',' string ',' '[' strings ']' ','
//!             '[' env ']' ')'
//!             -- outputs, inputDrvs, inputSrcs, platform, builder, args, env
//! outputs   = output (',' output)* | ε
//! output    = '(' string ',' string ',' string ',' string ')'
//!             -- name, path ("" when not known in advance), hashAlgo, hash
//! inputDrvs = inputDrv (',' inputDrv)* | ε
//! inputDrv  = '(' string ',' '[' strings ']' ')'   -- .drv path, output names
//! strings   = string (',' string)* | ε
//! env       = pair (',' pair)* | ε
//! pair      = '(' string ',' string ')'
//! string    = '"' (char | '\' char)* '"'
//! ```
//!
//! String escapes: Nix's `printString` writes `\"`, `\\`, `\n`, `\r` and
//! `\t`; its `parseString` reads `\n`, `\r`, `\t` as control characters and
//! any other escaped byte as itself, and so does this parser, so that every
//! file Nix reads is read here the same way.
//!
//! Stricter than Nix where Nix is lax only by accident, so that a file Nix
//! never writes is refused rather than guessed at: list elements must be
//! separated by exactly one comma (Nix's `endOfList` also takes `["a""b"]`
//! and `[,"a"]`); nothing may follow the closing `)` (Nix stops reading
//! there); a name may not appear twice in the outputs, input derivations,
//! sources, an input's output names or the environment (Nix's maps keep the
//! first output but the last environment entry, so a duplicate has no one
//! meaning); every string must be UTF-8, as `nix show-derivation`'s JSON
//! requires too.
//!
//! The grammar nests to a fixed depth (no recursion), every element takes
//! at least two bytes of input, and files are refused above
//! [`MAX_DRV_SIZE`], so memory is bounded by the file's size and nothing
//! here can panic on any input (`fuzz/fuzz_targets/derivation.rs`).

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::store_path::StorePath;

/// Largest `.drv` file read. Real ones are kilobytes; the largest in
/// nixpkgs (long `env` values with `__structuredAttrs` or inlined scripts)
/// stay under a few MiB. Anything bigger is refused before it is read.
pub const MAX_DRV_SIZE: u64 = 64 << 20;

/// A parsed store derivation. Lists keep the file's order (Nix writes
/// them sorted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derivation {
    /// Every output: name, path, and for content-addressed outputs their
    /// hash algorithm and hash.
    pub outputs: Vec<DrvOutput>,
    /// Input derivations and, for each, the output names this one uses.
    pub input_drvs: Vec<(StorePath, Vec<String>)>,
    /// Input sources: store paths that are not outputs of a derivation.
    pub input_srcs: Vec<StorePath>,
    /// The system it builds on, e.g. `x86_64-linux` (`system` in Nix's JSON).
    pub platform: String,
    /// The builder program.
    pub builder: String,
    /// The builder's arguments.
    pub args: Vec<String>,
    /// The builder's environment, name and value.
    pub env: Vec<(String, String)>,
}

/// One output of a derivation, as the `.drv` file has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrvOutput {
    /// The output name (`out`, `dev`, …).
    pub name: String,
    /// The output path; `None` when the file leaves it empty because it is
    /// not known before the build (floating content-addressed, deferred
    /// and impure outputs).
    pub path: Option<StorePath>,
    /// For content-addressed outputs, the hash algorithm, with `r:` for
    /// recursive (NAR) hashing, e.g. `r:sha256`; empty otherwise.
    pub hash_algo: String,
    /// For fixed-output derivations, the expected hash in base 16 (or
    /// `impure`); empty otherwise.
    pub hash: String,
}

impl DrvOutput {
    /// Whether this is a fixed output: its content hash is given in
    /// advance (`fetchurl` and friends). Nix's `parseDerivationOutput`
    /// takes a non-empty `hashAlgo` and a hash other than `impure` as that.
    pub fn is_fixed(&self) -> bool {
        !self.hash_algo.is_empty() && !self.hash.is_empty() && self.hash != "impure"
    }
}

impl Derivation {
    /// Parses the bytes of a `.drv` file whose paths live in `store_dir`
    /// (e.g. `/nix/store`).
    pub fn parse(store_dir: &str, bytes: &[u8]) -> Result<Derivation, DrvError> {
        if bytes.len() as u64 > MAX_DRV_SIZE {
            return Err(DrvError::TooLarge {
                size: bytes.len() as u64,
            });
        }
        Parser {
            b: bytes,
            pos: 0,
            store_dir,
        }
        .derivation()
    }

    /// Reads and parses the `.drv` file at `file`, refusing a file larger
    /// than [`MAX_DRV_SIZE`] before reading it whole.
    pub fn read(store_dir: &str, file: &Path) -> Result<Derivation, ReadDrvError> {
        let io = |source| ReadDrvError::Io {
            path: file.to_path_buf(),
            source,
        };
        let f = std::fs::File::open(file).map_err(io)?;
        let size = f.metadata().map_err(io)?.len();
        let too_large = |size| ReadDrvError::Parse {
            path: file.to_path_buf(),
            source: DrvError::TooLarge { size },
        };
        if size > MAX_DRV_SIZE {
            return Err(too_large(size));
        }
        // The size is checked again as the file is read: it may grow
        // between the metadata call and the read.
        let mut bytes = Vec::with_capacity(size as usize);
        f.take(MAX_DRV_SIZE + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        Self::parse(store_dir, &bytes).map_err(|source| ReadDrvError::Parse {
            path: file.to_path_buf(),
            source,
        })
    }

    /// The output called `name`, if there is one.
    pub fn output(&self, name: &str) -> Option<&DrvOutput> {
        self.outputs.iter().find(|o| o.name == name)
    }

    /// Whether every output is fixed ([`DrvOutput::is_fixed`]): a
    /// fixed-output derivation such as a fetcher.
    pub fn is_fixed_output(&self) -> bool {
        !self.outputs.is_empty() && self.outputs.iter().all(DrvOutput::is_fixed)
    }
}

/// Why bytes are not a derivation. Offsets count bytes from the start of
/// the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DrvError {
    /// The input ends in the middle of the derivation.
    #[error("derivation ends early at byte {offset}")]
    Truncated {
        /// Where the input ended.
        offset: usize,
    },
    /// A byte that the grammar does not allow here.
    #[error("expected {expected} at byte {offset}")]
    Expected {
        /// Where.
        offset: usize,
        /// What the grammar wanted, e.g. `'Derive(['` or `',' or ']'`.
        expected: &'static str,
    },
    /// A string that is not UTF-8.
    #[error("string at byte {offset} is not UTF-8")]
    NotUtf8 {
        /// Where the string starts (its opening quote).
        offset: usize,
    },
    /// A path that is not a store path in the store directory given.
    #[error("'{path}' at byte {offset} is not a store path: {reason}")]
    BadPath {
        /// Where the string starts.
        offset: usize,
        /// The string.
        path: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// A name given twice where Nix keeps a set or a map.
    #[error("{what} '{key}' appears twice (at byte {offset})")]
    Duplicate {
        /// Where the second one starts.
        offset: usize,
        /// Which list, e.g. `output`, `environment variable`.
        what: &'static str,
        /// The repeated name.
        key: String,
    },
    /// Bytes after the closing parenthesis.
    #[error("unexpected bytes after the derivation at byte {offset}")]
    TrailingBytes {
        /// Where the derivation ended.
        offset: usize,
    },
    /// More than [`MAX_DRV_SIZE`] bytes.
    #[error("{size} bytes is more than the {MAX_DRV_SIZE} a derivation may have")]
    TooLarge {
        /// The input's size.
        size: u64,
    },
}

/// Why a `.drv` file could not be read, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ReadDrvError {
    /// The file could not be opened or read.
    #[error("cannot read derivation {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a derivation.
    #[error("bad derivation {}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Where and why it does not parse.
        #[source]
        source: DrvError,
    },
}

struct Parser<'a> {
    b: &'a [u8],
    pos: usize,
    store_dir: &'a str,
}

impl Parser<'_> {
    fn derivation(mut self) -> Result<Derivation, DrvError> {
        self.expect(b"Derive([", "'Derive(['")?;
        let mut names = Names::new("output");
        let outputs = self.list(|p| {
            p.expect(b"(", "'('")?;
            let at = p.pos;
            let name = p.string()?;
            names.insert(at, &name)?;
            p.expect(b",", "','")?;
            let at = p.pos;
            let path = p.string()?;
            let path = if path.is_empty() {
                None
            } else {
                Some(p.store_path(at, path)?)
            };
            p.expect(b",", "','")?;
            let hash_algo = p.string()?;
            p.expect(b",", "','")?;
            let hash = p.string()?;
            p.expect(b")", "')'")?;
            Ok(DrvOutput {
                name,
                path,
                hash_algo,
                hash,
            })
        })?;

        self.expect(b",[", "',['")?;
        let mut drvs = Names::new("input derivation");
        let input_drvs = self.list(|p| {
            p.expect(b"(", "'('")?;
            let at = p.pos;
            let s = p.string()?;
            drvs.insert(at, &s)?;
            let drv = p.store_path(at, s)?;
            p.expect(b",[", "',['")?;
            let mut outs = Names::new("output of an input derivation");
            let outputs = p.list(|p| {
                let at = p.pos;
                let s = p.string()?;
                outs.insert(at, &s)?;
                Ok(s)
            })?;
            p.expect(b")", "')'")?;
            Ok((drv, outputs))
        })?;

        self.expect(b",[", "',['")?;
        let mut srcs = Names::new("input source");
        let input_srcs = self.list(|p| {
            let at = p.pos;
            let s = p.string()?;
            srcs.insert(at, &s)?;
            p.store_path(at, s)
        })?;

        self.expect(b",", "','")?;
        let platform = self.string()?;
        self.expect(b",", "','")?;
        let builder = self.string()?;
        self.expect(b",[", "',['")?;
        let args = self.list(|p| p.string())?;

        self.expect(b",[", "',['")?;
        let mut vars = Names::new("environment variable");
        let env = self.list(|p| {
            p.expect(b"(", "'('")?;
            let at = p.pos;
            let name = p.string()?;
            vars.insert(at, &name)?;
            p.expect(b",", "','")?;
            let value = p.string()?;
            p.expect(b")", "')'")?;
            Ok((name, value))
        })?;
        self.expect(b")", "')'")?;
        if self.pos != self.b.len() {
            return Err(DrvError::TrailingBytes { offset: self.pos });
        }
        Ok(Derivation {
            outputs,
            input_drvs,
            input_srcs,
            platform,
            builder,
            args,
            env,
        })
    }

    /// Consumes `lit`. A shorter input that matches as far as it goes is
    /// truncated, not wrong.
    fn expect(&mut self, lit: &[u8], expected: &'static str) -> Result<(), DrvError> {
        let rest = &self.b[self.pos..];
        if rest.starts_with(lit) {
            self.pos += lit.len();
            return Ok(());
        }
        let common = rest.iter().zip(lit).take_while(|(a, b)| a == b).count();
        if common == rest.len() {
            Err(DrvError::Truncated {
                offset: self.b.len(),
            })
        } else {
            Err(DrvError::Expected {
                offset: self.pos + common,
                expected,
            })
        }
    }

    fn peek(&self) -> Result<u8, DrvError> {
        self.b
            .get(self.pos)
            .copied()
            .ok_or(DrvError::Truncated { offset: self.pos })
    }

    /// Elements up to the closing `]` (the opening one already consumed),
    /// separated by single commas.
    fn list<T>(
        &mut self,
        mut elem: impl FnMut(&mut Self) -> Result<T, DrvError>,
    ) -> Result<Vec<T>, DrvError> {
        let mut out = Vec::new();
        if self.peek()? == b']' {
            self.pos += 1;
            return Ok(out);
        }
        loop {
            out.push(elem(self)?);
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Ok(out);
                }
                _ => {
                    return Err(DrvError::Expected {
                        offset: self.pos,
                        expected: "',' or ']'",
                    });
                }
            }
        }
    }

    /// A quoted string with Nix's escapes (`parseString`).
    fn string(&mut self) -> Result<String, DrvError> {
        let start = self.pos;
        self.expect(b"\"", "'\"'")?;
        let mut out = Vec::new();
        loop {
            let rest = &self.b[self.pos..];
            let Some(i) = memchr::memchr2(b'"', b'\\', rest) else {
                return Err(DrvError::Truncated {
                    offset: self.b.len(),
                });
            };
            out.extend_from_slice(&rest[..i]);
            self.pos += i + 1;
            if rest[i] == b'"' {
                break;
            }
            let c = self.peek()?;
            self.pos += 1;
            out.push(match c {
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                c => c,
            });
        }
        String::from_utf8(out).map_err(|_| DrvError::NotUtf8 { offset: start })
    }

    fn store_path(&self, at: usize, s: String) -> Result<StorePath, DrvError> {
        StorePath::parse(self.store_dir, &s).map_err(|e| DrvError::BadPath {
            offset: at,
            reason: e.reason.to_string(),
            path: s,
        })
    }
}

/// The names seen in one list, to refuse a second one.
struct Names {
    what: &'static str,
    seen: HashSet<String>,
}

impl Names {
    fn new(what: &'static str) -> Self {
        Names {
            what,
            seen: HashSet::new(),
        }
    }
    fn insert(&mut self, at: usize, key: &str) -> Result<(), DrvError> {
        if self.seen.insert(key.to_string()) {
            Ok(())
        } else {
            Err(DrvError::Duplicate {
                offset: at,
                what: self.what,
                key: key.to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H1: &str = "/nix/store/l1vfphyb47mampa8vp15h4dikvwqplmf-left-2.1";
    const H2: &str = "/nix/store/1qxyxffq50xda8x2ip0xf3q1ms5v3wb6-base-lib-1.0.drv";
    const H3: &str = "/nix/store/vjl1sz18wxkzwmkfsla54pl8vsnbfc8i-src";

    /// A derivation as Nix 2.8 wrote it (`nix-instantiate
    /// tests/fixtures/small.nix -A left`), with a source added.
    fn real() -> String {
        format!(
            r#"Derive([("out","{H1}","","")],[("{H2}",["out"])],["{H3}"],"x86_64-linux","/bin/sh",["-c","mkdir -p $out/share\necho hi > $out/share/ref\n"],[("PATH","/usr/bin:/bin"),("builder","/bin/sh"),("name","left-2.1"),("out","{H1}"),("system","x86_64-linux")])"#
        )
    }

    /// Two files exactly as Nix 2.8 wrote them (tests/testsuite/derivation.rs's
    /// expression): three outputs, two fixed-output inputs, two sources,
    /// every escape, non-ASCII text; and a recursive fixed output.
    const NIX_WROTE: [&str; 2] = [
        r##"Derive([("dev","/nix/store/rab5q4ny52dljni074i8pcqfhxacimby-coverage-1.0-dev","",""),("lib","/nix/store/8ffxirx2ciw50zs70dpjz4x0gxw9wzji-coverage-1.0-lib","",""),("out","/nix/store/9kspgykvxs78mgz144ayf87i6qsia7dg-coverage-1.0","","")],[("/nix/store/c22cvwlml3cia5ksx9sa4jg5k13niz6z-fod-recursive.drv",["out"]),("/nix/store/pmsiykazbi7rdb5w03k252xqg285i442-fod-flat.drv",["out"])],["/nix/store/0yiqbz3lnwbv503m8r8my0rf4iqlg9by-coverage-src.txt","/nix/store/qpq58q9d0yfxnjlmlfpw80ic2i25isvm-script.sh"],"x86_64-linux","/bin/sh",["-c","a\"b\\c\nd\re\tf ünïcødé /nix/store/qpq58q9d0yfxnjlmlfpw80ic2i25isvm-script.sh"],[("builder","/bin/sh"),("dev","/nix/store/rab5q4ny52dljni074i8pcqfhxacimby-coverage-1.0-dev"),("empty",""),("fodFlat","/nix/store/gv6qrnmma5jjfif1r0idws4navh0pvsi-fod-flat"),("fodRec","/nix/store/x7ap41z46db3k87g8jq3l0w2v409gcsv-fod-recursive"),("lib","/nix/store/8ffxirx2ciw50zs70dpjz4x0gxw9wzji-coverage-1.0-lib"),("name","coverage-1.0"),("out","/nix/store/9kspgykvxs78mgz144ayf87i6qsia7dg-coverage-1.0"),("outputs","out dev lib"),("src","/nix/store/0yiqbz3lnwbv503m8r8my0rf4iqlg9by-coverage-src.txt"),("system","x86_64-linux"),("tricky","\"\\\n\r\t$ end")])"##,
        r##"Derive([("out","/nix/store/x7ap41z46db3k87g8jq3l0w2v409gcsv-fod-recursive","r:sha256","ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")],[],[],"x86_64-linux","/bin/sh",["-c","echo"],[("builder","/bin/sh"),("name","fod-recursive"),("out","/nix/store/x7ap41z46db3k87g8jq3l0w2v409gcsv-fod-recursive"),("outputHash","1b8m03r63zqhnjf7l5wnldhh7c134ap5vpj0850ymkq1iyzicy5s"),("outputHashAlgo","sha256"),("outputHashMode","recursive"),("system","x86_64-linux")])"##,
    ];

    fn parse(s: &str) -> Result<Derivation, DrvError> {
        Derivation::parse("/nix/store", s.as_bytes())
    }

    fn sp(s: &str) -> StorePath {
        StorePath::parse("/nix/store", s).unwrap()
    }

    #[test]
    fn parses_a_real_derivation() {
        let d = parse(&real()).unwrap();
        assert_eq!(
            d.outputs,
            vec![DrvOutput {
                name: "out".into(),
                path: Some(sp(H1)),
                hash_algo: String::new(),
                hash: String::new(),
            }]
        );
        assert!(!d.outputs[0].is_fixed());
        assert!(!d.is_fixed_output());
        assert_eq!(d.input_drvs, vec![(sp(H2), vec!["out".to_string()])]);
        assert_eq!(d.input_srcs, vec![sp(H3)]);
        assert_eq!(d.platform, "x86_64-linux");
        assert_eq!(d.builder, "/bin/sh");
        assert_eq!(
            d.args,
            vec!["-c", "mkdir -p $out/share\necho hi > $out/share/ref\n"]
        );
        assert_eq!(d.env.len(), 5);
        assert_eq!(d.env[3], ("out".to_string(), H1.to_string()));
        assert_eq!(d.output("out").unwrap().path, Some(sp(H1)));
        assert!(d.output("dev").is_none());
    }

    #[test]
    fn every_escape() {
        // Nix writes \" \\ \n \r \t; reads any other escaped byte as itself.
        let d =
            parse(r#"Derive([],[],[],"s","b",["q\"q","b\\b","n\nn","r\rr","t\tt","x\x\$"],[])"#)
                .unwrap();
        assert_eq!(d.args, vec!["q\"q", "b\\b", "n\nn", "r\rr", "t\tt", "xx$"]);
        // An escaped quote does not end the string; an escaped backslash
        // before the quote does.
        let d = parse(r#"Derive([],[],[],"\\","\"",[],[("a\\","\"b\"")])"#).unwrap();
        assert_eq!(d.platform, "\\");
        assert_eq!(d.builder, "\"");
        assert_eq!(d.env, vec![("a\\".into(), "\"b\"".into())]);
    }

    #[test]
    fn empty_lists_and_strings() {
        let d = parse(r#"Derive([],[],[],"","",[],[])"#).unwrap();
        assert!(d.outputs.is_empty() && d.input_drvs.is_empty() && d.input_srcs.is_empty());
        assert!(d.args.is_empty() && d.env.is_empty());
        assert_eq!((d.platform.as_str(), d.builder.as_str()), ("", ""));
        assert!(!d.is_fixed_output());
        // An input derivation with no outputs used, an empty argument.
        let d = parse(&format!(
            r#"Derive([],[("{H2}",[])],[],"s","b",[""],[("e","")])"#
        ))
        .unwrap();
        assert_eq!(d.input_drvs, vec![(sp(H2), vec![])]);
        assert_eq!(d.args, vec![""]);
        assert_eq!(d.env, vec![("e".into(), String::new())]);
    }

    #[test]
    fn fixed_and_floating_outputs() {
        let hash = "9e73a8e0b8f1d6b0d4c9c1c6f1a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8";
        let d = parse(&format!(
            r#"Derive([("out","{H3}","r:sha256","{hash}")],[],[],"builtin","builtin:fetchurl",[],[])"#
        ))
        .unwrap();
        let o = &d.outputs[0];
        assert_eq!((o.hash_algo.as_str(), o.hash.as_str()), ("r:sha256", hash));
        assert_eq!(o.path, Some(sp(H3)));
        assert!(o.is_fixed() && d.is_fixed_output());
        // Floating content-addressed and deferred outputs have no path yet;
        // an impure one is not fixed.
        let d = parse(
            r#"Derive([("dev","","r:sha256",""),("doc","","",""),("out","","r:sha256","impure")],[],[],"s","b",[],[])"#,
        )
        .unwrap();
        assert!(d.outputs.iter().all(|o| o.path.is_none() && !o.is_fixed()));
        assert!(!d.is_fixed_output());
    }

    #[test]
    fn truncated_at_every_byte_is_an_error() {
        for s in [real().as_str(), NIX_WROTE[0], NIX_WROTE[1]] {
            let b = s.as_bytes();
            // Every byte, in the middle of a UTF-8 character too.
            for n in 0..b.len() {
                match Derivation::parse("/nix/store", &b[..n]) {
                    Err(DrvError::Truncated { offset }) => assert_eq!(offset, n, "cut at {n}"),
                    other => panic!("cut at {n}: {other:?}"),
                }
            }
            assert!(parse(s).is_ok());
        }
    }

    /// Seeded mutations of real files (a byte changed to one of the
    /// grammar's own, inserted or removed): errors, never a panic, and an
    /// error's offset never past the input. The fuzz target does this
    /// unguided and at length; this keeps a cheap share of it in `cargo test`.
    #[test]
    fn mutations_never_panic() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let alphabet = b"\"\\()[],nrtD/\xff\x00a";
        for seed in NIX_WROTE {
            for _ in 0..5000 {
                let mut b = seed.as_bytes().to_vec();
                for _ in 0..1 + next() % 3 {
                    let at = (next() % b.len() as u64) as usize;
                    let c = alphabet[(next() % alphabet.len() as u64) as usize];
                    match next() % 3 {
                        0 => b[at] = c,
                        1 => b.insert(at, c),
                        _ => {
                            b.remove(at);
                        }
                    }
                }
                if let Err(e) = Derivation::parse("/nix/store", &b) {
                    let offset = match e {
                        DrvError::Truncated { offset }
                        | DrvError::Expected { offset, .. }
                        | DrvError::NotUtf8 { offset }
                        | DrvError::BadPath { offset, .. }
                        | DrvError::Duplicate { offset, .. }
                        | DrvError::TrailingBytes { offset } => offset,
                        DrvError::TooLarge { .. } => unreachable!(),
                    };
                    assert!(offset <= b.len());
                }
            }
        }
    }

    #[test]
    fn files_nix_wrote() {
        let d = parse(NIX_WROTE[0]).unwrap();
        let names: Vec<&str> = d.outputs.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["dev", "lib", "out"]);
        assert_eq!(d.input_drvs.len(), 2);
        assert!(d.input_drvs.iter().all(|(_, o)| o == &["out"]));
        assert_eq!(d.input_srcs.len(), 2);
        assert_eq!(
            d.args[1],
            "a\"b\\c\nd\re\tf ünïcødé /nix/store/qpq58q9d0yfxnjlmlfpw80ic2i25isvm-script.sh"
        );
        let env = |k: &str| d.env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(env("tricky"), Some("\"\\\n\r\t$ end"));
        assert_eq!(env("empty"), Some(""));
        let f = parse(NIX_WROTE[1]).unwrap();
        assert!(f.is_fixed_output());
        assert_eq!(f.outputs[0].hash_algo, "r:sha256");
        assert_eq!(
            f.outputs[0].hash,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let s = real();
        for tail in ["\n", " ", ")", "Derive("] {
            assert_eq!(
                parse(&format!("{s}{tail}")),
                Err(DrvError::TrailingBytes { offset: s.len() })
            );
        }
    }

    #[test]
    fn wrong_bytes_name_their_offset() {
        assert_eq!(
            parse("Derivx"),
            Err(DrvError::Expected {
                offset: 5,
                expected: "'Derive(['"
            })
        );
        // Nix's lax list separators are refused.
        let e = parse(r#"Derive([],[],[],"s","b",["a""b"],[])"#).unwrap_err();
        assert_eq!(
            e,
            DrvError::Expected {
                offset: 28,
                expected: "',' or ']'"
            }
        );
        assert!(matches!(
            parse(r#"Derive([],[],[],"s","b",[,"a"],[])"#),
            Err(DrvError::Expected { offset: 25, .. })
        ));
        assert!(matches!(
            parse(r#"Derive([],[],[],"s","b",["a",],[])"#),
            Err(DrvError::Expected { offset: 29, .. })
        ));
        // A later Nix's versioned form is named, not misread.
        assert!(matches!(
            parse(r#"DrvWithVersion("xp-dyn-drv",[],[],[],"s","b",[],[])"#),
            Err(DrvError::Expected { offset: 1, .. })
        ));
    }

    #[test]
    fn bad_paths_and_duplicates() {
        let e = parse(r#"Derive([("out","/tmp/x","","")],[],[],"s","b",[],[])"#).unwrap_err();
        assert!(
            matches!(&e, DrvError::BadPath { offset: 15, path, .. } if path == "/tmp/x"),
            "{e:?}"
        );
        // Another store directory's paths are not this store's.
        assert!(
            Derivation::parse("/opt/store", real().as_bytes())
                .is_err_and(|e| matches!(e, DrvError::BadPath { offset: 15, .. }))
        );
        let dup =
            format!(r#"Derive([("out","{H1}","",""),("out","{H1}","","")],[],[],"s","b",[],[])"#);
        assert!(matches!(
            parse(&dup),
            Err(DrvError::Duplicate { what: "output", .. })
        ));
        let dup = format!(r#"Derive([],[("{H2}",["out","out"])],[],"s","b",[],[])"#);
        assert!(matches!(
            parse(&dup),
            Err(DrvError::Duplicate { key, .. }) if key == "out"
        ));
        let dup = format!(r#"Derive([],[("{H2}",[]),("{H2}",[])],[],"s","b",[],[])"#);
        assert!(matches!(parse(&dup), Err(DrvError::Duplicate { .. })));
        let dup = format!(r#"Derive([],[],["{H3}","{H3}"],"s","b",[],[])"#);
        assert!(matches!(parse(&dup), Err(DrvError::Duplicate { .. })));
        let dup = r#"Derive([],[],[],"s","b",[],[("a","1"),("a","2")])"#;
        assert!(matches!(
            parse(dup),
            Err(DrvError::Duplicate {
                offset: 39,
                what: "environment variable",
                ..
            })
        ));
    }

    #[test]
    fn not_utf8_and_too_large() {
        let mut b = br#"Derive([],[],[],"s","b",[""#.to_vec();
        b.extend_from_slice(b"\xff\"],[])");
        assert_eq!(
            Derivation::parse("/nix/store", &b),
            Err(DrvError::NotUtf8 { offset: 25 })
        );
        let big = vec![b' '; MAX_DRV_SIZE as usize + 1];
        assert!(matches!(
            Derivation::parse("/nix/store", &big),
            Err(DrvError::TooLarge { .. })
        ));
    }

    #[test]
    fn read_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.drv");
        std::fs::write(&f, real()).unwrap();
        assert_eq!(
            Derivation::read("/nix/store", &f).unwrap(),
            parse(&real()).unwrap()
        );
        std::fs::write(&f, "Derive(").unwrap();
        let e = Derivation::read("/nix/store", &f).unwrap_err();
        assert!(e.to_string().contains("x.drv"), "{e}");
        assert!(matches!(
            e,
            ReadDrvError::Parse {
                source: DrvError::Truncated { offset: 7 },
                ..
            }
        ));
        let e = Derivation::read("/nix/store", &dir.path().join("none.drv")).unwrap_err();
        assert!(matches!(e, ReadDrvError::Io { .. }));
    }
}
