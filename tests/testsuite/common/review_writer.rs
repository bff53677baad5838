//! nixpkgs-review's result directory, written here as each version's code
//! writes it, since nixpkgs-review cannot run on this machine (it fetches
//! nixpkgs and GitHub's evaluation). Each step follows the source of the
//! version named (github.com/Mic92/nixpkgs-review at the tag):
//!
//! 1. **evaluation** (`nixpkgs_review/nix/evalAttrs.nix`, run by real
//!    `nix-instantiate` over the fixture's head with nixpkgs-review's
//!    `config`): 2.6.0's one entry per attribute, `path = "${pkg}"` (the
//!    default output), `broken = !exists || !maybePath.success`; from 2.9.2
//!    an entry per output (`${name}.${output}` but `out`), a missing
//!    attribute `{ exists; broken = true; }`; from 3.1.0 sets that are no
//!    derivation walked into; 3.8.0's `pkgOrFake` (one entry per attribute,
//!    every output; `fake { inherit exists; broken = true; }`);
//! 2. **filtering** (`nix.py`, `_nix_eval_filter`): the version's
//!    `blacklist`, attributes of the same path (2.6.0 to 3.7.x) or `.drv`
//!    (3.8.0 on) listed once under the shortest name;
//! 3. **was it built** (`Attr.was_build`: `nix-store --verify-path` in
//!    2.6.0, `nix store verify --no-contents --no-trust` later): every
//!    output valid in the local store, as `valid_locally` asks;
//! 4. **statuses** (`report.py`, `Report`/`SystemReport`): broken,
//!    blacklisted, not exists, then tests before failed until 3.4.x,
//!    failed before tests from 3.5.0, else built;
//! 5. **files** (`report.py`, `Report.write`, `write_error_logs`,
//!    `_create_symlink_for_attr`): `report.json` (`json.dumps(sort_keys=True,
//!    indent=4)`, this version's keys), `results/` and `failed_results/`
//!    links, `logs/`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::run;

/// The versions written, one per format nixpkgs-review has had (see
/// `nix_heft_format::nixpkgs_review`'s table), and the commit after 3.9.0
/// that added `{"aliases", "name"}` entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    /// 2.6.0 (tag `2.6.0`): the first `report.json`.
    V2_6_0,
    /// 2.9.2: an entry per output, `extra-nixpkgs-config`, `non-existant`.
    V2_9_2,
    /// 2.10.5: `non-existent` (2.10.1), `checkout` (2.10.5).
    V2_10_5,
    /// 3.4.0: per system (2.11.0), `commit` (3.4.0), the package filters.
    V3_4_0,
    /// 3.8.0: an entry per attribute with a link per output, `pkgs`.
    V3_8_0,
    /// Commit `5daafbd` (3.9.0 and ten commits): `{"aliases", "name"}`.
    After3_9_0,
}

impl Version {
    /// Every version written.
    pub const ALL: [Version; 6] = [
        Version::V2_6_0,
        Version::V2_9_2,
        Version::V2_10_5,
        Version::V3_4_0,
        Version::V3_8_0,
        Version::After3_9_0,
    ];

    /// The tag (or commit).
    pub fn tag(self) -> &'static str {
        match self {
            Version::V2_6_0 => "2.6.0",
            Version::V2_9_2 => "2.9.2",
            Version::V2_10_5 => "2.10.5",
            Version::V3_4_0 => "3.4.0",
            Version::V3_8_0 => "3.8.0",
            Version::After3_9_0 => "5daafbd",
        }
    }

    fn per_system(self) -> bool {
        self >= Version::V3_4_0
    }

    /// `nix.py`'s `blacklist` at the tag.
    fn blacklist(self) -> &'static [&'static str] {
        match self {
            Version::V2_6_0 => &[
                "tests.nixos-functions.nixos-test",
                "tests.nixos-functions.nixosTest-test",
                "tests.writers",
                "appimage-run-tests",
            ],
            Version::V2_9_2 | Version::V2_10_5 => &[
                "appimage-run-tests",
                "darwin.builder",
                "nixos-install-tools",
                "tests.nixos-functions.nixos-test",
                "tests.nixos-functions.nixosTest-test",
                "tests.php.overrideAttrs-preserves-enabled-extensions",
                "tests.php.withExtensions-enables-previously-disabled-extensions",
                "tests.trivial",
                "tests.writers",
            ],
            _ => &[
                "appimage-run-tests",
                "darwin.builder",
                "nixos-install-tools",
                "tests.nixos-functions.nixos-test",
                "tests.nixos-functions.nixosTest-test",
                "tests.php.overrideAttrs-preserves-enabled-extensions",
                "tests.php.withExtensions-enables-previously-disabled-extensions",
                "tests.pkg-config.defaultPkgConfigPackages.tests-combined",
                "tests.trivial",
                "tests.writers",
            ],
        }
    }
}

