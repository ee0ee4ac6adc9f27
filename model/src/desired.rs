//! The desired host objects of a Playground: its networks, named volumes and
//! one container per service, each container with its config hash, and the
//! routing of its exposed services.
//!
//! Everything here is pure: the Playground's desired state, its Playspec's
//! typed Compose model and service definitions, and its Playroom's domains
//! in ([`Inputs`]), [`Desired`] out. It lives in core because both the
//! reconciler (to converge) and the API (to show `/compose`, `/env_metadata`
//! and `/debug`) need the very same answer.
//!
//! The config hash is a SHA-256 of the normalised [`ContainerSpec`] (fields
//! in declaration order, maps sorted), so it changes exactly when something
//! the container is created from changes, routing labels and the edge
//! network included. It deliberately leaves out the labels that change
//! without the container changing (`dev.play.generation`).

use crate::build::BuildSpec;
use std::collections::{BTreeMap, BTreeSet};

use crate::compose::model::{DependencyCondition, Service};
use crate::compose::svc::production::is_production;
use crate::playground::model::{Playground, container_name};
use sha2::{Digest, Sha256};

mod container;
mod env;
mod exposure;
mod files;
mod inputs;
mod render;
mod rollout;
mod source;
mod template;
mod words;
pub use container::{ContainerSpec, HealthSpec, MountSpec, PortSpec};
pub use env::{EnvEntry, EnvMetadata, EnvSource, env_metadata};
pub use exposure::{EdgeInputs, Routing, edge_network_name, legacy_edge_network_name};
pub use files::{Access as MountedFileAccess, FILES_VOLUME_KEY, FileMountSpec, rel_path_of as mounted_file_path};
pub use inputs::{Inputs, model_for};
pub use render::render_compose;
pub use rollout::{ZeroDowntime, beside_name};
pub use source::{
    CONTENT, SOURCE_KEY_PREFIX, SOURCE_MOUNT_LABEL, SourceBind, SourceLayout, SourceMount, entry_key, is_source_key,
    source_key,
};
pub use template::interpolated_template;
pub use words::split_words;

pub const LABEL_PLAYGROUND: &str = "dev.play.playground";
/// The installation (database) the Playground belongs to; ids are only
/// unique within one.
pub const LABEL_INSTALLATION: &str = "dev.play.installation";
pub const LABEL_GENERATION: &str = "dev.play.generation";
/// The restart epoch an object was made in (see [`Desired::epoch`]).
pub const LABEL_EPOCH: &str = "dev.play.epoch";
pub const LABEL_PROJECT: &str = "com.docker.compose.project";
pub const LABEL_SERVICE: &str = "com.docker.compose.service";
pub const LABEL_CONFIG_HASH: &str = "com.docker.compose.config-hash";
pub const LABEL_NETWORK: &str = "com.docker.compose.network";
pub const LABEL_VOLUME: &str = "com.docker.compose.volume";
/// Marks the shared edge network (value `true`); it carries the
/// installation label but never a Playground's.
pub const LABEL_EDGE: &str = "dev.play.edge";

/// Everything a Playground should have on its host.
#[derive(Clone, Debug, PartialEq)]
pub struct Desired {
    pub playground_id: i64,
    pub installation: String,
    pub project: String,
    pub generation: i64,
    /// The Playground's restart epoch: containers and (unless
    /// `persist_volumes`) named volumes of an older epoch are torn down
    /// before anything of this one is made. Part of each config hash.
    pub epoch: i64,
    /// Pull every image again, even one present (the first pass of a hard
    /// restart epoch); otherwise only missing images are pulled.
    pub force_pull: bool,
    /// The Playspec keeps named volumes across hard restarts and destroy.
    pub persist_volumes: bool,
    /// Networks play creates (external ones are not listed).
    pub networks: Vec<NetworkSpec>,
    /// Named volumes play creates (external ones are not listed).
    pub volumes: Vec<VolumeSpec>,
    /// External networks a service uses: play uses them, never creates them.
    pub external_networks: Vec<ExternalRef>,
    /// External volumes a service mounts.
    pub external_volumes: Vec<ExternalRef>,
    /// The shared edge network of the installation on the Playroom, when a
    /// service is routed: created if missing, never removed by a
    /// Playground (see [`edge_network_name`]).
    pub edge_network: Option<String>,
    /// In dependency order: every service after the ones it depends on.
    pub services: Vec<ServiceSpec>,
    /// Zero-downtime rollouts that failed: service -> the config hash not
    /// to try again (the Playground's `failed_rollouts`).
    pub failed_rollouts: BTreeMap<String, String>,
}

