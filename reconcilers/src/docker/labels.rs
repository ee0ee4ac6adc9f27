//! The label filters of the engine's list and event calls: which objects
//! of a shared engine a call asks for, and the list calls that take them.
//!
//! Owns the `filters` map (`label=` terms, which the engine ANDs) for the
//! three scopes play asks about: one installation, any Playground of an
//! installation, one Playground; and listing containers (running or not),
//! networks and volumes by such a map. It filters only: deciding that a
//! returned object really is ours is `ownership`'s (an engine may
//! ignore a filter), and the labels written on objects come from
//! `play_model::desired`.

use std::collections::HashMap;

use bollard::Docker;
use bollard::models::{ContainerSummary, Network, Volume};
use bollard::query_parameters::{ListContainersOptions, ListNetworksOptions, ListVolumesOptions};
use play_model::desired::{LABEL_INSTALLATION, LABEL_PLAYGROUND};

use crate::{Error, Result};

/// The Playroom an edge container (and its volumes) serves: its id.
pub const LABEL_EDGE_PLAYROOM: &str = "dev.play.edge-playroom";

/// The engine's `filters` parameter: a filter name and the values it takes.
pub type Filters = HashMap<String, Vec<String>>;

/// Objects of `installation`, whether or not they name a Playground (the
/// event stream: the watcher checks the Playground label itself).
pub fn of_installation(installation: &str) -> Filters {
    by_labels(vec![installation_term(installation)])
}

/// Objects of `installation` that name some Playground (the sweep, which
/// then asks the store which of those Playgrounds still exist).
pub fn of_any_playground(installation: &str) -> Filters {
    by_labels(vec![installation_term(installation), LABEL_PLAYGROUND.to_owned()])
}

/// Objects of Playground `playground_id` of `installation`.
pub fn of_playground(installation: &str, playground_id: i64) -> Filters {
    by_labels(vec![format!("{LABEL_PLAYGROUND}={playground_id}"), installation_term(installation)])
}

/// Edge objects (containers, volumes) of `installation`, for any Playroom
/// (the sweep, which then asks the store which Playrooms still live).
pub fn of_any_edge(installation: &str) -> Filters {
    by_labels(vec![installation_term(installation), LABEL_EDGE_PLAYROOM.to_owned()])
}

/// Edge objects of Playroom `playroom_id` of `installation`.
pub fn of_edge(installation: &str, playroom_id: i64) -> Filters {
    by_labels(vec![installation_term(installation), format!("{LABEL_EDGE_PLAYROOM}={playroom_id}")])
}

/// Every container matching `filters`, running or not.
pub async fn containers(docker: &Docker, filters: &Filters) -> Result<Vec<ContainerSummary>> {
    let options = ListContainersOptions { all: true, filters: Some(filters.clone()), ..Default::default() };
    docker.list_containers(Some(options)).await.map_err(|e| Error::docker("list containers", e))
}

/// Every network matching `filters`.
pub async fn networks(docker: &Docker, filters: &Filters) -> Result<Vec<Network>> {
    let options = ListNetworksOptions { filters: Some(filters.clone()) };
    docker.list_networks(Some(options)).await.map_err(|e| Error::docker("list networks", e))
}

/// Every volume matching `filters`.
pub async fn volumes(docker: &Docker, filters: &Filters) -> Result<Vec<Volume>> {
    let options = ListVolumesOptions { filters: Some(filters.clone()) };
    let listed = docker.list_volumes(Some(options)).await.map_err(|e| Error::docker("list volumes", e))?;
    Ok(listed.volumes.unwrap_or_default())
}

fn installation_term(installation: &str) -> String {
    format!("{LABEL_INSTALLATION}={installation}")
}

fn by_labels(terms: Vec<String>) -> Filters {
    HashMap::from([("label".to_owned(), terms)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scope_asks_for_the_installation_and_only_its_own_playground_term() {
        let label = |f: Filters| f.get("label").cloned().unwrap_or_default();
        assert_eq!(label(of_installation("abc")), ["dev.play.installation=abc"]);
        assert_eq!(label(of_any_playground("abc")), ["dev.play.installation=abc", "dev.play.playground"]);
        assert_eq!(label(of_playground("abc", 7)), ["dev.play.playground=7", "dev.play.installation=abc"]);
        assert_eq!(of_playground("abc", 7).len(), 1, "label filters only");
        assert_eq!(label(of_any_edge("abc")), ["dev.play.installation=abc", "dev.play.edge-playroom"]);
        assert_eq!(label(of_edge("abc", 7)), ["dev.play.installation=abc", "dev.play.edge-playroom=7"]);
    }
}
