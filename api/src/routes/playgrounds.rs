//! `/api/playgrounds`: running instances of Playspecs on Playrooms.
//!
//! Handlers record desired state and return; the Playground reconciler
//! converges the host and writes status back (`creation_step`, errors,
//! services). Create answers `201` with the detail view, status
//! `in_progress`. Every change of desired state wakes the Playground's
//! reconciler and its Playroom's edge ([`wake`]), so routes follow
//! promptly (a destroyed Playground's are dropped at once).

use std::collections::BTreeMap;

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use play_core::playground::{
    CreateRequest, CreationStep, Playground, PlaygroundStatus as Status, ServiceSettings, ServiceStatus, launch, ops,
};
use play_core::store::{playground_detail, playgrounds};
use play_core::time;
use play_core::wake::Kind;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::playground_urls::{self, RouteView, Urls};
use crate::auth::Principal;
use crate::error::{ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json};
use crate::recent::Freshness;
use crate::rendered::{self, JsonBody};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlaygroundRequest {
    pub playground: PlaygroundInput,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlaygroundInput {
    #[schema(schema_with = crate::schemas::display_name, required = true)]
    pub name: Option<String>,
    /// An unknown id is 404.
    #[schema(value_type = i64, required = true)]
    pub playspec_id: Option<i64>,
    /// An unknown id is 404.
    #[schema(value_type = i64, required = true)]
    pub playroom_id: Option<i64>,
    #[serde(default)]
    pub job_mode: bool,
    /// Job mode only; empty means every dynamic service. Services of the
    /// Playspec.
    #[serde(default)]
    pub watched_services: Vec<String>,
    /// Variables for every service.
    #[serde(default)]
    #[schema(schema_with = crate::schemas::env_vars)]
    pub env_overrides: BTreeMap<String, String>,
    /// Service name -> subdomain; only for exposed services.
    #[serde(default)]
    #[schema(schema_with = crate::schemas::subdomains)]
    pub service_subdomains: BTreeMap<String, String>,
    /// Service name -> {git_config, production, env_vars}.
    #[serde(default)]
    #[schema(schema_with = crate::schemas::service_settings)]
    pub services: BTreeMap<String, ServiceSettings>,
}

impl From<PlaygroundInput> for CreateRequest {
    fn from(input: PlaygroundInput) -> Self {
        CreateRequest {
            name: input.name,
            playspec_id: input.playspec_id,
            playroom_id: input.playroom_id,
            job_mode: input.job_mode,
            watched_services: input.watched_services,
            env_overrides: input.env_overrides,
            service_subdomains: input.service_subdomains,
            services: input.services,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BranchName {
    pub branch_name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlaygroundItem {
    pub id: i64,
    pub name: String,
    #[schema(value_type = String)]
    pub status: Status,
    pub job_mode: bool,
    pub playspec_id: Option<i64>,
    pub playspec_name: Option<String>,
    pub service_branches: BTreeMap<String, BranchName>,
    pub expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    /// Service name -> URL. In the list: the routes the Playroom's edge
    /// serves now. In the detail view: every route the desired state asks
    /// for, served or not yet (see `routes`).
    pub urls: Urls,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlaygroundDetail {
    #[serde(flatten)]
    pub item: PlaygroundItem,
    pub playroom_id: i64,
    pub compose_project: String,
    pub env_overrides: BTreeMap<String, String>,
    pub service_subdomains: BTreeMap<String, String>,
    pub watched_services: Vec<String>,
    /// Seconds until expiry (0 once past).
    pub time_remaining: f64,
    /// How much of the lifetime has passed, 0-100.
    pub expiration_percentage: f64,
    pub last_applied_at: Option<DateTime<Utc>>,
    pub needs_recreation: bool,
    #[schema(value_type = Vec<Object>)]
    pub services: Vec<ServiceStatus>,
    /// Desired-state generation, and the one the reconciler last converged.
    pub generation: i64,
    pub observed_generation: i64,
    /// Every routed service, and whether the edge serves it now.
    pub routes: Vec<RouteView>,
    /// A branch a built service was pinned to has moved since (the
    /// Playzone's last sync saw a newer commit): a rollout builds it.
    pub needs_rollout: bool,
    /// The services `needs_rollout` is about.
    pub outdated_services: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlaygroundStatus {
    pub id: i64,
    #[schema(value_type = String)]
    pub status: Status,
    pub job_mode: bool,
    #[schema(value_type = Option<String>)]
    pub creation_step: Option<CreationStep>,
    pub creation_step_label: Option<String>,
    pub error_message: Option<String>,
    #[schema(value_type = Option<String>)]
    pub error_step: Option<CreationStep>,
    pub error_step_label: Option<String>,
    pub needs_recreation: bool,
    #[schema(value_type = Vec<Object>)]
    pub services: Vec<ServiceStatus>,
}

fn item(p: &Playground, urls: Urls) -> PlaygroundItem {
    let service_branches = p
        .service_settings
        .iter()
        .filter_map(|(name, s)| {
            let branch = s.git_config.as_ref()?.branch_name.clone()?;
            Some((name.clone(), BranchName { branch_name: branch }))
        })
        .collect();
    PlaygroundItem {
        id: p.id,
        name: p.name.clone(),
        status: p.status,
        job_mode: p.job_mode,
        playspec_id: p.playspec_id,
        playspec_name: p.playspec_name.clone(),
        service_branches,
        expires_at: p.expires_at,
        created_at: p.created_at,
        urls,
    }
}

/// Seconds until `expires_at` (never negative).
pub fn time_remaining(p: &Playground) -> f64 {
    p.expires_at.map_or(0.0, |at| ((at - time::now()).num_milliseconds() as f64 / 1000.0).max(0.0))
}

fn expiration_percentage(p: &Playground) -> f64 {
    let Some(at) = p.expires_at else { return 0.0 };
    let total = (at - p.created_at).num_milliseconds() as f64;
    if total <= 0.0 {
        return 100.0;
    }
    let elapsed = (time::now() - p.created_at).num_milliseconds() as f64;
    (elapsed / total * 100.0).clamp(0.0, 100.0)
}

/// The detail view of `p`, with its routes.
pub async fn detail(state: &AppState, p: Playground) -> play_core::Result<PlaygroundDetail> {
    let (urls, routes) = playground_urls::urls_and_routes(state, &p).await?;
    detail_known(state, p, true, urls, routes).await
}

/// [`detail`] from one read ([`playground_detail::get_for_detail`]).
async fn detail_read(state: &AppState, read: playground_detail::ForDetail) -> play_core::Result<PlaygroundDetail> {
    let p = read.playground;
    // A deleted Playroom: not found, as `playrooms::get` answers.
    let playroom = read.playroom.ok_or(play_core::Error::NotFound("playroom"))?;
    let (urls, routes) = playground_urls::urls_and_routes_on(state, &p, playroom).await?;
    detail_known(state, p, read.any_outdated, urls, routes).await
}

/// The detail view of `p`, its URLs and routes known, where
/// `maybe_outdated: false` says the caller read that no built service is
/// outdated.
async fn detail_known(
    state: &AppState,
    p: Playground,
    maybe_outdated: bool,
    urls: playground_urls::Urls,
    routes: Vec<playground_urls::RouteView>,
) -> play_core::Result<PlaygroundDetail> {
    let outdated = match maybe_outdated {
        true => play_core::store::builds::outdated(&state.store, p.id).await?,
        false => Vec::new(),
    };
    Ok(PlaygroundDetail {
        // The Playspec's own repository moving needs a rollout too, but
        // is no service.
        needs_rollout: !outdated.is_empty(),
        outdated_services: outdated.into_iter().filter(|s| s != play_core::build::PROJECT_PIN).collect(),
        item: item(&p, urls),
        time_remaining: time_remaining(&p),
        expiration_percentage: expiration_percentage(&p),
        playroom_id: p.playroom_id,
        compose_project: p.compose_project,
        env_overrides: p.env_overrides,
        service_subdomains: p.service_subdomains,
        watched_services: p.watched_services,
        last_applied_at: p.last_applied_at,
        needs_recreation: p.needs_recreation,
        services: p.services,
        generation: p.generation,
        observed_generation: p.observed_generation,
        routes,
    })
}

/// Wakes the reconcilers that follow `p`'s desired state: its own, and its
/// Playroom's edge (routes appear and go with it).
pub fn wake(state: &AppState, p: &Playground) {
    state.waker.wake(Kind::Playground, p.id);
    state.waker.wake(Kind::Edge, p.playroom_id);
}

/// Create a Playground; answers at once with status `in_progress`.
#[utoipa::path(post, path = "/api/playgrounds", tag = "Playgrounds", request_body = PlaygroundRequest,
    responses((status = 201, body = PlaygroundDetail), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<PlaygroundRequest>,
) -> ApiResult<(StatusCode, JsonResponse<PlaygroundDetail>)> {
    let request = CreateRequest::from(body.playground);
    let limits = state.config.limits();
    let playground =
        launch::create_playground(&state.store, &state.cpu, principal.account_id, request, limits, principal.actor())
            .await?;
    wake(&state, &playground);
    Ok((StatusCode::CREATED, JsonResponse(detail(&state, playground).await?)))
}

/// List the account's Playgrounds.
#[utoipa::path(get, path = "/api/playgrounds", tag = "Playgrounds", responses((status = 200, body = [PlaygroundItem])))]
pub async fn list(State(state): State<AppState>, principal: Principal) -> ApiResult<JsonResponse<Vec<PlaygroundItem>>> {
    let all = playgrounds::list(&state.store, principal.account_id).await?;
    let mut urls = playground_urls::live_urls(&state, principal.account_id, &all).await?;
    Ok(JsonResponse(all.iter().map(|p| item(p, urls.remove(&p.id).unwrap_or_default())).collect()))
}

/// A Playground's detail view.
///
/// Reflects every write made through this replica before the request, and
/// every other write within the read staleness bound (see `Cache-Control`).
#[utoipa::path(get, path = "/api/playgrounds/{id}", tag = "Playgrounds", params(("id" = i64, Path),
        ("Cache-Control" = Option<String>, Header, description = "`no-cache` (or `max-age=0`): a read that starts after this request. Without it the body may be one rendered up to 250 ms earlier (`PLAY_READ_STALENESS`), never older than a write request this replica answered.")),
    responses((status = 200, body = PlaygroundDetail), (status = 404, body = ErrorEnvelope)))]
pub async fn show(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    freshness: Freshness,
) -> ApiResult<JsonBody> {
    let account_id = principal.account_id;
    let render = || async {
        let read = playground_detail::get_for_detail(&state.store, account_id, id).await?;
        rendered::to_json(&detail_read(&state, read).await?)
    };
    let renders = &state.renders;
    Ok(JsonBody(renders.serve(&renders.playground_detail, (account_id, id), freshness, render).await?))
}

/// Lightweight status for polling.
///
/// Reflects every write made through this replica before the request, and
/// every other write within the read staleness bound (see `Cache-Control`).
#[utoipa::path(get, path = "/api/playgrounds/{id}/status", tag = "Playgrounds", params(("id" = i64, Path),
        ("Cache-Control" = Option<String>, Header, description = "`no-cache` (or `max-age=0`): a read that starts after this request. Without it the body may be one rendered up to 250 ms earlier (`PLAY_READ_STALENESS`), never older than a write request this replica answered.")),
    responses((status = 200, body = PlaygroundStatus), (status = 404, body = ErrorEnvelope)))]
pub async fn status(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    freshness: Freshness,
) -> ApiResult<JsonBody> {
    let account_id = principal.account_id;
    let render = || async { rendered::to_json(&status_of(playgrounds::get(&state.store, account_id, id).await?)) };
    let renders = &state.renders;
    Ok(JsonBody(renders.serve(&renders.playground_status, (account_id, id), freshness, render).await?))
}

/// The status view of `p`.
fn status_of(p: Playground) -> PlaygroundStatus {
    let label = |step: Option<CreationStep>| step.map(|s| s.label().to_owned());
    PlaygroundStatus {
        id: p.id,
        creation_step_label: label(p.creation_step),
        error_step_label: label(p.error_step),
        status: p.status,
        job_mode: p.job_mode,
        creation_step: p.creation_step,
        error_message: p.error_message,
        error_step: p.error_step,
        needs_recreation: p.needs_recreation,
        services: p.services,
    }
}

/// Destroy a Playground: answers 202 with status `destroying`.
#[utoipa::path(delete, path = "/api/playgrounds/{id}", tag = "Playgrounds", params(("id" = i64, Path)),
    responses((status = 202, body = PlaygroundStatus), (status = 404, body = ErrorEnvelope)))]
