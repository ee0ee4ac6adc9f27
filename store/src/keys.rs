//! API key records. Tokens are never stored: only their digest (see
//! `play_model::token`).

use sqlx::Row;
use sqlx::any::AnyRow;

use super::events;
use super::quotas;
use super::shapes::{all, all_of, delete_owned, one, set_by_id};
use super::{Conn, OnUnique, Store};
use crate::{Error, Result};
use play_model::model::account::{ApiKey, NewApiKey};
use play_model::model::event::{Actor, NewEvent};
use play_model::model::quota::{QuotaLimits, Resource};
use play_model::scopes::ScopeSet;
use play_model::time::{self, Timestamp};

const COLUMNS: &str = "id, account_id, user_id, label, client_id, scopes, expires_at, created_at, last_used_at";

fn from_row(row: &AnyRow) -> Result<ApiKey> {
    Ok(columns!(
        row,
        ApiKey {
            id,
            account_id,
            user_id,
            label,
            client_id,
            scopes: ScopeSet::from_db(&row.try_get::<String, _>("scopes")?),
            expires_at => opt_time,
            created_at => time,
            last_used_at => opt_time,
        }
    ))
}

/// Records a key, enforcing the account's key quota and writing the
/// `api_key.created` event in the same transaction.
pub async fn create(store: &Store, key: NewApiKey, limits: &QuotaLimits, actor: Actor) -> Result<ApiKey> {
    store
        .in_write(async |tx| {
            quotas::check(tx, key.account_id, Resource::ApiKeys, limits).await?;
            insert_in(tx, key, actor).await
        })
        .await
}

/// [`create`], but only when the store holds no key at all: the first
/// start's admin key. `None` when a key exists. Replicas starting at once on
/// one empty database make exactly one: the check and the insert share a
/// transaction that holds the account's lock (SQLite: the write lock).
pub async fn create_first(store: &Store, key: NewApiKey, limits: &QuotaLimits, actor: Actor) -> Result<Option<ApiKey>> {
    store
        .in_write(async |tx| {
            quotas::check(tx, key.account_id, Resource::ApiKeys, limits).await?;
            let existing: i64 =
                sqlx::query("SELECT COUNT(*) AS n FROM api_keys").fetch_one(&mut *tx).await?.try_get("n")?;
            if existing > 0 {
                return Ok(None);
            }
            Ok(Some(insert_in(tx, key, actor).await?))
        })
        .await
}

async fn insert_in(conn: &mut Conn, key: NewApiKey, actor: Actor) -> Result<ApiKey> {
    let now = time::now();
    let row = sqlx::query(
        "INSERT INTO api_keys (account_id, user_id, label, client_id, token_digest, scopes, expires_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
    )
    .bind(key.account_id)
    .bind(key.user_id)
    .bind(&key.label)
    .bind(&key.client_id)
    .bind(&key.token_digest)
    .bind(key.scopes.to_db())
    .bind(key.expires_at.as_ref().map(time::to_db))
    .bind(time::to_db(&now))
    .fetch_one(&mut *conn)
    .await;
    let id: i64 = row.on_unique(|| Error::Internal("token collision; retry".into()))?.try_get("id")?;
    events::record(conn, NewEvent::new(key.account_id, "api_key", id, "created").actor(actor)).await?;
    Ok(ApiKey {
        id,
        account_id: key.account_id,
        user_id: key.user_id,
        label: key.label,
        client_id: key.client_id,
        scopes: key.scopes,
        expires_at: key.expires_at,
        created_at: now,
        last_used_at: None,
    })
}

pub async fn list(store: &Store, account_id: i64) -> Result<Vec<ApiKey>> {
    all_of(store, &format!("SELECT {COLUMNS} FROM api_keys WHERE account_id = $1 ORDER BY id"), account_id, from_row)
        .await
}

/// Every key of every account (for `play keys list` with no account).
pub async fn list_all(store: &Store) -> Result<Vec<ApiKey>> {
    all(store, sqlx::query(&format!("SELECT {COLUMNS} FROM api_keys ORDER BY id")), from_row).await
}

/// Deletes a key of the account; another account's key is `NotFound`.
pub async fn delete(store: &Store, account_id: i64, id: i64, actor: Actor) -> Result<()> {
    store
        .in_write(async |tx| {
            if delete_owned(tx, "api_keys", id, account_id).await? == 0 {
                return Err(Error::NotFound("api key"));
            }
            // Replicas that cached the key drop their caches when they see this.
            sqlx::query("UPDATE api_key_revocations SET generation = generation + 1 WHERE id = 1")
                .execute(&mut *tx)
                .await?;
            events::record(tx, NewEvent::new(account_id, "api_key", id, "destroyed").actor(actor)).await?;
            Ok(())
        })
        .await
}

/// Deletes a key by id regardless of account (command line, offline admin).
pub async fn delete_any(store: &Store, id: i64) -> Result<()> {
    let query = sqlx::query("SELECT account_id FROM api_keys WHERE id = $1").bind(id);
    let account_id: i64 = one(store, query, "api key", |row| Ok(row.try_get("account_id")?)).await?;
    delete(store, account_id, id, Actor::System).await
}

/// The key whose token has this digest, with the stored digest for the
/// caller's constant-time comparison.
pub async fn find_by_digest(store: &Store, digest: &str) -> Result<Option<(ApiKey, String)>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS}, token_digest FROM api_keys WHERE token_digest = $1"))
        .bind(digest)
        .fetch_optional(store.pool())
        .await?;
    row.map(|row| Ok((from_row(&row)?, row.try_get("token_digest")?))).transpose()
}

/// The revocation generation: bumped by every key deletion (see the
/// migration `0022_key_revocations`). Replicas that cache keys compare it.
pub async fn revocation_generation(store: &Store) -> Result<i64> {
    let row = sqlx::query("SELECT generation FROM api_key_revocations WHERE id = 1").fetch_one(store.pool()).await?;
    Ok(row.try_get("generation")?)
}

/// Records the use of keys, in one transaction: the API batches them (at
/// most one per key a minute), so authentication stays a read on the hot
/// path. A key deleted meanwhile is simply not updated.
pub async fn touch_many(store: &Store, uses: &[(i64, Timestamp)]) -> Result<()> {
    if uses.is_empty() {
        return Ok(());
    }
    store
        .in_write(async |tx| {
            for (id, at) in uses {
                set_by_id(&mut *tx, "UPDATE api_keys SET last_used_at = $1 WHERE id = $2", time::to_db(at), *id)
                    .await?;
            }
            Ok(())
        })
        .await
}

pub async fn count_all(store: &Store) -> Result<i64> {
    let row = sqlx::query("SELECT COUNT(*) AS n FROM api_keys").fetch_one(store.pool()).await?;
    Ok(row.try_get("n")?)
}
