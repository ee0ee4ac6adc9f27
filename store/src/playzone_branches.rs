//! A Playzone's branch index (`playzone_branches`: each branch's name and
//! the commit it was at) and the records of the sync passes that keep it.
//! [`super::playzones`] re-exports what callers use, so they name these
//! functions there, beside the Playzone.
//!
//! Invariants:
//! - Only a sync pass writes the index, fenced by the sync loop's lease
//!   ([`record_sync`], [`record_sync_error`], through
//!   `leases::begin_fenced`): a replica that lost the lease writes nothing.
//!   The one other write is `forget_in`, in the transaction of a
//!   Playzone's new URL or delete (the branches were another repository's).
//! - A pass records the `generation` it started from in
//!   `synced_generation`, so a change made during a pass is synced by the
//!   next one; a failed pass keeps the index and the Compose file found
//!   before.
//! - The index is read by Playzone id only: callers have read the Playzone
//!   in the account first (`playzones::get`), which scopes it.

use std::collections::BTreeMap;

use sqlx::Row;

use super::On;
use super::fence::{Fence, Fenced};
use super::shapes::{all, maybe_one};
use super::{Conn, Store, leases};
use crate::Result;
use play_model::playzone::Status;
use play_model::playzone::model::{Branch, BranchChanges, SyncResult};
use play_model::time;

/// The branch index: `first` (the default branch) ahead of the others,
/// then by name; with `query`, only names containing it (without case); at
/// most `limit`.
pub async fn branches(
    store: &Store,
    id: i64,
    query: Option<&str>,
    first: Option<&str>,
    limit: usize,
) -> Result<Vec<Branch>> {
    // The filter runs here, not in SQL: LIKE's wildcards and case rules
    // differ between the backends, and an index holds at most the
    // gateway's branch bound.
    let rows = sqlx::query(
        "SELECT name, commit_sha, updated_at FROM playzone_branches WHERE playzone_id = $1 \
         ORDER BY CASE WHEN name = $2 THEN 0 ELSE 1 END, name",
    )
    .bind(id)
    .bind(first.unwrap_or(""))
    .fetch_all(store.pool())
    .await?;
    let needle = query.map(str::to_lowercase);
    let mut out = Vec::new();
    for row in &rows {
        if out.len() >= limit {
            break;
        }
        let name: String = row.try_get("name")?;
        if needle.as_ref().is_some_and(|n| !name.to_lowercase().contains(n.as_str())) {
            continue;
        }
        out.push(Branch {
            name,
            commit: row.try_get("commit_sha")?,
            updated_at: super::time_column(row, "updated_at")?,
        });
    }
    Ok(out)
}

/// The commit a branch of the index points at; for a pull request's pin
/// name (`pull/<n>/head`), its head in the pull request index.
pub async fn branch_commit(on: impl Into<On<'_>>, id: i64, branch: &str) -> Result<Option<String>> {
    if let Some(number) = play_model::scm::pulls::pull_number(branch) {
        return super::playzone_pulls::head(on, id, number).await;
    }
    let query = sqlx::query("SELECT commit_sha FROM playzone_branches WHERE playzone_id = $1 AND name = $2")
        .bind(id)
        .bind(branch);
    maybe_one(on, query, |row| Ok(row.try_get("commit_sha")?)).await
}