/// What a review ran on.
pub struct Review<'a> {
    /// The version whose code is followed.
    pub version: Version,
    /// The checkout nixpkgs-review evaluated (the head's tree).
    pub head: &'a Path,
    /// `--extra-nixpkgs-config` (nixpkgs-review's default is `{ }`).
    pub extra_nixpkgs_config: &'a str,
    /// The attributes GitHub's (or ofborg's) evaluation named as changed.
    pub attrs: &'a [String],
    /// `builtins.currentSystem`.
    pub system: &'a str,
    /// The pull request (`pr`), if any.
    pub pr: Option<u64>,
    /// The head commit (`commit`, 3.4.0 on).
    pub commit: &'a str,
    /// `--skip-package` values (3.1.0 on in the report).
    pub skip_packages: &'a [String],
}

/// `Buildenv`'s nixpkgs configuration (`buildenv.py`, 2.9.0 on; 2.6.0
/// passes `{ checkMeta = true; allowUnfree = true; }` in evalAttrs.nix),
/// with evalAttrs.nix's `allowBroken = false` (2.9.2 on).
fn config(r: &Review) -> String {
    if r.version == Version::V2_6_0 {
        return "{ checkMeta = true; allowUnfree = true; }".into();
    }
    format!(
        "({{ allowUnfree = true; allowBroken = true; checkMeta = true; }} // {}) // {{ allowBroken = false; }}",
        r.extra_nixpkgs_config
    )
}

/// The library functions evalAttrs.nix takes from nixpkgs' `lib`, for a
/// package set without one: `splitString "."`, `attrByPath`,
/// `hasAttrByPath`, `isDerivation`, `getOutput`, as lib defines them.
const LIB: &str = r#"
  splitDots = s: builtins.filter builtins.isString (builtins.split "\\." s);
  attrByPath = p: d: s:
    if p == [ ] then s
    else if builtins.isAttrs s && builtins.hasAttr (builtins.head p) s
    then attrByPath (builtins.tail p) d s.${builtins.head p} else d;
  hasAttrByPath = p: s:
    p == [ ] || (builtins.isAttrs s && builtins.hasAttr (builtins.head p) s
      && hasAttrByPath (builtins.tail p) s.${builtins.head p});
  isDerivation = v: builtins.isAttrs v && (v.type or null) == "derivation";
  getOutput = o: pkg:
    if !(pkg ? outputSpecified) || !pkg.outputSpecified then pkg.${o} or pkg.out or pkg else pkg;
"#;

/// evalAttrs.nix's `getProperties` of the version, as a Nix function of a
/// name to a list of entries `{ name, exists, broken, path, outputs,
/// drvPath }` (`path` 2.6.0 to 3.7.x, `outputs` 3.8.0 on).
fn get_properties(v: Version) -> &'static str {
    match v {
        // 2.6.0: one entry, the default output.
        Version::V2_6_0 => {
            r#"name:
    let
      attrPath = splitDots name;
      pkg = attrByPath attrPath null pkgs;
      maybePath = builtins.tryEval "${pkg}";
      exists = hasAttrByPath attrPath pkgs;
      broken = !exists || !maybePath.success;
    in [ {
      inherit name exists broken;
      path = if !broken then maybePath.value else null;
      drvPath = if !broken then pkg.drvPath else null;
    } ]"#
        }
        // 2.9.2 to 3.7.x (3.1.0's walk into sets included: the fixture's
        // changed attributes are derivations, so 2.9.2 reads the same).
        Version::V2_9_2 | Version::V2_10_5 | Version::V3_4_0 => {
            r#"name:
    let
      attrPath = splitDots name;
      pkg = attrByPath attrPath null pkgs;
      exists = hasAttrByPath attrPath pkgs;
    in
    if pkg == null then [ { inherit name exists; broken = true; path = null; drvPath = null; } ]
    else if !isDerivation pkg then
      (if builtins.typeOf pkg != "set" then [ ]
       else builtins.concatMap (n: getProperties "${name}.${n}") (builtins.attrNames pkg))
    else map (output:
      let
        maybePath = builtins.tryEval "${getOutput output pkg}";
        broken = !exists || !maybePath.success;
      in {
        name = if output == "out" then name else "${name}.${output}";
        inherit exists broken;
        path = if !broken then maybePath.value else null;
        drvPath = if !broken then pkg.drvPath else null;
      }) (pkg.outputs or [ "out" ])"#
        }
        // 3.8.0 on: `pkgOrFake`; nix-eval-jobs prints a fake's outputs
        // too, `_nix_eval_filter` keeps them only when not broken.
        Version::V3_8_0 | Version::After3_9_0 => {
            r#"name:
    let
      attrPath = splitDots name;
      maybePkg = builtins.tryEval (attrByPath attrPath null pkgs);
      pkg = maybePkg.value;
      exists = hasAttrByPath attrPath pkgs;
    in
    if !maybePkg.success || pkg == null then [ { inherit name exists; broken = true; outputs = null; drvPath = null; } ]
    else if !isDerivation pkg then
      (if !builtins.isAttrs pkg then [ ]
       else builtins.concatMap (n: getProperties "${name}.${n}") (builtins.attrNames pkg))
    else
      let
        maybeDerivation = builtins.tryEval (isDerivation pkg);
        maybePath = builtins.tryEval pkg.outPath;
        broken = !maybeDerivation.success || !maybeDerivation.value || !maybePath.success;
      in [ {
        inherit name broken;
        exists = true;
        outputs = if broken then null else builtins.listToAttrs (map (o: { name = o; value = pkg.${o}.outPath; }) (pkg.outputs or [ "out" ]));
        drvPath = if broken then null else pkg.drvPath;
      } ]"#
        }
    }
}

