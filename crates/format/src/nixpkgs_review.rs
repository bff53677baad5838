//! A nixpkgs-review result directory: its `report.json` and the `results/`
//! links to the outputs it built.
//!
//! Read from nixpkgs-review's source (github.com/Mic92/nixpkgs-review:
//! `nixpkgs_review/report.py`, `nix.py`, `review.py` and
//! `nix/evalAttrs.nix` at every tag from 2.6.0, which first wrote
//! `report.json` (commit `3a53a9a`), to 3.9.0, and commit `5daafbd` after
//! it). `Report.write` leaves, in the review directory, `report.json`
//! (`json.dumps(..., sort_keys=True, indent=4)`), `results/` (a symlink per
//! built output), `failed_results/` (the same for failed builds) and
//! `logs/`. Four writers, told apart by `report.json`'s keys ([`Version`]):
//!
//! | versions | `report.json` | entries | `results/` links |
//! | --- | --- | --- | --- |
//! | 2.6.0 – 2.8.x | `system`, `pr`, the six lists (`non-existant`) | one per attribute | `<attr>` → the default output (`"${pkg}"`, the first of `outputs`) |
//! | 2.9.0 – 2.10.x | `extra-nixpkgs-config` added; `non-existent` from 2.10.1 (`32dd04b`); `checkout` from 2.10.5 | one per output (`evalAttrs.nix`: `<attr>` for `out`, `<attr>.<output>`) | `<entry>` → that output |
//! | 2.11.0 – 3.7.x | `systems`, `result.<system>.<list>` (`598aa53`); `commit` from 3.4.0; package filters from 3.1.0 | one per output | `<entry>-<system>` |
//! | 3.8.0 on | `pkgs` added (`c9153b5`), evaluation by nix-eval-jobs (`8ed3acf`) | one per attribute | `<attr>-<system>` for `out`, `<attr>.<output>-<system>` (`Attr.outputs_with_name`) |
//!
//! Entries are attribute names, or after 3.9.0 (`dd1c072`, unreleased at
//! 3.9.0) objects `{"aliases": [...], "name": "..."}`; both are read.
//!
//! **Statuses.** `Report`/`SystemReport` test, in this order: `broken`,
//! `blacklisted`, `not exists` (`non-existent`), then `tests` before
//! `failed` until 3.4.x and `failed` before `tests` from 3.5.0 (`0e35e8b`),
//! else `built`. Every `evalAttrs.nix` marks an attribute missing from the
//! checkout `exists = false; broken = true` (2.6.0: `broken = !exists ||
//! …`; from 2.9.0 `pkg == null` gives `broken = true`; 3.8.0's `fake {
//! inherit exists; broken = true; }`), so it lands in `broken`, and
//! `non-existent` stays empty in every version: a `broken` entry is either
//! broken (meta.broken, or its evaluation throws) or missing from the
//! checkout, which the report cannot tell apart. Attributes that evaluate
//! to the same derivation (2.6.0–3.7.x: the same out path; 3.8.0 on: the
//! same `.drv`) are listed once, under the shortest name
//! (`_nix_eval_filter`); the others are its aliases, in the report only
//! after 3.9.0.
//!
//! [`ReviewDir::reviewed`] gives each attribute of a system with its
//! status and its outputs by name, whatever the version: 2.9.0 to 3.7.x's
//! per-output entries (`openssl`, `openssl.dev`) grouped back into one
//! attribute (an entry `P.o` belongs to `P` when `P` is an entry too, as
//! `evalAttrs.nix` lists no attribute inside a derivation, or when `o` is
//! one of nixpkgs' output names), and 2.6.0 to 2.8.x's one link named by
//! the output its target's name ends with (nixpkgs names a non-`out`
//! output `<name>-<output>`).
//!
//! The reader reads link targets as strings (`readlink`) and never follows
//! them: the directory is often an artifact from another machine (a CI
//! run), whose store paths need not exist here, so a link whose target is
//! absent (dangling) is read like any other; whether the path is present
//! is for the caller to ask the store it was given. A link that is missing,
//! is not a symlink, or points outside the store directory is recorded as a
//! [`LinkProblem`] on the attribute's system, so one bad link does not hide
//! the rest of the report. Whatever makes `report.json` unreadable is a
//! [`ReviewDirError`].

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::store_path::{self, StorePath};

/// Largest `report.json` read; nixpkgs-review's reports of PRs rebuilding
/// every package stay far below this, and the cap keeps a corrupt or hostile
/// file from being read into memory whole.
pub const MAX_REPORT_SIZE: u64 = 16 * 1024 * 1024;

/// Most entries read from `results/`: about ten times the outputs of all of
/// nixpkgs on four systems, so only a directory that is not nixpkgs-review's
/// reaches it.
pub const MAX_RESULTS_ENTRIES: usize = 4 * 1024 * 1024;

/// The default store directory, which nixpkgs-review's links point into.
pub const DEFAULT_STORE_DIR: &str = "/nix/store";

/// Why a review directory could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReviewDirError {
    /// The directory has no `report.json`.
    #[error("{path} is missing: not a nixpkgs-review result directory")]
    MissingReport {
        /// The `report.json` looked for.
        path: PathBuf,
    },
    /// A file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// `report.json` is larger than [`MAX_REPORT_SIZE`].
    #[error("{path} is {size} bytes, more than the {max} bytes a nixpkgs-review report can be")]
    TooLarge {
        /// The `report.json`.
        path: PathBuf,
        /// Its size, or at least this many bytes when it grew while read.
        size: u64,
        /// The cap.
        max: u64,
    },
    /// `report.json` is not JSON (corrupt or truncated).
    #[error("{path} is not valid JSON (corrupt or truncated?): {source}")]
    Json {
        /// The `report.json`.
        path: PathBuf,
        /// Where the parser stopped.
        source: serde_json::Error,
    },
    /// `report.json` is JSON but not in the shape nixpkgs-review writes.
    #[error("{path}: {what}")]
    Shape {
        /// The file (or directory) at fault.
        path: PathBuf,
        /// What is wrong, naming the key.
        what: String,
    },
    /// `results/` has more entries than [`MAX_RESULTS_ENTRIES`].
    #[error("{path} has more than {max} entries: not a nixpkgs-review results directory")]
    TooManyResults {
        /// The `results/` directory.
        path: PathBuf,
        /// The cap.
        max: usize,
    },
}

/// Which of nixpkgs-review's two `report.json` layouts a directory has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// 2.6.0 to 2.10.x: one `system`, the lists at the top level, links
    /// named `results/<attr>`.
    SingleSystem,
    /// 2.11.0 on: `systems` and `result.<system>.<status>`, links named
    /// `results/<attr>-<system>`.
    PerSystem,
}

