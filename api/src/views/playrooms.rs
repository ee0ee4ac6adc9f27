//! What `/api/playrooms` answers: its response bodies, built from core's
//! records.

use crate::error::ApiResult;
use crate::state::AppState;
use crate::views::playroom_edge::{EdgeStatusView, EdgeView};
use chrono::{DateTime, Utc};
use play_model::model::playroom::{Connection, Playroom};
use play_model::ssh_keys::HostKeyPin;
use play_store::edges;
use serde::Serialize;
use utoipa::ToSchema;

/// A Playroom in a list.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlayroomItem {
    pub id: i64,
    pub name: String,
    /// `active`.
    pub status: String,
    pub host: String,
    pub port: u16,
    pub user: String,
    pub tutorial: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A Playroom's detail view.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlayroomDetail {
    #[serde(flatten)]
    pub item: PlayroomItem,
    /// The public half of the Playroom's key, for the host's `authorized_keys`.
    pub ssh_public_key: Option<String>,
    pub domains: Vec<String>,
    pub acme_email: Option<String>,
    /// `ssh` or `local`.
    #[schema(value_type = String)]
    pub connection: Connection,
    pub docker_socket: String,
    pub trusted: bool,
    /// When the Playroom was marked trusted, and with which API key.
    pub trusted_at: Option<DateTime<Utc>>,
    pub trusted_by_key_id: Option<i64>,
    /// Whether a private key is stored (the key itself is never shown).
    pub has_private_key: bool,
    /// The pinned host key, and when it was pinned.
    pub host_key: Option<String>,
    pub host_key_fingerprint: Option<String>,
    pub host_key_pinned_at: Option<DateTime<Utc>>,
    /// The last `test_connection`: when, over which transport, what failed.
    pub last_checked_at: Option<DateTime<Utc>>,
    pub last_transport: Option<String>,
    pub last_error: Option<String>,
    /// Whether play's reconcilers reached the Playroom's Docker engine on
    /// their last attempt; `null` until they first try. Kept up to date by
    /// every pass that uses the Playroom (unlike `last_*`, which only
    /// `test_connection` writes).
    pub reachable: Option<bool>,
    /// Since when the engine has been unreachable (the first failed attempt
    /// since it was last reached); `null` while reachable.
    pub unreachable_since: Option<DateTime<Utc>>,
    /// Why the last attempt failed (`kind: message`).
    pub unreachable_reason: Option<String>,
    pub edge: EdgeView,
    /// What the edge last did; `null` before its first pass.
    pub edge_status: Option<EdgeStatusView>,
}

impl From<&Playroom> for PlayroomItem {
    fn from(room: &Playroom) -> Self {
        PlayroomItem {
            id: room.id,
            name: room.name.clone(),
            status: room.status.clone(),
            host: room.host.clone(),
            port: room.port,
            user: room.user.clone(),
            tutorial: room.tutorial,
            created_at: room.created_at,
            updated_at: room.updated_at,
        }
    }
}

impl From<Playroom> for PlayroomDetail {
    fn from(room: Playroom) -> Self {
        PlayroomDetail {
            item: PlayroomItem::from(&room),
            host_key_fingerprint: room
                .host_key
                .as_deref()
                .and_then(|k| HostKeyPin::parse(k).ok())
                .map(|p| p.fingerprint()),
            ssh_public_key: room.ssh_public_key,
            domains: room.domains,
            acme_email: room.acme_email,
            connection: room.connection,
            docker_socket: room.docker_socket,
            trusted: room.trusted,
            trusted_at: room.trusted_at,
            trusted_by_key_id: room.trusted_by_key_id,
            has_private_key: room.has_private_key,
            host_key: room.host_key,
            host_key_pinned_at: room.host_key_pinned_at,
            last_checked_at: room.last_checked_at,
            last_transport: room.last_transport,
            last_error: room.last_error,
            reachable: room.reachable,
            unreachable_since: room.unreachable_since,
            unreachable_reason: room.unreachable_reason,
            edge: room.edge.into(),
            edge_status: None,
        }
    }
}

/// The detail view of `room`, with what its edge last did.
pub(crate) async fn detail(state: &AppState, room: Playroom) -> ApiResult<PlayroomDetail> {
    let status = edges::status(&state.store, room.id).await?;
    Ok(PlayroomDetail { edge_status: status.map(EdgeStatusView::from), ..room.into() })
}

/// The public half of a newly generated key pair.
#[derive(Debug, Serialize, ToSchema)]
pub struct GeneratedKey {
    pub id: i64,
    /// Add this line to `~/.ssh/authorized_keys` of the Playroom's user
    /// (a Playroom's key), or to the repository's deploy keys (a
    /// Playzone's).
    pub ssh_public_key: String,
    pub fingerprint: String,
}
