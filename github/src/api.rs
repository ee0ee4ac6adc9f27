//! The REST calls play makes to GitHub, as the app (JWT) or as one of its
//! installations (installation token). Every request carries GitHub's
//! media type and API version headers; every answer other than the one
//! documented becomes a [`GithubError`] naming the endpoint, GitHub's
//! status and its `message`, never a credential.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use play_outbound::UrlPolicy;
use reqwest::{Method, RequestBuilder, StatusCode};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::app::{AppKey, GithubAppConfig};
use crate::tokens::{InstallationToken, TokenCache, TokenScope};
use crate::{GithubError, Result};

/// GitHub's REST API version play is written against.
pub const API_VERSION: &str = "2022-11-28";

/// The timeout of one call, connect and exchange.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// An installation as GitHub describes it (`GET /app/installations/{id}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallationInfo {
    pub id: u64,
    /// The user or organisation the app is installed on.
    pub account_login: String,
    /// `User` or `Organization`.
    pub account_type: String,
    /// `all` or `selected`.
    pub repository_selection: String,
    pub suspended: bool,
}

#[derive(Deserialize)]
pub(crate) struct InstallationBody {
    pub(crate) id: u64,
    account: AccountBody,
    repository_selection: String,
    suspended_at: Option<String>,
}

impl InstallationBody {
    pub(crate) fn into_info(self) -> InstallationInfo {
        InstallationInfo {
            id: self.id,
            account_login: self.account.login,
            account_type: self.account.kind,
            repository_selection: self.repository_selection,
            suspended: self.suspended_at.is_some(),
        }
    }
}

#[derive(Deserialize)]
struct AccountBody {
    login: String,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct TokenBody {
    token: String,
    expires_at: DateTime<Utc>,
}

#[derive(Deserialize)]
struct ErrorBody {
    message: Option<String>,
}

/// The client of one GitHub App: its settings, key, token cache and one
/// outbound connection pool.
#[derive(Debug)]
pub struct GithubApi {
    config: GithubAppConfig,
    key: AppKey,
    tokens: TokenCache,
    http: reqwest::Client,
}

impl GithubApi {
    /// A client under the operator's outbound `policy` (GitHub's API is
    /// public, so the default policy allows it; a loopback test server
    /// needs its address allowlisted).
    /// The API URL itself is judged by the policy here: the resolver
    /// checks names, and an address literal is never resolved.
    pub fn new(mut config: GithubAppConfig, key: AppKey, policy: Arc<UrlPolicy>) -> Result<Self> {
        policy
            .check(&config.api_url)
            .map_err(|m| GithubError::Failed(format!("the API URL {}: {m}", config.api_url)))?;
        config.api_url = config.api_url.trim_end_matches('/').to_owned();
        let http = play_outbound::client(policy, CALL_TIMEOUT, concat!("play/", env!("CARGO_PKG_VERSION")))
            .map_err(|e| GithubError::Failed(format!("building the HTTP client: {e}")))?;
        Ok(GithubApi { config, key, tokens: TokenCache::default(), http })
    }

    pub fn config(&self) -> &GithubAppConfig {
        &self.config
    }

    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    pub(crate) fn request(&self, method: Method, path: &str, bearer: &str) -> RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.config.api_url))
            .bearer_auth(bearer)
            .header(reqwest::header::ACCEPT, "application/vnd.github+json")
            .header("X-GitHub-Api-Version", API_VERSION)
    }

    fn app_jwt(&self) -> Result<String> {
        self.key.jwt(&self.config.app_id, Utc::now())
    }

    /// The installation `id` of this app (`GET /app/installations/{id}`,
    /// as the app): who it is installed on, and whether it is suspended.
    pub async fn installation(&self, id: u64) -> Result<InstallationInfo> {
        let path = format!("/app/installations/{id}");
        let body: InstallationBody = send(self.request(Method::GET, &path, &self.app_jwt()?), &path).await?;
        Ok(body.into_info())
    }

    /// A token of installation `id` limited to `scope`, from the cache
    /// while it is fresh, else from
    /// `POST /app/installations/{id}/access_tokens` with the scope as its
    /// body.
    pub async fn installation_token(&self, id: u64, scope: &TokenScope) -> Result<InstallationToken> {
        self.tokens
            .get(id, scope, Utc::now, async || {
                let path = format!("/app/installations/{id}/access_tokens");
                let request = self.request(Method::POST, &path, &self.app_jwt()?).json(scope);
                let body: TokenBody = send(request, &path).await?;
                Ok(InstallationToken::new(body.token, body.expires_at))
            })
            .await
    }

    /// Forgets the cached token of installation `id` (it was refused, or
    /// the installation was removed).
    pub fn forget_token(&self, id: u64) {
        self.tokens.forget(id);
    }
}

/// Sends `request` and reads a 2xx answer as `T`; anything else as a
/// [`GithubError`] naming `path`.
pub(crate) async fn send<T: DeserializeOwned>(request: RequestBuilder, path: &str) -> Result<T> {
    let response = answered(request, path).await?;
    response.json().await.map_err(|e| GithubError::Failed(format!("{path}: unexpected answer ({e})")))
}

/// Sends `request` for its status only (a 2xx, its body ignored).
pub(crate) async fn send_unit(request: RequestBuilder, path: &str) -> Result<()> {
    answered(request, path).await.map(drop)
}

/// The response when it is a 2xx; else the error GitHub's status means.
async fn answered(request: RequestBuilder, path: &str) -> Result<reqwest::Response> {
    let response = request.send().await.map_err(|e| GithubError::Failed(network(path, &e)))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let message = response.json::<ErrorBody>().await.ok().and_then(|b| b.message).unwrap_or_default();
    let message: String = message.chars().take(300).collect();
    let said = format!("{path}: {status} {message}");
    Err(match status {
        StatusCode::NOT_FOUND | StatusCode::FORBIDDEN => GithubError::NotFound(said),
        StatusCode::UNAUTHORIZED => GithubError::Unauthorized(said),
        StatusCode::CONFLICT => GithubError::Conflict(said),
        StatusCode::UNPROCESSABLE_ENTITY => GithubError::Unprocessable(said),
        _ => GithubError::Failed(said),
    })
}

fn network(path: &str, error: &reqwest::Error) -> String {
    match play_outbound::classify(error) {
        play_outbound::Failure::Refused(why) => format!("{path}: refused by the outbound policy: {why}"),
        play_outbound::Failure::Timeout => format!("{path}: no answer within {}s", CALL_TIMEOUT.as_secs()),
        play_outbound::Failure::Builder(m) | play_outbound::Failure::Network(m) => format!("{path}: {m}"),
    }
}
