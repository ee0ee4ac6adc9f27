//! Playzones: the repositories Playspecs build from. Their branch index
//! and the sync records that keep it are [`super::playzone_branches`]'s,
//! re-exported here.
//!
//! The access token is stored sealed (`SecretBox`, bound to
//! `playzone:<id>:credentials`); [`Playzone`] has no field for it, and only
//! [`access`](super::playzone_access::access) opens it, to build the one-call
//! [`RepositoryAccess`](play_model::repository::RepositoryAccess) of a gateway
//! call.
//!
//! `generation` counts the changes that ask for a sync (create, a new URL,
//! token or default branch, `POST sync`); a sync pass records the
//! generation it started from in `synced_generation`, so a change made
//! during a pass is synced by the next one. The sync loop's writes are
//! fenced by its lease ([`record_sync`], [`record_sync_error`]).

use sqlx::Row;
use sqlx::any::AnyRow;

use super::On;
use super::playzone_branches;
use super::quotas;
use super::shapes::{all_of, column, delete_owned, one_in};
use super::write_shapes::{insert_returning_id, set_pair_by_id, write_locked};
use super::{Conn, OnUnique, Store, flag, is_set};
use super::{events, wakes};
use crate::{Error, Result};
use play_model::model::event::{Acting, Actor, NewEvent};
use play_model::model::quota::{QuotaLimits, Resource};
use play_model::playzone::model::Playzone;
use play_model::playzone::{Changes, Status};
use play_model::repository::ssh::is_ssh_url;
use play_model::secrets::SecretBox;
use play_model::time;
use play_model::wake::Wake;

pub use super::playzone_branches::{branch_commit, branches, record_sync, record_sync_error};

const COLUMNS: &str = "id, account_id, name, scm_url, private, credentials IS NOT NULL AS has_credentials, \
    ssh_public_key, ssh_host_key, ssh_host_key_pinned_at, \
    repository_id IS NOT NULL AS attached, default_branch, default_branch_pinned, auto_created, status, \
    status_message, compose_file, compose_commit, \
    generation, synced_generation, last_synced_at, last_sync_attempt_at, created_at, updated_at";

fn from_row(row: &AnyRow) -> Result<Playzone> {
    let id: i64 = row.try_get("id")?;
    let status = |text: String| {
        let reason = format!("unknown status {text:?}");
        Status::parse(&text).ok_or(Error::Corrupt { table: "playzones", id, column: "status", reason })
    };
    Ok(columns!(
        row,
        Playzone {
            id,
            account_id,
            name,
            scm_url,
            private => flag,
            has_credentials: bool_column(row, "has_credentials")?,
            ssh_public_key,
            ssh_host_key,
            ssh_host_key_pinned_at => opt_time,
            attached: bool_column(row, "attached")?,
            default_branch,
            default_branch_pinned => flag,
            auto_created => flag,
            status: status(row.try_get("status")?)?,
            status_message,
            compose_file,
            compose_commit,
            generation,
            synced_generation,
            last_synced_at => opt_time,
            last_sync_attempt_at => opt_time,
            created_at => time,
            updated_at => time,
        }
    ))
}

/// `x IS NOT NULL` is an integer on SQLite and a boolean on PostgreSQL.
fn bool_column(row: &AnyRow, column: &str) -> Result<bool> {
    match row.try_get::<bool, _>(column) {
        Ok(value) => Ok(value),
        Err(_) => Ok(is_set(row.try_get::<i64, _>(column)?)),
    }
}

pub(super) fn token_context(id: i64) -> String {
    format!("playzone:{id}:credentials")
}

fn name_taken(name: &str) -> Error {
    Error::field("playzone.name", format!("a Playzone named {name:?} already exists"))
}

