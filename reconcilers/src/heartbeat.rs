//! The heartbeat loop: this replica says it is alive, and attends what a
//! silent replica left (issue #33, item 5).
//!
//! Leases alone let another replica take over the passes a killed replica
//! was running (once they expire, a lease duration later), but not the
//! changes it had accepted and not yet started: a rollout recorded through
//! its API woke only its own runtime, so another replica found it at its
//! next resync visit, up to a resync period later (48 s for 1,000
//! Playgrounds in `scripts/bench-replicas`). So every replica writes a
//! heartbeat every quarter of the lease duration, and one that finds
//! another silent for a lease duration (and wins deleting its row) wakes
//! every Playground whose desired state has not converged.
//!
//! # Guarantees
//!
//! - A silent replica is handled once, by one survivor
//!   (`heartbeats::forget` is a conditional delete); a replica that beats
//!   again is a new one to the others (its row is back).
//! - Waking is only a latency optimisation: each woken Playground gets an
//!   ordinary pass under its lease (one already running elsewhere makes the
//!   wake wait for the lease). Missed or doubled wakes cost a resync or a
//!   no-op pass, never correctness.
//! - A replica shut down gracefully keeps its row and is handled the same
//!   way: the wakes in its queue went with it.

use std::time::Duration;

use play_model::time;
use play_store::{Store, heartbeats};
use tokio_util::sync::CancellationToken;

use crate::Result;

/// See the [module documentation](self).
#[derive(Clone, Debug)]
pub struct Heartbeat {
    store: Store,
    replica: String,
    /// How long a replica may stay silent before it counts as gone: the
    /// lease duration (its leases have expired by then too).
    silent_after: Duration,
}

impl Heartbeat {
    pub fn new(store: Store, replica: &str, silent_after: Duration) -> Self {
        Heartbeat { store, replica: replica.to_owned(), silent_after }
    }

    /// One beat and one look: the Playgrounds to wake for the silent
    /// replicas this call handled (empty when none).
    pub async fn beat_once(&self) -> Result<Vec<i64>> {
        let now = time::now();
        heartbeats::beat(&self.store, &self.replica, now).await?;
        let silent_for = chrono::Duration::from_std(self.silent_after).unwrap_or(chrono::Duration::seconds(60));
        let cutoff = now - silent_for;
        let mut handled = false;
        for gone in heartbeats::silent(&self.store, &self.replica, cutoff).await? {
            if heartbeats::forget(&self.store, &gone, cutoff).await? {
                tracing::warn!(replica = %gone, "a replica stopped beating: waking the Playgrounds not yet converged");
                handled = true;
            }
        }
        if !handled {
            return Ok(Vec::new());
        }
        Ok(heartbeats::unconverged_playgrounds(&self.store).await?)
    }

    /// Beats every quarter of `silent_after` until `shutdown`, handing the
    /// Playgrounds to wake to `wake`.
    pub async fn run(self, wake: impl Fn(i64) + Send, shutdown: CancellationToken) {
        let every = (self.silent_after / 4).max(Duration::from_millis(100));
        loop {
            match self.beat_once().await {
                Ok(ids) => ids.into_iter().for_each(&wake),
                Err(e) => tracing::warn!(error = %e, "heartbeat failed; trying again"),
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

    use super::*;

    #[tokio::test]
    async fn a_survivor_wakes_the_unconverged_playgrounds_of_a_silent_replica_once() {
        let db = play_store::testing::store().await;
        let store = &db.store;
        let (_, pending) = play_store::testing::playground_row(store).await;
        let a = Heartbeat::new(store.clone(), "a", Duration::from_millis(200));
        let b = Heartbeat::new(store.clone(), "b", Duration::from_millis(200));
        assert!(a.beat_once().await.unwrap().is_empty());
        assert!(b.beat_once().await.unwrap().is_empty(), "a beats: nothing to do");
        // `a` is killed: it never beats again.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(b.beat_once().await.unwrap(), vec![pending]);
        assert!(b.beat_once().await.unwrap().is_empty(), "handled once");
        // `a` comes back: a new replica to the others.
        assert!(a.beat_once().await.unwrap().is_empty());
        assert!(b.beat_once().await.unwrap().is_empty());
    }
}
