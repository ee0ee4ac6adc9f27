//! The engine's container create request for a desired service (its
//! normalised [`ContainerSpec`](crate::playground::spec::ContainerSpec)).

use std::collections::HashMap;

use bollard::models::{
    ContainerCreateBody, EndpointSettings, HealthConfig, HostConfig, Mount, MountTypeEnum, NetworkingConfig,
    PortBinding, RestartPolicy, RestartPolicyNameEnum,
};

use crate::playground::spec::{Desired, ServiceSpec};

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
        init: spec.init,
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
        stop_signal: spec.stop_signal.clone(),
        host_config: Some(host_config),
        networking_config,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_policies_read_like_compose() {
        assert_eq!(restart_policy("on-failure:3").maximum_retry_count, Some(3));
        assert_eq!(restart_policy("on-failure:3").name, Some(RestartPolicyNameEnum::ON_FAILURE));
        assert_eq!(restart_policy("unless-stopped").name, Some(RestartPolicyNameEnum::UNLESS_STOPPED));
        assert_eq!(restart_policy("no").name, Some(RestartPolicyNameEnum::NO));
    }
}
