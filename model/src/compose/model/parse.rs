//! Builds the typed [`ComposeFile`] from an interpolated YAML tree,
//! reporting type errors and unknown keys with their paths.

use indexmap::IndexMap;
use serde_yaml::{Mapping, Value};

use super::ports::parse_port;
use super::service_parts::{
    parse_depends_on, parse_deploy, parse_healthcheck, parse_restart, parse_service_networks, parse_stop_signal,
};
use super::volumes::parse_volume;
use super::{Build, Command, ComposeFile, EnvFile, FileObject, ObjectRef, Service, TopNetwork, TopVolume};
use crate::compose::ctx::{Ctx, untag};
use crate::compose::path::Path;

/// Compose service keys play passes through to Docker without typing them.
const PASSTHROUGH_SERVICE_KEYS: &[&str] = &[
    "annotations",
    "attach",
    "blkio_config",
    "cgroup_parent",
    "cpu_count",
    "cpu_percent",
    "cpu_period",
    "cpu_quota",
    "cpu_rt_period",
    "cpu_rt_runtime",
    "cpu_shares",
    "cpus",
    "cpuset",
    "credential_spec",
    "develop",
    "device_cgroup_rules",
    "dns",
    "dns_opt",
    "dns_search",
    "domainname",
    "external_links",
    "extra_hosts",
    "gpus",
    "group_add",
    "isolation",
    "label_file",
    "links",
    "logging",
    "mac_address",
    "mem_limit",
    "mem_reservation",
    "mem_swappiness",
    "memswap_limit",
    "models",
    "oom_kill_disable",
    "oom_score_adj",
    "platform",
    "post_start",
    "pre_stop",
    "provider",
    "pull_policy",
    "read_only",
    "runtime",
    "scale",
    "shm_size",
    "stdin_open",
    "storage_opt",
    "sysctls",
    "tmpfs",
    "tty",
    "ulimits",
    "use_api_socket",
];

pub(crate) fn parse_model(ctx: &mut Ctx<'_>, root: &Mapping) -> ComposeFile {
    let mut file = ComposeFile::default();
    let top = Path::root();
    for (key, value) in ctx.entries(root, &top) {
        let at = top.key(key.clone());
        match key.as_str() {
            "name" => file.name = ctx.string(value, &at),
            "services" => {
                if let Some(services) = ctx.mapping(value, &at) {
                    for (name, service) in ctx.entries(services, &at) {
                        let service_path = at.key(name.clone());
                        let parsed = parse_service(ctx, service, &service_path);
                        file.services.insert(name, parsed);
                    }
                }
            }
            "volumes" => file.volumes = named(ctx, value, &at, parse_top_volume),
            "networks" => file.networks = named(ctx, value, &at, parse_top_network),
            "configs" => file.configs = named(ctx, value, &at, parse_file_object),
            "secrets" => file.secrets = named(ctx, value, &at, parse_file_object),
            "version" => ctx.warn(&at, "`version` is obsolete and ignored"),
            "include" => ctx.error(&at, "`include` is not supported: play stores one Compose file"),
            "svc" => ctx.warn(&at, "the `svc` template namespace is ignored here; template compile removes it"),
            k if k.starts_with("x-") => {
                file.extensions.insert(key, value.clone());
            }
            k => ctx.warn(&at, format!("unknown top-level key `{k}` is ignored")),
        }
    }
    file
}

