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
use bollard::query_parameters::{
    KillContainerOptions, RemoveContainerOptions, RemoveVolumeOptions, StopContainerOptions,
};
use tokio::time::Instant;

use super::{inspect, status_of};
use crate::{Error, Result};

/// The engine's default stop timeout.
const DEFAULT_GRACE: Duration = Duration::from_secs(10);
/// The first look after the signal, doubled after each look up to
/// [`POLL_MAX`]: a process that handles its signal is usually gone within
/// a few milliseconds (a rollout used to wait out a whole 250 ms poll
/// for each container it replaced), one that takes its grace period costs
/// a look every 250 ms.
const POLL_FIRST: Duration = Duration::from_millis(10);
const POLL_MAX: Duration = Duration::from_millis(250);

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

/// Stops container `id` as `docker stop` does: its stop signal, then
/// SIGKILL after its grace period (both from the Compose file), and marked
/// stopped by hand, so no restart policy starts it again.
pub async fn stop(docker: &Docker, id: &str) -> Result<()> {
    match docker.stop_container(id, None::<StopContainerOptions>).await {
        // 304: not running; 404: gone (made again when it wakes).
        Err(e) if matches!(status_of(&e), Some(304 | 404)) => Ok(()),
        other => other.map_err(|e| Error::docker("stop container", e)),
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
    for poll in polls() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        tokio::time::sleep(poll.min(left)).await;
        match stop_state(docker, id).await? {
            Some((true, ..)) => {}
            _ => return Ok(()),
        }
    }
    Ok(())
}

/// The waits between looks at a signalled container: [`POLL_FIRST`],
/// doubled each time, then [`POLL_MAX`] for ever.
fn polls() -> impl Iterator<Item = Duration> {
    std::iter::successors(Some(POLL_FIRST), |poll| Some((*poll * 2).min(POLL_MAX)))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A container that stops at once is seen stopped after 10 ms, not a
    /// whole poll later; one that takes its 10 s grace costs about 45 looks.
    #[test]
    fn looks_start_soon_and_settle_at_the_longest_poll() {
        let first: Vec<u128> = polls().take(7).map(|d| d.as_millis()).collect();
        assert_eq!(first, [10, 20, 40, 80, 160, 250, 250]);
        let mut waited = Duration::ZERO;
        let looks = polls().take_while(|d| {
            waited += *d;
            waited <= DEFAULT_GRACE
        });
        assert!((40..=46).contains(&looks.count()));
    }
}