/// One entry of nixpkgs-review's evaluation (`nix.py`'s `Attr`).
#[derive(Debug, Clone)]
struct Attr {
    name: String,
    exists: bool,
    broken: bool,
    blacklisted: bool,
    /// Output name → path: one for 2.6.0 to 3.7.x (`path`), every output
    /// for 3.8.0 on; empty when broken.
    outputs: Vec<(String, String)>,
    drv_path: Option<String>,
    aliases: Vec<String>,
}

impl Attr {
    /// `Attr.was_build`: every output a valid path of the local store.
    fn was_build(&self) -> bool {
        !self.outputs.is_empty()
            && self
                .outputs
                .iter()
                .all(|(_, p)| super::impact_fixture::valid_locally(p))
    }
}

/// Evaluates the review's attributes as the version's evalAttrs.nix does,
/// then filters them as its `_nix_eval_filter`.
fn evaluate(r: &Review, tmp: &Path) -> Vec<Attr> {
    let names = tmp.join("attrs.json");
    std::fs::write(&names, serde_json::to_string(r.attrs).unwrap()).unwrap();
    let expr = format!(
        "let\n  pkgs = import {} {{ config = {}; }};\n{LIB}\n  getProperties = {};\nin builtins.concatMap getProperties (builtins.fromJSON (builtins.readFile {}))\n",
        r.head.display(),
        config(r),
        get_properties(r.version),
        names.display()
    );
    let file = tmp.join("evalAttrs.nix");
    std::fs::write(&file, expr).unwrap();
    let out = run(Command::new("nix-instantiate")
        .args(["--readonly-mode", "--eval", "--strict", "--json"])
        .arg(&file));
    let entries: Vec<Value> = serde_json::from_str(&out).unwrap();
    let blacklist = r.version.blacklist();
    let attrs = entries.into_iter().map(|e| {
        let name = e["name"].as_str().unwrap().to_string();
        let outputs: Vec<(String, String)> = match (&e["path"], &e["outputs"]) {
            (Value::String(p), _) => vec![(String::new(), p.clone())],
            (_, Value::Object(m)) => m
                .iter()
                .map(|(o, p)| (o.clone(), p.as_str().unwrap().to_string()))
                .collect(),
            _ => Vec::new(),
        };
        Attr {
            blacklisted: blacklist.contains(&name.as_str()),
            name,
            exists: e["exists"].as_bool().unwrap(),
            broken: e["broken"].as_bool().unwrap(),
            outputs,
            drv_path: e["drvPath"].as_str().map(String::from),
            aliases: Vec::new(),
        }
    });
    // `_nix_eval_filter`: the same path (2.6.0 to 3.7.x) or `.drv` (3.8.0
    // on) once, under the shortest name, the others its aliases; broken
    // entries after.
    let mut by_key: Vec<(String, Attr)> = Vec::new();
    let mut broken = Vec::new();
    for a in attrs {
        let key = if r.version >= Version::V3_8_0 {
            a.drv_path.clone()
        } else {
            a.outputs.first().map(|(_, p)| p.clone())
        };
        let Some(key) = key.filter(|_| !a.broken) else {
            broken.push(a);
            continue;
        };
        match by_key.iter_mut().find(|(k, _)| *k == key) {
            None => by_key.push((key, a)),
            Some((_, other)) if other.name.len() > a.name.len() => {
                let mut a = a;
                a.aliases.push(other.name.clone());
                *other = a;
            }
            Some((_, other)) => other.aliases.push(a.name),
        }
    }
    by_key.into_iter().map(|(_, a)| a).chain(broken).collect()
}