/// Records a successful sync, fenced by the sync loop's lease: the branch
/// index is brought to `result.branches` writing only the rows that
/// changed, the status becomes `active`. Returns how the index moved.
pub async fn record_sync(
    store: &Store,
    fence: Fence<'_>,
    id: i64,
    result: &SyncResult,
) -> Result<Fenced<BranchChanges>> {
    let written = leases::write_fenced(store, fence, id, async |tx| {
        let exists = sqlx::query("SELECT id FROM playzones WHERE id = $1").bind(id).fetch_optional(&mut *tx).await?;
        if exists.is_none() {
            return Ok(BranchChanges::default());
        }
        let now = time::to_db(&time::now());
        let query = sqlx::query("SELECT name, commit_sha FROM playzone_branches WHERE playzone_id = $1").bind(id);
        let mut stored: BTreeMap<String, String> =
            all(&mut *tx, query, |row| Ok((row.try_get("name")?, row.try_get("commit_sha")?))).await?.into_iter().collect();
        let mut changes = BranchChanges::default();
        for branch in &result.branches {
            match stored.remove(&branch.name) {
                Some(commit) if commit == branch.commit => {}
                Some(_) => {
                    sqlx::query("UPDATE playzone_branches SET commit_sha = $1, updated_at = $2 WHERE playzone_id = $3 AND name = $4")
                        .bind(&branch.commit)
                        .bind(&now)
                        .bind(id)
                        .bind(&branch.name)
                        .execute(&mut *tx)
                        .await?;
                    changes.moved.push(branch.name.clone());
                }
                None => {
                    sqlx::query(
                        "INSERT INTO playzone_branches (playzone_id, name, commit_sha, updated_at) VALUES ($1, $2, $3, $4)",
                    )
                    .bind(id)
                    .bind(&branch.name)
                    .bind(&branch.commit)
                    .bind(&now)
                    .execute(&mut *tx)
                    .await?;
                    changes.added.push(branch.name.clone());
                }
            }
        }
        for name in stored.into_keys() {
            sqlx::query("DELETE FROM playzone_branches WHERE playzone_id = $1 AND name = $2")
                .bind(id)
                .bind(&name)
                .execute(&mut *tx)
                .await?;
            changes.removed.push(name);
        }
        sqlx::query(
            "UPDATE playzones SET status = $7, status_message = NULL, default_branch = $1, compose_file = $2, \
             compose_commit = $3, synced_generation = $4, last_synced_at = $5, last_sync_attempt_at = $5 WHERE id = $6",
        )
        .bind(&result.default_branch)
        .bind(&result.compose_file)
        .bind(&result.compose_commit)
        .bind(result.generation)
        .bind(&now)
        .bind(id)
        .bind(Status::Active.as_str())
        .execute(&mut *tx)
        .await?;
        // The triggers following the Playzone look at its branch index.
        let query = sqlx::query("SELECT id FROM triggers WHERE playzone_id = $1 ORDER BY id").bind(id);
        let triggers = super::shapes::column::<i64>(&mut *tx, query, "id").await?;
        super::wakes::note_all(tx, triggers.into_iter().map(|id| play_model::wake::Wake::Trigger(id.into())).collect()).await?;
        Ok(changes)
    })
    .await?;
    if let Fenced::Held(changes) = &written
        && !(changes.moved.is_empty() && changes.added.is_empty() && changes.removed.is_empty())
    {
        // Whether a Playground's built services are outdated follows the
        // branches (`store::local_writes`).
        store.local_writes().mark_all();
    }
    Ok(written)
}

/// Records a failed sync, fenced like [`record_sync`]: status `error` with
/// `message`; the branch index and the Compose file found before stay.
pub async fn record_sync_error(
    store: &Store,
    fence: Fence<'_>,
    id: i64,
    generation: i64,
    message: &str,
) -> Result<Fenced> {
    leases::write_fenced(store, fence, id, async |tx| {
        sqlx::query(
            "UPDATE playzones SET status = $5, status_message = $1, synced_generation = $2, \
             last_sync_attempt_at = $3 WHERE id = $4",
        )
        .bind(message)
        .bind(generation)
        .bind(time::to_db(&time::now()))
        .bind(id)
        .bind(Status::Error.as_str())
        .execute(&mut *tx)
        .await?;
        Ok(())
    })
    .await
}

/// Forgets the whole index of Playzone `id`, in the caller's transaction
/// (a new URL, a delete).
pub(super) async fn forget_in(conn: &mut Conn, id: i64) -> Result<()> {
    sqlx::query("DELETE FROM playzone_branches WHERE playzone_id = $1").bind(id).execute(&mut *conn).await?;
    Ok(())
}
