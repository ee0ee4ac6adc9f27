//! `/api/playrooms`: Docker hosts reached over SSH (or, where the operator
//! allows it, the local engine).
//!
//! The private key is write-only: accepted on create and update, validated,
//! sealed at rest, and never returned. `test_connection` goes to the host
//! through the injected `HostGateway`, and pins the host key on the first
//! successful contact. Create, update and delete wake the Playroom's edge
//! (`Kind::Edge`), which follows its settings and routes.

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use play_core::FieldErrors;
use play_core::error::push_field_error;
use play_core::host::{ConnectionReport, DEFAULT_DOCKER_SOCKET};
use play_core::scopes::Scope;
use play_core::ssh_keys::{self, HostKeyPin};
use play_core::store::edges;
use play_core::store::playroom_checks::{self, CheckOutcome};
use play_core::store::playrooms::{self, Connection, Playroom, PlayroomFields};
use play_core::validate;
use play_core::wake::Kind;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::playroom_edge::{self, EdgeInput, EdgeStatusView, EdgeView};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json};
use crate::state::AppState;

const DEFAULT_SSH_PORT: u16 = 22;
const DEFAULT_SSH_USER: &str = "root";

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlayroomRequest {
    pub playroom: PlayroomInput,
}

/// Fields of a create or update. On update every field is optional and an
/// absent one is left as it is.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlayroomInput {
    /// Required on create.
    #[schema(schema_with = crate::schemas::display_name_or_null)]
    pub name: Option<String>,
    /// `ssh` (default) or `local` (the Docker engine play itself runs on;
    /// only where the operator allows it).
    #[schema(schema_with = connection_or_null)]
    pub connection: Option<String>,
    /// SSH host: a DNS name or an IP address. Required on create (for `ssh`).
    #[schema(schema_with = crate::schemas::host_or_null)]
    pub host: Option<String>,
    /// SSH port, default 22.
    #[schema(schema_with = crate::schemas::port_or_null)]
    pub port: Option<i64>,
    /// SSH user, default `root`; it needs access to the Docker socket.
    #[schema(schema_with = crate::schemas::unix_user_or_null)]
    pub user: Option<String>,
    /// Write-only. An unencrypted private key (OpenSSH or PEM); never returned.
    pub ssh_private_key: Option<String>,
    /// The host key to expect: `SHA256:...`, an OpenSSH public key line, or
    /// a `known_hosts` line. `null` removes the pin (the next successful
    /// connection pins again).
    #[serde(default, deserialize_with = "crate::json::present")]
    #[schema(value_type = Option<String>)]
    pub host_key: Option<Option<String>>,
    /// Path of the Docker socket on the host, default `/var/run/docker.sock`.
    #[schema(schema_with = crate::schemas::absolute_path_or_null)]
    pub docker_socket: Option<String>,
    /// Domains Playgrounds are routed under (lowercase, at least two labels).
    #[schema(schema_with = crate::schemas::domains_or_null)]
    pub domains: Option<Vec<String>>,
    /// The ACME account's email; `null` removes it.
    #[serde(default, deserialize_with = "crate::json::present")]
    #[schema(schema_with = crate::schemas::email_or_null)]
    pub acme_email: Option<Option<String>>,
    /// Lifts the Compose policy (privileged containers, host mounts, ...) for
    /// this host. Default false. Setting it to `true` needs the operator's
    /// `playrooms:trust` scope; a local Playroom can never be trusted.
    pub trusted: Option<bool>,
    pub tutorial: Option<bool>,
    /// The edge's settings; each key optional.
    pub edge: Option<EdgeInput>,
}

fn connection_or_null() -> utoipa::openapi::Schema {
    crate::schemas::one_of_or_null(&["ssh", "local"])
}

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
async fn detail(state: &AppState, room: Playroom) -> ApiResult<PlayroomDetail> {
    let status = edges::status(&state.store, room.id).await?;
    Ok(PlayroomDetail { edge_status: status.map(EdgeStatusView::from), ..room.into() })
}