pub async fn delete(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<(StatusCode, JsonResponse<PlaygroundDetail>)> {
    let playground = ops::request_destroy(&state.store, principal.account_id, id, principal.actor()).await?;
    wake(&state, &playground);
    Ok((StatusCode::ACCEPTED, JsonResponse(detail(&state, playground).await?)))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtendRequest {
    /// Hours to add, 1-720; default 8 (`play_core::playground::ops`).
    #[schema(minimum = 1, maximum = 720)]
    pub duration_hours: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Extended {
    pub id: i64,
    pub expires_at: Option<DateTime<Utc>>,
    pub time_remaining: f64,
}

/// Extend the TTL: `expires_at` moves to max(expires_at, now) + duration_hours.
#[utoipa::path(post, path = "/api/playgrounds/{id}/extend_expiration", tag = "Playgrounds", params(("id" = i64, Path)),
    request_body(content = Option<ExtendRequest>, description = "Optional: without a body, 8 hours"),
    responses((status = 200, body = Extended), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn extend_expiration(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    body: Option<Json<ExtendRequest>>,
) -> ApiResult<JsonResponse<Extended>> {
    let hours = body.and_then(|Json(b)| b.duration_hours);
    let p = ops::extend(&state.store, principal.account_id, id, hours, principal.actor()).await?;
    // The reconciler's expiry timer must move with expires_at.
    state.waker.wake(Kind::Playground, p.id);
    Ok(JsonResponse(Extended { id: p.id, time_remaining: time_remaining(&p), expires_at: p.expires_at }))
}
