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

use super::flows::Caller;
use super::host::SourceHost;
use super::names::FullName;
use crate::playzone::model::Playzone;
use crate::store::{Store, playzone_access, repositories};
use crate::{Error, Result};

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
    host: &dyn SourceHost,
    caller: &Caller<'_>,
    repo_full_name: &str,
) -> Result<Attached> {
    let full = FullName::parse("repo_full_name", repo_full_name)?;
    let repository = repositories::readable_by_name(store, caller.by.account_id, &full).await?;
    if let Some(playzone) = playzone_access::attached(store, caller.by.account_id, repository.id).await? {
        return Ok(Attached { playzone, created: false });
    }
    let scm_url = host.urls(&full).clone_url;
    for n in 1..=NAME_ATTEMPTS {
        let name = if n == 1 { full.name.clone() } else { format!("{}-{n}", full.name) };
        let made = store
            .in_write(async |tx| {
                playzone_access::attach_in(tx, caller.by, &repository, &scm_url, &name, caller.limits).await
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
