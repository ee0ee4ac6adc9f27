//! What a backup reads of the store (issue #53): one consistent snapshot
//! of the database, taken while play keeps writing, and what the snapshot
//! holds (schema version, installation, master key fingerprint, the row
//! count of every table) read from that same snapshot, never from the live
//! database a moment later.
//!
//! - SQLite: `VACUUM INTO` writes a copy of the database in one read
//!   transaction (writers go on beside it, in WAL mode); the counts are read
//!   from the copy.
//! - PostgreSQL: a `REPEATABLE READ` transaction exports its snapshot
//!   ([`Exported::id`]) for `pg_dump --snapshot` and reads the counts in it,
//!   so the dump and the counts see the same rows.
//!
//! The table names counted come from the database's own catalog, never
//! from input.

use std::path::Path;

use sqlx::AnyConnection;
use sqlx::{Connection, Row};

use crate::{Backend, Error, Result, Store};

pub use play_model::model::snapshot::Contents;

/// A PostgreSQL snapshot held open for `pg_dump --snapshot`: valid until
/// [`Exported::finish`] (or the drop of this value, which rolls back).
#[derive(Debug)]
pub struct Exported {
    tx: sqlx::Transaction<'static, sqlx::Any>,
    /// The id to pass to `pg_dump --snapshot`.
    pub id: String,
    /// What the snapshot holds.
    pub contents: Contents,
}

impl Exported {
    /// Ends the snapshot's transaction (it only read).
    pub async fn finish(self) -> Result<()> {
        self.tx.rollback().await?;
        Ok(())
    }
}

impl Store {
    /// SQLite: writes a consistent copy of the database to `path` (which
    /// must not exist) and reads what it holds from the copy.
    pub async fn snapshot_sqlite_into(&self, path: &Path) -> Result<Contents> {
        if self.backend != Backend::Sqlite {
            return Err(Error::Internal("a file snapshot is taken of SQLite only".into()));
        }
        let target = path.to_str().ok_or_else(|| Error::Internal(format!("{} is not UTF-8", path.display())))?;
        sqlx::query("VACUUM INTO $1").bind(target).execute(self.pool()).await?;
        contents_of_sqlite_file(path).await
    }

    /// PostgreSQL: opens a read-only `REPEATABLE READ` transaction, exports
    /// its snapshot and reads what it holds.
    pub async fn export_snapshot(&self) -> Result<Exported> {
        if self.backend != Backend::Postgres {
            return Err(Error::Internal("an exported snapshot is taken of PostgreSQL only".into()));
        }
        let mut tx = self.pool().begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY").execute(&mut *tx).await?;
        let id: String = sqlx::query("SELECT pg_export_snapshot() AS id").fetch_one(&mut *tx).await?.try_get("id")?;
        let contents = contents(&mut tx, Backend::Postgres).await?;
        Ok(Exported { tx, id, contents })
    }

    /// What the live database holds now (for a database restored from a
    /// backup: compared with the backup's manifest).
    pub async fn contents(&self) -> Result<Contents> {
        let mut conn = self.pool().acquire().await?;
        contents(&mut conn, self.backend).await
    }

    /// Whether the database holds no table at all: the only database a
    /// restore writes into.
    pub async fn is_empty(&self) -> Result<bool> {
        let mut conn = self.pool().acquire().await?;
        Ok(tables(&mut conn, self.backend).await?.is_empty())
    }
}

impl Store {
    /// After a restore: the next Playground ids start `gap` above the
    /// highest the backup knew. Playgrounds made after the backup still
    /// have their containers on the hosts, labelled with their ids; a new
    /// Playground must never take one of those ids, or its passes would
    /// judge those containers as its own.
    pub async fn skip_playground_ids(&self, gap: i64) -> Result<()> {
        let mut tx = self.write().await?;
        match self.backend {
            Backend::Sqlite => {
                let next = "MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'playgrounds'), 0), \
                            COALESCE((SELECT MAX(id) FROM playgrounds), 0)) + $1";
                let done = sqlx::query(&format!("UPDATE sqlite_sequence SET seq = {next} WHERE name = 'playgrounds'"))
                    .bind(gap)
                    .execute(&mut *tx)
                    .await?;
                if done.rows_affected() == 0 {
                    sqlx::query(&format!("INSERT INTO sqlite_sequence (name, seq) VALUES ('playgrounds', {next})"))
                        .bind(gap)
                        .execute(&mut *tx)
                        .await?;
                }
            }
            Backend::Postgres => {
                sqlx::query(
                    "SELECT setval(pg_get_serial_sequence('playgrounds', 'id'), \
                     GREATEST((SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM playgrounds_id_seq), \
                              (SELECT COALESCE(MAX(id), 0) FROM playgrounds)) + $1)",
                )
                .bind(gap)
                .execute(&mut *tx)
                .await?;
            }
        }
        self.commit(tx).await
    }
}

