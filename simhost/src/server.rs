//! Serving one [`SimEngine`] on a Unix socket, as `dockerd` serves
//! `/var/run/docker.sock`: HTTP/1.1, versioned (`/v1.49/...`) and
//! unversioned paths alike, bounded request bodies, and a delay on every
//! call so that a client sees an engine's latency rather than a function
//! call's.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::ServiceExt as _;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{Method, Uri};
use axum::middleware::{self, Next};
use axum::response::Response;
use tokio::net::UnixListener;
use tower::Layer as _;

use crate::{Error, Result, SimEngine, routes};

/// The largest request body accepted (archives are the largest play sends).
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// The delay before each answer: `read` for GET and HEAD, `write` for the
/// calls that change the host (create, start, stop, kill, remove, pull).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latency {
    pub read: Duration,
    pub write: Duration,
}

impl Default for Latency {
    fn default() -> Self {
        Latency { read: Duration::from_millis(2), write: Duration::from_millis(20) }
    }
}

impl Latency {
    pub const NONE: Latency = Latency { read: Duration::ZERO, write: Duration::ZERO };

    fn of(&self, method: &Method) -> Duration {
        if method == Method::GET || method == Method::HEAD { self.read } else { self.write }
    }
}

async fn delay(State(latency): State<Latency>, request: Request, next: Next) -> Response {
    let wait = latency.of(request.method());
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
    next.run(request).await
}

/// `/v1.49/containers/json` -> `/containers/json`: the engine answers
/// every API version it supports on the same routes.
fn strip_version(mut request: Request) -> Request {
    let path = request.uri().path();
    let versioned = path
        .strip_prefix("/v")
        .and_then(|rest| rest.split_once('/'))
        .filter(|(v, _)| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'));
    if let Some((_, rest)) = versioned {
        let rest = match request.uri().query() {
            Some(query) => format!("/{rest}?{query}"),
            None => format!("/{rest}"),
        };
        if let Ok(uri) = rest.parse::<Uri>() {
            *request.uri_mut() = uri;
        }
    }
    request
}

/// Binds `path`, replacing a stale socket file a previous run left.
pub fn bind(path: &Path) -> Result<UnixListener> {
    let io = |what: &str, source| Error::Io { what: format!("{what} {}", path.display()), source };
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io("remove the stale socket", e)),
        _ => {}
    }
    UnixListener::bind(path).map_err(|e| io("bind", e))
}

/// Serves `engine` on `listener` until the task is dropped.
pub async fn serve(listener: UnixListener, engine: Arc<SimEngine>, latency: Latency) -> Result<()> {
    let router = routes::router()
        .layer(middleware::from_fn_with_state(latency, delay))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(engine);
    let app = tower::util::MapRequestLayer::new(strip_version).layer(router);
    axum::serve(listener, app.into_make_service())
        .await
        .map_err(|source| Error::Io { what: "serve the simulated engine".to_owned(), source })
}

/// [`bind`] then [`serve`]: one simulated host at `path`.
pub async fn serve_at(path: &Path, engine: Arc<SimEngine>, latency: Latency) -> Result<()> {
    serve(bind(path)?, engine, latency).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path_of(uri: &str) -> String {
        let request = Request::builder().uri(uri).body(axum::body::Body::empty()).unwrap_or_default();
        strip_version(request).uri().to_string()
    }

    #[test]
    fn versioned_paths_lose_their_version_and_keep_their_query() {
        assert_eq!(path_of("/v1.49/containers/json?all=true"), "/containers/json?all=true");
        assert_eq!(path_of("/_ping"), "/_ping");
        assert_eq!(path_of("/volumes/vx"), "/volumes/vx");
    }
}
