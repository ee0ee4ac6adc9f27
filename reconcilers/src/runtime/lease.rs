//! Where the runtime claims its leases: the store (every deployment), or
//! memory (tests, and tools that run one process with no database).

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use play_model::model::lease::Lease;
use play_model::time::{self, Timestamp};
use play_store::Store;
use play_store::leases;
use tokio::time::Instant;

/// Claim, renew and release of per-object leases, with the semantics of
/// [`play_store::leases`]: a claim succeeds when the lease is free,
/// expired or already the claimant's, and always carries a new, higher
/// fencing token; an expired lease cannot be renewed.
#[async_trait::async_trait]
pub trait LeaseStore: Send + Sync + Debug + 'static {
    async fn claim(
        &self,
        reconciler: &'static str,
        object_id: i64,
        owner: &str,
        duration: Duration,
    ) -> play_core::Result<Option<Lease>>;

    /// Whether the lease is still held, now until `duration` from now.
    async fn renew(&self, lease: &Lease, duration: Duration) -> play_core::Result<bool>;

    async fn release(&self, lease: &Lease) -> play_core::Result<()>;

    /// When the current lease of `object_id` expires, if there is one: a
    /// claimant that found it busy retries then at the latest.
    async fn expires_at(&self, reconciler: &'static str, object_id: i64) -> play_core::Result<Option<Timestamp>>;
}

/// Leases in the `reconcile_leases` table, shared by every replica on the
/// database.
#[async_trait::async_trait]
impl LeaseStore for Store {
    async fn claim(
        &self,
        reconciler: &'static str,
        object_id: i64,
        owner: &str,
        duration: Duration,
    ) -> play_core::Result<Option<Lease>> {
        leases::claim(self, reconciler, object_id, owner, time::now(), duration).await
    }

    async fn renew(&self, lease: &Lease, duration: Duration) -> play_core::Result<bool> {
        Ok(leases::renew(self, lease, time::now(), duration).await?.is_some())
    }

    async fn release(&self, lease: &Lease) -> play_core::Result<()> {
        leases::release(self, lease).await.map(drop)
    }

    async fn expires_at(&self, reconciler: &'static str, object_id: i64) -> play_core::Result<Option<Timestamp>> {
        leases::expires_at(self, reconciler, object_id).await
    }
}

/// Leases in this process's memory, timed by tokio's clock (so paused-time
/// tests can expire them). Clones share one table: two runtimes given clones
/// behave like two replicas on one database.
#[derive(Clone, Debug, Default)]
pub struct MemoryLeases {
    rows: Arc<Mutex<HashMap<(String, i64), MemoryRow>>>,
}

#[derive(Debug)]
struct MemoryRow {
    owner: String,
    token: i64,
    /// `None` once released.
    expires: Option<Instant>,
}

impl MemoryLeases {
    pub fn new() -> Self {
        Self::default()
    }

    fn rows(&self) -> std::sync::MutexGuard<'_, HashMap<(String, i64), MemoryRow>> {
        // Every update below is a whole-row assignment: never half-written.
        self.rows.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn matches(row: &MemoryRow, lease: &Lease) -> bool {
        row.owner == lease.owner && row.token == lease.token
    }
}

#[async_trait::async_trait]
impl LeaseStore for MemoryLeases {
    async fn claim(
        &self,
        reconciler: &'static str,
        object_id: i64,
        owner: &str,
        duration: Duration,
    ) -> play_core::Result<Option<Lease>> {
        let now = Instant::now();
        let mut rows = self.rows();
        let row = rows.entry((reconciler.to_owned(), object_id)).or_insert(MemoryRow {
            owner: owner.to_owned(),
            token: 0,
            expires: None,
        });
        let free = row.expires.is_none_or(|expires| expires <= now) || row.owner == owner;
        if !free {
            return Ok(None);
        }
        *row = MemoryRow { owner: owner.to_owned(), token: row.token + 1, expires: Some(now + duration) };
        let expires_at = time::now() + chrono::Duration::from_std(duration).unwrap_or(chrono::Duration::zero());
        Ok(Some(Lease {
            reconciler: reconciler.to_owned(),
            object_id,
            owner: owner.to_owned(),
            token: row.token,
            expires_at,
        }))
    }

    async fn renew(&self, lease: &Lease, duration: Duration) -> play_core::Result<bool> {
        let now = Instant::now();
        let mut rows = self.rows();
        let Some(row) = rows.get_mut(&(lease.reconciler.clone(), lease.object_id)) else { return Ok(false) };
        if !Self::matches(row, lease) || row.expires.is_none_or(|expires| expires <= now) {
            return Ok(false);
        }
        row.expires = Some(now + duration);
        Ok(true)
    }

    async fn release(&self, lease: &Lease) -> play_core::Result<()> {
        let mut rows = self.rows();
        if let Some(row) = rows.get_mut(&(lease.reconciler.clone(), lease.object_id))
            && Self::matches(row, lease)
        {
            row.expires = None;
        }
        Ok(())
    }

    async fn expires_at(&self, reconciler: &'static str, object_id: i64) -> play_core::Result<Option<Timestamp>> {
        let rows = self.rows();
        let Some(expires) = rows.get(&(reconciler.to_owned(), object_id)).and_then(|row| row.expires) else {
            return Ok(None);
        };
        let left = expires.saturating_duration_since(Instant::now());
        Ok(Some(time::now() + chrono::Duration::from_std(left).unwrap_or(chrono::Duration::zero())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn memory_leases_follow_the_store_semantics() {
        let leases = MemoryLeases::new();
        let ttl = Duration::from_secs(60);
        let a = leases.claim("t", 1, "a", ttl).await.unwrap().unwrap();
        assert!(leases.claim("t", 1, "b", ttl).await.unwrap().is_none());
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(leases.renew(&a, ttl).await.unwrap());
        tokio::time::advance(Duration::from_secs(59)).await;
        assert!(leases.claim("t", 1, "b", ttl).await.unwrap().is_none(), "renewed");
        tokio::time::advance(Duration::from_secs(2)).await;
        let b = leases.claim("t", 1, "b", ttl).await.unwrap().unwrap();
        assert!(b.token > a.token);
        assert!(!leases.renew(&a, ttl).await.unwrap(), "taken over");
        leases.release(&a).await.unwrap();
        assert!(leases.claim("t", 1, "a", ttl).await.unwrap().is_none(), "a stale release changes nothing");
        leases.release(&b).await.unwrap();
        let again = leases.claim("t", 1, "a", ttl).await.unwrap().unwrap();
        assert!(again.token > b.token);
    }
}
