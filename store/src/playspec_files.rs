//! A Playspec's mounted files and registry credentials. Both change the
//! Playspec, so both refuse while it is locked and record
//! `playspec.updated`.

use sha2::{Digest, Sha256};
use sqlx::Row;
use sqlx::any::AnyRow;

use super::On;
use super::playspecs::{ensure_unlocked, touch_in};
use super::shapes::{all, one};
use super::write_shapes::{insert_returning_id, update_unique};
use super::{Conn, OnUnique, Store, flag};
use crate::{Error, Result};
use play_model::compose::project_files;
use play_model::model::event::{Acting, Actor};
use play_model::model::playspec::{
    MountedFile, MountedFileChange, NewMountedFile, NewRegistryCredential, RegistryCredential,
};
use play_model::playground::state::DesiredState;
use play_model::secrets::SecretBox;
use play_model::time;

const FILE_COLUMNS: &str =
    "id, name, mount_path, path, target_services, readonly, size, sha256, created_at, updated_at";

fn file_from_row(row: &AnyRow) -> Result<MountedFile> {
    Ok(columns!(
        row,
        "playspec_mounted_files",
        MountedFile {
            id,
            name,
            mount_path,
            path,
            target_services => json,
            readonly => flag,
            size,
            sha256,
            created_at => time,
            updated_at => time,
        }
    ))
}

fn path_taken(path: &str) -> Error {
    Error::field("mount_path", format!("another mounted file already uses {path}"))
}

/// Runs `work`, a change of Playspec `playspec_id`'s mounted files or
/// registry credentials, as a write on `on` (the module's two rules in one
/// place): refused while the Playspec is locked (`ensure_unlocked`, which
/// also locks its row, so the changes of one Playspec run one at a time)
/// and, once `work` succeeded, recorded as `playspec.updated` (`touch_in`)
/// in the same transaction.
async fn write_change<T>(
    on: impl Into<On<'_>>,
    by: Acting,
    playspec_id: i64,
    work: impl AsyncFnOnce(&mut Conn) -> Result<T>,
) -> Result<T> {
    let Acting { account_id, actor } = by;
    on.into()
        .write(async |conn| {
            ensure_unlocked(conn, account_id, playspec_id).await?;
            let out = work(conn).await?;
            touch_in(conn, account_id, playspec_id, actor).await?;
            Ok(out)
        })
        .await
}

pub async fn list_files(on: impl Into<On<'_>>, playspec_id: i64) -> Result<Vec<MountedFile>> {
    let sql = format!("SELECT {FILE_COLUMNS} FROM playspec_mounted_files WHERE playspec_id = $1 ORDER BY id");
    all(on, sqlx::query(&sql).bind(playspec_id), file_from_row).await
}

/// The mounted files of the Playspecs [`super::playspecs::of_running_in`]
/// lists, each with its Playspec's id, in id order.
pub async fn of_running_in(store: &Store, playroom_id: i64) -> Result<Vec<(i64, MountedFile)>> {
    let sql = format!(
        "SELECT playspec_id, {FILE_COLUMNS} FROM playspec_mounted_files WHERE playspec_id IN \
         (SELECT playspec_id FROM playgrounds WHERE playroom_id = $1 AND desired_state = $2) ORDER BY id"
    );
    let query = sqlx::query(&sql).bind(playroom_id).bind(DesiredState::Running.as_str());
    all(store, query, |row| Ok((row.try_get("playspec_id")?, file_from_row(row)?))).await
}

/// A mounted file's content, for the reconciler that writes it to hosts.
pub async fn file_content(store: &Store, playspec_id: i64, file_id: i64) -> Result<Vec<u8>> {
    let query = sqlx::query("SELECT content FROM playspec_mounted_files WHERE id = $1 AND playspec_id = $2")
        .bind(file_id)
        .bind(playspec_id);
    one(store, query, "mounted file", |row| Ok(row.try_get("content")?)).await
}

async fn file_in(conn: &mut Conn, playspec_id: i64, file_id: i64) -> Result<MountedFile> {
    let sql = format!("SELECT {FILE_COLUMNS} FROM playspec_mounted_files WHERE id = $1 AND playspec_id = $2");
    one(conn, sqlx::query(&sql).bind(file_id).bind(playspec_id), "mounted file", file_from_row).await
}

