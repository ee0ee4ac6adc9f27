//! Container operations: create, start, kill, stop, remove, inspect, list.
//! Each checks what the engine checks and answers its status codes (404
//! missing, 409 name in use or running, 304 already in that state).

use std::collections::HashMap;

use bollard::models::{
    ContainerConfig, ContainerCreateBody, ContainerInspectResponse, ContainerSummary, EndpointSettings,
    EventMessageTypeEnum, MountTypeEnum,
};

use super::container::{Container, RunState, VolumeMount, ZERO_TIME};
use super::{SimEngine, State, find, new_id, now_text};
use crate::filters::Filters;
use crate::{Error, Result};

fn no_such_container(reference: &str) -> Error {
    Error::NotFound(format!("No such container: {reference}"))
}

impl State {
    pub(super) fn container_id(&self, reference: &str) -> Result<String> {
        find(&self.containers, reference, |c| c.name.as_str(), || no_such_container(reference)).map(str::to_owned)
    }

    fn container_mut(&mut self, reference: &str) -> Result<&mut Container> {
        let id = self.container_id(reference)?;
        self.containers.get_mut(&id).ok_or_else(|| no_such_container(reference))
    }
}

/// The named volumes a create body mounts, with where: `Mounts` of type
/// volume and `Binds` whose source is a name, not a host path.
fn named_volumes(body: &ContainerCreateBody) -> Vec<VolumeMount> {
    let Some(host) = body.host_config.as_ref() else { return Vec::new() };
    let mounts = host.mounts.iter().flatten().filter(|m| m.typ == Some(MountTypeEnum::VOLUME));
    let from_mounts = mounts.filter_map(|m| Some((m.source.clone()?, m.target.clone().unwrap_or_default())));
    let from_binds = host.binds.iter().flatten().filter_map(|b| {
        let mut parts = b.split(':');
        let (name, target) = (parts.next()?, parts.next()?);
        (!name.starts_with('/')).then(|| (name.to_owned(), target.to_owned()))
    });
    let mut mounts: Vec<VolumeMount> = from_mounts
        .chain(from_binds)
        .filter(|(name, _)| !name.is_empty())
        .map(|(name, target)| VolumeMount { name, target })
        .collect();
    mounts.sort_by(|a, b| (&a.name, &a.target).cmp(&(&b.name, &b.target)));
    mounts.dedup();
    mounts
}

/// The networks a create body joins, with their endpoint settings.
fn requested_networks(body: &ContainerCreateBody) -> HashMap<String, EndpointSettings> {
    let mut networks: HashMap<String, EndpointSettings> =
        body.networking_config.as_ref().and_then(|n| n.endpoints_config.clone()).unwrap_or_default();
    let mode = body.host_config.as_ref().and_then(|h| h.network_mode.clone()).unwrap_or_default();
    let mode = if mode.is_empty() || mode == "default" { "bridge".to_owned() } else { mode };
    if networks.is_empty() && mode != "none" && mode != "host" && !mode.starts_with("container:") {
        networks.insert(mode, EndpointSettings::default());
    }
    networks
}

/// The exit code of a process killed by `signal` (128 + its number).
fn killed_exit_code(signal: Option<&str>) -> i64 {
    let name = signal.unwrap_or("SIGKILL").trim_start_matches("SIG");
    let number = match name {
        "HUP" | "1" => 1,
        "INT" | "2" => 2,
        "QUIT" | "3" => 3,
        "TERM" | "15" => 15,
        "USR1" | "10" => 10,
        "USR2" | "12" => 12,
        _ => 9,
    };
    128 + number
}

