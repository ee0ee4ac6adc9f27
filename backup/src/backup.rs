//! `play backup`: one archive of the store, the Git host's repositories
//! and a manifest, taken while `play serve` runs and writes.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use play_store::Store;

use crate::archive::Writer;
use crate::manifest::{FORMAT, Manifest, StoreKind};
use crate::{Error, Result, postgres, repositories};

/// What is backed up.
#[derive(Debug, Clone)]
pub struct Source {
    pub database_url: String,
    /// play's data directory: the snapshot and the staged repositories are
    /// made in a temporary folder there (beside the repositories, so they
    /// are staged by hard links), removed when done.
    pub data_dir: PathBuf,
    /// The Git host's root (`<data dir>/repositories` by default).
    pub git_root: PathBuf,
}

/// Where the archive goes.
#[derive(Debug, Clone)]
pub enum Output {
    /// A file that must not exist yet; written under a temporary name
    /// beside it and renamed when complete.
    File(PathBuf),
    /// Standard output (`--output -`).
    Stdout,
}

/// Takes a backup of `source` into `output`; `progress` hears each step
/// (for a line on a terminal). Answers the manifest written.
pub async fn backup(source: &Source, output: &Output, progress: &(dyn Fn(&str) + Send + Sync)) -> Result<Manifest> {
    if let Output::File(path) = output
        && path.exists()
    {
        return Err(Error::Refused(format!("{} exists: name a new file for the backup", path.display())));
    }
    let kind = kind_of(&source.database_url)?;
    if let Some(path) = sqlite_path(&source.database_url)
        && !path.exists()
    {
        return Err(Error::Refused(format!("there is no database at {}: nothing to back up", path.display())));
    }
    std::fs::create_dir_all(&source.data_dir).map_err(Error::io(format!("create {}", source.data_dir.display())))?;
    let staging = tempfile::Builder::new()
        .prefix(".backup-")
        .tempdir_in(&source.data_dir)
        .map_err(Error::io(format!("make a temporary folder in {}", source.data_dir.display())))?;
    let store_file = staging.path().join("store");
    progress("store: taking a snapshot");
    let created_at = play_model::time::to_db(&play_model::time::now());
    let store = Store::connect(&source.database_url).await?;
    let contents = match kind {
        StoreKind::Sqlite => store.snapshot_sqlite_into(&store_file).await.map_err(Error::from),
        StoreKind::Postgres => dump_postgres(&store, &source.database_url, &store_file).await,
    };
    store.close().await;
    let contents = contents?;
    progress(&format!("store: {} bytes", size(&store_file)));

    let manifest = Manifest {
        format: FORMAT,
        play_version: env!("CARGO_PKG_VERSION").to_owned(),
        schema_version: contents.schema,
        store: kind,
        installation: contents.installation,
        created_at,
        key_check: contents.key_fingerprint,
        last_playground_id: contents.last_playground_id,
        counts: contents.counts,
        files: Default::default(),
    };
    let git_root = source.git_root.clone();
    let output = output.clone();
    let report = |line: String| progress(&line);
    let (lines_tx, mut lines_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let writing = tokio::task::spawn_blocking(move || {
        let staged = repositories::stage(&git_root, &staging.path().join(repositories::PREFIX))?;
        let _ = lines_tx.send(format!("repositories: {} files", staged.len()));
        let written = write(
            &output,
            |writer| {
                writer.add_file(kind.file(), &store_file)?;
                for (i, (name, path)) in staged.iter().enumerate() {
                    writer.add_file(name, path)?;
                    if (i + 1) % 1000 == 0 {
                        let _ = lines_tx.send(format!("repositories: {} of {} files written", i + 1, staged.len()));
                    }
                }
                Ok(())
            },
            manifest,
        );
        drop(staging);
        written
    });
    let written = async {
        while let Some(line) = lines_rx.recv().await {
            report(line);
        }
        writing.await.map_err(|e| Error::Tool(format!("the archive's writer stopped: {e}")))?
    }
    .await?;
    progress("done");
    Ok(written)
}

/// Before a binary migrates an older schema (issue #53, item 4): a backup
/// into `dir`, named for the two schema versions and the time. Nothing
/// (`None`) for a new database, one at this binary's schema, or one newer
/// than it (which the migration then refuses).
pub async fn before_upgrade(source: &Source, dir: &Path) -> Result<Option<PathBuf>> {
    if sqlite_path(&source.database_url).is_some_and(|path| !path.exists()) {
        return Ok(None);
    }
    let store = Store::connect(&source.database_url).await?;
    let schema = store.schema().await;
    store.close().await;
    let schema = schema?;
    let Some(from) = schema.database.filter(|_| !schema.pending.is_empty() && schema.newer().is_none()) else {
        return Ok(None);
    };
    std::fs::create_dir_all(dir).map_err(Error::io(format!("create {}", dir.display())))?;
    let time = play_model::time::now().format("%Y%m%dT%H%M%SZ");
    let path = dir.join(format!("play-before-migration-{from:04}-to-{:04}-{time}.tar.zst", schema.binary));
    backup(source, &Output::File(path.clone()), &|_| {}).await?;
    Ok(Some(path))
}

/// `pg_dump` of the store as of a snapshot it exported, into `file`: what
/// the snapshot holds.
async fn dump_postgres(store: &Store, url: &str, file: &Path) -> Result<play_store::snapshot::Contents> {
    let exported = store.export_snapshot().await?;
    let dumped = postgres::dump(url, &exported.id, file).await;
    let contents = exported.contents.clone();
    exported.finish().await?;
    dumped.map(|()| contents)
}

/// Writes the archive to `output` with `fill`, then `manifest`.
fn write(
    output: &Output,
    fill: impl FnOnce(&mut Writer<Box<dyn Write>>) -> Result<()>,
    manifest: Manifest,
) -> Result<Manifest> {
    match output {
        Output::Stdout => {
            let mut writer = Writer::new(Box::new(std::io::stdout().lock()) as Box<dyn Write>)?;
            fill(&mut writer)?;
            Ok(writer.finish(manifest)?.1)
        }
        Output::File(path) => {
            let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let partial = tempfile::Builder::new()
                .prefix(".play-backup-")
                .suffix(".partial")
                .tempfile_in(dir)
                .map_err(Error::io(format!("create a file in {}", dir.display())))?;
            let file: File = partial.as_file().try_clone().map_err(Error::io("open the partial archive"))?;
            let mut writer = Writer::new(Box::new(std::io::BufWriter::new(file)) as Box<dyn Write>)?;
            fill(&mut writer)?;
            let (_, manifest) = writer.finish(manifest)?;
            partial.as_file().sync_all().map_err(Error::io("sync the archive"))?;
            // `persist_noclobber`: a file that appeared under the name
            // meanwhile is kept, and this backup reported as failed.
            partial
                .persist_noclobber(path)
                .map_err(|e| Error::Io { context: format!("name the archive {}", path.display()), source: e.error })?;
            Ok(manifest)
        }
    }
}

/// The store behind `url`.
pub(crate) fn kind_of(url: &str) -> Result<StoreKind> {
    if url.starts_with("sqlite:") {
        Ok(StoreKind::Sqlite)
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        Ok(StoreKind::Postgres)
    } else {
        Err(Error::Refused(format!(
            "unsupported database URL {}: use sqlite://PATH or postgres://...",
            play_store::redact_url(url)
        )))
    }
}

/// The file of a `sqlite://PATH[?options]` URL.
pub(crate) fn sqlite_path(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    Some(PathBuf::from(rest.split('?').next().unwrap_or(rest)))
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}
