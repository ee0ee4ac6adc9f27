//! Bounds on what one Compose document makes play build, checked on the
//! typed model before any desired state is computed.
//!
//! The YAML loader already bounds the document (bytes, nodes, depth,
//! alias expansion), but a few values stand for far more than their text:
//! the port range `1-65535:1-65535` is eleven characters and 65,535
//! bindings. Every collection the desired state expands is therefore
//! counted here, ranges by their length without expanding them, and a
//! document past a bound is refused (422) before any work is done for it.
//! The numbers are generous for real applications; `docs/security.md`
//! lists them.

use super::ctx::Ctx;
use super::model::ComposeFile;
use super::path::Path;

/// Services in one document (so per Playground).
pub const MAX_SERVICES: usize = 100;
/// Published and exposed container ports of all services together, each
/// range counted by its length.
pub const MAX_PORTS: u64 = 1_000;
/// Environment entries of one service.
pub const MAX_ENV_ENTRIES: usize = 1_000;
/// Labels of one service.
pub const MAX_LABELS: usize = 500;
/// Mounts (`volumes`) of one service.
pub const MAX_MOUNTS: usize = 100;
/// Networks one service joins.
pub const MAX_SERVICE_NETWORKS: usize = 50;
/// Top-level networks, and top-level volumes, of one document.
pub const MAX_TOP_LEVEL_OBJECTS: usize = 100;
/// Entries of any other list a service passes to the engine (`cap_add`,
/// `security_opt`, `expose`, `devices`, `depends_on`, ...).
pub const MAX_LIST_ENTRIES: usize = 256;

/// Records an error for every bound `file` exceeds.
pub(crate) fn check(file: &ComposeFile, ctx: &mut Ctx<'_>) {
    let root = Path::root();
    over(ctx, &root.key("services"), "services", file.services.len(), MAX_SERVICES);
    over(ctx, &root.key("networks"), "networks", file.networks.len(), MAX_TOP_LEVEL_OBJECTS);
    over(ctx, &root.key("volumes"), "volumes", file.volumes.len(), MAX_TOP_LEVEL_OBJECTS);
    let mut ports: u64 = 0;
    for (name, service) in &file.services {
        let at = root.key("services").key(name.clone());
        ports = ports
            .saturating_add(service.ports.iter().map(|p| u64::from(p.target.end - p.target.start) + 1).sum::<u64>());
        over(ctx, &at.key("environment"), "environment entries", service.environment.len(), MAX_ENV_ENTRIES);
        over(ctx, &at.key("labels"), "labels", service.labels.len(), MAX_LABELS);
        over(ctx, &at.key("volumes"), "mounts", service.volumes.len(), MAX_MOUNTS);
        over(ctx, &at.key("networks"), "networks", service.networks.len(), MAX_SERVICE_NETWORKS);
        for (key, len) in [
            ("cap_add", service.cap_add.len()),
            ("cap_drop", service.cap_drop.len()),
            ("security_opt", service.security_opt.len()),
            ("expose", service.expose.len()),
            ("devices", service.devices.len()),
            ("depends_on", service.depends_on.len()),
            ("volumes_from", service.volumes_from.len()),
            ("env_file", service.env_file.len()),
            ("secrets", service.secrets.len()),
            ("configs", service.configs.len()),
        ] {
            over(ctx, &at.key(key), "entries", len, MAX_LIST_ENTRIES);
        }
    }
    if ports > MAX_PORTS {
        ctx.error(
            &root.key("services"),
            format!(
                "the services publish {ports} ports (each range counted by its length); the limit is {MAX_PORTS} \
                 per Playground: publish only the ports you use, or route HTTP services through `svc/expose`"
            ),
        );
    }
}

fn over(ctx: &mut Ctx<'_>, at: &Path, what: &str, count: usize, limit: usize) {
    if count > limit {
        ctx.error(at, format!("{count} {what}; the limit is {limit}"));
    }
}
