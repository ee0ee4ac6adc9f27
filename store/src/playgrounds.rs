//! The `playgrounds` table: reads of [`Playground`] rows and the writes
//! the domain (`play_model::playground`) composes into its transactions.
//!
//! Queries only: which write is allowed when, and what it means, is decided
//! by `play_model::playground` (API-driven changes) and `playground_status`
//! (the reconciler's fenced writes). Every write that changes a state here
//! records its outbox event in the same connection (the caller's
//! transaction).

use std::collections::BTreeMap;

use serde::Serialize;
use sqlx::any::AnyRow;
use sqlx::{Any, Row};

use super::shapes::{all, coalesced, one_in, set_by_id};
use super::write_shapes::update_touched;
use super::{Conn, On, Store, flag};
use super::{events, wakes};
use crate::{Error, Result};
use play_model::model::event::{Actor, NewEvent};
use play_model::playground::model::{NewPlayground, Playground, ServiceSettings, compose_project};
use play_model::playground::sleep::Sleep;
use play_model::playground::sleep::SleepAfter;
use play_model::playground::state::{CreationStep, DesiredState, PlaygroundStatus};
use play_model::time::{self, Timestamp};
use play_model::wake::Wake;

pub(super) const COLUMNS: &str = "g.id, g.account_id, (SELECT uid FROM installation) AS installation, g.name, g.status, g.playspec_id, s.name AS playspec_name, g.playroom_id, \
    g.job_mode, g.agent, g.watched_services, g.env_overrides, g.service_subdomains, g.service_settings, g.compose_project, \
    g.desired_state, g.generation, g.observed_generation, g.creation_step, g.error_message, g.error_step, \
    g.needs_recreation, g.restart_epoch, g.pulled_epoch, g.services_status, g.failed_rollouts, g.expires_at, g.last_applied_at, g.created_at, g.updated_at, \
    g.sleep_after_secs, s.sleep_after_secs AS playspec_sleep_after_secs, g.power, g.power_reason, g.power_changed_at, \
    g.running_since, g.slept_at, g.last_active_at";
pub(super) const FROM: &str = "playgrounds g LEFT JOIN playspecs s ON s.id = g.playspec_id";

pub(super) fn from_row(row: &AnyRow) -> Result<Playground> {
    Ok(columns!(
        row,
        "playgrounds",
        Playground {
            id,
            account_id,
            installation,
            name,
            status => text,
            playspec_id,
            playspec_name,
            playroom_id,
            job_mode => flag,
            agent,
            watched_services => json,
            env_overrides => json,
            service_subdomains => json,
            service_settings => json,
            compose_project,
            desired_state => text,
            generation,
            observed_generation,
            creation_step => opt_text,
            error_message,
            error_step => opt_text,
            needs_recreation => flag,
            restart_epoch,
            pulled_epoch,
            services: super::json_column(row, "playgrounds", row.try_get("id")?, "services_status")?,
            failed_rollouts => json,
            sleep: sleep_of(row)?,
            expires_at => opt_time,
            last_applied_at => opt_time,
            created_at => time,
            updated_at => time,
        }
    ))
}

fn sleep_of(row: &AnyRow) -> Result<Sleep> {
    Ok(columns!(
        row,
        "playgrounds",
        Sleep {
            own_after: SleepAfter::from_db(row.try_get("sleep_after_secs")?),
            playspec_after: SleepAfter::from_db(row.try_get("playspec_sleep_after_secs")?),
            power => text,
            reason: super::opt_text_column(row, "playgrounds", row.try_get("id")?, "power_reason")?,
            power_changed_at => opt_time,
            running_since => opt_time,
            slept_at => opt_time,
            last_active_at => opt_time,
        }
    ))
}

fn to_json<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Internal(e.to_string()))
}

