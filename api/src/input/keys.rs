//! What `/api/keys` accepts: its request bodies and queries, and the checks
//! that turn them, field by field, into core's types (shared with server-side
//! apply, which validates the same fields the same way).

use crate::auth::Principal;
use crate::error::ApiError;
use chrono::{DateTime, Utc};
use play_model::FieldErrors;
use play_model::error::push_field_error;
use play_model::scopes::{Scope, ScopeSet};
use play_model::time;
use serde::Deserialize;
use utoipa::ToSchema;

pub const MAX_LABEL_LEN: usize = 100;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKeyRequest {
    pub api_key: NewKeyFields,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewKeyFields {
    /// A human-readable name, 1-100 characters, not blank.
    #[schema(schema_with = label)]
    pub label: String,
    /// Scope names; a key can only grant scopes its creator holds.
    #[schema(schema_with = play_model::openapi::scopes)]
    pub scopes: Vec<String>,
    /// Optional expiry, in the future. Without it the key lasts until deleted.
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
}

/// Checks the request field by field; returns the scopes and expiry.
pub(crate) fn validate(fields: &NewKeyFields) -> Result<(ScopeSet, Option<DateTime<Utc>>), FieldErrors> {
    let mut errors = FieldErrors::new();
    // The bound counts what was sent, as the document states it.
    if fields.label.trim().is_empty() || fields.label.chars().count() > MAX_LABEL_LEN {
        push_field_error(&mut errors, "api_key.label", format!("must be 1-{MAX_LABEL_LEN} characters"));
    }
    if fields.scopes.is_empty() {
        push_field_error(&mut errors, "api_key.scopes", "must name at least one scope");
    }
    let mut scopes = Vec::new();
    for (i, name) in fields.scopes.iter().enumerate() {
        match name.parse::<Scope>() {
            Ok(scope) => scopes.push(scope),
            Err(e) => push_field_error(&mut errors, format!("api_key.scopes[{i}]"), e.to_string()),
        }
    }
    let expires_at = fields.expires_at.map(time::truncate);
    if expires_at.is_some_and(|at| at <= time::now()) {
        push_field_error(&mut errors, "api_key.expires_at", "must be in the future");
    }
    if errors.is_empty() { Ok((scopes.into_iter().collect(), expires_at)) } else { Err(errors) }
}

/// A key may only create keys it could itself act as: scopes a subset of
/// its own, and an expiry no later than its own (a key that expires cannot
/// mint one that does not). Otherwise 403, naming the field.
pub(crate) fn within_creator(
    principal: &Principal,
    scopes: &ScopeSet,
    expires_at: Option<DateTime<Utc>>,
) -> Result<(), ApiError> {
    let missing = principal.scopes.missing_from(scopes);
    if !missing.is_empty() {
        let names: Vec<_> = missing.iter().map(|s| s.as_str()).collect();
        let mut details = FieldErrors::new();
        details.insert(
            "api_key.scopes".into(),
            vec![format!("cannot grant scopes you do not hold: {}", names.join(", "))],
        );
        return Err(ApiError::forbidden("a key can only grant scopes its creator holds", details));
    }
    if let Some(limit) = principal.expires_at {
        let message = match expires_at {
            None => {
                Some(format!("is required: the key used expires at {limit}, and a key it creates cannot outlive it"))
            }
            Some(at) if at > limit => Some(format!("must be no later than {limit}, when the key used expires")),
            Some(_) => None,
        };
        if let Some(message) = message {
            let mut details = FieldErrors::new();
            details.insert("api_key.expires_at".into(), vec![message]);
            return Err(ApiError::forbidden("a key cannot create a key that outlives it", details));
        }
    }
    Ok(())
}

/// An API key's label, in the OpenAPI document.
fn label() -> utoipa::openapi::Object {
    play_model::openapi::not_blank(MAX_LABEL_LEN)
}
