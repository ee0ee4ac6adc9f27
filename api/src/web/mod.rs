//! The dashboard `play serve` serves itself, outside `/api` (issue #31):
//! sign-in and sign-out of browser sessions, and a page for every
//! resource. Pages are rendered on the server with maud (every value
//! escaped) from the API's own answers: its router is called in-process
//! with the session's principal and authorised by the route table, as
//! MCP tools are (`api`); forms that change something carry the session's
//! CSRF token. One stylesheet and one small
//! script are compiled into the binary; nothing is loaded from another
//! origin, and the Content-Security-Policy says so.

mod api;
mod failure;
mod frame;
mod json_view;
mod keys;
mod launch;
mod launch_template;
mod layout;
mod logs;
mod overview;
mod playground_actions;
mod playground_parts;
mod playgrounds;
mod rooms_zones;
pub mod sign_in;
mod sign_in_link;
mod specs_templates;
mod viewer;
mod webhooks;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::state::AppState;

pub use layout::{APP_CSS, APP_JS, ASSET_VERSION};

/// What a page may load: its own stylesheet, script and connections (the
/// log stream, live regions), nothing from elsewhere, forms only to play
/// itself, never inside a frame. No inline script or style is allowed, so
/// markup a tenant manages to put in a page cannot run.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
     connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The pages, with their headers; `api` is the API's router with the
/// in-process authorisation layer (`crate::auth::authorize`).
pub fn routes(api: Router) -> Router<AppState> {
    Router::new()
        .route("/", get(overview::home))
        .route("/sign-in", get(sign_in::form).post(sign_in::submit))
        .route("/sign-in/link/{secret}", get(sign_in_link::confirm))
        .route("/sign-in/link", post(sign_in_link::redeem))
        .route("/sign-out", post(sign_in::sign_out))
        .route("/session", get(sign_in::session))
        .route("/assets/app.css", get(|| async { asset("text/css; charset=utf-8", APP_CSS) }))
        .route("/assets/app.js", get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }))
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/playgrounds", get(playgrounds::list))
        .route("/playgrounds/{id}", get(playgrounds::detail))
        .route("/playgrounds/{id}/extend", post(playground_actions::extend))
        .route("/playgrounds/{id}/destroy", get(playground_actions::confirm_destroy).post(playground_actions::destroy))
        .route("/playgrounds/{id}/{action}", post(playground_actions::act))
        .route("/playgrounds/{id}/logs/{service}", get(logs::show))
        .route("/playgrounds/{id}/logs/{service}/download", get(logs::download))
        .route("/launch", get(launch::catalog))
        .route("/launch/compose", post(launch::launch_compose))
        .route("/launch/templates/{id}", get(launch_template::form).post(launch_template::submit))
        .route("/playrooms", get(rooms_zones::playroom_list))
        .route("/playrooms/{id}", get(rooms_zones::playroom_detail))
        .route("/playrooms/{id}/test", post(rooms_zones::playroom_test))
        .route("/playzones", get(rooms_zones::playzone_list))
        .route("/playzones/{id}", get(rooms_zones::playzone_detail))
        .route("/playzones/{id}/sync", post(rooms_zones::playzone_sync))
        .route("/playspecs", get(specs_templates::playspec_list))
        .route("/playspecs/{id}", get(specs_templates::playspec_detail))
        .route("/templates", get(specs_templates::template_list))
        .route("/templates/{id}", get(specs_templates::template_detail))
        .route("/webhooks", get(webhooks::list))
        .route("/webhooks/{id}", get(webhooks::detail))
        .route("/webhooks/{id}/test", post(webhooks::test))
        .route("/webhooks/{id}/deliveries/{delivery}/redeliver", post(webhooks::redeliver))
        .route("/keys", get(keys::list).post(keys::create))
        .route("/keys/{id}/delete", post(keys::delete))
        .layer(axum::Extension(api::InProcess(api)))
        .layer(middleware::from_fn(page_headers))
}

/// An embedded asset; its URL carries [`ASSET_VERSION`], so it is cached
/// for good.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"));
    response
}

async fn page_headers(request: Request, next: Next) -> Response {
    with_page_headers(next.run(request).await)
}

/// The headers of every page: the policy above, no sniffing, no framing,
/// no caching (unless the response says otherwise: the assets).
fn with_page_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.entry(header::REFERRER_POLICY).or_insert(HeaderValue::from_static("same-origin"));
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// The page for a path no page has (the router's fallback sends browsers
/// here; API clients get the envelope).
pub async fn no_page() -> Response {
    with_page_headers(failure::not_found_page())
}
