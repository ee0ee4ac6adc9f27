//! `/api/repos` (the contract's repositories facility),
//! `/api/scm_installations` and `/api/playzones/attach`. Each handler reads its input, calls one flow
//! of `play_model::scm` (which also wakes the Playzones on a repository
//! that moved), and renders.
//!
//! Without a source host (the operator switched play's own Git host off
//! and no app is installed) every route answers 422 `SCM_APP_REQUIRED`.

use axum::Json as JsonResponse;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use play_core::scm::attach;
use play_core::scm::flows::{self, Caller};
use play_core::scm::hosts::SourceHosts;
use play_model::scm::FullName;
use play_store::repositories;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::Json;
use crate::input::playzones::AttachRequest;
use crate::input::repos::{self, CreateAndPushRequest, CreateRepoRequest, PushRepoRequest};
use crate::state::AppState;
use crate::views::playzones::PlayzoneDetail;
use crate::views::repos::{CommitView, CreatedAndPushed, RepoEnvelope, RepoView};

/// The source hosts, or `SCM_APP_REQUIRED` when this play serves none.
fn hosts(state: &AppState) -> ApiResult<&SourceHosts> {
    if state.hosts.is_empty() {
        return Err(ApiError::Core(play_core::Error::ScmAppRequired(
            "no source-hosting app is installed on this account, and play's own Git host is switched off \
             (PLAY_GIT_HOST): ask the operator"
                .into(),
        )));
    }
    Ok(&state.hosts)
}

fn caller<'a>(state: &'a AppState, principal: &Principal) -> Caller<'a> {
    Caller { by: principal.acting(), limits: &state.config.quotas }
}

/// Create a repository.
#[utoipa::path(post, path = "/api/repos", tag = "Repositories", request_body = CreateRepoRequest,
    responses((status = 201, body = RepoEnvelope), (status = 404, description = "No such installation of the account", body = ErrorEnvelope),
        (status = 409, description = "The name is taken", body = ErrorEnvelope),
        (status = 422, description = "Invalid fields, the quota is reached, or SCM_APP_REQUIRED", body = ErrorEnvelope)))]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<CreateRepoRequest>,
) -> ApiResult<(StatusCode, JsonResponse<RepoEnvelope>)> {
    let hosts = hosts(&state)?;
    let request = repos::create(body)?;
    let (repository, _) = flows::create(&state.store, hosts, &caller(&state, &principal), &request).await?;
    Ok((StatusCode::CREATED, JsonResponse(RepoEnvelope { repo: RepoView::new(repository, hosts) })))
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
    let hosts = hosts(&state)?;
    let request = repos::push(body)?;
    let caller = caller(&state, &principal);
    let (_, outcome) = flows::push(&state.store, hosts, &caller, request).await?;
    Ok(JsonResponse(outcome.into()))
}

/// Create a repository with files as its first commit.
#[utoipa::path(post, path = "/api/repos/create_and_push", tag = "Repositories", request_body = CreateAndPushRequest,
    responses((status = 201, body = CreatedAndPushed), (status = 404, description = "No such installation of the account", body = ErrorEnvelope),
        (status = 409, description = "The name is taken", body = ErrorEnvelope),
        (status = 422, description = "Invalid fields, the quota is reached, or SCM_APP_REQUIRED", body = ErrorEnvelope)))]
pub async fn create_and_push(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<CreateAndPushRequest>,
) -> ApiResult<(StatusCode, JsonResponse<CreatedAndPushed>)> {
    let hosts = hosts(&state)?;
    let (request, files, message) = repos::create_and_push(body)?;
    let caller = caller(&state, &principal);
    let (repository, first) = flows::create_and_push(&state.store, hosts, &caller, &request, files, &message).await?;
    let answer = CreatedAndPushed { repo: RepoView::new(repository, hosts), commit: first.into() };
    Ok((StatusCode::CREATED, JsonResponse(answer)))
}

/// Attach a repository through the account's source-hosting
/// installation: a Playzone that reads it without a token. 201 with the new
/// Playzone; 200 with the account's existing Playzone on that repository.
#[utoipa::path(post, path = "/api/playzones/attach", tag = "Playzones", request_body = AttachRequest,
    responses((status = 201, body = PlayzoneDetail), (status = 200, description = "Attached already", body = PlayzoneDetail),
        (status = 404, description = "No repository of that name the account may read", body = ErrorEnvelope),
        (status = 422, description = "Invalid name, the quota is reached, or SCM_APP_REQUIRED", body = ErrorEnvelope)))]
pub async fn attach(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<AttachRequest>,
) -> ApiResult<(StatusCode, JsonResponse<PlayzoneDetail>)> {
    let hosts = hosts(&state)?;
    let mut errors = play_model::FieldErrors::new();
    let on = repos::choice(&mut errors, body.provider, body.installation_id);
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let attached = attach::attach(&state.store, hosts, &caller(&state, &principal), &body.repo_full_name, on).await?;
    let status = if attached.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, JsonResponse((&attached.playzone).into())))
}

/// One of the account's repositories (`GET /api/repos/{owner}/{name}`).
#[utoipa::path(get, path = "/api/repos/{owner}/{name}", tag = "Repositories",
    params(("owner" = String, Path), ("name" = String, Path)),
    responses((status = 200, body = RepoView), (status = 404, body = ErrorEnvelope),
        (status = 422, description = "SCM_APP_REQUIRED", body = ErrorEnvelope)))]
pub async fn show(
    State(state): State<AppState>,
    principal: Principal,
    path: Result<Path<(String, String)>, PathRejection>,
) -> ApiResult<JsonResponse<RepoView>> {
    let hosts = hosts(&state)?;
    let full = full_name(path)?;
    let repository = repositories::by_name(&state.store, principal.account_id, &full).await?;
    Ok(JsonResponse(RepoView::new(repository, hosts)))
}

/// Delete one of the account's repositories, with its history. Playzones
/// attached to it stop syncing and say why.
#[utoipa::path(delete, path = "/api/repos/{owner}/{name}", tag = "Repositories",
    params(("owner" = String, Path), ("name" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorEnvelope),
        (status = 422, description = "SCM_APP_REQUIRED", body = ErrorEnvelope)))]
pub async fn delete(
    State(state): State<AppState>,
    principal: Principal,
    path: Result<Path<(String, String)>, PathRejection>,
) -> ApiResult<StatusCode> {
    let hosts = hosts(&state)?;
    let full = full_name(path)?.to_string();
    let caller = caller(&state, &principal);
    flows::delete(&state.store, hosts, &caller, &full).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The repository a path names; a malformed one reads as missing, like
/// one that does not exist.
fn full_name(path: Result<Path<(String, String)>, PathRejection>) -> ApiResult<FullName> {
    let Path((owner, name)) = path.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    FullName::parse("repo", &format!("{owner}/{name}"))
        .map_err(|_| ApiError::Core(play_core::Error::NotFound("repository")))
}

/// The account's repositories.
#[utoipa::path(get, path = "/api/repos", tag = "Repositories",
    responses((status = 200, body = [RepoView]), (status = 422, description = "SCM_APP_REQUIRED", body = ErrorEnvelope)))]
pub async fn list(State(state): State<AppState>, principal: Principal) -> ApiResult<JsonResponse<Vec<RepoView>>> {
    let hosts = hosts(&state)?;
    let all = repositories::list(&state.store, principal.account_id).await?;
    Ok(JsonResponse(all.into_iter().map(|r| RepoView::new(r, hosts)).collect()))
}