impl SimEngine {
    /// `POST /containers/create?name=`: the new container's id.
    pub fn create_container(&self, name: Option<&str>, body: ContainerCreateBody) -> Result<String> {
        let mut state = self.lock();
        let image = body.image.clone().unwrap_or_default();
        if !state.images.contains(&super::normalise_image(&image)) {
            return Err(Error::NotFound(format!("No such image: {image}")));
        }
        let id = new_id();
        let name = match name {
            Some(name) => name.trim_start_matches('/').to_owned(),
            None => format!("sim_{}", &id[..12]),
        };
        if let Some(other) = state.containers.values().find(|c| c.name == name) {
            return Err(Error::Conflict(format!(
                "Conflict. The container name \"/{name}\" is already in use by container \"{}\". \
                 You have to remove (or rename) that container to be able to reuse that name.",
                other.id
            )));
        }
        let mut networks = requested_networks(&body);
        for (network, endpoint) in &mut networks {
            let net_id = state.network_id(network)?;
            endpoint.network_id = Some(net_id);
        }
        let volumes = named_volumes(&body);
        for volume in &volumes {
            if !state.volumes.contains_key(&volume.name) {
                let created = self.make_volume(&volume.name, HashMap::new());
                state.volumes.insert(volume.name.clone(), created);
            }
        }
        let host_config = body.host_config.clone().unwrap_or_default();
        let config = as_config(body)?;
        let container = Container {
            id: id.clone(),
            name,
            image,
            config,
            host_config,
            networks,
            volumes,
            state: RunState::Created,
            created: chrono::Utc::now().timestamp(),
            started_at: ZERO_TIME.to_owned(),
            finished_at: ZERO_TIME.to_owned(),
            pid: 0,
        };
        self.emit(EventMessageTypeEnum::CONTAINER, "create", &id, container.event_attributes());
        state.containers.insert(id.clone(), container);
        Ok(id)
    }

    /// `POST /containers/{id}/start`; 304 when it runs already.
    pub fn start_container(&self, reference: &str) -> Result<()> {
        let mut state = self.lock();
        let pid = 1000 + i64::try_from(state.containers.len()).unwrap_or(0);
        let container = state.container_mut(reference)?;
        if container.is_running() {
            return Err(Error::NotModified);
        }
        container.state = RunState::Running;
        container.started_at = now_text();
        container.finished_at = ZERO_TIME.to_owned();
        container.pid = pid;
        let (id, attributes) = (container.id.clone(), container.event_attributes());
        let one_shot = match container.config.cmd.as_deref() {
            Some([only]) if only == "true" => Some(0),
            Some([only]) if only == "false" => Some(1),
            _ => None,
        };
        self.emit(EventMessageTypeEnum::CONTAINER, "start", &id, attributes);
        if let Some(code) = one_shot {
            self.exit(container, code, None);
        }
        Ok(())
    }

    /// `POST /containers/{id}/kill?signal=`: the process dies of it; 409
    /// when it does not run.
    pub fn kill_container(&self, reference: &str, signal: Option<&str>) -> Result<()> {
        let mut state = self.lock();
        let container = state.container_mut(reference)?;
        if !container.is_running() {
            let id = container.id.clone();
            return Err(Error::Conflict(format!("Cannot kill container: {reference}: container {id} is not running")));
        }
        self.exit(container, killed_exit_code(signal), Some(signal.unwrap_or("SIGKILL")));
        Ok(())
    }

    /// `POST /containers/{id}/stop`: as `docker stop` of a process that
    /// exits on SIGTERM; 304 when it does not run.
    pub fn stop_container(&self, reference: &str) -> Result<()> {
        let mut state = self.lock();
        let container = state.container_mut(reference)?;
        if !container.is_running() {
            return Err(Error::NotModified);
        }
        self.exit(container, killed_exit_code(Some("SIGTERM")), Some("SIGTERM"));
        let (id, attributes) = (container.id.clone(), container.event_attributes());
        self.emit(EventMessageTypeEnum::CONTAINER, "stop", &id, attributes);
        Ok(())
    }

