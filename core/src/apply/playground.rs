//! Applying a Playground: the create body of `POST /api/playgrounds`
//! with references by name (`playroomRef`, `playspecRef`) and a `ttl`.
//!
//! - Create: checked like `POST /api/playgrounds` against the Playspec
//!   revision and Playroom (of this set or the account), in the apply's
//!   transaction; `ttl` (default: the server's) sets `expires_at`.
//! - A changed spec, a new revision of its Playspec, or settings changed
//!   outside apply: a rollout (new generation; only services whose config
//!   hash changed are recreated), moved to the revision; a changed `ttl`
//!   moves `expires_at` to creation + ttl.
//! - The Playroom, job mode and watched services cannot change: the error
//!   says to delete the Playground (or rename it) and apply again.
//! - A Playground destroyed since (its TTL ran out) is created again; a
//!   job's run is not repeated while its spec is unchanged.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::Error;
use crate::playground::{CreateRequest, launch, ops, validate};
use play_model::FieldErrors;
use play_model::apply::{Action, Kind, SecretPath};
use play_model::playground::sleep::SleepAfter;
use play_model::playground::{DesiredState, Playground, PlaygroundStatus, RolloutChanges, ServiceSettings, ttl};
use play_model::playzone::env_file::is_sensitive;
use play_store::playgrounds as rows;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Object;
use super::context::{Cx, Outcome, decide, drift_lines, rekeyed, resolve};
use play_model::json::parse_value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    #[serde(rename = "playroomRef")]
    playroom_ref: String,
    #[serde(rename = "playspecRef")]
    playspec_ref: String,
    #[serde(default)]
    job_mode: bool,
    #[serde(default)]
    watched_services: Vec<String>,
    #[serde(default)]
    env_overrides: BTreeMap<String, String>,
    #[serde(default)]
    service_subdomains: BTreeMap<String, String>,
    #[serde(default)]
    services: BTreeMap<String, ServiceSettings>,
    ttl: Option<String>,
    /// `30m`, `never`; absent: its Playspec's, then the installation's.
    sleep_after: Option<String>,
}

/// Paths of values that look like secrets (`is_sensitive`): shown as
/// digests, never stored.
fn secret_paths(spec: &Spec) -> Vec<SecretPath> {
    let mut paths: Vec<SecretPath> = spec
        .env_overrides
        .iter()
        .filter(|(k, v)| is_sensitive(k, v))
        .map(|(k, _)| vec!["env_overrides".to_owned(), k.clone()])
        .collect();
    for (service, settings) in &spec.services {
        paths.extend(
            settings
                .env_vars
                .iter()
                .filter(|(k, v)| is_sensitive(k, v))
                .map(|(k, _)| vec!["services".to_owned(), service.clone(), "env_vars".to_owned(), k.clone()]),
        );
    }
    paths
}

/// The settings apply controls, as they are on the Playground.
fn live(cx: &Cx<'_>, playground: &Playground, paths: &[SecretPath]) -> Value {
    let view = json!({
        "playroom_id": playground.playroom_id,
        "playspec_id": playground.playspec_id,
        "job_mode": playground.job_mode,
        "watched_services": playground.watched_services,
        "env_overrides": playground.env_overrides,
        "service_subdomains": playground.service_subdomains,
        "services": playground.service_settings,
    });
    cx.redact(&view, paths)
}

/// Whether the Playground still stands for its manifest: a destroyed
/// one is gone (a job that completed stays its manifest's run).
fn standing(playground: &Playground) -> bool {
    playground.desired_state != DesiredState::Destroyed || playground.job_mode
}

/// What the reconcilers report about a live Playground.
fn reported(playground: &Playground) -> Vec<String> {
    let mut out = Vec::new();
    if playground.status == PlaygroundStatus::Failed {
        out.push(format!(
            "the Playground failed: {}",
            playground.error_message.as_deref().unwrap_or("no message recorded")
        ));
    }
    if playground.status == PlaygroundStatus::Running {
        for s in playground.services.iter().filter(|s| !s.running) {
            out.push(format!("service {} is {}", s.name, s.status.as_str()));
        }
    }
    out
}

fn parse_ttl(object: &Object, text: Option<&str>) -> Result<Option<Duration>, Error> {
    let Some(text) = text else { return Ok(None) };
    let field = object.field("spec.ttl");
    let ttl = humantime::parse_duration(text).map_err(|e| Error::field(field.clone(), e.to_string()))?;
    if let Some(why) = ttl::check(ttl) {
        return Err(Error::field(field, why));
    }
    Ok(Some(ttl))
}

/// `spec.sleep_after` (absent: inherit).
fn parse_sleep_after(object: &Object, text: Option<&str>) -> Result<SleepAfter, Error> {
    let Some(text) = text else { return Ok(SleepAfter::Inherit) };
    play_model::playground::sleep::parse_after(text)
        .map_err(|message| Error::field(object.field("spec.sleep_after"), message))
}

fn immutable(object: &Object, field: &str) -> Error {
    Error::field(
        object.field(&format!("spec.{field}")),
        "cannot change on an existing Playground: delete it (play delete playground NAME) and apply again, or give \
         the manifest a new name",
    )
}

