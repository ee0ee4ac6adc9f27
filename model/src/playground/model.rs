//! What a Playground is: the record the API writes and the reconciler
//! reads ([`Playground`]), what a create asks for ([`NewPlayground`]), its
//! per-service settings, its services as observed, and the names its host
//! objects get.
//!
//! Invariants: `generation` grows with every change of desired state
//! (create, destroy, rollout, hard restart, a job's completion); the
//! reconciler records the generation it converged in
//! `observed_generation`. A Playground references its Playspec until it is
//! destroyed, which is what locks the Playspec.
//!
//! Plain data and pure functions: it must not read the store (that is
//! `play_store::playgrounds`) nor know how a request is shaped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::sleep::Sleep;
use super::state::{CreationStep, DesiredState, PlaygroundStatus, ServiceState};
use crate::model::playroom::Playroom;
use crate::time::Timestamp;
use crate::{Error, Result};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitConfig {
    pub branch_name: Option<String>,
    #[serde(default)]
    pub create_branch: bool,
    pub base_branch_name: Option<String>,
}

/// Per-service settings of a Playground (`services.{name}` in the request).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_config: Option<GitConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub production: Option<bool>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env_vars: BTreeMap<String, String>,
}

/// A service as last observed on the host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceStatus {
    pub name: String,
    pub status: ServiceState,
    /// `healthy`, `unhealthy`, `starting`, or null without a healthcheck.
    pub health: Option<String>,
    pub running: bool,
    /// The container that serves the service: the one the edge routes to
    /// (during a zero-downtime rollout, the old one until the new one is
    /// healthy). `None` in rows written before rollouts existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Playground {
    pub id: i64,
    pub account_id: i64,
    /// This play installation's id (see migration 0007): host objects carry
    /// it so installations sharing an engine stay apart.
    pub installation: String,
    pub name: String,
    pub status: PlaygroundStatus,
    pub playspec_id: Option<i64>,
    pub playspec_name: Option<String>,
    pub playroom_id: i64,
    pub job_mode: bool,
    /// The AI agent provider its launch named (`POST /api/launch`'s
    /// `agent`); play records and shows it, and runs nothing for it.
    pub agent: Option<String>,
    pub watched_services: Vec<String>,
    pub env_overrides: BTreeMap<String, String>,
    pub service_subdomains: BTreeMap<String, String>,
    pub service_settings: BTreeMap<String, ServiceSettings>,
    pub compose_project: String,
    pub desired_state: DesiredState,
    pub generation: i64,
    pub observed_generation: i64,
    pub creation_step: Option<CreationStep>,
    pub error_message: Option<String>,
    pub error_step: Option<CreationStep>,
    pub needs_recreation: bool,
    /// Hard restarts asked for; host objects of an older epoch are torn
    /// down before the Playground is provisioned afresh.
    pub restart_epoch: i64,
    /// The last epoch whose images were re-pulled (`< restart_epoch`: a
    /// hard restart still has to pull every image).
    pub pulled_epoch: i64,
    pub services: Vec<ServiceStatus>,
    /// Zero-downtime rollouts that failed: service -> the config hash the
    /// reconciler does not try again until a rollout or hard restart.
    pub failed_rollouts: BTreeMap<String, String>,
    /// Its sleep settings, desired power and recorded activity.
    pub sleep: Sleep,
    pub expires_at: Option<Timestamp>,
    pub last_applied_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A validated create request.
#[derive(Clone, Debug)]
pub struct NewPlayground {
    pub name: String,
    pub playspec_id: i64,
    pub playroom_id: i64,
    pub job_mode: bool,
    pub watched_services: Vec<String>,
    pub env_overrides: BTreeMap<String, String>,
    pub service_subdomains: BTreeMap<String, String>,
    pub service_settings: BTreeMap<String, ServiceSettings>,
    pub ttl: chrono::Duration,
    /// Its own `sleep_after`.
    pub sleep_after: super::sleep::SleepAfter,
    /// The trigger that launches it, for which ref and commit: its
    /// `playground.created` event says so.
    pub origin: Option<Origin>,
    /// The AI agent provider its launch named (`validate::agent`), shown
    /// and recorded in `playground.created`.
    pub agent: Option<String>,
}

