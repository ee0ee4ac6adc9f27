//! `generated_compose_yaml`: the [`Desired`] objects written back as one
//! Compose document, so a user sees exactly what play runs, in a form
//! `docker compose -p <project> -f - config` accepts.
//!
//! What it holds: `name:` (the compose project); per service the image (or
//! `build:` for services built from source), `container_name`,
//! command/entrypoint as argv, the complete environment, every label play
//! puts on the container except Compose's own `com.docker.compose.*` (Compose
//! writes those itself; the config hash is in `/debug`), networks with their
//! aliases, ports, mounts, healthcheck, `depends_on` with conditions,
//! restart policy, limits and the other fields play applies; top-level
//! networks and volumes under their real host names (`name:`), external
//! ones and the shared edge network as `external: true`.
//!
//! Only what play applies is written: Compose keys play does not act on are
//! not in [`Desired`], so they are not here either. Values are final: every
//! `$` is written `$$` so that Compose's interpolation gives them back
//! unchanged.

use std::collections::BTreeMap;

use serde_yaml::{Mapping, Value};

use super::{Desired, HealthSpec, MountSpec, PortSpec, ServiceSpec};
use crate::compose::model::DependencyCondition;

/// The key the shared edge network gets in the document.
const EDGE_KEY: &str = "play-edge";

fn s(text: &str) -> Value {
    Value::String(text.to_owned())
}

fn strings<'a>(items: impl IntoIterator<Item = &'a String>) -> Value {
    Value::Sequence(items.into_iter().map(|i| s(i)).collect())
}

fn map_of<'a>(items: impl IntoIterator<Item = (&'a String, &'a String)>) -> Value {
    Value::Mapping(items.into_iter().map(|(k, v)| (s(k), s(v))).collect())
}

fn insert(map: &mut Mapping, key: &str, value: Value) {
    map.insert(s(key), value);
}

/// A duration in nanoseconds in the largest exact Compose unit.
fn duration(nanos: i64) -> Value {
    let text = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
        .iter()
        .find(|(unit, _)| nanos % unit == 0)
        .map_or_else(|| format!("{nanos}ns"), |(unit, suffix)| format!("{}{suffix}", nanos / unit));
    Value::String(text)
}

/// Host object name -> Compose key, for networks and for volumes.
struct Keys {
    networks: BTreeMap<String, String>,
    volumes: BTreeMap<String, String>,
    edge_key: String,
}

impl Keys {
    fn of(desired: &Desired) -> Keys {
        let mut networks: BTreeMap<String, String> =
            desired.networks.iter().map(|n| (n.name.clone(), n.key.clone())).collect();
        networks.extend(desired.external_networks.iter().map(|n| (n.name.clone(), n.key.clone())));
        let mut edge_key = EDGE_KEY.to_owned();
        let mut n = 1;
        while networks.values().any(|k| *k == edge_key) {
            edge_key = format!("{EDGE_KEY}-{n}");
            n += 1;
        }
        if let Some(edge) = &desired.edge_network {
            networks.insert(edge.clone(), edge_key.clone());
        }
        let mut volumes: BTreeMap<String, String> =
            desired.volumes.iter().map(|v| (v.name.clone(), v.key.clone())).collect();
        volumes.extend(desired.external_volumes.iter().map(|v| (v.name.clone(), v.key.clone())));
        Keys { networks, volumes, edge_key }
    }
}

