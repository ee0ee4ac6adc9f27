//! A container's state as the engine reports it: run state, exit code,
//! health, when it last exited.
//!
//! Owns the one reading of `docker inspect`'s `State` into play's types
//! ([`State`], [`Health`], [`Status`]), which the Playground plan and the
//! graceful stop both use, and the inspect call where a container gone
//! meanwhile is an answer, not an error. It reads only: what a state means
//! (drift, a finished job) is the plan's.

use bollard::Docker;
use bollard::models::{ContainerInspectResponse, ContainerStateStatusEnum, HealthStatusEnum};
use bollard::query_parameters::InspectContainerOptions;
use play_model::time::Timestamp;

use super::status_of;
use crate::{Error, Result};

/// A container's run state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Created,
    Running,
    Exited(i64),
    /// Paused, restarting, being removed, dead.
    Other,
}

/// A container's healthcheck result (none without a healthcheck).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    Starting,
    Healthy,
    Unhealthy,
}

/// What [`status`] reads from an inspected container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    pub state: State,
    /// The engine's `Running` flag: also true while the container is paused
    /// or restarting, so it is what a stop acts on (where [`State`] says
    /// [`State::Other`]).
    pub running: bool,
    pub health: Option<Health>,
    /// When it last exited (`None` if it never did).
    pub finished_at: Option<Timestamp>,
}

/// The state of an inspected container. An exited container whose exit
/// code the engine did not report counts as exited with -1.
pub fn status(container: &ContainerInspectResponse) -> Status {
    let state = container.state.as_ref();
    Status {
        state: match state.and_then(|s| s.status) {
            Some(ContainerStateStatusEnum::CREATED) => State::Created,
            Some(ContainerStateStatusEnum::RUNNING) => State::Running,
            Some(ContainerStateStatusEnum::EXITED) => State::Exited(state.and_then(|s| s.exit_code).unwrap_or(-1)),
            _ => State::Other,
        },
        running: state.and_then(|s| s.running).unwrap_or(false),
        health: match state.and_then(|s| s.health.as_ref()).and_then(|h| h.status) {
            Some(HealthStatusEnum::STARTING) => Some(Health::Starting),
            Some(HealthStatusEnum::HEALTHY) => Some(Health::Healthy),
            Some(HealthStatusEnum::UNHEALTHY) => Some(Health::Unhealthy),
            _ => None,
        },
        finished_at: state.and_then(|s| s.finished_at.as_deref()).and_then(finished_at),
    }
}

/// Container `id` as the engine reports it, or `None` when it is gone (say,
/// removed between a list and this call).
pub async fn container(docker: &Docker, id: &str) -> Result<Option<ContainerInspectResponse>> {
    match docker.inspect_container(id, None::<InspectContainerOptions>).await {
        Ok(c) => Ok(Some(c)),
        Err(e) if status_of(&e) == Some(404) => Ok(None),
        Err(e) => Err(Error::docker("inspect container", e)),
    }
}

/// The engine's `FinishedAt` (RFC 3339 with nanoseconds; the zero time
/// `0001-01-01T00:00:00Z` for a container that never exited).
fn finished_at(text: &str) -> Option<Timestamp> {
    let at = chrono::DateTime::parse_from_rfc3339(text).ok()?.with_timezone(&chrono::Utc);
    (chrono::Datelike::year(&at) > 1).then(|| play_model::time::truncate(at))
}

#[cfg(test)]
mod tests {
    use bollard::models::{ContainerState, Health as EngineHealth};

    use super::*;

    #[test]
    fn finished_at_reads_the_engine_time_and_ignores_the_zero_time() {
        let at = finished_at("2026-03-01T10:20:30.123456789Z").unwrap();
        assert_eq!(play_model::time::to_db(&at), "2026-03-01T10:20:30.123Z");
        assert_eq!(finished_at("0001-01-01T00:00:00Z"), None);
        assert_eq!(finished_at("nonsense"), None);
    }

    fn inspected(state: ContainerState) -> ContainerInspectResponse {
        ContainerInspectResponse { state: Some(state), ..Default::default() }
    }

    #[test]
    fn status_reads_state_exit_code_health_and_the_running_flag() {
        let exited = inspected(ContainerState {
            status: Some(ContainerStateStatusEnum::EXITED),
            exit_code: Some(3),
            finished_at: Some("2026-03-01T10:20:30Z".into()),
            ..Default::default()
        });
        let s = status(&exited);
        assert_eq!((s.state, s.running, s.health), (State::Exited(3), false, None));
        assert!(s.finished_at.is_some());
        let paused = inspected(ContainerState {
            status: Some(ContainerStateStatusEnum::PAUSED),
            running: Some(true),
            health: Some(EngineHealth { status: Some(HealthStatusEnum::HEALTHY), ..Default::default() }),
            ..Default::default()
        });
        let s = status(&paused);
        assert_eq!((s.state, s.running, s.health), (State::Other, true, Some(Health::Healthy)));
        let no_code =
            inspected(ContainerState { status: Some(ContainerStateStatusEnum::EXITED), ..Default::default() });
        assert_eq!(status(&no_code).state, State::Exited(-1));
        assert_eq!(status(&ContainerInspectResponse::default()).state, State::Other);
    }
}
