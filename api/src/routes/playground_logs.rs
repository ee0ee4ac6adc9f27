//! `GET /api/playgrounds/{id}/logs/{service}`: the last lines of a
//! service's log, read live from the Playroom's Docker engine, or, for a
//! completed job-mode Playground (whose containers are gone), from the last
//! 1000 lines of each service stored when the job completed.

use axum::Json as JsonResponse;
use axum::extract::{Path, State};
use play_core::compose::ServiceDefinition;
use play_core::host::HostError;
use play_core::playground::{Playground, container_name};
use play_core::store::playgrounds;
use play_core::store::{job_results, playrooms, playspecs};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::Query;
use crate::state::AppState;

pub const DEFAULT_TAIL: usize = 100;
pub const MAX_TAIL: usize = 1000;

#[derive(Debug, Deserialize)]
pub struct LogsQuery {
    /// Kept as text so a bad value gets a message of ours, not serde's.
    pub tail: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Logs {
    pub service: String,
    pub lines: Vec<String>,
    /// `live` (read from the host now) or `cached` (a finished job's logs).
    pub source: &'static str,
}

fn tail(query: &LogsQuery) -> ApiResult<usize> {
    match query.tail.as_deref() {
        None => Ok(DEFAULT_TAIL),
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=MAX_TAIL).contains(&n) => Ok(n),
            _ => Err(ApiError::field("tail", format!("must be a whole number from 1 to {MAX_TAIL}"))),
        },
    }
}

/// Whether the Playground's Playspec defines `service`.
async fn defines(state: &AppState, p: &Playground, service: &str) -> ApiResult<bool> {
    let Some(playspec_id) = p.playspec_id else { return Ok(false) };
    let playspec = playspecs::get(&state.store, p.account_id, playspec_id).await?;
    let services: Vec<ServiceDefinition> = playspec.definitions()?;
    Ok(services.iter().any(|s| s.name == service))
}

/// The cached logs of a completed job: a service that never ran has none;
/// one the Playspec does not define is unknown.
async fn cached(state: &AppState, p: &Playground, service: String, tail: usize) -> ApiResult<Logs> {
    let mut lines = match job_results::cached_logs(&state.store, p.id, &service).await? {
        Some(lines) => lines,
        None if defines(state, p, &service).await? => Vec::new(),
        None => return Err(ApiError::Core(play_core::Error::NotFound("service"))),
    };
    lines.drain(..lines.len().saturating_sub(tail));
    Ok(Logs { service, lines, source: "cached" })
}

/// A service's logs: live from the host, or cached for a completed job.
#[utoipa::path(get, path = "/api/playgrounds/{id}/logs/{service}", tag = "Playgrounds",
    params(("id" = i64, Path), ("service" = String, Path), ("tail" = Option<usize>, Query, description = "Lines, 1-1000, default 100")),
    responses(
        (status = 200, body = Logs),
        (status = 404, description = "No such Playground or service", body = ErrorEnvelope),
        (status = 422, description = "Bad tail, or the service has no container yet (live logs)", body = ErrorEnvelope),
        (status = 502, description = "HOST_ERROR: the Playroom host failed", body = ErrorEnvelope),
    ))]
pub async fn logs(
    State(state): State<AppState>,
    principal: Principal,
    Path((id, service)): Path<(String, String)>,
    Query(query): Query<LogsQuery>,
) -> ApiResult<JsonResponse<Logs>> {
    let not_found = || ApiError::Core(play_core::Error::NotFound("playground"));
    let id: i64 = id.parse().ok().filter(|id| *id > 0).ok_or_else(not_found)?;
    let tail = tail(&query)?;
    let playground = playgrounds::get(&state.store, principal.account_id, id).await?;
    if playground.job_mode && job_results::get(&state.store, id).await?.is_some() {
        return Ok(JsonResponse(cached(&state, &playground, service, tail).await?));
    }
    if playground.playspec_id.is_none() {
        return Err(not_found());
    }
    if !defines(&state, &playground, &service).await? {
        return Err(ApiError::Core(play_core::Error::NotFound("service")));
    }
    let (_, target) =
        playrooms::target(&state.store, &state.secrets, principal.account_id, playground.playroom_id).await?;
    let container = container_name(&playground.compose_project, &service);
    match state.gateway.service_logs(&target, &container, tail).await {
        Ok(lines) => Ok(JsonResponse(Logs { service, lines, source: "live" })),
        Err(HostError::NotFound(_)) => Err(ApiError::Core(play_core::Error::InvalidState(format!(
            "the service {service:?} has no container yet (status {})",
            playground.status
        )))),
        Err(e) => Err(ApiError::Host(e)),
    }
}
