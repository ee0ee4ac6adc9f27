//! The edge container of a Playroom: what it should be, what the engine
//! has, and making the one into the other.
//!
//! One container per Playroom and installation, `play-<installation, 6
//! characters>-edge-<playroom id>`, labelled with the installation and
//! [`LABEL_EDGE_PLAYROOM`] (never with a Playground, so no Playground's
//! destroy removes it), and so are its volumes. A deleted Playroom's pass
//! removes all of them ([`remove_everything`]); the sweep removes those of
//! Playrooms that no longer live. It runs
//! `caddy run --config <bootstrap> --resume`:
//! - the bootstrap (the whole config at creation time) is written into the
//!   created container before it starts, so the admin endpoint is on the
//!   unix socket from the first instant (Caddy's default is TCP);
//! - `--resume` with the config directory on a volume makes a restarted
//!   container (engine restart, crash, `restart: unless-stopped`) serve
//!   the last config it accepted before play looks again;
//! - certificates live in the data volume, which outlives the container.
//!
//! The admin socket's directory is bind-mounted from the host
//! (`<admin_dir>/<container name>`), where play reaches it over SSH; no
//! TCP port of the admin API exists anywhere (`docs/edge.md`).
//! The container is recreated when what it is made from changes (image,
//! ports, mounts, how play makes it): its [`LABEL_EDGE_SPEC`] is a digest
//! of those. The HTTPS port is published on TCP and UDP (HTTP/3).

use std::collections::HashMap;
use std::time::Duration;

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig, PortBinding, RestartPolicy, RestartPolicyNameEnum};
use bollard::models::{EndpointSettings, NetworkingConfig, VolumeCreateOptions};
use bollard::query_parameters::{
    CreateContainerOptions, InspectContainerOptions, InspectNetworkOptions, StartContainerOptions,
    UploadToContainerOptions,
};
use play_model::desired::{LABEL_INSTALLATION, edge_network_name};
use play_model::edge::EdgeSettings;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::docker::{labels, remove, status_of};
use crate::host::pull_image;
use crate::{Error, Result};

pub use crate::docker::labels::LABEL_EDGE_PLAYROOM;
/// Digest of what the container is made from.
pub const LABEL_EDGE_SPEC: &str = "dev.play.edge-spec";
/// Where the bootstrap config is written in the container.
const BOOTSTRAP: &str = "/etc/play-edge/bootstrap.json";
/// Where the ACME server's trusted root is written, when configured.
pub const ACME_ROOT: &str = "/etc/play-edge/acme-root.pem";
/// The directory of the admin socket inside the container.
const ADMIN_DIR: &str = "/run/play-edge";

/// The edge container a Playroom should have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeSpec {
    pub name: String,
    pub image: String,
    pub installation: String,
    pub playroom_id: i64,
    pub http_port: u16,
    pub https_port: u16,
    /// The admin socket's directory on the host.
    pub host_admin_dir: String,
    pub network: String,
    pub digest: String,
}

impl EdgeSpec {
    pub fn new(installation: &str, playroom_id: i64, settings: &EdgeSettings, image: &str, admin_dir: &str) -> Self {
        let short: String = installation.chars().take(6).collect();
        let name = format!("play-{short}-edge-{playroom_id}");
        let host_admin_dir = format!("{}/{name}", admin_dir.trim_end_matches('/'));
        let network = edge_network_name(installation, playroom_id);
        // The last element is the version of how the container is made:
        // 2 publishes the HTTPS port on UDP (HTTP/3).
        let made_of = serde_json::json!([image, settings.http_port, settings.https_port, host_admin_dir, network, 2]);
        let digest = format!("{:x}", Sha256::digest(made_of.to_string().as_bytes()));
        EdgeSpec {
            name,
            image: image.to_owned(),
            installation: installation.to_owned(),
            playroom_id,
            http_port: settings.http_port,
            https_port: settings.https_port,
            host_admin_dir,
            network,
            digest,
        }
    }

    /// The admin socket's path on the host.
    pub fn host_socket(&self) -> String {
        format!("{}/admin.sock", self.host_admin_dir)
    }

    fn volume(&self, what: &str) -> String {
        format!("{}-{what}", self.name)
    }

