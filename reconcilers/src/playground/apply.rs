//! Apply a plan's steps to a Playground's host through bollard: group
//! them in dependency order ([`groups`]) and run each group ([`Apply`]).
//!
//! Every call is idempotent in effect: creating what exists (a network or
//! volume by name, a container by name that carries this Playground's label)
//! is not an error, removing what is gone is not an error. A name held by a
//! container *not* labelled for this Playground is an error: play never
//! adopts or removes objects it did not label.
//!
//! The shared edge network is the exception: see [`edge_network`].
//!
//! Owns how plan steps become engine calls for one Playground. Ownership
//! checks and removals are the shared `crate::docker` helpers; this module
//! must not grow its own copies of them, nor decide what to do (that is
//! [`super::plan`]'s), nor read the host for a plan (that is
//! [`super::observe`]'s).

mod create_body;
mod credentials;

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use bollard::Docker;
use bollard::models::{
    ContainerCreateBody, EndpointSettings, NetworkConnectRequest, NetworkCreateRequest, VolumeCreateOptions,
};
use bollard::query_parameters::{CreateContainerOptions, InspectContainerOptions, StartContainerOptions};
use futures::future::try_join_all;

use play_model::build::is_reserved_image;

use super::plan::Step;
use super::spec::{
    Desired, LABEL_EPOCH, LABEL_INSTALLATION, LABEL_NETWORK, LABEL_PLAYGROUND, LABEL_PROJECT, LABEL_VOLUME, ServiceSpec,
};
use crate::docker::edge_network;
pub use create_body::create_body;
pub use credentials::{build_auth, credentials_for, registry_of};

use crate::docker::{ownership, remove, status_of};
use crate::host::{RegistryCredentials, check_registry, pull_image};
use crate::{Error, Result};
use play_model::host::HostError;

/// What applying needs besides the steps.
#[derive(Debug)]
pub struct Apply<'a> {
    pub docker: &'a Docker,
    pub desired: Option<&'a Desired>,
    pub installation: &'a str,
    pub playground_id: i64,
    /// The Playground's account: a `play-build` image runs only in a
    /// container of the account it was built for.
    pub account_id: i64,
    /// The Playroom is trusted: pulls skip the registry address policy.
    pub trusted: bool,
    pub registry_policy: &'a play_model::webhook::UrlPolicy,
    pub credentials: &'a [RegistryCredentials],
    /// Mounted file contents by file id (only those the pass may write).
    pub files: &'a std::collections::BTreeMap<i64, Vec<u8>>,
    pub pull_timeout: Duration,
    /// Builds images of services built from Playzones (`None` where no
    /// build can be asked for: a destroy).
    pub builder: Option<&'a super::build::Builder<'a>>,
}

/// The order groups of steps run in; steps within a group are independent.
fn rank(step: &Step) -> u8 {
    match step {
        Step::RemoveContainer { .. } => 0,
        Step::CreateNetwork(_) | Step::CreateSharedNetwork(_) | Step::RemoveSharedNetwork { .. } => 1,
        Step::CreateVolume(_) => 2,
        Step::PullImage(_) => 3,
        Step::BuildImage(_) | Step::BuildUnavailable(_) => 4,
        // After the build: the helper that fills it is made from the image.
        Step::FillSource(_) => 5,
        Step::RunContainer(_) | Step::RunBeside { .. } | Step::StartContainer { .. } => 6,
        Step::SwitchOver { .. } => 10,
        Step::RemoveNetwork(_) => 7,
        Step::RemoveVolume(_) => 8,
        Step::Wait { .. } => 9,
    }
}

