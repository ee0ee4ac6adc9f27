//! The Compose policy for untrusted hosts.
//!
//! User Compose is untrusted by default: a Playroom shares its Docker engine
//! (and so its kernel and filesystem) between Playgrounds, so anything that
//! reaches the host is refused. A Playroom marked trusted lifts every rule.
//! Refused (each names the service and key):
//!
//! - `privileged: true`, `use_api_socket: true`;
//! - bind mounts of any host path (mounted files are added by play itself,
//!   never by user Compose), named pipes, and with a specific message the
//!   Docker socket;
//! - `network_mode`, `pid`, `ipc`, `uts`, `userns_mode`, `cgroup` set to
//!   `host`, and `network_mode`/`pid`/`ipc` joining a `container:` outside the
//!   project, `volumes_from: container:...`;
//! - `devices`, `gpus`, device reservations;
//! - `cap_add` beyond [`CAP_ALLOW_LIST`];
//! - `security_opt` that disables confinement (`seccomp`/`apparmor`
//!   `unconfined`, `label` `disable`, `systempaths=unconfined`);
//! - top-level volumes whose `driver_opts` bind a host path (`o: bind`) or
//!   mount a host device (`device` with a non-network `type`);
//! - top-level secrets and configs read from a host `file:`;
//! - `env_file` and local `build` contexts that are absolute or climb out of
//!   the project with `..`.

use super::ctx::Ctx;
use super::model::{ComposeFile, Service, VolumeType};
use super::path::Path;

/// Capabilities an untrusted service may add: Docker's default set, which
/// a container already holds unless it dropped them, plus nothing else.
pub const CAP_ALLOW_LIST: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "NET_RAW",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Policy {
    /// Set on Playrooms whose hosts run only trusted Compose.
    pub trusted: bool,
}

impl Policy {
    pub const UNTRUSTED: Policy = Policy { trusted: false };
    pub const TRUSTED: Policy = Policy { trusted: true };
}

const DOCKER_SOCKETS: &[&str] = &["/var/run/docker.sock", "/run/docker.sock"];

fn is_docker_socket(path: &str) -> bool {
    let trimmed = path.trim_end_matches('/');
    DOCKER_SOCKETS.contains(&trimmed) || trimmed.ends_with("/docker.sock")
}

/// True for a relative path that stays inside the project directory.
fn stays_inside(path: &str) -> bool {
    if path.starts_with(['/', '~', '\\']) || path.as_bytes().get(1) == Some(&b':') {
        return false;
    }
    let mut depth = 0usize;
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => depth += 1,
        }
    }
    true
}

fn is_remote_context(context: &str) -> bool {
    ["http://", "https://", "git://", "git@", "ssh://", "github.com/"].iter().any(|p| context.starts_with(p))
}

fn host_namespace(value: Option<&str>) -> Option<&str> {
    value.filter(|v| *v == "host" || v.starts_with("container:"))
}

/// Applies `policy` to a parsed model, recording refusals as errors.
pub(crate) fn apply(policy: &Policy, file: &ComposeFile, ctx: &mut Ctx<'_>) {
    if policy.trusted {
        return;
    }
    for (name, service) in &file.services {
        check_service(service, &Path::root().key("services").key(name.clone()), ctx);
    }
    for (name, volume) in &file.volumes {
        let at = Path::root().key("volumes").key(name.clone()).key("driver_opts");
        let opts = &volume.driver_opts;
        let binds = opts.get("o").is_some_and(|o| o.split(',').any(|x| x.trim() == "bind" || x.trim() == "rbind"));
        let network_fs = opts.get("type").is_some_and(|t| matches!(t.as_str(), "nfs" | "nfs4" | "cifs" | "smb"));
        if binds {
            ctx.error(&at, "driver_opts that bind a host path (`o: bind`) are not allowed on an untrusted Playroom");
        } else if opts.contains_key("device") && !network_fs {
            ctx.error(&at, "driver_opts that mount a host path or device are not allowed on an untrusted Playroom");
        }
    }
    for (kind, objects) in [("secrets", &file.secrets), ("configs", &file.configs)] {
        for (name, object) in objects {
            if object.file.is_some() {
                let at = Path::root().key(kind).key(name.clone()).key("file");
                ctx.error(
                    &at,
                    "reading a host file is not allowed on an untrusted Playroom; use `environment` or `content`",
                );
            }
        }
    }
}