/// What the SQLite database file at `path` holds, read through a
/// connection of its own that opens it read-only.
pub async fn contents_of_sqlite_file(path: &Path) -> Result<Contents> {
    let mut conn = open_read_only(path).await?;
    let contents = contents(&mut conn, Backend::Sqlite).await;
    conn.close().await?;
    contents
}

/// `PRAGMA integrity_check` of the SQLite database file at `path`: `Ok`
/// when SQLite finds it whole, else what it reports.
pub async fn check_sqlite_file(path: &Path) -> Result<()> {
    let mut conn = open_read_only(path).await?;
    let rows = sqlx::query("PRAGMA integrity_check").fetch_all(&mut conn).await?;
    conn.close().await?;
    let report: Vec<String> = rows.iter().map(|r| r.try_get::<String, _>(0)).collect::<std::result::Result<_, _>>()?;
    if report == ["ok"] { Ok(()) } else { Err(Error::Internal(format!("integrity check: {}", report.join("; ")))) }
}

/// A connection of its own to the SQLite file at `path`, read-only.
async fn open_read_only(path: &Path) -> Result<AnyConnection> {
    // Idempotent; a process that has not connected a store yet (`play
    // restore`) has no driver installed otherwise.
    sqlx::any::install_default_drivers();
    Ok(AnyConnection::connect(&format!("sqlite://{}?mode=ro", path.display())).await?)
}

async fn contents(conn: &mut AnyConnection, backend: Backend) -> Result<Contents> {
    let tables = tables(conn, backend).await?;
    let mut counts = std::collections::BTreeMap::new();
    for table in &tables {
        // The name comes from the catalog; quoted as an identifier.
        let query = format!("SELECT COUNT(*) AS n FROM \"{}\"", table.replace('"', "\"\""));
        let n: i64 = sqlx::query(&query).fetch_one(&mut *conn).await?.try_get("n")?;
        counts.insert(table.clone(), n);
    }
    let has = |name: &str| tables.iter().any(|t| t == name);
    let schema = if has("_sqlx_migrations") {
        sqlx::query("SELECT MAX(version) AS v FROM _sqlx_migrations WHERE success")
            .fetch_one(&mut *conn)
            .await?
            .try_get::<Option<i64>, _>("v")?
    } else {
        None
    };
    let installation = if has("installation") {
        sqlx::query("SELECT uid FROM installation").fetch_optional(&mut *conn).await?.map(|r| r.try_get("uid"))
    } else {
        None
    };
    let key_fingerprint = if has("master_key") {
        sqlx::query("SELECT fingerprint FROM master_key WHERE id = 1")
            .fetch_optional(&mut *conn)
            .await?
            .map(|r| r.try_get("fingerprint"))
            .transpose()?
    } else {
        None
    };
    let last_playground_id = if has("playgrounds") {
        sqlx::query("SELECT COALESCE(MAX(id), 0) AS id FROM playgrounds").fetch_one(&mut *conn).await?.try_get("id")?
    } else {
        0
    };
    let installation = installation.transpose()?.unwrap_or_default();
    Ok(Contents { schema, installation, key_fingerprint, last_playground_id, counts })
}

/// The database's tables, by name.
async fn tables(conn: &mut AnyConnection, backend: Backend) -> Result<Vec<String>> {
    let query = match backend {
        Backend::Sqlite => {
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        }
        Backend::Postgres => {
            "SELECT table_name::text AS name FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name"
        }
    };
    let rows = sqlx::query(query).fetch_all(&mut *conn).await?;
    rows.iter().map(|r| Ok(r.try_get::<String, _>("name")?)).collect()
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;
