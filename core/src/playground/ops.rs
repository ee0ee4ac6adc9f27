//! Changes the API makes to a live Playground's desired state: destroy,
//! extend, rollout (apply changed settings incrementally) and hard restart
//! (tear everything down and provision afresh).
//!
//! Each only records desired state, in one transaction with its outbox
//! events, like every API write; the Playground reconciler does the work:
//! - **destroy**: desired state `destroyed`, status `destroying`, a new
//!   generation. Idempotent: a second request changes nothing and writes
//!   no event.
//! - **extend**: `expires_at` moves to `max(expires_at, now) + by`.
//! - **rollout** checks the changed settings against the Playspec and
//!   the Playroom's policy first (`validate`).
//! - **rollout** and **hard restart**: a new `generation`, status
//!   `in_progress` at step `queued` with the last error cleared, and a
//!   `playground.updated` event (plus `playground.status.changed` when the
//!   status moves).
//!
//! Invariants:
//! - A Playground being destroyed refuses extend, rollout and hard restart,
//!   and a finished job refuses rollout and hard restart, with
//!   `INVALID_STATE` ([`Playground::check_live`]).
//! - A rollout never changes `restart_epoch`, so the reconciler keeps every
//!   container whose config hash is unchanged and pulls no image already
//!   present; a hard restart bumps `restart_epoch`, so every container (and,
//!   unless the Playspec persists volumes, every named volume) of an older
//!   epoch goes and every image is pulled again.
//!
//! This module owns those rules and the order of the writes; it must not
//! hold SQL (that is `play_store::playgrounds`) nor wake anything (the
//! caller wakes after the commit).

use crate::offload::Offload;
use crate::playground::validate;
use crate::{Error, Result};
use play_model::model::event::Actor;
use play_model::playground::model::{Playground, RolloutChanges};
use play_model::playground::state::{DesiredState, PlaygroundStatus};
use play_model::playground::ttl;
use play_model::time;
use play_store::playgrounds as rows;
use play_store::{Conn, Store};

/// Records the wish to destroy (see the [module documentation](self)).
pub async fn request_destroy(store: &Store, account_id: i64, id: i64, actor: Actor) -> Result<Playground> {
    let mut tx = store.write().await?;
    let out = rows::request_destroy_in(&mut tx, account_id, id, actor).await?;
    store.commit(tx).await?;
    Ok(out)
}

pub use play_model::playground::ttl::{DEFAULT_EXTEND_HOURS, MAX_EXTEND_HOURS};

/// Extends the Playground's lifetime by `hours` (1 to
/// [`MAX_EXTEND_HOURS`], [`DEFAULT_EXTEND_HOURS`] when `None`): `expires_at`
/// moves to `max(expires_at, now) + hours`.
pub async fn extend(store: &Store, account_id: i64, id: i64, hours: Option<i64>, actor: Actor) -> Result<Playground> {
    let hours = hours.unwrap_or(DEFAULT_EXTEND_HOURS);
    if !(1..=MAX_EXTEND_HOURS).contains(&hours) {
        return Err(Error::field("duration_hours", format!("must be from 1 to {MAX_EXTEND_HOURS}")));
    }
    extend_by(store, account_id, id, chrono::Duration::hours(hours), actor).await
}

/// Moves `expires_at` to `max(expires_at, now) + by`.
pub async fn extend_by(
    store: &Store,
    account_id: i64,
    id: i64,
    by: chrono::Duration,
    actor: Actor,
) -> Result<Playground> {
    let mut tx = store.write().await?;
    let current = rows::get_for_update(&mut tx, account_id, id).await?;
    if current.desired_state == DesiredState::Destroyed {
        return Err(Error::InvalidState("the Playground is being destroyed".into()));
    }
    let expires_at = ttl::extended(current.expires_at, time::now(), by);
    rows::set_expiry_in(&mut tx, id, expires_at).await?;
    rows::updated_in(&mut tx, &current, actor, serde_json::json!({"expires_at": time::to_db(&expires_at)})).await?;
    let playground = rows::get(&mut tx, account_id, id).await?;
    store.commit(tx).await?;
    Ok(playground)
}

