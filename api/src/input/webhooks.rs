//! What `/api/webhook_endpoints` accepts: its request bodies and queries, and
//! the checks that turn them, field by field, into core's types (shared with
//! server-side apply, which validates the same fields the same way).

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use play_model::webhook::{Changes, Input};
use serde::Deserialize;
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};

pub const DEFAULT_DELIVERIES: i64 = 50;
pub const MAX_DELIVERIES: i64 = 500;

/// The create body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWebhookEndpointRequest {
    pub webhook_endpoint: NewWebhookEndpoint,
}

/// Fields of a new endpoint; it starts enabled with `failure_count` 0.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWebhookEndpoint {
    /// An absolute `https` URL (`http` only where the operator allows it)
    /// without user name or password, whose host is not a loopback,
    /// private, link-local, unique-local or metadata address unless the
    /// operator allowlists it.
    #[schema(schema_with = play_model::openapi::webhook_url)]
    pub url: String,
    /// Event types to receive (`GET /api/webhook_endpoints/event_types`).
    #[schema(schema_with = play_model::openapi::webhook_events)]
    pub events: Vec<String>,
    /// Event type (one of `events`) -> entity ids; an absent type or an
    /// empty list receives every entity of that type.
    #[serde(default)]
    #[schema(schema_with = play_model::openapi::webhook_event_filters_or_null)]
    pub event_filters: Option<BTreeMap<String, Vec<i64>>>,
    #[serde(default)]
    #[schema(schema_with = play_model::openapi::webhook_description_or_null)]
    pub description: Option<String>,
    /// The signing secret; 64 hex characters are generated when omitted.
    #[serde(default)]
    #[schema(schema_with = play_model::openapi::webhook_secret_or_null)]
    pub secret: Option<String>,
}

/// The update body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookEndpointUpdateRequest {
    pub webhook_endpoint: WebhookEndpointUpdate,
}

/// Any subset of the fields; an absent (or `null`) one is left as it is.
/// `enabled: true` on a disabled endpoint resets `failure_count` and
/// `disabled_reason`. Narrowing `events` drops the filters of the types
/// removed.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookEndpointUpdate {
    #[schema(schema_with = play_model::openapi::webhook_url_or_null)]
    pub url: Option<String>,
    #[schema(schema_with = play_model::openapi::webhook_events_or_null)]
    pub events: Option<Vec<String>>,
    #[schema(schema_with = play_model::openapi::webhook_event_filters_or_null)]
    pub event_filters: Option<BTreeMap<String, Vec<i64>>>,
    #[schema(schema_with = play_model::openapi::webhook_description_or_null)]
    pub description: Option<String>,
    /// A new signing secret.
    #[schema(schema_with = play_model::openapi::webhook_secret_or_null)]
    pub secret: Option<String>,
    pub enabled: Option<bool>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveriesQuery {
    /// How many deliveries, newest first (default 50, at most 500).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    /// Only deliveries with an id below this one (the next page: the last
    /// id of the previous one).
    #[param(minimum = 1)]
    pub before: Option<i64>,
}

pub(crate) fn changes(input: Input, creating: bool, state: &AppState) -> ApiResult<Changes> {
    Changes::validate(input, creating, &state.config.webhook_urls).map_err(ApiError::validation)
}
