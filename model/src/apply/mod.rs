//! Server-side apply (`POST /api/apply`, issue #14): the pure rules.
//!
//! A manifest object is `{apiVersion: play/v1, kind, metadata: {name,
//! labels}, spec}`. Apply compares each object with what the last apply of
//! it left, and with the live object, and answers per object
//! [`Action::Created`], [`Action::Configured`], [`Action::Unchanged`] or
//! [`Action::Pruned`] with the [`diff`].
//!
//! Invariants this module states and `play-api`'s apply handler keeps:
//! - an object is `unchanged` exactly when its canonical spec (secret values
//!   as keyed digests, [`canonical`]) equals the last applied one *and* the
//!   live object's settable fields equal what that apply left
//!   ([`Decision`]): then nothing is written for it, no row, no event, no
//!   wake;
//! - the canonical form is key-sorted JSON text, so the same manifest gives
//!   the same digest whatever order its keys were written in;
//! - secret values never reach the store or an answer: [`redact`] replaces
//!   them with `"<secret hmac:…>"` digests keyed with the server's pepper.
//!
//! Names and kinds are checked here too ([`check_name`], [`Kind`]). No SQL
//! (rows are `play_store::applied`), no HTTP.

mod diff;
pub mod model;
mod names;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use diff::{DiffEntry, diff};
pub use names::{MAX_APPLY_SET_CHARS, MAX_OBJECTS, check_apply_set, check_name, revision_name};

/// The only `apiVersion` play reads.
pub const API_VERSION: &str = "play/v1";

/// The kinds a manifest may hold, in the order apply creates them (an
/// object only references kinds before it), pruning in reverse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Kind {
    Playroom,
    /// Before Playzone: a Playzone's `repositoryRef` names one.
    Repository,
    Playzone,
    Playspec,
    ImportTemplate,
    WebhookEndpoint,
    Playground,
}

impl Kind {
    pub const ALL: &'static [Kind] = &[
        Kind::Playroom,
        Kind::Repository,
        Kind::Playzone,
        Kind::Playspec,
        Kind::ImportTemplate,
        Kind::WebhookEndpoint,
        Kind::Playground,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Playroom => "Playroom",
            Kind::Repository => "Repository",
            Kind::Playzone => "Playzone",
            Kind::Playspec => "Playspec",
            Kind::ImportTemplate => "ImportTemplate",
            Kind::WebhookEndpoint => "WebhookEndpoint",
            Kind::Playground => "Playground",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Kind::ALL.iter().copied().find(|k| k.as_str() == s).ok_or_else(|| {
            let known: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
            format!("unknown kind {s:?}; known kinds: {}", known.join(", "))
        })
    }
}

/// What apply did (or, in a dry run, would do) with one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Created,
    Configured,
    Unchanged,
    Pruned,
}

/// How an object compares with what the last apply left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub action: Action,
    /// Desired changes: the last applied spec against the new one.
    pub diff: Vec<DiffEntry>,
    /// Changes made outside apply: the live fields against what the last
    /// apply left (`live.` paths). Apply undoes them.
    pub drift: Vec<DiffEntry>,
}

impl Decision {
    /// The decision for an object with last applied `(spec, live)` (`None`:
    /// never applied, or its object is gone) now asked to be `spec` while
    /// the object is `live`.
    pub fn decide(
        last: Option<(&serde_json::Value, &serde_json::Value)>,
        spec: &serde_json::Value,
        live: Option<&serde_json::Value>,
    ) -> Decision {
        let Some((last_spec, last_live)) = last else {
            return Decision { action: Action::Created, diff: diff("spec", None, Some(spec)), drift: Vec::new() };
        };
        let changes = diff("spec", Some(last_spec), Some(spec));
        let drift = match live {
            Some(live) => diff("live", Some(last_live), Some(live)),
            None => Vec::new(),
        };
        let action = if changes.is_empty() && drift.is_empty() { Action::Unchanged } else { Action::Configured };
        Decision { action, diff: changes, drift }
    }
}

/// `value` as canonical JSON text: object keys sorted (serde_json's map is
/// ordered by key), no insignificant whitespace.
pub fn canonical(value: &serde_json::Value) -> String {
    value.to_string()
}

/// The hex SHA-256 of `value`'s [`canonical`] text: a revision's name
/// and the applied row's digest.
pub fn digest(value: &serde_json::Value) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(canonical(value).as_bytes()))
}

/// A path to a secret value: one segment per key or list item, `*`
/// matching every key of a map or item of a list. Segments, not a dotted
/// text, because keys may hold dots (`spring.datasource.password` as an
/// environment variable, `web.api` as a service name): a dotted text
/// would point somewhere else and leave the secret in the clear.
pub type SecretPath = Vec<String>;

/// The [`SecretPath`] of a fixed, dotted path written in play's code
/// (never one built from a tenant's keys).
pub fn path(dotted: &str) -> SecretPath {
    dotted.split('.').map(str::to_owned).collect()
}

/// `spec` with the string at each of `secret_paths` replaced by
/// `digest(value)`, formatted `"<secret hmac:…>"`. Paths that are absent,
/// or hold something else than a string, are left alone.
pub fn redact(spec: &mut serde_json::Value, secret_paths: &[SecretPath], digest: &dyn Fn(&str) -> String) {
    for path in secret_paths {
        let parts: Vec<&str> = path.iter().map(String::as_str).collect();
        redact_at(spec, &parts, digest);
    }
}

fn redact_at(value: &mut serde_json::Value, parts: &[&str], digest: &dyn Fn(&str) -> String) {
    let Some((first, rest)) = parts.split_first() else {
        if let serde_json::Value::String(s) = value {
            *s = format!("<secret {}>", digest(s));
        }
        return;
    };
    match (value, *first) {
        (serde_json::Value::Object(map), "*") => map.values_mut().for_each(|v| redact_at(v, rest, digest)),
        (serde_json::Value::Array(items), "*") => items.iter_mut().for_each(|v| redact_at(v, rest, digest)),
        (serde_json::Value::Object(map), key) => {
            if let Some(v) = map.get_mut(key) {
                redact_at(v, rest, digest);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
