//! What `/api/webhook_endpoints` answers: its response bodies, built from
//! core's records.

use chrono::{DateTime, Utc};
use play_model::webhook::model::Delivery;
use play_model::webhook::model::Endpoint;
use serde::Serialize;
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// An endpoint in a list (no secret).
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookEndpointItem {
    pub id: i64,
    pub url: String,
    pub events: Vec<String>,
    /// Event type -> entity ids.
    pub event_filters: BTreeMap<String, Vec<i64>>,
    pub description: String,
    pub enabled: bool,
    /// Consecutive failed deliveries; 10 disable the endpoint.
    pub failure_count: i64,
    /// Why delivery disabled the endpoint (`null` when enabled by hand).
    pub disabled_reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// An endpoint with its signing secret (create, show).
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookEndpointDetail {
    #[serde(flatten)]
    pub item: WebhookEndpointItem,
    /// The HMAC-SHA256 key of `X-Webhook-Signature`.
    pub secret: String,
}

impl From<Endpoint> for WebhookEndpointItem {
    fn from(e: Endpoint) -> Self {
        WebhookEndpointItem {
            id: e.id,
            url: e.url,
            events: e.subscription.events,
            event_filters: e.subscription.event_filters,
            description: e.description,
            enabled: e.enabled,
            failure_count: e.failure_count,
            disabled_reason: e.disabled_reason,
            created_at: e.created_at,
            updated_at: e.updated_at,
        }
    }
}

/// One delivery of an event to the endpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookDeliveryItem {
    /// The `X-Webhook-Delivery` id, stable across retries.
    pub id: i64,
    pub event_id: i64,
    pub event_type: String,
    /// `pending`, `succeeded`, `failed` (retrying) or `abandoned`.
    #[schema(schema_with = delivery_status)]
    pub status: &'static str,
    pub attempts: i64,
    pub last_status_code: Option<i64>,
    pub last_error: Option<String>,
    pub last_duration_ms: Option<i64>,
    /// When the next attempt is due; `null` once settled.
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The start of the receiver's last response body.
    pub response_snippet: Option<String>,
    pub created_at: DateTime<Utc>,
}

pub(crate) fn delivery_status() -> utoipa::openapi::Object {
    play_model::openapi::one_of(&["pending", "succeeded", "failed", "abandoned"])
}

impl From<Delivery> for WebhookDeliveryItem {
    fn from(d: Delivery) -> Self {
        WebhookDeliveryItem {
            id: d.id,
            event_id: d.event_id,
            event_type: d.event_type,
            status: d.status.as_str(),
            attempts: d.attempts,
            last_status_code: d.last_status_code,
            last_error: d.last_error,
            last_duration_ms: d.last_duration_ms,
            next_attempt_at: d.next_attempt_at,
            response_snippet: d.response_snippet,
            created_at: d.created_at,
        }
    }
}

/// The answer to `test`: the event recorded for the dispatcher and, when
/// its first attempt finished in time, that attempt's outcome.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookTestOutcome {
    /// The outbox event; its delivery appears under `deliveries`.
    pub event_id: i64,
    /// `webhook.test`.
    pub event_type: &'static str,
    /// Whether the receiver answered with a 2xx.
    pub delivered: bool,
    /// The delivery after its first attempt (200), or as it stands when the
    /// wait ended (202: `null` before fan-out, or still `pending`).
    pub delivery: Option<WebhookDeliveryItem>,
}
