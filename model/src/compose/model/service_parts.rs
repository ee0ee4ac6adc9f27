//! Parsers of the structured service keys: `networks`, `depends_on`,
//! `healthcheck`, `restart`, `stop_signal` and `deploy`.

use indexmap::IndexMap;
use serde_yaml::Value;

use super::{Dependency, DependencyCondition, Deploy, Healthcheck, Resources, ServiceNetwork};
use crate::compose::ctx::{Ctx, untag};
use crate::compose::path::Path;

pub(super) fn parse_service_networks(
    ctx: &mut Ctx<'_>,
    value: &Value,
    path: &Path,
) -> IndexMap<String, ServiceNetwork> {
    let mut out = IndexMap::new();
    match untag(value) {
        Value::Sequence(_) => {
            for name in ctx.string_list(value, path) {
                out.insert(name, ServiceNetwork::default());
            }
        }
        Value::Mapping(mapping) => {
            for (name, config) in ctx.entries(mapping, path) {
                let at = path.key(name.clone());
                let mut network = ServiceNetwork::default();
                if let Some(config) = ctx.mapping(config, &at) {
                    for (key, v) in ctx.entries(config, &at) {
                        let k_at = at.key(key.clone());
                        match key.as_str() {
                            "aliases" => network.aliases = ctx.string_list(v, &k_at),
                            "ipv4_address" => network.ipv4_address = ctx.string(v, &k_at),
                            "ipv6_address" | "link_local_ips" | "mac_address" | "driver_opts" | "priority"
                            | "gw_priority" | "interface_name" => {}
                            k => ctx.warn(&k_at, format!("unknown network key `{k}` is ignored")),
                        }
                    }
                }
                out.insert(name, network);
            }
        }
        Value::Null => {}
        _ => ctx.error(path, "must be a list of network names or a mapping"),
    }
    out
}