/// Inserts a new Playground (status `in_progress`, step `queued`) with its
/// `playground.created` event, inside the caller's transaction. The caller
/// has checked the request and the account's quota.
pub async fn insert_in(conn: &mut Conn, account_id: i64, new: &NewPlayground, actor: Actor) -> Result<Playground> {
    // The Playroom and the Playspec stay as the caller checked them until
    // this commits: a Playroom's delete and a Playspec's change lock them
    // and count the Playgrounds that use them (`shapes::share_row`).
    let room = "SELECT id FROM playrooms WHERE id = $1 AND deleted_at IS NULL";
    if !super::shapes::share_row(conn, room, new.playroom_id).await? {
        return Err(Error::field("playroom_id", "the Playroom was deleted; choose another"));
    }
    if !super::shapes::share_row(conn, "SELECT id FROM playspecs WHERE id = $1", new.playspec_id).await? {
        return Err(Error::field("playspec_id", "the Playspec was deleted; choose another"));
    }
    let now = time::now();
    let row = sqlx::query(
        "INSERT INTO playgrounds (account_id, playroom_id, playspec_id, name, status, job_mode, watched_services, \
         env_overrides, service_subdomains, service_settings, creation_step, expires_at, created_at, updated_at, \
         power_changed_at, sleep_after_secs, agent) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, $13, $14, $15) RETURNING id",
    )
    .bind(account_id)
    .bind(new.playroom_id)
    .bind(new.playspec_id)
    .bind(&new.name)
    .bind(PlaygroundStatus::InProgress.as_str())
    .bind(flag(new.job_mode))
    .bind(to_json(&new.watched_services)?)
    .bind(to_json(&new.env_overrides)?)
    .bind(to_json(&new.service_subdomains)?)
    .bind(to_json(&new.service_settings)?)
    .bind(CreationStep::Queued.as_str())
    .bind(time::to_db(&play_model::playground::ttl::expires_at(now, new.ttl)))
    .bind(time::to_db(&now))
    .bind(new.sleep_after.to_db())
    .bind(new.agent.as_deref())
    .fetch_one(&mut *conn)
    .await?;
    let id: i64 = row.try_get("id")?;
    let installation: String =
        sqlx::query("SELECT uid FROM installation").fetch_one(&mut *conn).await?.try_get("uid")?;
    let project = compose_project(&installation, id, &new.name);
    set_by_id(&mut *conn, "UPDATE playgrounds SET compose_project = $1 WHERE id = $2", project, id).await?;
    let mut metadata =
        serde_json::json!({"playspec_id": new.playspec_id, "playroom_id": new.playroom_id, "job_mode": new.job_mode});
    if let Some(agent) = &new.agent {
        metadata["agent"] = serde_json::json!(agent);
    }
    if let Some(origin) = &new.origin {
        // Launched by a trigger: which, for which ref (under its kind's
        // name: `branch` or `pull_request`) and commit.
        metadata["trigger_id"] = serde_json::json!(origin.trigger_id);
        metadata[origin.ref_kind.as_str()] = match origin.ref_name.parse::<u64>() {
            Ok(number) if origin.ref_kind == "pull_request" => serde_json::json!(number),
            _ => serde_json::json!(origin.ref_name),
        };
        metadata["commit"] = serde_json::json!(origin.commit);
    }
    events::record(
        conn,
        NewEvent::new(account_id, "playground", id, "created")
            .playground_name(&new.name)
            .actor(actor)
            .metadata(metadata),
    )
    .await?;
    note_changed(conn, id, new.playroom_id).await?;
    select(conn, account_id, id).await
}

/// Notes, with a change of Playground `id`'s desired state, the wakes of
/// the loops that follow it: its own and its Playroom's edge (its routes
/// appear and go with it).
async fn note_changed(conn: &mut Conn, id: i64, playroom_id: i64) -> Result<()> {
    wakes::note(conn, Wake::Playground(id.into())).await?;
    wakes::note(conn, Wake::Edge(playroom_id.into())).await
}

/// [`note_changed`] for Playground `id`, its Playroom read in the
/// caller's transaction (nothing for a Playground that is gone).
pub(super) async fn note_changed_id(conn: &mut Conn, id: i64) -> Result<()> {
    let row =
        sqlx::query("SELECT playroom_id FROM playgrounds WHERE id = $1").bind(id).fetch_optional(&mut *conn).await?;
    match row {
        Some(row) => note_changed(conn, id, row.try_get("playroom_id")?).await,
        None => Ok(()),
    }
}

