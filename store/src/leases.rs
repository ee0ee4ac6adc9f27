//! Reconcile leases: which replica may reconcile an object right now.
//!
//! One row per (reconciler name, object id) holds the current `owner` (a
//! replica id, random per process), `expires_at` and a fencing `token`.
//!
//! Invariants:
//! - A claim succeeds only when the row is missing, expired (or released), or
//!   already owned by the claimant, and every successful claim increments the
//!   token: two claims never share a token, and a later claim always has a
//!   higher one. Rows are never deleted, so the token never goes back.
//! - Claim, renew and release are each one statement. On PostgreSQL the
//!   claim is an `INSERT ... ON CONFLICT DO UPDATE ... WHERE` upsert: the
//!   conflicting row is locked and the `WHERE` (expired or ours) is
//!   re-evaluated against its latest version, so of two replicas claiming at
//!   once exactly one wins, without a separate `SELECT ... FOR UPDATE`. On
//!   SQLite the statement runs under the database's single write lock.
//! - An expired lease is never renewed: its holder must claim again and gets
//!   a new token.
//! - Expiry compares wall-clock timestamps written by the replicas, so
//!   replicas' clocks must agree to well within a lease duration.
//!
//! # Fencing writes
//!
//! A reconciler that was paused (GC, a stalled host call) can outlive its
//! lease while another replica takes over. To make a write safe against that,
//! check the lease inside the write's own transaction:
//!
//! ```text
//! let Fenced::Held(mut tx) = leases::begin_fenced(store, fence, id).await? else {
//!     return Ok(Fenced::Lost); // nothing was begun
//! };
//! UPDATE playgrounds SET status = ... WHERE id = ...;
//! store.commit(tx).await?;
//! ```
//!
//! [`begin_fenced`] is the only way in: the check is written once. On
//! PostgreSQL it reads the row `FOR SHARE`, so a takeover (which
//! must update the row) waits until the fenced transaction ends; on SQLite
//! `Store::write` holds the database write lock from `BEGIN IMMEDIATE`. Either
//! way the check and the writes are atomic with respect to a takeover.

use std::time::Duration;

use sqlx::Row;
use sqlx::any::AnyRow;

use super::fence::{Fence, Fenced};
use super::{Backend, Conn, Store, Tx};
use crate::{Error, Result};
use play_model::model::lease::Lease;
use play_model::time::{self, Timestamp};

/// The `expires_at` a released lease is given: before any claim's time, on
/// any replica's clock.
const RELEASED: &str = "1970-01-01T00:00:00.000Z";

fn until(now: &Timestamp, duration: Duration) -> Result<Timestamp> {
    let duration = chrono::Duration::from_std(duration)
        .map_err(|e| Error::Internal(format!("lease duration {duration:?} out of range: {e}")))?;
    Ok(time::truncate(*now + duration))
}

/// Claims the lease on (`reconciler`, `object_id`) for `owner` until
/// `now + duration`, or returns `None` when another owner holds an unexpired
/// lease. A successful claim always carries a new, higher token, also when
/// `owner` already held the lease (a pass that never released it).
pub async fn claim(
    store: &Store,
    reconciler: &str,
    object_id: i64,
    owner: &str,
    now: Timestamp,
    duration: Duration,
) -> Result<Option<Lease>> {
    let expires_at = until(&now, duration)?;
    let row = sqlx::query(
        "INSERT INTO reconcile_leases (reconciler, object_id, owner, token, claimed_at, expires_at) \
         VALUES ($1, $2, $3, 1, $4, $5) \
         ON CONFLICT (reconciler, object_id) DO UPDATE \
         SET owner = excluded.owner, token = reconcile_leases.token + 1, \
             claimed_at = excluded.claimed_at, expires_at = excluded.expires_at \
         WHERE reconcile_leases.expires_at <= excluded.claimed_at OR reconcile_leases.owner = excluded.owner \
         RETURNING token",
    )
    .bind(reconciler)
    .bind(object_id)
    .bind(owner)
    .bind(time::to_db(&now))
    .bind(time::to_db(&expires_at))
    .fetch_optional(store.pool())
    .await?;
    let Some(row) = row else { return Ok(None) };
    Ok(Some(Lease {
        reconciler: reconciler.to_owned(),
        object_id,
        owner: owner.to_owned(),
        token: row.try_get("token")?,
        expires_at,
    }))
}

/// When the lease of `object_id` expires, as stored (`None`: no row). A
/// claimant that found it busy retries at this instant rather than a fixed
/// delay later, so a crashed holder's objects are taken over when its lease
/// ends, not up to a retry interval after (issue #16).
pub async fn expires_at(store: &Store, reconciler: &str, object_id: i64) -> Result<Option<Timestamp>> {
    let row = sqlx::query("SELECT expires_at FROM reconcile_leases WHERE reconciler = $1 AND object_id = $2")
        .bind(reconciler)
        .bind(object_id)
        .fetch_optional(store.pool())
        .await?;
    row.map(|r| super::time_column(&r, "expires_at")).transpose()
}