    fn labels(&self) -> HashMap<String, String> {
        HashMap::from([
            (LABEL_INSTALLATION.to_owned(), self.installation.clone()),
            (LABEL_EDGE_PLAYROOM.to_owned(), self.playroom_id.to_string()),
            (LABEL_EDGE_SPEC.to_owned(), self.digest.clone()),
        ])
    }
}

/// The edge container as the engine has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    pub id: String,
    pub running: bool,
    pub digest: Option<String>,
}

/// The container named `name`, if any.
pub async fn observe(docker: &Docker, name: &str) -> Result<Option<Observed>> {
    match docker.inspect_container(name, None::<InspectContainerOptions>).await {
        Ok(c) => Ok(Some(Observed {
            id: c.id.unwrap_or_default(),
            running: c.state.and_then(|s| s.running).unwrap_or(false),
            digest: c.config.and_then(|c| c.labels).and_then(|l| l.get(LABEL_EDGE_SPEC).cloned()),
        })),
        Err(e) if status_of(&e) == Some(404) => Ok(None),
        Err(e) => Err(Error::docker("inspect the edge container", e)),
    }
}

/// Removes the edge container (and keeps its volumes: certificates).
pub async fn remove(docker: &Docker, name: &str) -> Result<()> {
    remove::container(docker, name, "remove the edge container").await
}

/// Removes every object labelled with Playroom `playroom_id`'s edge of
/// `installation` on the engine, whatever its name or state (a container
/// a crash left `Created`, one of an older naming), then its volumes
/// (Caddy's certificates and ACME account keys: the Playroom is gone, and
/// nothing else may read them), then the shared edge network `network`
/// when nothing is attached to it any more. For a deleted Playroom, and
/// for the sweep's left-over edges; idempotent.
pub async fn remove_everything(docker: &Docker, installation: &str, playroom_id: i64, network: &str) -> Result<()> {
    let filters = labels::of_edge(installation, playroom_id);
    for c in labels::containers(docker, &filters).await? {
        if let Some(id) = c.id {
            remove::container(docker, &id, "remove the edge container").await?;
        }
    }
    for v in labels::volumes(docker, &filters).await? {
        remove::volume(docker, &v.name).await?;
    }
    remove_network_if_unused(docker, network).await
}

/// Removes the shared edge network `network` unless a container is
/// attached to it (another Playroom's edge on the same engine, a routed
/// service). The engine refuses to remove a network in use, so a container
/// that joins between the look and the removal keeps it; a Playground pass
/// that needs it again creates it (`crate::docker::edge_network::create`).
pub async fn remove_network_if_unused(docker: &Docker, network: &str) -> Result<()> {
    let inspected = match docker.inspect_network(network, None::<InspectNetworkOptions>).await {
        Ok(n) => n,
        Err(e) if status_of(&e) == Some(404) => return Ok(()),
        Err(e) => return Err(Error::docker("inspect the edge network", e)),
    };
    if inspected.containers.is_some_and(|c| !c.is_empty()) {
        return Ok(());
    }
    match docker.remove_network(network).await {
        // Gone, or in use after all ("has active endpoints").
        Err(e) if matches!(status_of(&e), Some(403 | 404 | 409)) => Ok(()),
        other => other.map_err(|e| Error::docker("remove the edge network", e)),
    }
}

