//! Verified API keys in memory, so that authentication does not read the
//! store on every request (issue #16).
//!
//! Invariants:
//! - an entry is keyed by the token's peppered MAC (never the token),
//!   holds what the store said about the key, and lives at most [`TTL`];
//!   expiry (`expires_at`) is checked on every use, cached or not;
//! - a key deleted through this replica is forgotten before the delete
//!   answers, so it is refused on the very next request;
//! - every deletion bumps the store's revocation generation in its own
//!   transaction; a replica reads the generation at most every
//!   [`GENERATION_INTERVAL`] (lazily, on a request, one reader at a time)
//!   and drops its whole cache when it moved, so a key revoked on another
//!   replica is refused there within a second;
//! - the cache is bounded ([`MAX_ENTRIES`]; full, it is cleared: a cache,
//!   not a store) and never holds an unknown or invalid token (no negative
//!   caching: a typo costs the store a read, as before);
//! - key use (`last_used_at`) is recorded at most once a minute per key and
//!   written in batches at most every [`FLUSH_INTERVAL`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use play_model::time::Timestamp;
use play_store::{Store, keys};

use crate::principal::Principal;

/// How long a verified key is trusted without the store.
pub const TTL: Duration = Duration::from_secs(30);
/// How often a replica reads the revocation generation, at most.
pub const GENERATION_INTERVAL: Duration = Duration::from_millis(250);
/// How often batched key uses are written, at most.
pub const FLUSH_INTERVAL: Duration = Duration::from_secs(5);
/// The most keys held; beyond, the cache starts over.
pub const MAX_ENTRIES: usize = 10_000;
/// Key use is recorded at most this often per key.
const USE_RESOLUTION: chrono::Duration = chrono::Duration::seconds(60);

#[derive(Debug)]
struct Entry {
    principal: Principal,
    cached_at: Instant,
}

#[derive(Debug)]
struct Inner {
    entries: HashMap<[u8; 32], Entry>,
    /// The revocation generation the entries were verified under.
    generation: Option<i64>,
    checked_at: Option<Instant>,
    /// Key id -> when it was last recorded as used (or read so).
    recorded: HashMap<i64, Timestamp>,
    /// Uses not written yet.
    pending: HashMap<i64, Timestamp>,
    flushed_at: Instant,
}

/// See the [module documentation](self).
#[derive(Debug)]
pub struct KeyCache {
    inner: Mutex<Inner>,
    /// Held while one request reads the generation: the others go on.
    refreshing: tokio::sync::Mutex<()>,
}

impl Default for KeyCache {
    fn default() -> Self {
        KeyCache {
            inner: Mutex::new(Inner {
                entries: HashMap::new(),
                generation: None,
                checked_at: None,
                recorded: HashMap::new(),
                pending: HashMap::new(),
                flushed_at: Instant::now(),
            }),
            refreshing: tokio::sync::Mutex::new(()),
        }
    }
}

impl KeyCache {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind.
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reads the store's revocation generation if it is due, dropping the
    /// cache when it moved. A failed read drops the cache too (the next
    /// requests verify against the store, which reports its own failure).
    pub async fn refresh(&self, store: &Store) {
        let due = self.inner().checked_at.is_none_or(|at| at.elapsed() >= GENERATION_INTERVAL);
        if !due {
            return;
        }
        let Ok(_reading) = self.refreshing.try_lock() else { return };
        let read = keys::revocation_generation(store).await;
        let mut inner = self.inner();
        inner.checked_at = Some(Instant::now());
        match read {
            Ok(generation) if inner.generation == Some(generation) => {}
            Ok(generation) => {
                inner.entries.clear();
                inner.generation = Some(generation);
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the key revocation generation; the key cache is dropped");
                inner.entries.clear();
                inner.generation = None;
            }
        }
    }

    /// The cached principal of the token whose MAC
    /// (`TokenPepper::mac`) is `digest`, if fresh.
    pub fn get(&self, digest: &[u8; 32]) -> Option<Principal> {
        let mut inner = self.inner();
        let fresh = inner.entries.get(digest).is_some_and(|e| e.cached_at.elapsed() < TTL);
        if !fresh {
            inner.entries.remove(digest);
            return None;
        }
        inner.entries.get(digest).map(|e| e.principal.clone())
    }

    /// Caches a key the store just verified, with its recorded last use.
    /// Only under a known generation: an entry made while the generation
    /// is unknown could outlive a revocation it never saw.
    pub fn insert(&self, digest: [u8; 32], principal: Principal, last_used_at: Option<Timestamp>) {
        let mut inner = self.inner();
        if let Some(at) = last_used_at {
            let recorded = inner.recorded.entry(principal.key_id).or_insert(at);
            *recorded = (*recorded).max(at);
        }
        if inner.generation.is_none() {
            return;
        }
        if inner.entries.len() >= MAX_ENTRIES {
            inner.entries.clear();
        }
        inner.entries.insert(digest, Entry { principal, cached_at: Instant::now() });
    }

