//! Linking a Playspec's dynamic services to Playzones, when a Playspec is
//! created or updated and at Launch.
//!
//! For each dynamic service, in order:
//! 1. a `playzone_id` the client gave must be one of the account's
//!    Playzones;
//! 2. else the Playzone it was linked to before (an update keeps links);
//! 3. else its `svc/repo_url` names the repository: the account's oldest
//!    Playzone with that URL is reused, or one is created (`auto_created`,
//!    public, no token: a private repository needs its token set on the
//!    Playzone, whose sync then says so). The URL passes the same
//!    [`RepositoryPolicy`] as a Playzone created by hand.
//!
//! A dynamic service left without a Playzone is allowed in the Playspec
//! (it may be linked later); a Playground of it fails at `image_build`
//! saying how to link one.

use super::RepositoryPolicy;
use crate::compose::classify::{ServiceDefinition, ServiceType};
use crate::error::push_field_error;
use crate::store::Store;
use crate::store::events::Actor;
use crate::store::playzones;
use crate::store::quotas::QuotaLimits;
use crate::{Error, FieldErrors, Result};

/// Where and for whom links are made.
#[derive(Clone, Copy, Debug)]
pub struct Linker<'a> {
    pub store: &'a Store,
    pub account_id: i64,
    pub policy: &'a RepositoryPolicy,
    pub limits: &'a QuotaLimits,
    pub actor: Actor,
}

/// Links `definitions` (see the [module documentation](self)); the ids of
/// the Playzones it created. `field` names a service in errors
/// (`playspec.services.web` or `compose_yaml.services.web`).
pub async fn link(
    linker: Linker<'_>,
    definitions: &mut [ServiceDefinition],
    previous: &[ServiceDefinition],
    field: impl Fn(&ServiceDefinition) -> String,
) -> Result<Vec<i64>> {
    let Linker { store, account_id, policy, limits, actor } = linker;
    let mut errors = FieldErrors::new();
    for def in definitions.iter().filter(|d| d.service_type == ServiceType::Dynamic) {
        if let Some(id) = def.playzone_id {
            match playzones::get(store, account_id, id).await {
                Ok(_) => {}
                Err(Error::NotFound(_)) => push_field_error(
                    &mut errors,
                    format!("{}.playzone_id", field(def)),
                    format!("no Playzone with id {id}"),
                ),
                Err(other) => return Err(other),
            }
        }
        if def.playzone_id.is_none()
            && let Some(url) = &def.repo_url
            && let Err(message) = policy.check(url)
        {
            push_field_error(&mut errors, format!("{}.labels.svc/repo_url", field(def)), message);
        }
    }
    if !errors.is_empty() {
        return Err(Error::Validation(errors));
    }
    let mut created = Vec::new();
    for def in definitions.iter_mut().filter(|d| d.service_type == ServiceType::Dynamic) {
        if def.playzone_id.is_some() {
            continue;
        }
        if let Some(before) = previous.iter().find(|p| p.name == def.name).and_then(|p| p.playzone_id)
            && playzones::get(store, account_id, before).await.is_ok()
        {
            def.playzone_id = Some(before);
            continue;
        }
        let Some(url) = def.repo_url.clone() else { continue };
        let url = url.trim_end_matches('/').to_owned();
        let existing = playzones::list(store, account_id, false).await?.into_iter().find(|z| z.scm_url == url);
        let zone = match existing {
            Some(zone) => zone,
            None => {
                let zone = create_for(store, account_id, &url, limits, actor).await?;
                created.push(zone.id);
                zone
            }
        };
        def.playzone_id = Some(zone.id);
    }
    Ok(created)
}

/// A Playzone for `url`, named after its last path segment (made unique in
/// the account with a number).
async fn create_for(
    store: &Store,
    account_id: i64,
    url: &str,
    limits: &QuotaLimits,
    actor: Actor,
) -> Result<playzones::Playzone> {
    let base: String = url
        .rsplit('/')
        .find(|s| !s.is_empty())
        .unwrap_or("repository")
        .trim_end_matches(".git")
        .chars()
        .take(80)
        .collect();
    let base = if base.trim().is_empty() { "repository".to_owned() } else { base };
    for n in 1..=50 {
        let name = if n == 1 { base.clone() } else { format!("{base}-{n}") };
        let changes = super::Changes {
            name: Some(name),
            scm_url: Some(url.to_owned()),
            default_branch: None,
            private: Some(false),
            credentials: None,
        };
        match playzones::create_auto(store, account_id, changes, limits, actor).await {
            Err(Error::Validation(e)) if e.contains_key("playzone.name") => continue,
            other => return other,
        }
    }
    Err(Error::Conflict(format!("no free Playzone name for {url}")))
}
