//! `play restore ARCHIVE`: a backup into an empty data directory (or an
//! empty PostgreSQL database), checked whole before anything lands.
//!
//! Refused, with what to do: a target that holds anything (the data
//! directory may hold only the master key file), an archive that does not
//! read whole or does not match its manifest, a backup of the other kind
//! of store, a schema newer than this binary knows (naming both versions),
//! and a master key other than the one the backup's secrets are sealed
//! with (naming the key file read). An older schema is migrated forward.
//! Afterwards new Playground ids start [`RESTORE_ID_GAP`] above the
//! backup's highest, so no new Playground takes the id (the host objects'
//! label) of one made after the backup.

use std::io::Read;
use std::path::{Path, PathBuf};

use play_model::secrets::MasterKey;
use play_store::{Backend, Store, schema, snapshot};

use crate::backup::{kind_of, sqlite_path};
use crate::manifest::{FORMAT, Manifest, StoreKind};
use crate::{Error, Result, archive, postgres, repositories};

/// How far above the backup's highest Playground id new ones start.
pub const RESTORE_ID_GAP: i64 = 100_000;

/// Where a backup is restored to.
#[derive(Debug, Clone)]
pub struct Target {
    pub database_url: String,
    pub data_dir: PathBuf,
    pub git_root: PathBuf,
    /// The key file the backup's secrets must open with; never created
    /// here.
    pub master_key_file: PathBuf,
    /// How long the sweep quarantines the host objects of Playgrounds made
    /// after the backup before it removes them.
    pub quarantine: std::time::Duration,
}

/// What a restore did.
#[derive(Debug, Clone)]
pub struct Restored {
    pub manifest: Manifest,
    /// The schema after the migrations the restore ran.
    pub schema: i64,
}

/// Restores the archive read from `input` into `target`.
pub async fn restore(
    input: impl Read + Send + 'static,
    target: &Target,
    progress: &(dyn Fn(&str) + Send + Sync),
) -> Result<Restored> {
    let kind = kind_of(&target.database_url)?;
    refuse_non_empty(target, kind).await?;
    std::fs::create_dir_all(&target.data_dir).map_err(Error::io(format!("create {}", target.data_dir.display())))?;
    let staging = tempfile::Builder::new()
        .prefix(".restore-")
        .tempdir_in(&target.data_dir)
        .map_err(Error::io(format!("make a temporary folder in {}", target.data_dir.display())))?;
    progress("archive: reading and checking");
    let dir = staging.path().to_owned();
    let manifest = tokio::task::spawn_blocking(move || archive::extract(input, &dir))
        .await
        .map_err(|e| Error::Tool(format!("the archive's reader stopped: {e}")))??;
    check(&manifest, kind, target)?;
    let store_file = staging.path().join(manifest.store.file());
    if kind == StoreKind::Sqlite {
        snapshot::check_sqlite_file(&store_file).await.map_err(|e| Error::Damaged(e.to_string()))?;
    }

    progress("store: restoring");
    match kind {
        StoreKind::Sqlite => {
            let path = sqlite_path(&target.database_url)
                .ok_or_else(|| Error::Refused("the database URL names no file".into()))?;
            place(&store_file, &path)?;
        }
        StoreKind::Postgres => postgres::restore(&target.database_url, &store_file).await?,
    }
    let store = Store::connect(&target.database_url).await?;
    let restored = store.contents().await?;
    if restored.counts != manifest.counts {
        store.close().await;
        return Err(Error::Damaged(format!(
            "the restored store's rows differ from the manifest's counts: {}",
            differences(&manifest, &restored.counts)
        )));
    }
    store.migrate().await?;
    store.skip_playground_ids(RESTORE_ID_GAP).await?;
    let backup_created_at = play_model::time::from_db(&manifest.created_at)
        .map_err(|e| Error::Damaged(format!("the manifest's created_at does not read: {e}")))?;
    play_store::restores::record(&store, backup_created_at, manifest.last_playground_id, target.quarantine).await?;
    let schema = store.schema().await?.binary;
    store.close().await;

    let staged_repositories = staging.path().join(repositories::PREFIX);
    if staged_repositories.exists() {
        progress("repositories: restoring");
        if target.git_root.exists() {
            // Checked empty above.
            std::fs::remove_dir(&target.git_root)
                .map_err(Error::io(format!("replace {}", target.git_root.display())))?;
        }
        place(&staged_repositories, &target.git_root)?;
    }
    progress("done");
    Ok(Restored { manifest, schema })
}

