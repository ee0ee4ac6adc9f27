//! `/api/scm_installations`: the source-hosting apps installed on the
//! account (play's own Git host appears once the account first uses it).
//! Reading needs `repos:read`, removing `repos:write`.

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use play_store::repositories;

use crate::auth::Principal;
use crate::error::{ApiResult, ErrorEnvelope};
use crate::extract::Id;
use crate::state::AppState;
use crate::views::repos::InstallationView;

/// The source-hosting apps installed on the account.
#[utoipa::path(get, path = "/api/scm_installations", tag = "Repositories",
    responses((status = 200, body = [InstallationView])))]
pub async fn list(
    State(state): State<AppState>,
    principal: Principal,
) -> ApiResult<JsonResponse<Vec<InstallationView>>> {
    let all = repositories::installations(&state.store, principal.account_id).await?;
    Ok(JsonResponse(all.into_iter().map(InstallationView::from).collect()))
}

/// One installation.
#[utoipa::path(get, path = "/api/scm_installations/{id}", tag = "Repositories", params(("id" = i64, Path)),
    responses((status = 200, body = InstallationView), (status = 404, body = ErrorEnvelope)))]
pub async fn show(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<InstallationView>> {
    let installation = repositories::installation(&state.store, principal.account_id, id).await?;
    Ok(JsonResponse(installation.into()))
}

/// Remove an installation: its repositories' records go with it, and
/// Playzones attached through it stop syncing and say why. play's own Git
/// host keeps the repositories themselves, so its installation is removed
/// only once they are deleted (409 before).
#[utoipa::path(delete, path = "/api/scm_installations/{id}", tag = "Repositories", params(("id" = i64, Path)),
    responses((status = 204), (status = 404, body = ErrorEnvelope),
        (status = 409, description = "play's Git host still keeps repositories of the account", body = ErrorEnvelope)))]
pub async fn delete(State(state): State<AppState>, principal: Principal, Id(id): Id) -> ApiResult<StatusCode> {
    repositories::delete_installation(&state.store, principal.account_id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
