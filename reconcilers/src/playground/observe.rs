//! Observe a Playground on its host: every container, network and volume
//! labelled for it, the images a pass needs, and the shared edge network,
//! as the [`Observed`] the pure [`super::plan`] reads.
//!
//! Owns reading the host for one Playground; it changes nothing there
//! (that is [`super::apply`]'s) and decides nothing (that is
//! [`super::plan`]'s). Reading a container's state and label filters are
//! the shared `crate::docker` helpers; this module must not grow its own
//! copies of them.

use std::collections::HashMap;

use bollard::Docker;
use bollard::query_parameters::InspectContainerOptions;
use futures::{StreamExt, TryStreamExt};

use super::plan::{Observed, ObservedContainer};
use super::spec::{Desired, LABEL_CONFIG_HASH, LABEL_EPOCH, LABEL_SERVICE, LABEL_VOLUME, is_source_key};
use crate::docker::edge_network;
use crate::docker::{inspect, labels, status_of};
use crate::{Error, Result};

/// How many containers one observation inspects at a time: as many HTTP
/// connections as the host pool keeps idle (`HostConfig`'s
/// `max_idle_http_connections`), so a pass reuses its Playroom's channels
/// instead of opening one per container and dropping all but four
/// (`docs/decisions/hosts.md`, "Host access"). Measured over SSH, 20
/// inspects 4 at a time take about as long as 20 at once (BENCHMARKS.md).
const INSPECTS_AT_ONCE: usize = 4;

/// Everything on the host labelled for `playground_id`, which of `images`
/// are present, which of the named `volumes` exist (labelled or not: the
/// engine creates a missing named volume for a mount, without labels), and
/// the networks named `edge`.
pub async fn observe(
    docker: &Docker,
    installation: &str,
    playground_id: i64,
    images: &[String],
    volumes: &[String],
    edge: Option<&str>,
) -> Result<Observed> {
    let filters = labels::of_playground(installation, playground_id);
    let listed = labels::containers(docker, &filters).await?;
    // A container removed between the list and the inspect is skipped.
    let ids: Vec<String> = listed.iter().filter_map(|c| c.id.clone()).collect();
    let inspected: Vec<_> =
        futures::stream::iter(ids.into_iter().map(|id| async move { inspect::container(docker, &id).await }))
            .buffered(INSPECTS_AT_ONCE)
            .try_collect()
            .await?;
    let containers = inspected
        .into_iter()
        .flatten()
        .map(|c| {
            let labels = c.config.as_ref().and_then(|cfg| cfg.labels.clone()).unwrap_or_default();
            let status = inspect::status(&c);
            ObservedContainer {
                id: c.id.clone().unwrap_or_default(),
                name: c.name.as_deref().unwrap_or_default().trim_start_matches('/').to_owned(),
                service: labels.get(LABEL_SERVICE).cloned(),
                config_hash: labels.get(LABEL_CONFIG_HASH).cloned(),
                epoch: epoch_of(&labels),
                state: status.state,
                health: status.health,
                finished_at: status.finished_at,
            }
        })
        .collect();
    let networks = labels::networks(docker, &filters).await?.into_iter().filter_map(|n| n.name).collect();
    let labelled = labels::volumes(docker, &filters).await?;
    let source_created: std::collections::BTreeMap<String, String> = labelled
        .iter()
        .filter(|v| v.labels.get(LABEL_VOLUME).is_some_and(|key| is_source_key(key)))
        .map(|v| (v.name.clone(), v.created_at.clone().unwrap_or_default()))
        .collect();
    let source_volumes = source_created.keys().cloned().collect();
    let mut found: std::collections::BTreeMap<String, i64> =
        labelled.into_iter().map(|v| (v.name, epoch_of(&v.labels))).collect();
    let unlabelled: Vec<&String> = volumes.iter().filter(|v| !found.contains_key(*v)).collect();
    for name in unlabelled {
        match docker.inspect_volume(name).await {
            Ok(v) => {
                found.insert(name.clone(), epoch_of(&v.labels));
            }
            Err(e) if status_of(&e) == Some(404) => {}
            Err(e) => return Err(Error::docker("inspect volume", e)),
        }
    }
    let mut present = std::collections::BTreeSet::new();
    for image in images {
        match docker.inspect_image(image).await {
            Ok(_) => {
                present.insert(image.clone());
            }
            Err(e) if status_of(&e) == Some(404) => {}
            Err(e) => return Err(Error::docker("inspect image", e)),
        }
    }
    let shared_networks = match edge {
        Some(name) => edge_network::networks_named(docker, name).await?,
        None => Vec::new(),
    };
    Ok(Observed {
        networks,
        volumes: found.keys().cloned().collect(),
        volume_epochs: found,
        source_volumes,
        source_created,
        // Checked by the pass (`super::source::complete`), which knows the
        // desired sources.
        complete_sources: Default::default(),
        images: present,
        containers,
        shared_networks,
    })
}

/// Whether container `id` runs, and its address on `desired`'s edge
/// network (the one the edge reaches it at).
pub(super) async fn edge_address(docker: &Docker, desired: &Desired, id: &str) -> Result<(bool, Option<String>)> {
    let c = docker
        .inspect_container(id, None::<InspectContainerOptions>)
        .await
        .map_err(|e| Error::docker("inspect container", e))?;
    let running = inspect::status(&c).running;
    let edge = desired.edge_network.as_deref();
    let ip = c
        .network_settings
        .and_then(|n| n.networks)
        .and_then(|mut n| edge.and_then(|e| n.remove(e)))
        .and_then(|e| e.ip_address)
        .filter(|ip| !ip.is_empty());
    Ok((running, ip))
}

/// The restart epoch an object was made in; 0 for objects made before
/// epochs existed (or not by play).
fn epoch_of(labels: &HashMap<String, String>) -> i64 {
    labels.get(LABEL_EPOCH).and_then(|e| e.parse().ok()).unwrap_or(0)
}
