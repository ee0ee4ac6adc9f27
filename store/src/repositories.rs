//! Source-hosting installations, repositories and their pushes (issue
//! #29). Queries only; creating a repository on its host is the flow in
//! `play_core::scm::flows`.
//!
//! Invariants: every read is scoped by `account_id`, so another account's
//! repository reads as missing (404, never 403); a repository's name is
//! unique per installation and owner (the index decides a race); a push is
//! recorded, with its one `repo.push` event however many branches it
//! moved, in one transaction.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::quotas;
use super::write_shapes::update_touched;
use super::{Conn, OnUnique, Store, flag, shapes};
use super::{events, wakes};
use crate::{Error, Result};
use play_model::model::event::{Acting, Actor, NewEvent};
use play_model::model::quota::{QuotaLimits, Resource};
use play_model::scm::host::{AppRepository, ConfirmedInstallation};
use play_model::scm::model::{Installation, InstallationStatus, NewRepository, Provider, Push, Repository};
use play_model::scm::names::FullName;
use play_model::time;
use play_model::wake::Wake;

const INSTALLATION_COLUMNS: &str =
    "id, account_id, provider, external_id, status, account_login, organisation, created_at";

fn installation_from_row(row: &AnyRow) -> Result<Installation> {
    Ok(columns!(
        row,
        "scm_installations",
        Installation {
            id,
            account_id,
            provider => text,
            external_id,
            status => text,
            account_login,
            organisation => flag,
            created_at => time,
        }
    ))
}

/// The account's installation of play's own Git host, made on first use
/// (the operator enabled the built-in host for every account).
pub async fn builtin_installation_in(conn: &mut Conn, account_id: i64) -> Result<Installation> {
    sqlx::query(
        "INSERT INTO scm_installations (account_id, provider, external_id, created_at) VALUES ($1, $2, '', $3) \
         ON CONFLICT (account_id, provider, external_id) DO NOTHING",
    )
    .bind(account_id)
    .bind(Provider::Builtin.as_str())
    .bind(time::to_db(&time::now()))
    .execute(&mut *conn)
    .await?;
    let sql = format!(
        "SELECT {INSTALLATION_COLUMNS} FROM scm_installations \
         WHERE account_id = $1 AND provider = $2 AND external_id = ''"
    );
    let query = sqlx::query(&sql).bind(account_id).bind(Provider::Builtin.as_str());
    shapes::one(&mut *conn, query, "installation", installation_from_row).await
}

/// The account's installations, oldest first.
pub async fn installations(store: &Store, account_id: i64) -> Result<Vec<Installation>> {
    let sql = format!("SELECT {INSTALLATION_COLUMNS} FROM scm_installations WHERE account_id = $1 ORDER BY id");
    shapes::all_of(store, &sql, account_id, installation_from_row).await
}

const REPOSITORY_COLUMNS: &str = "r.id, r.account_id, r.installation_id, i.provider, r.owner, r.name, r.description, \
    r.private, r.default_branch, r.created_at, r.updated_at";
const REPOSITORY_FROM: &str = "repositories r JOIN scm_installations i ON i.id = r.installation_id";

fn repository_from_row(row: &AnyRow) -> Result<Repository> {
    Ok(columns!(
        row,
        "scm_installations",
        Repository {
            id,
            account_id,
            installation_id,
            provider => text,
            full_name: FullName { owner: row.try_get("owner")?, name: row.try_get("name")? },
            description,
            private => flag,
            default_branch,
            created_at => time,
            updated_at => time,
        }
    ))
}

