//! Playrooms: the hosts Playgrounds run on.
//!
//! The SSH private key is stored sealed (`SecretBox`, bound to
//! `playroom:<id>:ssh_private_key`) and only ever opened to build a
//! `HostTarget`; nothing here returns it to a caller that renders
//! responses (`Playroom` has no field for it). Who may trust a Playroom,
//! and the record of who did, are `playroom_trust`'s.
//!
//! A deleted Playroom whose edge container may still run on its host is
//! hidden (`deleted_at` set, its name freed) until the edge reconciler
//! purges it; every account-scoped read skips such a row.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::On;
use super::playroom_trust::{check_trust, clear_trust, cleared_metadata, record_trust, retargeted};
use super::quotas;
use super::shapes::{all_of, coalesced, delete_owned, one_in, set_by_id};
use super::write_shapes::{insert_returning_id, update_touched, update_unique, write_locked};
use super::{Conn, Store, flag, is_set};
use super::{events, wakes};
use crate::{Error, Result};
use play_model::edge::{EdgeChanges, EdgeSettings};
use play_model::host::HostTarget;
use play_model::model::event::{Acting, Actor, NewEvent};
use play_model::model::playroom::{Connection, Playroom, PlayroomFields};
use play_model::model::quota::{QuotaLimits, Resource};
use play_model::secrets::SecretBox;
use play_model::time;
use play_model::wake::Wake;

const COLUMNS: &str = "id, account_id, name, status, connection, host, port, ssh_user, docker_socket, \
    ssh_private_key IS NOT NULL AS has_private_key, ssh_public_key, host_key, host_key_pinned_at, domains, \
    acme_email, edge, trusted, trusted_at, trusted_by_key_id, tutorial, last_checked_at, last_transport, last_error, \
    reachable, unreachable_since, unreachable_reason, created_at, updated_at, deleted_at";

fn from_row(row: &AnyRow) -> Result<Playroom> {
    from_row_as(row, "")
}

