//! The Engine API routes the simulator answers, in one table, and the
//! helpers their handlers share. Paths are unversioned here: the server
//! strips `/v1.NN` before routing (see [`crate::server`]).

mod containers;
mod objects;
mod system;

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::routing::{delete, get, post, put};
use serde::de::DeserializeOwned;

pub use system::API_VERSION;

use crate::{Error, Result, SimEngine};

pub fn router() -> Router<Arc<SimEngine>> {
    use containers as c;
    use objects as o;
    Router::new()
        .route("/_ping", get(system::ping).head(system::ping))
        .route("/version", get(system::version))
        .route("/info", get(system::info))
        .route("/events", get(system::events))
        .route("/containers/json", get(c::list))
        .route("/containers/create", post(c::create))
        .route("/containers/{id}/json", get(c::inspect))
        .route("/containers/{id}/start", post(c::start))
        .route("/containers/{id}/stop", post(c::stop))
        .route("/containers/{id}/kill", post(c::kill))
        .route("/containers/{id}", delete(c::remove))
        .route("/containers/{id}/logs", get(c::logs))
        .route("/containers/{id}/archive", put(c::put_archive).get(c::get_archive))
        .route("/networks", get(o::list_networks))
        .route("/networks/create", post(o::create_network))
        .route("/networks/{id}", get(o::inspect_network).delete(o::remove_network))
        .route("/networks/{id}/connect", post(o::connect_network))
        .route("/volumes", get(o::list_volumes))
        .route("/volumes/create", post(o::create_volume))
        .route("/volumes/{name}", get(o::inspect_volume).delete(o::remove_volume))
        .route("/images/create", post(o::pull_image))
        .route("/images/{*rest}", get(o::inspect_image))
        .route("/build", post(o::build))
        .fallback(|| async { Error::NotFound("page not found".to_owned()) })
}

/// A boolean query parameter as the engine reads one (`1` or `true`).
fn flag(query: &HashMap<String, String>, key: &str) -> bool {
    query.get(key).is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// A JSON request body; 400 with serde's reason when it does not parse
/// (the engine is lenient about the content type, so this does not check it).
fn json_body<T: DeserializeOwned>(body: &[u8]) -> Result<T> {
    serde_json::from_slice(body).map_err(|e| Error::BadRequest(format!("invalid JSON: {e}")))
}