/// The Compose document of `desired`.
pub fn render_compose(desired: &Desired) -> String {
    let keys = Keys::of(desired);
    let mut root = Mapping::new();
    insert(&mut root, "name", s(&desired.project));
    let services: Mapping = desired.services.iter().map(|svc| (s(&svc.name), service(desired, svc, &keys))).collect();
    insert(&mut root, "services", Value::Mapping(services));

    let mut networks = Mapping::new();
    for n in &desired.networks {
        let mut m = Mapping::new();
        insert(&mut m, "name", s(&n.name));
        if let Some(driver) = &n.driver {
            insert(&mut m, "driver", s(driver));
        }
        if n.internal {
            insert(&mut m, "internal", Value::Bool(true));
        }
        if !n.options.is_empty() {
            insert(&mut m, "driver_opts", map_of(&n.options));
        }
        networks.insert(s(&n.key), Value::Mapping(m));
    }
    let external = |name: &str| {
        let mut m = Mapping::new();
        insert(&mut m, "name", s(name));
        insert(&mut m, "external", Value::Bool(true));
        Value::Mapping(m)
    };
    for n in &desired.external_networks {
        networks.insert(s(&n.key), external(&n.name));
    }
    if let Some(edge) = &desired.edge_network {
        networks.insert(s(&keys.edge_key), external(edge));
    }
    if !networks.is_empty() {
        insert(&mut root, "networks", Value::Mapping(networks));
    }

    let mut volumes = Mapping::new();
    for v in &desired.volumes {
        let mut m = Mapping::new();
        insert(&mut m, "name", s(&v.name));
        if let Some(driver) = &v.driver {
            insert(&mut m, "driver", s(driver));
        }
        if !v.driver_opts.is_empty() {
            insert(&mut m, "driver_opts", map_of(&v.driver_opts));
        }
        volumes.insert(s(&v.key), Value::Mapping(m));
    }
    for v in &desired.external_volumes {
        volumes.insert(s(&v.key), external(&v.name));
    }
    if !volumes.is_empty() {
        insert(&mut root, "volumes", Value::Mapping(volumes));
    }

    let mut doc = Value::Mapping(root);
    escape_dollars(&mut doc);
    // Plain data with string keys always serialises.
    serde_yaml::to_string(&doc).unwrap_or_default()
}

fn service(desired: &Desired, svc: &ServiceSpec, keys: &Keys) -> Value {
    let c = &svc.container;
    let mut m = Mapping::new();
    if svc.build {
        let mut build = Mapping::new();
        insert(&mut build, "context", s(svc.build_context.as_deref().unwrap_or(".")));
        insert(&mut m, "build", Value::Mapping(build));
    }
    if !c.image.is_empty() {
        insert(&mut m, "image", s(&c.image));
    }
    insert(&mut m, "container_name", s(&svc.container_name));
    if let Some(entrypoint) = &c.entrypoint {
        insert(&mut m, "entrypoint", strings(entrypoint));
    }
    if let Some(command) = &c.command {
        insert(&mut m, "command", strings(command));
    }
    if !c.env.is_empty() {
        insert(&mut m, "environment", map_of(&c.env));
    }
    let labels: BTreeMap<String, String> =
        svc.labels(desired).into_iter().filter(|(k, _)| !k.starts_with("com.docker.compose.")).collect();
    insert(&mut m, "labels", map_of(&labels));
    if let Some(mode) = &c.network_mode {
        insert(&mut m, "network_mode", s(mode));
    } else if !c.networks.is_empty() {
        let networks: Mapping = c
            .networks
            .iter()
            .map(|(name, aliases)| {
                let mut attach = Mapping::new();
                if !aliases.is_empty() {
                    insert(&mut attach, "aliases", strings(aliases));
                }
                (s(keys.networks.get(name).unwrap_or(name)), Value::Mapping(attach))
            })
            .collect();
        insert(&mut m, "networks", Value::Mapping(networks));
    }
    if !c.ports.is_empty() {
        insert(&mut m, "ports", Value::Sequence(c.ports.iter().map(port).collect()));
    }
    if !c.mounts.is_empty() {
        insert(&mut m, "volumes", Value::Sequence(c.mounts.iter().map(|v| mount(v, keys)).collect()));
    }
    if let Some(health) = &c.healthcheck {
        insert(&mut m, "healthcheck", healthcheck(health));
    }
    if !svc.depends_on.is_empty() {
        let deps: Mapping = svc
            .depends_on
            .iter()
            .map(|(dep, condition)| {
                let mut d = Mapping::new();
                insert(&mut d, "condition", s(condition_name(*condition)));
                (s(dep), Value::Mapping(d))
            })
            .collect();
        insert(&mut m, "depends_on", Value::Mapping(deps));
    }
    if let Some(restart) = &c.restart {
        insert(&mut m, "restart", s(restart));
    }
    let mut limits = Mapping::new();
    if let Some(nano_cpus) = c.nano_cpus {
        #[expect(clippy::cast_precision_loss, reason = "CPU counts are small; nanoCPUs are exact in an f64")]
        insert(&mut limits, "cpus", Value::Number((nano_cpus as f64 / 1e9).into()));
    }
    if let Some(memory) = c.memory {
        insert(&mut limits, "memory", Value::String(memory.to_string()));
    }
    if let Some(pids) = c.pids_limit {
        insert(&mut limits, "pids", Value::Number(pids.into()));
    }
    if !limits.is_empty() {
        let mut resources = Mapping::new();
        insert(&mut resources, "limits", Value::Mapping(limits));
        let mut deploy = Mapping::new();
        insert(&mut deploy, "resources", Value::Mapping(resources));
        insert(&mut m, "deploy", Value::Mapping(deploy));
    }
    for (key, value) in [("working_dir", &c.working_dir), ("user", &c.user), ("hostname", &c.hostname)] {
        if let Some(value) = value {
            insert(&mut m, key, s(value));
        }
    }
    for (key, list) in [("cap_add", &c.cap_add), ("cap_drop", &c.cap_drop), ("security_opt", &c.security_opt)] {
        if !list.is_empty() {
            insert(&mut m, key, strings(list));
        }
    }
    if c.privileged {
        insert(&mut m, "privileged", Value::Bool(true));
    }
    if let Some(seconds) = c.stop_timeout {
        insert(&mut m, "stop_grace_period", Value::String(format!("{seconds}s")));
    }
    if let Some(signal) = &c.stop_signal {
        insert(&mut m, "stop_signal", s(signal));
    }
    if let Some(init) = c.init {
        insert(&mut m, "init", Value::Bool(init));
    }
    Value::Mapping(m)
}

