//! `/api/keys`: create (token shown once), list, delete.

use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use play_core::FieldErrors;
use play_core::error::push_field_error;
use play_core::scopes::{Scope, ScopeSet};
use play_core::store::keys::{self, ApiKey, NewApiKey};
use play_core::{time, token};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::extract::{Id, Json};
use crate::state::AppState;

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
    #[schema(schema_with = crate::schemas::label)]
    pub label: String,
    /// Scope names; a key can only grant scopes its creator holds.
    #[schema(schema_with = crate::schemas::scopes)]
    pub scopes: Vec<String>,
    /// Optional expiry, in the future. Without it the key lasts until deleted.
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
}

/// An API key record: everything but the secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApiKeyView {
    pub id: i64,
    pub label: String,
    /// Public identifier, `pk_live_*`.
    pub client_id: String,
    pub scopes: Vec<String>,
    pub expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
}

impl From<ApiKey> for ApiKeyView {
    fn from(key: ApiKey) -> Self {
        ApiKeyView {
            id: key.id,
            label: key.label,
            client_id: key.client_id,
            scopes: key.scopes.iter().map(|s| s.as_str().to_owned()).collect(),
            expires_at: key.expires_at,
            created_at: key.created_at,
            last_used_at: key.last_used_at,
        }
    }
}

/// A new key with its token, which is shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedKey {
    #[serde(flatten)]
    pub key: ApiKeyView,
    /// The secret bearer token. It cannot be shown again.
    pub token: String,
}

/// Checks the request field by field; returns the scopes and expiry.
fn validate(fields: &NewKeyFields) -> Result<(ScopeSet, Option<DateTime<Utc>>), FieldErrors> {
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
fn within_creator(principal: &Principal, scopes: &ScopeSet, expires_at: Option<DateTime<Utc>>) -> Result<(), ApiError> {
    let missing = principal.scopes.missing_from(scopes);
    if !missing.is_empty() {
        let names: Vec<_> = missing.iter().map(|s| s.as_str()).collect();
        let mut details = FieldErrors::new();
        details.insert(
            "api_key.scopes".into(),
            vec![format!("cannot grant scopes you do not hold: {}", names.join(", "))],
        );
        return Err(ApiError::Forbidden { message: "a key can only grant scopes its creator holds".into(), details });
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
            return Err(ApiError::Forbidden { message: "a key cannot create a key that outlives it".into(), details });
        }
    }
    Ok(())
}

/// Create an API key.
#[utoipa::path(post, path = "/api/keys", tag = "API keys", request_body = CreateKeyRequest,
    responses(
        (status = 201, description = "The key and its token (shown once)", body = CreatedKey),
        (status = 403, description = "A requested scope is not held by the caller, or the key would outlive the caller's", body = ErrorEnvelope),
        (status = 422, description = "Invalid fields, or the key quota is reached", body = ErrorEnvelope),
    ))]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    Json(body): Json<CreateKeyRequest>,
) -> ApiResult<(StatusCode, JsonResponse<CreatedKey>)> {
    let (scopes, expires_at) = validate(&body.api_key).map_err(ApiError::validation)?;
    within_creator(&principal, &scopes, expires_at)?;
    let minted = token::generate();
    let key = keys::create(
        &state.store,
        NewApiKey {
            account_id: principal.account_id,
            user_id: principal.user_id,
            label: body.api_key.label.trim().to_owned(),
            client_id: minted.client_id.clone(),
            token_digest: state.pepper.digest(&minted.token),
            scopes,
            expires_at,
        },
        &state.config.quotas,
        principal.actor(),
    )
    .await?;
    Ok((StatusCode::CREATED, JsonResponse(CreatedKey { key: key.into(), token: minted.token })))
}

/// List the account's API keys (without secrets).
#[utoipa::path(get, path = "/api/keys", tag = "API keys",
    responses((status = 200, description = "The account's keys", body = [ApiKeyView])))]
pub async fn list(State(state): State<AppState>, principal: Principal) -> ApiResult<JsonResponse<Vec<ApiKeyView>>> {
    // Uses noted on this replica but not written yet, so `last_used_at`
    // is current here.
    keys::touch_many(&state.store, &state.keys.take_pending()).await?;
    let keys = keys::list(&state.store, principal.account_id).await?;
    Ok(JsonResponse(keys.into_iter().map(ApiKeyView::from).collect()))
}

/// Delete an API key. Its token stops working at once.
#[utoipa::path(delete, path = "/api/keys/{id}", tag = "API keys",
    params(("id" = i64, Path, description = "Key id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such key in this account", body = ErrorEnvelope),
    ))]
pub async fn delete(State(state): State<AppState>, principal: Principal, Id(id): Id) -> ApiResult<StatusCode> {
    keys::delete(&state.store, principal.account_id, id, principal.actor()).await?;
    // Refused on this replica's next request; others see the store's
    // revocation generation move.
    state.keys.forget(id);
    Ok(StatusCode::NO_CONTENT)
}
