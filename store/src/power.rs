//! Sleep and wake in the `playgrounds` table (issue #32): the desired
//! power the API, the edge and the reconciler change, the reconciler's
//! fenced record of a Playground converged asleep, and the activity the
//! edge saw.
//!
//! Invariants:
//! - A change of desired power is a change of desired state: it bumps the
//!   generation, and only a Playground whose desired state is `running`
//!   and whose power differs is changed ([`set_power_in`] answers whether
//!   it was), so two replicas waking one Playground wake it once.
//! - Idle sleep is decided in one fenced, conditional write
//!   ([`sleep_if_idle`]): activity recorded after the reconciler looked
//!   keeps the Playground awake.
//! - `playground.slept` and `playground.woke` are recorded when the host
//!   has converged (here, and `woke` in `playground_status::record_observed`),
//!   with the reason of the change they converged.
//! - Activity ([`touch`]) only ever moves `last_active_at` forward; it is
//!   an observation, written by any replica's edge monitor, unfenced.

use super::events;
use super::fence::{Fence, Fenced};
use super::playground_status::{status_event, write};
use super::{Conn, Store};
use crate::Result;
use play_model::model::event::NewEvent;
use play_model::playground::model::{Playground, ServiceStatus};
use play_model::playground::state::{DesiredState, PlaygroundStatus, Power, PowerReason};
use play_model::time::{self, Timestamp};

/// Sets Playground `id`'s desired power, with why, and a new generation,
/// unless it is already `power` or is not meant to run. Answers whether it
/// changed.
pub async fn set_power_in(conn: &mut Conn, id: i64, power: Power, reason: PowerReason) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE playgrounds SET power = $1, power_reason = $2, power_changed_at = $3, generation = generation + 1, \
         updated_at = $3 WHERE id = $4 AND power <> $1 AND desired_state = $5 AND job_mode = 0",
    )
    .bind(power.as_str())
    .bind(reason.as_str())
    .bind(time::to_db(&time::now()))
    .bind(id)
    .bind(DesiredState::Running.as_str())
    .execute(&mut *conn)
    .await?;
    let changed = done.rows_affected() > 0;
    if changed {
        // Its services stop or start, and its routes lead to them or to
        // the sleep page.
        super::playgrounds::note_changed_id(conn, id).await?;
    }
    Ok(changed)
}

/// [`set_power_in`] to awake for a request that reached a sleeping
/// Playground's URL (the edge monitor), in its own transaction, taken only
/// when a read finds the Playground asleep: one woken already (by an
/// earlier request, another replica, the API) or not meant to run costs
/// that read and no write transaction, so the lines of a flood never queue
/// behind SQLite's single writer (issue #49, item 7). The write stays
/// conditional: two callers that both read it asleep wake it once.
pub async fn wake_on_request(store: &Store, id: i64) -> Result<bool> {
    if !store.hot_read(|conn| Box::pin(asleep(conn, id))).await? {
        return Ok(false);
    }
    let mut tx = store.write().await?;
    let woken = set_power_in(&mut tx, id, Power::Awake, PowerReason::Request).await?;
    store.commit(tx).await?;
    store.local_writes().mark(id);
    Ok(woken)
}

/// Whether Playground `id` is meant to run and asleep: what a request may
/// wake ([`set_power_in`]'s condition for `awake`).
async fn asleep(conn: &mut Conn, id: i64) -> Result<bool> {
    let found: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM playgrounds WHERE id = $1 AND power = $2 AND desired_state = $3 AND job_mode = 0",
    )
    .bind(id)
    .bind(Power::Asleep.as_str())
    .bind(DesiredState::Running.as_str())
    .fetch_optional(&mut *conn)
    .await?;
    Ok(found.is_some())
}

