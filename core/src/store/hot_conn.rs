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
//!   pooled connection: the hot connection never makes anyone wait.

use std::fmt;

use std::future::Future;
use std::pin::Pin;

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

/// See the [module documentation](self).
pub(crate) struct HotConnection {
    options: AnyConnectOptions,
    backend: Backend,
    conn: Mutex<Option<AnyConnection>>,
}

impl fmt::Debug for HotConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HotConnection").field("backend", &self.backend).finish_non_exhaustive()
    }
}

impl HotConnection {
    pub(super) fn new(options: AnyConnectOptions, backend: Backend) -> Self {
        HotConnection { options, backend, conn: Mutex::new(None) }
    }

    async fn connect(&self) -> Result<AnyConnection> {
        let mut conn = self.options.connect().await?;
        if self.backend == Backend::Sqlite {
            conn.execute(SQLITE_PRAGMAS).await?;
        }
        Ok(conn)
    }

    /// Runs `read` on the hot connection if it is free, else on a pooled
    /// one (see the module's invariants).
    pub(crate) async fn read<T, F>(&self, pool: &AnyPool, read: F) -> Result<T>
    where
        F: for<'c> Fn(&'c mut AnyConnection) -> ReadFuture<'c, T>,
    {
        if let Ok(mut slot) = self.conn.try_lock() {
            let conn = match slot.take() {
                Some(conn) => Some(conn),
                None => self.connect().await.ok(),
            };
            if let Some(mut conn) = conn {
                match read(&mut conn).await {
                    // The database failed: the connection is dropped and
                    // the read runs again on the pool, whose error (if
                    // any) is the caller's.
                    Err(Error::Database(_)) => {}
                    // An answer, "not found" included.
                    answer => {
                        *slot = Some(conn);
                        return answer;
                    }
                }
            }
        }
        let mut conn = pool.acquire().await?;
        read(&mut conn).await
    }
}
