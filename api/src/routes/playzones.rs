//! `/api/playzones`: git repositories that supply code to dynamic services.
//!
//! The handlers parse, call `play_core::playzone` for the rules and the
//! store for the write, wake the sync loop and shape the response. Only
//! `env_defaults` reads the repository while the request waits (through
//! the `RepositoryGateway` seam); `sync` records the wish and returns, and
//! `branches` answers from the index the last sync recorded.

use std::collections::BTreeMap;

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use play_core::playzone::{self, Changes, Input, Status, Stored, env_file};
use play_core::store::playzones::{self, Playzone};
use play_core::wake::Kind;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json, Query};
use crate::state::AppState;

/// The create body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPlayzoneRequest {
    pub playzone: NewPlayzone,
}

/// Fields of a new Playzone. It starts `pending`; the sync loop lists its
/// branches and finds its Compose file.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPlayzone {
    #[schema(schema_with = crate::schemas::display_name)]
    pub name: String,
    #[schema(schema_with = crate::schemas::repository_url)]
    pub scm_url: String,
    /// The branch environments build from by default; when omitted (or
    /// `null`), the remote's default branch as sync finds it.
    #[serde(default)]
    #[schema(schema_with = crate::schemas::branch_name_or_null)]
    pub default_branch: Option<String>,
    /// A private repository needs `credentials`.
    #[serde(default)]
    pub private: Option<bool>,
    #[serde(default)]
    #[schema(schema_with = crate::schemas::repository_token_or_null)]
    pub credentials: Option<String>,
}

impl std::fmt::Debug for NewPlayzone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewPlayzone").field("name", &self.name).field("scm_url", &self.scm_url).finish_non_exhaustive()
    }
}

/// The update body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlayzoneUpdateRequest {
    pub playzone: PlayzoneUpdate,
}

/// Any subset of the fields; an absent one is left as it is.
/// `default_branch: null` follows the remote's default branch again;
/// `credentials: ""` removes the token. A new URL, token or default branch
/// starts a sync.
#[derive(Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlayzoneUpdate {
    #[serde(default)]
    #[schema(schema_with = crate::schemas::display_name_or_null)]
    pub name: Option<String>,
    #[serde(default)]
    #[schema(schema_with = crate::schemas::repository_url_or_null)]
    pub scm_url: Option<String>,
    #[serde(default, deserialize_with = "crate::json::present")]
    #[schema(schema_with = crate::schemas::branch_name_or_null)]
    pub default_branch: Option<Option<String>>,
    #[serde(default)]
    pub private: Option<bool>,
    #[serde(default)]
    #[schema(schema_with = crate::schemas::repository_token_or_null)]
    pub credentials: Option<String>,
}

impl std::fmt::Debug for PlayzoneUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlayzoneUpdate")
            .field("name", &self.name)
            .field("scm_url", &self.scm_url)
            .finish_non_exhaustive()
    }
}

/// A Playzone in a list.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlayzoneItem {
    pub id: i64,
    pub name: String,
    pub scm_url: String,
    pub private: bool,
    /// The chosen default branch, or the remote's as the last sync found
    /// it (`null` before the first sync).
    pub default_branch: Option<String>,
    /// `pending` (not synced since created or changed), `active`, `error`.
    #[schema(schema_with = status_schema)]
    pub status: &'static str,
    pub last_synced_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

fn status_schema() -> utoipa::openapi::Object {
    crate::schemas::one_of(&Status::ALL.map(Status::as_str))
}

/// A Playzone with its sync state (never its token).
#[derive(Debug, Serialize, ToSchema)]
pub struct PlayzoneDetail {
    #[serde(flatten)]
    pub item: PlayzoneItem,
    /// Why the last sync failed (with `status: error`).
    pub status_message: Option<String>,
    /// Whether an access token is stored.
    pub has_credentials: bool,
    /// Whether `default_branch` was chosen (else it follows the remote).
    pub default_branch_pinned: bool,
    /// Created by Launch for a Compose file's build service.
    pub auto_created: bool,
    /// The Compose file found at the default branch's root.
    pub compose_file: Option<String>,
    /// The commit it was found at.
    pub compose_commit: Option<String>,
    /// When a sync was last tried, successful or not.
    pub last_sync_attempt_at: Option<DateTime<Utc>>,
    /// Whether a sync is asked for and not done yet.
    pub sync_pending: bool,
}

impl From<&Playzone> for PlayzoneItem {
    fn from(z: &Playzone) -> Self {
        PlayzoneItem {
            id: z.id,
            name: z.name.clone(),
            scm_url: z.scm_url.clone(),
            private: z.private,
            default_branch: z.default_branch.clone(),
            status: z.status.as_str(),
            last_synced_at: z.last_synced_at,
            created_at: z.created_at,
            updated_at: z.updated_at,
        }
    }
}

impl From<&Playzone> for PlayzoneDetail {
    fn from(z: &Playzone) -> Self {
        PlayzoneDetail {
            item: z.into(),
            status_message: z.status_message.clone(),
            has_credentials: z.has_credentials,
            default_branch_pinned: z.default_branch_pinned,
            auto_created: z.auto_created,
            compose_file: z.compose_file.clone(),
            compose_commit: z.compose_commit.clone(),
            last_sync_attempt_at: z.last_sync_attempt_at,
            sync_pending: z.synced_generation < z.generation,
        }
    }
}

