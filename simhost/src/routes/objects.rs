//! `/networks/...`, `/volumes/...` and `/images/...`.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use bollard::models::{
    ImageInspect, Network, NetworkConnectRequest, NetworkCreateRequest, NetworkCreateResponse, Volume,
    VolumeCreateOptions, VolumeListResponse,
};

use super::json_body;
use crate::filters::Filters;
use crate::{Error, Result, SimEngine};

type Params = Query<HashMap<String, String>>;

fn filters(q: &HashMap<String, String>) -> Result<Filters> {
    Filters::parse(q.get("filters").map(String::as_str))
}

pub async fn create_network(State(engine): State<Arc<SimEngine>>, body: Bytes) -> Result<Response> {
    let request: NetworkCreateRequest = json_body(&body)?;
    let id = engine.create_network(request)?;
    Ok((StatusCode::CREATED, Json(NetworkCreateResponse { id, warning: String::new() })).into_response())
}

pub async fn inspect_network(State(engine): State<Arc<SimEngine>>, Path(id): Path<String>) -> Result<Json<Network>> {
    engine.inspect_network(&id).map(Json)
}

pub async fn list_networks(State(engine): State<Arc<SimEngine>>, Query(q): Params) -> Result<Json<Vec<Network>>> {
    Ok(Json(engine.list_networks(&filters(&q)?)))
}

pub async fn remove_network(State(engine): State<Arc<SimEngine>>, Path(id): Path<String>) -> Result<StatusCode> {
    engine.remove_network(&id).map(|()| StatusCode::NO_CONTENT)
}

pub async fn connect_network(
    State(engine): State<Arc<SimEngine>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<StatusCode> {
    let request: NetworkConnectRequest = json_body(&body)?;
    let container = request.container.ok_or_else(|| Error::BadRequest("no container to connect".to_owned()))?;
    engine.connect_network(&id, &container, request.endpoint_config.unwrap_or_default()).map(|()| StatusCode::OK)
}

pub async fn create_volume(State(engine): State<Arc<SimEngine>>, body: Bytes) -> Result<Response> {
    let request: VolumeCreateOptions = json_body(&body)?;
    Ok((StatusCode::CREATED, Json(engine.create_volume(request)?)).into_response())
}

pub async fn inspect_volume(State(engine): State<Arc<SimEngine>>, Path(name): Path<String>) -> Result<Json<Volume>> {
    engine.inspect_volume(&name).map(Json)
}

pub async fn list_volumes(State(engine): State<Arc<SimEngine>>, Query(q): Params) -> Result<Json<VolumeListResponse>> {
    let volumes = engine.list_volumes(&filters(&q)?);
    Ok(Json(VolumeListResponse { volumes: Some(volumes), warnings: Some(Vec::new()) }))
}

pub async fn remove_volume(State(engine): State<Arc<SimEngine>>, Path(name): Path<String>) -> Result<StatusCode> {
    engine.remove_volume(&name).map(|()| StatusCode::NO_CONTENT)
}

/// `GET /images/{name}/json`: image names hold slashes, so the route is a
/// wildcard and the `/json` suffix is taken off here.
pub async fn inspect_image(
    State(engine): State<Arc<SimEngine>>,
    Path(rest): Path<String>,
) -> Result<Json<ImageInspect>> {
    let Some(name) = rest.strip_suffix("/json") else {
        return Err(Error::NotFound("page not found".to_owned()));
    };
    engine.inspect_image(name).map(Json)
}

/// `POST /images/create?fromImage=&tag=`: progress as JSON lines, as the
/// engine streams it (a refused pull is a 404 before any progress).
pub async fn pull_image(State(engine): State<Arc<SimEngine>>, Query(q): Params) -> Result<Response> {
    let image = q.get("fromImage").cloned().unwrap_or_default();
    let tag = q.get("tag").filter(|t| !t.is_empty());
    let reference = match tag {
        Some(tag) if !image.contains('@') && !image.rsplit('/').next().unwrap_or_default().contains(':') => {
            format!("{image}:{tag}")
        }
        _ => image,
    };
    engine.pull_image(&reference)?;
    let lines = [
        serde_json::json!({"status": format!("Pulling from {reference}")}),
        serde_json::json!({"status": "Digest: sha256:0000000000000000000000000000000000000000000000000000000000000000"}),
        serde_json::json!({"status": format!("Status: Downloaded newer image for {reference}")}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    Ok(([(CONTENT_TYPE, "application/json")], body).into_response())
}

/// `POST /build`: the simulator builds nothing.
pub async fn build() -> Error {
    Error::Unsupported("the simulated host builds no images".to_owned())
}
