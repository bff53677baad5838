//! Opening what a run reads as one library call: the stores named (each
//! `--store`, Nix's `substituters` or nix.conf's for `auto`) with the
//! signature policy Nix would apply (trusted keys given or from nix.conf,
//! `require-sigs`), layered in Nix's order of priority when there are
//! several. The command line, the survey and anything after call this, so
//! they open the same stores the same way.
//!
//! It knows nothing of flags: the caller says what the user named in a
//! [`StoreSpec`] and maps an [`OpenError`] to its own words.

use std::sync::{Arc, OnceLock};

use crate::error::Error;
use crate::source::signature::{SigPolicy, TrustedKeys};
use crate::source::{self, OpenOptions, RunLog, StoreSource};
use nix_heft_format::nix_conf::{ConfEnv, NixConf};

/// What a run names to read, as the user said it.
#[derive(Debug, Clone, Default)]
pub struct StoreSpec {
    /// The stores named one by one, in order (Nix's `--store`, repeated);
    /// none: the local store, unless `substituters` names some.
    pub stores: Vec<String>,
    /// Further stores as Nix's `substituters` setting spells them
    /// (space-separated URLs), or `auto` for nix.conf's own list, ordered
    /// by each cache's priority as Nix orders it.
    pub substituters: Option<String>,
    /// Trusted public keys (`name:base64`, space-separated); `None` takes
    /// nix.conf's `trusted-public-keys` and `extra-trusted-public-keys`.
    pub trusted_public_keys: Option<String>,
    /// Accept unsigned narinfos as nix.conf's `require-sigs = false` does.
    pub no_require_sigs: bool,
    /// Credentials, refreshing, verification and connection limits;
    /// `signatures` and `log` are set by the [`Opener`].
    pub options: OpenOptions,
}

/// Why the stores named could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The trusted keys given do not parse (a caller's usage error).
    #[error("{0}")]
    BadTrustedKeys(String),
    /// `substituters` names no store (nix.conf's list is empty for `auto`).
    #[error("no store is named")]
    NoStore,
    /// A store that could not be opened, or nix.conf that could not be read.
    #[error(transparent)]
    Store(#[from] Error),
}

/// Opens the stores of a [`StoreSpec`], sharing one signature policy (so
/// that its one warning is given once whatever the number of stores).
#[derive(Debug, Clone)]
pub struct Opener {
    spec: StoreSpec,
    policy: Arc<OnceLock<Arc<SigPolicy>>>,
}

impl Opener {
    /// An opener for `spec`; nothing is read until a store is opened.
    pub fn new(spec: StoreSpec) -> Self {
        Opener {
            spec,
            policy: Default::default(),
        }
    }

    /// What this opener was given.
    pub fn spec(&self) -> &StoreSpec {
        &self.spec
    }

    /// The run's signature policy: the keys given, else nix.conf's
    /// `trusted-public-keys` + `extra-trusted-public-keys` (read as Nix
    /// reads them); required unless `no_require_sigs` or nix.conf's
    /// `require-sigs = false`. nix.conf is read only when the spec leaves
    /// something to it.
    pub fn policy(&self) -> std::result::Result<Arc<SigPolicy>, OpenError> {
        if let Some(p) = self.policy.get() {
            return Ok(Arc::clone(p));
        }
        let conf =
            || NixConf::load(&ConfEnv::from_process()).map_err(|e| Error::NixConf(e.to_string()));
        let keys = match &self.spec.trusted_public_keys {
            Some(list) => TrustedKeys::parse(list.split_ascii_whitespace())
                .map_err(|e| OpenError::BadTrustedKeys(e.to_string()))?,
            None => TrustedKeys::parse(conf()?.trusted_public_keys())
                .map_err(|e| Error::NixConf(format!("trusted-public-keys: {e}")))?,
        };
        let require = !self.spec.no_require_sigs
            && conf()?
                .require_sigs()
                .map_err(|e| Error::NixConf(e.to_string()))?;
        let p = Arc::new(SigPolicy::new(keys, require));
        Ok(Arc::clone(self.policy.get_or_init(|| p)))
    }

