//! The shapes of query every store module writes again and again, written
//! once: where a function runs ([`On`]: on the store, or inside a caller's
//! transaction), a write transaction around a piece of work
//! ([`Store::in_write`]), a read of one row ([`one`], [`one_in`],
//! [`maybe_one`]), of every row ([`all`], [`all_of`]) or of one column of
//! every row ([`column`]), each on the store or a caller's connection, a
//! one-column update by id ([`set_by_id`]), a delete of an account's row
//! ([`delete_owned`]), the lock of a row a transaction reads, decides on
//! and writes back ([`lock_row`]) and a hot read that concurrent callers
//! share ([`coalesced`]). (Fenced writes have theirs in `leases::write_fenced`
//! and `playground_status::write`.)
//!
//! Each helper takes the SQL text, or the query with its binds, from its
//! caller (only a table name, a `&'static str` constant of the caller, is
//! ever put into one here), so every query still reads at its call site.
//! What each keeps:
//! - [`Store::in_write`]: the work commits whole or not at all;
//! - [`one_in`], [`all_of`], [`delete_owned`]: scoped by `account_id`, so
//!   another account's row is indistinguishable from a missing one (the
//!   module invariant of [`super`]);
//! - [`one`]: a missing row is [`Error::NotFound`] naming what was asked
//!   for, never a default.
//!
//! Imports no other store module but the two leaves `coalesce` and
//! `hot_conn`, so that any of them may use it.

use std::hash::Hash;

use sqlx::any::{AnyArguments, AnyRow};
use sqlx::query::Query;
use sqlx::{Any, Executor, Row};

use super::coalesce::Coalescer;
use super::hot_conn::ReadFuture;
use super::{Backend, Conn, Reads, Store};
use crate::{Error, Result};

impl Store {
    /// Runs `work` in a write transaction ([`Store::write`]) and commits
    /// when it succeeds; on an error the transaction is dropped, which
    /// rolls it back, so nothing of the work is written.
    ///
    /// A function that may also run inside a caller's transaction takes
    /// an [`On`] instead, whose [`On::write`] comes here for a store.
    pub async fn in_write<T>(&self, work: impl AsyncFnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        let mut tx = self.write().await?;
        let out = work(&mut tx).await?;
        self.commit(tx).await?;
        Ok(out)
    }
}

/// Where a store function runs: on the [`Store`] (a pooled connection for
/// a read, a write transaction of its own for a write), or inside a
/// caller's open transaction (server-side apply and Launch write a whole
/// set in one). A function that may run either way takes
/// `on: impl Into<On<'_>>`, so callers pass `store` or `&mut *tx` to the
/// same function; one named `x_in` runs only inside a transaction.
///
/// A `&mut Conn` passed to such a function is moved, not reborrowed:
/// write `&mut *conn` where the connection is used again.
pub enum On<'a> {
    Store(&'a Store),
    Tx(&'a mut Conn),
}

impl std::fmt::Debug for On<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            On::Store(_) => "On::Store",
            On::Tx(_) => "On::Tx",
        })
    }
}

impl<'a> From<&'a Store> for On<'a> {
    fn from(store: &'a Store) -> Self {
        On::Store(store)
    }
}

impl<'a> From<&'a mut Conn> for On<'a> {
    fn from(conn: &'a mut Conn) -> Self {
        On::Tx(conn)
    }
}

impl<'a> From<&'a mut super::Tx> for On<'a> {
    fn from(tx: &'a mut super::Tx) -> Self {
        On::Tx(tx)
    }
}

impl On<'_> {
    /// Runs `work` as a write: in a transaction of its own on a store
    /// ([`Store::in_write`]: whole or not at all), or in the caller's,
    /// which commits or rolls back with the rest of its work.
    pub async fn write<T>(self, work: impl AsyncFnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        match self {
            On::Store(store) => store.in_write(work).await,
            On::Tx(conn) => work(conn).await,
        }
    }

    /// Runs `work` as a read: on a pooled connection of a store, or on the
    /// caller's transaction (which sees its own uncommitted writes).
    pub async fn read<T>(self, work: impl AsyncFnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        match self {
            On::Store(store) => work(&mut *store.conn().await?).await,
            On::Tx(conn) => work(conn).await,
        }
    }
}

/// The one row `query` selects on `on`, read by `from_row`;
/// [`Error::NotFound`]`(what)` when there is none.
pub(super) async fn one<'q, T>(
    on: impl Into<On<'_>>,
    query: Query<'q, Any, AnyArguments<'q>>,
    what: &'static str,
    from_row: impl FnOnce(&AnyRow) -> Result<T>,
) -> Result<T> {
    maybe_one(on, query, from_row).await?.ok_or(Error::NotFound(what))
}

/// The row `query` selects on `on`, if any, read by `from_row`.
pub(super) async fn maybe_one<'q, T>(
    on: impl Into<On<'_>>,
    query: Query<'q, Any, AnyArguments<'q>>,
    from_row: impl FnOnce(&AnyRow) -> Result<T>,
) -> Result<Option<T>> {
    let row = on.into().read(async |conn| Ok(query.fetch_optional(conn).await?)).await?;
    row.as_ref().map(from_row).transpose()
}

/// The row `sql` selects with `$1 = id` and `$2 = account_id`, as [`one`].
/// `sql` must scope by both (`WHERE id = $1 AND account_id = $2`): every
/// account-scoped read binds `account_id`, so another account's row reads
/// as `NotFound`, exactly like a missing one.
pub(super) async fn one_in<T>(
    on: impl Into<On<'_>>,
    sql: &str,
    id: i64,
    account_id: i64,
    what: &'static str,
    from_row: impl FnOnce(&AnyRow) -> Result<T>,
) -> Result<T> {
    one(on, sqlx::query(sql).bind(id).bind(account_id), what, from_row).await
}

