//! Webhook endpoints: which events play emits, and what an endpoint may
//! subscribe to.
//!
//! The rules live here, not in the handlers or the store: [`Changes`] is a
//! request's fields checked one by one ([`Changes::validate`]), and
//! [`Subscription::apply`] merges them into what is stored, inside the
//! write, so that `event_filters` always name only subscribed types.
//! [`delivery`] holds the pure rules of sending (recipients, signatures,
//! the retry schedule); the dispatcher loop is `play_reconcilers::webhooks`.

pub mod delivery;
pub mod model;
pub mod url;

use std::collections::BTreeMap;

use rand::RngCore;
use rand::rngs::OsRng;
use serde::{Deserialize, Serialize};

use crate::FieldErrors;
use crate::error::push_field_error;

pub use self::url::{AllowEntry, UrlPolicy};

/// The event `POST /api/webhook_endpoints/:id/test` records.
pub const TEST_EVENT: &str = "webhook.test";

/// Every event type an endpoint may subscribe to: the types play records
/// (every `NewEvent` across the code, checked by a test below) that the
/// spec's event table names, its "further" Playground types, and
/// `webhook.test`, and `webhook_endpoint.disabled` (so a user learns of an
/// endpoint the dispatcher disabled through another one, without polling),
/// and the installation's own `system.*` events (recorded in the
/// operator's account only).
/// Playroom edge events (`playroom.edge.failed`, `playroom.edge.restored`)
/// are recorded but not offered: the spec's Playroom row lists only
/// created, updated and destroyed. The contract's types play never fires
/// are offered too ([`NEVER_FIRED`], [`offered`]).
pub const EVENT_TYPES: &[&str] = &[
    "playground.created",
    "playground.updated",
    "playground.destroyed",
    "playground.status.changed",
    "playground.error",
    "playground.expired",
    "playground.drift.detected",
    "playground.completed",
    "playground.route.conflict",
    "playground.slept",
    "playground.woke",
    "playroom.created",
    "playroom.updated",
    "playroom.destroyed",
    "playspec.created",
    "playspec.updated",
    "playspec.destroyed",
    "playzone.created",
    "playzone.updated",
    "playzone.destroyed",
    "template.created",
    "template.updated",
    "template.destroyed",
    "api_key.created",
    "api_key.destroyed",
    "repo.created",
    "repo.connected",
    "repo.push",
    "repo.deleted",
    "schedule.run.started",
    "schedule.run.completed",
    "schedule.run.skipped",
    "schedule.run.missed",
    "trigger.fired",
    "system.backup.failed",
    delivery::DISABLED_EVENT,
    TEST_EVENT,
];

/// The event types of the contract's table for entities play does not
/// have (agents, artefacts, feedback, mutters): an endpoint may subscribe
/// to them, so that a client subscribing to every type the contract lists
/// is accepted, and never receives one. `docs/webhooks.md` says so.
pub const NEVER_FIRED: &[&str] = &[
    "agent.created",
    "agent.updated",
    "agent.destroyed",
    "agent.authenticated",
    "agent.revoked",
    "artefact.created",
    "artefact.destroyed",
    "feedback.created",
    "feedback.updated",
    "feedback.destroyed",
    "mutter.created",
    "mutter.updated",
];

/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1000;
/// Bounds of a caller-chosen signing secret, in characters.
pub const MIN_SECRET_CHARS: usize = 32;
pub const MAX_SECRET_CHARS: usize = 256;
/// Most entity ids one event type's filter may list.
pub const MAX_FILTER_IDS: usize = 100;
/// Length of a generated secret: 32 random bytes in hex.
pub const GENERATED_SECRET_CHARS: usize = 64;

/// Every type an endpoint may subscribe to: [`EVENT_TYPES`], then
/// [`NEVER_FIRED`].
pub fn offered() -> impl Iterator<Item = &'static str> {
    EVENT_TYPES.iter().chain(NEVER_FIRED).copied()
}

pub fn is_event_type(name: &str) -> bool {
    offered().any(|t| t == name)
}

/// A fresh signing secret: 64 hex characters from the OS's CSPRNG.
pub fn generate_secret() -> String {
    let mut bytes = [0u8; GENERATED_SECRET_CHARS / 2];
    OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// What an endpoint subscribes to. Invariant: every key of
/// `event_filters` is in `events`, and `events` holds known types without
/// repeats.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    pub events: Vec<String>,
    /// Event type -> entity ids; an absent type or an empty list fires for
    /// every entity of that type.
    pub event_filters: BTreeMap<String, Vec<i64>>,
}

impl Subscription {
    /// Whether an event of `event_type` about `entity_id` is delivered.
    pub fn matches(&self, event_type: &str, entity_id: i64) -> bool {
        self.events.iter().any(|e| e == event_type)
            && self.event_filters.get(event_type).is_none_or(|ids| ids.is_empty() || ids.contains(&entity_id))
    }