/// Mounted files one Playspec may hold: each becomes a bind mount in
/// every container it targets, so the count is bounded like every other
/// collection the desired state expands (`compose::limits`).
pub const MAX_FILES_PER_PLAYSPEC: i64 = 50;

/// Refuses `path` when another file of the Playspec (not `except`) has the
/// same project path or one that is a folder of the other: a relative
/// source must name exactly one file or one folder.
async fn ensure_path_free(conn: &mut Conn, playspec_id: i64, path: &str, except: Option<i64>) -> Result<()> {
    let query = sqlx::query("SELECT id, path FROM playspec_mounted_files WHERE playspec_id = $1 AND path IS NOT NULL")
        .bind(playspec_id);
    let paths: Vec<(i64, String)> = all(conn, query, |row| Ok((row.try_get("id")?, row.try_get("path")?))).await?;
    for (id, other) in paths {
        if Some(id) != except && project_files::paths_conflict(path, &other) {
            return Err(Error::field(
                "path",
                format!("another mounted file already provides `{other}`; a path names one file or one folder"),
            ));
        }
    }
    Ok(())
}

pub async fn add_file(
    on: impl Into<On<'_>>,
    by: Acting,
    playspec_id: i64,
    file: NewMountedFile,
) -> Result<MountedFile> {
    // The Playspec row is locked: adds to one Playspec run one at a time,
    // so the count below cannot race.
    write_change(on, by, playspec_id, async |conn| {
        let count: i64 = sqlx::query("SELECT COUNT(*) AS n FROM playspec_mounted_files WHERE playspec_id = $1")
            .bind(playspec_id)
            .fetch_one(&mut *conn)
            .await?
            .try_get("n")?;
        if count >= MAX_FILES_PER_PLAYSPEC {
            return Err(Error::field(
                "file",
                format!("a Playspec holds at most {MAX_FILES_PER_PLAYSPEC} mounted files; remove one first"),
            ));
        }
        if let Some(path) = &file.path {
            ensure_path_free(conn, playspec_id, path, None).await?;
        }
        let now = time::to_db(&time::now());
        let size = i64::try_from(file.content.len()).map_err(|_| Error::field("file", "is too large"))?;
        let sha256 = hex::encode(Sha256::digest(&file.content));
        let insert = sqlx::query(
            "INSERT INTO playspec_mounted_files (playspec_id, name, mount_path, path, target_services, readonly, \
         content, size, sha256, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) \
         RETURNING id",
        )
        .bind(playspec_id)
        .bind(&file.name)
        .bind(&file.mount_path)
        .bind(&file.path)
        .bind(serde_json::to_string(&file.target_services).unwrap_or_else(|_| "[]".into()))
        .bind(flag(file.readonly))
        .bind(file.content)
        .bind(size)
        .bind(sha256)
        .bind(&now);
        let id = insert_returning_id(conn, insert, || path_taken(&file.mount_path)).await?;
        file_in(conn, playspec_id, id).await
    })
    .await
}

pub async fn update_file(
    on: impl Into<On<'_>>,
    by: Acting,
    playspec_id: i64,
    file_id: i64,
    change: MountedFileChange,
) -> Result<MountedFile> {
    write_change(on, by, playspec_id, async |conn| {
        let current = file_in(conn, playspec_id, file_id).await?;
        let mount_path = change.mount_path.unwrap_or(current.mount_path);
        let path = change.path.unwrap_or(current.path);
        if let Some(path) = &path {
            ensure_path_free(conn, playspec_id, path, Some(file_id)).await?;
        }
        let update = sqlx::query(
            "UPDATE playspec_mounted_files SET mount_path = $1, target_services = $2, readonly = $3, updated_at = $4, \
         path = $7 WHERE id = $5 AND playspec_id = $6",
        )
        .bind(&mount_path)
        .bind(serde_json::to_string(&change.target_services.unwrap_or(current.target_services)).unwrap_or_default())
        .bind(flag(change.readonly.unwrap_or(current.readonly)))
        .bind(time::to_db(&time::now()))
        .bind(file_id)
        .bind(playspec_id)
        .bind(&path);
        update_unique(conn, update, || path_taken(&mount_path)).await?;
        file_in(conn, playspec_id, file_id).await
    })
    .await
}