/// Which nixpkgs-review wrote a directory, as far as its `report.json`
/// tells (see the module's table): what its entries and links mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    /// 2.6.0 to 2.8.x: one system, an entry per attribute, one link to its
    /// default output. No `extra-nixpkgs-config` key.
    V2_6,
    /// 2.9.0 to 2.10.x: one system, an entry per output.
    V2_9,
    /// 2.11.0 to 3.7.x: per system, an entry per output.
    V2_11,
    /// 3.8.0 on: per system, an entry per attribute with a link per
    /// output. Has the `pkgs` key.
    V3_8,
}

impl Version {
    /// The versions of nixpkgs-review that write this format.
    pub fn range(self) -> &'static str {
        match self {
            Version::V2_6 => "2.6.0 to 2.8.x",
            Version::V2_9 => "2.9.0 to 2.10.x",
            Version::V2_11 => "2.11.0 to 3.7.x",
            Version::V3_8 => "3.8.0 or later",
        }
    }

    /// Whether each output is an entry of its own (`hello.dev`).
    pub fn entry_per_output(self) -> bool {
        matches!(self, Version::V2_9 | Version::V2_11)
    }
}

/// One attribute of a system as nixpkgs-review reviewed it, whatever the
/// version: per-output entries grouped, links named by output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reviewed {
    /// The attribute path.
    pub name: String,
    /// Its other names (after 3.9.0 only).
    pub aliases: Vec<String>,
    /// Its status; for an attribute of several entries (2.9.0 to 3.7.x),
    /// `failed` when one of them failed, else the first entry's.
    pub status: Status,
    /// Output name → the path its link points to (built attributes and
    /// tests only).
    pub outputs: BTreeMap<String, StorePath>,
    /// Output name → its link's file name in `results/`.
    pub links: BTreeMap<String, String>,
}

/// What nixpkgs-review made of one attribute on one system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// Marked broken (or failed to evaluate): not built.
    Broken,
    /// In the PR's evaluation but not in the checkout: not built.
    NonExistent,
    /// On nixpkgs-review's list of attributes never built.
    Blacklisted,
    /// Failed to build.
    Failed,
    /// Built.
    Built,
    /// A NixOS test (`nixosTests.*`) that built.
    Tests,
}

impl Status {
    /// Every status, in the order nixpkgs-review's report lists them.
    pub const ALL: [Status; 6] = [
        Status::Broken,
        Status::NonExistent,
        Status::Blacklisted,
        Status::Failed,
        Status::Tests,
        Status::Built,
    ];

    /// The key in `report.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Broken => "broken",
            Status::NonExistent => "non-existent",
            Status::Blacklisted => "blacklisted",
            Status::Failed => "failed",
            Status::Built => "built",
            Status::Tests => "tests",
        }
    }

    /// Whether attributes of this status have links in `results/`.
    fn has_results(self) -> bool {
        matches!(self, Status::Built | Status::Tests)
    }
}

/// One attribute as a report lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    /// The attribute path, e.g. `python3Packages.requests` (or, before
    /// 3.8.0, one output of it, `openssl.dev`).
    pub name: String,
    /// Other attribute paths of the same derivation (after 3.9.0 only).
    pub aliases: Vec<String>,
    /// For built attributes and tests: the outputs read from `results/`, in
    /// link-name order. Empty for the other statuses.
    pub outputs: Vec<OutputLink>,
}

/// One `results/` link of a built attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLink {
    /// `None` for the link named after the attribute alone: the `out`
    /// output from 2.9.0 on (or the output the entry names, before 3.8.0,
    /// for entries like `openssl.dev`), the default output before 2.9.0.
    /// `Some(o)` for `<attr>.<o>`.
    pub output: Option<String>,
    /// The link's file name in `results/`.
    pub link: String,
    /// Its target.
    pub path: StorePath,
}

/// One system's results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemResult {
    /// E.g. `x86_64-linux`.
    pub system: String,
    /// Attributes marked broken.
    pub broken: Vec<Attribute>,
    /// Attributes not found in the checkout.
    pub non_existent: Vec<Attribute>,
    /// Attributes on the blacklist.
    pub blacklisted: Vec<Attribute>,
    /// Attributes that failed to build.
    pub failed: Vec<Attribute>,
    /// Attributes that built, with their outputs.
    pub built: Vec<Attribute>,
    /// NixOS tests that built, with their outputs.
    pub tests: Vec<Attribute>,
    /// Links of this system's built attributes that could not be read.
    pub problems: Vec<LinkProblem>,
}

impl SystemResult {
    /// The attributes of one status.
    pub fn attributes(&self, status: Status) -> &[Attribute] {
        match status {
            Status::Broken => &self.broken,
            Status::NonExistent => &self.non_existent,
            Status::Blacklisted => &self.blacklisted,
            Status::Failed => &self.failed,
            Status::Built => &self.built,
            Status::Tests => &self.tests,
        }
    }

    fn attributes_mut(&mut self, status: Status) -> &mut Vec<Attribute> {
        match status {
            Status::Broken => &mut self.broken,
            Status::NonExistent => &mut self.non_existent,
            Status::Blacklisted => &mut self.blacklisted,
            Status::Failed => &mut self.failed,
            Status::Built => &mut self.built,
            Status::Tests => &mut self.tests,
        }
    }

    /// The status of `attr` on this system, if the report lists it.
    pub fn status_of(&self, attr: &str) -> Option<Status> {
        Status::ALL
            .into_iter()
            .find(|&s| self.attributes(s).iter().any(|a| a.name == attr))
    }
}

/// A `results/` link that could not be read as a built output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{link}: {kind}")]
pub struct LinkProblem {
    /// The attribute whose link this is.
    pub attribute: String,
    /// The link (for [`LinkProblemKind::Missing`], the one expected).
    pub link: PathBuf,
    /// What is wrong.
    pub kind: LinkProblemKind,
}

/// What is wrong with a `results/` link.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkProblemKind {
    /// The report says the attribute built, but `results/` has no link for
    /// it.
    #[error("missing: the report lists the attribute as built but results/ has no link for it")]
    Missing,
    /// The entry is not a symlink.
    #[error("not a symlink")]
    NotASymlink,
    /// The link could not be read.
    #[error("cannot read the link: {0}")]
    Unreadable(String),
    /// The target is not valid UTF-8, so cannot be a store path.
    #[error("its target is not valid UTF-8")]
    TargetNotUtf8,
    /// The target is not a store path in the store directory (a link to
    /// another link, a loop, a relative target, a file inside a store path).
    #[error("its target '{target}' is not a store path: {reason}")]
    NotAStorePath {
        /// The target as read.
        target: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
}

