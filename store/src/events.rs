//! The events outbox.
//!
//! Invariant: an event row is inserted in the same transaction as the change
//! it reports, so a committed change always has its event and a rolled-back
//! one never does. Delivery (webhooks) reads undispatched rows in id order
//! and marks them; it never runs inside a write handler.
//!
//! The row carries the spec's payload fields (entity_type, entity_id,
//! action, timestamp) and, for Playground audit events, playground_name,
//! actor_type, actor_id and metadata; `audit_log_id` is the row id.

use std::collections::HashMap;

use sqlx::Row;
use sqlx::any::AnyRow;

use super::shapes::{all, all_of, set_by_id};
use super::{Conn, Store};
use crate::Result;
use play_model::model::event::{Event, NewEvent};
use play_model::time::{self, Timestamp};

/// Records `event` in a transaction of its own: for an event that reports
/// no change of the store (a failed scheduled backup).
pub async fn record_alone(store: &Store, event: NewEvent) -> Result<i64> {
    let mut tx = store.write().await?;
    let id = record(&mut tx, event).await?;
    store.commit(tx).await?;
    Ok(id)
}

/// Inserts an event; call with the transaction that makes the change.
pub async fn record(conn: &mut Conn, event: NewEvent) -> Result<i64> {
    let (actor_type, actor_id) = event.actor.parts();
    let row = sqlx::query(
        "INSERT INTO events (account_id, event_type, entity_type, entity_id, action, occurred_at, \
         playground_name, actor_type, actor_id, metadata) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
    )
    .bind(event.account_id)
    .bind(event.event_type())
    .bind(event.entity_type)
    .bind(event.entity_id)
    .bind(event.action)
    .bind(time::to_db(&time::now()))
    .bind(event.playground_name.as_deref())
    .bind(actor_type)
    .bind(actor_id)
    .bind(event.metadata.to_string())
    .fetch_one(&mut *conn)
    .await?;
    Ok(row.try_get("id")?)
}

/// The entity types, besides Playgrounds, whose events carry `metadata`
/// in their payload (see [`from_row`]).
const WITH_METADATA: &[&str] = &["repo", "schedule", "system", "trigger", "webhook_endpoint"];

fn from_row(row: &AnyRow) -> Result<Event> {
    let id: i64 = row.try_get("id")?;
    let entity_type: String = row.try_get("entity_type")?;
    let is_playground = entity_type == "playground";
    // The contract's payload has `metadata` for Playground audit events
    // only. The event types play adds say what happened in it, as
    // docs/webhooks.md lists: a push (repository, branch, before, after),
    // a schedule's run, a trigger's action, an endpoint's disable. The
    // contract's other types keep its shape.
    let has_metadata = is_playground || WITH_METADATA.contains(&entity_type.as_str());
    Ok(columns!(
        row,
        Event {
            id,
            account_id,
            event_type,
            entity_id,
            action,
            timestamp: super::time_column(row, "occurred_at")?,
            audit_log_id: is_playground.then_some(id),
            playground_name,
            actor_type: if is_playground { row.try_get("actor_type")? } else { None },
            actor_id: if is_playground { row.try_get("actor_id")? } else { None },
            metadata: if has_metadata { Some(super::json_column(row, "events", id, "metadata")?) } else { None },
            dispatched_at => opt_time,
            entity_type,
        }
    ))
}

const COLUMNS: &str = "id, account_id, event_type, entity_type, entity_id, action, occurred_at, \
                       playground_name, actor_type, actor_id, metadata, dispatched_at";

/// An account's events, oldest first.
pub async fn list_for_account(store: &Store, account_id: i64) -> Result<Vec<Event>> {
    all_of(store, &format!("SELECT {COLUMNS} FROM events WHERE account_id = $1 ORDER BY id"), account_id, from_row)
        .await
}

/// The newest `limit` events about one entity of the account, newest
/// first (`GET /api/playgrounds/{id}/events`).
pub async fn recent_for(
    store: &Store,
    account_id: i64,
    entity_type: &str,
    entity_id: i64,
    limit: i64,
) -> Result<Vec<Event>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM events WHERE account_id = $1 AND entity_type = $2 AND entity_id = $3 \
         ORDER BY id DESC LIMIT $4"
    );
    let query = sqlx::query(&sql).bind(account_id).bind(entity_type).bind(entity_id).bind(limit);
    all(store, query, from_row).await
}

/// Up to `limit` events not yet dispatched, oldest first.
pub async fn undispatched(store: &Store, limit: i64) -> Result<Vec<Event>> {
    let sql = format!("SELECT {COLUMNS} FROM events WHERE dispatched_at IS NULL ORDER BY id LIMIT $1");
    all(store, sqlx::query(&sql).bind(limit), from_row).await
}

/// The events among `ids` that exist, by id, on `conn` (the dispatcher
/// reads the events it delivers, one statement per claim).
pub(super) async fn by_ids_in(conn: &mut Conn, ids: &[i64]) -> Result<HashMap<i64, Event>> {
    let mut distinct = ids.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let mut found = HashMap::with_capacity(distinct.len());
    for chunk in distinct.chunks(500) {
        let listed = (1..=chunk.len()).map(|n| format!("${n}")).collect::<Vec<_>>().join(", ");
        let sql = format!("SELECT {COLUMNS} FROM events WHERE id IN ({listed})");
        let mut query = sqlx::query(&sql);
        for id in chunk {
            query = query.bind(*id);
        }
        for row in query.fetch_all(&mut *conn).await? {
            let event = from_row(&row)?;
            found.insert(event.id, event);
        }
    }
    Ok(found)
}

pub async fn mark_dispatched(store: &Store, id: i64, at: Timestamp) -> Result<()> {
    set_by_id(store.pool(), "UPDATE events SET dispatched_at = $1 WHERE id = $2", time::to_db(&at), id).await
}
