//! Signing in and out of a browser session (issue #31).
//!
//! - `GET /sign-in?next=PATH`: a form for an API key. It carries a
//!   one-time form token, also set as the cookie `play_sign_in`
//!   (`SameSite=Strict`, path `/sign-in`): a form posted from another site
//!   comes without the cookie and is refused, so no page elsewhere can sign
//!   a visitor in to someone else's account (login CSRF). A browser's
//!   `Sec-Fetch-Site` other than `same-origin` or `none` is refused too.
//! - `POST /sign-in`: the key is checked as the API checks it; a session
//!   is made (`play_store::sessions`), its cookie set, and the
//!   browser sent to `next` (a plain path of play only, `next_path`;
//!   anything else sends it to `/`). Attempts are limited per client
//!   (an IPv4 address or an IPv6 /64, `client_of`;
//!   `crate::state::SIGN_IN_BURST`); a wrong key gets one message whatever
//!   was wrong with it.
//! - `POST /sign-out`: with the session's CSRF token; the session is
//!   deleted, the cookie cleared.
//! - `GET /session`: the session as JSON (account, key, scopes, when it
//!   ends) with its CSRF token, for scripts of play's own pages; 401
//!   without one.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use axum::extract::{ConnectInfo, Form, Query, State};
use axum::http::{Extensions, HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use cookie::{Cookie, SameSite};
use maud::html;
use play_model::token::{digests_match, random_base62};
use play_store::sessions;
use serde::{Deserialize, Serialize};

use super::layout::bare_page as page;
use crate::error::ApiError;
use crate::session;
use crate::state::AppState;

/// The sign-in form's one-time token cookie.
const FORM_COOKIE: &str = "play_sign_in";
/// How long a sign-in form may be filled in.
const FORM_LIFETIME_SECONDS: i64 = 3600;
/// One message for every refused key.
const WRONG_KEY: &str = "That key was not accepted: it is unknown, deleted or expired.";

#[derive(Debug, Deserialize)]
pub struct Next {
    next: Option<String>,
}

/// Where the browser goes after signing in when `next` is missing or refused.
const DEFAULT_NEXT: &str = "/";
/// The origin `next` is resolved against. Any origin would do: only
/// whether `next` keeps it matters, and it never reaches a browser.
const PLAY_ORIGIN: &str = "https://play.invalid/";

/// `next` if it is a plain absolute path of play, else [`DEFAULT_NEXT`]:
/// a sign-in link can never send the browser to another site.
///
/// Browsers drop tabs and newlines from a URL and read `\` as `/`, so
/// `/\t/elsewhere.example` is `//elsewhere.example` to them, another site.
/// So `next` must hold no control character and no backslash, start with
/// one `/` (not two), and, parsed relative to play as browsers parse it,
/// keep play's origin with a path that still starts with one `/` (`/..//x`
/// becomes `//x`). The answer is that parsed path, query and fragment
/// (percent-encoded ASCII): the browser gets exactly what was checked.
fn next_path(next: Option<&str>) -> String {
    next.and_then(same_origin_path).unwrap_or_else(|| DEFAULT_NEXT.to_owned())
}

fn same_origin_path(next: &str) -> Option<String> {
    let plain = next.starts_with('/') && !next.starts_with("//");
    if !plain || next.chars().any(|c| c.is_control() || c == '\\') {
        return None;
    }
    let play = url::Url::parse(PLAY_ORIGIN).ok()?;
    let resolved = play.join(next).ok()?;
    if resolved.origin() != play.origin() {
        return None;
    }
    let path = &resolved[url::Position::BeforePath..];
    (path.starts_with('/') && !path.starts_with("//")).then(|| path.to_owned())
}

/// A one-time form token and the cookie that carries it (`SameSite=Strict`,
/// path `/sign-in`: sent back only by a form of play's own page).
pub(super) fn form_nonce(secure: bool) -> (String, Cookie<'static>) {
    let nonce = random_base62(sessions::SECRET_LEN);
    let cookie = Cookie::build((FORM_COOKIE, nonce.clone()))
        .http_only(true)
        .same_site(SameSite::Strict)
        .path("/sign-in")
        .secure(secure)
        .max_age(cookie::time::Duration::seconds(FORM_LIFETIME_SECONDS))
        .build();
    (nonce, cookie)
}

/// Whether a posted sign-in form came from play's own page: the form
/// token matches its cookie, and the browser does not say another site.
pub(super) fn from_own_form(headers: &HeaderMap, csrf: &str) -> bool {
    let nonce = session::cookie_value(headers, FORM_COOKIE);
    !cross_site(headers) && nonce.is_some_and(|n| digests_match(&n, csrf))
}

/// The rate limit of sign-in attempts per client ([`client_of`]); `Some`
/// answer when this one is over it.
pub(super) fn over_limit(state: &AppState, extensions: &Extensions) -> Option<Response> {
    let address = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |ConnectInfo(at)| at.ip());
    state.sign_in_limiter.check_key(&client_of(address)).err()?;
    let mut response =
        refused(StatusCode::TOO_MANY_REQUESTS, "Too many sign-in attempts from this address: wait a minute.");
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(crate::state::SIGN_IN_PERIOD.as_secs()));
    Some(response)
}

/// Who sign-in attempts from `address` are counted against: an IPv4
/// address, or an IPv6 address's /64. An IPv6 client is usually given a
/// whole /64 and may use any address in it, so the /64 is the smallest
/// unit it cannot multiply. An IPv4 client of a dual-stack socket
/// (`::ffff:a.b.c.d`) is its IPv4 address, never the /64 that all of them
/// share.
pub(crate) fn client_of(address: IpAddr) -> IpAddr {
    match address.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & (u128::MAX << 64))),
        v4 => v4,
    }
}

