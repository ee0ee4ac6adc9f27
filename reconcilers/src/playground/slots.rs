//! Bounds on the work that holds a repository's files in play's memory:
//! image builds and source-volume fills (issue #27, item 6).
//!
//! A build context or a source tree is fetched from the repository, held
//! while it is filtered and sent to the Playroom's engine, and only then
//! dropped. Every Playground pass may ask for builds, and a Compose file
//! of 20 services of `build: .` asks for 20 at once: without a bound, a
//! few hundred MiB of repository (a few hundred KiB compressed in git)
//! became tens of GiB of memory. So each such job first takes a slot:
//!
//! - at most [`SlotsConfig::per_replica`] at once in this process, over
//!   every Playroom;
//! - at most [`SlotsConfig::per_playroom`] at once for one Playroom, so a
//!   slow host, or one tenant's burst of builds, holds no other Playroom's
//!   builds back beyond its share.
//!
//! A job waits for its Playroom's slot first, then for a replica slot, so
//! a Playroom at its bound never holds a replica slot while it waits.
//! Slots are released when the guard drops, also when the pass is
//! cancelled mid-way. Waiting has no bound of its own: the build's
//! timeout starts once it holds its slots.
//!
//! # Bytes in flight, by account
//!
//! A slot also carries a [`Charge`] to its account: every entry of the
//! archive the job spools (build context or source tree) is taken from
//! the account's [`SlotsConfig::bytes_per_account`] before it is written,
//! and given back when the job ends. An account whose jobs on every
//! Playroom already hold that many bytes gets
//! [`RepositoryError::Busy`](play_model::repository::RepositoryError) for
//! the next one, a retryable error: the pass backs off and the job runs
//! once the others are done. The bound is at least
//! [`MAX_CONTEXT_BYTES`], so a job alone always fits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use play_model::build::MAX_CONTEXT_BYTES;
use play_model::repository::ByteBudget;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many builds and fills may hold repository files at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotsConfig {
    /// In this replica, over all Playrooms.
    pub per_replica: usize,
    /// For one Playroom.
    pub per_playroom: usize,
    /// Bytes of archives one account's jobs may hold at once in this
    /// replica (raised to [`MAX_CONTEXT_BYTES`] when lower).
    pub bytes_per_account: u64,
}

impl Default for SlotsConfig {
    fn default() -> Self {
        SlotsConfig { per_replica: 2, per_playroom: 1, bytes_per_account: 2 * MAX_CONTEXT_BYTES }
    }
}

/// See the [module documentation](self).
#[derive(Debug)]
pub struct Slots {
    config: SlotsConfig,
    replica: Arc<Semaphore>,
    /// One semaphore per Playroom that ever asked (a few bytes each).
    playrooms: Mutex<HashMap<i64, Arc<Semaphore>>>,
    ledger: Arc<Ledger>,
}

/// Held while a build or fill runs; its slots and the bytes it charged
/// are free again on drop.
#[derive(Debug)]
pub struct Slot {
    _playroom: OwnedSemaphorePermit,
    _replica: OwnedSemaphorePermit,
    charge: Arc<Charge>,
}

impl Slot {
    /// The budget the job's archives are charged to.
    pub fn budget(&self) -> Arc<dyn ByteBudget> {
        Arc::clone(&self.charge) as Arc<dyn ByteBudget>
    }
}

/// Bytes in flight by account.
#[derive(Debug)]
struct Ledger {
    limit: u64,
    used: Mutex<HashMap<i64, u64>>,
}

/// What one job took from its account; given back on drop.
#[derive(Debug)]
struct Charge {
    ledger: Arc<Ledger>,
    account: i64,
    held: Mutex<u64>,
}

impl ByteBudget for Charge {
    fn take(&self, bytes: u64) -> bool {
        let mut used = self.ledger.used.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = used.entry(self.account).or_default();
        if now.saturating_add(bytes) > self.ledger.limit {
            tracing::info!(
                account = self.account,
                in_flight = *now,
                bound = self.ledger.limit,
                "account's bytes in flight at their bound"
            );
            return false;
        }
        *now += bytes;
        *self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner) += bytes;
        true
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        let held = *self.held.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut used = self.ledger.used.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(now) = used.get_mut(&self.account) {
            *now = now.saturating_sub(held);
            if *now == 0 {
                used.remove(&self.account);
            }
        }
    }
}

