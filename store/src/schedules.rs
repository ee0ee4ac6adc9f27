//! Schedules and their runs (issue #30; the rules are `play_model::schedule`,
//! the loop `play_reconcilers::schedule`).
//!
//! Invariants:
//! - one schedule per template ([`sync_in`] runs in every transaction that
//!   changes the template's versions): its settings are those of the
//!   latest version, or none when that version has no enabled schedule;
//! - one run row per (schedule, scheduled time), by a unique index: a
//!   crash, a restart or a second replica can never start a time twice;
//! - the cursor (`next_at`) moves only from the value the pass read
//!   ([`record_plan`]), in the transaction that writes the runs it
//!   decided: two passes on one schedule cannot both act on one time;
//! - launch variables are sealed, never shown, and never in events.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::launch_settings::{self, Activated, Owner};
use super::shapes::all;
use super::{Conn, Store, events};
use crate::{Error, Result};
use play_model::compose::svc;
use play_model::model::event::{Actor, NewEvent};
use play_model::model::schedule::{RunEnd, RunStatus, Schedule, ScheduleRun, ScheduleSettings};
use play_model::schedule::{DEFAULT_STARTING_DEADLINE, Plan, Policy};
use play_model::time::{self, Timestamp};

const COLUMNS: &str = "id, account_id, template_id, config, config_version, playroom_id, variables, paused, next_at, \
                       last_success_at, last_failure_at, consecutive_failures, created_at, updated_at";
const RUN_COLUMNS: &str =
    "id, schedule_id, scheduled_at, status, reason, playground_id, started_at, finished_at, exit_code, log_tail";
/// The longest log tail a run keeps, in bytes.
pub const MAX_LOG_TAIL_BYTES: usize = 16 * 1024;

launch_settings::setting!(Schedule, Owner::Schedules, ScheduleSettings, activated = reset_cursor_in, |row| {
    next_at: time::opt_from_db(row.try_get("next_at")?)?,
    last_success_at: time::opt_from_db(row.try_get("last_success_at")?)?,
    last_failure_at: time::opt_from_db(row.try_get("last_failure_at")?)?,
    consecutive_failures: row.try_get("consecutive_failures")?,
});

fn run_from_row(row: &AnyRow) -> Result<ScheduleRun> {
    Ok(ScheduleRun {
        id: row.try_get("id")?,
        schedule_id: row.try_get("schedule_id")?,
        scheduled_at: time::from_db(&row.try_get::<String, _>("scheduled_at")?)?,
        status: row.try_get::<String, _>("status")?.parse().map_err(Error::Internal)?,
        reason: row.try_get("reason")?,
        playground_id: row.try_get("playground_id")?,
        started_at: time::opt_from_db(row.try_get("started_at")?)?,
        finished_at: time::opt_from_db(row.try_get("finished_at")?)?,
        exit_code: row.try_get("exit_code")?,
        log_tail: row.try_get("log_tail")?,
    })
}

/// The settings `body`'s `svc.schedule_config` asks for, when enabled and
/// valid (the body was validated when its version was made).
fn settings_of(body: &str) -> Option<ScheduleSettings> {
    let info = svc::validate_template(body).ok()?;
    let config = info.schedule_config.filter(|c| c.enabled)?;
    let cron = config.cron.clone()?;
    let policy: Policy = config.concurrency_policy.as_deref().map_or(Ok(Policy::default()), str::parse).ok()?;
    let deadline = config.starting_deadline_seconds.unwrap_or(DEFAULT_STARTING_DEADLINE.num_seconds().unsigned_abs());
    Some(ScheduleSettings {
        cron,
        time_zone: config.time_zone.clone().unwrap_or_else(|| "UTC".into()),
        concurrency_policy: policy.as_str().to_owned(),
        starting_deadline_seconds: deadline,
        marquee_id: config.marquee_id,
    })
}

