//! A typed Compose model: the parts of the compose-spec that play reads,
//! validates or acts on, as Docker Compose v2 reads them.
//!
//! The model is built from an interpolated, merge-resolved YAML tree by
//! [`parse`](self::parse). Keys the model does not type are kept in
//! `extensions` (for `x-` keys) or `other` (known Compose keys play passes
//! through) or reported as unknown-key warnings; the stored YAML is always
//! the user's original text, so nothing is dropped by modelling.

mod parse;
mod ports;
pub(super) mod scalar;
mod service_parts;
mod volumes;

use std::time::Duration;

use indexmap::IndexMap;
use serde_yaml::Value;

use crate::routing::PathRule;

pub(crate) use parse::parse_model;
pub use ports::Port;
pub use scalar::{parse_bytes, parse_duration};
pub use volumes::{ServiceVolume, VolumeType};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ComposeFile {
    pub name: Option<String>,
    /// In document order.
    pub services: IndexMap<String, Service>,
    pub volumes: IndexMap<String, TopVolume>,
    pub networks: IndexMap<String, TopNetwork>,
    pub configs: IndexMap<String, FileObject>,
    pub secrets: IndexMap<String, FileObject>,
    /// Top-level `x-` keys.
    pub extensions: IndexMap<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Service {
    pub image: Option<String>,
    pub build: Option<Build>,
    pub command: Option<Command>,
    pub entrypoint: Option<Command>,
    /// `None` values come from `KEY` without `=` (taken from the host
    /// environment by Compose).
    pub environment: IndexMap<String, Option<String>>,
    pub env_file: Vec<EnvFile>,
    pub ports: Vec<Port>,
    pub expose: Vec<String>,
    pub volumes: Vec<ServiceVolume>,
    pub networks: IndexMap<String, ServiceNetwork>,
    pub depends_on: IndexMap<String, Dependency>,
    pub healthcheck: Option<Healthcheck>,
    pub restart: Option<String>,
    /// Label values as strings (numbers and booleans in their YAML spelling).
    pub labels: IndexMap<String, String>,
    /// The `svc/path_rule` label, parsed and translated for the edge when
    /// the document was validated; `None` when it is unset or empty (or
    /// holds a template reference not yet compiled). Routes take it from
    /// here, so the label's text is never parsed again.
    pub path_rule: Option<PathRule>,
    pub deploy: Option<Deploy>,
    pub working_dir: Option<String>,
    pub user: Option<String>,
    pub stop_grace_period: Option<Duration>,
    /// The signal that asks the process to stop (`SIGTERM` when unset).
    pub stop_signal: Option<String>,
    /// `init: true`: the engine's init runs as PID 1 and forwards signals,
    /// so a process that sets no handler still stops on `SIGTERM`.
    pub init: Option<bool>,
    pub profiles: Vec<String>,
    pub hostname: Option<String>,
    pub container_name: Option<String>,
    pub cap_add: Vec<String>,
    pub cap_drop: Vec<String>,
    pub privileged: bool,
    pub network_mode: Option<String>,
    pub pid: Option<String>,
    pub ipc: Option<String>,
    pub uts: Option<String>,
    pub userns_mode: Option<String>,
    pub cgroup: Option<String>,
    pub devices: Vec<String>,
    pub security_opt: Vec<String>,
    pub volumes_from: Vec<String>,
    /// The top-level secrets and configs the service uses.
    pub secrets: Vec<ObjectRef>,
    pub configs: Vec<ObjectRef>,
    pub extends: Option<Value>,
    /// Service-level `x-` keys.
    pub extensions: IndexMap<String, Value>,
    /// Known Compose keys that play passes through without typing them.
    pub other: IndexMap<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Build {
    /// A directory (relative to the project) or a Git URL; `.` by default.
    pub context: String,
    pub dockerfile: Option<String>,
    pub target: Option<String>,
    pub args: IndexMap<String, Option<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Run through a shell by Docker (`/bin/sh -c`).
    Shell(String),
    Exec(Vec<String>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvFile {
    pub path: String,
    pub required: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceNetwork {
    pub aliases: Vec<String>,
    pub ipv4_address: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DependencyCondition {
    ServiceStarted,
    ServiceHealthy,
    ServiceCompletedSuccessfully,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    pub condition: DependencyCondition,
    /// Restart this service when the dependency is updated.
    pub restart: bool,
    /// When false, a missing or failed dependency only warns.
    pub required: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Healthcheck {
    /// `["CMD", ...]`, `["CMD-SHELL", "..."]` or `["NONE"]`; the string form
    /// becomes `CMD-SHELL`.
    pub test: Option<Vec<String>>,
    pub interval: Option<Duration>,
    pub timeout: Option<Duration>,
    pub retries: Option<u64>,
    pub start_period: Option<Duration>,
    pub start_interval: Option<Duration>,
    pub disable: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Deploy {
    pub limits: Resources,
    pub reservations: Resources,
    pub replicas: Option<u64>,
    pub other: IndexMap<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resources {
    pub cpus: Option<f64>,
    /// Bytes.
    pub memory: Option<u64>,
    pub pids: Option<u64>,
    /// `deploy.resources.reservations.devices` entries, kept raw.
    pub devices: Vec<Value>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopVolume {
    pub driver: Option<String>,
    pub driver_opts: IndexMap<String, String>,
    pub external: bool,
    pub name: Option<String>,
    pub labels: IndexMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopNetwork {
    pub driver: Option<String>,
    pub driver_opts: IndexMap<String, String>,
    pub external: bool,
    pub internal: bool,
    pub name: Option<String>,
    pub other: IndexMap<String, Value>,
}

/// A service's use of a top-level secret or config: `- name` or
/// `{source, target, mode, ...}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectRef {
    /// The top-level name.
    pub source: String,
    /// Where the service sees it, as written: an absolute path, or for a
    /// secret a name under `/run/secrets`.
    pub target: Option<String>,
}

/// A top-level secret or config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileObject {
    /// A path on the machine running Compose.
    pub file: Option<String>,
    pub environment: Option<String>,
    pub content: Option<String>,
    pub external: bool,
    pub name: Option<String>,
}

impl Service {
    /// True when the service publishes ports or is exposed through
    /// `svc/expose` (a non-empty value).
    pub fn is_exposed(&self) -> bool {
        !self.ports.is_empty() || self.labels.get("svc/expose").is_some_and(|v| !v.is_empty())
    }

    /// Whether play builds the service from a Playzone: it has a `build`
    /// section, or names its repository or branch (`svc/repo_url`,
    /// `svc/branch`, non-empty).
    pub fn is_built_from_source(&self) -> bool {
        let labelled = |key: &str| self.labels.get(key).is_some_and(|v| !v.is_empty());
        self.build.is_some() || labelled("svc/repo_url") || labelled("svc/branch")
    }
}
