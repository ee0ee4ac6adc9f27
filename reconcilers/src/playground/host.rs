//! The Playground reconciler's host side: observe a Playground's objects by
//! label, and apply plan steps through bollard.
//!
//! Every call is idempotent in effect: creating what exists (a network or
//! volume by name, a container by name that carries this Playground's label)
//! is not an error, removing what is gone is not an error. A name held by a
//! container *not* labelled for this Playground is an error: play never
//! adopts or removes objects it did not label.
//!
//! The shared edge network is the exception: see [`edge`].

use std::collections::HashMap;
use std::time::Duration;

use bollard::Docker;
use bollard::errors::Error as BollardError;
use bollard::models::{
    ContainerCreateBody, ContainerStateStatusEnum, EndpointSettings, HealthConfig, HealthStatusEnum, HostConfig, Mount,
    MountTypeEnum, NetworkConnectRequest, NetworkCreateRequest, NetworkingConfig, PortBinding, RestartPolicy,
    RestartPolicyNameEnum, VolumeCreateOptions,
};
use bollard::query_parameters::{
    CreateContainerOptions, InspectContainerOptions, ListContainersOptions, ListNetworksOptions, ListVolumesOptions,
    RemoveContainerOptions, RemoveVolumeOptions, StartContainerOptions,
};
use futures::future::try_join_all;

use super::edge;
use super::plan::{Health, Observed, ObservedContainer, State, Step};
use super::spec::{
    Desired, LABEL_CONFIG_HASH, LABEL_INSTALLATION, LABEL_NETWORK, LABEL_PLAYGROUND, LABEL_PROJECT, LABEL_SERVICE,
    LABEL_VOLUME, ServiceSpec,
};
use crate::host::{RegistryCredentials, pull_image};
use crate::{Error, Result};

