//! Creating Playgrounds: the flows behind `POST /api/playgrounds`,
//! `POST /api/launch` and `POST /api/import_templates/{id}/launch`.
//!
//! Each flow checks its request (the fields, the Playroom's policy, the
//! Playspec's services: [`crate::playground::validate`]), then records:
//! - a create, one checked [`NewPlayground`] (status `in_progress`, step
//!   `queued`) after the account's quota check ([`create_in`]);
//! - a launch, a Playspec and (optionally for `POST /api/launch`) a
//!   Playground that runs it, in one transaction ([`record_launch`]), so a
//!   launch that fails (a quota, a name taken) leaves nothing behind.
//!
//! Compose parsing and template compilation run through the caller's
//! [`Offload`]. Owns the order of the checks and writes. It must not hold
//! SQL (the rows are written by `play_store`) nor wake anything: waking
//! the reconciler is the caller's, after the commit these functions make.

use std::collections::BTreeMap;

use crate::offload::Offload;
use crate::playground::validate::{self, CreateRequest};
use crate::{Error, Result};
use play_model::FieldErrors;
use play_model::compose::{self, Compiled, Issue, Policy, svc};
use play_model::error::push_field_error;
use play_model::model::event::{Acting, Actor};
use play_model::model::playspec::{Playspec, PlayspecFields};
use play_model::model::quota::{QuotaLimits, Resource};
use play_model::model::template::{Template, Version};
use play_model::playground::model::{NewPlayground, Playground, ServiceSettings};
use play_model::playground::policy::Lifetimes;
use play_model::playground::trigger_launch;
pub use play_model::playground::trigger_launch::TriggerLaunch;
use play_store::names::{self, Named};
use play_store::playspecs;
use play_store::quotas;
use play_store::templates;
use play_store::{Conn, Store, playgrounds, playrooms};

/// What configuration bounds a create: the account quotas, the lifetimes
/// of new Playgrounds and which repositories a launch may link (the
/// Playzones it creates for build services).
#[derive(Clone, Copy, Debug)]
pub struct Limits<'a> {
    pub quotas: &'a QuotaLimits,
    pub lifetimes: Lifetimes,
    pub repositories: &'a play_model::playzone::RepositoryPolicy,
    /// The source hosts (a URL may name a repository of play's own Git
    /// host).
    pub hosts: &'a crate::scm::hosts::SourceHosts,
}

/// `POST /api/playgrounds`: checks the request ([`validate::check_create`])
/// and records the Playground.
pub async fn create_playground(
    store: &Store,
    cpu: &impl Offload,
    account_id: i64,
    request: CreateRequest,
    limits: Limits<'_>,
    actor: Actor,
) -> Result<Playground> {
    let new = validate::check_create(store, cpu, account_id, request, limits.lifetimes).await?;
    create(store, account_id, &new, limits.quotas, actor).await
}

/// Records a checked Playground inside the caller's transaction, after the
/// account's Playground quota.
pub async fn create_in(
    conn: &mut Conn,
    account_id: i64,
    new: &NewPlayground,
    limits: &QuotaLimits,
    actor: Actor,
) -> Result<Playground> {
    quotas::check(conn, account_id, Resource::Playgrounds, limits).await?;
    playgrounds::insert_in(conn, account_id, new, actor).await
}

/// [`create_in`] in a transaction of its own.
pub async fn create(
    store: &Store,
    account_id: i64,
    new: &NewPlayground,
    limits: &QuotaLimits,
    actor: Actor,
) -> Result<Playground> {
    let mut tx = store.write().await?;
    let playground = create_in(&mut tx, account_id, new, limits, actor).await?;
    store.commit(tx).await?;
    Ok(playground)
}

/// The name of a launched Playspec.
#[derive(Clone, Debug)]
pub enum LaunchName {
    /// As the request gave it (trimmed).
    Given(String),
    /// None given: the template's name and a random suffix not yet taken
    /// in the account, chosen inside the transaction.
    FromTemplate(String),
}

