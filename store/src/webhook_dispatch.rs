//! The webhook dispatcher's writes: fan-out of outbox events into
//! deliveries, claims on due deliveries, and the outcome of an attempt.
//!
//! # Invariants
//!
//! - **Fan-out is atomic per event**: the delivery rows of one event (one
//!   per matching endpoint enabled when the event was recorded) and the
//!   event's `dispatched_at` commit in one transaction (with the other
//!   events of its batch: [`fan_out_all`]). A crash before the commit leaves the event
//!   undispatched (it is fanned out again); after it, every delivery
//!   exists. `UNIQUE (endpoint_id, event_id)` makes a second fan-out of the
//!   same event (two replicas, a retry) add nothing.
//! - **A claim is a compare-and-set**: a delivery is claimed only when it
//!   is due, retrying or pending, its endpoint enabled, and it is unclaimed
//!   or its claim expired. On PostgreSQL the conditional `UPDATE`
//!   re-checks the row after waiting on its lock, so two replicas never
//!   both claim one attempt; SQLite runs one writer at a time.
//! - **An outcome clears the claim** and is recorded with the endpoint's
//!   failure count in one transaction (with the other outcomes of its
//!   batch: [`record_all`]); disabling the endpoint and its
//!   `webhook_endpoint.disabled` event happen once, on the transition.

use std::collections::HashMap;
use std::time::Duration;

use sqlx::Row;

use super::events;
use super::webhook_deliveries::bind_attempt;
use super::webhooks::{self, COLUMNS as ENDPOINT_COLUMNS};
use super::{Conn, Store, is_set};
use crate::{Error, Result};
use play_model::model::event::{Event, NewEvent};
use play_model::secrets::SecretBox;
use play_model::time::{self, Timestamp};
use play_model::webhook::DeliveryStatus;
use play_model::webhook::delivery::{DISABLE_AFTER_FAILURES, delivers_to};
use play_model::webhook::model::Attempt;
use play_model::webhook::model::{ClaimLimits, Claimed, EndpointEffect, Recorded};

/// Creates the deliveries of `event` (one per matching endpoint of its
/// account that was enabled when the event was recorded) and marks it
/// dispatched, in one transaction. Returns the endpoints it was fanned
/// out to.
///
/// An endpoint disabled after the event was recorded but before this
/// fan-out (a 410 answered to the previous event) still gets it: the
/// event is part of the backlog it is sent when enabled again. Events
/// recorded while it is disabled are not queued for it.
pub async fn fan_out(store: &Store, event: &Event) -> Result<Vec<i64>> {
    let mut tx = store.write().await?;
    let recipients = fan_out_in(&mut tx, event).await?;
    store.commit(tx).await?;
    Ok(recipients)
}

/// [`fan_out`] of each of `events` in one transaction (issue #33: a
/// transaction per event bounded the rate): all of them dispatched, or
/// none. The endpoints each was fanned out to, in order.
pub async fn fan_out_all(store: &Store, events: &[Event]) -> Result<Vec<Vec<i64>>> {
    let mut tx = store.write().await?;
    let mut out = Vec::with_capacity(events.len());
    for event in events {
        out.push(fan_out_in(&mut tx, event).await?);
    }
    store.commit(tx).await?;
    Ok(out)
}

/// [`fan_out`] inside the caller's transaction.
async fn fan_out_in(tx: &mut Conn, event: &Event) -> Result<Vec<i64>> {
    let rows = sqlx::query(&format!(
        "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE account_id = $1 \
         AND (enabled = 1 OR disabled_after_event >= $2) ORDER BY id"
    ))
    .bind(event.account_id)
    .bind(event.id)
    .fetch_all(&mut *tx)
    .await?;
    let now = time::to_db(&time::now());
    let mut recipients = Vec::new();
    for row in &rows {
        let endpoint = webhooks::endpoint_from_row(row)?;
        if !delivers_to(endpoint.id, &endpoint.subscription, &event.event_type, event.entity_id) {
            continue;
        }
        sqlx::query(
            "INSERT INTO webhook_deliveries (endpoint_id, event_id, status, attempts, next_attempt_at, created_at, \
             updated_at) VALUES ($1, $2, $3, 0, $4, $4, $4) ON CONFLICT (endpoint_id, event_id) DO NOTHING",
        )
        .bind(endpoint.id)
        .bind(event.id)
        .bind(DeliveryStatus::Pending.as_str())
        .bind(&now)
        .execute(&mut *tx)
        .await?;
        recipients.push(endpoint.id);
    }
    sqlx::query("UPDATE events SET dispatched_at = $1 WHERE id = $2 AND dispatched_at IS NULL")
        .bind(&now)
        .bind(event.id)
        .execute(&mut *tx)
        .await?;
    Ok(recipients)
}

