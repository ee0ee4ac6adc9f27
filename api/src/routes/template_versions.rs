//! Import template versions (`versions`, `create_version`,
//! `destroy_version`, `toggle_public`) and `launch`.
//!
//! `version_id` of destroy_version and toggle_public is read from the query
//! string or from a JSON body (either; both must agree). toggle_public flips
//! the flag, or sets it when the body or query says `public`.

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use play_core::playground::launch::{self, TemplateLaunch};
use play_model::compose::{self, svc};
use play_model::model::template::NewVersion;
use play_model::scopes::Scope;
use play_store::templates;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json, Query};
use crate::input::template_versions::{
    CreateVersionRequest, DestroyVersionParams, LaunchRequest, VersionParams, version_params,
};
use crate::state::AppState;
use crate::views::playground_urls;
use crate::views::template_versions::{CreatedVersion, LaunchResponse, VersionRecord};
use crate::views::templates::{idle_warnings, launch_settings};

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
    crate::input::templates::check_schedule(&info, state.config.schedule_min_interval).map_err(ApiError::validation)?;
    let variables = serde_json::to_value(&info.variables)
        .map_err(|e| play_core::Error::Internal(format!("variables do not serialise: {e}")))?;
    let new = NewVersion {
        template_body: &body.template_body,
        public: body.public.unwrap_or(false),
        variables: &variables,
        author_may_read_playzones: principal.scopes.grants(Scope::PlayzonesRead),
    };
    let version = templates::create_version(&state.store, principal.acting(), id, new, &state.config.quotas).await?;
    // A schedule or trigger this version turned on may still need a
    // Playroom: say so, and how (issue #52, item 6).
    let (schedule, trigger) = launch_settings(&state.store, principal.account_id, id).await?;
    let mut warnings = info.warnings;
    warnings.extend(idle_warnings(schedule.as_ref(), trigger.as_ref()));
    Ok((StatusCode::CREATED, JsonResponse(CreatedVersion { version: version.into(), warnings })))
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
    let may_read = principal.scopes.grants(Scope::PlayzonesRead);
    templates::destroy_version(&state.store, principal.acting(), id, version_id, &state.config.quotas, may_read)
        .await?;
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
        job_mode: false,
        trigger: None,
    };
    let limits = state.limits();
    let launched =
        launch::launch_template(&state.store, &state.cpu, principal.account_id, id, request, limits, principal.actor())
            .await?;
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