fn condition_name(condition: DependencyCondition) -> &'static str {
    match condition {
        DependencyCondition::ServiceStarted => "service_started",
        DependencyCondition::ServiceHealthy => "service_healthy",
        DependencyCondition::ServiceCompletedSuccessfully => "service_completed_successfully",
    }
}

/// The short syntax (`[host_ip:][published:]target/protocol`), which every
/// Compose version reads.
fn port(p: &PortSpec) -> Value {
    let mut text = String::new();
    if let Some(ip) = &p.host_ip {
        if ip.contains(':') {
            text.push_str(&format!("[{ip}]:"));
        } else {
            text.push_str(&format!("{ip}:"));
        }
    }
    match &p.host_port {
        Some(published) => text.push_str(&format!("{published}:")),
        None if p.host_ip.is_some() => text.push(':'),
        None => {}
    }
    text.push_str(&p.container_port);
    Value::String(text)
}

fn mount(v: &MountSpec, keys: &Keys) -> Value {
    let mut m = Mapping::new();
    insert(&mut m, "type", s(v.kind));
    if let Some(source) = &v.source {
        let source = if v.kind == "volume" { keys.volumes.get(source).unwrap_or(source) } else { source };
        insert(&mut m, "source", s(source));
    }
    insert(&mut m, "target", s(&v.target));
    if v.read_only {
        insert(&mut m, "read_only", Value::Bool(true));
    }
    Value::Mapping(m)
}

fn healthcheck(h: &HealthSpec) -> Value {
    let mut m = Mapping::new();
    insert(&mut m, "test", strings(&h.test));
    for (key, value) in [
        ("interval", h.interval),
        ("timeout", h.timeout),
        ("start_period", h.start_period),
        ("start_interval", h.start_interval),
    ] {
        if let Some(nanos) = value {
            insert(&mut m, key, duration(nanos));
        }
    }
    if let Some(retries) = h.retries {
        insert(&mut m, "retries", Value::Number(retries.into()));
    }
    Value::Mapping(m)
}

/// Writes every `$` of a string value as `$$` (keys are not interpolated).
fn escape_dollars(value: &mut Value) {
    match value {
        Value::String(text) if text.contains('$') => *text = text.replace('$', "$$"),
        Value::Sequence(items) => items.iter_mut().for_each(escape_dollars),
        Value::Mapping(map) => map.iter_mut().for_each(|(_, v)| escape_dollars(v)),
        Value::Tagged(tagged) => escape_dollars(&mut tagged.value),
        Value::String(_) | Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
