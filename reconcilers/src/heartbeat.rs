//! The heartbeat loop: this replica says it is alive, and attends what a
//! silent replica left (issue #33, item 5).
//!
//! Leases alone let another replica take over the passes a killed replica
//! was running (once they expire, a lease duration later), but not the
//! changes it had accepted and not yet started: a rollout recorded through
//! its API woke only its own runtime, so another replica found it at its
//! next resync visit, up to a resync period later (48 s for 1,000
//! Playgrounds in `scripts/bench-replicas`). Nor the drift on Playgrounds
//! only it attended: a survivor follows a Playroom's Docker events from its
//! own first pass there or its next watch-list refresh, so a container
//! removed on a Playroom the dead replica alone had visited waited for a
//! resync (issue #51, item 1). So every replica writes a heartbeat every
//! quarter of the lease duration, and one that finds another silent for a
//! lease duration (and wins deleting its row) wakes every Playground whose
//! desired state has not converged and every Playground whose last pass
//! was the silent replica's: each gets a pass that looks at its host (and
//! asks for its Playroom's events to be followed) as soon as the silence
//! is seen, when the silent replica's leases have expired.
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
        let mut woken = std::collections::BTreeSet::new();
        for gone in heartbeats::silent(&self.store, &self.replica, cutoff).await? {
            if heartbeats::forget(&self.store, &gone, cutoff).await? {
                let left = heartbeats::left_by(&self.store, &gone).await?;
                tracing::warn!(
                    replica = %gone,
                    playgrounds = left.len(),
                    "a replica stopped beating: waking the Playgrounds it reconciled last or left unconverged"
                );
                woken.extend(left);
            }
        }
        Ok(woken.into_iter().collect())
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

    use super::*;

    #[tokio::test]
    async fn a_survivor_wakes_the_unconverged_playgrounds_of_a_silent_replica_once() {
        let db = play_store::testing::store().await;
        let store = &db.store;
        let (account, room) = play_store::testing::playroom_row(store).await;
        let pending = play_store::testing::insert_playground(store, account, room).await;
        // A converged Playground whose last pass was `a`'s.
        let attended = play_store::testing::insert_playground(store, account, room).await;
        play_store::testing::mark_converged(store, attended).await;
        let lease = play_store::leases::claim(store, "playground", attended, "a", time::now(), Duration::from_secs(8));
        play_store::leases::release(store, &lease.await.unwrap().unwrap()).await.unwrap();
        let a = Heartbeat::new(store.clone(), "a", Duration::from_millis(200));
        let b = Heartbeat::new(store.clone(), "b", Duration::from_millis(200));
        assert!(a.beat_once().await.unwrap().is_empty());
        assert!(b.beat_once().await.unwrap().is_empty(), "a beats: nothing to do");
        // `a` is killed: it never beats again.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(b.beat_once().await.unwrap(), vec![pending, attended]);
        assert!(b.beat_once().await.unwrap().is_empty(), "handled once");
        // `a` comes back: a new replica to the others.
        assert!(a.beat_once().await.unwrap().is_empty());
        assert!(b.beat_once().await.unwrap().is_empty());
    }
}
