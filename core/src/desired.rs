//! The desired host objects of a Playground: its networks, named volumes and
//! one container per service, each container with its config hash.
//!
//! Everything here is pure: the Playground's desired state and its
//! Playspec's typed Compose model in ([`Inputs`]), [`Desired`] out. It lives
//! in core because both the reconciler (to converge) and the API (to show
//! `/compose` and `/debug`) need the very same answer.
//!
//! The config hash is a SHA-256 of the normalised [`ContainerSpec`] (fields
//! in declaration order, maps sorted), so it changes exactly when something
//! the container is created from changes. It deliberately leaves out the
//! labels that change without the container changing (`dev.play.generation`).

use std::collections::{BTreeMap, BTreeSet};

use crate::compose::model::{
    Command, ComposeFile, DependencyCondition, Healthcheck, Service, ServiceVolume, VolumeType,
};
use crate::store::playgrounds::Playground;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::compose::Policy;
use crate::store::playgrounds::container_name;

mod files;
mod words;
pub use files::{FILES_VOLUME_KEY, FileMountSpec};
pub use words::split_words;

use crate::store::playspec_files::MountedFile;

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
    /// In dependency order: every service after the ones it depends on.
    pub services: Vec<ServiceSpec>,
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
    /// The service is built from source (not available yet).
    pub build: bool,
    pub depends_on: Vec<(String, DependencyCondition)>,
    pub container: ContainerSpec,
    pub config_hash: String,
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

/// The normalised desired container: what it is created from, and what its
/// config hash covers.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ContainerSpec {
    pub image: String,
    pub command: Option<Vec<String>>,
    pub entrypoint: Option<Vec<String>>,
    pub env: BTreeMap<String, String>,
    pub ports: Vec<PortSpec>,
    pub mounts: Vec<MountSpec>,
    pub healthcheck: Option<HealthSpec>,
    pub restart: Option<String>,
    /// The user's labels.
    pub labels: BTreeMap<String, String>,
    pub nano_cpus: Option<i64>,
    pub memory: Option<i64>,
    pub pids_limit: Option<i64>,
    /// Network name -> aliases (the service name first).
    pub networks: BTreeMap<String, Vec<String>>,
    pub network_mode: Option<String>,
    pub working_dir: Option<String>,
    pub user: Option<String>,
    pub hostname: Option<String>,
    pub cap_add: Vec<String>,
    pub cap_drop: Vec<String>,
    pub privileged: bool,
    pub security_opt: Vec<String>,
    pub stop_timeout: Option<i64>,
    /// Mounted files (see [`files`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileMountSpec>,
    /// The restart epoch, so a hard restart changes every hash (left out
    /// at 0, so hashes made before hard restarts existed stay valid).
    #[serde(skip_serializing_if = "is_zero")]
    pub epoch: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PortSpec {
    /// `80/tcp`.
    pub container_port: String,
    pub host_ip: Option<String>,
    /// `None`: the engine picks one.
    pub host_port: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MountSpec {
    /// `volume`, `bind` or `tmpfs`.
    pub kind: &'static str,
    /// The volume's host name or the host path; `None` for anonymous volumes
    /// and tmpfs.
    pub source: Option<String>,
    pub target: String,
    pub read_only: bool,
}

/// Durations in nanoseconds, as the engine takes them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HealthSpec {
    pub test: Vec<String>,
    pub interval: Option<i64>,
    pub timeout: Option<i64>,
    pub retries: Option<i64>,
    pub start_period: Option<i64>,
    pub start_interval: Option<i64>,
}

/// Resolves a top-level network key to (host name, external).
type NameOf<'a> = dyn Fn(&str) -> Result<(String, bool), String> + 'a;

/// The system keys every container gets (after all user values).
pub const SYSTEM_KEYS: &[&str] = &["PLAY_PLAYGROUND_ID", "PLAY_PLAYGROUND_NAME", "PLAY_COMPOSE_PROJECT"];

/// The name of a Playground's mounted-files volume.
pub fn files_volume(project: &str) -> String {
    format!("{project}_{FILES_VOLUME_KEY}")
}

