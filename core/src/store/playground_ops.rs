//! Operations on a live Playground that change its desired state: rollout
//! (apply changed settings incrementally) and hard restart (tear everything
//! down and provision afresh).
//!
//! Both only record desired state, like every API write: a new
//! `generation`, status `in_progress` at step `queued` with the last error
//! cleared, and a `playground.updated` event (plus
//! `playground.status.changed` when the status moves) in the same
//! transaction. The Playground reconciler does the work.
//!
//! Invariants:
//! - A Playground being destroyed, or a finished job, refuses both with
//!   `INVALID_STATE`: there is nothing left to update.
//! - A rollout never changes `restart_epoch`, so the reconciler keeps every
//!   container whose config hash is unchanged and pulls no image already
//!   present; a hard restart bumps `restart_epoch`, so every container (and,
//!   unless the Playspec persists volumes, every named volume) of an older
//!   epoch goes and every image is pulled again.

use std::collections::BTreeMap;

use super::events::{self, Actor, NewEvent};
use super::playgrounds::{self, Playground, ServiceSettings};
use super::{Conn, Store};
use crate::playground::{CreationStep, DesiredState, PlaygroundStatus};
use crate::time;
use crate::{Error, Result};

/// Settings a rollout replaces; `None` keeps the current value.
#[derive(Clone, Debug, Default)]
pub struct RolloutChanges {
    pub env_overrides: Option<BTreeMap<String, String>>,
    pub service_subdomains: Option<BTreeMap<String, String>>,
    pub service_settings: Option<BTreeMap<String, ServiceSettings>>,
}

impl RolloutChanges {
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

fn check_live(p: &Playground) -> Result<()> {
    if p.desired_state == DesiredState::Destroyed {
        return Err(Error::InvalidState("the Playground is being destroyed".into()));
    }
    if p.status == PlaygroundStatus::Complete {
        return Err(Error::InvalidState("the job is complete; its Playground no longer runs".into()));
    }
    Ok(())
}

fn json<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Internal(e.to_string()))
}

/// Bumps the generation and puts the Playground back to `in_progress`.
async fn restart_progress(conn: &mut Conn, current: &Playground, epoch_bump: i64, actor: Actor) -> Result<()> {
    sqlx::query(
        "UPDATE playgrounds SET generation = generation + 1, restart_epoch = restart_epoch + $1, status = $2, \
         creation_step = $3, error_message = NULL, error_step = NULL, updated_at = $4 WHERE id = $5",
    )
    .bind(epoch_bump)
    .bind(PlaygroundStatus::InProgress.as_str())
    .bind(CreationStep::Queued.as_str())
    .bind(time::to_db(&time::now()))
    .bind(current.id)
    .execute(&mut *conn)
    .await?;
    if current.status != PlaygroundStatus::InProgress {
        playgrounds::set_status_in(conn, current, PlaygroundStatus::InProgress, actor).await?;
    }
    Ok(())
}

/// Records a rollout: `changes` replace the Playground's settings (checked by
/// the caller against its Playspec), and a new generation asks the
/// reconciler to converge incrementally.
pub async fn rollout(
    store: &Store,
    account_id: i64,
    id: i64,
    changes: RolloutChanges,
    actor: Actor,
) -> Result<Playground> {
    let mut tx = store.write().await?;
    let current = playgrounds::get_in(&mut tx, account_id, id).await?;
    check_live(&current)?;
    let fields = changes.changed_fields(&current);
    sqlx::query(
        "UPDATE playgrounds SET env_overrides = $1, service_subdomains = $2, service_settings = $3 WHERE id = $4",
    )
    .bind(json(changes.env_overrides.as_ref().unwrap_or(&current.env_overrides))?)
    .bind(json(changes.service_subdomains.as_ref().unwrap_or(&current.service_subdomains))?)
    .bind(json(changes.service_settings.as_ref().unwrap_or(&current.service_settings))?)
    .bind(id)
    .execute(&mut *tx)
    .await?;
    restart_progress(&mut tx, &current, 0, actor).await?;
    events::record(
        &mut tx,
        NewEvent::new(account_id, "playground", id, "updated")
            .playground_name(&current.name)
            .actor(actor)
            .metadata(serde_json::json!({"operation": "rollout", "changed": fields})),
    )
    .await?;
    let playground = playgrounds::get_in(&mut tx, account_id, id).await?;
    tx.commit().await?;
    Ok(playground)
}

/// Records a hard restart: a new restart epoch and generation.
pub async fn hard_restart(store: &Store, account_id: i64, id: i64, actor: Actor) -> Result<Playground> {
    let mut tx = store.write().await?;
    let current = playgrounds::get_in(&mut tx, account_id, id).await?;
    check_live(&current)?;
    restart_progress(&mut tx, &current, 1, actor).await?;
    events::record(
        &mut tx,
        NewEvent::new(account_id, "playground", id, "updated")
            .playground_name(&current.name)
            .actor(actor)
            .metadata(serde_json::json!({"operation": "hard_restart", "restart_epoch": current.restart_epoch + 1})),
    )
    .await?;
    let playground = playgrounds::get_in(&mut tx, account_id, id).await?;
    tx.commit().await?;
    Ok(playground)
}
