//! `/api/playspecs`: blueprints of Compose YAML plus classified services.
//!
//! The Compose text is validated under the trusted policy when stored (a
//! Playspec may be meant for a trusted Playroom); what the untrusted policy
//! would refuse is returned as `warnings` and enforced when a Playground is
//! created on an untrusted Playroom.

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use play_model::compose::{self, Policy, ValidationReport};
use play_store::playrooms;
use play_store::playspec_files;
use play_store::playspecs;

use crate::auth::Principal;
use crate::error::{ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json};
use crate::input::playspecs::{PlayspecRequest, ValidateRequest, fields, link};
use crate::state::AppState;
use crate::views::playspecs::{PlayspecDetail, PlayspecItem, detail};

/// List the account's Playspecs.
#[utoipa::path(get, path = "/api/playspecs", tag = "Playspecs", responses((status = 200, body = [PlayspecItem])))]
pub async fn list(State(state): State<AppState>, principal: Principal) -> ApiResult<JsonResponse<Vec<PlayspecItem>>> {
    let all = playspecs::list(&state.store, principal.account_id).await?;
    let holders = playspecs::holders_by_playspec(&state.store, principal.account_id).await?;
    Ok(JsonResponse(all.iter().map(|p| PlayspecItem::new(p, holders.get(&p.id).copied().unwrap_or(0))).collect()))
}

/// A Playspec with its services, mounted files and credentials.
#[utoipa::path(get, path = "/api/playspecs/{id}", tag = "Playspecs", params(("id" = i64, Path)),
    responses((status = 200, body = PlayspecDetail), (status = 404, body = ErrorEnvelope)))]
pub async fn show(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<PlayspecDetail>> {
    let playspec = playspecs::get(&state.store, principal.account_id, id).await?;
    Ok(JsonResponse(detail(&state, playspec).await?))
}

/// The Playspec's service definitions.
#[utoipa::path(get, path = "/api/playspecs/{id}/services", tag = "Playspecs", params(("id" = i64, Path)),
    responses((status = 200, description = "Array of service definitions"), (status = 404, body = ErrorEnvelope)))]
pub async fn services(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<serde_json::Value>> {
    Ok(JsonResponse(playspecs::get(&state.store, principal.account_id, id).await?.services))
}

/// Create a Playspec from Compose YAML.
#[utoipa::path(post, path = "/api/playspecs", tag = "Playspecs", request_body = PlayspecRequest,
    responses((status = 201, body = PlayspecDetail), (status = 422, body = ErrorEnvelope)))]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<PlayspecRequest>,
) -> ApiResult<(StatusCode, JsonResponse<PlayspecDetail>)> {
    let mut fields = state.cpu.run(move || fields(body.playspec, true, None)).await??;
    link(&state.store, state.limits(), (principal.acting(), &principal.scopes), &mut fields, &[]).await?;
    let playspec = playspecs::create(&state.store, principal.acting(), fields, &state.config.quotas).await?;
    Ok((StatusCode::CREATED, JsonResponse(detail(&state, playspec).await?)))
}

/// Update a Playspec; refused with 422 LOCKED while Playgrounds use it.
#[utoipa::path(patch, path = "/api/playspecs/{id}", tag = "Playspecs", params(("id" = i64, Path)),
    request_body = PlayspecRequest,
    responses((status = 200, body = PlayspecDetail), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn update(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Json(body): Json<PlayspecRequest>,
) -> ApiResult<JsonResponse<PlayspecDetail>> {
    let current = playspecs::get(&state.store, principal.account_id, id).await?;
    let previous = current.definitions()?;
    let current_yaml = current.base_compose_yaml;
    let mut fields = state.cpu.run(move || fields(body.playspec, false, Some(current_yaml))).await??;
    link(&state.store, state.limits(), (principal.acting(), &principal.scopes), &mut fields, &previous).await?;
    let playspec = playspecs::update(&state.store, principal.acting(), id, fields).await?;
    Ok(JsonResponse(detail(&state, playspec).await?))
}

/// Delete a Playspec; refused with 422 LOCKED while Playgrounds use it.
#[utoipa::path(delete, path = "/api/playspecs/{id}", tag = "Playspecs", params(("id" = i64, Path)),
    responses((status = 204), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn delete(State(state): State<AppState>, principal: Principal, Id(id): Id) -> ApiResult<StatusCode> {
    playspecs::delete(&state.store, principal.account_id, id, principal.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Validate Compose YAML; creates nothing.
#[utoipa::path(post, path = "/api/playspecs/validate_compose", tag = "Playspecs", request_body = ValidateRequest,
    responses((status = 200, description = "{valid, services: [{name, ports}], errors, warnings}"),
        (status = 404, description = "No such Playroom (`playroom_id`) or Playspec (`playspec_id`)", body = ErrorEnvelope)))]
pub async fn validate_compose(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<ValidateRequest>,
) -> ApiResult<JsonResponse<ValidationReport>> {
    let mut policy = match body.playroom_id {
        Some(id) => Policy::of_room(playrooms::get(&state.store, principal.account_id, id).await?.trusted),
        None => Policy::UNTRUSTED,
    };
    if let Some(id) = body.playspec_id {
        let playspec = playspecs::get(&state.store, principal.account_id, id).await?;
        let files = playspec_files::list_files(&state.store, playspec.id).await?;
        policy = play_model::playground::policy_for(policy.trusted, &playspec, &files);
    }
    Ok(JsonResponse(state.cpu.run(move || compose::validate_compose(&body.compose_yaml, &policy)).await?))
}