/// The due deliveries a claim chooses from (see [`claim_due`]), per
/// backend: `$1` now, `$2` per endpoint, `$3` in all. Each enabled
/// endpoint's oldest due deliveries come from a range of
/// `webhook_deliveries_endpoint_due`: PostgreSQL through `LATERAL`; SQLite
/// (no `LATERAL`) through a correlated `IN`, with `CROSS JOIN` keeping the
/// endpoints as the outer loop (its planner otherwise scans every
/// delivery and runs the subquery per row).
fn claim_candidates(backend: super::Backend) -> &'static str {
    static SQLITE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "SELECT d.id, d.endpoint_id, d.attempts, d.event_id, w.account_id, w.url, w.secret \
             FROM webhook_endpoints w CROSS JOIN webhook_deliveries d WHERE w.enabled = 1 AND d.id IN \
             (SELECT o.id FROM webhook_deliveries o WHERE o.endpoint_id = w.id AND {} \
             ORDER BY o.next_attempt_at, o.id LIMIT $2) ORDER BY d.next_attempt_at, d.id LIMIT $3",
            due_of("o")
        )
    });
    static POSTGRES: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "SELECT d.id, d.endpoint_id, d.attempts, d.event_id, w.account_id, w.url, w.secret \
             FROM webhook_endpoints w CROSS JOIN LATERAL (SELECT o.id, o.endpoint_id, o.attempts, o.event_id, \
             o.next_attempt_at FROM webhook_deliveries o WHERE o.endpoint_id = w.id AND {} \
             ORDER BY o.next_attempt_at, o.id LIMIT $2) d WHERE w.enabled = 1 \
             ORDER BY d.next_attempt_at, d.id LIMIT $3",
            due_of("o")
        )
    });
    match backend {
        super::Backend::Sqlite => &SQLITE,
        super::Backend::Postgres => &POSTGRES,
    }
}

/// The condition of a due, unclaimed delivery of table alias `t` at `$1`,
/// the statuses written out (the partial indexes' own list).
fn due_of(t: &str) -> String {
    format!(
        "{t}.status IN ('{}', '{}') AND {t}.next_attempt_at <= $1 AND ({t}.claimed_until IS NULL OR {t}.claimed_until < $1)",
        DeliveryStatus::Pending.as_str(),
        DeliveryStatus::Failed.as_str()
    )
}