/// Creates and starts the edge container with `bootstrap` as its first
/// config; `acme_root` is written to [`ACME_ROOT`] when given. Returns
/// its id.
pub async fn create(
    docker: &Docker,
    spec: &EdgeSpec,
    bootstrap: &Value,
    acme_root: Option<&[u8]>,
    pull_timeout: Duration,
) -> Result<String> {
    crate::docker::edge_network::create(docker, &spec.installation, &spec.network).await?;
    if docker.inspect_image(&spec.image).await.is_err() {
        pull_image(docker, &spec.image, None, pull_timeout).await?;
    }
    for what in ["data", "config"] {
        let request = VolumeCreateOptions {
            name: Some(spec.volume(what)),
            labels: Some(spec.labels().into_iter().filter(|(k, _)| k != LABEL_EDGE_SPEC).collect()),
            ..Default::default()
        };
        docker.create_volume(request).await.map_err(|e| Error::docker("create an edge volume", e))?;
    }
    let mut ports = HashMap::new();
    let mut exposed = HashMap::new();
    // HTTPS on UDP too: Caddy serves HTTP/3 there and advertises it
    // (`Alt-Svc: h3=":<https port>"`) on every HTTPS answer.
    let published = [(spec.http_port, "tcp"), (spec.https_port, "tcp"), (spec.https_port, "udp")];
    for (port, protocol) in published {
        let key = format!("{port}/{protocol}");
        exposed.insert(key.clone(), HashMap::new());
        ports.insert(key, Some(vec![PortBinding { host_ip: None, host_port: Some(port.to_string()) }]));
    }
    let body = ContainerCreateBody {
        image: Some(spec.image.clone()),
        cmd: Some(["caddy", "run", "--config", BOOTSTRAP, "--resume"].map(str::to_owned).to_vec()),
        env: Some(vec!["XDG_CONFIG_HOME=/config".to_owned(), "XDG_DATA_HOME=/data".to_owned()]),
        labels: Some(spec.labels()),
        exposed_ports: Some(exposed),
        host_config: Some(HostConfig {
            binds: Some(vec![
                // A bind (not a mount) so the engine makes the host
                // directory when it is missing (a reboot empties /run).
                format!("{}:{ADMIN_DIR}", spec.host_admin_dir),
                format!("{}:/data", spec.volume("data")),
                format!("{}:/config", spec.volume("config")),
            ]),
            port_bindings: Some(ports),
            restart_policy: Some(RestartPolicy {
                name: Some(RestartPolicyNameEnum::UNLESS_STOPPED),
                maximum_retry_count: None,
            }),
            cap_drop: Some(vec!["ALL".to_owned()]),
            cap_add: Some(vec!["NET_BIND_SERVICE".to_owned()]),
            security_opt: Some(vec!["no-new-privileges".to_owned()]),
            ..Default::default()
        }),
        networking_config: Some(NetworkingConfig {
            endpoints_config: Some(HashMap::from([(spec.network.clone(), EndpointSettings::default())])),
        }),
        ..Default::default()
    };
    let options = CreateContainerOptions { name: Some(spec.name.clone()), ..Default::default() };
    let id = docker
        .create_container(Some(options), body)
        .await
        .map_err(|e| Error::docker("create the edge container", e))?
        .id;
    let archive = archive(bootstrap, acme_root)?;
    let options = UploadToContainerOptions { path: "/".to_owned(), ..Default::default() };
    docker
        .upload_to_container(&id, Some(options), bollard::body_full(archive.into()))
        .await
        .map_err(|e| Error::docker("write the edge's bootstrap config", e))?;
    start(docker, &id).await?;
    Ok(id)
}

/// Starts a stopped edge container.
pub async fn start(docker: &Docker, id: &str) -> Result<()> {
    match docker.start_container(id, None::<StartContainerOptions>).await {
        Ok(()) => Ok(()),
        Err(e) if status_of(&e) == Some(304) => Ok(()),
        Err(e) => Err(Error::docker("start the edge container", e)),
    }
}

fn archive(bootstrap: &Value, acme_root: Option<&[u8]>) -> Result<Vec<u8>> {
    let packing = |e: std::io::Error| Error::Edge(format!("packing the bootstrap config: {e}"));
    let config = serde_json::to_vec(bootstrap).map_err(|e| Error::Edge(format!("bootstrap config: {e}")))?;
    let mut builder = tar::Builder::new(Vec::new());
    let mut files: Vec<(&str, &[u8])> = vec![(BOOTSTRAP, &config)];
    if let Some(root) = acme_root {
        files.push((ACME_ROOT, root));
    }
    let mut dir = tar::Header::new_gnu();
    dir.set_entry_type(tar::EntryType::Directory);
    dir.set_mode(0o755);
    dir.set_size(0);
    builder.append_data(&mut dir, "etc/play-edge/", std::io::empty()).map_err(packing)?;
    for (path, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        builder.append_data(&mut header, path.trim_start_matches('/'), bytes).map_err(packing)?;
    }
    builder.into_inner().map_err(packing)
}
