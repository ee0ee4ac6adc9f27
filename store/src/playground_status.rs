//! The Playground reconciler's writes: creation step, errors, observed
//! services, status transitions, expiry and the final delete.
//!
//! Invariants:
//! - Every write is **fenced**: it runs in one transaction that first checks
//!   the caller's reconcile lease ([`leases::begin_fenced`]); a replica that
//!   lost its lease (or finds the row gone: only a lease holder deletes it)
//!   writes nothing and gets [`Fenced::Lost`] (see [`super::fence`]).
//! - Every status change writes its outbox event in the same transaction
//!   (`playground.status.changed`, `playground.error`, `playground.expired`,
//!   `playground.destroyed`), so a committed change always has its event.
//! - Writes are idempotent: writing what is already stored changes nothing
//!   and records no event, so a pass that runs twice reports once.

use sqlx::Row;

use super::events;
pub use super::fence::{Fence, Fenced};
use super::leases;
use super::playgrounds::{self, set_in};
use super::shapes::column;
use super::{Conn, Store};
use crate::Result;
use play_model::model::event::{Actor, NewEvent};
use play_model::playground::model::{Playground, ServiceStatus};
use play_model::playground::state::{CreationStep, DesiredState, PlaygroundStatus, Power, PowerReason};
use play_model::time::{self, Timestamp};

/// Every Playground the resync should visit: all rows (a running one may
/// have drifted on its host; a destroying one is finished by a pass).
pub async fn ids_to_reconcile(store: &Store) -> Result<Vec<i64>> {
    let query = sqlx::query("SELECT id FROM playgrounds WHERE status <> $1 ORDER BY id")
        .bind(PlaygroundStatus::Destroyed.as_str());
    column(store, query, "id").await
}

/// The Playroom of Playground `id`, `None` once it is gone. A
/// Playground never moves to another Playroom.
pub async fn playroom_of(store: &Store, id: i64) -> Result<Option<i64>> {
    let query = sqlx::query("SELECT playroom_id FROM playgrounds WHERE id = $1").bind(id);
    Ok(column(store, query, "playroom_id").await?.into_iter().next())
}

async fn account_of(conn: &mut Conn, id: i64) -> Result<Option<i64>> {
    let row =
        sqlx::query("SELECT account_id FROM playgrounds WHERE id = $1").bind(id).fetch_optional(&mut *conn).await?;
    row.map(|r| r.try_get("account_id")).transpose().map_err(Into::into)
}

/// The Playground `id` whatever its account, or `None` once it is gone.
pub async fn load(store: &Store, id: i64) -> Result<Option<Playground>> {
    let mut conn = store.conn().await?;
    match load_in(&mut conn, id).await {
        Err(crate::Error::NotFound(_)) => Ok(None),
        other => other,
    }
}

async fn load_in(conn: &mut Conn, id: i64) -> Result<Option<Playground>> {
    let Some(account_id) = account_of(conn, id).await? else { return Ok(None) };
    Ok(Some(playgrounds::get(conn, account_id, id).await?))
}

/// Runs `work` on Playground `id` as `read` finds it now, in one write
/// transaction fenced by `fence` ([`leases::write_fenced`]), with the row
/// locked from before `read` ([`super::shapes::lock_row`]), that commits
/// when `work` succeeds. [`Fenced::Lost`], with nothing written, when the
/// lease is lost or `read` finds no row (only a lease holder deletes it).
async fn write_read<R, T>(
    store: &Store,
    fence: Fence<'_>,
    id: i64,
    read: impl AsyncFnOnce(&mut Conn) -> Result<Option<R>>,
    work: impl AsyncFnOnce(&mut Conn, R) -> Result<T>,
) -> Result<Fenced<T>> {
    let written = leases::write_fenced(store, fence, id, async |tx| {
        // An API change committed between `read` and `work` would be
        // written over: lock the row first (`shapes::lock_row`).
        super::shapes::lock_row(tx, "playgrounds", id).await?;
        match read(tx).await? {
            Some(current) => Ok(Some(work(tx, current).await?)),
            None => Ok(None),
        }
    })
    .await?;
    Ok(match written {
        Fenced::Held(Some(out)) => Fenced::Held(out),
        Fenced::Held(None) | Fenced::Lost => Fenced::Lost,
    })
}

