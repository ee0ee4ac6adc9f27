//! Linking a Playspec's dynamic services to Playzones, when a Playspec is
//! created or updated and at Launch.
//!
//! For each dynamic service, in order:
//! 1. a `playzone_id` the client gave must be one of the account's
//!    Playzones;
//! 2. else the Playzone it was linked to before (an update keeps links);
//! 3. else its `svc/repo_url` names the repository: the account's oldest
//!    Playzone with that URL **and no access token** is reused, or one is
//!    created (`auto_created`, public, no token: a private repository
//!    needs its token set on the Playzone, whose sync then says so). The
//!    URL passes the same [`RepositoryPolicy`] as a Playzone created by
//!    hand.
//!
//! A Playzone that holds an access token, or reads through a
//! source-hosting installation it was attached through
//! ([`Playzone::reads_privately`](play_model::playzone::model::Playzone::reads_privately)), is linked only by an explicit
//! `playzone_id` from a caller whose key may read Playzones
//! (`playzones:read`, [`Linker::may_read_playzones`]); never by URL. A
//! URL is text anyone can write into a Compose file, a template of another
//! account, or a Launch under `launch:write` alone, and a linked
//! repository's whole tree can be bound into any image the same Compose
//! file chooses (`./:/src`): linking by URL would hand a private
//! repository to whoever can name it (issue #27, item 2). A URL whose only
//! Playzones hold tokens is refused, saying how to link one.
//!
//! A URL of play's own Git host (`<PLAY_PUBLIC_URL>/git/<owner>/<name>.git`)
//! names a repository there: a public one links through the account's
//! installation (the account's Playzone attached to it, or a new one, as
//! `POST /api/playzones/attach` makes), read in place without the
//! network; a private one is refused, saying to attach it and link it by
//! id (the reason above).
//!
//! A dynamic service left without a Playzone is allowed in the Playspec
//! (it may be linked later); a Playground of it fails at `image_build`
//! saying how to link one.

use crate::scm::hosts::{Choice, SourceHosts};
use crate::{Error, Result};
use play_model::FieldErrors;
use play_model::compose::classify::{ServiceDefinition, ServiceType};
use play_model::error::push_field_error;
use play_model::model::event::{Acting, Actor};
use play_model::model::quota::QuotaLimits;
use play_model::playzone::RepositoryPolicy;
use play_model::scm::model::Provider;
use play_model::scm::names::FullName;
use play_store::Store;
use play_store::playzones;

/// Where and for whom links are made.
#[derive(Clone, Copy, Debug)]
pub struct Linker<'a> {
    pub store: &'a Store,
    pub account_id: i64,
    pub policy: &'a RepositoryPolicy,
    /// The source hosts: a URL may name a repository of play's own Git
    /// host, and such a URL links through the installation (attach).
    pub hosts: &'a SourceHosts,
    pub limits: &'a QuotaLimits,
    pub actor: Actor,
    /// Whether the caller's key holds `playzones:read`: only then may an
    /// explicit `playzone_id` name a Playzone that holds a token.
    pub may_read_playzones: bool,
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
    let Linker { store, account_id, policy, hosts, limits, actor, may_read_playzones } = linker;
    let zones = playzones::list(store, account_id, false).await?;
    // Every refusal is found before anything is created.
    let mut errors = FieldErrors::new();
    for def in definitions.iter().filter(|d| d.service_type == ServiceType::Dynamic) {
        if let Some(id) = def.playzone_id {
            match zones.iter().find(|z| z.id == id) {
                None => push_field_error(
                    &mut errors,
                    format!("{}.playzone_id", field(def)),
                    format!("no Playzone with id {id}"),
                ),
                Some(zone) if zone.reads_privately() && !may_read_playzones => push_field_error(
                    &mut errors,
                    format!("{}.playzone_id", field(def)),
                    format!(
                        "Playzone {id} reads its repository with an access token or an installation: linking it needs a key with playzones:read"
                    ),
                ),
                Some(_) => {}
            }
            continue;
        }
        if previous_link(def, previous, &zones).is_some() {
            continue;
        }
        let Some(url) = &def.repo_url else { continue };
        if let Some(found) = hosted(store, account_id, hosts, url).await {
            if let Err(message) = found {
                push_field_error(&mut errors, format!("{}.labels.svc/repo_url", field(def)), message);
            }
            continue;
        }
        if let Err(message) = policy.check(url) {
            push_field_error(&mut errors, format!("{}.labels.svc/repo_url", field(def)), message);
            continue;
        }
        let url = url.trim_end_matches('/');
        let same_url = || zones.iter().filter(|z| z.scm_url == url);
        if same_url().next().is_some() && same_url().all(|z| z.reads_privately()) {
            push_field_error(
                &mut errors,
                format!("{}.labels.svc/repo_url", field(def)),
                "the account's Playzone for this repository reads it with an access token or through the installation \
                 it was attached through, so it is never linked by URL \
                 (a Compose file or template could otherwise bind a private repository into any image): link it \
                 by its id (a Playspec's services[].playzone_id, with a key that has playzones:read)",
            );
        }
    }
    if !errors.is_empty() {
        return Err(Error::Validation(errors));
    }
    let mut created: Vec<play_model::playzone::model::Playzone> = Vec::new();
    for def in definitions.iter_mut().filter(|d| d.service_type == ServiceType::Dynamic) {
        if def.playzone_id.is_some() {
            continue;
        }
        if let Some(before) = previous_link(def, previous, &zones) {
            def.playzone_id = Some(before);
            continue;
        }
        let Some(url) = def.repo_url.clone() else { continue };
        if let Some(Ok(full)) = hosted(store, account_id, hosts, &url).await {
            let caller = crate::scm::flows::Caller { by: Acting::new(account_id, actor), limits };
            let on = Choice { provider: Some(Provider::Builtin), installation_id: None };
            let attached = crate::scm::attach::attach(store, hosts, &caller, &full.to_string(), on).await?;
            def.playzone_id = Some(attached.playzone.id);
            if attached.created {
                created.push(attached.playzone);
            }
            continue;
        }
        let url = url.trim_end_matches('/').to_owned();
        let tokenless = zones.iter().chain(&created).find(|z| z.scm_url == url && !z.reads_privately());
        let id = match tokenless {
            Some(zone) => zone.id,
            None => {
                let zone = create_for(store, account_id, &url, limits, actor).await?;
                let id = zone.id;
                created.push(zone);
                id
            }
        };
        def.playzone_id = Some(id);
    }
    Ok(created.into_iter().map(|z| z.id).collect())
}