/// Records a repository of `account_id` (checking its quota first) with
/// its `repo.created` event, or `repo.connected` when attach found it on
/// the provider; a name taken on that installation is [`Error::Conflict`].
/// `reservation` is the create's hold on the name
/// ([`repository_reservations`](super::repository_reservations)),
/// consumed here; without one, another create's live hold refuses it.
pub async fn insert_in(
    conn: &mut Conn,
    by: Acting,
    new: NewRepository<'_>,
    limits: &QuotaLimits,
    connected: bool,
    reservation: Option<i64>,
) -> Result<Repository> {
    let (account_id, actor) = (by.account_id, by.actor);
    super::repository_reservations::consume_in(conn, new.installation.id, new.full_name, reservation).await?;
    quotas::check(conn, account_id, Resource::Repositories, limits).await?;
    let now = time::to_db(&time::now());
    let taken = || Error::Conflict(format!("a repository named {} exists", new.full_name));
    let id: i64 = sqlx::query(
        "INSERT INTO repositories (account_id, installation_id, owner, name, description, private, default_branch, \
         created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING id",
    )
    .bind(account_id)
    .bind(new.installation.id)
    .bind(&new.full_name.owner)
    .bind(&new.full_name.name)
    .bind(new.description)
    .bind(flag(new.private))
    .bind(new.default_branch)
    .bind(&now)
    .fetch_one(&mut *conn)
    .await
    .on_unique(taken)?
    .try_get("id")?;
    let metadata = serde_json::json!({ "full_name": new.full_name.to_string() });
    let event = match connected {
        true => NewEvent::new(account_id, "repo", id, "connected"),
        false => NewEvent::new(account_id, "repo", id, "created"),
    };
    events::record(conn, event.actor(actor).metadata(metadata)).await?;
    get_in(conn, account_id, id).await
}

/// Records `found`, a repository installation `installation` reaches, for
/// the account `by` acts for (attach); recorded already, its privacy,
/// default branch and description are refreshed from the provider.
pub async fn connect(
    store: &Store,
    by: Acting,
    installation: &Installation,
    found: &AppRepository,
    limits: &QuotaLimits,
) -> Result<Repository> {
    store
        .in_write(async |conn| {
            let full = &found.full_name;
            let query =
                sqlx::query("SELECT id FROM repositories WHERE installation_id = $1 AND owner = $2 AND name = $3")
                    .bind(installation.id)
                    .bind(&full.owner)
                    .bind(&full.name);
            let Some(id) = shapes::column::<i64>(&mut *conn, query, "id").await?.pop() else {
                let new = NewRepository {
                    installation,
                    full_name: full,
                    description: &found.description,
                    private: found.private,
                    default_branch: &found.default_branch,
                };
                return insert_in(conn, by, new, limits, true, None).await;
            };
            sqlx::query(
                "UPDATE repositories SET private = $1, default_branch = $2, description = $3, updated_at = $4 \
                 WHERE id = $5",
            )
            .bind(flag(found.private))
            .bind(&found.default_branch)
            .bind(&found.description)
            .bind(time::to_db(&time::now()))
            .bind(id)
            .execute(&mut *conn)
            .await?;
            get_in(conn, by.account_id, id).await
        })
        .await
}

/// Sets repository `id`'s default branch (what its host chose at create).
pub async fn set_default_branch_in(conn: &mut Conn, id: i64, branch: &str) -> Result<()> {
    shapes::set_by_id(conn, "UPDATE repositories SET default_branch = $1 WHERE id = $2", branch, id).await
}

/// Sets a repository's description and visibility (apply), in the
/// caller's transaction.
pub async fn set_settings_in(conn: &mut Conn, id: i64, description: &str, private: bool) -> Result<()> {
    let update = sqlx::query("UPDATE repositories SET description = $1, private = $2, updated_at = $3 WHERE id = $4");
    update_touched(conn, update.bind(description).bind(flag(private)), id).await
}

pub async fn get_in(conn: &mut Conn, account_id: i64, id: i64) -> Result<Repository> {
    let sql = format!("SELECT {REPOSITORY_COLUMNS} FROM {REPOSITORY_FROM} WHERE r.id = $1 AND r.account_id = $2");
    shapes::one_in(&mut *conn, &sql, id, account_id, "repository", repository_from_row).await
}