/// A top-level map of names to definitions (null definitions allowed).
fn named<T: Default>(
    ctx: &mut Ctx<'_>,
    value: &Value,
    path: &Path,
    parse: fn(&mut Ctx<'_>, &Mapping, &Path) -> T,
) -> IndexMap<String, T> {
    let mut out = IndexMap::new();
    let Some(mapping) = ctx.mapping(value, path) else {
        return out;
    };
    for (name, definition) in ctx.entries(mapping, path) {
        let at = path.key(name.clone());
        let item = match untag(definition) {
            Value::Null => T::default(),
            _ => match ctx.mapping(definition, &at) {
                Some(m) => parse(ctx, m, &at),
                None => T::default(),
            },
        };
        out.insert(name, item);
    }
    out
}

fn string_map(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> IndexMap<String, String> {
    ctx.list_or_map(value, path).into_iter().map(|(k, v)| (k, v.unwrap_or_default())).collect()
}

fn external(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> bool {
    match untag(value) {
        // Legacy `external: {name: x}`.
        Value::Mapping(_) => true,
        _ => ctx.bool(value, path).unwrap_or(false),
    }
}

fn parse_top_volume(ctx: &mut Ctx<'_>, mapping: &Mapping, path: &Path) -> TopVolume {
    let mut volume = TopVolume::default();
    for (key, value) in ctx.entries(mapping, path) {
        let at = path.key(key.clone());
        match key.as_str() {
            "driver" => volume.driver = ctx.string(value, &at),
            "driver_opts" => volume.driver_opts = string_map(ctx, value, &at),
            "external" => volume.external = external(ctx, value, &at),
            "name" => volume.name = ctx.string(value, &at),
            "labels" => volume.labels = string_map(ctx, value, &at),
            k if k.starts_with("x-") => {}
            k => ctx.warn(&at, format!("unknown volume key `{k}` is ignored")),
        }
    }
    volume
}

fn parse_top_network(ctx: &mut Ctx<'_>, mapping: &Mapping, path: &Path) -> TopNetwork {
    let mut network = TopNetwork::default();
    for (key, value) in ctx.entries(mapping, path) {
        let at = path.key(key.clone());
        match key.as_str() {
            "driver" => network.driver = ctx.string(value, &at),
            "driver_opts" => network.driver_opts = string_map(ctx, value, &at),
            "external" => network.external = external(ctx, value, &at),
            "internal" => network.internal = ctx.bool(value, &at).unwrap_or(false),
            "name" => network.name = ctx.string(value, &at),
            "attachable" | "enable_ipv4" | "enable_ipv6" | "ipam" | "labels" => {
                network.other.insert(key, value.clone());
            }
            k if k.starts_with("x-") => {}
            k => ctx.warn(&at, format!("unknown network key `{k}` is ignored")),
        }
    }
    network
}

fn parse_file_object(ctx: &mut Ctx<'_>, mapping: &Mapping, path: &Path) -> FileObject {
    let mut object = FileObject::default();
    for (key, value) in ctx.entries(mapping, path) {
        let at = path.key(key.clone());
        match key.as_str() {
            "file" => object.file = ctx.string(value, &at),
            "environment" => object.environment = ctx.string(value, &at),
            "content" => object.content = ctx.string(value, &at),
            "external" => object.external = external(ctx, value, &at),
            "name" => object.name = ctx.string(value, &at),
            "labels" | "driver" | "driver_opts" | "template_driver" => {}
            k if k.starts_with("x-") => {}
            k => ctx.warn(&at, format!("unknown key `{k}` is ignored")),
        }
    }
    object
}

fn parse_service(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Service {
    let mut service = Service::default();
    let Some(mapping) = ctx.mapping(value, path) else {
        return service;
    };
    for (key, value) in ctx.entries(mapping, path) {
        let at = path.key(key.clone());
        let s = &mut service;
        match key.as_str() {
            "image" => s.image = ctx.string(value, &at),
            "build" => s.build = parse_build(ctx, value, &at),
            "command" => s.command = parse_command(ctx, value, &at),
            "entrypoint" => s.entrypoint = parse_command(ctx, value, &at),
            "environment" => s.environment = ctx.list_or_map(value, &at),
            "env_file" => s.env_file = parse_env_files(ctx, value, &at),
            "ports" => s.ports = each(ctx, value, &at, parse_port),
            "expose" => s.expose = ctx.string_list(value, &at),
            "volumes" => s.volumes = each(ctx, value, &at, parse_volume),
            "networks" => s.networks = parse_service_networks(ctx, value, &at),
            "depends_on" => s.depends_on = parse_depends_on(ctx, value, &at),
            "healthcheck" => s.healthcheck = parse_healthcheck(ctx, value, &at),
            "restart" => s.restart = parse_restart(ctx, value, &at),
            "labels" => s.labels = string_map(ctx, value, &at),
            "deploy" => s.deploy = parse_deploy(ctx, value, &at),
            "working_dir" => s.working_dir = ctx.string(value, &at),
            "user" => s.user = ctx.string(value, &at),
            "stop_grace_period" => s.stop_grace_period = ctx.duration(value, &at),
            "stop_signal" => s.stop_signal = parse_stop_signal(ctx, value, &at),
            "init" => s.init = ctx.bool(value, &at),
            "profiles" => s.profiles = ctx.string_list(value, &at),
            "hostname" => s.hostname = ctx.string(value, &at),
            "container_name" => s.container_name = ctx.string(value, &at),
            "cap_add" => s.cap_add = ctx.string_list(value, &at),
            "cap_drop" => s.cap_drop = ctx.string_list(value, &at),
            "privileged" => s.privileged = ctx.bool(value, &at).unwrap_or(false),
            "network_mode" => s.network_mode = ctx.string(value, &at),
            "pid" => s.pid = ctx.string(value, &at),
            "ipc" => s.ipc = ctx.string(value, &at),
            "uts" => s.uts = ctx.string(value, &at),
            "userns_mode" => s.userns_mode = ctx.string(value, &at),
            "cgroup" => s.cgroup = ctx.string(value, &at),
            "devices" => s.devices = parse_devices(ctx, value, &at),
            "security_opt" => s.security_opt = ctx.string_list(value, &at),
            "volumes_from" => s.volumes_from = ctx.string_list(value, &at),
            "secrets" => s.secrets = object_refs(ctx, value, &at),
            "configs" => s.configs = object_refs(ctx, value, &at),
            "extends" => s.extends = Some(value.clone()),
            k if k.starts_with("x-") => {
                s.extensions.insert(key, value.clone());
            }
            k if PASSTHROUGH_SERVICE_KEYS.contains(&k) => {
                s.other.insert(key, value.clone());
            }
            k => ctx.warn(&at, format!("unknown service key `{k}` is ignored")),
        }
    }
    service
}

fn each<T>(
    ctx: &mut Ctx<'_>,
    value: &Value,
    path: &Path,
    parse: fn(&mut Ctx<'_>, &Value, &Path) -> Option<T>,
) -> Vec<T> {
    match untag(value) {
        Value::Sequence(items) => {
            items.iter().enumerate().filter_map(|(i, item)| parse(ctx, item, &path.index(i))).collect()
        }
        Value::Null => Vec::new(),
        _ => {
            ctx.error(path, "must be a list");
            Vec::new()
        }
    }
}

fn parse_build(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Option<Build> {
    let mut build = Build { context: ".".to_owned(), ..Build::default() };
    let Value::Mapping(mapping) = untag(value) else {
        build.context = ctx.string(value, path)?;
        return Some(build);
    };
    for (key, value) in ctx.entries(mapping, path) {
        let at = path.key(key.clone());
        match key.as_str() {
            "context" => build.context = ctx.string(value, &at).unwrap_or_else(|| ".".to_owned()),
            "dockerfile" => build.dockerfile = ctx.string(value, &at),
            "target" => build.target = ctx.string(value, &at),
            "args" => build.args = ctx.list_or_map(value, &at),
            "dockerfile_inline"
            | "additional_contexts"
            | "cache_from"
            | "cache_to"
            | "extra_hosts"
            | "isolation"
            | "labels"
            | "network"
            | "no_cache"
            | "platforms"
            | "privileged"
            | "pull"
            | "secrets"
            | "shm_size"
            | "ssh"
            | "tags"
            | "ulimits"
            | "entitlements"
            | "provenance"
            | "sbom" => {}
            k if k.starts_with("x-") => {}
            k => ctx.warn(&at, format!("unknown build key `{k}` is ignored")),
        }
    }
    Some(build)
}

fn parse_command(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Option<Command> {
    match untag(value) {
        Value::Sequence(_) => Some(Command::Exec(ctx.string_list(value, path))),
        Value::Null => None,
        other => ctx.string(other, path).map(Command::Shell),
    }
}

fn parse_env_files(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Vec<EnvFile> {
    let one = |ctx: &mut Ctx<'_>, item: &Value, at: &Path| -> Option<EnvFile> {
        match untag(item) {
            Value::Mapping(m) => {
                let mut file = EnvFile { path: String::new(), required: true };
                for (key, v) in ctx.entries(m, at) {
                    let k_at = at.key(key.clone());
                    match key.as_str() {
                        "path" => file.path = ctx.string(v, &k_at).unwrap_or_default(),
                        "required" => file.required = ctx.bool(v, &k_at).unwrap_or(true),
                        "format" => {
                            ctx.string(v, &k_at);
                        }
                        k => ctx.warn(&k_at, format!("unknown env_file key `{k}` is ignored")),
                    }
                }
                if file.path.is_empty() {
                    ctx.error(at, "an env_file entry needs `path`");
                    return None;
                }
                Some(file)
            }
            other => ctx.string(other, at).map(|path| EnvFile { path, required: true }),
        }
    };
    match untag(value) {
        Value::Sequence(items) => {
            items.iter().enumerate().filter_map(|(i, item)| one(ctx, item, &path.index(i))).collect()
        }
        other => one(ctx, other, path).into_iter().collect(),
    }
}

fn parse_devices(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Vec<String> {
    match untag(value) {
        Value::Sequence(items) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match untag(item) {
                Value::Mapping(m) => m.get("source").and_then(|s| ctx.string(s, &path.index(i).key("source"))),
                other => ctx.string(other, &path.index(i)),
            })
            .collect(),
        other => ctx.string_list(other, path),
    }
}

/// Service-level `secrets:` / `configs:`: names or `{source, target, ...}`.
/// `uid`, `gid` and `mode` are read and not kept: a file-backed secret or
/// config is a read-only bind of the file, and Docker Compose does not
/// apply them to binds either.
fn object_refs(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Vec<ObjectRef> {
    let Value::Sequence(items) = untag(value) else {
        if !matches!(untag(value), Value::Null) {
            ctx.error(path, "must be a list");
        }
        return Vec::new();
    };
    items.iter().enumerate().filter_map(|(i, item)| object_ref(ctx, item, &path.index(i))).collect()
}

fn object_ref(ctx: &mut Ctx<'_>, item: &Value, at: &Path) -> Option<ObjectRef> {
    let Value::Mapping(m) = untag(item) else {
        return ctx.string(item, at).map(|source| ObjectRef { source, target: None });
    };
    let mut object = ObjectRef::default();
    for (key, v) in ctx.entries(m, at) {
        let k_at = at.key(key.clone());
        match key.as_str() {
            "source" => object.source = ctx.string(v, &k_at).unwrap_or_default(),
            "target" => object.target = ctx.string(v, &k_at),
            "uid" | "gid" | "mode" => {}
            k if k.starts_with("x-") => {}
            k => ctx.warn(&k_at, format!("unknown key `{k}` is ignored")),
        }
    }
    if object.source.is_empty() {
        ctx.error(at, "needs `source`");
        return None;
    }
    Some(object)
}