/// Brings template `template_id`'s schedule in line with its latest
/// version, in the caller's transaction: made when that version has an
/// enabled schedule, its settings replaced (and its cursor reset when
/// they change), or switched off. Its id, if it has one.
pub async fn sync_in(
    conn: &mut Conn,
    account_id: i64,
    template_id: i64,
    limits: &play_model::model::quota::QuotaLimits,
) -> Result<Option<i64>> {
    let (settings, version) = match launch_settings::latest_body_in(&mut *conn, account_id, template_id).await? {
        Some((version, body)) => (settings_of(&body), version),
        None => (None, 0),
    };
    let existing = launch_settings::of_template_row_in::<Schedule>(&mut *conn, template_id).await?;
    let synced = launch_settings::Synced {
        account_id,
        template_id,
        version,
        author_may_read_playzones: false,
        reset: "next_at = NULL",
        limits,
    };
    launch_settings::sync_row_in(conn, existing.as_ref(), settings.as_ref(), synced).await
}

/// Beside an activation ([`launch_settings::activate`]): a change that
/// starts or stops the schedule resets its cursor, so times that passed
/// while it was paused or had no Playroom are not "missed".
async fn reset_cursor_in(conn: &mut Conn, id: i64, done: Activated, _may_read_playzones: bool) -> Result<()> {
    if done.after != done.before {
        sqlx::query("UPDATE schedules SET next_at = NULL WHERE id = $1").bind(id).execute(&mut *conn).await?;
    }
    Ok(())
}

/// Sets the cursor of a schedule that has none (it just started), if
/// still none; whether this call set it.
pub async fn start_cursor(store: &Store, id: i64, at: Timestamp) -> Result<bool> {
    store
        .in_write(async |conn| {
            let done = sqlx::query("UPDATE schedules SET next_at = $1 WHERE id = $2 AND next_at IS NULL")
                .bind(time::to_db(&at))
                .bind(id)
                .execute(&mut *conn)
                .await?;
            Ok(done.rows_affected() == 1)
        })
        .await
}

/// Writes what a pass decided (`plan`, made from cursor `from`): the
/// missed times, the time to start (a `pending` run), and the new cursor,
/// in one transaction, only if the cursor is still `from`. The new
/// pending run's id; `Ok(None)` also when another pass moved the cursor
/// first (it wrote the runs).
pub async fn record_plan(store: &Store, schedule: &Schedule, from: Timestamp, plan: &Plan) -> Result<Option<i64>> {
    store
        .in_write(async |conn| {
            let moved = sqlx::query("UPDATE schedules SET next_at = $1 WHERE id = $2 AND next_at = $3")
                .bind(plan.next.as_ref().map(time::to_db))
                .bind(schedule.id)
                .bind(time::to_db(&from))
                .execute(&mut *conn)
                .await?;
            if moved.rows_affected() == 0 {
                return Ok(None);
            }
            for at in &plan.missed {
                let reason = "its time passed while play was not running it (past the starting deadline, or not \
                              the latest missed time)";
                insert_run_in(conn, schedule.id, *at, RunStatus::Missed, Some(reason)).await?;
            }
            if !plan.missed.is_empty() {
                let metadata = serde_json::json!({
                    "schedule_id": schedule.id, "template_id": schedule.template_id,
                    "first": time::to_db(&plan.missed[0]), "count": plan.missed.len(), "more": plan.more_missed,
                });
                let event = NewEvent::new(schedule.account_id, "schedule", schedule.id, "run.missed");
                events::record(conn, event.actor(Actor::System).metadata(metadata)).await?;
            }
            match plan.start {
                Some(at) => insert_run_in(conn, schedule.id, at, RunStatus::Pending, None).await,
                None => Ok(None),
            }
        })
        .await
}

async fn insert_run_in(
    conn: &mut Conn,
    schedule_id: i64,
    at: Timestamp,
    status: RunStatus,
    reason: Option<&str>,
) -> Result<Option<i64>> {
    let row = sqlx::query(
        "INSERT INTO schedule_runs (schedule_id, scheduled_at, status, reason) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (schedule_id, scheduled_at) DO NOTHING RETURNING id",
    )
    .bind(schedule_id)
    .bind(time::to_db(&at))
    .bind(status.as_str())
    .bind(reason)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|r| r.try_get::<i64, _>("id")).transpose()?)
}

/// The schedule's runs that may still change (pending, running), oldest
/// first.
pub async fn open_runs(store: &Store, schedule_id: i64) -> Result<Vec<ScheduleRun>> {
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM schedule_runs WHERE schedule_id = $1 AND status IN ($2, $3) ORDER BY scheduled_at"
    );
    let query = sqlx::query(&sql).bind(schedule_id).bind(RunStatus::Pending.as_str()).bind(RunStatus::Running.as_str());
    let mut conn = store.conn().await?;
    all(&mut *conn, query, run_from_row).await
}

