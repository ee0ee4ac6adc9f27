//! How schedules and their runs are shown (`/api/schedules`). Launch
//! variables are never shown, only whether they are set.

use chrono::{DateTime, Utc};
use play_model::model::schedule::{Schedule, ScheduleRun};
use serde::Serialize;
use utoipa::ToSchema;

/// A template's schedule.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleView {
    pub id: i64,
    pub template_id: i64,
    /// The template version the settings come from.
    pub config_version: i64,
    /// `null` when the latest version has no enabled `svc.schedule_config`.
    pub cron: Option<String>,
    pub time_zone: Option<String>,
    /// `forbid`, `allow` or `replace`.
    pub concurrency_policy: Option<String>,
    pub starting_deadline_seconds: Option<u64>,
    /// As the template gives it (the contract does not say what it names).
    pub marquee_id: Option<u64>,
    /// Where runs start; `null` until set.
    pub playroom_id: Option<i64>,
    /// Whether launch variables are set (their values are never shown).
    pub has_variables: bool,
    pub paused: bool,
    /// Why the schedule does not run, or `null` when it does.
    pub condition: Option<String>,
    /// The next time a run is due, while it runs.
    pub next_run_at: Option<DateTime<Utc>>,
    pub last_success_at: Option<DateTime<Utc>>,
    pub last_failure_at: Option<DateTime<Utc>>,
    /// Failed runs since the last success: a schedule that keeps failing
    /// shows it here rather than failing silently.
    pub consecutive_failures: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<Schedule> for ScheduleView {
    fn from(s: Schedule) -> Self {
        let condition = s.condition().map(str::to_owned);
        let settings = s.settings.as_ref();
        ScheduleView {
            id: s.id,
            template_id: s.template_id,
            config_version: s.config_version,
            cron: settings.map(|c| c.cron.clone()),
            time_zone: settings.map(|c| c.time_zone.clone()),
            concurrency_policy: settings.map(|c| c.concurrency_policy.clone()),
            starting_deadline_seconds: settings.map(|c| c.starting_deadline_seconds),
            marquee_id: settings.and_then(|c| c.marquee_id),
            playroom_id: s.playroom_id,
            has_variables: s.has_variables,
            paused: s.paused,
            next_run_at: if condition.is_none() { s.next_at } else { None },
            condition,
            last_success_at: s.last_success_at,
            last_failure_at: s.last_failure_at,
            consecutive_failures: s.consecutive_failures,
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

/// One scheduled time of a schedule.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunView {
    pub id: i64,
    pub scheduled_at: DateTime<Utc>,
    /// `pending`, `running`, `succeeded`, `failed`, `skipped`, `missed` or
    /// `replaced`.
    pub status: String,
    /// Why it was skipped, missed, failed to start or replaced.
    pub reason: Option<String>,
    pub playground_id: Option<i64>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub exit_code: Option<i64>,
    pub duration_seconds: Option<f64>,
    /// The end of the job's logs (at most 16 KiB).
    pub log_tail: Option<String>,
}

impl From<ScheduleRun> for RunView {
    fn from(r: ScheduleRun) -> Self {
        let duration_seconds = match (r.started_at, r.finished_at) {
            (Some(start), Some(end)) => Some((end - start).num_milliseconds() as f64 / 1000.0),
            _ => None,
        };
        RunView {
            id: r.id,
            scheduled_at: r.scheduled_at,
            status: r.status.as_str().to_owned(),
            reason: r.reason,
            playground_id: r.playground_id,
            started_at: r.started_at,
            finished_at: r.finished_at,
            exit_code: r.exit_code,
            duration_seconds,
            log_tail: r.log_tail,
        }
    }
}

/// The account's launch defaults.
#[derive(Debug, Serialize, ToSchema)]
pub struct LaunchDefaultsView {
    /// Where a schedule or trigger with no Playroom of its own launches;
    /// `null`: such settings wait (their `condition` says so).
    pub playroom_id: Option<i64>,
    /// Whether a pull-request trigger that takes the Playroom may act: the
    /// key that chose it may read Playzones.
    pub pull_requests_allowed: bool,
}

impl From<play_model::model::schedule::LaunchDefaults> for LaunchDefaultsView {
    fn from(d: play_model::model::schedule::LaunchDefaults) -> Self {
        Self { playroom_id: d.playroom_id, pull_requests_allowed: d.may_read_playzones }
    }
}
