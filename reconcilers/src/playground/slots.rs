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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many builds and fills may hold repository files at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotsConfig {
    /// In this replica, over all Playrooms.
    pub per_replica: usize,
    /// For one Playroom.
    pub per_playroom: usize,
}

impl Default for SlotsConfig {
    fn default() -> Self {
        SlotsConfig { per_replica: 2, per_playroom: 1 }
    }
}

/// See the [module documentation](self).
#[derive(Debug)]
pub struct Slots {
    config: SlotsConfig,
    replica: Arc<Semaphore>,
    /// One semaphore per Playroom that ever asked (a few bytes each).
    playrooms: Mutex<HashMap<i64, Arc<Semaphore>>>,
}

/// Held while a build or fill runs; its slots are free again on drop.
#[derive(Debug)]
pub struct Slot {
    _playroom: OwnedSemaphorePermit,
    _replica: OwnedSemaphorePermit,
}

impl Slots {
    pub fn new(config: SlotsConfig) -> Self {
        let config = SlotsConfig { per_replica: config.per_replica.max(1), per_playroom: config.per_playroom.max(1) };
        Slots { config, replica: Arc::new(Semaphore::new(config.per_replica)), playrooms: Mutex::default() }
    }

    /// Waits for a slot of `playroom`, then one of the replica.
    pub async fn acquire(&self, playroom: i64) -> Slot {
        let room = {
            let mut rooms = self.playrooms.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(rooms.entry(playroom).or_insert_with(|| Arc::new(Semaphore::new(self.config.per_playroom))))
        };
        // The semaphores are never closed, so acquiring cannot fail.
        let Ok(playroom_permit) = room.acquire_owned().await else { unreachable!("slot semaphores are never closed") };
        let Ok(replica_permit) = Arc::clone(&self.replica).acquire_owned().await else {
            unreachable!("slot semaphores are never closed")
        };
        Slot { _playroom: playroom_permit, _replica: replica_permit }
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
        let slots = Arc::new(Slots::new(SlotsConfig { per_replica: 2, per_playroom: 1 }));
        let first = slots.acquire(1).await;
        // Playroom 1 is at its bound: a second job of it waits...
        let waiting = {
            let slots = Arc::clone(&slots);
            tokio::spawn(async move { slots.acquire(1).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiting.is_finished());
        assert_eq!(slots.in_use(), 1, "and holds no replica slot meanwhile");
        // ...while another Playroom gets the replica's second slot.
        let other = slots.acquire(2).await;
        assert_eq!(slots.in_use(), 2);
        // The replica is full: a third Playroom waits too.
        let third = {
            let slots = Arc::clone(&slots);
            tokio::spawn(async move { slots.acquire(3).await })
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
}