pub(super) fn status_of(e: &BollardError) -> Option<u16> {
    match e {
        BollardError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

/// Objects of this Playground of this installation (Docker ANDs the labels).
fn label_filter(installation: &str, playground_id: i64) -> HashMap<String, Vec<String>> {
    HashMap::from([(
        "label".to_owned(),
        vec![format!("{LABEL_PLAYGROUND}={playground_id}"), format!("{LABEL_INSTALLATION}={installation}")],
    )])
}

/// Everything on the host labelled for `playground_id`, which of `images`
/// are present, which of the named `volumes` exist (labelled or not: the
/// engine creates a missing named volume for a mount, without labels), and
/// the networks named `edge`.
pub async fn observe(
    docker: &Docker,
    installation: &str,
    playground_id: i64,
    images: &[String],
    volumes: &[String],
    edge: Option<&str>,
) -> Result<Observed> {
    let filters = label_filter(installation, playground_id);
    let listed = docker
        .list_containers(Some(ListContainersOptions {
            all: true,
            filters: Some(filters.clone()),
            ..Default::default()
        }))
        .await
        .map_err(|e| Error::docker("list containers", e))?;
    let inspected = try_join_all(listed.iter().filter_map(|c| c.id.clone()).map(|id| async move {
        match docker.inspect_container(&id, None::<InspectContainerOptions>).await {
            Ok(c) => Ok(Some(c)),
            // Removed between the list and the inspect.
            Err(e) if status_of(&e) == Some(404) => Ok(None),
            Err(e) => Err(Error::docker("inspect container", e)),
        }
    }))
    .await?;
    let containers = inspected
        .into_iter()
        .flatten()
        .map(|c| {
            let labels = c.config.as_ref().and_then(|cfg| cfg.labels.clone()).unwrap_or_default();
            let state = c.state.as_ref();
            ObservedContainer {
                id: c.id.clone().unwrap_or_default(),
                name: c.name.as_deref().unwrap_or_default().trim_start_matches('/').to_owned(),
                service: labels.get(LABEL_SERVICE).cloned(),
                config_hash: labels.get(LABEL_CONFIG_HASH).cloned(),
                state: match state.and_then(|s| s.status) {
                    Some(ContainerStateStatusEnum::CREATED) => State::Created,
                    Some(ContainerStateStatusEnum::RUNNING) => State::Running,
                    Some(ContainerStateStatusEnum::EXITED) => {
                        State::Exited(state.and_then(|s| s.exit_code).unwrap_or(-1))
                    }
                    _ => State::Other,
                },
                health: match state.and_then(|s| s.health.as_ref()).and_then(|h| h.status) {
                    Some(HealthStatusEnum::STARTING) => Some(Health::Starting),
                    Some(HealthStatusEnum::HEALTHY) => Some(Health::Healthy),
                    Some(HealthStatusEnum::UNHEALTHY) => Some(Health::Unhealthy),
                    _ => None,
                },
            }
        })
        .collect();
    let networks = docker
        .list_networks(Some(ListNetworksOptions { filters: Some(filters.clone()) }))
        .await
        .map_err(|e| Error::docker("list networks", e))?
        .into_iter()
        .filter_map(|n| n.name)
        .collect();
    let mut found: std::collections::BTreeSet<String> = docker
        .list_volumes(Some(ListVolumesOptions { filters: Some(filters) }))
        .await
        .map_err(|e| Error::docker("list volumes", e))?
        .volumes
        .unwrap_or_default()
        .into_iter()
        .map(|v| v.name)
        .collect();
    let unlabelled: Vec<&String> = volumes.iter().filter(|v| !found.contains(*v)).collect();
    for name in unlabelled {
        match docker.inspect_volume(name).await {
            Ok(_) => {
                found.insert(name.clone());
            }
            Err(e) if status_of(&e) == Some(404) => {}
            Err(e) => return Err(Error::docker("inspect volume", e)),
        }
    }
    let mut present = std::collections::BTreeSet::new();
    for image in images {
        match docker.inspect_image(image).await {
            Ok(_) => {
                present.insert(image.clone());
            }
            Err(e) if status_of(&e) == Some(404) => {}
            Err(e) => return Err(Error::docker("inspect image", e)),
        }
    }
    let shared_networks = match edge {
        Some(name) => edge::networks_named(docker, name).await?,
        None => Vec::new(),
    };
    Ok(Observed { networks, volumes: found, images: present, containers, shared_networks })
}

/// What applying needs besides the steps.
#[derive(Debug)]
pub struct Apply<'a> {
    pub docker: &'a Docker,
    pub desired: Option<&'a Desired>,
    pub installation: &'a str,
    pub playground_id: i64,
    pub credentials: &'a [RegistryCredentials],
    pub pull_timeout: Duration,
}

/// The order groups of steps run in; steps within a group are independent.
fn rank(step: &Step) -> u8 {
    match step {
        Step::RemoveContainer { .. } => 0,
        Step::CreateNetwork(_) | Step::CreateSharedNetwork(_) | Step::RemoveSharedNetwork { .. } => 1,
        Step::CreateVolume(_) => 2,
        Step::PullImage(_) => 3,
        Step::BuildUnavailable(_) => 4,
        Step::RunContainer(_) | Step::StartContainer { .. } => 5,
        Step::RemoveNetwork(_) => 6,
        Step::RemoveVolume(_) => 7,
        Step::Wait { .. } => 8,
    }
}

/// Splits a plan into groups to run one after the other (waits dropped).
pub fn groups(steps: Vec<Step>) -> Vec<Vec<Step>> {
    let mut groups: Vec<Vec<Step>> = Vec::new();
    let mut steps: Vec<Step> = steps.into_iter().filter(|s| !s.is_wait()).collect();
    steps.sort_by_key(rank);
    for step in steps {
        match groups.last_mut() {
            Some(group) if group.first().is_some_and(|s| rank(s) == rank(&step)) => group.push(step),
            _ => groups.push(vec![step]),
        }
    }
    groups
}

impl Apply<'_> {
    /// Runs one group: the steps concurrently, failing with the first error.
    pub async fn group(&self, steps: &[Step]) -> Result<()> {
        try_join_all(steps.iter().map(|s| self.step(s))).await?;
        Ok(())
    }

    fn service(&self, name: &str) -> Result<(&Desired, &ServiceSpec)> {
        let desired = self.desired.ok_or_else(|| Error::InvalidSpec("no desired state to run".into()))?;
        let service = desired
            .services
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| Error::InvalidSpec(format!("service `{name}` is not desired")))?;
        Ok((desired, service))
    }

    async fn step(&self, step: &Step) -> Result<()> {
        let docker = self.docker;
        match step {
            Step::RemoveContainer { id, .. } => {
                let options = RemoveContainerOptions { force: true, v: true, ..Default::default() };
                match docker.remove_container(id, Some(options)).await {
                    Err(e) if status_of(&e) == Some(404) => Ok(()),
                    // "removal already in progress"
                    Err(e) if status_of(&e) == Some(409) => Ok(()),
                    other => other.map_err(|e| Error::docker("remove container", e)),
                }
            }
            Step::CreateNetwork(name) => self.create_network(name).await,
            Step::CreateSharedNetwork(name) => edge::create(docker, self.installation, name).await,
            Step::RemoveSharedNetwork { id, .. } => match docker.remove_network(id).await {
                Err(e) if status_of(&e) == Some(404) => Ok(()),
                other => other.map_err(|e| Error::docker("remove duplicate network", e)),
            },
            Step::CreateVolume(name) => self.create_volume(name).await,
            Step::PullImage(image) => {
                let credentials = credentials_for(self.credentials, image);
                pull_image(docker, image, credentials, self.pull_timeout).await
            }
            Step::BuildUnavailable(service) => Err(Error::InvalidSpec(format!(
                "service `{service}` is built from source: building from a Playzone is not available yet"
            ))),
            Step::RunContainer(service) => self.run_container(service).await,
            Step::StartContainer { id, .. } => start(docker, id).await,
            Step::RemoveNetwork(name) => match docker.remove_network(name).await {
                Err(e) if status_of(&e) == Some(404) => Ok(()),
                other => other.map_err(|e| Error::docker("remove network", e)),
            },
            Step::RemoveVolume(name) => match docker.remove_volume(name, None::<RemoveVolumeOptions>).await {
                Err(e) if status_of(&e) == Some(404) => Ok(()),
                other => other.map_err(|e| Error::docker("remove volume", e)),
            },
            Step::Wait { .. } => Ok(()),
        }
    }

    fn object_labels(&self, kind: &str, key: &str) -> HashMap<String, String> {
        let mut labels = HashMap::from([
            (LABEL_PLAYGROUND.to_owned(), self.playground_id.to_string()),
            (LABEL_INSTALLATION.to_owned(), self.installation.to_owned()),
        ]);
        if let Some(desired) = self.desired {
            labels.insert(LABEL_PROJECT.to_owned(), desired.project.clone());
        }
        labels.insert(kind.to_owned(), key.to_owned());
        labels
    }

    async fn create_network(&self, name: &str) -> Result<()> {
        let spec = self.desired.and_then(|d| d.networks.iter().find(|n| n.name == name));
        let request = NetworkCreateRequest {
            name: name.to_owned(),
            driver: spec.and_then(|n| n.driver.clone()),
            internal: spec.map(|n| n.internal),
            options: spec.map(|n| n.options.clone().into_iter().collect()),
            labels: Some(self.object_labels(LABEL_NETWORK, spec.map_or(name, |n| n.key.as_str()))),
            ..Default::default()
        };
        match self.docker.create_network(request).await {
            Err(e) if status_of(&e) == Some(409) => Ok(()),
            other => other.map(|_| ()).map_err(|e| Error::docker("create network", e)),
        }
    }

    async fn create_volume(&self, name: &str) -> Result<()> {
        let spec = self.desired.and_then(|d| d.volumes.iter().find(|v| v.name == name));
        let request = VolumeCreateOptions {
            name: Some(name.to_owned()),
            driver: spec.and_then(|v| v.driver.clone()),
            driver_opts: spec.map(|v| v.driver_opts.clone().into_iter().collect()),
            labels: Some(self.object_labels(LABEL_VOLUME, spec.map_or(name, |v| v.key.as_str()))),
            ..Default::default()
        };
        self.docker.create_volume(request).await.map(|_| ()).map_err(|e| Error::docker("create volume", e))
    }

    async fn run_container(&self, name: &str) -> Result<()> {
        let (desired, service) = self.service(name)?;
        let body = create_body(desired, service);
        let options = CreateContainerOptions { name: Some(service.container_name.clone()), ..Default::default() };
        let id = match self.docker.create_container(Some(options), body).await {
            Ok(created) => created.id,
            // The name exists: a container created by an earlier,
            // interrupted pass. Adopt it only if it is ours; the next
            // observation judges it like any other.
            Err(e) if status_of(&e) == Some(409) => {
                let existing = self
                    .docker
                    .inspect_container(&service.container_name, None::<InspectContainerOptions>)
                    .await
                    .map_err(|e| Error::docker("inspect container", e))?;
                let labels = existing.config.and_then(|c| c.labels).unwrap_or_default();
                let ours = labels.get(LABEL_PLAYGROUND).is_some_and(|v| *v == self.playground_id.to_string())
                    && labels.get(LABEL_INSTALLATION).is_some_and(|v| v == self.installation);
                if !ours {
                    return Err(Error::InvalidSpec(format!(
                        "the container name {} is taken by a container play does not manage",
                        service.container_name
                    )));
                }
                return Ok(());
            }
            Err(e) => return Err(Error::docker("create container", e)),
        };
        // The engine attaches one network at creation; the others now.
        for (network, aliases) in service.container.networks.iter().skip(1) {
            let request = NetworkConnectRequest {
                container: Some(id.clone()),
                endpoint_config: Some(EndpointSettings { aliases: Some(aliases.clone()), ..Default::default() }),
            };
            self.docker.connect_network(network, request).await.map_err(|e| Error::docker("connect network", e))?;
        }
        start(self.docker, &id).await
    }
}

