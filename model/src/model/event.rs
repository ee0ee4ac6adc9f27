//! Events as recorded in the outbox (`store::events`): who caused one
//! ([`Actor`]), what a change records ([`NewEvent`]) and a stored row
//! ([`Event`]).

use serde::Serialize;

use crate::time::Timestamp;

/// Who caused an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actor {
    /// A request authenticated with this API key id.
    ApiKey(i64),
    /// play itself: reconcilers, expiry, the command line.
    System,
}

impl Actor {
    pub fn parts(self) -> (&'static str, Option<i64>) {
        match self {
            Actor::ApiKey(id) => ("api_key", Some(id)),
            Actor::System => ("system", None),
        }
    }
}

/// Who makes a change: the account whose rows it may touch and the actor
/// its events record. One value, so that a write can never scope by one
/// account and record an actor of another call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acting {
    pub account_id: i64,
    pub actor: Actor,
}

impl Acting {
    pub fn new(account_id: i64, actor: Actor) -> Self {
        Acting { account_id, actor }
    }

    /// play itself acting in `account_id` (reconcilers, start-up, tests).
    pub fn system(account_id: i64) -> Self {
        Acting::new(account_id, Actor::System)
    }
}

#[derive(Clone, Debug)]
pub struct NewEvent {
    pub account_id: i64,
    pub entity_type: &'static str,
    pub entity_id: i64,
    /// The part after the entity: `created`, `status.changed`, ...
    pub action: &'static str,
    pub playground_name: Option<String>,
    pub actor: Actor,
    pub metadata: serde_json::Value,
}

impl NewEvent {
    pub fn new(account_id: i64, entity_type: &'static str, entity_id: i64, action: &'static str) -> Self {
        NewEvent {
            account_id,
            entity_type,
            entity_id,
            action,
            playground_name: None,
            actor: Actor::System,
            metadata: serde_json::Value::Object(Default::default()),
        }
    }

    pub fn actor(mut self, actor: Actor) -> Self {
        self.actor = actor;
        self
    }

    pub fn playground_name(mut self, name: impl Into<String>) -> Self {
        self.playground_name = Some(name.into());
        self
    }

    pub fn metadata(mut self, metadata: serde_json::Value) -> Self {
        self.metadata = metadata;
        self
    }

    /// `entity_type.action`, e.g. `playground.status.changed`.
    pub fn event_type(&self) -> String {
        format!("{}.{}", self.entity_type, self.action)
    }
}

/// A stored event: the webhook payload plus delivery bookkeeping.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Event {
    #[serde(skip)]
    pub id: i64,
    #[serde(skip)]
    pub account_id: i64,
    #[serde(skip)]
    pub event_type: String,
    pub entity_type: String,
    pub entity_id: i64,
    pub action: String,
    pub timestamp: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_log_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub playground_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
    #[serde(skip)]
    pub dispatched_at: Option<Timestamp>,
}
