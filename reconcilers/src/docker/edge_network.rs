//! The edge network on a Playroom's engine: one per Playroom, joined by
//! its routed containers and its edge container, so the edge can reach
//! them (see `play_model::desired::edge_network_name`). Both the Playground
//! reconciler (which attaches containers) and the edge reconciler (which
//! attaches the edge) find or create it here, so neither loop imports the
//! other.
//!
//! It is found by its exact name, whoever created it (an operator may create
//! it for the edge router first), and carries the installation label and
//! [`LABEL_EDGE`] but never a Playground's, so no Playground's destroy
//! removes it. Creation looks again under a process-wide lock: engines
//! before API 1.44 create a second network of the same name when two
//! creations race (and bollard cannot send `CheckDuplicate`); duplicates
//! made by another replica are removed by the Playground's plan.
//!
//! Owns finding and creating the shared network; removing a duplicate is a
//! plan step like any other removal ([`super::remove`]), and no
//! Playground's pass removes the network otherwise.

use std::collections::HashMap;

use bollard::Docker;
use bollard::models::NetworkCreateRequest;
use bollard::query_parameters::{InspectNetworkOptions, ListNetworksOptions};

use play_model::desired::{LABEL_EDGE, LABEL_INSTALLATION};

use super::status_of;
use crate::{Error, Result};

/// One network of a shared name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedNetwork {
    pub name: String,
    pub id: String,
    /// Creation time in Unix nanoseconds (0 when unknown).
    pub created: i64,
    /// Containers attached (counted only when the name is ambiguous).
    pub endpoints: usize,
}

/// The networks whose name is exactly `name` (the engine's filter matches
/// parts of names); their attached containers are counted only when there
/// are several, to choose which to keep.
pub async fn networks_named(docker: &Docker, name: &str) -> Result<Vec<SharedNetwork>> {
    let filters = HashMap::from([("name".to_owned(), vec![name.to_owned()])]);
    let mut found: Vec<SharedNetwork> = docker
        .list_networks(Some(ListNetworksOptions { filters: Some(filters) }))
        .await
        .map_err(|e| Error::docker("list networks", e))?
        .into_iter()
        .filter(|n| n.name.as_deref() == Some(name))
        .map(|n| SharedNetwork {
            name: name.to_owned(),
            id: n.id.unwrap_or_default(),
            created: n
                .created
                .as_deref()
                .and_then(|c| chrono::DateTime::parse_from_rfc3339(c).ok())
                .and_then(|c| c.timestamp_nanos_opt())
                .unwrap_or(0),
            endpoints: 0,
        })
        .collect();
    if found.len() > 1 {
        for network in &mut found {
            match docker.inspect_network(&network.id, None::<InspectNetworkOptions>).await {
                Ok(n) => network.endpoints = n.containers.map_or(0, |c| c.len()),
                Err(e) if status_of(&e) == Some(404) => {}
                Err(e) => return Err(Error::docker("inspect network", e)),
            }
        }
    }
    Ok(found)
}

/// Serialises the check-then-create of shared networks in this process.
static CREATION: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Creates the shared network `name` unless a network of that name exists.
pub async fn create(docker: &Docker, installation: &str, name: &str) -> Result<()> {
    let _one_at_a_time = CREATION.lock().await;
    if !networks_named(docker, name).await?.is_empty() {
        return Ok(());
    }
    let request = NetworkCreateRequest {
        name: name.to_owned(),
        labels: Some(HashMap::from([
            (LABEL_INSTALLATION.to_owned(), installation.to_owned()),
            (LABEL_EDGE.to_owned(), "true".to_owned()),
        ])),
        ..Default::default()
    };
    match docker.create_network(request).await {
        Err(e) if status_of(&e) == Some(409) => Ok(()),
        other => other.map(|_| ()).map_err(|e| Error::docker("create network", e)),
    }
}
