//! What server-side apply records of each object it manages.

use std::collections::BTreeMap;

use crate::apply::Kind;
use crate::time::Timestamp;

#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    pub id: i64,
    pub account_id: i64,
    pub kind: Kind,
    pub name: String,
    pub apply_set: Option<String>,
    pub object_id: i64,
    pub labels: BTreeMap<String, String>,
    /// The last applied spec, redacted canonical JSON.
    pub spec: serde_json::Value,
    pub digest: String,
    /// The object's settable fields as the last apply left them.
    pub live: serde_json::Value,
    /// A Playspec's current revision name.
    pub revision: Option<String>,
    pub version: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// What an apply writes for one object.
#[derive(Clone, Debug)]
pub struct AppliedFields {
    pub apply_set: Option<String>,
    pub object_id: i64,
    pub labels: BTreeMap<String, String>,
    pub spec: serde_json::Value,
    pub digest: String,
    pub live: serde_json::Value,
    pub revision: Option<String>,
}