    /// Opens one store (`None`: the local store) with the run's signature
    /// policy, writing to `log`. When the policy cannot be made (a nix.conf
    /// that cannot be read, a bad key in it), that is the error only for a
    /// store that checks narinfos: a local store, chroot store or
    /// path-info JSON needs no key, and opens. Keys given that do not
    /// parse are an error whatever the store.
    pub fn open_one(
        &self,
        spec: Option<&str>,
        log: Arc<RunLog>,
    ) -> std::result::Result<Box<dyn StoreSource>, OpenError> {
        let policy = self.policy();
        if let Err(e @ OpenError::BadTrustedKeys(_)) = policy {
            return Err(e);
        }
        let opts = OpenOptions {
            log,
            signatures: policy.as_ref().ok().cloned(),
            ..self.spec.options.clone()
        };
        let store = source::open_with(spec, &opts)?;
        match policy {
            Err(e) if store.has_provenance() => Err(e),
            _ => Ok(store),
        }
    }

    /// The one local or chroot store named, as itself: what needs the
    /// store's database and state directory (`roots`). Several stores,
    /// substituters or a store of another kind are an
    /// [`Error::UnsupportedStore`].
    pub fn open_local(&self) -> std::result::Result<source::LocalStore, OpenError> {
        let s = &self.spec;
        let named = s.stores.first().map(String::as_str);
        let refuse = |reason: &str| {
            OpenError::Store(Error::UnsupportedStore {
                spec: named.unwrap_or("local").to_string(),
                reason: reason.to_string(),
            })
        };
        if s.stores.len() > 1 || s.substituters.is_some() {
            return Err(refuse("this reads one local or chroot store, not several"));
        }
        let root = source::local_root(named).ok_or_else(|| {
            refuse("this reads a local or chroot store (its database and state directory)")
        })?;
        let db = root.join("nix/var/nix/db/db.sqlite");
        if std::fs::symlink_metadata(&db).is_err() {
            return Err(OpenError::Store(Error::NoLocalStore(db)));
        }
        Ok(source::LocalStore::open(&root, Default::default())?.with_verify(s.options.verify))
    }

    /// Every store named, read as one: a single store as itself, several
    /// as a [`source::Layered`] (the stores named first, in order, then
    /// the substituters; for `auto`, nix.conf's list by priority, lower
    /// first, a URL's `?priority=N` overriding the cache's own, as Nix
    /// orders them). All are opened at once (each cache's
    /// `nix-cache-info` is a round trip) and share one [`RunLog`], a new one.
    pub fn open(&self) -> std::result::Result<Box<dyn StoreSource>, OpenError> {
        self.open_logged(Default::default())
    }

    /// [`Opener::open`] writing to `log`: a program that opens several
    /// stores in a run (diff's BEFORE and AFTER) gives them one log, and
    /// prints its warnings, each once, in one place.
    pub fn open_logged(
        &self,
        log: Arc<RunLog>,
    ) -> std::result::Result<Box<dyn StoreSource>, OpenError> {
        let s = &self.spec;
        let auto = s.substituters.as_deref().map(str::trim) == Some("auto");
        let subs = match &s.substituters {
            None => Vec::new(),
            Some(_) if auto => NixConf::load(&ConfEnv::from_process())
                .map_err(|e| Error::NixConf(e.to_string()))?
                .substituters(),
            Some(list) => list.split_ascii_whitespace().map(str::to_string).collect(),
        };
        if s.stores.len() + subs.len() <= 1 {
            let one = s.stores.first().or(subs.first());
            if s.substituters.is_some() && one.is_none() {
                return Err(OpenError::NoStore);
            }
            return self.open_one(one.map(String::as_str), log);
        }
        let open = |spec: &String| -> std::result::Result<source::Layer, OpenError> {
            Ok(source::Layer {
                source: self.open_one(Some(spec), Arc::clone(&log))?,
                label: spec.clone(),
            })
        };
        let mut opened: Vec<source::Layer> = std::thread::scope(|sc| {
            let running: Vec<_> = s
                .stores
                .iter()
                .chain(&subs)
                .map(|spec| sc.spawn(|| open(spec)))
                .collect();
            running
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect::<std::result::Result<Vec<_>, OpenError>>()
        })?;
        let mut from_subs = opened.split_off(s.stores.len());
        let mut layers = opened;
        if auto {
            // Stable: equal priorities keep nix.conf's order. No Priority
            // is 0, Nix's default.
            from_subs.sort_by_key(|l| url_priority(&l.label).or(l.source.priority()).unwrap_or(0));
        }
        layers.extend(from_subs);
        Ok(Box::new(source::Layered::new(
            layers,
            log,
            source::http_connections(s.options.http_connections),
        )?))
    }
}

/// The `priority=N` of a store URL's query, which overrides the cache's
/// own `Priority` in Nix.
fn url_priority(spec: &str) -> Option<u64> {
    let (_, query) = spec.split_once('?')?;
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix("priority="))
        .and_then(|v| v.parse().ok())
}
