//! `/_ping`, `/version`, `/info` and the `/events` stream.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::header::{CONTENT_TYPE, HeaderName};
use axum::response::{IntoResponse, Response};
use bollard::models::{EventMessage, EventMessageTypeEnum, SystemInfo, SystemVersion};
use bytes::Bytes;
use tokio::sync::broadcast::error::RecvError;

use crate::filters::Filters;
use crate::{Result, SimEngine};

/// The Engine API version the simulator speaks: bollard 0.19's own.
pub const API_VERSION: &str = "1.49";

pub async fn ping() -> Response {
    let headers = [
        (HeaderName::from_static("api-version"), API_VERSION),
        (HeaderName::from_static("ostype"), "linux"),
        (HeaderName::from_static("docker-experimental"), "false"),
        (CONTENT_TYPE, "text/plain; charset=utf-8"),
    ];
    (headers, "OK").into_response()
}

pub async fn version() -> Json<SystemVersion> {
    Json(SystemVersion {
        version: Some(format!("{}-simhost", env!("CARGO_PKG_VERSION"))),
        api_version: Some(API_VERSION.to_owned()),
        min_api_version: Some("1.24".to_owned()),
        os: Some("linux".to_owned()),
        arch: Some("amd64".to_owned()),
        kernel_version: Some("simulated".to_owned()),
        ..Default::default()
    })
}

pub async fn info(State(engine): State<Arc<SimEngine>>) -> Json<SystemInfo> {
    let counts = engine.counts();
    let count = |n: usize| Some(i64::try_from(n).unwrap_or(i64::MAX));
    Json(SystemInfo {
        id: Some(engine.config().name.clone()),
        name: Some(engine.config().name.clone()),
        containers: count(counts.containers),
        containers_running: count(counts.running),
        containers_paused: Some(0),
        containers_stopped: count(counts.containers - counts.running),
        images: count(counts.images),
        driver: Some("overlay2".to_owned()),
        system_time: Some(crate::engine::now_text()),
        server_version: Some(format!("{}-simhost", env!("CARGO_PKG_VERSION"))),
        operating_system: Some("play-simhost".to_owned()),
        os_type: Some("linux".to_owned()),
        architecture: Some("x86_64".to_owned()),
        ncpu: Some(1),
        ..Default::default()
    })
}

/// Whether `event` passes the `type`, `event`, `label` and `container`
/// filters (labels are matched on the actor's attributes, as the engine's).
fn wanted(filters: &Filters, event: &EventMessage) -> bool {
    let typ = match event.typ {
        Some(EventMessageTypeEnum::CONTAINER) => "container",
        Some(EventMessageTypeEnum::NETWORK) => "network",
        Some(EventMessageTypeEnum::VOLUME) => "volume",
        Some(EventMessageTypeEnum::IMAGE) => "image",
        _ => "other",
    };
    let action = event.action.as_deref().unwrap_or_default();
    let actor = event.actor.clone().unwrap_or_default();
    let attributes = actor.attributes.unwrap_or_default();
    let id = actor.id.unwrap_or_default();
    let name = attributes.get("name").map(String::as_str).unwrap_or_default();
    let container_ok = filters.terms("container").is_none_or(|t| t.iter().any(|c| c == &id || c == name));
    filters.one_of("type", typ) && filters.one_of("event", action) && filters.labels_match(&attributes) && container_ok
}

/// `GET /events`: JSON lines from now on, until the client goes away.
/// `since` and `until` are not honoured: no past event is replayed (play
/// asks from the engine's current time, so it would find none anyway).
pub async fn events(
    State(engine): State<Arc<SimEngine>>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response> {
    let filters = Filters::parse(query.get("filters").map(String::as_str))?;
    let receiver = engine.subscribe();
    let lines = futures::stream::unfold((receiver, filters), |(mut receiver, filters)| async move {
        loop {
            match receiver.recv().await {
                Ok(event) if wanted(&filters, &event) => {
                    let mut line = serde_json::to_vec(&event).unwrap_or_default();
                    line.push(b'\n');
                    return Some((Ok::<_, Infallible>(Bytes::from(line)), (receiver, filters)));
                }
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return None,
            }
        }
    });
    Ok(([(CONTENT_TYPE, "application/json")], Body::from_stream(lines)).into_response())
}