/// The status lists of one system (`Report.__init__`/`SystemReport`).
fn statuses(v: Version, attrs: &[Attr]) -> BTreeMap<&'static str, Vec<&Attr>> {
    let mut s: BTreeMap<&'static str, Vec<&Attr>> = [
        "broken",
        "non-existent",
        "blacklisted",
        "failed",
        "built",
        "tests",
    ]
    .into_iter()
    .map(|k| (k, Vec::new()))
    .collect();
    for a in attrs {
        let test = a.name.starts_with("nixosTests");
        // Tests before failed until 3.4.x; failed first from 3.5.0
        // (`0e35e8b`, "Correctly report failed tests as failed").
        let failed_first = v >= Version::V3_8_0;
        let k = if a.broken {
            "broken"
        } else if a.blacklisted {
            "blacklisted"
        } else if !a.exists {
            "non-existent"
        } else if test && !failed_first {
            "tests"
        } else if !a.was_build() {
            "failed"
        } else if test {
            "tests"
        } else {
            "built"
        };
        s.get_mut(k).unwrap().push(a);
    }
    s
}

/// Writes the review directory `dir` as `r.version` writes it.
pub fn write(r: &Review, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let attrs = evaluate(r, tmp.path());
    let lists = statuses(r.version, &attrs);
    let entry = |a: &Attr| -> Value {
        if r.version == Version::After3_9_0 {
            json!({"aliases": a.aliases, "name": a.name})
        } else {
            json!(a.name)
        }
    };
    let mut result = serde_json::Map::new();
    for (k, v) in &lists {
        let key = match (*k, r.version) {
            ("non-existent", Version::V2_6_0 | Version::V2_9_2) => "non-existant",
            (k, _) => k,
        };
        result.insert(
            key.into(),
            Value::Array(v.iter().map(|a| entry(a)).collect()),
        );
    }
    let extra = (r.extra_nixpkgs_config != "{ }").then(|| r.extra_nixpkgs_config.to_string());
    let mut report = serde_json::Map::new();
    report.insert("pr".into(), json!(r.pr));
    if r.version >= Version::V2_9_2 {
        report.insert("extra-nixpkgs-config".into(), json!(extra));
    }
    if r.version >= Version::V2_10_5 {
        report.insert("checkout".into(), json!("merge"));
    }
    if r.version.per_system() {
        report.insert("systems".into(), json!([r.system]));
        report.insert("commit".into(), json!(r.commit));
        for k in ["only_packages", "package_regex", "skip_packages_regex"] {
            report.insert(k.into(), json!([]));
        }
        report.insert("skip_packages".into(), json!(r.skip_packages));
        report.insert("additional_packages".into(), json!([]));
        if r.version >= Version::V3_8_0 {
            report.insert("pkgs".into(), Value::Null);
        }
        report.insert("result".into(), json!({ r.system: Value::Object(result) }));
        if r.version == Version::V3_4_0 {
            // `additional_packages` came with 3.5.0 (`7b45342`).
            report.remove("additional_packages");
        }
    } else {
        report.insert("system".into(), json!(r.system));
        report.extend(result);
    }
    // `json.dumps(sort_keys=True, indent=4)`.
    let mut text = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(
        &mut text,
        serde_json::ser::PrettyFormatter::with_indent(b"    "),
    );
    serde::Serialize::serialize(&sorted(Value::Object(report)), &mut ser).unwrap();
    std::fs::write(dir.join("report.json"), text).unwrap();

    // `write_error_logs`: blacklisted and broken attributes (no drv_path)
    // skipped; a link per output (3.8.0 on, `outputs_with_name`) or the
    // entry's one path, into results/ when built, failed_results/ when
    // not; a log per attribute.
    let suffix = if r.version.per_system() {
        format!("-{}", r.system)
    } else {
        String::new()
    };
    for a in &attrs {
        if a.blacklisted || a.drv_path.is_none() {
            continue;
        }
        let folder = dir.join(if a.was_build() {
            "results"
        } else {
            "failed_results"
        });
        for (o, p) in &a.outputs {
            // Before 3.8.0 only when the path exists (`os.path.exists`).
            if r.version < Version::V3_8_0 && !Path::new(p).exists() {
                continue;
            }
            let name = if o.is_empty() || o == "out" {
                a.name.clone()
            } else {
                format!("{}.{o}", a.name)
            };
            std::fs::create_dir_all(&folder).unwrap();
            std::os::unix::fs::symlink(p, folder.join(format!("{name}{suffix}"))).unwrap();
        }
        let logs = dir.join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let log = if a.was_build() {
            String::new()
        } else {
            format!(
                "builder for '{}' failed with exit code 1\n",
                a.drv_path.as_deref().unwrap_or("")
            )
        };
        std::fs::write(logs.join(format!("{}{suffix}.log", a.name)), log).unwrap();
    }
}

/// `v` with every object's keys in sorted order.
pub fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut items: Vec<(String, Value)> = m.into_iter().collect();
            items.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(items.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}
