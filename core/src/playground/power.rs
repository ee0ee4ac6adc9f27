//! Sleep and wake asked through the API (`POST /api/playgrounds/{id}/sleep`
//! and `/wake`, the CLI's `play sleep|wake`, MCP): each records the desired
//! power with reason `api` (`play_store::power`) and a
//! `playground.updated` event, in one transaction; the Playground
//! reconciler does the work and records `playground.slept` or
//! `playground.woke` once the host has converged (see [`play_model::playground::sleep`]).
//!
//! Both are idempotent: asking for what is already asked changes nothing.
//! A Playground being destroyed, a finished job, and any job-mode
//! Playground (a job never sleeps) refuse with `INVALID_STATE`.
//!
//! Owns those rules; it must not hold SQL nor wake anything (the caller
//! wakes after the commit).

use crate::{Error, Result};
use play_model::model::event::Actor;
use play_model::playground::model::Playground;
use play_model::playground::state::{Power, PowerReason};
use play_store::Store;
use play_store::{playgrounds as rows, power};

/// Asks Playground `id` of `account_id` to be `to` (see the [module
/// documentation](self)); answers it as it is then.
pub async fn set(store: &Store, account_id: i64, id: i64, to: Power, actor: Actor) -> Result<Playground> {
    let mut tx = store.write().await?;
    let current = rows::get_for_update(&mut tx, account_id, id).await?;
    current.check_live()?;
    if current.job_mode {
        return Err(Error::InvalidState("a job-mode Playground never sleeps".into()));
    }
    if power::set_power_in(&mut tx, id, to, PowerReason::Api).await? {
        let operation = match to {
            Power::Asleep => "sleep",
            Power::Awake => "wake",
        };
        rows::updated_in(&mut tx, &current, actor, serde_json::json!({"operation": operation})).await?;
    }
    let playground = rows::get(&mut tx, account_id, id).await?;
    store.commit(tx).await?;
    Ok(playground)
}
