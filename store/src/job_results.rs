//! Job results: what a finished job-mode Playground leaves behind (its exit
//! code, the tail of its watched services' logs, and the last lines of every
//! service), written by the Playground reconciler, read by the API.
//!
//! Lifecycle of a job-mode Playground once every watched service has exited:
//! 1. [`record_completion`]: in one fenced transaction, the result and the
//!    cached logs are stored, the Playground becomes status and desired state
//!    `complete` (a new generation), `expires_at` moves to the end of the
//!    retention period, and `playground.completed` plus
//!    `playground.status.changed` are written.
//! 2. The reconciler removes the host objects, then [`release_host`] records
//!    that the host is clean (`host_released_at`, and `observed_generation`
//!    catches up). A crash between 1 and 2 is finished by the next pass from
//!    the stored desired state: the result is never recomputed.
//! 3. The row (with its result and logs, by `ON DELETE CASCADE`) goes on
//!    DELETE or when `expires_at` passes, with `playground.destroyed`.
//!
//! Invariants: a Playground has at most one result and it never changes
//! once written; a released Playground ([`HOLDS_HOST`] false) holds nothing
//! on its Playroom, so it neither locks its Playspec nor counts against the
//! Playground quota.

use sqlx::Row;

use super::events;
use super::fence::{Fence, Fenced};
use super::playground_status::{status_event, write};
use super::shapes::maybe_one;
use super::{On, Store};
use crate::{Error, Result};
use play_model::model::event::NewEvent;
use play_model::playground::job::{Completion, JobResult};
use play_model::playground::state::{DesiredState, PlaygroundStatus};
use play_model::time;

/// Lines kept per service: the logs endpoint's largest `tail`.
pub const MAX_CACHED_LINES: usize = 1000;

/// SQL condition, on a `playgrounds` row aliased `g`, that holds while the
/// Playground may still have objects on its host: anything but a finished
/// job whose host objects are gone. A macro so that other queries can
/// `concat!` it into their constant text.
macro_rules! holds_host {
    () => {
        "NOT EXISTS (SELECT 1 FROM playground_job_results r \
         WHERE r.playground_id = g.id AND r.host_released_at IS NOT NULL)"
    };
}
pub(crate) use holds_host;

/// [`holds_host!`] as a constant.
pub const HOLDS_HOST: &str = holds_host!();

fn to_json<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Internal(e.to_string()))
}

/// The result of Playground `playground_id`, if its job completed. The
/// caller has checked that the Playground is the account's.
pub async fn get(on: impl Into<On<'_>>, playground_id: i64) -> Result<Option<JobResult>> {
    let query = sqlx::query(
        "SELECT exit_code, completed_at, tail_logs, host_released_at FROM playground_job_results \
         WHERE playground_id = $1",
    )
    .bind(playground_id);
    maybe_one(on, query, |r| {
        Ok(columns!(
            r,
            JobResult {
                exit_code,
                completed_at => time,
                tail_logs,
                host_released_at => opt_time,
            }
        ))
    })
    .await
}

/// The cached lines of `service` of a completed job (`None`: the service
/// did not run, or the job has not completed).
pub async fn cached_logs(store: &Store, playground_id: i64, service: &str) -> Result<Option<Vec<String>>> {
    let row = sqlx::query("SELECT lines FROM playground_job_logs WHERE playground_id = $1 AND service = $2")
        .bind(playground_id)
        .bind(service)
        .fetch_optional(store.pool())
        .await?;
    row.map(|r| {
        let text: String = r.try_get("lines")?;
        super::parse_json(&text, "playground_job_logs", playground_id, "lines")
    })
    .transpose()
}

/// Records a finished job (see the [module documentation](self), step 1).
///
/// Returns [`Fenced::Lost`] when the lease is lost (nothing written).
/// Writes nothing, and returns `Held`, when the Playground no longer wants
/// to run (a DELETE or the expiry came first: it is destroyed without a result)
/// or when a result is already stored (a repeated pass): the caller reloads
/// the Playground and carries on from its desired state.
pub async fn record_completion(store: &Store, fence: Fence<'_>, id: i64, done: &Completion<'_>) -> Result<Fenced> {
    write(store, fence, id, async |tx, current| {
        if current.desired_state != DesiredState::Running || get(&mut *tx, id).await?.is_some() {
            return Ok(());
        }
        let completed_at = time::to_db(&done.completed_at);
        sqlx::query(
            "INSERT INTO playground_job_results (playground_id, exit_code, completed_at, tail_logs) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(id)
        .bind(done.exit_code)
        .bind(&completed_at)
        .bind(done.tail_logs)
        .execute(&mut *tx)
        .await?;
        for (service, lines) in done.logs {
            let kept = &lines[lines.len().saturating_sub(MAX_CACHED_LINES)..];
            sqlx::query("INSERT INTO playground_job_logs (playground_id, service, lines) VALUES ($1, $2, $3)")
                .bind(id)
                .bind(service)
                .bind(to_json(&kept)?)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query(
            "UPDATE playgrounds SET status = $1, desired_state = $2, generation = generation + 1, \
             services_status = $3, expires_at = $4, error_message = NULL, error_step = NULL, updated_at = $5 \
             WHERE id = $6",
        )
        .bind(PlaygroundStatus::Complete.as_str())
        .bind(DesiredState::Complete.as_str())
        .bind(to_json(&done.services)?)
        .bind(time::to_db(&done.keep_until))
        .bind(&completed_at)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        events::record(
            tx,
            NewEvent::new(current.account_id, "playground", id, "completed").playground_name(&current.name).metadata(
                serde_json::json!({"exit_code": done.exit_code, "completed_at": completed_at, "watched": done.watched}),
            ),
        )
        .await?;
        status_event(tx, &current, PlaygroundStatus::Complete).await?;
        Ok(())
    })
    .await
}

/// Records that a completed job's host objects are all gone (step 2): the
/// Playground now holds nothing on its host, and `observed_generation`
/// reaches `generation`. Idempotent; no event (the status stays
/// `complete`). [`Fenced::Lost`] when the lease is lost.
pub async fn release_host(store: &Store, fence: Fence<'_>, id: i64) -> Result<Fenced> {
    write(store, fence, id, async |tx, current| {
        let now = time::to_db(&time::now());
        if current.desired_state != DesiredState::Complete {
            return Ok(());
        }
        let released = sqlx::query(
            "UPDATE playground_job_results SET host_released_at = $1 \
             WHERE playground_id = $2 AND host_released_at IS NULL",
        )
        .bind(&now)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if released.rows_affected() > 0 {
            sqlx::query("UPDATE playgrounds SET observed_generation = generation, updated_at = $1 WHERE id = $2")
                .bind(&now)
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        Ok(())
    })
    .await
}

#[cfg(test)]
#[path = "job_results_tests.rs"]
mod tests;
