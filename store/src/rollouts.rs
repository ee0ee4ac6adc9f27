//! The reconciler's records of zero-downtime rollouts (see
//! `play_model::desired::ZeroDowntime`): which container serves a service, and
//! which rollouts failed. Fenced like every reconciler write
//! (`playground_status`).

use super::Store;
use super::fence::{Fence, Fenced};
use super::playground_status::write;
use super::playgrounds::set_in;
use crate::Result;

/// Records that `container` serves `service` (the edge routes to it from
/// its next pass). No change when it already does.
pub async fn set_serving(store: &Store, fence: Fence<'_>, id: i64, service: &str, container: &str) -> Result<Fenced> {
    write(store, fence, id, async |tx, current| {
        let mut services = current.services.clone();
        let Some(entry) = services.iter_mut().find(|s| s.name == service) else { return Ok(()) };
        if entry.container.as_deref() == Some(container) {
            return Ok(());
        }
        entry.container = Some(container.to_owned());
        let json = serde_json::to_string(&services).map_err(|e| crate::Error::Internal(e.to_string()))?;
        set_in(tx, "UPDATE playgrounds SET services_status = $1, updated_at = $2 WHERE id = $3", json, id).await
    })
    .await
}

/// Records that the zero-downtime rollout of `service` to `config_hash`
/// failed: the reconciler does not try that hash again until a rollout or
/// hard restart clears it (`playgrounds::restart_in`).
pub async fn record_failed(
    store: &Store,
    fence: Fence<'_>,
    id: i64,
    service: &str,
    config_hash: &str,
) -> Result<Fenced> {
    write(store, fence, id, async |tx, current| {
        let mut failed = current.failed_rollouts.clone();
        if failed.get(service).map(String::as_str) == Some(config_hash) {
            return Ok(());
        }
        failed.insert(service.to_owned(), config_hash.to_owned());
        let json = serde_json::to_string(&failed).map_err(|e| crate::Error::Internal(e.to_string()))?;
        set_in(tx, "UPDATE playgrounds SET failed_rollouts = $1, updated_at = $2 WHERE id = $3", json, id).await
    })
    .await
}