/// Everything the desired objects are computed from. Build it with
/// [`Inputs::new`] and the `with_*` methods, so that adding an input does
/// not touch every caller.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    pub playground: &'a Playground,
    /// The Playspec's Compose, parsed (and interpolated) for this
    /// Playground: see [`model_for`].
    pub file: &'a ComposeFile,
    /// The Playspec's `persist_volumes`.
    pub persist_volumes: bool,
    /// The Playspec's mounted files.
    pub files: &'a [MountedFile],
}

impl<'a> Inputs<'a> {
    pub fn new(playground: &'a Playground, file: &'a ComposeFile) -> Self {
        Inputs { playground, file, persist_volumes: false, files: &[] }
    }

    pub fn with_files(mut self, files: &'a [MountedFile]) -> Self {
        self.files = files;
        self
    }

    pub fn with_persist_volumes(mut self, persist: bool) -> Self {
        self.persist_volumes = persist;
        self
    }
}

/// The Playspec's Compose as this Playground runs it: validated for the
/// Playroom's `policy`, with `${V}` interpolation reading the Playground's
/// `env_overrides` (an unset variable is an empty string, as in Compose).
/// An `Err` (the first problem, `path: message`) is a spec that cannot run.
pub fn model_for(yaml: &str, policy: &Policy, playground: &Playground) -> Result<ComposeFile, String> {
    let lookup = |name: &str| playground.env_overrides.get(name).cloned();
    let (report, model) = crate::compose::parse_compose_with(yaml, policy, &lookup);
    model.ok_or_else(|| {
        let first = report.errors.first().map(|i| format!("{}: {}", i.path, i.message)).unwrap_or_default();
        format!("the Playspec's Compose cannot run on this Playroom: {first}")
    })
}

/// The desired objects of a Playground from its Playspec's Compose.
/// An `Err` is a spec that cannot run (terminal).
pub fn desired(inputs: &Inputs<'_>) -> Result<Desired, String> {
    let Inputs { playground, file, persist_volumes, files } = *inputs;
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
    let mut services = Vec::new();
    let mut used_networks = BTreeSet::new();
    for (name, service) in &active {
        let mut container = container_spec(playground, name, service, &network_name, &volume_name)?;
        container.files = files::mounts_for(files, name);
        used_networks.extend(container.networks.keys().cloned());
        let config_hash = config_hash(&container);
        services.push(ServiceSpec {
            name: (*name).clone(),
            container_name: container_name(&project, name),
            build: service.build.is_some(),
            depends_on: service
                .depends_on
                .iter()
                .filter(|(dep, _)| active.iter().any(|(n, _)| n == dep))
                .map(|(dep, d)| (dep.clone(), d.condition))
                .collect(),
            container,
            config_hash,
        });
    }

    let mut networks = Vec::new();
    let mut keys: Vec<&str> = file.networks.keys().map(String::as_str).collect();
    if !keys.contains(&"default") {
        keys.push("default");
    }
    for key in keys {
        let (name, external) = network_name(key)?;
        if external || !used_networks.contains(&name) {
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
        services: dependency_order(services)?,
    })
}

