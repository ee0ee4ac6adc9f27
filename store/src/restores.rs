//! Restores from a backup and the host objects the sweep quarantines
//! after one (issue #53, item 3).
//!
//! `play restore` records the restore ([`record`]); the Playroom sweep
//! reads the latest ([`latest`]) and, while its grace period lasts, stops
//! and keeps the objects of Playgrounds newer than the backup, listing
//! them here per Playroom ([`replace_quarantined`]); `play orphans` reads
//! the list ([`quarantined`]). The sweep writes the list whole at each
//! pass, so a removed object leaves it, and idempotently, so replicas
//! that sweep the same Playroom need no fencing.

use std::collections::BTreeSet;
use std::time::Duration;

use sqlx::Row;

use super::Store;
use super::shapes::all;
use crate::Result;
use play_model::model::restore::{QuarantinedObject, Restore};
use play_model::time::{self, Timestamp};

/// Records a restore of a backup taken at `backup_created_at` whose
/// highest Playground id was `last_playground_id`; its quarantine lasts
/// `grace` from now.
pub async fn record(
    store: &Store,
    backup_created_at: Timestamp,
    last_playground_id: i64,
    grace: Duration,
) -> Result<()> {
    let now = time::now();
    let until = now + chrono::Duration::from_std(grace).unwrap_or(chrono::Duration::MAX);
    sqlx::query(
        "INSERT INTO restores (restored_at, backup_created_at, last_playground_id, quarantine_until) \
         VALUES ($1, $2, $3, $4)",
    )
    .bind(time::to_db(&now))
    .bind(time::to_db(&backup_created_at))
    .bind(last_playground_id)
    .bind(time::to_db(&until))
    .execute(store.pool())
    .await?;
    Ok(())
}

/// The latest restore, if this store was ever restored.
pub async fn latest(store: &Store) -> Result<Option<Restore>> {
    let query = sqlx::query(
        "SELECT restored_at, backup_created_at, last_playground_id, quarantine_until FROM restores \
         ORDER BY id DESC LIMIT 1",
    );
    let rows = all(store, query, |r| {
        Ok(columns!(r, Restore {
            restored_at => time,
            backup_created_at => time,
            last_playground_id,
            quarantine_until => time
        }))
    })
    .await?;
    Ok(rows.into_iter().next())
}

/// Makes `objects` the quarantined objects of Playroom `playroom_id`: new
/// ones are added (stamped now), kept ones keep their time, the others go.
pub async fn replace_quarantined(store: &Store, playroom_id: i64, objects: &[QuarantinedObject]) -> Result<()> {
    let mut tx = store.write().await?;
    let listed: BTreeSet<String> = sqlx::query("SELECT object_id FROM quarantined_objects WHERE playroom_id = $1")
        .bind(playroom_id)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| r.try_get("object_id"))
        .collect::<std::result::Result<_, _>>()?;
    let keep: BTreeSet<&str> = objects.iter().map(|o| o.object_id.as_str()).collect();
    for gone in listed.iter().filter(|id| !keep.contains(id.as_str())) {
        sqlx::query("DELETE FROM quarantined_objects WHERE playroom_id = $1 AND object_id = $2")
            .bind(playroom_id)
            .bind(gone)
            .execute(&mut *tx)
            .await?;
    }
    for object in objects.iter().filter(|o| !listed.contains(&o.object_id)) {
        sqlx::query(
            "INSERT INTO quarantined_objects (playroom_id, object_id, kind, name, playground_id, quarantined_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (playroom_id, object_id) DO NOTHING",
        )
        .bind(playroom_id)
        .bind(&object.object_id)
        .bind(&object.kind)
        .bind(&object.name)
        .bind(object.playground_id)
        .bind(time::to_db(&object.quarantined_at))
        .execute(&mut *tx)
        .await?;
    }
    store.commit(tx).await
}

/// Every quarantined object, by Playroom, Playground and name.
pub async fn quarantined(store: &Store) -> Result<Vec<QuarantinedObject>> {
    let query = sqlx::query(
        "SELECT playroom_id, object_id, kind, name, playground_id, quarantined_at FROM quarantined_objects \
         ORDER BY playroom_id, playground_id, kind, name",
    );
    all(store, query, |r| {
        Ok(columns!(r, QuarantinedObject {
            playroom_id,
            object_id,
            kind,
            name,
            playground_id,
            quarantined_at => time
        }))
    })
    .await
}

#[cfg(test)]
#[path = "restores_tests.rs"]
mod tests;
