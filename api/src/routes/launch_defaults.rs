//! `/api/launch_defaults` (issue #52, item 6): the Playroom the account's
//! schedules and triggers launch on until they are given one of their
//! own, so a template whose version turns one on runs without another
//! call. Not in the contract (docs/decisions/automation.md).
//!
//! Reading needs `import_templates:read`; `PUT` needs
//! `import_templates:write`, and `playgrounds:write` too when it names a
//! Playroom: the schedules and triggers that take it launch Playgrounds,
//! as after a `PATCH` of each.

use axum::Json as JsonResponse;
use axum::extract::State;
use play_model::model::schedule::LaunchDefaults;
use play_model::scopes::Scope;
use play_store::launch_defaults;

use crate::auth::{Principal, forbidden};
use crate::error::{ApiResult, ErrorEnvelope};
use crate::extract::Json;
use crate::input::launch_settings::SetLaunchDefaultsRequest;
use crate::state::AppState;
use crate::views::schedules::LaunchDefaultsView;

/// The account's launch defaults.
#[utoipa::path(get, path = "/api/launch_defaults", tag = "Schedules",
    responses((status = 200, body = LaunchDefaultsView)))]
pub async fn show(State(state): State<AppState>, principal: Principal) -> ApiResult<JsonResponse<LaunchDefaultsView>> {
    Ok(JsonResponse(launch_defaults::get(&state.store, principal.account_id).await?.into()))
}

/// Set the Playroom the account's schedules and triggers launch on until
/// they are given one; those that are on and have none take it now.
#[utoipa::path(put, path = "/api/launch_defaults", tag = "Schedules", request_body = SetLaunchDefaultsRequest,
    responses((status = 200, body = LaunchDefaultsView), (status = 403, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope)))]
pub async fn set(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<SetLaunchDefaultsRequest>,
) -> ApiResult<JsonResponse<LaunchDefaultsView>> {
    if body.playroom_id.is_some() && !principal.scopes.grants(Scope::PlaygroundsWrite) {
        return Err(forbidden(Scope::PlaygroundsWrite));
    }
    let wanted = LaunchDefaults {
        playroom_id: body.playroom_id,
        may_read_playzones: principal.scopes.grants(Scope::PlayzonesRead),
    };
    let adopted = launch_defaults::set(&state.store, principal.account_id, wanted).await?;
    Ok(JsonResponse(adopted.defaults.into()))
}