/// Creates a Playzone from validated changes, which must carry `name` and
/// `scm_url`; `secrets` seals the token, if any (`None`: a Playzone that
/// holds none). Records `playzone.created`.
pub async fn create(
    on: impl Into<On<'_>>,
    secrets: Option<&SecretBox>,
    by: Acting,
    changes: Changes,
    auto_created: bool,
    limits: &QuotaLimits,
) -> Result<Playzone> {
    let Acting { account_id, actor } = by;
    on.into()
        .write(async |conn| {
            let missing = || Error::Internal("playzone create without name or scm_url".into());
            let name = changes.name.clone().ok_or_else(missing)?;
            let scm_url = changes.scm_url.clone().ok_or_else(missing)?;
            quotas::check(conn, account_id, Resource::Playzones, limits).await?;
            let now = time::to_db(&time::now());
            let default_branch = changes.default_branch.clone().flatten();
            let insert = sqlx::query(
                "INSERT INTO playzones (account_id, name, scm_url, private, default_branch, default_branch_pinned, \
         auto_created, status, generation, synced_generation, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $9, 1, 0, $8, $8) RETURNING id",
            )
            .bind(account_id)
            .bind(&name)
            .bind(&scm_url)
            .bind(flag(changes.private.unwrap_or(false)))
            .bind(&default_branch)
            .bind(flag(default_branch.is_some()))
            .bind(flag(auto_created))
            .bind(&now)
            .bind(Status::Pending.as_str());
            let id = insert_returning_id(conn, insert, || name_taken(&name)).await?;
            if let (Some(Some(token)), Some(secrets)) = (&changes.credentials, secrets) {
                set_token(conn, secrets, id, Some(token), &scm_url).await?;
            }
            let metadata = serde_json::json!({"name": name, "scm_url": scm_url, "auto_created": auto_created});
            events::record(conn, NewEvent::new(account_id, "playzone", id, "created").actor(actor).metadata(metadata))
                .await?;
            wakes::note(conn, Wake::Playzone(id.into())).await?;
            get(&mut *conn, account_id, id).await
        })
        .await
}

/// Creates an `auto_created` Playzone for a Compose file's repository
/// (Launch, Playspecs): public, without a token.
pub async fn create_auto(store: &Store, by: Acting, changes: Changes, limits: &QuotaLimits) -> Result<Playzone> {
    let changes = Changes { credentials: None, private: Some(false), ..changes };
    create(store, None, by, changes, true, limits).await
}

/// Stores the credentials of a Playzone on `scm_url`: a token, or for an
/// ssh URL a deploy key, whose public half is kept beside it to be shown.
async fn set_token(conn: &mut Conn, secrets: &SecretBox, id: i64, token: Option<&str>, scm_url: &str) -> Result<()> {
    let public = token.filter(|_| is_ssh_url(scm_url)).and_then(play_model::playzone::ssh::public_half);
    write_key(conn, secrets, id, token, public.as_deref()).await
}

/// Seals `private` into `credentials` and keeps `public` beside it (both
/// `None`: removed).
pub(super) async fn write_key(
    conn: &mut Conn,
    secrets: &SecretBox,
    id: i64,
    private: Option<&str>,
    public: Option<&str>,
) -> Result<()> {
    let sealed = private.map(|k| secrets.seal(k, &token_context(id))).transpose()?;
    let sql = "UPDATE playzones SET credentials = $1, ssh_public_key = $2 WHERE id = $3";
    set_pair_by_id(conn, sql, (sealed, public), id).await
}

/// Pins `pin` as Playzone `id`'s host key, or forgets the pin (`None`:
/// its URL moved to another host, or the owner asked; the next contact
/// pins what it sees).
async fn set_pin_in(conn: &mut Conn, id: i64, pin: Option<&str>) -> Result<()> {
    let at = pin.map(|_| time::to_db(&time::now()));
    let sql = "UPDATE playzones SET ssh_host_key = $1, ssh_host_key_pinned_at = $2 WHERE id = $3";
    set_pair_by_id(conn, sql, (pin, at), id).await
}

