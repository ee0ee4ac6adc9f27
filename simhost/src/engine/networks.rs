//! Networks: create, inspect, list, remove, connect. The pre-defined
//! `bridge`, `host` and `none` exist from the start and cannot be removed;
//! a network with endpoints cannot be removed either (403, as the engine).

use std::collections::HashMap;

use bollard::models::{EndpointSettings, EventMessageTypeEnum, Network, NetworkContainer, NetworkCreateRequest};

use super::{SimEngine, State, find, new_id};
use crate::filters::Filters;
use crate::{Error, Result};

pub const PREDEFINED: [&str; 3] = ["bridge", "host", "none"];

#[derive(Debug, Clone)]
pub struct Net {
    pub id: String,
    pub name: String,
    pub driver: String,
    pub internal: bool,
    pub labels: HashMap<String, String>,
    pub options: HashMap<String, String>,
}

impl Net {
    pub fn predefined(name: &str) -> Net {
        let driver = if name == "none" { "null" } else { name };
        Net {
            id: new_id(),
            name: name.to_owned(),
            driver: driver.to_owned(),
            internal: false,
            labels: HashMap::new(),
            options: HashMap::new(),
        }
    }

    fn attributes(&self) -> HashMap<String, String> {
        HashMap::from([("name".to_owned(), self.name.clone()), ("type".to_owned(), self.driver.clone())])
    }
}

fn no_such_network(reference: &str) -> Error {
    Error::NotFound(format!("network {reference} not found"))
}

impl State {
    pub(super) fn network_id(&self, reference: &str) -> Result<String> {
        find(&self.networks, reference, |n| n.name.as_str(), || no_such_network(reference)).map(str::to_owned)
    }

    /// The network as the engine shows it, with the containers attached.
    fn network_view(&self, net: &Net) -> Network {
        let containers = self
            .containers
            .values()
            .filter(|c| c.networks.contains_key(&net.name))
            .map(|c| (c.id.clone(), NetworkContainer { name: Some(c.name.clone()), ..Default::default() }))
            .collect();
        Network {
            name: Some(net.name.clone()),
            id: Some(net.id.clone()),
            scope: Some("local".to_owned()),
            driver: Some(net.driver.clone()),
            internal: Some(net.internal),
            attachable: Some(false),
            ingress: Some(false),
            config_only: Some(false),
            containers: Some(containers),
            options: Some(net.options.clone()),
            labels: Some(net.labels.clone()),
            ..Default::default()
        }
    }
}

impl SimEngine {
    /// `POST /networks/create`: the new network's id; 409 for a name in use.
    pub fn create_network(&self, request: NetworkCreateRequest) -> Result<String> {
        let mut state = self.lock();
        if state.networks.values().any(|n| n.name == request.name) {
            return Err(Error::Conflict(format!("network with name {} already exists", request.name)));
        }
        let net = Net {
            id: new_id(),
            name: request.name,
            driver: request.driver.unwrap_or_else(|| "bridge".to_owned()),
            internal: request.internal.unwrap_or(false),
            labels: request.labels.unwrap_or_default(),
            options: request.options.unwrap_or_default(),
        };
        let id = net.id.clone();
        self.emit(EventMessageTypeEnum::NETWORK, "create", &id, net.attributes());
        state.networks.insert(id.clone(), net);
        Ok(id)
    }

    /// `GET /networks/{id}`.
    pub fn inspect_network(&self, reference: &str) -> Result<Network> {
        let state = self.lock();
        let id = state.network_id(reference)?;
        state.networks.get(&id).map(|n| state.network_view(n)).ok_or_else(|| no_such_network(reference))
    }

    /// `GET /networks?filters=`: by `label`, `name`, `id`.
    pub fn list_networks(&self, filters: &Filters) -> Vec<Network> {
        let state = self.lock();
        state
            .networks
            .values()
            .filter(|n| filters.labels_match(&n.labels) && filters.name_matches(&n.name) && filters.id_matches(&n.id))
            .map(|n| state.network_view(n))
            .collect()
    }

    /// `DELETE /networks/{id}`.
    pub fn remove_network(&self, reference: &str) -> Result<()> {
        let mut state = self.lock();
        let id = state.network_id(reference)?;
        let Some(net) = state.networks.get(&id) else { return Err(no_such_network(reference)) };
        if PREDEFINED.contains(&net.name.as_str()) {
            return Err(Error::Forbidden(format!("{} is a pre-defined network and cannot be removed", net.name)));
        }
        if state.containers.values().any(|c| c.networks.contains_key(&net.name)) {
            return Err(Error::Forbidden(format!(
                "error while removing network: network {} id {} has active endpoints",
                net.name, net.id
            )));
        }
        if let Some(net) = state.networks.remove(&id) {
            self.emit(EventMessageTypeEnum::NETWORK, "destroy", &id, net.attributes());
        }
        Ok(())
    }

    /// `POST /networks/{id}/connect`: 403 when the container is on it already.
    pub fn connect_network(&self, reference: &str, container: &str, endpoint: EndpointSettings) -> Result<()> {
        let mut state = self.lock();
        let net_id = state.network_id(reference)?;
        let container_id = state.container_id(container)?;
        let Some(net) = state.networks.get(&net_id).cloned() else { return Err(no_such_network(reference)) };
        let Some(container) = state.containers.get_mut(&container_id) else {
            return Err(Error::NotFound(format!("No such container: {container}")));
        };
        if container.networks.contains_key(&net.name) {
            return Err(Error::Forbidden(format!(
                "endpoint with name {} already exists in network {}",
                container.name, net.name
            )));
        }
        container.networks.insert(net.name.clone(), EndpointSettings { network_id: Some(net_id.clone()), ..endpoint });
        let mut attributes = net.attributes();
        attributes.insert("container".to_owned(), container_id);
        self.emit(EventMessageTypeEnum::NETWORK, "connect", &net_id, attributes);
        Ok(())
    }
}
