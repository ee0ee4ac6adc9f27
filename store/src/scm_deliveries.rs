//! Webhook deliveries from source-hosting providers (issue #29): each is
//! recorded by the provider's delivery id and by the SHA-256 of its raw
//! body, and its effect on installations applied in the same transaction,
//! so a redelivery (GitHub retries, or a person presses "Redeliver")
//! changes nothing a second time, and a crash before the commit leaves the
//! delivery unrecorded for the retry.
//!
//! The body's digest is a key because the delivery id is not signed
//! (issue #49, item 14): the signature covers the body only, so whoever
//! saw one signed delivery could send it again under a fresh id. GitHub
//! never sends one body under two ids ("Redeliver" keeps the id), and two
//! events it sends differ in their bodies (each carries its objects' new
//! state and times, to the second), so a known body under a new id is a
//! replay. The limits of that claim are in docs/repositories.md.
//!
//! Delivery ids and digests are kept for [`RETENTION`], longer than GitHub
//! lets a delivery be redelivered (3 days); older ones are deleted as new
//! ones arrive, so the table holds about a week of deliveries.

use sha2::{Digest, Sha256};

use super::repositories::{self, ask_sync_in};
use super::{Conn, Store};
use crate::Result;
use play_model::model::event::Actor;
use play_model::scm::github_hook::{Change, Delivery, Received};
use play_model::scm::model::{Provider, Push, Repository};
use play_model::time;
use play_model::wake::Wake;

/// How long a delivery id and a body's digest are remembered.
pub const RETENTION: chrono::Duration = chrono::Duration::days(7);

/// Records `delivery` of `provider` and applies `change`, unless its id or
/// its body was recorded within [`RETENTION`].
pub async fn receive(store: &Store, provider: Provider, delivery: Delivery<'_>, change: &Change) -> Result<Received> {
    let now = time::now();
    let digest = hex::encode(Sha256::digest(delivery.body));
    store
        .in_write(async |conn| {
            sqlx::query("DELETE FROM scm_deliveries WHERE received_at < $1")
                .bind(time::to_db(&(now - RETENTION)))
                .execute(&mut *conn)
                .await?;
            // No conflict target: either key (the id, or the body's digest)
            // makes the delivery a duplicate.
            let inserted = sqlx::query(
                "INSERT INTO scm_deliveries (provider, delivery_id, event, received_at, body_sha256) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            )
            .bind(provider.as_str())
            .bind(delivery.id)
            .bind(delivery.event)
            .bind(time::to_db(&now))
            .bind(&digest)
            .execute(&mut *conn)
            .await?;
            if inserted.rows_affected() > 0 {
                let woken = apply(conn, provider, change).await?;
                super::wakes::note_all(conn, woken.iter().map(|id| Wake::Playzone((*id).into())).collect()).await?;
                return Ok(Received::Applied(woken));
            }
            let same_id = sqlx::query("SELECT 1 AS found FROM scm_deliveries WHERE provider = $1 AND delivery_id = $2")
                .bind(provider.as_str())
                .bind(delivery.id)
                .fetch_optional(&mut *conn)
                .await?;
            Ok(if same_id.is_some() { Received::Redelivered } else { Received::Replayed })
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
                woken.extend(ask_sync_in(conn, repository.id, &[]).await?);
            }
        }
        Change::RepositoriesRemoved { installation, full_names } => {
            for full_name in full_names {
                for repository in repositories_of(conn, provider, installation, Some(full_name)).await? {
                    woken.extend(ask_sync_in(conn, repository.id, &[]).await?);
                    // The record of a repository the app no longer reaches
                    // goes; the repository itself stays on the provider.
                    sqlx::query("DELETE FROM repositories WHERE id = $1")
                        .bind(repository.id)
                        .execute(&mut *conn)
                        .await?;
                }
            }
        }
        Change::Renamed { installation, from, to } => {
            for repository in repositories_of(conn, provider, installation, Some(from)).await? {
                woken.extend(rename(conn, &repository, to).await?);
            }
        }
        Change::Visibility { installation, full_name, private } => {
            for repository in repositories_of(conn, provider, installation, Some(full_name)).await? {
                for sql in [
                    "UPDATE repositories SET private = $1 WHERE id = $2",
                    "UPDATE playzones SET private = $1 WHERE repository_id = $2",
                ] {
                    sqlx::query(sql).bind(super::flag(*private)).bind(repository.id).execute(&mut *conn).await?;
                }
                woken.extend(ask_sync_in(conn, repository.id, &[]).await?);
            }
        }
        Change::Pull { installation, full_name, pull } => {
            // Into the pull request index of every Playzone attached to
            // the repository; the woken Playzones wake their triggers.
            for repository in repositories_of(conn, provider, installation, Some(full_name)).await? {
                let query = sqlx::query("SELECT id FROM playzones WHERE repository_id = $1").bind(repository.id);
                for zone in super::shapes::column::<i64>(&mut *conn, query, "id").await? {
                    if super::playzone_pulls::record_in(conn, zone, pull).await? {
                        woken.push(zone);
                    }
                }
            }
        }
        Change::Pushed { installation, full_name, branch, before, after } => {
            // Recorded as a push of each account's record of the
            // repository, which wakes the Playzones attached to it.
            for repository in repositories_of(conn, provider, installation, Some(full_name)).await? {
                let push = Push {
                    repository_id: repository.id,
                    branch: branch.clone(),
                    old_sha: before.clone(),
                    new_sha: after.clone(),
                };
                woken.extend(
                    repositories::record_pushes_in(conn, &repository, std::slice::from_ref(&push), Actor::System, &[])
                        .await?,
                );
            }
        }
    }
    Ok(woken)
}

