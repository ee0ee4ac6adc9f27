//! Attach (the contract's `POST /api/playzones/attach {repo_full_name}`):
//! a Playzone on a repository the account reaches through its
//! source-hosting installation, with no token: the sync and builds read it
//! through the installation (`store::playzone_access`), and lose access
//! with a clear `status_message` when the repository or the installation
//! goes away.
//!
//! Attaching a repository the account has a Playzone on already returns
//! that Playzone (the contract's "shared with the requesting player");
//! two attaches at once make one Playzone (a unique index decides).

use crate::scm::flows::Caller;
use crate::scm::hosts::{Choice, SourceHosts};
use crate::{Error, Result};
use play_model::playzone::model::Playzone;
use play_model::scm::model::{InstallationStatus, Provider, Repository};
use play_model::scm::names::FullName;
use play_store::{Store, playzone_access, repositories};

/// What attach did.
#[derive(Clone, Debug)]
pub struct Attached {
    pub playzone: Playzone,
    /// `false`: the account's existing Playzone on the repository.
    pub created: bool,
}

/// How many names (`app`, `app-2`, …) attach tries for a new Playzone.
const NAME_ATTEMPTS: usize = 50;

/// Attaches `repo_full_name` (field `repo_full_name` in errors) for
/// `caller`'s account; see the [module documentation](self).
pub async fn attach(
    store: &Store,
    hosts: &SourceHosts,
    caller: &Caller<'_>,
    repo_full_name: &str,
    on: Choice,
) -> Result<Attached> {
    let full = FullName::parse("repo_full_name", repo_full_name)?;
    let known = match repositories::readable_by_name(store, caller.by.account_id, &full).await {
        Ok(found) if on.provider.is_none_or(|p| p == found.provider) => Some(found),
        Ok(_) | Err(Error::NotFound(_)) => None,
        Err(e) => return Err(e),
    };
    let repository = match known {
        Some(repository) => repository,
        None => connect(store, hosts, caller, &full, on).await?,
    };
    if let Some(playzone) = playzone_access::attached(store, caller.by.account_id, repository.id).await? {
        return Ok(Attached { playzone, created: false });
    }
    let full = &repository.full_name;
    let Some(urls) = hosts.urls(repository.provider, full) else {
        return Err(Error::ScmAppRequired(format!(
            "repository {full} is on {}, which this play no longer serves: ask the operator",
            repository.provider
        )));
    };
    let scm_url = urls.clone_url;
    for n in 1..=NAME_ATTEMPTS {
        let name = if n == 1 { full.name.clone() } else { format!("{}-{n}", full.name) };
        let made = store
            .in_write(async |tx| {
                let how = play_model::playzone::Attach { name: &name, scm_url: &scm_url, default_branch: None };
                playzone_access::attach_in(tx, caller.by, &repository, how, caller.limits).await
            })
            .await;
        match made {
            Ok(playzone) => return Ok(Attached { playzone, created: true }),
            Err(Error::Validation(e)) if e.contains_key("playzone.name") => continue,
            Err(Error::Conflict(_)) => {
                // A concurrent attach of the same repository won.
                if let Some(playzone) = playzone_access::attached(store, caller.by.account_id, repository.id).await? {
                    return Ok(Attached { playzone, created: false });
                }
            }
            Err(e) => return Err(e),
        }
    }
    Err(Error::Conflict(format!("no free Playzone name for repository {full}")))
}

/// Finds `full` through the account's app installations on its owner (or
/// the one `on` names) and records it for the account: a repository
/// someone made on GitHub and gave the installation. Not found anywhere is
/// 404, as for a repository that does not exist.
async fn connect(
    store: &Store,
    hosts: &SourceHosts,
    caller: &Caller<'_>,
    full: &FullName,
    on: Choice,
) -> Result<Repository> {
    let installations = repositories::installations(store, caller.by.account_id).await?;
    let apps = installations.iter().any(|i| i.provider != Provider::Builtin && i.status == InstallationStatus::Active);
    if !apps && hosts.builtin.is_none() {
        return Err(Error::ScmAppRequired(
            "no source-hosting app is installed on this account: connect one (POST /api/scm_installations/github)"
                .into(),
        ));
    }
    match through_installations(store, hosts, caller, full, on).await? {
        Ok(repository) => Ok(repository),
        Err(_) => Err(Error::NotFound("repository")),
    }
}

/// `full` found through one of the account's active app installations on
/// its owner (or the one `on` names), and recorded for the account; or,
/// when none has it, the installations asked (`github installation 3 on
/// acme`), for an error that names them.
pub(crate) async fn through_installations(
    store: &Store,
    hosts: &SourceHosts,
    caller: &Caller<'_>,
    full: &FullName,
    on: Choice,
) -> Result<std::result::Result<Repository, Vec<String>>> {
    let installations = repositories::installations(store, caller.by.account_id).await?;
    let candidates = installations.into_iter().filter(|i| {
        i.status == InstallationStatus::Active
            && i.provider != Provider::Builtin
            && i.account_login.eq_ignore_ascii_case(&full.owner)
            && on.provider.is_none_or(|p| p == i.provider)
            && on.installation_id.is_none_or(|id| id == i.id)
    });
    let mut tried = Vec::new();
    for installation in candidates {
        let Some(app) = hosts.app(installation.provider) else { continue };
        tried.push(format!(
            "{} installation {} on {}",
            installation.provider, installation.id, installation.account_login
        ));
        if let Some(found) = app.repository(&installation, full).await? {
            return repositories::connect(store, caller.by, &installation, &found, caller.limits).await.map(Ok);
        }
    }
    Ok(Err(tried))
}
