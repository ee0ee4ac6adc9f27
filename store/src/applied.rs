//! Rows of `applied_objects`: which API object each manifest object of an
//! account stands for, and what the last apply of it left (migration
//! 0023 explains the columns).
//!
//! Invariant: every write checks the row's `version` (an insert its
//! unique `(account, kind, name)`): a concurrent apply that planned from
//! an older version fails with [`Error::Conflict`] and its whole
//! transaction rolls back, so two applies of one object never interleave.

use sqlx::Any;
use sqlx::any::{AnyArguments, AnyRow};
use sqlx::query::Query;

use super::On;
use super::shapes::{all_of, column};
use super::{Conn, OnUnique};
use crate::{Error, Result};
use play_model::apply::Kind;
use play_model::apply::model::{Applied, AppliedFields};
use play_model::time;

const COLUMNS: &str = "id, account_id, kind, name, apply_set, object_id, labels, spec, digest, live, revision, \
                       version, created_at, updated_at";

fn from_row(row: &AnyRow) -> Result<Applied> {
    Ok(columns!(
        row,
        "applied_objects",
        Applied {
            id,
            account_id,
            kind => text,
            name,
            apply_set,
            object_id,
            labels => json,
            spec => json,
            digest,
            live => json,
            revision,
            version,
            created_at => time,
            updated_at => time,
        }
    ))
}

fn json<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Internal(format!("applied object: {e}")))
}

fn conflict(kind: Kind, name: &str) -> Error {
    Error::Conflict(format!(
        "{kind} {name:?} was changed by another apply at the same time; nothing of this apply was written, apply again"
    ))
}

/// `query` with `fields` bound to its next seven parameters: apply_set,
/// object_id, labels, spec, digest, live and revision, in that order (the
/// insert and the update of a row).
fn bind_fields<'q>(
    query: Query<'q, Any, AnyArguments<'q>>,
    fields: &'q AppliedFields,
) -> Result<Query<'q, Any, AnyArguments<'q>>> {
    Ok(query
        .bind(fields.apply_set.clone())
        .bind(fields.object_id)
        .bind(json(&fields.labels)?)
        .bind(json(&fields.spec)?)
        .bind(&fields.digest)
        .bind(json(&fields.live)?)
        .bind(fields.revision.clone()))
}

/// A write of `current` that found no row at its version (`changed` 0)
/// lost to another apply: a conflict.
fn at_version(changed: u64, current: &Applied) -> Result<()> {
    if changed == 0 {
        return Err(conflict(current.kind, &current.name));
    }
    Ok(())
}

/// The account's applied objects, by kind and name.
pub async fn list(on: impl Into<On<'_>>, account_id: i64) -> Result<Vec<Applied>> {
    let sql = format!("SELECT {COLUMNS} FROM applied_objects WHERE account_id = $1 ORDER BY kind, name");
    all_of(on, &sql, account_id, from_row).await
}

/// Records a newly applied object; another apply that recorded it first
/// is a [`Error::Conflict`].
pub async fn insert_in(conn: &mut Conn, account_id: i64, kind: Kind, name: &str, fields: &AppliedFields) -> Result<()> {
    let now = time::to_db(&time::now());
    let query = sqlx::query(
        "INSERT INTO applied_objects (account_id, kind, name, apply_set, object_id, labels, spec, digest, live, \
         revision, version, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 1, $11, $11)",
    )
    .bind(account_id)
    .bind(kind.as_str())
    .bind(name);
    let inserted = bind_fields(query, fields)?.bind(&now).execute(&mut *conn).await;
    inserted.on_unique(|| conflict(kind, name))?;
    Ok(())
}

/// Replaces what the last apply left, if the row is still at `version`.
pub async fn update_in(conn: &mut Conn, current: &Applied, fields: &AppliedFields) -> Result<()> {
    let query = sqlx::query(
        "UPDATE applied_objects SET apply_set = $1, object_id = $2, labels = $3, spec = $4, digest = $5, live = $6, \
         revision = $7, version = version + 1, updated_at = $8 WHERE id = $9 AND version = $10",
    );
    let result = bind_fields(query, fields)?
        .bind(time::to_db(&time::now()))
        .bind(current.id)
        .bind(current.version)
        .execute(&mut *conn)
        .await?;
    at_version(result.rows_affected(), current)
}

/// Forgets a pruned object, if the row is still at its version.
pub async fn delete_in(conn: &mut Conn, current: &Applied) -> Result<()> {
    let result = sqlx::query("DELETE FROM applied_objects WHERE id = $1 AND version = $2")
        .bind(current.id)
        .bind(current.version)
        .execute(&mut *conn)
        .await?;
    at_version(result.rows_affected(), current)
}

/// Remembers a Playspec revision to delete once no Playground holds it.
/// One statement: two applies retiring the same revision at once (a prune
/// and a revert) both succeed, where a delete and an insert made the
/// second fail on the key.
pub async fn retire_in(conn: &mut Conn, account_id: i64, playspec_id: i64) -> Result<()> {
    sqlx::query("INSERT INTO applied_retired (playspec_id, account_id) VALUES ($1, $2) ON CONFLICT DO NOTHING")
        .bind(playspec_id)
        .bind(account_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The account's retired revisions.
pub async fn retired_in(conn: &mut Conn, account_id: i64) -> Result<Vec<i64>> {
    let query = sqlx::query("SELECT playspec_id FROM applied_retired WHERE account_id = $1 ORDER BY playspec_id")
        .bind(account_id);
    column(conn, query, "playspec_id").await
}

/// Forgets a retired revision (deleted, or gone).
pub async fn forget_retired_in(conn: &mut Conn, playspec_id: i64) -> Result<()> {
    sqlx::query("DELETE FROM applied_retired WHERE playspec_id = $1").bind(playspec_id).execute(&mut *conn).await?;
    Ok(())
}

#[cfg(test)]
mod tests {

    use super::*;

    /// Two applies retire the same revision at once (a prune and a
    /// revert; PostgreSQL): each deleted, found nothing and inserted, and
    /// the second insert failed on the key, a 500 for that apply.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn two_applies_retiring_one_revision_at_once_both_succeed() {
        let db = crate::testing::store().await;
        let (account, _) = crate::accounts::create_account(&db.store, "acme").await.unwrap();
        for playspec in 1..=30 {
            let mut retiring = tokio::task::JoinSet::new();
            for _ in 0..4 {
                let store = db.store.clone();
                retiring.spawn(async move {
                    let mut tx = store.write().await?;
                    retire_in(&mut tx, account.id, playspec).await?;
                    store.commit(tx).await?;
                    Ok::<_, crate::Error>(())
                });
            }
            while let Some(done) = retiring.join_next().await {
                done.unwrap().unwrap();
            }
        }
        let mut tx = db.store.write().await.unwrap();
        assert_eq!(retired_in(&mut tx, account.id).await.unwrap(), (1..=30).collect::<Vec<i64>>());
    }
}
