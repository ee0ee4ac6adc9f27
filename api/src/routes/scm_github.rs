//! `POST /api/scm_installations/github/webhook`: GitHub's deliveries to
//! play's GitHub App. Not authenticated by an API key: GitHub signs each
//! delivery with the app's webhook secret (`X-Hub-Signature-256`), and a
//! delivery whose signature does not verify over the raw body is refused
//! before it is read. Each delivery id is processed once
//! (`store::scm_deliveries`); the answer comes as soon as the delivery is
//! recorded, and the Playzones it concerns are woken, not waited for.

use axum::Json as JsonResponse;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use play_core::scm::github_hook::{self, Change};
use play_core::scm::model::Provider;
use play_core::store::scm_deliveries;
use play_core::wake::Kind;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::state::AppState;

/// What play did with a delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryReceipt {
    /// `X-GitHub-Delivery`.
    pub delivery: String,
    /// `true`: this delivery id was received before, and nothing changed
    /// this time.
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
    let woken = scm_deliveries::receive(&state.store, Provider::Github, delivery, event, &change).await?;
    if let Some(ids) = &woken {
        for id in ids {
            state.waker.wake(Kind::Playzone, *id);
        }
    }
    if change != Change::None {
        tracing::info!(delivery, event, duplicate = woken.is_none(), "GitHub installation event");
    }
    let receipt = DeliveryReceipt { delivery: delivery.to_owned(), duplicate: woken.is_none() };
    Ok((StatusCode::ACCEPTED, JsonResponse(receipt)))
}
