//! Volumes: create (idempotent, as the engine's), inspect, list, remove
//! (409 while a container mounts it).

use std::collections::{BTreeMap, HashMap};

use bollard::models::{EventMessageTypeEnum, Volume, VolumeCreateOptions, VolumeScopeEnum};

use super::SimEngine;
use crate::filters::Filters;
use crate::{Error, Result};

/// One entry of a volume's tree (what the archive endpoints write and
/// read: `archives`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Dir,
    File(Vec<u8>),
    Link(String),
}

#[derive(Debug, Clone)]
pub struct Vol {
    pub name: String,
    pub labels: HashMap<String, String>,
    pub options: HashMap<String, String>,
    /// What was written into it through a container's archive endpoint.
    pub files: BTreeMap<String, Entry>,
}

/// Where the engine would keep the volume's data (shown, never used).
pub fn mountpoint(name: &str) -> String {
    format!("/var/lib/docker/volumes/{name}/_data")
}

impl Vol {
    fn view(&self) -> Volume {
        Volume {
            name: self.name.clone(),
            driver: "local".to_owned(),
            mountpoint: mountpoint(&self.name),
            labels: self.labels.clone(),
            scope: Some(VolumeScopeEnum::LOCAL),
            options: self.options.clone(),
            ..Default::default()
        }
    }
}

fn no_such_volume(name: &str) -> Error {
    Error::NotFound(format!("get {name}: no such volume"))
}

impl SimEngine {
    /// A new volume record, its `create` event sent (the caller holds the
    /// lock and inserts it).
    pub(super) fn make_volume(&self, name: &str, labels: HashMap<String, String>) -> Vol {
        let vol = Vol { name: name.to_owned(), labels, options: HashMap::new(), files: BTreeMap::new() };
        let attributes = HashMap::from([("driver".to_owned(), "local".to_owned())]);
        self.emit(EventMessageTypeEnum::VOLUME, "create", name, attributes);
        vol
    }

    /// `POST /volumes/create`: an existing volume of that name is answered
    /// as it is (the engine's create is idempotent).
    pub fn create_volume(&self, request: VolumeCreateOptions) -> Result<Volume> {
        let mut state = self.lock();
        let name = request.name.unwrap_or_else(super::new_id);
        if let Some(existing) = state.volumes.get(&name) {
            return Ok(existing.view());
        }
        let mut vol = self.make_volume(&name, request.labels.unwrap_or_default());
        vol.options = request.driver_opts.unwrap_or_default();
        let view = vol.view();
        state.volumes.insert(name, vol);
        Ok(view)
    }

    /// `GET /volumes/{name}`.
    pub fn inspect_volume(&self, name: &str) -> Result<Volume> {
        self.lock().volumes.get(name).map(Vol::view).ok_or_else(|| no_such_volume(name))
    }

    /// `GET /volumes?filters=`: by `label`, `name`.
    pub fn list_volumes(&self, filters: &Filters) -> Vec<Volume> {
        let state = self.lock();
        let listed =
            state.volumes.values().filter(|v| filters.labels_match(&v.labels) && filters.name_matches(&v.name));
        listed.map(Vol::view).collect()
    }

    /// `DELETE /volumes/{name}`: 409 while a container mounts it.
    pub fn remove_volume(&self, name: &str) -> Result<()> {
        let mut state = self.lock();
        if !state.volumes.contains_key(name) {
            return Err(no_such_volume(name));
        }
        let users: Vec<&str> = state
            .containers
            .values()
            .filter(|c| c.volumes.iter().any(|v| v.name == name))
            .map(|c| c.id.as_str())
            .collect();
        if !users.is_empty() {
            return Err(Error::Conflict(format!("remove {name}: volume is in use - [{}]", users.join(", "))));
        }
        state.volumes.remove(name);
        self.emit(EventMessageTypeEnum::VOLUME, "destroy", name, HashMap::new());
        Ok(())
    }
}

impl SimEngine {
    /// What was written into volume `name` (path relative to its root ->
    /// entry), for tests; `None` when there is no such volume.
    pub fn volume_files(&self, name: &str) -> Option<BTreeMap<String, Entry>> {
        self.lock().volumes.get(name).map(|v| v.files.clone())
    }
}
