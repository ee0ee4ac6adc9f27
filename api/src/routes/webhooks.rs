//! `/api/webhook_endpoints`: where an account's events are sent, and the
//! history of what was sent.
//!
//! The handlers parse, call `play_model::webhook` for the rules and the
//! store for the write, and shape the response. Nothing here sends a
//! request: `test` records a `webhook.test` event for the endpoint and
//! `redeliver` makes a delivery due again; the delivery dispatcher (its
//! own loop) does the sending.

use axum::Json as JsonResponse;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use play_model::webhook::model::{Delivery, Page};
use play_model::webhook::{self, DeliveryStatus, Input};
use play_store::webhook_deliveries;
use play_store::webhooks;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json, Query};
use crate::input::webhooks::{
    DEFAULT_DELIVERIES, DeliveriesQuery, MAX_DELIVERIES, NewWebhookEndpointRequest, WebhookEndpointUpdateRequest,
    changes,
};
use crate::state::AppState;
use crate::views::webhooks::{WebhookDeliveryItem, WebhookEndpointDetail, WebhookEndpointItem, WebhookTestOutcome};

/// List the account's webhook endpoints (without their secrets).
#[utoipa::path(get, path = "/api/webhook_endpoints", tag = "Webhook endpoints",
    responses((status = 200, body = [WebhookEndpointItem])))]
pub async fn list(
    State(state): State<AppState>,
    principal: Principal,
) -> ApiResult<JsonResponse<Vec<WebhookEndpointItem>>> {
    let endpoints = webhooks::list(&state.store, principal.account_id).await?;
    Ok(JsonResponse(endpoints.into_iter().map(WebhookEndpointItem::from).collect()))
}

/// Create a webhook endpoint. The response carries the signing secret.
#[utoipa::path(post, path = "/api/webhook_endpoints", tag = "Webhook endpoints",
    request_body = NewWebhookEndpointRequest,
    responses((status = 201, body = WebhookEndpointDetail), (status = 422, body = ErrorEnvelope)))]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<NewWebhookEndpointRequest>,
) -> ApiResult<(StatusCode, JsonResponse<WebhookEndpointDetail>)> {
    let b = body.webhook_endpoint;
    let input = Input {
        url: Some(b.url),
        events: Some(b.events),
        event_filters: b.event_filters,
        description: b.description,
        secret: b.secret,
        enabled: None,
    };
    let changes = changes(input, true, &state)?;
    let (endpoint, secret) =
        webhooks::create(&state.store, &state.secrets, principal.account_id, changes, &state.config.quotas).await?;
    Ok((StatusCode::CREATED, JsonResponse(WebhookEndpointDetail { item: endpoint.into(), secret })))
}

/// A webhook endpoint, with its signing secret.
#[utoipa::path(get, path = "/api/webhook_endpoints/{id}", tag = "Webhook endpoints", params(("id" = i64, Path)),
    responses((status = 200, body = WebhookEndpointDetail), (status = 404, body = ErrorEnvelope)))]
pub async fn show(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<JsonResponse<WebhookEndpointDetail>> {
    let endpoint = webhooks::get(&state.store, principal.account_id, id).await?;
    let secret = webhooks::secret(&state.store, &state.secrets, principal.account_id, id).await?;
    Ok(JsonResponse(WebhookEndpointDetail { item: endpoint.into(), secret }))
}

/// Update a webhook endpoint: any subset of its fields, `enabled` included.
#[utoipa::path(patch, path = "/api/webhook_endpoints/{id}", tag = "Webhook endpoints", params(("id" = i64, Path)),
    request_body = WebhookEndpointUpdateRequest,
    responses((status = 200, body = WebhookEndpointItem), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope)))]
pub async fn update(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Json(body): Json<WebhookEndpointUpdateRequest>,
) -> ApiResult<JsonResponse<WebhookEndpointItem>> {
    let b = body.webhook_endpoint;
    let input = Input {
        url: b.url,
        events: b.events,
        event_filters: b.event_filters,
        description: b.description,
        secret: b.secret,
        enabled: b.enabled,
    };
    let changes = changes(input, false, &state)?;
    let endpoint = webhooks::update(&state.store, &state.secrets, principal.account_id, id, changes).await?;
    Ok(JsonResponse(endpoint.into()))
}

/// Delete a webhook endpoint and its delivery history.
#[utoipa::path(delete, path = "/api/webhook_endpoints/{id}", tag = "Webhook endpoints", params(("id" = i64, Path)),
    responses((status = 204), (status = 404, body = ErrorEnvelope)))]
