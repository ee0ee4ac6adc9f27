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
//! This module owns those rules; the SQL is `crate::store::playgrounds`.

use std::collections::BTreeMap;

use super::model::{Playground, ServiceSettings};
use super::state::{DesiredState, PlaygroundStatus};
use crate::store::events::Actor;
use crate::store::playgrounds as rows;
use crate::store::{Conn, Store};
use crate::time;
use crate::{Error, Result};

/// Records the wish to destroy (see the [module documentation](self)).
pub async fn request_destroy(store: &Store, account_id: i64, id: i64, actor: Actor) -> Result<Playground> {
    let mut tx = store.write().await?;
    let current = rows::get_in(&mut tx, account_id, id).await?;
    if current.desired_state != DesiredState::Destroyed {
        rows::mark_destroying_in(&mut tx, id).await?;
        rows::status_changed_in(&mut tx, &current, PlaygroundStatus::Destroying, actor).await?;
    }
    let playground = rows::get_in(&mut tx, account_id, id).await?;
    tx.commit().await?;
    Ok(playground)
}

/// Moves `expires_at` to `max(expires_at, now) + by`.
pub async fn extend(store: &Store, account_id: i64, id: i64, by: chrono::Duration, actor: Actor) -> Result<Playground> {
    let mut tx = store.write().await?;
    let current = rows::get_in(&mut tx, account_id, id).await?;
    if current.desired_state == DesiredState::Destroyed {
        return Err(Error::InvalidState("the Playground is being destroyed".into()));
    }
    let now = time::now();
    let base = current.expires_at.filter(|at| *at > now).unwrap_or(now);
    let expires_at = base + by;
    rows::set_expiry_in(&mut tx, id, expires_at).await?;
    rows::updated_in(&mut tx, &current, actor, serde_json::json!({"expires_at": time::to_db(&expires_at)})).await?;
    let playground = rows::get_in(&mut tx, account_id, id).await?;
    tx.commit().await?;
    Ok(playground)
}

/// Settings a rollout replaces; `None` keeps the current value.
#[derive(Clone, Debug, Default)]
pub struct RolloutChanges {
    pub env_overrides: Option<BTreeMap<String, String>>,
    pub service_subdomains: Option<BTreeMap<String, String>>,
    pub service_settings: Option<BTreeMap<String, ServiceSettings>>,
}

impl RolloutChanges {
    /// Whether the rollout changes any setting (else it only re-applies).
    pub fn is_empty(&self) -> bool {
        self.env_overrides.is_none() && self.service_subdomains.is_none() && self.service_settings.is_none()
    }

    fn changed_fields(&self, current: &Playground) -> Vec<&'static str> {
        let mut fields = Vec::new();
        if self.env_overrides.as_ref().is_some_and(|v| *v != current.env_overrides) {
            fields.push("env_overrides");
        }
        if self.service_subdomains.as_ref().is_some_and(|v| *v != current.service_subdomains) {
            fields.push("service_subdomains");
        }
        if self.service_settings.as_ref().is_some_and(|v| *v != current.service_settings) {
            fields.push("services");
        }
        fields
    }
}

/// Bumps the generation and puts the Playground back to `in_progress`.
async fn restart_progress(conn: &mut Conn, current: &Playground, epoch_bump: i64, actor: Actor) -> Result<()> {
    rows::restart_in(conn, current.id, epoch_bump).await?;
    if current.status != PlaygroundStatus::InProgress {
        rows::status_changed_in(conn, current, PlaygroundStatus::InProgress, actor).await?;
    }
    Ok(())
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
    let current = rows::get_in(&mut tx, account_id, id).await?;
    current.check_live()?;
    let fields = changes.changed_fields(&current);
    rows::set_settings_in(
        &mut tx,
        id,
        changes.env_overrides.as_ref().unwrap_or(&current.env_overrides),
        changes.service_subdomains.as_ref().unwrap_or(&current.service_subdomains),
        changes.service_settings.as_ref().unwrap_or(&current.service_settings),
    )
    .await?;
    restart_progress(&mut tx, &current, 0, actor).await?;
    rows::updated_in(&mut tx, &current, actor, serde_json::json!({"operation": "rollout", "changed": fields})).await?;
    let playground = rows::get_in(&mut tx, account_id, id).await?;
    tx.commit().await?;
    Ok(playground)
}

/// Records a hard restart: a new restart epoch and generation.
pub async fn hard_restart(store: &Store, account_id: i64, id: i64, actor: Actor) -> Result<Playground> {
    let mut tx = store.write().await?;
    let current = rows::get_in(&mut tx, account_id, id).await?;
    current.check_live()?;
    restart_progress(&mut tx, &current, 1, actor).await?;
    rows::updated_in(
        &mut tx,
        &current,
        actor,
        serde_json::json!({"operation": "hard_restart", "restart_epoch": current.restart_epoch + 1}),
    )
    .await?;
    let playground = rows::get_in(&mut tx, account_id, id).await?;
    tx.commit().await?;
    Ok(playground)
}