/// The columns of [`COLUMNS`] read from table alias `alias` and named with
/// `prefix` (`r.host AS room_host`), for a query that joins the Playroom to
/// another row; [`from_row_as`] reads them back.
pub(super) fn columns_as(alias: &str, prefix: &str) -> String {
    COLUMNS
        .split(',')
        .map(str::trim)
        .map(|column| match column.rsplit_once(" AS ") {
            Some((expression, name)) => format!("{alias}.{expression} AS {prefix}{name}"),
            None => format!("{alias}.{column} AS {prefix}{column}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A Playroom from columns named with `prefix` (see [`columns_as`]).
pub(super) fn from_row_as(row: &AnyRow, prefix: &str) -> Result<Playroom> {
    let name = |column: &'static str| -> std::borrow::Cow<'static, str> {
        if prefix.is_empty() { column.into() } else { format!("{prefix}{column}").into() }
    };
    let json = |column: &'static str| -> Result<String> { Ok(row.try_get(name(column).as_ref())?) };
    let id: i64 = row.try_get(name("id").as_ref())?;
    let corrupt = |column, reason: String| Error::Corrupt { table: "playrooms", id, column, reason };
    let has_key: i64 = match row.try_get::<i64, _>(name("has_private_key").as_ref()) {
        Ok(v) => v,
        // PostgreSQL answers `IS NOT NULL` with a boolean.
        Err(_) => i64::from(row.try_get::<bool, _>(name("has_private_key").as_ref())?),
    };
    Ok(Playroom {
        id,
        account_id: row.try_get(name("account_id").as_ref())?,
        name: row.try_get(name("name").as_ref())?,
        status: row.try_get(name("status").as_ref())?,
        connection: Connection::from_db(&row.try_get::<String, _>(name("connection").as_ref())?)
            .ok_or_else(|| corrupt("connection", "neither ssh nor local".into()))?,
        host: row.try_get(name("host").as_ref())?,
        port: u16::try_from(row.try_get::<i64, _>(name("port").as_ref())?)
            .map_err(|e| corrupt("port", e.to_string()))?,
        user: row.try_get(name("ssh_user").as_ref())?,
        docker_socket: row.try_get(name("docker_socket").as_ref())?,
        has_private_key: is_set(has_key),
        ssh_public_key: row.try_get(name("ssh_public_key").as_ref())?,
        host_key: row.try_get(name("host_key").as_ref())?,
        host_key_pinned_at: super::opt_time_column(row, &name("host_key_pinned_at"))?,
        domains: super::parse_json(&json("domains")?, "playrooms", id, "domains")?,
        acme_email: row.try_get(name("acme_email").as_ref())?,
        edge: super::parse_json(&json("edge")?, "playrooms", id, "edge")?,
        trusted: is_set(row.try_get(name("trusted").as_ref())?),
        trusted_at: super::opt_time_column(row, &name("trusted_at"))?,
        trusted_by_key_id: row.try_get(name("trusted_by_key_id").as_ref())?,
        tutorial: is_set(row.try_get(name("tutorial").as_ref())?),
        last_checked_at: super::opt_time_column(row, &name("last_checked_at"))?,
        last_transport: row.try_get(name("last_transport").as_ref())?,
        last_error: row.try_get(name("last_error").as_ref())?,
        reachable: row.try_get::<Option<i64>, _>(name("reachable").as_ref())?.map(is_set),
        unreachable_since: super::opt_time_column(row, &name("unreachable_since"))?,
        unreachable_reason: row.try_get(name("unreachable_reason").as_ref())?,
        created_at: super::time_column(row, &name("created_at"))?,
        updated_at: super::time_column(row, &name("updated_at"))?,
        deleted_at: super::opt_time_column(row, &name("deleted_at"))?,
    })
}

fn edge_json(edge: &EdgeSettings) -> Result<String> {
    serde_json::to_string(edge).map_err(|e| Error::Internal(format!("edge settings: {e}")))
}

/// `changes` applied to `base`; a conflict is a validation error on the
/// key it blames.
fn edge_settings(changes: Option<&EdgeChanges>, base: EdgeSettings) -> Result<EdgeSettings> {
    let Some(changes) = changes else { return Ok(base) };
    changes.apply(base).map_err(|c| Error::field(format!("playroom.edge.{}", c.key), c.message))
}

fn key_context(id: i64) -> String {
    format!("playroom:{id}:ssh_private_key")
}

fn name_taken(name: &str) -> Error {
    Error::field("playroom.name", format!("a Playroom named {name:?} already exists"))
}

/// Creates a Playroom. `fields` must carry name, connection, host, port,
/// user and docker_socket.
pub async fn create(
    on: impl Into<On<'_>>,
    secrets: &SecretBox,
    by: Acting,
    fields: PlayroomFields,
    limits: &QuotaLimits,
) -> Result<Playroom> {
    let Acting { account_id, actor } = by;
    on.into()
        .write(async |conn| {
            let missing = || Error::Internal("playroom create without a required field".into());
            let name = fields.name.clone().ok_or_else(missing)?;
            quotas::check(conn, account_id, Resource::Playrooms, limits).await?;
            let now = time::to_db(&time::now());
            let pinned_at = fields.host_key.as_ref().and_then(|k| k.as_ref()).map(|_| now.clone());
            let trusted = fields.trusted.unwrap_or(false);
            check_trust(fields.connection.unwrap_or(Connection::Ssh), trusted)?;
            let edge = edge_settings(fields.edge.as_ref(), EdgeSettings::default())?;
            let insert = sqlx::query(
        "INSERT INTO playrooms (account_id, name, connection, host, port, ssh_user, docker_socket, ssh_public_key, \
         host_key, host_key_pinned_at, domains, acme_email, trusted, tutorial, created_at, updated_at, edge) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $16) RETURNING id",
    )
    .bind(account_id)
    .bind(&name)
    .bind(fields.connection.unwrap_or(Connection::Ssh).as_str())
    .bind(fields.host.clone().ok_or_else(missing)?)
    .bind(i64::from(fields.port.ok_or_else(missing)?))
    .bind(fields.user.clone().ok_or_else(missing)?)
    .bind(fields.docker_socket.clone().ok_or_else(missing)?)
    .bind(fields.ssh_key.as_ref().map(|(_, public)| public.clone()))
    .bind(fields.host_key.clone().flatten())
    .bind(pinned_at)
    .bind(serde_json::to_string(&fields.domains.clone().unwrap_or_default()).unwrap_or_else(|_| "[]".into()))
    .bind(fields.acme_email.clone().flatten())
    .bind(flag(trusted))
    .bind(flag(fields.tutorial.unwrap_or(false)))
    .bind(&now)
    .bind(edge_json(&edge)?);
            let id = insert_returning_id(conn, insert, || name_taken(&name)).await?;
            if let Some((private, _)) = &fields.ssh_key {
                let sealed = secrets.seal(private, &key_context(id))?;
                set_by_id(&mut *conn, "UPDATE playrooms SET ssh_private_key = $1 WHERE id = $2", sealed, id).await?;
            }
            if trusted {
                record_trust(conn, id, true, actor).await?;
            }
            let metadata = serde_json::json!({ "trusted": trusted });
            events::record(conn, NewEvent::new(account_id, "playroom", id, "created").actor(actor).metadata(metadata))
                .await?;
            wakes::note(conn, Wake::Edge(id.into())).await?;
            select(conn, account_id, id).await
        })
        .await
}

/// The Playroom `id` of `account_id`: on the store concurrent calls share
/// a query that started after each of them ([`super::coalesce`]), as fresh
/// as a query of one's own; on a caller's connection it is read there, so
/// it sees what that transaction wrote.
pub async fn get(on: impl Into<On<'_>>, account_id: i64, id: i64) -> Result<Playroom> {
    coalesced(on, |reads| &reads.playroom, (account_id, id), |conn| Box::pin(select(conn, account_id, id))).await
}

/// [`get`] on `conn`, uncoalesced.
async fn select(conn: &mut Conn, account_id: i64, id: i64) -> Result<Playroom> {
    let sql = format!("SELECT {COLUMNS} FROM playrooms WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL");
    one_in(conn, &sql, id, account_id, "playroom", from_row).await
}

pub async fn list(store: &Store, account_id: i64) -> Result<Vec<Playroom>> {
    let sql = format!("SELECT {COLUMNS} FROM playrooms WHERE account_id = $1 AND deleted_at IS NULL ORDER BY id");
    all_of(store, &sql, account_id, from_row).await
}

/// Applies the given fields. A change of host, port, user or connection
/// drops the pinned host key (it belonged to the old host) unless the same
/// update pins a new one; while the Playroom has Playgrounds such a change
/// keeps the pin instead, and one that would drop or change it is a
/// `Conflict`. A change that makes a trusted Playroom another machine
/// (those, the Docker socket, the pin or the SSH key: see
/// `playroom_trust`) clears trust unless `fields.caller_may_trust`.
pub async fn update(
    on: impl Into<On<'_>>,
    secrets: &SecretBox,
    by: Acting,
    id: i64,
    fields: PlayroomFields,
) -> Result<Playroom> {
    let Acting { account_id, actor } = by;
    write_locked(on, "playrooms", id, async |conn| {
        let current = select(conn, account_id, id).await?;
        let moved = fields.host.as_ref().is_some_and(|h| *h != current.host)
            || fields.port.is_some_and(|p| p != current.port)
            || fields.user.as_ref().is_some_and(|u| *u != current.user)
            || fields.connection.is_some_and(|c| c != current.connection);
        // Playgrounds on the Playroom live on the host its pin names: a move
        // keeps that pin, so only the same machine (same host key) is reached
        // at the new address and nothing is orphaned; a move that would drop
        // or change the pin is refused while they exist.
        let occupied = moved && active_playgrounds(conn, id).await? > 0;
        if occupied && (current.host_key.is_none() || fields.host_key.as_ref().is_some_and(|k| *k != current.host_key))
        {
            return Err(Error::Conflict(
                "the Playroom has Playgrounds on its current host: a new host, port, user or connection must keep \
             the pinned host key (the same machine at a new address), or destroy the Playgrounds first"
                    .into(),
            ));
        }
        let keep_pin = !moved || occupied;
        let host_key = match &fields.host_key {
            Some(pin) => pin.clone(),
            None if keep_pin => current.host_key.clone(),
            None => None,
        };
        let pinned_at = match &fields.host_key {
            Some(Some(pin)) if Some(pin) != current.host_key.as_ref() => Some(time::now()),
            Some(Some(_)) => current.host_key_pinned_at,
            Some(None) => None,
            None if keep_pin => current.host_key_pinned_at,
            None => None,
        };
        let changed = retargeted(&current, &fields);
        let trust_lost = current.trusted && !changed.is_empty() && !fields.caller_may_trust;
        let trusted = if trust_lost { false } else { fields.trusted.unwrap_or(current.trusted) };
        check_trust(fields.connection.unwrap_or(current.connection), trusted)?;
        let edge = edge_settings(fields.edge.as_ref(), current.edge)?;
        let now = time::now();
        let name = fields.name.clone().unwrap_or(current.name.clone());
        let update = sqlx::query(
            "UPDATE playrooms SET name = $1, connection = $2, host = $3, port = $4, ssh_user = $5, docker_socket = $6, \
         host_key = $7, host_key_pinned_at = $8, domains = $9, acme_email = $10, trusted = $11, tutorial = $12, \
         updated_at = $13, edge = $16 WHERE id = $14 AND account_id = $15",
        )
        .bind(&name)
        .bind(fields.connection.unwrap_or(current.connection).as_str())
        .bind(fields.host.clone().unwrap_or(current.host.clone()))
        .bind(i64::from(fields.port.unwrap_or(current.port)))
        .bind(fields.user.clone().unwrap_or(current.user.clone()))
        .bind(fields.docker_socket.clone().unwrap_or(current.docker_socket.clone()))
        .bind(host_key)
        .bind(pinned_at.as_ref().map(time::to_db))
        .bind(
            serde_json::to_string(fields.domains.as_ref().unwrap_or(&current.domains)).unwrap_or_else(|_| "[]".into()),
        )
        .bind(fields.acme_email.clone().unwrap_or(current.acme_email.clone()))
        .bind(flag(trusted))
        .bind(flag(fields.tutorial.unwrap_or(current.tutorial)))
        .bind(time::to_db(&now))
        .bind(id)
        .bind(account_id)
        .bind(edge_json(&edge)?);
        update_unique(conn, update, || name_taken(&name)).await?;
        if let Some((private, public)) = &fields.ssh_key {
            set_key_in(conn, secrets, id, private, public).await?;
        }
        let mut metadata = serde_json::json!({});
        if trusted != current.trusted {
            record_trust(conn, id, trusted, actor).await?;
            metadata = if trust_lost {
                cleared_metadata(&changed)
            } else {
                serde_json::json!({ "trusted": { "from": current.trusted, "to": trusted } })
            };
        }
        events::record(conn, NewEvent::new(account_id, "playroom", id, "updated").actor(actor).metadata(metadata))
            .await?;
        wakes::note(conn, Wake::Edge(id.into())).await?;
        select(conn, account_id, id).await
    })
    .await
}

async fn set_key_in(conn: &mut Conn, secrets: &SecretBox, id: i64, private: &str, public: &str) -> Result<()> {
    let update =
        sqlx::query("UPDATE playrooms SET ssh_private_key = $1, ssh_public_key = $2, updated_at = $3 WHERE id = $4");
    update_touched(conn, update.bind(secrets.seal(private, &key_context(id))?).bind(public), id).await
}

/// Replaces the key pair (generate_ssh_key). A new key is another way
/// onto the host, so it clears trust unless `caller_may_trust` (the
/// caller holds `playrooms:trust`), as [`update`] does.
pub async fn set_key(
    store: &Store,
    secrets: &SecretBox,
    by: Acting,
    id: i64,
    (private, public): (&str, &str),
    caller_may_trust: bool,
) -> Result<Playroom> {
    let Acting { account_id, actor } = by;
    write_locked(store, "playrooms", id, async |tx| {
        let current = select(tx, account_id, id).await?;
        set_key_in(tx, secrets, id, private, public).await?;
        let metadata = if current.trusted && !caller_may_trust {
            clear_trust(tx, id, actor, &["ssh_private_key"]).await?
        } else {
            serde_json::json!({})
        };
        events::record(tx, NewEvent::new(account_id, "playroom", id, "updated").actor(actor).metadata(metadata))
            .await?;
        wakes::note(tx, Wake::Edge(id.into())).await?;
        select(tx, account_id, id).await
    })
    .await
}

/// Playgrounds that still occupy the Playroom (anything not yet destroyed).
pub async fn active_playgrounds(conn: &mut Conn, playroom_id: i64) -> Result<i64> {
    let row = sqlx::query("SELECT COUNT(*) AS n FROM playgrounds WHERE playroom_id = $1 AND status <> $2")
        .bind(playroom_id)
        .bind(play_model::playground::state::PlaygroundStatus::Destroyed.as_str())
        .fetch_one(&mut *conn)
        .await?;
    Ok(row.try_get("n")?)
}

/// Deletes a Playroom; refused with `Conflict` while Playgrounds are active.
pub async fn delete(on: impl Into<On<'_>>, account_id: i64, id: i64, actor: Actor) -> Result<()> {
    on.into().write(async |conn| {
    // A launch onto this Playroom share-locks it (`playgrounds::insert_in`):
    // the count below and the launch cannot pass each other.
    super::shapes::lock_row(conn, "playrooms", id).await?;
    select(conn, account_id, id).await?;
    let active = active_playgrounds(conn, id).await?;
    if active > 0 {
        return Err(Error::Conflict(format!(
            "the Playroom has {active} active Playground(s); destroy them before deleting it"
        )));
    }
    // Destroyed Playground rows keep their history elsewhere (events).
    sqlx::query("DELETE FROM playgrounds WHERE playroom_id = $1").bind(id).execute(&mut *conn).await?;
    super::launch_defaults::forget_playroom_in(conn, id).await?;
    // An edge container may still run on the host: only the edge
    // reconciler, which reaches the host through this row, can remove it.
    // Hide the row now (its name freed), and let the edge purge it.
    let edge_ran: Option<String> =
        sqlx::query("SELECT container_id FROM playroom_edges WHERE playroom_id = $1 AND container_id IS NOT NULL")
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?
            .map(|r| r.try_get("container_id"))
            .transpose()?;
    if edge_ran.is_some() {
        let now = time::to_db(&time::now());
        sqlx::query(
            "UPDATE playrooms SET deleted_at = $1, name = name || $2, updated_at = $1 WHERE id = $3 AND account_id = $4",
        )
        .bind(&now)
        .bind(format!("~deleted-{id}"))
        .bind(id)
        .bind(account_id)
        .execute(&mut *conn)
        .await?;
    } else {
        delete_owned(conn, "playrooms", id, account_id).await?;
    }
    events::record(conn, NewEvent::new(account_id, "playroom", id, "destroyed").actor(actor)).await?;
    // The edge removes its container and forgets the Playroom's routes.
    wakes::note(conn, Wake::Edge(id.into())).await
    }).await
}

/// The connection target of a Playroom, with its private key opened.
pub async fn target(store: &Store, secrets: &SecretBox, account_id: i64, id: i64) -> Result<(Playroom, HostTarget)> {
    target_of(store, secrets, get(store, account_id, id).await?).await
}

/// [`target`] of Playroom `id` whatever its account, a deleted one still
/// being purged included (the edge reconciler's cleanup); `None` once the
/// row is gone.
pub async fn target_any(store: &Store, secrets: &SecretBox, id: i64) -> Result<Option<(Playroom, HostTarget)>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM playrooms WHERE id = $1"))
        .bind(id)
        .fetch_optional(store.pool())
        .await?;
    match row {
        Some(row) => Ok(Some(target_of(store, secrets, from_row(&row)?).await?)),
        None => Ok(None),
    }
}

/// Purges Playroom `id` once its edge is gone: only a row [`delete`] hid.
pub async fn purge(store: &Store, id: i64) -> Result<()> {
    sqlx::query("DELETE FROM playrooms WHERE id = $1 AND deleted_at IS NOT NULL")
        .bind(id)
        .execute(store.pool())
        .await?;
    Ok(())
}

async fn target_of(store: &Store, secrets: &SecretBox, room: Playroom) -> Result<(Playroom, HostTarget)> {
    let id = room.id;
    let target = match room.connection {
        Connection::Local => HostTarget::local(room.id, room.docker_socket.clone()),
        Connection::Ssh => {
            let sealed: Option<String> = sqlx::query("SELECT ssh_private_key FROM playrooms WHERE id = $1")
                .bind(id)
                .fetch_one(store.pool())
                .await?
                .try_get("ssh_private_key")?;
            // No key, no connection: say so rather than fail to parse an
            // empty key on every attempt.
            let Some(sealed) = sealed else {
                return Err(Error::InvalidState(
                    "the Playroom has no SSH private key: set ssh_private_key or call generate_ssh_key".into(),
                ));
            };
            let private = secrets.open(&sealed, &key_context(id))?;
            let mut target = HostTarget::ssh(
                room.id,
                room.host.clone(),
                room.port,
                room.user.clone(),
                private,
                room.host_key.clone(),
            );
            if let play_model::host::HostKind::Ssh { docker_socket, .. } = &mut target.kind {
                docker_socket.clone_from(&room.docker_socket);
            }
            target
        }
    };
    Ok((room, target))
}

#[cfg(test)]
#[path = "playrooms_tests.rs"]
mod tests;