pub(super) fn parse_depends_on(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> IndexMap<String, Dependency> {
    let started = Dependency { condition: DependencyCondition::ServiceStarted, restart: false, required: true };
    let mut out = IndexMap::new();
    match untag(value) {
        Value::Sequence(_) => {
            for name in ctx.string_list(value, path) {
                out.insert(name, started.clone());
            }
        }
        Value::Mapping(mapping) => {
            for (name, config) in ctx.entries(mapping, path) {
                let at = path.key(name.clone());
                let mut dependency = started.clone();
                if let Some(config) = ctx.mapping(config, &at) {
                    for (key, v) in ctx.entries(config, &at) {
                        let k_at = at.key(key.clone());
                        match key.as_str() {
                            "condition" => match ctx.string(v, &k_at).as_deref() {
                                Some("service_started") => dependency.condition = DependencyCondition::ServiceStarted,
                                Some("service_healthy") => dependency.condition = DependencyCondition::ServiceHealthy,
                                Some("service_completed_successfully") => {
                                    dependency.condition = DependencyCondition::ServiceCompletedSuccessfully;
                                }
                                Some(other) => ctx.error(&k_at, format!(
                                    "condition `{other}` must be service_started, service_healthy or service_completed_successfully"
                                )),
                                None => {}
                            },
                            "restart" => dependency.restart = ctx.bool(v, &k_at).unwrap_or(false),
                            "required" => dependency.required = ctx.bool(v, &k_at).unwrap_or(true),
                            k => ctx.warn(&k_at, format!("unknown depends_on key `{k}` is ignored")),
                        }
                    }
                }
                out.insert(name, dependency);
            }
        }
        Value::Null => {}
        _ => ctx.error(path, "must be a list of service names or a mapping"),
    }
    out
}

pub(super) fn parse_healthcheck(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Option<Healthcheck> {
    let mapping = ctx.mapping(value, path)?;
    let mut check = Healthcheck::default();
    for (key, v) in ctx.entries(mapping, path) {
        let at = path.key(key.clone());
        match key.as_str() {
            "test" => {
                check.test = match untag(v) {
                    Value::Sequence(_) => {
                        let test = ctx.string_list(v, &at);
                        match test.first().map(String::as_str) {
                            Some("NONE" | "CMD" | "CMD-SHELL") => {}
                            _ => ctx.error(&at, "a healthcheck test list must start with NONE, CMD or CMD-SHELL"),
                        }
                        Some(test)
                    }
                    other => ctx.string(other, &at).map(|cmd| vec!["CMD-SHELL".to_owned(), cmd]),
                }
            }
            "interval" => check.interval = ctx.duration(v, &at),
            "timeout" => check.timeout = ctx.duration(v, &at),
            "start_period" => check.start_period = ctx.duration(v, &at),
            "start_interval" => check.start_interval = ctx.duration(v, &at),
            "retries" => check.retries = ctx.uint(v, &at),
            "disable" => check.disable = ctx.bool(v, &at).unwrap_or(false),
            k if k.starts_with("x-") => {}
            k => ctx.warn(&at, format!("unknown healthcheck key `{k}` is ignored")),
        }
    }
    Some(check)
}

pub(super) fn parse_restart(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Option<String> {
    let policy = ctx.string(value, path)?;
    let valid = match policy.as_str() {
        "no" | "always" | "unless-stopped" | "on-failure" => true,
        other => {
            other.strip_prefix("on-failure:").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        }
    };
    if !valid && !ctx.is_deferred(&policy) {
        ctx.error(path, format!("restart `{policy}` must be no, always, unless-stopped, on-failure or on-failure:N"));
    }
    Some(policy)
}

/// The signal names a container's `stop_signal` may be (with or without
/// `SIG`), as the engine's `signal.ParseSignal` takes them on Linux; a
/// number from 1 to 64 is taken too.
const SIGNALS: &[&str] = &[
    "ABRT", "ALRM", "BUS", "CHLD", "CONT", "FPE", "HUP", "ILL", "INT", "IO", "IOT", "KILL", "PIPE", "PROF", "PWR",
    "QUIT", "SEGV", "STKFLT", "STOP", "SYS", "TERM", "TRAP", "TSTP", "TTIN", "TTOU", "URG", "USR1", "USR2", "VTALRM",
    "WINCH", "XCPU", "XFSZ",
];

/// `stop_signal`: a name of [`SIGNALS`] (`SIGINT`, `INT`) or a number from
/// 1 to 64, as the engine reads it; anything else is refused here rather
/// than at container create.
pub(super) fn parse_stop_signal(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Option<String> {
    let signal = match untag(value) {
        Value::Number(n) => n.to_string(),
        _ => ctx.string(value, path)?,
    };
    let name = signal.strip_prefix("SIG").unwrap_or(&signal);
    let valid = SIGNALS.contains(&name) || name.parse::<u8>().is_ok_and(|n| (1..=64).contains(&n));
    if !valid && !ctx.is_deferred(&signal) {
        ctx.error(path, format!("stop_signal `{signal}` must be a signal name such as SIGTERM or SIGINT, or 1 to 64"));
    }
    Some(signal)
}

pub(super) fn parse_resources(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Resources {
    let mut resources = Resources::default();
    let Some(mapping) = ctx.mapping(value, path) else {
        return resources;
    };
    for (key, v) in ctx.entries(mapping, path) {
        let at = path.key(key.clone());
        match key.as_str() {
            "cpus" => {
                resources.cpus = ctx.float(v, &at);
                if resources.cpus.is_some_and(|c| c < 0.0) {
                    ctx.error(&at, "must not be negative");
                }
            }
            "memory" => {
                if let Some(text) = ctx.string(v, &at).filter(|t| !ctx.is_deferred(t)) {
                    match super::parse_bytes(&text) {
                        Ok(bytes) => resources.memory = Some(bytes),
                        Err(message) => ctx.error(&at, message),
                    }
                }
            }
            "pids" => resources.pids = ctx.uint(v, &at),
            "devices" => {
                if let Value::Sequence(items) = untag(v) {
                    resources.devices = items.clone();
                }
            }
            "generic_resources" => {}
            k => ctx.warn(&at, format!("unknown resources key `{k}` is ignored")),
        }
    }
    resources
}

pub(super) fn parse_deploy(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Option<Deploy> {
    let mapping = ctx.mapping(value, path)?;
    let mut deploy = Deploy::default();
    for (key, v) in ctx.entries(mapping, path) {
        let at = path.key(key.clone());
        match key.as_str() {
            "resources" => {
                if let Some(resources) = ctx.mapping(v, &at) {
                    for (kind, r) in ctx.entries(resources, &at) {
                        let r_at = at.key(kind.clone());
                        match kind.as_str() {
                            "limits" => deploy.limits = parse_resources(ctx, r, &r_at),
                            "reservations" => deploy.reservations = parse_resources(ctx, r, &r_at),
                            k => ctx.warn(&r_at, format!("unknown resources key `{k}` is ignored")),
                        }
                    }
                }
            }
            "replicas" => deploy.replicas = ctx.uint(v, &at),
            "mode" | "labels" | "placement" | "update_config" | "rollback_config" | "restart_policy"
            | "endpoint_mode" => {
                deploy.other.insert(key, v.clone());
            }
            k if k.starts_with("x-") => {}
            k => ctx.warn(&at, format!("unknown deploy key `{k}` is ignored")),
        }
    }
    Some(deploy)
}