    /// Forgets every cached token of `key_id` (deleted through this
    /// replica).
    pub fn forget(&self, key_id: i64) {
        let mut inner = self.inner();
        inner.entries.retain(|_, e| e.principal.key_id != key_id);
        inner.recorded.remove(&key_id);
        inner.pending.remove(&key_id);
    }

    /// Notes that `key_id` was used at `now`; returns the uses to write
    /// when a batch is due.
    pub fn note_use(&self, key_id: i64, now: Timestamp) -> Option<Vec<(i64, Timestamp)>> {
        let mut inner = self.inner();
        let due = inner.recorded.get(&key_id).is_none_or(|at| now - *at >= USE_RESOLUTION);
        if due {
            inner.recorded.insert(key_id, now);
            inner.pending.insert(key_id, now);
        }
        if inner.pending.is_empty() || inner.flushed_at.elapsed() < FLUSH_INTERVAL {
            return None;
        }
        inner.flushed_at = Instant::now();
        // Bounded like the entries: the ids of keys used since the last
        // flush.
        if inner.recorded.len() > MAX_ENTRIES {
            inner.recorded.clear();
        }
        Some(inner.pending.drain().collect())
    }

    /// The uses not written yet (for a flush at shutdown or in tests).
    pub fn take_pending(&self) -> Vec<(i64, Timestamp)> {
        self.inner().pending.drain().collect()
    }
}

/// Writes `uses` in the background; a failure is logged (the next use of
/// the key, a minute later, records it again).
pub fn flush(store: &Store, uses: Vec<(i64, Timestamp)>) {
    let store = store.clone();
    tokio::spawn(async move {
        if let Err(e) = keys::touch_many(&store, &uses).await {
            tracing::warn!(keys = uses.len(), error = %e, "could not record key use");
        }
    });
}

#[cfg(test)]
mod tests {

    use super::*;
    use play_model::time;

    fn principal(key_id: i64) -> Principal {
        Principal {
            account_id: 1,
            user_id: 1,
            key_id,
            scopes: play_model::scopes::ScopeSet::all(),
            expires_at: None,
            session_id: None,
        }
    }

    fn with_generation(generation: i64) -> KeyCache {
        let cache = KeyCache::default();
        cache.inner().generation = Some(generation);
        cache
    }

    #[test]
    fn a_key_is_cached_under_a_known_generation_and_forgotten_on_delete() {
        let unknown = KeyCache::default();
        unknown.insert([1; 32], principal(1), None);
        assert!(unknown.get(&[1; 32]).is_none(), "cached before the generation was read");
        let cache = with_generation(3);
        cache.insert([1; 32], principal(1), None);
        cache.insert([2; 32], principal(2), None);
        assert_eq!(cache.get(&[1; 32]).unwrap().key_id, 1);
        cache.forget(1);
        assert!(cache.get(&[1; 32]).is_none());
        assert_eq!(cache.get(&[2; 32]).unwrap().key_id, 2);
    }

    #[test]
    fn an_old_entry_is_not_served() {
        let cache = with_generation(0);
        cache.insert([0; 32], principal(1), None);
        cache.inner().entries.get_mut(&[0; 32]).unwrap().cached_at = Instant::now() - TTL;
        assert!(cache.get(&[0; 32]).is_none());
        assert!(cache.inner().entries.is_empty(), "the stale entry is dropped");
    }

    #[test]
    fn uses_are_recorded_once_a_minute_and_flushed_in_batches() {
        let cache = with_generation(0);
        let t0 = time::now();
        cache.insert([0; 32], principal(1), Some(t0 - chrono::Duration::seconds(10)));
        // Used 10 s ago: not again yet.
        assert!(cache.note_use(1, t0).is_none());
        assert!(cache.take_pending().is_empty());
        // Another key, never used: pending, written once a batch is due.
        assert!(cache.note_use(2, t0).is_none(), "the first batch waits for the interval");
        cache.inner().flushed_at = Instant::now() - FLUSH_INTERVAL;
        assert_eq!(cache.note_use(1, t0 + chrono::Duration::seconds(61)).unwrap().len(), 2);
        assert!(cache.note_use(2, t0 + chrono::Duration::seconds(62)).is_none(), "recorded a second ago");
    }

    #[tokio::test]
    async fn a_moved_generation_drops_the_cache() {
        let db = play_store::testing::store().await;
        let cache = KeyCache::default();
        cache.refresh(&db.store).await;
        cache.insert([0; 32], principal(1), None);
        assert!(cache.get(&[0; 32]).is_some());
        sqlx::query("UPDATE api_key_revocations SET generation = generation + 1")
            .execute(db.store.pool())
            .await
            .unwrap();
        cache.refresh(&db.store).await;
        assert!(cache.get(&[0; 32]).is_some(), "not due yet: read at most every interval");
        cache.inner().checked_at = Some(Instant::now() - GENERATION_INTERVAL);
        cache.refresh(&db.store).await;
        assert!(cache.get(&[0; 32]).is_none());
    }
}