/// Extends a held, unexpired lease to `now + duration`. `None` when the lease
/// was lost (expired, released or taken over): the holder must stop.
pub async fn renew(store: &Store, lease: &Lease, now: Timestamp, duration: Duration) -> Result<Option<Lease>> {
    let expires_at = until(&now, duration)?;
    let result = sqlx::query(
        "UPDATE reconcile_leases SET expires_at = $1 \
         WHERE reconciler = $2 AND object_id = $3 AND owner = $4 AND token = $5 AND expires_at > $6",
    )
    .bind(time::to_db(&expires_at))
    .bind(&lease.reconciler)
    .bind(lease.object_id)
    .bind(&lease.owner)
    .bind(lease.token)
    .bind(time::to_db(&now))
    .execute(store.pool())
    .await?;
    Ok((result.rows_affected() == 1).then(|| Lease { expires_at, ..lease.clone() }))
}

/// Gives the lease up so any replica can claim the object at once. Returns
/// whether it was still held; releasing a lost lease changes nothing.
pub async fn release(store: &Store, lease: &Lease) -> Result<bool> {
    let result = sqlx::query(
        "UPDATE reconcile_leases SET expires_at = $1 \
         WHERE reconciler = $2 AND object_id = $3 AND owner = $4 AND token = $5",
    )
    .bind(RELEASED)
    .bind(&lease.reconciler)
    .bind(lease.object_id)
    .bind(&lease.owner)
    .bind(lease.token)
    .execute(store.pool())
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Whether `owner` still holds the lease with `token`, unexpired. Call it in
/// the transaction whose writes it fences (see the module doc): on
/// PostgreSQL it locks the row until that transaction ends.
pub async fn still_held(conn: &mut Conn, reconciler: &str, object_id: i64, owner: &str, token: i64) -> Result<bool> {
    let lock = if Backend::of(conn) == Backend::Postgres { " FOR SHARE" } else { "" };
    let row = sqlx::query(&format!(
        "SELECT token FROM reconcile_leases \
         WHERE reconciler = $1 AND object_id = $2 AND owner = $3 AND token = $4 AND expires_at > $5{lock}"
    ))
    .bind(reconciler)
    .bind(object_id)
    .bind(owner)
    .bind(token)
    .bind(time::to_db(&time::now()))
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.is_some())
}

/// Starts a write transaction fenced by `fence` on `object_id`: the
/// transaction when the lease still holds (its row locked until the
/// transaction ends, on PostgreSQL), or [`Fenced::Lost`] with nothing begun.
/// Every fenced write of a reconciler starts here, so the check cannot be
/// forgotten or written twice.
pub async fn begin_fenced(store: &Store, fence: Fence<'_>, object_id: i64) -> Result<Fenced<Tx>> {
    let mut tx = store.write().await?;
    if still_held(&mut tx, fence.reconciler, object_id, fence.owner, fence.token).await? {
        Ok(Fenced::Held(tx))
    } else {
        Ok(Fenced::Lost)
    }
}

/// Runs `work` in a write transaction fenced by `fence` on `object_id`
/// ([`begin_fenced`]) and commits when it succeeds: [`Fenced::Lost`], with
/// nothing begun, when the lease no longer holds; on an error the
/// transaction is dropped, which rolls it back. The shape of every fenced
/// write: `leases::write_fenced(store, fence, id, async |tx| ..).await`.
pub async fn write_fenced<T>(
    store: &Store,
    fence: Fence<'_>,
    object_id: i64,
    work: impl AsyncFnOnce(&mut Conn) -> Result<T>,
) -> Result<Fenced<T>> {
    let Fenced::Held(mut tx) = begin_fenced(store, fence, object_id).await? else {
        return Ok(Fenced::Lost);
    };
    let out = work(&mut tx).await?;
    store.commit(tx).await?;
    store.local_writes().mark(object_id);
    Ok(Fenced::Held(out))
}

/// The stored lease row, for diagnostics and tests. A released lease shows
/// `expires_at` at the epoch.
pub async fn get(store: &Store, reconciler: &str, object_id: i64) -> Result<Option<Lease>> {
    let row = sqlx::query(
        "SELECT reconciler, object_id, owner, token, expires_at FROM reconcile_leases \
         WHERE reconciler = $1 AND object_id = $2",
    )
    .bind(reconciler)
    .bind(object_id)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref().map(from_row).transpose()
}

fn from_row(row: &AnyRow) -> Result<Lease> {
    Ok(columns!(row, Lease { reconciler, object_id, owner, token, expires_at => time }))
}
