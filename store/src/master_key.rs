//! The master key's fingerprint, recorded by the first process that uses
//! the database (migration 0024), so that a replica started with another
//! key file is refused at start: with another key its tokens would be
//! refused by every other replica and it could open none of the stored
//! secrets.

use sqlx::Row;

use super::Store;
use crate::Result;
use play_model::model::installation::KeyCheck;

/// The recorded fingerprint, if any.
pub async fn recorded(store: &Store) -> Result<Option<String>> {
    Ok(sqlx::query("SELECT fingerprint FROM master_key WHERE id = 1")
        .fetch_optional(store.pool())
        .await?
        .map(|row| row.try_get("fingerprint"))
        .transpose()?)
}

/// Records `fingerprint` if none is, else compares. Two processes starting
/// at once on an empty database both try to record; the row's key lets
/// one win, and the other compares with it.
pub async fn check(store: &Store, fingerprint: &str) -> Result<KeyCheck> {
    let inserted = sqlx::query(
        "INSERT INTO master_key (id, fingerprint, recorded_at) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING",
    )
    .bind(fingerprint)
    .bind(play_model::time::to_db(&play_model::time::now()))
    .execute(store.pool())
    .await?
    .rows_affected();
    if inserted == 1 {
        return Ok(KeyCheck::Recorded);
    }
    match recorded(store).await? {
        Some(recorded) if recorded == fingerprint => Ok(KeyCheck::Matches),
        Some(recorded) => Ok(KeyCheck::Differs { recorded }),
        // The insert conflicted with a row that is gone: deleted behind
        // play's back between the two statements.
        None => Err(crate::Error::Internal("the master key's fingerprint row vanished; start again".into())),
    }
}
