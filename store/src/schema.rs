//! The schema's version: the last migration a database holds against the
//! last one this binary knows (issue #53, item 4).
//!
//! Migrations are forward-only and numbered. A database whose schema is
//! newer than the binary (an older binary started after an upgrade, or
//! after a newer replica migrated the shared PostgreSQL database) is
//! refused before anything is read or written: the older binary would not
//! know the columns and rows the newer schema means, and no migration can
//! take the schema back. The refusal names both versions and the way back.
//! A schema older than the binary is migrated forward ([`Store::migrate`]);
//! [`Store::schema`] says what that would run without running it
//! (`play migrate --dry-run`).

use sqlx::Row;
use sqlx::migrate::Migrator;

use crate::{Backend, Error, Result, Store};

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("../migrations/postgres");

pub use play_model::model::schema::{Migration, Schema};

/// [`Error::SchemaNewer`] when the database is newer than this binary.
pub fn refuse_newer(schema: &Schema) -> Result<()> {
    match schema.newer() {
        Some(database) => Err(Error::SchemaNewer { database, binary: schema.binary }),
        None => Ok(()),
    }
}

pub(crate) fn migrator(backend: Backend) -> &'static Migrator {
    match backend {
        Backend::Sqlite => &SQLITE_MIGRATIONS,
        Backend::Postgres => &POSTGRES_MIGRATIONS,
    }
}

/// The schema of a database of `backend` that records `applied`.
pub fn of(backend: Backend, applied: &[i64]) -> Schema {
    let migrations: Vec<Migration> = migrator(backend)
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
        .map(|m| Migration { version: m.version, description: m.description.to_string() })
        .collect();
    let binary = migrations.iter().map(|m| m.version).max().unwrap_or(0);
    let database = applied.iter().copied().max();
    let pending = migrations.into_iter().filter(|m| !applied.contains(&m.version)).collect();
    Schema { binary, database, pending }
}

/// The schema of the database at `url` when it does not exist yet: a
/// `sqlite://PATH[?options]` whose file is missing is a new, empty
/// database, said without creating the file. `None` for a database that
/// exists or is not a file: connect and ask it ([`Store::schema`]).
pub fn of_missing(url: &str) -> Option<Schema> {
    let path = url.strip_prefix("sqlite://")?;
    let file = std::path::Path::new(path.split('?').next().unwrap_or(path));
    (!file.exists()).then(|| of(Backend::Sqlite, &[]))
}

impl Store {
    /// The database's schema against this binary's migrations; reads only.
    pub async fn schema(&self) -> Result<Schema> {
        Ok(of(self.backend, &self.applied_versions().await?))
    }

    /// The versions the database records as applied (none when the
    /// migrations' table does not exist yet).
    async fn applied_versions(&self) -> Result<Vec<i64>> {
        let exists = match self.backend {
            Backend::Sqlite => {
                "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'"
            }
            Backend::Postgres => {
                "SELECT COUNT(*) AS n FROM information_schema.tables \
                 WHERE table_schema = current_schema() AND table_name = '_sqlx_migrations'"
            }
        };
        let n: i64 = sqlx::query(exists).fetch_one(self.pool()).await?.try_get("n")?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let rows = sqlx::query("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(|r| Ok(r.try_get::<i64, _>("version")?)).collect()
    }

    /// Applies pending migrations for this backend. Forward-only: a
    /// database newer than this binary is refused
    /// ([`Error::SchemaNewer`]) before anything runs.
    pub async fn migrate(&self) -> Result<()> {
        refuse_newer(&self.schema().await?)?;
        migrator(self.backend).run(self.pool()).await?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