/// A Playzone with a detected Compose file.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlayzoneWithCompose {
    #[serde(flatten)]
    pub item: PlayzoneItem,
    pub compose_file: String,
    pub compose_commit: Option<String>,
}

/// The answer to `sync`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SyncAccepted {
    pub message: String,
}

/// The answer to `branches`.
#[derive(Debug, Serialize, ToSchema)]
pub struct BranchList {
    pub branches: Vec<BranchItem>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BranchItem {
    pub name: String,
    /// Whether it is the Playzone's default branch.
    pub default: bool,
    /// The commit the last sync found it at.
    pub commit: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BranchesQuery {
    /// Case-insensitive substring of the branch name.
    #[param(max_length = 255)]
    pub query: Option<String>,
    /// How many branches (default 20, at most 50); the default branch
    /// comes first, then by name.
    #[param(minimum = 1, maximum = 50)]
    pub limit: Option<i64>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EnvDefaultsQuery {
    /// The branch whose env file is read (as the last sync recorded it).
    #[param(min_length = 1, max_length = 255, pattern = "^[A-Za-z0-9._+/-]+$")]
    pub branch: String,
    /// The env file's path in the repository (default `.env.example`).
    #[param(min_length = 1, max_length = 255, pattern = "^[A-Za-z0-9_./-]+$")]
    pub env_file_path: Option<String>,
}

/// The answer to `env_defaults`.
#[derive(Debug, Serialize, ToSchema)]
pub struct EnvDefaults {
    /// Name -> default value; `$$secret(N)` placeholders are generated per
    /// Playground.
    pub defaults: BTreeMap<String, String>,
    /// Keys whose values are secrets (see docs/playzones.md for the rule).
    pub sensitive_keys: Vec<String>,
}

/// The attach body (answered with `SCM_APP_REQUIRED` until a source-hosting
/// app can be installed).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachRequest {
    /// `owner/name`.
    #[schema(min_length = 3, max_length = 200)]
    pub repo_full_name: String,
}

pub(crate) fn changes(input: Input, stored: Option<Stored>, state: &AppState) -> ApiResult<Changes> {
    Changes::validate(input, stored, &state.config.repository_policy).map_err(ApiError::validation)
}

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

/// Create a Playzone; its first sync starts at once.
#[utoipa::path(post, path = "/api/playzones", tag = "Playzones", request_body = NewPlayzoneRequest,
    responses((status = 201, body = PlayzoneDetail), (status = 422, body = ErrorEnvelope)))]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<NewPlayzoneRequest>,
) -> ApiResult<(StatusCode, JsonResponse<PlayzoneDetail>)> {
    let b = body.playzone;
    let input = Input {
        name: Some(b.name),
        scm_url: Some(b.scm_url),
        default_branch: b.default_branch.map(Some),
        private: b.private,
        credentials: b.credentials,
    };
    let changes = changes(input, None, &state)?;
    let playzone = playzones::create(
        &state.store,
        &state.secrets,
        principal.account_id,
        changes,
        false,
        &state.config.quotas,
        principal.actor(),
    )
    .await?;
    state.waker.wake(Kind::Playzone, playzone.id);
    Ok((StatusCode::CREATED, JsonResponse((&playzone).into())))
}

/// Attach a repository through the source-hosting app.
#[utoipa::path(post, path = "/api/playzones/attach", tag = "Playzones", request_body = AttachRequest,
    responses((status = 422, body = ErrorEnvelope)))]
pub async fn attach(_principal: Principal, Json(_body): Json<AttachRequest>) -> ApiResult<StatusCode> {
    Err(ApiError::Core(play_core::Error::ScmAppRequired(
        "no source-hosting app is installed on this account: create the Playzone with POST /api/playzones and an \
         access token in credentials"
            .into(),
    )))
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
    let b = body.playzone;
    let input = Input {
        name: b.name,
        scm_url: b.scm_url,
        default_branch: b.default_branch,
        private: b.private,
        credentials: b.credentials,
    };
    let stored = Stored { private: current.private, has_token: current.has_credentials, scm_url: &current.scm_url };
    let changes = changes(input, Some(stored), &state)?;
    let sync = changes.needs_sync();
    let playzone =
        playzones::update(&state.store, &state.secrets, principal.account_id, id, changes, principal.actor()).await?;
    if sync {
        state.waker.wake(Kind::Playzone, id);
    }
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
    state.waker.wake(Kind::Playzone, id);
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
    let limit = query.limit.unwrap_or(playzone::DEFAULT_BRANCH_LIMIT);
    if !(1..=playzone::MAX_BRANCH_LIMIT).contains(&limit) {
        return Err(ApiError::field("limit", format!("must be from 1 to {}", playzone::MAX_BRANCH_LIMIT)));
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
    let mut errors = play_core::FieldErrors::new();
    if let Err(message) = playzone::branch_name(&query.branch) {
        play_core::error::push_field_error(&mut errors, "branch", message);
    }
    if let Err(message) = playzone::repo_path(&path) {
        play_core::error::push_field_error(&mut errors, "env_file_path", message);
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
    let access = playzones::access(&state.store, &state.secrets, id).await?;
    let files = state
        .repositories
        .read_files(&access, &commit, std::slice::from_ref(&path), playzone::MAX_ENV_FILE_BYTES)
        .await
        .map_err(|e| match e {
            play_core::repository::RepositoryError::TooLarge(_) => {
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

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}
