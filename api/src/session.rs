//! Browser sessions on the wire: the cookie, and the CSRF token that every
//! request changing something must carry with it (issue #31; the store's
//! side is `play_store::sessions`).
//!
//! - The cookie holds the session id: `HttpOnly` (scripts never read it),
//!   `SameSite=Lax` (a cross-site request carries it only for a top-level
//!   `GET`, which changes nothing), `Path=/`, no `Domain`, `Max-Age` the
//!   session's absolute lifetime. When play is served over HTTPS
//!   (`PLAY_PUBLIC_URL`) it is `Secure` and named `__Host-play_session`
//!   ([`cookie_name`]), and only that name is read; over HTTP it is
//!   `play_session`.
//! - The CSRF token is an HMAC of the session id under the token pepper:
//!   bound to the session, never stored, and useless without the cookie.
//!   A request authenticated by the cookie whose method is not `GET`,
//!   `HEAD` or `OPTIONS` must send it in `X-CSRF-Token` (forms: a
//!   `csrf` field); a page of another site cannot read it, so its forged
//!   form post is refused.

use axum::http::{HeaderMap, HeaderValue, Method, header};
use cookie::{Cookie, SameSite};
use play_model::model::session::Session;
use play_model::token::{TokenPepper, digests_match};
use play_store::{Store, sessions};

use crate::error::ApiError;
use crate::state::AppState;

/// The session cookie's name when play is served over plain HTTP.
pub const COOKIE: &str = "play_session";
/// The session cookie's name when play is served over HTTPS. Browsers
/// accept a `__Host-` cookie only from a secure origin, with `Secure`,
/// `Path=/` and no `Domain`: a sibling subdomain, which may set cookies
/// for the whole parent domain, cannot plant or overwrite it (to sign a
/// visitor in to its own session, say).
pub const HOST_COOKIE: &str = "__Host-play_session";

/// The name of the session cookie play sets and reads: [`HOST_COOKIE`]
/// over HTTPS (`secure`), where a `play_session` cookie may have been
/// planted by a sibling subdomain and is never read; [`COOKIE`] over HTTP,
/// where browsers refuse `__Host-` cookies.
pub fn cookie_name(secure: bool) -> &'static str {
    if secure { HOST_COOKIE } else { COOKIE }
}
/// The header a cookie-authenticated request that changes something
/// carries the CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The value of cookie `name` among the request's `Cookie` headers.
pub fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == name)
        .map(|c| c.value().to_owned())
}

/// The CSRF token of the session whose id is `secret`.
pub fn csrf_token(pepper: &TokenPepper, secret: &str) -> String {
    pepper.digest(&format!("csrf:{secret}"))
}

/// Whether `given` is the CSRF token of session `secret` (constant time).
pub fn csrf_matches(pepper: &TokenPepper, secret: &str, given: Option<&str>) -> bool {
    given.is_some_and(|given| digests_match(&csrf_token(pepper, secret), given))
}

/// Whether `method` may change something (and so needs the CSRF token).
pub fn changes_something(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// `Set-Cookie` for a new session.
pub fn set_cookie(secret: &str, secure: bool) -> Result<HeaderValue, ApiError> {
    let cookie = Cookie::build((cookie_name(secure), secret.to_owned()))
        .http_only(true)
        .same_site(SameSite::Lax)
        .path("/")
        .secure(secure)
        .max_age(cookie::time::Duration::seconds(play_model::model::session::ABSOLUTE.num_seconds()))
        .build();
    header_value(&cookie)
}

/// `Set-Cookie` that removes the session cookie.
pub fn clear_cookie(secure: bool) -> Result<HeaderValue, ApiError> {
    let cookie =
        Cookie::build((cookie_name(secure), "")).http_only(true).same_site(SameSite::Lax).path("/").secure(secure);
    let mut cookie = cookie.build();
    cookie.make_removal();
    header_value(&cookie)
}

pub fn header_value(cookie: &Cookie<'_>) -> Result<HeaderValue, ApiError> {
    HeaderValue::from_str(&cookie.to_string())
        .map_err(|e| ApiError::Core(play_core::Error::Internal(format!("a cookie header: {e}"))))
}

/// How often an answer that outlasts its request (a followed log) checks
/// that the session it was made under still lives.
pub const RECHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// Resolves, with why, once session `id` has ended (signed out, its key
/// deleted or expired, idle or old), checked every [`RECHECK`]: a followed
/// log answered under a session ends with it, within [`RECHECK`] and a
/// read of the store, on every replica. A check that fails ends it too:
/// a stream whose session cannot be confirmed stops, and the browser may
/// open it again, authenticated afresh.
pub async fn ended(store: Store, id: i64) -> &'static str {
    loop {
        tokio::time::sleep(RECHECK).await;
        match sessions::is_live(&store, id).await {
            Ok(true) => {}
            Ok(false) => return "the session ended (signed out, or its key deleted or expired)",
            Err(e) => {
                tracing::warn!(session = id, error = %e, "cannot check the session of a stream: ending it");
                return "the session could not be checked: open the stream again";
            }
        }
    }
}

/// The live session the request's cookie names, and its id (the cookie's
/// value); `None` without one, or for one that ended.
pub async fn current(state: &AppState, headers: &HeaderMap) -> Result<Option<(Session, String)>, ApiError> {
    let Some(secret) = cookie_value(headers, cookie_name(state.config.secure_cookies)) else { return Ok(None) };
    Ok(sessions::find(&state.store, &state.pepper, &secret).await?.map(|s| (s, secret)))
}