fn check<T>(errors: &mut FieldErrors, field: &str, value: Option<&T>, rule: impl Fn(&T) -> Result<(), &'static str>) {
    if let Some(Err(message)) = value.map(rule) {
        push_field_error(errors, format!("playroom.{field}"), message);
    }
}

/// Validates the input field by field and turns it into store fields.
/// `creating` makes name and (for SSH) host required.
pub(crate) fn fields(input: PlayroomInput, creating: bool, allow_local: bool) -> Result<PlayroomFields, ApiError> {
    let mut errors = FieldErrors::new();
    let connection = match input.connection.as_deref() {
        None => None,
        Some("ssh") => Some(Connection::Ssh),
        Some("local") if allow_local => Some(Connection::Local),
        Some("local") => {
            push_field_error(
                &mut errors,
                "playroom.connection",
                "local Playrooms are disabled on this server (PLAY_ALLOW_LOCAL_PLAYROOMS)",
            );
            None
        }
        Some(_) => {
            push_field_error(&mut errors, "playroom.connection", "must be ssh or local");
            None
        }
    };
    let is_ssh = connection.unwrap_or(Connection::Ssh) == Connection::Ssh;
    if creating && input.name.is_none() {
        push_field_error(&mut errors, "playroom.name", "is required");
    }
    if creating && is_ssh && input.host.is_none() {
        push_field_error(&mut errors, "playroom.host", "is required");
    }
    check(&mut errors, "name", input.name.as_ref(), |n| validate::display_name(n));
    check(&mut errors, "host", input.host.as_ref(), |h| validate::host(h));
    check(&mut errors, "user", input.user.as_ref(), |u| validate::unix_user(u));
    check(&mut errors, "docker_socket", input.docker_socket.as_ref(), |p| validate::absolute_path(p));
    check(&mut errors, "acme_email", input.acme_email.as_ref().and_then(|e| e.as_ref()), |e| validate::email(e));
    let port = match input.port {
        Some(p) => match u16::try_from(p) {
            Ok(p) if p > 0 => Some(p),
            _ => {
                push_field_error(&mut errors, "playroom.port", "must be from 1 to 65535");
                None
            }
        },
        None => None,
    };
    let mut domains = None;
    if let Some(list) = input.domains {
        let mut clean: Vec<String> = Vec::new();
        for (i, d) in list.iter().enumerate() {
            match validate::domain(d) {
                Ok(()) if !clean.contains(d) => clean.push(d.clone()),
                Ok(()) => {}
                Err(m) => push_field_error(&mut errors, format!("playroom.domains[{i}]"), m),
            }
        }
        domains = Some(clean);
    }
    let edge = input.edge.map(|e| playroom_edge::changes(e, creating, &mut errors));
    let ssh_key = match input.ssh_private_key.as_deref() {
        Some(text) => match ssh_keys::parse_private_key(text) {
            Ok(parsed) => Some((parsed.private_openssh, parsed.public_openssh)),
            Err(e) => {
                push_field_error(&mut errors, "playroom.ssh_private_key", e.to_string());
                None
            }
        },
        None => None,
    };
    let host_key = match input.host_key {
        Some(Some(text)) => match HostKeyPin::parse(&text) {
            Ok(HostKeyPin::Key(key)) => Some(Some(ssh_keys::public_key_line(&key))),
            Ok(pin @ HostKeyPin::Fingerprint(_)) => Some(Some(pin.fingerprint())),
            Err(e) => {
                push_field_error(&mut errors, "playroom.host_key", e.to_string());
                None
            }
        },
        Some(None) => Some(None),
        None => None,
    };
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let local = connection == Some(Connection::Local);
    Ok(PlayroomFields {
        name: input.name.map(|n| n.trim().to_owned()),
        connection: connection.or(creating.then_some(Connection::Ssh)),
        host: input.host.or_else(|| (creating && local).then(|| "localhost".to_owned())),
        port: port.or(creating.then_some(DEFAULT_SSH_PORT)),
        user: input.user.or_else(|| creating.then(|| DEFAULT_SSH_USER.to_owned())),
        docker_socket: input.docker_socket.or_else(|| creating.then(|| DEFAULT_DOCKER_SOCKET.to_owned())),
        ssh_key,
        host_key,
        domains: domains.or_else(|| creating.then(Vec::new)),
        acme_email: input.acme_email,
        edge,
        trusted: input.trusted,
        tutorial: input.tutorial,
        // Set by the caller, which knows the principal.
        caller_may_trust: false,
    })
}

