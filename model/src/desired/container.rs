//! One service's [`ContainerSpec`] from its Compose definition: what the
//! engine creates the container from, before play's routing is added
//! (`exposure.rs`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{FileMountSpec, NameOf, system_env, words};
use crate::compose::model::{Command, Healthcheck, Service, ServiceVolume, VolumeType};
use crate::compose::svc::production::{PRODUCTION_ENV, is_production};
use crate::playground::model::Playground;

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
    /// The user's labels (without `traefik.*`) and play's routing labels.
    pub labels: BTreeMap<String, String>,
    pub nano_cpus: Option<i64>,
    pub memory: Option<i64>,
    pub pids_limit: Option<i64>,
    /// Network name -> aliases (the service name first; none on the shared
    /// edge network, where a service name would resolve across Playgrounds).
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
    /// Left out of the hash when unset, as the fields below, so hashes
    /// made before they existed stay valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_signal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub init: Option<bool>,
    /// Mounted files (see `files`), bind-mounted from the files volume.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileMountSpec>,
    /// Relative sources from a repository (see `source`), each bound from
    /// its source volume's `content`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub source_binds: Vec<super::SourceBind>,
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

/// `replaced_volumes`: indices of `service.volumes` that mounted files
/// provide instead (`files::from_compose`), left out of `mounts`.
pub(super) fn container_spec(
    playground: &Playground,
    name: &str,
    service: &Service,
    replaced_volumes: &[usize],
    network_name: &NameOf<'_>,
    volume_name: &dyn Fn(&str) -> Result<String, String>,
) -> Result<ContainerSpec, String> {
    let image = match (&service.image, &service.build) {
        (Some(image), _) => image.clone(),
        (None, Some(_)) => String::new(),
        (None, None) if crate::compose::classify::is_dynamic(service) => String::new(),
        (None, None) => return Err(format!("service `{name}` has neither `image` nor `build`")),
    };
    let mut env: BTreeMap<String, String> =
        service.environment.iter().filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), v.clone()))).collect();
    let setting = playground.service_settings.get(name).and_then(|s| s.production);
    if is_production(setting, service) {
        env.extend(PRODUCTION_ENV.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    }
    env.extend(playground.env_overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
    if let Some(settings) = playground.service_settings.get(name) {
        env.extend(settings.env_vars.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    env.extend(system_env(playground));

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

    let mounts = service
        .volumes
        .iter()
        .enumerate()
        .filter(|(i, _)| !replaced_volumes.contains(i))
        .map(|(_, v)| mount(v, volume_name))
        .collect::<Result<Vec<_>, _>>()?;

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
        command: start_command(service).or_else(|| service.command.as_ref().map(argv)),
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
        stop_signal: service.stop_signal.clone(),
        init: service.init,
        files: Vec::new(),
        source_binds: Vec::new(),
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
/// The label `svc/start_command` (issue #52, item 1): the command the
/// service starts with in place of its Compose `command`, split into words
/// as Compose splits a command given as a string (no shell runs it). Empty
/// or absent: the Compose `command`. Part of the container spec, so a
/// change rolls the service out.
fn start_command(service: &Service) -> Option<Vec<String>> {
    let text = service.labels.get("svc/start_command")?.trim();
    (!text.is_empty()).then(|| words::split_words(text))
}

pub(super) fn argv(command: &Command) -> Vec<String> {
    match command {
        Command::Exec(args) => args.clone(),
        Command::Shell(text) => words::split_words(text),
    }
}
