//! What a run observes of its stores: warnings to print and, for stores
//! that download, counters for progress. Sources write to a [`RunLog`]
//! they are given when opened; the command layer reads it. Keeping this out
//! of the source traits means a source that downloads nothing and never
//! warns has nothing to implement, and a source built over several stores
//! hands each of them the same log.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The shared log of one run (see the module docs). Cheap to share:
/// sources hold it in an `Arc`.
#[derive(Debug, Default)]
pub struct RunLog {
    warnings: Mutex<Vec<String>>,
    downloads: Mutex<Vec<Arc<Downloads>>>,
}

/// What one store that downloads has fetched so far in this run. The
/// counters are updated as requests are answered and bytes arrive, from
/// any thread.
#[derive(Debug, Default)]
pub struct Downloads {
    /// The store, as it describes itself (its URL).
    pub store: String,
    /// narinfo requests answered.
    pub narinfos: AtomicU64,
    /// Listing requests answered.
    pub listings: AtomicU64,
    /// NAR requests answered.
    pub nars: AtomicU64,
    /// Body bytes received, as sent (before any decoding). An `Arc` of its
    /// own so that a NAR's reader can count into it after the source has
    /// handed the stream over.
    pub bytes: Arc<AtomicU64>,
}

impl RunLog {
    /// Records a non-fatal problem met while opening or reading a store.
    pub fn warn(&self, message: impl Into<String>) {
        lock(&self.warnings).push(message.into());
    }

    /// The warnings recorded since the last call, in order, taken from the
    /// log: what prints them prints each once however often it is called.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.warnings))
    }

    /// Every warning so far, in the order they were recorded.
    pub fn warnings(&self) -> Vec<String> {
        lock(&self.warnings).clone()
    }

    /// New download counters for `store`, counted by [`RunLog::fetched`]
    /// and listed by [`RunLog::downloads`] from now on. A store that
    /// downloads takes one when it opens.
    pub fn downloads_of(&self, store: &str) -> Arc<Downloads> {
        let d = Arc::new(Downloads {
            store: store.to_string(),
            ..Downloads::default()
        });
        lock(&self.downloads).push(Arc::clone(&d));
        d
    }

    /// Each downloading store's counters, in the order the stores opened:
    /// progress per store.
    pub fn downloads(&self) -> Vec<Arc<Downloads>> {
        lock(&self.downloads).clone()
    }

    /// NARs and bytes (as sent, compressed) fetched so far by every store
    /// of the run; `None` when no store downloads (there is then nothing
    /// to show).
    pub fn fetched(&self) -> Option<(u64, u64)> {
        let all = lock(&self.downloads);
        if all.is_empty() {
            return None;
        }
        Some(all.iter().fold((0u64, 0u64), |(n, b), d| {
            (
                n.saturating_add(d.nars.load(Ordering::Relaxed)),
                b.saturating_add(d.bytes.load(Ordering::Relaxed)),
            )
        }))
    }
}

/// A poisoned lock only means another thread panicked while pushing; the
/// list itself is whole.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetched_sums_the_stores_that_download_and_is_none_without_one() {
        let log = RunLog::default();
        assert_eq!(log.fetched(), None);
        let a = log.downloads_of("http://a");
        let b = log.downloads_of("http://b");
        a.nars.fetch_add(2, Ordering::Relaxed);
        a.bytes.fetch_add(100, Ordering::Relaxed);
        b.nars.fetch_add(1, Ordering::Relaxed);
        b.bytes.fetch_add(u64::MAX, Ordering::Relaxed);
        assert_eq!(log.fetched(), Some((3, u64::MAX)));
        let stores: Vec<String> = log.downloads().iter().map(|d| d.store.clone()).collect();
        assert_eq!(stores, ["http://a", "http://b"]);
    }

    #[test]
    fn warnings_keep_their_order() {
        let log = RunLog::default();
        log.warn("first");
        log.warn(String::from("second"));
        assert_eq!(log.warnings(), ["first", "second"]);
    }
}