/// The account's Playground running the Playspec named `playspec`, if
/// one does (a schedule's run finds the launch it made by that name).
pub async fn by_playspec_name(store: &Store, account_id: i64, playspec: &str) -> Result<Option<i64>> {
    let query = sqlx::query(
        "SELECT g.id FROM playgrounds g JOIN playspecs s ON s.id = g.playspec_id \
         WHERE g.account_id = $1 AND s.name = $2 ORDER BY g.id LIMIT 1",
    )
    .bind(account_id)
    .bind(playspec);
    let mut conn = store.conn().await?;
    Ok(query.fetch_optional(&mut *conn).await?.map(|row| row.try_get::<i64, _>("id")).transpose()?)
}

/// The Playground `id` of `account_id`. On the store, concurrent calls for
/// one Playground share a query that started after each of them
/// ([`super::coalesce`]): as fresh as a query of one's own. On a caller's
/// connection it is read there, so it sees what that transaction wrote.
pub async fn get(on: impl Into<On<'_>>, account_id: i64, id: i64) -> Result<Playground> {
    coalesced(on, |reads| &reads.playground, (account_id, id), |conn| Box::pin(select(conn, account_id, id))).await
}

/// [`get`] in the caller's write transaction, with the row locked until it
/// ends ([`super::shapes::lock_row`]): for a change that reads the
/// Playground, decides on what it read and writes it back (a rollout, an
/// extension, a destroy), so a change another replica commits meanwhile
/// is seen, never written over.
pub async fn get_for_update(conn: &mut Conn, account_id: i64, id: i64) -> Result<Playground> {
    super::shapes::lock_row(conn, "playgrounds", id).await?;
    select(conn, account_id, id).await
}

/// [`get`] on `conn`, uncoalesced.
async fn select(conn: &mut Conn, account_id: i64, id: i64) -> Result<Playground> {
    let sql = format!("SELECT {COLUMNS} FROM {FROM} WHERE g.id = $1 AND g.account_id = $2");
    one_in(conn, &sql, id, account_id, "playground", from_row).await
}

/// The account's Playgrounds that are not yet destroyed.
pub async fn list(store: &Store, account_id: i64) -> Result<Vec<Playground>> {
    let sql = format!("SELECT {COLUMNS} FROM {FROM} WHERE g.account_id = $1 AND g.status <> $2 ORDER BY g.id");
    all(store, sqlx::query(&sql).bind(account_id).bind(PlaygroundStatus::Destroyed.as_str()), from_row).await
}

/// The Playgrounds of Playroom `playroom_id` whose desired state is
/// running, in id order: what its edge routes, in one read per pass.
pub async fn running_in(store: &Store, playroom_id: i64) -> Result<Vec<Playground>> {
    let sql = format!("SELECT {COLUMNS} FROM {FROM} WHERE g.playroom_id = $1 AND g.desired_state = $2 ORDER BY g.id");
    all(store, sqlx::query(&sql).bind(playroom_id).bind(DesiredState::Running.as_str()), from_row).await
}

/// Records `playground.status.changed` from the Playground's status to `to`.
pub async fn status_changed_in(
    conn: &mut Conn,
    playground: &Playground,
    to: PlaygroundStatus,
    actor: Actor,
) -> Result<()> {
    let metadata = serde_json::json!({"from": playground.status, "to": to});
    let event = NewEvent::new(playground.account_id, "playground", playground.id, "status.changed");
    events::record(conn, event.playground_name(&playground.name).actor(actor).metadata(metadata)).await?;
    note_changed(conn, playground.id, playground.playroom_id).await
}

/// Records `playground.updated` with `metadata`.
pub async fn updated_in(
    conn: &mut Conn,
    playground: &Playground,
    actor: Actor,
    metadata: serde_json::Value,
) -> Result<()> {
    let event = NewEvent::new(playground.account_id, "playground", playground.id, "updated");
    events::record(conn, event.playground_name(&playground.name).actor(actor).metadata(metadata)).await?;
    // What changed may be its expiry alone: the writes that change its
    // routes note its edge themselves.
    wakes::note(conn, Wake::Playground(playground.id.into())).await
}

/// Desired state `destroyed`, status `destroying`, a new generation.
pub async fn mark_destroying_in(conn: &mut Conn, id: i64) -> Result<()> {
    mark_destroying_at(conn, id, time::now()).await
}