/// Splits a plan into groups to run one after the other (waits and
/// switch-overs dropped: the pass runs switch-overs itself, after the
/// groups).
pub fn groups(steps: Vec<Step>) -> Vec<Vec<Step>> {
    let mut groups: Vec<Vec<Step>> = Vec::new();
    let mut steps: Vec<Step> =
        steps.into_iter().filter(|s| !s.is_wait() && !matches!(s, Step::SwitchOver { .. })).collect();
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
            Step::RemoveContainer { id, .. } => remove::stop_and_remove(docker, id).await,
            Step::CreateNetwork(name) => self.create_network(name).await,
            Step::CreateSharedNetwork(name) => edge_network::create(docker, self.installation, name).await,
            Step::RemoveSharedNetwork { id, .. } => remove::network(docker, id, "remove duplicate network").await,
            Step::CreateVolume(name) => self.create_volume(name).await,
            Step::PullImage(image) => {
                if !self.trusted {
                    check_registry(self.registry_policy, image).await.map_err(Error::InvalidSpec)?;
                }
                let credentials = credentials_for(self.credentials, image);
                match pull_image(docker, image, credentials, self.pull_timeout).await {
                    // A hard restart pulls images that are present; one that
                    // no registry serves (built or loaded on the host) is
                    // kept rather than failing the restart.
                    Err(e) if self.desired.is_some_and(|d| d.force_pull) && present(docker, image).await => {
                        tracing::warn!(image, error = %e, "re-pull failed; keeping the image on the host");
                        Ok(())
                    }
                    other => other,
                }
            }
            Step::BuildImage(service) => {
                let (_, spec) = self.service(service)?;
                let builder = self.builder.ok_or_else(|| Error::InvalidSpec("no builder for this pass".into()))?;
                builder.build(docker, spec, &build_auth(self.credentials)).await
            }
            Step::FillSource(service) => {
                let (_, spec) = self.service(service)?;
                let builder = self.builder.ok_or_else(|| Error::InvalidSpec("no builder for this pass".into()))?;
                super::source::fill(docker, builder, spec).await
            }
            Step::BuildUnavailable(service) => Err(Error::InvalidSpec(format!(
                "service `{service}` is built from source but has no pinned commit to build"
            ))),
            Step::RunContainer(service) => {
                let (_, spec) = self.service(service)?;
                self.run_container(service, &spec.container_name).await
            }
            Step::RunBeside { service, name } => self.run_container(service, name).await,
            // Not an engine step: the pass runs it (`super::rollout`), and
            // `groups` leaves it out.
            Step::SwitchOver { .. } => Ok(()),
            Step::StartContainer { id, .. } => start(docker, id).await,
            Step::RemoveNetwork(name) => remove::network(docker, name, "remove network").await,
            Step::RemoveVolume(name) => remove::volume(docker, name).await,
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
            labels.insert(LABEL_EPOCH.to_owned(), desired.epoch.to_string());
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

    /// Creates and starts `name`'s container as `container_name` (the
    /// service's canonical name, or the other name of a zero-downtime
    /// rollout).
    async fn run_container(&self, name: &str, container_name: &str) -> Result<()> {
        let (desired, service) = self.service(name)?;
        if is_reserved_image(&service.container.image) {
            super::build::check_built_for(self.docker, &service.container.image, self.installation, self.account_id)
                .await?;
        }
        let mut body = create_body(desired, service);
        // Not a service label: a helper left by a crash is a container of no
        // service, which the next plan removes.
        let labels = self.object_labels(super::helper::LABEL_ROLE, "mounted-files-helper");
        let file_mounts = super::files::mounts(self.docker, desired, service, self.files, labels).await?;
        let source_binds = super::source::binds(self.docker, service).await?;
        if let Some(host) = body.host_config.as_mut() {
            host.mounts.get_or_insert_with(Vec::new).extend(file_mounts.into_iter().chain(source_binds));
        }
        let Some(id) = self.create_container(container_name, body).await? else {
            return Ok(());
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

    /// Creates the container `name`: its id, or `None` when the name is
    /// already this Playground's container (created by an earlier,
    /// interrupted pass: adopted, and the next observation judges it like
    /// any other).
    ///
    /// A name the engine holds with no container behind it yet (a create
    /// still in flight, such as a sibling step's that was dropped when
    /// another step of its group failed, or a removal not finished)
    /// answers the create with 409 and the inspect with 404. That is not
    /// an error of the Playground: the name settles within [`NAME_SETTLE`]
    /// into a container (judged as above) or a free name (created).
    async fn create_container(&self, name: &str, body: ContainerCreateBody) -> Result<Option<String>> {
        let settled_by = Instant::now() + NAME_SETTLE;
        let mut pause = Duration::from_millis(50);
        loop {
            let options = CreateContainerOptions { name: Some(name.to_owned()), ..Default::default() };
            let taken = match self.docker.create_container(Some(options), body.clone()).await {
                Ok(created) => return Ok(Some(created.id)),
                Err(e) if status_of(&e) == Some(409) => e,
                Err(e) => return Err(Error::docker("create container", e)),
            };
            match self.docker.inspect_container(name, None::<InspectContainerOptions>).await {
                Ok(existing) => {
                    let labels = existing.config.and_then(|c| c.labels).unwrap_or_default();
                    if !ownership::is_playgrounds(&labels, self.installation, self.playground_id) {
                        return Err(Error::InvalidSpec(format!(
                            "the container name {name} is taken by a container play does not manage"
                        )));
                    }
                    return Ok(None);
                }
                Err(e) if status_of(&e) == Some(404) && Instant::now() < settled_by => {
                    tracing::debug!(name, conflict = %taken, "container name held with no container yet; waiting");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                Err(e) if status_of(&e) == Some(404) => {
                    return Err(Error::Host(HostError::Timeout(format!(
                        "the engine held the container name {name} with no container behind it (a create or \
                         removal in flight) for over {NAME_SETTLE:?}"
                    ))));
                }
                Err(e) => return Err(Error::docker("inspect container", e)),
            }
        }
    }
}

/// How long a create waits for a container name that the engine holds
/// with no container behind it ([`Apply::create_container`]): above the
/// engine's own longest hold seen, a create looking up a volume plugin
/// that does not answer (about 15 s).
const NAME_SETTLE: Duration = Duration::from_secs(30);

async fn present(docker: &Docker, image: &str) -> bool {
    docker.inspect_image(image).await.is_ok()
}

async fn start(docker: &Docker, id: &str) -> Result<()> {
    match docker.start_container(id, None::<StartContainerOptions>).await {
        // 304: already started.
        Err(e) if status_of(&e) == Some(304) => Ok(()),
        other => other.map_err(|e| Error::docker("start container", e)),
    }
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
                condition: play_model::compose::model::DependencyCondition::ServiceStarted,
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
}