/// [`write_read`] with the whole row: the shape of every fenced write of a
/// Playground (here, in `rollouts` and in `job_results`).
pub(super) async fn write<T>(
    store: &Store,
    fence: Fence<'_>,
    id: i64,
    work: impl AsyncFnOnce(&mut Conn, Playground) -> Result<T>,
) -> Result<Fenced<T>> {
    write_read(store, fence, id, async |tx| load_in(tx, id).await, work).await
}

/// The columns [`record_error`] needs, read without the JSON columns: a
/// Playground whose own row is corrupt can still be failed with a message
/// that says so.
struct Head {
    account_id: i64,
    name: String,
    status: PlaygroundStatus,
    desired_state: DesiredState,
    creation_step: Option<CreationStep>,
    error_message: Option<String>,
    error_step: Option<CreationStep>,
}

/// The [`Head`] of Playground `id`, `None` once it is gone.
async fn head_in(conn: &mut Conn, id: i64) -> Result<Option<Head>> {
    let row = sqlx::query(
        "SELECT account_id, name, status, desired_state, creation_step, error_message, error_step \
         FROM playgrounds WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let head = Head {
        account_id: row.try_get("account_id")?,
        name: row.try_get("name")?,
        status: super::text_column(&row, "playgrounds", id, "status")?,
        desired_state: super::text_column(&row, "playgrounds", id, "desired_state")?,
        creation_step: super::opt_text_column(&row, "playgrounds", id, "creation_step")?,
        error_message: row.try_get("error_message")?,
        error_step: super::opt_text_column(&row, "playgrounds", id, "error_step")?,
    };
    Ok(Some(head))
}

pub(super) async fn status_event(conn: &mut Conn, p: &Playground, to: PlaygroundStatus) -> Result<()> {
    status_changed(conn, p.account_id, p.id, &p.name, p.status, to).await
}

async fn status_changed(
    conn: &mut Conn,
    account_id: i64,
    id: i64,
    name: &str,
    from: PlaygroundStatus,
    to: PlaygroundStatus,
) -> Result<()> {
    events::record(
        conn,
        NewEvent::new(account_id, "playground", id, "status.changed")
            .playground_name(name)
            .actor(Actor::System)
            .metadata(serde_json::json!({"from": from, "to": to})),
    )
    .await?;
    Ok(())
}

/// Records the creation step a pass reached. No event (steps are progress,
/// not state changes).
pub async fn set_step(store: &Store, fence: Fence<'_>, id: i64, step: CreationStep) -> Result<Fenced> {
    write(store, fence, id, async |tx, current| {
        if current.creation_step != Some(step) {
            set_in(tx, "UPDATE playgrounds SET creation_step = $1, updated_at = $2 WHERE id = $3", step.as_str(), id)
                .await?;
        }
        Ok(())
    })
    .await
}