/// Claims due deliveries of enabled endpoints for `owner`, oldest due
/// first, at most `limits.per_endpoint` per endpoint counting the ones
/// `in_flight` already has, at most `limits.total` in all.
pub async fn claim_due(
    store: &Store,
    secrets: &SecretBox,
    owner: &str,
    limits: ClaimLimits,
    in_flight: &HashMap<i64, usize>,
) -> Result<Vec<Claimed>> {
    if limits.total == 0 {
        return Ok(Vec::new());
    }
    let now = time::now();
    let now_db = time::to_db(&now);
    let until = time::to_db(&(now + chrono::Duration::from_std(limits.hold).unwrap_or(chrono::Duration::days(365))));
    let mut tx = store.write().await?;
    // One read of the due deliveries with what an attempt needs, one
    // conditional update of the chosen ones, one read of their events:
    // three statements per claim, not four per delivery (issue #33). The
    // read takes each enabled endpoint's oldest due deliveries, at most
    // `per_endpoint`, through `webhook_deliveries_endpoint_due` (a short
    // range per endpoint, not a sort of every due row: a backlog of an
    // endpoint that is down costs nothing here); the statuses are written
    // out so that partial index applies.
    let candidates = sqlx::query(claim_candidates(super::Backend::of(&tx)))
        .bind(&now_db)
        .bind(i64::try_from(limits.per_endpoint).unwrap_or(i64::MAX))
        .bind(i64::try_from(limits.total.saturating_mul(4)).unwrap_or(i64::MAX))
        .fetch_all(&mut *tx)
        .await?;
    let mut taken: HashMap<i64, usize> = HashMap::new();
    let mut chosen = Vec::new();
    for row in &candidates {
        if chosen.len() >= limits.total {
            break;
        }
        let endpoint_id: i64 = row.try_get("endpoint_id")?;
        let busy = in_flight.get(&endpoint_id).copied().unwrap_or(0) + taken.get(&endpoint_id).copied().unwrap_or(0);
        if busy >= limits.per_endpoint {
            continue;
        }
        *taken.entry(endpoint_id).or_default() += 1;
        chosen.push(row);
    }
    if chosen.is_empty() {
        return Ok(Vec::new());
    }
    // Another replica may have claimed some since the read (PostgreSQL):
    // only the rows this update still matched are ours.
    let ids: Vec<i64> = chosen.iter().map(|row| row.try_get("id")).collect::<std::result::Result<_, _>>()?;
    let listed = (6..6 + ids.len()).map(|n| format!("${n}")).collect::<Vec<_>>().join(", ");
    let sql = format!(
        "UPDATE webhook_deliveries SET claimed_by = $1, claimed_until = $2 WHERE status IN ($3, $4) \
         AND (claimed_until IS NULL OR claimed_until < $5) AND id IN ({listed}) RETURNING id"
    );
    let mut update = sqlx::query(&sql)
        .bind(owner)
        .bind(&until)
        .bind(DeliveryStatus::Pending.as_str())
        .bind(DeliveryStatus::Failed.as_str())
        .bind(&now_db);
    for id in &ids {
        update = update.bind(*id);
    }
    let won: std::collections::HashSet<i64> =
        update.fetch_all(&mut *tx).await?.iter().map(|row| row.try_get("id")).collect::<std::result::Result<_, _>>()?;
    let event_ids: Vec<i64> =
        chosen.iter().map(|row| row.try_get("event_id")).collect::<std::result::Result<_, _>>()?;
    let events = events::by_ids_in(&mut tx, &event_ids).await?;
    let mut claimed = Vec::with_capacity(won.len());
    for row in chosen {
        let (id, endpoint_id): (i64, i64) = (row.try_get("id")?, row.try_get("endpoint_id")?);
        if !won.contains(&id) {
            continue;
        }
        let sealed: Option<String> = row.try_get("secret")?;
        let sealed = sealed.ok_or_else(|| Error::Corrupt {
            table: "webhook_endpoints",
            id: endpoint_id,
            column: "secret",
            reason: "no secret stored".into(),
        })?;
        let event_id: i64 = row.try_get("event_id")?;
        // Several deliveries of one event: each gets its own copy.
        let event = events.get(&event_id).cloned().ok_or(Error::NotFound("event"))?;
        claimed.push(Claimed {
            id,
            endpoint_id,
            account_id: row.try_get("account_id")?,
            url: row.try_get("url")?,
            secret: secrets.open(&sealed, &webhooks::secret_context(endpoint_id))?,
            attempts: row.try_get("attempts")?,
            event,
        });
    }
    store.commit(tx).await?;
    Ok(claimed)
}

/// Drops every claim `owner` holds: a restarted replica (SQLite's fixed
/// `local`) takes its interrupted attempts back at once instead of
/// waiting for their claims to expire.
pub async fn release_claims(store: &Store, owner: &str) -> Result<u64> {
    Ok(sqlx::query("UPDATE webhook_deliveries SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = $1")
        .bind(owner)
        .execute(store.pool())
        .await?
        .rows_affected())
}

/// Records the outcome of `claimed`'s attempt and its effect on the
/// endpoint, in one transaction.
pub async fn record(store: &Store, claimed: &Claimed, attempt: Attempt, effect: EndpointEffect) -> Result<Recorded> {
    let mut tx = store.write().await?;
    let recorded = record_in(&mut tx, claimed, attempt, effect).await?;
    store.commit(tx).await?;
    Ok(recorded)
}

