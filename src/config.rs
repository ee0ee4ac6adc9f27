//! Resolved settings: the data directory, the database and the master key.

use std::path::PathBuf;

use anyhow::Context;
use play_store::schema;
use play_store::{Store, redact_url};

use crate::args::Common;

#[derive(Debug)]
pub struct Settings {
    pub data_dir: PathBuf,
    pub database_url: String,
    pub master_key_file: PathBuf,
}

impl Settings {
    pub fn resolve(common: &Common) -> anyhow::Result<Settings> {
        let data_dir = common.data_dir.clone();
        let database_url = match &common.database_url {
            Some(url) => url.clone(),
            None => format!("sqlite://{}", data_dir.join("play.db").display()),
        };
        let master_key_file = common.master_key_file.clone().unwrap_or_else(|| data_dir.join("master.key"));
        Ok(Settings { data_dir, database_url, master_key_file })
    }

    /// Where `play backup` and `play restore` find play's data.
    pub fn paths(&self) -> play_backup::cli::Paths {
        let (data_dir, database_url) = (self.data_dir.clone(), self.database_url.clone());
        play_backup::cli::Paths { data_dir, database_url, master_key_file: self.master_key_file.clone() }
    }

    /// Connects to the database and applies migrations.
    pub async fn open_store(&self) -> anyhow::Result<Store> {
        if self.database_url.starts_with("sqlite:") {
            std::fs::create_dir_all(&self.data_dir)
                .with_context(|| format!("cannot create data directory {}", self.data_dir.display()))?;
        }
        let store = self.connect_store().await?;
        store.migrate().await.context("cannot apply migrations")?;
        Ok(store)
    }

    /// Connects to the database without migrating it.
    async fn connect_store(&self) -> anyhow::Result<Store> {
        Store::connect(&self.database_url)
            .await
            .with_context(|| format!("cannot open database {}", redact_url(&self.database_url)))
    }
}

/// `play migrate --dry-run`: prints the database's schema version against
/// this binary's and each migration that would run, one a line, on
/// standard output; changes nothing (a SQLite file that does not exist is
/// not created: `schema::of_missing`). A database newer than the binary is refused as
/// `play migrate` refuses it.
pub async fn dry_run_migrations(settings: &Settings) -> anyhow::Result<()> {
    let schema = match schema::of_missing(&settings.database_url) {
        Some(schema) => schema,
        None => {
            let store = settings.connect_store().await?;
            let schema = store.schema().await;
            store.close().await;
            schema?
        }
    };
    schema::refuse_newer(&schema)?;
    let database = schema.database.map_or_else(|| "none (a new database)".to_owned(), |v| v.to_string());
    println!("schema: database {database}, this binary {}", schema.binary);
    if schema.pending.is_empty() {
        println!("nothing to run");
    }
    for migration in &schema.pending {
        println!("would run {:04} {}", migration.version, migration.description);
    }
    Ok(())
}
