//! `/api/repos` (the contract's repositories facility) and
//! `/api/scm_installations`. Each handler reads its input, calls one flow
//! of `play_core::scm::flows`, wakes the Playzones on a repository that
//! moved, and renders.
//!
//! Without a source host (the operator switched play's own Git host off
//! and no app is installed) every route answers 422 `SCM_APP_REQUIRED`.

use std::sync::Arc;

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use play_core::scm::flows::{self, Acting};
use play_core::scm::host::SourceHost;
use play_core::scm::model::Repository;
use play_core::store::repositories;
use play_core::wake::Kind;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::Json;
use crate::input::repos::{self, CreateAndPushRequest, CreateRepoRequest, PushRepoRequest};
use crate::state::AppState;
use crate::views::repos::{CommitView, CreatedAndPushed, InstallationView, RepoEnvelope, RepoView};

/// The source host, or `SCM_APP_REQUIRED`.
fn host(state: &AppState) -> ApiResult<Arc<dyn SourceHost>> {
    state.source_host.clone().ok_or_else(|| {
        ApiError::Core(play_core::Error::ScmAppRequired(
            "no source-hosting app is installed on this account, and play's own Git host is switched off \
             (PLAY_GIT_HOST): ask the operator"
                .into(),
        ))
    })
}

fn acting<'a>(state: &'a AppState, principal: &Principal) -> Acting<'a> {
    Acting { account_id: principal.account_id, actor: principal.actor(), limits: &state.config.quotas }
}

/// Wakes the sync of every Playzone on `repository`.
async fn wake_playzones(state: &AppState, host: &dyn SourceHost, repository: &Repository) -> ApiResult<()> {
    for id in flows::playzones_on(&state.store, host, repository).await? {
        state.waker.wake(Kind::Playzone, id);
    }
    Ok(())
}

/// Create a repository.
#[utoipa::path(post, path = "/api/repos", tag = "Repositories", request_body = CreateRepoRequest,
    responses((status = 201, body = RepoEnvelope), (status = 409, description = "The name is taken", body = ErrorEnvelope),
        (status = 422, description = "Invalid fields, the quota is reached, or SCM_APP_REQUIRED", body = ErrorEnvelope)))]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<CreateRepoRequest>,
) -> ApiResult<(StatusCode, JsonResponse<RepoEnvelope>)> {
    let host = host(&state)?;
    let request = repos::create(body)?;
    let (repository, _) = flows::create(&state.store, host.as_ref(), &acting(&state, &principal), &request).await?;
    Ok((StatusCode::CREATED, JsonResponse(RepoEnvelope { repo: RepoView::new(repository, host.as_ref()) })))
}

/// Push files to a repository as one commit.
#[utoipa::path(post, path = "/api/repos/push", tag = "Repositories", request_body = PushRepoRequest,
    responses((status = 200, body = CommitView), (status = 404, description = "Unknown repository", body = ErrorEnvelope),
        (status = 409, description = "The branch kept moving under the push", body = ErrorEnvelope),
        (status = 422, description = "Invalid fields or SCM_APP_REQUIRED", body = ErrorEnvelope)))]
pub async fn push(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<PushRepoRequest>,
) -> ApiResult<JsonResponse<CommitView>> {
    let host = host(&state)?;
    let request = repos::push(body)?;
    let (repository, outcome) = flows::push(&state.store, host.as_ref(), &acting(&state, &principal), request).await?;
    if outcome.changed {
        wake_playzones(&state, host.as_ref(), &repository).await?;
    }
    Ok(JsonResponse(outcome.into()))
}

/// Create a repository with files as its first commit.
#[utoipa::path(post, path = "/api/repos/create_and_push", tag = "Repositories", request_body = CreateAndPushRequest,
    responses((status = 201, body = CreatedAndPushed), (status = 409, description = "The name is taken", body = ErrorEnvelope),
        (status = 422, description = "Invalid fields, the quota is reached, or SCM_APP_REQUIRED", body = ErrorEnvelope)))]
pub async fn create_and_push(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<CreateAndPushRequest>,
) -> ApiResult<(StatusCode, JsonResponse<CreatedAndPushed>)> {
    let host = host(&state)?;
    let (request, files, message) = repos::create_and_push(body)?;
    let acting = acting(&state, &principal);
    let (repository, first) =
        flows::create_and_push(&state.store, host.as_ref(), &acting, &request, files, &message).await?;
    let answer = CreatedAndPushed { repo: RepoView::new(repository, host.as_ref()), commit: first.into() };
    Ok((StatusCode::CREATED, JsonResponse(answer)))
}

/// The account's repositories.
#[utoipa::path(get, path = "/api/repos", tag = "Repositories",
    responses((status = 200, body = [RepoView]), (status = 422, description = "SCM_APP_REQUIRED", body = ErrorEnvelope)))]
pub async fn list(State(state): State<AppState>, principal: Principal) -> ApiResult<JsonResponse<Vec<RepoView>>> {
    let host = host(&state)?;
    let all = repositories::list(&state.store, principal.account_id).await?;
    Ok(JsonResponse(all.into_iter().map(|r| RepoView::new(r, host.as_ref())).collect()))
}

/// The source-hosting apps installed on the account (play's own Git host
/// appears once the account first uses it).
#[utoipa::path(get, path = "/api/scm_installations", tag = "Repositories",
    responses((status = 200, body = [InstallationView])))]
pub async fn installations(
    State(state): State<AppState>,
    principal: Principal,
) -> ApiResult<JsonResponse<Vec<InstallationView>>> {
    let all = repositories::installations(&state.store, principal.account_id).await?;
    Ok(JsonResponse(all.into_iter().map(InstallationView::from).collect()))
}