pub async fn get(on: impl Into<On<'_>>, account_id: i64, id: i64) -> Result<Playzone> {
    let sql = format!("SELECT {COLUMNS} FROM playzones WHERE id = $1 AND account_id = $2");
    one_in(on, &sql, id, account_id, "playzone", from_row).await
}

/// A Playzone by id whatever its account (the sync loop); `None` when gone.
pub async fn find(store: &Store, id: i64) -> Result<Option<Playzone>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM playzones WHERE id = $1"))
        .bind(id)
        .fetch_optional(store.pool())
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// The account's Playzones by id; with `compose_only`, those whose last
/// sync found a Compose file.
pub async fn list(store: &Store, account_id: i64, compose_only: bool) -> Result<Vec<Playzone>> {
    let filter = if compose_only { " AND compose_file IS NOT NULL" } else { "" };
    let sql = format!("SELECT {COLUMNS} FROM playzones WHERE account_id = $1{filter} ORDER BY id");
    all_of(store, &sql, account_id, from_row).await
}

/// Every Playzone id (the sync loop's resync).
pub async fn ids(store: &Store) -> Result<Vec<i64>> {
    column(store, sqlx::query("SELECT id FROM playzones ORDER BY id"), "id").await
}

/// Applies validated changes; records `playzone.updated` when anything
/// changed. A new URL forgets the branch index and the Compose file found
/// (they were another repository's); a change that
/// [needs a sync](Changes::needs_sync) bumps `generation` and sets the
/// status back to `pending`.
pub async fn update(
    on: impl Into<On<'_>>,
    secrets: &SecretBox,
    by: Acting,
    id: i64,
    changes: Changes,
) -> Result<Playzone> {
    let Acting { account_id, actor } = by;
    write_locked(on, "playzones", id, async |conn| {
        let current = get(&mut *conn, account_id, id).await?;
        let name = changes.name.clone().unwrap_or_else(|| current.name.clone());
        let url_changed = changes.scm_url.as_ref().is_some_and(|u| *u != current.scm_url);
        let scm_url = changes.scm_url.clone().unwrap_or_else(|| current.scm_url.clone());
        let (default_branch, pinned) = match &changes.default_branch {
            None => (current.default_branch.clone(), current.default_branch_pinned),
            Some(Some(branch)) => (Some(branch.clone()), true),
            // Unpinned: the next sync records the remote's HEAD.
            Some(None) => (if current.default_branch_pinned { None } else { current.default_branch.clone() }, false),
        };
        let private = changes.private.unwrap_or(current.private);
        let sync = changes.needs_sync()
            && (url_changed
                || changes.credentials.is_some()
                || changes.ssh_host_key.is_some()
                || default_branch != current.default_branch
                || pinned != current.default_branch_pinned);
        let changed = sync || name != current.name || private != current.private;
        if !changed {
            return Ok(current);
        }
        let (generation, status) =
            if sync { (current.generation + 1, Status::Pending) } else { (current.generation, current.status) };
        sqlx::query(
        "UPDATE playzones SET name = $1, scm_url = $2, default_branch = $3, default_branch_pinned = $4, private = $5, \
         generation = $6, status = $7, updated_at = $8 WHERE id = $9 AND account_id = $10",
    )
    .bind(&name)
    .bind(&scm_url)
    .bind(&default_branch)
    .bind(flag(pinned))
    .bind(flag(private))
    .bind(generation)
    .bind(status.as_str())
    .bind(time::to_db(&time::now()))
    .bind(id)
    .bind(account_id)
    .execute(&mut *conn)
    .await
    .on_unique(|| name_taken(&name))?;
        if let Some(token) = &changes.credentials {
            set_token(conn, secrets, id, token.as_deref(), &scm_url).await?;
        }
        if url_changed && !play_model::playzone::same_origin(&scm_url, &current.scm_url) {
            set_pin_in(conn, id, None).await?;
        }
        if let Some(pin) = &changes.ssh_host_key {
            set_pin_in(conn, id, pin.as_deref()).await?;
        }
        if url_changed {
            playzone_branches::forget_in(conn, id).await?;
            super::playzone_pulls::forget_in(conn, id).await?;
            sqlx::query(
                "UPDATE playzones SET compose_file = NULL, compose_commit = NULL, status_message = NULL WHERE id = $1",
            )
            .bind(id)
            .execute(&mut *conn)
            .await?;
        }
        let mut fields: Vec<&str> = Vec::new();
        for (set, name) in [
            (name != current.name, "name"),
            (url_changed, "scm_url"),
            (default_branch != current.default_branch || pinned != current.default_branch_pinned, "default_branch"),
            (private != current.private, "private"),
            (changes.credentials.is_some(), "credentials"),
            (changes.ssh_host_key.is_some(), "ssh_host_key"),
        ] {
            if set {
                fields.push(name);
            }
        }
        let metadata = serde_json::json!({ "changed": fields });
        events::record(conn, NewEvent::new(account_id, "playzone", id, "updated").actor(actor).metadata(metadata))
            .await?;
        if changes.needs_sync() {
            wakes::note(conn, Wake::Playzone(id.into())).await?;
        }
        get(&mut *conn, account_id, id).await
    })
    .await
}