/// Sets `current`'s lifetime to `ttl` from its creation (a server-side
/// apply that changed `spec.ttl`), inside the caller's transaction.
pub async fn set_ttl_in(conn: &mut Conn, current: &Playground, ttl: std::time::Duration) -> Result<()> {
    rows::set_expiry_in(conn, current.id, ttl::expires_at(current.created_at, ttl::offset(ttl))).await
}

/// Bumps the generation and puts the Playground back to `in_progress`.
async fn restart_progress(conn: &mut Conn, current: &Playground, epoch_bump: i64, actor: Actor) -> Result<()> {
    rows::restart_in(conn, current.id, epoch_bump).await?;
    if current.status != PlaygroundStatus::InProgress {
        rows::status_changed_in(conn, current, PlaygroundStatus::InProgress, actor).await?;
    }
    Ok(())
}

/// A rollout (`POST /api/playgrounds/{id}/rollout`): the changed settings
/// are checked against the Playground's Playspec and Playroom
/// ([`validate::check_rollout`]), then recorded ([`record_rollout`]).
pub async fn rollout(
    store: &Store,
    cpu: &impl Offload,
    account_id: i64,
    id: i64,
    changes: RolloutChanges,
    actor: Actor,
) -> Result<Playground> {
    let current = rows::get(store, account_id, id).await?;
    validate::check_rollout(store, cpu, &current, &changes).await?;
    record_rollout(store, account_id, id, changes, actor).await
}

/// Records a rollout: `changes` replace the Playground's settings (checked
/// by the caller against its Playspec), and a new generation asks the
/// reconciler to converge incrementally.
pub async fn record_rollout(
    store: &Store,
    account_id: i64,
    id: i64,
    changes: RolloutChanges,
    actor: Actor,
) -> Result<Playground> {
    let mut tx = store.write().await?;
    let out = record_rollout_in(&mut tx, account_id, id, changes, actor).await?;
    store.commit(tx).await?;
    Ok(out)
}

/// [`record_rollout`] inside the caller's transaction (server-side apply writes a
/// whole set in one).
pub async fn record_rollout_in(
    conn: &mut Conn,
    account_id: i64,
    id: i64,
    changes: RolloutChanges,
    actor: Actor,
) -> Result<Playground> {
    let current = rows::get_for_update(&mut *conn, account_id, id).await?;
    current.check_live()?;
    let fields = changes.changed_fields(&current);
    if let Some(playspec_id) = changes.playspec_id {
        rows::set_playspec_in(conn, id, playspec_id).await?;
    }
    if let Some(sleep_after) = changes.sleep_after {
        rows::set_sleep_after_in(conn, id, sleep_after).await?;
    }
    rows::set_settings_in(
        conn,
        id,
        changes.env_overrides.as_ref().unwrap_or(&current.env_overrides),
        changes.service_subdomains.as_ref().unwrap_or(&current.service_subdomains),
        changes.service_settings.as_ref().unwrap_or(&current.service_settings),
    )
    .await?;
    restart_progress(conn, &current, 0, actor).await?;
    // Services built from Playzones are built again from their branches'
    // current commits (or found in the cache): the next pass pins them.
    play_store::builds::clear_pins(conn, id).await?;
    rows::updated_in(conn, &current, actor, serde_json::json!({"operation": "rollout", "changed": fields})).await?;
    let playground = rows::get(&mut *conn, account_id, id).await?;
    Ok(playground)
}

/// Records a hard restart: a new restart epoch and generation.
pub async fn hard_restart(store: &Store, account_id: i64, id: i64, actor: Actor) -> Result<Playground> {
    let mut tx = store.write().await?;
    let current = rows::get_for_update(&mut tx, account_id, id).await?;
    current.check_live()?;
    restart_progress(&mut tx, &current, 1, actor).await?;
    play_store::builds::clear_pins(&mut tx, id).await?;
    rows::updated_in(
        &mut tx,
        &current,
        actor,
        serde_json::json!({"operation": "hard_restart", "restart_epoch": current.restart_epoch + 1}),
    )
    .await?;
    let playground = rows::get(&mut tx, account_id, id).await?;
    store.commit(tx).await?;
    Ok(playground)
}

#[cfg(test)]
#[path = "ops_tests.rs"]
mod tests;
