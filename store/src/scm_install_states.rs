//! The `state` of a source-hosting app's install flow (issue #29): made
//! when an account asks to install the app, carried through the provider,
//! and given back on the setup redirect.
//!
//! Invariants: the state is 43 random base62 characters (about 256 bits);
//! the store keeps only its HMAC under the token pepper (derived from the
//! master key, outside the database), so neither a database dump nor a
//! guess yields a usable state; it is bound to the account that asked,
//! used at most once (deleted in the statement that reads it) and expires
//! after [`STATE_LIFETIME`]. A state asked for from a browser session
//! names it: the setup redirect must then come back with that session.

use sqlx::Row;

use super::Store;
use super::write_shapes::insert_one_time_secret;
use crate::Result;
use play_model::scm::model::{InstallClaim as Claim, Provider};
use play_model::time::{self, Timestamp};
use play_model::token::TokenPepper;

/// How long an install flow may take, from asking to coming back.
pub const STATE_LIFETIME: chrono::Duration = chrono::Duration::minutes(30);

/// The length of a state, in base62 characters.
pub const STATE_LEN: usize = 43;

/// Makes a state for `claim` to install `provider`: the state, to put in
/// the install URL, and when it expires. Expired states of any account are
/// cleared on the way.
pub async fn create(
    store: &Store,
    pepper: &TokenPepper,
    claim: Claim,
    provider: Provider,
) -> Result<(String, Timestamp)> {
    insert_one_time_secret(store, "scm_install_states", (STATE_LEN, STATE_LIFETIME), |state, _now, expires_at| {
        sqlx::query(
            "INSERT INTO scm_install_states (state_hash, account_id, provider, expires_at, session_id) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(pepper.digest(state))
        .bind(claim.account_id)
        .bind(provider.as_str())
        .bind(time::to_db(expires_at))
        .bind(claim.session_id)
    })
    .await
}

/// Who made `state` for `provider`, if the state is one play made, unused
/// and unexpired; it is used up by this call either way.
pub async fn consume(store: &Store, pepper: &TokenPepper, state: &str, provider: Provider) -> Result<Option<Claim>> {
    if state.len() != STATE_LEN || !state.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Ok(None);
    }
    let hash = pepper.digest(state);
    let row = sqlx::query(
        "DELETE FROM scm_install_states WHERE state_hash = $1 RETURNING account_id, provider, expires_at, session_id",
    )
    .bind(hash);
    let found = store.in_write(async |conn| Ok(row.fetch_optional(&mut *conn).await?)).await?;
    let Some(found) = found else { return Ok(None) };
    let expires_at = time::from_db(&found.try_get::<String, _>("expires_at")?)?;
    let same_provider = found.try_get::<String, _>("provider")? == provider.as_str();
    if !same_provider || expires_at <= time::now() {
        return Ok(None);
    }
    Ok(Some(Claim { account_id: found.try_get("account_id")?, session_id: found.try_get("session_id")? }))
}
