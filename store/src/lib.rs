//! play's store: one API over SQLite (the embedded default) and PostgreSQL
//! (several replicas), through sqlx's `Any` driver, and the migrations. The
//! one crate with SQL: it imports the model (`play-model`), never a flow
//! (`play-core` calls it).
//!
//! Invariants every query in this module keeps, so one SQL text serves both
//! backends:
//! - parameters are `$1, $2, ...` in order of first use;
//! - ids and counters are 64-bit integers, flags are integers 0/1
//!   (`flag`/`is_set`), timestamps are fixed-width RFC 3339 text
//!   (`play_model::time`);
//! - every query is scoped by `account_id` where the row has one, so another
//!   account's rows are indistinguishable from missing ones;
//! - stored values are read strictly: a JSON column that does not parse as
//!   what play writes there, or a state column with a word play never
//!   writes, is [`Error::Corrupt`] naming the table, row and column
//!   ([`json_column`], [`text_column`]). Never a default: a reconciler that read a corrupt
//!   spec as an empty one would converge a host to nothing.
//!
//! The shapes these queries share (a write transaction around an `x_in`
//! function, a scoped read of one or all rows, a scoped delete) are written
//! once in `shapes`, and a row is read into its struct with `columns!`
//! and the column readers below.
//!
//! Writes that must be atomic go through `Store::write`, which on SQLite
//! starts the transaction with `BEGIN IMMEDIATE`: the write lock is taken up
//! front, so concurrent writers queue on the busy timeout instead of failing
//! when a deferred transaction tries to upgrade its lock.

/// A struct read from a row, written as its literal: `columns!(row, T {
/// a, b => time, c: expression })`. Each bare field (`a`) is read from the
/// column of its own name (`row.try_get("a")?`), and so is a field with a
/// kind (`b => time`), by the reader of that kind: `time` and `opt_time`
/// ([`time_column`], [`opt_time_column`]), `flag` ([`is_set`]). With the
/// table named, `columns!(row, "table", T { .. })`, the row's `id` is read
/// first and the strict kinds serve too: `json`, `text` and `opt_text`
/// ([`json_column`], [`text_column`], [`opt_text_column`]: a corrupt
/// value names the table, the row and the column). A field with a value
/// is that value. So a column name that is also the field's is written
/// once, and so is the table.
macro_rules! columns {
    ($row:expr, $T:ident { $($field:ident $(: $value:expr)? $(=> $kind:ident)?),* $(,)? }) => {
        $T { $($field: columns!(@field $row, $field $(, $value)? $(=> $kind)?)),* }
    };
    ($row:expr, $table:literal, $T:ident { $($field:ident $(: $value:expr)? $(=> $kind:ident)?),* $(,)? }) => {{
        let id: i64 = sqlx::Row::try_get($row, "id")?;
        $T { $($field: columns!(@field $row, ($table, id), $field $(, $value)? $(=> $kind)?)),* }
    }};
    (@field $row:expr, ($table:literal, $id:ident), $field:ident => json) => {
        $crate::json_column($row, $table, $id, stringify!($field))?
    };
    (@field $row:expr, ($table:literal, $id:ident), $field:ident => text) => {
        $crate::text_column($row, $table, $id, stringify!($field))?
    };
    (@field $row:expr, ($table:literal, $id:ident), $field:ident => opt_text) => {
        $crate::opt_text_column($row, $table, $id, stringify!($field))?
    };
    (@field $row:expr, ($table:literal, $id:ident), $($rest:tt)*) => {
        columns!(@field $row, $($rest)*)
    };
    (@field $row:expr, $field:ident) => {
        sqlx::Row::try_get($row, stringify!($field))?
    };
    (@field $row:expr, $field:ident, $value:expr) => {
        $value
    };
    (@field $row:expr, $field:ident => time) => {
        $crate::time_column($row, stringify!($field))?
    };
    (@field $row:expr, $field:ident => opt_time) => {
        $crate::opt_time_column($row, stringify!($field))?
    };
    (@field $row:expr, $field:ident => flag) => {
        $crate::is_set(sqlx::Row::try_get($row, stringify!($field))?)
    };
}

