//! A backup checked as a restore would check it, without a target: the
//! archive read whole against its checksums, then the store's file opened
//! (SQLite: `PRAGMA integrity_check` and every table's rows against the
//! manifest's counts; PostgreSQL: `pg_restore --list`, which reads the
//! dump's table of contents whole).

use std::path::Path;

use play_store::snapshot;

use crate::manifest::{Manifest, StoreKind};
use crate::{Error, Result, archive, postgres};

/// Checks the archive at `path`; `scratch` is a folder for its files
/// (emptied by the caller). Answers its manifest.
pub async fn verify(path: &Path, scratch: &Path) -> Result<Manifest> {
    let file = std::fs::File::open(path).map_err(Error::io(format!("open {}", path.display())))?;
    let dir = scratch.to_owned();
    let manifest = tokio::task::spawn_blocking(move || archive::extract(file, &dir))
        .await
        .map_err(|e| Error::Tool(format!("the archive's reader stopped: {e}")))??;
    let store_file = scratch.join(manifest.store.file());
    match manifest.store {
        StoreKind::Sqlite => {
            snapshot::check_sqlite_file(&store_file).await.map_err(|e| Error::Damaged(e.to_string()))?;
            let contents = snapshot::contents_of_sqlite_file(&store_file).await?;
            if contents.counts != manifest.counts {
                return Err(Error::Damaged("the store's rows differ from the manifest's counts".into()));
            }
        }
        StoreKind::Postgres => postgres::list(&store_file).await?,
    }
    Ok(manifest)
}
