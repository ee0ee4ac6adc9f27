//! `/containers/...`: create, start, stop, kill, remove, inspect, list,
//! logs and the archive endpoints.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use bollard::models::{ContainerCreateBody, ContainerCreateResponse, ContainerInspectResponse, ContainerSummary};

use super::{flag, json_body};
use crate::filters::Filters;
use crate::{Result, SimEngine};

type Params = Query<HashMap<String, String>>;

pub async fn list(State(engine): State<Arc<SimEngine>>, Query(q): Params) -> Result<Json<Vec<ContainerSummary>>> {
    let filters = Filters::parse(q.get("filters").map(String::as_str))?;
    Ok(Json(engine.list_containers(flag(&q, "all"), &filters)))
}

pub async fn create(State(engine): State<Arc<SimEngine>>, Query(q): Params, body: Bytes) -> Result<Response> {
    let body: ContainerCreateBody = json_body(&body)?;
    let id = engine.create_container(q.get("name").map(String::as_str).filter(|n| !n.is_empty()), body)?;
    Ok((StatusCode::CREATED, Json(ContainerCreateResponse { id, warnings: Vec::new() })).into_response())
}

pub async fn inspect(
    State(engine): State<Arc<SimEngine>>,
    Path(id): Path<String>,
) -> Result<Json<ContainerInspectResponse>> {
    engine.inspect_container(&id).map(Json)
}

pub async fn start(State(engine): State<Arc<SimEngine>>, Path(id): Path<String>) -> Result<StatusCode> {
    engine.start_container(&id).map(|()| StatusCode::NO_CONTENT)
}

pub async fn stop(State(engine): State<Arc<SimEngine>>, Path(id): Path<String>) -> Result<StatusCode> {
    engine.stop_container(&id).map(|()| StatusCode::NO_CONTENT)
}

pub async fn kill(
    State(engine): State<Arc<SimEngine>>,
    Path(id): Path<String>,
    Query(q): Params,
) -> Result<StatusCode> {
    engine
        .kill_container(&id, q.get("signal").map(String::as_str).filter(|s| !s.is_empty()))
        .map(|()| StatusCode::NO_CONTENT)
}

pub async fn remove(
    State(engine): State<Arc<SimEngine>>,
    Path(id): Path<String>,
    Query(q): Params,
) -> Result<StatusCode> {
    engine.remove_container(&id, flag(&q, "force")).map(|()| StatusCode::NO_CONTENT)
}

/// The lines every simulated container "wrote".
const LOG_LINES: &[&str] = &["simhost: container started", "simhost: no process runs here"];

/// `GET /containers/{id}/logs`: a few canned lines, in the engine's
/// multiplexed stream format (8-byte header: stream, 3 zero bytes, length
/// big-endian) unless the container has a TTY. `follow` ends at once.
pub async fn logs(State(engine): State<Arc<SimEngine>>, Path(id): Path<String>) -> Result<Response> {
    let container = engine.inspect_container(&id)?;
    let tty = container.config.and_then(|c| c.tty).unwrap_or(false);
    let mut body = Vec::new();
    for line in LOG_LINES {
        let payload = format!("{line}\n");
        if !tty {
            let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
            body.extend_from_slice(&[1, 0, 0, 0]);
            body.extend_from_slice(&len.to_be_bytes());
        }
        body.extend_from_slice(payload.as_bytes());
    }
    let kind = if tty { "application/vnd.docker.raw-stream" } else { "application/vnd.docker.multiplexed-stream" };
    Ok(([(CONTENT_TYPE, kind)], body).into_response())
}

/// `PUT /containers/{id}/archive?path=`: kept when `path` is in a named
/// volume, dropped elsewhere (see `engine::archives`).
pub async fn put_archive(
    State(engine): State<Arc<SimEngine>>,
    Path(id): Path<String>,
    Query(q): Params,
    body: Bytes,
) -> Result<StatusCode> {
    let path = q.get("path").cloned().unwrap_or_default();
    engine.put_archive(&id, &path, &body).map(|()| StatusCode::OK)
}

/// `GET /containers/{id}/archive?path=`: a tar archive of `path`.
pub async fn get_archive(
    State(engine): State<Arc<SimEngine>>,
    Path(id): Path<String>,
    Query(q): Params,
) -> Result<Response> {
    let path = q.get("path").cloned().unwrap_or_default();
    let archive = engine.get_archive(&id, &path)?;
    Ok(([(CONTENT_TYPE, "application/x-tar")], archive).into_response())
}
