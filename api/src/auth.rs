//! Authentication and authorisation.
//!
//! The middleware resolves the request's credential to a `Principal`,
//! applies the per-key rate limit, checks the scope the route table names,
//! and hands the principal to the handler as a request extension.
//!
//! Outcomes: no credential, a malformed, unknown, deleted or expired token
//! -> 401 UNAUTHORIZED (one message for all, so a caller cannot tell a
//! deleted key from a typo); a valid key without the route's scope -> 403
//! FORBIDDEN naming the scope; over the key's rate -> 429 RATE_LIMITED with
//! Retry-After.
//!
//! Verified keys are cached in memory ([`crate::key_cache`]): a revoked
//! key is refused on the next request on the replica that revoked it and
//! within a second on the others; expiry is checked on every request.
//!
//! Credentials come from `Credential::from_headers`: a bearer key, or,
//! without an `Authorization` header, a browser session cookie
//! (`crate::session`), resolved to the same `Principal` (its key's account
//! and scopes) and read from the store on every request, so a deleted key
//! ends its sessions at once on every replica. A session's request that
//! changes something must carry its CSRF token (403 without it). Git's
//! routes take keys only ([`git_caller`]).

use axum::extract::{FromRequestParts, MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use governor::clock::{Clock, DefaultClock};
use play_model::scopes::Scope;
use play_model::{time, token};
use play_store::keys;

use crate::error::ApiError;
pub use crate::principal::Principal;
use crate::route_scopes::{checks_per_object, required_scope};
use crate::session;
use crate::state::AppState;

const INVALID: &str = "missing, invalid or expired credential";

/// A credential as presented, before it is checked.
enum Credential<'a> {
    Bearer(&'a str),
    /// The browser session cookie (`crate::session`), only when the
    /// request has no `Authorization` header.
    Session(String),
}

impl<'a> Credential<'a> {
    /// `session_cookie`: the session cookie's name (`session::cookie_name`).
    fn from_headers(headers: &'a HeaderMap, session_cookie: &str) -> Option<Credential<'a>> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return session::cookie_value(headers, session_cookie).map(Credential::Session);
        };
        let (scheme, token) = value.to_str().ok()?.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| Credential::Bearer(token.trim()))
    }

    /// The principal; a session's request that changes something must
    /// carry its CSRF token (`crate::session`).
    async fn resolve(self, state: &AppState, method: &Method, headers: &HeaderMap) -> Result<Principal, ApiError> {
        match self {
            Credential::Bearer(token) => resolve_token(state, token).await,
            Credential::Session(secret) => {
                let found = play_store::sessions::find(&state.store, &state.pepper, &secret).await?;
                let session = found.ok_or(ApiError::Unauthorized(INVALID))?;
                let given = headers.get(session::CSRF_HEADER).and_then(|v| v.to_str().ok());
                if session::changes_something(method) && !session::csrf_matches(&state.pepper, &secret, given) {
                    let mut details = play_model::FieldErrors::new();
                    details.insert(
                        session::CSRF_HEADER.into(),
                        vec!["must be the session's CSRF token (GET /session gives it)".into()],
                    );
                    return Err(ApiError::forbidden(
                        "a request made with a browser session that changes something needs its CSRF token",
                        details,
                    ));
                }
                Ok(Principal::of_session(&session))
            }
        }
    }
}

pub(crate) async fn resolve_token(state: &AppState, presented: &str) -> Result<Principal, ApiError> {
    if !token::has_token_shape(presented) {
        return Err(ApiError::Unauthorized(INVALID));
    }
    let mac = state.pepper.mac(presented);
    state.keys.refresh(&state.store).await;
    let principal = match state.keys.get(&mac) {
        Some(principal) => principal,
        None => {
            // Only a verified token is cached, so only a miss can be a typo.
            if !token::checksum_matches(presented) {
                return Err(ApiError::Unauthorized(INVALID));
            }
            let digest = token::digest_text(&mac);
            let Some((key, stored)) = keys::find_by_digest(&state.store, &digest).await? else {
                return Err(ApiError::Unauthorized(INVALID));
            };
            if !token::digests_match(&digest, &stored) {
                return Err(ApiError::Unauthorized(INVALID));
            }
            let principal = Principal {
                account_id: key.account_id,
                user_id: key.user_id,
                key_id: key.id,
                scopes: key.scopes,
                expires_at: key.expires_at,
                session_id: None,
            };
            state.keys.insert(mac, principal.clone(), key.last_used_at);
            principal
        }
    };
    let now = time::now();
    if principal.expires_at.is_some_and(|at| at <= now) {
        return Err(ApiError::Unauthorized(INVALID));
    }
    // Authentication stays a read: uses are written in batches.
    if let Some(uses) = state.keys.note_use(principal.key_id, now) {
        crate::key_cache::flush(&state.store, uses);
    }
    Ok(principal)
}

