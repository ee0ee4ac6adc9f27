//! A Playzone's pull request index (`playzone_pulls`, issue #30): the
//! provider's pull requests on the Playzone's repository, each one's state
//! and head, as the trigger loop's list and GitHub's `pull_request`
//! deliveries described them.
//!
//! Invariants:
//! - **The later description wins.** A row changes only for a description
//!   whose `updated_at` (the provider's time of the change) is later than
//!   the stored one, or equal and closed: a list read before a pull
//!   request closed, written after the `closed` delivery, never reopens
//!   it; a delivery of `reopened` is later and does.
//! - Closed rows are kept for [`CLOSED_RETENTION`] (the fence above needs
//!   them), then deleted as rows are recorded.
//! - Read by Playzone id only: callers read the Playzone in the account
//!   first, or are the trigger loop that found it for its account.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::On;
use super::shapes::{all, maybe_one};
use super::{Conn, Store, flag, is_set, time_column};
use crate::Result;
use play_model::scm::pulls::{PullRequest, PullState};
use play_model::time;

/// How long a closed pull request's row is kept.
pub const CLOSED_RETENTION: chrono::Duration = chrono::Duration::days(7);

const COLUMNS: &str = "number, state, head_sha, head_ref, head_repo, base_ref, fork, title, html_url, pr_updated_at";

fn from_row(row: &AnyRow) -> Result<PullRequest> {
    let state: String = row.try_get("state")?;
    let number: i64 = row.try_get("number")?;
    Ok(PullRequest {
        number: u64::try_from(number).unwrap_or_default(),
        state: PullState::parse(&state).unwrap_or(PullState::Closed),
        head_sha: row.try_get("head_sha")?,
        head_ref: row.try_get("head_ref")?,
        head_repo: row.try_get("head_repo")?,
        base_ref: row.try_get("base_ref")?,
        fork: is_set(row.try_get("fork")?),
        title: row.try_get("title")?,
        html_url: row.try_get("html_url")?,
        updated_at: time_column(row, "pr_updated_at")?,
    })
}

/// Records `pull` for Playzone `playzone_id` when it is later than the
/// stored row (see the module invariants), in the caller's transaction;
/// whether the row changed.
///
/// One statement, so two writers of the same pull request cannot both
/// find no row and both insert: the trigger loop's list and a
/// `pull_request` delivery of a just-opened pull request did that on
/// PostgreSQL (read committed), and the second insert's primary-key
/// violation answered the delivery with a 500. The "later" rule runs in
/// the conflict clause; timestamps are stored as fixed-width RFC 3339
/// (`time::to_db`), so text order is time order.
pub async fn record_in(conn: &mut Conn, playzone_id: i64, pull: &PullRequest) -> Result<bool> {
    let number = i64::try_from(pull.number).unwrap_or(i64::MAX);
    let now = time::to_db(&time::now());
    let written = sqlx::query(
        "INSERT INTO playzone_pulls (playzone_id, number, state, head_sha, head_ref, head_repo, base_ref, fork, \
         title, html_url, pr_updated_at, recorded_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
         ON CONFLICT (playzone_id, number) DO UPDATE SET state = excluded.state, head_sha = excluded.head_sha, \
         head_ref = excluded.head_ref, head_repo = excluded.head_repo, base_ref = excluded.base_ref, \
         fork = excluded.fork, title = excluded.title, html_url = excluded.html_url, \
         pr_updated_at = excluded.pr_updated_at, recorded_at = excluded.recorded_at \
         WHERE excluded.pr_updated_at > playzone_pulls.pr_updated_at \
         OR (excluded.pr_updated_at = playzone_pulls.pr_updated_at AND excluded.state = 'closed' \
         AND playzone_pulls.state <> 'closed')",
    )
    .bind(playzone_id)
    .bind(number)
    .bind(pull.state.as_str())
    .bind(&pull.head_sha)
    .bind(&pull.head_ref)
    .bind(&pull.head_repo)
    .bind(&pull.base_ref)
    .bind(flag(pull.fork))
    .bind(&pull.title)
    .bind(&pull.html_url)
    .bind(time::to_db(&pull.updated_at))
    .bind(&now)
    .execute(&mut *conn)
    .await?;
    Ok(written.rows_affected() > 0)
}

/// Records `pulls` (as [`record_in`]) in one transaction, and deletes the
/// closed rows past [`CLOSED_RETENTION`].
pub async fn record(store: &Store, playzone_id: i64, pulls: &[PullRequest]) -> Result<()> {
    store
        .in_write(async |conn| {
            let old = time::to_db(&(time::now() - CLOSED_RETENTION));
            sqlx::query("DELETE FROM playzone_pulls WHERE playzone_id = $1 AND state = 'closed' AND recorded_at < $2")
                .bind(playzone_id)
                .bind(old)
                .execute(&mut *conn)
                .await?;
            for pull in pulls {
                record_in(conn, playzone_id, pull).await?;
            }
            Ok(())
        })
        .await
}

/// The index: every pull request recorded, open and closed, by number.
pub async fn list(store: &Store, playzone_id: i64) -> Result<Vec<PullRequest>> {
    let sql = format!("SELECT {COLUMNS} FROM playzone_pulls WHERE playzone_id = $1 ORDER BY number");
    all(store, sqlx::query(&sql).bind(playzone_id), from_row).await
}

/// The head commit recorded for pull request `number` (its pin).
pub async fn head(on: impl Into<On<'_>>, playzone_id: i64, number: u64) -> Result<Option<String>> {
    let query = sqlx::query("SELECT head_sha FROM playzone_pulls WHERE playzone_id = $1 AND number = $2")
        .bind(playzone_id)
        .bind(i64::try_from(number).unwrap_or(i64::MAX));
    maybe_one(on, query, |row| Ok(row.try_get("head_sha")?)).await
}

/// Forgets the whole index of Playzone `id`, in the caller's transaction
/// (a new URL, a delete).
pub(super) async fn forget_in(conn: &mut Conn, id: i64) -> Result<()> {
    sqlx::query("DELETE FROM playzone_pulls WHERE playzone_id = $1").bind(id).execute(&mut *conn).await?;
    Ok(())
}

#[cfg(test)]
#[path = "playzone_pulls_tests.rs"]
mod tests;