/// Records a failure at `step`. A `terminal` one (retrying cannot fix it)
/// also moves the status to `failed`; a transient one keeps the status and
/// is retried. `playground.error` is written when the message or step is
/// new.
///
/// `creation_step` follows `step` only while the Playground is being
/// created: a `running` one keeps its step (`ready`), because an error
/// after convergence (the host unreachable for a while) is not a step back
/// in its creation. Reads only the row's plain columns, so a Playground
/// whose own JSON columns are corrupt is still failed with that message.
pub async fn record_error(
    store: &Store,
    fence: Fence<'_>,
    id: i64,
    step: CreationStep,
    message: &str,
    terminal: bool,
) -> Result<Fenced> {
    write_read(
        store,
        fence,
        id,
        async |tx| head_in(tx, id).await,
        async |tx, current| {
            let to = if terminal && current.desired_state == DesiredState::Running {
                PlaygroundStatus::Failed
            } else {
                current.status
            };
            let changed = current.error_message.as_deref() != Some(message) || current.error_step != Some(step);
            // How far creation got: an error of a Playground whose creation had
            // finished (running, or failed after it was ready) does not rewind it.
            let finished =
                current.status == PlaygroundStatus::Running || current.creation_step == Some(CreationStep::Ready);
            let creation_step = if finished { current.creation_step } else { Some(step) };
            if changed || to != current.status {
                sqlx::query(
                    "UPDATE playgrounds SET status = $1, error_message = $2, error_step = $3, creation_step = $4, \
                 updated_at = $5 WHERE id = $6",
                )
                .bind(to.as_str())
                .bind(message)
                .bind(step.as_str())
                .bind(creation_step.map(CreationStep::as_str))
                .bind(time::to_db(&time::now()))
                .bind(id)
                .execute(&mut *tx)
                .await?;
            }
            if changed {
                events::record(
                    tx,
                    NewEvent::new(current.account_id, "playground", id, "error")
                        .playground_name(&current.name)
                        .metadata(
                            serde_json::json!({"error_step": step, "error_message": message, "terminal": terminal}),
                        ),
                )
                .await?;
            }
            if to != current.status {
                status_changed(tx, current.account_id, id, &current.name, current.status, to).await?;
            }
            Ok(())
        },
    )
    .await
}

