//! The fake GitHub's people: the OAuth code exchange of the install flow,
//! who a user token is (`GET /user`), their organisation memberships and
//! the installations they can see.

use axum::Json;
use axum::extract::{Path as UrlPath, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{CLIENT_ID, CLIENT_SECRET, Shared, bearer, installation_body, not_found, unauthorized};

#[derive(Deserialize)]
pub(super) struct OauthRequest {
    client_id: String,
    client_secret: String,
    code: String,
}

/// `POST /login/oauth/access_token`: as GitHub, a bad code is a 200 with
/// an `error` field; a code works once.
pub(super) async fn oauth_token(State(s): State<Shared>, Json(request): Json<OauthRequest>) -> Response {
    let mut state = s.lock();
    state.requests.push(("POST".into(), "/login/oauth/access_token".into(), true));
    if request.client_id != CLIENT_ID || request.client_secret != CLIENT_SECRET {
        let body = json!({"error": "incorrect_client_credentials",
            "error_description": "The client_id and/or client_secret passed are incorrect."});
        return Json(body).into_response();
    }
    let Some(user) = state.codes.remove(&request.code) else {
        let body = json!({"error": "bad_verification_code",
            "error_description": "The code passed is incorrect or expired."});
        return Json(body).into_response();
    };
    let token = format!("ghu_{}{}", state.user_tokens.len(), "u".repeat(32));
    state.user_tokens.insert(token.clone(), user);
    Json(json!({"access_token": token, "expires_in": 28800, "token_type": "bearer", "scope": ""})).into_response()
}

/// The GitHub user a request's user token is of.
fn user_of(s: &Shared, headers: &HeaderMap) -> Option<String> {
    let state = s.lock();
    bearer(headers).and_then(|t| state.user_tokens.get(t)).cloned()
}

/// `GET /user`: the authenticated user.
pub(super) async fn user(State(s): State<Shared>, headers: HeaderMap) -> Response {
    s.lock().requests.push(("GET".into(), "/user".into(), true));
    match user_of(&s, &headers) {
        Some(login) => Json(json!({"login": login, "id": 1, "type": "User"})).into_response(),
        None => unauthorized("Bad credentials"),
    }
}

/// `GET /user/memberships/orgs/{org}`: the user's membership, or 404
/// when they are not a member.
pub(super) async fn membership(State(s): State<Shared>, UrlPath(org): UrlPath<String>, headers: HeaderMap) -> Response {
    s.lock().requests.push(("GET".into(), format!("/user/memberships/orgs/{org}"), true));
    let Some(login) = user_of(&s, &headers) else { return unauthorized("Bad credentials") };
    let role = s.lock().memberships.get(&(login.clone(), org.to_ascii_lowercase())).cloned();
    match role {
        Some(role) => Json(json!({
            "state": "active",
            "role": role,
            "organization": {"login": org},
            "user": {"login": login},
        }))
        .into_response(),
        None => not_found(),
    }
}

#[derive(Deserialize)]
pub(super) struct Page {
    per_page: Option<usize>,
    page: Option<usize>,
}

/// `GET /user/installations`: the installations of this app the user's
/// token can see, paginated.
pub(super) async fn user_installations(
    State(s): State<Shared>,
    axum::extract::Query(page): axum::extract::Query<Page>,
    headers: HeaderMap,
) -> Response {
    let state = s.lock();
    let Some(user) = bearer(&headers).and_then(|t| state.user_tokens.get(t)) else {
        return unauthorized("Bad credentials");
    };
    let ids = state.user_installations.get(user).cloned().unwrap_or_default();
    let per_page = page.per_page.unwrap_or(30).clamp(1, 100);
    let skip = (page.page.unwrap_or(1).max(1) - 1) * per_page;
    let listed: Vec<Value> = ids
        .iter()
        .skip(skip)
        .take(per_page)
        .filter_map(|id| state.installations.get(id).map(|i| installation_body(*id, i)))
        .collect();
    Json(json!({"total_count": ids.len(), "installations": listed})).into_response()
}
