//! What `/api/playzones` answers: its response bodies, built from core's
//! records.

use chrono::{DateTime, Utc};
use play_model::playzone::Status;
use play_model::playzone::model::Playzone;
use serde::Serialize;
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// A Playzone in a list.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlayzoneItem {
    pub id: i64,
    pub name: String,
    pub scm_url: String,
    pub private: bool,
    /// The chosen default branch, or the remote's as the last sync found
    /// it (`null` before the first sync).
    pub default_branch: Option<String>,
    /// `pending` (not synced since created or changed), `active`, `error`.
    #[schema(schema_with = status_schema)]
    pub status: &'static str,
    pub last_synced_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub(crate) fn status_schema() -> utoipa::openapi::Object {
    play_model::openapi::one_of(&Status::ALL.map(Status::as_str))
}

/// A Playzone with its sync state (never its token).
#[derive(Debug, Serialize, ToSchema)]
pub struct PlayzoneDetail {
    #[serde(flatten)]
    pub item: PlayzoneItem,
    /// Why the last sync failed (with `status: error`).
    pub status_message: Option<String>,
    /// Whether an access token (or, for an ssh `scm_url`, a deploy key)
    /// is stored.
    pub has_credentials: bool,
    /// For an ssh `scm_url`: the deploy key's public half, to add to the
    /// repository's deploy keys (`generate_ssh_key` makes one).
    pub ssh_public_key: Option<String>,
    /// For an ssh `scm_url`: the host key pinned at the first contact (or
    /// set with `PATCH`), checked at every later one.
    pub ssh_host_key: Option<String>,
    pub ssh_host_key_fingerprint: Option<String>,
    pub ssh_host_key_pinned_at: Option<DateTime<Utc>>,
    /// Whether `default_branch` was chosen (else it follows the remote).
    pub default_branch_pinned: bool,
    /// Created by Launch for a Compose file's build service.
    pub auto_created: bool,
    /// The Compose file found at the default branch's root.
    pub compose_file: Option<String>,
    /// The commit it was found at.
    pub compose_commit: Option<String>,
    /// When a sync was last tried, successful or not.
    pub last_sync_attempt_at: Option<DateTime<Utc>>,
    /// Whether a sync is asked for and not done yet.
    pub sync_pending: bool,
}

impl From<&Playzone> for PlayzoneItem {
    fn from(z: &Playzone) -> Self {
        PlayzoneItem {
            id: z.id,
            name: z.name.clone(),
            scm_url: z.scm_url.clone(),
            private: z.private,
            default_branch: z.default_branch.clone(),
            status: z.status.as_str(),
            last_synced_at: z.last_synced_at,
            created_at: z.created_at,
            updated_at: z.updated_at,
        }
    }
}

impl From<&Playzone> for PlayzoneDetail {
    fn from(z: &Playzone) -> Self {
        PlayzoneDetail {
            item: z.into(),
            status_message: z.status_message.clone(),
            has_credentials: z.has_credentials,
            ssh_public_key: z.ssh_public_key.clone(),
            ssh_host_key: z.ssh_host_key.clone(),
            ssh_host_key_fingerprint: z.ssh_host_key.as_deref().and_then(play_model::playzone::ssh::pin_fingerprint),
            ssh_host_key_pinned_at: z.ssh_host_key_pinned_at,
            default_branch_pinned: z.default_branch_pinned,
            auto_created: z.auto_created,
            compose_file: z.compose_file.clone(),
            compose_commit: z.compose_commit.clone(),
            last_sync_attempt_at: z.last_sync_attempt_at,
            sync_pending: z.synced_generation < z.generation,
        }
    }
}

/// A Playzone with a detected Compose file.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlayzoneWithCompose {
    #[serde(flatten)]
    pub item: PlayzoneItem,
    pub compose_file: String,
    pub compose_commit: Option<String>,
}

/// The answer to `sync`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SyncAccepted {
    pub message: String,
}

/// The answer to `branches`.
#[derive(Debug, Serialize, ToSchema)]
pub struct BranchList {
    pub branches: Vec<BranchItem>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BranchItem {
    pub name: String,
    /// Whether it is the Playzone's default branch.
    pub default: bool,
    /// The commit the last sync found it at.
    pub commit: String,
}

/// The answer to `env_defaults`.
#[derive(Debug, Serialize, ToSchema)]
pub struct EnvDefaults {
    /// Name -> default value; `$$secret(N)` placeholders are generated per
    /// Playground.
    pub defaults: BTreeMap<String, String>,
    /// Keys whose values are secrets (see docs/playzones.md for the rule).
    pub sensitive_keys: Vec<String>,
}

pub(crate) fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}
