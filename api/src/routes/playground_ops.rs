//! `POST /api/playgrounds/:id/rollout` and `/hard_restart` (and `/recreate`,
//! the other name the spec knows for a hard restart).
//!
//! Both record desired state and return `200` with the detail view at
//! status `in_progress`; the Playground reconciler does the work:
//! - **rollout** applies the Playground's (optionally changed) settings
//!   incrementally: containers whose config is unchanged keep running,
//!   volumes are kept, images are not pulled again;
//! - **hard_restart** tears down every container (and every named volume
//!   unless the Playspec persists volumes), pulls every image again and
//!   provisions from scratch.

use axum::Json as JsonResponse;
use axum::extract::State;
use play_core::playground::{ops, power};
use play_model::playground::{Power, RolloutChanges};

use crate::auth::Principal;
use crate::error::{ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json};
use crate::input::playground_ops::RolloutRequest;
use crate::state::AppState;
use crate::views::playgrounds::{PlaygroundDetail, detail};

/// Apply the Playground's settings again, incrementally; the body may
/// change `env_overrides`, `service_subdomains` and `services`.
#[utoipa::path(post, path = "/api/playgrounds/{id}/rollout", tag = "Playgrounds", params(("id" = i64, Path)),
    request_body(content = Option<RolloutRequest>, description = "Optional: without a body, the current settings"),
    responses((status = 200, body = PlaygroundDetail), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope)))]
pub async fn rollout(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    body: Option<Json<RolloutRequest>>,
) -> ApiResult<JsonResponse<PlaygroundDetail>> {
    let input = body.map(|Json(b)| b.playground).unwrap_or_default();
    let sleep_after = input.sleep_after()?;
    let changes = RolloutChanges {
        env_overrides: input.env_overrides,
        service_subdomains: input.service_subdomains,
        service_settings: input.services,
        playspec_id: None,
        sleep_after,
    };
    let playground =
        ops::rollout(&state.store, &state.cpu, principal.account_id, id, changes, principal.actor()).await?;
    Ok(JsonResponse(detail(&state, playground).await?))
}

/// Tear everything down and provision afresh: every container restarts,
/// every image is pulled again, volumes are kept only if the Playspec
/// persists them.
#[utoipa::path(post, path = "/api/playgrounds/{id}/hard_restart", tag = "Playgrounds", params(("id" = i64, Path)),
    responses((status = 200, body = PlaygroundDetail), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope)))]
pub async fn hard_restart(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<PlaygroundDetail>> {
    let playground = ops::hard_restart(&state.store, principal.account_id, id, principal.actor()).await?;
    Ok(JsonResponse(detail(&state, playground).await?))
}

/// The other name of [`hard_restart`] (destroy the containers, provision
/// again, keep volumes only if persisted): the same operation.
#[utoipa::path(post, path = "/api/playgrounds/{id}/recreate", tag = "Playgrounds", params(("id" = i64, Path)),
    responses((status = 200, body = PlaygroundDetail), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope)))]
pub async fn recreate(
    state: State<AppState>,
    principal: Principal,
    id: Id,
) -> ApiResult<JsonResponse<PlaygroundDetail>> {
    hard_restart(state, principal, id).await
}

/// Put the Playground to sleep now: its containers stop (kept, with their
/// networks and volumes), status `sleeping`; the first request to one of
/// its URLs, or `POST .../wake`, wakes it. `422` (`INVALID_STATE`) for a job-mode Playground.
#[utoipa::path(post, path = "/api/playgrounds/{id}/sleep", tag = "Playgrounds", params(("id" = i64, Path)),
    responses((status = 200, body = PlaygroundDetail), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope)))]
pub async fn sleep(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<PlaygroundDetail>> {
    let playground = power::set(&state.store, principal.account_id, id, Power::Asleep, principal.actor()).await?;
    Ok(JsonResponse(detail(&state, playground).await?))
}

/// Wake the Playground now: its containers start in dependency order and
/// it is `running` again once they are healthy.
#[utoipa::path(post, path = "/api/playgrounds/{id}/wake", tag = "Playgrounds", params(("id" = i64, Path)),
    responses((status = 200, body = PlaygroundDetail), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope)))]
pub async fn wake_up(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<PlaygroundDetail>> {
    let playground = power::set(&state.store, principal.account_id, id, Power::Awake, principal.actor()).await?;
    Ok(JsonResponse(detail(&state, playground).await?))
}
