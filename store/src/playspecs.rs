//! Playspecs: a blueprint of Compose YAML plus its classified services.
//!
//! Invariant: a Playspec is *locked* exactly while a Playground that is not
//! destroyed references it, a finished job excepted once its host objects
//! are gone (`job_results::HOLDS_HOST`). The lock is derived (counted by
//! [`holders`]), never stored, so it cannot drift; every change checks it
//! inside the write transaction that makes the change.
//!
//! Reading a Playspec does not count its holders: the count is a range of
//! the Playspec's Playgrounds, and the reconciler reads the Playspec of
//! every Playground on every pass (with 10,000 Playgrounds of one Playspec
//! that made each pass read 10,000 rows; issue #33). Only what shows or
//! checks the lock counts ([`holders`], [`holders_by_playspec`]).

use std::collections::HashMap;

use sqlx::Row;
use sqlx::any::AnyRow;

use super::On;
use super::events;
use super::quotas;
use super::shapes::{all_of, delete_owned, one, one_in, set_by_id};
use super::write_shapes::{insert_returning_id, update_unique};
use super::{Conn, Store, flag};
use crate::{Error, Result};
use play_model::compose::ServiceDefinition;
use play_model::model::event::{Acting, Actor, NewEvent};
use play_model::model::playspec::{Playspec, PlayspecFields};
use play_model::model::quota::{QuotaLimits, Resource};
use play_model::playground::sleep::SleepAfter;
use play_model::playground::state::DesiredState;
use play_model::time;

const COLUMNS: &str = "p.id, p.account_id, p.name, p.description, p.base_compose_yaml, p.services, \
     p.persist_volumes, p.playzone_id, p.sleep_after_secs, p.created_at, p.updated_at";

/// The Playgrounds that hold a Playspec: not destroyed, and not a finished
/// job whose host objects are gone. (The status is a literal here, so the
/// text stays a constant; a test checks it is `PlaygroundStatus::Destroyed`.)
const HOLDS: &str = concat!("g.status <> 'destroyed' AND ", super::job_results::holds_host!());

fn from_row(row: &AnyRow) -> Result<Playspec> {
    let playspec = columns!(
        row,
        "playspecs",
        Playspec {
            id,
            account_id,
            name,
            description,
            base_compose_yaml,
            services => json,
            persist_volumes => flag,
            playzone_id,
            sleep_after: SleepAfter::from_db(sqlx::Row::try_get(row, "sleep_after_secs")?),
            created_at => time,
            updated_at => time,
        }
    );
    // Checked here, so that every read of a corrupt row fails the same way
    // and `definitions` cannot fail on a Playspec read from the store.
    playspec.definitions()?;
    Ok(playspec)
}

fn services_json(services: &[ServiceDefinition]) -> Result<String> {
    serde_json::to_string(services).map_err(|e| Error::Internal(format!("services do not serialise: {e}")))
}

fn name_taken(name: &str) -> Error {
    Error::field("playspec.name", format!("a Playspec named {name:?} already exists"))
}

pub async fn create(on: impl Into<On<'_>>, by: Acting, new: PlayspecFields, limits: &QuotaLimits) -> Result<Playspec> {
    let Acting { account_id, actor } = by;
    on.into()
        .write(async |conn| {
            let missing = || Error::Internal("playspec create without a required field".into());
            let name = new.name.ok_or_else(missing)?;
            quotas::check(conn, account_id, Resource::Playspecs, limits).await?;
            let now = time::to_db(&time::now());
            let insert = sqlx::query(
                "INSERT INTO playspecs (account_id, name, description, base_compose_yaml, services, persist_volumes, \
         created_at, updated_at, playzone_id, sleep_after_secs) VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9) \
         RETURNING id",
            )
            .bind(account_id)
            .bind(&name)
            .bind(new.description.unwrap_or_default())
            .bind(new.base_compose_yaml.ok_or_else(missing)?)
            .bind(services_json(&new.services.unwrap_or_default())?)
            .bind(flag(new.persist_volumes.unwrap_or(false)))
            .bind(&now)
            .bind(new.playzone_id.flatten())
            .bind(new.sleep_after.unwrap_or_default().to_db());
            let id = insert_returning_id(conn, insert, || name_taken(&name)).await?;
            events::record(conn, NewEvent::new(account_id, "playspec", id, "created").actor(actor)).await?;
            get(&mut *conn, account_id, id).await
        })
        .await
}

pub async fn get(on: impl Into<On<'_>>, account_id: i64, id: i64) -> Result<Playspec> {
    let sql = format!("SELECT {COLUMNS} FROM playspecs p WHERE p.id = $1 AND p.account_id = $2");
    one_in(on, &sql, id, account_id, "playspec", from_row).await
}

/// The Playspecs of the Playgrounds [`super::playgrounds::running_in`]
/// lists, whatever their accounts (the edge's read; it pairs each with its
/// Playground by id and account).
pub async fn of_running_in(store: &Store, playroom_id: i64) -> Result<Vec<Playspec>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM playspecs p WHERE p.id IN \
         (SELECT playspec_id FROM playgrounds WHERE playroom_id = $1 AND desired_state = $2) ORDER BY p.id"
    );
    let query = sqlx::query(&sql).bind(playroom_id).bind(DesiredState::Running.as_str());
    super::shapes::all(store, query, from_row).await
}

pub async fn list(store: &Store, account_id: i64) -> Result<Vec<Playspec>> {
    let sql = format!("SELECT {COLUMNS} FROM playspecs p WHERE p.account_id = $1 ORDER BY p.id");
    all_of(store, &sql, account_id, from_row).await
}