    /// `changes` applied to `self` (the stored subscription, or the empty
    /// one on create). Filters given in the request must name subscribed
    /// types; stored filters of types the request unsubscribes are dropped
    /// with them.
    pub fn apply(
        &self,
        events: Option<Vec<String>>,
        filters: Option<BTreeMap<String, Vec<i64>>>,
    ) -> Result<Self, FieldErrors> {
        let events = events.unwrap_or_else(|| self.events.clone());
        let mut errors = FieldErrors::new();
        let event_filters = match filters {
            Some(filters) => {
                for key in filters.keys().filter(|k| !events.contains(k)) {
                    push_field_error(
                        &mut errors,
                        format!("webhook_endpoint.event_filters.{key}"),
                        "filters an event type that is not in events",
                    );
                }
                filters
            }
            None => self
                .event_filters
                .iter()
                .filter(|(k, _)| events.contains(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        };
        if errors.is_empty() { Ok(Subscription { events, event_filters }) } else { Err(errors) }
    }
}

/// The fields of a create or update request, as sent. On update every
/// field is optional; on create `url` and `events` are required.
#[derive(Clone, Debug, Default)]
pub struct Input {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub event_filters: Option<BTreeMap<String, Vec<i64>>>,
    pub description: Option<String>,
    pub secret: Option<String>,
    pub enabled: Option<bool>,
}

/// Validated changes; `None` leaves a field as it is (on create: the
/// default, and a generated secret).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub event_filters: Option<BTreeMap<String, Vec<i64>>>,
    pub description: Option<String>,
    pub secret: Option<String>,
    pub enabled: Option<bool>,
}

fn field(name: &str) -> String {
    format!("webhook_endpoint.{name}")
}

impl Changes {
    /// Checks `input` field by field, reporting every refused field at
    /// once (named `webhook_endpoint.<field>`).
    pub fn validate(input: Input, creating: bool, policy: &UrlPolicy) -> Result<Changes, FieldErrors> {
        let mut errors = FieldErrors::new();
        if creating && input.url.is_none() {
            push_field_error(&mut errors, field("url"), "is required");
        }
        if creating && input.events.is_none() {
            push_field_error(&mut errors, field("events"), "is required");
        }
        if let Some(url) = &input.url
            && let Err(message) = policy.check(url)
        {
            push_field_error(&mut errors, field("url"), message);
        }
        if let Some(events) = &input.events {
            if events.is_empty() {
                push_field_error(&mut errors, field("events"), "must list at least one event type");
            }
            for (i, name) in events.iter().enumerate() {
                if !is_event_type(name) {
                    push_field_error(
                        &mut errors,
                        format!("webhook_endpoint.events[{i}]"),
                        "is not an event type (GET /api/webhook_endpoints/event_types lists them)",
                    );
                } else if events[..i].contains(name) {
                    push_field_error(&mut errors, format!("webhook_endpoint.events[{i}]"), "is listed twice");
                }
            }
        }
        let mut event_filters = input.event_filters;
        if let Some(filters) = &mut event_filters {
            for (name, ids) in filters.iter_mut() {
                let at = format!("webhook_endpoint.event_filters.{name}");
                if !is_event_type(name) {
                    push_field_error(&mut errors, at, "is not an event type");
                    continue;
                }
                if ids.len() > MAX_FILTER_IDS {
                    push_field_error(&mut errors, at.clone(), format!("must list at most {MAX_FILTER_IDS} ids"));
                }
                if let Some(i) = ids.iter().position(|id| *id < 1) {
                    push_field_error(&mut errors, format!("{at}[{i}]"), "must be a positive integer id");
                }
                ids.sort_unstable();
                ids.dedup();
            }
        }
        if let Some(description) = &input.description {
            if description.chars().count() > MAX_DESCRIPTION_CHARS {
                push_field_error(
                    &mut errors,
                    field("description"),
                    format!("must be at most {MAX_DESCRIPTION_CHARS} characters"),
                );
            }
            if description.contains('\0') {
                push_field_error(&mut errors, field("description"), "must not contain NUL characters");
            }
        }
        if let Some(secret) = &input.secret
            && let Err(message) = check_secret(secret)
        {
            push_field_error(&mut errors, field("secret"), message);
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Changes {
            url: input.url,
            events: input.events,
            event_filters,
            description: input.description,
            secret: input.secret,
            enabled: input.enabled,
        })
    }
}

/// A caller-chosen secret: 32 to 256 printable ASCII characters (no
/// spaces), so it is strong enough and survives every header and config
/// format a receiver keeps it in.
pub fn check_secret(secret: &str) -> Result<(), String> {
    let n = secret.chars().count();
    if !(MIN_SECRET_CHARS..=MAX_SECRET_CHARS).contains(&n) {
        return Err(format!("must be {MIN_SECRET_CHARS} to {MAX_SECRET_CHARS} characters"));
    }
    if !secret.chars().all(|c| c.is_ascii_graphic()) {
        return Err("must be printable ASCII without spaces".into());
    }
    Ok(())
}

/// Status of one delivery (one event to one endpoint).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Not attempted yet, or due again (redeliver).
    Pending,
    Succeeded,
    /// Failed; retried at `next_attempt_at`.
    Failed,
    /// Failed and out of retries (or its endpoint was disabled).
    Abandoned,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Succeeded => "succeeded",
            DeliveryStatus::Failed => "failed",
            DeliveryStatus::Abandoned => "abandoned",
        }
    }
}

impl std::str::FromStr for DeliveryStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "pending" => Ok(DeliveryStatus::Pending),
            "succeeded" => Ok(DeliveryStatus::Succeeded),
            "failed" => Ok(DeliveryStatus::Failed),
            "abandoned" => Ok(DeliveryStatus::Abandoned),
            _ => Err(format!("unknown delivery status {s:?}")),
        }
    }
}

#[cfg(test)]
mod tests;