/// The Playground a launch records beside its Playspec (named like it).
#[derive(Clone, Debug)]
pub struct LaunchedPlayground {
    pub playroom_id: i64,
    pub job_mode: bool,
    pub ttl: chrono::Duration,
    /// Per-service settings (a trigger's branch pin); none for a launch
    /// by hand.
    pub service_settings: BTreeMap<String, ServiceSettings>,
    /// Service name -> subdomain (a pull request's preview).
    pub service_subdomains: BTreeMap<String, String>,
    /// A trigger's target and generation: recorded on the target in the
    /// launch's transaction, which fails if the target moved on
    /// ([`TriggerLaunch::target`]).
    pub target: Option<(i64, i64)>,
    /// The trigger's ref and commit, for the `playground.created` event.
    pub origin: Option<play_model::playground::model::Origin>,
    /// The AI agent provider a launch by hand named.
    pub agent: Option<String>,
}

/// A checked launch: the Playspec's fields (but its name) and, optionally,
/// the Playground that runs it.
#[derive(Clone, Debug)]
pub struct Launch {
    pub name: LaunchName,
    pub playspec: PlayspecFields,
    pub playground: Option<LaunchedPlayground>,
}

/// Records a launch in one transaction: the Playspec (quota, unique name),
/// then the Playground on the Playroom the caller checked the Compose
/// against.
pub async fn record_launch(
    store: &Store,
    account_id: i64,
    launch: Launch,
    limits: &QuotaLimits,
    actor: Actor,
) -> Result<(Playspec, Option<Playground>)> {
    let Launch { name, mut playspec, playground } = launch;
    let mut tx = store.write().await?;
    playspec.name = Some(match name {
        LaunchName::Given(name) => name,
        LaunchName::FromTemplate(template) => unused_playspec_name_in(&mut tx, account_id, &template).await?,
    });
    let playspec = playspecs::create(&mut tx, Acting::new(account_id, actor), playspec, limits).await?;
    let playground = match playground {
        Some(launched) => {
            let new = NewPlayground {
                name: playspec.name.clone(),
                playspec_id: playspec.id,
                playroom_id: launched.playroom_id,
                job_mode: launched.job_mode,
                watched_services: Vec::new(),
                env_overrides: Default::default(),
                service_subdomains: launched.service_subdomains,
                service_settings: launched.service_settings,
                ttl: launched.ttl,
                sleep_after: Default::default(),
                origin: launched.origin,
                agent: launched.agent,
            };
            let playground = create_in(&mut tx, account_id, &new, limits, actor).await?;
            if let Some((target, generation)) = launched.target
                && !play_store::trigger_targets::claim_in(&mut tx, target, generation, playground.id).await?
            {
                return Err(Error::Conflict(
                    "the trigger's target moved on while this launch was made (its ref closed or was launched \
                     again): nothing was launched"
                        .into(),
                ));
            }
            Some(playground)
        }
        None => None,
    };
    store.commit(tx).await?;
    Ok((playspec, playground))
}

/// `POST /api/launch` as parsed.
#[derive(Clone, Debug, Default)]
pub struct ComposeLaunch {
    /// The Playspec's (and the Playground's) name.
    pub name: String,
    pub compose_yaml: String,
    /// The Playroom whose policy the Compose must pass (trusted without
    /// one); required with `create_playground`.
    pub playroom_id: Option<i64>,
    pub create_playground: bool,
    pub persist_volumes: bool,
    /// The AI agent provider to attach (`validate::agent`): recorded on
    /// the Playground it creates, so it needs `create_playground`.
    pub agent: Option<String>,
}

/// What a launch recorded.
#[derive(Clone, Debug)]
pub struct Launched {
    pub playspec: Playspec,
    pub playground: Option<Playground>,
    /// Playzones created for the Compose file's build services.
    pub playzones_created: Vec<i64>,
}

