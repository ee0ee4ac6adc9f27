//! `/api/playzones`: git repositories that supply code to dynamic services.
//!
//! The handlers parse, call `play_model::playzone` for the rules and the
//! store for the write, wake the sync loop and shape the response. Only
//! `env_defaults` reads the repository while the request waits (through
//! the `RepositoryGateway` seam); `sync` records the wish and returns, and
//! `branches` answers from the index the last sync recorded.

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use play_core::scm::by_url;
use play_core::scm::flows::Caller;
use play_model::playzone::{self, Stored, env_file};
use play_store::{playzone_access, playzones};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json, Query};
use crate::input::playzones::{BranchesQuery, EnvDefaultsQuery, NewPlayzoneRequest, PlayzoneUpdateRequest, changes};
use crate::state::AppState;
use crate::views::playzones::{
    BranchItem, BranchList, EnvDefaults, PlayzoneDetail, PlayzoneItem, PlayzoneWithCompose, SyncAccepted, short,
};

/// List the account's Playzones.
#[utoipa::path(get, path = "/api/playzones", tag = "Playzones", responses((status = 200, body = [PlayzoneItem])))]
pub async fn list(State(state): State<AppState>, principal: Principal) -> ApiResult<JsonResponse<Vec<PlayzoneItem>>> {
    let list = playzones::list(&state.store, principal.account_id, false).await?;
    Ok(JsonResponse(list.iter().map(PlayzoneItem::from).collect()))
}

/// The account's Playzones whose last sync found a Compose file at the
/// default branch's root.
#[utoipa::path(get, path = "/api/playzones/with_docker_compose", tag = "Playzones",
    responses((status = 200, body = [PlayzoneWithCompose])))]
pub async fn with_docker_compose(
    State(state): State<AppState>,
    principal: Principal,
) -> ApiResult<JsonResponse<Vec<PlayzoneWithCompose>>> {
    let list = playzones::list(&state.store, principal.account_id, true).await?;
    let out = list
        .iter()
        .filter_map(|z| {
            let compose_file = z.compose_file.clone()?;
            Some(PlayzoneWithCompose { item: z.into(), compose_file, compose_commit: z.compose_commit.clone() })
        })
        .collect();
    Ok(JsonResponse(out))
}

/// Create a Playzone; its first sync starts at once. Without
/// `credentials`, a repository of play's own Git host or of an installed
/// app that one of the account's installations reaches is read through it
/// (as `attach` does), no token needed.
#[utoipa::path(post, path = "/api/playzones", tag = "Playzones", request_body = NewPlayzoneRequest,
    responses((status = 201, body = PlayzoneDetail),
        (status = 409, description = "The account's Playzone on that repository exists already", body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope)))]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<NewPlayzoneRequest>,
) -> ApiResult<(StatusCode, JsonResponse<PlayzoneDetail>)> {
    let b = body.playzone;
    if b.credentials.is_none() && !state.hosts.is_empty() {
        let caller = Caller { by: principal.acting(), limits: &state.config.quotas };
        if let Some(zone) = by_url::create(&state.store, &state.hosts, &caller, b.wanted()).await? {
            return Ok((StatusCode::CREATED, JsonResponse((&zone).into())));
        }
    }
    let changes = changes(b.input(), None, &state.config.repository_policy)?;
    let playzone =
        playzones::create(&state.store, Some(&state.secrets), principal.acting(), changes, false, &state.config.quotas)
            .await?;
    Ok((StatusCode::CREATED, JsonResponse((&playzone).into())))
}

/// A Playzone with its sync state.
#[utoipa::path(get, path = "/api/playzones/{id}", tag = "Playzones", params(("id" = i64, Path)),
    responses((status = 200, body = PlayzoneDetail), (status = 404, body = ErrorEnvelope)))]
pub async fn show(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<PlayzoneDetail>> {
    let playzone = playzones::get(&state.store, principal.account_id, id).await?;
    Ok(JsonResponse((&playzone).into()))
}

/// Update a Playzone.
#[utoipa::path(patch, path = "/api/playzones/{id}", tag = "Playzones", params(("id" = i64, Path)),
    request_body = PlayzoneUpdateRequest,
    responses((status = 200, body = PlayzoneDetail), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope)))]
pub async fn update(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Json(body): Json<PlayzoneUpdateRequest>,
) -> ApiResult<JsonResponse<PlayzoneDetail>> {
    let current = playzones::get(&state.store, principal.account_id, id).await?;
    let input = body.playzone.input();
    let stored = Stored {
        private: current.private,
        has_token: current.has_credentials,
        attached: current.attached,
        scm_url: &current.scm_url,
    };
    let changes = changes(input, Some(stored), &state.config.repository_policy)?;
    let playzone = playzones::update(&state.store, &state.secrets, principal.acting(), id, changes).await?;
    Ok(JsonResponse((&playzone).into()))
}

/// Delete a Playzone (409 while a Playspec builds from it).
#[utoipa::path(delete, path = "/api/playzones/{id}", tag = "Playzones", params(("id" = i64, Path)),
    responses((status = 204), (status = 404, body = ErrorEnvelope), (status = 409, body = ErrorEnvelope)))]
