//! Replicas' heartbeats (migration 0037): which replicas are alive, so a
//! survivor can attend the changes a silent one accepted (issue #33).
//!
//! Invariants:
//! - `seen_at` only moves forward for a replica that beats;
//! - a silent replica is handled once: [`forget`] deletes its row only if
//!   it is still silent, and answers whether this call deleted it, so of
//!   two survivors exactly one handles it, and a replica that beat again
//!   meanwhile is not forgotten.
//!
//! Read and written by the heartbeat loop only; across all accounts, never
//! shown to anyone.

use super::Store;
use super::shapes::column;
use crate::Result;
use play_model::time::{self, Timestamp};

/// Records that `replica` is alive at `now`.
pub async fn beat(store: &Store, replica: &str, now: Timestamp) -> Result<()> {
    sqlx::query(
        "INSERT INTO replica_heartbeats (replica, seen_at) VALUES ($1, $2) \
         ON CONFLICT (replica) DO UPDATE SET seen_at = excluded.seen_at \
         WHERE replica_heartbeats.seen_at < excluded.seen_at",
    )
    .bind(replica)
    .bind(time::to_db(&now))
    .execute(store.pool())
    .await?;
    Ok(())
}

/// The replicas other than `me` last seen before `cutoff`.
pub async fn silent(store: &Store, me: &str, cutoff: Timestamp) -> Result<Vec<String>> {
    let query =
        sqlx::query("SELECT replica FROM replica_heartbeats WHERE replica <> $1 AND seen_at < $2 ORDER BY replica")
            .bind(me)
            .bind(time::to_db(&cutoff));
    column(store, query, "replica").await
}

/// Deletes `replica`'s row if it is still silent (last seen before
/// `cutoff`): whether this call did, so whether the caller handles it.
pub async fn forget(store: &Store, replica: &str, cutoff: Timestamp) -> Result<bool> {
    let done = sqlx::query("DELETE FROM replica_heartbeats WHERE replica = $1 AND seen_at < $2")
        .bind(replica)
        .bind(time::to_db(&cutoff))
        .execute(store.pool())
        .await?;
    Ok(done.rows_affected() > 0)
}

/// What a survivor attends for the silent replica `gone`, in id order:
/// every Playground whose desired state changed since a pass last
/// converged it (`generation <> observed_generation`: a change `gone`
/// accepted and had not converged), and every Playground whose last pass
/// was `gone`'s (its lease row names `gone`, released or not: `gone` may
/// have been the only replica following its Playroom's Docker events, so
/// drift since then is found only by a pass).
pub async fn left_by(store: &Store, gone: &str) -> Result<Vec<i64>> {
    let query = sqlx::query(
        "SELECT id FROM playgrounds WHERE generation <> observed_generation \
         UNION SELECT object_id AS id FROM reconcile_leases WHERE reconciler = 'playground' AND owner = $1 \
         ORDER BY id",
    )
    .bind(gone);
    column(store, query, "id").await
}

#[cfg(test)]
mod tests {

    use super::*;

    #[tokio::test]
    async fn a_silent_replica_is_found_and_handled_once() {
        let db = crate::testing::store().await;
        let store = &db.store;
        let now = time::now();
        let long_ago = now - chrono::Duration::seconds(60);
        beat(store, "alive", now).await.unwrap();
        beat(store, "dead", long_ago).await.unwrap();
        // A beat never moves seen_at back.
        beat(store, "alive", long_ago).await.unwrap();
        let cutoff = now - chrono::Duration::seconds(8);
        assert_eq!(silent(store, "alive", cutoff).await.unwrap(), vec!["dead".to_owned()]);
        assert!(silent(store, "dead", cutoff).await.unwrap().is_empty(), "one's own row is never silent");
        assert!(forget(store, "dead", cutoff).await.unwrap());
        assert!(!forget(store, "dead", cutoff).await.unwrap(), "handled once");
        assert!(!forget(store, "alive", cutoff).await.unwrap(), "a live replica is not forgotten");

        let (account, room) = crate::testing::playroom_row(store).await;
        let playground = || crate::testing::insert_playground(store, account, room);
        let (converged, changed) = (playground().await, playground().await);
        crate::testing::mark_converged(store, converged).await;
        assert_eq!(left_by(store, "dead").await.unwrap(), vec![changed]);

        // Its last pass was the silent replica's: attended too, whether
        // the lease was released or still runs.
        let leased = playground().await;
        for id in [changed, leased] {
            crate::testing::mark_converged(store, id).await;
        }
        let claim = |reconciler, id, owner| {
            crate::leases::claim(store, reconciler, id, owner, now, std::time::Duration::from_secs(8))
        };
        let lease = claim("playground", leased, "dead").await.unwrap().unwrap();
        claim("playground", converged, "alive").await.unwrap().unwrap();
        claim("edge", changed, "dead").await.unwrap().unwrap();
        assert_eq!(left_by(store, "dead").await.unwrap(), vec![leased], "another's, or another loop's, are not");
        crate::leases::release(store, &lease).await.unwrap();
        assert_eq!(left_by(store, "dead").await.unwrap(), vec![leased], "released: still its last pass");
    }
}