/// `POST /api/launch`: Compose in, a Playspec (and optionally a Playground)
/// out. Field problems are reported together; an unknown Playroom is 404
/// before the Compose is checked against its policy.
pub async fn launch_compose(
    store: &Store,
    cpu: &impl Offload,
    account_id: i64,
    request: ComposeLaunch,
    limits: Limits<'_>,
    actor: Actor,
) -> Result<Launched> {
    let mut errors = FieldErrors::new();
    if let Err(m) = play_model::validate::display_name(&request.name) {
        push_field_error(&mut errors, "name", m);
    }
    match &request.agent {
        Some(_) if !request.create_playground => {
            push_field_error(
                &mut errors,
                "agent",
                "is recorded on the Playground the launch creates: set create_playground to true, or leave agent out",
            );
        }
        Some(agent) => {
            if let Err(m) = play_model::validate::agent(agent) {
                push_field_error(&mut errors, "agent", m);
            }
        }
        None => {}
    }
    if request.create_playground && request.playroom_id.is_none() {
        push_field_error(&mut errors, "playroom_id", "is required when create_playground is true");
    }
    // Validate under the target Playroom's policy when there is one.
    let policy = match request.playroom_id {
        Some(id) => Policy::of_room(playrooms::get(store, account_id, id).await?.trusted),
        None => Policy::TRUSTED,
    };
    let yaml = request.compose_yaml.clone();
    let (report, services) = cpu
        .run(move || {
            let (report, model) = compose::parse_compose(&yaml, &policy);
            (report, model.map(|m| compose::classify(&m)))
        })
        .await?;
    for issue in &report.errors {
        let key =
            if issue.path.is_empty() { "compose_yaml".to_owned() } else { format!("compose_yaml.{}", issue.path) };
        push_field_error(&mut errors, key, issue.message.clone());
    }
    let (Some(mut services), true) = (services, errors.is_empty()) else {
        return Err(Error::Validation(errors));
    };
    // Build services naming their repository get its Playzone (found or
    // created) before anything else is written.
    let linker = url_linker(store, account_id, &limits, actor);
    let playzones_created =
        crate::playzone::link::link(linker, &mut services, &[], |d| format!("compose_yaml.services.{}", d.name))
            .await?;
    let playspec = PlayspecFields {
        name: None,
        description: Some(String::new()),
        base_compose_yaml: Some(request.compose_yaml),
        services: Some(services),
        persist_volumes: Some(request.persist_volumes),
        playzone_id: None,
        sleep_after: None,
    };
    // The Playroom was checked above and the Compose passed its policy.
    let playground = match (request.create_playground, request.playroom_id) {
        (true, Some(playroom_id)) => Some(LaunchedPlayground {
            playroom_id,
            job_mode: false,
            ttl: limits.lifetimes.ttl(false),
            service_settings: BTreeMap::new(),
            service_subdomains: BTreeMap::new(),
            target: None,
            origin: None,
            agent: request.agent.clone(),
        }),
        _ => None,
    };
    let launch = Launch { name: LaunchName::Given(request.name.trim().to_owned()), playspec, playground };
    let (playspec, playground) = record_launch(store, account_id, launch, limits.quotas, actor).await?;
    Ok(Launched { playspec, playground, playzones_created })
}

/// `POST /api/import_templates/{id}/launch` as parsed.
#[derive(Clone, Debug, Default)]
pub struct TemplateLaunch {
    /// Required; an unknown id is 404.
    pub playroom_id: Option<i64>,
    /// The version number; the latest the caller can see without one.
    pub version: Option<i64>,
    /// Variable name -> value (string, number or boolean).
    pub variables: BTreeMap<String, serde_json::Value>,
    /// The Playspec's name; the template's and a suffix without one.
    pub name: Option<String>,
    /// Launch in job mode even when the template does not say
    /// `svc.job_mode` (a schedule's runs).
    pub job_mode: bool,
    /// A trigger's launch: its Playzone, branch, URLs and target.
    pub trigger: Option<TriggerLaunch>,
}