/// A nixpkgs-review result directory, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewDir {
    /// The directory read.
    pub dir: PathBuf,
    /// Which `report.json` layout it has.
    pub layout: Layout,
    /// Which nixpkgs-review versions write what it has.
    pub version: Version,
    /// The PR reviewed (`pr`), absent for `nixpkgs-review rev` and `wip`.
    pub pr: Option<u64>,
    /// The nixpkgs commit reviewed (`commit`, 3.4.0 on).
    pub commit: Option<String>,
    /// `merge` or `commit` (`checkout`).
    pub checkout: Option<String>,
    /// `--extra-nixpkgs-config`, when not the default `{ }`.
    pub extra_nixpkgs_config: Option<String>,
    /// Results per system, in the report's order.
    pub systems: Vec<SystemResult>,
}

impl ReviewDir {
    /// Reads `dir/report.json` and `dir/results/` with links into
    /// `/nix/store`.
    pub fn open(dir: &Path) -> Result<ReviewDir, ReviewDirError> {
        Self::open_with_store_dir(dir, DEFAULT_STORE_DIR)
    }

    /// As [`ReviewDir::open`], for links into `store_dir`.
    pub fn open_with_store_dir(dir: &Path, store_dir: &str) -> Result<ReviewDir, ReviewDirError> {
        let report_path = dir.join("report.json");
        let text = read_capped(&report_path)?;
        let value: Value =
            serde_json::from_slice(&text).map_err(|source| ReviewDirError::Json {
                path: report_path.clone(),
                source,
            })?;
        let mut review = parse_report(dir, &report_path, &value)?;
        let results = ResultsDir::list(&dir.join("results"))?;
        for sys in &mut review.systems {
            let suffix = match review.layout {
                Layout::SingleSystem => String::new(),
                Layout::PerSystem => format!("-{}", sys.system),
            };
            read_outputs(sys, &suffix, &results, store_dir);
        }
        Ok(review)
    }

    /// The results of one system.
    pub fn system(&self, system: &str) -> Option<&SystemResult> {
        self.systems.iter().find(|s| s.system == system)
    }

    /// Every attribute `system` lists, per-output entries grouped (see
    /// [`Reviewed`]), in the report's order of first appearance; `None`
    /// when the report has no such system.
    pub fn reviewed(&self, system: &str) -> Option<Vec<Reviewed>> {
        let sys = self.system(system)?;
        let entries: Vec<(Status, &Attribute)> = Status::ALL
            .into_iter()
            .flat_map(|st| sys.attributes(st).iter().map(move |a| (st, a)))
            .collect();
        let names: HashSet<&str> = entries.iter().map(|(_, a)| a.name.as_str()).collect();
        let mut out: Vec<Reviewed> = Vec::new();
        let mut at: BTreeMap<String, usize> = BTreeMap::new();
        for (status, a) in entries {
            let (attr, output) = match a.name.rsplit_once('.') {
                Some((p, o))
                    if self.version.entry_per_output()
                        && is_output_name(o)
                        && (names.contains(p) || store_path::OUTPUT_NAMES.contains(&o)) =>
                {
                    (p.to_string(), Some(o.to_string()))
                }
                _ => (a.name.clone(), None),
            };
            let i = *at.entry(attr.clone()).or_insert_with(|| {
                out.push(Reviewed {
                    name: attr.clone(),
                    aliases: Vec::new(),
                    status,
                    outputs: BTreeMap::new(),
                    links: BTreeMap::new(),
                });
                out.len() - 1
            });
            let r = &mut out[i];
            r.aliases.extend(a.aliases.iter().cloned());
            if status == Status::Failed {
                r.status = Status::Failed;
            }
            for link in &a.outputs {
                let name = match (&output, &link.output) {
                    // An entry of its own (2.9.0 to 3.7.x): its one link is
                    // the output the entry names.
                    (Some(o), None) => o.clone(),
                    (_, Some(o)) => o.clone(),
                    // 2.6.0 to 2.8.x link the default output, whichever it
                    // is: nixpkgs names it in the path's suffix.
                    (None, None) if self.version == Version::V2_6 => {
                        store_path::split_output(link.path.name())
                            .1
                            .unwrap_or("out")
                            .to_string()
                    }
                    (None, None) => "out".to_string(),
                };
                r.links.insert(name.clone(), link.link.clone());
                r.outputs.insert(name, link.path.clone());
            }
        }
        Some(out)
    }

    /// Every link problem, on all systems.
    pub fn problems(&self) -> impl Iterator<Item = &LinkProblem> {
        self.systems.iter().flat_map(|s| s.problems.iter())
    }
}

/// Reads `path` whole, refusing more than [`MAX_REPORT_SIZE`] bytes: the
/// size is checked before reading and the read is bounded too, in case the
/// file grows meanwhile.
fn read_capped(path: &Path) -> Result<Vec<u8>, ReviewDirError> {
    let io_err = |source| ReviewDirError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(ReviewDirError::MissingReport {
                path: path.to_path_buf(),
            });
        }
        Err(e) => return Err(io_err(e)),
    };
    let meta = file.metadata().map_err(io_err)?;
    if !meta.is_file() {
        return Err(ReviewDirError::Shape {
            path: path.to_path_buf(),
            what: "is not a regular file".into(),
        });
    }
    let too_large = |size| ReviewDirError::TooLarge {
        path: path.to_path_buf(),
        size,
        max: MAX_REPORT_SIZE,
    };
    if meta.len() > MAX_REPORT_SIZE {
        return Err(too_large(meta.len()));
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_REPORT_SIZE + 1)
        .read_to_end(&mut buf)
        .map_err(io_err)?;
    if buf.len() as u64 > MAX_REPORT_SIZE {
        return Err(too_large(buf.len() as u64));
    }
    Ok(buf)
}

