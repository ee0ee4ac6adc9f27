//! Schedules and their runs as stored (issue #30; `store::schedules`, the
//! rules in `crate::schedule`).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// The schedule settings of a template's latest version, as play reads
/// `svc.schedule_config` (stored as JSON on the schedule).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleSettings {
    pub cron: String,
    pub time_zone: String,
    pub concurrency_policy: String,
    pub starting_deadline_seconds: u64,
    pub marquee_id: Option<u64>,
}

/// A template's schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub id: i64,
    pub account_id: i64,
    pub template_id: i64,
    /// `None`: the template's latest version has no enabled schedule.
    pub settings: Option<ScheduleSettings>,
    /// The template version the settings come from.
    pub config_version: i64,
    /// Where runs start; `None` until the account says.
    pub playroom_id: Option<i64>,
    /// Whether launch variables are set (their values are sealed and
    /// never shown).
    pub has_variables: bool,
    pub paused: bool,
    /// The first fire time not handled yet; `None` while not active.
    pub next_at: Option<Timestamp>,
    pub last_success_at: Option<Timestamp>,
    pub last_failure_at: Option<Timestamp>,
    pub consecutive_failures: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Schedule {
    /// Why the schedule does not run, if it does not: what the account
    /// must do, in words.
    pub fn condition(&self) -> Option<&'static str> {
        if self.settings.is_none() {
            Some("disabled: the template's latest version has no enabled svc.schedule_config")
        } else if self.playroom_id.is_none() {
            Some("needs a Playroom: PATCH /api/schedules/{id} with playroom_id, or PUT /api/launch_defaults")
        } else if self.paused {
            Some("paused")
        } else {
            None
        }
    }
}

/// Where a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Recorded, its Playground not launched yet.
    Pending,
    Running,
    Succeeded,
    Failed,
    /// Not started: the concurrency policy, or a launch that was refused.
    Skipped,
    /// Its time passed while play was not running it (beyond the
    /// starting deadline, or not the latest missed time).
    Missed,
    /// Destroyed by a newer run (`concurrency_policy: replace`).
    Replaced,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Pending => "pending",
            RunStatus::Running => "running",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Skipped => "skipped",
            RunStatus::Missed => "missed",
            RunStatus::Replaced => "replaced",
        }
    }

    /// Whether the run may still change (it holds a Playground or will).
    pub fn is_open(self) -> bool {
        matches!(self, RunStatus::Pending | RunStatus::Running)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RunStatus {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        [
            RunStatus::Pending,
            RunStatus::Running,
            RunStatus::Succeeded,
            RunStatus::Failed,
            RunStatus::Skipped,
            RunStatus::Missed,
            RunStatus::Replaced,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
        .ok_or_else(|| format!("unknown run status {text:?}"))
    }
}

/// One scheduled time of a schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleRun {
    pub id: i64,
    pub schedule_id: i64,
    pub scheduled_at: Timestamp,
    pub status: RunStatus,
    pub reason: Option<String>,
    pub playground_id: Option<i64>,
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    pub exit_code: Option<i64>,
    pub log_tail: Option<String>,
}

/// What `PATCH /api/schedules/{id}` or `PATCH /api/triggers/{id}` sets (a
/// launch setting of either kind); `None` leaves a field.
#[derive(Clone, Debug, Default)]
pub struct Activation {
    /// `Some(None)` clears the Playroom (the setting stops).
    pub playroom_id: Option<Option<i64>>,
    pub variables: Option<BTreeMap<String, serde_json::Value>>,
    pub paused: Option<bool>,
}

impl Activation {
    /// Whether the change makes the setting act (a Playroom given, or
    /// unpaused): it launches Playgrounds from then on, so the caller needs
    /// `playgrounds:write`, and a trigger takes the caller's right to read
    /// Playzones.
    pub fn starts(&self) -> bool {
        matches!(self.playroom_id, Some(Some(_))) || self.paused == Some(false)
    }
}

/// An account's launch defaults (`/api/launch_defaults`): where a new
/// schedule or trigger of the account launches until it is given a
/// Playroom of its own. Adopted when a template's version turns one on
/// and it has no Playroom; never moves one that has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchDefaults {
    /// One of the account's Playrooms; `None`: new settings wait.
    pub playroom_id: Option<i64>,
    /// Whether the key that chose the Playroom may read Playzones: a
    /// pull-request trigger that adopts it may act only if so, and only if
    /// the version's author may too.
    pub may_read_playzones: bool,
}

/// What a change of the launch defaults did: the defaults as stored, and
/// the schedules and triggers that took the Playroom (their loops are to
/// be woken).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adopted {
    pub defaults: LaunchDefaults,
    pub schedules: Vec<i64>,
    pub triggers: Vec<i64>,
}

/// How an open run ended.
#[derive(Clone, Debug)]
pub struct RunEnd {
    pub status: RunStatus,
    pub reason: Option<String>,
    pub exit_code: Option<i64>,
    pub log_tail: Option<String>,
}
