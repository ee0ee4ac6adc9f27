//! One-time sign-in links (issue #31): a key asks for one
//! (`POST /api/sign_in_links`, `play login --web`), a browser opens it and
//! gets a session of that key.
//!
//! Invariants:
//! - the secret is 43 random base62 characters (about 256 bits); the store
//!   keeps only its HMAC under the token pepper, labelled apart from
//!   session ids and API keys;
//! - a link is redeemed at most once: [`redeem`] deletes the row in the
//!   statement that reads it, so two browsers racing for one link get one
//!   session between them;
//! - it lasts [`LIFETIME`], and not past its key (deleted: the row goes
//!   with it; expired: [`redeem`] refuses).

use sqlx::Row;

use super::Store;
use super::write_shapes::insert_one_time_secret;
use crate::Result;
use play_model::time::{self, Timestamp};
use play_model::token::TokenPepper;

/// How long a link may wait to be opened.
pub const LIFETIME: chrono::Duration = chrono::Duration::minutes(10);
/// The length of a link's secret, in base62 characters.
pub const SECRET_LEN: usize = 43;

fn context(secret: &str) -> String {
    format!("sign-in-link:{secret}")
}

/// A new link for key `key_id` of `account_id`: its secret and when it
/// expires. Expired links of any key are cleared on the way.
pub async fn create(store: &Store, pepper: &TokenPepper, key_id: i64, account_id: i64) -> Result<(String, Timestamp)> {
    insert_one_time_secret(store, "sign_in_links", (SECRET_LEN, LIFETIME), |secret, now, expires_at| {
        sqlx::query(
            "INSERT INTO sign_in_links (secret_hash, key_id, account_id, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(pepper.digest(&context(secret)))
        .bind(key_id)
        .bind(account_id)
        .bind(time::to_db(now))
        .bind(time::to_db(expires_at))
    })
    .await
}

/// The key and account of link `secret`, consumed; `None` for an unknown,
/// used or expired link, or one whose key expired.
pub async fn redeem(store: &Store, pepper: &TokenPepper, secret: &str) -> Result<Option<(i64, i64)>> {
    if secret.len() != SECRET_LEN || !secret.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Ok(None);
    }
    let hash = pepper.digest(&context(secret));
    let now = time::to_db(&time::now());
    store
        .in_write(async |conn| {
            let row = sqlx::query(
                "DELETE FROM sign_in_links WHERE secret_hash = $1 AND expires_at > $2 \
                 AND key_id IN (SELECT id FROM api_keys WHERE expires_at IS NULL OR expires_at > $2) \
                 RETURNING key_id, account_id",
            )
            .bind(hash)
            .bind(&now)
            .fetch_optional(&mut *conn)
            .await?;
            row.map(|r| Ok((r.try_get("key_id")?, r.try_get("account_id")?))).transpose()
        })
        .await
}

#[cfg(test)]
#[path = "sign_in_links_tests.rs"]
mod tests;
