//! One simulated container and the engine's two views of it: the list
//! summary (`GET /containers/json`) and the inspect document
//! (`GET /containers/{id}/json`).

use std::collections::HashMap;

use bollard::models::{
    ContainerConfig, ContainerInspectResponse, ContainerState, ContainerStateStatusEnum, ContainerSummary,
    ContainerSummaryHostConfig, ContainerSummaryNetworkSettings, ContainerSummaryStateEnum, EndpointSettings, Health,
    HealthStatusEnum, HostConfig, MountPoint, MountPointTypeEnum, NetworkSettings,
};

/// The engine's "never" time, for a container not yet started or finished.
pub const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    Created,
    Running,
    Exited(i64),
}

/// A named volume mounted at `target` in a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeMount {
    pub name: String,
    pub target: String,
}

#[derive(Debug, Clone)]
pub struct Container {
    pub id: String,
    /// Without the leading `/` the engine's API puts in front.
    pub name: String,
    /// As the create body named it.
    pub image: String,
    pub config: ContainerConfig,
    pub host_config: HostConfig,
    /// Network name -> endpoint (aliases as asked for).
    pub networks: HashMap<String, EndpointSettings>,
    /// Named volumes it mounts, and where.
    pub volumes: Vec<VolumeMount>,
    pub state: RunState,
    pub created: i64,
    pub started_at: String,
    pub finished_at: String,
    pub pid: i64,
}

impl Container {
    pub fn labels(&self) -> HashMap<String, String> {
        self.config.labels.clone().unwrap_or_default()
    }

    pub fn is_running(&self) -> bool {
        self.state == RunState::Running
    }

    /// The engine's status word (`docker ps --filter status=`).
    pub fn status_word(&self) -> &'static str {
        match self.state {
            RunState::Created => "created",
            RunState::Running => "running",
            RunState::Exited(_) => "exited",
        }
    }

    /// Attributes of this container's events: its labels, name and image.
    pub fn event_attributes(&self) -> HashMap<String, String> {
        let mut attributes = self.labels();
        attributes.insert("name".to_owned(), self.name.clone());
        attributes.insert("image".to_owned(), self.image.clone());
        attributes
    }

    fn health(&self) -> Option<Health> {
        let test = self.config.healthcheck.as_ref()?.test.as_ref()?;
        if test.first().is_some_and(|t| t == "NONE") || test.is_empty() {
            return None;
        }
        let status = if self.is_running() { HealthStatusEnum::HEALTHY } else { HealthStatusEnum::UNHEALTHY };
        Some(Health { status: Some(status), failing_streak: Some(0), log: Some(Vec::new()) })
    }

    fn mount_points(&self) -> Vec<MountPoint> {
        self.volumes
            .iter()
            .map(|mount| MountPoint {
                typ: Some(MountPointTypeEnum::VOLUME),
                name: Some(mount.name.clone()),
                source: Some(super::volumes::mountpoint(&mount.name)),
                destination: Some(mount.target.clone()),
                driver: Some("local".to_owned()),
                rw: Some(true),
                ..Default::default()
            })
            .collect()
    }

    pub fn summary(&self) -> ContainerSummary {
        let state = match self.state {
            RunState::Created => ContainerSummaryStateEnum::CREATED,
            RunState::Running => ContainerSummaryStateEnum::RUNNING,
            RunState::Exited(_) => ContainerSummaryStateEnum::EXITED,
        };
        let status = match self.state {
            RunState::Created => "Created".to_owned(),
            RunState::Running => "Up".to_owned(),
            RunState::Exited(code) => format!("Exited ({code})"),
        };
        ContainerSummary {
            id: Some(self.id.clone()),
            names: Some(vec![format!("/{}", self.name)]),
            image: Some(self.image.clone()),
            image_id: Some(super::images::image_id(&self.image)),
            command: Some(self.config.cmd.clone().unwrap_or_default().join(" ")),
            created: Some(self.created),
            ports: Some(Vec::new()),
            labels: Some(self.labels()),
            state: Some(state),
            status: Some(status),
            host_config: Some(ContainerSummaryHostConfig {
                network_mode: self.host_config.network_mode.clone(),
                ..Default::default()
            }),
            network_settings: Some(ContainerSummaryNetworkSettings { networks: Some(self.networks.clone()) }),
            mounts: Some(self.mount_points()),
            ..Default::default()
        }
    }

    pub fn inspect(&self) -> ContainerInspectResponse {
        let (status, exit_code) = match self.state {
            RunState::Created => (ContainerStateStatusEnum::CREATED, 0),
            RunState::Running => (ContainerStateStatusEnum::RUNNING, 0),
            RunState::Exited(code) => (ContainerStateStatusEnum::EXITED, code),
        };
        let command = self.config.entrypoint.iter().chain(self.config.cmd.iter()).flatten().cloned();
        let mut command: Vec<String> = command.collect();
        let path = if command.is_empty() { String::new() } else { command.remove(0) };
        ContainerInspectResponse {
            id: Some(self.id.clone()),
            name: Some(format!("/{}", self.name)),
            path: Some(path),
            args: Some(command),
            state: Some(ContainerState {
                status: Some(status),
                running: Some(self.is_running()),
                paused: Some(false),
                restarting: Some(false),
                oom_killed: Some(false),
                dead: Some(false),
                pid: Some(if self.is_running() { self.pid } else { 0 }),
                exit_code: Some(exit_code),
                error: Some(String::new()),
                started_at: Some(self.started_at.clone()),
                finished_at: Some(self.finished_at.clone()),
                health: self.health(),
            }),
            image: Some(super::images::image_id(&self.image)),
            restart_count: Some(0),
            driver: Some("overlay2".to_owned()),
            platform: Some("linux".to_owned()),
            host_config: Some(self.host_config.clone()),
            mounts: Some(self.mount_points()),
            config: Some(self.config.clone()),
            network_settings: Some(NetworkSettings { networks: Some(self.networks.clone()), ..Default::default() }),
            ..Default::default()
        }
    }
}