/// Records the outcomes of several attempts in one transaction (the
/// dispatcher's recorder, issue #33: one write transaction per delivery
/// bounded the rate), each as [`record`] would, in order: a failure count
/// and a disable see the outcomes before them. All or none: on an error
/// nothing is recorded, the claims expire and the attempts are made again
/// (at least once).
pub async fn record_all(store: &Store, outcomes: Vec<(Claimed, Attempt, EndpointEffect)>) -> Result<Vec<Recorded>> {
    let mut tx = store.write().await?;
    let mut recorded = Vec::with_capacity(outcomes.len());
    for (claimed, attempt, effect) in outcomes {
        recorded.push(record_in(&mut tx, &claimed, attempt, effect).await?);
    }
    store.commit(tx).await?;
    Ok(recorded)
}

/// [`record`] inside the caller's transaction.
async fn record_in(tx: &mut Conn, claimed: &Claimed, attempt: Attempt, effect: EndpointEffect) -> Result<Recorded> {
    let now = time::to_db(&time::now());
    let query = sqlx::query(
        "UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, next_attempt_at = $2, \
         last_status_code = $3, last_error = $4, last_duration_ms = $5, response_snippet = $6, updated_at = $7, \
         claimed_by = NULL, claimed_until = NULL WHERE id = $8",
    );
    bind_attempt(query, attempt).bind(&now).bind(claimed.id).execute(&mut *tx).await?;
    let gone = match effect {
        EndpointEffect::Succeeded => {
            // A disabled endpoint keeps the count that disabled it: an
            // attempt claimed before the disable and answered after it
            // changes nothing on the endpoint.
            sqlx::query(
                "UPDATE webhook_endpoints SET failure_count = 0 WHERE id = $1 AND failure_count <> 0 AND enabled = 1",
            )
            .bind(claimed.endpoint_id)
            .execute(&mut *tx)
            .await?;
            return Ok(Recorded { failure_count: 0, disabled: None });
        }
        EndpointEffect::Failed { gone } => gone,
    };
    // Only an enabled endpoint counts failures: with several attempts in
    // flight per endpoint, the ones answered after the tenth failure
    // disabled it would otherwise count on (issue #27, item 11: it was
    // disabled "after 11").
    sqlx::query("UPDATE webhook_endpoints SET failure_count = failure_count + 1 WHERE id = $1 AND enabled = 1")
        .bind(claimed.endpoint_id)
        .execute(&mut *tx)
        .await?;
    let Some(row) = sqlx::query("SELECT failure_count, enabled FROM webhook_endpoints WHERE id = $1")
        .bind(claimed.endpoint_id)
        .fetch_optional(&mut *tx)
        .await?
    else {
        // Deleted while the attempt ran.
        return Ok(Recorded { failure_count: 0, disabled: None });
    };
    let failure_count: i64 = row.try_get("failure_count")?;
    let enabled = is_set(row.try_get("enabled")?);
    let reason = if gone {
        Some("the receiver answered 410 Gone".to_owned())
    } else if failure_count >= DISABLE_AFTER_FAILURES {
        Some(format!("{failure_count} consecutive failed deliveries"))
    } else {
        None
    };
    let mut disabled = None;
    if let Some(reason) = reason.filter(|_| enabled) {
        let changed = sqlx::query(
            "UPDATE webhook_endpoints SET enabled = 0, disabled_reason = $1, updated_at = $2, \
             disabled_after_event = (SELECT COALESCE(MAX(id), 0) FROM events) WHERE id = $3 AND enabled = 1",
        )
        .bind(&reason)
        .bind(&now)
        .bind(claimed.endpoint_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if changed == 1 {
            let metadata =
                serde_json::json!({ "reason": reason, "failure_count": failure_count, "delivery_id": claimed.id });
            events::record(
                tx,
                NewEvent::new(claimed.account_id, "webhook_endpoint", claimed.endpoint_id, "disabled")
                    .metadata(metadata),
            )
            .await?;
            disabled = Some(reason);
        }
    }
    Ok(Recorded { failure_count, disabled })
}

/// When a failed attempt's delivery is due again: now plus `delay`.
pub fn due_after(delay: Duration) -> Timestamp {
    time::now() + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::days(365))
}

#[cfg(test)]
#[path = "webhook_dispatch_tests.rs"]
mod tests;