fn parse_report(dir: &Path, path: &Path, value: &Value) -> Result<ReviewDir, ReviewDirError> {
    let shape = |what: String| ReviewDirError::Shape {
        path: path.to_path_buf(),
        what,
    };
    let top = value
        .as_object()
        .ok_or_else(|| shape("the report is not a JSON object".into()))?;

    let pr = match top.get("pr") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .ok_or_else(|| shape(format!("`pr` is {v}, not a PR number")))?,
        ),
    };
    let commit = opt_string(top, "commit").map_err(&shape)?;
    let checkout = opt_string(top, "checkout").map_err(&shape)?;
    let extra_nixpkgs_config = opt_string(top, "extra-nixpkgs-config").map_err(&shape)?;

    let (layout, systems) = if let Some(result) = top.get("result") {
        let result = result
            .as_object()
            .ok_or_else(|| shape("`result` is not an object of systems".into()))?;
        // Keep the order nixpkgs-review chose (`systems`); serde_json's map
        // is sorted, so it cannot give it.
        let mut order: Vec<String> = Vec::new();
        if let Some(listed) = top.get("systems") {
            let listed = listed
                .as_array()
                .ok_or_else(|| shape("`systems` is not a list".into()))?;
            for s in listed {
                let s = s
                    .as_str()
                    .ok_or_else(|| shape(format!("`systems` holds {s}, not a system name")))?;
                if !result.contains_key(s) {
                    return Err(shape(format!(
                        "`systems` lists {s} but `result` has no entry for it"
                    )));
                }
                if !order.iter().any(|o| o == s) {
                    order.push(s.to_string());
                }
            }
        }
        for s in result.keys() {
            if !order.iter().any(|o| o == s) {
                order.push(s.clone());
            }
        }
        let mut systems = Vec::with_capacity(order.len());
        for s in order {
            let lists = result[&s].as_object().ok_or_else(|| {
                shape(format!("`result.{s}` is not an object of attribute lists"))
            })?;
            systems.push(parse_system(
                s.clone(),
                lists,
                &format!("result.{s}."),
                &shape,
            )?);
        }
        (Layout::PerSystem, systems)
    } else if let Some(system) = top.get("system") {
        let system = system
            .as_str()
            .ok_or_else(|| shape(format!("`system` is {system}, not a system name")))?;
        let sys = parse_system(system.to_string(), top, "", &shape)?;
        (Layout::SingleSystem, vec![sys])
    } else {
        return Err(shape(
            "has neither `result` (nixpkgs-review 2.11.0 on) nor `system` (2.6.0 to 2.10.x)".into(),
        ));
    };

    // The keys each writer added (see the module's table): `pkgs` came
    // with 3.8.0's entry per attribute, `extra-nixpkgs-config` with 2.9.0's
    // entry per output.
    let version = match layout {
        Layout::PerSystem if top.contains_key("pkgs") => Version::V3_8,
        Layout::PerSystem => Version::V2_11,
        Layout::SingleSystem if top.contains_key("extra-nixpkgs-config") => Version::V2_9,
        Layout::SingleSystem => Version::V2_6,
    };
    Ok(ReviewDir {
        dir: dir.to_path_buf(),
        layout,
        version,
        pr,
        commit,
        checkout,
        extra_nixpkgs_config,
        systems,
    })
}

fn opt_string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(format!("`{key}` is {v}, not a string")),
    }
}

fn parse_system(
    system: String,
    lists: &Map<String, Value>,
    prefix: &str,
    shape: &dyn Fn(String) -> ReviewDirError,
) -> Result<SystemResult, ReviewDirError> {
    let mut sys = SystemResult {
        system,
        broken: Vec::new(),
        non_existent: Vec::new(),
        blacklisted: Vec::new(),
        failed: Vec::new(),
        built: Vec::new(),
        tests: Vec::new(),
        problems: Vec::new(),
    };
    for status in Status::ALL {
        // 2.6.0 to 2.10.0 wrote `non-existant`.
        let (key, value) = match (status, lists.get(status.as_str())) {
            (Status::NonExistent, None) => ("non-existant", lists.get("non-existant")),
            (_, v) => (status.as_str(), v),
        };
        // A status key that is absent is an empty list: nixpkgs-review has
        // always written all six, but an absent one says nothing is there.
        let Some(value) = value else { continue };
        let items = value
            .as_array()
            .ok_or_else(|| shape(format!("`{prefix}{key}` is not a list of attributes")))?;
        let out = sys.attributes_mut(status);
        out.reserve(items.len());
        for item in items {
            out.push(parse_attribute(item).ok_or_else(|| {
                shape(format!(
                    "`{prefix}{key}` holds {item}, neither an attribute name nor {{\"name\", \"aliases\"}}"
                ))
            })?);
        }
    }
    Ok(sys)
}

