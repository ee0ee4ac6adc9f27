//! `GET /api/playgrounds/{id}/logs/{service}`: the last lines of a
//! service's log, read live from the Playroom's Docker engine, or, for a
//! completed job-mode Playground (whose containers are gone), from the last
//! 1000 lines of each service stored when the job completed. A followed
//! log answered under a browser session ends when the session does
//! (sign-out, its key deleted), within `session::RECHECK`.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json as JsonResponse;
use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::FutureExt;
use futures::future::BoxFuture;
use play_model::compose::ServiceDefinition;
use play_model::host::{HostError, LogLines};
use play_model::playground::{Playground, container_name};
use play_store::playgrounds;
use play_store::{job_results, playrooms, playspecs};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::Query;
use crate::session;
use crate::state::AppState;

pub const DEFAULT_TAIL: usize = 100;
pub const MAX_TAIL: usize = 1000;

/// How long one follow lasts when the request does not say, and at most.
pub const DEFAULT_FOLLOW_SECONDS: u64 = 600;
pub const MAX_FOLLOW_SECONDS: u64 = 3600;

#[derive(Debug, Deserialize)]
pub struct LogsQuery {
    /// Kept as text so a bad value gets a message of ours, not serde's.
    pub tail: Option<String>,
    /// `true`: answer `text/event-stream`, one `data:` event per line as the
    /// service writes it, then an `end` event.
    pub follow: Option<String>,
    /// How long a follow lasts, 1-3600 seconds, default 600.
    pub max_seconds: Option<String>,
}

/// `Some(bound)` when the request asks to follow.
fn follow(query: &LogsQuery) -> ApiResult<Option<Duration>> {
    match query.follow.as_deref() {
        None | Some("false") => {
            if query.max_seconds.is_some() {
                return Err(ApiError::field("max_seconds", "is for follow=true only"));
            }
            Ok(None)
        }
        Some("true") => match query.max_seconds.as_deref() {
            None => Ok(Some(Duration::from_secs(DEFAULT_FOLLOW_SECONDS))),
            Some(text) => match text.parse::<u64>() {
                Ok(n) if (1..=MAX_FOLLOW_SECONDS).contains(&n) => Ok(Some(Duration::from_secs(n))),
                _ => Err(ApiError::field(
                    "max_seconds",
                    format!("must be a whole number from 1 to {MAX_FOLLOW_SECONDS}"),
                )),
            },
        },
        Some(_) => Err(ApiError::field("follow", "must be true or false")),
    }
}

/// What ends a followed log before its bound: the end of the session it
/// was answered under (`session::ended`), or nothing for a bearer key.
type Until = BoxFuture<'static, &'static str>;

/// The [`Until`] of a request by `principal`.
fn until(state: &AppState, principal: &Principal) -> Until {
    match principal.session_id {
        Some(id) => session::ended(state.store.clone(), id).boxed(),
        None => futures::future::pending().boxed(),
    }
}

/// An event stream of `lines`, then `end` (with why it ended). `until`
/// wins over a waiting line, so a session that ended gets no more lines;
/// ending drops `lines`, which stops the read on the host.
fn events(lines: LogLines, until: Until) -> Response {
    let stream = futures::stream::unfold(Some((lines, until)), |state| async move {
        let (mut lines, mut until) = state?;
        let event = tokio::select! {
            biased;
            why = &mut until => Event::default().event("end").data(why),
            line = lines.recv() => match line {
                Some(Ok(line)) => {
                    return Some((Ok::<_, Infallible>(Event::default().data(line)), Some((lines, until))));
                }
                Some(Err(e)) => Event::default().event("end").data(format!("the host failed: {e}")),
                None => Event::default().event("end").data("the follow ended (bound reached, or the log closed)"),
            },
        };
        Some((Ok(event), None))
    });
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}

/// Cached lines as an event stream that ends at once.
fn cached_events(lines: Vec<String>) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel(lines.len().max(1));
    for line in lines {
        let _ = tx.try_send(Ok(line));
    }
    drop(tx);
    events(rx, futures::future::pending().boxed())
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Logs {
    pub service: String,
    pub lines: Vec<String>,
    /// `live` (read from the host now) or `cached` (a finished job's logs).
    pub source: &'static str,
}

/// The lines asked for: a whole number of at least 1; one above the
/// contract's maximum is that maximum (issue #52, item 8: clamped, not
/// refused), however many digits it has.
fn tail(query: &LogsQuery) -> ApiResult<usize> {
    let Some(text) = query.tail.as_deref() else { return Ok(DEFAULT_TAIL) };
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n.min(MAX_TAIL)),
        Err(_) if digits => Ok(MAX_TAIL),
        _ => Err(ApiError::field(
            "tail",
            format!("must be a whole number of at least 1 (above {MAX_TAIL} reads {MAX_TAIL})"),
        )),
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

/// A service's logs: live from the host, or cached for a completed job;
/// with `follow=true`, a `text/event-stream` of lines as they are written.
#[utoipa::path(get, path = "/api/playgrounds/{id}/logs/{service}", tag = "Playgrounds",
    params(("id" = i64, Path), ("service" = String, Path),
        ("tail" = Option<usize>, Query, minimum = 1, description = "Lines, default 100; above 1000 reads 1000"),
        ("follow" = Option<bool>, Query, description = "Stream lines as Server-Sent Events (`data:` per line, then an `end` event)"),
        ("max_seconds" = Option<u64>, Query, description = "How long a follow lasts, 1-3600, default 600"),
    ),
    responses(
        (status = 200, description = "The lines (JSON), or with follow=true an event stream",
            content((Logs = "application/json"), (String = "text/event-stream"))),
        (status = 404, description = "No such Playground or service", body = ErrorEnvelope),
        (status = 422, description = "Bad tail, or the service has no container yet (live logs)", body = ErrorEnvelope),
        (status = 502, description = "HOST_ERROR: the Playroom host failed", body = ErrorEnvelope),
    ))]
pub async fn logs(
    State(state): State<AppState>,
    principal: Principal,
    Path((id, service)): Path<(String, String)>,
    Query(query): Query<LogsQuery>,
) -> ApiResult<Response> {
    let not_found = || ApiError::Core(play_core::Error::NotFound("playground"));
    let id: i64 = id.parse().ok().filter(|id| *id > 0).ok_or_else(not_found)?;
    let tail = tail(&query)?;
    let follow = follow(&query)?;
    let playground = playgrounds::get(&state.store, principal.account_id, id).await?;
    if playground.job_mode && job_results::get(&state.store, id).await?.is_some() {
        let logs = cached(&state, &playground, service, tail).await?;
        return Ok(match follow {
            Some(_) => cached_events(logs.lines),
            None => JsonResponse(logs).into_response(),
        });
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
    let no_container = || {
        ApiError::Core(play_core::Error::InvalidState(format!(
            "the service {service:?} has no container yet (status {})",
            playground.status
        )))
    };
    if let Some(bound) = follow {
        return match state.gateway.follow_logs(&target, &container, tail, bound).await {
            Ok(lines) => Ok(events(lines, until(&state, &principal))),
            Err(HostError::NotFound(_)) => Err(no_container()),
            Err(e) => Err(ApiError::Host(e)),
        };
    }
    match state.gateway.service_logs(&target, &container, tail).await {
        Ok(lines) => Ok(JsonResponse(Logs { service, lines, source: "live" }).into_response()),
        Err(HostError::NotFound(_)) => Err(no_container()),
        Err(e) => Err(ApiError::Host(e)),
    }
}