/// Puts Playground `id` to sleep for being idle, if it still is: awake,
/// `running`, and no activity, no wake and no convergence after `cutoff`.
/// Fenced by the reconciler's lease. Answers whether it did.
pub async fn sleep_if_idle(store: &Store, fence: Fence<'_>, id: i64, cutoff: Timestamp) -> Result<Fenced<bool>> {
    let cutoff = time::to_db(&cutoff);
    write(store, fence, id, async |tx, _current| {
        let done = sqlx::query(
            "UPDATE playgrounds SET power = $1, power_reason = $2, power_changed_at = $3, \
             generation = generation + 1, updated_at = $3 \
             WHERE id = $4 AND power = $5 AND status = $6 AND desired_state = $7 AND job_mode = 0 \
             AND (last_active_at IS NULL OR last_active_at <= $8) \
             AND (running_since IS NULL OR running_since <= $8) \
             AND (power_changed_at IS NULL OR power_changed_at <= $8)",
        )
        .bind(Power::Asleep.as_str())
        .bind(PowerReason::Idle.as_str())
        .bind(time::to_db(&time::now()))
        .bind(id)
        .bind(Power::Awake.as_str())
        .bind(PlaygroundStatus::Running.as_str())
        .bind(DesiredState::Running.as_str())
        .bind(&cutoff)
        .execute(&mut *tx)
        .await?;
        Ok(done.rows_affected() > 0)
    })
    .await
}

/// Records Playground `id` converged asleep at `generation`: every
/// container stopped (`services`). Status `sleeping` with `slept_at`, and
/// `playground.slept` with the reason, the first time. Nothing when a
/// newer generation (a wake) landed meanwhile. Answers whether the status
/// changed (what the edge routes depends on).
pub async fn record_slept(
    store: &Store,
    fence: Fence<'_>,
    id: i64,
    services: &[ServiceStatus],
    generation: i64,
) -> Result<Fenced<bool>> {
    write(store, fence, id, async |tx, current: Playground| {
        if current.generation != generation || current.sleep.power != Power::Asleep {
            return Ok(false);
        }
        let json = serde_json::to_string(services).map_err(|e| crate::Error::Internal(e.to_string()))?;
        let now = time::to_db(&time::now());
        if current.status == PlaygroundStatus::Sleeping && current.observed_generation == generation {
            if current.services != services {
                sqlx::query("UPDATE playgrounds SET services_status = $1 WHERE id = $2")
                    .bind(json)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
            return Ok(false);
        }
        sqlx::query(
            "UPDATE playgrounds SET status = $1, observed_generation = $2, slept_at = $3, services_status = $4, \
             error_message = NULL, error_step = NULL, updated_at = $3 WHERE id = $5",
        )
        .bind(PlaygroundStatus::Sleeping.as_str())
        .bind(generation)
        .bind(&now)
        .bind(json)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if current.status != PlaygroundStatus::Sleeping {
            let reason = current.sleep.reason.unwrap_or(PowerReason::Api);
            events::record(
                tx,
                NewEvent::new(current.account_id, "playground", id, "slept")
                    .playground_name(&current.name)
                    .metadata(serde_json::json!({"reason": reason})),
            )
            .await?;
            status_event(tx, &current, PlaygroundStatus::Sleeping).await?;
        }
        Ok(true)
    })
    .await
}

/// Records activity at `at` for Playgrounds `ids` (the edge saw requests
/// or open connections): `last_active_at` moves forward only.
pub async fn touch(store: &Store, ids: &[i64], at: Timestamp) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let at = time::to_db(&at);
    let mut tx = store.write().await?;
    for id in ids {
        sqlx::query(
            "UPDATE playgrounds SET last_active_at = $1 WHERE id = $2 AND (last_active_at IS NULL OR last_active_at < $1)",
        )
        .bind(&at)
        .bind(*id)
        .execute(&mut *tx)
        .await?;
    }
    store.commit(tx).await?;
    for id in ids {
        store.local_writes().mark(*id);
    }
    Ok(())
}

#[cfg(test)]
#[path = "power_tests.rs"]
mod tests;