/// How many Playgrounds hold Playspec `id` (see the module's invariant);
/// the Playspec is locked while this is above 0.
pub async fn holders(on: impl Into<On<'_>>, id: i64) -> Result<i64> {
    let sql = format!("SELECT COUNT(*) AS n FROM playgrounds g WHERE g.playspec_id = $1 AND {HOLDS}");
    let query = sqlx::query(&sql).bind(id);
    one(on, query, "playspec", |row| Ok(row.try_get::<i64, _>("n")?)).await
}

/// [`holders`] of each of the account's Playspecs that has any, in one
/// grouped read (the listing's).
pub async fn holders_by_playspec(store: &Store, account_id: i64) -> Result<HashMap<i64, i64>> {
    let sql = format!(
        "SELECT g.playspec_id, COUNT(*) AS n FROM playgrounds g \
         WHERE g.account_id = $1 AND g.playspec_id IS NOT NULL AND {HOLDS} GROUP BY g.playspec_id"
    );
    let rows =
        all_of(store, &sql, account_id, |row| Ok((row.try_get::<i64, _>("playspec_id")?, row.try_get("n")?))).await?;
    Ok(rows.into_iter().collect())
}

/// Fails with `Locked` when Playgrounds reference the Playspec. Call inside
/// the transaction of the change.
pub async fn ensure_unlocked(conn: &mut Conn, account_id: i64, id: i64) -> Result<Playspec> {
    // A launch share-locks the Playspec it uses (`playgrounds::insert_in`):
    // the count below and the launch cannot pass each other. The account
    // first, as a launch locks it (`quotas::check`) before the Playspec:
    // one order, so the two never wait for each other in a cycle.
    super::shapes::lock_row(conn, "accounts", account_id).await?;
    super::shapes::lock_row(conn, "playspecs", id).await?;
    let playspec = get(&mut *conn, account_id, id).await?;
    let count = holders(&mut *conn, id).await?;
    if count > 0 {
        return Err(Error::Locked(format!(
            "the Playspec is used by {count} Playground(s); destroy them before changing it"
        )));
    }
    Ok(playspec)
}

/// Marks the Playspec changed (mounted files, credentials) and writes its
/// `playspec.updated` event.
pub async fn touch_in(conn: &mut Conn, account_id: i64, id: i64, actor: Actor) -> Result<()> {
    let now = time::to_db(&time::now());
    set_by_id(&mut *conn, "UPDATE playspecs SET updated_at = $1 WHERE id = $2", now, id).await?;
    events::record(conn, NewEvent::new(account_id, "playspec", id, "updated").actor(actor)).await?;
    Ok(())
}

pub async fn update(on: impl Into<On<'_>>, by: Acting, id: i64, fields: PlayspecFields) -> Result<Playspec> {
    let Acting { account_id, actor } = by;
    on.into()
        .write(async |conn| {
            let current = ensure_unlocked(conn, account_id, id).await?;
            let name = fields.name.unwrap_or(current.name);
            let services = match fields.services {
                Some(services) => services_json(&services)?,
                None => current.services.to_string(),
            };
            let update = sqlx::query(
                "UPDATE playspecs SET name = $1, description = $2, base_compose_yaml = $3, services = $4, \
         persist_volumes = $5, updated_at = $6, playzone_id = $9, sleep_after_secs = $10 WHERE id = $7 AND account_id = $8",
            )
            .bind(&name)
            .bind(fields.description.unwrap_or(current.description))
            .bind(fields.base_compose_yaml.unwrap_or(current.base_compose_yaml))
            .bind(services)
            .bind(flag(fields.persist_volumes.unwrap_or(current.persist_volumes)))
            .bind(time::to_db(&time::now()))
            .bind(id)
            .bind(account_id)
            .bind(fields.playzone_id.unwrap_or(current.playzone_id))
            .bind(fields.sleep_after.unwrap_or(current.sleep_after).to_db());
            update_unique(conn, update, || name_taken(&name)).await?;
            events::record(conn, NewEvent::new(account_id, "playspec", id, "updated").actor(actor)).await?;
            get(&mut *conn, account_id, id).await
        })
        .await
}

/// Deletes an unlocked Playspec with its mounted files and credentials.
/// Destroyed Playgrounds that referenced it keep their rows, unlinked.
pub async fn delete(on: impl Into<On<'_>>, account_id: i64, id: i64, actor: Actor) -> Result<()> {
    on.into()
        .write(async |conn| {
            ensure_unlocked(conn, account_id, id).await?;
            sqlx::query("UPDATE playgrounds SET playspec_id = NULL WHERE playspec_id = $1")
                .bind(id)
                .execute(&mut *conn)
                .await?;
            delete_owned(conn, "playspecs", id, account_id).await?;
            events::record(conn, NewEvent::new(account_id, "playspec", id, "destroyed").actor(actor)).await?;
            Ok(())
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::{COLUMNS, HOLDS};
    use play_model::playground::PlaygroundStatus;

    /// A Playspec read is one row: the reconciler reads one per pass, so a
    /// count of its Playgrounds in it made every pass scale with them.
    #[test]
    fn a_read_does_not_count_the_holders() {
        assert!(!COLUMNS.contains("playgrounds"), "{COLUMNS}");
    }

    #[test]
    fn the_lock_counts_playgrounds_not_destroyed() {
        let condition = format!("g.status <> '{}'", PlaygroundStatus::Destroyed.as_str());
        assert!(HOLDS.contains(&condition), "{HOLDS}");
    }
}