/// Every row `query` selects on `on`, read by `from_row`, in the order
/// the query gives.
pub(super) async fn all<'q, T>(
    on: impl Into<On<'_>>,
    query: Query<'q, Any, AnyArguments<'q>>,
    from_row: impl Fn(&AnyRow) -> Result<T>,
) -> Result<Vec<T>> {
    let rows = on.into().read(async |conn| Ok(query.fetch_all(conn).await?)).await?;
    rows.iter().map(from_row).collect()
}

/// Every row `sql` selects with `$1 = account_id`, as [`all`]. `sql` must
/// scope by it (`WHERE account_id = $1`): an account lists only its own
/// rows.
pub(super) async fn all_of<T>(
    on: impl Into<On<'_>>,
    sql: &str,
    account_id: i64,
    from_row: impl Fn(&AnyRow) -> Result<T>,
) -> Result<Vec<T>> {
    all(on, sqlx::query(sql).bind(account_id), from_row).await
}

/// Deletes the row `id` of `table` if it belongs to `account_id`
/// (`DELETE FROM {table} WHERE id = $1 AND account_id = $2`); returns how
/// many rows went (0: missing, or another account's). `table` is a
/// constant of the calling module, never tenant input.
pub(super) async fn delete_owned(conn: &mut Conn, table: &'static str, id: i64, account_id: i64) -> Result<u64> {
    let sql = format!("DELETE FROM {table} WHERE id = $1 AND account_id = $2");
    Ok(sqlx::query(&sql).bind(id).bind(account_id).execute(&mut *conn).await?.rows_affected())
}

/// Locks row `id` of `table` until the transaction ends, on PostgreSQL;
/// nothing on SQLite, whose write transactions run one at a time already
/// (`BEGIN IMMEDIATE`). Call it first in a transaction that reads a row,
/// decides on what it read and writes the row back: under PostgreSQL's
/// read committed, a write that commits between that read and that write
/// would otherwise be lost (a revoked right written back, an extension or
/// a wake undone). `FOR NO KEY UPDATE` is the lock an `UPDATE` of non-key
/// columns takes: lockers and writers of the row wait for each other, and
/// inserts of rows that reference it do not. `table` is a constant of the
/// calling module, never tenant input.
pub(super) async fn lock_row(conn: &mut Conn, table: &'static str, id: i64) -> Result<()> {
    if Backend::of(conn) == Backend::Postgres {
        let sql = format!("SELECT id FROM {table} WHERE id = $1 FOR NO KEY UPDATE");
        sqlx::query(&sql).bind(id).execute(&mut *conn).await?;
    }
    Ok(())
}

/// Whether `sql` (`SELECT id FROM <table> WHERE id = $1 ..`, a constant of
/// the caller) finds row `id`; on PostgreSQL the row is share-locked until
/// the transaction ends, so a [`lock_row`] of it waits for this one (a
/// launch onto a Playroom against the Playroom's delete, which counts the
/// Playgrounds on it).
pub(super) async fn share_row(conn: &mut Conn, sql: &'static str, id: i64) -> Result<bool> {
    let lock = if Backend::of(conn) == Backend::Postgres { " FOR SHARE" } else { "" };
    Ok(sqlx::query(&format!("{sql}{lock}")).bind(id).fetch_optional(&mut *conn).await?.is_some())
}

/// Runs `sql`, `UPDATE <table> SET <column> = $1 WHERE id = $2`: one
/// column of row `id` set to `value` (a sealed secret, a timestamp, a
/// link).
pub(super) async fn set_by_id<'q, 'c, T>(
    executor: impl Executor<'c, Database = Any>,
    sql: &'q str,
    value: T,
    id: i64,
) -> Result<()>
where
    T: 'q + Send + sqlx::Encode<'q, Any> + sqlx::Type<Any>,
{
    sqlx::query(sql).bind(value).bind(id).execute(executor).await?;
    Ok(())
}

/// Column `column` of every row `query` selects on `on` (the ids a
/// listing query returns), in the order the query gives.
pub(super) async fn column<'q, T>(
    on: impl Into<On<'_>>,
    query: Query<'q, Any, AnyArguments<'q>>,
    column: &str,
) -> Result<Vec<T>>
where
    T: for<'r> sqlx::Decode<'r, Any> + sqlx::Type<Any>,
{
    all(on, query, |row| Ok(row.try_get(column)?)).await
}

/// What `select` reads on `on`. On a store it is a hot read
/// ([`Store::hot_read`]) that concurrent callers for the same `key` share
/// through the coalescer `reads` picks ([`super::coalesce`]): each gets
/// the result of a query that started after its call, as fresh as a query
/// of its own. On a caller's connection it is read there, uncoalesced, so
/// it sees what that transaction wrote.
pub(super) async fn coalesced<K, V>(
    on: impl Into<On<'_>>,
    reads: impl FnOnce(&Reads) -> &Coalescer<K, V>,
    key: K,
    select: impl for<'c> Fn(&'c mut Conn) -> ReadFuture<'c, V>,
) -> Result<V>
where
    K: Eq + Hash + Clone,
    V: Clone,
{
    match on.into() {
        On::Store(store) => reads(store.reads()).read(key, || store.hot_read(&select)).await,
        On::Tx(conn) => select(conn).await,
    }
}