/// The schedule's runs, newest first, at most `limit`.
pub async fn runs(store: &Store, account_id: i64, schedule_id: i64, limit: i64) -> Result<Vec<ScheduleRun>> {
    launch_settings::get::<Schedule>(store, account_id, schedule_id).await?;
    let sql =
        format!("SELECT {RUN_COLUMNS} FROM schedule_runs WHERE schedule_id = $1 ORDER BY scheduled_at DESC LIMIT $2");
    let mut conn = store.conn().await?;
    all(&mut *conn, sqlx::query(&sql).bind(schedule_id).bind(limit), run_from_row).await
}

/// Marks pending run `run_id` running in Playground `playground_id`.
pub async fn run_started(store: &Store, schedule: &Schedule, run_id: i64, playground_id: i64) -> Result<()> {
    store
        .in_write(async |conn| {
            sqlx::query(
                "UPDATE schedule_runs SET status = $1, playground_id = $2, started_at = $3 \
                 WHERE id = $4 AND status = $5",
            )
            .bind(RunStatus::Running.as_str())
            .bind(playground_id)
            .bind(time::to_db(&time::now()))
            .bind(run_id)
            .bind(RunStatus::Pending.as_str())
            .execute(&mut *conn)
            .await?;
            let metadata =
                serde_json::json!({"schedule_id": schedule.id, "run_id": run_id, "playground_id": playground_id});
            let event = NewEvent::new(schedule.account_id, "schedule", schedule.id, "run.started");
            events::record(conn, event.actor(Actor::System).metadata(metadata)).await.map(|_| ())
        })
        .await
}

/// Closes open run `run_id` as `end` says and keeps the schedule's
/// health (last success, consecutive failures) with it; a run closed
/// already is left alone.
pub async fn finish_run(store: &Store, schedule: &Schedule, run_id: i64, end: RunEnd) -> Result<()> {
    let mut tail = end.log_tail.unwrap_or_default();
    if tail.len() > MAX_LOG_TAIL_BYTES {
        let mut cut = tail.len() - MAX_LOG_TAIL_BYTES;
        while !tail.is_char_boundary(cut) {
            cut += 1;
        }
        tail = tail[cut..].to_owned();
    }
    store
        .in_write(async |conn| {
            let now = time::to_db(&time::now());
            let closed = sqlx::query(
                "UPDATE schedule_runs SET status = $1, reason = $2, exit_code = $3, log_tail = $4, finished_at = $5 \
                 WHERE id = $6 AND status IN ($7, $8)",
            )
            .bind(end.status.as_str())
            .bind(end.reason.as_deref())
            .bind(end.exit_code)
            .bind((!tail.is_empty()).then_some(tail.as_str()))
            .bind(&now)
            .bind(run_id)
            .bind(RunStatus::Pending.as_str())
            .bind(RunStatus::Running.as_str())
            .execute(&mut *conn)
            .await?;
            if closed.rows_affected() == 0 {
                return Ok(());
            }
            let health = match end.status {
                RunStatus::Succeeded => {
                    Some("UPDATE schedules SET last_success_at = $1, consecutive_failures = 0 WHERE id = $2")
                }
                RunStatus::Failed => Some(
                    "UPDATE schedules SET last_failure_at = $1, consecutive_failures = consecutive_failures + 1 \
                     WHERE id = $2",
                ),
                _ => None,
            };
            if let Some(health) = health {
                sqlx::query(health).bind(&now).bind(schedule.id).execute(&mut *conn).await?;
            }
            let metadata = serde_json::json!({
                "schedule_id": schedule.id, "run_id": run_id, "status": end.status.as_str(), "exit_code": end.exit_code,
                "reason": end.reason,
            });
            let event = match end.status {
                RunStatus::Skipped => NewEvent::new(schedule.account_id, "schedule", schedule.id, "run.skipped"),
                RunStatus::Missed => NewEvent::new(schedule.account_id, "schedule", schedule.id, "run.missed"),
                _ => NewEvent::new(schedule.account_id, "schedule", schedule.id, "run.completed"),
            };
            events::record(conn, event.actor(Actor::System).metadata(metadata)).await.map(|_| ())
        })
        .await
}

#[cfg(test)]
#[path = "schedules_tests.rs"]
mod tests;
