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
use play_model::host::ConnectionReport;
use play_model::model::playroom::CheckOutcome;
use play_model::model::playroom::Connection;
use play_model::scopes::Scope;
use play_model::ssh_keys;
use play_store::playroom_checks;
use play_store::playrooms;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json};
use crate::input::playrooms::{PlayroomRequest, authorise_trust, fields};
use crate::state::AppState;
use crate::views::playrooms::{GeneratedKey, PlayroomDetail, PlayroomItem, detail};

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
    authorise_trust(&principal.scopes, &body.playroom)?;
    let fields = fields(body.playroom, true, state.config.allow_local_playrooms)?;
    let room =
        playrooms::create(&state.store, &state.secrets, principal.acting(), fields, &state.config.quotas).await?;
    Ok((StatusCode::CREATED, JsonResponse(detail(&state, room).await?)))
}

/// Update a Playroom. Changing host, port, user or connection drops the
/// pinned host key unless the same request sets `host_key`. Changing any of
/// them, `docker_socket`, `host_key` (to another key or to none) or the SSH
/// key also clears `trusted` unless the caller holds `playrooms:trust` (the
/// event's `trust_cleared` says so).
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
    authorise_trust(&principal.scopes, &body.playroom)?;
    let mut fields = fields(body.playroom, false, state.config.allow_local_playrooms)?;
    fields.caller_may_trust = principal.scopes.grants(Scope::PlayroomsTrust);
    let room = playrooms::update(&state.store, &state.secrets, principal.acting(), id, fields).await?;
    Ok(JsonResponse(detail(&state, room).await?))
}

/// Delete a Playroom. Refused with 409 while it has active Playgrounds.
#[utoipa::path(delete, path = "/api/playrooms/{id}", tag = "Playrooms", params(("id" = i64, Path)),
    responses((status = 204), (status = 404, body = ErrorEnvelope), (status = 409, body = ErrorEnvelope)))]
pub async fn delete(State(state): State<AppState>, principal: Principal, Id(id): Id) -> ApiResult<StatusCode> {
    playrooms::delete(&state.store, principal.account_id, id, principal.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Generate a new Ed25519 key pair for the Playroom, replacing its key.
/// A trusted Playroom stays trusted only if the caller holds
/// `playrooms:trust`: a new key is another way onto the host.
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
    let caller_may_trust = principal.scopes.grants(Scope::PlayroomsTrust);
    let pair_text = (pair.private_openssh.as_str(), pair.public_openssh.as_str());
    playrooms::set_key(&state.store, &state.secrets, principal.acting(), id, pair_text, caller_may_trust).await?;
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
