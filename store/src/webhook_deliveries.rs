//! Delivery history of webhook endpoints: one row per (endpoint, outbox
//! event), written by the dispatcher before its first attempt. The API
//! reads it and can ask for a delivery to be sent again; it never sends.

use sqlx::any::{AnyArguments, AnyRow};
use sqlx::query::Query;
use sqlx::{Any, Row};

use super::{Store, webhooks};
use crate::{Error, Result};
use play_model::time;
use play_model::webhook::DeliveryStatus;
use play_model::webhook::model::{Attempt, Delivery, Page};

const COLUMNS: &str = "d.id, d.endpoint_id, d.event_id, e.event_type, d.status, d.attempts, d.next_attempt_at, \
    d.last_status_code, d.last_error, d.last_duration_ms, d.response_snippet, d.created_at, d.updated_at";

fn from_row(row: &AnyRow) -> Result<Delivery> {
    Ok(columns!(
        row,
        "webhook_deliveries",
        Delivery {
            id,
            endpoint_id,
            event_id,
            event_type,
            status => text,
            attempts,
            next_attempt_at => opt_time,
            last_status_code,
            last_error,
            last_duration_ms,
            response_snippet,
            created_at => time,
            updated_at => time,
        }
    ))
}

/// The delivery of outbox event `event_id` to endpoint `endpoint_id`, once
/// the dispatcher fanned the event out.
pub async fn of_event(store: &Store, endpoint_id: i64, event_id: i64) -> Result<Option<Delivery>> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id \
         WHERE d.endpoint_id = $1 AND d.event_id = $2"
    ))
    .bind(endpoint_id)
    .bind(event_id)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref().map(from_row).transpose()
}

/// The deliveries of the account's endpoint `endpoint_id`, newest first.
pub async fn list(store: &Store, account_id: i64, endpoint_id: i64, page: Page) -> Result<Vec<Delivery>> {
    let mut conn = store.conn().await?;
    webhooks::get(&mut *conn, account_id, endpoint_id).await?;
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id \
         WHERE d.endpoint_id = $1 AND d.id < $2 ORDER BY d.id DESC LIMIT $3"
    ))
    .bind(endpoint_id)
    .bind(page.before.unwrap_or(i64::MAX))
    .bind(page.limit)
    .fetch_all(&mut *conn)
    .await?;
    rows.iter().map(from_row).collect()
}

/// Makes delivery `id` of the account's endpoint `endpoint_id` due now
/// (status `pending`, `next_attempt_at` now), whatever its outcome so far;
/// `attempts` and the last outcome stay as history. A delivery of another
/// endpoint is `NotFound`.
pub async fn redeliver(store: &Store, account_id: i64, endpoint_id: i64, id: i64) -> Result<Delivery> {
    let mut tx = store.write().await?;
    webhooks::get(&mut tx, account_id, endpoint_id).await?;
    let now = time::to_db(&time::now());
    let changed = sqlx::query(
        "UPDATE webhook_deliveries SET status = $1, next_attempt_at = $2, updated_at = $2 \
         WHERE id = $3 AND endpoint_id = $4",
    )
    .bind(DeliveryStatus::Pending.as_str())
    .bind(&now)
    .bind(id)
    .bind(endpoint_id)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if changed == 0 {
        return Err(Error::NotFound("webhook delivery"));
    }
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = $1"
    ))
    .bind(id)
    .fetch_one(&mut *tx)
    .await?;
    let delivery = from_row(&row)?;
    store.commit(tx).await?;
    Ok(delivery)
}

/// Inserts a pending delivery of `event_id` to `endpoint_id` unless one
/// exists; returns its id. The dispatcher's first write for a pair, and
/// the fixture of the API's tests.
pub async fn ensure(store: &Store, endpoint_id: i64, event_id: i64) -> Result<i64> {
    let now = time::to_db(&time::now());
    sqlx::query(
        "INSERT INTO webhook_deliveries (endpoint_id, event_id, status, attempts, next_attempt_at, created_at, \
         updated_at) VALUES ($1, $2, $3, 0, $4, $4, $4) ON CONFLICT (endpoint_id, event_id) DO NOTHING",
    )
    .bind(endpoint_id)
    .bind(event_id)
    .bind(DeliveryStatus::Pending.as_str())
    .bind(&now)
    .execute(store.pool())
    .await?;
    Ok(sqlx::query("SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 AND event_id = $2")
        .bind(endpoint_id)
        .bind(event_id)
        .fetch_one(store.pool())
        .await?
        .try_get("id")?)
}

/// Records an attempt on delivery `id` (counts it).
pub async fn record_attempt(store: &Store, id: i64, attempt: Attempt) -> Result<()> {
    let query = sqlx::query(
        "UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, next_attempt_at = $2, \
         last_status_code = $3, last_error = $4, last_duration_ms = $5, response_snippet = $6, updated_at = $7 \
         WHERE id = $8",
    );
    bind_attempt(query, attempt).bind(time::to_db(&time::now())).bind(id).execute(store.pool()).await?;
    Ok(())
}

/// `query` with the outcome of `attempt` bound to `$1` to `$6`: status,
/// next_attempt_at, last_status_code, last_error, last_duration_ms and
/// response_snippet, in that order (every write of an attempt).
pub(super) fn bind_attempt<'q>(
    query: Query<'q, Any, AnyArguments<'q>>,
    attempt: Attempt,
) -> Query<'q, Any, AnyArguments<'q>> {
    query
        .bind(attempt.status.as_str())
        .bind(attempt.next_attempt_at.as_ref().map(time::to_db))
        .bind(attempt.status_code)
        .bind(attempt.error)
        .bind(attempt.duration_ms)
        .bind(attempt.response_snippet)
}
