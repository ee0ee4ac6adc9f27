//! Playgrounds: the desired state the API records, and the status the
//! Playground reconciler writes back.
//!
//! Invariants: `generation` grows with every change of desired state
//! (create, destroy, rollout); the reconciler records the generation it
//! converged in `observed_generation`. A Playground references its Playspec
//! until it is destroyed, which is what locks the Playspec.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::any::AnyRow;

use super::events::{self, Actor, NewEvent};
use super::quotas::{self, QuotaLimits, Resource};
use super::{Backend, Conn, Store, flag, is_set};
use crate::playground::{CreationStep, DesiredState, PlaygroundStatus, ServiceState};
use crate::time::{self, Timestamp};
use crate::{Error, Result};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitConfig {
    pub branch_name: Option<String>,
    #[serde(default)]
    pub create_branch: bool,
    pub base_branch_name: Option<String>,
}

/// Per-service settings of a Playground (`services.{name}` in the request).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_config: Option<GitConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub production: Option<bool>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env_vars: BTreeMap<String, String>,
}

/// A service as last observed on the host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceStatus {
    pub name: String,
    pub status: ServiceState,
    /// `healthy`, `unhealthy`, `starting`, or null without a healthcheck.
    pub health: Option<String>,
    pub running: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Playground {
    pub id: i64,
    pub account_id: i64,
    /// This play installation's id (see migration 0007): host objects carry
    /// it so installations sharing an engine stay apart.
    pub installation: String,
    pub name: String,
    pub status: PlaygroundStatus,
    pub playspec_id: Option<i64>,
    pub playspec_name: Option<String>,
    pub playroom_id: i64,
    pub job_mode: bool,
    pub watched_services: Vec<String>,
    pub env_overrides: BTreeMap<String, String>,
    pub service_subdomains: BTreeMap<String, String>,
    pub service_settings: BTreeMap<String, ServiceSettings>,
    pub compose_project: String,
    pub desired_state: DesiredState,
    pub generation: i64,
    pub observed_generation: i64,
    pub creation_step: Option<CreationStep>,
    pub error_message: Option<String>,
    pub error_step: Option<CreationStep>,
    pub needs_recreation: bool,
    /// Hard restarts asked for; host objects of an older epoch are torn
    /// down before the Playground is provisioned afresh.
    pub restart_epoch: i64,
    /// The last epoch whose images were re-pulled (`< restart_epoch`: a
    /// hard restart still has to pull every image).
    pub pulled_epoch: i64,
    pub services: Vec<ServiceStatus>,
    pub expires_at: Option<Timestamp>,
    pub last_applied_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A validated create request.
#[derive(Clone, Debug)]
pub struct NewPlayground {
    pub name: String,
    pub playspec_id: i64,
    pub playroom_id: i64,
    pub job_mode: bool,
    pub watched_services: Vec<String>,
    pub env_overrides: BTreeMap<String, String>,
    pub service_subdomains: BTreeMap<String, String>,
    pub service_settings: BTreeMap<String, ServiceSettings>,
    pub ttl: chrono::Duration,
}

const COLUMNS: &str = "g.id, g.account_id, (SELECT uid FROM installation) AS installation, g.name, g.status, g.playspec_id, s.name AS playspec_name, g.playroom_id, \
    g.job_mode, g.watched_services, g.env_overrides, g.service_subdomains, g.service_settings, g.compose_project, \
    g.desired_state, g.generation, g.observed_generation, g.creation_step, g.error_message, g.error_step, \
    g.needs_recreation, g.restart_epoch, g.pulled_epoch, g.services_status, g.expires_at, g.last_applied_at, g.created_at, g.updated_at";
const FROM: &str = "playgrounds g LEFT JOIN playspecs s ON s.id = g.playspec_id";

fn from_row(row: &AnyRow) -> Result<Playground> {
    let id: i64 = row.try_get("id")?;
    Ok(Playground {
        id,
        account_id: row.try_get("account_id")?,
        installation: row.try_get("installation")?,
        name: row.try_get("name")?,
        status: super::text_column(row, "playgrounds", id, "status")?,
        playspec_id: row.try_get("playspec_id")?,
        playspec_name: row.try_get("playspec_name")?,
        playroom_id: row.try_get("playroom_id")?,
        job_mode: is_set(row.try_get("job_mode")?),
        watched_services: super::json_column(row, "playgrounds", id, "watched_services")?,
        env_overrides: super::json_column(row, "playgrounds", id, "env_overrides")?,
        service_subdomains: super::json_column(row, "playgrounds", id, "service_subdomains")?,
        service_settings: super::json_column(row, "playgrounds", id, "service_settings")?,
        compose_project: row.try_get("compose_project")?,
        desired_state: super::text_column(row, "playgrounds", id, "desired_state")?,
        generation: row.try_get("generation")?,
        observed_generation: row.try_get("observed_generation")?,
        creation_step: super::opt_text_column(row, "playgrounds", id, "creation_step")?,
        error_message: row.try_get("error_message")?,
        error_step: super::opt_text_column(row, "playgrounds", id, "error_step")?,
        needs_recreation: is_set(row.try_get("needs_recreation")?),
        restart_epoch: row.try_get("restart_epoch")?,
        pulled_epoch: row.try_get("pulled_epoch")?,
        services: super::json_column(row, "playgrounds", id, "services_status")?,
        expires_at: time::opt_from_db(row.try_get("expires_at")?)?,
        last_applied_at: time::opt_from_db(row.try_get("last_applied_at")?)?,
        created_at: time::from_db(&row.try_get::<String, _>("created_at")?)?,
        updated_at: time::from_db(&row.try_get::<String, _>("updated_at")?)?,
    })
}

/// The Docker Compose project name: `play-<installation, 6 characters>-<id>-
/// <name as a DNS label>`: unique per installation because of the id, apart
/// from other installations on the same engine, and valid for
/// `docker compose -p`.
pub fn compose_project(installation: &str, id: i64, name: &str) -> String {
    let short: String = installation.chars().take(6).collect();
    let slug: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    let slug: String = slug.chars().take(40).collect();
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() { format!("play-{short}-{id}") } else { format!("play-{short}-{id}-{slug}") }
}

/// The container of a service, as Docker Compose names it (one replica).
pub fn container_name(compose_project: &str, service: &str) -> String {
    format!("{compose_project}-{service}-1")
}

fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

/// Records a new Playground (status `in_progress`, step `queued`) inside the
/// caller's transaction; the reconciler takes it from there.
pub async fn create_in(
    conn: &mut Conn,
    backend: Backend,
    account_id: i64,
    new: NewPlayground,
    limits: &QuotaLimits,
    actor: Actor,
) -> Result<Playground> {
    quotas::check(conn, backend, account_id, Resource::Playgrounds, limits).await?;
    let now = time::now();
    let row = sqlx::query(
        "INSERT INTO playgrounds (account_id, playroom_id, playspec_id, name, status, job_mode, watched_services, \
         env_overrides, service_subdomains, service_settings, creation_step, expires_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13) RETURNING id",
    )
    .bind(account_id)
    .bind(new.playroom_id)
    .bind(new.playspec_id)
    .bind(&new.name)
    .bind(PlaygroundStatus::InProgress.as_str())
    .bind(flag(new.job_mode))
    .bind(to_json(&new.watched_services))
    .bind(to_json(&new.env_overrides))
    .bind(to_json(&new.service_subdomains))
    .bind(to_json(&new.service_settings))
    .bind(CreationStep::Queued.as_str())
    .bind(time::to_db(&(now + new.ttl)))
    .bind(time::to_db(&now))
    .fetch_one(&mut *conn)
    .await?;
    let id: i64 = row.try_get("id")?;
    let installation: String =
        sqlx::query("SELECT uid FROM installation").fetch_one(&mut *conn).await?.try_get("uid")?;
    sqlx::query("UPDATE playgrounds SET compose_project = $1 WHERE id = $2")
        .bind(compose_project(&installation, id, &new.name))
        .bind(id)
        .execute(&mut *conn)
        .await?;
    events::record(
        conn,
        NewEvent::new(account_id, "playground", id, "created").playground_name(&new.name).actor(actor).metadata(
            serde_json::json!({"playspec_id": new.playspec_id, "playroom_id": new.playroom_id, "job_mode": new.job_mode}),
        ),
    )
    .await?;
    get_in(conn, account_id, id).await
}

pub async fn create(
    store: &Store,
    account_id: i64,
    new: NewPlayground,
    limits: &QuotaLimits,
    actor: Actor,
) -> Result<Playground> {
    let mut tx = store.write().await?;
    let playground = create_in(&mut tx, store.backend(), account_id, new, limits, actor).await?;
    tx.commit().await?;
    Ok(playground)
}

pub async fn get_in(conn: &mut Conn, account_id: i64, id: i64) -> Result<Playground> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM {FROM} WHERE g.id = $1 AND g.account_id = $2"))
        .bind(id)
        .bind(account_id)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or(Error::NotFound("playground"))?;
    from_row(&row)
}