/// Renames `repository` to `to` (`owner/name`, recorded in lowercase),
/// and the clone URL of the Playzones attached to it, which sync at once;
/// their ids. When the account has a record of the new name already (it
/// attached it since), the old record goes instead, and its Playzones say
/// that access was lost.
async fn rename(conn: &mut Conn, repository: &Repository, to: &str) -> Result<Vec<i64>> {
    let name = to.split_once('/').map_or(to, |(_, name)| name).to_ascii_lowercase();
    let query = sqlx::query("SELECT id FROM repositories WHERE installation_id = $1 AND owner = $2 AND name = $3")
        .bind(repository.installation_id)
        .bind(&repository.full_name.owner)
        .bind(&name);
    let woken = ask_sync_in(conn, repository.id, &[]).await?;
    if !super::shapes::column::<i64>(&mut *conn, query, "id").await?.is_empty() {
        sqlx::query("DELETE FROM repositories WHERE id = $1").bind(repository.id).execute(&mut *conn).await?;
        return Ok(woken);
    }
    sqlx::query("UPDATE repositories SET name = $1 WHERE id = $2")
        .bind(&name)
        .bind(repository.id)
        .execute(&mut *conn)
        .await?;
    let old_tail = format!("/{}.git", repository.full_name);
    let new_tail = format!("/{}/{name}.git", repository.full_name.owner);
    let query = sqlx::query("SELECT id, scm_url FROM playzones WHERE repository_id = $1").bind(repository.id);
    let zones = super::shapes::all(&mut *conn, query, |row| {
        Ok((sqlx::Row::try_get::<i64, _>(row, "id")?, sqlx::Row::try_get::<String, _>(row, "scm_url")?))
    })
    .await?;
    for (id, url) in zones {
        if let Some(base) = url.strip_suffix(&old_tail) {
            sqlx::query("UPDATE playzones SET scm_url = $1 WHERE id = $2")
                .bind(format!("{base}{new_tail}"))
                .bind(id)
                .execute(&mut *conn)
                .await?;
        }
    }
    Ok(woken)
}

/// The repositories recorded for the provider's `installation`, or those
/// named `full_name` among them (compared without case, as GitHub does).
async fn repositories_of(
    conn: &mut Conn,
    provider: Provider,
    installation: &str,
    full_name: Option<&str>,
) -> Result<Vec<Repository>> {
    let all = repositories::of_installation_in(conn, provider, installation).await?;
    Ok(all.into_iter().filter(|r| full_name.is_none_or(|f| f.eq_ignore_ascii_case(&r.full_name.to_string()))).collect())
}
