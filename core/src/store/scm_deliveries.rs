//! Webhook deliveries from source-hosting providers (issue #29): each is
//! recorded by the provider's delivery id and its effect on installations
//! applied in the same transaction, so a redelivery (GitHub retries, or a
//! person presses "Redeliver") changes nothing a second time, and a crash
//! before the commit leaves the delivery unrecorded for the retry.
//!
//! Delivery ids are kept for [`RETENTION`], longer than GitHub lets a
//! delivery be redelivered (3 days); older ones are deleted as new ones
//! arrive, so the table holds about a week of deliveries.

use sqlx::Row;

use super::repositories::ask_sync_in;
use super::{Conn, Store, shapes};
use crate::Result;
use crate::scm::github_hook::Change;
use crate::scm::model::Provider;
use crate::time;

/// How long a delivery id is remembered.
pub const RETENTION: chrono::Duration = chrono::Duration::days(7);

/// Records delivery `delivery_id` of `provider` and applies `change`:
/// `None` when the delivery was recorded before (nothing changes), else
/// the Playzones whose sync should run now (they read through an
/// installation or repository that changed).
pub async fn receive(
    store: &Store,
    provider: Provider,
    delivery_id: &str,
    event: &str,
    change: &Change,
) -> Result<Option<Vec<i64>>> {
    let now = time::now();
    store
        .in_write(async |conn| {
            sqlx::query("DELETE FROM scm_deliveries WHERE received_at < $1")
                .bind(time::to_db(&(now - RETENTION)))
                .execute(&mut *conn)
                .await?;
            let inserted = sqlx::query(
                "INSERT INTO scm_deliveries (provider, delivery_id, event, received_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (provider, delivery_id) DO NOTHING",
            )
            .bind(provider.as_str())
            .bind(delivery_id)
            .bind(event)
            .bind(time::to_db(&now))
            .execute(&mut *conn)
            .await?;
            if inserted.rows_affected() == 0 {
                return Ok(None);
            }
            apply(conn, provider, change).await.map(Some)
        })
        .await
}

async fn apply(conn: &mut Conn, provider: Provider, change: &Change) -> Result<Vec<i64>> {
    let mut woken = Vec::new();
    match change {
        Change::None => {}
        Change::Status { installation, status } => {
            sqlx::query("UPDATE scm_installations SET status = $1 WHERE provider = $2 AND external_id = $3")
                .bind(status.as_str())
                .bind(provider.as_str())
                .bind(installation)
                .execute(&mut *conn)
                .await?;
            for repository in repositories_of(conn, provider, installation, None).await? {
                woken.extend(ask_sync_in(conn, repository, &[]).await?);
            }
        }
        Change::RepositoriesRemoved { installation, full_names } => {
            for full_name in full_names {
                for repository in repositories_of(conn, provider, installation, Some(full_name)).await? {
                    woken.extend(ask_sync_in(conn, repository, &[]).await?);
                    // The record of a repository the app no longer reaches
                    // goes; the repository itself stays on the provider.
                    sqlx::query("DELETE FROM repositories WHERE id = $1").bind(repository).execute(&mut *conn).await?;
                }
            }
        }
    }
    Ok(woken)
}

/// The repositories recorded for the provider's `installation`, or the one
/// named `full_name` among them.
async fn repositories_of(
    conn: &mut Conn,
    provider: Provider,
    installation: &str,
    full_name: Option<&str>,
) -> Result<Vec<i64>> {
    let query = sqlx::query(
        "SELECT r.id, r.owner, r.name FROM repositories r JOIN scm_installations i ON i.id = r.installation_id \
         WHERE i.provider = $1 AND i.external_id = $2",
    )
    .bind(provider.as_str())
    .bind(installation);
    let rows = shapes::all(&mut *conn, query, |row| {
        Ok((
            row.try_get::<i64, _>("id")?,
            format!("{}/{}", row.try_get::<String, _>("owner")?, row.try_get::<String, _>("name")?),
        ))
    })
    .await?;
    Ok(rows
        .into_iter()
        .filter(|(_, name)| full_name.is_none_or(|f| f.eq_ignore_ascii_case(name)))
        .map(|(id, _)| id)
        .collect())
}