/// Refuses a target that holds anything but the master key file.
async fn refuse_non_empty(target: &Target, kind: StoreKind) -> Result<()> {
    let key_name = target.master_key_file.file_name();
    let held: Vec<String> = match std::fs::read_dir(&target.data_dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .filter(|e| Some(e.file_name().as_os_str()) != key_name || e.path() != target.master_key_file)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    if !held.is_empty() {
        return Err(Error::Refused(format!(
            "the data directory {} is not empty (it holds {}): restore into a new, empty directory (only the master \
             key file may be there already)",
            target.data_dir.display(),
            held.join(", ")
        )));
    }
    if std::fs::read_dir(&target.git_root).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(Error::Refused(format!(
            "the Git host's folder {} is not empty: restore into a new, empty one",
            target.git_root.display()
        )));
    }
    if let Some(path) = sqlite_path(&target.database_url).filter(|p| p.exists()) {
        return Err(Error::Refused(format!("{} exists: restore into a new database file", path.display())));
    }
    if kind == StoreKind::Postgres {
        let store = Store::connect(&target.database_url).await?;
        let empty = store.is_empty().await;
        store.close().await;
        if !empty? {
            return Err(Error::Refused(format!(
                "the database {} holds tables: restore into a new, empty database (createdb)",
                play_store::redact_url(&target.database_url)
            )));
        }
    }
    Ok(())
}

/// The manifest's checks against this binary and the target.
fn check(manifest: &Manifest, kind: StoreKind, target: &Target) -> Result<()> {
    if manifest.format > FORMAT {
        return Err(Error::Refused(format!(
            "the archive is of format {}, newer than this play binary reads ({FORMAT}): restore it with play {} or \
             newer",
            manifest.format, manifest.play_version
        )));
    }
    if manifest.store != kind {
        return Err(Error::Refused(format!(
            "the backup is of a {} store and restores into {} only: set the database URL (PLAY_DATABASE_URL) to one",
            manifest.store.as_str(),
            manifest.store.as_str()
        )));
    }
    let backend = match kind {
        StoreKind::Sqlite => Backend::Sqlite,
        StoreKind::Postgres => Backend::Postgres,
    };
    let binary = schema::of(backend, &[]).binary;
    if let Some(version) = manifest.schema_version.filter(|v| *v > binary) {
        return Err(Error::Refused(format!(
            "the backup's schema is at migration {version}, newer than this play binary knows (its last migration \
             is {binary}): the backup was taken by play {}; restore it with that version or a newer one",
            manifest.play_version
        )));
    }
    if let Some(expected) = &manifest.key_check {
        let shown = target.master_key_file.display();
        match MasterKey::load(&target.master_key_file).map_err(|e| Error::Refused(e.to_string()))? {
            None => {
                return Err(Error::Refused(format!(
                    "the backup's secrets are sealed with the master key of fingerprint {expected}, and there is no \
                     key file at {shown}: copy the master key file kept with the backup there (or point \
                     PLAY_MASTER_KEY_FILE at it)"
                )));
            }
            Some(key) if key.fingerprint() != *expected => {
                return Err(Error::Refused(format!(
                    "the master key at {shown} (fingerprint {}) is not the one the backup's secrets are sealed with \
                     (fingerprint {expected}): with it no stored secret opens and no token works; use the master \
                     key file kept with the backup",
                    key.fingerprint()
                )));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Moves `from` to `to` (a copy where they are on two file systems).
fn place(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(Error::io(format!("create {}", parent.display())))?;
    }
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    copy_tree(from, to)
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    if from.is_file() {
        std::fs::copy(from, to).map_err(Error::io(format!("copy {} to {}", from.display(), to.display())))?;
        return Ok(());
    }
    std::fs::create_dir_all(to).map_err(Error::io(format!("create {}", to.display())))?;
    for entry in std::fs::read_dir(from).map_err(Error::io(format!("list {}", from.display())))? {
        let entry = entry.map_err(Error::io(format!("list {}", from.display())))?;
        copy_tree(&entry.path(), &to.join(entry.file_name()))?;
    }
    Ok(())
}

/// The tables whose rows differ, as `name: backup N, restored M`.
fn differences(manifest: &Manifest, restored: &std::collections::BTreeMap<String, i64>) -> String {
    let names: std::collections::BTreeSet<&String> = manifest.counts.keys().chain(restored.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| {
            let (a, b) = (manifest.counts.get(name), restored.get(name));
            (a != b).then(|| format!("{name}: backup {a:?}, restored {b:?}"))
        })
        .collect::<Vec<_>>()
        .join("; ")
}