/// Marking a Playroom trusted is the operator's act: 403 without
/// `playrooms:trust`. Lifting trust (`false`) is open to any writer.
pub(crate) fn authorise_trust(principal: &Principal, input: &PlayroomInput) -> Result<(), ApiError> {
    if input.trusted == Some(true) && !principal.scopes.grants(Scope::PlayroomsTrust) {
        let mut details = FieldErrors::new();
        details.insert(
            "playroom.trusted".into(),
            vec![format!("marking a Playroom trusted needs the operator's scope {}", Scope::PlayroomsTrust)],
        );
        return Err(ApiError::Forbidden {
            message: format!("the scope {} is required to trust a Playroom", Scope::PlayroomsTrust),
            details,
        });
    }
    Ok(())
}

/// List the account's Playrooms.
#[utoipa::path(get, path = "/api/playrooms", tag = "Playrooms",
    responses((status = 200, description = "Playrooms", body = [PlayroomItem])))]
pub async fn list(State(state): State<AppState>, principal: Principal) -> ApiResult<JsonResponse<Vec<PlayroomItem>>> {
    let rooms = playrooms::list(&state.store, principal.account_id).await?;
    Ok(JsonResponse(rooms.iter().map(PlayroomItem::from).collect()))
}

/// A Playroom's detail view.
#[utoipa::path(get, path = "/api/playrooms/{id}", tag = "Playrooms", params(("id" = i64, Path)),
    responses((status = 200, body = PlayroomDetail), (status = 404, body = ErrorEnvelope)))]
pub async fn show(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<PlayroomDetail>> {
    let room = playrooms::get(&state.store, principal.account_id, id).await?;
    Ok(JsonResponse(detail(&state, room).await?))
}

/// Create a Playroom.
#[utoipa::path(post, path = "/api/playrooms", tag = "Playrooms", request_body = PlayroomRequest,
    responses((status = 201, body = PlayroomDetail), (status = 403, description = "`trusted: true` without playrooms:trust", body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<PlayroomRequest>,
) -> ApiResult<(StatusCode, JsonResponse<PlayroomDetail>)> {
    authorise_trust(&principal, &body.playroom)?;
    let fields = fields(body.playroom, true, state.config.allow_local_playrooms)?;
    let room = playrooms::create(
        &state.store,
        &state.secrets,
        principal.account_id,
        fields,
        &state.config.quotas,
        principal.actor(),
    )
    .await?;
    state.waker.wake(Kind::Edge, room.id);
    Ok((StatusCode::CREATED, JsonResponse(detail(&state, room).await?)))
}

/// Update a Playroom. Changing host, port, user or connection drops the
/// pinned host key unless the same request sets `host_key`. Changing any of
/// them or `docker_socket` also clears `trusted` unless the caller holds
/// `playrooms:trust` (the event's `trust_cleared` says so).
#[utoipa::path(patch, path = "/api/playrooms/{id}", tag = "Playrooms", params(("id" = i64, Path)),
    request_body = PlayroomRequest,
    responses(
        (status = 200, body = PlayroomDetail),
        (status = 403, description = "`trusted: true` without playrooms:trust", body = ErrorEnvelope),
        (status = 404, body = ErrorEnvelope),
        (status = 409, description = "CONFLICT: a move (host, port, user, connection) that would drop or replace the \
            pinned host key while the Playroom has Playgrounds", body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope),
    ))]