/// A Compose key and the host object's real name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalRef {
    pub key: String,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkSpec {
    /// `<project>_<key>`.
    pub name: String,
    pub key: String,
    pub driver: Option<String>,
    pub internal: bool,
    pub options: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeSpec {
    /// `<project>_<key>`.
    pub name: String,
    pub key: String,
    pub driver: Option<String>,
    pub driver_opts: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ServiceSpec {
    pub name: String,
    /// `<project>-<service>-1`, as Docker Compose names it.
    pub container_name: String,
    /// The service is built from source (a Playzone).
    pub build: bool,
    /// The build context, for services with `build`.
    pub build_context: Option<String>,
    /// What its image is built from, once its commit is pinned; the
    /// container's image is then the build's `play-build:<key>`.
    pub built: Option<BuildSpec>,
    /// The repository files it mounts (`svc/source_mount`, relative
    /// sources of the Compose file), once a build is pinned: see
    /// [`source`].
    pub sources: Vec<SourceMount>,
    pub depends_on: Vec<(String, DependencyCondition)>,
    pub container: ContainerSpec,
    pub config_hash: String,
    /// What play does with the service's exposure; a route's labels and the
    /// edge network are already in `container`.
    pub routing: Routing,
    /// The user's `traefik.*` labels, which play drops: routing is play's,
    /// so a Playspec cannot claim another Playground's hostname.
    pub dropped_labels: Vec<String>,
    /// Set for a routed service with `svc/zerodowntime: true`: how a
    /// recreation starts the new container beside the old one.
    pub zero_downtime: Option<ZeroDowntime>,
}

impl ServiceSpec {
    pub fn has_healthcheck(&self) -> bool {
        self.container.healthcheck.as_ref().is_some_and(|h| h.test.first().is_some_and(|t| t != "NONE"))
    }

    /// Whether Docker restarts the container by itself after it exits: such
    /// a service is never "completed".
    pub fn restarts(&self) -> bool {
        self.container.restart.as_deref().is_some_and(|r| r != "no")
    }

    /// Every label of the container: the user's, Docker Compose's and
    /// play's.
    pub fn labels(&self, desired: &Desired) -> BTreeMap<String, String> {
        let mut labels = self.container.labels.clone();
        labels.insert(LABEL_PROJECT.into(), desired.project.clone());
        labels.insert(LABEL_SERVICE.into(), self.name.clone());
        labels.insert("com.docker.compose.container-number".into(), "1".into());
        labels.insert("com.docker.compose.oneoff".into(), "False".into());
        labels.insert(LABEL_CONFIG_HASH.into(), self.config_hash.clone());
        labels.insert("com.docker.compose.project.working_dir".into(), "/".into());
        labels.insert("com.docker.compose.project.config_files".into(), String::new());
        labels.insert(
            "com.docker.compose.depends_on".into(),
            self.depends_on.iter().map(|(d, _)| format!("{d}:service_started:false")).collect::<Vec<_>>().join(","),
        );
        labels.insert(LABEL_PLAYGROUND.into(), desired.playground_id.to_string());
        labels.insert(LABEL_INSTALLATION.into(), desired.installation.clone());
        labels.insert(LABEL_GENERATION.into(), desired.generation.to_string());
        labels.insert(LABEL_EPOCH.into(), desired.epoch.to_string());
        labels
    }
}

/// Resolves a top-level network key to (host name, external).
type NameOf<'a> = dyn Fn(&str) -> Result<(String, bool), String> + 'a;

/// The system keys every container gets (after all user values).
pub const SYSTEM_KEYS: &[&str] = &["PLAY_PLAYGROUND_ID", "PLAY_PLAYGROUND_NAME", "PLAY_COMPOSE_PROJECT"];

/// The name of a Playground's mounted-files volume.
pub fn files_volume(project: &str) -> String {
    format!("{project}_{FILES_VOLUME_KEY}")
}

/// The values of [`SYSTEM_KEYS`] for `playground`, in that order.
pub fn system_env(playground: &Playground) -> [(String, String); 3] {
    [
        (SYSTEM_KEYS[0].to_owned(), playground.id.to_string()),
        (SYSTEM_KEYS[1].to_owned(), playground.name.clone()),
        (SYSTEM_KEYS[2].to_owned(), playground.compose_project.clone()),
    ]
}

/// The desired objects of a Playground from its Playspec's Compose.
/// An `Err` is a spec that cannot run (terminal).
pub fn desired(inputs: &Inputs<'_>) -> Result<Desired, String> {
    let Inputs { playground, file, persist_volumes, files, .. } = *inputs;
    let project = playground.compose_project.clone();
    let network_name = |key: &str| -> Result<(String, bool), String> {
        match file.networks.get(key) {
            Some(n) if n.external => Ok((n.name.clone().unwrap_or_else(|| key.to_owned()), true)),
            Some(_) => Ok((format!("{project}_{key}"), false)),
            None if key == "default" => Ok((format!("{project}_default"), false)),
            None => Err(format!("network `{key}` is not declared")),
        }
    };
    let volume_name = |key: &str| -> Result<String, String> {
        match file.volumes.get(key) {
            Some(v) if v.external => Ok(v.name.clone().unwrap_or_else(|| key.to_owned())),
            Some(_) => Ok(format!("{project}_{key}")),
            None => Err(format!("volume `{key}` is not declared")),
        }
    };

    let active: Vec<(&String, &Service)> = file.services.iter().filter(|(_, s)| s.profiles.is_empty()).collect();
    if active.is_empty() {
        return Err("no service runs without a profile".into());
    }
    let edge = edge_network_name(&playground.installation, playground.playroom_id);
    let mut services = Vec::new();
    let mut used_networks = BTreeSet::new();
    let mut used_volumes = BTreeSet::new();
    let mut routed = false;
    let project_repo = source::project_repo(file, inputs.builds, inputs.project);
    for (name, service) in &active {
        let built = inputs.builds.and_then(|b| b.get(name.as_str())).cloned();
        let mut compose_files = files::from_compose(file, files, name);
        let source_mount = source::source_for(&project, name, service, built.as_ref())?;
        // Production mode runs the image's code: no source mount, and no
        // bind of the service's own build context (`compose::svc::production`).
        let production =
            is_production(playground.service_settings.get(name.as_str()).and_then(|s| s.production), service);
        let mut sources: Vec<SourceMount> = source_mount.into_iter().filter(|_| !production).collect();
        // A service built from a Playzone reads its Compose paths from its
        // own repository; any other from the project's.
        if let Some(repo) = built.as_ref().map(source::RepoAt::from).or(project_repo) {
            for entry in std::mem::take(&mut compose_files.unresolved) {
                compose_files.replaced_volumes.extend(entry.volume);
                let own_context = built.as_ref().is_some_and(|b| b.context == entry.path);
                if production && own_context && entry.volume.is_some() {
                    continue;
                }
                let read_only = entry.read_only;
                sources.push(source::entry_for(&project, repo, &entry.path, entry.expect, &entry.target, read_only));
            }
        }
        let replaced = &compose_files.replaced_volumes;
        let mut container =
            container::container_spec(playground, name, service, replaced, &network_name, &volume_name)?;
        container.files = files::mounts_for(files, name, compose_files.mounts);
        if let Some(build) = &built {
            container.image = build.image.clone();
        }
        container.mounts.extend(sources.iter().filter_map(SourceMount::mount));
        // The env file is the lowest layer: every other one is in already.
        for (key, value) in inputs.env_file(name).map(|f| &f.values).into_iter().flatten() {
            container.env.entry(key.clone()).or_insert_with(|| value.clone());
        }
        container.source_binds = sources.iter().filter_map(SourceMount::bind).collect();
        let dropped_labels = exposure::drop_user_routing_labels(&mut container.labels);
        let routing = exposure::routing(inputs, name, service, &container)?;
        if matches!(routing, Routing::Routed(_)) {
            container.networks.insert(edge.clone(), Vec::new());
            routed = true;
        }
        used_networks.extend(container.networks.keys().cloned());
        used_volumes.extend(container.mounts.iter().filter(|m| m.kind == "volume").filter_map(|m| m.source.clone()));
        let config_hash = config_hash(&container);
        let zero_downtime = rollout::zero_downtime(service, &routing);
        services.push(ServiceSpec {
            name: (*name).clone(),
            container_name: container_name(&project, name),
            build: crate::compose::classify::is_dynamic(service),
            build_context: service.build.as_ref().map(|b| b.context.clone()),
            built,
            sources,
            depends_on: service
                .depends_on
                .iter()
                .filter(|(dep, _)| active.iter().any(|(n, _)| n == dep))
                .map(|(dep, d)| (dep.clone(), d.condition))
                .collect(),
            container,
            config_hash,
            routing,
            dropped_labels,
            zero_downtime,
        });
    }

    let mut networks = Vec::new();
    let mut external_networks = Vec::new();
    let mut keys: Vec<&str> = file.networks.keys().map(String::as_str).collect();
    if !keys.contains(&"default") {
        keys.push("default");
    }
    for key in keys {
        let (name, external) = network_name(key)?;
        if !used_networks.contains(&name) {
            continue;
        }
        if external {
            external_networks.push(ExternalRef { key: key.to_owned(), name });
            continue;
        }
        let declared = file.networks.get(key);
        networks.push(NetworkSpec {
            name,
            key: key.to_owned(),
            driver: declared.and_then(|n| n.driver.clone()),
            internal: declared.is_some_and(|n| n.internal),
            options: declared.map(|n| n.driver_opts.clone().into_iter().collect()).unwrap_or_default(),
        });
    }
    let mut volumes: Vec<VolumeSpec> = file
        .volumes
        .iter()
        .filter(|(_, v)| !v.external)
        .map(|(key, v)| VolumeSpec {
            name: format!("{project}_{key}"),
            key: key.clone(),
            driver: v.driver.clone(),
            driver_opts: v.driver_opts.clone().into_iter().collect(),
        })
        .collect();
    if services.iter().any(|s| !s.container.files.is_empty()) {
        volumes.push(VolumeSpec {
            name: files_volume(&project),
            key: FILES_VOLUME_KEY.to_owned(),
            driver: None,
            driver_opts: BTreeMap::new(),
        });
    }
    for source in services.iter().flat_map(|s| &s.sources) {
        if !volumes.iter().any(|v| v.name == source.volume) {
            volumes.push(source.volume());
        }
    }

    let mut external_volumes = Vec::new();
    for (key, _) in file.volumes.iter().filter(|(_, v)| v.external) {
        let name = volume_name(key)?;
        if used_volumes.contains(&name) {
            external_volumes.push(ExternalRef { key: key.clone(), name });
        }
    }

    Ok(Desired {
        playground_id: playground.id,
        installation: playground.installation.clone(),
        project,
        generation: playground.generation,
        epoch: playground.restart_epoch,
        force_pull: playground.pulled_epoch < playground.restart_epoch,
        persist_volumes,
        networks,
        volumes,
        external_networks,
        external_volumes,
        edge_network: routed.then_some(edge),
        services: dependency_order(services)?,
        failed_rollouts: playground.failed_rollouts.clone(),
    })
}

/// SHA-256 (hex) of the normalised container spec.
pub fn config_hash(container: &ContainerSpec) -> String {
    // Serialising plain data with string keys cannot fail; an empty input
    // would still hash deterministically.
    let bytes = serde_json::to_vec(container).unwrap_or_default();
    format!("{:x}", Sha256::digest(&bytes))
}

/// Orders services so each comes after its dependencies (document order
/// otherwise). A cycle is an error.
fn dependency_order(services: Vec<ServiceSpec>) -> Result<Vec<ServiceSpec>, String> {
    let mut placed: BTreeSet<String> = BTreeSet::new();
    let mut pending = services;
    let mut ordered = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        let before = pending.len();
        let mut rest = Vec::new();
        for service in pending {
            if service.depends_on.iter().all(|(dep, _)| placed.contains(dep)) {
                placed.insert(service.name.clone());
                ordered.push(service);
            } else {
                rest.push(service);
            }
        }
        if rest.len() == before {
            let names: Vec<_> = rest.iter().map(|s| s.name.as_str()).collect();
            return Err(format!("services {} depend on each other in a cycle", names.join(", ")));
        }
        pending = rest;
    }
    Ok(ordered)
}

#[cfg(test)]
#[path = "desired/tests.rs"]
mod tests;

#[cfg(test)]
#[path = "desired/production_tests.rs"]
mod production_tests;