pub mod accounts;
pub mod applied;
pub mod builds;
pub mod coalesce;
mod columns;
pub mod edges;
pub mod error;
pub mod events;
pub mod fence;
pub mod generated_env;
pub mod heartbeats;
mod hot_conn;
pub mod job_results;
pub mod keys;
pub mod launch_defaults;
pub mod launch_settings;
pub mod leases;
pub mod local_writes;
pub mod master_key;
pub mod names;
pub mod overview;
pub mod playground_detail;
pub mod playground_list;
pub mod playground_status;
pub mod playgrounds;
pub mod playroom_checks;
mod playroom_trust;
pub mod playrooms;
pub mod playspec_files;
pub mod playspecs;
pub mod playzone_access;
pub mod playzone_branches;
pub mod playzone_pulls;
pub mod playzone_ssh;
pub mod playzones;
pub mod power;
pub mod quotas;
pub mod reachability;
pub mod repositories;
pub mod repository_reservations;
pub mod restores;
pub mod rollouts;
pub mod schedules;
pub mod schema;
pub mod scm_deliveries;
pub mod scm_install_states;
pub mod sessions;
mod shapes;
pub mod sign_in_links;
pub mod snapshot;
#[cfg(feature = "testing")]
pub mod testing;
pub use shapes::On;
pub mod sweep;
pub mod template_categories;
pub mod templates;
pub mod trigger_targets;
pub mod triggers;
pub mod wake_bus;
pub mod wakes;
pub mod webhook_deliveries;
pub mod webhook_dispatch;
pub mod webhooks;
mod write_queue;
mod write_shapes;

use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{Any, AnyPool, Executor, Transaction};

pub use columns::{OnUnique, flag, is_set, is_unique_violation};
pub(crate) use columns::{json_column, opt_text_column, opt_time_column, parse_json, text_column, time_column};
pub use error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// The backend `conn` speaks to, from sqlx's name of its driver
    /// (`PostgreSQL`; anything else is SQLite, the only other driver
    /// installed).
    pub fn of(conn: &Conn) -> Backend {
        if conn.backend_name() == "PostgreSQL" { Backend::Postgres } else { Backend::Sqlite }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// A pooled PostgreSQL connection idle this long is tested before use
/// (see `Store::connect`).
pub const TEST_IDLE_AFTER: Duration = Duration::from_secs(1);

/// How many pooled connections SQLite gets on a machine with `cores`
/// cores: two per core, at least 4 and at most 8 (the hot reads' own
/// connection is one more).
///
/// Why not more: sqlx runs each SQLite connection on a thread of its own,
/// and an open connection keeps its schema, its lookaside buffer and that
/// thread's malloc arena resident, about 230 KiB even idle. SQLite has one
/// writer, and a read is CPU work on its connection's thread, so past
/// twice the cores more connections add memory, not throughput: on 2 cores
/// 4 connections deliver webhooks and bring 10,000 Playgrounds to running
/// as fast as 8 did, and an idle `play serve` is 1 MB smaller
/// (BENCHMARKS.md, "Idle memory").
fn sqlite_pool_size(cores: usize) -> u32 {
    u32::try_from(cores.saturating_mul(2)).unwrap_or(u32::MAX).clamp(4, 8)
}

/// A transaction over either backend.
pub type Tx = Transaction<'static, Any>;
/// A connection (or a transaction, through `&mut *tx`) over either backend.
pub type Conn = sqlx::AnyConnection;

#[derive(Clone, Debug)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    reads: Arc<Reads>,
    hot: Arc<hot_conn::HotConnection>,
    local_writes: Arc<local_writes::LocalWrites>,
    writers: Arc<write_queue::WriteQueue>,
    /// Write transactions begun ([`Store::write`]), shared by every clone:
    /// on SQLite each one holds the single writer, so this is the figure a
    /// flood of writes shows in (`play_store_write_transactions_total`).
    writes: Counter,
    /// PostgreSQL's URL, for the one connection that listens for other
    /// replicas' wakes ([`wake_bus`]); `None` on SQLite.
    listen_url: Option<wake_bus::ListenUrl>,
    /// Where commits deliver the wakes their transaction noted
    /// ([`wakes`]); shared by every clone, set once at start-up.
    waker: Arc<OnceLock<Arc<dyn play_model::wake::Waker>>>,
}

