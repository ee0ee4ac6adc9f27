//! Import template versions (`versions`, `create_version`,
//! `destroy_version`, `toggle_public`) and `launch`.
//!
//! `version_id` of destroy_version and toggle_public is read from the query
//! string or from a JSON body (either; both must agree). toggle_public flips
//! the flag, or sets it when the body or query says `public`.

use std::collections::BTreeMap;

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use play_core::FieldErrors;
use play_core::compose::{self, Issue, svc};
use play_core::error::push_field_error;
use play_core::playground::launch::{self, TemplateLaunch};
use play_core::store::templates::{self, Version};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::playground_urls::{self, Urls};
use super::playgrounds;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json, Query};
use crate::state::AppState;

/// A version. Immutable but for `public`.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionRecord {
    pub id: i64,
    pub template_id: i64,
    /// 1, 2, 3... per template; a deleted version's number is not reused.
    pub version: i64,
    pub public: bool,
    pub template_body: String,
    /// The declared variables: name -> {name, required, random, default,
    /// validation, path, paths}.
    #[schema(value_type = Object)]
    pub variables: serde_json::Value,
    pub created_at: DateTime<Utc>,
}

impl From<Version> for VersionRecord {
    fn from(v: Version) -> Self {
        VersionRecord {
            id: v.id,
            template_id: v.template_id,
            version: v.version,
            public: v.public,
            template_body: v.template_body,
            variables: v.variables,
            created_at: v.created_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedVersion {
    #[serde(flatten)]
    pub version: VersionRecord,
    /// Template warnings (unknown Compose keys, list-form unknown labels).
    #[schema(value_type = Vec<Object>)]
    pub warnings: Vec<Issue>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateVersionRequest {
    /// Compose YAML with the `svc` extension; it must pass template
    /// validation (errors are keyed under `template_body`).
    #[schema(example = "services:\n  web:\n    image: nginx:alpine\n")]
    pub template_body: String,
    /// Default false.
    pub public: Option<bool>,
}

/// `version_id` (and, for toggle_public, `public`) from the query or body.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VersionParams {
    pub version_id: Option<i64>,
    /// toggle_public only: set to this instead of flipping.
    pub public: Option<bool>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = TemplateLaunchRequest)]
pub struct LaunchRequest {
    /// An unknown id is 404.
    #[schema(value_type = i64, required = true)]
    pub playroom_id: Option<i64>,
    /// Default: the latest version the caller can see.
    pub version: Option<i64>,
    /// Variable name -> value (string, number or boolean).
    #[schema(value_type = Object)]
    pub variables: Option<BTreeMap<String, serde_json::Value>>,
    /// The Playspec's name; default: the template's name and a random suffix.
    #[schema(schema_with = crate::schemas::display_name_or_null)]
    pub name: Option<String>,
}

/// What launch created.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = TemplateLaunchResponse)]
pub struct LaunchResponse {
    pub playspec_id: i64,
    pub playspec_name: String,
    pub template_id: i64,
    pub version: i64,
    /// Names of the values generated for `$$random__` references and
    /// `random: true` variables (the values are in the Playspec's Compose).
    pub generated_keys: Vec<String>,
    /// The Playground recorded on the Playroom (status `in_progress`).
    pub playground_id: i64,
    /// Service name -> URL of each routed service of the Playground
    /// (served once it runs).
    pub urls: Urls,
    /// Warnings of the compiled Compose.
    #[schema(value_type = Vec<Object>)]
    pub warnings: Vec<Issue>,
    /// Ids of the Playzones created for the template's build services
    /// (`svc/repo_url` of a repository the account had none for).
    pub playzones_created: Vec<i64>,
}

/// The JSON body destroy_version reads (documentation: the handler reads
/// [`VersionParams`] and refuses `public`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DestroyVersionParams {
    pub version_id: Option<i64>,
}

/// Merges the query's and the body's parameters; `allow_public` says whether
/// `public` is meaningful.
fn version_params(
    query: VersionParams,
    body: Option<Json<VersionParams>>,
    allow_public: bool,
) -> ApiResult<(i64, Option<bool>)> {
    let from_body = body.map(|Json(b)| b).unwrap_or_default();
    let mut errors = FieldErrors::new();
    let mut pick = |name: &str, q: Option<i64>, b: Option<i64>| match (q, b) {
        (Some(q), Some(b)) if q != b => {
            push_field_error(&mut errors, name, "differs between the query and the body");
            None
        }
        (q, b) => q.or(b),
    };
    let version_id = pick("version_id", query.version_id, from_body.version_id);
    let public = match (query.public, from_body.public) {
        (Some(q), Some(b)) if q != b => {
            push_field_error(&mut errors, "public", "differs between the query and the body");
            None
        }
        (q, b) => q.or(b),
    };
    if version_id.is_none() && !errors.contains_key("version_id") {
        push_field_error(&mut errors, "version_id", "is required");
    }
    if public.is_some() && !allow_public {
        push_field_error(&mut errors, "public", "is not a parameter of destroy_version");
    }
    match version_id {
        Some(id) if errors.is_empty() => Ok((id, public)),
        _ => Err(ApiError::validation(errors)),
    }
}

/// The versions the caller can see: all for the owner, public ones for
/// others; oldest first, with their bodies.
#[utoipa::path(get, path = "/api/import_templates/{id}/versions", tag = "Import templates", params(("id" = i64, Path)),
    responses((status = 200, body = [VersionRecord]), (status = 404, body = ErrorEnvelope)))]