/// What a template launch recorded and compiled.
#[derive(Clone, Debug)]
pub struct TemplateLaunched {
    pub template: Template,
    pub version: Version,
    pub playspec: Playspec,
    pub playground: Playground,
    /// Names of the values generated for `$$random__` references and
    /// `random: true` variables.
    pub generated_keys: Vec<String>,
    /// Warnings of the compiled Compose.
    pub warnings: Vec<Issue>,
    /// Playzones created for the template's build services.
    pub playzones_created: Vec<i64>,
}

/// `playspec.name` errors of the Playspec store are a template launch's
/// `name`.
fn rename_name_error(error: Error) -> Error {
    match error {
        Error::Validation(mut details) => {
            if let Some(messages) = details.remove("playspec.name") {
                details.entry("name".into()).or_default().extend(messages);
            }
            Error::Validation(details)
        }
        other => other,
    }
}

/// `POST /api/import_templates/{id}/launch`: compiles a template version
/// with the request's variables under the Playroom's policy, and records a
/// Playspec from it with a Playground that runs it (job mode when the
/// template says `svc.job_mode`).
pub async fn launch_template(
    store: &Store,
    cpu: &impl Offload,
    account_id: i64,
    template_id: i64,
    request: TemplateLaunch,
    limits: Limits<'_>,
    actor: Actor,
) -> Result<TemplateLaunched> {
    let Some(playroom_id) = request.playroom_id else {
        return Err(Error::field("playroom_id", "is required"));
    };
    let (template, version) = templates::version_for_launch(store, account_id, template_id, request.version).await?;
    let playroom = playrooms::get(store, account_id, playroom_id).await?;
    let policy = Policy::of_room(playroom.trusted);
    let mut errors = FieldErrors::new();
    if let Some(Err(m)) = request.name.as_deref().map(play_model::validate::display_name) {
        push_field_error(&mut errors, "name", m);
    }
    let (text, variables, forced_job) = (version.template_body.clone(), request.variables, request.job_mode);
    let compile_policy = policy.clone();
    let compiled = cpu.run(move || compile_for_launch(&text, &variables, &compile_policy)).await?;
    let compiled = match compiled {
        Ok(compiled) => Some(compiled),
        Err(compile_errors) => {
            for (key, messages) in compile_errors {
                errors.entry(key).or_default().extend(messages);
            }
            None
        }
    };
    let Some(compiled) = compiled.filter(|_| errors.is_empty()) else {
        return Err(Error::Validation(errors));
    };
    let (yaml, body) = (compiled.compose_yaml.clone(), version.template_body.clone());
    let (report, services, job_mode, sleep_after) = cpu
        .run(move || {
            let (report, model) = compose::parse_compose(&yaml, &policy);
            let services = model.filter(|_| report.valid).map(|m| compose::classify(&m));
            let info = svc::validate_template(&body).ok();
            // A template marked `svc.job_mode` launches a job-mode Playground.
            let job_mode = forced_job || info.as_ref().is_some_and(|info| info.job_mode);
            let sleep_after = info.map(|info| info.sleep_after).filter(|_| !job_mode).unwrap_or_default();
            (report, services, job_mode, sleep_after)
        })
        .await?;
    let Some(mut services) = services else {
        return Err(Error::Internal(format!("compiled template does not parse: {:?}", report.errors)));
    };
    // Build services naming their repository get its Playzone, as in a
    // Compose launch; a refused URL is the template body's error. Those
    // naming a trigger's repository get the trigger's Playzone by id.
    let mut linker = url_linker(store, account_id, &limits, actor);
    if let Some(trigger) = &request.trigger {
        linker.may_read_playzones = trigger_launch::link_to_trigger(&mut services, trigger);
    }
    let playzones_created =
        crate::playzone::link::link(linker, &mut services, &[], |d| format!("template_body.services.{}", d.name))
            .await?;
    let service_settings = trigger_launch::pinned_settings(&services, request.trigger.as_ref());
    let service_subdomains =
        request.trigger.as_ref().map(|t| trigger_launch::prefixed_subdomains(&services, t)).unwrap_or_default();
    let name = match request.name {
        Some(name) => LaunchName::Given(name.trim().to_owned()),
        None => LaunchName::FromTemplate(template.name.clone()),
    };
    let playspec = PlayspecFields {
        name: None,
        description: Some(format!("Launched from template {:?} version {}", template.name, version.version)),
        base_compose_yaml: Some(compiled.compose_yaml),
        services: Some(services),
        persist_volumes: Some(false),
        playzone_id: None,
        // The template's `svc.sleep_after`, the Playspec's default.
        sleep_after: Some(sleep_after),
    };
    // The Playground runs the new Playspec on the Playroom checked above.
    let launched = LaunchedPlayground {
        playroom_id: playroom.id,
        job_mode,
        ttl: limits.lifetimes.ttl(job_mode),
        service_settings,
        service_subdomains,
        target: request.trigger.as_ref().map(|t| t.target),
        origin: request.trigger.as_ref().map(|t| t.origin.clone()),
        agent: None,
    };
    let launch = Launch { name, playspec, playground: Some(launched) };
    let (playspec, playground) =
        record_launch(store, account_id, launch, limits.quotas, actor).await.map_err(rename_name_error)?;
    let playground = playground.ok_or_else(|| Error::Internal("the launch recorded no Playground".into()))?;
    Ok(TemplateLaunched {
        template,
        version,
        playspec,
        playground,
        generated_keys: compiled.generated.into_keys().collect(),
        warnings: compiled.warnings,
        playzones_created,
    })
}

