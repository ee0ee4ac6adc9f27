//! What `/api/keys` answers: its response bodies, built from core's records.

use chrono::{DateTime, Utc};
use play_model::model::account::ApiKey;
use serde::Serialize;
use utoipa::ToSchema;

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

/// A one-time sign-in link (`POST /api/sign_in_links`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SignInLink {
    /// The link's path: open it under play's URL (`https://play.example.com/sign-in/link/…`).
    pub path: String,
    pub expires_at: chrono::DateTime<chrono::Utc>,
}
