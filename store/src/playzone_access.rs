//! How a Playzone's repository is reached, and Playzones attached through
//! a source-hosting installation (issue #29).
//!
//! Invariants:
//! - [`access`] is the only place a [`RepositoryAccess`] is made for a
//!   Playzone: the sync, builds and `env_defaults` all read through it.
//! - A Playzone with `repository_id` (made by attach) is reached through
//!   that repository's installation, never as an anonymous clone of its
//!   `scm_url`: when the repository or the installation is gone, or the
//!   repository is another account's and no longer public, the access is
//!   [`Reach::Lost`] with the reason, and nothing is dialled.
//! - A Playzone on an ssh URL is reached with its deploy key and pinned
//!   host key ([`Reach::Ssh`]); without a key yet, [`Reach::Lost`] says
//!   how to make one.
//! - One Playzone per account and repository (a unique index): two
//!   attaches at once make one Playzone, and the second gets it.

use sqlx::Row;

use super::{Conn, OnUnique, Store, is_set, playzones, shapes};
use crate::{Error, Result};
use play_model::model::event::Acting;
use play_model::model::quota::QuotaLimits;
use play_model::playzone::Changes;
use play_model::playzone::model::Playzone;
use play_model::repository::ssh::{SshAccess, is_ssh_url};
use play_model::repository::{Reach, RepositoryAccess};
use play_model::scm::model::{InstallationStatus, Provider, Repository};
use play_model::scm::names::FullName;
use play_model::secrets::SecretBox;

/// The repository and its opened token, or the installation's reach, for
/// one gateway call.
pub async fn access(store: &Store, secrets: &SecretBox, id: i64) -> Result<RepositoryAccess> {
    let query = sqlx::query(
        "SELECT p.scm_url, p.credentials, p.ssh_host_key, p.account_id, p.repository_id, \
         r.account_id AS repository_account, \
         r.owner, r.name, r.private, i.provider, i.status, i.external_id FROM playzones p \
         LEFT JOIN repositories r ON r.id = p.repository_id \
         LEFT JOIN scm_installations i ON i.id = r.installation_id WHERE p.id = $1",
    )
    .bind(id);
    shapes::one(store, query, "playzone", |row| {
        let url: String = row.try_get("scm_url")?;
        let Some(_) = row.try_get::<Option<i64>, _>("repository_id")? else {
            let sealed: Option<String> = row.try_get("credentials")?;
            let token = sealed.map(|s| secrets.open(&s, &playzones::token_context(id))).transpose()?;
            if is_ssh_url(&url) {
                let reach = match token {
                    Some(key) => Reach::Ssh(SshAccess {
                        playzone_id: id,
                        private_key_openssh: key,
                        pinned_host_key: row.try_get("ssh_host_key")?,
                    }),
                    None => Reach::Lost(format!(
                        "the Playzone has no deploy key yet: call POST /api/playzones/{id}/generate_ssh_key (or give \
                         the private key in credentials) and add its public key to the repository's deploy keys"
                    )),
                };
                return Ok(RepositoryAccess { url, token: None, reach });
            }
            return Ok(RepositoryAccess::remote(url, token));
        };
        let reach = match row.try_get::<Option<String>, _>("owner")? {
            None => Reach::Lost(
                "the repository this Playzone was attached to is gone, or its source-hosting installation was \
                 removed: attach the repository again (POST /api/playzones/attach) or give the Playzone another \
                 scm_url"
                    .into(),
            ),
            Some(owner) => {
                let full = FullName { owner, name: row.try_get("name")? };
                let own = row.try_get::<Option<i64>, _>("repository_account")? == Some(row.try_get("account_id")?);
                let public = !is_set(row.try_get::<Option<i64>, _>("private")?.unwrap_or(1));
                let provider: Option<String> = row.try_get("provider")?;
                let status = row.try_get::<Option<String>, _>("status")?.unwrap_or_default();
                match provider.as_deref().map(str::parse::<Provider>) {
                    _ if !own && !public => Reach::Lost(format!(
                        "repository {full} is private to another account now: this account can no longer read it"
                    )),
                    _ if status != InstallationStatus::Active.as_str() => Reach::Lost(format!(
                        "the source-hosting installation that reaches repository {full} is {status} on the \
                         provider's side: install or unsuspend the app again, and the Playzone syncs at once"
                    )),
                    Some(Ok(Provider::Builtin)) => Reach::Builtin(full),
                    Some(Ok(provider)) => {
                        Reach::App { provider, installation: row.try_get("external_id")?, repository: full }
                    }
                    Some(Err(_)) | None => {
                        Reach::Lost(format!("repository {full} is on a source host this play does not serve"))
                    }
                }
            }
        };
        Ok(RepositoryAccess { url, token: None, reach })
    })
    .await
}

/// The account's Playzone attached to `repository_id`, if any.
pub async fn attached(store: &Store, account_id: i64, repository_id: i64) -> Result<Option<Playzone>> {
    let query = sqlx::query("SELECT id FROM playzones WHERE account_id = $1 AND repository_id = $2")
        .bind(account_id)
        .bind(repository_id);
    match shapes::column::<i64>(store, query, "id").await?.first() {
        Some(id) => playzones::get(store, account_id, *id).await.map(Some),
        None => Ok(None),
    }
}

/// The repository Playzone `id` was attached to, if it was (apply checks
/// that a Playzone's `repositoryRef` still names it).
pub async fn repository_of_in(conn: &mut Conn, id: i64) -> Result<Option<i64>> {
    let row =
        sqlx::query("SELECT repository_id FROM playzones WHERE id = $1").bind(id).fetch_optional(&mut *conn).await?;
    Ok(row.map(|r| r.try_get::<Option<i64>, _>("repository_id")).transpose()?.flatten())
}

/// Creates the account's Playzone on `repository` as `how` says, in the
/// caller's transaction. A name taken is the usual `playzone.name`
/// validation error; the repository attached already (a concurrent attach
/// won) is [`Error::Conflict`].
pub async fn attach_in(
    conn: &mut Conn,
    by: Acting,
    repository: &Repository,
    how: play_model::playzone::Attach<'_>,
    limits: &QuotaLimits,
) -> Result<Playzone> {
    let changes = Changes {
        name: Some(how.name.to_owned()),
        scm_url: Some(how.scm_url.to_owned()),
        default_branch: how.default_branch.map(|b| Some(b.to_owned())),
        private: Some(repository.private),
        credentials: None,
        ssh_host_key: None,
    };
    let zone = playzones::create(&mut *conn, None, by, changes, false, limits).await?;
    sqlx::query("UPDATE playzones SET repository_id = $1 WHERE id = $2")
        .bind(repository.id)
        .bind(zone.id)
        .execute(&mut *conn)
        .await
        .on_unique(|| Error::Conflict(format!("repository {} is attached already", repository.full_name)))?;
    Ok(zone)
}