pub async fn apply(cx: &mut Cx<'_>, object: &Object) -> Result<Outcome, Error> {
    let spec: Spec = parse_value(&object.spec, &object.field("spec")).map_err(Error::Validation)?;
    let ttl = parse_ttl(object, spec.ttl.as_deref())?;
    let sleep_after = parse_sleep_after(object, spec.sleep_after.as_deref())?;
    let paths = secret_paths(&spec);
    let redacted = cx.redact(&object.spec, &paths);
    let mut errors = FieldErrors::new();
    let playroom_id =
        resolve(cx, Kind::Playroom, &spec.playroom_ref, object.field("spec.playroomRef"), &mut errors).await?;
    let playspec_id =
        resolve(cx, Kind::Playspec, &spec.playspec_ref, object.field("spec.playspecRef"), &mut errors).await?;
    let (Some(playroom_id), Some(playspec_id)) = (playroom_id, playspec_id) else {
        return Err(Error::Validation(errors));
    };
    let account = cx.account();
    let current = match cx.last(object).map(|row| row.object_id) {
        Some(id) => match rows::get_for_update(&mut *cx.conn, account, id).await {
            Ok(p) if standing(&p) => Some(p),
            Ok(_) | Err(Error::NotFound(_)) => None,
            Err(e) => return Err(e),
        },
        None => None,
    };
    let before = current.as_ref().map(|p| live(cx, p, &paths));
    let mut decision = decide(cx, object, &redacted, before.as_ref());
    let moved = current.as_ref().is_some_and(|p| p.playspec_id != Some(playspec_id));
    if decision.action == Action::Unchanged && moved {
        decision.action = Action::Configured;
    }
    let lifetimes = cx.env.limits.lifetimes;
    let id = match (decision.action, &current) {
        (Action::Unchanged, Some(p)) => p.id,
        (Action::Configured, Some(p))
            if p.status == PlaygroundStatus::Complete || p.desired_state == DesiredState::Destroyed =>
        {
            // A finished job whose spec changed: a new run.
            create(cx, object, &spec, playroom_id, playspec_id, ttl, lifetimes).await?
        }
        (Action::Configured, Some(p)) => {
            if p.playroom_id != playroom_id {
                return Err(immutable(object, "playroomRef"));
            }
            if p.job_mode != spec.job_mode {
                return Err(immutable(object, "job_mode"));
            }
            if p.watched_services != spec.watched_services {
                return Err(immutable(object, "watched_services"));
            }
            let changes = RolloutChanges {
                env_overrides: Some(spec.env_overrides.clone()),
                service_subdomains: Some(spec.service_subdomains.clone()),
                service_settings: Some(spec.services.clone()),
                playspec_id: Some(playspec_id),
                sleep_after: Some(sleep_after),
            };
            validate::check_rollout_in(cx.conn, cx.env.cpu, p, &changes)
                .await
                .map_err(|e| rekeyed(e, "playground", object))?;
            let settings_changed = !changes.changed_fields(p).is_empty();
            if settings_changed || !decision.drift.is_empty() {
                ops::record_rollout_in(cx.conn, account, p.id, changes, cx.principal.actor()).await?;
            }
            if let Some(ttl) = ttl
                && decision.diff.iter().any(|d| d.path == "spec.ttl")
            {
                ops::set_ttl_in(cx.conn, p, ttl).await?;
            }
            p.id
        }
        _ => create(cx, object, &spec, playroom_id, playspec_id, ttl, lifetimes).await?,
    };
    let playground = rows::get(&mut *cx.conn, account, id).await?;
    let mut drift = drift_lines(&decision.drift);
    drift.extend(reported(&playground));
    if decision.action != Action::Unchanged {
        let after = live(cx, &playground, &paths);
        cx.record(object, redacted, after, id, None).await?;
    }
    Ok(Outcome { id, action: decision.action, diff: decision.diff, drift, revision: None })
}

async fn create(
    cx: &mut Cx<'_>,
    object: &Object,
    spec: &Spec,
    playroom_id: i64,
    playspec_id: i64,
    ttl: Option<Duration>,
    lifetimes: play_model::playground::Lifetimes,
) -> Result<i64, Error> {
    let request = CreateRequest {
        name: Some(object.name.clone()),
        playspec_id: Some(playspec_id),
        playroom_id: Some(playroom_id),
        job_mode: spec.job_mode,
        watched_services: spec.watched_services.clone(),
        env_overrides: spec.env_overrides.clone(),
        service_subdomains: spec.service_subdomains.clone(),
        services: spec.services.clone(),
        sleep_after: spec.sleep_after.clone(),
    };
    let mut new = validate::check_create_in(cx.conn, cx.env.cpu, cx.account(), request, lifetimes)
        .await
        .map_err(|e| rekeyed(e, "playground", object))?;
    if let Some(ttl) = ttl {
        new.ttl = chrono::Duration::from_std(ttl).unwrap_or(new.ttl);
    }
    let created = launch::create_in(cx.conn, cx.account(), &new, cx.env.limits.quotas, cx.principal.actor())
        .await
        .map_err(|e| rekeyed(e, "playground", object))?;
    Ok(created.id)
}