/// [`mark_destroying_in`], updated `at` (the expiry's instant).
pub(super) async fn mark_destroying_at(conn: &mut Conn, id: i64, at: Timestamp) -> Result<()> {
    sqlx::query(
        "UPDATE playgrounds SET desired_state = $1, status = $2, generation = generation + 1, \
         updated_at = $3 WHERE id = $4",
    )
    .bind(DesiredState::Destroyed.as_str())
    .bind(PlaygroundStatus::Destroying.as_str())
    .bind(time::to_db(&at))
    .bind(id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Runs `sql`, `UPDATE playgrounds SET <column> = $1, updated_at = $2
/// WHERE id = $3`: one column of Playground `id` set to `value`, and
/// `updated_at` to now (the reconciler's one-column writes), as
/// `write_shapes::update_touched` sets any row's.
pub(super) async fn set_in<'q, T>(conn: &mut Conn, sql: &'q str, value: T, id: i64) -> Result<()>
where
    T: 'q + Send + sqlx::Encode<'q, Any> + sqlx::Type<Any>,
{
    update_touched(conn, sqlx::query(sql).bind(value), id).await
}

/// Sets `expires_at`.
pub async fn set_expiry_in(conn: &mut Conn, id: i64, expires_at: Timestamp) -> Result<()> {
    set_in(conn, "UPDATE playgrounds SET expires_at = $1, updated_at = $2 WHERE id = $3", time::to_db(&expires_at), id)
        .await?;
    // Its loop's expiry timer moves with it.
    wakes::note(conn, Wake::Playground(id.into())).await
}

/// Moves the Playground to another Playspec (a new revision of its own).
pub async fn set_playspec_in(conn: &mut Conn, id: i64, playspec_id: i64) -> Result<()> {
    set_by_id(conn, "UPDATE playgrounds SET playspec_id = $1 WHERE id = $2", playspec_id, id).await
}

/// Sets the Playground's own `sleep_after`.
pub async fn set_sleep_after_in(conn: &mut Conn, id: i64, setting: SleepAfter) -> Result<()> {
    set_by_id(conn, "UPDATE playgrounds SET sleep_after_secs = $1 WHERE id = $2", setting.to_db(), id).await
}

/// Replaces the per-Playground settings a rollout may change.
pub async fn set_settings_in(
    conn: &mut Conn,
    id: i64,
    env_overrides: &BTreeMap<String, String>,
    service_subdomains: &BTreeMap<String, String>,
    service_settings: &BTreeMap<String, ServiceSettings>,
) -> Result<()> {
    sqlx::query(
        "UPDATE playgrounds SET env_overrides = $1, service_subdomains = $2, service_settings = $3 WHERE id = $4",
    )
    .bind(to_json(env_overrides)?)
    .bind(to_json(service_subdomains)?)
    .bind(to_json(service_settings)?)
    .bind(id)
    .execute(&mut *conn)
    .await?;
    note_changed_id(conn, id).await
}

/// A new generation (and restart epoch, by `epoch_bump`): status
/// `in_progress` at step `queued`, the last error and the failed
/// zero-downtime rollouts cleared (the user asked for another try).
pub async fn restart_in(conn: &mut Conn, id: i64, epoch_bump: i64) -> Result<()> {
    sqlx::query(
        "UPDATE playgrounds SET generation = generation + 1, restart_epoch = restart_epoch + $1, status = $2, \
         creation_step = $3, error_message = NULL, error_step = NULL, failed_rollouts = '{}', updated_at = $4 \
         WHERE id = $5",
    )
    .bind(epoch_bump)
    .bind(PlaygroundStatus::InProgress.as_str())
    .bind(CreationStep::Queued.as_str())
    .bind(time::to_db(&time::now()))
    .bind(id)
    .execute(&mut *conn)
    .await?;
    note_changed_id(conn, id).await
}

/// Records the wish to destroy Playground `id` inside the caller's
/// transaction (server-side apply and triggers write several in one):
/// marked `destroying` with its status event, unless it is already.
pub async fn request_destroy_in(
    conn: &mut Conn,
    account_id: i64,
    id: i64,
    actor: play_model::model::event::Actor,
) -> Result<Playground> {
    let current = get_for_update(&mut *conn, account_id, id).await?;
    if current.desired_state != play_model::playground::DesiredState::Destroyed {
        mark_destroying_in(conn, id).await?;
        status_changed_in(conn, &current, play_model::playground::PlaygroundStatus::Destroying, actor).await?;
    }
    get(&mut *conn, account_id, id).await
}