    /// Ends a running container's process with `code` (after `signal`).
    fn exit(&self, container: &mut Container, code: i64, signal: Option<&str>) {
        let id = container.id.clone();
        if let Some(signal) = signal {
            let mut attributes = container.event_attributes();
            attributes.insert("signal".to_owned(), signal.to_owned());
            self.emit(EventMessageTypeEnum::CONTAINER, "kill", &id, attributes);
        }
        container.state = RunState::Exited(code);
        container.finished_at = now_text();
        let mut attributes = container.event_attributes();
        attributes.insert("exitCode".to_owned(), code.to_string());
        self.emit(EventMessageTypeEnum::CONTAINER, "die", &id, attributes);
    }

    /// `DELETE /containers/{id}?force=`: 409 for a running container
    /// without `force`. Named volumes stay (as with `v=true`: only
    /// anonymous ones would go, and the simulator makes none).
    pub fn remove_container(&self, reference: &str, force: bool) -> Result<()> {
        let mut state = self.lock();
        let container = state.container_mut(reference)?;
        if container.is_running() && !force {
            return Err(Error::Conflict(format!(
                "cannot remove container \"/{}\": container is running: stop the container before removing or force remove",
                container.name
            )));
        }
        if container.is_running() {
            self.exit(container, killed_exit_code(None), Some("SIGKILL"));
        }
        let id = container.id.clone();
        if let Some(removed) = state.containers.remove(&id) {
            self.emit(EventMessageTypeEnum::CONTAINER, "destroy", &id, removed.event_attributes());
        }
        Ok(())
    }

    /// `GET /containers/{id}/json`.
    pub fn inspect_container(&self, reference: &str) -> Result<ContainerInspectResponse> {
        let state = self.lock();
        let id = state.container_id(reference)?;
        state.containers.get(&id).map(Container::inspect).ok_or_else(|| no_such_container(reference))
    }

    /// `GET /containers/json?all=&filters=`: by `label`, `name`, `id`,
    /// `status`; without `all`, running containers only.
    pub fn list_containers(&self, all: bool, filters: &Filters) -> Vec<ContainerSummary> {
        let state = self.lock();
        state
            .containers
            .values()
            .filter(|c| all || c.is_running() || filters.terms("status").is_some())
            .filter(|c| filters.labels_match(&c.labels()))
            .filter(|c| filters.name_matches(&c.name) && filters.id_matches(&c.id))
            .filter(|c| filters.one_of("status", c.status_word()))
            .map(Container::summary)
            .collect()
    }

    /// A copy of every container (for tests and the bench's checks).
    pub fn containers(&self) -> Vec<Container> {
        self.lock().containers.values().cloned().collect()
    }
}

/// The create body less its host and networking parts: the container's
/// `Config` as inspect shows it (the two types share their field names).
fn as_config(body: ContainerCreateBody) -> Result<ContainerConfig> {
    let bad = |e: serde_json::Error| Error::BadRequest(format!("container config: {e}"));
    let mut value = serde_json::to_value(body).map_err(bad)?;
    if let Some(object) = value.as_object_mut() {
        object.remove("HostConfig");
        object.remove("NetworkingConfig");
    }
    serde_json::from_value(value).map_err(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_give_the_shells_exit_codes() {
        assert_eq!(killed_exit_code(None), 137);
        assert_eq!(killed_exit_code(Some("SIGTERM")), 143);
        assert_eq!(killed_exit_code(Some("TERM")), 143);
        assert_eq!(killed_exit_code(Some("SIGINT")), 130);
    }

    #[test]
    fn volumes_come_from_mounts_and_named_binds_not_host_paths() {
        let body: ContainerCreateBody = serde_json::from_value(serde_json::json!({
            "HostConfig": {"Binds": ["data:/data", "/etc:/host-etc"],
                           "Mounts": [{"Type": "volume", "Source": "files", "Target": "/f"},
                                      {"Type": "tmpfs", "Target": "/tmp"}]}
        }))
        .unwrap_or_default();
        let mounts = named_volumes(&body);
        let found: Vec<(&str, &str)> = mounts.iter().map(|m| (m.name.as_str(), m.target.as_str())).collect();
        assert_eq!(found, [("data", "/data"), ("files", "/f")]);
    }
}
