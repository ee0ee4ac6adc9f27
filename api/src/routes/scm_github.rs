//! The GitHub App's routes:
//!
//! - `POST /api/scm_installations/github` (`repos:write`): starts the
//!   install flow, answering the GitHub page to send the person to, with
//!   a `state` bound to the account, and to the browser session when the
//!   call came with one (`store::scm_install_states`).
//! - `GET /api/scm_installations/github/setup`: the app's setup URL,
//!   where GitHub sends the person back. No key, but a browser session:
//!   the state is accepted only from a browser signed in to the account
//!   that asked for it (and, for a state asked for from a session, from
//!   that very session), whose key may write repositories; and the
//!   person's OAuth `code` must see the installation
//!   (`InstallableApp::confirm`). Without a session the browser is sent to
//!   sign in first, and comes back here with the state unused. So a person
//!   tricked into opening someone else's install link connects nothing to
//!   that someone's account: their browser is not signed in to it.
//! - `POST /api/scm_installations/github/webhook`: GitHub's deliveries to
//!   play's GitHub App. Not authenticated by an API key: GitHub signs each
//!   delivery with the app's webhook secret (`X-Hub-Signature-256`), and
//!   a delivery whose signature does not verify over the raw body is
//!   refused before it is read. Each delivery is processed once, known
//!   by its id and by the digest of its signed body, as the id is not
//!   signed (`store::scm_deliveries`); the answer comes as soon as the
//!   delivery is recorded, and the Playzones it concerns are woken, not
//!   waited for.

use axum::Json as JsonResponse;
use axum::body::Bytes;
use axum::extract::{OriginalUri, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use play_model::scm::github_hook::{self, Change};
use play_model::scm::github_hook::{Delivery, Received};
use play_model::scm::host::InstallableApp;
use play_model::scm::model::InstallClaim as Claim;
use play_model::scm::model::Provider;
use play_model::scopes::Scope;
use play_store::scm_install_states;
use play_store::{repositories, scm_deliveries};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::state::AppState;
use crate::views::repos::InstallationView;

fn app(state: &AppState) -> ApiResult<std::sync::Arc<dyn InstallableApp>> {
    state.hosts.github.clone().ok_or(ApiError::Core(play_core::Error::NotFound("GitHub App")))
}

/// Where to send the person to install the app.
#[derive(Debug, Serialize, ToSchema)]
pub struct InstallStart {
    /// GitHub's install page, carrying `state`.
    pub install_url: String,
    /// Until when the flow may come back (single use).
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

/// Start connecting a GitHub App installation to the account.
#[utoipa::path(post, path = "/api/scm_installations/github", tag = "Repositories",
    responses((status = 201, body = InstallStart),
        (status = 404, description = "No GitHub App is configured", body = ErrorEnvelope)))]
pub async fn install(
    State(state): State<AppState>,
    principal: Principal,
) -> ApiResult<(StatusCode, JsonResponse<InstallStart>)> {
    let app = app(&state)?;
    let claim = Claim { account_id: principal.account_id, session_id: principal.session_id };
    let (token, expires_at) = scm_install_states::create(&state.store, &state.pepper, claim, Provider::Github).await?;
    Ok((StatusCode::CREATED, JsonResponse(InstallStart { install_url: app.install_url(&token), expires_at })))
}

/// What GitHub's setup redirect carries.
#[derive(Debug, Deserialize, IntoParams)]
pub struct SetupQuery {
    /// The installation the person made or changed.
    pub installation_id: Option<String>,
    /// `install`, `update` or `request`.
    pub setup_action: Option<String>,
    /// play's state from `POST /api/scm_installations/github`.
    pub state: Option<String>,
    /// The person's OAuth code (the app requests user authorization
    /// during installation).
    pub code: Option<String>,
}

fn bounded<'q>(value: &'q Option<String>, field: &str, errors: &mut play_model::FieldErrors) -> &'q str {
    let text = value.as_deref().unwrap_or_default();
    if text.is_empty()
        || text.len() > 200
        || !text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
    {
        play_model::error::push_field_error(errors, field, "is required: 1 to 200 letters, digits, '_', '-' or '.'");
    }
    text
}

/// The app's setup URL: GitHub sends the person back here after
/// installing it, and the installation is connected to the account whose
/// `state` this is, if the browser is signed in to that account and the
/// person may see the installation.
#[utoipa::path(get, path = "/api/scm_installations/github/setup", tag = "Repositories", params(SetupQuery),
    responses((status = 200, body = InstallationView),
        (status = 303, description = "No browser session: sent to sign in, and back here after"),
        (status = 403, description = "The session's key may not write repositories", body = ErrorEnvelope),
        (status = 404, description = "No GitHub App is configured, or the person cannot see the installation", body = ErrorEnvelope),
        (status = 409, description = "The installation is connected to another account", body = ErrorEnvelope),
        (status = 422, description = "A missing, used or expired state, one of another account or session; a code GitHub did not accept", body = ErrorEnvelope)))]