/// A new session of key `key_id`: its cookie set (the form token's
/// cleared), the browser sent to `next`.
pub(super) async fn start_session(
    state: &AppState,
    key_id: i64,
    account_id: i64,
    next: &str,
) -> Result<Response, ApiError> {
    let secure = state.config.secure_cookies;
    let (secret, id) = sessions::create(&state.store, &state.pepper, key_id, account_id).await?;
    tracing::info!(account_id, key_id, session = id, "signed in");
    let mut response = Redirect::to(next).into_response();
    let done = Cookie::build((FORM_COOKIE, "")).path("/sign-in").removal().build();
    response.headers_mut().append(header::SET_COOKIE, session::set_cookie(&secret, secure)?);
    response.headers_mut().append(header::SET_COOKIE, session::header_value(&done)?);
    Ok(response)
}

fn form_page(status: StatusCode, next: &str, message: Option<&str>, secure: bool) -> Result<Response, ApiError> {
    let (nonce, cookie) = form_nonce(secure);
    let body = page(
        "Sign in",
        html! {
            h1 { "Sign in to play" }
            @if let Some(message) = message { p role="alert" { (message) } }
            form method="post" action="/sign-in" {
                input type="hidden" name="csrf" value=(nonce);
                input type="hidden" name="next" value=(next);
                label for="token" { "API key" }
                input id="token" name="token" type="password" autocomplete="current-password" required autofocus;
                button type="submit" { "Sign in" }
            }
            p { "A key is made with " code { "play key create" } " or " code { "POST /api/keys" } "; the session acts with its account and scopes." }
        },
    );
    let mut response = (status, body).into_response();
    response.headers_mut().append(header::SET_COOKIE, session::header_value(&cookie)?);
    Ok(response)
}

/// `GET /sign-in`.
pub async fn form(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<Next>,
) -> Result<Response, ApiError> {
    let next = next_path(q.next.as_deref());
    if session::current(&state, &headers).await?.is_some() {
        return Ok(Redirect::to(&next).into_response());
    }
    form_page(StatusCode::OK, &next, None, state.config.secure_cookies)
}

#[derive(Deserialize)]
pub struct SignIn {
    token: String,
    csrf: String,
    next: Option<String>,
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIn").field("next", &self.next).finish_non_exhaustive()
    }
}

/// Whether a browser said the request came from another site.
fn cross_site(headers: &HeaderMap) -> bool {
    headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|site| !matches!(site, "same-origin" | "none"))
}

pub(super) fn refused(status: StatusCode, message: &str) -> Response {
    let body =
        page("Refused", html! { h1 { "Refused" } p role="alert" { (message) } p { a href="/sign-in" { "Sign in" } } });
    (status, body).into_response()
}

/// `POST /sign-in`.
pub async fn submit(
    State(state): State<AppState>,
    extensions: Extensions,
    headers: HeaderMap,
    Form(form): Form<SignIn>,
) -> Result<Response, ApiError> {
    let secure = state.config.secure_cookies;
    let next = next_path(form.next.as_deref());
    if !from_own_form(&headers, &form.csrf) {
        return Ok(refused(
            StatusCode::FORBIDDEN,
            "This sign-in did not come from play's own sign-in form (or the form expired): open the sign-in page again.",
        ));
    }
    if let Some(limited) = over_limit(&state, &extensions) {
        return Ok(limited);
    }
    let principal = match crate::auth::resolve_token(&state, form.token.trim()).await {
        Ok(principal) => principal,
        Err(ApiError::Unauthorized(_)) => return form_page(StatusCode::UNAUTHORIZED, &next, Some(WRONG_KEY), secure),
        Err(other) => return Err(other),
    };
    start_session(&state, principal.key_id, principal.account_id, &next).await
}

#[derive(Debug, Deserialize)]
pub struct SignOut {
    csrf: String,
}

/// `POST /sign-out`.
pub async fn sign_out(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<SignOut>,
) -> Result<Response, ApiError> {
    if let Some((found, secret)) = session::current(&state, &headers).await? {
        if !session::csrf_matches(&state.pepper, &secret, Some(&form.csrf)) {
            return Ok(refused(StatusCode::FORBIDDEN, "This sign-out did not come from play's own page."));
        }
        sessions::delete(&state.store, found.id).await?;
        tracing::info!(account_id = found.account_id, session = found.id, "signed out");
    }
    let mut response = Redirect::to("/sign-in").into_response();
    response.headers_mut().append(header::SET_COOKIE, session::clear_cookie(state.config.secure_cookies)?);
    Ok(response)
}

/// `GET /session`.
#[derive(Debug, Serialize)]
pub struct SessionView {
    pub account_id: i64,
    pub key_id: i64,
    pub scopes: play_model::scopes::ScopeSet,
    /// When the session ends if unused (idle end, or its absolute end).
    pub ends_at: chrono::DateTime<chrono::Utc>,
    pub expires_at: chrono::DateTime<chrono::Utc>,
    /// For `X-CSRF-Token` (and the `csrf` field of play's own forms).
    pub csrf_token: String,
}

pub async fn session(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let Some((found, secret)) = session::current(&state, &headers).await? else {
        return Err(ApiError::Unauthorized("no browser session: sign in at /sign-in"));
    };
    let view = SessionView {
        account_id: found.account_id,
        key_id: found.key_id,
        scopes: found.scopes,
        ends_at: found.ends_at(),
        expires_at: found.expires_at,
        csrf_token: session::csrf_token(&state.pepper, &secret),
    };
    Ok(axum::Json(view).into_response())
}