fn check_service(service: &Service, at: &Path, ctx: &mut Ctx<'_>) {
    let refuse = |ctx: &mut Ctx<'_>, key: &str, message: &str| {
        ctx.error(&at.key(key), format!("{message} is not allowed on an untrusted Playroom"));
    };
    if service.privileged {
        refuse(ctx, "privileged", "a privileged container");
    }
    if service
        .other
        .get("use_api_socket")
        .is_some_and(|v| matches!(v, serde_yaml::Value::Bool(true)) || v.as_str() == Some("true"))
    {
        refuse(ctx, "use_api_socket", "access to the Docker API socket");
    }
    for (i, volume) in service.volumes.iter().enumerate() {
        let v_at = at.key("volumes").index(i);
        match volume.kind {
            VolumeType::Bind if volume.source.as_deref().is_some_and(is_docker_socket) => {
                ctx.error(&v_at, "mounting the Docker socket is not allowed on an untrusted Playroom");
            }
            VolumeType::Bind => ctx.error(
                &v_at,
                "bind-mounting a host path is not allowed on an untrusted Playroom; use a named volume or a mounted file",
            ),
            VolumeType::Npipe => ctx.error(&v_at, "mounting a host named pipe is not allowed on an untrusted Playroom"),
            VolumeType::Volume | VolumeType::Tmpfs | VolumeType::Image | VolumeType::Cluster => {}
        }
    }
    for (key, value) in [
        ("network_mode", service.network_mode.as_deref()),
        ("pid", service.pid.as_deref()),
        ("ipc", service.ipc.as_deref()),
    ] {
        if let Some(mode) = host_namespace(value) {
            ctx.error(
                &at.key(key),
                format!(
                    "`{key}: {mode}` shares a namespace outside the project and is not allowed on an untrusted Playroom"
                ),
            );
        }
    }
    for (key, value) in [("uts", &service.uts), ("userns_mode", &service.userns_mode), ("cgroup", &service.cgroup)] {
        if value.as_deref() == Some("host") {
            ctx.error(&at.key(key), format!("`{key}: host` is not allowed on an untrusted Playroom"));
        }
    }
    for (i, from) in service.volumes_from.iter().enumerate() {
        if from.starts_with("container:") {
            ctx.error(
                &at.key("volumes_from").index(i),
                "volumes of a container outside the project are not allowed on an untrusted Playroom",
            );
        }
    }
    if !service.devices.is_empty() {
        refuse(ctx, "devices", "access to host devices");
    }
    if service.other.contains_key("gpus") {
        refuse(ctx, "gpus", "access to host GPUs");
    }
    if service.deploy.as_ref().is_some_and(|d| !d.reservations.devices.is_empty()) {
        ctx.error(
            &at.key("deploy").key("resources").key("reservations").key("devices"),
            "reserving host devices is not allowed on an untrusted Playroom",
        );
    }
    for (i, cap) in service.cap_add.iter().enumerate() {
        let normal = cap.to_ascii_uppercase();
        let normal = normal.strip_prefix("CAP_").unwrap_or(&normal);
        if !CAP_ALLOW_LIST.contains(&normal) {
            ctx.error(
                &at.key("cap_add").index(i),
                format!(
                    "capability `{cap}` is not allowed on an untrusted Playroom (allowed: {})",
                    CAP_ALLOW_LIST.join(", ")
                ),
            );
        }
    }
    for (i, opt) in service.security_opt.iter().enumerate() {
        let normal = opt.replace('=', ":");
        if matches!(
            normal.as_str(),
            "seccomp:unconfined" | "apparmor:unconfined" | "label:disable" | "systempaths:unconfined"
        ) {
            ctx.error(
                &at.key("security_opt").index(i),
                format!("`{opt}` removes confinement and is not allowed on an untrusted Playroom"),
            );
        }
    }
    for (i, env_file) in service.env_file.iter().enumerate() {
        if !stays_inside(&env_file.path) {
            ctx.error(
                &at.key("env_file").index(i),
                format!("env_file `{}` is outside the project and not allowed on an untrusted Playroom", env_file.path),
            );
        }
    }
    if let Some(build) = &service.build
        && !is_remote_context(&build.context)
        && !stays_inside(&build.context)
    {
        ctx.error(
            &at.key("build"),
            format!(
                "build context `{}` is outside the project and not allowed on an untrusted Playroom",
                build.context
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_inside_the_project() {
        for path in [".", "./app", "app/../web", "a/b/../../c", ".env", "config/.env"] {
            assert!(stays_inside(path), "{path}");
        }
        for path in ["/etc/passwd", "..", "../x", "a/../../x", "~/x", "C:\\x", "\\\\server\\share"] {
            assert!(!stays_inside(path), "{path}");
        }
    }

    #[test]
    fn docker_socket_spellings() {
        for path in
            ["/var/run/docker.sock", "/run/docker.sock", "/var/run/docker.sock/", "/home/u/.docker/run/docker.sock"]
        {
            assert!(is_docker_socket(path), "{path}");
        }
        assert!(!is_docker_socket("/var/run/other.sock"));
    }
}
