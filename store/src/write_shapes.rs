//! Shapes of write that several store modules repeat, beside the ones in
//! `shapes` and written the same way: each takes its SQL, or the query
//! with its binds, from the caller (only a table name, a `&'static str`
//! constant of the caller, is ever put into one here), so every query
//! still reads at its call site.
//!
//! - [`write_one`]: one statement in a write transaction of its own;
//! - [`insert_one_time_secret`]: a new one-time secret stored in its
//!   table, which first loses the expired ones;
//! - [`set_pair_by_id`]: two columns of one row set together, as
//!   `shapes::set_by_id` sets one;
//! - [`update_touched`]: an update of a row's columns that also sets its
//!   `updated_at`;
//! - [`insert_returning_id`], [`update_unique`]: an insert or update of
//!   a row with a unique name, the caller's error for a name taken;
//! - [`write_locked`]: a write that reads a row, decides on it and writes
//!   it back, with the row locked first.
//!
//! Imports no other store module but `shapes`, so that any of them may
//! use it.

use sqlx::any::AnyArguments;
use sqlx::query::Query;
use sqlx::{Any, Encode, Executor, Type};

use super::shapes::lock_row;
use super::{Conn, On, OnUnique, Store};
use crate::{Error, Result};
use play_model::time::{self, Timestamp};
use play_model::token::random_base62;

/// Runs `query`, one statement, in a write transaction of its own
/// ([`Store::in_write`]) and answers how many rows it changed. A write
/// that is a single statement still goes through the store's write path
/// rather than a pooled connection: on SQLite that takes the write lock up
/// front and waits its turn with the other writers (`Store::write`), and
/// the write is counted with every other.
pub(super) async fn write_one<'q>(store: &Store, query: Query<'q, Any, AnyArguments<'q>>) -> Result<u64> {
    store.in_write(async |conn| Ok(query.execute(&mut *conn).await?.rows_affected())).await
}

/// Makes a one-time secret of `len` random base62 characters that lives
/// `lifetime`, and stores it with `insert` (given the secret, now and when
/// it expires; it binds what the table keeps, a digest of the secret,
/// never the secret itself) in a write transaction of its own, after
/// deleting the rows of `table` whose `expires_at` is now or earlier.
/// Answers the secret and when it expires.
///
/// A table of one-time secrets (sign-in links, install states) is swept
/// this way whenever a new one is made, so it holds the live secrets and no
/// more than those that expired since. `table` is a constant of the
/// calling module, never tenant input.
pub(super) async fn insert_one_time_secret<'q>(
    store: &Store,
    table: &'static str,
    (len, lifetime): (usize, chrono::Duration),
    insert: impl FnOnce(&str, &Timestamp, &Timestamp) -> Query<'q, Any, AnyArguments<'q>>,
) -> Result<(String, Timestamp)> {
    let secret = random_base62(len);
    let now = time::now();
    let expires_at = now + lifetime;
    let insert = insert(&secret, &now, &expires_at);
    let sweep = format!("DELETE FROM {table} WHERE expires_at <= $1");
    store
        .in_write(async |conn| {
            sqlx::query(&sweep).bind(time::to_db(&now)).execute(&mut *conn).await?;
            insert.execute(&mut *conn).await?;
            Ok(())
        })
        .await?;
    Ok((secret, expires_at))
}

/// Runs `sql`, `UPDATE <table> SET <a> = $1, <b> = $2 WHERE id = $3`: two
/// columns of row `id` that belong together set in one statement (a key
/// and its public half, a pin and when it was pinned, trust and who
/// granted it), so neither is ever written without the other.
pub(super) async fn set_pair_by_id<'q, 'c, A, B>(
    executor: impl Executor<'c, Database = Any>,
    sql: &'q str,
    (a, b): (A, B),
    id: i64,
) -> Result<()>
where
    A: 'q + Send + Encode<'q, Any> + Type<Any>,
    B: 'q + Send + Encode<'q, Any> + Type<Any>,
{
    sqlx::query(sql).bind(a).bind(b).bind(id).execute(executor).await?;
    Ok(())
}

/// Runs `update`, `UPDATE <table> SET <column> = $1, .., updated_at = $n
/// WHERE id = $n+1` with its columns' values bound, on `executor`: binds
/// now as the row's `updated_at` and then `id`, so the change shows as the
/// row's latest (a key, a status and its reason, where a row launches).
pub(super) async fn update_touched<'q, 'c>(
    executor: impl Executor<'c, Database = Any>,
    update: Query<'q, Any, AnyArguments<'q>>,
    id: i64,
) -> Result<()> {
    update.bind(time::to_db(&time::now())).bind(id).execute(executor).await?;
    Ok(())
}

/// Runs `insert` (`INSERT .. RETURNING id`) on `conn` and answers the new
/// row's id. A unique violation, a name or path the account uses already,
/// is `taken()`, the error the caller words for it; any other database
/// error passes through.
pub(super) async fn insert_returning_id<'q>(
    conn: &mut Conn,
    insert: Query<'q, Any, AnyArguments<'q>>,
    taken: impl FnOnce() -> Error,
) -> Result<i64> {
    Ok(sqlx::Row::try_get(&insert.fetch_one(&mut *conn).await.on_unique(taken)?, "id")?)
}

/// Runs `update` on `conn`, a write of a row's unique name or path among
/// others; a unique violation is `taken()`, as in [`insert_returning_id`].
pub(super) async fn update_unique<'q>(
    conn: &mut Conn,
    update: Query<'q, Any, AnyArguments<'q>>,
    taken: impl FnOnce() -> Error,
) -> Result<()> {
    update.execute(&mut *conn).await.on_unique(taken)?;
    Ok(())
}

/// Runs `work` as a write on `on` ([`On::write`]) with row `id` of `table`
/// locked first ([`lock_row`]): for a write that reads the row, decides on
/// what it read and writes it back, which a change committed between the
/// read and the write would otherwise undo. `table` is a constant of the
/// calling module, never tenant input.
pub(super) async fn write_locked<T>(
    on: impl Into<On<'_>>,
    table: &'static str,
    id: i64,
    work: impl AsyncFnOnce(&mut Conn) -> Result<T>,
) -> Result<T> {
    on.into()
        .write(async |conn| {
            lock_row(conn, table, id).await?;
            work(conn).await
        })
        .await
}