/// A string (until 3.9.0) or `{"name": ..., "aliases": [...]}` (after).
fn parse_attribute(item: &Value) -> Option<Attribute> {
    let (name, aliases) = match item {
        Value::String(s) => (s.clone(), Vec::new()),
        Value::Object(o) => {
            let name = o.get("name")?.as_str()?.to_string();
            let aliases = match o.get("aliases") {
                None | Some(Value::Null) => Vec::new(),
                Some(a) => a
                    .as_array()?
                    .iter()
                    .map(|x| x.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()?,
            };
            (name, aliases)
        }
        _ => return None,
    };
    Some(Attribute {
        name,
        aliases,
        outputs: Vec::new(),
    })
}

/// The names in `results/`. Links are looked up in this listing rather
/// than by joining attribute names to the directory, so no name in the
/// report (`../x`, `a/b`) can reach outside it.
struct ResultsDir {
    path: PathBuf,
    names: BTreeSet<String>,
}

impl ResultsDir {
    fn list(path: &Path) -> Result<ResultsDir, ReviewDirError> {
        let io_err = |source| ReviewDirError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut names = BTreeSet::new();
        match fs::symlink_metadata(path) {
            // nixpkgs-review creates `results/` only when something built.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(e)),
            Ok(m) if !m.is_dir() => {
                return Err(ReviewDirError::Shape {
                    path: path.to_path_buf(),
                    what: "is not a directory".into(),
                });
            }
            Ok(_) => {
                for entry in fs::read_dir(path).map_err(io_err)? {
                    let entry = entry.map_err(io_err)?;
                    // A name that is not UTF-8 cannot be an attribute's.
                    if let Ok(name) = entry.file_name().into_string() {
                        if names.len() == MAX_RESULTS_ENTRIES {
                            return Err(ReviewDirError::TooManyResults {
                                path: path.to_path_buf(),
                                max: MAX_RESULTS_ENTRIES,
                            });
                        }
                        names.insert(name);
                    }
                }
            }
        }
        Ok(ResultsDir {
            path: path.to_path_buf(),
            names,
        })
    }

    /// The links of attribute `name`: `<name><suffix>` and
    /// `<name>.<output><suffix>`, as (output, link name).
    fn links_of(
        &self,
        name: &str,
        suffix: &str,
        listed: &HashSet<&str>,
    ) -> Vec<(Option<String>, String)> {
        let mut links = Vec::new();
        let main = format!("{name}{suffix}");
        if self.names.contains(&main) {
            links.push((None, main));
        }
        let prefix = format!("{name}.");
        for link in self.names.range(prefix.clone()..) {
            let Some(rest) = link.strip_prefix(&prefix) else {
                break;
            };
            let Some(output) = rest.strip_suffix(suffix) else {
                continue;
            };
            // Before 3.8.0 `hello.dev` is an entry of its own in the
            // report, and the link is its; output names have no dots.
            if is_output_name(output) && !listed.contains(format!("{name}.{output}").as_str()) {
                links.push((Some(output.to_string()), link.clone()));
            }
        }
        links
    }
}

/// An output name as Nix allows it in a derivation (no dots, no slashes).
fn is_output_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn read_outputs(sys: &mut SystemResult, suffix: &str, results: &ResultsDir, store_dir: &str) {
    let listed: HashSet<String> = Status::ALL
        .into_iter()
        .flat_map(|s| sys.attributes(s).iter().map(|a| a.name.clone()))
        .collect();
    let listed: HashSet<&str> = listed.iter().map(String::as_str).collect();
    let mut problems = Vec::new();
    for status in Status::ALL.into_iter().filter(|s| s.has_results()) {
        for attr in sys.attributes_mut(status) {
            let links = results.links_of(&attr.name, suffix, &listed);
            if links.is_empty() && status == Status::Built {
                problems.push(LinkProblem {
                    attribute: attr.name.clone(),
                    link: results.path.join(format!("{}{suffix}", attr.name)),
                    kind: LinkProblemKind::Missing,
                });
            }
            for (output, link) in links {
                let link_path = results.path.join(&link);
                match read_link_target(&link_path, store_dir) {
                    Ok(path) => attr.outputs.push(OutputLink { output, link, path }),
                    Err(kind) => problems.push(LinkProblem {
                        attribute: attr.name.clone(),
                        link: link_path,
                        kind,
                    }),
                }
            }
        }
    }
    sys.problems = problems;
}

/// The target of the link at `path` as a store path: `readlink` only, the
/// target is never opened or stat'ed.
fn read_link_target(path: &Path, store_dir: &str) -> Result<StorePath, LinkProblemKind> {
    let meta =
        fs::symlink_metadata(path).map_err(|e| LinkProblemKind::Unreadable(e.to_string()))?;
    if !meta.file_type().is_symlink() {
        return Err(LinkProblemKind::NotASymlink);
    }
    let target = fs::read_link(path).map_err(|e| LinkProblemKind::Unreadable(e.to_string()))?;
    let target = target
        .into_os_string()
        .into_string()
        .map_err(|_| LinkProblemKind::TargetNotUtf8)?;
    StorePath::parse(store_dir, &target).map_err(|e| LinkProblemKind::NotAStorePath {
        target,
        reason: e.reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A synthetic store path: the reader only reads link targets as
    /// strings, so they need not exist on this machine.
    fn sp(c: char, name: &str) -> String {
        let p = format!("/nix/store/{}-{name}", c.to_string().repeat(32));
        StorePath::parse("/nix/store", &p).expect("a valid synthetic store path");
        p
    }

    /// A review directory with `report.json` and `results/` links
    /// (name, target), as `Report.write` leaves them.
    fn review_dir(report: &str, links: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("report.json"), report).unwrap();
        if !links.is_empty() {
            fs::create_dir(dir.path().join("results")).unwrap();
        }
        for (name, target) in links {
            symlink(target, dir.path().join("results").join(name)).unwrap();
        }
        dir
    }

    fn names(attrs: &[Attribute]) -> Vec<&str> {
        attrs.iter().map(|a| a.name.as_str()).collect()
    }

    fn outputs(a: &Attribute) -> Vec<(Option<&str>, &str)> {
        a.outputs
            .iter()
            .map(|o| (o.output.as_deref(), o.path.as_str()))
            .collect()
    }

    // The shape of `Report.json` at 5daafbd (after 3.9.0, with commit
    // dd1c072's `{"aliases", "name"}` entries): `json.dumps(sort_keys=True,
    // indent=4)`; links per `_create_symlink_for_attr` and
    // `Attr.outputs_with_name` (nixpkgs_review/report.py, nix.py).
    const REPORT_3_9: &str = r#"{
    "additional_packages": [],
    "checkout": "merge",
    "commit": "9e301f2426b8f615a15da1799f111051898172de",
    "extra-nixpkgs-config": "{ allowUnfree = true; }",
    "only_packages": [],
    "package_regex": [],
    "pkgs": null,
    "pr": 340297,
    "result": {
        "aarch64-linux": {
            "blacklisted": [],
            "broken": [],
            "built": [
                {
                    "aliases": [],
                    "name": "forecast"
                }
            ],
            "failed": [
                {
                    "aliases": [],
                    "name": "openssl"
                }
            ],
            "non-existent": [],
            "tests": []
        },
        "x86_64-linux": {
            "blacklisted": [
                {
                    "aliases": [],
                    "name": "tests.nixos-functions.nixos-test"
                }
            ],
            "broken": [
                {
                    "aliases": [],
                    "name": "oldthing"
                }
            ],
            "built": [
                {
                    "aliases": [],
                    "name": "forecast"
                },
                {
                    "aliases": [
                        "openssl_3"
                    ],
                    "name": "openssl"
                }
            ],
            "failed": [],
            "non-existent": [
                {
                    "aliases": [],
                    "name": "gone"
                }
            ],
            "tests": [
                {
                    "aliases": [],
                    "name": "nixosTests.forecast"
                }
            ]
        }
    },
    "skip_packages": [],
    "skip_packages_regex": [],
    "systems": [
        "x86_64-linux",
        "aarch64-linux"
    ]
}"#;

    #[test]
    fn per_system_layout_with_aliases_and_multi_output_links() {
        let (fa, fx) = (sp('a', "forecast-1.0"), sp('b', "forecast-1.0"));
        let (o, od, ob) = (
            sp('c', "openssl-3.0"),
            sp('d', "openssl-3.0-dev"),
            sp('f', "openssl-3.0-bin"),
        );
        let t = sp('g', "vm-test-run-forecast");
        let dir = review_dir(
            REPORT_3_9,
            &[
                ("forecast-aarch64-linux", &fa),
                ("forecast-x86_64-linux", &fx),
                ("openssl-x86_64-linux", &o),
                ("openssl.dev-x86_64-linux", &od),
                ("openssl.bin-x86_64-linux", &ob),
                ("nixosTests.forecast-x86_64-linux", &t),
            ],
        );
        let r = ReviewDir::open(dir.path()).unwrap();
        assert_eq!(r.layout, Layout::PerSystem);
        assert_eq!(r.pr, Some(340297));
        assert_eq!(
            r.commit.as_deref(),
            Some("9e301f2426b8f615a15da1799f111051898172de")
        );
        assert_eq!(r.checkout.as_deref(), Some("merge"));
        assert_eq!(
            r.extra_nixpkgs_config.as_deref(),
            Some("{ allowUnfree = true; }")
        );
        // The order of `systems`, not the sorted order of `result`.
        let order: Vec<&str> = r.systems.iter().map(|s| s.system.as_str()).collect();
        assert_eq!(order, ["x86_64-linux", "aarch64-linux"]);

        let x = r.system("x86_64-linux").unwrap();
        assert_eq!(names(&x.built), ["forecast", "openssl"]);
        assert_eq!(x.built[1].aliases, ["openssl_3"]);
        assert_eq!(names(&x.broken), ["oldthing"]);
        assert_eq!(names(&x.non_existent), ["gone"]);
        assert_eq!(names(&x.blacklisted), ["tests.nixos-functions.nixos-test"]);
        assert_eq!(names(&x.tests), ["nixosTests.forecast"]);
        assert!(x.failed.is_empty());
        assert_eq!(outputs(&x.built[0]), [(None, fx.as_str())]);
        assert_eq!(
            outputs(&x.built[1]),
            [
                (None, o.as_str()),
                (Some("bin"), ob.as_str()),
                (Some("dev"), od.as_str())
            ]
        );
        assert_eq!(x.built[1].outputs[2].link, "openssl.dev-x86_64-linux");
        assert_eq!(outputs(&x.tests[0]), [(None, t.as_str())]);
        assert!(x.problems.is_empty(), "{:?}", x.problems);
        assert_eq!(x.status_of("gone"), Some(Status::NonExistent));

        let a = r.system("aarch64-linux").unwrap();
        assert_eq!(outputs(&a.built[0]), [(None, fa.as_str())]);
        // A failed attribute's outputs are not read, though x86_64's links
        // of the same name are there.
        assert_eq!(names(&a.failed), ["openssl"]);
        assert!(a.failed[0].outputs.is_empty());
        assert_eq!(r.problems().count(), 0);
    }

    // The example in nixpkgs-review's README.md (2.11.0 to 3.3.x: strings,
    // no `commit`), as `jq` printed it.
    const REPORT_README: &str = r#"{
  "checkout": "merge",
  "extra-nixpkgs-config": null,
  "pr": 340297,
  "result": {
    "aarch64-linux": {
      "blacklisted": [],
      "broken": [],
      "built": [
        "forecast"
      ],
      "failed": [],
      "non-existent": [],
      "tests": []
    },
    "x86_64-linux": {
      "blacklisted": [],
      "broken": [],
      "built": [
        "forecast"
      ],
      "failed": [],
      "non-existent": [],
      "tests": []
    }
  },
  "systems": [
    "x86_64-linux",
    "aarch64-linux"
  ]
}"#;

    #[test]
    fn per_system_layout_with_string_entries() {
        let (fa, fx) = (sp('a', "forecast-1.0"), sp('b', "forecast-1.0"));
        let dir = review_dir(
            REPORT_README,
            &[
                ("forecast-aarch64-linux", &fa),
                ("forecast-x86_64-linux", &fx),
            ],
        );
        let r = ReviewDir::open(dir.path()).unwrap();
        assert_eq!(r.layout, Layout::PerSystem);
        assert_eq!((r.pr, r.commit.as_deref()), (Some(340297), None));
        assert_eq!(r.extra_nixpkgs_config, None);
        let x = r.system("x86_64-linux").unwrap();
        assert_eq!(outputs(&x.built[0]), [(None, fx.as_str())]);
        let a = r.system("aarch64-linux").unwrap();
        assert_eq!(outputs(&a.built[0]), [(None, fa.as_str())]);
        assert!(a.built[0].aliases.is_empty());
    }

    /// 2.9.0 to 3.7.x list each output as an entry (`hello.dev`,
    /// evalAttrs.nix's `"${name}.${output}"`), with a link of its own: the
    /// link is that entry's, not an output of `hello`.
    #[test]
    fn per_output_entries_keep_their_own_links() {
        let report = r#"{
    "checkout": "merge",
    "commit": null,
    "extra-nixpkgs-config": null,
    "pr": null,
    "result": {
        "x86_64-linux": {
            "blacklisted": [],
            "broken": [],
            "built": [
                "hello",
                "hello.dev"
            ],
            "failed": [],
            "non-existent": [],
            "tests": []
        }
    },
    "systems": [
        "x86_64-linux"
    ]
}"#;
        let (h, hd) = (sp('a', "hello-2.12"), sp('b', "hello-2.12-dev"));
        let dir = review_dir(
            report,
            &[("hello-x86_64-linux", &h), ("hello.dev-x86_64-linux", &hd)],
        );
        let r = ReviewDir::open(dir.path()).unwrap();
        assert_eq!(r.pr, None);
        let x = &r.systems[0];
        assert_eq!(outputs(&x.built[0]), [(None, h.as_str())]);
        assert_eq!(outputs(&x.built[1]), [(None, hd.as_str())]);
        assert!(x.problems.is_empty());
    }

    // `Report.json` of 2.10.1 (nixpkgs_review/report.py before 598aa53):
    // one `system`, the lists at the top level, links `results/<attr>`.
    const REPORT_2_10: &str = r#"{
    "blacklisted": [],
    "broken": [
        "brokenpkg"
    ],
    "built": [
        "hello",
        "openssl"
    ],
    "checkout": "commit",
    "extra-nixpkgs-config": null,
    "failed": [
        "bad"
    ],
    "non-existent": [],
    "pr": 1234,
    "system": "x86_64-linux",
    "tests": []
}"#;

    #[test]
    fn single_system_layout() {
        let (h, o, od) = (
            sp('a', "hello-2.12"),
            sp('b', "openssl-3.0"),
            sp('c', "openssl-3.0-dev"),
        );
        let dir = review_dir(
            REPORT_2_10,
            &[("hello", &h), ("openssl", &o), ("openssl.dev", &od)],
        );
        let r = ReviewDir::open(dir.path()).unwrap();
        assert_eq!(r.layout, Layout::SingleSystem);
        assert_eq!(r.pr, Some(1234));
        assert_eq!(r.checkout.as_deref(), Some("commit"));
        assert_eq!(r.systems.len(), 1);
        let x = &r.systems[0];
        assert_eq!(x.system, "x86_64-linux");
        assert_eq!(names(&x.broken), ["brokenpkg"]);
        assert_eq!(names(&x.failed), ["bad"]);
        assert_eq!(outputs(&x.built[0]), [(None, h.as_str())]);
        assert_eq!(
            outputs(&x.built[1]),
            [(None, o.as_str()), (Some("dev"), od.as_str())]
        );
        assert!(x.problems.is_empty());
    }

    /// 2.6.0 to 2.10.0 spelled the key `non-existant` and had no
    /// `checkout` (report.py at 3a53a9a).
    #[test]
    fn single_system_layout_with_the_old_spelling() {
        let report = r#"{
    "blacklisted": [],
    "broken": [],
    "built": [],
    "failed": [],
    "non-existant": [
        "vanished"
    ],
    "pr": 5,
    "system": "aarch64-darwin",
    "tests": []
}"#;
        let dir = review_dir(report, &[]);
        let r = ReviewDir::open(dir.path()).unwrap();
        assert_eq!(r.checkout, None);
        assert_eq!(names(&r.systems[0].non_existent), ["vanished"]);
        assert_eq!(
            r.systems[0].status_of("vanished"),
            Some(Status::NonExistent)
        );
    }

    #[test]
    fn unknown_keys_are_tolerated() {
        let report = REPORT_2_10.replacen(
            "\"blacklisted\": [],",
            "\"blacklisted\": [], \"from-the-future\": {\"x\": [1, 2]},",
            1,
        );
        let h = sp('a', "hello-2.12");
        let o = sp('b', "openssl-3.0");
        let dir = review_dir(&report, &[("hello", &h), ("openssl", &o)]);
        let r = ReviewDir::open(dir.path()).unwrap();
        assert_eq!(names(&r.systems[0].built), ["hello", "openssl"]);
    }

    fn err(dir: &tempfile::TempDir) -> ReviewDirError {
        ReviewDir::open(dir.path()).expect_err("the directory should not read")
    }

    #[test]
    fn missing_report() {
        let dir = tempfile::tempdir().unwrap();
        let e = err(&dir);
        assert!(matches!(e, ReviewDirError::MissingReport { .. }), "{e}");
        assert!(e.to_string().contains("report.json is missing"), "{e}");
    }

    #[test]
    fn truncated_report_names_the_file() {
        let dir = review_dir(&REPORT_3_9[..REPORT_3_9.len() / 2], &[]);
        let e = err(&dir);
        assert!(matches!(e, ReviewDirError::Json { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("report.json is not valid JSON"), "{msg}");
        assert!(msg.contains("EOF while parsing"), "{msg}");
    }

    #[test]
    fn corrupt_report() {
        let dir = review_dir("\0\u{1}garbage{", &[]);
        assert!(matches!(err(&dir), ReviewDirError::Json { .. }));
        // Nesting deeper than serde_json's recursion limit is an error,
        // not a stack overflow.
        let deep = "[".repeat(100_000);
        let dir = review_dir(&deep, &[]);
        assert!(matches!(err(&dir), ReviewDirError::Json { .. }));
    }

    #[test]
    fn report_larger_than_the_cap_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        // Sparse: no 16 MiB written, and the reader must not read it either.
        let f = fs::File::create(dir.path().join("report.json")).unwrap();
        f.set_len(MAX_REPORT_SIZE + 1).unwrap();
        let e = err(&dir);
        match &e {
            ReviewDirError::TooLarge { size, max, .. } => {
                assert_eq!((*size, *max), (MAX_REPORT_SIZE + 1, MAX_REPORT_SIZE))
            }
            other => panic!("expected TooLarge, got {other}"),
        }
        assert!(e.to_string().contains("16777217 bytes"), "{e}");
    }

    #[test]
    fn wrong_shapes_name_the_key() {
        let cases = [
            ("[]", "not a JSON object"),
            ("{\"pr\": 1}", "neither `result`"),
            ("{\"pr\": \"abc\", \"system\": \"x\"}", "`pr` is \"abc\""),
            ("{\"pr\": -3, \"system\": \"x\"}", "`pr` is -3"),
            ("{\"system\": \"x\", \"built\": 3}", "`built` is not a list"),
            ("{\"system\": \"x\", \"failed\": [1]}", "`failed` holds 1"),
            ("{\"system\": 7}", "`system` is 7"),
            ("{\"result\": []}", "`result` is not an object"),
            (
                "{\"result\": {\"x86_64-linux\": {\"built\": [{\"aliases\": []}]}}}",
                "`result.x86_64-linux.built` holds",
            ),
            (
                "{\"result\": {}, \"systems\": [\"x86_64-linux\"]}",
                "lists x86_64-linux but `result` has no entry",
            ),
            ("{\"result\": {}, \"commit\": 12}", "`commit` is 12"),
        ];
        for (report, want) in cases {
            let dir = review_dir(report, &[]);
            let e = err(&dir);
            assert!(matches!(e, ReviewDirError::Shape { .. }), "{report}: {e}");
            let msg = e.to_string();
            assert!(msg.contains("report.json"), "{msg}");
            assert!(msg.contains(want), "{report}: {msg} lacks {want}");
        }
    }

    #[test]
    fn results_that_is_not_a_directory() {
        let dir = review_dir(REPORT_2_10, &[]);
        fs::write(dir.path().join("results"), "x").unwrap();
        let e = err(&dir);
        assert!(e.to_string().contains("results: is not a directory"), "{e}");
    }

    /// Bad links are problems of their attribute on their system; the rest
    /// of the report still reads.
    #[test]
    fn bad_links_are_recorded_problems() {
        let report = r#"{
    "pr": 7,
    "result": {
        "x86_64-linux": {
            "built": ["good", "missing", "loop", "outside", "inside", "badhash", "plain", "relative"],
            "failed": [],
            "tests": []
        }
    },
    "systems": ["x86_64-linux"]
}"#;
        let good = sp('a', "good-1");
        let dir = review_dir(
            report,
            &[
                // Dangling on this machine (the path does not exist): read
                // like any other, as on a CI artifact.
                ("good-x86_64-linux", &good),
                ("loop-x86_64-linux", "loop-x86_64-linux"),
                ("outside-x86_64-linux", "/etc/passwd"),
                ("inside-x86_64-linux", &format!("{good}/bin/good")),
                (
                    "badhash-x86_64-linux",
                    "/nix/store/eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee-x",
                ),
                ("relative-x86_64-linux", "../results/good-x86_64-linux"),
            ],
        );
        fs::write(dir.path().join("results/plain-x86_64-linux"), "").unwrap();
        let r = ReviewDir::open(dir.path()).unwrap();
        let x = &r.systems[0];
        assert_eq!(outputs(&x.built[0]), [(None, good.as_str())]);
        for a in &x.built[1..] {
            assert!(a.outputs.is_empty(), "{}", a.name);
        }
        let mut got: Vec<(String, String)> = x
            .problems
            .iter()
            .map(|p| {
                let kind = match &p.kind {
                    LinkProblemKind::Missing => "missing".to_string(),
                    LinkProblemKind::NotASymlink => "not a symlink".to_string(),
                    LinkProblemKind::NotAStorePath { target, .. } => format!("-> {target}"),
                    other => other.to_string(),
                };
                (p.attribute.clone(), kind)
            })
            .collect();
        got.sort();
        let bad_target = |a: &str, t: &str| (a.to_string(), format!("-> {t}"));
        let mut want = vec![
            ("missing".to_string(), "missing".to_string()),
            bad_target("loop", "loop-x86_64-linux"),
            bad_target("outside", "/etc/passwd"),
            bad_target("inside", &format!("{good}/bin/good")),
            bad_target("badhash", "/nix/store/eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee-x"),
            ("plain".to_string(), "not a symlink".to_string()),
            bad_target("relative", "../results/good-x86_64-linux"),
        ];
        want.sort();
        assert_eq!(got, want);
        let missing = x
            .problems
            .iter()
            .find(|p| p.attribute == "missing")
            .unwrap();
        assert_eq!(
            missing.link,
            dir.path().join("results/missing-x86_64-linux")
        );
        assert!(
            missing
                .to_string()
                .contains("missing-x86_64-linux: missing")
        );
        let outside = x
            .problems
            .iter()
            .find(|p| p.attribute == "outside")
            .unwrap();
        assert!(
            outside
                .to_string()
                .contains("not inside the store directory"),
            "{outside}"
        );
        // Another store directory makes the good link bad too.
        let r = ReviewDir::open_with_store_dir(dir.path(), "/gnu/store").unwrap();
        assert_eq!(r.systems[0].problems.len(), 8);
    }

    /// Attribute names come from the report; they are looked up in the
    /// listing of `results/`, never joined to it, so `../` leads nowhere.
    #[test]
    fn attribute_names_cannot_leave_results() {
        let report = r#"{"system": "x", "built": ["../outside", "a/b"]}"#;
        let dir = review_dir(report, &[("ok", &sp('a', "ok"))]);
        symlink(sp('b', "evil"), dir.path().join("outside")).unwrap();
        let r = ReviewDir::open(dir.path()).unwrap();
        let x = &r.systems[0];
        assert!(x.built.iter().all(|a| a.outputs.is_empty()));
        assert_eq!(x.problems.len(), 2);
        assert!(
            x.problems
                .iter()
                .all(|p| p.kind == LinkProblemKind::Missing)
        );
    }

    /// An attribute's name, status and (output, path) pairs.
    type Outputs = (String, Status, Vec<(String, String)>);

    fn reviewed_outputs(r: &ReviewDir, system: &str) -> Vec<Outputs> {
        r.reviewed(system)
            .unwrap()
            .into_iter()
            .map(|a| {
                let outs = a
                    .outputs
                    .iter()
                    .map(|(o, p)| (o.clone(), p.as_str().to_string()))
                    .collect();
                (a.name, a.status, outs)
            })
            .collect()
    }

    /// 2.6.0 to 2.8.x (report.py at 2.6.0, `Report.json` and
    /// `write_error_logs`): one link per attribute, to `"${pkg}"`, the
    /// default output, here `bin`; no `extra-nixpkgs-config`.
    #[test]
    fn version_2_6_links_the_default_output() {
        let report = r#"{
    "blacklisted": [],
    "broken": [
        "gone"
    ],
    "built": [
        "tool"
    ],
    "failed": [],
    "non-existant": [],
    "pr": 12,
    "system": "x86_64-linux",
    "tests": []
}"#;
        let bin = sp('a', "tool-1.0-bin");
        let dir = review_dir(report, &[("tool", &bin)]);
        let r = ReviewDir::open(dir.path()).unwrap();
        assert_eq!(r.version, Version::V2_6);
        assert_eq!(
            reviewed_outputs(&r, "x86_64-linux"),
            [
                ("gone".to_string(), Status::Broken, vec![]),
                (
                    "tool".to_string(),
                    Status::Built,
                    vec![("bin".to_string(), bin.clone())]
                ),
            ]
        );
        assert_eq!(r.reviewed("aarch64-linux"), None);
    }

    /// 2.9.0 to 2.10.x (evalAttrs.nix at 2.9.0: an entry per output,
    /// `${name}.${output}`): the entries of one attribute are one
    /// [`Reviewed`], a failed output making it failed; a nested attribute
    /// whose last name is no output stays itself.
    #[test]
    fn version_2_9_groups_per_output_entries() {
        let report = r#"{
    "blacklisted": [],
    "broken": [],
    "built": [
        "lib1",
        "lib1.dev",
        "lib2",
        "python3Packages.foo",
        "split.bin"
    ],
    "checkout": "merge",
    "extra-nixpkgs-config": null,
    "failed": [
        "lib2.dev"
    ],
    "non-existent": [],
    "pr": 7,
    "system": "x86_64-linux",
    "tests": []
}"#;
        let (l, ld, f, sb, l2) = (
            sp('a', "lib1-1.0"),
            sp('b', "lib1-1.0-dev"),
            sp('c', "python3.12-foo-1.0"),
            sp('d', "split-1.0-bin"),
            sp('f', "lib2-1.0"),
        );
        let dir = review_dir(
            report,
            &[
                ("lib1", &l),
                ("lib1.dev", &ld),
                ("python3Packages.foo", &f),
                ("split.bin", &sb),
                ("lib2", &l2),
            ],
        );
        let r = ReviewDir::open(dir.path()).unwrap();
        assert_eq!(r.version, Version::V2_9);
        let got = reviewed_outputs(&r, "x86_64-linux");
        let find = |n: &str| got.iter().find(|(a, _, _)| a == n).unwrap().clone();
        assert_eq!(
            find("lib1"),
            (
                "lib1".to_string(),
                Status::Built,
                vec![
                    ("dev".to_string(), ld.clone()),
                    ("out".to_string(), l.clone())
                ]
            )
        );
        assert_eq!(find("lib2").1, Status::Failed);
        assert_eq!(find("lib2").2, vec![("out".to_string(), l2.clone())]);
        assert_eq!(
            find("python3Packages.foo").2,
            vec![("out".to_string(), f.clone())]
        );
        // `split` has no `out` entry: `bin` is an output name all the same.
        assert_eq!(find("split").2, vec![("bin".to_string(), sb.clone())]);
        assert_eq!(got.len(), 4, "{got:?}");
    }

    #[test]
    fn versions_are_told_by_their_keys() {
        let dir = review_dir(REPORT_README, &[]);
        assert_eq!(ReviewDir::open(dir.path()).unwrap().version, Version::V2_11);
        let dir = review_dir(REPORT_3_9, &[]);
        assert_eq!(ReviewDir::open(dir.path()).unwrap().version, Version::V3_8);
        let dir = review_dir(REPORT_2_10, &[]);
        assert_eq!(ReviewDir::open(dir.path()).unwrap().version, Version::V2_9);
    }

    #[test]
    fn no_results_directory_when_nothing_built() {
        let report = r#"{"system": "x86_64-linux", "built": [], "failed": ["f"]}"#;
        let dir = review_dir(report, &[]);
        let r = ReviewDir::open(dir.path()).unwrap();
        assert_eq!(names(&r.systems[0].failed), ["f"]);
        assert_eq!(r.problems().count(), 0);
    }
}
