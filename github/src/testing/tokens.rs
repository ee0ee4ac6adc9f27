//! The fake GitHub's installation tokens: what the app's installations
//! grant, the scope each token was asked for (`repositories`,
//! `permissions`), checked as GitHub checks it (a permission the
//! installation does not grant, or a repository it was not given, is 422).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{Duration, Utc};
use serde::Deserialize;
use serde_json::json;

use super::{Shared, not_found, repos, unauthorized};

/// The permissions of the test app, as an installation grants them: a
/// token may ask for these or less.
pub const APP_PERMISSIONS: [(&str, &str); 6] = [
    ("administration", "write"),
    ("contents", "write"),
    ("deployments", "write"),
    ("metadata", "read"),
    ("pull_requests", "write"),
    ("issues", "write"),
];

/// What one installation token may do, as issued: the repositories it is
/// limited to (names under the installation's account; `None`: all of
/// the installation's) and its permissions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IssuedScope {
    pub repositories: Option<Vec<String>>,
    pub permissions: BTreeMap<String, String>,
}

impl IssuedScope {
    /// Whether the token may do `level` of `permission` (`metadata: read`
    /// comes with every token, as on GitHub).
    pub fn grants(&self, permission: &str, level: &str) -> bool {
        if (permission, level) == ("metadata", "read") {
            return true;
        }
        match self.permissions.get(permission).map(String::as_str) {
            Some("write") => true,
            Some("read") => level == "read",
            _ => false,
        }
    }

    /// Whether the token reaches repository `name` (without its owner).
    pub fn reaches(&self, name: &str) -> bool {
        self.repositories.as_ref().is_none_or(|names| names.iter().any(|n| n.eq_ignore_ascii_case(name)))
    }
}

/// The body of an access token request: both fields optional (GitHub
/// gives every repository and permission of the installation then).
#[derive(Deserialize, Default)]
pub(super) struct TokenRequest {
    repositories: Option<Vec<String>>,
    permissions: Option<BTreeMap<String, String>>,
}

pub(super) async fn access_token(
    State(s): State<Shared>,
    UrlPath(id): UrlPath<u64>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Err(refused) = s.as_app("POST", format!("/app/installations/{id}/access_tokens"), &headers) {
        return unauthorized(refused);
    }
    let request: TokenRequest = if body.is_empty() {
        TokenRequest::default()
    } else {
        match serde_json::from_slice(&body) {
            Ok(request) => request,
            Err(_) => return repos::said(StatusCode::BAD_REQUEST, "Problems parsing JSON"),
        }
    };
    let mut state = s.lock();
    match state.installations.get(&id) {
        None => return not_found(),
        Some(i) if i.suspended => {
            let body = json!({"message": "This installation has been suspended"});
            return (StatusCode::FORBIDDEN, Json(body)).into_response();
        }
        Some(_) => {}
    }
    let granted: BTreeMap<String, String> =
        APP_PERMISSIONS.iter().map(|(p, l)| ((*p).to_owned(), (*l).to_owned())).collect();
    let permissions = request.permissions.clone().unwrap_or_else(|| granted.clone());
    let app = IssuedScope { repositories: None, permissions: granted };
    if let Some((p, l)) = permissions.iter().find(|(p, l)| !app.grants(p, l)) {
        return repos::unprocessable(&format!(
            "The permissions requested are not granted to this installation: {p}: {l}"
        ));
    }
    if let Some(names) = &request.repositories {
        let login = state.installations.get(&id).map(|i| i.account_login.to_ascii_lowercase()).unwrap_or_default();
        let missing = names.iter().any(|name| {
            state.repos.get(&format!("{login}/{}", name.to_ascii_lowercase())).is_none_or(|r| r.installation != id)
        });
        if names.is_empty() || missing {
            return repos::unprocessable(
                "There is at least one repository that does not exist or is not accessible to the parent installation.",
            );
        }
    }
    let scope = IssuedScope { repositories: request.repositories.clone(), permissions: permissions.clone() };
    state.scope_requests.push((id, scope.clone()));
    let issued = state.token_requests.entry(id).or_default();
    *issued += 1;
    let token = format!("ghs_{id}x{issued}{}", "t".repeat(30));
    let expires_at = Utc::now() + Duration::seconds(state.token_lifetime_secs);
    state.tokens.insert(token.clone(), id);
    state.scopes.insert(token.clone(), scope);
    if let Some(backend) = &s.backend {
        for repo in state.repos.values().filter(|r| r.installation == id) {
            backend.allow(&repo.key, &token);
        }
    }
    let body = json!({
        "token": token,
        "expires_at": expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "permissions": permissions,
        "repository_selection": "selected",
    });
    (StatusCode::CREATED, Json(body)).into_response()
}