pub async fn update(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Json(body): Json<PlayroomRequest>,
) -> ApiResult<JsonResponse<PlayroomDetail>> {
    authorise_trust(&principal, &body.playroom)?;
    let mut fields = fields(body.playroom, false, state.config.allow_local_playrooms)?;
    fields.caller_may_trust = principal.scopes.grants(Scope::PlayroomsTrust);
    let room =
        playrooms::update(&state.store, &state.secrets, principal.account_id, id, fields, principal.actor()).await?;
    state.waker.wake(Kind::Edge, room.id);
    Ok(JsonResponse(detail(&state, room).await?))
}

/// Delete a Playroom. Refused with 409 while it has active Playgrounds.
#[utoipa::path(delete, path = "/api/playrooms/{id}", tag = "Playrooms", params(("id" = i64, Path)),
    responses((status = 204), (status = 404, body = ErrorEnvelope), (status = 409, body = ErrorEnvelope)))]
pub async fn delete(State(state): State<AppState>, principal: Principal, Id(id): Id) -> ApiResult<StatusCode> {
    playrooms::delete(&state.store, principal.account_id, id, principal.actor()).await?;
    // The edge removes its container and forgets the Playroom's routes.
    state.waker.wake(Kind::Edge, id);
    Ok(StatusCode::NO_CONTENT)
}

/// The public half of a newly generated key pair.
#[derive(Debug, Serialize, ToSchema)]
pub struct GeneratedKey {
    pub id: i64,
    /// Add this line to `~/.ssh/authorized_keys` of the Playroom's user.
    pub ssh_public_key: String,
    pub fingerprint: String,
}

/// Generate a new Ed25519 key pair for the Playroom, replacing its key.
#[utoipa::path(post, path = "/api/playrooms/{id}/generate_ssh_key", tag = "Playrooms", params(("id" = i64, Path)),
    responses((status = 200, body = GeneratedKey), (status = 404, body = ErrorEnvelope)))]
pub async fn generate_ssh_key(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<GeneratedKey>> {
    let room = playrooms::get(&state.store, principal.account_id, id).await?;
    let pair = ssh_keys::generate_ed25519(&format!("play-playroom-{}", room.id))
        .map_err(|e| ApiError::Core(play_core::Error::Internal(e.to_string())))?;
    playrooms::set_key(
        &state.store,
        &state.secrets,
        principal.account_id,
        id,
        &pair.private_openssh,
        &pair.public_openssh,
        principal.actor(),
    )
    .await?;
    Ok(JsonResponse(GeneratedKey { id, ssh_public_key: pair.public_openssh, fingerprint: pair.fingerprint }))
}

/// Test SSH and Docker connectivity. Always 200 with a report; `ok` says
/// whether every stage passed and `failure` says which did not and why.
#[utoipa::path(post, path = "/api/playrooms/{id}/test_connection", tag = "Playrooms", params(("id" = i64, Path)),
    responses(
        (status = 200, description = "A ConnectionReport: ok, ssh, docker, transport, latency_ms, failure {stage, kind, message}"),
        (status = 404, body = ErrorEnvelope),
        (status = 422, description = "INVALID_STATE: the Playroom has no SSH key yet", body = ErrorEnvelope),
    ))]
pub async fn test_connection(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<ConnectionReport>> {
    let (room, target) = playrooms::target(&state.store, &state.secrets, principal.account_id, id).await?;
    if room.connection == Connection::Ssh && !room.has_private_key {
        return Err(ApiError::Core(play_core::Error::InvalidState(
            "the Playroom has no SSH private key: set ssh_private_key or call generate_ssh_key".into(),
        )));
    }
    let report = state.gateway.test_connection(&target).await;
    let ssh = report.ssh.as_ref();
    let outcome = CheckOutcome {
        transport: report
            .transport
            .and_then(|t| serde_json::to_value(t).ok().and_then(|v| v.as_str().map(str::to_owned))),
        error: report.failure.as_ref().map(|f| format!("{}: {}", f.kind.as_str(), f.message)),
        pin_host_key: ssh.filter(|s| s.host_key_pinned_now).and_then(|s| s.host_key.clone()),
    };
    playroom_checks::record_check(&state.store, principal.account_id, id, outcome).await?;
    Ok(JsonResponse(report))
}
