//! `/api/schedules` (issue #30): the schedules of the account's templates
//! (one per template whose latest version has an enabled
//! `svc.schedule_config`), where and with what they run, and their runs.
//!
//! Reading needs `import_templates:read`; `PATCH` needs
//! `import_templates:write`, and `playgrounds:write` too when it makes the
//! schedule run (a Playroom, or unpausing): its runs launch Playgrounds.

use axum::Json as JsonResponse;
use axum::extract::State;
use play_model::model::schedule::Schedule;
use play_model::scopes::Scope;
use play_store::{launch_settings, schedules};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::{ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json, Query};
use crate::input::launch_settings::LaunchChanges;
use crate::state::AppState;
use crate::views::schedules::{RunView, ScheduleView};

/// The account's schedules.
#[utoipa::path(get, path = "/api/schedules", tag = "Schedules", responses((status = 200, body = [ScheduleView])))]
pub async fn list(State(state): State<AppState>, principal: Principal) -> ApiResult<JsonResponse<Vec<ScheduleView>>> {
    let all = launch_settings::list::<Schedule>(&state.store, principal.account_id).await?;
    Ok(JsonResponse(all.into_iter().map(ScheduleView::from).collect()))
}

/// One schedule.
#[utoipa::path(get, path = "/api/schedules/{id}", tag = "Schedules", params(("id" = i64, Path)),
    responses((status = 200, body = ScheduleView), (status = 404, body = ErrorEnvelope)))]
pub async fn show(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<ScheduleView>> {
    Ok(JsonResponse(launch_settings::get::<Schedule>(&state.store, principal.account_id, id).await?.into()))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateScheduleRequest {
    pub schedule: LaunchChanges,
}

/// Set where and with what a schedule runs, or pause it.
#[utoipa::path(patch, path = "/api/schedules/{id}", tag = "Schedules", params(("id" = i64, Path)),
    request_body = UpdateScheduleRequest,
    responses((status = 200, body = ScheduleView), (status = 403, body = ErrorEnvelope),
        (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn update(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Json(body): Json<UpdateScheduleRequest>,
) -> ApiResult<JsonResponse<ScheduleView>> {
    let change = body.schedule.authorised(&principal)?;
    let reader = principal.scopes.grants(Scope::PlayzonesRead);
    let key = (principal.account_id, id);
    let updated = launch_settings::activate::<Schedule>(&state.store, &state.secrets, key, change, reader).await?;
    Ok(JsonResponse(updated.into()))
}

#[derive(Debug, Deserialize, IntoParams)]
pub struct RunsQuery {
    /// At most this many, newest first (1-500, default 50).
    pub limit: Option<i64>,
}

/// A schedule's runs, newest first.
#[utoipa::path(get, path = "/api/schedules/{id}/runs", tag = "Schedules", params(("id" = i64, Path), RunsQuery),
    responses((status = 200, body = [RunView]), (status = 404, body = ErrorEnvelope)))]
pub async fn runs(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Query(query): Query<RunsQuery>,
) -> ApiResult<JsonResponse<Vec<RunView>>> {
    let limit = query.limit.unwrap_or(50).clamp(1, 500);
    let all = schedules::runs(&state.store, principal.account_id, id, limit).await?;
    Ok(JsonResponse(all.into_iter().map(RunView::from).collect()))
}
