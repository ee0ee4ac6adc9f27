//! `/api/triggers` (issue #30): the triggers of the account's templates
//! (one per template whose latest version has an enabled
//! `svc.trigger_config`), where and with what they launch, and the
//! branches they follow with their Playgrounds.
//!
//! Reading needs `import_templates:read`; `PATCH` needs
//! `import_templates:write`, and `playgrounds:write` too when it makes the
//! trigger act (a Playroom, or unpausing): it launches Playgrounds.

use axum::Json as JsonResponse;
use axum::extract::State;
use play_model::model::trigger::Trigger;
use play_model::scopes::Scope;
use play_store::{launch_settings, trigger_targets};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::{ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json};
use crate::input::launch_settings::LaunchChanges;
use crate::state::AppState;
use crate::views::triggers::{TargetView, TriggerView};

/// The account's triggers.
#[utoipa::path(get, path = "/api/triggers", tag = "Triggers", responses((status = 200, body = [TriggerView])))]
pub async fn list(State(state): State<AppState>, principal: Principal) -> ApiResult<JsonResponse<Vec<TriggerView>>> {
    let all = launch_settings::list::<Trigger>(&state.store, principal.account_id).await?;
    Ok(JsonResponse(all.into_iter().map(TriggerView::from).collect()))
}

/// One trigger.
#[utoipa::path(get, path = "/api/triggers/{id}", tag = "Triggers", params(("id" = i64, Path)),
    responses((status = 200, body = TriggerView), (status = 404, body = ErrorEnvelope)))]
pub async fn show(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<TriggerView>> {
    Ok(JsonResponse(launch_settings::get::<Trigger>(&state.store, principal.account_id, id).await?.into()))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTriggerRequest {
    pub trigger: LaunchChanges,
}

/// Set where and with what a trigger launches, or pause it.
#[utoipa::path(patch, path = "/api/triggers/{id}", tag = "Triggers", params(("id" = i64, Path)),
    request_body = UpdateTriggerRequest,
    responses((status = 200, body = TriggerView), (status = 403, body = ErrorEnvelope),
        (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn update(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Json(body): Json<UpdateTriggerRequest>,
) -> ApiResult<JsonResponse<TriggerView>> {
    let change = body.trigger.authorised(&principal)?;
    let reader = principal.scopes.grants(Scope::PlayzonesRead);
    let key = (principal.account_id, id);
    let updated = launch_settings::activate::<Trigger>(&state.store, &state.secrets, key, change, reader).await?;
    Ok(JsonResponse(updated.into()))
}

/// The branches a trigger follows and their Playgrounds.
#[utoipa::path(get, path = "/api/triggers/{id}/targets", tag = "Triggers", params(("id" = i64, Path)),
    responses((status = 200, body = [TargetView]), (status = 404, body = ErrorEnvelope)))]
pub async fn targets(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<Vec<TargetView>>> {
    let trigger = launch_settings::get::<Trigger>(&state.store, principal.account_id, id).await?;
    let all = trigger_targets::list(&state.store, trigger.id).await?;
    Ok(JsonResponse(all.into_iter().map(TargetView::from).collect()))
}
