//! Whether play can reach a Playroom's Docker engine, as the reconcilers
//! last found it (`test_connection` records its own outcome in `last_*`).
//!
//! Invariants:
//! - `reachable` is `NULL` until a reconciler first tries, then 1 or 0.
//! - `unreachable_since` is the first failed attempt since the engine was
//!   last reached: set when reachability is lost, kept while it stays lost
//!   (whatever the reason says meanwhile), cleared when it is back.
//! - Each write changes something or touches nothing (the `WHERE` clause
//!   compares with what is stored), so calling it after every connection
//!   attempt is safe; callers still call it only on change, to keep the
//!   store out of the hot path.
//! - It is an observation, not a change of the Playroom: `updated_at` and
//!   the events outbox are left alone.

use sqlx::Any;
use sqlx::any::AnyArguments;
use sqlx::query::Query;

use super::Store;
use crate::Result;
use play_model::time::{self, Timestamp};

/// Records that the engine of Playroom `id` answered.
pub async fn record_reached(store: &Store, id: i64) -> Result<()> {
    let update = sqlx::query(
        "UPDATE playrooms SET reachable = 1, unreachable_since = NULL, unreachable_reason = NULL \
         WHERE id = $1 AND (reachable IS NULL OR reachable <> 1)",
    )
    .bind(id);
    write_reachability(store, update).await
}

/// Records that reaching the engine of Playroom `id` failed at `at`, and
/// why.
pub async fn record_unreachable(store: &Store, id: i64, reason: &str, at: Timestamp) -> Result<()> {
    let update = sqlx::query(
        "UPDATE playrooms SET reachable = 0, \
         unreachable_since = CASE WHEN reachable = 0 AND unreachable_since IS NOT NULL THEN unreachable_since ELSE $2 END, \
         unreachable_reason = $3 \
         WHERE id = $1 AND (reachable IS NULL OR reachable <> 0 OR COALESCE(unreachable_reason, '') <> $3)",
    )
    .bind(id)
    .bind(time::to_db(&at))
    .bind(reason);
    write_reachability(store, update).await
}

/// Runs `update`, a write of a Playroom's reachability, and when it changed
/// the row marks every Playground view changed: each shows its Playroom's
/// reachability (`local_writes`).
async fn write_reachability<'q>(store: &Store, update: Query<'q, Any, AnyArguments<'q>>) -> Result<()> {
    if update.execute(store.pool()).await?.rows_affected() > 0 {
        store.local_writes().mark_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::{events, playrooms};

    #[tokio::test]
    async fn since_is_the_first_failure_and_clears_when_reached_again() {
        let db = crate::testing::store().await;
        let store = &db.store;
        let (account, id) = crate::testing::playroom_row(store).await;
        let room = playrooms::get(store, account, id).await.unwrap();
        let get = async || playrooms::get(store, account, room.id).await.unwrap();
        assert_eq!((room.reachable, room.unreachable_since), (None, None), "not tried yet");

        let first = time::now() - chrono::Duration::seconds(30);
        record_unreachable(store, room.id, "unreachable: connection refused", first).await.unwrap();
        record_unreachable(store, room.id, "timeout: no answer", time::now()).await.unwrap();
        let down = get().await;
        assert_eq!(down.reachable, Some(false));
        assert_eq!(down.unreachable_since.map(|t| time::to_db(&t)), Some(time::to_db(&first)), "kept from the first");
        assert_eq!(down.unreachable_reason.as_deref(), Some("timeout: no answer"));
        assert_eq!(down.updated_at, room.updated_at, "an observation, not a change");

        record_reached(store, room.id).await.unwrap();
        let up = get().await;
        assert_eq!((up.reachable, up.unreachable_since, up.unreachable_reason), (Some(true), None, None));
        let again = time::now();
        record_unreachable(store, room.id, "unreachable", again).await.unwrap();
        assert_eq!(get().await.unreachable_since.map(|t| time::to_db(&t)), Some(time::to_db(&again)), "a new outage");
        assert!(events::list_for_account(store, account).await.unwrap().is_empty(), "no events");
    }
}