/// The Playzone a launch by this account links a build service naming
/// `url` to, made as such a launch would make it when there is none (a
/// trigger follows that Playzone's branch index before its first launch).
/// Refusals are those of a launch, under the field `repo_url`.
pub async fn for_url(linker: Linker<'_>, url: &str) -> Result<i64> {
    let mut one = [ServiceDefinition {
        name: "trigger".into(),
        service_type: ServiceType::Dynamic,
        playzone_id: None,
        dockerfile_path: None,
        env_file_path: None,
        workdir: None,
        image: None,
        exposure: play_model::compose::classify::Exposure {
            enabled: false,
            port: None,
            subdomain: None,
            visibility: None,
        },
        repo_url: Some(url.to_owned()),
    }];
    link(linker, &mut one, &[], |_| "trigger".into()).await.map_err(|e| match e {
        Error::Validation(details) => {
            let messages: Vec<String> = details.into_values().flatten().collect();
            Error::field("repo_url", messages.join("; "))
        }
        other => other,
    })?;
    one[0].playzone_id.ok_or_else(|| Error::field("repo_url", "names no repository a Playzone can follow"))
}

/// For a URL of the source host's repositories: the repository it names,
/// when the account may link it by URL (a public one), or why not. `None`
/// for a URL of anywhere else. A private repository is never linked by
/// URL, for the reason a Playzone holding a token is not (see the
/// [module documentation](self)): it is attached, then linked by id.
async fn hosted(
    store: &Store,
    account_id: i64,
    hosts: &SourceHosts,
    url: &str,
) -> Option<std::result::Result<FullName, String>> {
    let full = hosts.builtin.as_deref()?.repository_at(url)?;
    Some(match play_store::repositories::readable_by_name(store, account_id, &full).await {
        Ok(repository) if !repository.private => Ok(full),
        Ok(_) => Err(format!(
            "{full} is a private repository of play's Git host, which is never linked by URL (a Compose file or \
             template could otherwise bind it into any image): attach it (POST /api/playzones/attach) and link \
             the Playzone by its id (a Playspec's services[].playzone_id)"
        )),
        Err(_) => Err(format!("play's Git host has no repository {full} that this account may read")),
    })
}

/// The Playzone `def`'s service was linked to in `previous` (an update
/// keeps links), while it is still one of the account's `zones`.
fn previous_link(
    def: &ServiceDefinition,
    previous: &[ServiceDefinition],
    zones: &[play_model::playzone::model::Playzone],
) -> Option<i64> {
    let before = previous.iter().find(|p| p.name == def.name)?.playzone_id?;
    zones.iter().any(|z| z.id == before).then_some(before)
}

/// A Playzone for `url`, named after its last path segment (made unique in
/// the account with a number).
async fn create_for(
    store: &Store,
    account_id: i64,
    url: &str,
    limits: &QuotaLimits,
    actor: Actor,
) -> Result<play_model::playzone::model::Playzone> {
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
        let changes = play_model::playzone::Changes {
            name: Some(name),
            scm_url: Some(url.to_owned()),
            default_branch: None,
            private: Some(false),
            credentials: None,
            ssh_host_key: None,
        };
        match playzones::create_auto(store, Acting::new(account_id, actor), changes, limits).await {
            Err(Error::Validation(e)) if e.contains_key("playzone.name") => continue,
            other => return other,
        }
    }
    Err(Error::Conflict(format!("no free Playzone name for {url}")))
}
