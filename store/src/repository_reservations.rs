//! Repository names held while their host makes them (issue #49, item 5).
//!
//! A create used to hold the store's write transaction (SQLite's one
//! write lock) while the host made the repository and took its first
//! push, one request per file on GitHub: every tenant's writes and every
//! lease renewal waited. Now a create reserves the name in one short
//! transaction ([`reserve_in`]), calls the host with no transaction open,
//! and turns the reservation into the repository row in another
//! ([`repositories::insert_in`](super::repositories::insert_in) with the
//! reservation's id).
//!
//! Invariants:
//! - A name is held by a repository row or by one live reservation, never
//!   both by two creates: the unique index on (installation, owner, name)
//!   decides a race between reservations, and a reservation is refused
//!   while a row of the name exists and a row refused while another
//!   create's live reservation holds the name.
//! - Reservations count against the account's `repositories` quota, so
//!   creates in flight cannot pass it together.
//! - A reservation past its expiry (a create stopped by a crash) is taken
//!   over by the next create of the name, which first clears whatever the
//!   host kept ([`Removal::Leftover`](play_model::scm::host::Removal)); the
//!   account's expired reservations are dropped at each reservation.

use sqlx::Row;

use super::write_shapes::write_one;
use super::{Conn, OnUnique, Store};
use crate::{Error, Result};
use play_model::model::event::Acting;
use play_model::model::quota::{QuotaLimits, Resource};
use play_model::scm::names::FullName;
use play_model::time;

/// How long a reservation holds a name: well beyond the longest create
/// (its host calls are bounded: a GitHub call by 20 s, a push by its
/// file count).
pub const HOLD: chrono::Duration = chrono::Duration::hours(1);

fn taken(full: &FullName) -> Error {
    Error::Conflict(format!("a repository named {full} exists"))
}

fn in_flight(full: &FullName) -> Error {
    Error::Conflict(format!("a repository named {full} is being created: wait for that create to end"))
}

/// Reserves `full` on `installation` for `by`'s account, in the caller's
/// write transaction (commit it before calling the host): the
/// reservation's id. A repository of the name, or another live
/// reservation of it, is [`Error::Conflict`]; the account's quota counts
/// its reservations.
pub async fn reserve_in(
    conn: &mut Conn,
    by: Acting,
    installation_id: i64,
    full: &FullName,
    limits: &QuotaLimits,
) -> Result<i64> {
    let now = time::to_db(&time::now());
    sqlx::query("DELETE FROM repository_reservations WHERE account_id = $1 AND expires_at <= $2")
        .bind(by.account_id)
        .bind(&now)
        .execute(&mut *conn)
        .await?;
    let row = sqlx::query("SELECT 1 AS one FROM repositories WHERE installation_id = $1 AND owner = $2 AND name = $3")
        .bind(installation_id)
        .bind(&full.owner)
        .bind(&full.name)
        .fetch_optional(&mut *conn)
        .await?;
    if row.is_some() {
        return Err(taken(full));
    }
    super::quotas::check(conn, by.account_id, Resource::Repositories, limits).await?;
    let expires = time::to_db(&(time::now() + HOLD));
    let row = sqlx::query(
        "INSERT INTO repository_reservations (account_id, installation_id, owner, name, expires_at) \
         VALUES ($1, $2, $3, $4, $5) RETURNING id",
    )
    .bind(by.account_id)
    .bind(installation_id)
    .bind(&full.owner)
    .bind(&full.name)
    .bind(expires)
    .fetch_one(&mut *conn)
    .await
    .on_unique(|| in_flight(full))?;
    Ok(row.try_get("id")?)
}

/// Before a repository row of `full` is inserted, in the same
/// transaction: consumes the caller's reservation `mine`, which must
/// still hold the name (else [`Error::Conflict`]: it expired and another
/// create took the name over); without one, refuses while another
/// create's live reservation holds the name.
pub(super) async fn consume_in(
    conn: &mut Conn,
    installation_id: i64,
    full: &FullName,
    mine: Option<i64>,
) -> Result<()> {
    match mine {
        Some(id) => {
            let gone = sqlx::query(
                "DELETE FROM repository_reservations WHERE id = $1 AND installation_id = $2 AND owner = $3 \
                 AND name = $4",
            )
            .bind(id)
            .bind(installation_id)
            .bind(&full.owner)
            .bind(&full.name)
            .execute(&mut *conn)
            .await?
            .rows_affected();
            if gone == 0 {
                return Err(in_flight(full));
            }
        }
        None => {
            let live = sqlx::query(
                "SELECT 1 AS one FROM repository_reservations WHERE installation_id = $1 AND owner = $2 \
                 AND name = $3 AND expires_at > $4",
            )
            .bind(installation_id)
            .bind(&full.owner)
            .bind(&full.name)
            .bind(time::to_db(&time::now()))
            .fetch_optional(&mut *conn)
            .await?;
            if live.is_some() {
                return Err(in_flight(full));
            }
        }
    }
    Ok(())
}

/// Drops reservation `id`: its create failed (or was undone) and the name
/// is free again. Gone already is fine.
pub async fn release(store: &Store, id: i64) -> Result<()> {
    write_one(store, sqlx::query("DELETE FROM repository_reservations WHERE id = $1").bind(id)).await?;
    Ok(())
}
