//! How triggers and their targets are shown (`/api/triggers`). Launch
//! variables are never shown, only whether they are set.

use chrono::{DateTime, Utc};
use play_model::model::trigger::{Target, Trigger};
use serde::Serialize;
use utoipa::ToSchema;

/// A template's trigger.
#[derive(Debug, Serialize, ToSchema)]
pub struct TriggerView {
    pub id: i64,
    pub template_id: i64,
    /// The template version the settings come from.
    pub config_version: i64,
    /// `push` or `pull_request`; `null` when the latest version has no
    /// enabled `svc.trigger_config`.
    pub event_type: Option<String>,
    pub repo_url: Option<String>,
    /// The branch name or pattern (`*`: any characters) it follows;
    /// `null`: the repository's default branch.
    pub branch: Option<String>,
    pub allow_forks: Option<bool>,
    /// The most Playgrounds it keeps at once.
    pub max_playgrounds: Option<u64>,
    /// As the template gives them (the contract does not say what they
    /// name).
    pub prop_id: Option<u64>,
    pub marquee_id: Option<u64>,
    /// Where its Playgrounds run; `null` until set.
    pub playroom_id: Option<i64>,
    /// Whether launch variables are set (their values are never shown).
    pub has_variables: bool,
    pub paused: bool,
    /// The Playzone whose branch index it follows, once found.
    pub playzone_id: Option<i64>,
    /// Why the trigger does nothing, or `null` when it converges.
    pub condition: Option<String>,
    pub last_pass_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<Trigger> for TriggerView {
    fn from(t: Trigger) -> Self {
        let condition = t.condition().map(str::to_owned);
        let settings = t.settings.as_ref();
        TriggerView {
            id: t.id,
            template_id: t.template_id,
            config_version: t.config_version,
            event_type: settings.map(|s| s.event_type.clone()),
            repo_url: settings.and_then(|s| s.repo_url.clone()),
            branch: settings.and_then(|s| s.branch.clone()),
            allow_forks: settings.map(|s| s.allow_forks),
            max_playgrounds: settings.map(|s| s.max_playgrounds),
            prop_id: settings.and_then(|s| s.prop_id),
            marquee_id: settings.and_then(|s| s.marquee_id),
            playroom_id: t.playroom_id,
            has_variables: t.has_variables,
            paused: t.paused,
            playzone_id: t.playzone_id,
            condition,
            last_pass_at: t.last_pass_at,
            created_at: t.created_at,
            updated_at: t.updated_at,
        }
    }
}

/// A branch (or pull request) a trigger follows, and its Playground.
#[derive(Debug, Serialize, ToSchema)]
pub struct TargetView {
    pub id: i64,
    /// `branch` (or `pull_request`).
    pub ref_kind: String,
    /// The branch name (or pull request number).
    pub ref_name: String,
    /// `live` (its Playground follows the ref), `gone` (the ref was
    /// deleted; its Playground destroyed), `stopped` (its Playground was
    /// destroyed outside the trigger; the next commit brings it back) or
    /// `refused` (not launched, see `reason`).
    pub status: String,
    pub reason: Option<String>,
    pub playground_id: Option<i64>,
    /// The commit its Playground was last launched or rolled out at.
    pub commit: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<Target> for TargetView {
    fn from(t: Target) -> Self {
        TargetView {
            id: t.id,
            ref_kind: t.ref_kind,
            ref_name: t.ref_name,
            status: t.status.as_str().to_owned(),
            reason: t.reason,
            playground_id: t.playground_id,
            commit: t.commit_sha,
            created_at: t.created_at,
            updated_at: t.updated_at,
        }
    }
}
