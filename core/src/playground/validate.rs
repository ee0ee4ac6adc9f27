//! Checking what a request asks of a Playground against the Playspec and
//! Playroom it names: the rules of a create and of a rollout, with every
//! problem reported under the request field it is about
//! (`playground.env_overrides.X`, `playspec.base_compose_yaml.services.web`).
//!
//! The Compose check ([`compose_errors`]) parses the whole document:
//! callers run it through an `Offload` (`crate::offload`). This
//! module owns the rules; it must not write anything.

use std::collections::BTreeMap;

use crate::offload::Offload;
use crate::{Error, Result};
use play_model::compose::{self, Policy, ServiceDefinition, ServiceType};
use play_model::error::push_field_error;
use play_model::model::playroom::Playroom;
use play_model::model::playspec::Playspec;
use play_model::playground::model::{NewPlayground, Playground, RolloutChanges, ServiceSettings};
use play_model::playground::policy::Lifetimes;
use play_model::playground::sleep::SleepAfter;
use play_model::{FieldErrors, validate};
use play_store::playrooms;
use play_store::playspecs;
use play_store::{Conn, Store, playspec_files};

/// The largest value of one variable.
pub const MAX_ENV_VALUE_BYTES: usize = 64 * 1024;

fn env_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 256
}

fn check_env(errors: &mut FieldErrors, prefix: &str, vars: &BTreeMap<String, String>) {
    for (name, value) in vars {
        if !env_name_ok(name) {
            push_field_error(
                errors,
                format!("{prefix}.{name}"),
                "names are letters, digits and '_', not starting with a digit",
            );
        } else if value.len() > MAX_ENV_VALUE_BYTES || value.contains('\0') {
            push_field_error(errors, format!("{prefix}.{name}"), "values are at most 64 KiB, without NUL");
        }
    }
}

/// The Playspec's Compose as a Playground with `env_overrides` runs it
/// (`${V}` reads the overrides) must pass the Playroom's policy, with the
/// Playspec's mounted files as its project files: its refusals, keyed
/// under `playspec.base_compose_yaml`. CPU-heavy.
pub fn compose_errors(yaml: &str, policy: &Policy, env_overrides: &BTreeMap<String, String>) -> FieldErrors {
    let lookup = |var: &str| env_overrides.get(var).cloned();
    let report = compose::validate_compose_with(yaml, policy, &lookup);
    let mut errors = FieldErrors::new();
    for issue in &report.errors {
        push_field_error(&mut errors, format!("playspec.base_compose_yaml.{}", issue.path), issue.message.clone());
    }
    errors
}

/// [`compose_errors`] of `playspec` on `playroom` through `cpu`.
async fn compose_errors_on(
    conn: &mut Conn,
    cpu: &impl Offload,
    playspec: &Playspec,
    playroom: &Playroom,
    env_overrides: &BTreeMap<String, String>,
) -> Result<FieldErrors> {
    let files = playspec_files::list_files(&mut *conn, playspec.id).await?;
    let policy = play_model::playground::desired::policy_for(playroom.trusted, playspec, &files);
    let (yaml, overrides) = (playspec.base_compose_yaml.clone(), env_overrides.clone());
    cpu.run(move || compose_errors(&yaml, &policy, &overrides)).await
}

/// A Playground's settings fit its Playspec's `services`: variable names and
/// sizes, subdomains only for exposed services, per-service settings only
/// for services that exist (`git_config` only on dynamic ones). Shared by
/// create and rollout.
pub fn check_settings(
    errors: &mut FieldErrors,
    services: &[ServiceDefinition],
    env_overrides: &BTreeMap<String, String>,
    service_subdomains: &BTreeMap<String, String>,
    settings: &BTreeMap<String, ServiceSettings>,
) {
    let find = |name: &str| services.iter().find(|s| s.name == name);
    check_env(errors, "playground.env_overrides", env_overrides);
    for (service, subdomain) in service_subdomains {
        let field = format!("playground.service_subdomains.{service}");
        match find(service) {
            None => push_field_error(errors, field, format!("no service {service:?} in the Playspec")),
            Some(def) if !def.exposure.enabled => push_field_error(errors, field, "the service is not exposed"),
            Some(_) => {
                if let Err(m) = compose::svc::check_label_value(compose::svc::LabelKind::Subdomain, subdomain) {
                    push_field_error(errors, field, m);
                }
            }
        }
    }
    for (service, settings) in settings {
        let field = format!("playground.services.{service}");
        match find(service) {
            None => push_field_error(errors, field, format!("no service {service:?} in the Playspec")),
            Some(def) => {
                if settings.git_config.is_some() && def.service_type != ServiceType::Dynamic {
                    push_field_error(
                        errors,
                        format!("{field}.git_config"),
                        "only services built from a Playzone have a branch",
                    );
                }
                if settings.git_config.as_ref().is_some_and(|git| git.create_branch && git.base_branch_name.is_none()) {
                    push_field_error(
                        errors,
                        format!("{field}.git_config.base_branch_name"),
                        "is required with create_branch",
                    );
                }
                check_env(errors, &format!("{field}.env_vars"), &settings.env_vars);
            }
        }
    }
}

