//! Triggers and their targets as stored (issue #30; `store::triggers`, the
//! rules in `crate::trigger`, the loop `play_reconcilers::trigger`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// The trigger settings of a template's latest version, as play reads
/// `svc.trigger_config` (stored as JSON on the trigger).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerSettings {
    /// `push` or `pull_request`.
    pub event_type: String,
    /// The repository followed; `None`: the one the template's build
    /// services name, when they name exactly one.
    pub repo_url: Option<String>,
    /// A branch name or pattern (`*`); `None`: the repository's default
    /// branch (for `pull_request`: any base branch).
    pub branch: Option<String>,
    pub allow_forks: bool,
    pub max_playgrounds: u64,
    /// Kept and shown as given (`docs/decisions/automation.md`, "Triggers").
    pub prop_id: Option<u64>,
    pub marquee_id: Option<u64>,
}

/// A template's trigger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trigger {
    pub id: i64,
    pub account_id: i64,
    pub template_id: i64,
    /// `None`: the template's latest version has no enabled trigger.
    pub settings: Option<TriggerSettings>,
    /// The template version the settings come from.
    pub config_version: i64,
    /// Where its Playgrounds run; `None` until the account says.
    pub playroom_id: Option<i64>,
    /// Whether launch variables are set (sealed, never shown).
    pub has_variables: bool,
    pub paused: bool,
    /// What the last pass found in the way (a `repo_url` that names no
    /// repository the account can build from), in words; `None` when it
    /// converged.
    pub problem: Option<String>,
    /// The Playzone the trigger follows, once found.
    pub playzone_id: Option<i64>,
    /// Whether the key that last started it (set its Playroom, or
    /// unpaused it) held `playzones:read`, and no version since changed
    /// what it builds by a key without it: a pull-request trigger reads
    /// through the account's installation only then.
    pub may_read_playzones: bool,
    pub last_pass_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Who changes a template's versions, and what its trigger built before
/// the change: a version by a key without `playzones:read` that changes
/// what the trigger builds takes back its reading (issue #49, item 3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authored {
    /// The latest version's body before the change (`None`: none).
    pub previous_body: Option<String>,
    /// Whether the key that makes the change holds `playzones:read`.
    pub author_may_read_playzones: bool,
}

/// The condition of a pull-request trigger started by a key without
/// `playzones:read`.
pub const NEEDS_PLAYZONES_READ: &str = "a pull_request trigger builds a repository read through the account's \
     GitHub installation: start it (PATCH /api/triggers/{id} with playroom_id) with a key that also holds \
     playzones:read (a template version written by a key without it that changes the repository, the branch or \
     the Compose file takes that back)";

impl Trigger {
    /// Why the trigger does nothing, if it does nothing: what the account
    /// must do, in words.
    pub fn condition(&self) -> Option<&str> {
        if self.settings.is_none() {
            Some("disabled: the template's latest version has no enabled svc.trigger_config")
        } else if self.playroom_id.is_none() {
            Some("needs a Playroom: PATCH /api/triggers/{id} with playroom_id, or PUT /api/launch_defaults")
        } else if self.paused {
            Some("paused")
        } else if self.settings.as_ref().is_some_and(|s| s.event_type == "pull_request") && !self.may_read_playzones {
            Some(NEEDS_PLAYZONES_READ)
        } else {
            self.problem.as_deref()
        }
    }
}

/// What a trigger keeps for one branch (or pull request).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetStatus {
    /// Its Playground is meant to exist and follow the ref.
    Live,
    /// The ref is gone (branch deleted); its Playground was destroyed.
    Gone,
    /// Its Playground was destroyed outside the trigger (by a person, or
    /// its TTL): launched again at the ref's next commit.
    Stopped,
    /// Not launched: over the trigger's cap, or a fork (with the reason).
    Refused,
}

impl TargetStatus {
    pub const ALL: [TargetStatus; 4] =
        [TargetStatus::Live, TargetStatus::Gone, TargetStatus::Stopped, TargetStatus::Refused];

    pub fn as_str(self) -> &'static str {
        match self {
            TargetStatus::Live => "live",
            TargetStatus::Gone => "gone",
            TargetStatus::Stopped => "stopped",
            TargetStatus::Refused => "refused",
        }
    }
}

impl fmt::Display for TargetStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TargetStatus {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        TargetStatus::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| format!("unknown target status {text:?}"))
    }
}

/// One branch (or pull request) a trigger follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub id: i64,
    pub trigger_id: i64,
    /// `branch` (or `pull_request`).
    pub ref_kind: String,
    /// The branch name (or the pull request number).
    pub ref_name: String,
    pub status: TargetStatus,
    pub reason: Option<String>,
    pub playground_id: Option<i64>,
    /// The commit its Playground was last launched or rolled out at.
    pub commit_sha: Option<String>,
    /// Grows with every launch: ties a launch to its Playspec name, so a
    /// pass that stopped between launching and recording finds it again.
    pub generation: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// What a target last told its provider (a pull request's comment and
/// deployment), kept beside the target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reported {
    pub comment_id: Option<String>,
    pub deployment_id: Option<String>,
    /// The commit `deployment_id` deploys.
    pub deployment_sha: Option<String>,
    /// A digest of the last report written: the next pass writes only
    /// when what it would say differs.
    pub digest: Option<String>,
}