impl Slots {
    pub fn new(config: SlotsConfig) -> Self {
        let config = SlotsConfig {
            per_replica: config.per_replica.max(1),
            per_playroom: config.per_playroom.max(1),
            bytes_per_account: config.bytes_per_account.max(MAX_CONTEXT_BYTES),
        };
        let ledger = Arc::new(Ledger { limit: config.bytes_per_account, used: Mutex::default() });
        Slots { config, replica: Arc::new(Semaphore::new(config.per_replica)), playrooms: Mutex::default(), ledger }
    }

    /// Waits for a slot of `playroom`, then one of the replica; the job's
    /// bytes are charged to `account`.
    pub async fn acquire(&self, playroom: i64, account: i64) -> Slot {
        let room = {
            let mut rooms = self.playrooms.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(rooms.entry(playroom).or_insert_with(|| Arc::new(Semaphore::new(self.config.per_playroom))))
        };
        // The semaphores are never closed, so acquiring cannot fail.
        let Ok(playroom_permit) = room.acquire_owned().await else { unreachable!("slot semaphores are never closed") };
        let Ok(replica_permit) = Arc::clone(&self.replica).acquire_owned().await else {
            unreachable!("slot semaphores are never closed")
        };
        let charge = Arc::new(Charge { ledger: Arc::clone(&self.ledger), account, held: Mutex::new(0) });
        Slot { _playroom: playroom_permit, _replica: replica_permit, charge }
    }

    /// Bytes `account`'s jobs hold now in this replica.
    pub fn bytes_in_flight(&self, account: i64) -> u64 {
        let used = self.ledger.used.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        used.get(&account).copied().unwrap_or(0)
    }

    /// Jobs holding a slot in this replica now.
    pub fn in_use(&self) -> usize {
        self.config.per_replica - self.replica.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_playroom_at_its_bound_waits_without_holding_others_back() {
        let slots = Arc::new(Slots::new(SlotsConfig { per_replica: 2, per_playroom: 1, ..SlotsConfig::default() }));
        let first = slots.acquire(1, 7).await;
        // Playroom 1 is at its bound: a second job of it waits...
        let waiting = {
            let slots = Arc::clone(&slots);
            tokio::spawn(async move { slots.acquire(1, 7).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiting.is_finished());
        assert_eq!(slots.in_use(), 1, "and holds no replica slot meanwhile");
        // ...while another Playroom gets the replica's second slot.
        let other = slots.acquire(2, 7).await;
        assert_eq!(slots.in_use(), 2);
        // The replica is full: a third Playroom waits too.
        let third = {
            let slots = Arc::clone(&slots);
            tokio::spawn(async move { slots.acquire(3, 7).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!third.is_finished());
        drop(first);
        drop(other);
        let (a, b) = (waiting.await.unwrap(), third.await.unwrap());
        assert_eq!(slots.in_use(), 2);
        drop((a, b));
        assert_eq!(slots.in_use(), 0, "released on drop");
    }

    #[tokio::test]
    async fn an_accounts_bytes_in_flight_are_bounded_and_given_back() {
        let bound = MAX_CONTEXT_BYTES + 1000;
        let slots = Slots::new(SlotsConfig { per_replica: 4, per_playroom: 4, bytes_per_account: bound });
        let (a, b) = (slots.acquire(1, 7).await, slots.acquire(2, 7).await);
        let other_account = slots.acquire(3, 8).await;
        assert!(a.budget().take(MAX_CONTEXT_BYTES));
        assert!(!b.budget().take(1001), "the account's second job would pass the bound");
        assert!(b.budget().take(1000));
        assert_eq!(slots.bytes_in_flight(7), bound);
        assert!(other_account.budget().take(MAX_CONTEXT_BYTES), "another account has its own bound");
        drop(a);
        assert_eq!(slots.bytes_in_flight(7), 1000, "given back when the job ends");
        drop(b);
        assert_eq!(slots.bytes_in_flight(7), 0);
        // A bound set below one whole context is raised to it: a job alone fits.
        let low = Slots::new(SlotsConfig { bytes_per_account: 1, ..SlotsConfig::default() });
        assert!(low.acquire(1, 7).await.budget().take(MAX_CONTEXT_BYTES));
    }
}