pub async fn get(store: &Store, account_id: i64, id: i64) -> Result<Playground> {
    let mut conn = store.conn().await?;
    get_in(&mut conn, account_id, id).await
}

/// The account's Playgrounds that are not yet destroyed.
pub async fn list(store: &Store, account_id: i64) -> Result<Vec<Playground>> {
    let rows =
        sqlx::query(&format!("SELECT {COLUMNS} FROM {FROM} WHERE g.account_id = $1 AND g.status <> $2 ORDER BY g.id"))
            .bind(account_id)
            .bind(PlaygroundStatus::Destroyed.as_str())
            .fetch_all(store.pool())
            .await?;
    rows.iter().map(from_row).collect()
}

pub(crate) async fn set_status_in(
    conn: &mut Conn,
    playground: &Playground,
    to: PlaygroundStatus,
    actor: Actor,
) -> Result<()> {
    events::record(
        conn,
        NewEvent::new(playground.account_id, "playground", playground.id, "status.changed")
            .playground_name(&playground.name)
            .actor(actor)
            .metadata(serde_json::json!({"from": playground.status, "to": to})),
    )
    .await?;
    Ok(())
}

/// Records the wish to destroy: desired state `destroyed`, status
/// `destroying`, a new generation. Idempotent: a second request changes
/// nothing and writes no event.
pub async fn request_destroy(store: &Store, account_id: i64, id: i64, actor: Actor) -> Result<Playground> {
    let mut tx = store.write().await?;
    let current = get_in(&mut tx, account_id, id).await?;
    if current.desired_state != DesiredState::Destroyed {
        sqlx::query(
            "UPDATE playgrounds SET desired_state = $1, status = $2, generation = generation + 1, \
             updated_at = $3 WHERE id = $4",
        )
        .bind(DesiredState::Destroyed.as_str())
        .bind(PlaygroundStatus::Destroying.as_str())
        .bind(time::to_db(&time::now()))
        .bind(id)
        .execute(&mut *tx)
        .await?;
        set_status_in(&mut tx, &current, PlaygroundStatus::Destroying, actor).await?;
    }
    let playground = get_in(&mut tx, account_id, id).await?;
    tx.commit().await?;
    Ok(playground)
}