/// The caller of a Git protocol route (`crate::routes::git`), if it
/// presented a credential: an API key as the HTTP Basic password (what
/// `git` sends; the user name is ignored) or as a bearer token. `None`:
/// no credential (an anonymous clone of a public repository). Rate limited
/// per key like every route.
pub(crate) async fn git_caller(state: &AppState, headers: &HeaderMap) -> Result<Option<Principal>, ApiError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else { return Ok(None) };
    let value = value.to_str().map_err(|_| ApiError::Unauthorized(INVALID))?;
    let (scheme, rest) = value.split_once(' ').ok_or(ApiError::Unauthorized(INVALID))?;
    if scheme.eq_ignore_ascii_case("basic") {
        use base64::Engine as _;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest.trim())
            .map_err(|_| ApiError::Unauthorized(INVALID))?;
        let text = String::from_utf8(decoded).map_err(|_| ApiError::Unauthorized(INVALID))?;
        let (_, password) = text.split_once(':').ok_or(ApiError::Unauthorized(INVALID))?;
        let principal = resolve_token(state, password).await?;
        return limited(state, principal).map(Some);
    }
    identify(state, &Method::GET, headers).await.map(Some)
}

pub(crate) fn limited(state: &AppState, principal: Principal) -> Result<Principal, ApiError> {
    if let Err(not_until) = state.limiter.check_key(&principal.key_id) {
        let wait = not_until.wait_time_from(DefaultClock::default().now());
        return Err(ApiError::RateLimited(wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max_retry());
    }
    Ok(principal)
}

/// The middleware on every authenticated route.
pub async fn authenticate(
    State(state): State<AppState>,
    matched: MatchedPath,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let required = route_scope(&request, &matched)?;
    let principal = identify(&state, request.method(), request.headers()).await?;
    if let Some(required) = required
        && !principal.scopes.grants(required)
    {
        return Err(forbidden(required));
    }
    request.extensions_mut().insert(principal);
    Ok(next.run(request).await)
}

/// The middleware of `/mcp`: the caller is identified (and rate-limited)
/// like on every route, but no scope is checked here: each tool call is an
/// operation of the route table, authorised by [`authorize`] on its own.
pub async fn authenticate_caller(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let principal = identify(&state, request.method(), request.headers()).await?;
    request.extensions_mut().insert(principal);
    Ok(next.run(request).await)
}

/// The middleware of the in-process API that MCP tools call: the request
/// carries the `Principal` that `/mcp` authenticated, and the route's scope
/// is checked against it exactly as [`authenticate`] does. A request
/// without one is refused, so this router can never fall open.
pub async fn authorize(matched: MatchedPath, request: Request, next: Next) -> Result<Response, ApiError> {
    let required = route_scope(&request, &matched)?;
    let principal = request.extensions().get::<Principal>().ok_or(ApiError::Unauthorized(INVALID))?;
    if let Some(required) = required
        && !principal.scopes.grants(required)
    {
        return Err(forbidden(required));
    }
    Ok(next.run(request).await)
}

/// The scope the route table names for the request's operation; `None`
/// for a route whose handler checks scopes per object
/// (`route_scopes::PER_OBJECT_ROUTES`).
fn route_scope(request: &Request, matched: &MatchedPath) -> Result<Option<Scope>, ApiError> {
    // axum answers HEAD with the GET handler (without the body), so HEAD
    // needs what GET needs.
    let method = if request.method() == Method::HEAD { Method::GET.as_str() } else { request.method().as_str() };
    if checks_per_object(method, matched.as_str()) {
        return Ok(None);
    }
    required_scope(method, matched.as_str()).map(Some).ok_or_else(|| {
        // A routed operation missing from the table is a bug; refuse rather
        // than fall open. The route-table test keeps this unreachable.
        ApiError::Core(play_core::Error::Internal(format!(
            "no scope declared for {} {}",
            request.method(),
            matched.as_str()
        )))
    })
}

/// The caller's `Principal`, after the per-key rate limit.
async fn identify(state: &AppState, method: &Method, headers: &HeaderMap) -> Result<Principal, ApiError> {
    let session_cookie = session::cookie_name(state.config.secure_cookies);
    let credential = Credential::from_headers(headers, session_cookie).ok_or(ApiError::Unauthorized(INVALID))?;
    let principal = credential.resolve(state, method, headers).await?;
    limited(state, principal)
}

pub(crate) fn forbidden(required: Scope) -> ApiError {
    required.missing().into()
}

impl ApiError {
    /// Retry-After is at least one second.
    fn max_retry(self) -> Self {
        match self {
            ApiError::RateLimited(0) => ApiError::RateLimited(1),
            other => other,
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        parts.extensions.get::<Principal>().cloned().ok_or(ApiError::Unauthorized(INVALID))
    }
}