pub async fn delete(State(state): State<AppState>, principal: Principal, Id(id): Id) -> ApiResult<StatusCode> {
    playzones::delete(&state.store, principal.account_id, id, principal.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Ask for a sync of the branch index and the Compose file; it runs in the
/// background (watch `status`, `sync_pending` and `last_synced_at`).
#[utoipa::path(post, path = "/api/playzones/{id}/sync", tag = "Playzones", params(("id" = i64, Path)),
    responses((status = 202, body = SyncAccepted), (status = 404, body = ErrorEnvelope)))]
pub async fn sync(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<(StatusCode, JsonResponse<SyncAccepted>)> {
    let playzone = playzones::request_sync(&state.store, principal.account_id, id).await?;
    let message = format!("sync of Playzone {:?} requested", playzone.name);
    Ok((StatusCode::ACCEPTED, JsonResponse(SyncAccepted { message })))
}

/// The branches the last sync found: the default branch first, then by
/// name.
#[utoipa::path(get, path = "/api/playzones/{id}/branches", tag = "Playzones",
    params(("id" = i64, Path), BranchesQuery),
    responses((status = 200, body = BranchList), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope)))]
pub async fn branches(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Query(query): Query<BranchesQuery>,
) -> ApiResult<JsonResponse<BranchList>> {
    // Above the contract's maximum is the maximum (clamped, not refused).
    let limit = query.limit.unwrap_or(playzone::DEFAULT_BRANCH_LIMIT).min(playzone::MAX_BRANCH_LIMIT);
    if limit < 1 {
        return Err(ApiError::field(
            "limit",
            format!("must be at least 1 (above {0} reads {0})", playzone::MAX_BRANCH_LIMIT),
        ));
    }
    if query.query.as_ref().is_some_and(|q| q.chars().count() > playzone::MAX_BRANCH_QUERY_CHARS) {
        return Err(ApiError::field(
            "query",
            format!("must be at most {} characters", playzone::MAX_BRANCH_QUERY_CHARS),
        ));
    }
    let z = playzones::get(&state.store, principal.account_id, id).await?;
    let default = z.default_branch.as_deref();
    let limit = usize::try_from(limit).unwrap_or(1);
    let list = playzones::branches(&state.store, id, query.query.as_deref(), default, limit).await?;
    let branches = list
        .into_iter()
        .map(|b| BranchItem { default: Some(b.name.as_str()) == default, name: b.name, commit: b.commit })
        .collect();
    Ok(JsonResponse(BranchList { branches }))
}

/// The default environment variables of a branch: its env file
/// (`.env.example` unless named), read from the repository at the commit
/// the last sync recorded for the branch.
#[utoipa::path(get, path = "/api/playzones/{id}/env_defaults", tag = "Playzones",
    params(("id" = i64, Path), EnvDefaultsQuery),
    responses((status = 200, body = EnvDefaults), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), (status = 502, body = ErrorEnvelope)))]
pub async fn env_defaults(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Query(query): Query<EnvDefaultsQuery>,
) -> ApiResult<JsonResponse<EnvDefaults>> {
    let path = query.env_file_path.unwrap_or_else(|| playzone::DEFAULT_ENV_FILE.to_owned());
    let mut errors = play_model::FieldErrors::new();
    if let Err(message) = playzone::branch_name(&query.branch) {
        play_model::error::push_field_error(&mut errors, "branch", message);
    }
    if let Err(message) = playzone::repo_path(&path) {
        play_model::error::push_field_error(&mut errors, "env_file_path", message);
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    playzones::get(&state.store, principal.account_id, id).await?;
    let commit = playzones::branch_commit(&state.store, id, &query.branch).await?.ok_or_else(|| {
        ApiError::field(
            "branch",
            format!(
                "the Playzone has no branch {:?} (POST /api/playzones/{id}/sync refreshes its branches)",
                query.branch
            ),
        )
    })?;
    let access = playzone_access::access(&state.store, &state.secrets, id).await?;
    let files = state
        .repositories
        .read_files(&access, &commit, std::slice::from_ref(&path), playzone::MAX_ENV_FILE_BYTES)
        .await
        .map_err(|e| match e {
            play_model::repository::RepositoryError::TooLarge(_) => {
                ApiError::field("env_file_path", format!("is larger than {} bytes", playzone::MAX_ENV_FILE_BYTES))
            }
            other => ApiError::Repository(other),
        })?;
    let Some(bytes) = files.into_iter().next().flatten() else {
        return Err(ApiError::field(
            "env_file_path",
            format!("no file {path:?} at branch {:?} (commit {})", query.branch, short(&commit)),
        ));
    };
    let text = String::from_utf8(bytes).map_err(|_| ApiError::field("env_file_path", "is not UTF-8 text"))?;
    let parsed = env_file::parse(&text).map_err(|message| ApiError::field("env_file_path", message))?;
    Ok(JsonResponse(EnvDefaults { defaults: parsed.defaults, sensitive_keys: parsed.sensitive_keys }))
}