/// Moves `expires_at` to `max(expires_at, now) + by`.
pub async fn extend(store: &Store, account_id: i64, id: i64, by: chrono::Duration, actor: Actor) -> Result<Playground> {
    let mut tx = store.write().await?;
    let current = get_in(&mut tx, account_id, id).await?;
    if current.desired_state == DesiredState::Destroyed {
        return Err(Error::InvalidState("the Playground is being destroyed".into()));
    }
    let now = time::now();
    let base = current.expires_at.filter(|at| *at > now).unwrap_or(now);
    sqlx::query("UPDATE playgrounds SET expires_at = $1, updated_at = $2 WHERE id = $3")
        .bind(time::to_db(&(base + by)))
        .bind(time::to_db(&now))
        .bind(id)
        .execute(&mut *tx)
        .await?;
    events::record(
        &mut tx,
        NewEvent::new(account_id, "playground", id, "updated")
            .playground_name(&current.name)
            .actor(actor)
            .metadata(serde_json::json!({"expires_at": time::to_db(&(base + by))})),
    )
    .await?;
    let playground = get_in(&mut tx, account_id, id).await?;
    tx.commit().await?;
    Ok(playground)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compose_projects_are_valid_and_unique_by_id() {
        assert_eq!(compose_project("3fa91c0d", 7, "My Shop (staging)"), "play-3fa91c-7-my-shop-staging");
        assert_eq!(compose_project("3fa91c0d", 8, "!!!"), "play-3fa91c-8");
        let long = compose_project("3fa91c0d", 9, &"x".repeat(200));
        assert!(long.len() <= 57 && long.starts_with("play-3fa91c-9-"));
    }
}