pub async fn remove_file(store: &Store, account_id: i64, playspec_id: i64, file_id: i64, actor: Actor) -> Result<()> {
    let sql = "DELETE FROM playspec_mounted_files WHERE id = $1 AND playspec_id = $2";
    remove(store, account_id, playspec_id, sql, file_id, "mounted file", actor).await
}

/// Removes row `id` of Playspec `playspec_id` with `sql` (`DELETE ... WHERE
/// id = $1 AND playspec_id = $2`), when the Playspec is unlocked; `what` is
/// the `NotFound` of a row that is not there.
async fn remove(
    store: &Store,
    account_id: i64,
    playspec_id: i64,
    sql: &'static str,
    id: i64,
    what: &'static str,
    actor: Actor,
) -> Result<()> {
    write_change(store, Acting::new(account_id, actor), playspec_id, async |tx| {
        let removed = sqlx::query(sql).bind(id).bind(playspec_id).execute(&mut *tx).await?;
        if removed.rows_affected() == 0 {
            return Err(Error::NotFound(what));
        }
        Ok(())
    })
    .await
}

fn credential_context(playspec_id: i64, registry_url: &str) -> String {
    format!("playspec:{playspec_id}:registry:{registry_url}")
}

pub async fn list_credentials(on: impl Into<On<'_>>, playspec_id: i64) -> Result<Vec<RegistryCredential>> {
    let query = sqlx::query(
        "SELECT id, registry_type, registry_url, username, created_at FROM playspec_registry_credentials \
         WHERE playspec_id = $1 ORDER BY id",
    )
    .bind(playspec_id);
    all(on, query, |row| {
        Ok(columns!(
            row,
            RegistryCredential {
                id,
                registry_type,
                registry_url,
                username,
                created_at => time,
            }
        ))
    })
    .await
}

/// A credential with its secret opened, for image pulls.
pub async fn credential_secret(store: &Store, secrets: &SecretBox, playspec_id: i64, id: i64) -> Result<String> {
    let query = sqlx::query(
        "SELECT registry_url, secret FROM playspec_registry_credentials WHERE id = $1 AND playspec_id = $2",
    )
    .bind(id)
    .bind(playspec_id);
    one(store, query, "registry credential", |row| {
        let url: String = row.try_get("registry_url")?;
        Ok(secrets.open(&row.try_get::<String, _>("secret")?, &credential_context(playspec_id, &url))?)
    })
    .await
}

/// Adds a registry credential to an unlocked Playspec, its secret sealed
/// (bound to the Playspec and the registry); one credential a registry.
pub async fn add_credential(
    on: impl Into<On<'_>>,
    secrets: &SecretBox,
    account_id: i64,
    playspec_id: i64,
    credential: NewRegistryCredential,
    actor: Actor,
) -> Result<RegistryCredential> {
    let NewRegistryCredential { registry_type, registry_url, username, secret } = credential;
    write_change(on, Acting::new(account_id, actor), playspec_id, async |conn| {
        let now = time::now();
        let inserted = sqlx::query(
            "INSERT INTO playspec_registry_credentials (playspec_id, registry_type, registry_url, username, \
                 secret, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        )
        .bind(playspec_id)
        .bind(&registry_type)
        .bind(&registry_url)
        .bind(&username)
        .bind(secrets.seal(&secret, &credential_context(playspec_id, &registry_url))?)
        .bind(time::to_db(&now))
        .fetch_one(&mut *conn)
        .await;
        let id: i64 = inserted
            .on_unique(|| Error::field("registry_url", format!("a credential for {registry_url} already exists")))?
            .try_get("id")?;
        Ok(RegistryCredential { id, registry_type, registry_url, username, created_at: now })
    })
    .await
}

pub async fn remove_credential(store: &Store, account_id: i64, playspec_id: i64, id: i64, actor: Actor) -> Result<()> {
    let sql = "DELETE FROM playspec_registry_credentials WHERE id = $1 AND playspec_id = $2";
    remove(store, account_id, playspec_id, sql, id, "registry credential", actor).await
}