/// The linker of a launch: it names repositories by URL only, never by id
/// (so a Playzone holding a token is never linked; `playzone::link`).
fn url_linker<'a>(
    store: &'a Store,
    account_id: i64,
    limits: &Limits<'a>,
    actor: Actor,
) -> crate::playzone::link::Linker<'a> {
    crate::playzone::link::Linker {
        store,
        account_id,
        policy: limits.repositories,
        hosts: limits.hosts,
        limits: limits.quotas,
        actor,
        may_read_playzones: false,
    }
}

/// Compiles a version's body for launch with fresh random values (OS
/// randomness: generated values are passwords). In core because the
/// randomness source is a dependency of this crate, not of the API's.
fn compile_for_launch(
    template_body: &str,
    variables: &BTreeMap<String, serde_json::Value>,
    policy: &Policy,
) -> std::result::Result<Compiled, FieldErrors> {
    play_model::compose::compile(template_body, variables, &mut rand::rngs::OsRng, policy)
}

/// The longest Playspec name (`validate::display_name`).
const MAX_PLAYSPEC_NAME_CHARS: usize = 100;

/// A Playspec name for a launch without one: the template's name and a
/// random six-hex-digit suffix, not yet taken in the account. Call inside the
/// launching transaction.
async fn unused_playspec_name_in(conn: &mut Conn, account_id: i64, template_name: &str) -> Result<String> {
    let base: String = template_name.chars().take(MAX_PLAYSPEC_NAME_CHARS - 7).collect();
    for _ in 0..8 {
        let suffix = &play_model::compose::template::random_value(&mut rand::rngs::OsRng)[..6];
        let name = format!("{}-{suffix}", base.trim());
        if names::id_of(&mut *conn, Named::Playspec, account_id, &name).await?.is_none() {
            return Ok(name);
        }
    }
    Err(Error::Conflict("no free Playspec name for this template; pass a name".into()))
}
