//! The Compose policy for untrusted hosts.
//!
//! User Compose is untrusted by default: a Playroom shares its Docker engine
//! (and so its kernel and filesystem) between Playgrounds, so anything that
//! reaches the host is refused. A Playroom marked trusted lifts every rule.
//! Refused (each names the service and key):
//!
//! - `privileged: true`, `use_api_socket: true`;
//! - bind mounts of an absolute host path, named pipes, and with a
//!   specific message the Docker socket (under any path); a relative bind
//!   source is a path of the Compose project, provided only by the
//!   Playspec's mounted files ([`super::project_files`]);
//! - `network_mode` other than `bridge`, `none` or `service:<a service of
//!   this file>` (an allowlist: `host`, `container:...` and the name of any
//!   network on the host are refused); `pid`, `ipc`, `uts`, `userns_mode`,
//!   `cgroup` set to `host`, and `pid`/`ipc` joining a `container:` outside
//!   the project, `volumes_from: container:...`;
//! - `devices`, `gpus`, device reservations;
//! - `cap_add` beyond [`CAP_ALLOW_LIST`];
//! - `security_opt` other than [`SECURITY_OPT_ALLOW_LIST`] (an allowlist:
//!   inline seccomp profiles, SELinux types such as `spc_t`, AppArmor
//!   profiles and `unconfined` all weaken or replace Docker's confinement);
//! - `external` networks and volumes: a Playground owns only the objects
//!   play creates for it, and an external name could be another tenant's
//!   network or volume, or the edge network;
//! - network drivers other than `bridge`, volume drivers other than
//!   `local` (`macvlan`/`ipvlan` put containers on the host's own network
//!   segment; plugins run with host privileges);
//! - network `driver_opts` beyond [`NETWORK_OPT_ALLOW_LIST`] (a bridge name
//!   or host binding address reaches the host's interfaces);
//! - volume `driver_opts` other than a tmpfs (`type: tmpfs`, `device:
//!   tmpfs`, `o` from [`TMPFS_OPTION_ALLOW_LIST`]): a bind (`o: bind`) or a
//!   `device` mounts a host path, and `nfs`/`cifs` make the host's kernel
//!   connect to any address;
//! - top-level secrets and configs read from an absolute host `file:` (a
//!   relative one is a project path, as for binds);
//! - `env_file` and local `build` contexts that are absolute or climb out of
//!   the project with `..`.

use super::ctx::Ctx;
use super::model::{ComposeFile, Service, VolumeType};
use super::path::Path;
use super::project_files::is_absolute;

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

/// The `security_opt` entries an untrusted service may set: each only adds
/// confinement.
pub const SECURITY_OPT_ALLOW_LIST: &[&str] = &["no-new-privileges", "no-new-privileges:true", "no-new-privileges=true"];

/// Bridge network options an untrusted network may set: each only
/// concerns the network itself.
pub const NETWORK_OPT_ALLOW_LIST: &[&str] = &["com.docker.network.driver.mtu", "com.docker.network.bridge.enable_icc"];

/// Mount options of an untrusted tmpfs volume (`name` or `name=value`).
pub const TMPFS_OPTION_ALLOW_LIST: &[&str] =
    &["size", "mode", "uid", "gid", "nr_inodes", "noexec", "nosuid", "nodev", "ro", "rw"];

/// What a Compose file may do on a Playroom, and what its project
/// provides there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Set on Playrooms whose hosts run only trusted Compose.
    pub trusted: bool,
    /// The project paths of the Playspec's mounted files, normalised
    /// ([`super::project_files::normalise`]): the only files a relative
    /// source may name on an untrusted Playroom. Empty where no Playspec
    /// exists yet (launch, `validate_compose` without one).
    pub project_files: Vec<String>,
    /// The Compose file belongs to a repository (its Playspec names a
    /// Playzone): a relative path no mounted file provides is the
    /// repository's, checked when the Playground's commit is pinned.
    /// (A Compose file that builds a service from a Playzone has one
    /// without this.)
    pub repository: bool,
}

impl Policy {
    pub const UNTRUSTED: Policy = Policy { trusted: false, project_files: Vec::new(), repository: false };
    pub const TRUSTED: Policy = Policy { trusted: true, project_files: Vec::new(), repository: false };

    /// The policy of a Playroom (`trusted` or not), with no project files.
    pub fn of_room(trusted: bool) -> Policy {
        Policy { trusted, ..Policy::default() }
    }

    /// With (or without) a repository behind the Compose file.
    #[must_use]
    pub fn with_repository(mut self, repository: bool) -> Policy {
        self.repository = repository;
        self
    }

    /// With the project paths the Playspec's mounted files provide (any
    /// order; files without a path are left out).
    #[must_use]
    pub fn with_project_files<'a>(mut self, paths: impl IntoIterator<Item = Option<&'a str>>) -> Policy {
        self.project_files = paths.into_iter().flatten().map(str::to_owned).collect();
        self
    }
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

