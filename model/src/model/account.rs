//! Accounts, their users and their API keys, as stored. A key's secret is
//! never here: only its digest is stored, and `ApiKey` carries neither.

use serde::Serialize;

use crate::scopes::ScopeSet;
use crate::time::Timestamp;

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Account {
    pub id: i64,
    pub name: String,
    pub created_at: Timestamp,
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct User {
    pub id: i64,
    pub account_id: i64,
    pub name: String,
    pub created_at: Timestamp,
}

/// An API key as the API shows it: everything but the secret.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ApiKey {
    pub id: i64,
    pub label: String,
    pub client_id: String,
    pub scopes: ScopeSet,
    pub expires_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
    #[serde(skip)]
    pub account_id: i64,
    #[serde(skip)]
    pub user_id: i64,
}

/// What a key needs to be recorded. The caller has already minted the token
/// and computed its digest.
#[derive(Clone, Debug)]
pub struct NewApiKey {
    pub account_id: i64,
    pub user_id: i64,
    pub label: String,
    pub client_id: String,
    pub token_digest: String,
    pub scopes: ScopeSet,
    pub expires_at: Option<Timestamp>,
}