/// Writes the services as observed on the host: the pass reached the host
/// and got through its plan, so an error an earlier pass recorded (the host
/// unreachable, a pull that failed) is over and is cleared, unless the
/// Playground is `failed` (a terminal error stays until it converges). With
/// `converged` (every service up, healthy where it has a healthcheck, for
/// `generation`), the Playground becomes `running` at step `ready`, errors
/// are cleared and `observed_generation`/`last_applied_at` record the
/// convergence. Answers whether the services or the convergence changed
/// (what the edge routes depends on).
pub async fn record_observed(
    store: &Store,
    fence: Fence<'_>,
    id: i64,
    services: &[ServiceStatus],
    converged_generation: Option<i64>,
) -> Result<Fenced<bool>> {
    write(store, fence, id, async |tx, current| {
        let json = serde_json::to_string(services).map_err(|e| crate::Error::Internal(e.to_string()))?;
        let now = time::to_db(&time::now());
        let mut changed = current.services != services;
        if current.services != services {
            set_in(tx, "UPDATE playgrounds SET services_status = $1, updated_at = $2 WHERE id = $3", json, id).await?;
        }
        let stale_error = current.error_message.is_some() || current.error_step.is_some();
        if stale_error && current.status != PlaygroundStatus::Failed {
            sqlx::query(
                "UPDATE playgrounds SET error_message = NULL, error_step = NULL, updated_at = $1 WHERE id = $2",
            )
            .bind(&now)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        // A pass that converged an older generation (a rollout landed during
        // it) does not call the Playground running: the next pass judges the
        // new generation.
        if let Some(generation) = converged_generation
            && current.desired_state == DesiredState::Running
            && current.sleep.power == Power::Awake
            && current.generation == generation
            && (current.status != PlaygroundStatus::Running || current.observed_generation != generation)
        {
            // `running_since` starts the idle clock of sleep (issue #32)
            // each time it becomes running.
            sqlx::query(
                "UPDATE playgrounds SET status = $1, observed_generation = $2, last_applied_at = $3, \
                 creation_step = $4, error_message = NULL, error_step = NULL, updated_at = $3, \
                 running_since = CASE WHEN status = $1 THEN running_since ELSE $3 END WHERE id = $5",
            )
            .bind(PlaygroundStatus::Running.as_str())
            .bind(generation)
            .bind(&now)
            .bind(CreationStep::Ready.as_str())
            .bind(id)
            .execute(&mut *tx)
            .await?;
            if current.status == PlaygroundStatus::Sleeping {
                woke_in(tx, &current).await?;
            }
            if current.status != PlaygroundStatus::Running {
                status_event(tx, &current, PlaygroundStatus::Running).await?;
            }
            changed = true;
        }
        Ok(changed)
    })
    .await
}

/// Records `playground.woke` for `current`, which has just converged
/// running after sleeping (in `record_observed`'s transaction).
async fn woke_in(conn: &mut Conn, current: &Playground) -> Result<()> {
    let reason = current.sleep.reason.unwrap_or(PowerReason::Api);
    let asleep_for = current.sleep.slept_at.map(|at| (time::now() - at).num_milliseconds());
    events::record(
        conn,
        NewEvent::new(current.account_id, "playground", current.id, "woke")
            .playground_name(&current.name)
            .metadata(serde_json::json!({"reason": reason, "asleep_ms": asleep_for})),
    )
    .await?;
    Ok(())
}

/// Records `playground.drift.detected` with the `repairs` a pass is about
/// to make. No state change: the Playground stays `running` while the
/// repair runs.
pub async fn record_drift(store: &Store, fence: Fence<'_>, id: i64, repairs: &[String]) -> Result<Fenced> {
    write(store, fence, id, async |tx, current| {
        events::record(
            tx,
            NewEvent::new(current.account_id, "playground", id, "drift.detected")
                .playground_name(&current.name)
                .actor(Actor::System)
                .metadata(serde_json::json!({"repairs": repairs})),
        )
        .await?;
        Ok(())
    })
    .await
}

/// Records that every image of `epoch` was pulled again (a hard restart), so
/// later passes pull only what is missing. No event: progress, not state.
pub async fn record_pulled(store: &Store, fence: Fence<'_>, id: i64, epoch: i64) -> Result<Fenced> {
    write(store, fence, id, async |tx, current| {
        if current.pulled_epoch < epoch {
            set_in(tx, "UPDATE playgrounds SET pulled_epoch = $1, updated_at = $2 WHERE id = $3", epoch, id).await?;
        }
        Ok(())
    })
    .await
}

/// Destroys a Playground whose `expires_at` has passed: desired state
/// `destroyed`, status `destroying`, a new generation, with
/// `playground.expired` and `playground.status.changed`. Returns whether it
/// expired now (`Held(false)` when not yet due or already destroying).
pub async fn expire_if_due(store: &Store, fence: Fence<'_>, id: i64, now: Timestamp) -> Result<Fenced<bool>> {
    write(store, fence, id, async |tx, current| {
        let due = current.expires_at.is_some_and(|at| at <= now);
        if !due || current.desired_state == DesiredState::Destroyed {
            return Ok(false);
        }
        playgrounds::mark_destroying_at(tx, id, now).await?;
        events::record(
            tx,
            NewEvent::new(current.account_id, "playground", id, "expired")
                .playground_name(&current.name)
                .metadata(serde_json::json!({"expires_at": current.expires_at.map(|at| time::to_db(&at))})),
        )
        .await?;
        status_event(tx, &current, PlaygroundStatus::Destroying).await?;
        Ok(true)
    })
    .await
}

/// Deletes a destroyed Playground's row, once its host objects are gone,
/// with `playground.destroyed`. Deleting the row releases the Playspec.
/// Refuses (`Held(false)`) unless desired state is `destroyed`.
pub async fn finish_destroy(store: &Store, fence: Fence<'_>, id: i64) -> Result<Fenced<bool>> {
    write(store, fence, id, async |tx, current| {
        if current.desired_state != DesiredState::Destroyed {
            return Ok(false);
        }
        sqlx::query("DELETE FROM playgrounds WHERE id = $1").bind(id).execute(&mut *tx).await?;
        events::record(
            tx,
            NewEvent::new(current.account_id, "playground", id, "destroyed")
                .playground_name(&current.name)
                .metadata(serde_json::json!({"playspec_id": current.playspec_id, "playroom_id": current.playroom_id})),
        )
        .await?;
        Ok(true)
    })
    .await
}

#[cfg(test)]
#[path = "playground_status_tests.rs"]
mod tests;
