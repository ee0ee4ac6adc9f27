//! The web pages `play serve` serves itself, outside `/api`: sign-in and
//! sign-out of browser sessions now; the dashboard of issue #31 grows
//! here. Pages are rendered on the server with maud (every value escaped),
//! use no script and nothing from another origin, and carry headers that
//! forbid both (a strict Content-Security-Policy), framing, and caching.

pub mod sign_in;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use maud::{DOCTYPE, Markup, html};

use crate::state::AppState;

/// What a page may load: nothing from elsewhere, no script, forms only to
/// play itself, never inside a frame.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The pages, with their headers.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(sign_in::home))
        .route("/sign-in", get(sign_in::form).post(sign_in::submit))
        .route("/sign-out", post(sign_in::sign_out))
        .route("/session", get(sign_in::session))
        .layer(middleware::from_fn(page_headers))
}

async fn page_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A whole page around `body`.
pub fn page(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · play" }
            }
            body {
                main { (body) }
            }
        }
    }
}