async fn start(docker: &Docker, id: &str) -> Result<()> {
    match docker.start_container(id, None::<StartContainerOptions>).await {
        // 304: already started.
        Err(e) if status_of(&e) == Some(304) => Ok(()),
        other => other.map_err(|e| Error::docker("start container", e)),
    }
}

fn restart_policy(restart: &str) -> RestartPolicy {
    let (name, retries) = match restart.split_once(':') {
        Some(("on-failure", n)) => (RestartPolicyNameEnum::ON_FAILURE, n.parse().ok()),
        _ => (
            match restart {
                "always" => RestartPolicyNameEnum::ALWAYS,
                "unless-stopped" => RestartPolicyNameEnum::UNLESS_STOPPED,
                "on-failure" => RestartPolicyNameEnum::ON_FAILURE,
                _ => RestartPolicyNameEnum::NO,
            },
            None,
        ),
    };
    RestartPolicy { name: Some(name), maximum_retry_count: retries }
}

/// The engine's create request for `service`.
pub fn create_body(desired: &Desired, service: &ServiceSpec) -> ContainerCreateBody {
    let spec = &service.container;
    let mut port_bindings: HashMap<String, Option<Vec<PortBinding>>> = HashMap::new();
    for port in &spec.ports {
        port_bindings
            .entry(port.container_port.clone())
            .or_insert_with(|| Some(Vec::new()))
            .get_or_insert_with(Vec::new)
            .push(PortBinding { host_ip: port.host_ip.clone(), host_port: port.host_port.clone() });
    }
    let exposed: HashMap<String, HashMap<(), ()>> =
        spec.ports.iter().map(|p| (p.container_port.clone(), HashMap::new())).collect();
    let mounts = spec
        .mounts
        .iter()
        .map(|m| Mount {
            target: Some(m.target.clone()),
            source: m.source.clone(),
            typ: Some(match m.kind {
                "bind" => MountTypeEnum::BIND,
                "tmpfs" => MountTypeEnum::TMPFS,
                _ => MountTypeEnum::VOLUME,
            }),
            read_only: Some(m.read_only),
            ..Default::default()
        })
        .collect();
    let first_network = spec.networks.iter().next();
    let host_config = HostConfig {
        port_bindings: Some(port_bindings),
        mounts: Some(mounts),
        restart_policy: spec.restart.as_deref().map(restart_policy),
        memory: spec.memory,
        nano_cpus: spec.nano_cpus,
        pids_limit: spec.pids_limit,
        network_mode: spec.network_mode.clone().or_else(|| first_network.map(|(n, _)| n.clone())),
        cap_add: Some(spec.cap_add.clone()).filter(|c| !c.is_empty()),
        cap_drop: Some(spec.cap_drop.clone()).filter(|c| !c.is_empty()),
        privileged: Some(spec.privileged),
        security_opt: Some(spec.security_opt.clone()).filter(|c| !c.is_empty()),
        ..Default::default()
    };
    let networking_config = first_network.map(|(name, aliases)| NetworkingConfig {
        endpoints_config: Some(HashMap::from([(
            name.clone(),
            EndpointSettings { aliases: Some(aliases.clone()), ..Default::default() },
        )])),
    });
    ContainerCreateBody {
        image: Some(spec.image.clone()),
        cmd: spec.command.clone(),
        entrypoint: spec.entrypoint.clone(),
        env: Some(spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
        labels: Some(service.labels(desired).into_iter().collect()),
        healthcheck: spec.healthcheck.as_ref().map(|h| HealthConfig {
            test: Some(h.test.clone()),
            interval: h.interval,
            timeout: h.timeout,
            retries: h.retries,
            start_period: h.start_period,
            start_interval: h.start_interval,
        }),
        exposed_ports: Some(exposed).filter(|e| !e.is_empty()),
        working_dir: spec.working_dir.clone(),
        user: spec.user.clone(),
        hostname: spec.hostname.clone(),
        stop_timeout: spec.stop_timeout,
        host_config: Some(host_config),
        networking_config,
        ..Default::default()
    }
}

/// The registry an image reference pulls from, as Docker reads it.
pub fn registry_of(image: &str) -> &str {
    match image.split_once('/') {
        Some((first, _)) if first.contains(['.', ':']) || first == "localhost" => first,
        _ => "docker.io",
    }
}

fn normalise_registry(url: &str) -> &str {
    let host = url.trim_start_matches("https://").trim_start_matches("http://");
    let host = host.split('/').next().unwrap_or(host);
    match host {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => "docker.io",
        other => other,
    }
}

/// The credentials whose registry is the image's.
pub fn credentials_for<'a>(all: &'a [RegistryCredentials], image: &str) -> Option<&'a RegistryCredentials> {
    let registry = registry_of(image);
    all.iter().find(|c| normalise_registry(&c.server).eq_ignore_ascii_case(registry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_keep_dependency_order_and_drop_waits() {
        let steps = vec![
            Step::RunContainer("a".into()),
            Step::Wait {
                service: "b".into(),
                on: "a".into(),
                condition: play_core::compose::model::DependencyCondition::ServiceStarted,
            },
            Step::CreateNetwork("n".into()),
            Step::RemoveContainer { id: "x".into(), service: None },
            Step::StartContainer { service: "c".into(), id: "c".into() },
        ];
        let groups = groups(steps);
        assert_eq!(groups.len(), 3);
        assert!(matches!(groups[0][0], Step::RemoveContainer { .. }));
        assert_eq!(groups[1], vec![Step::CreateNetwork("n".into())]);
        assert_eq!(groups[2].len(), 2);
    }

    #[test]
    fn credentials_match_by_registry_host() {
        let creds = vec![
            RegistryCredentials {
                username: "u".into(),
                password: "p".into(),
                server: "https://127.0.0.1:5000/".into(),
            },
            RegistryCredentials { username: "h".into(), password: "p".into(), server: "index.docker.io".into() },
        ];
        assert_eq!(credentials_for(&creds, "127.0.0.1:5000/app:1").map(|c| c.username.as_str()), Some("u"));
        assert_eq!(credentials_for(&creds, "library/redis").map(|c| c.username.as_str()), Some("h"));
        assert_eq!(credentials_for(&creds, "redis:7").map(|c| c.username.as_str()), Some("h"));
        assert!(credentials_for(&creds, "ghcr.io/x/y").is_none());
        assert_eq!(restart_policy("on-failure:3").maximum_retry_count, Some(3));
        assert_eq!(restart_policy("unless-stopped").name, Some(RestartPolicyNameEnum::UNLESS_STOPPED));
    }
}
