//! `POST /api/playzones` on the URL of a repository that one of the
//! account's source-hosting installations reaches (issue #52, item 3): the
//! Playzone reads it through the installation, as `attach` makes one, so a
//! private repository needs no token. When none reaches it, the refusal
//! names the installations tried and points to `attach` or `credentials`.
//!
//! Only a create without `credentials` comes here: a token says how to
//! read, and is kept as before. A URL of no host this play serves is
//! created by URL as before (a public repository; a private one needs a
//! token, which the field check says).

use crate::scm::attach::through_installations;
use crate::scm::flows::Caller;
use crate::scm::hosts::{Choice, SourceHosts};
use crate::{Error, Result};
use play_model::playzone::model::Playzone;
use play_model::scm::model::Provider;
use play_model::scm::names::FullName;
use play_store::{Store, playzone_access, repositories};

/// What a create names, besides its URL.
#[derive(Clone, Debug)]
pub struct Wanted<'a> {
    pub name: &'a str,
    pub scm_url: &'a str,
    pub default_branch: Option<&'a str>,
    /// The request's `private`; `Some(true)` with no installation reaching
    /// a GitHub repository is refused here rather than made to fail its
    /// first sync.
    pub private: Option<bool>,
}

/// See the [module documentation](self): the new Playzone, reading
/// through the installation, or `None` when it is to be created by URL.
/// Field errors are named as the create's (`playzone.scm_url`,
/// `playzone.credentials`); the account's Playzone on that repository
/// already is a conflict that names it.
pub async fn create(
    store: &Store,
    hosts: &SourceHosts,
    caller: &Caller<'_>,
    wanted: Wanted<'_>,
) -> Result<Option<Playzone>> {
    let Some((provider, full)) = hosts.locate(wanted.scm_url) else { return Ok(None) };
    check(&wanted)?;
    let account = caller.by.account_id;
    let known = match repositories::readable_by_name(store, account, &full).await {
        Ok(found) if found.provider == provider => Some(found),
        Ok(_) | Err(Error::NotFound(_)) => None,
        Err(e) => return Err(e),
    };
    let repository = match (known, provider) {
        (Some(repository), _) => repository,
        (None, Provider::Builtin) => {
            return Err(Error::field(
                "playzone.scm_url",
                format!(
                    "play's Git host has no repository {full} that this account may read (tried: play's own Git host)"
                ),
            ));
        }
        (None, _) => {
            let on = Choice { provider: Some(provider), installation_id: None };
            match through_installations(store, hosts, caller, &full, on).await? {
                Ok(repository) => repository,
                Err(_) if wanted.private != Some(true) => return Ok(None),
                Err(tried) => return Err(unreached(provider, &full, &tried)),
            }
        }
    };
    if let Some(zone) = playzone_access::attached(store, account, repository.id).await? {
        return Err(Error::Conflict(format!(
            "the account's Playzone {} (id {}) reads {full} through its installation already: use it",
            zone.name, zone.id
        )));
    }
    let scm_url = hosts
        .urls(repository.provider, &repository.full_name)
        .map_or_else(|| wanted.scm_url.trim_end_matches('/').to_owned(), |urls| urls.clone_url);
    let made = store
        .in_write(async |tx| {
            let how = play_model::playzone::Attach {
                name: wanted.name,
                scm_url: &scm_url,
                default_branch: wanted.default_branch,
            };
            playzone_access::attach_in(tx, caller.by, &repository, how, caller.limits).await
        })
        .await?;
    Ok(Some(made))
}

/// The request's own fields, checked as a create by URL checks them (the
/// URL needs no address check: nothing connects to it).
fn check(wanted: &Wanted<'_>) -> Result<()> {
    let mut errors = play_model::FieldErrors::new();
    if let Err(message) = play_model::validate::display_name(wanted.name) {
        play_model::error::push_field_error(&mut errors, "playzone.name", message);
    }
    if let Some(branch) = wanted.default_branch
        && let Err(message) = play_model::playzone::branch_name(branch)
    {
        play_model::error::push_field_error(&mut errors, "playzone.default_branch", message);
    }
    if errors.is_empty() { Ok(()) } else { Err(Error::Validation(errors)) }
}

/// Why a private repository of `provider` cannot be read: the installations
/// asked, and what to do.
fn unreached(provider: Provider, full: &FullName, tried: &[String]) -> Error {
    let tried = if tried.is_empty() {
        format!("this account has no active {provider} installation on {}", full.owner)
    } else {
        format!("tried: {}", tried.join(", "))
    };
    Error::field(
        "playzone.credentials",
        format!(
            "no source-hosting installation of this account reaches the private repository {full} ({tried}): give \
             an access token in credentials, or install the {provider} app on {} with access to it \
             (POST /api/scm_installations/{provider}) and create the Playzone again, or attach it \
             (POST /api/playzones/attach)",
            full.owner
        ),
    )
}
