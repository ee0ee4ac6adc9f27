//! One connection kept out of the pool for the coalesced hot reads
//! ([`super::coalesce`]): sqlx's pool tests every connection it takes back
//! (a round trip to SQLite's worker thread or a PostgreSQL `Sync`), so a
//! pooled read cost two round trips where one does (issue #16).
//!
//! Invariants:
//! - the connection only ever serves single-statement reads in autocommit,
//!   so each sees everything committed before it started, as a pooled
//!   read does;
//! - it is moved out while a read runs and put back only when the read
//!   finished: a read cancelled mid-way (its caller went away) drops the
//!   connection with it, so none is reused in an unknown protocol state;
//! - a read that fails on it with a database error is run again on a
//!   pooled connection and the connection is dropped (made anew on the next read): one cut while idle
//!   (a PostgreSQL restart) costs a retry, never an error;
//! - when the connection is busy (another key's read), a read takes a
//!   pooled connection: the hot connection never makes anyone wait;
//! - after a failed connect, reads use the pool for [`CONNECT_BACKOFF`]
//!   before the next attempt: while the database refuses connections
//!   (PostgreSQL at `max_connections`, a restart), a read costs one
//!   attempt a period, not one each.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use sqlx::AnyConnection;
use sqlx::any::AnyConnectOptions;
use sqlx::{AnyPool, ConnectOptions, Executor};
use tokio::sync::Mutex;

use super::Backend;
use crate::{Error, Result};

/// A read's future, borrowing its connection.
pub(crate) type ReadFuture<'c, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'c>>;

/// SQLite's connection settings, for the pool's connections and this one.
pub(super) const SQLITE_PRAGMAS: &str =
    "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000; PRAGMA synchronous = NORMAL;";

/// How long reads use the pool after a failed connect.
pub(crate) const CONNECT_BACKOFF: Duration = Duration::from_secs(1);

/// See the [module documentation](self).
pub(crate) struct HotConnection {
    options: AnyConnectOptions,
    backend: Backend,
    slot: Mutex<Slot>,
}

/// The connection, when one is made and idle; when none is, the earliest
/// time to try again.
#[derive(Default)]
struct Slot {
    conn: Option<AnyConnection>,
    retry_at: Option<Instant>,
    /// Connects attempted (for the tests).
    attempts: u64,
}

impl fmt::Debug for HotConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HotConnection").field("backend", &self.backend).finish_non_exhaustive()
    }
}

impl HotConnection {
    pub(super) fn new(options: AnyConnectOptions, backend: Backend) -> Self {
        HotConnection { options, backend, slot: Mutex::new(Slot::default()) }
    }

    async fn connect(&self) -> Result<AnyConnection> {
        let mut conn = self.options.connect().await?;
        if self.backend == Backend::Sqlite {
            conn.execute(SQLITE_PRAGMAS).await?;
        }
        Ok(conn)
    }

    /// The idle connection, or a new one unless a connect failed less than
    /// [`CONNECT_BACKOFF`] ago.
    async fn take_or_connect(&self, slot: &mut Slot) -> Option<AnyConnection> {
        if let Some(conn) = slot.conn.take() {
            return Some(conn);
        }
        if slot.retry_at.is_some_and(|at| Instant::now() < at) {
            return None;
        }
        slot.attempts += 1;
        match self.connect().await {
            Ok(conn) => {
                slot.retry_at = None;
                Some(conn)
            }
            Err(_) => {
                slot.retry_at = Some(Instant::now() + CONNECT_BACKOFF);
                None
            }
        }
    }

    /// Runs `read` on the hot connection if it is free, else on a pooled
    /// one (see the module's invariants).
    pub(crate) async fn read<T, F>(&self, pool: &AnyPool, read: F) -> Result<T>
    where
        F: for<'c> Fn(&'c mut AnyConnection) -> ReadFuture<'c, T>,
    {
        if let Ok(mut slot) = self.slot.try_lock()
            && let Some(mut conn) = self.take_or_connect(&mut slot).await
        {
            match read(&mut conn).await {
                // The database failed: the connection is dropped and the
                // read runs again on the pool, whose error (if any) is the
                // caller's.
                Err(Error::Database(_)) => {}
                // An answer, "not found" included.
                answer => {
                    slot.conn = Some(conn);
                    return answer;
                }
            }
        }
        let mut conn = pool.acquire().await?;
        read(&mut conn).await
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    async fn select_one(conn: &mut AnyConnection) -> Result<i64> {
        Ok(sqlx::query_scalar::<_, i64>("SELECT 1").fetch_one(conn).await?)
    }

    /// While connects fail, reads are answered by the pool and a connect
    /// is attempted once per back-off period, not once per read.
    #[tokio::test]
    async fn a_failed_connect_is_retried_after_the_back_off_not_on_every_read() {
        let t = crate::testing::store().await;
        let dir = tempfile::tempdir().expect("a temporary directory");
        // A database file in a directory that does not exist, read-only:
        // SQLite cannot open it.
        let missing = dir.path().join("missing").join("play.db");
        let options = AnyConnectOptions::from_str(&format!("sqlite://{}?mode=ro", missing.display())).expect("options");
        let hot = HotConnection::new(options, Backend::Sqlite);
        for _ in 0..50 {
            let one = hot.read(t.store.pool(), |conn| Box::pin(select_one(conn))).await.expect("the pool answers");
            assert_eq!(one, 1);
        }
        assert_eq!(hot.slot.lock().await.attempts, 1, "one connect attempt per back-off period");
        hot.slot.lock().await.retry_at = Some(Instant::now());
        hot.read(t.store.pool(), |conn| Box::pin(select_one(conn))).await.expect("the pool answers");
        assert_eq!(hot.slot.lock().await.attempts, 2, "tried again once the period is over");
    }
}