pub async fn delete(State(state): State<AppState>, principal: Principal, Id(id): Id) -> ApiResult<StatusCode> {
    webhooks::delete(&state.store, principal.account_id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Send the `webhook.test` event to this endpoint: answers 200 with the
/// outcome of the dispatcher's first attempt, or 202 when it has not
/// finished within the server's wait (the delivery then shows under
/// `deliveries`).
#[utoipa::path(post, path = "/api/webhook_endpoints/{id}/test", tag = "Webhook endpoints", params(("id" = i64, Path)),
    responses((status = 200, body = WebhookTestOutcome), (status = 202, body = WebhookTestOutcome),
        (status = 404, body = ErrorEnvelope)))]
pub async fn test(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
) -> ApiResult<(StatusCode, JsonResponse<WebhookTestOutcome>)> {
    let event_id = webhooks::record_test(&state.store, principal.account_id, id, principal.actor()).await?;
    let deadline = tokio::time::Instant::now() + state.config.webhook_test_wait;
    let mut delivery = None;
    loop {
        delivery = webhook_deliveries::of_event(&state.store, id, event_id).await?.or(delivery);
        let attempted = delivery.as_ref().is_some_and(|d: &Delivery| d.attempts > 0);
        if attempted || tokio::time::Instant::now() >= deadline {
            let status = if attempted { StatusCode::OK } else { StatusCode::ACCEPTED };
            let delivered = delivery.as_ref().is_some_and(|d| d.status == DeliveryStatus::Succeeded);
            let outcome = WebhookTestOutcome {
                event_id,
                event_type: webhook::TEST_EVENT,
                delivered,
                delivery: delivery.map(WebhookDeliveryItem::from),
            };
            return Ok((status, JsonResponse(outcome)));
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The event types an endpoint may subscribe to: those play fires, then
/// the contract's types it never fires (`docs/webhooks.md`).
#[utoipa::path(get, path = "/api/webhook_endpoints/event_types", tag = "Webhook endpoints",
    responses((status = 200, body = [String])))]
pub async fn event_types(_principal: Principal) -> JsonResponse<Vec<&'static str>> {
    JsonResponse(webhook::offered().collect())
}

/// The endpoint's deliveries, newest first.
#[utoipa::path(get, path = "/api/webhook_endpoints/{id}/deliveries", tag = "Webhook endpoints",
    params(("id" = i64, Path), DeliveriesQuery),
    responses((status = 200, body = [WebhookDeliveryItem]), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope)))]
pub async fn deliveries(
    State(state): State<AppState>,
    principal: Principal,
    Id(id): Id,
    Query(query): Query<DeliveriesQuery>,
) -> ApiResult<JsonResponse<Vec<WebhookDeliveryItem>>> {
    let limit = query.limit.unwrap_or(DEFAULT_DELIVERIES);
    if !(1..=MAX_DELIVERIES).contains(&limit) {
        return Err(ApiError::field("limit", format!("must be from 1 to {MAX_DELIVERIES}")));
    }
    if query.before.is_some_and(|b| b < 1) {
        return Err(ApiError::field("before", "must be a positive delivery id"));
    }
    let page = Page { limit, before: query.before };
    let list = webhook_deliveries::list(&state.store, principal.account_id, id, page).await?;
    Ok(JsonResponse(list.into_iter().map(WebhookDeliveryItem::from).collect()))
}

/// Send a delivery again: it becomes `pending` and due now.
#[utoipa::path(post, path = "/api/webhook_endpoints/{id}/deliveries/{delivery_id}/redeliver",
    tag = "Webhook endpoints",
    params(("id" = i64, Path), ("delivery_id" = i64, Path)),
    responses((status = 202, body = WebhookDeliveryItem), (status = 404, body = ErrorEnvelope)))]
pub async fn redeliver(
    State(state): State<AppState>,
    principal: Principal,
    path: Result<Path<(String, String)>, PathRejection>,
) -> ApiResult<(StatusCode, JsonResponse<WebhookDeliveryItem>)> {
    let Path((id, delivery_id)) = path.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let not_found = || ApiError::Core(play_core::Error::NotFound("webhook delivery"));
    let parse = |s: &str| s.parse::<i64>().ok().filter(|n| *n > 0);
    let (Some(id), Some(delivery_id)) = (parse(&id), parse(&delivery_id)) else { return Err(not_found()) };
    let delivery = webhook_deliveries::redeliver(&state.store, principal.account_id, id, delivery_id).await?;
    Ok((StatusCode::ACCEPTED, JsonResponse(delivery.into())))
}