/// The Docker Compose project name: `play-<installation, 6 characters>-<id>-
/// <name as a DNS label>`: unique per installation because of the id, apart
/// from other installations on the same engine, and valid for
/// `docker compose -p`.
pub fn compose_project(installation: &str, id: i64, name: &str) -> String {
    let short: String = installation.chars().take(6).collect();
    let slug: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    let slug: String = slug.chars().take(40).collect();
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() { format!("play-{short}-{id}") } else { format!("play-{short}-{id}-{slug}") }
}

/// The container of a service, as Docker Compose names it (one replica).
pub fn container_name(compose_project: &str, service: &str) -> String {
    format!("{compose_project}-{service}-1")
}

/// Settings a rollout replaces; `None` keeps the current value.
#[derive(Clone, Debug, Default)]
pub struct RolloutChanges {
    pub env_overrides: Option<BTreeMap<String, String>>,
    pub service_subdomains: Option<BTreeMap<String, String>>,
    pub service_settings: Option<BTreeMap<String, ServiceSettings>>,
    /// Another Playspec to run (server-side apply moves a Playground to a
    /// new revision of its Playspec); the caller checked it is the
    /// account's and that the settings fit it.
    pub playspec_id: Option<i64>,
    /// Its own `sleep_after` (`None` keeps it), parsed by the caller
    /// (`sleep::parse_change`).
    pub sleep_after: Option<super::sleep::SleepAfter>,
}

impl RolloutChanges {
    /// Whether the rollout changes any setting (else it only re-applies).
    pub fn is_empty(&self) -> bool {
        self.env_overrides.is_none()
            && self.service_subdomains.is_none()
            && self.service_settings.is_none()
            && self.playspec_id.is_none()
            && self.sleep_after.is_none()
    }

    /// The settings that differ from `current`, as the event names them.
    pub fn changed_fields(&self, current: &Playground) -> Vec<&'static str> {
        let mut fields = Vec::new();
        if self.env_overrides.as_ref().is_some_and(|v| *v != current.env_overrides) {
            fields.push("env_overrides");
        }
        if self.service_subdomains.as_ref().is_some_and(|v| *v != current.service_subdomains) {
            fields.push("service_subdomains");
        }
        if self.service_settings.as_ref().is_some_and(|v| *v != current.service_settings) {
            fields.push("services");
        }
        if self.playspec_id.is_some_and(|id| Some(id) != current.playspec_id) {
            fields.push("playspec_id");
        }
        if self.sleep_after.is_some_and(|v| v != current.sleep.own_after) {
            fields.push("sleep_after");
        }
        fields
    }
}

impl Playground {
    /// Fails with `INVALID_STATE` unless the Playground can still change:
    /// one being destroyed, or a finished job, has nothing left to update.
    pub fn check_live(&self) -> Result<()> {
        if self.desired_state == DesiredState::Destroyed {
            return Err(Error::InvalidState("the Playground is being destroyed".into()));
        }
        if self.status == PlaygroundStatus::Complete {
            return Err(Error::InvalidState("the job is complete; its Playground no longer runs".into()));
        }
        Ok(())
    }
}

/// What a Playground's detail view reads of the store, in one query
/// ([`get_for_detail`]).
#[derive(Clone, Debug)]
pub struct ForDetail {
    pub playground: Playground,
    /// Whether any of its built services is outdated (see
    /// [`super::builds::outdated`]): the view asks for the list only then.
    pub any_outdated: bool,
    /// Its Playroom, `None` if deleted (as `playrooms::get` finds none).
    pub playroom: Option<Playroom>,
    /// The trigger that keeps it, if one does.
    pub origin: Option<Origin>,
}

/// The trigger that keeps a Playground, and for which ref (issue #30).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub trigger_id: i64,
    /// `branch` (or `pull_request`).
    pub ref_kind: String,
    pub ref_name: String,
    /// The commit the trigger last launched or rolled it out at.
    pub commit: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compose_projects_are_valid_and_unique_by_id() {
        assert_eq!(compose_project("3fa91c0d", 7, "My Shop (staging)"), "play-3fa91c-7-my-shop-staging");
        assert_eq!(compose_project("3fa91c0d", 8, "!!!"), "play-3fa91c-8");
        let long = compose_project("3fa91c0d", 9, &"x".repeat(200));
        assert!(long.len() <= 57 && long.starts_with("play-3fa91c-9-"));
    }
}