pub async fn setup(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    Query(query): Query<SetupQuery>,
) -> ApiResult<Response> {
    let app = app(&state)?;
    let mut errors = play_model::FieldErrors::new();
    let installation = bounded(&query.installation_id, "installation_id", &mut errors);
    let given = bounded(&query.state, "state", &mut errors);
    let code = bounded(&query.code, "code", &mut errors);
    if !installation.bytes().all(|b| b.is_ascii_digit()) {
        play_model::error::push_field_error(&mut errors, "installation_id", "must be GitHub's numeric installation id");
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let Some((session, _)) = crate::session::current(&state, &headers).await? else {
        // The state stays unused: the person signs in and comes back.
        let back = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        let query = serde_urlencoded::to_string([("next", back)]).unwrap_or_default();
        return Ok(Redirect::to(&format!("/sign-in?{query}")).into_response());
    };
    if !session.scopes.grants(Scope::ReposWrite) {
        return Err(crate::auth::forbidden(Scope::ReposWrite));
    }
    let claim = scm_install_states::consume(&state.store, &state.pepper, given, Provider::Github).await?;
    let Some(claim) = claim else {
        return Err(ApiError::field(
            "state",
            "unknown, used or expired: start again with POST /api/scm_installations/github",
        ));
    };
    if claim.account_id != session.account_id || claim.session_id.is_some_and(|id| id != session.id) {
        tracing::warn!(account_id = session.account_id, "GitHub setup with a state of another account or session");
        return Err(ApiError::field(
            "state",
            "was made for another play account or browser session: start again, signed in to the account that \
             should get the installation, in this browser",
        ));
    }
    let account_id = claim.account_id;
    let confirmed = app.confirm(code, installation).await.map_err(|e| ApiError::Core(e.into()))?;
    let claimed = repositories::claim_installation(&state.store, account_id, Provider::Github, &confirmed).await?;
    tracing::info!(account_id, installation = %confirmed.external_id, on = %confirmed.account_login, "GitHub App installation connected");
    let view: InstallationView = claimed.into();
    Ok(JsonResponse(view).into_response())
}

/// What play did with a delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryReceipt {
    /// `X-GitHub-Delivery`.
    pub delivery: String,
    /// `true`: this delivery was received before (its delivery id, or its
    /// signed body under another id), and nothing changed this time.
    pub duplicate: bool,
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A delivery from GitHub to play's GitHub App (the app's webhook URL).
#[utoipa::path(post, path = "/api/scm_installations/github/webhook", tag = "Repositories",
    params(
        ("X-GitHub-Event" = String, Header, description = "The event's name"),
        ("X-GitHub-Delivery" = String, Header, description = "The delivery's id (a GUID)"),
        ("X-Hub-Signature-256" = String, Header, description = "sha256= and the hex HMAC-SHA256 of the body")),
    request_body(content = Object, description = "GitHub's event payload", content_type = "application/json"),
    responses(
        (status = 202, body = DeliveryReceipt),
        (status = 400, description = "No usable event name or delivery id, or a payload that is not GitHub's", body = ErrorEnvelope),
        (status = 401, description = "The signature does not verify", body = ErrorEnvelope),
        (status = 404, description = "No GitHub App is configured", body = ErrorEnvelope),
        (status = 413, body = ErrorEnvelope)))]
pub async fn webhook(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<(StatusCode, JsonResponse<DeliveryReceipt>)> {
    let Some(secret) = state.config.github_webhook_secret.as_ref() else {
        return Err(ApiError::Core(play_core::Error::NotFound("GitHub App")));
    };
    if !secret.verifies(&body, header(&headers, "x-hub-signature-256")) {
        return Err(ApiError::Unauthorized("the X-Hub-Signature-256 header is not this app's signature of the body"));
    }
    let event = github_hook::plain_header(header(&headers, "x-github-event"))
        .ok_or_else(|| ApiError::BadRequest("X-GitHub-Event must name the event".into()))?;
    let delivery = github_hook::plain_header(header(&headers, "x-github-delivery"))
        .ok_or_else(|| ApiError::BadRequest("X-GitHub-Delivery must carry the delivery's id".into()))?;
    let change = github_hook::change(event, &body).map_err(ApiError::BadRequest)?;
    let arrived = Delivery { id: delivery, event, body: &body };
    let received = scm_deliveries::receive(&state.store, Provider::Github, arrived, &change).await?;
    match &received {
        // The Playzones the change asks to sync are woken by its commit.
        Received::Applied(_) => {}
        // GitHub never sends one body under two ids: someone holds a
        // signed delivery and sent it again.
        Received::Replayed => tracing::warn!(delivery, event, "GitHub delivery body replayed under a new delivery id"),
        Received::Redelivered => {}
    }
    let duplicate = received.duplicate();
    if change != Change::None {
        tracing::info!(delivery, event, duplicate, "GitHub installation event");
    }
    let receipt = DeliveryReceipt { delivery: delivery.to_owned(), duplicate };
    Ok((StatusCode::ACCEPTED, JsonResponse(receipt)))
}
