//! `/api/playgrounds`: running instances of Playspecs on Playrooms.
//!
//! Handlers record desired state and return; the Playground reconciler
//! converges the host and writes status back (`creation_step`, errors,
//! services). Create answers `201` with the detail view, status
//! `in_progress`. Every change of desired state wakes the Playground's
//! reconciler and its Playroom's edge ([`wake`]), so routes follow
//! promptly (a destroyed Playground's are dropped at once).

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use play_core::playground::{CreateRequest, launch, ops};
use play_core::wake::Kind;
use play_model::playground::Playground;
use play_store::{playground_detail, playgrounds};

use crate::auth::Principal;
use crate::error::{ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json};
use crate::input::playgrounds::{ExtendRequest, PlaygroundRequest};
use crate::recent::Freshness;
use crate::rendered::{self, JsonBody};
use crate::state::AppState;
use crate::views::playground_urls;
use crate::views::playgrounds::{
    Extended, PlaygroundDetail, PlaygroundItem, PlaygroundStatus, detail, detail_read, item, status_of, time_remaining,
};

/// Wakes the reconcilers that follow `p`'s desired state: its own, and its
/// Playroom's edge (routes appear and go with it).
pub fn wake(state: &AppState, p: &Playground) {
    state.waker.wake(Kind::Playground, p.id);
    state.waker.wake(Kind::Edge, p.playroom_id);
}

/// Create a Playground; answers at once with status `in_progress`.
#[utoipa::path(post, path = "/api/playgrounds", tag = "Playgrounds", request_body = PlaygroundRequest,
    responses((status = 201, body = PlaygroundDetail), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<PlaygroundRequest>,
) -> ApiResult<(StatusCode, JsonResponse<PlaygroundDetail>)> {
    let request = CreateRequest::from(body.playground);
    let limits = state.limits();
    let playground =
        launch::create_playground(&state.store, &state.cpu, principal.account_id, request, limits, principal.actor())
            .await?;
    wake(&state, &playground);
    Ok((StatusCode::CREATED, JsonResponse(detail(&state, playground).await?)))
}

/// List the account's Playgrounds.
#[utoipa::path(get, path = "/api/playgrounds", tag = "Playgrounds", responses((status = 200, body = [PlaygroundItem])))]
pub async fn list(State(state): State<AppState>, principal: Principal) -> ApiResult<JsonResponse<Vec<PlaygroundItem>>> {
    let all = playgrounds::list(&state.store, principal.account_id).await?;
    let mut urls = playground_urls::live_urls(&state, principal.account_id, &all).await?;
    Ok(JsonResponse(all.iter().map(|p| item(p, urls.remove(&p.id).unwrap_or_default())).collect()))
}

/// A Playground's detail view.
///
/// Reflects every write made through this replica before the request, and
/// every other write within the read staleness bound (see `Cache-Control`).
#[utoipa::path(get, path = "/api/playgrounds/{id}", tag = "Playgrounds", params(("id" = i64, Path),
        ("Cache-Control" = Option<String>, Header, description = "`no-cache` (or `max-age=0`): a read that starts after this request. Without it the body may be one rendered up to 250 ms earlier (`PLAY_READ_STALENESS`), never older than a write request this replica answered.")),
    responses((status = 200, body = PlaygroundDetail), (status = 404, body = ErrorEnvelope)))]
pub async fn show(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    freshness: Freshness,
) -> ApiResult<JsonBody> {
    let account_id = principal.account_id;
    let render = || async {
        let read = playground_detail::get_for_detail(&state.store, account_id, id).await?;
        rendered::to_json(&detail_read(&state, read).await?)
    };
    let renders = &state.renders;
    Ok(JsonBody(renders.serve(&renders.playground_detail, (account_id, id), freshness, render).await?))
}

/// Lightweight status for polling.
///
/// Reflects every write made through this replica before the request, and
/// every other write within the read staleness bound (see `Cache-Control`).
#[utoipa::path(get, path = "/api/playgrounds/{id}/status", tag = "Playgrounds", params(("id" = i64, Path),
        ("Cache-Control" = Option<String>, Header, description = "`no-cache` (or `max-age=0`): a read that starts after this request. Without it the body may be one rendered up to 250 ms earlier (`PLAY_READ_STALENESS`), never older than a write request this replica answered.")),
    responses((status = 200, body = PlaygroundStatus), (status = 404, body = ErrorEnvelope)))]
pub async fn status(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    freshness: Freshness,
) -> ApiResult<JsonBody> {
    let account_id = principal.account_id;
    let render = || async { rendered::to_json(&status_of(playgrounds::get(&state.store, account_id, id).await?)) };
    let renders = &state.renders;
    Ok(JsonBody(renders.serve(&renders.playground_status, (account_id, id), freshness, render).await?))
}

/// Destroy a Playground: answers 202 with status `destroying`.
#[utoipa::path(delete, path = "/api/playgrounds/{id}", tag = "Playgrounds", params(("id" = i64, Path)),
    responses((status = 202, body = PlaygroundStatus), (status = 404, body = ErrorEnvelope)))]
pub async fn delete(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<(StatusCode, JsonResponse<PlaygroundDetail>)> {
    let playground = ops::request_destroy(&state.store, principal.account_id, id, principal.actor()).await?;
    wake(&state, &playground);
    Ok((StatusCode::ACCEPTED, JsonResponse(detail(&state, playground).await?)))
}

/// Extend the TTL: `expires_at` moves to max(expires_at, now) + duration_hours.
#[utoipa::path(post, path = "/api/playgrounds/{id}/extend_expiration", tag = "Playgrounds", params(("id" = i64, Path)),
    request_body(content = Option<ExtendRequest>, description = "Optional: without a body, 8 hours"),
    responses((status = 200, body = Extended), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn extend_expiration(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    body: Option<Json<ExtendRequest>>,
) -> ApiResult<JsonResponse<Extended>> {
    let hours = body.and_then(|Json(b)| b.duration_hours);
    let p = ops::extend(&state.store, principal.account_id, id, hours, principal.actor()).await?;
    // The reconciler's expiry timer must move with expires_at.
    state.waker.wake(Kind::Playground, p.id);
    Ok(JsonResponse(Extended { id: p.id, time_remaining: time_remaining(&p), expires_at: p.expires_at }))
}
