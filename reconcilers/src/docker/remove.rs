//! Removing objects from an engine: a container stopped gracefully first
//! or not, a network, a volume. Each is idempotent in effect: an object
//! already gone, or (a container) already being removed, is success, so a
//! pass interrupted mid-removal simply removes again.
//!
//! Stopping gracefully is what `docker stop` / `docker compose down` do:
//! the container's stop signal (SIGTERM unless the image or Compose says
//! otherwise), then, after its stop timeout (`stop_grace_period`, else the
//! engine's 10 s), whatever is still running is killed by the forced
//! removal that follows. Not `POST /containers/{id}/stop`: the engine
//! answers that only once the container is down, which can outlast the
//! bound on every engine call (`call_timeout`). A signal and short polls
//! keep every call short.
//!
//! Owns how an object is removed; which objects may be removed (labels,
//! ownership, orphans, persisted volumes) is decided by the callers before
//! they get here.

use std::time::Duration;

use bollard::Docker;
use bollard::query_parameters::{KillContainerOptions, RemoveContainerOptions, RemoveVolumeOptions};
use tokio::time::Instant;

use super::{inspect, status_of};
use crate::{Error, Result};

/// The engine's default stop timeout.
const DEFAULT_GRACE: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(250);

/// Stops container `id` gracefully (see the [module documentation](self)),
/// then removes it with its anonymous volumes.
pub async fn stop_and_remove(docker: &Docker, id: &str) -> Result<()> {
    stop_gracefully(docker, id).await?;
    container(docker, id, "remove container").await
}

/// Removes container `id` at once (killing it if it runs), with its
/// anonymous volumes; `operation` names the call in an error.
pub async fn container(docker: &Docker, id: &str, operation: &'static str) -> Result<()> {
    let options = RemoveContainerOptions { force: true, v: true, ..Default::default() };
    match docker.remove_container(id, Some(options)).await {
        // Gone, or "removal already in progress".
        Err(e) if matches!(status_of(&e), Some(404 | 409)) => Ok(()),
        other => other.map_err(|e| Error::docker(operation, e)),
    }
}

/// Removes network `id` (or name); `operation` names the call in an error.
pub async fn network(docker: &Docker, id: &str, operation: &'static str) -> Result<()> {
    match docker.remove_network(id).await {
        Err(e) if status_of(&e) == Some(404) => Ok(()),
        other => other.map_err(|e| Error::docker(operation, e)),
    }
}

/// Removes volume `name`.
pub async fn volume(docker: &Docker, name: &str) -> Result<()> {
    match docker.remove_volume(name, None::<RemoveVolumeOptions>).await {
        Err(e) if status_of(&e) == Some(404) => Ok(()),
        other => other.map_err(|e| Error::docker("remove volume", e)),
    }
}

/// Signals container `id` to stop and waits until it has, or its grace
/// period is over. A container that is gone or not running is done.
pub async fn stop_gracefully(docker: &Docker, id: &str) -> Result<()> {
    let Some((running, grace, signal)) = stop_state(docker, id).await? else { return Ok(()) };
    if !running {
        return Ok(());
    }
    match docker.kill_container(id, Some(KillContainerOptions { signal })).await {
        // Gone, or stopped meanwhile (409: not running).
        Err(e) if matches!(status_of(&e), Some(404 | 409)) => return Ok(()),
        other => other.map_err(|e| Error::docker("signal container", e))?,
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        tokio::time::sleep(POLL).await;
        match stop_state(docker, id).await? {
            Some((true, ..)) => {}
            _ => return Ok(()),
        }
    }
    Ok(())
}

/// (running, stop timeout, stop signal), or `None` when the container is
/// gone.
async fn stop_state(docker: &Docker, id: &str) -> Result<Option<(bool, Duration, String)>> {
    let Some(info) = inspect::container(docker, id).await? else { return Ok(None) };
    let running = inspect::status(&info).running;
    let config = info.config.as_ref();
    let grace = config
        .and_then(|c| c.stop_timeout)
        .and_then(|t| u64::try_from(t).ok())
        .map_or(DEFAULT_GRACE, Duration::from_secs);
    let signal = config.and_then(|c| c.stop_signal.clone()).unwrap_or_else(|| "SIGTERM".to_owned());
    Ok(Some((running, grace, signal)))
}
