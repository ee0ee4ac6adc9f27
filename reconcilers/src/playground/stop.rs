//! Stopping a container gracefully, as `docker stop` / `docker compose
//! down` do: its stop signal (SIGTERM unless the image or Compose says
//! otherwise), then, after its stop timeout (`stop_grace_period`, else the
//! engine's 10 s), whatever is still running is killed by the forced
//! removal that follows.
//!
//! Not `POST /containers/{id}/stop`: the engine answers that only once the
//! container is down, which can outlast the bound on every engine call
//! (`call_timeout`). A signal and short polls keep every call short.

use std::time::Duration;

use bollard::Docker;
use bollard::query_parameters::{InspectContainerOptions, KillContainerOptions};
use tokio::time::Instant;

use super::host::status_of;
use crate::{Error, Result};

/// The engine's default stop timeout.
const DEFAULT_GRACE: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(250);

/// Signals container `id` to stop and waits until it has, or its grace
/// period is over. A container that is gone or not running is done.
pub async fn gracefully(docker: &Docker, id: &str) -> Result<()> {
    let Some((running, grace, signal)) = state(docker, id).await? else { return Ok(()) };
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
        match state(docker, id).await? {
            Some((true, ..)) => {}
            _ => return Ok(()),
        }
    }
    Ok(())
}

/// (running, stop timeout, stop signal), or `None` when the container is
/// gone.
async fn state(docker: &Docker, id: &str) -> Result<Option<(bool, Duration, String)>> {
    let info = match docker.inspect_container(id, None::<InspectContainerOptions>).await {
        Ok(info) => info,
        Err(e) if status_of(&e) == Some(404) => return Ok(None),
        Err(e) => return Err(Error::docker("inspect container", e)),
    };
    let running = info.state.as_ref().and_then(|s| s.running).unwrap_or(false);
    let config = info.config.as_ref();
    let grace = config
        .and_then(|c| c.stop_timeout)
        .and_then(|t| u64::try_from(t).ok())
        .map_or(DEFAULT_GRACE, Duration::from_secs);
    let signal = config.and_then(|c| c.stop_signal.clone()).unwrap_or_else(|| "SIGTERM".to_owned());
    Ok(Some((running, grace, signal)))
}
