//! Browser sessions: a person signed in with an API key (issue #31).
//!
//! Invariants:
//! - the session id given to the browser is 43 random base62 characters
//!   (about 256 bits); the store keeps only its HMAC under the token pepper
//!   (derived from the master key, outside the database), so a database
//!   dump yields no usable cookie;
//! - a session acts with exactly its key's account and scopes: [`find`]
//!   reads the key in the same statement, so a deleted key ends its
//!   sessions at the next request on every replica (the row also goes with
//!   the key, `ON DELETE CASCADE`), and a key that expired ends them too;
//!   [`is_live`] applies the same rules, for what outlasts a request;
//! - a session ends after [`IDLE`] without a request, and [`ABSOLUTE`]
//!   after it began whatever its use; sign-out deletes it;
//! - use is written at most once per [`TOUCH_RESOLUTION`], so reading a
//!   page is not a write each time.

use sqlx::Row;

use super::write_shapes::write_one;
use super::{Conn, Store};
use crate::Result;
use play_model::model::session::{ABSOLUTE, IDLE, Session};
use play_model::scopes::ScopeSet;
use play_model::time::{self, Timestamp};
use play_model::token::{TokenPepper, random_base62};

/// How often a session's use is recorded, at most.
pub const TOUCH_RESOLUTION: chrono::Duration = chrono::Duration::seconds(60);
/// The length of a session id, in base62 characters.
pub const SECRET_LEN: usize = 43;

/// Whether `secret` can be a session id at all (checked before the store
/// is read).
pub fn has_secret_shape(secret: &str) -> bool {
    secret.len() == SECRET_LEN && secret.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Starts a session for key `key_id` of `account_id`: the secret for the
/// cookie. Ended sessions of any account are cleared on the way.
pub async fn create(store: &Store, pepper: &TokenPepper, key_id: i64, account_id: i64) -> Result<(String, i64)> {
    let secret = random_base62(SECRET_LEN);
    let now = time::now();
    let id = store
        .in_write(async |conn| {
            clear_ended_in(conn, now).await?;
            let row = sqlx::query(
                "INSERT INTO sessions (secret_hash, key_id, account_id, created_at, last_seen_at, expires_at) \
                 VALUES ($1, $2, $3, $4, $4, $5) RETURNING id",
            )
            .bind(pepper.digest(&session_context(&secret)))
            .bind(key_id)
            .bind(account_id)
            .bind(time::to_db(&now))
            .bind(time::to_db(&(now + ABSOLUTE)))
            .fetch_one(&mut *conn)
            .await?;
            Ok(row.try_get::<i64, _>("id")?)
        })
        .await?;
    Ok((secret, id))
}

async fn clear_ended_in(conn: &mut Conn, now: Timestamp) -> Result<()> {
    sqlx::query("DELETE FROM sessions WHERE expires_at <= $1 OR last_seen_at <= $2")
        .bind(time::to_db(&now))
        .bind(time::to_db(&(now - IDLE)))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// What the pepper is applied to: the secret, labelled so that a session
/// id can never be mistaken for an API key's digest or an install state's.
fn session_context(secret: &str) -> String {
    format!("session:{secret}")
}

/// The live session `secret` names, with its key; `None` for an unknown,
/// ended or signed-out session, or one whose key is gone or expired.
/// Records the use when the last one is older than [`TOUCH_RESOLUTION`].
pub async fn find(store: &Store, pepper: &TokenPepper, secret: &str) -> Result<Option<Session>> {
    if !has_secret_shape(secret) {
        return Ok(None);
    }
    let hash = pepper.digest(&session_context(secret));
    let sql = format!("{SELECT} WHERE s.secret_hash = $1");
    let query = sqlx::query(&sql).bind(hash);
    let mut conn = store.conn().await?;
    let Some(row) = query.fetch_optional(&mut *conn).await? else { return Ok(None) };
    drop(conn);
    let session = from_row(&row)?;
    let now = time::now();
    if !is_live_at(&session, now) {
        return Ok(None);
    }
    if now - session.last_seen_at >= TOUCH_RESOLUTION {
        let touch = sqlx::query("UPDATE sessions SET last_seen_at = $1 WHERE id = $2");
        write_one(store, touch.bind(time::to_db(&now)).bind(session.id)).await?;
        return Ok(Some(Session { last_seen_at: now, ..session }));
    }
    Ok(Some(session))
}

/// Whether session `id` is still live (not signed out, not ended, its key
/// neither deleted nor expired), by the rules of [`find`] but without
/// recording a use: for what outlasts the request that checked the
/// session (a followed log), which must end with it.
pub async fn is_live(store: &Store, id: i64) -> Result<bool> {
    let sql = format!("{SELECT} WHERE s.id = $1");
    let query = sqlx::query(&sql).bind(id);
    let Some(row) = query.fetch_optional(store.pool()).await? else { return Ok(false) };
    Ok(is_live_at(&from_row(&row)?, time::now()))
}

/// A session with its key's grants; joined, so a deleted key finds none.
const SELECT: &str = "SELECT s.id, s.key_id, s.account_id, s.created_at, s.last_seen_at, s.expires_at, k.user_id, \
     k.scopes, k.expires_at AS key_expires_at FROM sessions s JOIN api_keys k ON k.id = s.key_id";

fn from_row(row: &sqlx::any::AnyRow) -> Result<Session> {
    Ok(Session {
        id: row.try_get("id")?,
        key_id: row.try_get("key_id")?,
        account_id: row.try_get("account_id")?,
        user_id: row.try_get("user_id")?,
        scopes: ScopeSet::from_db(&row.try_get::<String, _>("scopes")?),
        key_expires_at: time::opt_from_db(row.try_get("key_expires_at")?)?,
        created_at: time::from_db(&row.try_get::<String, _>("created_at")?)?,
        last_seen_at: time::from_db(&row.try_get::<String, _>("last_seen_at")?)?,
        expires_at: time::from_db(&row.try_get::<String, _>("expires_at")?)?,
    })
}

/// Neither the session (idle or absolute end) nor its key has expired.
fn is_live_at(session: &Session, now: Timestamp) -> bool {
    session.ends_at() > now && session.key_expires_at.is_none_or(|at| at > now)
}

/// Ends session `id` (sign-out); gone already is fine.
pub async fn delete(store: &Store, id: i64) -> Result<()> {
    write_one(store, sqlx::query("DELETE FROM sessions WHERE id = $1").bind(id)).await?;
    Ok(())
}
