//! Webhook endpoints and deliveries as stored (never with a signing
//! secret), and what the dispatcher claims and records.

use std::time::Duration;

use crate::model::event::Event;
use crate::time::Timestamp;
use crate::webhook::{DeliveryStatus, Subscription};

/// An endpoint as stored, without its secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub id: i64,
    pub account_id: i64,
    pub url: String,
    pub subscription: Subscription,
    pub description: String,
    pub enabled: bool,
    /// Consecutive failed deliveries (reset by a success or re-enabling).
    pub failure_count: i64,
    /// Why the dispatcher disabled the endpoint; cleared on re-enabling.
    pub disabled_reason: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// One delivery and the outcome of its last attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Stable across retries: receivers dedupe on it.
    pub id: i64,
    pub endpoint_id: i64,
    /// The outbox event delivered.
    pub event_id: i64,
    pub event_type: String,
    pub status: DeliveryStatus,
    pub attempts: i64,
    pub next_attempt_at: Option<Timestamp>,
    pub last_status_code: Option<i64>,
    pub last_error: Option<String>,
    pub last_duration_ms: Option<i64>,
    /// The start of the receiver's last response body.
    pub response_snippet: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A page of history: newest first, at most `limit` rows, with ids below
/// `before` when given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    pub limit: i64,
    pub before: Option<i64>,
}

/// The outcome of one attempt, as the dispatcher records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    pub status: DeliveryStatus,
    pub next_attempt_at: Option<Timestamp>,
    pub status_code: Option<i64>,
    pub error: Option<String>,
    pub duration_ms: i64,
    pub response_snippet: Option<String>,
}

/// A delivery this replica claimed, with what its attempt needs.
#[derive(Clone, Debug)]
pub struct Claimed {
    /// The delivery id: `X-Webhook-Delivery` and `webhook-id`.
    pub id: i64,
    pub endpoint_id: i64,
    pub account_id: i64,
    pub url: String,
    /// The endpoint's signing secret, opened.
    pub secret: String,
    /// Attempts made before this one.
    pub attempts: i64,
    pub event: Event,
}

impl std::fmt::Display for Claimed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "delivery {} of event {} to endpoint {}", self.id, self.event.id, self.endpoint_id)
    }
}

/// Limits of one claim.
#[derive(Clone, Copy, Debug)]
pub struct ClaimLimits {
    /// Most deliveries claimed in all.
    pub total: usize,
    /// Most deliveries in flight per endpoint on this replica.
    pub per_endpoint: usize,
    /// How long the claim holds without an outcome (longer than an
    /// attempt can take).
    pub hold: Duration,
}

/// What an attempt does to its endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointEffect {
    /// A 2xx: the consecutive failure count starts again at 0.
    Succeeded,
    /// A failure: counted; the endpoint is disabled at the limit, or at
    /// once when the receiver answered 410 Gone.
    Failed { gone: bool },
}

/// The endpoint after an attempt was recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub failure_count: i64,
    /// Set when this attempt disabled the endpoint: the reason.
    pub disabled: Option<String>,
}