/// The account's repository named `full` (on any of its installations;
/// the owner compared without case, as GitHub compares logins; the
/// oldest when two installations hold the name).
pub async fn by_name(store: &Store, account_id: i64, full: &FullName) -> Result<Repository> {
    let sql = format!(
        "SELECT {REPOSITORY_COLUMNS} FROM {REPOSITORY_FROM} \
         WHERE r.account_id = $1 AND LOWER(r.owner) = LOWER($2) AND r.name = $3 ORDER BY r.id LIMIT 1"
    );
    let query = sqlx::query(&sql).bind(account_id).bind(&full.owner).bind(&full.name);
    shapes::one(store, query, "repository", repository_from_row).await
}

/// The account's repositories, in id order.
pub async fn list(store: &Store, account_id: i64) -> Result<Vec<Repository>> {
    let sql = format!("SELECT {REPOSITORY_COLUMNS} FROM {REPOSITORY_FROM} WHERE r.account_id = $1 ORDER BY r.id");
    shapes::all_of(store, &sql, account_id, repository_from_row).await
}

/// Records `pushes` of repository `repository` with their `repo.push`
/// event, and asks for a sync of every Playzone (of any account) attached
/// to the repository or whose `scm_url` is one of `urls`, in the same
/// transaction: a recorded push always reaches the Playzones on it (its
/// commit wakes them; a process stopping first leaves the asked-for
/// generation to the loop's resync). Their ids. Access is checked by the
/// sync itself.
///
/// Every branch one push moved (a `git push` of several refs) is
/// recorded in one transaction with one `repo.push` event: a push of
/// thousands of branches is one write and one event, never one per
/// branch. Nothing is recorded for an empty `pushes`.
pub async fn record_pushes(
    store: &Store,
    repository: &Repository,
    pushes: &[Push],
    actor: Actor,
    urls: &[String],
) -> Result<Vec<i64>> {
    if pushes.is_empty() {
        return Ok(Vec::new());
    }
    store.in_write(async |conn| record_pushes_in(conn, repository, pushes, actor, urls).await).await
}