/// Asks for a sync: bumps `generation` (the sync loop, woken by the
/// commit, starts a pass). The status is left as it is until the pass.
pub async fn request_sync(store: &Store, account_id: i64, id: i64) -> Result<Playzone> {
    store
        .in_write(async |tx| {
            get(&mut *tx, account_id, id).await?;
            sqlx::query("UPDATE playzones SET generation = generation + 1 WHERE id = $1 AND account_id = $2")
                .bind(id)
                .bind(account_id)
                .execute(&mut *tx)
                .await?;
            wakes::note(tx, Wake::Playzone(id.into())).await?;
            get(&mut *tx, account_id, id).await
        })
        .await
}

/// The names of the account's Playspecs with a service built from this
/// Playzone, or whose Compose file belongs to it (a delete is refused
/// while there are any).
pub async fn playspecs_using(conn: &mut Conn, account_id: i64, id: i64) -> Result<Vec<String>> {
    let rows = sqlx::query("SELECT id, name, services, playzone_id FROM playspecs WHERE account_id = $1 ORDER BY id")
        .bind(account_id)
        .fetch_all(&mut *conn)
        .await?;
    let mut names = Vec::new();
    for row in &rows {
        let playspec_id: i64 = row.try_get("id")?;
        let services: Vec<serde_json::Value> = super::json_column(row, "playspecs", playspec_id, "services")?;
        let project = row.try_get::<Option<i64>, _>("playzone_id")? == Some(id);
        if project || services.iter().any(|s| s.get("playzone_id").and_then(serde_json::Value::as_i64) == Some(id)) {
            names.push(row.try_get("name")?);
        }
    }
    Ok(names)
}

/// Deletes a Playzone and its branch index; refused with a conflict while
/// a Playspec builds from it. Records `playzone.destroyed`.
pub async fn delete(on: impl Into<On<'_>>, account_id: i64, id: i64, actor: Actor) -> Result<()> {
    on.into()
        .write(async |conn| {
            let playzone = get(&mut *conn, account_id, id).await?;
            let users = playspecs_using(conn, account_id, id).await?;
            if !users.is_empty() {
                return Err(Error::Conflict(format!(
                    "the Playzone is used by Playspec(s) {}: delete them or change their services first",
                    users.join(", ")
                )));
            }
            playzone_branches::forget_in(conn, id).await?;
            super::playzone_pulls::forget_in(conn, id).await?;
            delete_owned(conn, "playzones", id, account_id).await?;
            let metadata = serde_json::json!({"name": playzone.name});
            events::record(
                conn,
                NewEvent::new(account_id, "playzone", id, "destroyed").actor(actor).metadata(metadata),
            )
            .await?;
            Ok(())
        })
        .await
}