/// Hot reads shared by concurrent callers ([`coalesce`]): keyed by
/// (account, id), as the queries are scoped.
#[derive(Debug, Default)]
pub(crate) struct Reads {
    pub playground: coalesce::Coalescer<(i64, i64), play_model::playground::model::Playground>,
    pub playroom: coalesce::Coalescer<(i64, i64), play_model::model::playroom::Playroom>,
    /// Keyed by Playground id.
    pub edge_routes: coalesce::Coalescer<i64, std::collections::BTreeMap<String, play_model::edge::model::RouteRow>>,
    /// Keyed by Playroom id.
    pub edge_status: coalesce::Coalescer<i64, Option<play_model::edge::model::EdgeStatus>>,
}

impl Store {
    /// Connects to `url`: `sqlite://path` (created when missing) or
    /// `postgres://...`.
    pub async fn connect(url: &str) -> Result<Store> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Backend::Postgres
        } else {
            return Err(Error::Internal(format!(
                "unsupported database URL {:?}: use sqlite://PATH or postgres://...",
                redact_url(url)
            )));
        };
        let url = match backend {
            Backend::Sqlite if !url.contains('?') => format!("{url}?mode=rwc"),
            _ => url.to_owned(),
        };
        let options = AnyConnectOptions::from_str(&url)?;
        // sqlx tests a connection on every acquire by default (a round trip
        // to SQLite's worker thread or to PostgreSQL) and again on every
        // release, so a query cost three round trips (issue #16). A
        // connection is tested on release anyway; on acquire only one that
        // sat idle long enough to have been cut (a PostgreSQL restart, a
        // firewall dropping idle flows) is tested again. SQLite's
        // connections are files in this process: nothing cuts them.
        let pool_options = AnyPoolOptions::new().acquire_timeout(Duration::from_secs(10)).test_before_acquire(false);
        let pool = match backend {
            Backend::Sqlite => {
                pool_options
                    .max_connections(sqlite_pool_size(
                        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
                    ))
                    .after_connect(|conn, _meta| {
                        Box::pin(async move {
                            conn.execute(hot_conn::SQLITE_PRAGMAS).await?;
                            conn.execute(wakes::CREATE).await?;
                            Ok(())
                        })
                    })
                    .connect_with(options.clone())
                    .await?
            }
            Backend::Postgres => {
                pool_options
                    .max_connections(16)
                    .after_connect(|conn, _meta| {
                        Box::pin(async move {
                            conn.execute(wakes::CREATE).await?;
                            Ok(())
                        })
                    })
                    .before_acquire(|conn, meta| {
                        Box::pin(async move {
                            if meta.idle_for >= TEST_IDLE_AFTER {
                                sqlx::Connection::ping(conn).await?;
                            }
                            Ok(true)
                        })
                    })
                    .connect_with(options.clone())
                    .await?
            }
        };
        let hot = Arc::new(hot_conn::HotConnection::new(options, backend));
        let listen_url = (backend == Backend::Postgres).then(|| wake_bus::ListenUrl(Arc::from(url.as_str())));
        Ok(Store {
            pool,
            backend,
            reads: Arc::default(),
            hot,
            local_writes: Arc::default(),
            writers: Arc::default(),
            writes: Counter::default(),
            listen_url,
            waker: Arc::default(),
        })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub(crate) fn reads(&self) -> &Reads {
        &self.reads
    }

    /// The counters of this process's writes ([`local_writes`]), shared by
    /// every clone of this store.
    pub fn local_writes(&self) -> &Arc<local_writes::LocalWrites> {
        &self.local_writes
    }

    /// The count of write transactions begun through [`Store::write`] by
    /// this process (every clone shares it); `Metrics::register_store`
    /// exposes it at `/metrics`.
    pub fn write_transactions(&self) -> &Counter {
        &self.writes
    }

    /// Runs a hot read (one statement) on the connection kept for them, or
    /// a pooled one when it is busy ([`hot_conn`]).
    pub(crate) async fn hot_read<T, F>(&self, read: F) -> Result<T>
    where
        F: for<'c> Fn(&'c mut Conn) -> hot_conn::ReadFuture<'c, T>,
    {
        self.hot.read(&self.pool, read).await
    }

    /// This installation's random id (migration 0007): host objects carry
    /// it as `dev.play.installation`.
    pub async fn installation(&self) -> Result<String> {
        Ok(sqlx::query_scalar("SELECT uid FROM installation").fetch_one(&self.pool).await?)
    }

    /// Whether the database answers (used by `/readyz`).
    pub async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Starts a write transaction (see the module doc for why SQLite takes
    /// its write lock up front).
    ///
    /// The `BEGIN` runs in a task of its own, so it completes even when the
    /// caller goes away mid-way (a client disconnecting, a timeout): sqlx's
    /// `begin` is not cancel-safe (launchbadge/sqlx#3932, #3875), and a
    /// begin dropped after `BEGIN` ran but before its `Transaction` existed
    /// returned the connection to the pool inside a transaction nothing
    /// would end (on SQLite holding the write lock: every later write
    /// failed). Run to the end, an unwanted transaction is dropped, which
    /// rolls it back.
    pub async fn write(&self) -> Result<Tx> {
        // Counted as waiting until the lock is taken ([`write_queue`]).
        let _waiting = self.writers.enter();
        self.begin().await
    }

    /// A write transaction that may wait: on SQLite it starts only once no
    /// other writer waits for the lock, so a loop of such transactions (a
    /// read-only key's dry runs, which write and roll back) cannot keep
    /// other tenants' writes waiting for more than the one that holds it
    /// (issue #49, item 13). On PostgreSQL, the same as [`Store::write`].
    pub async fn write_after_others(&self) -> Result<Tx> {
        if self.backend == Backend::Sqlite {
            self.writers.until_clear().await;
        }
        self.begin().await
    }

    /// How many writers wait for the write lock now (tests).
    pub fn writers_waiting(&self) -> usize {
        self.writers.waiting()
    }

    async fn begin(&self) -> Result<Tx> {
        let (pool, backend) = (self.pool.clone(), self.backend);
        let begin = tokio::spawn(async move {
            match backend {
                Backend::Sqlite => pool.begin_with("BEGIN IMMEDIATE").await,
                Backend::Postgres => pool.begin().await,
            }
        });
        match begin.await {
            Ok(tx) => {
                let tx = tx?;
                self.writes.inc();
                Ok(tx)
            }
            Err(e) => Err(Error::Internal(format!("starting a transaction: {e}"))),
        }
    }

    /// A pooled connection for reads.
    pub async fn conn(&self) -> Result<sqlx::pool::PoolConnection<Any>> {
        Ok(self.pool.acquire().await?)
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// A database URL with any password replaced, for logs and errors.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let credentials = &url[scheme_end + 3..at];
            match credentials.find(':') {
                Some(colon) => format!("{}{}:***{}", &url[..scheme_end + 3], &credentials[..colon], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted_from_urls() {
        assert_eq!(redact_url("postgres://play:secret@db:5432/play"), "postgres://play:***@db:5432/play");
        assert_eq!(redact_url("sqlite://./.play/play.db"), "sqlite://./.play/play.db");
    }

    #[test]
    fn sqlite_gets_two_connections_per_core_between_4_and_8() {
        let sizes: Vec<u32> = [1, 2, 3, 4, 64, usize::MAX].into_iter().map(sqlite_pool_size).collect();
        assert_eq!(sizes, [4, 4, 6, 8, 8, 8]);
    }
}