/// `Ok` when a volume's `driver_opts` are empty or make a tmpfs with
/// allowed options; otherwise what is wrong.
fn tmpfs_only(opts: &indexmap::IndexMap<String, String>) -> Result<(), String> {
    if opts.is_empty() {
        return Ok(());
    }
    let options: Vec<&str> =
        opts.get("o").map(|o| o.split(',').map(str::trim).filter(|o| !o.is_empty()).collect()).unwrap_or_default();
    let kind = opts.get("type").map(String::as_str);
    if options.iter().any(|o| matches!(*o, "bind" | "rbind")) {
        return Err("driver_opts that bind a host path (`o: bind`) are not allowed".into());
    }
    if let Some(kind @ ("nfs" | "nfs4" | "cifs" | "smb" | "smb3")) = kind {
        return Err(format!("a `{kind}` volume makes the host connect to a file server and is not allowed"));
    }
    if opts.get("device").is_some_and(|d| d != "tmpfs") {
        return Err("driver_opts that mount a host path or device are not allowed".into());
    }
    if kind != Some("tmpfs") {
        return Err("driver_opts without `type: tmpfs` are not allowed".into());
    }
    if let Some(other) = opts.keys().find(|k| !matches!(k.as_str(), "type" | "device" | "o")) {
        return Err(format!("`{other}` is not a tmpfs option"));
    }
    for option in options {
        let name = option.split_once('=').map_or(option, |(n, _)| n);
        if !TMPFS_OPTION_ALLOW_LIST.contains(&name) {
            return Err(format!("mount option `{name}` is not a tmpfs option play allows"));
        }
    }
    Ok(())
}

/// Applies `policy` to a parsed model, recording refusals as errors.
pub(crate) fn apply(policy: &Policy, file: &ComposeFile, ctx: &mut Ctx<'_>) {
    super::project_files::check(file, policy, ctx);
    if policy.trusted {
        return;
    }
    for (name, service) in &file.services {
        check_service(service, &Path::root().key("services").key(name.clone()), ctx);
    }
    for (name, network) in &file.networks {
        let at = Path::root().key("networks").key(name.clone());
        if network.external {
            ctx.error(
                &at.key("external"),
                "an external network is not allowed on an untrusted Playroom: it could be another Playground's \
                 network or play's edge network; remove `external` and play creates the network for this Playground",
            );
        }
        if let Some(driver) = network.driver.as_deref().filter(|d| *d != "bridge") {
            ctx.error(
                &at.key("driver"),
                format!("network driver `{driver}` is not allowed on an untrusted Playroom (allowed: bridge)"),
            );
        }
        for key in network.driver_opts.keys().filter(|k| !NETWORK_OPT_ALLOW_LIST.contains(&k.as_str())) {
            ctx.error(
                &at.key("driver_opts").key(key.clone()),
                format!(
                    "network option `{key}` is not allowed on an untrusted Playroom (allowed: {})",
                    NETWORK_OPT_ALLOW_LIST.join(", ")
                ),
            );
        }
    }
    for (name, volume) in &file.volumes {
        let at = Path::root().key("volumes").key(name.clone());
        if volume.external {
            ctx.error(
                &at.key("external"),
                "an external volume is not allowed on an untrusted Playroom: it could be another Playground's \
                 volume; remove `external` and play creates the volume for this Playground",
            );
        }
        if let Some(driver) = volume.driver.as_deref().filter(|d| *d != "local") {
            ctx.error(
                &at.key("driver"),
                format!("volume driver `{driver}` is not allowed on an untrusted Playroom (allowed: local)"),
            );
        }
        if let Err(message) = tmpfs_only(&volume.driver_opts) {
            ctx.error(
                &at.key("driver_opts"),
                format!(
                    "{message} on an untrusted Playroom; driver_opts may only make a tmpfs \
                     (type: tmpfs, device: tmpfs, o: size=...)"
                ),
            );
        }
    }
    for (kind, objects) in [("secrets", &file.secrets), ("configs", &file.configs)] {
        for (name, object) in objects {
            if object.file.as_deref().is_some_and(is_absolute) {
                let at = Path::root().key(kind).key(name.clone()).key("file");
                ctx.error(
                    &at,
                    "reading a host file is not allowed on an untrusted Playroom; use `environment`, `content`, or a \
                     relative path provided by a mounted file of the Playspec",
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
            // A relative source is a project path: `project_files::check`.
            VolumeType::Bind if volume.source.as_deref().is_some_and(|s| !is_absolute(s)) => {}
            VolumeType::Bind => ctx.error(
                &v_at,
                "bind-mounting a host path is not allowed on an untrusted Playroom; use a named volume, or a \
                 relative path provided by a mounted file of the Playspec",
            ),
            VolumeType::Npipe => ctx.error(&v_at, "mounting a host named pipe is not allowed on an untrusted Playroom"),
            VolumeType::Volume | VolumeType::Tmpfs | VolumeType::Image | VolumeType::Cluster => {}
        }
    }
    if service.network_mode.as_deref() == Some("bridge") {
        ctx.warn(
            &at.key("network_mode"),
            "`network_mode: bridge` would put the container on the engine's default bridge, beside other tenants' \
             containers: on an untrusted Playroom it runs on the project's default network instead",
        );
    }
    if let Some(mode) = service.network_mode.as_deref()
        && !matches!(mode, "bridge" | "none")
        && !mode.starts_with("service:")
    {
        ctx.error(
            &at.key("network_mode"),
            format!(
                "`network_mode: {mode}` joins a network outside the project and is not allowed on an untrusted \
                 Playroom (allowed: bridge, none, service:<a service of this file>); use `networks`"
            ),
        );
    }
    for (key, value) in [("pid", service.pid.as_deref()), ("ipc", service.ipc.as_deref())] {
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
        if !SECURITY_OPT_ALLOW_LIST.contains(&opt.trim()) {
            let shown: String = opt.chars().take(80).collect();
            ctx.error(
                &at.key("security_opt").index(i),
                format!(
                    "`{shown}` changes the container's confinement and is not allowed on an untrusted Playroom \
                     (allowed: {})",
                    SECURITY_OPT_ALLOW_LIST.join(", ")
                ),
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