/// `git_config.create_branch` makes `branch_name` from `base_branch_name`:
/// a branch of that name the Playzone's index already holds at another
/// commit than the base is not what was asked for, so the create is
/// refused (the same commit is fine: creating is idempotent). Read from
/// the index, not the remote: the reconciler checks the remote again when
/// it creates the branch.
async fn check_branches_to_create(
    conn: &mut Conn,
    errors: &mut FieldErrors,
    services: &[ServiceDefinition],
    settings: &BTreeMap<String, ServiceSettings>,
) -> Result<()> {
    for (service, settings) in settings {
        let Some(git) = settings.git_config.as_ref().filter(|g| g.create_branch) else { continue };
        let (Some(branch), Some(base)) = (git.branch_name.as_deref(), git.base_branch_name.as_deref()) else {
            continue;
        };
        let Some(playzone) = services.iter().find(|d| &d.name == service).and_then(|d| d.playzone_id) else {
            continue;
        };
        let existing = play_store::playzones::branch_commit(&mut *conn, playzone, branch).await?;
        let base_commit = play_store::playzones::branch_commit(&mut *conn, playzone, base).await?;
        if let (Some(existing), Some(base_commit)) = (existing, base_commit)
            && existing != base_commit
        {
            push_field_error(
                errors,
                format!("playground.services.{service}.git_config.branch_name"),
                format!(
                    "branch `{branch}` already exists at commit {}, not at `{base}` ({}): choose another name, or \
                     leave out create_branch to build the existing branch",
                    &existing[..existing.len().min(12)],
                    &base_commit[..base_commit.len().min(12)]
                ),
            );
        }
    }
    Ok(())
}

/// A create request as parsed, before any check (`POST /api/playgrounds`).
#[derive(Clone, Debug, Default)]
pub struct CreateRequest {
    pub name: Option<String>,
    pub playspec_id: Option<i64>,
    pub playroom_id: Option<i64>,
    pub job_mode: bool,
    pub watched_services: Vec<String>,
    pub env_overrides: BTreeMap<String, String>,
    pub service_subdomains: BTreeMap<String, String>,
    pub services: BTreeMap<String, ServiceSettings>,
    /// `sleep_after` as given (`30m`, `never`); absent inherits.
    pub sleep_after: Option<String>,
}

/// Everything a create needs, checked: the Playspec and Playroom are the
/// account's (else 404), the Compose passes the Playroom's policy with the
/// request's overrides, and every named service exists with settings that
/// fit it.
pub async fn check_create(
    store: &Store,
    cpu: &impl Offload,
    account_id: i64,
    request: CreateRequest,
    lifetimes: Lifetimes,
) -> Result<NewPlayground> {
    let mut conn = store.conn().await?;
    check_create_in(&mut conn, cpu, account_id, request, lifetimes).await
}