pub async fn versions(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<Vec<VersionRecord>>> {
    let all = templates::versions(&state.store, principal.account_id, id).await?;
    Ok(JsonResponse(all.into_iter().map(VersionRecord::from).collect()))
}

/// Add a version (owner only). The body must pass template validation.
#[utoipa::path(post, path = "/api/import_templates/{id}/create_version", tag = "Import templates",
    params(("id" = i64, Path)), request_body = CreateVersionRequest,
    responses((status = 201, body = CreatedVersion), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn create_version(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Json(body): Json<CreateVersionRequest>,
) -> ApiResult<(StatusCode, JsonResponse<CreatedVersion>)> {
    // Ownership first: another account learns nothing from validation.
    templates::owned(&state.store, principal.account_id, id).await?;
    if body.template_body.len() > compose::MAX_COMPOSE_BYTES {
        return Err(ApiError::field(svc::BODY_KEY, format!("must be at most {} bytes", compose::MAX_COMPOSE_BYTES)));
    }
    let text = body.template_body.clone();
    let info = state.cpu.run(move || svc::validate_template(&text)).await?.map_err(ApiError::validation)?;
    let variables = serde_json::to_value(&info.variables)
        .map_err(|e| play_core::Error::Internal(format!("variables do not serialise: {e}")))?;
    let version = templates::create_version(
        &state.store,
        principal.account_id,
        id,
        &body.template_body,
        body.public.unwrap_or(false),
        &variables,
        principal.actor(),
    )
    .await?;
    Ok((StatusCode::CREATED, JsonResponse(CreatedVersion { version: version.into(), warnings: info.warnings })))
}

/// Delete a version (owner only). Playspecs created from it are unaffected.
#[utoipa::path(delete, path = "/api/import_templates/{id}/destroy_version", tag = "Import templates",
    params(("id" = i64, Path), ("version_id" = Option<i64>, Query, description = "the version's id (or in a JSON body)")),
    request_body(content = Option<DestroyVersionParams>, description = "Optional: `version_id` as JSON"),
    responses((status = 204), (status = 404, body = ErrorEnvelope),
        (status = 422, description = "`version_id` missing (from both query and body) or different in the two", body = ErrorEnvelope)))]
pub async fn destroy_version(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Query(query): Query<VersionParams>,
    body: Option<Json<VersionParams>>,
) -> ApiResult<StatusCode> {
    let (version_id, _) = version_params(query, body, false)?;
    templates::destroy_version(&state.store, principal.account_id, id, version_id, principal.actor()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Flip a version's public flag, or set it with `public` (owner only).
#[utoipa::path(patch, path = "/api/import_templates/{id}/toggle_public", tag = "Import templates",
    params(("id" = i64, Path), ("version_id" = Option<i64>, Query, description = "the version's id (or in a JSON body)"),
        ("public" = Option<bool>, Query, description = "set instead of flip")),
    request_body(content = Option<VersionParams>, description = "Optional: the parameters as JSON"),
    responses((status = 200, body = VersionRecord), (status = 404, body = ErrorEnvelope),
        (status = 422, description = "`version_id` missing (from both query and body) or different in the two", body = ErrorEnvelope)))]
pub async fn toggle_public(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Query(query): Query<VersionParams>,
    body: Option<Json<VersionParams>>,
) -> ApiResult<JsonResponse<VersionRecord>> {
    let (version_id, public) = version_params(query, body, true)?;
    let version =
        templates::set_public(&state.store, principal.account_id, id, version_id, public, principal.actor()).await?;
    Ok(JsonResponse(version.into()))
}

/// Compile a template version with variables under the Playroom's policy and
/// create a Playspec from it. (The Playground arrives with Playgrounds.)
#[utoipa::path(post, path = "/api/import_templates/{id}/launch", tag = "Import templates",
    params(("id" = i64, Path)), request_body = LaunchRequest,
    responses((status = 201, body = LaunchResponse), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn launch(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Json(body): Json<LaunchRequest>,
) -> ApiResult<(StatusCode, JsonResponse<LaunchResponse>)> {
    let request = TemplateLaunch {
        playroom_id: body.playroom_id,
        version: body.version,
        variables: body.variables.unwrap_or_default(),
        name: body.name,
    };
    let limits = state.config.limits();
    let launched =
        launch::launch_template(&state.store, &state.cpu, principal.account_id, id, request, limits, principal.actor())
            .await?;
    playgrounds::wake(&state, &launched.playground);
    let urls = playground_urls::urls(&state, &launched.playground).await?;
    Ok((
        StatusCode::CREATED,
        JsonResponse(LaunchResponse {
            playspec_id: launched.playspec.id,
            playspec_name: launched.playspec.name,
            template_id: launched.template.id,
            version: launched.version.version,
            generated_keys: launched.generated_keys,
            playground_id: launched.playground.id,
            urls,
            warnings: launched.warnings,
            playzones_created: launched.playzones_created,
        }),
    ))
}