fn container_spec(
    playground: &Playground,
    name: &str,
    service: &Service,
    network_name: &NameOf<'_>,
    volume_name: &dyn Fn(&str) -> Result<String, String>,
) -> Result<ContainerSpec, String> {
    let image = match (&service.image, &service.build) {
        (Some(image), _) => image.clone(),
        (None, Some(_)) => String::new(),
        (None, None) => return Err(format!("service `{name}` has neither `image` nor `build`")),
    };
    let mut env: BTreeMap<String, String> =
        service.environment.iter().filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), v.clone()))).collect();
    env.extend(playground.env_overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
    if let Some(settings) = playground.service_settings.get(name) {
        env.extend(settings.env_vars.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    env.insert("PLAY_PLAYGROUND_ID".into(), playground.id.to_string());
    env.insert("PLAY_PLAYGROUND_NAME".into(), playground.name.clone());
    env.insert("PLAY_COMPOSE_PROJECT".into(), playground.compose_project.clone());

    let mut ports = Vec::new();
    for port in &service.ports {
        for offset in 0..=(port.target.end - port.target.start) {
            let host_port = port.published.map(|p| {
                if p.start == p.end && port.target.start == port.target.end {
                    p.start.to_string()
                } else {
                    p.start.saturating_add(offset).to_string()
                }
            });
            ports.push(PortSpec {
                container_port: format!("{}/{}", port.target.start + offset, port.protocol),
                host_ip: port.host_ip.map(|ip| ip.to_string()),
                host_port,
            });
        }
    }

    let mounts = service.volumes.iter().map(|v| mount(v, volume_name)).collect::<Result<Vec<_>, _>>()?;

    let mut networks = BTreeMap::new();
    if service.network_mode.is_none() {
        if service.networks.is_empty() {
            networks.insert(network_name("default")?.0, vec![name.to_owned()]);
        }
        for (key, attach) in &service.networks {
            let mut aliases = vec![name.to_owned()];
            aliases.extend(attach.aliases.iter().filter(|a| a.as_str() != name).cloned());
            networks.insert(network_name(key)?.0, aliases);
        }
    }
    let network_mode = service.network_mode.as_ref().map(|mode| match mode.strip_prefix("service:") {
        Some(other) => format!("container:{}-{other}-1", playground.compose_project),
        None => mode.clone(),
    });

    let limits = service.deploy.as_ref().map(|d| &d.limits);
    Ok(ContainerSpec {
        image,
        command: service.command.as_ref().map(argv),
        entrypoint: service.entrypoint.as_ref().map(argv),
        env,
        ports,
        mounts,
        healthcheck: service.healthcheck.as_ref().and_then(health),
        restart: service.restart.clone(),
        labels: service.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        #[expect(clippy::cast_possible_truncation, reason = "CPU counts are small; nanoCPUs fit an i64")]
        nano_cpus: limits.and_then(|l| l.cpus).map(|c| (c * 1e9) as i64),
        memory: limits.and_then(|l| l.memory).and_then(|m| i64::try_from(m).ok()),
        pids_limit: limits.and_then(|l| l.pids).and_then(|p| i64::try_from(p).ok()),
        networks,
        network_mode,
        working_dir: service.working_dir.clone(),
        user: service.user.clone(),
        hostname: service.hostname.clone(),
        cap_add: service.cap_add.clone(),
        cap_drop: service.cap_drop.clone(),
        privileged: service.privileged,
        security_opt: service.security_opt.clone(),
        stop_timeout: service.stop_grace_period.and_then(|d| i64::try_from(d.as_secs()).ok()),
        files: Vec::new(),
        epoch: playground.restart_epoch,
    })
}

fn mount(volume: &ServiceVolume, volume_name: &dyn Fn(&str) -> Result<String, String>) -> Result<MountSpec, String> {
    let (kind, source) = match volume.kind {
        VolumeType::Volume => ("volume", volume.source.as_deref().map(volume_name).transpose()?),
        VolumeType::Bind => ("bind", volume.source.clone()),
        VolumeType::Tmpfs => ("tmpfs", None),
        other => return Err(format!("volume type {other:?} at {} is not supported", volume.target)),
    };
    Ok(MountSpec { kind, source, target: volume.target.clone(), read_only: volume.read_only })
}

fn nanos(d: std::time::Duration) -> Option<i64> {
    i64::try_from(d.as_nanos()).ok()
}

fn health(check: &Healthcheck) -> Option<HealthSpec> {
    let test = if check.disable { vec!["NONE".to_owned()] } else { check.test.clone()? };
    Some(HealthSpec {
        test,
        interval: check.interval.and_then(nanos),
        timeout: check.timeout.and_then(nanos),
        retries: check.retries.and_then(|r| i64::try_from(r).ok()),
        start_period: check.start_period.and_then(nanos),
        start_interval: check.start_interval.and_then(nanos),
    })
}

/// A command as the argv the engine runs. The string form is split like a
/// shell splits words (quotes, backslashes), as Docker Compose does.
fn argv(command: &Command) -> Vec<String> {
    match command {
        Command::Exec(args) => args.clone(),
        Command::Shell(text) => words::split_words(text),
    }
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