/// [`record_pushes`] in the caller's transaction (a provider's webhook
/// delivery records its pushes with the delivery). The event's `metadata`
/// is `{repository, branch, before, after, moves}`: `moves` lists every
/// branch as `{branch, before, after}` in the order given, and the
/// top-level `branch`, `before`, `after` repeat the first (the shape one
/// event per branch had, kept for receivers that read only those).
pub async fn record_pushes_in(
    conn: &mut Conn,
    repository: &Repository,
    pushes: &[Push],
    actor: Actor,
    urls: &[String],
) -> Result<Vec<i64>> {
    let Some(first) = pushes.first() else { return Ok(Vec::new()) };
    let now = time::to_db(&time::now());
    let mut moves = Vec::with_capacity(pushes.len());
    for push in pushes {
        sqlx::query(
            "INSERT INTO repository_pushes (repository_id, branch, old_sha, new_sha, pushed_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(repository.id)
        .bind(&push.branch)
        .bind(push.old_sha.as_deref())
        .bind(&push.new_sha)
        .bind(&now)
        .execute(&mut *conn)
        .await?;
        moves.push(serde_json::json!({"branch": push.branch, "before": push.old_sha, "after": push.new_sha}));
    }
    shapes::set_by_id(&mut *conn, "UPDATE repositories SET updated_at = $1 WHERE id = $2", &now, repository.id).await?;
    let metadata = serde_json::json!({
        "repository": repository.full_name.to_string(),
        "branch": first.branch,
        "before": first.old_sha,
        "after": first.new_sha,
        "moves": moves,
    });
    let event = NewEvent::new(repository.account_id, "repo", repository.id, "push").actor(actor);
    events::record(&mut *conn, event.metadata(metadata)).await?;
    ask_sync_in(conn, repository.id, urls).await
}

/// The repositories recorded through the provider's installation
/// `external_id`, of whichever account.
pub async fn of_installation_in(conn: &mut Conn, provider: Provider, external_id: &str) -> Result<Vec<Repository>> {
    let sql = format!(
        "SELECT {REPOSITORY_COLUMNS} FROM {REPOSITORY_FROM} WHERE i.provider = $1 AND i.external_id = $2 ORDER BY r.id"
    );
    let query = sqlx::query(&sql).bind(provider.as_str()).bind(external_id);
    shapes::all(&mut *conn, query, repository_from_row).await
}

/// Bumps the generation of the Playzones on repository `repository_id` or
/// at one of `urls` (see [`record_pushes`]); their ids.
pub(super) async fn ask_sync_in(conn: &mut Conn, repository_id: i64, urls: &[String]) -> Result<Vec<i64>> {
    let query = sqlx::query("SELECT id FROM playzones WHERE repository_id = $1").bind(repository_id);
    let mut ids = shapes::column::<i64>(&mut *conn, query, "id").await?;
    for url in urls {
        let query = sqlx::query("SELECT id FROM playzones WHERE scm_url = $1").bind(url);
        ids.extend(shapes::column::<i64>(&mut *conn, query, "id").await?);
    }
    ids.sort_unstable();
    ids.dedup();
    for id in &ids {
        sqlx::query("UPDATE playzones SET generation = generation + 1 WHERE id = $1")
            .bind(id)
            .execute(&mut *conn)
            .await?;
    }
    wakes::note_all(conn, ids.iter().map(|id| Wake::Playzone((*id).into())).collect()).await?;
    Ok(ids)
}

/// The name of account `account_id`: the owner of its repositories on
/// play's own Git host.
pub async fn owner_name_in(conn: &mut Conn, account_id: i64) -> Result<String> {
    let row = sqlx::query("SELECT name FROM accounts WHERE id = $1")
        .bind(account_id)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or(Error::NotFound("account"))?;
    Ok(row.try_get("name")?)
}

/// The repository named `full` on play's own Git host, whatever its
/// account (the Git protocol's routes, which authorise afterwards).
pub async fn builtin_by_name(store: &Store, full: &FullName) -> Result<Option<Repository>> {
    let sql = format!(
        "SELECT {REPOSITORY_COLUMNS} FROM {REPOSITORY_FROM} WHERE i.provider = $1 AND r.owner = $2 AND r.name = $3"
    );
    let query = sqlx::query(&sql).bind(Provider::Builtin.as_str()).bind(&full.owner).bind(&full.name);
    Ok(shapes::all(store, query, repository_from_row).await?.pop())
}

/// The repository named `full` that account `account_id` may read: its
/// own (on any of its installations), or a public one on play's own Git
/// host. Another account's private repository reads as missing.
pub async fn readable_by_name(store: &Store, account_id: i64, full: &FullName) -> Result<Repository> {
    let sql = format!(
        "SELECT {REPOSITORY_COLUMNS} FROM {REPOSITORY_FROM} WHERE r.owner = $1 AND r.name = $2 \
         AND (r.account_id = $3 OR (i.provider = $4 AND r.private = 0)) ORDER BY r.account_id = $3 DESC, r.id LIMIT 1"
    );
    let query = sqlx::query(&sql).bind(&full.owner).bind(&full.name).bind(account_id).bind(Provider::Builtin.as_str());
    shapes::one(store, query, "repository", repository_from_row).await
}

/// Deletes the account's repository `repository` (its pushes with it),
/// records `repo.deleted` and asks every Playzone attached to it to sync,
/// so that each says at once that access is lost; their ids, to wake.
/// The host's copy is removed by the caller after this commits.
pub async fn delete(store: &Store, repository: &Repository, actor: Actor) -> Result<Vec<i64>> {
    store.in_write(async |conn| delete_in(conn, repository, actor).await).await
}

/// [`delete`] in the caller's transaction (apply's prune).
pub async fn delete_in(conn: &mut Conn, repository: &Repository, actor: Actor) -> Result<Vec<i64>> {
    shapes::delete_owned(&mut *conn, "repositories", repository.id, repository.account_id).await?;
    let metadata = serde_json::json!({ "full_name": repository.full_name.to_string() });
    let event = NewEvent::new(repository.account_id, "repo", repository.id, "deleted").actor(actor);
    events::record(&mut *conn, event.metadata(metadata)).await?;
    ask_sync_in(conn, repository.id, &[]).await
}

/// The account's installation `id`.
pub async fn installation(store: &Store, account_id: i64, id: i64) -> Result<Installation> {
    let sql = format!("SELECT {INSTALLATION_COLUMNS} FROM scm_installations WHERE id = $1 AND account_id = $2");
    let mut conn = store.conn().await?;
    shapes::one_in(&mut *conn, &sql, id, account_id, "installation", installation_from_row).await
}

/// Removes the account's installation `id`: its repositories' records go
/// with it (a GitHub App's repositories stay on GitHub), and every
/// Playzone attached through it says that access is lost at its next
/// sync. play's own Git host keeps the repositories themselves, so its
/// installation is removed only once they are deleted
/// ([`Error::Conflict`] before).
pub async fn delete_installation(store: &Store, account_id: i64, id: i64) -> Result<()> {
    store
        .in_write(async |conn| {
            let sql = format!("SELECT {INSTALLATION_COLUMNS} FROM scm_installations WHERE id = $1 AND account_id = $2");
            let installation =
                shapes::one_in(&mut *conn, &sql, id, account_id, "installation", installation_from_row).await?;
            let query = sqlx::query("SELECT id FROM repositories WHERE installation_id = $1").bind(id);
            let held = shapes::column::<i64>(&mut *conn, query, "id").await?;
            if installation.provider == Provider::Builtin && !held.is_empty() {
                return Err(Error::Conflict(format!(
                    "play's Git host keeps {} repositories of this account: delete them first \
                     (DELETE /api/repos/{{owner}}/{{name}})",
                    held.len()
                )));
            }
            for repository in held {
                ask_sync_in(&mut *conn, repository, &[]).await?;
            }
            shapes::delete_owned(conn, "scm_installations", id, account_id).await.map(drop)
        })
        .await
}

/// Records the provider's installation `confirmed` for `account_id` (an
/// install flow came back). The same account again gets its row, status
/// and account refreshed; an installation recorded for another account is
/// [`Error::Conflict`] (a unique index decides a race).
pub async fn claim_installation(
    store: &Store,
    account_id: i64,
    provider: Provider,
    confirmed: &ConfirmedInstallation,
) -> Result<Installation> {
    let status = if confirmed.suspended { InstallationStatus::Suspended } else { InstallationStatus::Active };
    store
        .in_write(async |conn| {
            let taken = || Error::Conflict(format!("this {provider} installation is connected to another account"));
            let sql = format!(
                "SELECT {INSTALLATION_COLUMNS} FROM scm_installations WHERE provider = $1 AND external_id = $2"
            );
            let query = sqlx::query(&sql).bind(provider.as_str()).bind(&confirmed.external_id);
            if let Some(found) = shapes::maybe_one(&mut *conn, query, installation_from_row).await? {
                if found.account_id != account_id {
                    return Err(taken());
                }
                sqlx::query(
                    "UPDATE scm_installations SET status = $1, account_login = $2, organisation = $3 WHERE id = $4",
                )
                .bind(status.as_str())
                .bind(&confirmed.account_login)
                .bind(flag(confirmed.organisation))
                .bind(found.id)
                .execute(&mut *conn)
                .await?;
                let account_login = confirmed.account_login.clone();
                return Ok(Installation { status, account_login, organisation: confirmed.organisation, ..found });
            }
            let now = time::to_db(&time::now());
            let sql = format!(
                "INSERT INTO scm_installations (account_id, provider, external_id, status, account_login, \
                 organisation, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {INSTALLATION_COLUMNS}"
            );
            let query = sqlx::query(&sql)
                .bind(account_id)
                .bind(provider.as_str())
                .bind(&confirmed.external_id)
                .bind(status.as_str())
                .bind(&confirmed.account_login)
                .bind(flag(confirmed.organisation))
                .bind(now);
            let row = query.fetch_one(&mut *conn).await.on_unique(taken)?;
            installation_from_row(&row)
        })
        .await
}

#[cfg(test)]
#[path = "repositories_tests.rs"]
mod tests;