/// [`check_create`] on the caller's connection: inside a transaction it
/// sees the Playspec and Playroom that transaction wrote (server-side
/// apply checks a Playground against objects of the same set).
pub async fn check_create_in(
    conn: &mut Conn,
    cpu: &impl Offload,
    account_id: i64,
    request: CreateRequest,
    lifetimes: Lifetimes,
) -> Result<NewPlayground> {
    let mut errors = FieldErrors::new();
    let name = request.name.unwrap_or_default();
    if let Err(m) = validate::display_name(&name) {
        push_field_error(&mut errors, "playground.name", m);
    }
    let (Some(playspec_id), Some(playroom_id)) = (request.playspec_id, request.playroom_id) else {
        if request.playspec_id.is_none() {
            push_field_error(&mut errors, "playground.playspec_id", "is required");
        }
        if request.playroom_id.is_none() {
            push_field_error(&mut errors, "playground.playroom_id", "is required");
        }
        return Err(Error::Validation(errors));
    };
    let playspec = playspecs::get(&mut *conn, account_id, playspec_id).await?;
    let playroom = playrooms::get(&mut *conn, account_id, playroom_id).await?;
    errors.extend(compose_errors_on(conn, cpu, &playspec, &playroom, &request.env_overrides).await?);
    let services: Vec<ServiceDefinition> = playspec.definitions()?;
    let find = |name: &str| services.iter().find(|s| s.name == name);
    if !request.job_mode && !request.watched_services.is_empty() {
        push_field_error(&mut errors, "playground.watched_services", "is for job mode only");
    }
    for (i, name) in request.watched_services.iter().enumerate() {
        if find(name).is_none() {
            push_field_error(
                &mut errors,
                format!("playground.watched_services[{i}]"),
                format!("no service {name:?} in the Playspec"),
            );
        }
    }
    check_settings(&mut errors, &services, &request.env_overrides, &request.service_subdomains, &request.services);
    let sleep_after = check_sleep_after(&mut errors, request.sleep_after.as_deref(), request.job_mode);
    check_branches_to_create(conn, &mut errors, &services, &request.services).await?;
    if !errors.is_empty() {
        return Err(Error::Validation(errors));
    }
    Ok(NewPlayground {
        name: name.trim().to_owned(),
        playspec_id,
        playroom_id,
        job_mode: request.job_mode,
        watched_services: request.watched_services,
        env_overrides: request.env_overrides,
        service_subdomains: request.service_subdomains,
        service_settings: request.services,
        ttl: lifetimes.ttl(request.job_mode),
        sleep_after,
        origin: None,
        agent: None,
    })
}

/// `playground.sleep_after`: a duration within the bounds or `never`
/// ([`play_model::playground::sleep::parse_after`]); a job never sleeps, so
/// a job may only say `never`. Absent: it inherits.
fn check_sleep_after(errors: &mut FieldErrors, value: Option<&str>, job_mode: bool) -> SleepAfter {
    let Some(value) = value else { return SleepAfter::Inherit };
    match play_model::playground::sleep::parse_after(value) {
        Ok(setting) if job_mode && setting.sleeps() => {
            push_field_error(errors, "playground.sleep_after", "a job-mode Playground never sleeps");
            SleepAfter::Inherit
        }
        Ok(setting) => setting,
        Err(message) => {
            push_field_error(errors, "playground.sleep_after", message);
            SleepAfter::Inherit
        }
    }
}

/// The settings a rollout would leave (`changes` over `current`) fit the
/// Playground's Playspec and pass its Playroom's policy. Nothing to check
/// when nothing changes.
pub async fn check_rollout(
    store: &Store,
    cpu: &impl Offload,
    current: &Playground,
    changes: &RolloutChanges,
) -> Result<()> {
    let mut conn = store.conn().await?;
    check_rollout_in(&mut conn, cpu, current, changes).await
}

/// [`check_rollout`] on the caller's connection (see [`check_create_in`]);
/// a change of Playspec is checked against the new one.
pub async fn check_rollout_in(
    conn: &mut Conn,
    cpu: &impl Offload,
    current: &Playground,
    changes: &RolloutChanges,
) -> Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    if current.job_mode && changes.sleep_after.is_some_and(SleepAfter::sleeps) {
        return Err(Error::field("playground.sleep_after", "a job-mode Playground never sleeps"));
    }
    let account_id = current.account_id;
    let spec_id = changes
        .playspec_id
        .or(current.playspec_id)
        .ok_or_else(|| Error::InvalidState("the Playspec no longer exists".into()))?;
    let playspec = playspecs::get(&mut *conn, account_id, spec_id).await?;
    let playroom = playrooms::get(&mut *conn, account_id, current.playroom_id).await?;
    let services: Vec<ServiceDefinition> = playspec.definitions()?;
    let env = changes.env_overrides.as_ref().unwrap_or(&current.env_overrides);
    let mut errors = compose_errors_on(conn, cpu, &playspec, &playroom, env).await?;
    check_settings(
        &mut errors,
        &services,
        env,
        changes.service_subdomains.as_ref().unwrap_or(&current.service_subdomains),
        changes.service_settings.as_ref().unwrap_or(&current.service_settings),
    );
    if errors.is_empty() { Ok(()) } else { Err(Error::Validation(errors)) }
}
